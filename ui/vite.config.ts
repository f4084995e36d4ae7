import { defineConfig } from "vitest/config";

// The app loads the built files from ui/dist (tauri.conf.json's frontendDist): no dev server,
// no remote content.
export default defineConfig({
  clearScreen: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
  },
  // src/logic is the UI's logic without the DOM: its tests run in plain Node, which starts in
  // milliseconds, and would fail there if the logic came to need a document. The rest (the
  // panels, the views, painting) runs in jsdom, whose start takes most of the suite's time.
  test: {
    projects: [
      {
        extends: true,
        test: { name: "logic", environment: "node", include: ["src/logic/**/*.test.ts"] },
      },
      {
        extends: true,
        test: {
          name: "dom",
          environment: "jsdom",
          include: ["src/**/*.test.ts"],
          exclude: ["src/logic/**"],
        },
      },
    ],
  },
});

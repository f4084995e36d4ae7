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
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts"],
  },
});

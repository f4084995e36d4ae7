import { describe, expect, it } from "vitest";
import type { Event } from "@tauri-apps/api/event";
import { PhysicalPosition } from "@tauri-apps/api/dpi";
import type { DragDropEvent } from "@tauri-apps/api/webview";
import { dropHandler } from "./replay-drop";

const event = (payload: DragDropEvent): Event<DragDropEvent> => ({ event: "tauri://drag-drop", id: 1, payload });
const at = new PhysicalPosition(10, 20);

describe("dropping a log on the Replay panel", () => {
  it("highlights the zone while files hover, chooses the first dropped file, and clears the highlight", () => {
    const zone = document.createElement("div");
    const chosen: string[] = [];
    const handle = dropHandler(zone, (p) => chosen.push(p));
    handle(event({ type: "enter", paths: ["/logs/a.log.gz"], position: at }));
    expect(zone.classList.contains("over")).toBe(true);
    handle(event({ type: "over", position: at }));
    expect(zone.classList.contains("over")).toBe(true);
    expect(chosen).toEqual([]);
    handle(event({ type: "drop", paths: ["/logs/a.log.gz", "/logs/b.log"], position: at }));
    expect(zone.classList.contains("over")).toBe(false);
    expect(chosen).toEqual(["/logs/a.log.gz"]);
  });

  it("chooses nothing when the drag leaves or drops no file", () => {
    const zone = document.createElement("div");
    const chosen: string[] = [];
    const handle = dropHandler(zone, (p) => chosen.push(p));
    handle(event({ type: "enter", paths: [], position: at }));
    handle(event({ type: "leave" }));
    expect(zone.classList.contains("over")).toBe(false);
    handle(event({ type: "drop", paths: [], position: at }));
    expect(chosen).toEqual([]);
  });
});

//! Dropping a log on the window: Tauri v2 hands the dropped files' paths to the webview's
//! drag-drop event (the DOM's own drop event carries no path). This is the handler that event
//! calls: it highlights the drop zone while files hover and chooses the first dropped file.
import type { Event } from "@tauri-apps/api/event";
import type { DragDropEvent } from "@tauri-apps/api/webview";

export function dropHandler(zone: HTMLElement, choose: (path: string) => void): (event: Event<DragDropEvent>) => void {
  return (event) => {
    const p = event.payload;
    zone.classList.toggle("over", p.type === "over" || p.type === "enter");
    if (p.type === "drop" && p.paths.length > 0) choose(p.paths[0]);
  };
}

import { describe, expect, it } from "vitest";
import { createPainter, setText, type PainterClock } from "./paint";

/** A clock the test drives: timers and animation frames run when it says. */
function fakeClock() {
  let t = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const frames: (() => void)[] = [];
  const clock: PainterClock = {
    now: () => t,
    setTimer: (fn, ms) => void timers.push({ at: t + ms, fn }),
    frame: (fn) => void frames.push(fn),
  };
  /** Advances to `to`, firing due timers, and runs one animation frame every 16 ms. */
  const advance = (to: number) => {
    for (; t <= to; t += 1) {
      for (const due of timers.filter((x) => x.at <= t)) {
        timers.splice(timers.indexOf(due), 1);
        due.fn();
      }
      if (t % 16 === 0) for (const f of frames.splice(0)) f();
    }
    t = to;
  };
  return { clock, advance };
}

describe("painter", () => {
  it("writes the latest update per key, all keys in one frame, at most one frame per interval", () => {
    const { clock, advance } = fakeClock();
    const painter = createPainter(250, clock);
    const flushes: { at: number; drawn: string[] }[] = [];
    let drawn: string[] = [];
    const draw = (what: string) => () => {
      drawn.push(what);
    };
    // Progress every 10 ms and a chart every 100 ms, for 2 s.
    for (let ms = 0; ms < 2000; ms += 10) {
      painter.later("progress", draw(`progress ${ms}`));
      if (ms % 100 === 0) painter.later("chart", draw(`chart ${ms}`));
      const before = drawn.length;
      advance(ms + 9);
      if (drawn.length > before) {
        flushes.push({ at: ms, drawn });
        drawn = [];
      }
    }
    advance(3000);
    if (drawn.length) flushes.push({ at: 3000, drawn });
    // At most one frame per 250 ms (plus the first), each with at most one update per key.
    expect(flushes.length).toBeLessThanOrEqual(2000 / 250 + 1);
    expect(flushes.length).toBeGreaterThan(2);
    for (const f of flushes) expect(new Set(f.drawn.map((d) => d.split(" ")[0])).size).toBe(f.drawn.length);
    // Nothing is lost at the end: the last update of each key is drawn.
    const last = flushes[flushes.length - 1].drawn.concat(flushes[flushes.length - 2]?.drawn ?? []);
    expect(last).toContain("progress 1990");
    expect(flushes.flatMap((f) => f.drawn)).toContain("chart 1900");
  });

  it("draws the first update in the next frame, without waiting an interval", () => {
    const { clock, advance } = fakeClock();
    const painter = createPainter(250, clock);
    let drawn = 0;
    painter.later("a", () => drawn++);
    advance(16);
    expect(drawn).toBe(1);
  });

  it("keeps drawing other updates when one throws, and reports it", () => {
    const { clock, advance } = fakeClock();
    const errors: unknown[] = [];
    const painter = createPainter(250, clock, (e) => errors.push(e));
    let drawn = 0;
    painter.later("bad", () => {
      throw new Error("boom");
    });
    painter.later("good", () => drawn++);
    advance(16);
    expect(drawn).toBe(1);
    expect(errors).toHaveLength(1);
  });
});

describe("setText", () => {
  it("writes only a different text", () => {
    const el = document.createElement("div");
    const seen: MutationRecord[] = [];
    const observer = new MutationObserver((list) => seen.push(...list));
    observer.observe(el, { childList: true, characterData: true, subtree: true });
    setText(el, "a");
    setText(el, "a");
    setText(el, "b");
    seen.push(...observer.takeRecords());
    observer.disconnect();
    expect(el.textContent).toBe("b");
    expect(seen.filter((m) => m.type === "childList")).toHaveLength(2);
  });
});

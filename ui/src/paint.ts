/**
 * Streaming screen updates (run progress, the live chart's redraws, the connection poll),
 * coalesced: each update registers under a key (the latest wins), and all that are due are
 * written together in one animation frame, at most one such frame per `intervalMs`.
 *
 * Why: in the webview, the cost of an update is the frame it causes (layout, paint and a
 * composite of the whole window, in software under Xvfb), not the JavaScript. Progress at
 * 10 Hz, the live chart's refetches and the connection poll each used to cause their own
 * frames; together they now share at most two frames a second. A hidden window gets no
 * animation frames, so nothing is drawn for it. Updates a click causes are not routed here:
 * they are drawn at once.
 */
export const STREAM_INTERVAL_MS = 500;

export interface Painter {
  /** Draws `draw` in the next shared frame, replacing any update pending under `key`. */
  later(key: string, draw: () => void): void;
}

export interface PainterClock {
  now: () => number;
  setTimer: (fn: () => void, ms: number) => void;
  frame: (fn: () => void) => void;
}

const browserClock: PainterClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => void setTimeout(fn, ms),
  frame: (fn) => void requestAnimationFrame(() => fn()),
};

export function createPainter(intervalMs: number = STREAM_INTERVAL_MS, clock: PainterClock = browserClock, onError: (err: unknown) => void = () => {}): Painter {
  const pending = new Map<string, () => void>();
  let scheduled = false;
  let lastFlush = Number.NEGATIVE_INFINITY;

  const flush = () => {
    scheduled = false;
    lastFlush = clock.now();
    const draws = [...pending.values()];
    pending.clear();
    for (const draw of draws) {
      try {
        draw();
      } catch (err) {
        onError(err);
      }
    }
  };

  return {
    later(key, draw) {
      pending.set(key, draw);
      if (scheduled) return;
      scheduled = true;
      const wait = Math.max(0, lastFlush + intervalMs - clock.now());
      clock.setTimer(() => clock.frame(flush), wait);
    },
  };
}

/** The dashboard's one painter: every streaming update shares its frames. */
export const painter = createPainter(STREAM_INTERVAL_MS, browserClock, (err) => console.error(err));

/** Sets an element's text only when it differs: an equal write still costs the webview a frame. */
export function setText(el: HTMLElement, text: string) {
  if (el.textContent !== text) el.textContent = text;
}

/** Sets a `data-*` attribute only when it differs (an equal write is still a mutation). */
export function setData(el: HTMLElement, key: string, value: string) {
  if (el.dataset[key] !== value) el.dataset[key] = value;
}

/**
 * The live chart's refetch (design.md, "The live chart's refetch"): turns a stream of
 * `refetch-stats` events into stats calls.
 *
 * - the first event fetches at once (leading edge);
 * - at most one fetch is in flight at any moment;
 * - fetches start at least `intervalMs` apart, so within any window of that length at most
 *   one starts besides the trailing one;
 * - an event that arrives after the current fetch started marks a trailing fetch, which
 *   starts as soon as both the interval and the in-flight fetch allow: the final state is
 *   always shown.
 */
export interface Throttle {
  /** Records an event. */
  trigger(): void;
  /** Stops scheduling; a fetch in flight still lands. */
  dispose(): void;
}

export const REFETCH_INTERVAL_MS = 750;

export function createThrottle(
  fetch: () => Promise<unknown>,
  intervalMs: number = REFETCH_INTERVAL_MS,
  now: () => number = () => Date.now(),
): Throttle {
  let inFlight = false;
  let pending = false;
  let disposed = false;
  let lastStart = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const start = () => {
    pending = false;
    inFlight = true;
    lastStart = now();
    let call: Promise<unknown>;
    try {
      call = fetch();
    } catch (err) {
      call = Promise.reject(err);
    }
    // A failed fetch is the fetcher's to report; the throttle only needs to know it ended.
    call
      .catch(() => undefined)
      .finally(() => {
        inFlight = false;
        schedule();
      });
  };

  const schedule = () => {
    if (disposed || !pending || inFlight || timer !== undefined) return;
    const wait = lastStart + intervalMs - now();
    if (wait <= 0) {
      start();
    } else {
      timer = setTimeout(() => {
        timer = undefined;
        schedule();
      }, wait);
    }
  };

  return {
    trigger() {
      pending = true;
      schedule();
    },
    dispose() {
      disposed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}

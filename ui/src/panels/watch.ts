//! The Watch card: a policies file chosen once (remembered across restarts), reloaded live by
//! the backend, and each of its policies' last 30 seconds in the app's Redis, polled about once
//! a second while the card is on screen and the window is shown.
import "./watch.css";
import { api, toAppError } from "../api";
import type { WatchStatus } from "../bindings/WatchStatus";
import { WatchGrid } from "../charts/watch";
import { $ } from "../dom";
import { fmtInt } from "../logic/format";
import { createPoller, fmtModified, shouldPoll, watchMessages } from "../logic/watch";
import { painter, setData, setText } from "../paint";

function show(el: HTMLElement, text: string | undefined) {
  setText(el, text ?? "");
  el.classList.toggle("hidden", !text);
}

export async function initWatch() {
  const card = $("watch-card");
  const grid = new WatchGrid($("watch-charts"));
  const note = $("watch-note");
  let watching = false;
  let onScreen = false;
  let reads = 0;
  let shownFile: string | undefined;

  const render = (s: WatchStatus) => {
    watching = s.file !== undefined;
    setText($("watch-file"), s.file ?? "No file watched.");
    $("watch-file").title = s.file ?? "";
    setText($("watch-modified"), s.modified_ms !== undefined ? `modified ${fmtModified(s.modified_ms, Date.now())}` : "");
    $("watch-close").classList.toggle("hidden", !watching);
    setText($("watch-choose"), watching ? "Watch another file…" : "Watch a policy file…");
    const n = s.policies.length;
    setText(
      $("watch-redis"),
      watching ? `${fmtInt(n)} ${n === 1 ? "policy" : "policies"} in force · counts from ${s.redis}, the Redis in the connection settings · refreshed every second while this view is shown` : "",
    );
    const messages = watchMessages(s);
    show($("watch-file-error"), messages.file);
    show($("watch-redis-error"), messages.redis);
    setText(note, messages.empty ?? "");
    note.classList.remove("error");
    if (s.file !== shownFile) grid.clear();
    shownFile = s.file;
    grid.update(s.policies, s.modified_ms);
    setData(card, "reads", String(++reads));
    setData(card, "file", s.file ?? "");
    setData(card, "fileError", s.file_error ? "true" : "false");
  };

  const fail = (err: unknown) => {
    const e = toAppError(err);
    if (e.code === "cancelled") return;
    setText(note, e.message);
    note.classList.add("error");
  };

  const read = async () => {
    try {
      const s = await api.watchRead();
      // Polled: drawn in the frames the dashboard's streaming updates share.
      painter.later("watch", () => render(s));
    } catch (err) {
      fail(err);
    }
  };
  const poller = createPoller(read, 1000);
  const update = () => poller.setActive(shouldPoll({ watching, cardOnScreen: onScreen, windowHidden: document.hidden }));

  new IntersectionObserver((entries) => {
    // A batch may hold several changes of the one card: the last is the current one.
    onScreen = entries[entries.length - 1]?.isIntersecting ?? onScreen;
    update();
  }).observe(card);
  document.addEventListener("visibilitychange", update);

  // A click's answer is drawn at once.
  const act = async (call: () => Promise<WatchStatus>) => {
    try {
      render(await call());
    } catch (err) {
      fail(err);
    }
    update();
  };
  $("watch-choose").addEventListener("click", () => void act(api.watchChoose));
  $("watch-close").addEventListener("click", () => void act(api.watchClose));
  $("nav-watch").addEventListener("click", (e) => {
    e.preventDefault();
    card.scrollIntoView({ behavior: "smooth", block: "start" });
  });

  // The file remembered from the last session, shown once even while off screen.
  await act(api.watchRead);
}

// The labelling page: one key per verdict, each label saved at once, the next answer opened when
// every question about this one is answered and saved. Text reaches the page only as textContent.
//
// Saving: each save sends the answer's values whole, so only the latest matters; one is in flight
// at a time. A save that fails (the server down, an error) leaves the labels on the page marked
// unsaved and is tried again until the server takes it; later keys still save. Once the last
// question of the answer is answered, keys are ignored until the next answer has opened: a quick
// extra key never starts the finished answer over. Only an answer opened already labelled (the
// person went back to it) starts over at a key.
(() => {
  const art = document.getElementById("answer");
  if (!art) return;
  const run = art.dataset.run, index = Number(art.dataset.index), total = Number(art.dataset.total);
  const blind = art.dataset.blind === "1" ? "" : "?blind=0";
  const asks = [...document.querySelectorAll(".ask")];
  const saved = document.getElementById("saved");
  const url = `/api/runs/${encodeURIComponent(run)}/labels`;
  const RETRY_MS = [1000, 2000, 4000, 8000];

  let pending = null; // the latest values not yet taken by the server: {values, last}
  let sending = false; // a save is in flight
  let failures = 0; // failed tries of the pending save in a row
  let retry = null; // the timer of the next try
  let leaving = false; // the answer is finished: its save and the next page are pending
  let confirmed = Object.fromEntries(asks.map((a) => [a.dataset.col, a.dataset.value || ""]));

  const base = (i) => `/runs/${encodeURIComponent(run)}/label/${i}`;
  const go = (i, prev) => {
    if (i >= total) { location.href = `/runs/${encodeURIComponent(run)}`; return; }
    const q = new URLSearchParams(blind ? { blind: "0" } : {});
    if (prev !== undefined) q.set("prev", prev);
    const s = q.toString();
    location.href = base(Math.max(0, i)) + (s ? "?" + s : "");
  };
  const current = () => asks.find((a) => !a.dataset.value);
  let restartable = !current(); // opened on an answer labelled before: a key starts it over
  const paint = () => {
    const cur = leaving ? null : current();
    asks.forEach((a) => {
      a.classList.toggle("current", a === cur);
      a.classList.toggle("unsaved", failures > 0 && (a.dataset.value || "") !== confirmed[a.dataset.col]);
      a.querySelectorAll("button").forEach((b) => b.classList.toggle("chosen", b.dataset.v === a.dataset.value));
    });
  };
  const fmt = (e) => {
    if (!e || e.value === null || e.value === undefined) return "–";
    if (e.ci_low === null || e.ci_high === null) return `${e.value.toFixed(2)} [no interval]`;
    return `${e.value.toFixed(2)} [${e.ci_low.toFixed(2)}, ${e.ci_high.toFixed(2)}]`;
  };
  const showFigures = (figs) => {
    const counted = document.getElementById("counted");
    if (counted && figs.counted) counted.textContent = figs.counted;
    for (const f of figs.lines) {
      for (const tr of document.querySelectorAll("#figures tbody tr")) {
        if (tr.dataset.prompt !== f.prompt || tr.dataset.figure !== f.figure) continue;
        tr.querySelector(".ppi").textContent = fmt(f.ppi);
        tr.querySelector(".labelled").textContent = `${f.labelled} of ${f.answers}`;
        tr.querySelector(".needed").textContent = `${f.still_needed["0.05"]} / ${f.still_needed["0.1"]}`;
      }
    }
  };
  const snapshot = () => Object.fromEntries(asks.map((a) => [a.dataset.col, a.dataset.value || ""]));

  // One POST of the pending values; true when the server took them. A server that cannot be
  // reached or fails (5xx) is tried again; a refusal (4xx) is shown and tried again at the next key.
  const post = async (want) => {
    const body = {
      question_id: art.dataset.qid,
      prompt: art.dataset.prompt,
      values: Object.fromEntries(asks.map((a) => [a.dataset.col, { yes: true, no: false }[want.shown[a.dataset.col]] ?? null])),
    };
    try {
      const r = await fetch(url + (want.last ? "?figures=0" : ""), {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      });
      const got = await r.json().catch(() => ({}));
      if (r.ok) {
        if (got.figures) showFigures(got.figures);
        return { ok: true };
      }
      return { ok: false, message: got.error || `${r.status} ${r.statusText}`, again: r.status >= 500 };
    } catch (err) {
      return { ok: false, message: err.message, again: true };
    }
  };
  const flush = async () => {
    if (sending || !pending) return;
    clearTimeout(retry);
    retry = null;
    sending = true;
    const want = pending;
    const got = await post(want);
    sending = false;
    if (got.ok) {
      confirmed = want.shown;
      failures = 0;
      if (pending === want) pending = null;
    } else {
      failures += 1;
    }
    if (pending && got.ok) { flush(); return; } // a newer label came in meanwhile
    paint();
    if (got.ok) {
      saved.textContent = "saved in labels/labels.csv";
      saved.classList.remove("unsaved");
      if (leaving) go(index + 1, index);
      return;
    }
    const n = asks.filter((a) => a.classList.contains("unsaved")).length;
    saved.classList.add("unsaved");
    if (got.again) {
      const wait = RETRY_MS[Math.min(failures, RETRY_MS.length) - 1];
      saved.textContent = `not saved: ${got.message}; ${n} unsaved label${n === 1 ? "" : "s"} kept on this page, trying again every ${wait / 1000} s`;
      retry = setTimeout(flush, wait);
    } else {
      saved.textContent = `not saved: ${got.message}`;
      leaving = false; // the server refuses it: the person may move on (← →) or try again
    }
  };
  const answer = (ask, v) => {
    if (!ask) return;
    ask.dataset.value = v;
    const done = !current();
    if (done) leaving = true;
    pending = { shown: snapshot(), last: done };
    paint();
    flush();
  };
  asks.forEach((a) => a.querySelectorAll("button").forEach((b) => b.addEventListener("click", () => {
    if (!leaving) answer(a, b.dataset.v);
  })));
  window.addEventListener("beforeunload", (e) => {
    if (pending && !leaving) { e.preventDefault(); e.returnValue = ""; }
  });
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    const k = e.key.toLowerCase();
    if (!["y", "n", "s", "arrowleft", "backspace", "arrowright", "v"].includes(k)) return;
    e.preventDefault();
    if (leaving) return; // the finished answer's save and the next page are pending
    if (k === "y" || k === "n" || k === "s") {
      if (!current()) {
        if (!restartable) return;
        restartable = false; // the answer labelled before starts over from its first question
        asks.forEach((a) => { a.dataset.value = ""; });
      }
      answer(current(), { y: "yes", n: "no", s: "skip" }[k]);
    } else if (k === "arrowleft" || k === "backspace") { if (index > 0) go(index - 1); }
    else if (k === "arrowright") go(index + 1);
    else if (k === "v") document.getElementById("judges").hidden = false;
  });
  paint();
})();

// The labelling page: one key per verdict, each label saved at once, the next answer opened when
// every question about this one is answered. Text reaches the page only as textContent.
(() => {
  const art = document.getElementById("answer");
  if (!art) return;
  const run = art.dataset.run, index = Number(art.dataset.index), total = Number(art.dataset.total);
  const blind = art.dataset.blind === "1" ? "" : "?blind=0";
  const asks = [...document.querySelectorAll(".ask")];
  const saved = document.getElementById("saved");
  let chain = Promise.resolve();

  const base = (i) => `/runs/${encodeURIComponent(run)}/label/${i}`;
  const go = (i, prev) => {
    if (i >= total) { location.href = `/runs/${encodeURIComponent(run)}`; return; }
    const q = new URLSearchParams(blind ? { blind: "0" } : {});
    if (prev !== undefined) q.set("prev", prev);
    const s = q.toString();
    location.href = base(Math.max(0, i)) + (s ? "?" + s : "");
  };
  const current = () => asks.find((a) => !a.dataset.value);
  const paint = () => {
    const cur = current();
    asks.forEach((a) => {
      a.classList.toggle("current", a === cur);
      a.querySelectorAll("button").forEach((b) => b.classList.toggle("chosen", b.dataset.v === a.dataset.value));
    });
  };
  const fmt = (e) => {
    if (!e || e.value === null || e.value === undefined) return "–";
    if (e.ci_low === null || e.ci_high === null) return `${e.value.toFixed(2)} [no interval]`;
    return `${e.value.toFixed(2)} [${e.ci_low.toFixed(2)}, ${e.ci_high.toFixed(2)}]`;
  };
  const showFigures = (figs) => {
    for (const f of figs.lines) {
      for (const tr of document.querySelectorAll("#figures tbody tr")) {
        if (tr.dataset.prompt !== f.prompt || tr.dataset.figure !== f.figure) continue;
        tr.querySelector(".ppi").textContent = fmt(f.ppi);
        tr.querySelector(".labelled").textContent = `${f.labelled} of ${f.answers}`;
        tr.querySelector(".needed").textContent = `${f.still_needed["0.05"]} / ${f.still_needed["0.1"]}`;
      }
    }
  };
  const value = (a) => ({ yes: true, no: false }[a.dataset.value] ?? null);
  const save = (last) => {
    const body = {
      question_id: art.dataset.qid,
      prompt: art.dataset.prompt,
      values: Object.fromEntries(asks.map((a) => [a.dataset.col, value(a)])),
    };
    chain = chain.then(async () => {
      const r = await fetch(`/api/runs/${encodeURIComponent(run)}/labels${last ? "?figures=0" : ""}`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      });
      const got = await r.json();
      if (!r.ok) throw new Error(got.error || r.statusText);
      saved.textContent = "saved in labels/labels.csv";
      if (got.figures) showFigures(got.figures);
    }).catch((err) => { saved.textContent = "not saved: " + err.message; throw err; });
    return chain;
  };
  const answer = (ask, v) => {
    if (!ask) return;
    ask.dataset.value = v;
    paint();
    const done = !current();
    save(done).then(() => { if (done) go(index + 1, index); }, () => {});
  };
  asks.forEach((a) => a.querySelectorAll("button").forEach((b) => b.addEventListener("click", () => answer(a, b.dataset.v))));
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    const k = e.key.toLowerCase();
    if (k === "y" || k === "n" || k === "s") {
      // An answer already labelled starts over from its first question.
      if (!current()) asks.forEach((a) => { a.dataset.value = ""; });
      answer(current(), { y: "yes", n: "no", s: "skip" }[k]);
    } else if (k === "arrowleft" || k === "backspace") { if (index > 0) go(index - 1); }
    else if (k === "arrowright") go(index + 1);
    else if (k === "v") document.getElementById("judges").hidden = false;
    else return;
    e.preventDefault();
  });
  paint();
})();

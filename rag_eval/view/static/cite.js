// The labelling page's answer: each citation ([1], [2, 3], [1-3]) links to the context it names; a
// click opens that context and brings it into view. The answer is rebuilt from its own text as text
// nodes and links (textContent only). Markers in code spans stay text only on the server's reading
// (rag_eval/judges/citations.py); here any bracketed number that names a context is linked.
(() => {
  const pre = document.getElementById("answer-text");
  const contexts = [...document.querySelectorAll("details.context")];
  if (!pre || !contexts.length) return;
  const text = pre.textContent;
  const marker = /\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\]/g;
  const out = document.createDocumentFragment();
  let last = 0;
  let linked = 0;
  for (const m of text.matchAll(marker)) {
    out.append(text.slice(last, m.index), "[");
    for (const piece of m[1].split(/(\d+)/)) {
      const n = Number(piece);
      if (piece && /^\d+$/.test(piece) && n >= 1 && n <= contexts.length) {
        const a = document.createElement("a");
        a.href = `#ctx-${n}`;
        a.className = "cite";
        a.dataset.n = String(n);
        a.textContent = piece;
        a.title = `context ${n}: ${contexts[n - 1].dataset.id || ""}`;
        out.append(a);
        linked += 1;
      } else {
        out.append(piece);
      }
    }
    out.append("]");
    last = m.index + m[0].length;
  }
  if (!linked) return;
  out.append(text.slice(last));
  pre.replaceChildren(out);
  pre.addEventListener("click", (e) => {
    const a = e.target.closest("a.cite");
    if (!a) return;
    e.preventDefault();
    const ctx = contexts[Number(a.dataset.n) - 1];
    ctx.open = true;
    ctx.classList.add("cited");
    ctx.scrollIntoView({ block: "nearest" });
    setTimeout(() => ctx.classList.remove("cited"), 1500);
  });
})();

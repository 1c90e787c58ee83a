"""Test-set health: can this test set measure anything, and are its labels right?

Each check returns findings with a severity (info, warning, severe), the questions concerned and
what to do. The thresholds live in the config's ``lint:`` section.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import sparse

from rag_eval.config import AuditConfig
from rag_eval.data.records import collection_paused
from rag_eval.data.testset import LazyTexts, PhraseIndex, normalise
from rag_eval.retrievers.answer_match import answer_in_chunk, loose, loose_words
from rag_eval.retrievers.stage import RetrievalResults
from rag_eval.stats import detectable_hit_difference, questions_for_hit_difference
from rag_eval.text import content_tokens, coverage, exact_tokens, jaccard, ngrams, tokens
from rag_eval.types import Corpus, Question
from rag_eval.words import added_to_question

SEVERITY_ORDER = {"info": 0, "warning": 1, "severe": 2}
MOSTLY_EXACT = 0.8  # the share of answerable questions naming a symbol above which lint warns


@dataclass
class Finding:
    """One observation about the test set."""

    code: str
    severity: str
    message: str
    fix: str = ""
    questions: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def copied_wording(cfg: AuditConfig, corpus: Corpus, questions: list[Question]) -> list[Finding]:
    """Questions that reuse the word n-grams of their labelled passage test only word matching."""
    lc = cfg.lint
    labelled = [q for q in questions if q.answerable and q.qrels]
    copied = {}
    for q in labelled:
        qgrams = ngrams(tokens(q.question), lc.copy_ngram)
        if not qgrams:
            continue
        best = max(
            len(qgrams & ngrams(tokens(corpus.chunks[corpus.index[c]].passage), lc.copy_ngram)) / len(qgrams)
            for c, g in q.qrels.items()
            if g > 0
        )
        if best >= lc.copy_threshold:
            copied[q.id] = round(best, 2)
    if not copied:
        return []
    share = len(copied) / len(labelled)
    severity = "severe" if share >= lc.copy_share_severe else "warning" if share >= 0.2 else "info"
    return [
        Finding(
            "copied_wording",
            severity,
            f"{len(copied)} of {len(labelled)} answerable questions ({share:.0%}) copy the wording of their passage "
            f"(at least {lc.copy_threshold:.0%} of their word {lc.copy_ngram}-grams appear in it): they test word matching",
            "reword them the way users ask, with words of their own",
            sorted(copied),
            {"share": share, "overlap": copied},
        )
    ]


def unanswerable_share(cfg: AuditConfig, questions: list[Question]) -> list[Finding]:
    n_un = sum(not q.answerable for q in questions)
    share = n_un / len(questions)
    if share >= cfg.lint.min_unanswerable_share:
        return []
    what = "no unanswerable questions" if n_un == 0 else f"only {n_un} unanswerable questions ({share:.0%})"
    return [
        Finding(
            "few_unanswerable",
            "warning",
            f"{what}: refusal on questions the documents cannot answer is not measured",
            f"add questions the corpus cannot answer (answerable: false), at least "
            f"{cfg.lint.min_unanswerable_share:.0%} of the set",
            data={"share": share, "count": n_un},
        )
    ]


def exact_token_questions(questions: list[Question]) -> list[Finding]:
    found = {q.id: exact_tokens(q.question) for q in questions}
    found = {k: v for k, v in found.items() if v}
    answerable = [q for q in questions if q.answerable]
    share = sum(q.id in found for q in answerable) / len(answerable) if answerable else 0.0
    if found and len(answerable) >= 5 and share >= MOSTLY_EXACT:
        # Keyword search finds such a question by its symbol alone: every retriever then looks alike
        # (user trial 3 F2: a generated set where 10 of 11 named the filter, hit@1 1.00 for all).
        return [
            Finding(
                "mostly_exact_tokens",
                "warning",
                f"{sum(q.id in found for q in answerable)} of {len(answerable)} answerable questions name an exact "
                "symbol, code or identifier: keyword search finds each by that word alone, so the set hardly tells "
                "retrievers apart on questions asked in other words",
                fix="add questions that describe what the user wants without naming the symbol "
                "(rag-eval generate --mix paraphrase=0.5,...)",
                questions=sorted(found),
                data={"tokens": found},
            )
        ]
    if found:
        return [
            Finding(
                "exact_tokens",
                "info",
                f"{len(found)} questions name exact symbols, codes or identifiers",
                questions=sorted(found),
                data={"tokens": found},
            )
        ]
    return [
        Finding(
            "no_exact_tokens",
            "warning",
            "no question names an exact symbol, code or identifier: the case where embeddings fail "
            "and keyword search wins is not tested",
            "add questions such as 'what does __slots__ do?' or 'what is error E501?'",
        )
    ]


def restated_references(questions: list[Question]) -> list[Finding]:
    """References that restate their question, adding at most one word (user trial 3 F2: "The last
    item of a sequence is the last element in the sequence."): any answer restating the question
    matches them, so the correctness judge cannot tell right from wrong there."""
    found = {
        q.id: added
        for q in questions
        if q.answerable and q.reference and (added := added_to_question(q.reference, q.question)) is not None
        if len(added) <= 1
    }
    if not found:
        return []
    return [
        Finding(
            "reference_restates_question",
            "warning",
            f"{len(found)} reference{'s' * (len(found) > 1)} restate{'s' * (len(found) == 1)} {'its' if len(found) == 1 else 'their'} "
            "question, adding at most one word: an answer that repeats the "
            "question matches them, so the correctness judge cannot tell a right answer from a wrong one there",
            "write the fact the evidence states as the reference (the value, the name, what happens), or drop the "
            'question; a one-word addition may be the whole answer ("the locale encoding"): check each',
            sorted(found),
            {"added": found},
        )
    ]


def duplicates(cfg: AuditConfig, questions: list[Question]) -> list[Finding]:
    out = []
    seen: dict[str, str] = {}
    exact = []
    for q in questions:
        key = normalise(q.question).lower()
        if key in seen:
            exact.append((seen[key], q.id))
        else:
            seen[key] = q.id
    if exact:
        out.append(
            Finding(
                "duplicate_questions",
                "warning",
                f"{len(exact)} questions repeat another word for word",
                "remove the repeats: they count one question twice",
                sorted({i for pair in exact for i in pair}),
                {"pairs": exact},
            )
        )
    near = near_duplicates([(q.id, set(content_tokens(q.question))) for q in questions], cfg.lint.near_duplicate)
    repeats = set(exact)
    near = [(a, b, j) for a, b, j in near if (a, b) not in repeats]
    if near:
        out.append(
            Finding(
                "near_duplicate_questions",
                "warning",
                f"{len(near)} pairs of questions are near-duplicates (word overlap >= {cfg.lint.near_duplicate:.0%})",
                "keep one of each pair, or make them ask different things",
                sorted({i for a, b, _ in near for i in (a, b)}),
                {"pairs": near},
            )
        )
    return out


def near_duplicates(sets: list[tuple[str, set[str]]], threshold: float) -> list[tuple[str, str, float]]:
    """Every pair of non-empty word sets (in the order of ``itertools.combinations``) whose Jaccard
    overlap is at least ``threshold``, with the overlap rounded to 2 places. Above 0 only pairs that
    share a word can qualify: their shared counts come from one sparse product, not from every pair."""
    if threshold <= 0:
        return [
            (a, b, round(jaccard(sa, sb), 2))
            for (a, sa), (b, sb) in itertools.combinations(sets, 2)
            if sa and sb and jaccard(sa, sb) >= threshold
        ]
    vocab: dict[str, int] = {}
    cols = [vocab.setdefault(w, len(vocab)) for _, s in sets for w in s]
    sizes = np.array([len(s) for _, s in sets])
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    x = sparse.csr_matrix((np.ones(len(cols), dtype=np.int64), cols, indptr), shape=(len(sets), len(vocab)))
    shared = sparse.triu(x @ x.T, k=1).tocoo()
    i, j, both = shared.row, shared.col, shared.data
    overlap = both / (sizes[i] + sizes[j] - both)
    keep = np.flatnonzero(overlap >= threshold)
    keep = keep[np.lexsort((j[keep], i[keep]))]
    return [(sets[i[k]][0], sets[j[k]][0], round(float(overlap[k]), 2)) for k in keep.tolist()]


def suspect_labels(cfg: AuditConfig, corpus: Corpus, questions: list[Question]) -> list[Finding]:
    """The labelled chunk shares almost nothing with the reference while another chunk contains it."""
    chunk_tokens: dict[int, set[str]] = {}

    def words_of(i: int) -> set[str]:
        if i not in chunk_tokens:
            chunk_tokens[i] = set(tokens(corpus.chunks[i].passage))
        return chunk_tokens[i]

    postings: dict[str, list[int]] | None = None
    suspects = {}
    for q in questions:
        ref = set(content_tokens(q.reference or ""))
        if not q.answerable or len(ref) < 3:
            continue
        relevant = {corpus.index[c] for c, g in q.qrels.items() if g > 0}
        label_cov = max(coverage(ref, words_of(i)) for i in relevant)
        if label_cov >= cfg.lint.label_overlap:
            continue
        if postings is None:
            # Built once, for the few questions that get here: a chunk holding at least other_overlap
            # of the reference's words is among those holding one of them.
            postings = {}
            for i, c in enumerate(corpus.chunks):
                for w in set(tokens(c.passage)):
                    postings.setdefault(w, []).append(i)
        hits = Counter(i for w in ref for i in postings.get(w, ()) if i not in relevant)
        best_i, best_n = min(hits.items(), key=lambda p: (-p[1], p[0]), default=(None, 0))
        best_cov = best_n / len(ref)
        if best_i is not None and best_cov >= cfg.lint.other_overlap:
            suspects[q.id] = {
                "labelled_overlap": round(label_cov, 2),
                "better_chunk": corpus.chunks[best_i].id,
                "better_overlap": round(best_cov, 2),
            }
    if not suspects:
        return []
    return [
        Finding(
            "suspect_labels",
            "warning",
            f"{len(suspects)} questions are labelled with a chunk that shares little with the reference answer "
            "while another chunk contains it",
            "check these labels: the other chunk may be the right one",
            sorted(suspects),
            suspects,
        )
    ]


def answer_outside_label(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], results: RetrievalResults | None = None
) -> list[Finding]:
    """Questions whose answer sits in a chunk the label lacks: a chunk matching an evidence quote
    after normalisation (markup, case, punctuation), or, among the chunks a retriever ranks within
    ``miss_k``, one holding the reference answer (``answer_match.py``; the same test as the
    diagnosis's suspect_label). Each names the chunk to add."""
    quotes_of = {
        question.id: [f" {loose(e)} " for e in question.evidence if len(loose(e).split()) >= 3]
        for question in questions
    }
    search = None
    if any(quotes_of.values()):  # every chunk's words made loose only when some quote is looked for
        chunks = corpus.chunks
        words = (loose_words(c.title + chr(10) + c.text) for c in chunks)
        flat = LazyTexts(len(chunks), lambda i: f" {loose(chunks[i].title + chr(10) + chunks[i].text)} ")
        search = PhraseIndex(flat, [e for quotes in quotes_of.values() for e in quotes], words)
    found: dict[str, dict] = {}
    for q, question in enumerate(questions):
        relevant = {corpus.index[c] for c, g in question.qrels.items() if g > 0}
        if not question.answerable or not relevant:
            continue
        # A chunk labelled with grade 0 was judged (or, for a service's own passage, stands in for it).
        labelled = {corpus.index[c] for c in question.qrels if c in corpus.index}
        holders = sorted({i for e in quotes_of[question.id] for i in search.find(e)}) if search else []
        hit = next((i for i in holders if i not in labelled), None)
        if hit is not None:
            found[question.id] = {"chunk_to_add": corpus.chunks[hit].id, "by": "evidence quote"}
            continue
        if results is None or not question.reference:
            continue
        label = [corpus.chunks[i].passage for i in sorted(relevant)]
        dc = cfg.diagnosis
        for name, r in results.retrievers.items():
            top = [i for i in r.rankings.top[q][: results.miss_k] if i >= 0 and i not in relevant]
            for i in top:
                c = corpus.chunks[i]
                m = answer_in_chunk(question, c.passage, label, dc.reference_coverage, dc.reference_margin)
                if m:
                    found[question.id] = {"chunk_to_add": c.id, "retriever": name, **m}
                    break
            if question.id in found:
                break
    if not found:
        return []
    listed = "; ".join(f"{qid} -> {v['chunk_to_add']}" for qid, v in sorted(found.items())[:8])
    return [
        Finding(
            "answer_outside_label",
            "warning",
            f"{len(found)} questions are answered by a chunk their label lacks (it matches the evidence quote "
            "after normalisation, or a retriever ranks it high and it holds the reference answer)",
            f"add the chunk to the label (answer_in, or a second evidence quote): {listed}"
            + (f" (+{len(found) - 8} more)" if len(found) > 8 else ""),
            sorted(found),
            found,
        )
    ]


def test_set_size(cfg: AuditConfig, results: RetrievalResults) -> list[Finding]:
    """The smallest hit@k difference a paired comparison could detect at 80% power."""
    n = len(results.answerable)
    k = results.miss_k
    rates = {
        name: float(r.per_question[f"hit@{k}"].mean())
        for name, r in results.retrievers.items()
        if f"hit@{k}" in r.per_question and n
    }
    if not rates:
        return []
    name, rate = max(rates.items(), key=lambda p: p[1])
    alpha, target = cfg.stats.alpha, cfg.lint.target_difference
    mde = detectable_hit_difference(n, rate, alpha=alpha)
    need = questions_for_hit_difference(target, rate, alpha=alpha)
    mde_text = f"{mde:.3f}" if mde is not None else "none (too few questions)"
    severity = "warning" if mde is None or mde > 3 * target else "info"
    need_text = (
        f"a {target * 100:.0f}-point difference would need about {need} questions"
        if need
        else f"at hit@{k} = {rate:.2f} two retrievers can hardly disagree, so no size is enough to compare them"
    )
    msg = (
        f"with {n} answerable questions and hit@{k} = {rate:.2f} ({name}), the smallest difference in hit@{k} a "
        f"paired comparison detects 80% of the time is {mde_text}; {need_text}"
    )
    return [
        Finding(
            "test_set_size",
            severity,
            msg,
            "add questions if you need to detect smaller differences" if severity != "info" else "",
            data={
                "n": n,
                "hit_rate": rate,
                "retriever": name,
                "detectable_difference": mde,
                "questions_needed": need,
                "target_difference": target,
            },
        )
    ]


def doc_coverage(corpus: Corpus, questions: list[Question]) -> list[Finding]:
    docs = {c.doc_id or c.id for c in corpus.chunks}
    touched = {corpus.chunks[corpus.index[cid]].doc_id or cid for q in questions for cid, g in q.qrels.items() if g > 0}
    share = len(touched) / len(docs)
    return [
        Finding(
            "coverage",
            "info" if share >= 0.2 else "warning",
            f"the test set touches {len(touched)} of {len(docs)} documents ({share:.0%})",
            "" if share >= 0.2 else "add questions about the documents nobody asks about",
            data={"documents": len(docs), "touched": len(touched), "share": share},
        )
    ]


def generic_labels(cfg: AuditConfig, questions: list[Question]) -> list[Finding]:
    """Evidence quotes that match many chunks ("Check it:") mark unrelated chunks relevant, and turn
    misses into hits: the figures then flatter the retriever."""
    many = {
        q.id: {quote: n for quote, n in q.quote_matches.items() if n > cfg.lint.max_quote_matches} for q in questions
    }
    many = {qid: m for qid, m in many.items() if m}
    if not many:
        return []
    worst = max((n, quote) for m in many.values() for quote, n in m.items())
    return [
        Finding(
            "generic_labels",
            "warning",
            f"{len(many)} questions have an evidence quote matching more than {cfg.lint.max_quote_matches} chunks "
            f"(e.g. {worst[1][:60]!r} matches {worst[0]})",
            "quote words that only the answering passage contains, or restrict the quote with doc_id",
            sorted(many),
            {"matches": many},
        )
    ]


def split_evidence(questions: list[Question]) -> list[Finding]:
    """Evidence quotes a chunk boundary cut: no chunk holds them whole, so each adjacent chunk they
    span counts relevant, graded by its share of the quote."""
    spans = {q.id: q.quote_spans for q in questions if q.quote_spans}
    if not spans:
        return []
    n = sum(len(s) for s in spans.values())
    qid, split = next(iter(spans.items()))
    quote, parts = next(iter(split.items()))
    example = f"{quote[:50]!r} in {qid} spans " + ", ".join(f"{cid} ({g:.0%})" for cid, g in parts.items())
    return [
        Finding(
            "split_evidence",
            "info",
            f"{n} evidence quote{'s' if n != 1 else ''} of {len(spans)} question{'s' if len(spans) != 1 else ''} "
            f"span{'s' if n == 1 else ''} adjacent chunks (a chunk boundary cuts them; e.g. {example}): each chunk "
            "a quote spans counts relevant, graded by its share of the quote",
            "nothing to do for a chunker you are comparing; for your own chunking, larger chunks or more overlap "
            "keep such evidence whole",
            sorted(spans),
            {"spans": {qid: split for qid, split in spans.items()}},
        )
    ]


@collection_paused()
def lint(
    cfg: AuditConfig, corpus: Corpus, questions: list[Question], results: RetrievalResults | None = None
) -> list[Finding]:
    """Every health finding, most severe first."""
    findings = (
        copied_wording(cfg, corpus, questions)
        + unanswerable_share(cfg, questions)
        + exact_token_questions(questions)
        + duplicates(cfg, questions)
        + restated_references(questions)
        + suspect_labels(cfg, corpus, questions)
        + generic_labels(cfg, questions)
        + split_evidence(questions)
        + doc_coverage(corpus, questions)
    )
    findings += answer_outside_label(cfg, corpus, questions, results)
    if results is not None:
        findings += test_set_size(cfg, results)
    return sorted(findings, key=lambda f: -SEVERITY_ORDER[f.severity])


def fails(cfg: AuditConfig, findings: list[Finding]) -> bool:
    """Whether the findings fail ``lint.fail_on``."""
    if cfg.lint.fail_on == "never":
        return False
    floor = SEVERITY_ORDER[cfg.lint.fail_on]
    return any(SEVERITY_ORDER[f.severity] >= floor for f in findings)

"""Re-chunking tried before it is advised: on a folder corpus whose long section buries the answer,
the simulation names the chunkers that fix the miss, and applying one really does."""

import json

import rag_eval


def _project(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    filler = "\n\n".join(
        f"Paragraph {i} covers the layout of the {w} table and its columns in detail."
        for i, w in enumerate(["tax", "fee", "rate", "cost", "price"] * 12)
    )
    (docs / "strings.md").write_text(
        "# String methods\n\n" + filler + "\n\nThe zfill method pads a numeric string on the left with zeros.\n"
    )
    for topic in ["numbers", "padding", "alignment", "formatting"]:
        (docs / f"{topic}.md").write_text(
            f"# {topic.title()}\n\nA short note on {topic}: which method pads a number string on the left.\n"
        )
    questions = [
        {
            "id": "q1",
            "question": "Which method pads a number string with zeros on the left?",
            "evidence": "The zfill method pads a numeric string on the left with zeros.",
        },
        {"id": "q2", "question": "A short note on alignment?", "evidence": "A short note on alignment"},
    ]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return {
        "name": "rechunk",
        "corpus": {"folder": "docs", "chunker": {"type": "heading"}},
        "test_set": {"path": "q.jsonl"},
        "retrieval": {"k": [1], "depth": 10, "miss_k": 1, "retrievers": {"bm25": {"type": "bm25"}}},
        "report": {"out": str(tmp_path / "runs")},
    }


def test_rechunking_is_simulated_and_holds_when_applied(tmp_path):
    cfg = _project(tmp_path)
    before = rag_eval.retrieval(cfg, base_dir=tmp_path)
    misses = before.report.dump()["retrieval"]["misses"]["bm25"]
    assert [m["question_id"] for m in misses] == ["q1"]
    assert misses[0]["diagnosis"]["cause"] == "long_passage"
    fixes = {f["change"]: f for f in before.report.dump()["retrieval"]["simulated_fixes"]}
    fixed_by = [c for c, f in fixes.items() if f["fixes"] == ["q1"] and not f["causes"]]
    assert fixed_by, fixes
    f = fixes[fixed_by[0]]
    assert f["simulated_on"] == 2 and f["labels_split"] == [] and "would fix 1 miss and cause 0" in f["summary"]
    # Applying the simulated chunker gives what the simulation said.
    applied = {**cfg, "corpus": {"folder": "docs", **f["config"]["corpus"]}}
    after = rag_eval.retrieval(applied, base_dir=tmp_path)
    assert after.report.dump()["retrieval"]["misses"]["bm25"] == []
    assert "would fix 1 miss" in (tmp_path / "runs").joinpath(before.run_dir.name, "report.md").read_text()


def test_no_simulation_without_a_chunking_cause_or_a_folder(small_project):
    cfg = rag_eval.as_config(str(small_project / "audit.yaml"))
    result = rag_eval.retrieval(cfg)
    assert all("chunks" not in f for f in result.report.dump()["retrieval"]["simulated_fixes"])


def test_a_chunk_boundary_is_given_only_when_re_chunking_fixes_it(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "prompts.md").write_text(
        "# Prompts\n\nTo hide the input of a password prompt, use the option of the next section.\n\n"
        "# Option\n\nPass hide_input=True; the typed characters stay invisible.\n"
    )
    for topic in ["colours", "paging", "progress bars", "editors"]:
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nShowing {topic} in the terminal, with an example.\n")
    q = {
        "id": "q1",
        "question": "How do I hide the input of a password prompt?",
        "evidence": "Pass hide_input=True; the typed characters stay invisible.",
    }
    (tmp_path / "q.jsonl").write_text(json.dumps(q) + "\n")
    cfg = {
        "name": "boundary",
        "corpus": {"folder": "docs", "chunker": {"type": "heading"}},
        "test_set": {"path": "q.jsonl"},
        "retrieval": {"k": [1], "depth": 10, "miss_k": 1, "retrievers": {"bm25": {"type": "bm25"}}},
        "report": {"out": str(tmp_path / "runs")},
    }
    result = rag_eval.retrieval(cfg, base_dir=tmp_path)
    (miss,) = result.report.dump()["retrieval"]["misses"]["bm25"]
    d = miss["diagnosis"]
    assert d["cause"] == "chunk_boundary" and d["evidence"]["neighbour"] == "prompts.md#prompts"
    # The sections merged into one chunk put the question's words and the answer together.
    assert d["decided"] == (
        "confirmed: simulated re-chunking (fixed-size chunks of 2,000 characters (overlap 400)) fixes this miss"
    )
    report = (result.run_dir / "report.md").read_text()
    assert "confirmed: simulated re-chunking (fixed-size chunks of 2,000 characters" in report

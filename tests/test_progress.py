"""Progress where there is no terminal: the CLI run as a subprocess whose standard output and error
are pipes (a CI log, ``| tee``) prints one line when a stage starts and one every
RAG_EVAL_PROGRESS_INTERVAL seconds with done/total and an estimate; ``-q`` silences it."""

import os
import pty
import re
import subprocess
import sys
import time

import yaml

from rag_eval import progress

from .conftest import ROOT
from .scripted_server import ScriptedServer, structured_reply
from .system.test_trace_audit import judges
from .system.test_traces_formats import _otlp_line

ANSI = re.compile(r"\x1b\[")


def _cli(args: list[str], cwd, interval: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAG_EVAL_PROGRESS_INTERVAL": interval, "RAG_EVAL_CACHE_DIR": str(cwd / "cache")}
    env.pop("FORCE_COLOR", None)
    env.pop("FORCE_TERMINAL", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,  # both pipes: no terminal
        text=True,
        timeout=300,
    )


def test_without_a_terminal_the_cli_prints_stage_and_interval_lines(tmp_path):
    docs = ["py/sets", "py/lists", "py/dicts", "py/with"]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(_otlp_line(i, f"Question {i}?", f"Answer {i}.", docs[i % 4]) + "\n" for i in range(16)))
    # Each judge call takes 0.15 s: the judging stage lasts over a second, many 0.2 s intervals.
    with ScriptedServer(reply=structured_reply, latency_s=0.15) as s:
        cfg = {"name": "piped", "judges": judges(s.base_url)}
        cfg["judges"]["llm"]["concurrency"] = 2
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump(cfg))
        args = ["traces", str(path), "--config", "traces.yaml", "--labels", "0", "--no-cache"]
        shown = _cli(args, tmp_path, "0.2")
        quiet = _cli(["-q", *args], tmp_path, "0.2")
    assert shown.returncode == 0, shown.stderr
    err = shown.stderr
    assert not ANSI.search(err) and "\r" not in err  # plain lines, no live bar
    assert re.search(r"^judging answers \((\d+) items\): started$", err, re.M), err
    total = int(re.search(r"^judging answers \((\d+) items\)", err, re.M).group(1))
    ticks = re.findall(
        rf"^judging answers: (\d+)/{total} done, \d+ of ~\d+ calls, \d+ of {2 * total} decisions, .+ elapsed"
        r"(, about .+ left|, no estimate yet.*)$",
        err,
        re.M,
    )
    assert ticks, err
    assert any(", about " in t[1] for t in ticks), err  # an estimate once something is done
    assert re.search(
        rf"^judging answers: {total}/{total} done, .+, {2 * total} of {2 * total} decisions in \d+ s$", err, re.M
    )
    assert "traces: 16 read, 16 audited" in shown.stdout
    # -q: the same run, no progress and no status lines; the results still on standard output.
    assert quiet.returncode == 0, quiet.stderr
    assert "judging answers" not in quiet.stderr and "traces: 16 read" in quiet.stdout


def test_a_stage_line_and_an_estimate(monkeypatch, capsys):
    """In-process: the lines' text, and the interval from the environment (30 s when unset)."""
    monkeypatch.delenv(progress.INTERVAL_ENV, raising=False)
    assert progress.interval_s() == 30.0
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    assert progress.interval_s() == 0.05
    progress.set_enabled(True)
    try:
        out = list(progress.track(iter(range(4)), "searching", total=4))
        slow = []
        for x in progress.track([1, 2], "embedding"):
            time.sleep(0.12)
            slow.append(x)
    finally:
        progress.set_enabled(False)
    assert out == [0, 1, 2, 3] and slow == [1, 2]
    err = capsys.readouterr().err
    assert "searching (4 items): started" in err and "embedding (2 items): started" in err
    assert re.search(r"embedding: [012]/2 done, 0 s elapsed", err)
    assert "embedding: 2/2 done in 0 s" in err
    lines = progress.Lines("judging", 10, interval=30)
    lines.start -= 20
    lines.advance(4)
    assert lines.status() == "judging: 4/10 done, 20 s elapsed, about 30 s left"
    assert progress.duration(167) == "2 min 47 s" and progress.duration(3900) == "1 h 05 min"
    # A status line in a log is one line, however long, and its brackets are text.
    long = "retrieval: " + "x" * 150 + " [no interval]"
    progress.set_enabled(True)
    try:
        progress.say(long)
    finally:
        progress.set_enabled(False)
    assert capsys.readouterr().err == long + "\n"


def test_on_a_terminal_the_live_bar_stays(tmp_path):
    """Standard error a terminal (a pseudo-terminal here): the live bar draws and redraws in place
    (cursor control), and none of the plain lines are printed."""
    docs = ["py/sets", "py/lists", "py/dicts", "py/with"]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(_otlp_line(i, f"Question {i}?", f"Answer {i}.", docs[i % 4]) + "\n" for i in range(8)))
    with ScriptedServer(reply=structured_reply, latency_s=0.05) as s:
        (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "tty", "judges": judges(s.base_url)}))
        leader, follower = pty.openpty()
        env = {**os.environ, "RAG_EVAL_PROGRESS_INTERVAL": "0.05", "RAG_EVAL_CACHE_DIR": str(tmp_path / "cache")}
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        args = ["traces", str(path), "--config", "traces.yaml", "--labels", "0", "--no-cache"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "rag_eval.cli", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=follower,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out, _ = proc.communicate(timeout=300)
        os.close(leader)
    err = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, err
    assert ANSI.search(err) and "judging answers" in err  # the bar, drawn with cursor control
    assert "): started" not in err and "elapsed, about" not in err
    assert b"traces: 8 read, 8 audited" in out


def test_judging_progress_moves_with_every_model_call(small_project, monkeypatch, capsys):
    """A slowed model: the judging lines count calls and decisions against the plan, and each line
    shows more calls done than the one before (a line never stands still while calls complete;
    49 item 3). Every stage that started says it is done, and the estimates say what they rest on."""
    from rag_eval.cli import main

    from .orchestration.test_pipeline import _config

    monkeypatch.setenv(progress.INTERVAL_ENV, "0.4")
    # Slow enough that judging spans several progress intervals however few calls the judges make.
    with ScriptedServer(reply=structured_reply, latency_s=0.15) as s:
        cfg = _config(small_project, s.base_url)
        assert main(["run", str(cfg), "--no-cache"]) == 0
        calls = s.calls
    err = capsys.readouterr().err
    assert "bm25: searching (1 item): started" in err and "bm25: searching: 1/1 done in 0 s" in err
    assert re.search(r"^retrieval: 1 retriever \(bm25\) ranked 4 questions in \d+ s$", err, re.M), err
    assert (
        "generation: 4 questions x 1 prompts on bm25's top 2: at most 4 calls (cached ones are free), about 32 s at "
        "8.0 s a call assumed (generation.llm.expected_latency_s; nothing measured on this endpoint yet)"
    ) in err
    estimate = re.search(
        r"^judging 4 answers with .+: at most (\d+) calls .+ as measured in this run on the answers. calls \(long "
        r"replies; most judge calls reply with a word or two\), an upper bound$",
        err,
        re.M,
    )
    assert estimate, err
    planned = int(estimate.group(1))
    ticks = re.findall(rf"^judging answers: \d/4 done, (\d+) of ~{planned} calls, (\d+) of 12 decisions, ", err, re.M)
    assert len(ticks) >= 2, err
    done = [int(c) for c, _ in ticks]
    assert all(a < b for a, b in zip(done, done[1:])), ticks  # every line moved
    final = re.search(
        rf"^judging answers: 4/4 done, (\d+) of ~{planned} calls, 12 of 12 decisions in \d+ s$", err, re.M
    )
    # The reasons of the verdicts a reader is shown are asked after the verdicts (issue 49 item 2), in
    # a stage of their own that counts its own calls, not against the judging's plan, and no
    # decisions (every decision was made before it).
    quoting = re.search(r"^quoting the reasons shown: (\d+)/\1 done, (\d+) calls in \d+ s$", err, re.M)
    assert "decisions" not in "".join(re.findall(r"^quoting the reasons shown: .*$", err, re.M)), err
    reasons = int(quoting.group(2)) if quoting else 0
    assert final and int(final.group(1)) + reasons == calls - 4 <= planned, err  # all but the 4 answers'
    assert re.search(r"^generating answers: 4/4 done, 4 of ~4 calls in \d+ s$", err, re.M), err


def test_a_resumed_stage_estimates_from_the_work_left_not_the_reused_decisions():
    """User trial M5: a resumed judging stage reuses 61 of its 80 decisions at once; its estimate
    comes from the 19 left (1 made: about 1/19 done), not from 62 of 80 (it said "about 13 s left" for
    ten minutes); without reuse the shares are as before."""
    import pytest

    with progress.plan(decisions=80):
        stage = progress.Stage("judging answers", total=20)
        progress.decided(61, reused=True)
        stage.done = 15  # answers whose every decision was reused
        assert stage.fraction() is None or stage.fraction() == 0.0
        progress.decided(1)
        assert stage.fraction() == pytest.approx(1 / 19)
    with progress.plan(decisions=80):
        fresh = progress.Stage("judging answers", total=20)
        progress.decided(40)
        fresh.done = 8
        assert fresh.fraction() == pytest.approx(0.5)


def test_the_time_left_follows_the_work_counted_now_when_reused_decisions_arrive_late():
    """Answers judged afresh first, then a resumed run's reused decisions: the items' share no longer
    counts, and the fraction (and so the time left) is the work left counted now, not held at the
    most it once said (review 53 L9: a held fraction made the estimate understate the time left)."""
    import pytest

    with progress.plan(decisions=40):
        stage = progress.Stage("judging answers", total=10)
        progress.decided(8)
        stage.done = 5
        assert stage.fraction() == pytest.approx(0.5)  # 5 of 10 answers
        progress.decided(20, reused=True)
        assert stage.fraction() == pytest.approx(8 / 20)  # 8 made of the 20 left to make
        progress.decided(8)
        assert stage.fraction() == pytest.approx(16 / 20)

"""rag-eval view on the command line: loopback by default, a warning for any other address, clear
errors, and no label lost when the server is killed between two labels."""

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from rag_eval.cli import main
from rag_eval.view import serve as serve_module

from .conftest import free_port


def test_it_serves_on_loopback_by_default_and_warns_for_another_address(runs, monkeypatch, capsys):
    folder, _, _ = runs
    got = []
    monkeypatch.setattr(serve_module.uvicorn, "run", lambda app, host, port, **kw: got.append((host, port)))
    assert main(["view", str(folder), "--port", str(free_port())]) == 0
    out = capsys.readouterr()
    assert got[0][0] == "127.0.0.1" and "warning" not in out.err
    assert f"at http://127.0.0.1:{got[0][1]}/" in out.out
    assert main(["view", str(folder), "--host", "0.0.0.0", "--port", str(free_port())]) == 0
    out = capsys.readouterr()
    assert got[1][0] == "0.0.0.0"
    assert "warning: serving on 0.0.0.0, not 127.0.0.1" in out.err and "write its labels files" in out.err


def test_a_missing_folder_or_a_busy_port_is_a_clear_error(tmp_path, runs, capsys):
    assert main(["view", str(tmp_path / "nope")]) == 2
    assert f"{tmp_path / 'nope'}: the runs folder does not exist" in capsys.readouterr().err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["view", str(runs[0]), "--port", str(port)]) == 2
    assert f"--host 127.0.0.1 --port {port}: cannot listen there" in capsys.readouterr().err


def start_server(folder, port, cwd=None):
    """``rag-eval view`` as a child process (started in ``cwd``), once it answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_eval.cli", "view", str(folder), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=cwd,
    )
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise AssertionError(proc.stdout.read().decode()) from None
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("rag-eval view did not start")


def test_no_label_is_lost_when_the_server_is_killed_between_two_labels(runs):
    folder, first, _ = runs
    port = free_port()
    proc = start_server(folder, port)
    url = f"http://127.0.0.1:{port}/api/runs/{first}/labels"
    try:
        r = httpx.post(url, json={"question_id": "q1", "prompt": "base", "values": {"correct": False}})
        assert r.status_code == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    path = folder / first / "labels" / "labels.csv"
    rows = {r["question_id"]: r for r in csv.DictReader(path.open())}
    assert rows["q1"]["correct"] == "no"
    proc = start_server(folder, port)
    try:
        assert (
            httpx.post(url, json={"question_id": "q2", "prompt": "base", "values": {"correct": True}}).status_code
            == 200
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = {r["question_id"]: r for r in csv.DictReader(path.open())}
    assert (rows["q1"]["correct"], rows["q2"]["correct"]) == ("no", "yes")
    assert [p.name for p in path.parent.iterdir()] == ["labels.csv"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_addresses(host):
    assert serve_module.is_loopback(host)
    assert not serve_module.is_loopback("0.0.0.0") and not serve_module.is_loopback("192.168.1.5")


def test_the_evidence_is_marked_whatever_folder_the_view_starts_from(runs, tmp_path):
    """The run was started from its project's folder with a relative config path, so its report
    records the test set as ``questions.jsonl``: served from another folder, the labelling page
    still finds the test set (through the run's saved config and the config's recorded folder)
    and marks q2's evidence in its context."""
    folder, first, _ = runs
    assert json.loads((folder / first / "report.json").read_text())["test_set"]["path"] == "questions.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    proc = start_server(folder, port, cwd=elsewhere)
    try:
        for i in range(30):
            page = httpx.get(f"http://127.0.0.1:{port}/runs/{first}/label/{i}").text
            if "What is a set?</h1>" in page:
                break
        else:
            raise AssertionError("q2 is not in the labelling queue")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert "<mark>unordered collection of distinct hashable objects</mark>" in page

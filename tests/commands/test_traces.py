"""`rag-eval traces` says what failed, as `rag-eval run` does: a traces audit whose judge endpoint is
dead prints the failures line (how many judgements failed, the answers left without a verdict, the
first error) and fails the default gate (exit 1), instead of ending green."""

import json
import socket

import yaml

from rag_eval.cli import main

from ..system.test_traces import PHOENIX


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_traces_whose_judgements_all_failed_say_so_and_fail_the_gate(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    llm = {"provider": "openai", "model": "scripted", "base_url": f"http://127.0.0.1:{_closed_port()}/v1"}
    judges = {"llm": {**llm, "max_retries": 0, "timeout_s": 5}, "metrics": ["refusal", "faithfulness_yesno"]}
    (tmp_path / "traces.yaml").write_text(yaml.safe_dump({"name": "prod", "judges": judges}))
    assert main(["-q", "traces", str(PHOENIX), "--config", "traces.yaml", "--labels", "0"]) == 1
    out = capsys.readouterr().out
    run = next((tmp_path / "runs").iterdir())
    failures = json.loads((run / "summary.json").read_text())["failures"]
    assert failures["not_judged"] == 3 and failures["judgements"] >= 3
    line = (
        f"failures: 0 of 3 answers failed, {failures['judgements']} judgements failed: 3 answers not judged; "
        f"first error: {failures['first_error']}"
    )
    assert failures["first_error"].startswith("APIConnectionError")
    lines = out.splitlines()
    folder_line = next(i for i, x in enumerate(lines) if x.startswith("run folder: "))
    assert line in lines and lines.index(line) < folder_line
    assert any(x.startswith("gate FAIL") and "failures.not_judged_share" in x for x in lines), out

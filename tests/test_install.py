"""The installed tool, as a user gets it: a non-editable install, run from an unrelated folder."""

import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT
from .scripted_server import ScriptedServer, structured_reply


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """rag-eval built as a wheel and installed (without dependencies) into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    return target


@pytest.mark.slow
def test_installed_package_runs_an_audit_from_another_folder(installed, small_project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(installed)}
    where = subprocess.run(
        [sys.executable, "-c", "import rag_eval; print(rag_eval.__file__)"],
        env=env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(installed)), where.stdout  # not the checkout
    with ScriptedServer(reply=structured_reply) as s:
        llm = f"{{provider: openai, model: scripted, base_url: '{s.base_url}'}}"
        cfg = small_project / "audit.yaml"
        # The default answer prompt and the judges' prompts: both must come from the installed package.
        cfg.write_text(
            cfg.read_text()
            + f"generation:\n  retriever: bm25\n  top_k: 2\n  llm: {llm}\n"
            + f"judges:\n  llm: {llm}\n  metrics: [correctness, refusal]\n"
        )
        code = subprocess.run(
            [sys.executable, "-m", "rag_eval.cli", "--quiet", "run", str(cfg)],
            env=env,
            cwd=elsewhere,
            capture_output=True,
            text=True,
        )
    assert code.returncode == 0, code.stderr
    run_dir = next((small_project / "runs").iterdir())
    judged = [json.loads(x) for x in (run_dir / "judgements.jsonl").read_text().splitlines()]
    assert {j["judge"] for j in judged if j["status"] == "judged"} == {"correctness", "refusal"}
    assert not any(elsewhere.iterdir())  # nothing written to the working folder


@pytest.mark.slow
def test_installed_package_validates_the_demo_config_from_another_folder(installed, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(installed)}
    code = subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "--quiet", "validate", str(ROOT / "configs" / "demo.yaml")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert code.returncode == 0, code.stderr + code.stdout


@pytest.mark.slow
def test_installed_package_ships_the_demo_questions_and_the_judge_check_cases(installed, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(installed)}
    (tmp_path / "demo.yaml").write_text(
        "name: anywhere\ncorpus: {source: python-docs}\ntest_set: {path: data/python-docs/questions.jsonl}\n"
        "retrieval: {k: [1], retrievers: {bm25: {type: bm25}}}\n"
    )
    code = subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "--quiet", "validate", "demo.yaml"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert code.returncode == 0, code.stderr + code.stdout
    cases = subprocess.run(
        [
            sys.executable,
            "-c",
            "from rag_eval.judges.judge_check import *; print(len(read_case_files([DEFAULT_CASES])))",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert cases.returncode == 0 and int(cases.stdout) > 100, cases.stderr
    assert (installed / "rag_eval" / "bundled" / "judge-check" / "cases.jsonl").is_file()
    # Only what an audit reads: the benchmarks' labelled studies and corpora stay out of the wheel.
    bundled = {p.name for p in (installed / "rag_eval" / "bundled").iterdir() if p.name != "__pycache__"}
    assert bundled == {"__init__.py", "judge-check", "python-docs"}, bundled

"""repack: auto — the weight layout probed once per machine with llama-bench, then kept."""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_eval.llm import weight_layout
from rag_eval.llm.local import ServerSettings
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.weight_layout import AUDIT_MIX, audit_seconds, choose, repack_for

from ..conftest import ROOT


def _fake_bench(folder: Path, speeds: dict[str, tuple[float, float]]) -> Path:
    """A llama-server path with a llama-bench beside it that prints ``speeds[repack]`` (prompt,
    generation tokens/s) as llama-bench's jsonl and logs each run in ``runs.log``."""
    folder.mkdir(parents=True, exist_ok=True)
    server = folder / "llama-server"
    server.write_text("#!/bin/sh\nexit 0\n")
    bench = folder / "llama-bench"
    bench.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import json, sys
            args = sys.argv[1:]
            layout = args[args.index("--repack") + 1]
            pp, tg = {speeds!r}[layout]
            with open({str(folder / "runs.log")!r}, "a") as fh:
                fh.write(" ".join(args) + "\\n")
            print(json.dumps({{"n_prompt": int(args[args.index("-p") + 1]), "n_gen": 0, "avg_ts": pp}}))
            print(json.dumps({{"n_prompt": 0, "n_gen": int(args[args.index("-n") + 1]), "avg_ts": tg}}))
            """
        )
    )
    for f in (server, bench):
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return server


# Speeds of the 2-core AVX-512 machine (benchmarks/audit_cost result.json, repack section) and of
# an AVX2 one where the two layouts are the same within noise (issue 49).
AVX512 = {"1": (101.0, 27.35), "0": (152.4, 23.19)}
AVX2 = {"1": (55.0, 18.6), "0": (58.0, 18.6)}


def test_the_layout_is_the_one_an_audits_mix_of_tokens_runs_faster_with():
    fast = choose({"repack": [101.0], "no_repack": [152.4]}, {"repack": [27.35], "no_repack": [23.19]})
    expected = (AUDIT_MIX / 152.4 + 1 / 23.19) / (AUDIT_MIX / 101.0 + 1 / 27.35)
    assert fast.repack is False
    assert fast.audit_time_ratio == pytest.approx(expected, abs=1e-3)
    assert 0.8 < expected < 0.9
    assert "prompt 1.51x as fast, generation 0.85x" in fast.why
    # Not clearly faster (within MARGIN): the server's default, repacking, stays.
    even = choose({"repack": [55.0], "no_repack": [58.0]}, {"repack": [18.6], "no_repack": [18.6]})
    assert even.repack is True and even.audit_time_ratio > weight_layout.MARGIN
    # Generation-bound work would keep repacking: the mix decides, not one speed alone.
    assert audit_seconds(152.4, 23.19, mix=0.5) > audit_seconds(101.0, 27.35, mix=0.5)


def test_the_probe_runs_once_interleaved_and_is_kept(tmp_path):
    server = _fake_bench(tmp_path / "bin", AVX512)
    kept = tmp_path / "models"
    repack_for.cache_clear()
    assert repack_for(server, "build-a", "model-a", tmp_path / "m.gguf", 2, kept) is False
    runs = (tmp_path / "bin" / "runs.log").read_text().splitlines()
    # Three rounds, the order alternating: repack first, then no repack first, then repack first.
    assert [r.split("--repack ")[1] for r in runs] == ["1", "0", "0", "1", "1", "0"]
    assert all("-t 2" in r and "-p 512" in r and "-n 64" in r for r in runs)
    entry = json.loads((kept / weight_layout.FILE).read_text())["build-a|model-a"]
    assert entry["repack"] is False and entry["prompt_tps"] == {"repack": 101.0, "no_repack": 152.4}
    # Kept: asked again (also after the in-process memo is gone), llama-bench is not run again.
    repack_for.cache_clear()
    assert repack_for(server, "build-a", "model-a", tmp_path / "m.gguf", 2, kept) is False
    assert len((tmp_path / "bin" / "runs.log").read_text().splitlines()) == 6
    # Another thread count keeps the layout (and the cache identity): the key is the build and model.
    assert repack_for(server, "build-a", "model-a", tmp_path / "m.gguf", 1, kept) is False
    assert len((tmp_path / "bin" / "runs.log").read_text().splitlines()) == 6
    # Another build or model is probed for itself and kept beside the first.
    other = _fake_bench(tmp_path / "bin2", AVX2)
    assert repack_for(other, "build-b", "model-a", tmp_path / "m.gguf", 2, kept) is True
    table = json.loads((kept / weight_layout.FILE).read_text())
    assert set(table) == {"build-a|model-a", "build-b|model-a"}


def test_a_second_process_reads_the_kept_choice(tmp_path):
    server = _fake_bench(tmp_path / "bin", AVX512)
    code = (
        "import sys; from pathlib import Path; from rag_eval.llm.weight_layout import repack_for; "
        f"print(repack_for(Path({str(server)!r}), 'b', 'm', Path('m.gguf'), 2, Path({str(tmp_path / 'k')!r})))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True) for _ in "ab"
    ]
    assert [o.stdout.strip() for o in outs] == ["False", "False"]
    assert "weight layout: not repacked" in outs[0].stderr + outs[0].stdout
    assert len((tmp_path / "bin" / "runs.log").read_text().splitlines()) == 6  # the second process probed nothing


def test_without_llama_bench_or_when_it_fails_the_servers_default_stays(tmp_path):
    server = tmp_path / "alone" / "llama-server"
    server.parent.mkdir()
    server.write_text("")
    repack_for.cache_clear()
    assert repack_for(server, "b", "m", None, 2, tmp_path / "k") is True
    assert not (tmp_path / "k" / weight_layout.FILE).exists()
    # A failing llama-bench: the default, and nothing kept, so that the next run tries again.
    broken = _fake_bench(tmp_path / "broken", AVX512)
    (broken.parent / "llama-bench").write_text("#!/bin/sh\necho 'model failed to load' >&2; exit 3\n")
    assert repack_for(broken, "b", "m", tmp_path / "m.gguf", 2, tmp_path / "k") is True
    assert "b|m" not in weight_layout._read(tmp_path / "k" / weight_layout.FILE)
    healed = _fake_bench(tmp_path / "broken", AVX512)
    repack_for.cache_clear()
    assert repack_for(healed, "b", "m", tmp_path / "m.gguf", 2, tmp_path / "k") is False
    # A folder that cannot be written: the default, without probing.
    (tmp_path / "file").write_text("")
    assert repack_for(healed, "c", "m", tmp_path / "m.gguf", 2, tmp_path / "file" / "k") is True
    assert len((tmp_path / "broken" / "runs.log").read_text().splitlines()) == 6


def test_auto_is_resolved_in_the_settings_and_the_cache_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("RAG_EVAL_REPACK")
    server = _fake_bench(tmp_path / "bin", AVX512)
    repack_for.cache_clear()
    cfg = LLMConfig(provider="local", server_binary=str(server), model_path=str(tmp_path / "m.gguf"))
    assert cfg.repack == "auto"
    (tmp_path / "m.gguf").write_bytes(b"gguf")
    settings = ServerSettings.from_config(cfg.model_dump())
    assert settings.repack is False and "--no-repack" in settings.args()
    auto = LLMSession.identity(cfg)
    assert auto.endswith("repack=0")
    assert auto == LLMSession.identity(cfg.model_copy(update={"repack": False}))
    assert LLMSession.identity(cfg.model_copy(update={"repack": True})).endswith("repack=1")
    assert auto == LLMSession.identity(cfg.model_copy(update={"threads": 1}))
    # The config's own true or false is never probed.
    assert len((tmp_path / "bin" / "runs.log").read_text().splitlines()) == 6
    # RAG_EVAL_REPACK resolves auto without probing (the test suite pins 1).
    repack_for.cache_clear()
    monkeypatch.setenv("RAG_EVAL_REPACK", "1")
    assert LLMSession.identity(cfg).endswith("repack=1")
    assert len((tmp_path / "bin" / "runs.log").read_text().splitlines()) == 6


def test_the_real_llama_bench_measures_both_layouts(tmp_path):
    """The probe with the installed llama-bench and the embedded model: both layouts measured and
    the choice the one ``choose`` makes of the kept speeds."""
    from rag_eval.llm.local import default_model_path, server_binary

    server = server_binary()
    if not (server.resolve().parent / "llama-bench").is_file():
        pytest.skip("llama-bench is not installed beside llama-server")
    repack_for.cache_clear()
    chosen = repack_for(server, "real", "model", default_model_path(), 2, tmp_path)
    entry = json.loads((tmp_path / weight_layout.FILE).read_text())["real|model"]
    assert entry["repack"] is chosen
    assert all(v > 1 for v in [*entry["prompt_tps"].values(), *entry["generation_tps"].values()])
    again = choose(
        {k: [v] for k, v in entry["prompt_tps"].items()}, {k: [v] for k, v in entry["generation_tps"].items()}
    )
    assert again.repack is chosen

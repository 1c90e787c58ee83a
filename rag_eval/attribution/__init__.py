"""Attribution, the audit's core output: one outcome per question and prompt (``outcomes``) and the
records it hands the report (``records``)."""

from rag_eval.attribution.outcomes import (
    GENERATION_FAILURES,
    OUTCOMES,
    RETRIEVAL_FAILURES,
    UNRECORDED_FAITHFULNESS_THRESHOLD,
    Verdict,
    attribute,
    failed_criteria,
)
from rag_eval.attribution.records import (
    AttributionRow,
    AttributionSection,
    ContextMark,
    EvidencePart,
    FailureSplit,
    JudgeBrief,
    OutcomeShare,
    Quote,
    ReasonEvidence,
)

__all__ = [
    "GENERATION_FAILURES",
    "OUTCOMES",
    "RETRIEVAL_FAILURES",
    "UNRECORDED_FAITHFULNESS_THRESHOLD",
    "AttributionRow",
    "AttributionSection",
    "ContextMark",
    "EvidencePart",
    "FailureSplit",
    "JudgeBrief",
    "OutcomeShare",
    "Quote",
    "ReasonEvidence",
    "Verdict",
    "attribute",
    "failed_criteria",
]

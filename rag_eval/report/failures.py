"""What failed in a run that still finished: answers whose model call failed, judgements that
failed, and the answers left without a verdict by them (summary.json's ``failures``, the failures
record of status.json, the line on screen and the default gate on ``failures.not_judged_share``)."""

from __future__ import annotations

from rag_eval.answers.answer_records import Answer
from rag_eval.base_records import Num
from rag_eval.judges.judgement import Judgement
from rag_eval.rundir import RunFailures

# A judgement of an answer that failed (or is empty) carries this error: no judge's call failed.
NO_ANSWER = "no answer to judge"
# The errors of a judgement its inputs ruled out (scored.py, ragas_judges.py): no model call failed.
NOT_A_CALL = ("no contexts", "no statements in the ", "no statements could be extracted")


class CallFailures(RunFailures):
    """summary.json's ``failures``: ``answers`` that failed (their model call, or the system's
    reply), ``judgements`` that failed on answers that exist, the first error word for word, and
    ``not_judged``: the answers of ``answers_total`` (every prompt's) left without a verdict because
    a call failed (the answer's, or any of its judges'), with their share ``not_judged_share`` (the
    default gate's figure)."""

    answers_total: int = 0
    not_judged: int = 0
    not_judged_share: Num = 0.0

    def status_record(self) -> RunFailures:
        """The failures record of status.json."""
        return RunFailures(answers=self.answers, judgements=self.judgements, first_error=self.first_error)

    def line(self) -> str:
        """``failures: 28 of 28 answers failed, 0 judgements failed: 28 answers not judged; first error:
        APIConnectionError: Connection error.``; empty when nothing failed."""
        if not self.any:
            return ""
        judged = f"{self.judgements} judgement{'s' if self.judgements != 1 else ''} failed"
        return (
            f"failures: {self.answers} of {self.answers_total} answers failed, {judged}: {self.not_judged} "
            f"answer{'s' if self.not_judged != 1 else ''} not judged; first error: {self.first_error}"
        )


def call_failures(answers: list[Answer], judgements: list[Judgement]) -> CallFailures:
    """The failures of a run's answers and judgements (answers: every prompt's generation records;
    without them, e.g. supplied answers, the answers are those the judgements are of)."""
    verdicts: dict[tuple[str, str], list[Judgement]] = {}
    for j in judgements:
        if j.status != "skipped":
            verdicts.setdefault((j.question_id, j.prompt), []).append(j)
    keys = [(a.question_id, a.prompt) for a in answers] or list(verdicts)
    failed_answers = {(a.question_id, a.prompt): a.error or "no error recorded" for a in answers if a.failed}
    failed = [j for j in judgements if j.status == "not_judged" and not (j.error or "").startswith(NO_ANSWER)]
    # An answer missing any verdict because a call failed counts: its outcome may be one the failed
    # judge decides (the outcome table's not_judged), and a run missing verdicts never passes silently.
    # A verdict the inputs rule out (no contexts to judge against, no statement in the answer) is no
    # failed call.
    called = {(j.question_id, j.prompt) for j in failed if not (j.error or "").startswith(NOT_A_CALL)}
    not_judged = sum(key in failed_answers or key in called for key in keys)
    errors = list(failed_answers.values()) + [j.error or "no error recorded" for j in failed]
    return CallFailures(
        answers=len(failed_answers),
        judgements=len(failed),
        first_error=errors[0] if errors else "",
        answers_total=len(keys),
        not_judged=not_judged,
        not_judged_share=not_judged / len(keys) if keys else 0.0,
    )

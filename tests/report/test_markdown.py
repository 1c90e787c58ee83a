"""The Markdown report: model and user text is made inert."""

from rag_eval.report.markdown import _table, text


def test_model_text_cannot_inject_html():
    answer = 'Use <script>alert("x")</script> & <img src=x onerror=y>\nthen | pipe'
    shown = text(answer)
    assert "<script>" not in shown and "<img" not in shown
    assert "&lt;script&gt;" in shown and "&amp;" in shown and "\n" not in shown
    row = _table(["answer"], [[answer]])[-1]
    assert "<script>" not in row and "\\|" in row


def test_a_judge_whose_bands_are_all_empty_says_so_once():
    """User trial 3 L8: "uncertain nowhere: the fitted band is empty (`correctness`) or nowhere: the
    fitted band is empty (`correctness_short`)"."""
    from rag_eval.judges.judge_records import JudgesSection
    from rag_eval.report.markdown import calibration_lines

    band = {"low": 0.5, "high": 0.5, "source": "fitted on cases (target agreement 0.90)"}
    section = JudgesSection.load(
        {
            "calibration": {
                "correctness": {
                    "cutoffs": {"correctness": 0.5, "correctness_short": 0.6},
                    "calibrated": True,
                    "bands": {"correctness": band, "correctness_short": band},
                }
            }
        }
    )
    [line] = [x for x in calibration_lines(section) if x.startswith("- `correctness`")]
    assert "uncertain nowhere: the fitted bands (`correctness`, `correctness_short`) are empty (fitted on" in line
    assert line.count("nowhere") == 1


def test_a_second_judges_text_verdicts_are_not_blamed_on_the_first():
    """Review 54 M7: decisions escalated to a second judge without logprobs are its endpoint's."""
    from rag_eval.judges.judge_records import JudgesSection
    from rag_eval.report.markdown import calibration_lines

    def record(q, method, second):
        esc = {"escalation": {"decided_by": "second"}} if second else {}
        return {
            "judge": "refusal",
            "question_id": q,
            "prompt": "p",
            "status": "judged",
            "method": method,
            "details": esc,
        }

    cal = {"refusal": {"cutoff": 0.5, "calibrated": True}}
    escalated = JudgesSection.load(
        {"calibration": cal, "records": [record("q1", "logprobs", False), record("q2", "text", True)]}
    )
    [line] = [x for x in calibration_lines(escalated) if x.startswith("- `refusal`")]
    assert "read from the text" not in line and "calibrated for this judge model and prompt" in line
    plain = JudgesSection.load(
        {"calibration": cal, "records": [record("q1", "text", False), record("q2", "logprobs", False)]}
    )
    [line] = [x for x in calibration_lines(plain) if x.startswith("- `refusal`")]
    assert "but 1 of its 2 verdicts were read from the text" in line

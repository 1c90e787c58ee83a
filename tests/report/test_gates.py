"""Gates: figures of summary.json against thresholds."""

import pytest

from rag_eval.errors import ConfigError
from rag_eval.report.gates import check_gates, parse_rule

SUMMARY = {
    "retrieval": {"hybrid": {"hit@5": {"value": 0.79, "ci_low": 0.7, "ci_high": 0.85, "n": 50}}},
    "attribution": {"base": {"ok": {"value": 0.5, "count": 5}}},
}


def test_pass_and_fail():
    results = check_gates({"retrieval.hybrid.hit@5": ">= 0.80", "attribution.base.ok": "> 0.4"}, SUMMARY)
    assert [r.passed for r in results] == [False, True]
    assert results[0].message == "FAIL: retrieval.hybrid.hit@5 = 0.79 (needs >= 0.8)"


def test_unknown_figure_is_a_config_error():
    with pytest.raises(ConfigError, match="has no figure 'retrieval.dense.hit@5'"):
        check_gates({"retrieval.dense.hit@5": ">= 0.5"}, SUMMARY)


@pytest.mark.parametrize("rule", ["=> 0.8", "at least 0.8", ">= x"])
def test_bad_rules(rule):
    with pytest.raises(ConfigError):
        parse_rule(rule, "gates.x")


def test_gate_exit_status(small_project, capsys):
    from rag_eval.cli import main

    cfg = small_project / "audit.yaml"
    cfg.write_text(cfg.read_text() + 'gates: {"retrieval.bm25.hit@3": ">= 1.01"}\n')
    assert main(["--quiet", "retrieval", str(cfg)]) == 1
    assert "gate FAIL: retrieval.bm25.hit@3" in capsys.readouterr().out
    cfg.write_text(cfg.read_text().replace(">= 1.01", ">= 0"))
    assert main(["--quiet", "retrieval", str(cfg)]) == 0
    cfg.write_text(cfg.read_text().replace(">= 0", "=> 0"))
    assert main(["--quiet", "retrieval", str(cfg)]) == 2


def test_a_gate_on_a_figure_without_value_says_why():
    """User trial M4: a criterion that left every answer uncertain has no value; the failed gate
    says so and what to do (it printed a blank line), and one whose calls failed says that."""
    from rag_eval.report.gates import describe_failure

    summary = {
        "generation": {
            "base": {
                "names_setting": {"value": None, "n": 0, "n_not_judged": 0, "n_uncertain": 9},
                "correctness": {"value": None, "n": 0, "n_not_judged": 3, "n_uncertain": 1},
            }
        }
    }
    gates = {"generation.base.names_setting": ">= 0.5", "generation.base.correctness": ">= 0.5"}
    named, failed = check_gates(gates, summary)
    assert not named.passed and named.message.endswith("no value (needs >= 0.5)")
    lines = describe_failure(named, summary, {}).splitlines()
    assert lines[0] == "generation.base.names_setting = no value, needs >= 0.5"
    assert "all 9 were left uncertain" in lines[1] and "--labels FILE --adapt" in lines[1]
    assert "1 uncertain, 3 not judged (their model calls failed" in describe_failure(failed, summary, {})


def test_a_figure_without_value_that_is_not_judged_is_not_explained_by_judging():
    """findings-52 L5: the judged wording is only for judged figures."""
    from rag_eval.report.gates import describe_failure

    summary = {
        "retrieval": {"bm25": {"hit@3": {"value": None, "n": 0}}},
        "attribution": {"base": {"ok": {"value": None, "n": 0, "count": 0}}},
    }
    gates = {"retrieval.bm25.hit@3": ">= 0.5", "attribution.base.ok": ">= 0.5"}
    hit, ok = check_gates(gates, summary)
    assert (
        describe_failure(hit, summary, {}).splitlines()[1].strip() == "no question counts towards this figure (n = 0)"
    )
    assert describe_failure(ok, summary, {}).splitlines()[1].strip() == "no answer counts towards this figure (n = 0)"


def test_a_gate_on_a_figure_of_few_decided_answers_says_how_few():
    """User trial 2 M6: "= 0 (needs >= 0.9)" from 1 of 10 answers read as a verdict on all ten."""
    from rag_eval.report.gates import describe_failure

    node = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.79, "n": 1, "n_not_judged": 0, "n_uncertain": 9}
    summary = {"generation": {"base": {"no_url": node}}}
    [result] = check_gates({"generation.base.no_url": ">= 0.9"}, summary)
    lines = describe_failure(result, summary, {}).splitlines()
    assert lines[0].startswith("generation.base.no_url = 0 [95% CI 0.000, 0.790; n=1]")
    assert lines[1].strip() == "decided on 1 of 10 answers: 9 uncertain, 0 not judged"


def test_a_gate_on_a_figure_decided_on_fewer_answers_than_left_uncertain_fails():
    """User trial 4 F22: 'gate pass: generation.cite.third_party = 1' on 1 decided answer of 6 (5
    uncertain), where with none decided the same gate failed."""
    from rag_eval.report.gates import describe_failure

    def gate(n: int, uncertain: int):
        node = {"value": 1.0, "ci_low": 0.21, "ci_high": 1.0, "n": n, "n_not_judged": 0, "n_uncertain": uncertain}
        summary = {"generation": {"cite": {"third_party": node}}}
        [result] = check_gates({"generation.cite.third_party": ">= 0.9"}, summary)
        return result, summary

    few, summary = gate(1, 5)
    assert not few.passed
    assert few.message == "FAIL: generation.cite.third_party = 1 on 1 decided answer, 5 uncertain (needs >= 0.9)"
    assert "passes no gate: label them" in describe_failure(few, summary, {})
    most, _ = gate(4, 2)
    assert most.passed and most.message.endswith("= 1 on 4 decided answers, 2 uncertain (needs >= 0.9)")
    [plain] = check_gates({"retrieval.hybrid.hit@5": ">= 0.7"}, SUMMARY)
    assert plain.message == "pass: retrieval.hybrid.hit@5 = 0.79 (needs >= 0.7)"

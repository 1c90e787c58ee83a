"""The judges' quotes in the report: highlighted where the answer or a context is shown, the reasons
folded under each failed question, and the failed rows filtered by outcome with CSS alone."""

import html as html_lib
import json
import re

from rag_eval.attribution.records import JudgeBrief
from rag_eval.report.formatting import text
from rag_eval.report.quotes import (
    PROMPT_QUOTES,
    filtered_table,
    highlight,
    markdown_quotes,
    reasons_html,
    row_evidence,
)

RECORD = {
    "judge": "refusal",
    "status": "judged",
    "verdict": "answered",
    "reason": 'the answer says "port 8443 by default"',
    "details": {
        "model_said": "No",
        "evidence": {
            "shown": "forced",
            "quotes": [
                {
                    "text": "port 8443 by default",
                    "found_in": "answer",
                    "verified": True,
                    "copies_prompt": False,
                    "excerpt": "The service listens on port 8443 by default. It",
                    "span": [23, 43],
                },
                {"text": "100 °C.", "found_in": None, "verified": False, "copies_prompt": True},
            ],
        },
    },
}
FAITH = {
    "judge": "faithfulness_yesno",
    "status": "judged",
    "score": 0.5,
    "reason": "1 of 2 answer statements are supported by the contexts",
    "details": {
        "model_said": ["Yes", "No"],
        "statements": [
            {
                "statement": "It listens on 8443.",
                "supported": True,
                "evidence": {
                    "quotes": [
                        {
                            "text": "default port is 8443",
                            "found_in": "context 2",
                            "verified": True,
                            "excerpt": "The default port is 8443 <b>",
                            "span": [4, 24],
                        }
                    ]
                },
            },
            {"statement": "It uses TLS 1.3.", "supported": False, "evidence": {"quotes": []}},
        ],
    },
}


def test_a_row_keeps_the_models_word_and_every_quote():
    r = row_evidence(RECORD)
    assert r["model_said"] == "No" and r["evidence"]["shown"] == "forced" and len(r["evidence"]["quotes"]) == 2
    f = row_evidence(FAITH)
    assert [p["decided"] for p in f["parts"]] == ["supported", "not supported"]
    assert f["parts"][0]["quotes"][0]["found_in"] == "context 2"
    assert row_evidence({"details": {}}) == {}


def test_markdown_lists_each_quote_with_where_it_was_found():
    lines = markdown_quotes(JudgeBrief(**row_evidence(RECORD)), text) + markdown_quotes(
        JudgeBrief(**row_evidence(FAITH)), text
    )
    # A quote of the judge prompt's own example is no evidence about this answer: not shown (user
    # trial M9), and where it was the only one, the line says so.
    assert lines == [
        '  - "port 8443 by default" (answer ✓)',
        '  - supported: It listens on 8443. – "default port is 8443" (context 2 ✓)',
    ]
    only = json.loads(json.dumps(RECORD))
    only["details"]["evidence"]["quotes"] = [q for q in only["details"]["evidence"]["quotes"] if q.get("copies_prompt")]
    assert markdown_quotes(JudgeBrief(**row_evidence(only)), text) == [f"  - {PROMPT_QUOTES}"]
    assert html_lib.escape(PROMPT_QUOTES) in reasons_html({"refusal": JudgeBrief(**(only | row_evidence(only)))})


def test_quoted_words_are_highlighted_whitespace_insensitively_and_escaped():
    shown = highlight("The service listens on\n port 8443 <by> default.", ["port 8443 <by>", "listens on port"])
    assert shown == "The service <mark>listens on\n port</mark><mark> 8443 &lt;by&gt;</mark> default."
    assert highlight("<script>", ["nothing"]) == "&lt;script&gt;"


def test_the_reasons_fold_under_the_question_and_show_the_quotes_in_their_source():
    judges = {
        "refusal": JudgeBrief(**(RECORD | row_evidence(RECORD))),
        "faithfulness_yesno": JudgeBrief(**(FAITH | row_evidence(FAITH))),
    }
    html = reasons_html(judges)
    assert html.startswith('<details class="reasons"><summary>refusal: answered, faithfulness_yesno: 0.50</summary>')
    assert html.endswith("</details>")
    assert "(the model wrote No)" in html
    assert "The service listens on <mark>port 8443 by default</mark>. It" in html
    assert "<mark>default port is 8443</mark> &lt;b&gt;" in html  # context text is escaped
    assert "repeats the prompt ✗" not in html and "<b>" not in html.replace("<b>refusal</b>", "").replace(
        "<b>faithfulness_yesno</b>", ""
    )


def test_failed_rows_filter_by_outcome_without_a_script():
    rows = [("incorrect", ["q1", "a"]), ("refused", ["q2", "b"]), ("incorrect", ["q3", "c"])]
    html = filtered_table("failures", ["question", "answer"], rows)
    assert "<script" not in html and 'id="failures"' in html
    assert 'id="failures-filter-all" checked><label for="failures-filter-all">all (3)</label>' in html
    assert '<label for="failures-filter-incorrect">incorrect (2)</label>' in html
    assert "#failures-filter-refused:checked~table tbody tr:not(.row-refused){display:none}" in html
    assert re.findall(r'<tr class="row-(\w+)">', html) == ["incorrect", "refused", "incorrect"]
    # The radio buttons precede the table within one parent, as the sibling selector needs.
    assert html.index('type="radio"') < html.index('<table id="failures">') and html.startswith('<div class="ofilter">')


def test_one_plain_word_and_a_repeated_quote_are_not_listed():
    """User trial 4 F10: '"Yes" (in answer, one plain word ✗)' and the same reference quote listed
    twice in one reason."""
    row = json.loads(json.dumps(RECORD))
    ref = {"text": "None: ports are  normalized", "found_in": "reference", "verified": True}
    row["details"]["evidence"]["quotes"] = [
        {"text": "Yes", "found_in": "answer", "verified": False, "too_short": True},
        ref,
        {**ref, "text": "None: ports are normalized"},
        {"text": "No", "found_in": None, "verified": False},
    ]
    lines = markdown_quotes(JudgeBrief(**row_evidence(row)), text)
    assert lines == ['  - "None: ports are normalized" (reference ✓)']  # a made-up "No" is no quote either
    only = json.loads(json.dumps(RECORD))
    only["details"]["evidence"]["quotes"] = [{"text": "Yes", "found_in": "answer", "too_short": True}]
    assert markdown_quotes(JudgeBrief(**row_evidence(only)), text) == []  # nothing said of the prompt

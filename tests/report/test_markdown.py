"""The Markdown report: model and user text is made inert."""

from rag_eval.report.markdown import _table, text


def test_model_text_cannot_inject_html():
    answer = 'Use <script>alert("x")</script> & <img src=x onerror=y>\nthen | pipe'
    shown = text(answer)
    assert "<script>" not in shown and "<img" not in shown
    assert "&lt;script&gt;" in shown and "&amp;" in shown and "\n" not in shown
    row = _table(["answer"], [[answer]])[-1]
    assert "<script>" not in row and "\\|" in row

"""The Ragas metrics' two request settings: guided (rag-eval's) and native (Ragas' own, unchanged),
counted on a scripted server."""

import asyncio
import html
import json

import pytest

from rag_eval.orchestration.runner import run_audit

from ..scripted_server import ScriptedServer, schema_name, structured_reply
from .test_judging import _config

QUESTION = "How much does item 3 weigh?"
ANSWER = "Item 3 weighs 3 grams. It is light."
CONTEXTS = ["Fact number 3 is that item 3 weighs 3 grams.", "Fact number 4 is that item 4 weighs 4 grams."]
REFERENCE = "Item 3 weighs 3 grams."
STEPS = ("StatementGeneratorOutput", "NLIStatementOutput", "ContextPrecisionOutput", "ContextRecallOutput")


def _llm(base_url, cache=None):
    from rag_eval.llm.client import LLM
    from rag_eval.llm.settings import LLMConfig

    cfg = LLMConfig(provider="openai", model="scripted", base_url=base_url, max_retries=0, timeout_s=5)
    return LLM(cfg, base_url=base_url, model="scripted", cache=cache)


def _judge(base_url, requests, cache=None):
    """The three Ragas metrics on one answer through rag-eval; their scores and the LLM's usage."""
    from rag_eval.judges.ragas_judges import RagasJudges

    async def main():
        llm = _llm(base_url, cache)
        r = RagasJudges(llm, json_schema=True, requests=requests)
        try:
            js = [
                await r.judge_faithfulness("q1", "p", QUESTION, ANSWER, CONTEXTS),
                await r.judge_context_precision("q1", "p", QUESTION, REFERENCE, CONTEXTS),
                await r.judge_context_recall("q1", "p", QUESTION, REFERENCE, CONTEXTS),
            ]
        finally:
            await llm.aclose()
        assert all(j.status == "judged" for j in js), [j.error for j in js]
        return [j.score for j in js], llm.usage

    return asyncio.run(main())


def _ragas_own(base_url):
    """The same three metrics through Ragas' own public API: its factory, its metrics' ascore."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import ContextPrecisionWithReference, ContextRecall, Faithfulness

    async def main():
        client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
        llm = llm_factory("scripted", client=client)
        scores = [
            await Faithfulness(llm=llm).ascore(user_input=QUESTION, response=ANSWER, retrieved_contexts=CONTEXTS),
            await ContextPrecisionWithReference(llm=llm).ascore(
                user_input=QUESTION, reference=REFERENCE, retrieved_contexts=CONTEXTS
            ),
            await ContextRecall(llm=llm).ascore(user_input=QUESTION, retrieved_contexts=CONTEXTS, reference=REFERENCE),
        ]
        await client.close()
        return [s.value for s in scores]

    return asyncio.run(main())


def _canonical(bodies):
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


def test_native_sends_exactly_the_requests_of_ragas_own_api():
    """Every request of the native setting is byte for byte (as JSON) one that Ragas' own
    metric.ascore sends: instructor's JSON mode with the schema in a system message, Ragas'
    sampling, Ragas' own output models (no json_schema response_format, no maxLength)."""
    with ScriptedServer(reply=structured_reply) as s:
        scores, _ = _judge(s.base_url, "native")
        native = list(s.bodies)
        s.bodies.clear()
        own = _ragas_own(s.base_url)
        ragas = list(s.bodies)
    assert len(native) == 5  # statements, verdicts, one per context, recall
    assert _canonical(native) == _canonical(ragas)
    assert scores == own and scores == pytest.approx([0.5, 1.0, 1.0])
    assert sorted(schema_name(b) for b in native) == sorted(STEPS + ("ContextPrecisionOutput",))
    for b in native:
        assert b["response_format"] == {"type": "json_object"}
        assert [m["role"] for m in b["messages"]] == ["system", "user"]
        assert "json_schema" in b["messages"][0]["content"] and "maxLength" not in json.dumps(b)


def test_guided_sends_bounded_schemas_and_no_system_message():
    """The default is unchanged: guided JSON-schema decoding named after Ragas' output model,
    reasons bounded, temperature 0, Ragas' prompt as the only message; the same scores here."""
    from rag_eval.judges.ragas_judges import REASON_CHARS

    with ScriptedServer(reply=structured_reply) as s:
        scores, _ = _judge(s.base_url, "guided")
        bodies = list(s.bodies)
    assert scores == pytest.approx([0.5, 1.0, 1.0])
    for b in bodies:
        assert b["response_format"]["type"] == "json_schema"
        assert [m["role"] for m in b["messages"]] == ["user"]
        assert b["temperature"] == 0.0
        bounded = f'"maxLength": {REASON_CHARS}' in json.dumps(b["response_format"])
        assert bounded == (schema_name(b) != "StatementGeneratorOutput"), schema_name(b)


def test_a_cached_guided_response_is_never_served_to_native(tmp_path):
    """One response cache: native after guided sends every request itself (no hit), and a second
    native run is served entirely from the cache; the judges' identities differ too."""
    from rag_eval.judges.ragas_judges import RagasJudges
    from rag_eval.llm.response_cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite3")
    with ScriptedServer(reply=structured_reply) as s:
        _, guided = _judge(s.base_url, "guided", cache)
        _, native = _judge(s.base_url, "native", cache)
        _, again = _judge(s.base_url, "native", cache)
        _, guided_again = _judge(s.base_url, "guided", cache)
        calls = s.calls
    assert (guided.calls, guided.cache_hits) == (5, 0)
    assert (native.calls, native.cache_hits) == (5, 0)
    assert (again.calls, again.cache_hits) == (0, 5)
    assert (guided_again.calls, guided_again.cache_hits) == (0, 5)
    assert calls == 10 and len(cache) == 10
    cache.close()

    async def hashes(requests):
        llm = _llm("http://127.0.0.1:9/v1")
        h = RagasJudges(llm, json_schema=True, requests=requests).hashes
        await llm.aclose()
        return h

    g, n = asyncio.run(hashes("guided")), asyncio.run(hashes("native"))
    assert g.keys() == n.keys() and all(g[k] != n[k] for k in g)
    with pytest.raises(ValueError, match="guided, native"):
        asyncio.run(hashes("raw"))


def test_a_wrong_setting_names_the_field_and_the_choices(small_project):
    from rag_eval.config import load_config
    from rag_eval.errors import ConfigError

    cfg = small_project / "audit.yaml"
    cfg.write_text(cfg.read_text() + "generation: {retriever: bm25}\njudges:\n  ragas_requests: nativ\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    line = cfg.read_text().splitlines().index("  ragas_requests: nativ") + 1
    text = str(err.value)
    assert f"audit.yaml:{line} (judges.ragas_requests): 'nativ' is not a valid value here" in text
    assert "did you mean 'native'? known: guided, native" in text


def test_the_run_records_which_requests_the_ragas_metrics_sent(small_project):
    """The report's judges section says which setting ran and what it means, in Markdown and HTML."""
    cfg = _config(small_project, "http://unused", extra_metrics=["faithfulness", "context_recall", "refusal"])
    with ScriptedServer(reply=structured_reply) as s:
        cfg.judges.llm.base_url = cfg.generation.llm.base_url = s.base_url
        cfg.judges.ragas_requests = "native"
        run_dir = run_audit(cfg)
        sent = [b for b in s.bodies if schema_name(b) in STEPS]
    assert sent and all(b["response_format"] == {"type": "json_object"} for b in sent)
    report = json.loads((run_dir / "report.json").read_text())
    rec = report["judges"]["ragas_requests"]
    assert rec == {
        "setting": "native",
        "mode": "json_mode",
        "reason_chars": None,
        "temperature": 0.01,
        "top_p": 0.1,
        "max_tokens": 1024,
    }
    judged = [r for r in report["judges"]["records"] if r["judge"] in ("faithfulness", "context_recall")]
    assert {r["judge"] for r in judged if r["status"] == "judged"} == {"faithfulness", "context_recall"}
    assert {r["status"] for r in judged} <= {"judged", "skipped"}  # skipped: no reference, or a refusal
    md = (run_dir / "report.md").read_text()
    assert "`ragas_requests: native`: Ragas' own requests, unchanged" in md
    page = html.unescape((run_dir / "report.html").read_text())
    assert "ragas_requests: native: Ragas' own requests, unchanged" in page

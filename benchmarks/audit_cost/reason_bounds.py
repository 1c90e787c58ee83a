"""Issue 49 probe: does bounding Ragas' reasons further save model time?

The Ragas requests among the demo's recorded chat requests (``../server_flags/demo-requests.jsonl.gz``:
14 of a 3-question demo audit, each reason bounded to 160 characters by its JSON schema, as shipped)
replayed on a fresh embedded server per arm with every ``maxLength: 160`` set to 60, then 24, and 160
again at the end (the machine's drift). Per arm: llama-server's prompt and generation milliseconds and
tokens, and how many verdicts (``verdict`` / ``attributed`` fields) equal the first arm's. Writes
``reason_bounds.json`` beside it (the outputs kept). Needs the embedded model; about 6 minutes alone.

    python benchmarks/audit_cost/reason_bounds.py
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "server_flags"))
sys.path.insert(0, str(HERE.parent))

import server_flags  # noqa: E402
from run_info import commit, machine  # noqa: E402

from rag_eval.llm.local import ServerSettings, server_binary  # noqa: E402

ARMS = [("r160", 160), ("r60", 60), ("r24", 24), ("r160-end", 160)]


def bound(body: dict, chars: int) -> dict:
    """The request with every reason's ``maxLength: 160`` set to ``chars``."""
    out = copy.deepcopy(body)

    def walk(o):
        if isinstance(o, dict):
            if o.get("maxLength") == 160:
                o["maxLength"] = chars
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(out["response_format"])
    return out


def verdicts(text: str) -> tuple:
    """The verdicts of one Ragas reply in order; ("S", n) for a statements reply; ("unparsed", ...)."""
    try:
        data = json.loads(text)
    except ValueError:
        return ("unparsed", text[:40])
    found: list = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("verdict", "attributed"):
                    found.append(v)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(data)
    statements = data.get("statements")
    return ("S", len(statements)) if statements else tuple(found)


def main() -> None:
    started = datetime.now(UTC)
    with gzip.open(HERE.parent / "server_flags" / "demo-requests.jsonl.gz", "rt", encoding="utf-8") as fh:
        ragas = [r for r in (json.loads(line) for line in fh) if r.get("response_format")]
    binary, results = server_binary(), {}
    rows = []
    for name, chars in ARMS:
        o = server_flags.measure(name, binary, ServerSettings(), [bound(r, chars) for r in ragas])
        results[name] = o
        base = results["r160"]
        v0, v1 = [verdicts(t) for t in base.outputs], [verdicts(t) for t in o.outputs]
        pairs = [
            (a, b) for a, b in zip(v0, v1, strict=True) if a and a[0] not in ("S", "unparsed") and len(a) == len(b)
        ]
        row = {
            "arm": name,
            "reason_chars": chars,
            "model_s": round(o.model_ms / 1000, 1),
            "vs_first": round(o.model_ms / base.model_ms, 2),
            "prompt_tokens": o.prompt_n,
            "prompt_s": round(o.prompt_ms / 1000, 1),
            "generated_tokens": o.predicted_n,
            "generation_s": round(o.predicted_ms / 1000, 1),
            "verdicts_same": sum(x == y for a, b in pairs for x, y in zip(a, b, strict=True)),
            "verdicts": sum(len(a) for a, _ in pairs),
            "failures": o.failures,
            "outputs": o.outputs,
        }
        rows.append(row)
        print({k: v for k, v in row.items() if k != "outputs"}, flush=True)
    result = {
        "command": "python benchmarks/audit_cost/reason_bounds.py",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "requests": len(ragas),
        "rows": rows,
    }
    (HERE / "reason_bounds.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""A scripted OpenAI-compatible server on loopback, for fault injection and counting calls only.

Real behaviour is tested against the real local model; this server answers what its script says:
each request gets the action of ``script(n, body)`` (n counts requests from 0), one of
``"ok"``, ``"429"`` (with ``Retry-After``), ``"500"``, ``"sleep:SECONDS"`` (then ok),
``"malformed"`` (a 200 whose content is not the JSON asked for), ``"truncated"`` (cut-off JSON
content, finish_reason length), ``"no-logprobs"`` (no logprobs although asked), ``"401-echo"``.
The reply's content is ``reply(body)``; requests that ask for logprobs get them for the first word
(P ``probability(body)`` for a Yes or No, 0.9 by default).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _default_reply(body: dict) -> str:
    return "ok: " + body["messages"][-1]["content"][:40]


def send_json(handler: BaseHTTPRequestHandler, status: int, payload, headers: dict | None = None) -> None:
    """A JSON response from a request handler (a client that timed out and left is no error)."""
    data = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class ScriptedServer:
    """``with ScriptedServer(script) as s: s.base_url, s.calls, s.bodies``."""

    def __init__(
        self,
        script: Callable[[int, dict], str] | None = None,
        reply: Callable[[dict], str] | None = None,
        latency_s: float = 0.0,
        retry_after: str = "0",
        port: int = 0,
        probability: Callable[[dict], float] | None = None,
        slots: bool = False,
    ):
        """``slots``: answer slot saves and restores as llama-server with --slot-save-path does."""
        self.script = script or (lambda n, body: "ok")
        self.slots = slots
        self.reply = reply or _default_reply
        self.latency_s, self.retry_after = latency_s, retry_after
        self.probability = probability or (lambda body: YES_P)
        self.calls = 0
        self.bodies: list[dict] = []
        self.slot_requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes

            def log_message(self, *args):
                pass

            def do_GET(self):
                # /health, as llama-server answers it, so that this can stand in for one.
                self._send(200, {"status": "ok"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path.startswith("/slots"):
                    # As llama-server started without --slot-save-path answers; not a model call.
                    server.slot_requests.append((self.path, body))
                    if not server.slots:
                        return self._send(501, {"error": {"message": "This server does not support slots action."}})
                    moved = {"n_written": 1000} if "action=save" in self.path else {"n_read": 1000, "n_restored": 10}
                    return self._send(200, {"id_slot": 0, "filename": body.get("filename"), **moved})
                with server.lock:
                    n = server.calls
                    server.calls += 1
                    server.bodies.append(body)
                action = server.script(n, body)
                if server.latency_s:
                    time.sleep(server.latency_s)
                if action == "429":
                    return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": server.retry_after})
                if action == "500":
                    return self._send(500, {"error": {"message": "server error"}})
                if action == "401-echo":
                    # A careless server that echoes the credentials it was sent in its error message.
                    auth = self.headers.get("authorization", "")
                    return self._send(401, {"error": {"message": f"invalid credentials: {auth}"}})
                if action == "odd-shape":
                    # JSON, but not a chat completion's shape: content as a list of parts, a float count.
                    parts = {
                        "index": 0,
                        "message": {"content": [{"type": "text", "text": "ok"}]},
                        "finish_reason": "stop",
                    }
                    return self._send(200, {"choices": [parts], "usage": {"prompt_tokens": 10.5}})
                if action.startswith("sleep:"):
                    time.sleep(float(action.split(":")[1]))
                content, finish = server.reply(body), "stop"
                if action == "malformed":
                    content = "I think the verdict is yes"
                elif action == "truncated":
                    content, finish = '{"reason": "the answer is supported by', "length"
                choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
                if body.get("logprobs") and action != "no-logprobs":
                    choice["logprobs"] = first_token_logprobs(content, server.probability(body))
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "scripted"),
                        "choices": [choice],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status, payload, headers=None):
                send_json(self, status, payload, headers)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default backlog of 5 stalls concurrent clients

        # A loopback address of its own (all of 127.0.0.0/8 is loopback): the response cache keys a
        # request by the endpoint's URL, and two servers of one test session given the same free
        # port would otherwise share answers (a test then saw none of the requests it scripted).
        self.host = (
            "127.0.0.1"
            if port
            else f"127.{random.randrange(1, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}"
        )
        self.httpd = Server((self.host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


STRUCTURED_REPLIES = {
    "StatementGeneratorOutput": {"statements": ["The answer states one fact.", "The answer states another fact."]},
    "NLIStatementOutput": {
        "statements": [
            {"statement": "The answer states one fact.", "reason": "the context says so", "verdict": 1},
            {"statement": "The answer states another fact.", "reason": "the context does not say so", "verdict": 0},
        ]
    },
    "ContextPrecisionOutput": {"reason": "the context holds the answer", "verdict": 1},
    "ContextRecallOutput": {
        "classifications": [{"statement": "The reference's fact.", "reason": "found in the context", "attributed": 1}]
    },
}
# The yes/no judges, by the question that ends their prompts: every one says yes (the answer gives the
# information, is correct, is supported, the passage is useful).
YES_NO_REPLIES = {
    "Does the answer give the information asked for?": "Yes: the answer gives the information.",
    "Does the candidate answer state the reference answer": "Yes: the answer matches the reference.",
    "Does the answer to check give": "Yes: the answer gives the correct answer.",
    "Is everything the answer states supported by the context?": "Yes: the context says so.",
    "Does the passage contain information that leads to the reference answer?": "Yes: the passage holds the answer.",
}
YES_P = 0.9


def first_token_logprobs(content: str, p: float = YES_P) -> dict:
    """OpenAI-style logprobs of a reply's first word: ``p`` for it (0.9), the rest for the other of
    yes/no."""
    import math

    word = (content.split(":")[0].split() or [""])[0]
    if word not in ("Yes", "No"):
        return {"content": [{"token": word, "logprob": 0.0, "top_logprobs": [{"token": word, "logprob": 0.0}]}]}
    other = {"Yes": "No", "No": "Yes"}[word]
    top = [{"token": word, "logprob": math.log(p)}, {"token": other, "logprob": math.log(1 - p)}]
    return {"content": [{"token": word, "logprob": math.log(p), "top_logprobs": top}]}


def schema_name(body: dict) -> str | None:
    """The json_schema name of a request's response_format (which judge or Ragas step asks); for
    instructor's JSON mode (Ragas' own requests), the title of the schema in the system message."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_object":
        system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
        try:
            return json.loads(system[system.index("{") : system.rindex("}") + 1]).get("title")
        except ValueError:
            return None
    return (rf.get("json_schema") or {}).get("name")


def structured_reply(body: dict) -> str:
    """A valid reply for every judge and Ragas step, and a plain answer for generation requests."""
    name = schema_name(body)
    if name in STRUCTURED_REPLIES:
        return json.dumps(STRUCTURED_REPLIES[name])
    text = body["messages"][-1]["content"]
    for question, reply in YES_NO_REPLIES.items():
        if question in text:
            return reply
    return _default_reply(body)


def judge_name(body: dict) -> str | None:
    """Which judge or Ragas step a request is (None for a generation request)."""
    name = schema_name(body)
    if name:
        return name
    messages = body["messages"]
    # A reply forced to start with a verdict word (judges/evidence.py) asks for that judge's reason.
    forced = len(messages) > 1 and messages[-1]["role"] == "assistant"
    text = messages[-2 if forced else -1]["content"]
    names = dict(zip(YES_NO_REPLIES, ("refusal", "correctness", "correctness", "supported", "useful")))
    name = next((n for question, n in names.items() if question in text), None)
    return f"{name} reason" if forced and name else name


def asks_verdict_only(body: dict) -> bool:
    """Whether a judge request asks the verdict alone (the judging stage's first question), not the
    verdict with its reason (asked again, later, for the answers a reader is shown)."""
    from rag_eval.judges.yesno import VERDICT_TOKENS

    return body.get("max_tokens") == VERDICT_TOKENS


def main(argv: list[str] | None = None) -> None:
    """Stand in for llama-server (``--port N``, other arguments ignored) in tests that count starts
    and calls: appends a line to ``$SCRIPTED_SERVER_STARTS`` when it starts, replies like
    :func:`structured_reply` (after ``$SCRIPTED_SERVER_LATENCY_S`` seconds), and serves until killed."""
    import argparse
    import os
    import signal

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args, _ = parser.parse_known_args(argv)
    latency = float(os.environ.get("SCRIPTED_SERVER_LATENCY_S", "0"))
    server = ScriptedServer(reply=structured_reply, port=args.port, latency_s=latency)
    if os.environ.get("SCRIPTED_SERVER_STARTS"):
        with open(os.environ["SCRIPTED_SERVER_STARTS"], "a") as fh:
            fh.write(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()

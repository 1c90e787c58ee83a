"""A scripted OpenAI-compatible server on loopback, for fault injection and counting calls only.

Real behaviour is tested against the real local model; this server answers what its script says:
each request gets the action of ``script(n, body)`` (n counts requests from 0), one of
``"ok"``, ``"429"`` (with ``Retry-After``), ``"500"``, ``"sleep:SECONDS"`` (then ok),
``"malformed"`` (a 200 whose content is not the JSON asked for), ``"truncated"`` (cut-off JSON
content, finish_reason length). The reply's content is ``reply(body)``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _default_reply(body: dict) -> str:
    return "ok: " + body["messages"][-1]["content"][:40]


class ScriptedServer:
    """``with ScriptedServer(script) as s: s.base_url, s.calls, s.bodies``."""

    def __init__(
        self,
        script: Callable[[int, dict], str] | None = None,
        reply: Callable[[dict], str] | None = None,
        latency_s: float = 0.0,
        retry_after: str = "0",
    ):
        self.script = script or (lambda n, body: "ok")
        self.reply = reply or _default_reply
        self.latency_s, self.retry_after = latency_s, retry_after
        self.calls = 0
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
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
                if action.startswith("sleep:"):
                    time.sleep(float(action.split(":")[1]))
                content, finish = server.reply(body), "stop"
                if action == "malformed":
                    content = "I think the verdict is yes"
                elif action == "truncated":
                    content, finish = '{"reason": "the answer is supported by', "length"
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "scripted"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default backlog of 5 stalls concurrent clients

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

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
    "correctness": {"reason": "the answer matches the reference", "verdict": "correct"},
    "refusal": {"reason": "the answer gives the information", "verdict": "answered"},
}


def schema_name(body: dict) -> str | None:
    """The json_schema name of a request's response_format (which judge or Ragas step asks)."""
    rf = body.get("response_format") or {}
    return (rf.get("json_schema") or {}).get("name")


def structured_reply(body: dict) -> str:
    """A valid reply for every judge and Ragas step, and a plain answer for generation requests."""
    name = schema_name(body)
    if name in STRUCTURED_REPLIES:
        return json.dumps(STRUCTURED_REPLIES[name])
    return _default_reply(body)

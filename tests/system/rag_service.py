"""A small RAG service for the tests: BM25 (rank-bm25, not rag-eval's) over a corpus behind a
real HTTP endpoint, answers by a scripted model (the first sentence of the top passage), and
faults on demand: 500 for questions that contain a word, one 429 before the first answer."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rank_bm25 import BM25Okapi

from ..scripted_server import send_json


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class RagService:
    """``with RagService(corpus) as s: s.url, s.calls, s.returned``; ``returned`` maps each
    question to the ids it answered with, so a test can compute the metrics directly."""

    def __init__(
        self,
        corpus: list[dict],
        *,
        k: int = 3,
        fail_on: str | None = None,
        rate_limit_once: bool = False,
        token: str | None = None,
        with_ids: bool = True,
        rewrite=None,
        latency_s: float = 0.0,
        port: int = 0,
    ):
        self.corpus, self.k = corpus, k
        self.bm25 = BM25Okapi([tokens(c["title"] + " " + c["text"]) for c in corpus])
        self.calls = 0
        self.inflight = self.max_inflight = 0
        self.returned: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        self.limited = not rate_limit_once
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                with service.lock:
                    service.inflight += 1
                    service.max_inflight = max(service.max_inflight, service.inflight)
                try:
                    if latency_s:
                        time.sleep(latency_s)
                    self._answer()
                finally:
                    with service.lock:
                        service.inflight -= 1

            def _answer(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with service.lock:
                    service.calls += 1
                    limit_now = not service.limited
                    service.limited = True
                if token is not None and self.headers.get("authorization") != f"Bearer {token}":
                    return self._send(401, {"detail": "bad token"})
                if limit_now:
                    return self._send(429, {"detail": "slow down"}, {"Retry-After": "0"})
                query = body.get("query", "")
                if fail_on and fail_on in query:
                    return self._send(500, {"detail": "internal error"})
                scores = service.bm25.get_scores(tokens(query))
                order = sorted(range(len(service.corpus)), key=lambda i: (-scores[i], i))[: service.k]
                hits = [service.corpus[i] for i in order]
                with service.lock:
                    service.returned[query] = [h["id"] for h in hits]
                sources = []
                for h, i in zip(hits, order):
                    text = rewrite(h["text"]) if rewrite else h["text"]
                    sources.append({**({"id": h["id"]} if with_ids else {}), "text": text, "score": float(scores[i])})
                answer = hits[0]["text"].split(".")[0] + "."
                self._send(200, {"data": {"answer": answer}, "sources": sources})

            def _send(self, status, payload, headers=None):
                send_json(self, status, payload, headers)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/ask"

    def __enter__(self) -> RagService:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

"""The OpenAI-compatible HTTP provider against a real HTTP server on 127.0.0.1.

The server speaks the embeddings protocol (POST /v1/embeddings, {"model",
"input"} -> {"data": [{"index", "embedding"}]}) and follows a script per
request: answer, answer 429/500/503/400 (with or without Retry-After), or
stall past the client's timeout.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import psycopg
import pytest

from densemem.embeddings.base import EmbeddingRequestError, ProviderUnavailableError
from densemem.embeddings.hashing import HashingTestProvider
from densemem.embeddings.openai_http import (
    HttpProviderOptions,
    OpenAICompatibleProvider,
    endpoint,
    retry_after_seconds,
    truncate_utf8,
)
from densemem.embeddings.worker import EmbeddingWorker, WorkerOptions

DIMS = 16
REFERENCE = HashingTestProvider(DIMS)


@dataclass
class Script:
    steps: list[tuple[Any, ...]] = field(default_factory=list)  # consumed one per request; then "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self, request: dict[str, Any]) -> tuple[Any, ...]:
        with self.lock:
            self.requests.append(request)
            return self.steps.pop(0) if self.steps else ("ok",)


class Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw)
        step = self.script.next_step(
            {"path": self.path, "auth": self.headers.get("Authorization"), "bytes": len(raw), "body": body}
        )
        kind = step[0]
        if kind == "stall":
            time.sleep(step[1])
        if kind == "status":
            status, headers = step[1], step[2] if len(step) > 2 else {}
            payload = json.dumps({"error": {"message": f"scripted {status}"}}).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if self.path != "/v1/embeddings":
            self.send_error(404)
            return
        inputs = body["input"]
        vectors = REFERENCE.embed(inputs) * 3.0  # not unit length: the client normalises
        data = [
            {"object": "embedding", "index": i, "embedding": vectors[i].tolist()} for i in range(len(inputs))
        ]
        data.reverse()  # the client must order by index
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            return


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("ScriptedHandler", (Handler,), {"script": script})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def provider(base: str, sleeps: list[float] | None = None, **overrides: Any) -> OpenAICompatibleProvider:
    options: dict[str, Any] = {
        "base_url": base,
        "model": "text-embedding-test",
        "dimensions": DIMS,
        "api_key": "sk-test-key",
        "timeout_seconds": 2.0,
        "max_retries": 3,
        "backoff_seconds": 0.05,
    }
    options.update(overrides)
    recorded = sleeps if sleeps is not None else []

    def sleep(seconds: float) -> None:
        recorded.append(seconds)
        time.sleep(seconds)

    return OpenAICompatibleProvider(HttpProviderOptions(**options), sleep=sleep)


def test_embeds_in_order_normalised_with_key_and_model(server: tuple[str, Script]) -> None:
    base, script = server
    texts = ["alpha beta", "gamma", "delta epsilon zeta", "", "naïve café"]
    vectors = provider(base).embed(texts)
    assert vectors.shape == (5, DIMS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = REFERENCE.embed([t or " " for t in texts])
    assert np.allclose(vectors, expected, atol=1e-6)
    [request] = script.requests
    assert request["path"] == "/v1/embeddings"
    assert request["auth"] == "Bearer sk-test-key"
    assert request["body"]["model"] == "text-embedding-test"
    assert "dimensions" not in request["body"]


def test_a_base_url_ending_in_v1_is_not_doubled(server: tuple[str, Script]) -> None:
    base, script = server
    assert endpoint("http://h/v1/") == "http://h/v1/embeddings"
    assert endpoint("http://h") == "http://h/v1/embeddings"
    provider(base + "/v1", send_dimensions=True).embed(["x"])
    assert script.requests[0]["path"] == "/v1/embeddings"
    assert script.requests[0]["body"]["dimensions"] == DIMS


def test_requests_respect_the_count_and_byte_limits(server: tuple[str, Script]) -> None:
    base, script = server
    texts = [f"text number {i} " + "x" * 200 for i in range(25)]
    vectors = provider(base, max_batch_size=10, max_request_bytes=1500, max_input_bytes=300).embed(texts)
    assert np.allclose(vectors, REFERENCE.embed(texts), atol=1e-6), "order kept across requests"
    sizes = [len(r["body"]["input"]) for r in script.requests]
    assert sum(sizes) == 25 and max(sizes) <= 10
    assert all(r["bytes"] < 1500 + 200 for r in script.requests)  # inputs bounded; the rest is the envelope
    assert len(script.requests) >= 5


def test_an_over_long_input_is_cut_at_a_character_boundary(server: tuple[str, Script]) -> None:
    base, script = server
    assert truncate_utf8("ééé", 3) == "é"
    provider(base, max_input_bytes=101).embed(["é" * 500])
    sent = script.requests[0]["body"]["input"][0]
    assert sent == "é" * 50


def test_429_with_retry_after_is_honoured_then_succeeds(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("status", 429, {"Retry-After": "1"})]
    sleeps: list[float] = []
    started = time.monotonic()
    vectors = provider(base, sleeps).embed(["hello"])
    assert time.monotonic() - started >= 1.0
    assert sleeps == [1.0]
    assert len(script.requests) == 2 and vectors.shape == (1, DIMS)


def test_500_answers_are_retried_with_exponential_backoff(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("status", 500), ("status", 502), ("status", 503)]
    sleeps: list[float] = []
    provider(base, sleeps).embed(["hello"])
    assert len(script.requests) == 4
    assert len(sleeps) == 3
    # Base 0.05 s doubling, with jitter in [50 %, 100 %].
    for attempt, slept in enumerate(sleeps):
        assert 0.05 * 2**attempt * 0.5 <= slept <= 0.05 * 2**attempt


def test_a_provider_that_keeps_failing_is_reported_unavailable(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("status", 503)] * 10
    with pytest.raises(ProviderUnavailableError, match="HTTP 503"):
        provider(base).embed(["hello"])
    assert len(script.requests) == 4  # one try and three retries


def test_a_long_retry_after_gives_up_at_once_and_passes_the_hint_on(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("status", 429, {"Retry-After": "600"})]
    with pytest.raises(ProviderUnavailableError) as caught:
        provider(base).embed(["hello"])
    assert caught.value.retry_after == 600.0
    assert len(script.requests) == 1


def test_timeouts_are_retried_and_then_reported(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("stall", 1.5)]
    started = time.monotonic()
    vectors = provider(base, timeout_seconds=0.3).embed(["slow then fine"])
    assert vectors.shape == (1, DIMS)
    assert len(script.requests) == 2
    assert time.monotonic() - started < 1.5

    script.requests.clear()
    script.steps = [("stall", 1.0)] * 3
    with pytest.raises(ProviderUnavailableError, match="timed out"):
        provider(base, timeout_seconds=0.3, max_retries=2).embed(["always slow"])
    assert len(script.requests) == 3


def test_a_4xx_answer_is_the_request_s_fault_and_is_not_retried(server: tuple[str, Script]) -> None:
    base, script = server
    script.steps = [("status", 400)]
    with pytest.raises(EmbeddingRequestError, match="HTTP 400"):
        provider(base).embed(["bad"])
    assert len(script.requests) == 1


def test_a_closed_port_is_unavailable() -> None:
    with pytest.raises(ProviderUnavailableError, match="connection failed"):
        provider("http://127.0.0.1:9", max_retries=1).embed(["anyone?"])


def test_retry_after_parses_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("soon") is None


def test_the_worker_embeds_through_the_http_provider_and_keeps_documents_pending_in_an_outage(
    server: tuple[str, Script], admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    base, script = server
    http = provider(base, max_retries=1)
    admin_conn.execute(
        "SELECT dm.activate_embedding_contract(%s, %s, %s)", ("openai", "text-embedding-test", DIMS)
    )
    team = admin_conn.execute("SELECT dm.ensure_team('http team')").fetchone()
    assert team is not None
    admin_conn.execute(
        "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
        "search_vector) SELECT %s, gen_random_uuid(), 'evidence', gen_random_uuid(), 'doc ' || g, "
        "to_tsvector('english', 'doc ' || g) FROM generate_series(1, 6) AS g",
        (team[0],),
    )
    options = WorkerOptions(batch_size=4, unavailable_delay_seconds=0, progress=False)
    script.steps = [("status", 500)] * 2
    worker = EmbeddingWorker(db_url, http, options)
    stats = worker.run_once()
    assert stats.provider_unavailable and stats.stored == 0
    assert admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents "
        "WHERE search_state = 'pending' AND embed_attempts = 0"
    ).fetchone() == (6,)
    assert worker.run_once().stored == 6
    worker.close()
    http.close()

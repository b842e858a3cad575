"""One network round trip per request, counted on the wire.

The service's pool is reduced to one connection and libpq's protocol trace
(PQtrace) is switched on for it around a single HTTP request. A round trip
is the client waiting for the server: every frontend `Sync` (extended
protocol) and every frontend `Query` (simple protocol) ends one. A recall
sends BEGIN-less implicit transaction of three statements (enter the role,
authenticate the key and set the team, call dm.recall_memory) followed by
ONE Sync. The first request of a key takes one more round trip (a bare key
check before the query is embedded, so an unknown key never costs an
embedding); the test warms the key first, as a real client's second call.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from service_support import FakeHashingEmbedder, bearer, fresh_database, issue, require_functions, service

from densemem.service.routes import ServiceConfig

# libpq trace lines: [timestamp<TAB>]direction<TAB>length<TAB>message
FRONTEND_WAIT = re.compile(r"^(?:[^\t\n]*\t)?F\t\d+\t(Sync|Query)\b", re.MULTILINE)


class WireTrace:
    """Collects the pool's connections and traces them on demand."""

    def __init__(self) -> None:
        self.connections: list[psycopg.Connection[Any]] = []
        self.lock = threading.Lock()

    def configure(self, conn: psycopg.Connection[Any]) -> None:
        with self.lock:
            self.connections.append(conn)

    def capture(self, action: Any) -> str:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "trace.txt"
            with path.open("w") as handle:
                for conn in self.connections:
                    conn.pgconn.trace(handle.fileno())
                    conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    action()
                finally:
                    for conn in self.connections:
                        conn.pgconn.untrace()
            return path.read_text()


@pytest.fixture(scope="module")
def wire(admin_url: str, template_url: str) -> Iterator[tuple[str, WireTrace, str]]:
    trace = WireTrace()
    config = ServiceConfig(pool_min_size=1, pool_max_size=1)
    with (
        fresh_database(admin_url) as url,
        service(url, FakeHashingEmbedder(), config=config, configure_connection=trace.configure) as base_url,
    ):
        yield base_url, trace, url


def round_trips(text: str) -> int:
    return len(FRONTEND_WAIT.findall(text))


def test_trace_counts_round_trips(wire: tuple[str, WireTrace, str]) -> None:
    """The counter itself: a plain psycopg transaction of two statements is four round trips."""
    _, _, url = wire
    with psycopg.connect(url) as conn:
        handle_path = Path(tempfile.mkdtemp()) / "t.txt"
        with handle_path.open("w") as handle:
            conn.pgconn.trace(handle.fileno())
            with conn.transaction():
                conn.execute("SELECT 1")
                conn.execute("SELECT 2")
            conn.pgconn.untrace()
        assert round_trips(handle_path.read_text()) == 4  # BEGIN, SELECT 1, SELECT 2, COMMIT


def test_write_is_one_round_trip(wire: tuple[str, WireTrace, str]) -> None:
    base_url, trace, url = wire
    require_functions(url, "dm.upsert_entities(uuid,jsonb)")
    key = issue(url, "wire-team").api_key
    responses: list[httpx.Response] = []

    def call() -> None:
        responses.append(
            httpx.post(
                base_url + "/v1/entities", json={"items": [{"name": "Mark"}]}, headers=bearer(key), timeout=30
            )
        )

    text = trace.capture(call)
    assert responses[0].status_code == 200, responses[0].text
    assert round_trips(text) == 1, text
    assert text.count("dm.upsert_entities") >= 1 and "authenticate_api_key" in text


def test_recall_is_one_round_trip(wire: tuple[str, WireTrace, str]) -> None:
    base_url, trace, url = wire
    require_functions(url, "dm.recall_memory(text,uuid,vector,jsonb)")
    key = issue(url, "wire-recall-team").api_key
    body = {"query": "who works on Dense-Mem?"}
    warm = httpx.post(base_url + "/v1/recall", json=body, headers=bearer(key), timeout=30)
    assert warm.status_code == 200, warm.text
    responses: list[httpx.Response] = []

    def call() -> None:
        responses.append(httpx.post(base_url + "/v1/recall", json=body, headers=bearer(key), timeout=30))

    text = trace.capture(call)
    assert responses[0].status_code == 200, responses[0].text
    assert round_trips(text) == 1, text
    assert len(re.findall(r"^F\t\d+\tExecute\b", text, re.MULTILINE)) == 3  # role, authenticate, recall
    assert "dm.recall_memory" in text


def test_invalid_key_never_calls_the_function(wire: tuple[str, WireTrace, str]) -> None:
    base_url, trace, _ = wire
    forged = "dm_" + "1" * 32 + "_" + "2" * 32 + "_" + "x" * 40
    responses: list[httpx.Response] = []

    def call() -> None:
        responses.append(
            httpx.post(
                base_url + "/v1/entities", json={"items": [{"name": "X"}]}, headers=bearer(forged), timeout=30
            )
        )

    text = trace.capture(call)
    assert responses[0].status_code == 401
    assert round_trips(text) == 1
    # the guarded call returned no row: the function was never executed
    assert re.search(r"B\t\d+\tCommandComplete\t \"SELECT 0\"", text), text


class WireWatchingEmbedder(FakeHashingEmbedder):
    """A fake embedder that, each time it embeds, snapshots what libpq has traced so far."""

    def __init__(self) -> None:
        super().__init__()
        self.trace_path: Path | None = None
        self.seen: list[str] = []

    def embed_query(self, text: str) -> Any:
        if self.trace_path is not None:
            self.seen.append(self.trace_path.read_text())
        return super().embed_query(text)


def test_the_query_is_embedded_while_the_key_check_is_on_the_wire(admin_url: str, template_url: str) -> None:
    """A recall of a key seen valid, with the model idle: the role switch and the key check are
    sent BEFORE the query is embedded (the server runs them meanwhile), the recall after it, and
    the whole request is still ONE round trip (one Sync) and three statements. A statement sent
    in a pipeline runs before the pipeline's Sync (checked with clock_timestamp())."""
    trace = WireTrace()
    embedder = WireWatchingEmbedder()
    config = ServiceConfig(pool_min_size=1, pool_max_size=1)
    with (
        fresh_database(admin_url) as url,
        service(url, embedder, config=config, configure_connection=trace.configure) as base_url,
    ):
        require_functions(url, "dm.recall_memory(text,uuid,vector,jsonb)")
        key = issue(url, "overlap-team").api_key
        body = {"query": "who works on Dense-Mem?"}
        warm = httpx.post(base_url + "/v1/recall", json=body, headers=bearer(key), timeout=30)
        assert warm.status_code == 200, warm.text
        responses: list[httpx.Response] = []
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "trace.txt"
            embedder.trace_path = path
            with path.open("w", buffering=1) as handle:
                for conn in trace.connections:
                    conn.pgconn.trace(handle.fileno())
                    conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    responses.append(
                        httpx.post(base_url + "/v1/recall", json=body, headers=bearer(key), timeout=30)
                    )
                finally:
                    for conn in trace.connections:
                        conn.pgconn.untrace()
            text = path.read_text()
            embedder.trace_path = None
        metrics = httpx.get(base_url + "/metrics", timeout=30).text
        with psycopg.connect(url, autocommit=True) as conn:
            first, second = conn.cursor(), conn.cursor()
            with conn.pipeline():
                first.execute("SELECT pg_catalog.clock_timestamp()")
                time.sleep(0.2)
                second.execute("SELECT pg_catalog.clock_timestamp()")
            ran_first, ran_second = first.fetchone(), second.fetchone()
    assert responses[0].status_code == 200, responses[0].text
    assert round_trips(text) == 1, text
    assert len(re.findall(r"^F\t\d+\tExecute\b", text, re.MULTILINE)) == 3
    assert len(embedder.seen) == 1
    during = embedder.seen[0]
    assert "authenticate_api_key" in during and "set_config('role'" in during, during
    assert "dm.recall_memory" not in during and round_trips(during) == 0, during
    assert "dm.recall_memory" in text
    assert re.search(r"^densemem_recall_overlapped_total [1-9]", metrics, re.MULTILINE), metrics
    assert ran_first is not None and ran_second is not None
    assert (ran_second[0] - ran_first[0]).total_seconds() >= 0.15  # the first ran before the sleep ended

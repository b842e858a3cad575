"""Degradation and failure: provider down, statement timeout, database unreachable, pool exhausted.

Every failure answers the one error shape with the mapped status, never a 500 or a traceback.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from psycopg_pool import ConnectionPool
from service_support import (
    FakeHashingEmbedder,
    assert_error_body,
    bearer,
    fresh_database,
    issue,
    require_functions,
)
from service_support import service as run_service

from densemem.service.auth import call_as_key
from densemem.service.errors import ApiError
from densemem.service.routes import ServiceConfig


@pytest.fixture(scope="module")
def module_db(admin_url: str, template_url: str) -> Iterator[str]:
    with fresh_database(admin_url) as url:
        yield url


def test_provider_down_recall_degrades_and_is_counted(module_db: str) -> None:
    require_functions(module_db, "dm.ingest_evidence(uuid,jsonb)", "dm.recall_memory(text,uuid,vector,jsonb)")
    embedder = FakeHashingEmbedder()
    key = issue(module_db, "degraded-team").api_key
    with run_service(module_db, embedder) as base_url:
        client = httpx.Client(base_url=base_url, headers=bearer(key), timeout=60)
        created = client.post(
            "/v1/evidence",
            json={
                "items": [
                    {"text": "Mark works on Dense-Mem.", "source": {"external_id": "c", "kind": "chat"}}
                ]
            },
        )
        assert created.status_code == 201, created.text
        embedder.fail = True
        response = client.post("/v1/recall", json={"query": "who works on Dense-Mem?"})
        # The default ranking profile makes the vector branch optional: full-text still answers.
        # A profile that requires it answers DM503 -> 503; both are honest, never a 500.
        assert response.status_code in {200, 503}, response.text
        if response.status_code == 200:
            assert created.json()["evidence_ids"][0] in response.text
        else:
            assert response.json()["code"] == "DM503"
        metrics = client.get("/metrics").text
        assert re.search(r'densemem_degraded_total\{branch="query_embedding"\} [1-9]', metrics), metrics
        if response.status_code == 200:
            assert re.search(r'densemem_recall_degraded_branches_recent\{branch="vector"\} [1-9]', metrics), (
                metrics
            )


def test_statement_timeout_is_503(module_db: str) -> None:
    key = issue(module_db, "timeout-team").api_key
    pool: ConnectionPool[psycopg.Connection[object]] = ConnectionPool(
        module_db, min_size=1, max_size=1, kwargs={"autocommit": True}, open=True
    )
    try:
        with pytest.raises(ApiError) as error_info:
            call_as_key(pool, key, "SELECT pg_catalog.pg_sleep(2) IS NULL", {}, statement_timeout_ms=100)
        assert error_info.value.status == 503 and error_info.value.code == "57014"
        # the connection is clean afterwards: the next call works and runs without the old settings
        ok = call_as_key(
            pool, key, "SELECT pg_catalog.current_setting('statement_timeout')", {}, statement_timeout_ms=1234
        )
        assert ok.value == "1234ms"
        with pool.connection() as conn:
            row = conn.execute("SELECT current_user, current_setting('densemem.team_id', true)").fetchone()
        assert row is not None and row[0] != "densemem_app" and not row[1]
    finally:
        pool.close()


def test_pool_exhausted_is_503(module_db: str) -> None:
    key = issue(module_db, "pool-team").api_key
    pool: ConnectionPool[psycopg.Connection[object]] = ConnectionPool(
        module_db, min_size=1, max_size=1, kwargs={"autocommit": True}, open=True
    )
    try:
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with pool.connection():
                held.set()
                release.wait(10)

        thread = threading.Thread(target=hold)
        thread.start()
        held.wait(10)
        with pytest.raises(ApiError) as error_info:
            call_as_key(pool, key, "SELECT true", {}, statement_timeout_ms=1000, connection_timeout_s=0.2)
        release.set()
        thread.join()
        assert error_info.value.status == 503
    finally:
        pool.close()


def test_database_unreachable_is_503_and_not_ready(tmp_path: object) -> None:
    unreachable = "host=127.0.0.1 port=1 dbname=nothing user=nobody connect_timeout=1"
    config = ServiceConfig(pool_timeout_s=0.5, pool_min_size=1, pool_max_size=1)
    with run_service(unreachable, FakeHashingEmbedder(), config=config) as base_url:
        assert httpx.get(base_url + "/healthz", timeout=10).status_code == 200
        ready = httpx.get(base_url + "/readyz", timeout=30)
        assert ready.status_code == 503
        assert_error_body(ready.json())
        assert ready.json()["details"]["database"].startswith("unavailable")
        key = "dm_" + "1" * 32 + "_" + "2" * 32 + "_" + "x" * 40
        response = httpx.post(
            base_url + "/v1/entities", json={"items": [{"name": "x"}]}, headers=bearer(key), timeout=30
        )
        assert response.status_code == 503, response.text
        assert_error_body(response.json())
        metrics = httpx.get(base_url + "/metrics", timeout=30)
        assert metrics.status_code == 200 and "densemem_database_up 0" in metrics.text


def test_only_a_recall_transaction_commits_without_the_flush(module_db: str) -> None:
    """`telemetry_only` (the recall routes: their one write is the telemetry row) turns
    synchronous_commit off for that transaction alone; every other call commits durably, and the
    pooled connection carries nothing over."""
    key = issue(module_db, "commit-team").api_key
    pool: ConnectionPool[psycopg.Connection[object]] = ConnectionPool(
        module_db, min_size=1, max_size=1, kwargs={"autocommit": True}, open=True
    )
    setting = "SELECT pg_catalog.current_setting('synchronous_commit')"
    try:
        durable = call_as_key(pool, key, setting, {}, statement_timeout_ms=1000)
        recall = call_as_key(pool, key, setting, {}, statement_timeout_ms=1000, telemetry_only=True)
        after = call_as_key(pool, key, setting, {}, statement_timeout_ms=1000)
        assert (durable.value, recall.value, after.value) == ("on", "off", "on")
        with pool.connection() as conn:
            row = conn.execute(setting).fetchone()
        assert row is not None and row[0] == "on"
    finally:
        pool.close()

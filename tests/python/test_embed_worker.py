"""The embedding worker against a real PostgreSQL + pgvector, with the test-only hashing provider.

These tests judge the machinery (claims, leases, version checks, failures,
contracts, notifications), never retrieval quality.
"""

from __future__ import annotations

import collections
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from densemem.embeddings.base import EmbeddingError, FloatMatrix, ProviderUnavailableError
from densemem.embeddings.hashing import HashingTestProvider
from densemem.embeddings.worker import (
    ContractMismatchError,
    EmbeddingWorker,
    WorkerOptions,
    start_worker_thread,
)
from densemem.store import embeddings as store
from densemem.store.session import Principal, acting_as

FAST = WorkerOptions(batch_size=25, retry_delay_seconds=0, unavailable_delay_seconds=0, progress=False)


class RecordingProvider(HashingTestProvider):
    """Hashing provider that records every text it embedded (thread-safe)."""

    def __init__(self, dimensions: int = 384, *, delay: float = 0.0) -> None:
        super().__init__(dimensions)
        self.embedded: list[str] = []
        self.delay = delay
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if self.delay:
            time.sleep(self.delay)
        vectors = super().embed(texts)
        with self._lock:
            self.embedded.extend(texts)
        return vectors


def activate_hashing(conn: psycopg.Connection[Any], dimensions: int = 384) -> int:
    with conn.cursor(row_factory=dict_row) as cur:
        return store.activate_contract(cur, spec=HashingTestProvider(dimensions).contract)


def make_team(conn: psycopg.Connection[Any], name: str) -> uuid.UUID:
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def add_documents(
    conn: psycopg.Connection[Any], team_id: uuid.UUID, bodies: Sequence[str]
) -> list[uuid.UUID]:
    """Search documents as the write path leaves them: pending, version 1."""
    rows = conn.execute(
        "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
        "search_vector) SELECT %(team)s, gen_random_uuid(), 'evidence', gen_random_uuid(), b, "
        "to_tsvector('english', b) FROM unnest(%(bodies)s::text[]) WITH ORDINALITY AS t (b, n) ORDER BY n "
        "RETURNING document_id",
        {"team": team_id, "bodies": list(bodies)},
    ).fetchall()
    return [r[0] for r in rows]


def document(conn: psycopg.Connection[Any], document_id: uuid.UUID) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT d.*, e.contract_id AS vector_contract, e.document_version AS vector_document_version, "
            "e.source_version AS vector_source_version, e.embedding::text AS vector_text "
            "FROM dm_private.search_documents AS d "
            "LEFT JOIN dm_private.document_embeddings AS e ON e.team_id = d.team_id "
            "AND e.document_id = d.document_id AND e.contract_id = "
            "(SELECT contract_id FROM dm.active_embedding_contract()) "
            "WHERE d.document_id = %s",
            (document_id,),
        )
        row = cur.fetchone()
        assert row is not None
        return row


def vector_of(text: str) -> np.ndarray[Any, Any]:
    return np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


def test_two_workers_embed_each_of_1000_documents_exactly_once(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    contract_id = activate_hashing(admin_conn)
    teams = [make_team(admin_conn, f"team {i}") for i in range(3)]
    bodies = [f"document {i} about subject {i % 7} in team {i % 3}" for i in range(1000)]
    for t, team in enumerate(teams):
        add_documents(admin_conn, team, bodies[t::3])

    providers = [RecordingProvider(delay=0.002), RecordingProvider(delay=0.002)]
    workers = [EmbeddingWorker(db_url, p, FAST) for p in providers]
    start = threading.Barrier(2)
    results: list[Any] = [None, None]

    def run(i: int) -> None:
        start.wait()
        results[i] = workers[i].run_once()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for worker in workers:
        worker.close()

    counts = collections.Counter(providers[0].embedded + providers[1].embedded)
    assert len(counts) == 1000
    assert set(counts.values()) == {1}, "a document was embedded twice"
    assert all(len(p.embedded) > 0 for p in providers), "both workers should have taken batches"
    assert results[0].stored + results[1].stored == 1000
    row = admin_conn.execute(
        "SELECT count(*) FILTER (WHERE d.search_state = 'ready'), count(e.document_id), "
        "count(*) FILTER (WHERE e.contract_id = %s AND e.document_version = d.document_version "
        "AND e.source_version = d.source_version) "
        "FROM dm_private.search_documents AS d LEFT JOIN dm_private.document_embeddings AS e "
        "ON e.team_id = d.team_id AND e.document_id = d.document_id",
        (contract_id,),
    ).fetchone()
    assert row == (1000, 1000, 1000)
    # The stored vector is the provider's vector for that very text (half precision).
    sample = admin_conn.execute(
        "SELECT d.body, e.embedding::text FROM dm_private.search_documents AS d "
        "JOIN dm_private.document_embeddings AS e USING (team_id, document_id) ORDER BY d.body LIMIT 5"
    ).fetchall()
    for body, text in sample:
        expected = HashingTestProvider().embed([body])[0]
        assert np.allclose(vector_of(text), expected, atol=2e-3)


def test_a_document_edited_while_its_batch_is_embedded_gets_its_new_version(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "editors")
    ids = add_documents(admin_conn, team, ["the meeting is on monday", "lunch at noon", "budget is 10k"])
    edited = ids[0]

    class EditingProvider(RecordingProvider):
        """Edits the document (another session, committed) while the first batch is being embedded."""

        edits = 0

        def embed(self, texts: Sequence[str]) -> FloatMatrix:
            if self.edits == 0:
                self.edits += 1
                with psycopg.connect(db_url, autocommit=True) as other:
                    other.execute(
                        "UPDATE dm_private.search_documents SET body = 'the meeting moved to friday', "
                        "search_vector = to_tsvector('english', 'the meeting moved to friday'), "
                        "document_version = document_version + 1, search_state = 'pending', "
                        "pending_since = now() WHERE document_id = %s",
                        (edited,),
                    )
            return super().embed(texts)

    provider = EditingProvider()
    worker = EmbeddingWorker(db_url, provider, FAST)
    stats = worker.run_once()
    worker.close()

    assert stats.rejected_stale == 1, "the vector of the old text must be rejected"
    assert provider.embedded.count("the meeting is on monday") == 1
    assert provider.embedded.count("the meeting moved to friday") == 1
    row = document(admin_conn, edited)
    assert row["search_state"] == "ready"
    assert row["document_version"] == 2 and row["vector_document_version"] == 2
    expected = HashingTestProvider().embed(["the meeting moved to friday"])[0]
    assert np.allclose(vector_of(row["vector_text"]), expected, atol=2e-3)


def test_a_stale_vector_never_lands(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    contract_id = activate_hashing(admin_conn)
    team = make_team(admin_conn, "stale")
    [doc_id] = add_documents(admin_conn, team, ["version one"])
    with psycopg.connect(db_url, autocommit=True) as conn:
        with store.as_worker(conn) as cur:
            [claimed] = store.claim_batch(cur, contract_id=contract_id, batch_size=10, claim_seconds=60)
        admin_conn.execute(
            "UPDATE dm_private.search_documents SET body = 'version two', document_version = 2 "
            "WHERE document_id = %s",
            (doc_id,),
        )
        vector = store.vector_literal(HashingTestProvider().embed(["version one"])[0])
        with store.as_worker(conn) as cur:
            outcome = store.store_embeddings(
                cur, contract_id=contract_id, documents=[claimed], embeddings=[vector]
            )
    assert outcome == {(team, doc_id): False}
    row = document(admin_conn, doc_id)
    assert row["vector_text"] is None
    assert row["search_state"] == "pending" and row["claimed_until"] is None


def test_a_provider_failing_n_times_fails_the_document_with_its_error_and_a_retry_recovers(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "failures")
    profile = admin_conn.execute("SELECT dm.ensure_profile(%s, 'operator')", (team,)).fetchone()
    assert profile is not None
    ids = add_documents(admin_conn, team, ["fine one", "fine two", "poison pill", "fine three"])
    poison = ids[2]

    class PoisonProvider(RecordingProvider):
        healed = False

        def embed(self, texts: Sequence[str]) -> FloatMatrix:
            if not self.healed and any("poison" in t for t in texts):
                raise EmbeddingError("model exploded on this input")
            return super().embed(texts)

    provider = PoisonProvider()
    worker = EmbeddingWorker(db_url, provider, FAST.__class__(**{**FAST.__dict__, "max_attempts": 3}))
    stats = worker.run_once()
    assert stats.stored == 3, "a bad document must not fail its batch mates"
    assert stats.failed_attempts == 3 and stats.failed_documents == 1
    row = document(admin_conn, poison)
    assert row["search_state"] == "failed"
    assert row["embed_attempts"] == 3
    assert "model exploded on this input" in row["last_error"]
    assert row["pending_since"] is None and row["vector_text"] is None

    principal = Principal(team_id=team, profile_id=uuid.UUID(str(profile[0])))
    with psycopg.connect(db_url) as conn:
        with acting_as(conn, principal) as cur:
            fresh = store.search_freshness(cur, team_id=team)
            assert (fresh.pending_document_count, fresh.failed_document_count) == (0, 1)
            assert fresh.oldest_pending_age_seconds is None
            assert store.retry_failed_documents(cur, team_id=team) == 1
        provider.healed = True
        assert worker.run_once().stored == 4  # stats accumulate: 3 before, 1 now
        with acting_as(conn, principal) as cur:
            fresh = store.search_freshness(cur, team_id=team)
            assert (fresh.pending_document_count, fresh.failed_document_count) == (0, 0)
    worker.close()
    row = document(admin_conn, poison)
    assert row["search_state"] == "ready" and row["last_error"] is None and row["vector_text"] is not None


def test_a_contract_change_re_embeds_everything(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    first = activate_hashing(admin_conn, 384)
    team_a, team_b = make_team(admin_conn, "a"), make_team(admin_conn, "b")
    add_documents(admin_conn, team_a, [f"alpha {i}" for i in range(30)])
    add_documents(admin_conn, team_b, [f"beta {i}" for i in range(20)])
    old = EmbeddingWorker(db_url, RecordingProvider(384), FAST)
    assert old.run_once().stored == 50

    second = activate_hashing(admin_conn, 256)
    assert second != first
    pending = admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents WHERE search_state = 'pending'"
    ).fetchone()
    assert pending == (50,)
    with pytest.raises(ContractMismatchError):
        old.run_once()
    old.close()

    provider = RecordingProvider(256)
    new = EmbeddingWorker(db_url, provider, FAST)
    assert new.run_once().stored == 50
    new.close()
    assert len(provider.embedded) == 50
    rows = admin_conn.execute(
        "SELECT e.contract_id, vector_dims(e.embedding), count(*) FROM dm_private.document_embeddings AS e "
        "GROUP BY 1, 2 ORDER BY 1"
    ).fetchall()
    assert rows == [(first, 384, 50), (second, 256, 50)]
    assert admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents WHERE search_state <> 'ready'"
    ).fetchone() == (0,)


def test_with_the_provider_down_ingest_commits_and_documents_stay_pending(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "outage")
    profile_row = admin_conn.execute("SELECT dm.ensure_profile(%s, 'agent')", (team,)).fetchone()
    assert profile_row is not None
    principal = Principal(team_id=team, profile_id=uuid.UUID(str(profile_row[0])))
    from densemem.store import write

    with psycopg.connect(db_url) as conn:
        with acting_as(conn, principal) as cur:
            ids = write.ingest_evidence(
                cur,
                team_id=team,
                items=[
                    {
                        "text": "the deploy key rotates monthly",
                        "source": {"external_id": "s1", "kind": "doc"},
                    },
                    {"text": "on-call is alice this week", "source": {"external_id": "s1", "kind": "doc"}},
                ],
            )
        assert len(ids) == 2

        class DownProvider(RecordingProvider):
            down = True

            def embed(self, texts: Sequence[str]) -> FloatMatrix:
                if self.down:
                    raise ProviderUnavailableError("connection refused", retry_after=None)
                return super().embed(texts)

        provider = DownProvider()
        worker = EmbeddingWorker(db_url, provider, FAST)
        stats = worker.run_once()
        assert stats.provider_unavailable and stats.stored == 0 and stats.failed_attempts == 0
        rows = admin_conn.execute(
            "SELECT search_state::text, embed_attempts, last_error FROM dm_private.search_documents "
            "WHERE team_id = %s",
            (team,),
        ).fetchall()
        assert len(rows) == 2
        assert all(r[0] == "pending" and r[1] == 0 and "connection refused" in r[2] for r in rows)
        with acting_as(conn, principal) as cur:
            assert store.search_freshness(cur, team_id=team).pending_document_count == 2
        provider.down = False
        assert worker.run_once().stored == 2
        worker.close()


def test_a_worker_killed_mid_batch_loses_nothing(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    contract_id = activate_hashing(admin_conn)
    team = make_team(admin_conn, "crash")
    ids = add_documents(admin_conn, team, [f"note {i}" for i in range(5)])
    # A worker claims a batch with a one-second lease and dies (its connection closes).
    with psycopg.connect(db_url, autocommit=True) as dying, store.as_worker(dying) as cur:
        claimed = store.claim_batch(cur, contract_id=contract_id, batch_size=3, claim_seconds=1)
    assert len(claimed) == 3
    worker = EmbeddingWorker(db_url, RecordingProvider(), FAST)
    assert worker.run_once().stored == 2, "leased documents are not taken while the lease lasts"
    time.sleep(1.2)
    assert worker.run_once().stored == 5
    worker.close()
    assert all(document(admin_conn, i)["search_state"] == "ready" for i in ids)


def test_a_following_worker_wakes_on_notify(admin_conn: psycopg.Connection[Any], db_url: str) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "live")
    options = WorkerOptions(poll_seconds=60, progress=False)
    thread, stop = start_worker_thread(db_url, RecordingProvider(), options)
    try:
        time.sleep(0.5)  # let it drain the (empty) queue and start listening
        started = time.monotonic()
        [doc_id] = add_documents(admin_conn, team, ["fresh evidence"])
        while document(admin_conn, doc_id)["search_state"] != "ready":
            assert time.monotonic() - started < 10, "not woken by NOTIFY (poll is 60 s)"
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_an_empty_body_becomes_ready_without_a_vector(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "erased")
    [doc_id] = add_documents(admin_conn, team, [""])
    provider = RecordingProvider()
    worker = EmbeddingWorker(db_url, provider, FAST)
    assert worker.run_once().stored == 1
    worker.close()
    assert provider.embedded == []
    row = document(admin_conn, doc_id)
    assert row["search_state"] == "ready" and row["vector_text"] is None


def test_the_cli_runs_once_and_reports_status(
    admin_conn: psycopg.Connection[Any],
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from densemem.cli import main

    team = make_team(admin_conn, "cli")
    add_documents(admin_conn, team, [f"cli doc {i}" for i in range(7)])
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("DENSEMEM_EMBEDDING_PROVIDER", "hashing-test")
    assert main(["embed"]) == 2, "the seeded contract is the local model: a hashing worker must refuse"
    assert main(["embed", "activate"]) == 0
    assert main(["embed", "status"]) == 0
    assert "pending 7, failed 0" in capsys.readouterr().out
    assert main(["embed", "--no-progress"]) == 0
    assert "embedded 7" in capsys.readouterr().out
    assert main(["embed", "status"]) == 0
    assert "pending 0, failed 0" in capsys.readouterr().out


def test_a_long_run_shows_a_progress_bar(
    admin_conn: psycopg.Connection[Any], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    activate_hashing(admin_conn)
    team = make_team(admin_conn, "progress")
    add_documents(admin_conn, team, [f"row {i}" for i in range(120)])
    options = WorkerOptions(batch_size=50, progress=True, progress_min_documents=100)
    worker = EmbeddingWorker(db_url, RecordingProvider(), options)
    assert worker.run_once().stored == 120
    worker.close()
    err = capsys.readouterr().err
    assert "embedding" in err and "120/120" in err


def test_vectors_of_a_contract_replaced_mid_batch_never_land(
    admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    old = activate_hashing(admin_conn, 384)
    team = make_team(admin_conn, "switch")
    ids = add_documents(admin_conn, team, ["one", "two"])
    with psycopg.connect(db_url, autocommit=True) as conn:
        with store.as_worker(conn) as cur:
            claimed = store.claim_batch(cur, contract_id=old, batch_size=10, claim_seconds=300)
        activate_hashing(admin_conn, 128)  # the administrator switches while the batch is embedded
        vectors = [store.vector_literal(v) for v in HashingTestProvider(384).embed([d.body for d in claimed])]
        with store.as_worker(conn) as cur:
            outcome = store.store_embeddings(cur, contract_id=old, documents=claimed, embeddings=vectors)
    assert outcome == {(team, i): False for i in ids}
    assert admin_conn.execute("SELECT count(*) FROM dm_private.document_embeddings").fetchone() == (0,)
    rows = admin_conn.execute(
        "SELECT search_state::text, claimed_until FROM dm_private.search_documents WHERE team_id = %s",
        (team,),
    ).fetchall()
    assert rows == [("pending", None), ("pending", None)], (
        "activation drops every claim: the new contract takes them at once"
    )

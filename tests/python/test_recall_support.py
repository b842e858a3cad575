"""Fixtures shared by the recall tests (no tests here): teams, evidence, vectors, calls."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from densemem.store.recall import explain_recall, recall_memory
from densemem.store.session import Principal, acting_as

DIMENSIONS = 384


def unit(*components: tuple[int, float]) -> list[float]:
    """A 384-d unit vector with the given (axis, weight) components."""
    vector = [0.0] * DIMENSIONS
    for axis, weight in components:
        vector[axis] += weight
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def make_team(conn: psycopg.Connection[Any], name: str) -> tuple[uuid.UUID, uuid.UUID]:
    """A team and an active profile in it (administrator calls)."""
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    team = uuid.UUID(str(row[0]))
    row = conn.execute("SELECT dm.ensure_profile(%s, %s)", (team, f"{name} author")).fetchone()
    assert row is not None
    return team, uuid.UUID(str(row[0]))


def ingest(
    conn: psycopg.Connection[Any], team: uuid.UUID, profile: uuid.UUID, items: Sequence[dict[str, Any]]
) -> list[uuid.UUID]:
    """Evidence through the write path; items get a unique source when none is given."""
    payload = []
    for i, item in enumerate(items):
        entry = dict(item)
        entry.setdefault("source", {"external_id": f"src-{uuid.uuid4().hex[:8]}-{i}", "kind": "note"})
        payload.append(entry)
    with acting_as(conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.ingest_evidence(%s, %s) AS ids", (team, Jsonb(payload)))
        row = cur.fetchone()
    assert row is not None
    return [uuid.UUID(str(x)) for x in row["ids"]]


def embed(
    conn: psycopg.Connection[Any], team: uuid.UUID, evidence_id: uuid.UUID, vector: Sequence[float]
) -> None:
    """Writes the current-version vector of an evidence document, as the embedding worker would."""
    conn.execute(
        "INSERT INTO dm_private.document_embeddings "
        "(team_id, document_id, contract_id, document_version, source_version, embedding) "
        "SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version, %s::halfvec "
        "FROM dm_private.search_documents AS d, dm_private.embedding_contracts AS c "
        "WHERE c.is_active AND d.team_id = %s AND d.subject_kind = 'evidence' AND d.subject_id = %s "
        "ON CONFLICT (team_id, document_id, contract_id) DO UPDATE SET embedding = excluded.embedding, "
        "document_version = excluded.document_version, source_version = excluded.source_version",
        (json.dumps(list(vector)), team, evidence_id),
    )
    conn.execute(
        "UPDATE dm_private.search_documents SET search_state = 'ready', pending_since = NULL "
        "WHERE team_id = %s AND subject_kind = 'evidence' AND subject_id = %s",
        (team, evidence_id),
    )


def recall(
    conn: psycopg.Connection[Any],
    team: uuid.UUID,
    query: str,
    *,
    embedding: Sequence[float] | None = None,
    request: dict[str, Any] | None = None,
    scopes: Sequence[str] = (),
) -> dict[str, Any]:
    return recall_memory(
        conn, Principal(team, None, tuple(scopes)), query=query, query_embedding=embedding, request=request
    )


def explain(
    conn: psycopg.Connection[Any],
    team: uuid.UUID,
    query: str,
    *,
    embedding: Sequence[float] | None = None,
    request: dict[str, Any] | None = None,
    scopes: Sequence[str] = (),
) -> dict[str, Any]:
    return explain_recall(
        conn,
        Principal(team, None, tuple(scopes), role="densemem_operator"),
        query=query,
        query_embedding=embedding,
        request=request,
    )


def result_ids(answer: dict[str, Any]) -> list[uuid.UUID]:
    return [uuid.UUID(r["evidence_id"]) for r in answer["results"]]


def result_texts(answer: dict[str, Any]) -> list[str]:
    return [str(r["context"]) for r in answer["results"]]

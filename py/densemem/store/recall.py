"""Python side of recall: one small typed function per SQL call.

The database does all the work (eligibility, branches, fusion, rerank, MMR,
hydration under RLS, budget); these functions only pass the arguments and
return the JSON the SQL function built, so SQL and HTTP callers get the same
bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from densemem.store.session import Principal, acting_as


def vector_literal(embedding: Sequence[float] | None) -> str | None:
    """pgvector's text form of a query embedding (None stays None)."""
    if embedding is None:
        return None
    return "[" + ",".join(repr(float(x)) for x in embedding) + "]"


def recall_memory(
    conn: psycopg.Connection[Any],
    principal: Principal,
    *,
    query: str,
    query_embedding: Sequence[float] | None = None,
    request: dict[str, Any] | None = None,
    statement_timeout_ms: int | None = None,
) -> dict[str, Any]:
    """dm.recall_memory as `principal`: {"results", "discovery_paths", "guidance"}."""
    with acting_as(conn, principal, statement_timeout_ms=statement_timeout_ms) as cur:
        cur.execute(
            "SELECT dm.recall_memory(%(query)s, %(team)s, %(embedding)s::public.vector, %(request)s) "
            "AS answer",
            {
                "query": query,
                "team": principal.team_id,
                "embedding": vector_literal(query_embedding),
                "request": Jsonb(request or {}),
            },
        )
        row = cur.fetchone()
    assert row is not None
    answer: dict[str, Any] = row["answer"]
    return answer


def explain_recall(
    conn: psycopg.Connection[Any],
    principal: Principal,
    *,
    query: str,
    query_embedding: Sequence[float] | None = None,
    request: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """dm.explain_recall (operators): the same recall with branches, score breakdowns, timings, telemetry."""
    with acting_as(conn, principal) as cur:
        cur.execute(
            "SELECT dm.explain_recall(%(query)s, %(team)s, %(embedding)s::public.vector, %(request)s) "
            "AS explained",
            {
                "query": query,
                "team": principal.team_id,
                "embedding": vector_literal(query_embedding),
                "request": Jsonb(request or {}),
            },
        )
        row = cur.fetchone()
    assert row is not None
    explained: dict[str, Any] = row["explained"]
    return explained


def refresh_vector_indexes(
    conn: psycopg.Connection[Any], *, min_rows: int | None = None
) -> list[dict[str, Any]]:
    """dm.refresh_vector_indexes (administrator connection): partial HNSW indexes for large teams."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT team_id, index_name, vector_count FROM dm.refresh_vector_indexes(%s)", (min_rows,)
        )
        rows = cur.fetchall()
    return [
        {"team_id": uuid.UUID(str(r[0])), "index_name": str(r[1]), "vector_count": int(r[2])} for r in rows
    ]

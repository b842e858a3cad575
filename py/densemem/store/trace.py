"""Trace and discovery: one typed function per SQL call of the discovery stage.

Each function runs one SQL call on a cursor opened by
`densemem.store.session.acting_as`, so the database checks the team and
row-level security. Nothing is filtered, ranked or synthesized here: the
JSON the SQL function returns is returned as it is. Errors arrive as psycopg
exceptions carrying the SQLSTATE (DM404 for a relationship that is missing or
belongs to another team, 42501 for a team mismatch or a failed read).

    with acting_as(conn, Principal(team_id)) as cur:
        history = trace_memory(cur, team_id=team_id, relationship_id=relationship_id)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

Cursor = psycopg.Cursor[dict[str, Any]]


def _one(cur: Cursor, query: str, params: Mapping[str, Any]) -> Any:
    cur.execute(query, params)
    row = cur.fetchone()
    if row is None:  # a SELECT of one function call always returns one row
        raise RuntimeError("the function returned no row")
    return row["value"]


def trace_memory(cur: Cursor, *, team_id: uuid.UUID, relationship_id: uuid.UUID) -> dict[str, Any]:
    """dm.trace_memory: the relationship, evidence spans, verifications, transitions, lineage, conflicts."""
    result: dict[str, Any] = _one(
        cur,
        "SELECT dm.trace_memory(%(relationship_id)s, %(team_id)s) AS value",
        {"relationship_id": relationship_id, "team_id": team_id},
    )
    return result


def refresh_communities(cur: Cursor, *, team_id: uuid.UUID) -> int:
    """dm.refresh_communities: rebuilds the team's communities; returns how many there are."""
    count: int = _one(cur, "SELECT dm.refresh_communities(%(team_id)s) AS value", {"team_id": team_id})
    return count


def discovery_for_recall(
    cur: Cursor,
    *,
    team_id: uuid.UUID,
    query: str,
    result_evidence_ids: Sequence[uuid.UUID] = (),
    parsed: Mapping[str, Any] | None = None,
    request: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """dm_private.discovery_for_recall, for tools and tests (recall itself calls it inside SQL).

    `settings` defaults to the default ranking profile's settings.
    """
    result: dict[str, Any] = _one(
        cur,
        "SELECT dm_private.discovery_for_recall(%(team_id)s, %(query)s, %(parsed)s, %(results)s::uuid[], "
        "%(request)s, COALESCE(%(settings)s, (SELECT p.settings FROM dm_private.ranking_profiles AS p "
        "WHERE p.is_default))) AS value",
        {
            "team_id": team_id,
            "query": query,
            "parsed": Jsonb(dict(parsed or {})),
            "results": list(result_evidence_ids),
            "request": Jsonb(dict(request or {})),
            "settings": Jsonb(dict(settings)) if settings is not None else None,
        },
    )
    return result


def entity_proximity(
    cur: Cursor,
    *,
    team_id: uuid.UUID,
    seed_entity_ids: Sequence[uuid.UUID],
    evidence_ids: Sequence[uuid.UUID],
    max_hops: int = 2,
) -> dict[uuid.UUID, int]:
    """dm_private.entity_proximity: graph hops from the seed entities to each evidence's linked entities."""
    cur.execute(
        "SELECT p.evidence_id, p.hops FROM dm_private.entity_proximity("
        "%(team_id)s, %(seeds)s::uuid[], %(evidence)s::uuid[], %(max_hops)s) AS p",
        {
            "team_id": team_id,
            "seeds": list(seed_entity_ids),
            "evidence": list(evidence_ids),
            "max_hops": max_hops,
        },
    )
    return {row["evidence_id"]: int(row["hops"]) for row in cur.fetchall()}

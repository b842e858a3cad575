"""Query understanding: the Python side of dm.parse_query."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import psycopg


def parse_query(
    cur: psycopg.Cursor[Any], *, query: str, team_id: uuid.UUID, now: dt.datetime | None = None
) -> dict[str, Any]:
    """How the database reads `query` for `team_id` (see docs/QUERY_GRAMMAR.md).

    `now` is the injected clock; None means the transaction's now().
    Run it inside `acting_as(...)` so that the team is authenticated.
    """
    cur.execute(
        "SELECT dm.parse_query(%(query)s, %(team_id)s, COALESCE(%(now)s::timestamptz, now())) AS parsed",
        {"query": query, "team_id": team_id, "now": now},
    )
    row = cur.fetchone()
    if row is None:  # pragma: no cover - a scalar function always returns a row
        raise RuntimeError("dm.parse_query returned no row")
    parsed: Any = row["parsed"] if isinstance(row, dict) else row[0]
    if not isinstance(parsed, dict):
        raise TypeError("dm.parse_query did not return an object")
    return parsed

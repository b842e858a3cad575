"""recall_rank's temporal signal and context lift against references written independently (session 6).

Session 6 computes the temporal signal with one percent_rank() window ordered by two keys (instead of
one window per intent) in every scoring statement, and sends only the candidates with a source group and
a sequence number through the lift's window. These tests compute both from the candidates' documents
with the plain definitions (the two windows of session 5; recall_context_lift's self-join) on candidates
with tied, missing and distinct creation times, with and without source groups, in a team without usage
(the plain statements) and with an empty usage snapshot (the full statement), and compare every value
as float8 text (exact).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_recall_support import embed, ingest, make_team, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

WORDS = ["rotate", "certificate", "deploy", "cache", "replica", "latency", "token", "backup"]


def build(conn: Conn) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """24 turns: creation times with ties and gaps (a quarter without one), half in two source groups."""
    team, profile = make_team(conn, "rank-signals")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    items: list[dict[str, Any]] = []
    for i in range(24):
        item: dict[str, Any] = {
            "text": f"Turn {i}: " + " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 4 + i % 4)) + ".",
            "memory_type": "conversation" if i % 3 else "semantic",
            "source": {"external_id": f"t-{i}", "kind": "message"},
        }
        if i % 4 != 1:
            item["created_at"] = (start + timedelta(hours=(i // 3) * 5)).isoformat()  # ties by threes
        if i % 2 == 0:
            item["source"]["source_group"] = f"session-{i % 4}"
        items.append(item)
    ids = ingest(conn, team, profile, items)
    for i, evidence in enumerate(ids):
        embed(conn, team, evidence, unit((i % 6, 1.0), (7 + i % 5, 0.4)))
    return team, ids


FUSED = """
SELECT pg_catalog.array_agg(ROW(d.document_id, d.subject_id, 1.0 / s.ord, 1.0 / s.ord, s.ord::integer,
           NULL, NULL, s.ord::integer, NULL)::dm_private.recall_fused ORDER BY s.ord)
FROM pg_catalog.unnest(%(ids)s::uuid []) WITH ORDINALITY AS s (id, ord)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = s.id
"""

SCORED = """
SELECT s.evidence_id, s.temporal::text AS temporal, s.score::text AS score
FROM pg_catalog.unnest((dm_private.recall_rank(%(team)s, 'rotate cache',
                        %(fused)s::dm_private.recall_fused [],
                        %(req)s, %(settings)s, '{}', %(context)s, NULL, true)).scored) AS s
"""

# session 5's temporal signal: one window per intent, over the candidates' documents
TEMPORAL = """
SELECT d.subject_id AS evidence_id,
       (CASE WHEN d.source_created_at IS NULL THEN 0.0
             WHEN %(intent)s = 'latest'
             THEN pg_catalog.percent_rank() OVER (ORDER BY d.source_created_at ASC NULLS FIRST)
             ELSE pg_catalog.percent_rank() OVER (ORDER BY d.source_created_at DESC NULLS FIRST)
        END)::double precision::text AS temporal
FROM dm_private.search_documents AS d
WHERE d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = ANY (%(ids)s::uuid [])
"""

# the lift as the stage of its own (sql/52) over the rerank without it
LIFTED = """
SELECT l.evidence_id, l.score::text AS score
FROM dm_private.recall_context_lift(%(team)s,
         ARRAY(SELECT r FROM dm_private.recall_rerank(%(team)s, 'rotate cache',
                                                      %(fused)s::dm_private.recall_fused [],
                                                      %(req)s, %(settings)s, '{}', false) AS r),
         %(settings)s) AS l
"""


def rows(conn: Conn, team: uuid.UUID, sql: str, params: dict[str, Any], column: str) -> dict[uuid.UUID, str]:
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(sql, params)
        return {r["evidence_id"]: r[column] for r in cur.fetchall()}


@pytest.mark.parametrize("usage", [False, True])
@pytest.mark.parametrize("intent", ["latest", "earliest"])
def test_temporal_signal_equals_one_window_per_intent(admin_conn: Conn, intent: str, usage: bool) -> None:
    team, ids = build(admin_conn)
    with admin_conn.transaction(force_rollback=True):
        if usage:  # forces the full statement (its usage CTE is then empty)
            admin_conn.execute("INSERT INTO dm_private.usage_snapshots (team_id) VALUES (%s)", (team,))
        for chosen in (ids, ids[::2], ids[1::3], ids[:1]):
            fused = admin_conn.execute(FUSED, {"ids": chosen, "team": team}).fetchone()
            assert fused is not None
            params = {
                "team": team,
                "fused": fused[0],
                "req": Jsonb({"now": "2026-01-20T00:00:00+00:00", "temporal_intent": intent}),
                "settings": Jsonb({"context": {"weight": 0.3, "radius": 2}}),
                "context": True,
            }
            got = rows(admin_conn, team, SCORED, params, "temporal")
            admin_conn.execute("RESET ROLE")
            want = rows(
                admin_conn, team, TEMPORAL, {"team": team, "ids": chosen, "intent": intent}, "temporal"
            )
            admin_conn.execute("RESET ROLE")
            assert got == want
            if len(chosen) > 3:  # the reference is not degenerate: ties, NULLs and distinct ranks
                assert len(set(want.values())) >= 3


@pytest.mark.parametrize("usage", [False, True])
@pytest.mark.parametrize("context", [(0.3, 1), (0.5, 2), (1.0, 5), (0.0, 2)])
def test_lift_of_grouped_and_ungrouped_candidates_equals_the_stage(
    admin_conn: Conn, context: tuple[float, int], usage: bool
) -> None:
    team, ids = build(admin_conn)
    with admin_conn.transaction(force_rollback=True):
        if usage:
            admin_conn.execute("INSERT INTO dm_private.usage_snapshots (team_id) VALUES (%s)", (team,))
        for chosen, intent in ((ids, None), (ids[::3], "latest"), (ids[1::2], None), (ids[:2], "earliest")):
            fused = admin_conn.execute(FUSED, {"ids": chosen, "team": team}).fetchone()
            assert fused is not None
            req: dict[str, Any] = {"now": "2026-01-20T00:00:00+00:00"}
            if intent is not None:
                req["temporal_intent"] = intent
            params = {
                "team": team,
                "fused": fused[0],
                "req": Jsonb(req),
                "settings": Jsonb({"context": {"weight": context[0], "radius": context[1]}}),
                "context": True,
            }
            got = rows(admin_conn, team, SCORED, params, "score")
            admin_conn.execute("RESET ROLE")
            want = rows(admin_conn, team, LIFTED, params, "score")
            admin_conn.execute("RESET ROLE")
            assert got == want
            assert len(got) == len(chosen)

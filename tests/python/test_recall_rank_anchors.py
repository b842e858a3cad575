"""recall_rank's anchor test against dm_private.recall_has_anchors (session 7).

recall_rank applies the hard-anchor rule inline, with each anchor's regular
expression built once per call (calling recall_has_anchors built every
pattern again for every candidate). The candidates it keeps must be exactly
those for which recall_has_anchors(body, lower-cased anchors) is true (the
call it replaced), for identifier shapes of every grammar (issue keys,
versions, paths, scoped names, server ids, hashes, regular-expression
characters, non-ASCII case), in each of its three scoring statements: plain,
plain with a temporal intent, and the full one (a team with a usage snapshot).
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_recall_support import ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

TEXTS = [
    "ABC-123 was reviewed",
    "see ABC-123.",
    "ticket abc-123: done",
    "ABC-1234 deploy",
    "XABC-123",
    "ABC-123-4",
    "ABC-123_fix",
    "ABC-1234 first, ABC-123 second",
    "shipped v1.2.3 today",
    "shipped v1.2.30",
    "shipped v1.2.3.4",
    "shipped v1.2.3+build7",
    "edit src/app/main.py now",
    "edit lib/src/app/main.py",
    "see /etc/nginx/nginx.conf.bak",
    "see /etc/nginx/nginx.conf",
    "log at C:\\logs\\a.txt",
    "owner team:platform, ok",
    "owner team:platform/infra",
    "srv-db-01 is down after ABC-123",
    "srv-db-012 is down",
    "https://git.example/commit/9fceb02 fixed it",
    "built 9fceb02-dirty",
    "a+b [x] (y)",
    "aab",
    "İSTANBUL office, ticket ABC-123",
    "istanbul office",
    "nothing to see here",
]

ANCHOR_SETS: list[list[str]] = [
    ["ABC-123"],
    ["abc-123"],
    ["v1.2.3"],
    ["V1.2.3"],
    ["src/app/main.py"],
    ["/etc/nginx/nginx.conf"],
    ["C:\\logs\\a.txt"],
    ["team:platform"],
    ["srv-db-01"],
    ["9fceb02"],
    ["a+b"],
    ["İstanbul"],
    ["ABC-123", "srv-db-01"],
    ["ABC-123", "v1.2.3"],
    ["office", "İSTANBUL"],
    ["absent-anchor"],
]

FUSED = """
SELECT pg_catalog.array_agg(ROW(d.document_id, d.subject_id, 1.0 / s.ord, 1.0 / s.ord, s.ord::integer, NULL,
           NULL, s.ord::integer, NULL)::dm_private.recall_fused ORDER BY s.ord)
FROM pg_catalog.unnest(%(ids)s::uuid []) WITH ORDINALITY AS s (id, ord)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = s.id
"""

KEPT = """
SELECT COALESCE(pg_catalog.array_agg(r.evidence_id ORDER BY r.evidence_id), '{}') AS kept
FROM dm_private.recall_rerank(%(team)s, '', %(fused)s::dm_private.recall_fused [], %(req)s,
                              '{"relevance_mix": {"fusion": 1.0}}'::jsonb, '{}', false) AS r
"""

EXPECTED = """
SELECT COALESCE(pg_catalog.array_agg(e.evidence_id ORDER BY e.evidence_id), '{}') AS kept
FROM pg_catalog.unnest(%(ids)s::uuid []) AS e (evidence_id)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = e.evidence_id
WHERE dm_private.recall_has_anchors(
    d.body, ARRAY(SELECT pg_catalog.lower(a) FROM pg_catalog.unnest(%(anchors)s::text []) AS a))
"""

# without explain, the MMR order holds only kept candidates
ORDER = """
SELECT COALESCE(r.ordered_ids, '{}') AS ordered_ids
FROM dm_private.recall_rank(%(team)s, '', %(fused)s::dm_private.recall_fused [], %(req)s,
                            '{"relevance_mix": {"fusion": 1.0}}'::jsonb, '{}', true, 50, false) AS r
"""


def corpus(conn: Conn) -> tuple[uuid.UUID, list[uuid.UUID], Any]:
    team, profile = make_team(conn, "rank-anchors")
    ids = ingest(conn, team, profile, [{"text": t, "memory_type": "semantic"} for t in TEXTS])
    fused = conn.execute(FUSED, {"ids": ids, "team": team}).fetchone()
    assert fused is not None
    return team, ids, fused[0]


def run(conn: Conn, team: uuid.UUID, sql: str, params: dict[str, Any]) -> Any:
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    assert row is not None
    return next(iter(dict(row).values()))


@pytest.mark.parametrize("statement", ["plain", "temporal", "full"])
def test_recall_rank_keeps_what_recall_has_anchors_keeps(admin_conn: Conn, statement: str) -> None:
    team, ids, fused = corpus(admin_conn)
    sizes = set()
    for anchors in ANCHOR_SETS:
        req: dict[str, Any] = {"now": "2026-01-20T00:00:00+00:00", "anchors": anchors}
        if statement == "temporal":
            req["temporal_intent"] = "latest"
        params = {"team": team, "fused": fused, "req": Jsonb(req), "ids": ids, "anchors": anchors}
        expected = admin_conn.execute(EXPECTED, params).fetchone()
        assert expected is not None
        with admin_conn.transaction(force_rollback=True):
            if statement == "full":
                # a usage snapshot in the team: recall_rank's full statement (usage and support CTEs)
                admin_conn.execute("INSERT INTO dm_private.usage_snapshots (team_id) VALUES (%s)", (team,))
            kept = run(admin_conn, team, KEPT, params)
            admin_conn.execute("RESET ROLE")
            ordered = run(admin_conn, team, ORDER, params)
            admin_conn.execute("RESET ROLE")
        assert kept == expected[0], anchors
        assert set(ordered) <= set(kept) and len(ordered) == len(kept), anchors
        sizes.add(len(kept))
        if anchors == ["absent-anchor"]:
            assert kept == []
        if anchors == ["ABC-123"]:
            assert 5 <= len(kept) < len(ids)  # the test sees both outcomes
    assert len(sizes) >= 4

"""The full-text branch's statement without exchange context (sql/35, session 8).

A team none of whose evidence documents has a source group, or a profile with
context_radius 0, runs the 8-lexeme GIN passes in a statement of their own
(the any-term pass alone in statements unrolled to 4 and to 8 lexemes),
without the exchange-context CTEs (no candidate could have context). The same
team with one grouped evidence document that is not recallable (quarantined:
it neither counts in the statistics nor becomes a candidate or a neighbour)
runs the statement with the context, and every candidate, rank and score must
be the same.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from test_recall_support import explain, ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

QUERIES = (
    "spring invoice",
    "invoice campaign paid",
    "spring invoice -autumn",
    "invoice or hiring",
    '"paid in autumn" invoice',
    "summer receipt meeting notes hiring campaign spring",
    # session 9: the any-term statements unrolled to 4 and to 8 lexemes at
    # their edges (4 and 5 held lexemes), and a query lexeme no document holds
    "invoice campaign paid spring",
    "invoice campaign paid spring hiring",
    "invoice zebra",
)


def fulltext_hits(
    conn: Conn, team: uuid.UUID, query: str, request: dict[str, Any] | None = None
) -> list[Any]:
    """The full-text branch's (evidence_id, rank, score) as explain_recall reports them."""
    explained = explain(conn, team, query, request=request)
    return [
        (h["evidence_id"], h["branch_rank"], h["branch_score"]) for h in explained["branches"]["fulltext"]
    ]


def grouped_documents(conn: Conn, team: uuid.UUID) -> int:
    row = conn.execute(
        "SELECT count(*) FROM dm_private.search_documents "
        "WHERE team_id = %s AND subject_kind = 'evidence' AND source_group IS NOT NULL",
        (team,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_team_without_source_groups_gets_the_same_candidates_as_with_the_context_statement(
    admin_conn: Conn,
) -> None:
    # budget 50: 73 documents are then a "larger" team, read through the GIN passes
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        "SELECT 'ungrouped-budget-50', 1, jsonb_set(settings, '{fulltext,scan_budget}', '50') "
        "FROM dm_private.ranking_profiles WHERE is_default"
    )
    team, profile = make_team(admin_conn, "ungrouped")
    items = [{"text": f"Invoice {i} for the spring campaign."} for i in range(20)]
    items += [{"text": f"Invoice {i} paid in autumn."} for i in range(3)]
    items += [{"text": f"Receipt {i} for the summer campaign."} for i in range(20)]
    items += [{"text": f"Meeting notes {i} about hiring."} for i in range(30)]
    ids = ingest(admin_conn, team, profile, items)
    requests: list[dict[str, Any]] = [
        {"ranking_profile": "ungrouped-budget-50"},
        {"ranking_profile": "ungrouped-budget-50", "known_evidence_ids": [str(i) for i in ids[:4]]},
        {"ranking_profile": "ungrouped-budget-50", "filters": {"memory_type": "semantic"}},
        {},
    ]
    assert grouped_documents(admin_conn, team) == 0
    before = {
        (q, i): fulltext_hits(admin_conn, team, q, request=r) for q in QUERIES for i, r in enumerate(requests)
    }
    assert sum(1 for hits in before.values() if hits) >= len(QUERIES) * 2

    # one grouped evidence document (it matches the queries), then quarantined: not recallable
    [grouped] = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Invoice spring campaign paid in autumn, meeting notes about hiring.",
                "source": {"external_id": "grouped-1", "kind": "conversation", "source_group": "g1"},
            }
        ],
    )
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.move_evidence(%s, %s, 'quarantine')", (team, grouped))
    assert grouped_documents(admin_conn, team) == 1
    after = {
        (q, i): fulltext_hits(admin_conn, team, q, request=r) for q in QUERIES for i, r in enumerate(requests)
    }
    assert after == before
    assert all(grouped not in {h[0] for h in hits} for hits in after.values())

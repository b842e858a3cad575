"""dm_private.recall_rank reads each candidate's document at the heap address its branch carried (session 17).

The address (recall_fused.row_tid, migration 0094) is a hint: the ranking uses the row there only when it
is visible and is the candidate's document in the team, and otherwise reads the document by id. So the
answer must be the same bytes whatever the addresses say: right, missing, another document's of the
team, another team's row, no row at all, or the address of a version the document has since left.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from test_recall_rank import RANK, corpus, fetch, ordered_fused, sampled_fused
from test_recall_support import ingest, make_team

Conn = psycopg.Connection[Any]

# the fused list with each candidate's address set by `kind`: 0 none, 1 its document's row, 2 another
# document's row of the team, 3 a row of another team, 4 an address with no row
ADDRESSED = """
SELECT pg_catalog.array_agg(ROW(f.document_id, f.evidence_id, f.fused_score, f.relevance, f.fulltext_rank,
           f.vector_rank, f.exact_rank, f.fusion_rank,
           CASE c.kind
               WHEN 1 THEN (SELECT d.ctid FROM dm_private.search_documents AS d
                            WHERE d.team_id = %(team)s AND d.document_id = f.document_id)
               WHEN 2 THEN (SELECT d.ctid FROM dm_private.search_documents AS d
                            WHERE d.team_id = %(team)s AND d.document_id <> f.document_id
                            ORDER BY d.document_id LIMIT 1)
               WHEN 3 THEN (SELECT d.ctid FROM dm_private.search_documents AS d
                            WHERE d.team_id = %(other)s ORDER BY d.document_id LIMIT 1)
               WHEN 4 THEN '(4294967294,1)'::tid
           END)::dm_private.recall_fused ORDER BY f.o)
FROM pg_catalog.unnest(%(fused)s::dm_private.recall_fused []) WITH ORDINALITY
     AS f (document_id, evidence_id, fused_score, relevance, fulltext_rank, vector_rank, exact_rank,
           fusion_rank, row_tid, o)
JOIN pg_catalog.unnest(%(kinds)s::integer []) WITH ORDINALITY AS c (kind, o) ON c.o = f.o
"""


def other_team(conn: Conn) -> uuid.UUID:
    row = conn.execute("SELECT team_id FROM dm_private.teams WHERE name = 'rank-addresses-other'").fetchone()
    if row is not None:
        return uuid.UUID(str(row[0]))
    team, profile = make_team(conn, "rank-addresses-other")
    ingest(conn, team, profile, [{"text": "Another team's note about the cache and the token."}])
    return team


def addressed(conn: Conn, team: uuid.UUID, fused: str, kinds: list[int]) -> str:
    row = conn.execute(
        ADDRESSED, {"team": team, "other": other_team(conn), "fused": fused, "kinds": kinds}
    ).fetchone()
    assert row is not None
    return str(row[0]) if row[0] is not None else "{}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=1, max_value=48),
    want=st.integers(min_value=1, max_value=25),
    context=st.sampled_from([None, (0.3, 2)]),
    query=st.sampled_from(["rotate the certificate", "cache latency", "", "backup", "token -cache"]),
    extra=st.sampled_from([{}, {"phrases": ["deploy cache"]}, {"anchors": ["token"]}]),
    mixing=st.sampled_from(["right", "none", "mixed"]),
)
def test_the_answer_does_not_depend_on_the_addresses(
    admin_conn: Conn,
    seed: int,
    size: int,
    want: int,
    context: tuple[float, int] | None,
    query: str,
    extra: dict[str, Any],
    mixing: str,
) -> None:
    team, ids = corpus(admin_conn)
    rng = random.Random(seed)
    chosen, fused = sampled_fused(admin_conn, team, ids, rng, size)
    assert fused is not None
    kinds = {"right": [1] * len(chosen), "none": [0] * len(chosen)}.get(mixing) or [
        rng.choice([0, 1, 2, 3, 4]) for _ in chosen
    ]
    with_addresses = addressed(admin_conn, team, fused, kinds)
    profile: dict[str, Any] = {
        "mmr": {"lambda": 0.7, "duplicate_similarity": 0.97, "pool": 30},
        "relevance_mix": {"fusion": 0.8, "phrase": 0.1, "exact_terms": 0.3, "content": 0.3},
        "half_life_days": {"conversation": 2, "episodic": 90},
    }
    if context is not None:
        profile["context"] = {"weight": context[0], "radius": context[1]}
    params = {
        "team": team,
        "query": query,
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00", **extra}),
        "settings": Jsonb(profile),
        "want": want,
    }
    for explain in (False, True):
        by_id = fetch(admin_conn, team, RANK, {**params, "fused": fused, "explain": explain})
        got = fetch(admin_conn, team, RANK, {**params, "fused": with_addresses, "explain": explain})
        assert got == by_id


def test_an_address_the_document_has_left_is_not_read(admin_conn: Conn) -> None:
    """The documents are updated after their addresses were taken (a new row version elsewhere, as when a
    text is edited between a branch's read and the ranking): the ranking scores the current rows, as by id,
    whatever the rows left at the old addresses say."""
    team, ids = corpus(admin_conn)
    fused = ordered_fused(admin_conn, team, ids)
    stale = addressed(admin_conn, team, fused, [1] * len(ids))
    params = {
        "team": team,
        "query": "cache",
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00"}),
        "settings": Jsonb({"weights": {"relevance": 0, "recency": 0, "importance": 1, "frequency": 0}}),
        "want": 10,
        "explain": False,
    }
    before = fetch(admin_conn, team, RANK, {**params, "fused": stale})
    with admin_conn.transaction(force_rollback=True):
        # reverse the importance order: the rows at the old addresses keep the old values
        moved = admin_conn.execute(
            "UPDATE dm_private.search_documents SET importance = 1 - COALESCE(importance, 0.5) "
            "WHERE team_id = %s AND subject_kind = 'evidence'",
            (team,),
        ).rowcount
        assert moved == len(ids)
        left = admin_conn.execute(
            "SELECT count(*) FROM dm_private.search_documents AS d WHERE d.team_id = %s AND d.ctid = ANY "
            "(SELECT f.row_tid FROM pg_catalog.unnest(%s::dm_private.recall_fused []) AS f)",
            (team, stale),
        ).fetchone()
        assert left == (0,), "some document kept its address: the case tests nothing"
        admin_conn.execute("RESET ROLE")
        after_by_id = fetch(admin_conn, team, RANK, {**params, "fused": fused})
        admin_conn.execute("RESET ROLE")
        after = fetch(admin_conn, team, RANK, {**params, "fused": stale})
    assert after == after_by_id
    assert after["ordered_ids"] != before["ordered_ids"], "the update changed no order: nothing tested"


def ranking_plans(conn: Conn, team: uuid.UUID, fused: str) -> list[str]:
    """The executed plans (auto_explain, nested statements, row counts without timing) of the statements one
    recall_rank call runs that read search_documents by address."""
    plans: list[str] = []

    def keep(diag: psycopg.errors.Diagnostic) -> None:
        if diag.message_primary and "Tid Scan on search_documents" in diag.message_primary:
            plans.append(diag.message_primary)

    params = {
        "team": team,
        "query": "cache",
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00"}),
        "settings": Jsonb({}),
        "want": 10,
        "explain": False,
        "fused": fused,
    }
    conn.execute("LOAD 'auto_explain'")
    conn.add_notice_handler(keep)
    try:
        for name, value in (
            ("log_min_duration", "0"),
            ("log_nested_statements", "on"),
            ("log_analyze", "on"),
            ("log_timing", "off"),
            ("log_level", "notice"),
        ):
            conn.execute("SELECT pg_catalog.set_config(%s, %s, false)", (f"auto_explain.{name}", value))
        fetch(conn, team, RANK, params)
    finally:
        conn.execute("SELECT pg_catalog.set_config('auto_explain.log_min_duration', '-1', false)")
        conn.remove_notice_handler(keep)
    return plans


def test_the_scoring_statement_reads_each_address_once_and_probes_only_without_one(admin_conn: Conn) -> None:
    """Session 18: the hot scoring statement reads each candidate's row by a parameterized Tid Scan (one loop
    and one row per candidate) and runs the probe by id (the hash index of migration 0072) only for a
    candidate whose address found nothing: never with right addresses, once per candidate without any. (A
    form that scanned every address in one Tid Scan was planned as a nested loop over a materialized list:
    100 x 100 join tests; a join the planner may run as a hash join over a scan of the team's rows, which
    it chose for this small team; one that probed anyway would spare nothing.)"""
    team, ids = corpus(admin_conn)
    fused = ordered_fused(admin_conn, team, ids)
    n = len(ids)
    for kind, probes in ((1, None), (0, n)):
        plans = ranking_plans(admin_conn, team, addressed(admin_conn, team, fused, [kind] * n))
        assert len(plans) == 1, plans
        lines = plans[0].splitlines()
        tid = [i for i, line in enumerate(lines) if "Tid Scan on search_documents" in line]
        assert len(tid) == 1, plans[0]
        assert f"loops={n})" in lines[tid[0]], lines[tid[0]]
        assert "TID Cond: (ctid = u.row_tid)" in lines[tid[0] + 1], plans[0]
        if kind == 1:
            assert "(actual rows=1.00 loops=" in lines[tid[0]], lines[tid[0]]
        assert "Rows Removed by Join Filter" not in plans[0], plans[0]
        probe = [line for line in lines if "search_documents_document_hash_idx on search_documents y" in line]
        assert len(probe) == 1, plans[0]
        if probes is None:
            assert "(never executed)" in probe[0], probe[0]
        else:
            assert f"loops={probes})" in probe[0], probe[0]

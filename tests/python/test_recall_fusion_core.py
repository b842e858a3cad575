"""The fusion core (recall_fuse_ordered) and recall_rank reading relevance from its kept ends (session 13).

recall_run fuses with dm_private.recall_fuse_ordered, which leaves the RRF
relevance and fusion_rank out, and hands its best and worst kept scores to
dm_private.recall_rank, which computes each candidate's relevance from them.
That must rank exactly as recall_rank on the complete array
(recall_fuse_array) does: the same order, the same MMR rows, the same scored
rows but for fusion_rank (which only explain shows, and recall_run completes
the array when it explains), also when the anchors drop candidates before
scoring (the ends are fusion's, not the filtered list's).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from test_recall_rank import corpus

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

HITS = """
SELECT pg_catalog.array_agg(
    ROW(b.branch, d.document_id, d.subject_id, b.rank, 0.5, NULL)::dm_private.recall_branch_hit)
FROM ROWS FROM (pg_catalog.unnest(%(branches)s::text []), pg_catalog.unnest(%(ids)s::uuid []),
                pg_catalog.unnest(%(ranks)s::integer [])) AS b (branch, id, rank)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = b.id
"""

FUSE = """
SELECT c.fused::text AS core, c.best_score, c.worst_score,
       dm_private.recall_fuse_array(%(hits)s::dm_private.recall_branch_hit [], %(settings)s)::text AS complete
FROM dm_private.recall_fuse_ordered(%(hits)s::dm_private.recall_branch_hit [], %(settings)s) AS c
"""

RANK = """
SELECT COALESCE(r.ordered_ids, '{}') AS ordered_ids, r.mmr_rows::text AS mmr_rows,
       (SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(s) - 'fusion_rank' ORDER BY s.score_rank)::text
        FROM pg_catalog.unnest(r.scored) AS s) AS scored
FROM dm_private.recall_rank(%(team)s, %(query)s, %(fused)s::dm_private.recall_fused [], %(req)s, %(settings)s,
                            '{}', true, %(want)s, %(explain)s, %(best)s, %(worst)s) AS r
"""


def fetch(conn: Conn, team: uuid.UUID, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    assert row is not None
    return dict(row)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=1, max_value=48),
    cap=st.sampled_from([1, 2, 10, 100]),
    fusion=st.sampled_from(
        [
            {"method": "rrf", "rrf_k": 5},
            {"method": "rrf", "rrf_k": 1, "branch_weights": {"exact": 2.0, "vector": 0.5}},
            {"method": "rrf", "branch_weights": {"fulltext": 0, "exact": 0, "vector": 0}},
            {"method": "priority", "branch_priority": ["vector", "fulltext"]},
        ]
    ),
    context=st.sampled_from([None, (0.3, 2)]),
    extra=st.sampled_from([{}, {"anchors": ["token"]}, {"temporal_intent": "latest"}]),
    want=st.sampled_from([1, 10]),
    explain=st.booleans(),
)
def test_rank_on_the_core_equals_rank_on_the_complete_array(
    admin_conn: Conn,
    seed: int,
    size: int,
    cap: int,
    fusion: dict[str, Any],
    context: tuple[float, int] | None,
    extra: dict[str, Any],
    want: int,
    explain: bool,
) -> None:
    team, ids = corpus(admin_conn)
    rng = random.Random(seed)
    branches: list[str] = []
    chosen: list[uuid.UUID] = []
    ranks: list[int] = []
    for branch in ("fulltext", "vector", "exact"):
        sample = rng.sample(ids, rng.randint(0, size))
        for rank, evidence in enumerate(sample, start=1):
            branches.append(branch)
            chosen.append(evidence)
            ranks.append(rank)
    hits = admin_conn.execute(
        HITS, {"branches": branches, "ids": chosen, "ranks": ranks, "team": team}
    ).fetchone()
    assert hits is not None
    profile: dict[str, Any] = {
        "fusion": fusion,
        "candidates": {"fused": cap},
        "relevance_mix": {"fusion": 0.8, "exact_terms": 0.3},
    }
    if context is not None:
        profile["context"] = {"weight": context[0], "radius": context[1]}
    fused = fetch(admin_conn, team, FUSE, {"hits": hits[0], "settings": Jsonb(profile)})
    if fusion["method"] == "rrf":
        assert fused["best_score"] is not None or fused["core"] == "{}"
    else:
        assert fused["best_score"] is None and fused["core"] == fused["complete"]
    params = {
        "team": team,
        "query": "rotate the certificate",
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00", **extra}),
        "settings": Jsonb(profile),
        "want": want,
        "explain": explain,
    }
    on_core = fetch(
        admin_conn,
        team,
        RANK,
        {**params, "fused": fused["core"], "best": fused["best_score"], "worst": fused["worst_score"]},
    )
    on_complete = fetch(
        admin_conn, team, RANK, {**params, "fused": fused["complete"], "best": None, "worst": None}
    )
    assert on_core == on_complete


def test_the_comparison_sees_a_wrong_end(admin_conn: Conn) -> None:
    """Other ends than fusion's (as the anchor-filtered list would give) change the scores."""
    team, ids = corpus(admin_conn)
    hits = admin_conn.execute(
        HITS, {"branches": ["fulltext"] * 12, "ids": ids[:12], "ranks": list(range(1, 13)), "team": team}
    ).fetchone()
    assert hits is not None
    profile = {"fusion": {"method": "rrf", "rrf_k": 5}}
    fused = fetch(admin_conn, team, FUSE, {"hits": hits[0], "settings": Jsonb(profile)})
    params = {
        "team": team,
        "query": "",
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00"}),
        "settings": Jsonb(profile),
        "want": 10,
        "explain": True,
        "fused": fused["core"],
    }
    right = fetch(
        admin_conn, team, RANK, {**params, "best": fused["best_score"], "worst": fused["worst_score"]}
    )
    complete = fetch(
        admin_conn, team, RANK, {**params, "fused": fused["complete"], "best": None, "worst": None}
    )
    wrong = fetch(
        admin_conn, team, RANK, {**params, "best": fused["best_score"], "worst": fused["worst_score"] / 2}
    )
    assert right == complete
    assert wrong["scored"] != right["scored"]

"""Search-index profile v3 (migration 0062): a team's own partial HNSW index from 1,000 vectors.

v3 is v2 with partial_index_min_rows 1000 (was 10000): on the 1M bench a walk of a 1,000-10,000-vector
team's own graph costs 4.8-5.1 M instructions per vector-branch call where the exact path costs
6.8-27 M (docs/RECALL.md, vector branch, session 9). These tests pin the profile row, check that
dm.refresh_vector_indexes() with no argument takes the threshold from the active profile (a team of
exactly 1,000 vectors gets an index, one of 999 does not), that the bench's --reuse step builds a
missing index once, and that the smallest team that switches still returns what the exact oracle
returns on vectors drawn at random in all 384 dimensions (no cluster structure, the hardest case for
a graph index).
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
from test_recall_support import ingest, make_team

from densemem.bench_recall import refresh_partial_indexes
from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

ORACLE_SQL = """
WITH s AS (SELECT dm_private.recall_settings(%(t)s, NULL) || %(cap)s::jsonb AS s),
     r AS (SELECT dm_private.recall_request('', '{}', s.s) AS r FROM s)
SELECT ARRAY(SELECT h.evidence_id
             FROM s, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, s.s) AS h) AS approx,
       ARRAY(SELECT h.evidence_id
             FROM s, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, s.s, 'exact') AS h)
           AS exact
FROM s
"""


def _gaussian_unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def _team_with_vectors(conn: Conn, name: str, count: int, rng: random.Random) -> uuid.UUID:
    """A team of `count` evidence, each with a current vector drawn at random (one INSERT for all)."""
    team, profile = make_team(conn, name)
    texts = [{"text": f"Observation {i}."} for i in range(count)]
    ids = [
        evidence
        for start in range(0, count, 500)
        for evidence in ingest(conn, team, profile, texts[start : start + 500])
    ]
    vectors = [json.dumps(_gaussian_unit(rng)) for _ in ids]
    conn.execute(
        "INSERT INTO dm_private.document_embeddings "
        "(team_id, document_id, contract_id, document_version, source_version, embedding) "
        "SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version, v.e::halfvec "
        "FROM unnest(%s::uuid[], %s::text[]) AS v (id, e) "
        "JOIN dm_private.search_documents AS d "
        "  ON d.team_id = %s AND d.subject_kind = 'evidence' AND d.subject_id = v.id, "
        "dm_private.embedding_contracts AS c WHERE c.is_active",
        (ids, vectors, team),
    )
    conn.execute(
        "UPDATE dm_private.search_documents SET search_state = 'ready', pending_since = NULL "
        "WHERE team_id = %s AND subject_kind = 'evidence'",
        (team,),
    )
    return team


def test_search_index_profile_v3_is_active_and_differs_from_v2_only_in_the_index_threshold(
    admin_conn: Conn,
) -> None:
    rows = admin_conn.execute(
        "SELECT version, is_active, settings FROM dm_private.search_index_profiles ORDER BY version"
    ).fetchall()
    by_version = {r[0]: (r[1], r[2]) for r in rows}
    assert [v for v, (active, _) in by_version.items() if active] == [3]
    v2, v3 = by_version[2][1], by_version[3][1]
    assert v2["partial_index_min_rows"] == 10000 and v3["partial_index_min_rows"] == 1000
    assert v3["hnsw"] == v2["hnsw"] and v3["hnsw"]["ef_search"] == 150
    v2.pop("partial_index_min_rows")
    v3.pop("partial_index_min_rows")
    assert v2 == v3


def test_refresh_without_argument_indexes_teams_from_the_profile_threshold_and_stays_exact(
    admin_conn: Conn, db_url: str
) -> None:
    rng = random.Random(62)
    at_threshold = _team_with_vectors(admin_conn, "exactly-1000", 1000, rng)
    below = _team_with_vectors(admin_conn, "only-999", 999, rng)
    # the benches' --reuse step (py/densemem/bench_recall.py): builds what is missing, once
    assert refresh_partial_indexes(db_url) == 1
    assert refresh_partial_indexes(db_url) == 0
    registered = admin_conn.execute(
        "SELECT team_id, vector_count, search_index_profile_version FROM dm_private.team_vector_indexes"
    ).fetchall()
    assert [(uuid.UUID(str(t)), n, v) for t, n, v in registered] == [(at_threshold, 1000, 3)]
    paths = {}
    for team in (at_threshold, below):
        with acting_as(admin_conn, Principal(team)) as cur:
            cur.execute("SELECT access_path FROM dm_private.recall_vector_access_path(%s)", (team,))
            row = cur.fetchone()
            assert row is not None
            paths[team] = row["access_path"]
    assert paths == {at_threshold: "hnsw_partial", below: "exact"}
    # the smallest team that switches returns what the exact oracle returns (recall >= 0.98)
    with acting_as(admin_conn, Principal(at_threshold)) as cur:
        for cap in (50, 100):
            total = found = 0
            for _ in range(20):
                cur.execute(
                    ORACLE_SQL,
                    {
                        "t": at_threshold,
                        "q": json.dumps(_gaussian_unit(rng)),
                        "cap": json.dumps({"candidates": {"vector": cap}}),
                    },
                )
                row = cur.fetchone()
                assert row is not None
                assert len(row["exact"]) == cap and len(row["approx"]) == cap
                found += len(set(row["approx"]) & set(row["exact"]))
                total += cap
            print(f"1,000 random vectors, cap {cap}: recall {found / total:.4f}")
            assert found / total >= 0.98, (cap, found / total)

"""The vector branch's two session-8 shortcuts (sql/40_recall_vector_branch.sql) return what they replace.

1. Exact path, unfiltered request: a shorter prefix (cap + cap / 4 + known ids nearest vectors) whose
   answer is kept only when provably exact (every vector seen, or cap survivors with the cap-th strictly
   nearer than the prefix's farthest vector); otherwise the 4 x cap statements run. Checked against an
   oracle written here (every current-version eligible vector, ordered by distance and evidence id)
   on requests that keep the short answer and on requests that must not: a tie of 30 identical vectors
   across the short prefix's end, stale vectors and known ids among the nearest.
2. HNSW path: a per-team walk function (the statement with the team as a literal, one generic plan per
   session) defined by dm.refresh_vector_indexes. Its rows equal the per-call custom plan's (the walk
   function dropped), on the first call and on later calls of the session (the cached plan); only
   densemem_searcher may execute it; redefining it is idempotent.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from test_recall_support import embed, ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

BRANCH_SQL = """
WITH s AS (SELECT dm_private.recall_settings(%(t)s, NULL) AS s),
     v AS (SELECT s.s || jsonb_build_object('candidates', s.s -> 'candidates' || %(cap)s::jsonb) AS s FROM s),
     r AS (SELECT dm_private.recall_request('', %(request)s::jsonb, v.s) AS r FROM v)
SELECT ARRAY(SELECT h.evidence_id::text || ':' || h.branch_rank::text || ':' || h.branch_score::text
             FROM v, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, v.s, %(path)s) AS h
             ORDER BY h.branch_rank) AS hits
"""

# The exact answer by definition: every eligible evidence whose vector matches its document's versions,
# nearest first, ties by evidence id (the same distance expression as the branch: halfvec cosine).
ORACLE_SQL = """
SELECT ARRAY(
    SELECT x.subject_id::text || ':' || (row_number() OVER (ORDER BY x.distance, x.subject_id))::text
           || ':' || x.distance::text
    FROM (SELECT d.subject_id, e.embedding OPERATOR(public.<=>) (%(q)s::vector)::halfvec AS distance
          FROM dm_private.document_embeddings AS e
          JOIN dm_private.search_documents AS d ON d.team_id = e.team_id AND d.document_id = e.document_id
          JOIN dm_private.embedding_contracts AS c ON c.contract_id = e.contract_id AND c.is_active
          WHERE e.team_id = %(t)s AND d.subject_kind = 'evidence' AND d.is_recallable
            AND d.document_version = e.document_version AND d.source_version = e.source_version
            AND NOT d.subject_id = ANY (%(known)s::uuid[])
          ORDER BY distance, d.subject_id
          LIMIT %(n)s) AS x
    ORDER BY x.distance, x.subject_id)
"""


def _unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def _branch(
    conn: Conn, team: uuid.UUID, q: list[float], cap: int, request: dict[str, Any], path: str | None
) -> list[str]:
    with acting_as(conn, Principal(team)) as cur:
        cur.execute(
            BRANCH_SQL,
            {
                "t": team,
                "q": json.dumps(q),
                "cap": json.dumps({"vector": cap}),
                "request": Jsonb(request),
                "path": path,
            },
        )
        row = cur.fetchone()
    assert row is not None
    return list(row["hits"])


def _oracle(conn: Conn, team: uuid.UUID, q: list[float], cap: int, known: list[str]) -> list[str]:
    row = conn.execute(ORACLE_SQL, {"t": team, "q": json.dumps(q), "n": cap, "known": known}).fetchone()
    assert row is not None
    return list(row[0])


def test_short_exact_prefix_returns_the_oracles_rows_and_falls_back_when_it_cannot_prove_them(
    admin_conn: Conn,
) -> None:
    team, profile = make_team(admin_conn, "short-prefix")
    ids = ingest(admin_conn, team, profile, [{"text": f"Note {i}."} for i in range(420)])
    rng = random.Random(71)
    twin = _unit(rng)
    vectors: dict[uuid.UUID, list[float]] = {}
    for i, evidence in enumerate(ids):
        # 30 identical vectors: 30 evidence at the same distance from any query
        vectors[evidence] = twin if i < 30 else _unit(rng)
        embed(admin_conn, team, evidence, vectors[evidence])
    admin_conn.execute("ANALYZE dm_private.document_embeddings")
    nearest_to = ids[200]
    q = [x + 0.02 * y for x, y in zip(vectors[nearest_to], _unit(rng), strict=True)]

    cases: list[tuple[str, list[float], int, list[str]]] = [
        # a plain request: the short prefix (25 of 420) holds the answer
        ("plain", q, 20, []),
        # the 30 twins are the nearest: the 25-vector prefix cuts the tie, the 4 x cap one keeps it whole
        ("tie across the short prefix", twin, 20, []),
        ("tie, cap 50", twin, 50, []),
        # known ids among the nearest: the prefix grows by their number
        ("known ids", q, 20, [str(x) for x in ids[30:45]]),
        ("known twins", twin, 10, [str(x) for x in ids[0:12]]),
        ("random", _unit(rng), 100, []),
    ]
    for name, query, cap, known in cases:
        want = _oracle(admin_conn, team, query, cap, known)
        assert len(want) == cap, name
        request = {"known_evidence_ids": known} if known else {}
        assert _branch(admin_conn, team, query, cap, request, None) == want, name
        assert _branch(admin_conn, team, query, cap, request, "exact") == want, name

    # stale vectors among the nearest: the short prefix keeps fewer than cap, the branch falls back
    stale = [e for e in ids[30:] if e != nearest_to][:40]
    for evidence in stale:
        embed(admin_conn, team, evidence, [x + 0.001 * y for x, y in zip(q, _unit(rng), strict=True)])
    admin_conn.execute(
        "UPDATE dm_private.document_embeddings SET document_version = document_version + 100 "
        "WHERE team_id = %s AND document_id IN (SELECT document_id FROM dm_private.search_documents "
        "WHERE team_id = %s AND subject_id = ANY (%s))",
        (team, team, stale),
    )
    want = _oracle(admin_conn, team, q, 20, [])
    assert not {w.split(":")[0] for w in want} & {str(s) for s in stale}
    assert _branch(admin_conn, team, q, 20, {}, None) == want


def test_walk_function_returns_the_per_call_plans_rows(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "walk-function")
    types = ["conversation", "workflow", "episodic"]
    ids = ingest(
        admin_conn,
        team,
        profile,
        [{"text": f"Entry {i}.", "memory_type": types[i % 3]} for i in range(600)],
    )
    rng = random.Random(83)
    for evidence in ids:
        embed(admin_conn, team, evidence, _unit(rng))
    built = admin_conn.execute("SELECT team_id, index_name FROM dm.refresh_vector_indexes(500)").fetchall()
    assert [uuid.UUID(str(r[0])) for r in built] == [team]
    walk = f"{built[0][1]}_walk"
    admin_conn.execute("ANALYZE dm_private.document_embeddings")
    admin_conn.execute("ANALYZE dm_private.search_documents")

    row = admin_conn.execute(
        "SELECT p.proowner::regrole::text, p.proconfig, "
        "has_function_privilege('densemem_app', p.oid, 'EXECUTE'), "
        "has_function_privilege('densemem_analyst', p.oid, 'EXECUTE') "
        "FROM pg_proc AS p WHERE p.proname = %s AND p.pronamespace = 'dm_private'::regnamespace",
        (walk,),
    ).fetchone()
    assert row is not None
    owner, config, app_may, analyst_may = row
    assert owner == "densemem_searcher"
    assert "plan_cache_mode=force_generic_plan" in config
    assert not app_may and not analyst_may

    queries = [_unit(rng) for _ in range(6)]
    requests: list[tuple[int, dict[str, Any]]] = [
        (100, {}),
        (20, {}),
        (50, {"known_evidence_ids": [str(x) for x in ids[:200:7]]}),
        (30, {"filters": {"memory_type": ["conversation", "workflow"]}}),
        (40, {"valid_at": "2000-01-01T00:00:00Z"}),
    ]

    def run_all() -> list[list[str]]:
        out = []
        for query in queries:
            for cap, request in requests:
                out.append(_branch(admin_conn, team, query, cap, request, None))
                out.append(_branch(admin_conn, team, query, cap, request, "hnsw_partial"))
        return out

    # the same connection twice: first calls plan, later ones reuse the session's generic plan
    with_walk = run_all()
    assert run_all() == with_walk
    assert any(len(hits) == 100 for hits in with_walk)
    # redefining is idempotent
    admin_conn.execute(
        "SELECT dm_private.recall_vector_define_walk(t.team_id, t.contract_id, c.dimensions, t.index_name) "
        "FROM dm_private.team_vector_indexes AS t "
        "JOIN dm_private.embedding_contracts AS c USING (contract_id) "
        "WHERE t.team_id = %s",
        (team,),
    )
    assert run_all() == with_walk
    # without the walk function the branch plans its static statement on every call: same rows
    admin_conn.execute(
        f"DROP FUNCTION dm_private.{walk}(halfvec, integer, timestamptz, timestamptz, text[], text[], "
        "text[], timestamptz, timestamptz, boolean, timestamptz, timestamptz, uuid[], uuid[])"
    )
    assert run_all() == with_walk

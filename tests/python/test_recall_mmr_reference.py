"""recall_mmr against the reference algorithm it replaced (session 4).

recall_mmr computes each similarity where it uses it, from the pool's vectors
(dm_private.recall_pool_vectors), and merges the max-similarity update of a
greedy step into the pass that finds the next pick. The reference below is
the previous recall_mmr, verbatim in its algorithm: the full similarity matrix
from dm_private.recall_similarity_matrix, the collapse loop, then for each pick
one pass to choose and one to update. Both must return the same rows, bit for
bit (the float columns compared as text), on pools with exact duplicates,
near duplicates by vector, documents without a current vector (trigram
similarity of the heads) and any lambda, duplicate threshold, pool size and
number of picks.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from test_recall_support import embed, ingest, make_team, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

REFERENCE = r"""
CREATE FUNCTION pg_temp.reference_mmr(team_id uuid, scored dm_private.recall_scored [], settings jsonb,
    want integer)
RETURNS TABLE (evidence_id uuid, document_id uuid, mmr_rank integer, mmr_value double precision,
    max_similarity double precision, collapsed_into uuid)
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    lambda double precision := COALESCE((settings #>> '{mmr,lambda}')::double precision, 0.7);
    duplicate_at double precision :=
        COALESCE((settings #>> '{mmr,duplicate_similarity}')::double precision, 0.97);
    pool_size integer := COALESCE((settings #>> '{mmr,pool}')::integer, 30);
    pool dm_private.recall_scored [];
    n integer;
    sim double precision [];
    scores double precision [];
    keys bigint [];
    ids uuid [];
    best_score double precision;
    alive boolean [];
    picked boolean [];
    collapsed uuid [];
    max_sim double precision [];
    rank_of integer [];
    value_of double precision [];
    picked_count integer := 0;
    i integer;
    j integer;
    best integer;
    best_value double precision;
    candidate_value double precision;
BEGIN
    pool := scored[1:GREATEST(LEAST(pool_size, 2 * want), want + 10)];
    n := COALESCE(pg_catalog.cardinality(pool), 0);
    IF n = 0 THEN
        RETURN;
    END IF;
    sim := dm_private.recall_similarity_matrix(
        reference_mmr.team_id, ARRAY(SELECT p.document_id FROM pg_catalog.unnest(pool) AS p));
    scores := ARRAY(SELECT p.score FROM pg_catalog.unnest(pool) AS p);
    keys := ARRAY(SELECT pg_catalog.hashtextextended(p.body_key, 0) FROM pg_catalog.unnest(pool) AS p);
    ids := ARRAY(SELECT p.evidence_id FROM pg_catalog.unnest(pool) AS p);
    best_score := GREATEST(scores[1], 1e-9);
    alive := pg_catalog.array_fill(true, ARRAY[n]);
    picked := pg_catalog.array_fill(false, ARRAY[n]);
    collapsed := pg_catalog.array_fill(NULL::uuid, ARRAY[n]);
    max_sim := pg_catalog.array_fill(0::double precision, ARRAY[n]);
    rank_of := pg_catalog.array_fill(NULL::integer, ARRAY[n]);
    value_of := pg_catalog.array_fill(NULL::double precision, ARRAY[n]);
    FOR i IN 2..n LOOP
        FOR j IN 1..i - 1 LOOP
            IF alive[j] AND (keys[i] = keys[j] OR sim[(i - 1) * n + j] >= duplicate_at) THEN
                alive[i] := false;
                collapsed[i] := ids[j];
                EXIT;
            END IF;
        END LOOP;
    END LOOP;
    WHILE picked_count < LEAST(want, n) LOOP
        best := NULL;
        FOR i IN 1..n LOOP
            CONTINUE WHEN NOT alive[i] OR picked[i];
            candidate_value := lambda * scores[i] / best_score - (1 - lambda) * max_sim[i];
            IF best IS NULL OR candidate_value > best_value THEN
                best := i;
                best_value := candidate_value;
            END IF;
        END LOOP;
        EXIT WHEN best IS NULL;
        picked[best] := true;
        picked_count := picked_count + 1;
        rank_of[best] := picked_count;
        value_of[best] := best_value;
        FOR i IN 1..n LOOP
            IF alive[i] AND NOT picked[i] AND sim[(i - 1) * n + best] > max_sim[i] THEN
                max_sim[i] := sim[(i - 1) * n + best];
            END IF;
        END LOOP;
    END LOOP;
    FOR i IN 1..n LOOP
        IF alive[i] AND NOT picked[i] THEN
            picked_count := picked_count + 1;
            rank_of[i] := picked_count;
        END IF;
    END LOOP;
    RETURN QUERY
        SELECT p.evidence_id, p.document_id, rank_of[p.ordinality::integer], value_of[p.ordinality::integer],
               max_sim[p.ordinality::integer], collapsed[p.ordinality::integer]
        FROM pg_catalog.unnest(pool) WITH ORDINALITY AS p
        ORDER BY rank_of[p.ordinality::integer] NULLS LAST, p.ordinality;
END
$$;
"""

WORDS = [
    "rotate",
    "certificate",
    "deploy",
    "cache",
    "replica",
    "latency",
    "token",
    "backup",
    "schema",
    "alert",
]

# the scored candidates of a permutation of the team's evidence, with scores
# falling in that order (recall_mmr's input is ordered by score)
SCORED = """
SELECT pg_catalog.array_agg(ROW(d.document_id, d.subject_id, 0.5, 0.5, 0.5, 0.5, 0, 1, 0, 0, 0, 0,
           s.score, pg_catalog.octet_length(d.body), pg_catalog.md5(d.body), NULL, NULL, NULL, NULL,
           s.ord)::dm_private.recall_scored ORDER BY s.ord)
FROM ROWS FROM (pg_catalog.unnest(%(ids)s::uuid []), pg_catalog.unnest(%(scores)s::double precision []))
     WITH ORDINALITY AS s (id, score, ord)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = s.id
"""


def build_corpus(conn: Conn) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """40 evidence texts: exact duplicates, vectors on shared axes (near duplicates by vector), and a
    quarter without any vector (their similarity is trigram similarity of the texts)."""
    team, profile = make_team(conn, "mmr-reference")
    rng = random.Random(7)
    texts: list[str] = []
    for i in range(40):
        if i % 9 == 4:
            texts.append(texts[i - 1])  # an exact duplicate of the previous text
        else:
            texts.append(f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + ".")
    ids = ingest(conn, team, profile, [{"text": t} for t in texts])
    for i, evidence in enumerate(ids):
        if i % 4 == 3:
            continue  # no current vector
        axis = rng.randint(0, 5)
        vector = unit((axis, 1.0)) if i % 5 == 0 else unit((axis, 1.0), (6 + i % 7, rng.uniform(0.05, 0.9)))
        embed(conn, team, evidence, vector)
    return team, ids


def run(
    conn: Conn, team: uuid.UUID, function: str, scored: Any, profile: dict[str, Any], want: int
) -> list[str]:
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(
            f"SELECT m::text AS row FROM {function}(%s, %s::dm_private.recall_scored [], %s, %s) AS m",
            (team, scored, Jsonb(profile), want),
        )
        return [str(r["row"]) for r in cur.fetchall()]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=0, max_value=40),
    want=st.integers(min_value=0, max_value=25),
    lam=st.sampled_from([0.0, 0.3, 0.7, 0.9, 1.0]),
    duplicate_at=st.sampled_from([0.5, 0.8, 0.97, 1.0, 1.5]),
    pool=st.sampled_from([5, 20, 30, 60]),
)
def test_recall_mmr_equals_the_reference(
    admin_conn: Conn, seed: int, size: int, want: int, lam: float, duplicate_at: float, pool: int
) -> None:
    if admin_conn.execute(
        "SELECT to_regprocedure('pg_temp.reference_mmr(uuid, dm_private.recall_scored[], jsonb, integer)')"
    ).fetchone() == (None,):
        admin_conn.execute(REFERENCE)
    row = admin_conn.execute("SELECT team_id FROM dm_private.teams WHERE name = 'mmr-reference'").fetchone()
    if row is None:
        team, ids = build_corpus(admin_conn)
    else:
        team = row[0]
        ids = [
            r[0]
            for r in admin_conn.execute(
                "SELECT evidence_id FROM dm_private.evidence WHERE team_id = %s ORDER BY evidence_id", (team,)
            )
        ]
    rng = random.Random(seed)
    chosen = rng.sample(ids, min(size, len(ids)))
    scores = sorted((rng.uniform(0.0, 1.2) for _ in chosen), reverse=True)
    scored_row = admin_conn.execute(SCORED, {"ids": chosen, "scores": scores, "team": team}).fetchone()
    assert scored_row is not None
    profile = {"mmr": {"lambda": lam, "duplicate_similarity": duplicate_at, "pool": pool}}
    expected = run(admin_conn, team, "pg_temp.reference_mmr", scored_row[0], profile, want)
    got = run(admin_conn, team, "dm_private.recall_mmr", scored_row[0], profile, want)
    assert got == expected


def test_the_reference_comparison_sees_collapses_and_text_similarity(admin_conn: Conn) -> None:
    """The corpus exercises both similarity paths and the collapse: otherwise the comparison above
    could pass while never reaching them."""
    admin_conn.execute(REFERENCE)
    team, ids = build_corpus(admin_conn)
    scored = admin_conn.execute(
        SCORED, {"ids": ids, "scores": [1.0 - i / 100 for i in range(len(ids))], "team": team}
    ).fetchone()
    assert scored is not None
    profile = {"mmr": {"lambda": 0.7, "duplicate_similarity": 0.97, "pool": 60}}
    rows = run(admin_conn, team, "dm_private.recall_mmr", scored[0], profile, 30)
    assert rows == run(admin_conn, team, "pg_temp.reference_mmr", scored[0], profile, 30)
    collapsed = [r for r in rows if not r.endswith(",)")]
    assert collapsed, "no candidate collapsed"
    with acting_as(admin_conn, Principal(team, None)) as cur:
        cur.execute(
            "SELECT v.heads IS NOT NULL AS with_heads, "
            "pg_catalog.array_position(v.embeddings, NULL) IS NOT NULL AS missing "
            "FROM dm_private.recall_pool_vectors(%s, ARRAY(SELECT d.document_id "
            "FROM dm_private.search_documents AS d WHERE d.team_id = %s)) AS v",
            (team, team),
        )
        vectors = cur.fetchone()
    assert vectors == {"with_heads": True, "missing": True}

"""dm_private.recall_rank (what recall_run calls) against the stages it replaces (session 5).

recall_rank scores the fused candidates, applies the neighbouring-turn lift and
runs MMR in one function on arrays. It must return exactly what the stages a
DBA calls return: recall_rerank(..., with_context) for the scored rows, and
recall_mmr on those rows for the MMR order and rows, bit for bit (floats
compared as text), whatever the profile (lambda, duplicate threshold, pool,
context weight and radius, relevance mix), the number of picks and the
candidates: exact duplicates, near duplicates by vector, documents without a
vector (trigram similarity), neighbouring turns of one source group, and
candidates the anchors drop. Without explain it returns the same order.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from test_recall_support import embed, ingest, make_team, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

WORDS = ["rotate", "certificate", "deploy", "cache", "replica", "latency", "token", "backup", "schema"]

# fused candidates of a sample of the team's evidence, in a given fusion order
FUSED = """
SELECT pg_catalog.array_agg(ROW(d.document_id, d.subject_id, s.relevance, s.relevance,
           CASE WHEN s.ord %% 2 = 0 THEN s.ord::integer END,
           CASE WHEN s.ord %% 3 <> 0 THEN s.ord::integer END,
           NULL, s.ord::integer, NULL)::dm_private.recall_fused ORDER BY s.ord)
FROM ROWS FROM (pg_catalog.unnest(%(ids)s::uuid []), pg_catalog.unnest(%(rel)s::double precision []))
     WITH ORDINALITY AS s (id, relevance, ord)
JOIN dm_private.search_documents AS d
  ON d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.subject_id = s.id
"""

STAGES = """
WITH scored AS (
    SELECT pg_catalog.array_agg(s ORDER BY s.score_rank) AS rows
    FROM dm_private.recall_rerank(%(team)s, %(query)s, %(fused)s::dm_private.recall_fused [], %(req)s,
                                  %(settings)s, '{}', true) AS s
)
SELECT (SELECT scored.rows::text FROM scored) AS scored,
       (SELECT pg_catalog.array_agg(m.evidence_id ORDER BY m.mmr_rank) FILTER (WHERE m.mmr_rank IS NOT NULL)
        FROM scored, dm_private.recall_mmr(%(team)s, scored.rows, %(settings)s, %(want)s) AS m)
           AS ordered_ids,
       (SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(m) ORDER BY m.mmr_rank NULLS LAST)::text
        FROM scored, dm_private.recall_mmr(%(team)s, scored.rows, %(settings)s, %(want)s) AS m) AS mmr_rows
"""

RANK = """
SELECT r.scored::text AS scored, COALESCE(r.ordered_ids, '{}') AS ordered_ids, r.mmr_rows::text AS mmr_rows
FROM dm_private.recall_rank(%(team)s, %(query)s, %(fused)s::dm_private.recall_fused [], %(req)s, %(settings)s,
                            '{}', true, %(want)s, %(explain)s) AS r
"""


def build_corpus(conn: Conn) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """48 evidence texts in three conversations (neighbouring turns), with exact duplicates, vectors on
    shared axes (near duplicates by vector) and a quarter without any vector (trigram similarity)."""
    team, profile = make_team(conn, "rank-reference")
    rng = random.Random(11)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    items: list[dict[str, Any]] = []
    for i in range(48):
        if i % 9 == 4:
            text = items[i - 1]["text"]  # an exact duplicate of the previous text
        else:
            text = f"Turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + "."
        items.append(
            {
                "text": text,
                "memory_type": "conversation" if i % 5 else "episodic",
                "importance": round(rng.uniform(0.1, 0.9), 2),
                "created_at": (start + timedelta(hours=i * 7)).isoformat(),
                "source": {
                    "external_id": f"turn-{i}",
                    "kind": "message",
                    "source_group": f"session-{i // 16}",
                },
            }
        )
    ids = ingest(conn, team, profile, items)
    for i, evidence in enumerate(ids):
        if i % 4 == 3:
            continue  # no current vector
        axis = rng.randint(0, 5)
        vector = unit((axis, 1.0)) if i % 5 == 0 else unit((axis, 1.0), (6 + i % 7, rng.uniform(0.05, 0.9)))
        embed(conn, team, evidence, vector)
    return team, ids


def corpus(conn: Conn) -> tuple[uuid.UUID, list[uuid.UUID]]:
    row = conn.execute("SELECT team_id FROM dm_private.teams WHERE name = 'rank-reference'").fetchone()
    if row is None:
        return build_corpus(conn)
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT evidence_id FROM dm_private.evidence WHERE team_id = %s ORDER BY evidence_id", (row[0],)
        )
    ]
    return row[0], ids


def sampled_fused(
    conn: Conn, team: uuid.UUID, ids: list[uuid.UUID], rng: random.Random, size: int
) -> tuple[list[uuid.UUID], Any]:
    """`size` of the team's evidence drawn by `rng` (at most all of it) and their fused list, relevance
    drawn in [0, 1] and descending: the property tests' input."""
    chosen = rng.sample(ids, min(size, len(ids)))
    relevance = sorted((rng.uniform(0.0, 1.0) for _ in chosen), reverse=True)
    row = conn.execute(FUSED, {"ids": chosen, "rel": relevance, "team": team}).fetchone()
    assert row is not None
    return chosen, row[0]


def ordered_fused(conn: Conn, team: uuid.UUID, ids: list[uuid.UUID]) -> Any:
    """The fused list of `ids` in their order, relevance falling by 0.01 a place."""
    relevance = [1.0 - i / 100 for i in range(len(ids))]
    row = conn.execute(FUSED, {"ids": ids, "rel": relevance, "team": team}).fetchone()
    assert row is not None
    return row[0]


def fetch(conn: Conn, team: uuid.UUID, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    with acting_as(conn, Principal(team, None)) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    assert row is not None
    return dict(row)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# found by hypothesis (session 16): with the scored rows, the collapse test counted the distinct keys of every
# candidate, not of the pool's 11, so a duplicate pair inside the pool (positions 5 and 6) was not collapsed
@example(
    seed=10,
    size=27,
    want=1,
    lam=0.0,
    duplicate_at=1.5,
    pool=5,
    context=None,
    query="rotate the certificate",
    extra={},
    exact=0.3,
)
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=0, max_value=48),
    want=st.integers(min_value=1, max_value=25),
    lam=st.sampled_from([0.0, 0.5, 0.7, 0.9, 1.0]),
    duplicate_at=st.sampled_from([0.5, 0.8, 0.97, 1.5]),
    pool=st.sampled_from([5, 20, 30, 60]),
    context=st.sampled_from([None, (0.0, 1), (0.3, 2), (1.0, 5)]),
    query=st.sampled_from(["rotate the certificate", "cache latency", "", "backup"]),
    extra=st.sampled_from(
        [{}, {"temporal_intent": "latest"}, {"phrases": ["deploy cache"]}, {"anchors": ["token"]}]
    ),
    # 0: without explain, recall_rank does not parse the all-terms query (nothing reads it)
    exact=st.sampled_from([0.3, 0.0]),
)
def test_recall_rank_equals_rerank_then_mmr(
    admin_conn: Conn,
    seed: int,
    size: int,
    want: int,
    lam: float,
    duplicate_at: float,
    pool: int,
    context: tuple[float, int] | None,
    query: str,
    extra: dict[str, Any],
    exact: float,
) -> None:
    team, ids = corpus(admin_conn)
    _, fused = sampled_fused(admin_conn, team, ids, random.Random(seed), size)
    profile: dict[str, Any] = {
        "mmr": {"lambda": lam, "duplicate_similarity": duplicate_at, "pool": pool},
        "relevance_mix": {"fusion": 0.8, "phrase": 0.1, "exact_terms": exact, "content": 0.3},
        "half_life_days": {"conversation": 2, "episodic": 90},
    }
    if context is not None:
        profile["context"] = {"weight": context[0], "radius": context[1]}
    req = {"now": "2026-01-20T00:00:00+00:00", **extra}
    params = {
        "team": team,
        "query": query,
        "fused": fused,
        "req": Jsonb(req),
        "settings": Jsonb(profile),
        "want": want,
    }
    expected = fetch(admin_conn, team, STAGES, params)
    explained = fetch(admin_conn, team, RANK, {**params, "explain": True})
    plain = fetch(admin_conn, team, RANK, {**params, "explain": False})
    if expected["scored"] is None:
        expected["scored"] = "{}"
    if expected["ordered_ids"] is None:
        expected["ordered_ids"] = []
    assert explained == expected
    assert plain["ordered_ids"] == expected["ordered_ids"]
    assert plain["scored"] is None and plain["mmr_rows"] is None


def test_the_comparison_sees_collapses_lifts_and_text_similarity(admin_conn: Conn) -> None:
    """The corpus reaches the collapse (exact and by vector), the text similarity of documents without a
    vector and the context lift: otherwise the comparison above could pass while never reaching them."""
    team, ids = corpus(admin_conn)
    fused = ordered_fused(admin_conn, team, ids)
    profile = {"mmr": {"lambda": 0.7, "duplicate_similarity": 0.97, "pool": 60}, "context": {"weight": 0.5}}
    params = {
        "team": team,
        "query": "cache",
        "fused": fused,
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00"}),
        "settings": Jsonb(profile),
        "want": 30,
        "explain": True,
    }
    got = fetch(admin_conn, team, RANK, params)
    assert got == fetch(admin_conn, team, STAGES, params)
    assert '"collapsed_into": null' in got["mmr_rows"]
    assert got["mmr_rows"].count('"collapsed_into": "') >= 2, "no candidate collapsed"
    lifted = fetch(
        admin_conn,
        team,
        "SELECT pg_catalog.count(*) FILTER (WHERE a.score <> b.score) AS lifted "
        "FROM dm_private.recall_rerank(%(team)s, %(query)s, %(fused)s::dm_private.recall_fused [], %(req)s, "
        "%(settings)s, '{}', true) AS a "
        "JOIN dm_private.recall_rerank(%(team)s, %(query)s, %(fused)s::dm_private.recall_fused [], %(req)s, "
        "%(settings)s, '{}', false) AS b ON b.evidence_id = a.evidence_id",
        params,
    )
    assert lifted["lifted"] > 0, "the context lift changed no score"
    missing = fetch(
        admin_conn,
        team,
        "SELECT pg_catalog.count(*) FILTER (WHERE e.document_id IS NULL) AS missing "
        "FROM dm_private.search_documents AS d LEFT JOIN dm_private.document_embeddings AS e "
        "ON e.team_id = d.team_id AND e.document_id = d.document_id WHERE d.team_id = %(team)s",
        params,
    )
    assert missing["missing"] > 0, "every document has a vector: the text similarity is never used"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=1, max_value=48),
    context=st.sampled_from([None, (0.3, 2), (1.0, 5)]),
    query=st.sampled_from(["rotate the certificate", "cache latency", ""]),
    extra=st.sampled_from(
        [
            {},
            {"phrases": ["deploy cache"]},
            {"anchors": ["token"]},
            {"temporal_intent": "latest"},
            {"temporal_intent": "earliest", "phrases": ["cache"]},
        ]
    ),
    blocker=st.sampled_from(["usage", "support"]),
)
def test_statement_without_usage_support_temporal_equals_the_full_one(
    admin_conn: Conn,
    seed: int,
    size: int,
    context: tuple[float, int] | None,
    query: str,
    extra: dict[str, Any],
    blocker: str,
) -> None:
    """The team has no usage snapshot and no relationship evidence, so recall_rank scores with a statement
    that has no usage or support joins (and, with a temporal intent, the temporal signal as a window in the
    signals, not a joined CTE). Adding an empty usage snapshot (or relationship evidence of a non-candidate)
    to the team forces the full statement, whose usage/support CTEs are then empty: every byte of the answer
    must be the same."""
    team, ids = corpus(admin_conn)
    rng = random.Random(seed)
    chosen = rng.sample(ids, min(size, len(ids) - 1))
    outsider = next(e for e in ids if e not in chosen)
    relevance = sorted((rng.uniform(0.0, 1.0) for _ in chosen), reverse=True)
    fused = admin_conn.execute(FUSED, {"ids": chosen, "rel": relevance, "team": team}).fetchone()
    assert fused is not None
    profile: dict[str, Any] = {
        "mmr": {"lambda": 0.7, "duplicate_similarity": 0.97, "pool": 30},
        "relevance_mix": {"fusion": 0.8, "phrase": 0.1, "exact_terms": 0.3, "content": 0.3},
        "half_life_days": {"conversation": 2, "episodic": 90},
        "support_weight": 0.3,
    }
    if context is not None:
        profile["context"] = {"weight": context[0], "radius": context[1]}
    params = {
        "team": team,
        "query": query,
        "fused": fused[0],
        "req": Jsonb({"now": "2026-01-20T00:00:00+00:00", **extra}),
        "settings": Jsonb(profile),
        "want": 10,
        "explain": True,
    }
    with admin_conn.transaction(force_rollback=True):
        assert admin_conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM dm_private.usage_snapshots WHERE team_id = %(t)s) "
            "AND NOT EXISTS (SELECT 1 FROM dm_private.relationship_evidence WHERE team_id = %(t)s)",
            {"t": team},
        ).fetchone() == (True,)
        plain = fetch(admin_conn, team, RANK, params)
        admin_conn.execute("RESET ROLE")  # acting_as set the role for the rest of the transaction
        if blocker == "usage":
            admin_conn.execute("INSERT INTO dm_private.usage_snapshots (team_id) VALUES (%s)", (team,))
        else:
            add_relationship_evidence(admin_conn, team, outsider)
        full = fetch(admin_conn, team, RANK, params)
    assert plain == full
    if "anchors" not in extra:  # the anchor may drop every candidate
        assert plain["scored"] not in (None, "{}")


def add_relationship_evidence(conn: Conn, team: uuid.UUID, evidence: uuid.UUID) -> None:
    """Relationship evidence in the team for a non-candidate (no relationship row: foreign keys are off for
    the enclosing, rolled-back transaction), so the team is no longer free of relationship evidence."""
    conn.execute("SET LOCAL session_replication_role = replica")
    conn.execute(
        "INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id) "
        "VALUES (%s, %s, %s)",
        (team, uuid.uuid4(), evidence),
    )
    conn.execute("SET LOCAL session_replication_role = origin")

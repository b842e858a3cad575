"""Fusion as an array (recall_fuse_array, what recall_run calls) against the set form and a reference.

recall_fuse_array folds the unknown-branch check into the fusion statement and
aggregates the fused rows in one pass; dm_private.recall_fuse returns its
rows. The reference below is the fusion statement as it stood before (three
CTEs, a kept set, RETURN QUERY): every field of every row must be equal, for
RRF and branch priority, caps below and above the candidate count, repeated
hits, ties, and hits without an evidence id.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
import pytest

Conn = psycopg.Connection[Any]

REFERENCE = """
WITH hits AS (
    SELECT h.* FROM pg_catalog.unnest(%(hits)s::dm_private.recall_branch_hit []) AS h
),
prio AS (
    SELECT ARRAY(SELECT pg_catalog.jsonb_array_elements_text(
               CASE WHEN pg_catalog.jsonb_typeof(s #> '{fusion,branch_priority}') = 'array'
                    THEN s #> '{fusion,branch_priority}' ELSE '[]'::jsonb END)) AS p,
           s
    FROM (SELECT %(settings)s::jsonb AS s) AS x
),
cfg AS (
    SELECT COALESCE((s #>> '{fusion,rrf_k}')::double precision, 60) AS k,
           COALESCE(s #>> '{fusion,method}', 'rrf') = 'priority' AS by_priority,
           COALESCE((s #>> '{candidates,fused}')::integer, 100) AS cap,
           COALESCE((s #> '{fusion,branch_weights}' ->> 'fulltext')::double precision, 1.0) AS w_fulltext,
           COALESCE((s #> '{fusion,branch_weights}' ->> 'vector')::double precision, 1.0) AS w_vector,
           COALESCE((s #> '{fusion,branch_weights}' ->> 'exact')::double precision, 1.0) AS w_exact,
           COALESCE(pg_catalog.array_position(p, 'fulltext'), 1000)::bigint AS p_fulltext,
           COALESCE(pg_catalog.array_position(p, 'vector'), 1000)::bigint AS p_vector,
           COALESCE(pg_catalog.array_position(p, 'exact'), 1000)::bigint AS p_exact
    FROM prio
),
per_evidence AS (
    SELECT h.evidence_id, pg_catalog.any_value(h.document_id) AS document_id,
           pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'fulltext') AS fulltext_rank,
           pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'vector') AS vector_rank,
           pg_catalog.min(h.branch_rank) FILTER (WHERE h.branch = 'exact') AS exact_rank
    FROM hits AS h WHERE h.evidence_id IS NOT NULL GROUP BY h.evidence_id
),
scored AS (
    SELECT e.*,
           COALESCE(c.w_fulltext / (c.k + e.fulltext_rank), 0) + COALESCE(c.w_exact / (c.k + e.exact_rank), 0)
           + COALESCE(c.w_vector / (c.k + e.vector_rank), 0) AS rrf,
           LEAST(c.p_fulltext * 1000000 + e.fulltext_rank, c.p_vector * 1000000 + e.vector_rank,
                 c.p_exact * 1000000 + e.exact_rank) AS priority_key
    FROM per_evidence AS e CROSS JOIN cfg AS c
),
ordered AS (
    SELECT e.*,
           pg_catalog.row_number() OVER (
               ORDER BY CASE WHEN c.by_priority THEN e.priority_key::double precision ELSE -e.rrf END,
                        e.evidence_id) AS position,
           pg_catalog.count(*) OVER () AS total,
           pg_catalog.max(e.rrf) OVER () AS best_rrf
    FROM scored AS e CROSS JOIN cfg AS c
),
kept AS (
    SELECT o.*, pg_catalog.min(o.rrf) OVER () AS worst_rrf
    FROM ordered AS o CROSS JOIN cfg AS c WHERE o.position <= c.cap
)
SELECT o.document_id, o.evidence_id,
       CASE WHEN c.by_priority THEN (o.total - o.position + 1)::double precision / o.total ELSE o.rrf END,
       CASE WHEN c.by_priority THEN (o.total - o.position + 1)::double precision / o.total
            WHEN o.best_rrf = o.worst_rrf THEN 1.0
            ELSE (o.rrf - o.worst_rrf) / (o.best_rrf - o.worst_rrf) END,
       o.fulltext_rank::integer, o.vector_rank::integer, o.exact_rank::integer, o.position::integer
FROM kept AS o CROSS JOIN cfg AS c
ORDER BY o.position
"""


def _hits(rng: random.Random, evidence: list[uuid.UUID], branches: tuple[str, ...]) -> str:
    """A recall_branch_hit[] literal: each branch ranks a sample, some hits repeated, a few NULL ids."""
    rows: list[tuple[str, uuid.UUID | None, int]] = []
    for branch in branches:
        chosen = rng.sample(evidence, rng.randint(0, len(evidence)))
        for rank, ev in enumerate(chosen, start=1):
            rows.append((branch, ev, rank))
            if rng.random() < 0.1:  # the same evidence again, at a worse rank
                rows.append((branch, ev, rank + rng.randint(1, 5)))
        if rng.random() < 0.2:
            rows.append((branch, None, 1))
    rng.shuffle(rows)
    parts = []
    for branch_name, hit_evidence, hit_rank in rows:
        ev_text = "" if hit_evidence is None else str(hit_evidence)
        doc_text = "" if hit_evidence is None else str(uuid.uuid5(uuid.NAMESPACE_OID, ev_text))
        parts.append(f'"({branch_name},{doc_text},{ev_text},{hit_rank},{rng.random()},)"')
    return "{" + ",".join(parts) + "}"


FIELDS = (
    "f.document_id, f.evidence_id, f.fused_score, f.relevance, f.fulltext_rank, f.vector_rank, "
    "f.exact_rank, f.fusion_rank"
)

SETTINGS = [
    {},
    {"fusion": {"method": "rrf", "rrf_k": 60}},
    {"fusion": {"method": "rrf", "rrf_k": 1, "branch_weights": {"exact": 2.0, "vector": 0.5}}},
    {"fusion": {"method": "rrf", "rrf_k": 60}, "candidates": {"fused": 7}},
    {"fusion": {"method": "priority", "branch_priority": ["vector", "fulltext"]}},
    {
        "fusion": {"method": "priority", "branch_priority": ["exact", "fulltext", "vector"]},
        "candidates": {"fused": 5},
    },
    {"fusion": {"method": "priority"}},
    {"fusion": {"method": "rrf"}, "candidates": {"fused": 1}},
    # session 9: RRF cuts the grouped rows to the cap before its window; a
    # cap of 0 keeps nothing, a cap near the candidate count cuts a few
    {"fusion": {"method": "rrf"}, "candidates": {"fused": 0}},
    {"fusion": {"method": "rrf", "rrf_k": 1}, "candidates": {"fused": 20}},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=[json.dumps(s, sort_keys=True) for s in SETTINGS])
def test_array_form_equals_set_form_and_reference(admin_conn: Conn, settings: dict[str, Any]) -> None:
    rng = random.Random(json.dumps(settings, sort_keys=True))
    for trial in range(25):
        evidence = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 40))]
        if trial % 5 == 0:  # ties: few evidence, one branch, equal ranks happen through repeats
            evidence = evidence[:3]
        hits = _hits(rng, evidence, ("fulltext", "vector", "exact")[: rng.randint(1, 3)])
        args = {"hits": hits, "settings": json.dumps(settings)}
        reference = admin_conn.execute(REFERENCE, args).fetchall()
        as_set = admin_conn.execute(
            f"SELECT {FIELDS} FROM dm_private.recall_fuse(%(hits)s::dm_private.recall_branch_hit [], "
            "%(settings)s::jsonb) AS f",
            args,
        ).fetchall()
        as_array = admin_conn.execute(
            f"SELECT {FIELDS} FROM pg_catalog.unnest(dm_private.recall_fuse_array("
            "%(hits)s::dm_private.recall_branch_hit [], %(settings)s::jsonb)) WITH ORDINALITY AS f",
            args,
        ).fetchall()
        assert as_array == reference
        assert as_set == reference


def test_no_hits_fuse_to_an_empty_array(admin_conn: Conn) -> None:
    row = admin_conn.execute(
        "SELECT pg_catalog.cardinality(dm_private.recall_fuse_array("
        "'{}'::dm_private.recall_branch_hit [], '{}')), "
        "(SELECT count(*) FROM dm_private.recall_fuse('{}'::dm_private.recall_branch_hit [], '{}'))"
    ).fetchone()
    assert row is not None
    assert row[0] == 0  # an empty array, not NULL
    assert row[1] == 0


@pytest.mark.parametrize(
    "settings", ["{}", '{"candidates": {"fused": 0}}', '{"fusion": {"method": "priority"}}']
)
@pytest.mark.parametrize("function", ["recall_fuse_array", "recall_fuse"])
def test_unknown_branch_is_refused_even_when_cut_by_the_cap(
    admin_conn: Conn, settings: str, function: str
) -> None:
    hits = (
        '{"(fulltext,00000000-0000-0000-0000-0000000000d1,00000000-0000-0000-0000-0000000000e1,1,0.5,)",'
        '"(keyword,00000000-0000-0000-0000-0000000000d2,00000000-0000-0000-0000-0000000000e2,9,0.1,)"}'
    )
    with pytest.raises(psycopg.Error) as raised:
        admin_conn.execute(
            f"SELECT * FROM dm_private.{function}(%s::dm_private.recall_branch_hit [], %s::jsonb)",
            (hits, settings),
        ).fetchall()
    assert raised.value.sqlstate == "22023"
    admin_conn.rollback()

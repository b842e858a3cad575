"""recall_run's fusion of the branches' own arrays (recall_fuse_branches, session 15) against the core.

dm_private.recall_fuse_branches(fulltext, exact, vector, settings) must return
exactly what dm_private.recall_fuse_ordered returns for the concatenation
fulltext || exact || vector (the fused array, best and worst kept score, as
text: every bit of every field) whenever each array holds its branch's rows
with an evidence at most once, which is what the branches return. Without
exact hits and with RRF it joins the full-text and vector lists instead of
regrouping them; priority, exact hits and non-finite settings run the core.
The last test checks that contract on the branches themselves.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
import pytest
from test_recall_rank import corpus
from test_recall_support import unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

COMPARE = """
SELECT dm_private.recall_fuse_branches(ft, ex, vh, s)::text AS joined,
       dm_private.recall_fuse_ordered(ft || ex || vh, s)::text AS core
FROM (SELECT %(ft)s::dm_private.recall_branch_hit [] AS ft, %(ex)s::dm_private.recall_branch_hit [] AS ex,
             %(vh)s::dm_private.recall_branch_hit [] AS vh, %(settings)s::jsonb AS s) AS b
"""


def _branch(rng: random.Random, branch: str, evidence: list[uuid.UUID], ties: bool) -> str:
    """One branch's hits as the branches return them: each evidence once, ranked (ties share a rank)."""
    chosen = rng.sample(evidence, rng.randint(0, len(evidence)))
    parts = []
    rank = 0
    for position, ev in enumerate(chosen, start=1):
        rank = rank if ties and position > 1 and rng.random() < 0.3 else position
        doc = uuid.uuid5(uuid.NAMESPACE_OID, f"{branch}{ev}" if rng.random() < 0.05 else str(ev))
        parts.append(f'"({branch},{doc},{ev},{rank},{rng.random()},)"')
    if rng.random() < 0.1:  # a hit without an evidence id is not fused
        parts.insert(rng.randint(0, len(parts)), f'"({branch},{uuid.uuid4()},,1,0.5,)"')
    return "{" + ",".join(parts) + "}"


SETTINGS = [
    {},
    {"fusion": {"method": "rrf", "rrf_k": 60}},
    {"fusion": {"method": "rrf", "rrf_k": 5, "branch_weights": {"fulltext": 2.0, "vector": 0.5}}},
    {"fusion": {"rrf_k": 1, "branch_weights": {"fulltext": 1.0, "vector": -0.5}}},
    {"fusion": {"branch_weights": {"fulltext": 0, "vector": 0}}},
    {"fusion": {"branch_weights": {"vector": 1e-300, "fulltext": 1e300}}},
    {"fusion": {"branch_weights": "not an object"}},
    {"candidates": {"fused": 7}},
    {"candidates": {"fused": 1}},
    {"candidates": {"fused": 0}},
    {"candidates": {"fused": -3}},
    {"candidates": {"fused": 500}},
    {"fusion": {"method": "priority", "branch_priority": ["vector", "fulltext"]}},
    {"fusion": {"rrf_k": "NaN"}},
    {"fusion": {"branch_weights": {"vector": "NaN"}}},
    {"fusion": {"branch_weights": {"fulltext": "Infinity", "vector": "-Infinity"}}},
    {"fusion": {"rrf_k": "-Infinity"}},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=[json.dumps(s, sort_keys=True) for s in SETTINGS])
def test_joined_branches_equal_the_core_on_the_concatenation(
    admin_conn: Conn, settings: dict[str, Any]
) -> None:
    rng = random.Random(json.dumps(settings, sort_keys=True))
    joined_runs = 0
    for trial in range(40):
        evidence = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 60))]
        if trial % 8 == 0:
            evidence = evidence[:2]
        with_exact = trial % 5 == 4  # exact hits: the core's path
        args = {
            "ft": _branch(rng, "fulltext", evidence, ties=True),
            "ex": _branch(rng, "exact", evidence, ties=True) if with_exact else "{}",
            "vh": _branch(rng, "vector", evidence, ties=False),
            "settings": json.dumps(settings),
        }
        row = admin_conn.execute(COMPARE, args).fetchone()
        assert row is not None
        assert row[0] == row[1], args
        joined_runs += not with_exact
    assert joined_runs > 0


def test_empty_branches_and_a_failing_score_behave_as_the_core(admin_conn: Conn) -> None:
    row = admin_conn.execute(COMPARE, {"ft": "{}", "ex": "{}", "vh": "{}", "settings": "{}"}).fetchone()
    assert row is not None
    assert row[0] == row[1] == "({},,)"
    hits = '{"(fulltext,00000000-0000-0000-0000-0000000000d1,00000000-0000-0000-0000-0000000000e1,1,0.5,)"}'
    for call in ("recall_fuse_branches(h, '{}', '{}', s)", "recall_fuse_ordered(h, s)"):
        with pytest.raises(psycopg.Error) as raised:
            admin_conn.execute(
                f"SELECT dm_private.{call} FROM (SELECT %(h)s::dm_private.recall_branch_hit [] AS h, "
                '\'{"fusion": {"rrf_k": -1}}\'::jsonb AS s) AS b',
                {"h": hits},
            ).fetchall()
        assert raised.value.sqlstate == "22012"  # k + rank = 0 in both


BRANCHES = """
SELECT ARRAY(SELECT dm_private.recall_fulltext_candidates(%(team)s, %(q)s, y.r, x.s))::text AS ft,
       dm_private.recall_vector_hits(%(team)s, %(vec)s::public.vector, y.r, x.s)::text AS vh, x.s::text AS s
FROM (SELECT dm_private.recall_settings(%(team)s, NULL) AS s) AS x
CROSS JOIN LATERAL (SELECT dm_private.recall_request(%(q)s, '{}', x.s) AS r) AS y
"""

CHECK = """
SELECT (SELECT count(*) = count(DISTINCT h.evidence_id) FROM pg_catalog.unnest(ft) AS h) AS fulltext_unique,
       (SELECT count(*) = count(DISTINCT h.evidence_id) FROM pg_catalog.unnest(vh) AS h) AS vector_unique,
       pg_catalog.cardinality(ft) + pg_catalog.cardinality(vh) AS hits,
       dm_private.recall_fuse_branches(ft, '{}', vh, s)::text
       = dm_private.recall_fuse_ordered(ft || vh, s)::text AS same
FROM (SELECT %(ft)s::dm_private.recall_branch_hit [] AS ft, %(vh)s::dm_private.recall_branch_hit [] AS vh,
             %(s)s::jsonb AS s) AS b
"""


def test_the_branches_return_an_evidence_at_most_once(admin_conn: Conn) -> None:
    """The join needs no grouping: a branch returns an evidence once (recall_branch_hit's contract)."""
    team, _ = corpus(admin_conn)
    hits = 0
    with acting_as(admin_conn, Principal(team, None)) as cur:
        for axis, query in enumerate(("turn", "the of and", "Turn 4", "a")):
            vec = "[" + ",".join(str(x) for x in unit((axis, 1.0), (7, 0.4))) + "]"
            cur.execute(BRANCHES, {"team": team, "q": query, "vec": vec})
            branches = cur.fetchone()
            assert branches is not None
            cur.execute(CHECK, dict(branches))
            check = cur.fetchone()
            assert check is not None
            assert check["fulltext_unique"] is True
            assert check["vector_unique"] is True
            assert check["same"] is True
            hits += check["hits"] or 0
    assert hits > 0

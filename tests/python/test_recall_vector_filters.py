"""The exact vector branch under selective filters (sql/40_recall_vector_branch.sql).

The exact path checks the nearest 4 x cap vectors first; when eligibility keeps fewer than cap of
them (a time window that holds few turns, known ids), it ranks the eligible documents' own vectors.
Either way the branch must return what brute force over the eligible documents returns: here the
oracle is computed in Python from the vectors the test wrote, not by another SQL statement.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from test_recall_support import embed, ingest, make_team, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

CAP = 20
BRANCH_SQL = """
WITH s AS (SELECT dm_private.recall_settings(%(t)s, NULL) || %(cap)s::jsonb AS s),
     r AS (SELECT dm_private.recall_request('', %(request)s::jsonb, s.s) AS r FROM s)
SELECT ARRAY(SELECT h.evidence_id::text
             FROM s, r, dm_private.recall_vector_candidates(%(t)s, %(q)s::vector, r.r, s.s) AS h
             ORDER BY h.branch_rank) AS hits
"""


def _cosine_distance(a: list[float], b: list[float]) -> float:
    return 1.0 - sum(x * y for x, y in zip(a, b, strict=True))


def test_a_selective_window_returns_the_brute_force_nearest_inside_it(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "windowed")
    rng = random.Random(11)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    # 300 turns over 300 days; the window holds days 100-129 (30 turns), so the nearest
    # 4 x CAP = 80 vectors of the team hold only a few of them and the second attempt must run.
    items = [
        {"text": f"Turn {i} about subject {i % 13}.", "created_at": (start + timedelta(days=i)).isoformat()}
        for i in range(300)
    ]
    ids = ingest(admin_conn, team, profile, items)
    vectors: dict[uuid.UUID, list[float]] = {}
    for evidence in ids:
        vector = unit(*[(rng.randrange(30), rng.random()) for _ in range(5)])
        vectors[evidence] = vector
        embed(admin_conn, team, evidence, vector)
    window = {
        "from": (start + timedelta(days=100)).isoformat(),
        "to": (start + timedelta(days=129)).isoformat(),
    }
    inside = ids[100:130]
    with acting_as(admin_conn, Principal(team)) as cur:
        for _ in range(5):
            query = unit(*[(rng.randrange(30), rng.random()) for _ in range(5)])
            expected = sorted(inside, key=lambda e: (_cosine_distance(vectors[e], query), str(e)))[:CAP]
            nearest_overall = sorted(ids, key=lambda e: _cosine_distance(vectors[e], query))[: 4 * CAP]
            assert len(set(nearest_overall) & set(inside)) < CAP  # the prefix alone cannot fill the cap
            cur.execute(
                BRANCH_SQL,
                {
                    "t": team,
                    "q": json.dumps(query),
                    "cap": json.dumps({"candidates": {"vector": CAP}}),
                    "request": json.dumps({"time_window": window}),
                },
            )
            row = cur.fetchone()
            assert row is not None
            hits = [uuid.UUID(h) for h in row["hits"]]
            assert len(hits) == CAP
            assert set(hits) == set(expected)
            # halfvec storage rounds distances; the order may differ only between near ties
            assert hits[:5] == expected[:5] or set(hits[:5]) == set(expected[:5])


@pytest.mark.parametrize(
    ("first_day", "last_day"),
    [
        (100, 178),  # 79 turns: fewer than 4 x CAP, the eligible-first statement alone
        (100, 179),  # 80 turns: 4 x CAP, the nearest prefix first
        (0, 199),  # 200 turns: a wide window, the nearest prefix fills the cap
        (250, None),  # open-ended: only a lower bound (50 turns)
        (None, 30),  # only an upper bound (31 turns)
    ],
)
def test_every_window_size_returns_the_brute_force_nearest_inside_it(
    admin_conn: Conn, first_day: int | None, last_day: int | None
) -> None:
    """The exact path picks its statement by how many of the team's documents the window holds
    (fewer than 4 x cap: only their distances are computed); every size, and a bound left open,
    must give the brute-force answer."""
    team, profile = make_team(admin_conn, f"window-{first_day}-{last_day}")
    rng = random.Random(17)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    items = [
        {"text": f"Turn {i} about subject {i % 13}.", "created_at": (start + timedelta(days=i)).isoformat()}
        for i in range(300)
    ]
    ids = ingest(admin_conn, team, profile, items)
    vectors: dict[uuid.UUID, list[float]] = {}
    for evidence in ids:
        vector = unit(*[(rng.randrange(30), rng.random()) for _ in range(5)])
        vectors[evidence] = vector
        embed(admin_conn, team, evidence, vector)
    window: dict[str, str] = {}
    if first_day is not None:
        window["from"] = (start + timedelta(days=first_day)).isoformat()
    if last_day is not None:
        window["to"] = (start + timedelta(days=last_day)).isoformat()
    inside = ids[(first_day or 0) : (300 if last_day is None else last_day + 1)]
    with acting_as(admin_conn, Principal(team)) as cur:
        for _ in range(4):
            query = unit(*[(rng.randrange(30), rng.random()) for _ in range(5)])
            expected = sorted(inside, key=lambda e: (_cosine_distance(vectors[e], query), str(e)))[:CAP]
            cur.execute(
                BRANCH_SQL,
                {
                    "t": team,
                    "q": json.dumps(query),
                    "cap": json.dumps({"candidates": {"vector": CAP}}),
                    "request": json.dumps({"time_window": window}),
                },
            )
            row = cur.fetchone()
            assert row is not None
            hits = [uuid.UUID(h) for h in row["hits"]]
            assert len(hits) == CAP
            assert set(hits) == set(expected)
            assert hits[:5] == expected[:5] or set(hits[:5]) == set(expected[:5])


def test_known_ids_that_empty_the_prefix_still_fill_the_cap(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "known")
    rng = random.Random(5)
    ids = ingest(admin_conn, team, profile, [{"text": f"Note {i}."} for i in range(200)])
    vectors: dict[uuid.UUID, list[float]] = {}
    for evidence in ids:
        vector = unit(*[(rng.randrange(20), rng.random()) for _ in range(4)])
        vectors[evidence] = vector
        embed(admin_conn, team, evidence, vector)
    query = unit(*[(rng.randrange(20), rng.random()) for _ in range(4)])
    ranked = sorted(ids, key=lambda e: (_cosine_distance(vectors[e], query), str(e)))
    known = ranked[:90]  # more than 4 x CAP - CAP of the nearest are known
    expected = ranked[90 : 90 + CAP]
    with acting_as(admin_conn, Principal(team)) as cur:
        cur.execute(
            BRANCH_SQL,
            {
                "t": team,
                "q": json.dumps(query),
                "cap": json.dumps({"candidates": {"vector": CAP}}),
                "request": json.dumps({"known_evidence_ids": [str(k) for k in known]}),
            },
        )
        row = cur.fetchone()
        assert row is not None
        hits = [uuid.UUID(h) for h in row["hits"]]
    assert len(hits) == CAP
    assert set(hits) == set(expected)

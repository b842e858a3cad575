"""A recall asked for up to 50 results gets 50 when 50 distinct ones match.

The MMR pool (ranking profile mmr.pool, 30 in the default) once capped every
answer at the pool size, so limit 50 came back with at most 30 results.
"""

from __future__ import annotations

import random
from typing import Any

import psycopg
from test_recall_support import ingest, make_team, recall, result_ids

WORDS = [
    "amber",
    "basalt",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lagoon",
    "meadow",
    "nectar",
    "onyx",
    "prairie",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]


def test_limit_fifty_returns_fifty_distinct_matches(admin_conn: psycopg.Connection[Any]) -> None:
    team, profile = make_team(admin_conn, "limit-fifty")
    rng = random.Random(7)
    items = [
        {"text": f"Deployment report {i}: " + " ".join(rng.sample(WORDS, 6)), "memory_type": "semantic"}
        for i in range(60)
    ]
    ingest(admin_conn, team, profile, items)
    answer = recall(admin_conn, team, "deployment report", request={"limit": 50, "max_context_bytes": 100000})
    ids = result_ids(answer)
    assert len(ids) == 50
    assert len(set(ids)) == 50

"""Predicate hints from the team's predicate set (migration 0057).

dm_private.team_predicates holds every predicate a team's relationships have
had (insert-only, kept by triggers). When it holds at most 30, discovery's
predicate hints probe only the query-matching predicates a seed has instead
of the loose index scans over the seed's edges; with more it takes the scans.
The tests: the triggers keep the set complete (write path, bulk insert in
replica mode, a predicate changed by an update) and inside the team; and the
hints (seen through the answer: the hinted predicate is walked first on a hub
whose other edges exceed the fan-out) are the same on both paths, with
duplicates and stale predicates in the set.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg

from densemem.store import write
from densemem.store.session import Principal, acting_as

CALL = """
SELECT dm_private.discovery_for_recall(
    %(team)s, %(query)s, %(parsed)s::jsonb, '{}'::uuid[], '{}'::jsonb, %(settings)s::jsonb)::text
"""
SETTINGS = json.dumps({"discovery": {"fan_out": 20, "max_paths": 5, "time_budget_ms": 10000}})


def _team(conn: psycopg.Connection[Any], name: str, profile: str) -> tuple[uuid.UUID, uuid.UUID]:
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    got = conn.execute("SELECT dm.ensure_profile(%s, %s)", (row[0], profile)).fetchone()
    assert got is not None
    return row[0], got[0]


def _hub(conn: psycopg.Connection[Any], team: uuid.UUID, profile: uuid.UUID) -> uuid.UUID:
    """A hub with 25 verified outgoing depends_on edges and 2 incoming watches edges."""
    with acting_as(conn, Principal(team, profile)) as cur:
        (evidence,) = write.ingest_evidence(
            cur,
            team_id=team,
            items=[{"text": "The hub notes.", "source": {"external_id": "s", "kind": "chat"}}],
        )
        names: list[write.EntityItem] = [{"name": "Hub Service"}]
        names += [{"name": f"Library {i}"} for i in range(25)]
        names += [{"name": "Watcher One"}, {"name": "Watcher Two"}]
        ids = write.upsert_entities(cur, team_id=team, items=names)
        hub, libraries, watchers = ids[0], ids[1:26], ids[26:]
        edges = [(hub, "depends_on", lib) for lib in libraries] + [(w, "watches", hub) for w in watchers]
        for subject, predicate, obj in edges:
            rel = write.assert_relationship(
                cur,
                team_id=team,
                relationship={
                    "subject_entity_id": subject,
                    "predicate": predicate,
                    "object_entity_id": obj,
                    "evidence_ids": [evidence],
                },
            )
            write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact")
    return hub


def _answer(conn: psycopg.Connection[Any], principal: Principal, hub: uuid.UUID, query: str) -> str:
    parsed = {"entities": [{"name": "Hub Service", "entity_id": str(hub)}], "predicates": []}
    with acting_as(conn, principal) as cur:
        params = {"team": principal.team_id, "query": query, "parsed": json.dumps(parsed)}
        params["settings"] = SETTINGS
        row = cur.execute(CALL, params).fetchone()
    assert row is not None
    return str(next(iter(row.values())) if isinstance(row, dict) else row[0])


def _team_predicates(conn: psycopg.Connection[Any], team: uuid.UUID) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT predicate FROM dm_private.team_predicates WHERE team_id = %s ORDER BY 1", (team,)
    ).fetchall()
    return [r[0] for r in rows]


def test_team_predicates_follow_every_write(admin_conn: psycopg.Connection[Any]) -> None:
    team, alice = _team(admin_conn, "predicates team a", "alice")
    other, bob = _team(admin_conn, "predicates team b", "bob")
    _hub(admin_conn, team, alice)
    assert _team_predicates(admin_conn, team) == ["depends_on", "watches"]
    assert _team_predicates(admin_conn, other) == []

    # A bulk insert in replica mode (triggers ENABLE ALWAYS) and a predicate
    # changed by an update both land in the set.
    with admin_conn.transaction():
        admin_conn.execute("SET LOCAL session_replication_role = replica")
        admin_conn.execute(
            "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
            "object_entity_id, polarity, status, tier, owner_profile_id) "
            "SELECT team_id, gen_random_uuid(), entity_id, 'mentors', entity_id, '+', 'active', 'fact', %s "
            "FROM dm_private.entities WHERE team_id = %s LIMIT 3",
            (alice, team),
        )
    admin_conn.execute(
        "UPDATE dm_private.relationships SET predicate = 'guards' "
        "WHERE team_id = %s AND relationship_id = (SELECT relationship_id FROM dm_private.relationships "
        "WHERE team_id = %s AND predicate = 'mentors' LIMIT 1)",
        (team, team),
    )
    assert _team_predicates(admin_conn, team) == ["depends_on", "guards", "mentors", "watches"]
    # An update that keeps the predicate adds nothing (and no duplicate).
    admin_conn.execute("UPDATE dm_private.relationships SET updated_at = now() WHERE team_id = %s", (team,))
    count = admin_conn.execute("SELECT count(*) FROM dm_private.team_predicates WHERE team_id = %s", (team,))
    assert count.fetchone() == (4,)

    # Under row-level security a team sees only its own predicates.
    with acting_as(admin_conn, Principal(other, bob)) as cur:
        rows = cur.execute("SELECT count(*) AS n FROM dm_private.team_predicates").fetchone()
        assert rows is not None and rows["n"] == 0


def test_hints_from_team_predicates_equal_the_loose_scan(admin_conn: psycopg.Connection[Any]) -> None:
    team, alice = _team(admin_conn, "predicates hints team", "alice")
    hub = _hub(admin_conn, team, alice)
    principal = Principal(team, alice)
    queries = ["Who watches Hub Service?", "What does Hub Service depend on?", "Hub Service", "Who guards?"]

    fast = [_answer(admin_conn, principal, hub, q) for q in queries]
    # The hint works: the incoming watches edges, behind 25 depends_on edges
    # (fan-out 20), are walked only when hinted.
    assert '"watches"' in fast[0]
    assert '"watches"' not in fast[2]

    # Stale predicates and a duplicate (a superset, at most 30): same answers.
    admin_conn.execute(
        "INSERT INTO dm_private.team_predicates (team_id, predicate) "
        "SELECT %s, p FROM unnest(ARRAY['watches', 'guards', 'aa_first', 'zz_last']) AS p",
        (team,),
    )
    assert [_answer(admin_conn, principal, hub, q) for q in queries] == fast

    # More than 30 predicates: the loose scans decide, with the same answers.
    admin_conn.execute(
        "INSERT INTO dm_private.team_predicates (team_id, predicate) "
        "SELECT %s, 'unused_' || i FROM generate_series(1, 30) AS i",
        (team,),
    )
    assert len(_team_predicates(admin_conn, team)) > 30
    assert [_answer(admin_conn, principal, hub, q) for q in queries] == fast

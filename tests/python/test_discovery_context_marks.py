"""Context marks (migration 0070) follow every write, and discovery answers the same through them.

dm_private.discovery_context_marks holds the relationships that have (or
had) a recorded conflict or an equivalent relationship of another author
(same semantic group, or same subject, predicate, object and polarity):
insert-only, a superset, kept by statement triggers. Discovery starts its
conflict / corroboration decoration only when a pool edge is marked. The
tests: after every kind of write (the public write path, a bulk insert in
replica mode, updates that change and that keep the equivalence columns, a
conflict inserted directly) every relationship the derived query finds is
marked, a relationship without context is not, and marks stay inside the
team; the answers are the ones the derived query gives (a mark removed
drops the decoration, stale marks change nothing).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg

from densemem.store import write
from densemem.store.session import Principal, acting_as

# The relationships the marks must cover: what discovery_candidate_paths
# probed per pool edge before migration 0070.
DERIVED = """
SELECT r.relationship_id
FROM dm_private.relationships AS r
WHERE r.team_id = %(team)s
  AND (EXISTS (SELECT 1 FROM dm_private.conflicts AS c
               WHERE c.team_id = r.team_id AND c.relationship_id = r.relationship_id)
       OR EXISTS (SELECT 1 FROM dm_private.conflicts AS c
                  WHERE c.team_id = r.team_id AND c.conflicting_relationship_id = r.relationship_id)
       OR EXISTS (SELECT 1 FROM dm_private.relationships AS o
                  WHERE o.team_id = r.team_id AND o.semantic_group = r.semantic_group
                    AND o.owner_profile_id <> r.owner_profile_id)
       OR EXISTS (SELECT 1 FROM dm_private.relationships AS o
                  WHERE o.team_id = r.team_id AND o.subject_entity_id = r.subject_entity_id
                    AND o.predicate = r.predicate AND o.object_entity_id = r.object_entity_id
                    AND o.polarity = r.polarity AND o.owner_profile_id <> r.owner_profile_id))
"""
CALL = """
SELECT dm_private.discovery_for_recall(
    %(team)s, %(query)s, %(parsed)s::jsonb, '{}'::uuid[], '{}'::jsonb, %(settings)s::jsonb)::text
"""
SETTINGS = json.dumps({"discovery": {"fan_out": 20, "max_paths": 5, "time_budget_ms": 10000}})


def _team(conn: psycopg.Connection[Any], name: str, *profiles: str) -> tuple[uuid.UUID, list[uuid.UUID]]:
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    ids: list[uuid.UUID] = []
    for profile in profiles:
        got = conn.execute("SELECT dm.ensure_profile(%s, %s)", (row[0], profile)).fetchone()
        assert got is not None
        ids.append(got[0])
    return row[0], ids


def _derived(conn: psycopg.Connection[Any], team: uuid.UUID) -> set[uuid.UUID]:
    return {r[0] for r in conn.execute(DERIVED, {"team": team}).fetchall()}


def _marked(conn: psycopg.Connection[Any], team: uuid.UUID) -> set[uuid.UUID]:
    rows = conn.execute(
        "SELECT relationship_id FROM dm_private.discovery_context_marks WHERE team_id = %s", (team,)
    ).fetchall()
    return {r[0] for r in rows}


def _assert(
    cur: Any,
    team: uuid.UUID,
    subject: uuid.UUID,
    predicate: str,
    obj: uuid.UUID,
    evidence: uuid.UUID,
    **extra: Any,
) -> uuid.UUID:
    relationship: Any = {
        "subject_entity_id": subject,
        "predicate": predicate,
        "object_entity_id": obj,
        "evidence_ids": [evidence],
        **extra,
    }
    rel = write.assert_relationship(cur, team_id=team, relationship=relationship)
    write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact")
    return rel


def _graph(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Alice and Bob in one team: shared facts, a semantic group, a conflict, and plain edges."""
    team, (alice, bob) = _team(conn, "context marks team", "alice", "bob")
    got: dict[str, Any] = {"team": team, "alice": alice, "bob": bob}
    with acting_as(conn, Principal(team, alice)) as cur:
        (evidence,) = write.ingest_evidence(
            cur,
            team_id=team,
            items=[{"text": "Mark works on Dense-Mem.", "source": {"external_id": "a", "kind": "chat"}}],
        )
        mark, dense, wiki, berlin, paris = write.upsert_entities(
            cur,
            team_id=team,
            items=[
                {"name": "Mark"},
                {"name": "Dense-Mem"},
                {"name": "Wiki"},
                {"name": "Berlin"},
                {"name": "Paris"},
            ],
        )
        got.update(mark=mark, dense=dense, wiki=wiki, berlin=berlin, paris=paris, evidence=evidence)
        got["alice_works"] = _assert(cur, team, mark, "works_on", dense, evidence)
        got["alice_plain"] = _assert(cur, team, mark, "uses", wiki, evidence)
        got["alice_group"] = _assert(cur, team, dense, "documents", wiki, evidence, semantic_group="docs")
        got["alice_berlin"] = _assert(cur, team, mark, "lives_in", berlin, evidence)
    return got


def test_marks_follow_every_write(admin_conn: psycopg.Connection[Any]) -> None:
    g = _graph(admin_conn)
    team = g["team"]
    # Alice alone: nothing has context yet.
    assert _derived(admin_conn, team) == set()
    assert _marked(admin_conn, team) == set()

    with acting_as(admin_conn, Principal(team, g["bob"])) as cur:
        # Bob states the same fact (same endpoints, predicate, polarity) and
        # one in Alice's semantic group under another predicate; Mark living
        # in Paris disagrees with Berlin (single-valued lives_in): a conflict.
        bob_works = _assert(cur, team, g["mark"], "works_on", g["dense"], g["evidence"])
        bob_group = _assert(
            cur, team, g["wiki"], "describes", g["dense"], g["evidence"], semantic_group="docs"
        )
        bob_paris = _assert(cur, team, g["mark"], "lives_in", g["paris"], g["evidence"])
    derived = _derived(admin_conn, team)
    assert {g["alice_works"], bob_works, g["alice_group"], bob_group, g["alice_berlin"], bob_paris} <= derived
    assert _marked(admin_conn, team) >= derived
    # A relationship without any context is not marked.
    assert g["alice_plain"] not in _marked(admin_conn, team)

    # A bulk insert in replica mode (triggers ENABLE ALWAYS): Bob's copy of
    # Alice's "uses" edge marks both.
    with admin_conn.transaction():
        admin_conn.execute("SET LOCAL session_replication_role = replica")
        admin_conn.execute(
            "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
            "object_entity_id, polarity, status, tier, owner_profile_id) "
            "VALUES (%s, gen_random_uuid(), %s, 'uses', %s, '+', 'active', 'fact', %s)",
            (team, g["mark"], g["wiki"], g["bob"]),
        )
    assert g["alice_plain"] in _marked(admin_conn, team)
    assert _marked(admin_conn, team) >= _derived(admin_conn, team)

    # Updates that make two relationships equivalent: an owner change, then
    # a predicate change, then a semantic group set.
    solo = admin_conn.execute(
        "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
        "object_entity_id, polarity, status, tier, owner_profile_id) "
        "VALUES (%s, gen_random_uuid(), %s, 'mentors', %s, '+', 'active', 'fact', %s), "
        "(%s, gen_random_uuid(), %s, 'mentors', %s, '+', 'active', 'fact', %s) RETURNING relationship_id",
        (team, g["wiki"], g["berlin"], g["alice"], team, g["wiki"], g["berlin"], g["alice"]),
    ).fetchall()
    first, second = solo[0][0], solo[1][0]
    assert {first, second}.isdisjoint(_marked(admin_conn, team))
    # An update that changes no equivalence column adds nothing.
    admin_conn.execute("UPDATE dm_private.relationships SET updated_at = now() WHERE team_id = %s", (team,))
    assert {first, second}.isdisjoint(_marked(admin_conn, team))
    admin_conn.execute(
        "UPDATE dm_private.relationships SET owner_profile_id = %s "
        "WHERE team_id = %s AND relationship_id = %s",
        (g["bob"], team, second),
    )
    assert {first, second} <= _marked(admin_conn, team)
    third = admin_conn.execute(
        "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
        "object_entity_id, polarity, status, tier, owner_profile_id) "
        "VALUES (%s, gen_random_uuid(), %s, 'hosts', %s, '+', 'active', 'fact', %s) "
        "RETURNING relationship_id",
        (team, g["paris"], g["berlin"], g["alice"]),
    ).fetchone()
    assert third is not None and third[0] not in _marked(admin_conn, team)
    admin_conn.execute(
        "UPDATE dm_private.relationships SET semantic_group = 'docs' "
        "WHERE team_id = %s AND relationship_id = %s",
        (team, third[0]),
    )
    assert third[0] in _marked(admin_conn, team)

    # A conflict recorded directly marks both sides.
    fourth = admin_conn.execute(
        "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
        "object_entity_id, polarity, status, tier, owner_profile_id) "
        "VALUES (%s, gen_random_uuid(), %s, 'funds', %s, '+', 'active', 'fact', %s), "
        "(%s, gen_random_uuid(), %s, 'funds', %s, '-', 'active', 'fact', %s) RETURNING relationship_id",
        (team, g["paris"], g["wiki"], g["alice"], team, g["paris"], g["wiki"], g["alice"]),
    ).fetchall()
    low, high = sorted([fourth[0][0], fourth[1][0]])
    assert {low, high}.isdisjoint(_marked(admin_conn, team))
    admin_conn.execute(
        "INSERT INTO dm_private.conflicts (team_id, conflict_id, relationship_id, "
        "conflicting_relationship_id, kind) "
        "VALUES (%s, gen_random_uuid(), %s, %s, 'polarity_mismatch')",
        (team, low, high),
    )
    assert {low, high} <= _marked(admin_conn, team)
    assert _marked(admin_conn, team) >= _derived(admin_conn, team)

    # Under row-level security another team sees none of them.
    other, (carol,) = _team(admin_conn, "context marks other team", "carol")
    with acting_as(admin_conn, Principal(other, carol)) as cur:
        row = cur.execute("SELECT count(*) AS n FROM dm_private.discovery_context_marks").fetchone()
        assert row is not None and row["n"] == 0


def _answer(conn: psycopg.Connection[Any], principal: Principal, entity: uuid.UUID, name: str) -> str:
    parsed = {"entities": [{"name": name, "entity_id": str(entity)}], "predicates": []}
    params = {"team": principal.team_id, "query": f"What about {name}?", "parsed": json.dumps(parsed)}
    params["settings"] = SETTINGS
    with acting_as(conn, principal) as cur:
        row = cur.execute(CALL, params).fetchone()
    assert row is not None
    return str(next(iter(row.values())) if isinstance(row, dict) else row[0])


def test_answers_follow_the_marks(admin_conn: psycopg.Connection[Any]) -> None:
    g = _graph(admin_conn)
    team = g["team"]
    with acting_as(admin_conn, Principal(team, g["bob"])) as cur:
        _assert(cur, team, g["mark"], "works_on", g["dense"], g["evidence"])
        _assert(cur, team, g["mark"], "lives_in", g["paris"], g["evidence"])
    principal = Principal(team, g["alice"])
    names = [(g["mark"], "Mark"), (g["dense"], "Dense-Mem"), (g["wiki"], "Wiki")]
    answers = [_answer(admin_conn, principal, entity, name) for entity, name in names]
    # Corroboration and the conflict show the owner profile.
    assert '"owner_profile"' in answers[0]

    # Stale marks on every relationship (a superset): the same answers.
    admin_conn.execute(
        "INSERT INTO dm_private.discovery_context_marks (team_id, relationship_id) "
        "SELECT team_id, relationship_id FROM dm_private.relationships WHERE team_id = %s",
        (team,),
    )
    assert [_answer(admin_conn, principal, entity, name) for entity, name in names] == answers

    # Without the marks the decoration is not started: the marks are what decides.
    admin_conn.execute("DELETE FROM dm_private.discovery_context_marks WHERE team_id = %s", (team,))
    assert '"owner_profile"' not in _answer(admin_conn, principal, g["mark"], "Mark")

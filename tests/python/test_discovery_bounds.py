"""Bounded adjacency on a hub with 100,000 edges and on cycles; index use; no cross-team rows.

The graph is bulk-inserted as superuser (the write path would take minutes
for 100,000 relationships): one hub entity with 100,000 outgoing eligible
relationships and 1,000 incoming ones, a ring of 30 entities, a triangle
and a self-loop. A second team reuses every name. Discovery runs as the
service role under RLS. Nothing here is timed: the checks are termination
(a statement timeout guards each call), the edge / fan-out / depth caps,
the plan of the walk, and that every ID returned belongs to the team.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import create_database_from_template, drop_database

TEAM = uuid.UUID("11111111-0000-0000-0000-000000000000")
OTHER = uuid.UUID("22222222-0000-0000-0000-000000000000")
SETTINGS = {
    "discovery": {
        "seed_count": 5,
        "fan_out": 20,
        "max_edges": 200,
        "max_depth": 2,
        "max_paths": 5,
        "max_path_bytes": 4000,
        "time_budget_ms": 60000,
    }
}

LOAD = """
INSERT INTO dm_private.teams (team_id, name) VALUES (%(team)s, 'bounds ' || %(team)s::text);
INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%(team)s,
    md5(%(team)s::text || 'p')::uuid, 'author');
INSERT INTO dm_private.sources (team_id, source_id, external_id, kind)
VALUES (%(team)s, md5(%(team)s::text || 's')::uuid, 'bounds', 'document');
INSERT INTO dm_private.source_revisions (team_id, source_id, revision_id, revision_label,
    revision_number, is_current)
VALUES (%(team)s, md5(%(team)s::text || 's')::uuid, md5(%(team)s::text || 'v')::uuid, 'v1', 1, true);
INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text,
    content_hash)
SELECT %(team)s, md5(%(team)s::text || 'e' || i)::uuid, md5(%(team)s::text || 's')::uuid,
       md5(%(team)s::text || 'v')::uuid, md5(%(team)s::text || 'p')::uuid,
       'EVIDENCE TEXT ' || i, sha256(('e' || i)::bytea)
FROM generate_series(1, 1000) AS i;
-- Entities: 0 is the hub, 1..100000 its neighbours, ring r1..r30, triangle t1..t3, loop s.
INSERT INTO dm_private.entities (team_id, entity_id, canonical_name, normalized_name, kind)
SELECT %(team)s, md5(%(team)s::text || 'n' || n.key)::uuid, n.name, lower(n.name), 'thing'
FROM (SELECT '0' AS key, 'Hub' AS name
      UNION ALL SELECT i::text, 'Spoke ' || i FROM generate_series(1, 100000) AS i
      UNION ALL SELECT 'r' || i, 'Ring ' || i FROM generate_series(1, 30) AS i
      UNION ALL SELECT 't' || i, 'Triangle ' || i FROM generate_series(1, 3) AS i
      UNION ALL SELECT 's', 'Selfloop') AS n;
INSERT INTO dm_private.entity_names (team_id, entity_id, name, normalized_name, is_canonical)
SELECT team_id, entity_id, canonical_name, normalized_name,
    true FROM dm_private.entities WHERE team_id = %(team)s;
INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate,
    object_entity_id,
                                      owner_profile_id, tier, status)
SELECT %(team)s, md5(%(team)s::text || 'rel' || x.key)::uuid, md5(%(team)s::text || 'n' || x.s)::uuid,
    x.predicate,
       md5(%(team)s::text || 'n' || x.o)::uuid, md5(%(team)s::text || 'p')::uuid, 'validated_claim', 'active'
FROM (SELECT 'h' || i AS key, '0' AS s, i::text AS o, (ARRAY['links_to', 'uses',
    'owns'])[1 + i %% 3] AS predicate
      FROM generate_series(1, 100000) AS i
      UNION ALL SELECT 'in' || i, i::text, '0', 'reports_to' FROM generate_series(1, 1000) AS i
      UNION ALL SELECT 'ring' || i, 'r' || i, 'r' || (1 + i %% 30), 'next' FROM generate_series(1, 30) AS i
      UNION ALL SELECT 'tri' || i, 't' || i, 't' || (1 + i %% 3), 'next' FROM generate_series(1, 3) AS i
      UNION ALL SELECT 'self', 's', 's', 'next') AS x;
INSERT INTO dm_private.relationship_evidence (team_id, relationship_id, evidence_id)
SELECT r.team_id, r.relationship_id,
    md5(%(team)s::text || 'e' || (1 + abs(hashtext(r.relationship_id::text)) %% 1000))::uuid
FROM dm_private.relationships AS r WHERE r.team_id = %(team)s;
"""


def node(team: uuid.UUID, key: str) -> uuid.UUID:
    return uuid.UUID(hashlib.md5(f"{team}n{key}".encode()).hexdigest())


@pytest.fixture(scope="module")
def graph_url(admin_url: str, template_url: str) -> Iterator[str]:
    """One database with the hub graph for the whole module (loading takes a while)."""
    url = create_database_from_template(admin_url)
    with psycopg.connect(url, autocommit=True) as conn:
        for team in (TEAM, OTHER):
            psycopg.ClientCursor(conn).execute(LOAD, {"team": team})
        conn.execute("ANALYZE")
    yield url
    drop_database(admin_url, url)


@pytest.fixture
def app(graph_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection acting as the service of TEAM, in a transaction that is rolled back."""
    with psycopg.connect(graph_url) as conn:
        conn.execute(
            "SELECT set_config('role', 'densemem_app', true), set_config('densemem.team_id', %s, true), "
            "set_config('statement_timeout', '60000', true)",
            (str(TEAM),),
        )
        yield conn
        conn.rollback()


def walk(conn: psycopg.Connection[Any], seeds: list[uuid.UUID], **kw: Any) -> list[tuple[Any, ...]]:
    args = {"fan_out": 20, "max_depth": 2, "max_edges": 200, **kw}
    return conn.execute(
        "SELECT depth, relationship_id, from_entity_id, to_entity_id, root_entity_id "
        "FROM dm_private.discovery_walk(%s, %s::uuid[], %s, %s, %s)",
        (TEAM, seeds, args["fan_out"], args["max_depth"], args["max_edges"]),
    ).fetchall()


def discover(
    conn: psycopg.Connection[Any], query: str, settings: dict[str, Any] = SETTINGS
) -> dict[str, Any]:
    row = conn.execute(
        "SELECT dm_private.discovery_for_recall(%s, %s, '{}', '{}', '{}', %s::jsonb)",
        (TEAM, query, json.dumps(settings)),
    ).fetchone()
    assert row is not None
    answer: dict[str, Any] = row[0]
    return answer


def test_walk_terminates_on_a_hub_with_100000_edges(app: psycopg.Connection[Any]) -> None:
    degree = app.execute(
        "SELECT count(*) FROM dm_private.relationships WHERE team_id = %s AND subject_entity_id = %s",
        (TEAM, node(TEAM, "0")),
    ).fetchone()
    assert degree is not None and degree[0] == 100_000
    rows = walk(app, [node(TEAM, "0")])
    assert 0 < len(rows) <= 200, "the total-edge cap holds"
    per_entity = Counter((r[0], r[2]) for r in rows)
    assert max(per_entity.values()) <= 20, "the per-entity fan-out holds"
    assert {r[0] for r in rows} <= {1, 2}, "depth is at most 2"
    assert len(walk(app, [node(TEAM, "0")], max_edges=10)) == 10
    # Fifteen spokes each reach the hub, and through it 20 edges each: 330 edges without the cap.
    spokes = [node(TEAM, str(i)) for i in range(1, 16)]
    assert len(walk(app, spokes)) == 200, "the total-edge cap stops the walk"
    assert {r[0] for r in walk(app, [node(TEAM, "0")], max_depth=1)} == {1}


def test_discovery_terminates_on_the_hub(app: psycopg.Connection[Any]) -> None:
    answer = discover(app, "What does the Hub use?")
    paths = answer["discovery_paths"]
    assert 0 < len(paths) <= 5
    assert all(1 <= len(p["relationships"]) <= 2 for p in paths)
    assert len(json.dumps(paths)) <= 4000 + 200  # serialized by PostgreSQL within max_path_bytes
    assert "EVIDENCE TEXT" not in json.dumps(answer)
    assert any(e["predicate"] == "uses" for p in paths for e in p["relationships"]), (
        "the predicate hint is honoured"
    )


def test_walk_terminates_on_cycles(app: psycopg.Connection[Any]) -> None:
    for seeds in (
        [node(TEAM, "r1")],
        [node(TEAM, "t1")],
        [node(TEAM, "s")],
        [node(TEAM, "r1"), node(TEAM, "t2")],
    ):
        rows = walk(app, seeds)
        assert len(rows) <= 200
        for depth, _rel, _frm, to, root in rows:
            if depth == 2:
                assert to != root, "a path never returns to its seed"
    ring = walk(app, [node(TEAM, "r1")])
    assert len(ring) == 4, "a ring node has two neighbours, each with one further neighbour"
    assert walk(app, [node(TEAM, "s")]) == [], "a self-loop is a cycle, not an edge to walk"
    answer = discover(app, "What comes after Triangle 1?")
    assert answer["discovery_paths"], "cycles still give paths"


def _walk_statement(conn: psycopg.Connection[Any]) -> str:
    """The walk's own query, parameters numbered, from the installed function body."""
    row = conn.execute(
        "SELECT prosrc, proargnames FROM pg_proc WHERE oid = 'dm_private.discovery_walk'::regproc"
    ).fetchone()
    assert row is not None
    body, names = row
    query = body[body.index("RETURN QUERY") + len("RETURN QUERY") : body.rindex(";")]
    for number, name in enumerate(names[:11], start=1):
        query = re.sub(rf"(?<![\w.]){name}(?![\w])", f"${number}", query)
    return str(query)


def test_walk_uses_the_outgoing_and_incoming_indexes(app: psycopg.Connection[Any]) -> None:
    app.execute(
        "PREPARE walk_q (uuid, uuid[], integer, integer, integer, timestamptz, timestamptz, text[], text[], "
        "uuid[], timestamptz) AS " + _walk_statement(app)
    )
    app.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    plan = "\n".join(
        r[0]
        for r in psycopg.ClientCursor(app)
        .execute(
            "EXPLAIN (ANALYZE, COSTS OFF) "
            "EXECUTE walk_q(%s, %s::uuid[], 20, 2, 200, NULL, NULL, '{uses}', NULL, '{}', NULL)",
            (TEAM, [node(TEAM, "0")]),
        )
        .fetchall()
    )
    # The eligible-only partial indexes of migration 0033: the fan-out reads
    # no ineligible edge, whatever a hub holds.
    assert "relationships_eligible_outgoing_idx" in plan
    assert "relationships_eligible_incoming_idx" in plan
    assert "Seq Scan on relationships" not in plan
    assert "CTE Scan on walk" in plan and "Recursive Union" in plan


def test_walk_reads_no_ineligible_edge_of_a_hub(app: psycopg.Connection[Any]) -> None:
    """The hub gets 60,000 more edges, unverified candidates, first in index order.

    The fan-out still reads about fan_out edges: eligibility is the predicate
    of the index it scans, not a heap filter behind the LIMIT.
    """
    hub = node(TEAM, "0")
    app.execute("RESET ROLE")  # superuser inside this rolled-back transaction
    app.execute(
        "INSERT INTO dm_private.relationships (team_id, relationship_id, subject_entity_id, predicate, "
        "object_entity_id, owner_profile_id, tier, status) "
        "SELECT %s, gen_random_uuid(), %s, 'aaa_unverified', md5(%s::text || 'n' || i)::uuid, "
        "md5(%s::text || 'p')::uuid, 'candidate', 'pending_evidence' FROM generate_series(1, 60000) AS i",
        (TEAM, hub, str(TEAM), str(TEAM)),
    )
    app.execute("SELECT set_config('role', 'densemem_app', true)")
    app.execute(
        "PREPARE walk_q (uuid, uuid[], integer, integer, integer, timestamptz, timestamptz, text[], text[], "
        "uuid[], timestamptz) AS " + _walk_statement(app)
    )
    app.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    row = (
        psycopg.ClientCursor(app)
        .execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
            "EXECUTE walk_q(%s, %s::uuid[], 20, 1, 200, NULL, NULL, '{}', NULL, '{}', NULL)",
            (TEAM, [hub]),
        )
        .fetchone()
    )
    assert row is not None
    plan = row[0][0]["Plan"]
    buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    assert plan["Actual Rows"] == 20, "fan-out 20"
    assert buffers < 300, f"the walk read {buffers} buffers: ineligible edges were scanned"
    assert len(walk(app, [hub], max_depth=1)) == 20


def test_no_cross_team_rows_in_randomized_discovery(app: psycopg.Connection[Any]) -> None:
    rng = random.Random(5)
    team_relationships = {
        str(r[0])
        for r in app.execute(
            "SELECT relationship_id FROM dm_private.relationships WHERE team_id = %s", (TEAM,)
        )
    }
    team_evidence = {
        str(r[0])
        for r in app.execute("SELECT evidence_id FROM dm_private.evidence WHERE team_id = %s", (TEAM,))
    }
    names = ["Hub", "Ring 3", "Triangle 2", "Selfloop"] + [
        f"Spoke {rng.randint(1, 100000)}" for _ in range(20)
    ]
    for name in names:
        answer = discover(app, f"Who is connected to {name}?")
        text = json.dumps(answer)
        ids = set(re.findall(r'"relationship_id": "([0-9a-f-]{36})"', text))
        assert ids <= team_relationships
        evidence = {e for p in answer["discovery_paths"] for e in p["evidence_ids"]}
        assert evidence <= team_evidence


def test_proximity_terminates_on_the_hub(app: psycopg.Connection[Any]) -> None:
    evidence = [
        r[0]
        for r in app.execute(
            "SELECT evidence_id FROM dm_private.evidence WHERE team_id = %s ORDER BY evidence_id LIMIT 50",
            (TEAM,),
        )
    ]
    rows = app.execute(
        "SELECT evidence_id, hops FROM dm_private.entity_proximity(%s, %s::uuid[], %s::uuid[], 2)",
        (TEAM, [node(TEAM, "0")], evidence),
    ).fetchall()
    assert rows, "evidence supporting hub edges is near the hub"
    assert all(0 <= hops <= 2 for _e, hops in rows)


def test_proximity_reads_at_most_fan_out_links_of_one_evidence(app: psycopg.Connection[Any]) -> None:
    """An evidence row supporting many relationships is read only as far as the discovery fan-out
    (the first links by relationship_id): a spoke linked to it only through a later link is one
    hop away (through the hub), not zero."""
    fan_out = app.execute(
        "SELECT (settings #>> '{discovery,fan_out}')::integer"
        " FROM dm_private.ranking_profiles WHERE is_default"
    ).fetchone()
    assert fan_out is not None and fan_out[0] is not None
    busiest = app.execute(
        "SELECT re.evidence_id, count(*) FROM dm_private.relationship_evidence AS re"
        " WHERE re.team_id = %s GROUP BY re.evidence_id ORDER BY count(*) DESC, re.evidence_id LIMIT 1",
        (TEAM,),
    ).fetchone()
    assert busiest is not None and busiest[1] > 2 * fan_out[0], (
        "the fixture needs an evidence with many links"
    )
    evidence_id = busiest[0]
    hub = node(TEAM, "0")
    # its last hub edge (hub -> spoke) by relationship_id: beyond the fan-out
    last = app.execute(
        "SELECT r.object_entity_id FROM dm_private.relationship_evidence AS re"
        " JOIN dm_private.relationships AS r"
        " ON r.team_id = re.team_id AND r.relationship_id = re.relationship_id"
        " WHERE re.team_id = %s AND re.evidence_id = %s AND r.subject_entity_id = %s"
        " ORDER BY re.relationship_id DESC LIMIT 1",
        (TEAM, evidence_id, hub),
    ).fetchone()
    assert last is not None
    spoke = last[0]
    rows = app.execute(
        "SELECT evidence_id, hops FROM dm_private.entity_proximity(%s, %s::uuid[], %s::uuid[], 2)",
        (TEAM, [spoke], [evidence_id]),
    ).fetchall()
    assert rows == [(evidence_id, 1)]

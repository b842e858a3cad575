"""The candidate-path stage runs as a security definer: it must stay inside the team.

dm_private.discovery_candidate_paths is owned by densemem_searcher (which
bypasses row-level security) so that its statement carries no policy
InitPlan per table reference. It checks the team like require_team and
filters every table by it. These tests call it directly as the service role:
another team's ID is refused, and a call for the authenticated team given the
other team's seeds, owners and evidence finds nothing of that team.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from densemem.store import write
from densemem.store.session import Principal, acting_as

CALL = """
SELECT c.path_relationship_ids, c.path_entity_ids, c.path_json
FROM dm_private.discovery_candidate_paths(
    %(team)s, %(seeds)s::uuid[], %(scores)s::jsonb, '{}'::uuid[], 20, 2, 30, 5, NULL, NULL,
    '{}'::text[], NULL,
    '{}'::uuid[], '{}'::uuid[], '{mark,work}'::text[], '{mark}'::text[],
    pg_catalog.clock_timestamp() + interval '10 seconds') AS c
"""


def _team(conn: psycopg.Connection[Any], name: str, profile: str) -> tuple[uuid.UUID, uuid.UUID]:
    row = conn.execute("SELECT dm.ensure_team(%s)", (name,)).fetchone()
    assert row is not None
    got = conn.execute("SELECT dm.ensure_profile(%s, %s)", (row[0], profile)).fetchone()
    assert got is not None
    return row[0], got[0]


def _graph(conn: psycopg.Connection[Any], team: uuid.UUID, profile: uuid.UUID) -> tuple[uuid.UUID, uuid.UUID]:
    """Mark works on Dense-Mem, verified: returns (Mark, the relationship)."""
    with acting_as(conn, Principal(team, profile)) as cur:
        (evidence,) = write.ingest_evidence(
            cur,
            team_id=team,
            items=[{"text": "Mark works on Dense-Mem.", "source": {"external_id": "s", "kind": "chat"}}],
        )
        mark, dense = write.upsert_entities(
            cur, team_id=team, items=[{"name": "Mark"}, {"name": "Dense-Mem"}]
        )
        rel = write.assert_relationship(
            cur,
            team_id=team,
            relationship={
                "subject_entity_id": mark,
                "predicate": "works_on",
                "object_entity_id": dense,
                "evidence_ids": [evidence],
            },
        )
        write.record_verification(cur, team_id=team, relationship_id=rel, decision="fact")
    return mark, rel


def test_candidate_paths_stay_in_the_authenticated_team(admin_conn: psycopg.Connection[Any]) -> None:
    team_a, alice = _team(admin_conn, "definer team a", "alice")
    team_b, bob = _team(admin_conn, "definer team b", "bob")
    mark_a, rel_a = _graph(admin_conn, team_a, alice)
    mark_b, rel_b = _graph(admin_conn, team_b, bob)

    with acting_as(admin_conn, Principal(team_a, alice)) as cur:
        # The own team's call finds the own relationship (the check below can fail).
        own = cur.execute(CALL, {"team": team_a, "seeds": [mark_a], "scores": json.dumps({str(mark_a): 3.0})})
        rows = own.fetchall()
        assert [r["path_relationship_ids"] for r in rows] == [[rel_a]]
        assert "Dense-Mem" in json.dumps(rows[0]["path_json"])

        # The other team's seed, passed for the authenticated team: nothing of team B.
        forged = cur.execute(
            CALL, {"team": team_a, "seeds": [mark_b], "scores": json.dumps({str(mark_b): 3.0})}
        )
        assert forged.fetchall() == []

    # Another team's ID is refused, whatever the seeds.
    for seeds in ([mark_b], [mark_a]):
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege),
            acting_as(admin_conn, Principal(team_a, alice)) as cur,
        ):
            cur.execute(CALL, {"team": team_b, "seeds": seeds, "scores": "{}"})
    # Without an authenticated team nothing runs.
    with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification), admin_conn.transaction():
        admin_conn.execute("SET LOCAL ROLE densemem_app")
        admin_conn.execute(CALL, {"team": team_a, "seeds": [mark_a], "scores": "{}"})
    assert rel_b != rel_a


def test_candidate_paths_is_a_checked_searcher_definer(admin_conn: psycopg.Connection[Any]) -> None:
    row = admin_conn.execute(
        "SELECT p.prosecdef, r.rolname, p.proconfig FROM pg_catalog.pg_proc AS p "
        "JOIN pg_catalog.pg_roles AS r ON r.oid = p.proowner "
        "WHERE p.oid = 'dm_private.discovery_candidate_paths'::regproc"
    ).fetchone()
    assert row is not None
    assert row[0] is True and row[1] == "densemem_searcher"
    assert 'search_path=""' in row[2]
    source = admin_conn.execute(
        "SELECT p.prosrc FROM pg_catalog.pg_proc AS p "
        "WHERE p.oid = 'dm_private.discovery_candidate_paths'::regproc"
    ).fetchone()
    assert source is not None
    assert "dm_private.require_team(" in source[0]


def test_edge_context_is_callable_only_inside_the_searcher_stage(admin_conn: psycopg.Connection[Any]) -> None:
    """discovery_edge_context runs with the caller's rights (the searcher, inside the
    team-checked candidate-path stage); the service roles cannot call it directly."""
    signature = "dm_private.discovery_edge_context(uuid, uuid[], uuid[], timestamptz, uuid[], text[])"
    row = admin_conn.execute(
        "SELECT p.prosecdef, p.provolatile, p.proconfig FROM pg_catalog.pg_proc AS p "
        "WHERE p.oid = %s::regprocedure",
        (signature,),
    ).fetchone()
    assert row is not None
    assert row[0] is False, "not a security definer: it runs as the definer stage that calls it"
    assert row[1] == "s", "STABLE: it reads with the calling statement's snapshot"
    assert 'search_path=""' in row[2]
    for role, allowed in (
        ("densemem_searcher", True),
        ("densemem_app", False),
        ("densemem_analyst", False),
        ("densemem_operator", False),
    ):
        got = admin_conn.execute(
            "SELECT pg_catalog.has_function_privilege(%s, %s, 'EXECUTE')", (role, signature)
        ).fetchone()
        assert got is not None and got[0] is allowed, role
    team, alice = _team(admin_conn, "edge context team", "alice")
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        acting_as(admin_conn, Principal(team, alice)) as cur,
    ):
        cur.execute(
            "SELECT * FROM dm_private.discovery_edge_context(%s, '{}'::uuid[], '{}'::uuid[], NULL, "
            "'{}'::uuid[], '{}'::text[])",
            (team,),
        )

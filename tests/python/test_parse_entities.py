"""dm.parse_query against team data: entity mentions and predicate hints stay inside the team."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import create_database_from_template, drop_database
from densemem.store import write
from densemem.store.parse import parse_query
from densemem.store.session import Principal, acting_as


@dataclass
class World:
    url: str
    admin: psycopg.Connection[Any]
    a: Principal
    b: Principal


def make_team(admin: psycopg.Connection[Any], name: str) -> Principal:
    team, profile = uuid.uuid4(), uuid.uuid4()
    admin.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team, name))
    admin.execute(
        "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'writer')",
        (team, profile),
    )
    return Principal(team_id=team, profile_id=profile)


@pytest.fixture(scope="module")
def world(admin_url: str, template_url: str) -> Iterator[World]:
    url = create_database_from_template(admin_url)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            yield World(url, admin, make_team(admin, "alpha"), make_team(admin, "beta"))
    finally:
        drop_database(admin_url, url)


def entities(conn: psycopg.Connection[Any], who: Principal, items: list[write.EntityItem]) -> list[uuid.UUID]:
    with acting_as(conn, who) as cur:
        return write.upsert_entities(cur, team_id=who.team_id, items=items)


def parse(conn: psycopg.Connection[Any], who: Principal, query: str) -> dict[str, Any]:
    with acting_as(conn, Principal(team_id=who.team_id)) as cur:
        return parse_query(cur, query=query, team_id=who.team_id)


def team_entity_ids(admin: psycopg.Connection[Any], team: uuid.UUID) -> set[uuid.UUID]:
    rows = admin.execute("SELECT entity_id FROM dm_private.entities WHERE team_id = %s", (team,)).fetchall()
    return {r[0] for r in rows}


def test_same_name_entity_of_another_team_never_appears(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        (a_zephyr,) = entities(conn, world.a, [{"name": "Zephyr Quill"}])
        b_zephyr, b_marlowe = entities(conn, world.b, [{"name": "Zephyr Quill"}, {"name": "Marlowe Finch"}])
        parsed = parse(conn, world.a, "What does Zephyr Quill think of Marlowe Finch and Marlow Finch?")
        ids = [uuid.UUID(e["entity_id"]) for e in parsed["entities"]]
        assert ids == [a_zephyr]
        assert parsed["entities"][0]["match"] == "exact"
        assert parsed["entities"][0]["name"] == "Zephyr Quill"
        assert b_zephyr not in ids and b_marlowe not in ids
        # Team B sees its own two, the misspelling included.
        parsed_b = parse(conn, world.b, "What does Zephyr Quill think of Marlow Finch?")
        assert {uuid.UUID(e["entity_id"]) for e in parsed_b["entities"]} == {b_zephyr, b_marlowe}
        assert {e["match"] for e in parsed_b["entities"]} == {"exact", "trigram"}


def test_exact_alias_and_trigram_matches(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        (carol,) = entities(conn, world.a, [{"name": "Caroline Brightwater", "aliases": ["Caro"]}])
        (melanie,) = entities(conn, world.a, [{"name": "Melanie"}])
        exact = parse(conn, world.a, "When did caroline brightwater's sister call?")
        assert [(e["entity_id"], e["match"], e["similarity"]) for e in exact["entities"]] == [
            (str(carol), "exact", 1.0)
        ]
        alias = parse(conn, world.a, "Did Caro go camping?")
        assert [(e["entity_id"], e["match"], e["mention"]) for e in alias["entities"]] == [
            (str(carol), "alias", "caro")
        ]
        fuzzy = parse(conn, world.a, "What did Melanei paint?")
        assert [(e["entity_id"], e["match"]) for e in fuzzy["entities"]] == [(str(melanie), "trigram")]
        assert 0.45 <= fuzzy["entities"][0]["similarity"] < 1.0
        nothing = parse(conn, world.a, "What did the painter paint?")
        assert nothing["entities"] == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9),
        min_size=2,
        max_size=2,
        unique=True,
    ),
    both=st.booleans(),
    typo=st.booleans(),
)
def test_entity_lookup_is_team_scoped(world: World, words: list[str], both: bool, typo: bool) -> None:
    name = " ".join(w.capitalize() for w in words)
    with psycopg.connect(world.url) as conn:
        entities(conn, world.b, [{"name": name, "aliases": [words[0].capitalize()]}])
        if both:
            entities(conn, world.a, [{"name": name}])
        mention = name[:-1] if typo else name
        parsed = parse(conn, world.a, f"What did {mention} say about {words[0].capitalize()}?")
    found = {uuid.UUID(e["entity_id"]) for e in parsed["entities"]}
    assert found <= team_entity_ids(world.admin, world.a.team_id)
    assert not found & team_entity_ids(world.admin, world.b.team_id)


def test_parse_query_checks_the_team(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), acting_as(conn, world.a) as cur:
            parse_query(cur, query="Zephyr Quill", team_id=world.b.team_id)
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification), conn.transaction():
            conn.execute("SET LOCAL ROLE densemem_app")
            conn.execute("SELECT dm.parse_query('Zephyr Quill', %s)", (world.a.team_id,))
        # The definer lookup checks the team by itself too.
        with pytest.raises(psycopg.errors.InsufficientPrivilege), acting_as(conn, world.a) as cur:
            cur.execute(
                "SELECT dm_private.match_query_entities(%s, '{zephyr quill}', '{zephyr}')", (world.b.team_id,)
            )


def test_predicate_hints_use_defaults_and_team_overrides(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        query = "Who works on the parser and who maintains it?"
        assert parse(conn, world.a, query)["predicates"] == ["works_on", "maintains"]
        with acting_as(conn, world.a) as cur:
            # Team A reads "works on" as contributes_to, and silences "maintains".
            cur.execute(
                "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate, enabled) VALUES "
                "(%(t)s, 'works on', 'contributes_to', true), (%(t)s, 'maintains', 'maintains', false)",
                {"t": world.a.team_id},
            )
        assert parse(conn, world.a, query)["predicates"] == ["contributes_to"]
        # Team B keeps the defaults and never sees team A's rows.
        assert parse(conn, world.b, query)["predicates"] == ["works_on", "maintains"]
        with acting_as(conn, world.b) as cur:
            cur.execute("SELECT count(*) AS n FROM dm_private.predicate_synonyms")
            row = cur.fetchone()
            assert row is not None and row["n"] == 0


def test_parse_query_output_shape(world: World) -> None:
    with psycopg.connect(world.url) as conn:
        parsed = parse(conn, world.a, 'When did Zephyr Quill fix ABC-123 "the leak" last week?')
    assert set(parsed) == {"anchors", "phrases", "terms", "entities", "predicates", "time"}
    assert parsed["anchors"] == [{"kind": "issue_key", "value": "ABC-123", "required": True}]
    assert parsed["phrases"] == ["the leak"]
    assert "zephyr" in parsed["terms"] and "leak" in parsed["terms"]
    assert parsed["time"]["temporal_question"] is True
    assert parsed["time"]["expressions"] == ["last week"]
    assert set(parsed["time"]["window"]) == {"from", "to"}
    assert {"entity_id", "name", "mention", "match", "similarity"} <= set(parsed["entities"][0])


def test_an_analyst_parses_only_for_a_granted_team(world: World) -> None:
    """The definer lookups re-check an analyst's team grant (dm_private.require_team as densemem_searcher)."""
    role = "parse_entities_analyst"
    world.admin.execute(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'parse_entities_analyst') THEN "
        "CREATE ROLE parse_entities_analyst LOGIN IN ROLE densemem_analyst; END IF; END $$"
    )
    world.admin.execute("SELECT dm.grant_team_to_role(%s, %s)", (world.a.team_id, role))
    with psycopg.connect(world.url) as conn:
        entities(conn, world.a, [{"name": "Orla Venn"}])
    conninfo = psycopg.conninfo.conninfo_to_dict(world.url)
    conninfo["user"] = role
    conninfo.pop("password", None)
    with psycopg.connect(
        psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in conninfo.items()})
    ) as analyst:
        with analyst.transaction():
            analyst.execute("SELECT set_config('densemem.team_id', %s, true)", (str(world.a.team_id),))
            row = analyst.execute(
                "SELECT dm.parse_query('Who works with Orla Venn?', %s)", (world.a.team_id,)
            ).fetchone()
            assert row is not None
            assert [e["name"] for e in row[0]["entities"]] == ["Orla Venn"]
            assert row[0]["predicates"] == []
        with pytest.raises(psycopg.errors.InsufficientPrivilege), analyst.transaction():
            analyst.execute("SELECT set_config('densemem.team_id', %s, true)", (str(world.b.team_id),))
            analyst.execute("SELECT dm.parse_query('Who is Orla Venn?', %s)", (world.b.team_id,))

"""Session 11: dm.parse_query reads a team's names and phrases from dm_private.parse_lexicon.

The table (migration 0068) is derived: one row per entity name or alias, with
its entity's canonical name, and one per team predicate synonym, kept by
statement triggers on entity_names, entities and predicate_synonyms. These
tests drive every kind of write (upsert_entities with aliases, a second upsert
of the same names, direct inserts, updates, deletes, cascaded deletes, a
canonical rename, truncation, a rolled-back write, a bulk load in replica mode)
and after each compare the table with what the source tables say it must hold,
and the parse with its table-reading reference helpers
(dm_private.match_query_entities, dm_private.predicate_hints), which never read
the lexicon.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import create_database_from_template, drop_database
from densemem.store.session import Principal, acting_as

CLOCK = "2024-03-15T12:00:00Z"

# What dm_private.parse_lexicon must hold, computed from the source tables.
EXPECTED = """
SELECT n.team_id, n.normalized_name AS phrase, 'n'::"char" AS kind, n.entity_id::text AS ref,
       ARRAY[n.entity_id::text, n.normalized_name, CASE WHEN n.is_canonical THEN 't' ELSE 'f' END,
             e.canonical_name] AS entry
FROM dm_private.entity_names AS n
JOIN dm_private.entities AS e ON e.team_id = n.team_id AND e.entity_id = n.entity_id
UNION ALL
SELECT s.team_id, s.phrase, 's', s.predicate,
       ARRAY[s.predicate, s.phrase, CASE WHEN s.enabled THEN '' ELSE ' -' END, '']
FROM dm_private.predicate_synonyms AS s
"""
ACTUAL = "SELECT l.team_id, l.phrase, l.kind, l.ref, l.entry FROM dm_private.parse_lexicon AS l"

QUERIES = [
    "What did Caroline Brightwater and Caro say about the Blue Harbor project?",
    "Who works on Dense Mem, who maintains it and who mentors Marlowe Finch?",
    "Does marlowe finch hang out with caroline brightwater? Is Zephyr a friend of Caro?",
    "when did the big move happen and who owns the blue harbor light tower",
]


def differences(admin: psycopg.Connection[Any]) -> list[Any]:
    rows = admin.execute(
        f"(({EXPECTED}) EXCEPT ALL ({ACTUAL})) UNION ALL (({ACTUAL}) EXCEPT ALL ({EXPECTED}))"
    ).fetchall()
    return list(rows)


@pytest.fixture(scope="module")
def url(admin_url: str, template_url: str) -> Iterator[str]:
    database = create_database_from_template(admin_url)
    try:
        yield database
    finally:
        drop_database(admin_url, database)


def make_team(admin: psycopg.Connection[Any], name: str) -> Principal:
    team, profile = uuid.uuid4(), uuid.uuid4()
    admin.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team, name))
    admin.execute(
        "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'writer')",
        (team, profile),
    )
    return Principal(team_id=team, profile_id=profile)


def upsert(conn: psycopg.Connection[Any], who: Principal, items: list[dict[str, Any]]) -> list[uuid.UUID]:
    with acting_as(conn, who) as cur:
        cur.execute("SELECT dm.upsert_entities(%s, %s::jsonb) AS ids", (who.team_id, json.dumps(items)))
        row = cur.fetchone()
        assert row is not None
        return list(row["ids"])


def parse_matches_reference(conn: psycopg.Connection[Any], who: Principal) -> None:
    """The parse's entities and predicates equal the reference helpers' (which read the source tables)."""
    with acting_as(conn, Principal(team_id=who.team_id)) as cur:
        for query in QUERIES:
            cur.execute(
                "SELECT dm.parse_query(%(q)s, %(t)s, %(c)s) AS parsed, "
                "dm_private.query_name_keys(dm_private.parse_prepare_text(%(q)s)) AS keys",
                {"q": query, "t": who.team_id, "c": CLOCK},
            )
            row = cur.fetchone()
            assert row is not None
            ngrams, fuzzy = row["keys"]
            cur.execute(
                "SELECT dm_private.match_query_entities(%(t)s, %(n)s, %(f)s) AS entities, "
                "dm_private.predicate_hints(%(t)s, %(n)s) AS predicates",
                {"t": who.team_id, "n": ngrams, "f": fuzzy},
            )
            reference = cur.fetchone()
            assert reference is not None
            assert row["parsed"]["entities"] == reference["entities"], query
            assert row["parsed"]["predicates"] == reference["predicates"], query


def test_every_write_keeps_the_lexicon_exact(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as admin, psycopg.connect(url) as conn:
        a, b = make_team(admin, "lexicon-a"), make_team(admin, "lexicon-b")
        assert differences(admin) == []

        carol, _harbor, _dense = upsert(
            conn,
            a,
            [
                {"name": "Caroline Brightwater", "aliases": ["Caro", "C. Brightwater"]},
                {"name": "Blue Harbor Light Tower", "aliases": ["Blue Harbor"]},
                {"name": "Dense Mem"},
            ],
        )
        # The same names again (no new row) and another team's same names.
        upsert(conn, a, [{"name": "caroline brightwater", "aliases": ["CARO"]}])
        upsert(conn, b, [{"name": "Caroline Brightwater"}, {"name": "Marlowe Finch", "aliases": ["Marl"]}])
        assert differences(admin) == []
        assert admin.execute("SELECT count(*) FROM dm_private.parse_lexicon").fetchone() == (9,)

        with acting_as(conn, a) as cur:
            cur.execute(
                "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate, enabled) VALUES "
                "(%(t)s, 'works on', 'contributes_to', true), (%(t)s, 'maintains', 'maintains', false), "
                "(%(t)s, 'hang out with', 'friend_of', true), (%(t)s, 'mentors', 'mentors', true)",
                {"t": a.team_id},
            )
        assert differences(admin) == []
        parse_matches_reference(conn, a)
        parse_matches_reference(conn, b)

        with acting_as(conn, a) as cur:
            cur.execute(
                "UPDATE dm_private.predicate_synonyms SET enabled = NOT enabled WHERE team_id = %s",
                (a.team_id,),
            )
            cur.execute(
                "UPDATE dm_private.predicate_synonyms SET phrase = 'is a friend of' "
                "WHERE team_id = %s AND phrase = 'hang out with'",
                (a.team_id,),
            )
            cur.execute(
                "DELETE FROM dm_private.predicate_synonyms WHERE team_id = %s AND phrase = 'mentors'",
                (a.team_id,),
            )
        assert differences(admin) == []
        parse_matches_reference(conn, a)

        # Names changed and deleted by direct SQL, a renamed entity.
        admin.execute(
            "UPDATE dm_private.entity_names SET normalized_name = 'zephyr', name = 'Zephyr' "
            "WHERE team_id = %s AND normalized_name = 'caro'",
            (a.team_id,),
        )
        admin.execute(
            "DELETE FROM dm_private.entity_names WHERE team_id = %s AND normalized_name = 'blue harbor'",
            (a.team_id,),
        )
        admin.execute(
            "UPDATE dm_private.entities SET canonical_name = 'Caroline B.' "
            "WHERE team_id = %s AND entity_id = %s",
            (a.team_id, carol),
        )
        assert differences(admin) == []
        parse_matches_reference(conn, a)

        # A rolled-back write leaves nothing behind.
        with pytest.raises(RuntimeError), conn.transaction():
            conn.execute(
                "SELECT set_config('densemem.team_id', %s, true), "
                "set_config('densemem.profile_id', %s, true)",
                (str(a.team_id), str(a.profile_id)),
            )
            ghost = json.dumps([{"name": "Ghost"}])
            conn.execute("SELECT dm.upsert_entities(%s, %s::jsonb)", (a.team_id, ghost))
            raise RuntimeError("roll back")
        assert differences(admin) == []

        # A bulk load in replica mode (the triggers are ENABLE ALWAYS).
        with admin.transaction():
            admin.execute("SET LOCAL session_replication_role = replica")
            entity = uuid.uuid4()
            admin.execute(
                "INSERT INTO dm_private.entities (team_id, entity_id, canonical_name, normalized_name) "
                "VALUES (%s, %s, 'Bulk Name', 'bulk name')",
                (b.team_id, entity),
            )
            admin.execute(
                "INSERT INTO dm_private.entity_names "
                "(team_id, entity_id, name, normalized_name, is_canonical) "
                "VALUES (%s, %s, 'Bulk Name', 'bulk name', true)",
                (b.team_id, entity),
            )
        assert differences(admin) == []

        # Deleting entities cascades to their names, and their rows go.
        admin.execute(
            "DELETE FROM dm_private.entities WHERE team_id = %s AND entity_id = %s", (a.team_id, carol)
        )
        assert differences(admin) == []
        parse_matches_reference(conn, a)
        parse_matches_reference(conn, b)

        admin.execute("TRUNCATE dm_private.predicate_synonyms")
        assert differences(admin) == []
        admin.execute("TRUNCATE dm_private.entity_names")
        assert differences(admin) == []
        assert admin.execute("SELECT count(*) FROM dm_private.parse_lexicon").fetchone() == (0,)


def test_the_lexicon_stays_inside_the_team(url: str) -> None:
    """The service role reads and writes only its own team's rows; other roles never write them."""
    with psycopg.connect(url, autocommit=True) as admin, psycopg.connect(url) as conn:
        a, b = make_team(admin, "lexicon-c"), make_team(admin, "lexicon-d")
        upsert(conn, a, [{"name": "Only In A"}])
        upsert(conn, b, [{"name": "Only In B"}])
        with acting_as(conn, a) as cur:
            cur.execute("SELECT DISTINCT team_id FROM dm_private.parse_lexicon")
            assert [r["team_id"] for r in cur.fetchall()] == [a.team_id]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                cur.execute(
                    "INSERT INTO dm_private.parse_lexicon (team_id, phrase, kind, ref, entry) "
                    "VALUES (%s, 'x', 'n', 'y', '{a,b,c,d}')",
                    (b.team_id,),
                )

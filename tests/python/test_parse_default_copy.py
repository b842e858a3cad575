"""Session 9: dm.parse_query reads the default predicate synonyms from a constant.

dm_private.parse_query_team no longer scans dm_private.predicate_synonym_defaults
on every parse (the scan read most of its 81 rows: ~70 k instructions per
parse). dm_private.parse_default_synonyms() holds the same rows as a constant
(first word -> text of {{predicate, phrase}, ...}); the IMMUTABLE function is
folded into the cached plan of the expression that calls it, and a statement
trigger on the table rewrites it after every change. These tests check that
the copy equals the table, that every kind of change (insert, update, delete,
truncate, rollback) reaches the parse, in the writing session and in a session
whose plan was cached before the change, and that the parse still equals the
table-reading reference (dm_private.predicate_hints) with changed defaults.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import create_database_from_template, drop_database
from densemem.store.session import Principal, acting_as

CLOCK = "2024-03-15T12:00:00Z"
BOTH = ["friend_of", "works_on"]

# The copy as the table says it should be, computed independently of
# dm_private.parse_write_default_synonyms (pairs compared as sets).
TABLE_PAIRS = "SELECT d.predicate, d.phrase FROM dm_private.predicate_synonym_defaults AS d"
COPY_PAIRS = (
    "SELECT p[1] AS predicate, p[2] AS phrase, c.key AS first_word "
    "FROM jsonb_each_text(dm_private.parse_default_synonyms()) AS c (key, value), "
    "LATERAL (SELECT c.value::text[] AS a) AS arr, "
    "LATERAL (SELECT ARRAY[arr.a[i][1], arr.a[i][2]] AS p FROM generate_subscripts(arr.a, 1) AS i) AS x"
)


@pytest.fixture(scope="module")
def url(admin_url: str, template_url: str) -> Iterator[str]:
    database = create_database_from_template(admin_url)
    try:
        yield database
    finally:
        drop_database(admin_url, database)


@pytest.fixture(scope="module")
def team(url: str) -> Principal:
    team_id, profile = uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team_id, "defaults-copy")
        )
        admin.execute(
            "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'writer')",
            (team_id, profile),
        )
    return Principal(team_id=team_id, profile_id=profile)


def copy_matches_table(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT (SELECT array_agg(ARRAY[predicate, phrase] ORDER BY phrase, predicate) "
        f"  FROM ({TABLE_PAIRS}) t) "
        f"  IS NOT DISTINCT FROM "
        f"  (SELECT array_agg(ARRAY[predicate, phrase] ORDER BY phrase, predicate) FROM ({COPY_PAIRS}) c), "
        f"  NOT EXISTS (SELECT 1 FROM ({COPY_PAIRS}) c WHERE split_part(c.phrase, ' ', 1) <> c.first_word)"
    ).fetchone()
    assert row is not None
    return bool(row[0]) and bool(row[1])


def parse_and_reference(conn: psycopg.Connection[Any], team: Principal, query: str) -> tuple[Any, Any]:
    with acting_as(conn, Principal(team_id=team.team_id)) as cur:
        cur.execute(
            "SELECT dm.parse_query(%(q)s, %(t)s, %(c)s) -> 'predicates' AS one, "
            "dm_private.predicate_hints(%(t)s, dm_private.query_ngrams(%(q)s)) AS two",
            {"q": query, "t": team.team_id, "c": CLOCK},
        )
        row = cur.fetchone()
    assert row is not None
    return row["one"], row["two"]


def test_copy_equals_the_table(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM dm_private.predicate_synonym_defaults").fetchone() == (81,)
        assert copy_matches_table(conn)
        row = conn.execute(
            "SELECT p.provolatile, pg_get_userbyid(p.proowner), "
            "  COALESCE('search_path=\"\"' = ANY (p.proconfig), false), "
            "  obj_description(p.oid, 'pg_proc') IS NOT NULL, p.proacl IS NOT NULL "
            "  AND NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0) "
            "FROM pg_proc AS p WHERE p.oid = 'dm_private.parse_default_synonyms()'::regprocedure"
        ).fetchone()
        assert row == ("i", "densemem_owner", True, True, True)


def test_every_change_reaches_the_parse(url: str, team: Principal) -> None:
    """The defaults are written by a superuser (row-level security lets every other role only read them),
    as migration 0010 seeded them."""
    query = "Who hangs out with Tim and works on the roof?"
    with (
        psycopg.connect(url, autocommit=True) as writer,
        psycopg.connect(url, autocommit=True) as reader,
    ):
        # The reader's plan is cached before every change.
        assert parse_and_reference(reader, team, query) == (["works_on"], ["works_on"])

        writer.execute(
            "INSERT INTO dm_private.predicate_synonym_defaults (phrase, predicate) "
            "VALUES ('hangs out', 'friend_of')"
        )
        assert copy_matches_table(writer)
        assert parse_and_reference(reader, team, query) == (BOTH, BOTH)

        writer.execute(
            "UPDATE dm_private.predicate_synonym_defaults SET phrase = 'hangs out with' "
            "WHERE phrase = 'hangs out'"
        )
        assert copy_matches_table(writer)
        assert parse_and_reference(reader, team, query) == (BOTH, BOTH)
        assert parse_and_reference(reader, team, "Who hangs out?") == ([], [])

        writer.execute("DELETE FROM dm_private.predicate_synonym_defaults WHERE phrase = 'hangs out with'")
        assert copy_matches_table(writer)
        assert parse_and_reference(reader, team, query) == (["works_on"], ["works_on"])

        # A change rolled back leaves the copy as it was.
        with writer.transaction(force_rollback=True):
            writer.execute("TRUNCATE dm_private.predicate_synonym_defaults")
            assert writer.execute("SELECT dm_private.parse_default_synonyms()").fetchone() == ({},)
            # The writing session sees its own change at once.
            assert parse_and_reference(writer, team, query) == ([], [])
        assert copy_matches_table(writer)
        assert parse_and_reference(reader, team, query) == (["works_on"], ["works_on"])
        assert parse_and_reference(writer, team, query) == (["works_on"], ["works_on"])
        # Rewritten by a superuser, the function keeps its owner, comment and grants.
        test_copy_equals_the_table(url)


def test_phrases_that_need_quoting_survive_the_copy(url: str, team: Principal) -> None:
    """A phrase with characters that array and JSON literals quote ({, ", \\, ', commas) reads back."""
    phrases = ['o"neil', "d'arcy", "a{b},c", "back\\slash", "naïve café", "null"]
    with psycopg.connect(url, autocommit=True) as writer, psycopg.connect(url, autocommit=True) as reader:
        for phrase in phrases:
            writer.execute(
                "INSERT INTO dm_private.predicate_synonym_defaults (phrase, predicate) VALUES (%s, 'quoted')",
                (phrase,),
            )
        try:
            assert copy_matches_table(writer)
            for phrase in phrases:
                assert parse_and_reference(reader, team, f"x {phrase} y") == (["quoted"], ["quoted"]), phrase
        finally:
            writer.execute("DELETE FROM dm_private.predicate_synonym_defaults WHERE predicate = 'quoted'")
        assert copy_matches_table(writer)

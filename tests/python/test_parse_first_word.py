"""Session 8: dm.parse_query looks the team's names and phrases up by their first word.

dm.parse_query no longer builds the query's 1-4 token n-grams for its team
lookup: dm_private.parse_query_team reads the names, aliases and synonym
phrases whose first word is one of the query's tokens (migration 0060) and
keeps those of one to four words that stand between spaces in the tokens,
which is n-gram equality. The predicates' order uses the first character
offset instead of the first n-gram position. These tests compare the answer
with the n-gram reference helpers (dm_private.match_query_entities and
dm_private.predicate_hints on dm_private.query_ngrams) on a vocabulary made to
break the rule: names and phrases that share a first word, that continue past
the query's tokens, of five and six words, repeated in the query, across the
64-token cap; and check that the lookup is planned once (a graph-less team
kept custom plans and planned the lookup on every parse).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import create_database_from_template, drop_database
from densemem.store import write
from densemem.store.session import Principal, acting_as

CLOCK = "2024-03-15T12:00:00Z"

# Names share first words ("red", "big") and continue in several ways; some
# have five or six words (never an n-gram); "red" alone is an alias too.
NAMES: list[write.EntityItem] = [
    {"name": "Red", "aliases": ["red fox"]},
    {"name": "Red Fox Inc", "aliases": ["red fox inc ltd", "the red"]},
    {"name": "Big Red Fox Den", "aliases": ["big red"]},
    {"name": "Big Red Fox Den Two", "aliases": ["big red fox den two three"]},
    {"name": "Fox", "aliases": ["fox den"]},
    {"name": "Den Mother"},
    {"name": "The Den"},
]
# (phrase, predicate, enabled): team phrases share first words with each other,
# with the names and with the defaults ("works on", "lives in", "member of").
SYNONYMS = [
    ("red", "colour_of", True),
    ("red fox", "is_a", True),
    ("works on", "builds", True),
    ("works", "toils", True),
    ("lives in", "resides_in", False),
    ("big red fox den", "four_words", True),  # phrases have 1-4 words (a check constraint)
    ("fox den", "lives_in", True),
    ("member", "joins", True),
]
WORDS = [
    "red",
    "Red",
    "fox",
    "Fox",
    "den",
    "inc",
    "ltd",
    "big",
    "Big",
    "two",
    "three",
    "mother",
    "the",
    "The",
    "works",
    "on",
    "lives",
    "in",
    "member",
    "of",
    "uses",
    "likes",
    "went",
    "to",
    "paint",
    "redfox",
    "red-fox",
    "Red's",
    "fox,",
    "den?",
    '"red fox"',
    "when",
    "last",
    "week",
]


@pytest.fixture(scope="module")
def url(admin_url: str, template_url: str) -> Iterator[str]:
    database = create_database_from_template(admin_url)
    try:
        yield database
    finally:
        drop_database(admin_url, database)


@pytest.fixture(scope="module")
def conn(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(url, autocommit=True) as connection:
        yield connection


def make_team(admin: psycopg.Connection[Any], name: str) -> Principal:
    team, profile = uuid.uuid4(), uuid.uuid4()
    admin.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team, name))
    admin.execute(
        "INSERT INTO dm_private.profiles (team_id, profile_id, name) VALUES (%s, %s, 'writer')",
        (team, profile),
    )
    return Principal(team_id=team, profile_id=profile)


@pytest.fixture(scope="module")
def word_team(url: str, conn: psycopg.Connection[Any]) -> Principal:
    team = make_team(conn, f"first-word-{uuid.uuid4().hex[:8]}")
    with psycopg.connect(url) as session, acting_as(session, team) as cur:
        write.upsert_entities(cur, team_id=team.team_id, items=NAMES)
        for phrase, predicate, enabled in SYNONYMS:
            cur.execute(
                "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate, enabled) "
                "VALUES (%s, %s, %s, %s)",
                (team.team_id, phrase, predicate, enabled),
            )
    return team


@pytest.fixture(scope="module")
def graphless_team(conn: psycopg.Connection[Any]) -> Principal:
    return make_team(conn, f"graphless-{uuid.uuid4().hex[:8]}")


def _parse_and_reference(url: str, team: Principal, query: str) -> tuple[str, str]:
    with psycopg.connect(url) as session, acting_as(session, Principal(team_id=team.team_id)) as cur:
        cur.execute(
            "SELECT dm.parse_query(%(q)s, %(t)s, %(c)s)::text AS one, "
            "(dm_private.parse_query_text(%(q)s, %(c)s) || jsonb_build_object("
            "  'entities', dm_private.match_query_entities(%(t)s, dm_private.query_ngrams(%(q)s), "
            "    dm_private.query_fuzzy_keys(dm_private.query_tokens_cased(%(q)s))), "
            "  'predicates', dm_private.predicate_hints(%(t)s, dm_private.query_ngrams(%(q)s))))::text "
            "AS two",
            {"q": query, "t": team.team_id, "c": CLOCK},
        )
        row = cur.fetchone()
    assert row is not None
    return row["one"], row["two"]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=20), lower=st.booleans())
def test_first_word_lookup_equals_the_ngram_reference(
    url: str, word_team: Principal, words: list[str], lower: bool
) -> None:
    """Names, aliases and phrases found by their first word are exactly the n-gram matches, and
    the predicates come in the n-grams' first-position order."""
    query = " ".join(words)
    one, two = _parse_and_reference(url, word_team, query.lower() if lower else query)
    assert one == two


@pytest.mark.parametrize(
    "query",
    [
        "big red fox den two three",  # a six-word alias: never an n-gram
        "Big Red Fox Den Two",  # a five-word name: never an n-gram; its four-word start is a phrase
        "red fox den",  # three names and two phrases starting at two tokens
        "fox den red fox red",  # repeated: the first occurrence decides the order
        "works on red works",  # team phrase and default of one first word
        "the red den mother the den",
        "redfox red-fox Red's",  # inner punctuation stays in the token
        "a " * 62 + "red fox",  # the last two of 64 tokens
        "a " * 63 + "red fox",  # "fox" is past the 64-token cap
        "red",
        "",
    ],
)
def test_first_word_lookup_at_the_edges(url: str, word_team: Principal, query: str) -> None:
    one, two = _parse_and_reference(url, word_team, query)
    assert one == two


def test_first_word_lookup_matches_what_it_should(url: str, word_team: Principal) -> None:
    """Not only equal to the reference: the expected entities and predicates are found."""
    one, _ = _parse_and_reference(url, word_team, "Did the red fox den work on a member of it?")
    parsed = json.loads(one)
    # red (canonical of Red, also reached by its alias "red fox"), fox (canonical of Fox, also
    # "fox den"), "the red" (alias of Red Fox Inc); not "the den", "den mother", "big red".
    assert sorted(e["mention"] for e in parsed["entities"]) == ["fox", "red", "the red"]
    assert [e["match"] for e in parsed["entities"]] == ["exact", "exact", "alias"]
    # By first position: red (token 3), red fox (token 3, longer), fox den (token 4), ... member.
    assert parsed["predicates"][:3] == ["colour_of", "is_a", "lives_in"]
    assert "joins" in parsed["predicates"]


@pytest.mark.parametrize(
    "query",
    ["When did Caroline go to the support group?", "works on red fox", "", "member of the team"],
)
def test_graphless_team_equals_the_reference(url: str, graphless_team: Principal, query: str) -> None:
    one, two = _parse_and_reference(url, graphless_team, query)
    assert one == two


def test_lookup_is_planned_once(conn: psycopg.Connection[Any]) -> None:
    """The lookup forces one generic plan: with custom plans a team without entities or synonyms
    planned the lookup statement on every parse (~2.5 M instructions instead of ~0.5 M)."""
    row = conn.execute(
        "SELECT p.prosecdef, pg_get_userbyid(p.proowner), p.provolatile, "
        "  COALESCE('search_path=\"\"' = ANY (p.proconfig), false), "
        "  COALESCE('plan_cache_mode=force_generic_plan' = ANY (p.proconfig), false), "
        "  obj_description(p.oid, 'pg_proc') IS NOT NULL, "
        "  NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0) AND p.proacl IS NOT NULL "
        "FROM pg_proc AS p "
        "WHERE p.oid = 'dm_private.parse_query_team(uuid, text[], text[], text[], "
        "jsonb, jsonb, jsonb, jsonb)'::regprocedure"
    ).fetchone()
    assert row == (True, "densemem_searcher", "s", True, True, True, True)


def test_lookup_reads_the_first_word_indexes(conn: psycopg.Connection[Any], word_team: Principal) -> None:
    """The names lookup's condition is served by the lexicon's key (migration 0068): the team, then
    the first two words (this test database is too small for the planner to prefer it unprompted)."""
    conn.execute("SET enable_seqscan = off")
    plan = conn.execute(
        "EXPLAIN (GENERIC_PLAN) SELECT l.entry FROM dm_private.parse_lexicon AS l "
        "WHERE l.team_id = $1 AND l.first_word = ANY ($2) AND l.second_word = ANY ($3)"
    ).fetchall()
    conn.execute("RESET enable_seqscan")
    text = "\n".join(r[0] for r in plan)
    assert "parse_lexicon_pkey" in text, text
    condition = "Index Cond: ((team_id = $1) AND (first_word = ANY ($2)) AND (second_word = ANY ($3)))"
    assert condition in text, text
    row = conn.execute(
        "SELECT pg_get_indexdef('dm_private.parse_lexicon_pkey'::regclass), "
        "to_regclass('dm_private.entity_names_first_word_idx') IS NULL, "
        "to_regclass('dm_private.predicate_synonyms_first_word_idx') IS NULL, "
        "to_regclass('dm_private.predicate_synonym_defaults_first_word_idx') IS NULL"
    ).fetchone()
    assert row is not None
    # The second word is a key too: names sharing a first word ("person 1" ... "person 99980")
    # are not all read when the query holds that word.
    assert "(team_id, first_word, second_word, phrase, kind, ref)" in row[0]
    # The team's names and phrases are read from dm_private.parse_lexicon (migration 0068) and the
    # defaults from their constant copy (dm_private.parse_default_synonyms()), so the 0060
    # first-word indexes are gone (migrations 0067 and 0069).
    assert row[1:] == (True, True, True)

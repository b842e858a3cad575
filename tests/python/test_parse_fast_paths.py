"""The fast paths of dm.parse_query give the same answers as the plain rules.

Session 2 made the parse cheaper without changing any answer
(docs/QUERY_GRAMMAR.md, "Cost"). Each shortcut is checked here against a
reference that does not take it:

- the printable-ASCII shortcut of dm_private.parse_prepare_text against
  translate() of any text;
- the n-grams (dm_private.query_token_ngrams) and trigram candidates
  (dm_private.query_fuzzy_keys) against Python implementations of the
  documented rules;
- the anchor guards (a short regular expression every match of a grammar
  contains) and the time walker's skip of tokens that open no expression, on
  identifiers and time forms at the edges of those guards; the expected
  values are what the parser returned before the shortcuts existed;
- the byte-order (COLLATE "C") n-gram lookups of entity names and predicate
  synonyms on non-ASCII names and phrases;
- the team check, now made once by the definer lookup, still comes before
  any answer: another team, or no team, is refused even for an empty query;
- session 3: the one-statement team lookup (dm_private.match_query_names,
  rows ordered in PL/pgSQL) against the sorting SQL lookups it replaced in
  dm.parse_query (dm_private.match_query_entities and
  dm_private.predicate_hints), on generated queries that match several names
  of one entity, more than ten and sixteen name rows and several predicates.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import create_database_from_template, drop_database
from densemem.store import write
from densemem.store.parse import parse_query
from densemem.store.session import Principal, acting_as

SQL_FILE = Path(__file__).resolve().parents[2] / "sql" / "20_parse_query.sql"
CLOCK = "2024-03-15T12:00:00Z"
# dm_private.parse_prepare_text's replacement list (the plain rule).
PREPARE_FROM = (
    "\t\n\x0b\x0c\r\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u200b\u202f\u205f\u3000\ufeff\u2019\u2018"
)
PREPARE_TO = " " * 22 + "''"


def _fuzzy_word_lists() -> tuple[set[str], set[str]]:
    """The stop words and stop + calendar words of dm_private.query_fuzzy_keys, read from its source."""
    source = SQL_FILE.read_text(encoding="utf-8")
    body = source[source.index("FUNCTION dm_private.query_fuzzy_keys") :]
    lists = re.findall(r"'\{([a-z,]+)\}'::text \[\]", body[: body.index("$$;")])
    stop, capitalized_stop = (set(words.split(",")) for words in lists[:2])
    return stop, capitalized_stop


STOP, CAPITALIZED_STOP = _fuzzy_word_lists()


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


# ---------------------------------------------------------------- prepared text

ODD_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list(PREPARE_FROM) + list(" ~!azAZ09\u00e9\u201c\u201d\u00ad\u4e2d\U0001f600\x7f")),
        st.characters(codec="utf-8", exclude_characters="\x00"),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ODD_TEXT, pad=st.booleans())
def test_prepared_text_equals_translate(conn: psycopg.Connection[Any], text: str, pad: bool) -> None:
    query = ("x" * 1990 + text) if pad else text
    row = conn.execute(
        "SELECT dm_private.parse_prepare_text(%(q)s), "
        "translate(left(COALESCE(%(q)s, ''), 2000), %(f)s, %(t)s)",
        {"q": query, "f": PREPARE_FROM, "t": PREPARE_TO},
    ).fetchone()
    assert row is not None
    assert row[0] == row[1]


def test_prepared_text_of_null_is_empty(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute("SELECT dm_private.parse_prepare_text(NULL)").fetchone()
    assert row is not None and row[0] == ""


# ---------------------------------------------------------------- name keys

TOKENS = st.lists(
    st.one_of(
        st.sampled_from(sorted(CAPITALIZED_STOP)),
        st.sampled_from(
            ["Caroline", "Zo\u00eb", "\u00c9mile", "dense-mem", "c++", "O'Neil", "Tim's", "LGBTQ"]
        ),
        st.text(alphabet="abcdefgXYZ\u00e9\u00c9", min_size=1, max_size=8),
    ),
    max_size=14,
)


def reference_ngrams(tokens: list[str]) -> list[str]:
    return [
        " ".join(tokens[i : i + n]) for i in range(len(tokens)) for n in range(1, 5) if i + n <= len(tokens)
    ]


def reference_fuzzy(cased: list[str]) -> list[str]:
    lower = [t.lower() for t in cased]
    if " ".join(cased) == " ".join(lower):
        return [t for t in lower if len(t) >= 5 and t not in STOP][:8]
    pairs: list[str] = []
    singles: list[str] = []
    previous = False
    for i in range(1, len(cased)):
        capitalized = cased[i][0] != cased[i][0].lower() and lower[i] not in CAPITALIZED_STOP
        if capitalized and previous:
            pairs.append(f"{lower[i - 1]} {lower[i]}")
        if capitalized and len(lower[i]) >= 4:
            singles.append(lower[i])
        previous = capitalized
    return (pairs + singles)[:8]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=TOKENS, punctuation=st.sampled_from(["", "?", ",", "!"]))
def test_name_keys_follow_the_documented_rules(
    conn: psycopg.Connection[Any], tokens: list[str], punctuation: str
) -> None:
    query = " ".join(tokens) + punctuation
    row = conn.execute(
        "SELECT dm_private.query_tokens_cased(%(q)s), dm_private.query_tokens(%(q)s), "
        "(dm_private.query_name_keys(%(q)s)).ngrams, (dm_private.query_name_keys(%(q)s)).fuzzy, "
        "dm_private.query_ngrams(%(q)s)",
        {"q": query},
    ).fetchone()
    assert row is not None
    cased, lower, ngrams, fuzzy, query_ngrams = row
    assert ngrams == reference_ngrams(lower)
    assert query_ngrams == ngrams
    assert fuzzy == reference_fuzzy(cased)


def test_name_keys_of_an_empty_query(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute(
        "SELECT (dm_private.query_name_keys('')).ngrams, (dm_private.query_name_keys(' ?! ')).fuzzy, "
        "dm_private.query_token_ngrams(NULL), dm_private.query_fuzzy_keys(NULL)"
    ).fetchone()
    assert row == ([], [], [], [])


# ---------------------------------------------------------------- guards and the time walker

# What the parser returned for these before the guards existed (session 1).
EDGE_ANCHORS: dict[str, list[list[str]]] = {
    "deploy web.app_@main now": [["scoped_name", "web.app_@main"]],
    "push my-repo-@v2 today": [["scoped_name", "my-repo-@v2"]],
    "see svc:a and x:1": [["scoped_name", "svc:a"]],
    "uuid 0123ABCD-0000-4000-8000-00000000abcd ok": [["uuid", "0123abcd-0000-4000-8000-00000000abcd"]],
    "ticket PROJ-12 and AB-1 and ABCD-7": [["issue_key", "PROJ-12"], ["issue_key", "ABCD-7"]],
    "srv-a1-b2 restarted": [["server_id", "srv-a1-b2"]],
    "SRV-9 up": [["server_id", "srv-9"]],
    "version 0.0.1 and v10.20.30-rc.1+b.2": [["semver", "0.0.1"], ["semver", "v10.20.30-rc.1+b.2"]],
    "J.K. Rowling and Dr. Seuss 1.2": [],
    "commit abc1234 and ABCDEF0123 and deadbeefcafebabe12": [
        ["hash", "abc1234"],
        ["hash", "abcdef0123"],
        ["hash", "deadbeefcafebabe12"],
    ],
    "career-wise self-care 2023": [],
    "a 1.2.3.4 and 8.5.2023": [],
    "mail a.b@example.com and repo@main": [["scoped_name", "repo@main"]],
}

EDGE_TIMES: dict[str, tuple[list[str], str | None, str | None]] = {
    "prior to May 2023 and throughout the 2022": (
        ["prior to may 2023", "throughout 2022"],
        "2022-01-01T00:00:00+00:00",
        "2023-01-01T00:00:00+00:00",
    ),
    "what happened 3 days ago": (["3 days ago"], "2024-03-12T00:00:00+00:00", "2024-03-13T00:00:00+00:00"),
    "on the 8th of May": (["on 8th of may"], "2023-05-08T00:00:00+00:00", "2023-05-09T00:00:00+00:00"),
    "around Friday": (["around friday"], "2024-03-08T00:00:00+00:00", "2024-03-09T00:00:00+00:00"),
    "previous Monday": (["previous monday"], "2024-03-11T00:00:00+00:00", "2024-03-12T00:00:00+00:00"),
    "the week before last week": (["before last week"], None, "2024-03-04T00:00:00+00:00"),
    "a week ago in 2023": (
        ["a week ago", "in 2023"],
        "2024-03-04T00:00:00+00:00",
        "2024-03-11T00:00:00+00:00",
    ),
    "during 2023-05-08": (["during 2023-05-08"], "2023-05-08T00:00:00+00:00", "2023-05-09T00:00:00+00:00"),
    "since two months ago": (["since two months ago"], "2024-01-01T00:00:00+00:00", None),
    "until tomorrow": (["until tomorrow"], None, "2024-03-17T00:00:00+00:00"),
    "twelve years ago": (["twelve years ago"], "2012-01-01T00:00:00+00:00", "2013-01-01T00:00:00+00:00"),
}


@pytest.mark.parametrize("query", sorted(EDGE_ANCHORS))
def test_anchor_guards_keep_edge_identifiers(conn: psycopg.Connection[Any], query: str) -> None:
    row = conn.execute("SELECT dm_private.parse_query_text(%s, %s) -> 'anchors'", (query, CLOCK)).fetchone()
    assert row is not None
    assert [[a["kind"], a["value"]] for a in row[0]] == EDGE_ANCHORS[query]


@pytest.mark.parametrize("query", sorted(EDGE_TIMES))
def test_time_walker_keeps_edge_forms(conn: psycopg.Connection[Any], query: str) -> None:
    row = conn.execute("SELECT dm_private.parse_query_text(%s, %s) -> 'time'", (query, CLOCK)).fetchone()
    assert row is not None
    expressions, start, end = EDGE_TIMES[query]
    assert row[0]["expressions"] == expressions
    assert row[0]["window"] == {"from": start, "to": end}


# ---------------------------------------------------------------- team lookups


def test_byte_order_lookups_find_non_ascii_names_and_phrases(url: str, conn: psycopg.Connection[Any]) -> None:
    team = make_team(conn, f"bytes-{uuid.uuid4().hex[:8]}")
    other = make_team(conn, f"bytes-other-{uuid.uuid4().hex[:8]}")
    with psycopg.connect(url) as session:
        with acting_as(session, team) as cur:
            emile, zoe, ab = write.upsert_entities(
                cur,
                team_id=team.team_id,
                items=[
                    {"name": "\u00c9mile Zola", "aliases": ["\u00c9mile"]},
                    {"name": "Zo\u00eb"},
                    {"name": "A-B-C"},
                ],
            )
            cur.execute(
                "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate) VALUES "
                "(%(t)s, 'arbeitet f\u00fcr', 'works_at'), (%(t)s, 'travaille sur', 'works_on')",
                {"t": team.team_id},
            )
        with acting_as(session, other) as cur:
            write.upsert_entities(cur, team_id=other.team_id, items=[{"name": "Zo\u00eb"}])
        with acting_as(session, Principal(team_id=team.team_id)) as cur:
            parsed = parse_query(
                cur,
                query="Zo\u00eb travaille sur a-b-c avec \u00c9MILE ZOLA, qui arbeitet f\u00fcr \u00c9mile?",
                team_id=team.team_id,
            )
    assert [(e["entity_id"], e["match"]) for e in parsed["entities"]] == [
        (str(emile), "exact"),
        (str(ab), "exact"),
        (str(zoe), "exact"),
    ]
    assert parsed["predicates"] == ["works_on", "works_at"]


def test_the_team_is_checked_before_any_answer(url: str, conn: psycopg.Connection[Any]) -> None:
    team = make_team(conn, f"check-{uuid.uuid4().hex[:8]}")
    other = make_team(conn, f"check-other-{uuid.uuid4().hex[:8]}")
    with psycopg.connect(url) as session:
        for query in ("", "   ", "Who works on Zephyr?"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), acting_as(session, team) as cur:
                parse_query(cur, query=query, team_id=other.team_id)
            with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification), session.transaction():
                session.execute("SET LOCAL ROLE densemem_app")
                session.execute("SELECT dm.parse_query(%s, %s)", (query, team.team_id))
            with acting_as(session, team) as cur:
                parsed = parse_query(cur, query=query, team_id=team.team_id)
            assert parsed["entities"] == []
        with acting_as(session, team) as cur:
            cur.execute("SELECT dm.parse_query('', %s)::text AS parsed", (team.team_id,))
            row = cur.fetchone()
        assert row is not None
        assert json.loads(row["parsed"])["predicates"] == []


# ---------------------------------------------------------------- terms

ASCII_TEXT = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=127), max_size=80)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ASCII_TEXT)
def test_ascii_terms_equal_the_unicode_split(conn: psycopg.Connection[Any], text: str) -> None:
    """ASCII (control characters too) takes the punctuation-replace path; one non-ASCII
    one-letter word (never a term) sends the same words through the
    [^[:alnum:]]+ split."""
    row = conn.execute(
        "SELECT dm_private.parse_query_text(%(q)s, %(c)s) -> 'terms', "
        "dm_private.parse_query_text(%(q)s || ' \u00e9', %(c)s) -> 'terms'",
        {"q": text, "c": CLOCK},
    ).fetchone()
    assert row is not None
    assert row[0] == row[1]


def test_entity_and_predicate_lists_keep_the_first_ten(url: str, conn: psycopg.Connection[Any]) -> None:
    """The caps are applied after the lookup statements: the ten best in the documented order."""
    team = make_team(conn, f"ten-{uuid.uuid4().hex[:8]}")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett"]
    words += ["kilo", "lima"]
    with psycopg.connect(url) as session:
        with acting_as(session, team) as cur:
            # Twelve entities named by one word each, of different lengths and
            # kinds: six canonical names ("exact"), six aliases ("alias").
            items: list[write.EntityItem] = []
            for i, word in enumerate(words):
                if i % 2 == 0:
                    items.append({"name": word.capitalize()})
                else:
                    items.append({"name": f"Z{i}", "aliases": [word]})
            ids = write.upsert_entities(cur, team_id=team.team_id, items=items)
            cur.execute(
                "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate) "
                "SELECT %(t)s, w, 'p_' || w FROM unnest(%(w)s::text[]) AS w",
                {"t": team.team_id, "w": words},
            )
        with acting_as(session, Principal(team_id=team.team_id)) as cur:
            parsed = parse_query(cur, query=" ".join(reversed(words)), team_id=team.team_id)
    expected = sorted(
        zip(ids, words, strict=True),
        key=lambda pair: (words.index(pair[1]) % 2, -len(pair[1]), str(pair[0])),
    )[:10]
    assert [(e["entity_id"], e["mention"]) for e in parsed["entities"]] == [
        (str(entity_id), word) for entity_id, word in expected
    ]
    assert [e["match"] for e in parsed["entities"]] == [
        "exact" if words.index(word) % 2 == 0 else "alias" for _, word in expected
    ]
    assert parsed["predicates"] == [f"p_{w}" for w in reversed(words)][:10]


def test_new_helpers_follow_the_function_rules(conn: psycopg.Connection[Any]) -> None:
    """search_path = '', a COMMENT ON, no PUBLIC execute, IMMUTABLE (pure helpers of the parse)."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, p.provolatile, "
        "  COALESCE('search_path=\"\"' = ANY (p.proconfig), false), "
        "  obj_description(p.oid, 'pg_proc') IS NOT NULL, "
        "  NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0) AND p.proacl IS NOT NULL "
        "FROM pg_proc AS p WHERE p.pronamespace = 'dm_private'::regnamespace "
        "  AND p.proname IN ('query_token_ngrams', 'query_fuzzy_keys', 'parse_first_ten') ORDER BY 1"
    ).fetchall()
    assert [r[0] for r in rows] == [
        "dm_private.parse_first_ten(jsonb)",
        "dm_private.query_fuzzy_keys(text[])",
        "dm_private.query_token_ngrams(text[])",
    ]
    assert all(r[1:] == ("i", True, True, True) for r in rows)


# ---------------------------------------------------------------- one lookup statement

# A vocabulary where one query matches several names of one entity (canonical
# and aliases of different lengths), several entities, more than ten and more
# than sixteen name rows, misspellings, and several predicate phrases of the
# team (enabled, disabled, overriding a default) and of the defaults.
LOOKUP_WORDS = [
    "amber",
    "birch",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "amber birch",
    "cedar delta",
    "works on",
    "uses",
    "likes",
    "paint",
    "member of",
    "went to",
    "owner",
    "Amber",
    "Birch Cedar",
    "Ambr",
    "Cedr",
    "Fjrod",
    "Ember",
]


@pytest.fixture(scope="module")
def lookup_team(url: str, conn: psycopg.Connection[Any]) -> Principal:
    team = make_team(conn, f"lookup-{uuid.uuid4().hex[:8]}")
    base = ["amber", "birch", "cedar", "delta", "ember", "fjord"]
    items: list[write.EntityItem] = []
    for i, word in enumerate(base):
        items.append({"name": f"{word.capitalize()} Works", "aliases": [word, f"{word} {base[(i + 1) % 6]}"]})
        items.append({"name": word.capitalize(), "aliases": [base[(i + 2) % 6]]})
    with psycopg.connect(url) as session, acting_as(session, team) as cur:
        write.upsert_entities(cur, team_id=team.team_id, items=items)
        cur.execute(
            "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate, enabled) VALUES "
            "(%(t)s, 'amber', 'uses', true), (%(t)s, 'birch', 'works_on', true), "
            "(%(t)s, 'cedar', 'a_b', true), (%(t)s, 'uses', 'likes', false), (%(t)s, 'delta', 'ab', true), "
            "(%(t)s, 'ember', 'a_c', true), (%(t)s, 'paint', 'created', true), "
            "(%(t)s, 'fjord', 'likes', true)",
            {"t": team.team_id},
        )
    return team


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(LOOKUP_WORDS), min_size=1, max_size=24))
def test_one_lookup_statement_equals_the_sql_lookups(
    url: str, lookup_team: Principal, words: list[str]
) -> None:
    """dm_private.match_query_names (one statement, rows ordered in PL/pgSQL) answers exactly what
    dm_private.match_query_entities and dm_private.predicate_hints (sorting statements) answer."""
    query = "Tell me " + " ".join(words)
    with psycopg.connect(url) as session, acting_as(session, Principal(team_id=lookup_team.team_id)) as cur:
        cur.execute(
            "SELECT (dm_private.query_name_keys(%(q)s)).ngrams AS g, "
            "(dm_private.query_name_keys(%(q)s)).fuzzy AS f",
            {"q": query},
        )
        keys = cur.fetchone()
        assert keys is not None
        cur.execute(
            "SELECT dm_private.match_query_names(%(t)s, %(g)s, %(f)s) AS one, "
            "jsonb_build_object('entities', dm_private.match_query_entities(%(t)s, %(g)s, %(f)s), "
            "'predicates', dm_private.predicate_hints(%(t)s, %(g)s)) AS two",
            {"t": lookup_team.team_id, "g": keys["g"], "f": keys["f"]},
        )
        row = cur.fetchone()
    assert row is not None
    assert json.dumps(row["one"]) == json.dumps(row["two"])


def test_one_lookup_statement_is_a_checked_definer(conn: psycopg.Connection[Any]) -> None:
    """Owned by the searcher, definer, search_path = '', commented, no PUBLIC execute."""
    row = conn.execute(
        "SELECT p.prosecdef, pg_get_userbyid(p.proowner), "
        "  COALESCE('search_path=\"\"' = ANY (p.proconfig), false), "
        "  obj_description(p.oid, 'pg_proc') IS NOT NULL, "
        "  NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0) AND p.proacl IS NOT NULL "
        "FROM pg_proc AS p WHERE p.oid = 'dm_private.match_query_names(uuid, text[], text[])'::regprocedure"
    ).fetchone()
    assert row == (True, "densemem_searcher", True, True, True)


# ---------------------------------------------------------------- session 4: one PL/pgSQL frame


# dm.parse_query writes out the bodies of the table-free helpers (prepared
# text, tokens, n-grams, trigram candidates, phrases, terms) and skips
# dm_private.parse_anchors when its needle guard fails; the helpers stay as the
# reference. The pieces below reach every branch: no upper-case letter, a
# lone token, the U+001F separator inside a token, non-ASCII and exotic
# spaces, anchors (so the anchors call and masking), e-mail addresses, quotes,
# time forms, the lookup team's names, aliases and synonyms, misspellings.
@pytest.fixture(scope="module")
def frame_team(url: str, conn: psycopg.Connection[Any]) -> Principal:
    """The lookup vocabulary plus names whose capital is not ASCII (trigram candidates of the slow test)."""
    team = make_team(conn, f"frame-{uuid.uuid4().hex[:8]}")
    base = ["amber", "birch", "cedar", "delta", "ember", "fjord"]
    items: list[write.EntityItem] = [{"name": "\u00c9mile"}, {"name": "\u00d8rsted"}]
    for i, word in enumerate(base):
        items.append({"name": f"{word.capitalize()} Works", "aliases": [word, f"{word} {base[(i + 1) % 6]}"]})
        items.append({"name": word.capitalize(), "aliases": [base[(i + 2) % 6]]})
    with psycopg.connect(url) as session, acting_as(session, team) as cur:
        write.upsert_entities(cur, team_id=team.team_id, items=items)
        cur.execute(
            "INSERT INTO dm_private.predicate_synonyms (team_id, phrase, predicate, enabled) VALUES "
            "(%(t)s, 'amber', 'uses', true), (%(t)s, 'uses', 'likes', false), "
            "(%(t)s, 'paint', 'created', true)",
            {"t": team.team_id},
        )
    return team


FRAME_PIECES = [
    *LOOKUP_WORDS,
    "when did",
    "What year",
    "last week",
    "in May 2023",
    "3 days ago",
    "recently",
    "first",
    "ABC-123",
    "v1.2.3",
    "9fceb02a1",
    "srv-db-01",
    "/etc/nginx/nginx.conf",
    "src/app/main.py",
    "team:platform",
    "repo@main",
    "a.b@example.com",
    '"the big move"',
    "\u201cquoted\u201d",
    "caf\u00e9",
    "\u00c9mile",
    "Stra\u00dfe",
    "a\u00a0b",
    "x\u2019s",
    "x\x1fy",
    "\u00c9mille",
    "\u00c9mile Zola",
    "\u00d8rsed",
    "Dr.",
    "?",
    "-",
    "'s",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.sampled_from(FRAME_PIECES), min_size=0, max_size=30),
    lower=st.booleans(),
)
def test_one_frame_parse_equals_the_reference_helpers(
    url: str, frame_team: Principal, pieces: list[str], lower: bool
) -> None:
    """dm.parse_query answers byte for byte what its reference helpers answer: parse_query_text,
    then match_query_entities and predicate_hints on query_ngrams and query_fuzzy_keys."""
    query = " ".join(pieces)
    if lower:
        query = query.lower()
    _assert_frame_equals_reference(url, frame_team, query)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "amber",
        "Amber",
        "x\x1fy amber birch",
        "amber " * 70,
        "Amber Birch " + "cedarcedarcedar" * 60 + " delta",
        "\u00e9" * 2500,
        "When did Amber go to birch last week?",
    ],
)
def test_one_frame_parse_equals_the_reference_helpers_at_the_edges(
    url: str, frame_team: Principal, query: str
) -> None:
    """Long queries (n-grams past the 2,047-byte sorted-array limit), a lone token, the separator."""
    _assert_frame_equals_reference(url, frame_team, query)


def _assert_frame_equals_reference(url: str, team: Principal, query: str) -> None:
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
    assert row["one"] == row["two"]


@pytest.mark.parametrize(
    "grams",
    [
        ["amber", "", "birch"],
        ["amber", None, "uses"],
        ["cedar", "x" * 3000, "paint"],
        ["paint", "amber", "paint", "amber birch"],
    ],
)
def test_lookup_of_arrays_the_sorted_scan_cannot_take(
    url: str, lookup_team: Principal, grams: list[str | None]
) -> None:
    """Empty, NULL and over-long n-grams skip the byte-sorted scan array (array_to_tsvector rejects
    them) and answer what the sorting SQL lookups answer; duplicates are harmless."""
    with psycopg.connect(url) as session, acting_as(session, Principal(team_id=lookup_team.team_id)) as cur:
        cur.execute(
            "SELECT dm_private.match_query_names(%(t)s, %(g)s::text[], '{}') AS one, "
            "jsonb_build_object('entities', dm_private.match_query_entities(%(t)s, %(g)s::text[], '{}'), "
            "'predicates', dm_private.predicate_hints(%(t)s, %(g)s::text[])) AS two",
            {"t": lookup_team.team_id, "g": grams},
        )
        row = cur.fetchone()
    assert row is not None
    assert json.dumps(row["one"]) == json.dumps(row["two"])


# ---------------------------------------------------------------- session 5: fewer calls

# Session 5 made dm.parse_query skip two calls when they cannot change the
# answer, answer one trigram probe with a lean statement, and build its whole
# answer in the definer lookup (dm_private.parse_query_names). The frame test
# above compares dm.parse_query with the reference helpers; the tests below
# check each new shortcut against the rule it replaces, on generated input.


def _parse_query_source() -> str:
    source = SQL_FILE.read_text(encoding="utf-8")
    return source[source.index("CREATE OR REPLACE FUNCTION dm.parse_query(") :]


def _anchor_call_guard() -> str:
    """The regular expressions dm.parse_query tests before calling dm_private.parse_anchors, as one."""
    match = re.search(
        r"IF prepared ~ '((?:[^']|'')+)'\n       AND prepared ~ '((?:[^']|'')+)' THEN\n"
        r"        anchored := dm_private\.parse_anchors",
        _parse_query_source(),
    )
    assert match is not None
    first, second = (g.replace("''", "'") for g in match.groups())
    return f"^(?=.*(?:{first}))(?=.*(?:{second}))"


def _time_skip_words() -> set[str]:
    """The word set dm.parse_query tests before calling dm_private.parse_time_words."""
    source = _parse_query_source()
    block = source[source.index("no_time := n < 64 AND prepared !~ '[0-9]'") :]
    block = block[: block.index("OPERATOR(pg_catalog.?|) toks)")]
    return set(re.findall(r'"([a-z]+)":\s*true', block))


def _time_rule_words() -> set[str]:
    """Every word that dm_private.parse_time_words' walker, intent and temporal rules start from."""
    source = SQL_FILE.read_text(encoding="utf-8")
    body = source[source.index("FUNCTION dm_private.parse_time_words(") :]
    body = body[: body.index("$$;")]
    words = set(re.findall(r'"([a-z]+)":\s*true', body))
    for listed in re.findall(r"'\{([a-z,]+)\}'::text \[\]", body):
        words.update(listed.split(","))
    words.update(re.findall(r"'([a-z]+)'", body))
    return words


ANCHOR_PIECES = st.sampled_from(
    [
        "a",
        "b",
        "f",
        "x",
        "Z",
        "AB",
        "srv",
        "SRV",
        "0",
        "1",
        "7",
        "12",
        "2023",
        "deadbeef",
        "abc1234",
        "cafe",
        "-",
        ":",
        "/",
        "\\",
        "@",
        ".",
        " ",
        "_",
        "+",
        "v",
        "C:",
        "e.g.",
        "Dr.",
        "x@y.io",
        "1.2",
        "ABC-1",
    ]
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(ANCHOR_PIECES, min_size=1, max_size=12))
def test_skipped_anchor_call_would_find_nothing(conn: psycopg.Connection[Any], pieces: list[str]) -> None:
    """A text the call guard rejects gets no anchor and is not masked by dm_private.parse_anchors."""
    text = "".join(pieces)
    guard = _anchor_call_guard()
    row = conn.execute(
        "SELECT %(t)s ~ %(g)s, dm_private.parse_anchors(dm_private.parse_prepare_text(%(t)s)), "
        "dm_private.parse_prepare_text(%(t)s)",
        {"t": text, "g": guard},
    ).fetchone()
    assert row is not None
    guarded, parsed, prepared = row
    if not guarded:
        assert parsed == {"anchors": [], "masked": prepared}


def test_the_time_skip_words_are_every_rule_word(conn: psycopg.Connection[Any]) -> None:
    """The skip's word set holds every word a time, intent or temporal rule starts from: a word a rule
    reads that is missing from it would skip a parse that finds something."""
    skip = _time_skip_words()
    assert len(skip) >= 70
    missing = []
    for word in sorted(_time_rule_words() - skip):
        # The word alone, and next to the words the rules read around it.
        for text in (
            word,
            f"Tell me {word} things",
            f"{word} did",
            f"in the {word}",
            f"last {word}",
            f"these {word}",
            f"to begin {word}",
            f"how long {word}",
            f"what {word}",
        ):
            if any(w in skip for w in text.lower().split()):
                continue
            row = conn.execute("SELECT dm_private.parse_time(%s, %s)::text", (text, CLOCK)).fetchone()
            assert row is not None
            if row[0] != '{"intent": null, "window": null, "expressions": [], "temporal_question": false}':
                missing.append(text)
    assert missing == []


TIME_SKIP_WORDS = st.sampled_from(
    [
        "Tell",
        "me",
        "what",
        "did",
        "Caroline",
        "paint",
        "the",
        "a",
        "when",
        "last",
        "week",
        "May",
        "first",
        "with",
        "begin",
        "to",
        "in",
        "beginning",
        "these",
        "days",
        "how",
        "long",
        "ago",
        "time",
        "now",
        "year",
        "recently",
        "Friday",
        "on",
        "since",
        "March",
        "today",
        "night",
        "this",
        "morning",
        "ABC",
    ]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(TIME_SKIP_WORDS, min_size=0, max_size=10), mark=st.booleans())
def test_skipped_time_call_would_find_nothing(
    conn: psycopg.Connection[Any], words: list[str], mark: bool
) -> None:
    """A plain question the skip rejects gets the no-time answer from dm_private.parse_time too."""
    text = " ".join(words) + ("?" if mark else "")
    skip = _time_skip_words()
    row = conn.execute("SELECT dm_private.parse_time(%s, %s)::text", (text, CLOCK)).fetchone()
    assert row is not None
    if not any(w.lower() in skip for w in words):
        assert row[0] == '{"intent": null, "window": null, "expressions": [], "temporal_question": false}'


# Session 10: the no-time shortcut covers questions of any shape whose tokens hold no digit, no time
# word and none of the punctuation parse_time_words cuts words at. Words of the rules glued to other
# words by that punctuation (inside a token) or by punctuation only at a word's ends (outside it).
PUNCTUATED_TIME_WORDS = st.sampled_from(
    ["week", "when", "time", "day", "may", "first", "now", "still", "with"]
)
PUNCTUATED_OTHER_WORDS = st.sampled_from(["Amber", "birch", "what", "did", "go", "x", "s", "it", "mom"])
PUNCTUATION = st.sampled_from(
    [*"][,.;:!?(){}\"\u201c\u201d'/-", "'s", "'S", "$", "&", "#", "+", "\u2026", "\u2014", "*", "_", "~"]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(
        st.tuples(
            st.one_of(PUNCTUATED_TIME_WORDS, PUNCTUATED_OTHER_WORDS),
            st.sampled_from(["", "before", "after", "inside"]),
            PUNCTUATION,
            PUNCTUATED_OTHER_WORDS,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_punctuated_questions_skip_the_time_call_only_without_time(
    url: str, frame_team: Principal, words: list[tuple[str, str, str, str]]
) -> None:
    """A question of any shape answers what its reference helpers answer, time included: the no-time
    shortcut is taken only when parse_time_words would find nothing (it fails when the test for
    punctuation inside a token is left out: "last-week", "x'sunday", "now.day")."""
    parts = []
    for word, where, mark, other in words:
        if where == "before":
            parts.append(mark + word)
        elif where == "after":
            parts.append(word + mark)
        elif where == "inside":
            parts.append(other + mark + word)
        else:
            parts.append(word)
    _assert_frame_equals_reference(url, frame_team, " ".join(parts))


TRIGRAM_PROBES = st.sampled_from(
    [
        "ambr",
        "amber",
        "ambre",
        "cedr",
        "cedar delt",
        "fjrod",
        "embr",
        "birch cedr",
        "bitch",
        "zzz",
        "a",
        "amber works",
        "delat",
        "emberr",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(probe=TRIGRAM_PROBES, exclude=st.integers(min_value=0, max_value=3))
def test_one_trigram_probe_equals_the_general_statement(
    url: str, lookup_team: Principal, probe: str, exclude: int
) -> None:
    """dm_private.match_entity_trigrams with one probe (the lean statement) answers what the general
    statement answers for the same probe given twice (same rows, same mention, each entity once)."""
    with psycopg.connect(url) as session, acting_as(session, Principal(team_id=lookup_team.team_id)) as cur:
        cur.execute(
            "SELECT array_agg(entity_id ORDER BY normalized_name) AS ids FROM dm_private.entity_names "
            "WHERE team_id = %(t)s",
            {"t": lookup_team.team_id},
        )
        ids_row = cur.fetchone()
        assert ids_row is not None
        excluded = ids_row["ids"][: exclude * 3]
        cur.execute(
            "SELECT dm_private.match_entity_trigrams(%(t)s, ARRAY[%(p)s], %(x)s::uuid[])::text AS one, "
            "dm_private.match_entity_trigrams(%(t)s, ARRAY[%(p)s, %(p)s], %(x)s::uuid[])::text AS two",
            {"t": lookup_team.team_id, "p": probe, "x": excluded},
        )
        row = cur.fetchone()
    assert row is not None
    assert row["one"] == row["two"]


def test_new_session5_functions_follow_the_function_rules(conn: psycopg.Connection[Any]) -> None:
    """parse_time_words is an IMMUTABLE helper; parse_query_names a checked definer of the searcher."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, p.provolatile, p.prosecdef, pg_get_userbyid(p.proowner), "
        "  COALESCE('search_path=\"\"' = ANY (p.proconfig), false), "
        "  obj_description(p.oid, 'pg_proc') IS NOT NULL, "
        "  NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0) AND p.proacl IS NOT NULL "
        "FROM pg_proc AS p WHERE p.pronamespace = 'dm_private'::regnamespace "
        "  AND p.proname IN ('parse_time_words', 'parse_query_names') ORDER BY 1"
    ).fetchall()
    assert [r[0] for r in rows] == [
        "dm_private.parse_query_names(uuid,text[],text[],text[],jsonb,jsonb,jsonb,jsonb)",
        "dm_private.parse_time_words(text,text[],text[],timestamp with time zone)",
    ]
    assert rows[0][1:] == ("s", True, "densemem_searcher", True, True, True)
    assert rows[1][1:3] == ("i", False)
    assert rows[1][4:] == (True, True, True)

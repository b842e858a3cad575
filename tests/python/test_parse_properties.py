"""Property tests of the anchor grammars (docs/QUERY_GRAMMAR.md) against the SQL parser.

- every generated identifier of every grammar is found, embedded in a
  random sentence of dictionary words, with its documented value;
- ordinary English never yields an anchor: every word of Debian's
  wamerican list (installed by scripts/install_test_tools.sh) in one bulk
  SQL call, and hypothesis-generated sentences of those words;
- any text (odd Unicode, control characters, 1 MB) parses without error
  and only its first 2,000 characters are read.
"""

from __future__ import annotations

import random
import re
import string
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import create_database_from_template, drop_database

WORDS_FILE = Path("/usr/share/dict/american-english")
CLOCK = "2024-03-15T12:00:00Z"
# Upper-case prefixes the issue-key grammar rejects (docs/QUERY_GRAMMAR.md).
ISSUE_STOPLIST = {
    *("UTF", "UCS", "SHA", "MD", "AES", "RSA", "DES", "COVID", "SARS", "MERS", "ISO", "CVE", "GPT"),
    *("WPA", "TLS", "SSL", "IPV", "HTTP", "MPEG", "MP", "PCI", "USB", "HDMI", "DDR", "LTE", "PS"),
    *("XBOX", "IP", "COM", "LPT"),
}


def _words() -> list[str]:
    if not WORDS_FILE.exists():
        pytest.skip("run scripts/install_test_tools.sh: it installs the wamerican word list")
    return [w for w in WORDS_FILE.read_text(encoding="utf-8").split("\n") if w.strip()]


WORDS = _words() if WORDS_FILE.exists() else ["word"]


@pytest.fixture(scope="module")
def conn(admin_url: str, template_url: str) -> Iterator[psycopg.Connection[Any]]:
    url = create_database_from_template(admin_url)
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            # A guard against a runaway expression, not a timing assertion.
            connection.execute("SET statement_timeout = '60s'")
            yield connection
    finally:
        drop_database(admin_url, url)


def anchors_of(conn: psycopg.Connection[Any], texts: list[str]) -> list[list[tuple[str, str]]]:
    """The anchors of each text, in one SQL call."""
    rows = conn.execute(
        "SELECT t.ord, COALESCE((SELECT array_agg(ARRAY[a ->> 'kind', a ->> 'value']) "
        "  FROM jsonb_array_elements(dm_private.parse_query_text(t.q, %s) -> 'anchors') AS a), '{}') "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t (q, ord) ORDER BY t.ord",
        (CLOCK, texts),
    ).fetchall()
    return [[(kind, value) for kind, value in row[1]] for row in rows]


# ---------------------------------------------------------------- ordinary English


def test_word_list_is_large_enough() -> None:
    assert len(_words()) >= 20_000


def test_no_dictionary_word_is_an_anchor(conn: psycopg.Connection[Any]) -> None:
    words = _words()
    rows = conn.execute(
        "SELECT w FROM unnest(%s::text[]) AS w WHERE "
        "jsonb_array_length(dm_private.parse_anchors(dm_private.parse_prepare_text(w)) -> 'anchors') > 0",
        (words,),
    ).fetchall()
    assert [r[0] for r in rows] == []


def test_dictionary_as_running_text_has_no_anchor(conn: psycopg.Connection[Any]) -> None:
    """Every word again, fifty to a sentence, with ordinary punctuation between them."""
    words = _words()
    rng = random.Random(20240315)
    punctuation = [" ", " ", " ", ", ", ". ", "; ", ": ", "! ", "? ", " - ", " (", ") ", ' "', '" ', " / "]
    sentences = []
    for start in range(0, len(words), 50):
        chunk = words[start : start + 50]
        sentences.append("".join(w + rng.choice(punctuation) for w in chunk))
    found = [(s, a) for s, a in zip(sentences, anchors_of(conn, sentences), strict=True) if a]
    assert found == []


sentence_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30)
separators = st.sampled_from([" ", " ", ", ", ". ", "; ", ": ", "? ", "! ", " (", ") ", " - ", "'s ", " / "])


@st.composite
def english_sentence(draw: st.DrawFn) -> str:
    words = draw(sentence_words)
    return "".join(w + draw(separators) for w in words).strip()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(english_sentence(), min_size=1, max_size=20))
def test_generated_english_sentences_have_no_anchor(
    conn: psycopg.Connection[Any], sentences: list[str]
) -> None:
    for sentence, anchors in zip(sentences, anchors_of(conn, sentences), strict=True):
        assert anchors == [], sentence


# ---------------------------------------------------------------- every grammar is found

HEX = "0123456789abcdef"
LOWER_ALNUM = string.ascii_lowercase + string.digits


def _chars(alphabet: str, min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=min_size, max_size=max_size)


@st.composite
def uuid_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    value = str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1))))
    written = value.upper() if draw(st.booleans()) else value
    return "uuid", written, value


@st.composite
def issue_key_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    project = draw(st.sampled_from(string.ascii_uppercase)) + draw(
        _chars(string.ascii_uppercase + string.digits, 1, 9)
    )
    assume(project not in ISSUE_STOPLIST)
    # One-digit numbers need a project key of 4+ characters (PD-1, IL-6 are not keys).
    number = draw(st.integers(10 if len(project) < 4 else 1, 9_999_999))
    key = f"{project}-{number}"
    return "issue_key", key, key


@st.composite
def semver_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    major, minor, patch = (draw(st.integers(0, 99_999)) for _ in range(3))
    prefix = draw(st.sampled_from(["", "", "v", "V"]))
    value = f"{prefix}{major}.{minor}.{patch}"
    if draw(st.booleans()):
        value += "-" + ".".join(
            draw(st.lists(_chars(string.ascii_letters + string.digits, 1, 6), min_size=1, max_size=3))
        )
    if draw(st.booleans()):
        value += "+" + ".".join(
            draw(st.lists(_chars(string.ascii_letters + string.digits, 1, 6), min_size=1, max_size=2))
        )
    # d.m.yyyy is documented as a date.
    assume(
        not (
            prefix == ""
            and value.count(".") == 2
            and 1 <= major <= 31
            and 1 <= minor <= 12
            and 1900 <= patch <= 2099
        )
    )
    return "semver", value, value


@st.composite
def path_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    segment = _chars(string.ascii_lowercase + string.digits + "_", 1, 8)
    extension = draw(st.sampled_from(string.ascii_lowercase)) + draw(
        _chars(string.ascii_lowercase + string.digits, 0, 4)
    )
    style = draw(st.sampled_from(["absolute", "relative", "windows"]))
    if style == "absolute":
        parts = draw(st.lists(segment, min_size=2, max_size=5))
        value = "/" + "/".join(parts) + (("." + extension) if draw(st.booleans()) else "")
    elif style == "relative":
        parts = draw(st.lists(segment, min_size=1, max_size=4))
        value = (
            draw(st.sampled_from(["", "./", "../"])) + "/".join(parts) + "/" + draw(segment) + "." + extension
        )
    else:
        parts = draw(st.lists(segment, min_size=0, max_size=3))
        drive = draw(st.sampled_from(string.ascii_uppercase))
        value = drive + ":\\" + "\\".join([*parts, draw(segment) + "." + extension])
    return "path", value, value


@st.composite
def scoped_name_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    inner = string.ascii_lowercase + string.digits + "_-"
    if draw(st.booleans()):
        scope = (
            draw(st.sampled_from(string.ascii_lowercase))
            + draw(_chars(inner, 0, 8))
            + draw(st.sampled_from(LOWER_ALNUM))
        )
        name = (
            draw(st.sampled_from(LOWER_ALNUM))
            + draw(_chars(inner + "./", 0, 10))
            + draw(st.sampled_from(LOWER_ALNUM))
        )
        value = f"{scope}:{name}"
    else:
        repo = (
            draw(st.sampled_from(string.ascii_lowercase))
            + draw(_chars(string.ascii_lowercase + "_.-", 0, 8))
            + draw(st.sampled_from(LOWER_ALNUM))
        )
        branch = (
            draw(st.sampled_from(string.ascii_lowercase))
            + draw(_chars(inner + "/", 0, 10))
            + draw(st.sampled_from(LOWER_ALNUM))
        )
        value = f"{repo}@{branch}"
    assume("//" not in value and "./" not in value and "/." not in value and ".." not in value)
    return "scoped_name", value, value


@st.composite
def hash_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    length = draw(st.one_of(st.integers(7, 40), st.just(64)))
    value = draw(_chars(HEX, length, length))
    letters = sum(c.isalpha() for c in value)
    digits = length - letters
    assume(letters > 0)
    assume(length >= 17 or digits > 0)
    assume(length >= 12 or (digits >= 2 and not re.fullmatch(r"[a-f]+(?:19|20)[0-9]{2}", value)))
    written = value.upper() if draw(st.booleans()) else value
    return "hash", written, value


@st.composite
def server_id_anchor(draw: st.DrawFn) -> tuple[str, str, str]:
    groups = draw(st.lists(_chars(LOWER_ALNUM, 1, 6), min_size=1, max_size=8))
    value = "srv-" + "-".join(groups)
    written = draw(st.sampled_from(["srv", "SRV", "Srv"])) + value[3:]
    if draw(st.booleans()):
        written = written.upper()
    return "server_id", written, value


any_anchor = st.one_of(
    uuid_anchor(), issue_key_anchor(), semver_anchor(), path_anchor(), scoped_name_anchor(), hash_anchor(),
    server_id_anchor(),
)  # fmt: skip
wrappers = st.sampled_from(
    [("", ""), ("(", ")"), ("", ","), ("", "."), ("", "?"), ('"', '"'), ("[", "]"), ("", ";")]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    anchors=st.lists(st.tuples(any_anchor, wrappers), min_size=1, max_size=3),
    words=st.lists(st.sampled_from([w for w in WORDS if "'" not in w] or ["word"]), min_size=0, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_generated_identifiers_are_always_found(
    conn: psycopg.Connection[Any],
    anchors: list[tuple[tuple[str, str, str], tuple[str, str]]],
    words: list[str],
    seed: int,
) -> None:
    rng = random.Random(seed)
    tokens = list(words)
    for (_, written, _), (before, after) in anchors:
        tokens.insert(rng.randint(0, len(tokens)), f"{before}{written}{after}")
    sentence = " ".join(tokens)
    found = set(anchors_of(conn, [sentence])[0])
    for (kind, _, value), _ in anchors:
        assert (kind, value) in found, sentence


# ---------------------------------------------------------------- any input


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=3000))
def test_any_text_parses(conn: psycopg.Connection[Any], text: str) -> None:
    row = conn.execute("SELECT dm_private.parse_query_text(%s, %s)", (text, CLOCK)).fetchone()
    assert row is not None
    parsed = row[0]
    assert set(parsed) == {"anchors", "phrases", "terms", "time"}
    assert set(parsed["time"]) == {"window", "intent", "temporal_question", "expressions"}
    assert len(parsed["anchors"]) <= 32 and len(parsed["phrases"]) <= 16 and len(parsed["terms"]) <= 32


def test_null_and_empty_queries_parse(conn: psycopg.Connection[Any]) -> None:
    for text in (None, "", " ", "\t\n"):
        row = conn.execute("SELECT dm_private.parse_query_text(%s, %s)", (text, CLOCK)).fetchone()
        assert row is not None
        assert row[0]["anchors"] == [] and row[0]["terms"] == [] and row[0]["time"]["window"] is None


def test_a_megabyte_query_reads_only_its_first_2000_characters(conn: psycopg.Connection[Any]) -> None:
    head = "where is ABC-123 " + "x" * 1900 + " "
    tail = " ".join(["DEF-456 srv-db-01 v1.2.3 deadbeef1 when did it happen yesterday"] * 20_000)
    query = head + tail + " ZZZ-999"
    assert len(query.encode()) > 1_000_000
    row = conn.execute("SELECT dm_private.parse_query_text(%s, %s)", (query, CLOCK)).fetchone()
    assert row is not None
    kinds = {(a["kind"], a["value"]) for a in row[0]["anchors"]}
    assert ("issue_key", "ABC-123") in kinds
    assert ("issue_key", "DEF-456") in kinds  # the first copy starts before character 2,000
    assert ("issue_key", "ZZZ-999") not in kinds  # the last word is far beyond it
    names = conn.execute(
        "SELECT cardinality(dm_private.query_tokens(%s)), cardinality(dm_private.query_ngrams(%s))",
        (query, query),
    ).fetchone()
    assert names is not None
    assert names[0] <= 64 and names[1] <= 4 * 64


def test_parse_is_independent_of_session_time_zone(conn: psycopg.Connection[Any]) -> None:
    query = "what happened last week, yesterday and since May 2023?"
    results = []
    for zone in ("UTC", "Asia/Kolkata", "America/Los_Angeles"):
        conn.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
        row = conn.execute("SELECT dm_private.parse_query_text(%s, %s)::text", (query, CLOCK)).fetchone()
        assert row is not None
        results.append(row[0])
    conn.execute("RESET TimeZone")
    assert results[0] == results[1] == results[2]

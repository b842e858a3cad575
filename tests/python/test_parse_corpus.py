"""The table-driven parse corpus (tests/parse_corpus/*.json) against the real SQL parser.

Every case is parsed by dm_private.parse_query_text in one SQL call per
file; each case is then checked on its own. A case states only what it
checks: the exact set of anchors ([kind, value] pairs, [] for a
near-miss), the time window / intent / temporal flag under its clock, or
the quoted phrases.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import create_database_from_template, drop_database

CORPUS = Path(__file__).resolve().parents[1] / "parse_corpus"
FILES = ("anchors", "time", "phrases")


def load(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    return cases


ALL_CASES = [(name, case) for name in FILES for case in load(name)]


def test_corpus_is_large_and_ids_are_unique() -> None:
    ids = [case["id"] for _, case in ALL_CASES]
    assert len(ids) >= 300
    assert len(set(ids)) == len(ids)
    near_misses = [case for name, case in ALL_CASES if name == "anchors" and case["anchors"] == []]
    assert len(near_misses) >= 80


@pytest.fixture(scope="module")
def parsed(admin_url: str, template_url: str) -> Iterator[dict[str, dict[str, Any]]]:
    """Every corpus case parsed by the database, by id."""
    url = create_database_from_template(admin_url)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            # A non-UTC session must not change anything: the parse is UTC.
            conn.execute("SET TimeZone = 'America/New_York'")
            conn.execute("SET DateStyle = 'SQL, DMY'")
            rows = conn.execute(
                "SELECT c ->> 'id', dm_private.parse_query_text(c ->> 'query', "
                "COALESCE((c ->> 'now')::timestamptz, '2024-03-15T12:00:00Z')) "
                "FROM jsonb_array_elements(%s) AS c",
                (Jsonb([case for _, case in ALL_CASES]),),
            ).fetchall()
            yield {row[0]: row[1] for row in rows}
    finally:
        drop_database(admin_url, url)


def _ts(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


@pytest.mark.parametrize(("kind", "case"), ALL_CASES, ids=[case["id"] for _, case in ALL_CASES])
def test_corpus_case(kind: str, case: dict[str, Any], parsed: dict[str, dict[str, Any]]) -> None:
    result = parsed[case["id"]]
    if "anchors" in case:
        got = sorted((a["kind"], a["value"]) for a in result["anchors"])
        assert got == sorted((k, v) for k, v in case["anchors"]), case["query"]
        assert all(a["required"] is True for a in result["anchors"])
    if "window" in case:
        window = result["time"]["window"]
        if case["window"] is None:
            assert window is None, case["query"]
        else:
            assert window is not None, case["query"]
            assert _ts(window["from"]) == _ts(case["window"]["from"]), case["query"]
            assert _ts(window["to"]) == _ts(case["window"]["to"]), case["query"]
            assert result["time"]["expressions"], case["query"]
    if "intent" in case:
        assert result["time"]["intent"] == case["intent"], case["query"]
    if "temporal_question" in case:
        assert result["time"]["temporal_question"] is case["temporal_question"], case["query"]
    if "phrases" in case:
        assert result["phrases"] == case["phrases"], case["query"]


def test_every_grammar_kind_is_covered() -> None:
    kinds = {k for _, case in ALL_CASES for k, _ in case.get("anchors", [])}
    assert kinds == {"uuid", "issue_key", "semver", "path", "scoped_name", "hash", "server_id"}

"""A time window parsed from the query is a preference; a request's window is a filter (issue 3).

"last week" in the query text (dm.parse_query) first restricts recall to that
week; when that leaves fewer than `limit` results, the rest is filled from the
unfiltered ranking, window matches first. A window the caller gives
(`time_window`, `filters.created_after` / `created_before`) stays a hard filter.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from test_recall_support import explain, ingest, make_team, recall, result_texts

Conn = psycopg.Connection[Any]

CLOCK = dt.datetime(2024, 3, 15, 12, 0, tzinfo=dt.UTC)  # a Friday: last week is 4-10 March
NOW = {"now": CLOCK.isoformat()}

OLD = [
    ("2024-01-05T10:00:00Z", "Garden plans: tomatoes along the south fence."),
    ("2024-01-20T10:00:00Z", "Garden plans: a pond near the garden shed."),
    ("2024-02-02T10:00:00Z", "Garden plans: compost bins behind the garden shed."),
]
IN_WINDOW = ("2024-03-06T10:00:00Z", "Garden plans agreed on Wednesday: raised beds first.")
QUERY = "What were the garden plans last week?"


def load(conn: Conn, name: str, rows: list[tuple[str, str]]) -> Any:
    team, profile = make_team(conn, name)
    items = [{"text": t, "created_at": when, "memory_type": "semantic"} for when, t in rows]
    ingest(conn, team, profile, items)
    return team


def test_parsed_window_that_matches_nothing_falls_back_to_the_unfiltered_ranking(admin_conn: Conn) -> None:
    team = load(admin_conn, "window-empty", OLD)
    got = result_texts(recall(admin_conn, team, QUERY, request=NOW))
    assert sorted(got) == sorted(t for _, t in OLD)
    explained = explain(admin_conn, team, QUERY, request=NOW)
    assert explained["request"]["window_is_parsed"] is True
    assert explained["window_fallback"] is True
    assert [r["context"] for r in explained["answer"]["results"]] == got


def test_window_matches_come_first_then_the_rest(admin_conn: Conn) -> None:
    team = load(admin_conn, "window-some", [*OLD, IN_WINDOW])
    got = result_texts(recall(admin_conn, team, QUERY, request=NOW))
    assert got[0] == IN_WINDOW[1]
    assert sorted(got[1:]) == sorted(t for _, t in OLD)
    # a limit the window fills alone needs no fallback
    one = recall(admin_conn, team, QUERY, request={**NOW, "limit": 1})
    assert result_texts(one) == [IN_WINDOW[1]]
    assert explain(admin_conn, team, QUERY, request={**NOW, "limit": 1})["window_fallback"] is False


def test_fallback_never_repeats_a_result_or_a_known_id(admin_conn: Conn) -> None:
    team = load(admin_conn, "window-known", [*OLD, IN_WINDOW])
    first = recall(admin_conn, team, QUERY, request=NOW)
    ids = [r["evidence_id"] for r in first["results"]]
    assert len(ids) == len(set(ids)) == 4
    again = recall(admin_conn, team, QUERY, request={**NOW, "known_evidence_ids": ids[1:3]})
    again_ids = [r["evidence_id"] for r in again["results"]]
    assert not set(again_ids) & set(ids[1:3])
    assert len(again_ids) == 2


def test_fallback_respects_the_byte_budget(admin_conn: Conn) -> None:
    team = load(admin_conn, "window-budget", [*OLD, IN_WINDOW])
    budget = len(IN_WINDOW[1].encode()) + len(OLD[0][1].encode())
    got = result_texts(recall(admin_conn, team, QUERY, request={**NOW, "max_context_bytes": budget}))
    assert got[0] == IN_WINDOW[1]
    assert sum(len(t.encode()) for t in got) <= budget
    assert len(got) == 2


def test_request_time_window_stays_a_hard_filter(admin_conn: Conn) -> None:
    team = load(admin_conn, "window-hard", OLD)
    window = {"time_window": {"from": "2024-03-04T00:00:00Z", "to": "2024-03-11T00:00:00Z"}}
    assert recall(admin_conn, team, QUERY, request={**NOW, **window})["results"] == []
    assert recall(admin_conn, team, "garden plans", request={**NOW, **window})["results"] == []
    created = {"filters": {"created_after": "2024-03-04T00:00:00Z"}}
    assert recall(admin_conn, team, QUERY, request={**NOW, **created})["results"] == []
    explained = explain(admin_conn, team, QUERY, request={**NOW, **window})
    assert explained["window_fallback"] is False

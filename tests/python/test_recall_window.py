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


def _branch_calls(conn: Conn, team: Any, query: str) -> tuple[int, list[str]]:
    """Calls of the full-text branch during one recall, and the answer's contexts."""
    from psycopg.types.json import Jsonb

    from densemem.store.session import Principal, acting_as

    conn.execute("SET track_functions = 'all'")
    row = conn.execute(
        "SELECT 'dm_private.recall_fulltext_candidates(uuid,text,jsonb,jsonb)'::regprocedure::oid"
    ).fetchone()
    assert row is not None
    counter = "SELECT pg_stat_get_xact_function_calls(%s::oid) AS calls"
    with acting_as(conn, Principal(team)) as cur:
        # the backend's pending counters span transactions until they are flushed: a difference
        cur.execute(counter, (row[0],))
        before = cur.fetchone()
        cur.execute("SELECT dm.recall_memory(%s, %s, NULL, %s) AS answer", (query, team, Jsonb(NOW)))
        answer = cur.fetchone()
        cur.execute(counter, (row[0],))
        after = cur.fetchone()
    assert before is not None and answer is not None and after is not None
    calls = int(after["calls"] or 0) - int(before["calls"] or 0)
    return calls, [r["context"] for r in answer["answer"]["results"]]


def test_a_parsed_window_without_evidence_costs_one_retrieval_pass(admin_conn: Conn) -> None:
    # No evidence of the team lies in "last week": the first (windowed) pass cannot
    # return a row, so its branches are skipped and the unfiltered pass answers alone.
    team = load(admin_conn, "window-skip", OLD)
    calls, got = _branch_calls(admin_conn, team, QUERY)
    assert calls == 1
    assert sorted(got) == sorted(t for _, t in OLD)
    # with evidence in the window, the windowed pass runs and the fallback fills the rest
    other = load(admin_conn, "window-run", [*OLD, IN_WINDOW])
    calls, got = _branch_calls(admin_conn, other, QUERY)
    assert calls == 2
    assert got[0] == IN_WINDOW[1]

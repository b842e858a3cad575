"""Hard anchors match with identifier boundaries (issue 3): ABC-123 is not ABC-1234.

dm_private.recall_has_anchors is the one rule the exact branch (sql/36) and the
rerank (sql/50) apply. The unit cases call it directly; the recall cases go
through dm.recall_memory with anchors given in the request, so both places are
exercised.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from test_recall_support import ingest, make_team, recall, result_texts

Conn = psycopg.Connection[Any]

CASES: list[tuple[str, str, bool]] = [
    # issue keys
    ("ABC-123", "ABC-123", True),  # the whole text
    ("ABC-123 was reviewed", "ABC-123", True),  # at the start
    ("reviewed ABC-123", "ABC-123", True),  # at the end
    ("see ABC-123.", "ABC-123", True),  # followed by a full stop
    ("(ABC-123), then", "ABC-123", True),  # brackets and a comma
    ("ticket abc-123: done", "ABC-123", True),  # case-insensitive, colon after
    ("ABC-1234 deploy", "ABC-123", False),  # a longer number
    ("XABC-123", "ABC-123", False),  # a letter before
    ("ABC-123-4", "ABC-123", False),  # continued by a joiner and a digit
    ("ABC-123_fix", "ABC-123", False),
    ("ABC-1234 first, ABC-123 second", "ABC-123", True),  # the second occurrence counts
    # versions
    ("shipped v1.2.3 today", "v1.2.3", True),
    ("shipped v1.2.3.", "v1.2.3", True),
    ("shipped v1.2.30", "v1.2.3", False),
    ("shipped v1.2.3.4", "v1.2.3", False),
    ("shipped v1.2.3-rc.1", "v1.2.3", False),
    ("shipped v1.2.3+build7", "v1.2.3", False),
    ("shipped 2v1.2.3", "v1.2.3", False),
    # paths
    ("edit src/app/main.py now", "src/app/main.py", True),
    ("edit src/app/main.py: line 3", "src/app/main.py", True),
    ("edit lib/src/app/main.py", "src/app/main.py", False),
    ("edit src/app/main.pyc", "src/app/main.py", False),
    ("see /etc/nginx/nginx.conf.bak", "/etc/nginx/nginx.conf", False),
    ("see /etc/nginx/nginx.conf", "/etc/nginx/nginx.conf", True),
    ("log at C:\\logs\\a.txt", "C:\\logs\\a.txt", True),
    # scoped names, server ids, hashes
    ("owner team:platform, ok", "team:platform", True),
    ("owner team:platform/infra", "team:platform", False),
    ("srv-db-01 is down", "srv-db-01", True),
    ("srv-db-012 is down", "srv-db-01", False),
    ("https://git.example/commit/9fceb02 fixed it", "9fceb02", True),
    ("built 9fceb02-dirty", "9fceb02", False),
    # regular-expression characters in an anchor are literal
    ("a+b [x] (y)", "a+b", True),
    ("aab", "a+b", False),
]


@pytest.mark.parametrize(("text", "anchor", "expected"), CASES)
def test_anchor_boundaries(admin_conn: Conn, text: str, anchor: str, expected: bool) -> None:
    row = admin_conn.execute("SELECT dm_private.recall_has_anchors(%s, ARRAY[%s])", (text, anchor)).fetchone()
    assert row is not None
    assert row[0] is expected, (text, anchor)


def test_every_anchor_must_match_and_none_is_trivially_true(admin_conn: Conn) -> None:
    row = admin_conn.execute(
        "SELECT dm_private.recall_has_anchors('ABC-123 on srv-db-01', ARRAY['ABC-123', 'srv-db-01']), "
        "dm_private.recall_has_anchors('ABC-123 on srv-db-012', ARRAY['ABC-123', 'srv-db-01']), "
        "dm_private.recall_has_anchors('anything', '{}')"
    ).fetchone()
    assert row == (True, False, True)


def test_recall_keeps_only_evidence_with_the_anchor_as_an_identifier(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "anchors")
    texts = [
        "ABC-1234 deploy failed on the staging cluster.",
        "The deploy of ABC-123 failed on the staging cluster.",
        "Deploy notes: ABC-123-7 failed on the staging cluster.",
        "Release v1.2.30 deploy failed on the staging cluster.",
        "Release v1.2.3. The deploy failed on the staging cluster.",
    ]
    ingest(admin_conn, team, profile, [{"text": t} for t in texts])
    # anchors from the request: the exact branch and the rerank both apply them
    got = result_texts(recall(admin_conn, team, "deploy failed staging", request={"anchors": ["ABC-123"]}))
    assert got == [texts[1]]
    got = result_texts(recall(admin_conn, team, "deploy failed staging", request={"anchors": ["v1.2.3"]}))
    assert got == [texts[4]]
    # without anchors every deploy text is eligible
    assert len(result_texts(recall(admin_conn, team, "deploy failed staging"))) == len(texts)


def test_exact_branch_scan_cap_keeps_the_lowest_evidence_ids(admin_conn: Conn) -> None:
    """More matches than fulltext.scan_cap: the exact branch keeps the matches with the lowest
    evidence ids (the rule that makes the cap independent of the plan's reading order; on a
    table this small the plan already met them in that order, so this pins the rule rather
    than reproducing the plan-dependent choice seen on a 10k+ team)."""
    team, profile = make_team(admin_conn, "anchor-cap")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [{"text": f"Incident ABC-123 note number {i} about the staging cluster."} for i in range(10)],
    )
    admin_conn.execute("SELECT set_config('densemem.team_id', %s, false)", (str(team),))
    rows = admin_conn.execute(
        "WITH s AS (SELECT pg_catalog.jsonb_set(dm_private.recall_settings(%(team)s, NULL),"
        " '{fulltext,scan_cap}', '3') AS settings)"
        " SELECT h.evidence_id FROM s, dm_private.recall_exact_candidates(%(team)s,"
        " dm_private.recall_request('ABC-123', '{\"anchors\": [\"ABC-123\"]}', s.settings), s.settings) AS h"
        " ORDER BY h.branch_rank, h.evidence_id",
        {"team": team},
    ).fetchall()
    assert [r[0] for r in rows] == sorted(ids)[:3]

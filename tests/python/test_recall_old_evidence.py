"""Recency decay on evidence far older than its half-life.

exp(-age / half_life) underflows (SQLSTATE 22003) past about e^-745: a
conversation turn with a 2-day half-life reaches that after about four
years. Such evidence must still be recalled, with a recency of zero.
"""

from __future__ import annotations

from typing import Any

import psycopg
from test_recall_support import ingest, make_team, recall, result_texts


def test_years_old_conversation_evidence_is_recalled(admin_conn: psycopg.Connection[Any]) -> None:
    team, profile = make_team(admin_conn, "old-conversations")
    ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Caroline went to the LGBTQ support group on Tuesday.",
                "memory_type": "conversation",
                "created_at": "2015-05-08T13:56:00Z",
            },
            {
                "text": "Melanie painted a lake sunrise last year.",
                "memory_type": "conversation",
                "created_at": "2015-05-09T10:00:00Z",
            },
        ],
    )
    answer = recall(
        admin_conn,
        team,
        "When did Caroline go to the support group?",
        request={"now": "2026-11-29T00:00:00Z"},
    )
    assert result_texts(answer)[0] == "Caroline went to the LGBTQ support group on Tuesday."

"""Ranking profile default v9 (migration 0049) and its evaluation branch rows v5 (same migration).

v9 is v8 with exactly two tuned additions: the full-text branch's exchange context
(fulltext.context_radius 1) and the content part of relevance (relevance_mix.content 0.3,
content_pivot 20); the branch rows follow it with one branch off.
"""

from __future__ import annotations

from typing import Any

import psycopg


def _settings(conn: psycopg.Connection[Any], name: str, version: int) -> dict[str, Any]:
    row = conn.execute(
        "SELECT settings FROM dm_private.ranking_profiles WHERE name = %s AND version = %s", (name, version)
    ).fetchone()
    assert row is not None, f"no ranking profile {name} v{version}"
    settings: dict[str, Any] = row[0]
    return settings


def test_default_v9_is_v8_with_exchange_context_and_content(admin_conn: psycopg.Connection[Any]) -> None:
    defaults = admin_conn.execute(
        "SELECT name, version FROM dm_private.ranking_profiles WHERE is_default"
    ).fetchall()
    assert defaults == [("default", 9)]
    v8 = _settings(admin_conn, "default", 8)
    v9 = _settings(admin_conn, "default", 9)
    assert v9["fulltext"] == {**v8["fulltext"], "context_radius": 1}
    assert v9["relevance_mix"] == {**v8["relevance_mix"], "content": 0.3, "content_pivot": 20}
    for key in ("fulltext", "relevance_mix"):
        v8.pop(key)
        v9.pop(key)
    assert v9 == v8


def test_branch_rows_v5_follow_default_v9(admin_conn: psycopg.Connection[Any]) -> None:
    v9 = _settings(admin_conn, "default", 9)
    fulltext = _settings(admin_conn, "fulltext_only", 5)
    vector = _settings(admin_conn, "vector_only", 5)
    assert fulltext["candidates"] == {**v9["candidates"], "vector": 0}
    assert fulltext["relevance_mix"] == v9["relevance_mix"]
    assert vector["candidates"] == {**v9["candidates"], "fulltext": 0, "exact": 0}
    assert vector["relevance_mix"] == {
        "fusion": 1.0,
        "phrase": 0.0,
        "exact_terms": 0.0,
        "content": 0.3,
        "content_pivot": 20,
    }
    for row in (fulltext, vector):
        assert row["fusion"] == v9["fusion"]
        assert row["fulltext"] == v9["fulltext"]
        assert row["context"] == v9["context"]
    latest = admin_conn.execute(
        "SELECT name, max(version) FROM dm_private.ranking_profiles"
        " WHERE name IN ('fulltext_only', 'vector_only') GROUP BY name ORDER BY name"
    ).fetchall()
    assert latest == [("fulltext_only", 5), ("vector_only", 5)]

"""Ranking profile default v8 (migration 0029) and its evaluation branch rows v4 (0047).

v8 is v7 with exactly three tuned settings changed (rrf_k, BM25 k1/b, the
exact-term share of relevance); the branch rows follow it with one branch off.
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


def test_default_v8_is_v7_with_the_tuned_settings(admin_conn: psycopg.Connection[Any]) -> None:
    # v8 was the default until v9 (0049, test_eval_ranking_profile_v9.py)
    v7 = _settings(admin_conn, "default", 7)
    v8 = _settings(admin_conn, "default", 8)
    assert v8["fusion"]["rrf_k"] == 5
    assert v8["fusion"]["method"] == "rrf"
    assert (v8["fulltext"]["bm25_k1"], v8["fulltext"]["bm25_b"]) == (0.9, 0.4)
    assert v8["relevance_mix"] == {"fusion": 0.8, "phrase": 0.1, "exact_terms": 0.3}
    # nothing else moved
    for key in ("fusion", "fulltext", "relevance_mix"):
        v7.pop(key)
        v8.pop(key)
    assert v8 == v7


def test_branch_rows_v4_follow_default_v8(admin_conn: psycopg.Connection[Any]) -> None:
    v8 = _settings(admin_conn, "default", 8)
    fulltext = _settings(admin_conn, "fulltext_only", 4)
    vector = _settings(admin_conn, "vector_only", 4)
    assert fulltext["candidates"] == {**v8["candidates"], "vector": 0}
    assert vector["candidates"] == {**v8["candidates"], "fulltext": 0, "exact": 0}
    assert vector["relevance_mix"] == {"fusion": 1.0, "phrase": 0.0, "exact_terms": 0.0}
    for row in (fulltext, vector):
        assert row["fusion"] == v8["fusion"]
        assert row["fulltext"] == v8["fulltext"]
        assert row["context"] == v8["context"]

"""dm_private.recall_settings reads the resolved settings (0088) and returns what it would build.

The resolved row of a ranking profile is its settings with its identity and
the active search-index profile laid over them, rebuilt by statement
triggers whenever either profile table changes. These tests change both
tables the ways migrations and operators do (a new default version, a
settings update, another active search-index profile, a delete) and require
recall_settings to return exactly the object it builds without the table.
"""

from __future__ import annotations

from typing import Any

import psycopg
from test_recall_support import make_team

Conn = psycopg.Connection[Any]

BUILT = """
SELECT r.settings || pg_catalog.jsonb_build_object(
           'profile_name', r.name, 'profile_version', r.version,
           'index_version', sip.version, 'index', COALESCE(sip.settings, '{}'::jsonb))
FROM dm_private.ranking_profiles AS r
LEFT JOIN dm_private.search_index_profiles AS sip ON sip.is_active
WHERE r.name = %s
ORDER BY r.version DESC
LIMIT 1
"""


def settings_of(conn: Conn, team: object, profile_name: str | None = None) -> Any:
    with conn.transaction():
        conn.execute("SELECT set_config('densemem.team_id', %s, true)", (str(team),))
        row = conn.execute("SELECT dm_private.recall_settings(%s, %s)", (team, profile_name)).fetchone()
    assert row is not None
    return row[0]


def built(conn: Conn, profile_name: str) -> Any:
    row = conn.execute(BUILT, (profile_name,)).fetchone()
    assert row is not None
    return row[0]


def default_name(conn: Conn) -> str:
    row = conn.execute("SELECT name FROM dm_private.ranking_profiles WHERE is_default").fetchone()
    assert row is not None
    return str(row[0])


def test_resolved_settings_follow_every_profile_change(admin_conn: Conn) -> None:
    team, _ = make_team(admin_conn, "alpha")
    name = default_name(admin_conn)
    assert settings_of(admin_conn, team) == built(admin_conn, name)
    resolved = admin_conn.execute("SELECT count(*) FROM dm_private.recall_settings_resolved").fetchone()
    profiles = admin_conn.execute("SELECT count(*) FROM dm_private.ranking_profiles").fetchone()
    assert resolved == profiles

    # a settings change in place
    admin_conn.execute(
        "UPDATE dm_private.ranking_profiles SET settings = settings || '{\"support_weight\": 0.25}' "
        "WHERE is_default"
    )
    assert settings_of(admin_conn, team)["support_weight"] == 0.25
    assert settings_of(admin_conn, team) == built(admin_conn, name)

    # a new named profile, read by name
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        "SELECT 'resolved-test', 1, settings || '{\"support_weight\": 0.5}' "
        "FROM dm_private.ranking_profiles WHERE is_default"
    )
    assert settings_of(admin_conn, team, "resolved-test") == built(admin_conn, "resolved-test")
    assert settings_of(admin_conn, team, "resolved-test")["support_weight"] == 0.5

    # another active search-index profile: every resolved row follows it
    admin_conn.execute("UPDATE dm_private.search_index_profiles SET is_active = false WHERE is_active")
    assert settings_of(admin_conn, team)["index"] == {}
    assert settings_of(admin_conn, team) == built(admin_conn, name)
    admin_conn.execute(
        "INSERT INTO dm_private.search_index_profiles (version, is_active, settings) "
        'VALUES (900, true, \'{"hnsw": {"ef_search": 123}}\')'
    )
    assert settings_of(admin_conn, team)["index_version"] == 900
    assert settings_of(admin_conn, team)["index"] == {"hnsw": {"ef_search": 123}}
    assert settings_of(admin_conn, team, "resolved-test") == built(admin_conn, "resolved-test")

    # a deleted profile leaves no resolved row behind
    admin_conn.execute("DELETE FROM dm_private.ranking_profiles WHERE name = 'resolved-test'")
    gone = admin_conn.execute(
        "SELECT count(*) FROM dm_private.recall_settings_resolved AS rs "
        "WHERE NOT EXISTS (SELECT 1 FROM dm_private.ranking_profiles AS r "
        "WHERE r.ranking_profile_id = rs.ranking_profile_id)"
    ).fetchone()
    assert gone == (0,)


def test_a_missing_or_stale_resolved_row_is_resolved_as_before(admin_conn: Conn) -> None:
    team, _ = make_team(admin_conn, "alpha")
    name = default_name(admin_conn)
    expected = built(admin_conn, name)
    # a row resolved against another search-index profile is not used
    admin_conn.execute(
        "UPDATE dm_private.recall_settings_resolved "
        "SET search_index_profile_id = -1, settings = '{\"stale\": true}'"
    )
    assert settings_of(admin_conn, team) == expected
    # nor is anything when the row is missing
    admin_conn.execute("DELETE FROM dm_private.recall_settings_resolved")
    assert settings_of(admin_conn, team) == expected


def test_resolved_settings_are_stored_plain(admin_conn: Conn) -> None:
    # a compressed settings value is decompressed by every stage that reads
    # one of its keys (0088: toast_tuple_target)
    rows = admin_conn.execute(
        "SELECT pg_column_compression(settings) FROM dm_private.recall_settings_resolved"
    ).fetchall()
    assert rows
    assert all(row[0] is None for row in rows)

"""Recall telemetry retention: dm.prune_recall_telemetry and `densemem telemetry prune`.

The function deletes exactly the rows older than the cutoff, of every team,
at most batch_size per call; only the administrator may call it; bad
arguments raise 22023 and delete nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import errors

from densemem.telemetry_command import parse_duration, prune_recall_telemetry

DENSEMEM = [sys.executable, "-m", "densemem.cli"]

# Ages (relative to now()) of the rows each team gets: three beyond 30 days,
# three inside it (one a minute short of the cutoff).
OLD_AGES = ["400 days", "31 days", "30 days 1 minute"]
RECENT_AGES = ["29 days 23 hours 59 minutes", "1 day", "0 seconds"]

# Every Dense-Mem role but the owner (which owns every function, as it owns
# dm.ensure_team, and which nobody logs in as): none may prune (the
# administrator does). The searcher and embedder lack USAGE on dm itself.
DENSEMEM_ROLES = [
    "densemem_app",
    "densemem_searcher",
    "densemem_analyst",
    "densemem_operator",
    "densemem_worker",
    "densemem_embedder",
]


def add_rows(
    conn: psycopg.Connection[Any], team: uuid.UUID, ages: list[str], copies: int = 1
) -> set[uuid.UUID]:
    ids: set[uuid.UUID] = set()
    for age in ages:
        for _ in range(copies):
            recall_id = uuid.uuid4()
            conn.execute(
                "INSERT INTO dm_private.recall_telemetry (team_id, recall_id, created_at, "
                "ranking_profile_version, search_index_profile_version) "
                "VALUES (%s, %s, now() - %s::interval, 'test', 'test')",
                (team, recall_id, age),
            )
            ids.add(recall_id)
    return ids


def remaining(conn: psycopg.Connection[Any]) -> dict[uuid.UUID, set[uuid.UUID]]:
    rows = conn.execute("SELECT team_id, recall_id FROM dm_private.recall_telemetry").fetchall()
    by_team: dict[uuid.UUID, set[uuid.UUID]] = {}
    for team, recall_id in rows:
        by_team.setdefault(team, set()).add(recall_id)
    return by_team


def teams(conn: psycopg.Connection[Any], count: int) -> list[uuid.UUID]:
    found: list[uuid.UUID] = []
    for index in range(count):
        row = conn.execute("SELECT dm.ensure_team(%s)", (f"retention team {index}",)).fetchone()
        assert row is not None
        found.append(row[0])
    return found


def prune(conn: psycopg.Connection[Any], older_than: str, batch_size: int) -> int:
    row = conn.execute(
        "SELECT dm.prune_recall_telemetry(%s::interval, %s)", (older_than, batch_size)
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_prune_deletes_exactly_the_old_rows_of_every_team(admin_conn: psycopg.Connection[Any]) -> None:
    kept: dict[uuid.UUID, set[uuid.UUID]] = {}
    for team in teams(admin_conn, 3):
        add_rows(admin_conn, team, OLD_AGES)
        kept[team] = add_rows(admin_conn, team, RECENT_AGES)

    assert prune(admin_conn, "30 days", 10_000) == 3 * len(OLD_AGES)
    assert remaining(admin_conn) == kept
    assert prune(admin_conn, "30 days", 10_000) == 0
    assert remaining(admin_conn) == kept


def test_the_cutoff_is_strict(admin_conn: psycopg.Connection[Any]) -> None:
    (team,) = teams(admin_conn, 1)
    with admin_conn.transaction():  # one now() for the rows and the prune
        at_cutoff = add_rows(admin_conn, team, ["30 days"])
        older = add_rows(admin_conn, team, ["30 days 1 microsecond"])
        assert prune(admin_conn, "30 days", 10) == 1
    assert remaining(admin_conn) == {team: at_cutoff}
    assert not older & at_cutoff


def test_each_call_deletes_at_most_batch_size_rows(admin_conn: psycopg.Connection[Any]) -> None:
    first, second = teams(admin_conn, 2)
    add_rows(admin_conn, first, OLD_AGES, copies=5)  # 15 old rows
    add_rows(admin_conn, second, OLD_AGES, copies=3)  # 9 old rows
    kept = {
        first: add_rows(admin_conn, first, RECENT_AGES),
        second: add_rows(admin_conn, second, RECENT_AGES),
    }

    counts = [prune(admin_conn, "30 days", 10) for _ in range(4)]
    assert counts == [10, 10, 4, 0]
    assert remaining(admin_conn) == kept


def test_the_command_loops_until_nothing_is_left(admin_conn: psycopg.Connection[Any]) -> None:
    (team,) = teams(admin_conn, 1)
    add_rows(admin_conn, team, OLD_AGES, copies=7)  # 21 old rows
    kept = add_rows(admin_conn, team, RECENT_AGES)
    batches: list[int] = []

    assert prune_recall_telemetry(admin_conn, timedelta(days=30), 5, on_batch=batches.append) == 21
    assert batches == [5, 5, 5, 5, 1]
    assert remaining(admin_conn) == {team: kept}


@pytest.mark.parametrize("role", DENSEMEM_ROLES)
def test_no_densemem_role_may_prune(admin_conn: psycopg.Connection[Any], role: str) -> None:
    (team,) = teams(admin_conn, 1)
    old = add_rows(admin_conn, team, OLD_AGES)
    denied = r"permission denied for (function|schema)"
    with pytest.raises(errors.InsufficientPrivilege, match=denied) as raised, admin_conn.transaction():
        # as the service sets it up: its own team, then its role
        admin_conn.execute("SELECT set_config('densemem.team_id', %s, true)", (str(team),))
        admin_conn.execute(f"SET LOCAL ROLE {role}")
        prune(admin_conn, "30 days", 10_000)
    assert raised.value.sqlstate == "42501"
    assert remaining(admin_conn) == {team: old}


def test_only_the_owner_holds_execute(admin_conn: psycopg.Connection[Any]) -> None:
    row = admin_conn.execute(
        "SELECT pg_get_userbyid(p.proowner), p.prosecdef, "
        "ARRAY(SELECT pg_get_userbyid(a.grantee) FROM aclexplode(p.proacl) AS a ORDER BY 1) "
        "FROM pg_proc AS p WHERE p.oid = 'dm.prune_recall_telemetry(interval, integer)'::regprocedure"
    ).fetchone()
    assert row == ("densemem_owner", False, ["densemem_owner"])


@pytest.mark.parametrize(
    ("older_than", "batch_size", "message"),
    [
        (None, 10, "older_than must be a non-negative interval, not NULL"),
        ("-1 day", 10, "older_than must be a non-negative interval, not -1 days"),
        ("-00:00:01", 10, "older_than must be a non-negative interval, not -00:00:01"),
        ("30 days", 0, "batch_size must be between 1 and 100000, not 0"),
        ("30 days", -5, "batch_size must be between 1 and 100000, not -5"),
        ("30 days", 100_001, "batch_size must be between 1 and 100000, not 100001"),
        ("30 days", None, "batch_size must be between 1 and 100000, not NULL"),
    ],
)
def test_bad_arguments_raise_22023_and_delete_nothing(
    admin_conn: psycopg.Connection[Any], older_than: str | None, batch_size: int | None, message: str
) -> None:
    (team,) = teams(admin_conn, 1)
    old = add_rows(admin_conn, team, OLD_AGES)
    with pytest.raises(errors.InvalidParameterValue, match=message) as raised:
        admin_conn.execute(
            "SELECT dm.prune_recall_telemetry(%s::interval, %s::integer)", (older_than, batch_size)
        )
    assert raised.value.sqlstate == "22023"
    assert remaining(admin_conn) == {team: old}


def test_zero_keeps_nothing_older_than_the_transaction(admin_conn: psycopg.Connection[Any]) -> None:
    (team,) = teams(admin_conn, 1)
    add_rows(admin_conn, team, ["1 second", "1 day"])
    assert prune(admin_conn, "0", 100_000) == 2
    assert remaining(admin_conn) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        ("2w", timedelta(weeks=2)),
        (" 7 d ", timedelta(days=7)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "d", "-1d", "1.5d", "30 days", "1y"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def run_cli(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": db_url}
    return subprocess.run(
        [*DENSEMEM, "telemetry", "prune", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_cli_prints_the_count(db_url: str, admin_conn: psycopg.Connection[Any]) -> None:
    first, second = teams(admin_conn, 2)
    add_rows(admin_conn, first, OLD_AGES, copies=4)
    add_rows(admin_conn, second, OLD_AGES)
    kept = {
        first: add_rows(admin_conn, first, RECENT_AGES),
        second: add_rows(admin_conn, second, RECENT_AGES),
    }

    result = run_cli(db_url, "--older-than", "30d", "--batch", "4")
    assert (result.returncode, result.stdout, result.stderr) == (0, "15\n", "")
    assert remaining(admin_conn) == kept
    assert run_cli(db_url).stdout == "0\n"  # the default keeps 30 days


def test_cli_rejects_bad_input(db_url: str) -> None:
    bad_duration = run_cli(db_url, "--older-than", "thirty days")
    assert bad_duration.returncode == 2 and "not a duration" in bad_duration.stderr
    bad_batch = run_cli(db_url, "--batch", "0")
    assert bad_batch.returncode == 1 and "batch_size must be between 1 and 100000" in bad_batch.stderr


@pytest.mark.parametrize("command", [["telemetry"], ["telemetry", "prune"]])
def test_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from densemem.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: densemem telemetry" in capsys.readouterr().out

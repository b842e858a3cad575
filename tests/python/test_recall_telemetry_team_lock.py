"""A recall writes its telemetry row without locking its team's row (migration 0095).

The row's former foreign key to teams checked it with FOR KEY SHARE: every recall locked the
team's row, and overlapping recalls of one team made a multixact. The telemetry function now
reads the team's row without a lock and refuses a team without one, as the key did (23503).
That the table holds no foreign key is a schema fact: tests/pgtap/test_schema_recall_telemetry.sql.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_recall_support import ingest, make_team, result_ids

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]


def team_row_xmax(conn: Conn, team: uuid.UUID) -> str:
    row = conn.execute("SELECT xmax::text FROM dm_private.teams WHERE team_id = %s", (team,)).fetchone()
    assert row is not None
    return str(row[0])


def telemetry_rows(conn: Conn, team: uuid.UUID) -> int:
    row = conn.execute(
        "SELECT count(*) FROM dm_private.recall_telemetry WHERE team_id = %s", (team,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_recall_in_flight_leaves_the_team_row_unlocked(admin_conn: Conn, db_url: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    (evidence,) = ingest(admin_conn, team, profile, [{"text": "The backup job runs at midnight."}])
    with acting_as(admin_conn, Principal(team)) as cur:
        cur.execute("SELECT dm.recall_memory('backup job', %s) AS answer", (team,))
        row = cur.fetchone()
        assert row is not None and result_ids(row["answer"]) == [evidence]
        # the recall's transaction is still open, its telemetry row written: an
        # administrator can still take the team's row for update (the key's
        # FOR KEY SHARE would refuse this with 55P03)
        with psycopg.connect(db_url, autocommit=True) as other:
            locked = other.execute(
                "SELECT team_id FROM dm_private.teams WHERE team_id = %s FOR UPDATE NOWAIT", (team,)
            ).fetchall()
            assert locked == [(team,)]
    assert telemetry_rows(admin_conn, team) == 1


def test_overlapping_recalls_of_one_team_leave_its_row_untouched(admin_conn: Conn, db_url: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "The backup job runs at midnight."}])
    before = team_row_xmax(admin_conn, team)
    with (
        psycopg.connect(db_url, autocommit=True) as second,
        acting_as(admin_conn, Principal(team)) as first_cur,
        acting_as(second, Principal(team)) as second_cur,
    ):
        # both transactions open at once, each with its telemetry row written
        first_cur.execute("SELECT dm.recall_memory('backup job', %s)", (team,))
        second_cur.execute("SELECT dm.recall_memory('midnight', %s)", (team,))
    # neither recall wrote a lock into the row (one locker's xid, or a
    # multixact for two, as the foreign key's check did)
    assert team_row_xmax(admin_conn, team) == before
    assert telemetry_rows(admin_conn, team) == 2


def test_a_team_without_a_teams_row_is_refused_and_nothing_is_written(admin_conn: Conn) -> None:
    ghost = uuid.uuid4()
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(ghost)) as cur:
        cur.execute("SELECT dm.recall_memory('anything', %s)", (ghost,))
    assert raised.value.sqlstate == "23503"
    assert "does not exist" in str(raised.value)
    assert telemetry_rows(admin_conn, ghost) == 0
    # explain writes the same row, and is refused the same way
    with (
        pytest.raises(psycopg.Error) as raised,
        acting_as(admin_conn, Principal(ghost, role="densemem_operator")) as cur,
    ):
        cur.execute("SELECT dm.explain_recall('anything', %s, NULL, %s)", (ghost, Jsonb({})))
    assert raised.value.sqlstate == "23503"
    assert telemetry_rows(admin_conn, ghost) == 0


def test_a_read_only_recall_of_such_a_team_still_answers(admin_conn: Conn) -> None:
    # a read-only transaction writes no telemetry row, so nothing is refused (as with the key)
    ghost = uuid.uuid4()
    with admin_conn.transaction():
        admin_conn.execute("SET TRANSACTION READ ONLY")
        with acting_as(admin_conn, Principal(ghost)) as cur:
            cur.execute("SELECT dm.recall_memory('anything', %s) AS answer", (ghost,))
            row = cur.fetchone()
    assert row is not None and row["answer"]["results"] == []
    assert telemetry_rows(admin_conn, ghost) == 0

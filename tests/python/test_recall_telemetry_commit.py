"""A recall transaction commits without waiting for the WAL flush of its telemetry row,
and never weakens the durability of a caller's own earlier writes (sql/95)."""

from __future__ import annotations

from typing import Any

import psycopg
from test_recall_support import ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]


def test_a_recall_only_transaction_commits_asynchronously_and_keeps_its_row(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "Nightly ETL loads the warehouse."}])
    with acting_as(admin_conn, Principal(team, None)) as cur:
        cur.execute("SELECT current_setting('synchronous_commit') AS before")
        before = cur.fetchone()
        cur.execute("SELECT dm.recall_memory('nightly ETL', %s) AS answer", (team,))
        answer = cur.fetchone()
        cur.execute("SELECT current_setting('synchronous_commit') AS after")
        after = cur.fetchone()
    assert before == {"before": "on"}
    assert after == {"after": "off"}
    assert answer is not None and len(answer["answer"]["results"]) == 1
    # the telemetry row is committed all the same, and the setting ended with the transaction
    count = admin_conn.execute(
        "SELECT count(*) FROM dm_private.recall_telemetry WHERE team_id = %s", (team,)
    ).fetchone()
    assert count == (1,)
    assert admin_conn.execute("SELECT current_setting('synchronous_commit')").fetchone() == ("on",)


def test_a_transaction_that_wrote_before_the_recall_keeps_synchronous_commit(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute(
            'SELECT dm.ingest_evidence(%s, \'[{"text": "Nightly ETL loads the warehouse.", '
            '"source": {"external_id": "s1", "kind": "note"}}]\'::jsonb)',
            (team,),
        )
        cur.execute("SELECT dm.recall_memory('nightly ETL', %s) AS answer", (team,))
        cur.execute("SELECT current_setting('synchronous_commit') AS after")
        after = cur.fetchone()
    assert after == {"after": "on"}

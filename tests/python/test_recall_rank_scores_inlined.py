"""dm_private.recall_rank_scores is inlined into the statements that call it (session 13).

recall_rank's plain scoring rows are written once, in an SQL function that its
two statements (with and without the lift's window) call. It costs nothing
only while the planner inlines it: an SQL function returning a set, STABLE,
one SELECT, not SECURITY DEFINER and without a SET clause. A function the
planner cannot inline runs as a function scan that stores every row in a
tuplestore, and its body is planned apart from the statement (the cost the
session removed, and more). This checks the plan of a call (NULL arguments:
the inlined body folds to an empty result): no function scan of
recall_rank_scores.
"""

from __future__ import annotations

from typing import Any

import psycopg

Conn = psycopg.Connection[Any]


def test_recall_rank_scores_is_inlined(admin_conn: Conn) -> None:
    row = admin_conn.execute(
        "SELECT pg_catalog.string_agg(pg_catalog.format('NULL::%s', pg_catalog.format_type(t.oid, NULL)),"
        " ', ' ORDER BY a.o) FROM pg_catalog.pg_proc AS p"
        " CROSS JOIN LATERAL pg_catalog.unnest(p.proargtypes::oid []) WITH ORDINALITY AS a (type, o)"
        " JOIN pg_catalog.pg_type AS t ON t.oid = a.type"
        " WHERE p.oid = 'dm_private.recall_rank_scores'::regproc"
    ).fetchone()
    assert row is not None and row[0]
    call = f"EXPLAIN SELECT * FROM dm_private.recall_rank_scores({row[0]})"
    plan = "\n".join(r[0] for r in admin_conn.execute(call).fetchall())
    assert "recall_rank_scores" not in plan, plan

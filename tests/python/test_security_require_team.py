"""dm_private.require_team, the isolation boundary every recall stage checks, and the definers behind it.

require_team now reads the team setting with authenticated_team_id()'s own
expression instead of calling it. These tests pin what it must still do: no
team set (or an empty one) is 28000; another team, or NULL, is 42501; a login
that is not the service (an analyst) needs a grant of that team. And no
SECURITY DEFINER function a caller can execute answers for a team that is not
the authenticated one: each is called directly with a foreign team id.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from test_recall_support import ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]


def _require_team(conn: Conn, setting: str | None, argument: uuid.UUID | None) -> str:
    """require_team as densemem_app with densemem.team_id = setting; the SQLSTATE it raises, or 'ok'."""
    try:
        with conn.transaction():
            conn.execute("SET LOCAL ROLE densemem_app")
            if setting is not None:
                conn.execute("SELECT set_config('densemem.team_id', %s, true)", (setting,))
            row = conn.execute("SELECT dm_private.require_team(%s)", (argument,)).fetchone()
            assert row is not None and row[0] == argument
    except psycopg.Error as error:
        return str(error.sqlstate)
    return "ok"


def test_require_team_matrix(admin_conn: Conn) -> None:
    team, _ = make_team(admin_conn, "alpha")
    other, _ = make_team(admin_conn, "beta")
    assert _require_team(admin_conn, None, team) == "28000"
    assert _require_team(admin_conn, "", team) == "28000"
    assert _require_team(admin_conn, str(team), other) == "42501"
    assert _require_team(admin_conn, str(team), None) == "42501"
    assert _require_team(admin_conn, "not-a-uuid", team) == "22P02"
    assert _require_team(admin_conn, str(team), team) == "ok"
    assert _require_team(admin_conn, str(team).upper(), team) == "ok"


def test_an_analyst_login_needs_a_grant_of_the_team(admin_conn: Conn, db_url: str) -> None:
    team, profile = make_team(admin_conn, "alpha")
    ingest(admin_conn, team, profile, [{"text": "The release train leaves on Thursday."}])
    login = f"analyst_{uuid.uuid4().hex[:8]}"
    admin_conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE densemem_analyst").format(sql.Identifier(login)))
    try:
        url = psycopg.conninfo.make_conninfo(db_url, user=login)
        with psycopg.connect(url, autocommit=True) as analyst:
            principal = Principal(team, None, (), role="densemem_analyst")
            with pytest.raises(psycopg.Error) as raised, acting_as(analyst, principal) as cur:
                cur.execute("SELECT dm.recall_memory('release train', %s)", (team,))
            assert raised.value.sqlstate == "42501"
            admin_conn.execute("SELECT dm.grant_team_to_role(%s, %s)", (team, login))
            with acting_as(analyst, principal) as cur:
                cur.execute("SELECT dm.recall_memory('release train', %s) AS answer", (team,))
                row = cur.fetchone()
            assert row is not None and len(row["answer"]["results"]) == 1
    finally:
        admin_conn.execute("DELETE FROM dm_private.team_role_grants WHERE role_name = %s", (login,))
        admin_conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(login)))
        admin_conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


DEFINERS = """
SELECT p.oid::regprocedure::text AS name, n.nspname, p.proname, p.proretset,
       p.proargnames, pg_catalog.oidvectortypes(p.proargtypes) AS types,
       p.pronargs, p.proargtypes::oid [] AS argtypes
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname IN ('dm', 'dm_private') AND p.prosecdef AND p.prokind = 'f'
  AND pg_catalog.has_function_privilege('densemem_app', p.oid, 'EXECUTE')
  AND EXISTS (SELECT 1 FROM pg_catalog.unnest(p.proargnames) WITH ORDINALITY AS a (arg_name, ord)
              WHERE a.arg_name IN ('team_id', 'team', 'match_team_id') AND a.ord <= p.pronargs
                AND p.proargtypes[a.ord - 1] = 'uuid'::regtype)
ORDER BY 1
"""


def test_no_definer_answers_for_a_foreign_team(admin_conn: Conn) -> None:
    """Every SECURITY DEFINER function densemem_app may call, given another team's id: 42501."""
    team, profile = make_team(admin_conn, "alpha")
    other, other_profile = make_team(admin_conn, "beta")
    ingest(admin_conn, other, other_profile, [{"text": "Beta's secret roadmap lives here."}])
    definers = admin_conn.execute(DEFINERS).fetchall()
    assert len(definers) >= 8, [d[0] for d in definers]
    names = {d[0].split("(")[0] for d in definers}
    for expected in (
        "dm_private.recall_fulltext_candidates",
        "dm_private.recall_vector_hits",
        "dm_private.recall_rank",
        "dm_private.write_recall_telemetry",
        "dm_private.recall_eligible_documents",
    ):
        assert expected in names
    answered: list[tuple[str, object]] = []
    for name, _schema, _proname, _retset, argnames, _types, nargs, argtypes in definers:
        args = []
        for i in range(nargs):
            if argnames[i] in ("team_id", "team", "match_team_id") and argtypes[i] == 2950:
                args.append(sql.SQL("{}::uuid").format(sql.Literal(str(other))))
            else:
                args.append(
                    sql.SQL("NULL::{}").format(
                        sql.SQL(
                            admin_conn.execute("SELECT format_type(%s, NULL)", (argtypes[i],)).fetchone()[0]  # type: ignore[index]
                        )
                    )
                )
        call = sql.SQL("SELECT * FROM {}({})").format(sql.SQL(name.split("(")[0]), sql.SQL(", ").join(args))
        try:
            with acting_as(admin_conn, Principal(team, profile, ("pii", "operator"))) as cur:
                cur.execute(call)
                rows = cur.fetchall()
            answered.append((name, rows))
        except psycopg.Error as error:
            if error.sqlstate != "42501":
                answered.append((name, error.sqlstate))
    assert answered == [], answered

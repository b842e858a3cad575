"""Create (or update) the login role the API and the worker connect as. Run by the migrate job.

The role gets no privileges of its own (granted WITH INHERIT FALSE): it may only switch to
densemem_app (every request), densemem_operator (explain, operator keys) and
densemem_worker (the embedding worker), whose grants the migrations define.

Environment: DATABASE_URL (a superuser, as for `densemem migrate`),
DENSEMEM_SERVICE_ROLE (default densemem_service), DENSEMEM_SERVICE_PASSWORD.
"""

from __future__ import annotations

import os
import sys

import psycopg
from psycopg import sql


def main() -> int:
    url = os.environ["DATABASE_URL"]
    role = os.environ.get("DENSEMEM_SERVICE_ROLE", "densemem_service")
    password = os.environ.get("DENSEMEM_SERVICE_PASSWORD", "")
    if len(password) < 16:
        print("bootstrap: DENSEMEM_SERVICE_PASSWORD must be at least 16 characters", file=sys.stderr)
        return 2
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone()
        verb = sql.SQL("ALTER") if exists else sql.SQL("CREATE")
        attributes = sql.SQL("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS")
        conn.execute(
            sql.SQL("{} ROLE {} {} PASSWORD {}").format(
                verb, sql.Identifier(role), attributes, sql.Literal(password)
            )
        )
        # INHERIT FALSE: the login role holds no privilege itself; it can only SET ROLE (PostgreSQL 16+).
        grants = sql.SQL(
            "GRANT densemem_app, densemem_operator, densemem_worker TO {} WITH INHERIT FALSE, SET TRUE"
        )
        conn.execute(grants.format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(str(conn.info.dbname)), sql.Identifier(role)
            )
        )
    print(f"bootstrap: login role {role} can act as densemem_app, densemem_operator and densemem_worker")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One schema, whichever way a database got there.

Database A is built the way a new install is: the runner on an empty
database (every migration, then every function file of sql/). Database B is
built the way an existing install is upgraded: migrations up to 0002, then
the function files of sql/ that already apply at that point, then the
remaining migrations, then sql/ again. Their `pg_dump --schema-only
--no-owner` must be identical: a migration that only works on a fresh
database, or a function file that depends on the order it ran in, shows up
here as a difference.

A second test holds sql/ to its promise of being the current definition of
every function: a function a migration creates must be (re)defined by a
function file too, unless it is listed below with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from densemem import embedded
from densemem.config import project_root
from densemem.migrate import discover_function_files, migrate

ROOT = project_root()
PG_DUMP = embedded.psql_path().parent / "pg_dump"
UPGRADE_FROM = 2  # database B starts as a database migrated up to 0002

# Functions a migration creates that sql/ does not (re)define, with the reason.
# Empty today: every function a migration needs (a trigger function, say) is
# also kept in sql/, which holds its current definition.
MIGRATION_ONLY_FUNCTIONS: dict[str, str] = {}

CREATE_FUNCTION = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+"
    r"(?P<schema>\"?[A-Za-z_][A-Za-z0-9_]*\"?)\s*\.\s*(?P<name>\"?[A-Za-z_][A-Za-z0-9_]*\"?)\s*\(",
    re.IGNORECASE | re.MULTILINE,
)


def _url_for(admin_url: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(admin_url)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


@pytest.fixture
def new_database(admin_url: str) -> Iterator[Any]:
    """A factory of empty databases (dropped after the test)."""
    created: list[str] = []

    def make() -> str:
        name = f"dm_equivalence_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return _url_for(admin_url, name)

    yield make
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name in created:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def normalized_schema_dump(url: str) -> list[str]:
    """pg_dump --schema-only --no-owner, without its comment lines and blank lines.

    Nothing else is normalized: statement text, order, grants and comments on
    objects (COMMENT ON ...) all count. The psql \\restrict key is fixed so
    that two dumps can be compared.
    """
    result = subprocess.run(
        [str(PG_DUMP), "--schema-only", "--no-owner", "--restrict-key=densemem", "--dbname", url],
        check=True,
        capture_output=True,
        text=True,
    )
    return [
        line.rstrip() for line in result.stdout.splitlines() if line.strip() and not line.startswith("--")
    ]


def function_files_that_apply(url: str, sql_dir: Path) -> list[Path]:
    """The function files that apply, in order, to the database as it is now.

    Tried in one transaction as the runner would run them (as densemem_owner),
    each in a savepoint, then rolled back.
    """
    applying: list[Path] = []
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction(force_rollback=True):
        for path in discover_function_files(sql_dir):
            try:
                with conn.transaction():  # a savepoint inside the outer transaction
                    conn.execute("SET LOCAL ROLE densemem_owner")
                    conn.execute(path.read_text())
                    conn.execute("RESET ROLE")
            except psycopg.Error:
                continue
            applying.append(path)
    return applying


def test_an_upgraded_database_equals_a_fresh_one(new_database: Any, tmp_path: Path) -> None:
    fresh = new_database()
    migrate(fresh, ROOT / "migrations", ROOT / "sql")

    upgraded = new_database()
    report = migrate(upgraded, ROOT / "migrations", ROOT / "sql", up_to=UPGRADE_FROM, apply_functions=False)
    assert [int(name[:4]) for name in report.applied_migrations] == list(range(1, UPGRADE_FROM + 1))
    early_sql = tmp_path / "early_sql"
    early_sql.mkdir()
    for path in function_files_that_apply(upgraded, ROOT / "sql"):
        shutil.copy(path, early_sql / path.name)
    migrate(upgraded, ROOT / "migrations", early_sql, up_to=UPGRADE_FROM)
    rest = migrate(upgraded, ROOT / "migrations", ROOT / "sql")
    assert rest.applied_migrations, "the upgrade path must run the remaining migrations"

    fresh_dump = normalized_schema_dump(fresh)
    upgraded_dump = normalized_schema_dump(upgraded)
    assert len(fresh_dump) > 500, "the dump is suspiciously small"
    if fresh_dump != upgraded_dump:
        import difflib

        diff = "\n".join(
            difflib.unified_diff(
                fresh_dump, upgraded_dump, "fresh install", "upgraded from 0002", lineterm="", n=2
            )
        )
        pytest.fail(f"the upgraded schema differs from a fresh install:\n{diff[:20000]}")

    with psycopg.connect(fresh) as a, psycopg.connect(upgraded) as b:
        ledger = "SELECT file_name, checksum FROM dm_migrations.applied_function_files ORDER BY 1"
        assert a.execute(ledger).fetchall() == b.execute(ledger).fetchall()


def test_the_dump_comparison_sees_a_difference(new_database: Any) -> None:
    """The comparison above can fail: one changed comment is a difference."""
    url = new_database()
    migrate(url, ROOT / "migrations", ROOT / "sql", apply_functions=False)
    before = normalized_schema_dump(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("COMMENT ON TABLE dm_private.teams IS 'changed'")
    assert normalized_schema_dump(url) != before


def _identifier(text: str) -> str:
    return text[1:-1] if text.startswith('"') else text.lower()


def functions_defined_in_sql_files() -> set[str]:
    names: set[str] = set()
    for path in discover_function_files(ROOT / "sql"):
        for match in CREATE_FUNCTION.finditer(path.read_text()):
            names.add(f"{_identifier(match['schema'])}.{_identifier(match['name'])}")
    return names


def test_sql_files_define_every_function_the_migrations_create(new_database: Any) -> None:
    url = new_database()
    migrate(url, ROOT / "migrations", ROOT / "sql", apply_functions=False)
    catalog_query = """
        SELECT p.oid::regprocedure::text, n.nspname || '.' || p.proname, p.xmin::text
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('dm', 'dm_private', 'dm_migrations')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                          WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
                            AND d.deptype = 'e')
    """
    with psycopg.connect(url) as conn:
        from_migrations = {row[0]: (row[1], row[2]) for row in conn.execute(catalog_query).fetchall()}
    migrate(url, ROOT / "migrations", ROOT / "sql")
    with psycopg.connect(url) as conn:
        after_sql = {row[0]: row[2] for row in conn.execute(catalog_query).fetchall()}
    sql_names = functions_defined_in_sql_files()

    # (Re)defined by sql/: a CREATE [OR REPLACE] of that name in a function file,
    # and the catalog row rewritten when the files ran (CREATE OR REPLACE always
    # rewrites it), so that an overload of the same name does not count.
    not_kept = sorted(
        signature
        for signature, (name, xmin) in from_migrations.items()
        if not (name in sql_names and after_sql.get(signature) != xmin)
        and signature not in MIGRATION_ONLY_FUNCTIONS
    )
    assert not_kept == [], (
        f"functions created by migrations but not (re)defined in sql/: {', '.join(not_kept)}. Move their "
        "current definition into a function file, or list them in MIGRATION_ONLY_FUNCTIONS with the reason"
    )
    stale = sorted(set(MIGRATION_ONLY_FUNCTIONS) - set(from_migrations))
    assert stale == [], "MIGRATION_ONLY_FUNCTIONS lists functions no migration creates"


def test_the_sql_file_parser_finds_definitions() -> None:
    text = (
        "CREATE OR REPLACE FUNCTION dm.recall_memory(query text)\n"
        'create function "dm_private"."Mixed"(x int)\n'
        "  CREATE PROCEDURE dm_private.do_it ()\n"
        "-- CREATE FUNCTION dm.commented_out(\n"
    )
    found = {f"{_identifier(m['schema'])}.{_identifier(m['name'])}" for m in CREATE_FUNCTION.finditer(text)}
    assert found == {"dm.recall_memory", "dm_private.Mixed", "dm_private.do_it"}
    assert "dm_private.require_team" in functions_defined_in_sql_files()

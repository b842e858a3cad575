"""The migration runner against real databases.

Each test builds its own empty database (not the migrated template) and runs
densemem.migrate.migrate on copies of migrations/ and sql/, so that it can
change, add or break files without touching the repository. "Nothing
changed" is judged by `pg_dump --schema-only` and by the ledger rows
(including their applied_at times).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from densemem import embedded
from densemem.config import project_root
from densemem.migrate import MigrationError, MigrationReport, discover_migrations, migrate

ROOT = project_root()
PG_DUMP = embedded.psql_path().parent / "pg_dump"


def _url_for(admin_url: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(admin_url)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


@pytest.fixture
def new_database(admin_url: str) -> Iterator[Any]:
    """A factory of empty databases (dropped after the test)."""
    created: list[str] = []

    def make() -> str:
        name = f"dm_migrate_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return _url_for(admin_url, name)

    yield make
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name in created:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def code(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of migrations/ and sql/ that a test may edit."""
    migrations = tmp_path / "migrations"
    functions = tmp_path / "sql"
    shutil.copytree(ROOT / "migrations", migrations)
    shutil.copytree(ROOT / "sql", functions)
    return migrations, functions


def schema_dump(url: str) -> str:
    result = subprocess.run(
        [str(PG_DUMP), "--schema-only", "--restrict-key=densemem", "--dbname", url],
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout


def ledger(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        migrations = conn.execute(
            "SELECT migration_id, name, checksum, applied_at FROM dm_migrations.applied_migrations ORDER BY 1"
        ).fetchall()
        files = conn.execute(
            "SELECT file_name, checksum, applied_at FROM dm_migrations.applied_function_files ORDER BY 1"
        ).fetchall()
    return migrations, files


def relation_exists(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_catalog.to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    assert row is not None
    return bool(row[0])


def function_exists(url: str, signature: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_catalog.to_regprocedure(%s) IS NOT NULL", (signature,)).fetchone()
    assert row is not None
    return bool(row[0])


def all_migration_names() -> list[str]:
    return [m.path.name for m in discover_migrations(ROOT / "migrations")]


def all_function_files() -> list[str]:
    return sorted(p.name for p in (ROOT / "sql").glob("*.sql"))


# A migration and a function file a test can add to show that a refused run
# applies nothing at all, not even pending work.
PENDING_MIGRATION = """SET LOCAL ROLE densemem_owner;
CREATE TABLE dm_private.zz_pending (team_id uuid NOT NULL);
"""
PENDING_FUNCTIONS = """CREATE OR REPLACE FUNCTION dm_private.zz_pending_function()
RETURNS integer
LANGUAGE sql
SET search_path = ''
AS $$ SELECT 1 $$;
"""


def test_a_fresh_database_gets_every_migration_and_function_file(new_database: Any) -> None:
    url = new_database()
    report = migrate(url, ROOT / "migrations", ROOT / "sql")
    assert report.applied_migrations == all_migration_names()
    assert report.applied_function_files == all_function_files()
    migrations, files = ledger(url)
    assert [f"{row[0]:04d}_{row[1]}.sql" for row in migrations] == all_migration_names()
    assert [row[0] for row in files] == all_function_files()


def test_running_twice_changes_nothing(new_database: Any) -> None:
    url = new_database()
    first = migrate(url, ROOT / "migrations", ROOT / "sql")
    assert first.changed
    dump_before, ledger_before = schema_dump(url), ledger(url)

    second = migrate(url, ROOT / "migrations", ROOT / "sql")

    assert second == MigrationReport([], [])
    assert not second.changed
    assert ledger(url) == ledger_before, "the second run re-applied something (applied_at changed)"
    assert schema_dump(url) == dump_before


def test_a_changed_function_file_is_applied_again(new_database: Any, code: tuple[Path, Path]) -> None:
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    (functions / "99_zz_pending.sql").write_text(PENDING_FUNCTIONS)
    first_file = sorted(functions.glob("*.sql"))[0]
    first_file.write_text(first_file.read_text() + "\n-- edited\n")

    report = migrate(url, migrations, functions)

    assert report.applied_migrations == []
    assert report.applied_function_files == [first_file.name, "99_zz_pending.sql"]
    assert function_exists(url, "dm_private.zz_pending_function()")


def test_a_changed_applied_migration_is_refused_and_nothing_changes(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    dump_before, ledger_before = schema_dump(url), ledger(url)

    applied = sorted(migrations.glob("*.sql"))[1]
    applied.write_text(applied.read_text() + "\n-- a harmless-looking edit\n")
    # Pending work that a run must not apply once it has refused.
    (migrations / "9990_zz_pending.sql").write_text(PENDING_MIGRATION)
    (functions / "99_zz_pending.sql").write_text(PENDING_FUNCTIONS)

    with pytest.raises(MigrationError, match=r"changed after it was applied"):
        migrate(url, migrations, functions)

    assert ledger(url) == ledger_before
    assert schema_dump(url) == dump_before
    assert not relation_exists(url, "dm_private.zz_pending")
    assert not function_exists(url, "dm_private.zz_pending_function()")


def test_a_database_newer_than_the_code_is_refused_and_nothing_changes(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    migrations, functions = code
    url = new_database()
    future = migrations / "9991_zz_from_the_future.sql"
    future.write_text(
        "SET LOCAL ROLE densemem_owner;\nCREATE TABLE dm_private.zz_future (team_id uuid NOT NULL);\n"
    )
    migrate(url, migrations, functions)
    assert relation_exists(url, "dm_private.zz_future")
    dump_before, ledger_before = schema_dump(url), ledger(url)

    future.unlink()  # older code: it does not know migration 9991
    (migrations / "9990_zz_pending.sql").write_text(PENDING_MIGRATION)
    (functions / "99_zz_pending.sql").write_text(PENDING_FUNCTIONS)

    with pytest.raises(MigrationError, match=r"newer than the code") as refused:
        migrate(url, migrations, functions)

    assert "9991" in str(refused.value)
    assert ledger(url) == ledger_before
    assert schema_dump(url) == dump_before
    assert not relation_exists(url, "dm_private.zz_pending")
    assert not function_exists(url, "dm_private.zz_pending_function()")


def test_a_failing_migration_rolls_back_completely_and_is_not_recorded(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    dump_before, ledger_before = schema_dump(url), ledger(url)

    broken = migrations / "9990_zz_broken.sql"
    broken.write_text(
        "SET LOCAL ROLE densemem_owner;\n"
        "CREATE TABLE dm_private.zz_broken (team_id uuid NOT NULL);\n"
        "COMMENT ON TABLE dm_private.zz_broken IS 'made before the failure';\n"
        "GRANT SELECT ON dm_private.zz_broken TO densemem_app;\n"
        "ALTER TABLE dm_private.evidence ADD COLUMN zz_broken integer;\n"
        "SELECT 1 / 0;\n"
    )
    (functions / "99_zz_pending.sql").write_text(PENDING_FUNCTIONS)

    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(url, migrations, functions)

    assert ledger(url) == ledger_before
    assert schema_dump(url) == dump_before
    assert not relation_exists(url, "dm_private.zz_broken")
    assert not function_exists(url, "dm_private.zz_pending_function()")

    # Once fixed, the same migration applies (the failed run left no lock or half state).
    broken.write_text(broken.read_text().replace("SELECT 1 / 0;\n", ""))
    report = migrate(url, migrations, functions)
    assert report.applied_migrations == ["9990_zz_broken.sql"]
    assert relation_exists(url, "dm_private.zz_broken")
    assert function_exists(url, "dm_private.zz_pending_function()")


def test_each_migration_commits_on_its_own(new_database: Any, code: tuple[Path, Path]) -> None:
    """On a fresh database a failure in a later migration keeps the earlier ones, recorded."""
    migrations, functions = code
    url = new_database()
    (migrations / "9990_zz_broken.sql").write_text("SET LOCAL ROLE densemem_owner;\nSELECT 1 / 0;\n")

    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(url, migrations, functions)

    applied, files = ledger(url)
    assert [f"{row[0]:04d}_{row[1]}.sql" for row in applied] == all_migration_names()
    assert files == [], "function files must not run after a failed migration"


def test_a_failing_function_file_rolls_back_and_is_not_recorded(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    ledger_before = ledger(url)
    (functions / "99_zz_broken.sql").write_text(PENDING_FUNCTIONS + "SELECT 1 / 0;\n")

    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(url, migrations, functions)

    assert ledger(url) == ledger_before
    assert not function_exists(url, "dm_private.zz_pending_function()")


def test_concurrent_runs_both_succeed_and_equal_a_single_run(new_database: Any) -> None:
    single = new_database()
    migrate(single, ROOT / "migrations", ROOT / "sql")

    url = new_database()
    runners = 3
    start = threading.Barrier(runners)
    reports: list[MigrationReport] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def run() -> None:
        try:
            start.wait(timeout=30)
            report = migrate(url, ROOT / "migrations", ROOT / "sql")
        except BaseException as error:  # collected and asserted below
            with guard:
                errors.append(error)
            return
        with guard:
            reports.append(report)

    threads = [threading.Thread(target=run) for _ in range(runners)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert len(reports) == runners
    # Exactly one runner did the work; the others found nothing left to do.
    applied = sorted(name for report in reports for name in report.applied_migrations)
    assert applied == all_migration_names()
    assert sorted(report.changed for report in reports) == [False] * (runners - 1) + [True]
    migrations, files = ledger(url)
    assert [f"{row[0]:04d}_{row[1]}.sql" for row in migrations] == all_migration_names()
    assert [row[0] for row in files] == all_function_files()
    assert schema_dump(url) == schema_dump(single)


def test_up_to_stops_at_the_given_migration(new_database: Any) -> None:
    url = new_database()
    names = all_migration_names()
    report = migrate(url, ROOT / "migrations", ROOT / "sql", up_to=2, apply_functions=False)
    assert report.applied_migrations == [n for n in names if int(n[:4]) <= 2]
    assert report.applied_function_files == []
    report = migrate(url, ROOT / "migrations", ROOT / "sql")
    assert report.applied_migrations == [n for n in names if int(n[:4]) > 2]
    assert report.applied_function_files == all_function_files()


@pytest.mark.parametrize("bad_name", ["1_short.sql", "0005-dash.sql", "0005_Upper.sql", "abcd_letters.sql"])
def test_a_badly_named_migration_file_is_refused(tmp_path: Path, bad_name: str) -> None:
    (tmp_path / "0001_fine.sql").write_text("SELECT 1;\n")
    (tmp_path / bad_name).write_text("SELECT 1;\n")
    with pytest.raises(MigrationError, match=r"is not NNNN_lower_snake\.sql"):
        discover_migrations(tmp_path)


def test_two_migrations_with_one_number_are_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_one.sql").write_text("SELECT 1;\n")
    (tmp_path / "0001_other.sql").write_text("SELECT 1;\n")
    with pytest.raises(MigrationError, match="share one number"):
        discover_migrations(tmp_path)


def test_function_files_are_reapplied_after_a_migration_even_when_the_run_failed_midway(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    """A migration may drop or replace what sql/ defines, so every function file
    runs again after one. That duty must survive a run that fails part-way
    through the function files: the next run still re-applies all of them."""
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    last_file = sorted(functions.glob("*.sql"))[-1]
    assert "dm.revoke_api_key(text)" in (ROOT / "sql" / "05_administration.sql").read_text()
    (migrations / "9990_zz_drop_a_function.sql").write_text(
        "SET LOCAL ROLE densemem_owner;\nDROP FUNCTION dm.revoke_api_key(text);\n"
    )
    broken = functions / "01_zz_broken.sql"  # runs before 05_administration.sql
    broken.write_text("SELECT 1 / 0;\n")

    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(url, migrations, functions)
    assert not function_exists(url, "dm.revoke_api_key(text)")

    broken.write_text("SELECT 1;\n")
    report = migrate(url, migrations, functions)

    assert report.applied_migrations == []
    assert last_file.name in report.applied_function_files
    assert function_exists(url, "dm.revoke_api_key(text)")


def test_a_function_file_may_set_extension_parameters_in_a_fresh_session(
    new_database: Any, code: tuple[Path, Path]
) -> None:
    """hnsw.ef_search and pg_trgm.similarity_threshold exist only once their
    extension's library is loaded in the session; before that PostgreSQL lets
    only a superuser attach them to a function. A function file run alone (only
    it changed) must apply just as it does after a full migration."""
    migrations, functions = code
    url = new_database()
    migrate(url, migrations, functions)
    (functions / "99_zz_extension_settings.sql").write_text(
        "CREATE OR REPLACE FUNCTION dm_private.zz_tuned()\n"
        "RETURNS integer\n"
        "LANGUAGE sql\n"
        "SET search_path = ''\n"
        "SET hnsw.ef_search = 123\n"
        "SET pg_trgm.similarity_threshold = 0.45\n"
        "AS $$ SELECT 1 $$;\n"
    )

    report = migrate(url, migrations, functions)

    assert report.applied_function_files == ["99_zz_extension_settings.sql"]
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT proconfig FROM pg_catalog.pg_proc WHERE oid = 'dm_private.zz_tuned()'::regprocedure"
        ).fetchone()
    assert row is not None
    assert {"hnsw.ef_search=123", "pg_trgm.similarity_threshold=0.45"} <= set(row[0])

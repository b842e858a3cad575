"""The migration runner.

Ordered migrations (`migrations/NNNN_name.sql`) run once each, in their own
transaction, recorded with checksum and time. Then the function files in
`sql/` are applied as repeatable definitions: a file runs again when its
checksum changes, or after any migration ran (a migration clears the function
files' ledger in its own transaction, so this holds across failed runs). A
session advisory lock serialises concurrent runners; the second finds nothing
left to do.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

MIGRATION_LOCK_KEY = 7_146_553_400_112_001  # any fixed bigint; names this runner's lock
MIGRATION_NAME = re.compile(r"^(?P<id>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

LEDGER_DDL = """
CREATE SCHEMA IF NOT EXISTS dm_migrations;
COMMENT ON SCHEMA dm_migrations IS 'The migration runner''s ledger: what ran, with checksums.';
REVOKE ALL ON SCHEMA dm_migrations FROM PUBLIC;
CREATE TABLE IF NOT EXISTS dm_migrations.applied_migrations (
    migration_id integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT applied_migrations_pkey PRIMARY KEY (migration_id)
);
COMMENT ON TABLE dm_migrations.applied_migrations IS 'Ordered migrations applied to this database.';
CREATE TABLE IF NOT EXISTS dm_migrations.applied_function_files (
    file_name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT applied_function_files_pkey PRIMARY KEY (file_name)
);
COMMENT ON TABLE dm_migrations.applied_function_files IS
    'Function files of sql/ applied to this database, by checksum.';
ALTER TABLE dm_migrations.applied_migrations ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_migrations.applied_migrations FORCE ROW LEVEL SECURITY;
ALTER TABLE dm_migrations.applied_function_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE dm_migrations.applied_function_files FORCE ROW LEVEL SECURITY;
"""


class MigrationError(RuntimeError):
    """The database and the code disagree; nothing was changed by this run."""


@dataclass(frozen=True)
class Migration:
    migration_id: int
    name: str
    path: Path

    @property
    def checksum(self) -> str:
        return file_checksum(self.path)


@dataclass(frozen=True)
class MigrationReport:
    applied_migrations: list[str]
    applied_function_files: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.applied_migrations or self.applied_function_files)


def file_checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def discover_migrations(migrations_dir: Path) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(migrations_dir.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"migration file name {path.name!r} is not NNNN_lower_snake.sql")
        found.append(Migration(int(match["id"]), match["name"], path))
    ids = [m.migration_id for m in found]
    if len(ids) != len(set(ids)):
        raise MigrationError("two migration files share one number")
    return found


def discover_function_files(sql_dir: Path) -> list[Path]:
    return sorted(sql_dir.glob("*.sql"))


def migrate(
    database_url: str,
    migrations_dir: Path,
    sql_dir: Path,
    *,
    up_to: int | None = None,
    apply_functions: bool = True,
    progress: Callable[[str], None] = lambda _: None,
) -> MigrationReport:
    """Bring the database up to the code. Idempotent; safe to run concurrently."""
    migrations = [m for m in discover_migrations(migrations_dir) if up_to is None or m.migration_id <= up_to]
    function_files = discover_function_files(sql_dir) if apply_functions else []
    applied_now: list[str] = []
    files_now: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_catalog.pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            with conn.transaction():
                conn.execute(LEDGER_DDL)
            applied = {
                row[0]: (row[1], row[2])
                for row in conn.execute(
                    "SELECT migration_id, name, checksum FROM dm_migrations.applied_migrations"
                ).fetchall()
            }
            _check_ledger(applied, discover_migrations(migrations_dir))
            for migration in migrations:
                if migration.migration_id in applied:
                    continue
                # A session-level SET in an earlier migration must not leak into this one.
                conn.execute("RESET ALL")
                progress(f"migration {migration.path.name}")
                with conn.transaction():
                    conn.execute(migration.path.read_text())
                    conn.execute("RESET ROLE")
                    conn.execute(
                        "INSERT INTO dm_migrations.applied_migrations (migration_id, name, checksum) "
                        "VALUES (%s, %s, %s)",
                        (migration.migration_id, migration.name, migration.checksum),
                    )
                    # A migration may drop or change what sql/ defines: forget the
                    # function files in the same transaction, so that every one runs
                    # again even if this run stops before reaching them.
                    conn.execute("DELETE FROM dm_migrations.applied_function_files")
                applied_now.append(migration.path.name)
            done_files: dict[str, str] = dict(
                conn.execute(
                    "SELECT file_name, checksum FROM dm_migrations.applied_function_files"
                ).fetchall()
            )
            if function_files:
                _load_extension_libraries(conn)
            for path in function_files:
                checksum = file_checksum(path)
                if not applied_now and done_files.get(path.name) == checksum:
                    continue
                progress(f"functions {path.name}")
                with conn.transaction():
                    conn.execute("SET LOCAL ROLE densemem_owner")
                    conn.execute(path.read_text())
                    conn.execute("RESET ROLE")
                    conn.execute(
                        "INSERT INTO dm_migrations.applied_function_files (file_name, checksum) "
                        "VALUES (%s, %s) ON CONFLICT (file_name) DO UPDATE SET checksum = excluded.checksum, "
                        "applied_at = pg_catalog.now()",
                        (path.name, checksum),
                    )
                files_now.append(path.name)
        finally:
            conn.execute("SELECT pg_catalog.pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return MigrationReport(applied_now, files_now)


def _load_extension_libraries(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Load the libraries of the installed extensions into this session.

    An extension's parameters (hnsw.ef_search, pg_trgm.similarity_threshold)
    exist only once its library is loaded in the session; before that
    PostgreSQL treats them as placeholders that only a superuser may attach to
    a function (CREATE FUNCTION ... SET), and function files run as
    densemem_owner. Loading them first makes a function file apply the same
    whether or not something earlier in the session happened to load them.
    """
    names = [row[0] for row in conn.execute("SELECT extname FROM pg_catalog.pg_extension").fetchall()]
    for name in names:
        try:
            with conn.transaction():
                conn.execute(psycopg.sql.SQL("LOAD {}").format(psycopg.sql.Literal(name)))
        except psycopg.Error:
            pass  # no library of that name, or a non-superuser (who may LOAD only plugins)


def _check_ledger(applied: dict[int, tuple[str, str]], known: list[Migration]) -> None:
    by_id = {m.migration_id: m for m in known}
    newer = sorted(mid for mid in applied if mid not in by_id)
    if newer:
        raise MigrationError(
            f"the database holds migrations this code does not know ({', '.join(map(str, newer))}): "
            "it is newer than the code; upgrade the code instead"
        )
    for migration_id, (name, checksum) in sorted(applied.items()):
        migration = by_id[migration_id]
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {migration_id:04d}_{name} changed after it was applied "
                "(applied migrations are immutable; add a new migration instead)"
            )

"""The `densemem` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

import psycopg

from densemem import db, embedded
from densemem.config import Settings, load_settings
from densemem.migrate import MigrationError, migrate

Handler = Callable[[argparse.Namespace, Settings], int]

# Modules that add subcommands: each has register(commands) and sets
# `handler` (a Handler) on its parsers. One line per module.
COMMAND_MODULES: list[str] = [
    "densemem.sample",
    "densemem.demo",
    "densemem.eval_command",
    "densemem.embed_command",
    "densemem.bench_discovery",
    "densemem.bench_parse",
    "densemem.bench_recall",
    "densemem.bench_ingest",
    "densemem.keys_command",
    "densemem.serve_command",
    "densemem.recall_command",
    "densemem.mcp_server",
    "densemem.bench_http",
    "densemem.telemetry_command",
]


def _db(args: argparse.Namespace, settings: Settings) -> int:
    action: str = args.action
    if settings.database_url is not None and action in {"start", "stop", "status"}:
        print("DATABASE_URL is set: the embedded server is not used", file=sys.stderr)
        return 0 if action == "status" else 1
    if action == "start":
        print(embedded.start(settings.data_dir, settings.database_name))
        return 0
    if action == "stop":
        stopped = embedded.stop(settings.data_dir)
        print("stopped" if stopped else "not running")
        return 0
    if action == "status":
        current = embedded.status(settings.data_dir)
        if not current.running or current.admin_url is None:
            print("not running")
            return 3
        print(f"running (pid {current.pid}) in {settings.data_dir}")
        try:
            print(embedded.describe_shared_memory(embedded.shared_memory(current.admin_url)))
        except psycopg.Error as error:
            print(f"shared memory not known: {error}".strip())
        return 0
    if action == "url":
        print(db.database_url(settings, start=False))
        return 0
    if action == "psql":
        url = db.database_url(settings, start=True)
        psql = str(embedded.psql_path()) if settings.uses_embedded_server else "psql"
        os.execvp(psql, [psql, url, *args.psql_args])
    return 2


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    url = db.database_url(settings)
    try:
        report = migrate(
            url, settings.migrations_dir, settings.sql_dir, progress=lambda s: print(f"applying {s}")
        )
    except (MigrationError, psycopg.Error) as error:
        print(f"densemem migrate: {error}", file=sys.stderr)
        return 1
    migrations, files = len(report.applied_migrations), len(report.applied_function_files)
    print(f"applied {migrations} migrations, {files} function files" if report.changed else "up to date")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="densemem", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    db_parser = commands.add_parser(
        "db", help="the embedded PostgreSQL server", description="Manage the embedded server."
    )
    db_parser.add_argument("action", choices=["start", "stop", "status", "url", "psql"])
    db_parser.add_argument("psql_args", nargs=argparse.REMAINDER, help="arguments passed to psql")
    db_parser.set_defaults(handler=_db)

    migrate_parser = commands.add_parser(
        "migrate",
        help="apply migrations and function files",
        description="Apply migrations/ in order, then the function files of sql/.",
    )
    migrate_parser.set_defaults(handler=_migrate)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args, load_settings())
    except db.ServerNotRunning as error:
        print(f"densemem: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

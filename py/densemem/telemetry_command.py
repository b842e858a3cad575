"""`densemem telemetry prune`: delete old recall telemetry (as the administrator connection).

dm.prune_recall_telemetry deletes one bounded batch per call because a
function cannot commit; this command commits each batch in its own
transaction and calls again until a call deletes nothing, so an operator
schedules one command instead of a loop.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

from densemem import db
from densemem.config import Settings

DEFAULT_RETENTION = "30d"
DEFAULT_BATCH = 10_000

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_duration(text: str) -> timedelta:
    """'30d', '12h', '90m', '45s' or '2w' as a timedelta; ValueError otherwise."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use a whole number and s, m, h, d or w, e.g. 30d)")
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def prune_recall_telemetry(
    conn: psycopg.Connection[Any],
    older_than: timedelta,
    batch_size: int = DEFAULT_BATCH,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Call dm.prune_recall_telemetry, one committed transaction per batch, until it deletes nothing.

    Returns the rows deleted in total. The cutoff moves forward with each
    transaction's now(), by the seconds the prune takes: rows that age past
    it meanwhile are deleted too, which retention allows.
    """
    total = 0
    while True:
        with conn.transaction():
            row = conn.execute(
                "SELECT dm.prune_recall_telemetry(%(older_than)s, %(batch)s)",
                {"older_than": older_than, "batch": batch_size},
            ).fetchone()
        deleted = int(row[0]) if row is not None else 0
        if deleted == 0:
            return total
        total += deleted
        if on_batch is not None:
            on_batch(deleted)


def _prune(args: argparse.Namespace, settings: Settings) -> int:
    try:
        older_than = parse_duration(args.older_than)
    except ValueError as error:
        print(f"densemem telemetry prune: {error}", file=sys.stderr)
        return 2
    try:
        with psycopg.connect(db.database_url(settings), autocommit=True) as conn:
            total = prune_recall_telemetry(conn, older_than, args.batch)
    except psycopg.Error as error:
        print(f"densemem telemetry prune: {str(error).strip()}", file=sys.stderr)
        return 1
    print(total)
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    telemetry = commands.add_parser(
        "telemetry",
        help="maintain recall telemetry",
        description="Maintain dm_private.recall_telemetry (administrator).",
    )
    actions = telemetry.add_subparsers(dest="action", required=True)
    prune = actions.add_parser(
        "prune",
        help="delete recall telemetry older than a duration",
        description="Delete recall telemetry rows older than --older-than, in batches of --batch rows, "
        "each batch its own transaction, until none is left. Prints the number of rows deleted.",
    )
    prune.add_argument(
        "--older-than",
        default=DEFAULT_RETENTION,
        help=f"age to keep, e.g. 30d, 12h, 2w (default {DEFAULT_RETENTION})",
    )
    prune.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH,
        help=f"rows per transaction, 1 to 100000 (default {DEFAULT_BATCH})",
    )
    prune.set_defaults(handler=_prune)

"""`densemem keys`: create and revoke API keys (as the administrator connection)."""

from __future__ import annotations

import argparse
import sys
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg

from densemem import db
from densemem.config import Settings


@dataclass(frozen=True)
class IssuedKey:
    team_id: uuid.UUID
    profile_id: uuid.UUID
    api_key: str


def parse_scopes(text: str | None) -> list[str]:
    return [scope.strip() for scope in (text or "").split(",") if scope.strip()]


def create_key(conn: psycopg.Connection[Any], team: str, profile: str, scopes: list[str]) -> IssuedKey:
    """Create team and profile if missing (dm.ensure_team, dm.ensure_profile) and issue a key."""
    with conn.transaction():
        team_row = conn.execute("SELECT dm.ensure_team(%(team)s)", {"team": team}).fetchone()
        assert team_row is not None
        profile_row = conn.execute(
            "SELECT dm.ensure_profile(%(team_id)s, %(profile)s)", {"team_id": team_row[0], "profile": profile}
        ).fetchone()
        assert profile_row is not None
        key_row = conn.execute(
            "SELECT dm.issue_api_key(%(team_id)s, %(profile_id)s, %(scopes)s::text[])",
            {"team_id": team_row[0], "profile_id": profile_row[0], "scopes": scopes},
        ).fetchone()
        assert key_row is not None
    return IssuedKey(team_row[0], profile_row[0], str(key_row[0]))


def revoke_key(conn: psycopg.Connection[Any], api_key: str) -> bool:
    """dm.revoke_api_key: False when no live key matched."""
    with conn.transaction():
        row = conn.execute("SELECT dm.revoke_api_key(%(key)s)", {"key": api_key}).fetchone()
    return bool(row and row[0])


def team_id_by_name(conn: psycopg.Connection[Any], team: str) -> uuid.UUID | None:
    """The team of this name (administrator read), or None."""
    row = conn.execute(
        "SELECT team_id FROM dm_private.teams WHERE name = %(team)s", {"team": team}
    ).fetchone()
    return None if row is None else uuid.UUID(str(row[0]))


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    try:
        with psycopg.connect(db.database_url(settings)) as conn:
            if args.action == "create":
                issued = create_key(conn, args.team, args.profile, parse_scopes(args.scopes))
                print(issued.api_key)
                return 0
            if revoke_key(conn, args.api_key):
                print("revoked", file=sys.stderr)
                return 0
            print("densemem keys revoke: no live key matched", file=sys.stderr)
            return 1
    except psycopg.Error as error:
        print(f"densemem keys: {error}", file=sys.stderr)
        return 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = commands.add_parser(
        "keys", help="create and revoke API keys", description="Create and revoke API keys (administrator)."
    )
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create",
        help="issue a key (creates the team and profile if needed)",
        description="Issue an API key for a profile of a team, creating both if needed. "
        "Prints the key alone on stdout; only its SHA-256 is stored.",
    )
    create.add_argument("--team", required=True, help="team name")
    create.add_argument("--profile", required=True, help="profile name inside the team")
    create.add_argument("--scopes", default="", help="comma-separated scopes, e.g. pii,operator")
    create.set_defaults(handler=_keys)
    revoke = actions.add_parser("revoke", help="revoke a key", description="Revoke an API key.")
    revoke.add_argument("api_key", help="the key to revoke")
    revoke.set_defaults(handler=_keys)

"""Run a unit of work as an authenticated principal.

Each unit is one transaction: switch to a Dense-Mem role, set the team,
profile and scopes as transaction-local settings, run the calls, commit.
Settings and role end with the transaction, so a pooled connection
(or PgBouncer in transaction mode) never carries one request's identity
into the next.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row

Role = Literal["densemem_app", "densemem_analyst", "densemem_operator"]


@dataclass(frozen=True)
class Principal:
    """Who acts: a team, optionally a profile, and the scopes of its key."""

    team_id: uuid.UUID
    profile_id: uuid.UUID | None = None
    scopes: Sequence[str] = field(default_factory=tuple)
    role: Role = "densemem_app"


@contextmanager
def acting_as(
    conn: psycopg.Connection[Any], principal: Principal, *, statement_timeout_ms: int | None = None
) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
    """A transaction in which `principal` acts; yields a dict-row cursor."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT set_config('role', %(role)s, true), "
            "set_config('densemem.team_id', %(team)s, true), "
            "set_config('densemem.profile_id', %(profile)s, true), "
            "set_config('densemem.scopes', %(scopes)s, true), "
            "set_config('statement_timeout', %(timeout)s, true)",
            {
                "role": principal.role,
                "team": str(principal.team_id),
                "profile": str(principal.profile_id) if principal.profile_id else "",
                "scopes": ",".join(principal.scopes),
                "timeout": str(statement_timeout_ms or 0),
            },
        )
        yield cur

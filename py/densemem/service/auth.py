"""API keys and the per-request transaction.

A request is authenticated and served in ONE network round trip: three
statements are sent in one libpq pipeline and run as one implicit
transaction (no explicit BEGIN/COMMIT; the server commits at the pipeline's
Sync and rolls back on any error):

1. switch to densemem_app and set the statement timeout (transaction-local);
2. authenticate the key with dm.authenticate_api_key and, from its row, set
   densemem.team_id, densemem.profile_id and densemem.scopes (and, for the
   operator endpoints, switch to densemem_operator when the key has the
   operator scope);
3. call the one dm function, guarded so that it does not run at all when
   step 2 found no key.

The team passed to the function is read from the key itself
(dm_<team hex>_<key hex>_<secret>); dm_private.require_team then checks it
against the authenticated setting. Everything is transaction-local, so a
pooled connection (or PgBouncer in transaction mode) carries nothing into
the next request. This is the pipelined form of
densemem.store.session.acting_as, which needs the principal before it starts
and so costs a round trip more.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from densemem.service.errors import ApiError, from_database_error, unauthorized

API_KEY = re.compile(r"^dm_([0-9a-f]{32})_[0-9a-f]{32}_[A-Za-z0-9_-]{20,100}$")
MAX_AUTHORIZATION_BYTES = 300

_ENTER = (
    "SELECT pg_catalog.set_config('role', 'densemem_app', true), "
    "pg_catalog.set_config('statement_timeout', %(timeout)s, true), "
    "pg_catalog.set_config('synchronous_commit', %(synchronous_commit)s, true)"
)
_AUTHENTICATE = (
    "SELECT a.team_id, a.profile_id, a.scopes, "
    "pg_catalog.set_config('densemem.team_id', a.team_id::text, true), "
    "pg_catalog.set_config('densemem.profile_id', a.profile_id::text, true), "
    "pg_catalog.set_config('densemem.scopes', pg_catalog.array_to_string(a.scopes, ','), true), "
    "pg_catalog.set_config('role', CASE WHEN %(operator)s AND 'operator' = ANY (a.scopes) "
    "THEN 'densemem_operator' ELSE 'densemem_app' END, true) "
    "FROM dm.authenticate_api_key(%(api_key)s) AS a"
)
# The call runs only when step 2 set a team: no key, no call.
_GUARD = " WHERE COALESCE(pg_catalog.current_setting('densemem.team_id', true), '') <> ''"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of one request."""

    team_id: uuid.UUID
    profile_id: uuid.UUID
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class CallResult:
    principal: Principal
    value: Any
    # perf_counter() when the connection was in hand and when the answer was read (phase timing).
    connected_at: float = 0.0
    answered_at: float = 0.0


def bearer_key(authorization: str | None) -> str:
    """The API key of an `Authorization: Bearer <key>` header; 401 when absent or malformed."""
    if not authorization:
        raise unauthorized("missing Authorization header")
    if len(authorization) > MAX_AUTHORIZATION_BYTES:
        raise unauthorized("invalid API key")
    scheme, _, key = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise unauthorized("the Authorization header must read: Bearer <api key>")
    return key.strip()


def team_of_key(api_key: str) -> uuid.UUID:
    """The team a well-formed key claims; the database confirms it or finds no key."""
    match = API_KEY.match(api_key)
    if match is None:
        raise unauthorized("invalid API key")
    return uuid.UUID(match.group(1))


def call_as_key(
    pool: ConnectionPool[psycopg.Connection[Any]],
    api_key: str,
    statement: str,
    params: dict[str, Any],
    *,
    statement_timeout_ms: int,
    operator: bool = False,
    connection_timeout_s: float = 5.0,
    meanwhile: Callable[[], dict[str, Any]] | None = None,
    telemetry_only: bool = False,
) -> CallResult:
    """Authenticate `api_key` and run `statement` (one row, one column) as its team, in one round trip.

    `statement` is a SELECT without FROM/WHERE; it may use %(team_id)s and the keys of `params`.
    `meanwhile`, when given, runs after the first two statements are on the wire and before the
    third is sent; the parameters it returns join `params`. The server executes the role switch
    and the key check while it runs (pipeline mode sends each statement at once; the one Sync
    comes last), so a recall embeds its query in parallel with its authentication and still
    waits for the database once. It must not raise for an expected failure (the service maps a
    failed embedding to NULL).

    `telemetry_only` says that the statement's only write is recall telemetry (a recall): its
    transaction then commits without waiting for the WAL flush (synchronous_commit off for this
    transaction alone). A crash can lose the last moments' telemetry rows, never a caller's
    data; every other call commits durably.
    """
    team_id = team_of_key(api_key)
    try:
        with pool.connection(timeout=connection_timeout_s) as conn:
            connected_at = time.perf_counter()
            enter, authenticate, work = conn.cursor(), conn.cursor(), conn.cursor()
            failure: psycopg.Error | None = None
            try:
                with conn.pipeline():
                    enter.execute(
                        _ENTER,
                        {
                            "timeout": str(max(0, statement_timeout_ms)),
                            "synchronous_commit": "off" if telemetry_only else "on",
                        },
                    )
                    authenticate.execute(_AUTHENTICATE, {"api_key": api_key, "operator": operator})
                    if meanwhile is not None:
                        params = {**params, **meanwhile()}
                    work.execute(statement + _GUARD, {**params, "team_id": team_id})
            except psycopg.Error as error:
                failure = error
            try:
                auth_row = authenticate.fetchone()
            except psycopg.Error:  # the pipeline failed before authentication ran
                raise from_database_error(failure or psycopg.OperationalError("no result")) from None
            if auth_row is None:
                raise unauthorized("invalid API key")
            principal = Principal(team_id=auth_row[0], profile_id=auth_row[1], scopes=tuple(auth_row[2]))
            if operator and "operator" not in principal.scopes:
                raise ApiError(403, "42501", "this endpoint needs an API key with the operator scope")
            if failure is not None:
                raise from_database_error(failure)
            row = work.fetchone()
            answered_at = time.perf_counter()
    except psycopg.Error as error:
        raise from_database_error(error) from None
    if row is None:  # the guard stopped the call: cannot happen once auth_row exists
        raise unauthorized("invalid API key")
    return CallResult(principal, row[0], connected_at, answered_at)

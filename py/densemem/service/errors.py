"""One error shape and one map from SQLSTATE to HTTP status.

Every error body is `{"code", "message", "details", "hint"}`. Database errors
keep their SQLSTATE as `code` (so an HTTP client and a psql user see the same
code); errors raised by the HTTP layer itself use the SQLSTATE that the
database would have used for the same condition. Nothing else leaves the
server: unexpected exceptions become a generic 500 whose body names no
module, file or line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.errors

log = logging.getLogger("densemem.service")

# Exact SQLSTATEs first (DEVELOPERS.md, "Errors: one SQLSTATE map").
SQLSTATE_STATUS: dict[str, int] = {
    "28000": 401,  # no authenticated team / profile
    "28P01": 401,
    "42501": 403,  # team mismatch, role not granted, scope missing
    "22023": 422,  # invalid parameter value
    "22P02": 422,  # malformed uuid / input syntax
    "22007": 422,  # malformed timestamp
    "22008": 422,  # timestamp out of range
    "23505": 409,  # unique violation
    "23503": 422,  # reference to a row not in this team
    "23514": 422,  # check constraint
    "23502": 422,  # a required value is missing
    "P0001": 400,  # a plain RAISE EXCEPTION without a code
    "P0002": 404,  # no data found (strict INTO)
    "DM404": 404,  # no such row in this team
    "DM409": 409,  # illegal lifecycle move
    "DM413": 413,  # request too large
    "DM503": 503,  # required dependency unavailable
    "57014": 503,  # statement timeout
    "55P03": 503,  # lock not available
    "40001": 503,  # serialization failure: retry
    "40P01": 503,  # deadlock detected: retry
}

# Then SQLSTATE classes (the first two characters).
SQLSTATE_CLASS_STATUS: dict[str, int] = {
    "08": 503,  # connection exception
    "22": 422,  # data exception
    "23": 409,  # other integrity constraint violations
    "53": 503,  # insufficient resources
    "57": 503,  # operator intervention (shutdown, cancel)
    "58": 503,  # system error (I/O)
}

INTERNAL_CODE = "XX000"


def status_for_sqlstate(sqlstate: str | None) -> int:
    """The HTTP status of a database error; 500 for anything the map does not name."""
    if not sqlstate:
        return 500
    if sqlstate in SQLSTATE_STATUS:
        return SQLSTATE_STATUS[sqlstate]
    return SQLSTATE_CLASS_STATUS.get(sqlstate[:2], 500)


@dataclass
class ApiError(Exception):
    """An error answered to the client as `{"code", "message", "details", "hint"}`."""

    status: int
    code: str
    message: str
    details: Any = None
    hint: str | None = None

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details, "hint": self.hint}


def unauthorized(message: str = "a valid API key is required") -> ApiError:
    return ApiError(
        401,
        "28000",
        message,
        hint="send Authorization: Bearer <api key> (create one with `densemem keys create`)",
    )


def not_found(message: str = "no such resource") -> ApiError:
    return ApiError(404, "DM404", message)


def internal_error() -> ApiError:
    return ApiError(500, INTERNAL_CODE, "internal error", hint="the server log has the details")


def from_database_error(error: psycopg.Error) -> ApiError:
    """Map a psycopg error to the API error; 5xx bodies never repeat server internals."""
    sqlstate = error.sqlstate
    if sqlstate is None:
        if isinstance(error, psycopg.DataError):
            # Raised client-side before sending, e.g. a NUL character in text.
            return ApiError(422, "22021", f"a value cannot be sent to the database: {error}")
        if isinstance(error, psycopg.OperationalError | psycopg.errors.PipelineAborted):
            return ApiError(503, "08006", "the database is unavailable", hint="retry later")
        log.error("database client error", exc_info=error)
        return internal_error()
    status = status_for_sqlstate(sqlstate)
    if status == 500:
        log.error("unmapped database error %s", sqlstate, exc_info=error)
        return internal_error()
    diag = error.diag
    message = diag.message_primary or "database error"
    if sqlstate == "57014":
        message = "the request took longer than the statement timeout"
    elif sqlstate.startswith("08"):
        message = "the database is unavailable"
    return ApiError(status, sqlstate, message, details=diag.message_detail, hint=diag.message_hint)

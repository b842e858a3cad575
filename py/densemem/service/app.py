"""The Starlette application: a lifespan that owns the pool, the routes, one error handler per class.

`create_app()` reads the settings; `densemem serve` runs it under uvicorn.
Each request authenticates its API key and calls one dm function in one
transaction and one round trip (see densemem.service.auth).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from densemem import db
from densemem.config import Settings, load_settings
from densemem.service.embedding import QueryEmbedder, load_query_embedder, query_batcher
from densemem.service.errors import ApiError, from_database_error, internal_error
from densemem.service.metrics import Labels, gauge_lines
from densemem.service.openapi import openapi_document
from densemem.service.phase_log import GC_CLOCK, PhaseLog, freeze_start_up_objects
from densemem.service.routes import OPERATIONS, ServiceConfig, ServiceState, state_of

log = logging.getLogger("densemem.service")

ConnectionHook = Callable[[psycopg.Connection[Any]], None]


def service_config(settings: Settings) -> ServiceConfig:
    return ServiceConfig(
        statement_timeout_ms=settings.statement_timeout_ms,
        max_body_bytes=int(os.environ.get("DENSEMEM_MAX_BODY_BYTES", str(4 * 1024 * 1024))),
        max_query_string_bytes=int(os.environ.get("DENSEMEM_MAX_QUERY_STRING_BYTES", "4096")),
        pool_timeout_s=float(os.environ.get("DENSEMEM_POOL_TIMEOUT_S", "5")),
        pool_min_size=int(os.environ.get("DENSEMEM_POOL_MIN_SIZE", "2")),
        pool_max_size=int(os.environ.get("DENSEMEM_POOL_MAX_SIZE", "16")),
    )


def make_pool(
    url: str, config: ServiceConfig, *, configure: ConnectionHook | None = None
) -> ConnectionPool[psycopg.Connection[Any]]:
    """Autocommit connections: every request is one pipelined implicit transaction."""
    return ConnectionPool(
        url,
        min_size=config.pool_min_size,
        max_size=max(config.pool_min_size, config.pool_max_size),
        kwargs={"autocommit": True, "application_name": "densemem-service"},
        configure=configure,
        open=False,
        name="densemem",
    )


def error_response(error: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="densemem"'} if error.status == 401 else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _database_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, psycopg.Error)
    return error_response(from_database_error(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "DM404", 405: "DM405"}.get(exc.status_code, str(exc.status_code))
    message = {404: "no such endpoint", 405: "method not allowed"}.get(exc.status_code, str(exc.detail))
    response = error_response(ApiError(exc.status_code, code, message, hint="see /openapi.json"))
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(internal_error())


# ---------------------------------------------------------------- operations endpoints


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _check_database(state: ServiceState) -> str:
    try:
        with state.pool.connection(timeout=2.0) as conn:
            conn.execute("SELECT 1")
        return "ok"
    except psycopg.Error as error:
        return f"unavailable: {type(error).__name__}"


def _check_embedder(state: ServiceState) -> str:
    try:
        vector = state.embedder.embed_query("readiness probe")
    except Exception as error:
        return f"unavailable: {type(error).__name__}"
    return "ok" if vector is not None else "unavailable: no vector"


async def readyz(request: Request) -> Response:
    state = state_of(request)
    database = await run_in_threadpool(_check_database, state)
    embedding = await run_in_threadpool(_check_embedder, state)
    checks = {"database": database, "embedding": embedding}
    if database == "ok" and embedding == "ok":
        return JSONResponse({"status": "ready", **checks})
    return error_response(ApiError(503, "DM503", "not ready", details=checks))


ENTER_TEAM_SQL = (
    "SELECT pg_catalog.set_config('role', 'densemem_app', true), "
    "pg_catalog.set_config('densemem.team_id', %(team)s::text, true), "
    "pg_catalog.set_config('statement_timeout', '2000', true)"
)
DEGRADED_SQL = (
    "SELECT b.branch, pg_catalog.count(*) FROM dm_private.recall_telemetry AS t, "
    "LATERAL pg_catalog.unnest(t.degraded_branches) AS b (branch) "
    "WHERE t.team_id = %(team)s AND t.created_at >= pg_catalog.now() - interval '5 minutes' GROUP BY b.branch"
)


def _database_gauges(state: ServiceState, teams: list[uuid.UUID]) -> list[str]:
    """Search freshness over all teams (dm.search_freshness_overall) and the degraded recall
    branches of the last five minutes, read as each team served recently (bounded)."""
    lines: list[str] = []
    degraded: dict[str, float] = {}
    with state.pool.connection(timeout=2.0) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_catalog.set_config('role', 'densemem_app', true)")
            exists = conn.execute(
                "SELECT pg_catalog.to_regprocedure('dm.search_freshness_overall()') IS NOT NULL"
            ).fetchone()
            if exists is not None and exists[0]:
                row = conn.execute("SELECT * FROM dm.search_freshness_overall()").fetchone()
                if row is not None:
                    pending, failed, oldest = (float(value or 0) for value in row)
                    lines += gauge_lines(
                        "densemem_search_pending_documents",
                        "Documents waiting for a vector (all teams).",
                        [((), pending)],
                    )
                    lines += gauge_lines(
                        "densemem_search_failed_documents",
                        "Documents whose embedding failed (all teams).",
                        [((), failed)],
                    )
                    lines += gauge_lines(
                        "densemem_search_oldest_pending_age_seconds",
                        "Age of the oldest document waiting for a vector (all teams).",
                        [((), oldest)],
                    )
        for team in teams:
            with conn.transaction():
                conn.execute(ENTER_TEAM_SQL, {"team": team})
                for branch, count in conn.execute(DEGRADED_SQL, {"team": team}).fetchall():
                    degraded[branch] = degraded.get(branch, 0.0) + float(count)
    samples: list[tuple[Labels, float]] = [((("branch", b),), n) for b, n in sorted(degraded.items())]
    lines += gauge_lines(
        "densemem_recall_degraded_branches_recent",
        "Recalls of the last 5 minutes (teams served recently) that ran with this branch degraded.",
        samples,
    )
    return lines


async def metrics(request: Request) -> Response:
    state = state_of(request)
    lines = state.metrics.render()
    lines += gauge_lines(
        "densemem_teams_served_recently",
        "Teams whose keys were used recently (bounded).",
        [((), float(len(state.recent_teams)))],
    )
    try:
        # snapshot on the event loop, where recent_teams is written
        lines += await run_in_threadpool(_database_gauges, state, list(state.recent_teams))
        lines += gauge_lines("densemem_database_up", "Whether /metrics could read the database.", [((), 1.0)])
    except psycopg.Error as error:
        log.warning("metrics: database gauges unavailable: %s", error)
        lines += gauge_lines("densemem_database_up", "Whether /metrics could read the database.", [((), 0.0)])
    return PlainTextResponse("\n".join(lines) + "\n", media_type="text/plain; version=0.0.4")


async def openapi(request: Request) -> Response:
    return JSONResponse(request.app.state.openapi)


# ---------------------------------------------------------------- middleware


class LimitsAndMetrics:
    """Request size limits and per-route latency, outside routing so that every answer is counted."""

    def __init__(self, app: ASGIApp, routes: list[Route]) -> None:
        self.app = app
        self.routes = routes

    def _route(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return route.path
        return "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: ServiceState = scope["app"].state.service
        started = time.perf_counter()
        status_holder = {"status": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = int(message["status"])
            await send(message)

        try:
            limit_error = self._limit_error(scope, state)
            if limit_error is not None:
                await error_response(limit_error)(scope, receive, send_wrapper)
                return
            await self.app(scope, self._limited_receive(receive, state), send_wrapper)
        finally:
            route = self._route(scope)
            labels: Labels = (("method", scope["method"]), ("route", route))
            state.metrics.latency.observe(time.perf_counter() - started, labels)
            state.metrics.requests.inc((*labels, ("status", str(status_holder["status"]))))

    @staticmethod
    def _limit_error(scope: Scope, state: ServiceState) -> ApiError | None:
        if len(scope.get("query_string", b"")) > state.config.max_query_string_bytes:
            return ApiError(413, "DM413", "the query string is too long")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    return ApiError(400, "22023", "invalid Content-Length")
                if length > state.config.max_body_bytes:
                    return ApiError(413, "DM413", f"the body exceeds {state.config.max_body_bytes} bytes")
        return None

    @staticmethod
    def _limited_receive(receive: Receive, state: ServiceState) -> Receive:
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > state.config.max_body_bytes:
                    raise ApiError(413, "DM413", f"the body exceeds {state.config.max_body_bytes} bytes")
            return message

        return limited


# ---------------------------------------------------------------- the app


def create_app(
    settings: Settings | None = None,
    *,
    database_url: str | None = None,
    embedder: QueryEmbedder | None = None,
    config: ServiceConfig | None = None,
    configure_connection: ConnectionHook | None = None,
) -> Starlette:
    """The HTTP API. Arguments override the settings (tests pass their database and a fake embedder)."""
    settings = settings or load_settings()
    config = config or service_config(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        url = database_url or db.database_url(settings)
        pool = make_pool(url, config, configure=configure_connection)
        await run_in_threadpool(pool.open, False)  # start even when the database is down: /readyz says so
        chosen = embedder if embedder is not None else await run_in_threadpool(load_query_embedder, settings)
        warm_up = getattr(chosen, "warm_up", None)
        if callable(warm_up):
            # Load the model (and build its onnx session) now, not in the first recall.
            try:
                await run_in_threadpool(warm_up)
            except Exception as error:  # the provider is down: /readyz says so, recall degrades
                log.warning("query embedding warm-up failed: %s", error)
        app.state.service = ServiceState(pool=pool, embedder=chosen, config=config)
        app.state.service.overlap_embedding = os.environ.get(
            "DENSEMEM_OVERLAP_EMBEDDING", "1"
        ).strip().lower() not in {"0", "false", "no", "off"}
        app.state.service.batcher = query_batcher(chosen, observe=app.state.service.metrics.observe_model)
        phase_log_path = os.environ.get("DENSEMEM_PHASE_LOG", "").strip()
        if phase_log_path:
            app.state.service.phase_log = PhaseLog(phase_log_path)
        GC_CLOCK.install()
        if os.environ.get("DENSEMEM_GC_FREEZE", "1").strip().lower() not in {"0", "false", "no", "off"}:
            # The model, torch and the routes are loaded: keep the collector from walking them again.
            log.info("froze %d start-up objects out of the garbage collector", freeze_start_up_objects())
        try:
            yield
        finally:
            if app.state.service.phase_log is not None:
                app.state.service.phase_log.close()
            app.state.service.batcher.close()
            await run_in_threadpool(pool.close)

    routes = [Route(op.path, op.handler, methods=[op.method]) for op in OPERATIONS]
    routes += [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: _api_error,
            psycopg.Error: _database_error,
            HTTPException: _http_error,
            Exception: _unexpected,
        },
    )
    app.state.openapi = openapi_document()
    app.add_middleware(LimitsAndMetrics, routes=routes)
    return app

"""The endpoints: one dm function per request, in one transaction, in one round trip.

Each Operation names its method, path, request model, the SQL it runs and
its success status; the same table builds the Starlette routes and the
OpenAPI document. Answers of recall, explain and trace are the database's
jsonb text, passed through unchanged, so HTTP and SQL callers read
byte-identical JSON.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ValidationError
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from densemem.service import models
from densemem.service.auth import CallResult, bearer_key, call_as_key, team_of_key
from densemem.service.embedding import QueryBatcher, QueryEmbedder, query_batcher, vector_literal
from densemem.service.errors import ApiError, not_found
from densemem.service.metrics import ServiceMetrics
from densemem.service.phase_log import PhaseLog, Timeline

ModelT = TypeVar("ModelT", bound=BaseModel)
JSON = "application/json"


@dataclass
class ServiceConfig:
    statement_timeout_ms: int = 5000
    max_body_bytes: int = 4 * 1024 * 1024
    max_query_string_bytes: int = 4096
    pool_timeout_s: float = 5.0
    key_cache_seconds: float = 60.0
    pool_min_size: int = 2
    pool_max_size: int = 16


@dataclass
class ServiceState:
    """What every request needs; owned by the app's lifespan."""

    pool: ConnectionPool[psycopg.Connection[Any]]
    embedder: QueryEmbedder
    config: ServiceConfig
    metrics: ServiceMetrics = field(default_factory=ServiceMetrics)
    started_at: float = field(default_factory=time.time)
    # SHA-256 of keys seen valid recently -> expiry. Used only to decide whether
    # the query is embedded before the key is checked (never to skip the check).
    recent_keys: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    # Teams served recently, for the freshness gauges of /metrics.
    recent_teams: OrderedDict[uuid.UUID, float] = field(default_factory=OrderedDict)
    # Concurrent query embeddings share model calls (densemem.service.embedding.QueryBatcher).
    batcher: QueryBatcher | None = None
    # A recall that finds the model idle embeds in its database thread while the key is checked
    # (DENSEMEM_OVERLAP_EMBEDDING, default on; see _recall_overlapped).
    overlap_embedding: bool = True
    # Recalls in progress (event loop only): a recall overlaps only when it is alone, so that
    # concurrent recalls keep sharing batched model calls.
    recalls_in_flight: int = 0
    # One JSON line per recall with its phases (DENSEMEM_PHASE_LOG; off by default).
    phase_log: PhaseLog | None = None

    def query_batcher(self) -> QueryBatcher:
        if self.batcher is None:
            self.batcher = query_batcher(self.embedder, observe=self.metrics.observe_model)
        return self.batcher

    def remember(self, api_key: str, team_id: uuid.UUID) -> None:
        now = time.monotonic()
        digest = hashlib.sha256(api_key.encode()).digest()
        self.recent_keys[digest] = now + self.config.key_cache_seconds
        self.recent_keys.move_to_end(digest)
        while len(self.recent_keys) > 10_000:
            self.recent_keys.popitem(last=False)
        self.recent_teams[team_id] = now
        self.recent_teams.move_to_end(team_id)
        while len(self.recent_teams) > 50:
            self.recent_teams.popitem(last=False)

    def recently_valid(self, api_key: str) -> bool:
        expiry = self.recent_keys.get(hashlib.sha256(api_key.encode()).digest())
        return expiry is not None and expiry > time.monotonic()


def state_of(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


def require_key(request: Request) -> str:
    """The request's well-formed API key, or 401: checked before the body, so an unauthenticated
    client learns nothing about validation (the database confirms the key with the call)."""
    key = bearer_key(request.headers.get("authorization"))
    team_of_key(key)
    return key


async def parse_body(request: Request, model: type[ModelT]) -> ModelT:
    require_key(request)
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != JSON:
        raise ApiError(415, "22023", "the request body must be application/json")
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        raise validation_error(error) from None


def validation_error(error: ValidationError) -> ApiError:
    problems = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"]).lstrip(
            "."
        )
        message = item["msg"]
        if item["type"] == "json_invalid":
            message = "the request body is not valid JSON"
        problems.append({"field": path or "(body)", "message": message})
    first = problems[0]
    return ApiError(
        422,
        "22023",
        f"invalid request: {first['field']}: {first['message']}",
        details=problems,
        hint="see /openapi.json for the request schema",
    )


def path_uuid(request: Request, name: str) -> uuid.UUID:
    require_key(request)
    raw = request.path_params[name]
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        raise ApiError(
            422, "22P02", f"{name} must be a UUID", details=[{"field": name, "message": "not a UUID"}]
        ) from None


def dump(model: BaseModel, *, exclude: set[str] | None = None) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True, exclude=exclude)


def json_response(text: str | None, status: int = 200, background: BackgroundTask | None = None) -> Response:
    return Response(
        text if text is not None else "null", status_code=status, media_type=JSON, background=background
    )


async def call(
    request: Request,
    statement: str,
    params: dict[str, Any],
    *,
    operator: bool = False,
    api_key: str | None = None,
    meanwhile: Callable[[], dict[str, Any]] | None = None,
    telemetry_only: bool = False,
) -> CallResult:
    state = state_of(request)
    key = api_key if api_key is not None else bearer_key(request.headers.get("authorization"))
    result = await run_in_threadpool(
        call_as_key,
        state.pool,
        key,
        statement,
        params,
        statement_timeout_ms=state.config.statement_timeout_ms,
        operator=operator,
        connection_timeout_s=state.config.pool_timeout_s,
        meanwhile=meanwhile,
        telemetry_only=telemetry_only,
    )
    state.remember(key, result.principal.team_id)
    return result


async def run(
    request: Request,
    statement: str,
    params: dict[str, Any],
    *,
    operator: bool = False,
    api_key: str | None = None,
) -> Any:
    return (await call(request, statement, params, operator=operator, api_key=api_key)).value


async def authenticate_only(request: Request, api_key: str) -> None:
    """A round trip that only checks the key: taken before embedding for keys not seen recently,
    so that an unknown key never costs an embedding."""
    await run(request, "SELECT true", {}, api_key=api_key)


async def embed(request: Request, query: str) -> str | None:
    state = state_of(request)
    started = time.perf_counter()
    try:
        vector = await state.query_batcher().embed(query)
    except Exception:  # the provider is down: the ranking profile decides
        vector = None
    return embedded(state, vector, started)


def embedded(state: ServiceState, vector: Sequence[float] | None, started: float) -> str | None:
    """Count one query embedding (latency; a missing vector is a degraded branch); its SQL text."""
    state.metrics.embedding_latency.observe(time.perf_counter() - started)
    if vector is None:
        state.metrics.degraded.inc((("branch", "query_embedding"),))
    return vector_literal(vector)


# ---------------------------------------------------------------- handlers

RECALL_SQL = (
    "SELECT (dm.recall_memory(%(query)s, %(team_id)s, %(embedding)s::public.vector, %(request)s))::text"
)
EXPLAIN_SQL = (
    "SELECT (dm.explain_recall(%(query)s, %(team_id)s, %(embedding)s::public.vector, %(request)s))::text"
)


TRACE_SQL = "SELECT (dm.trace_memory(%(relationship_id)s, %(team_id)s))::text"
INGEST_SQL = "SELECT pg_catalog.to_jsonb(dm.ingest_evidence(%(team_id)s, %(items)s))"
FEEDBACK_SQL = "SELECT dm.record_feedback(%(team_id)s, %(feedback)s)"
COMPACT_STATISTICS_SQL = "SELECT dm.compact_search_statistics(%(team_id)s)"

log = logging.getLogger(__name__)


def compact_statistics_after(request: Request) -> BackgroundTask:
    """Folds the team's BM25 statistic deltas after the response, in a transaction of its own.

    Every evidence write appends deltas (exact, and free of hot-row locks on the write path);
    reads sum the pending ones, so they must not pile up. Folding after each write keeps the
    read cheap; a failure is logged and retried by the next write, never reported to the caller,
    whose write is already committed.
    """
    key = require_key(request)

    async def compact() -> None:
        try:
            await run(request, COMPACT_STATISTICS_SQL, {}, api_key=key)
        except Exception:  # housekeeping: the write it follows is committed
            log.warning("compacting search statistics failed; the next write retries", exc_info=True)

    return BackgroundTask(compact)


def recall_params(body: models.RecallRequest, embedding: str | None) -> dict[str, Any]:
    return {"query": body.query, "embedding": embedding, "request": Jsonb(dump(body, exclude={"query"}))}


async def _recall(
    request: Request, model: type[models.RecallRequest], statement: str, operator: bool
) -> Response:
    state = state_of(request)
    state.recalls_in_flight += 1
    try:
        return await _recall_counted(request, model, statement, operator)
    finally:
        state.recalls_in_flight -= 1


async def _recall_counted(
    request: Request, model: type[models.RecallRequest], statement: str, operator: bool
) -> Response:
    state = state_of(request)
    phases = Phases(state)
    began = time.perf_counter()
    key = require_key(request)
    body = await parse_body(request, model)
    parsed = time.perf_counter()
    phases.start(body.query, began)
    phases.observe(parsed - began, PHASE_PARSE)
    if not state.recently_valid(key):
        await authenticate_only(request, key)
        phases.observe(time.perf_counter() - parsed, PHASE_AUTHENTICATE)
    elif state.overlap_embedding and state.recalls_in_flight == 1:
        batcher = state.query_batcher()
        claim = batcher.claim_idle()
        if claim:
            try:
                return await _recall_overlapped(request, body, statement, operator, key, claim, phases)
            finally:
                batcher.release(claim)
    embed_began = time.perf_counter()
    embedding = await embed(request, body.query)
    params = recall_params(body, embedding)
    sent = time.perf_counter()
    phases.observe(sent - embed_began, PHASE_EMBED)
    result = await call(request, statement, params, operator=operator, api_key=key, telemetry_only=True)
    back = time.perf_counter()
    phases.observe(result.connected_at - sent, PHASE_POOL)
    phases.observe(result.answered_at - result.connected_at, PHASE_ROUND_TRIP)
    phases.observe(back - result.answered_at, PHASE_HANDOFF)
    response = json_response(result.value)
    phases.observe(time.perf_counter() - back, PHASE_RESPOND)
    phases.finish(overlapped=False)
    return response


async def _recall_overlapped(
    request: Request,
    body: models.RecallRequest,
    statement: str,
    operator: bool,
    key: str,
    claim: int,
    phases: Phases,
) -> Response:
    """A lone recall (no other in progress) of a key seen valid recently, the model idle: ONE
    worker thread takes a connection, sends the role switch and the key check, embeds the query
    while the server runs them, then sends the recall and the pipeline's one Sync
    (densemem.service.auth.call_as_key's `meanwhile`). One thread hand-off instead of two, and
    the key check and the pool wait no longer add to the embedding. Still one transaction and one
    round trip."""
    state = state_of(request)
    batcher = state.query_batcher()
    loop = asyncio.get_running_loop()
    model_seconds = [0.0, 0.0]

    def embed_meanwhile() -> dict[str, Any]:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            vector = batcher.embed_claimed(claim, body.query, loop)
        except Exception:  # the provider is down: the ranking profile decides
            vector = None
        model_seconds[0] = time.perf_counter() - started
        model_seconds[1] = time.thread_time() - cpu
        return {"embedding": embedded(state, vector, started)}

    sent = time.perf_counter()
    params = recall_params(body, None)
    result = await call(
        request,
        statement,
        params,
        operator=operator,
        api_key=key,
        meanwhile=embed_meanwhile,
        telemetry_only=True,
    )
    back = time.perf_counter()
    state.metrics.overlapped.inc()
    phases.observe(result.connected_at - sent, PHASE_POOL)
    phases.observe(model_seconds[0], PHASE_EMBED)
    phases.observe(result.answered_at - result.connected_at - model_seconds[0], PHASE_ROUND_TRIP)
    phases.observe(back - result.answered_at, PHASE_HANDOFF)
    response = json_response(result.value)
    phases.observe(time.perf_counter() - back, PHASE_RESPOND)
    phases.finish(overlapped=True, embed_cpu=model_seconds[1])
    return response


class Phases:
    """A recall's phase timings: into the /metrics histograms, and into the phase log when on."""

    def __init__(self, state: ServiceState) -> None:
        self.histogram = state.metrics.recall_phases
        self.log = state.phase_log
        self.timeline: Timeline | None = None

    def start(self, query: str, began: float) -> None:
        if self.log is not None:
            self.timeline = Timeline(query, began)

    def observe(self, seconds: float, labels: tuple[tuple[str, str], ...]) -> None:
        self.histogram.observe(seconds, labels)
        if self.timeline is not None:
            self.timeline.phase(labels[0][1], seconds)

    def finish(self, *, overlapped: bool, embed_cpu: float | None = None) -> None:
        if self.timeline is None or self.log is None:
            return
        if embed_cpu is not None:
            self.timeline.phase("embed_cpu", embed_cpu)
        record = self.timeline.finish()
        record["overlapped"] = overlapped
        self.log.write(record)


PHASE_PARSE = (("phase", "parse"),)
PHASE_AUTHENTICATE = (("phase", "authenticate"),)
PHASE_EMBED = (("phase", "embed"),)
PHASE_POOL = (("phase", "pool"),)
PHASE_ROUND_TRIP = (("phase", "round_trip"),)
PHASE_HANDOFF = (("phase", "handoff"),)
PHASE_RESPOND = (("phase", "respond"),)


async def recall(request: Request) -> Response:
    return await _recall(request, models.RecallRequest, RECALL_SQL, operator=False)


async def explain(request: Request) -> Response:
    return await _recall(request, models.ExplainRequest, EXPLAIN_SQL, operator=True)


async def trace(request: Request) -> Response:
    relationship_id = path_uuid(request, "relationship_id")
    answer = await run(request, TRACE_SQL, {"relationship_id": relationship_id})
    if answer is None:
        raise not_found("no such relationship in this team")
    return json_response(answer)


async def ingest_evidence(request: Request) -> Response:
    body = await parse_body(request, models.IngestEvidenceRequest)
    ids = await run(request, INGEST_SQL, {"items": Jsonb(dump(body)["items"])})
    return json_response(_json({"evidence_ids": ids}), 201, background=compact_statistics_after(request))


async def upsert_entities(request: Request) -> Response:
    body = await parse_body(request, models.UpsertEntitiesRequest)
    statement = "SELECT pg_catalog.to_jsonb(dm.upsert_entities(%(team_id)s, %(items)s))"
    ids = await run(request, statement, {"items": Jsonb(dump(body)["items"])})
    return json_response(_json({"entity_ids": ids}), 200)


async def assert_relationship(request: Request) -> Response:
    body = await parse_body(request, models.AssertRelationshipRequest)
    if (body.object_entity_id is None) == (body.object_value is None):
        raise ApiError(
            422,
            "22023",
            "give exactly one of object_entity_id and object_value",
            details=[
                {"field": "object_entity_id", "message": "exactly one of object_entity_id, object_value"}
            ],
        )
    statement = "SELECT dm.assert_relationship(%(team_id)s, %(relationship)s)"
    relationship_id = await run(request, statement, {"relationship": Jsonb(dump(body))})
    return json_response(_json({"relationship_id": str(relationship_id)}), 201)


async def record_verification(request: Request) -> Response:
    relationship_id = path_uuid(request, "relationship_id")
    body = await parse_body(request, models.VerificationRequest)
    statement = "SELECT dm.record_verification(%(team_id)s, %(relationship_id)s, %(decision)s, %(rationale)s)"
    params = {"relationship_id": relationship_id, "decision": body.decision, "rationale": body.rationale}
    verification_id = await run(request, statement, params)
    return json_response(_json({"verification_id": str(verification_id)}), 201)


async def move_relationship(request: Request) -> Response:
    relationship_id = path_uuid(request, "relationship_id")
    body = await parse_body(request, models.RelationshipMoveRequest)
    statement = (
        "SELECT dm.move_relationship(%(team_id)s, %(relationship_id)s, %(move)s, %(reason)s, "
        "%(replacement)s::uuid) IS NULL"
    )
    params = {
        "relationship_id": relationship_id,
        "move": body.move,
        "reason": body.reason,
        "replacement": body.replacement_relationship_id,
    }
    await run(request, statement, params)
    return json_response(_json({"relationship_id": str(relationship_id), "move": body.move}))


async def move_evidence(request: Request) -> Response:
    evidence_id = path_uuid(request, "evidence_id")
    body = await parse_body(request, models.EvidenceMoveRequest)
    statement = "SELECT dm.move_evidence(%(team_id)s, %(evidence_id)s, %(move)s, %(reason)s) IS NULL"
    await run(request, statement, {"evidence_id": evidence_id, "move": body.move, "reason": body.reason})
    answer = _json({"evidence_id": str(evidence_id), "move": body.move})
    return json_response(answer, background=compact_statistics_after(request))


async def erase_evidence(request: Request) -> Response:
    evidence_id = path_uuid(request, "evidence_id")
    reason = request.query_params.get("reason")
    if reason is not None and not 1 <= len(reason) <= 2000:
        raise ApiError(422, "22023", "reason must be 1 to 2000 characters")
    statement = "SELECT dm.erase_evidence(%(team_id)s, %(evidence_id)s, %(reason)s) IS NULL"
    await run(request, statement, {"evidence_id": evidence_id, "reason": reason})
    return Response(status_code=204)


async def add_hypothesis(request: Request) -> Response:
    body = await parse_body(request, models.HypothesisRequest)
    statement = "SELECT dm.add_hypothesis(%(team_id)s, %(hypothesis)s)"
    hypothesis_id = await run(request, statement, {"hypothesis": Jsonb(dump(body))})
    return json_response(_json({"hypothesis_id": str(hypothesis_id)}), 201)


async def record_feedback(request: Request) -> Response:
    body = await parse_body(request, models.FeedbackRequest)
    feedback_id = await run(request, FEEDBACK_SQL, {"feedback": Jsonb(dump(body))})
    return json_response(_json({"feedback_id": str(feedback_id)}), 201)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str)


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    handler: Callable[[Request], Awaitable[Response]]
    request_model: type[BaseModel] | None = None
    success_status: int = 200
    response_schema: dict[str, Any] | None = None
    path_params: tuple[str, ...] = ()
    query_params: tuple[tuple[str, dict[str, Any]], ...] = ()
    tag: str = "memory"


def _ids(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [name],
        "properties": {name: {"type": "array", "items": {"type": "string", "format": "uuid"}}},
    }


def _id(name: str) -> dict[str, Any]:
    return {"type": "object", "required": [name], "properties": {name: {"type": "string", "format": "uuid"}}}


RECALL_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["results", "discovery_paths", "guidance"],
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["evidence_id", "context"],
                "properties": {
                    "evidence_id": {"type": "string", "format": "uuid"},
                    "context": {"type": "string"},
                    "source_id": {"type": "string", "format": "uuid"},
                    "source_external_id": {"type": "string"},
                },
            },
        },
        "discovery_paths": {"type": "array", "items": {"type": "object"}},
        "related_hypotheses": {"type": "array", "items": {"type": "object"}},
        "guidance": {"type": "string"},
    },
}

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "POST",
        "/v1/recall",
        "recall_memory",
        "Recall the best evidence contexts for a query, with discovery paths.",
        recall,
        models.RecallRequest,
        200,
        RECALL_RESPONSE,
    ),
    Operation(
        "POST",
        "/v1/recall/explain",
        "explain_recall",
        "Operators: a recall with each result's score breakdown and the branch telemetry.",
        explain,
        models.ExplainRequest,
        200,
        {"type": "object"},
        tag="operations",
    ),
    Operation(
        "GET",
        "/v1/relationships/{relationship_id}/trace",
        "trace_memory",
        "One relationship with its evidence, verifications, lifecycle and conflicts.",
        trace,
        None,
        200,
        {"type": "object"},
        path_params=("relationship_id",),
    ),
    Operation(
        "POST",
        "/v1/evidence",
        "ingest_evidence",
        "Store evidence; IDs come back in input order.",
        ingest_evidence,
        models.IngestEvidenceRequest,
        201,
        _ids("evidence_ids"),
    ),
    Operation(
        "DELETE",
        "/v1/evidence/{evidence_id}",
        "erase_evidence",
        "Erase evidence (GDPR): the text is deleted everywhere, a tombstone remains.",
        erase_evidence,
        None,
        204,
        None,
        path_params=("evidence_id",),
        query_params=(("reason", {"type": "string", "minLength": 1, "maxLength": 2000}),),
    ),
    Operation(
        "POST",
        "/v1/evidence/{evidence_id}/lifecycle",
        "move_evidence",
        "Move evidence through its lifecycle (quarantine, supersede, retract, release...).",
        move_evidence,
        models.EvidenceMoveRequest,
        200,
        _id("evidence_id"),
        path_params=("evidence_id",),
    ),
    Operation(
        "POST",
        "/v1/entities",
        "upsert_entities",
        "Create or find entities by name; IDs in input order.",
        upsert_entities,
        models.UpsertEntitiesRequest,
        200,
        _ids("entity_ids"),
    ),
    Operation(
        "POST",
        "/v1/relationships",
        "assert_relationship",
        "Assert a relationship from evidence; it starts as a candidate pending verification.",
        assert_relationship,
        models.AssertRelationshipRequest,
        201,
        _id("relationship_id"),
    ),
    Operation(
        "POST",
        "/v1/relationships/{relationship_id}/verifications",
        "record_verification",
        "Record a verifier's decision on a relationship.",
        record_verification,
        models.VerificationRequest,
        201,
        _id("verification_id"),
        path_params=("relationship_id",),
    ),
    Operation(
        "POST",
        "/v1/relationships/{relationship_id}/lifecycle",
        "move_relationship",
        "Move a relationship through its lifecycle (supersede, retract, quarantine, dispute...).",
        move_relationship,
        models.RelationshipMoveRequest,
        200,
        _id("relationship_id"),
        path_params=("relationship_id",),
    ),
    Operation(
        "POST",
        "/v1/hypotheses",
        "add_hypothesis",
        "Record an unverified hypothesis.",
        add_hypothesis,
        models.HypothesisRequest,
        201,
        _id("hypothesis_id"),
    ),
    Operation(
        "POST",
        "/v1/feedback",
        "record_feedback",
        "Say whether a recall result was used or relevant.",
        record_feedback,
        models.FeedbackRequest,
        201,
        _id("feedback_id"),
    ),
)

"""`densemem mcp`: Dense-Mem as an MCP server over stdio (the official `mcp` SDK).

Tools: recall_memory, trace_memory, remember, record_feedback. The server
acts as the team of the API key in DENSEMEM_API_KEY: every tool call takes
the same path as an HTTP request (authenticate the key, set the team, call
one dm function, in one transaction and one round trip), with the same
request models, so MCP hosts and HTTP clients get the same answers and the
same errors.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ValidationError

from densemem import db
from densemem.config import Settings, load_settings
from densemem.service import models
from densemem.service.app import make_pool, service_config
from densemem.service.auth import call_as_key, team_of_key
from densemem.service.embedding import QueryEmbedder, load_query_embedder, vector_literal
from densemem.service.errors import ApiError
from densemem.service.routes import (
    COMPACT_STATISTICS_SQL,
    FEEDBACK_SQL,
    INGEST_SQL,
    RECALL_SQL,
    TRACE_SQL,
    ServiceConfig,
    dump,
    recall_params,
    validation_error,
)

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

INSTRUCTIONS = (
    "Dense-Mem is long-term memory. Call recall_memory with a focused question before answering from "
    "memory; pass IDs you already have in known_evidence_ids / known_relationship_ids to get new context. "
    "Call trace_memory(relationship_id) when you need to know why a relationship is believed. Call remember "
    "to store what was said or decided, and record_feedback to say which results you used."
)


@dataclass
class MemoryClient:
    """The service's operations without HTTP, as the team of one API key."""

    api_key: str
    pool: ConnectionPool[psycopg.Connection[Any]]
    embedder: QueryEmbedder
    config: ServiceConfig = field(default_factory=ServiceConfig)

    def _call(self, statement: str, params: dict[str, Any]) -> Any:
        return call_as_key(
            self.pool,
            self.api_key,
            statement,
            params,
            statement_timeout_ms=self.config.statement_timeout_ms,
            connection_timeout_s=self.config.pool_timeout_s,
        ).value

    def recall(self, request: dict[str, Any]) -> dict[str, Any]:
        body = _parse(models.RecallRequest, request)
        try:
            vector = self.embedder.embed_query(body.query)
        except Exception:  # provider down: the ranking profile decides
            vector = None
        answer = self._call(RECALL_SQL, recall_params(body, vector_literal(vector)))
        result: dict[str, Any] = json.loads(answer)
        return result

    def trace(self, relationship_id: str) -> dict[str, Any]:
        try:
            parsed = uuid.UUID(relationship_id)
        except ValueError:
            raise ApiError(422, "22P02", "relationship_id must be a UUID") from None
        answer = self._call(TRACE_SQL, {"relationship_id": parsed})
        if answer is None:
            raise ApiError(404, "DM404", "no such relationship in this team")
        result: dict[str, Any] = json.loads(answer)
        return result

    def remember(self, items: list[dict[str, Any]]) -> list[str]:
        body = _parse(models.IngestEvidenceRequest, {"items": items})
        ids = self._call(INGEST_SQL, {"items": Jsonb(dump(body)["items"])})
        # The write is committed; folding its BM25 deltas is housekeeping in a
        # transaction of its own, retried by the next write if it fails.
        try:
            self._call(COMPACT_STATISTICS_SQL, {})
        except Exception:
            log.warning("compacting search statistics failed; the next write retries", exc_info=True)
        return [str(value) for value in ids]

    def feedback(self, feedback: dict[str, Any]) -> str:
        body = _parse(models.FeedbackRequest, feedback)
        return str(self._call(FEEDBACK_SQL, {"feedback": Jsonb(dump(body))}))


def _parse(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """Validate as the HTTP API does: the strict models read JSON (UUIDs and times as strings)."""
    return model.model_validate_json(json.dumps(data))


def _tool_error(error: Exception) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    if isinstance(error, ValidationError):
        error = validation_error(error)
    if isinstance(error, ApiError):
        hint = f" (hint: {error.hint})" if error.hint else ""
        return ToolError(f"{error.code} {error.status}: {error.message}{hint}")
    return ToolError("internal error")


async def _run(function: Any, *args: Any) -> Any:
    try:
        return await anyio.to_thread.run_sync(function, *args)
    except (ApiError, ValidationError) as error:
        raise _tool_error(error) from None


def build_server(
    api_key: str,
    *,
    database_url: str | None = None,
    settings: Settings | None = None,
    embedder: QueryEmbedder | None = None,
) -> Any:
    """The MCP server; its lifespan opens the connection pool and loads the embedding provider."""
    from mcp.server.mcpserver import MCPServer

    settings = settings or load_settings()
    team_of_key(api_key)  # a malformed key fails now, not at the first tool call
    holder: dict[str, MemoryClient] = {}

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        config = service_config(settings)
        url = database_url or db.database_url(settings)
        pool = make_pool(url, config)
        await anyio.to_thread.run_sync(pool.open, True, 30.0)
        chosen = embedder if embedder is not None else load_query_embedder(settings)
        holder["client"] = MemoryClient(api_key, pool, chosen, config)
        try:
            yield {}
        finally:
            await anyio.to_thread.run_sync(pool.close)

    server = MCPServer("densemem", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool()
    async def recall_memory(
        query: str,
        limit: int | None = None,
        known_evidence_ids: list[str] | None = None,
        known_relationship_ids: list[str] | None = None,
        expand_from_entity_ids: list[str] | None = None,
        valid_at: str | None = None,
        include_hypotheses: bool | None = None,
    ) -> dict[str, Any]:
        """Recall the best evidence for a query, with compact discovery paths through the memory graph.

        Returns {"results": [{"evidence_id", "context", ...}], "discovery_paths": [...], "guidance": "..."}.
        Pass already-seen IDs in known_evidence_ids / known_relationship_ids (at most 200 each) to get
        new context; pass expand_from_entity_ids to ask for what is adjacent to those entities.
        """
        request: dict[str, Any] = {"query": query}
        for name, value in (
            ("limit", limit),
            ("known_evidence_ids", known_evidence_ids),
            ("known_relationship_ids", known_relationship_ids),
            ("expand_from_entity_ids", expand_from_entity_ids),
            ("valid_at", valid_at),
            ("include_hypotheses", include_hypotheses),
        ):
            if value is not None:
                request[name] = value
        result: dict[str, Any] = await _run(holder["client"].recall, request)
        return result

    @server.tool()
    async def trace_memory(relationship_id: str) -> dict[str, Any]:
        """Explain one relationship (an ID from a discovery path): its evidence, verifications, lifecycle
        and conflicts."""
        result: dict[str, Any] = await _run(holder["client"].trace, relationship_id)
        return result

    @server.tool()
    async def remember(
        text: str,
        source_external_id: str | None = None,
        source_kind: str = "mcp",
        memory_type: str | None = None,
        importance: float | None = None,
    ) -> dict[str, Any]:
        """Store evidence: something that was said, decided or read. Returns {"evidence_ids": [...]}.

        source_external_id is your stable handle for where it came from (a conversation, a document);
        memory_type is conversation, workflow, episodic, semantic or organizational.
        """
        item: dict[str, Any] = {
            "text": text,
            "source": {"external_id": source_external_id or f"mcp-{uuid.uuid4()}", "kind": source_kind},
        }
        if memory_type is not None:
            item["memory_type"] = memory_type
        if importance is not None:
            item["importance"] = float(importance)
        ids = await _run(holder["client"].remember, [item])
        return {"evidence_ids": ids}

    @server.tool()
    async def record_feedback(
        query: str, evidence_id: str, judgment: str, rank: int | None = None
    ) -> dict[str, Any]:
        """Say what you did with a recall result: judgment is used, not_used, relevant or irrelevant.
        It feeds usage counters; it never changes what is true."""
        feedback: dict[str, Any] = {"query": query, "evidence_id": evidence_id, "judgment": judgment}
        if rank is not None:
            feedback["rank"] = rank
        feedback_id = await _run(holder["client"].feedback, feedback)
        return {"feedback_id": feedback_id}

    return server


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    api_key = os.environ.get("DENSEMEM_API_KEY", "").strip()
    if not api_key:
        print("densemem mcp: set DENSEMEM_API_KEY (create one with `densemem keys create`)", file=sys.stderr)
        return 2
    from densemem.serve_command import limit_torch_threads

    limit_torch_threads()
    try:
        server = build_server(api_key, settings=settings)
    except ApiError as error:
        print(f"densemem mcp: {error.message}", file=sys.stderr)
        return 2
    server.run("stdio")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="run the MCP server (stdio)",
        description="Run Dense-Mem as an MCP server over stdio, acting as the team of DENSEMEM_API_KEY. "
        "Tools: recall_memory, trace_memory, remember, record_feedback.",
    )
    mcp.set_defaults(handler=_mcp)

"""Typed calls of the embedding SQL functions (sql/70-72).

Worker calls run inside `as_worker(conn)`: one transaction as the
densemem_worker role, whose only privileges are EXECUTE on the worker
functions. Team-scoped calls (freshness, retry) take a cursor from
`densemem.store.session.acting_as`. Administrator calls (contract
activation) take a superuser cursor.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.rows import dict_row

from densemem.embeddings.base import ContractSpec

WORKER_ROLE = "densemem_worker"
NOTIFY_CHANNEL = "densemem_embed"

Cursor = psycopg.Cursor[dict[str, Any]]


@dataclass(frozen=True)
class Contract:
    contract_id: int
    provider: str
    model: str
    dimensions: int
    normalization: str
    version: int

    @property
    def spec(self) -> ContractSpec:
        return ContractSpec(self.provider, self.model, self.dimensions, self.normalization)


@dataclass(frozen=True)
class ClaimedDocument:
    team_id: uuid.UUID
    document_id: uuid.UUID
    document_version: int
    source_version: int
    body: str
    embed_attempts: int
    claim_token: dt.datetime


@dataclass(frozen=True)
class FailedClaim:
    team_id: uuid.UUID
    document_id: uuid.UUID
    search_state: str
    embed_attempts: int


@dataclass(frozen=True)
class Freshness:
    pending_document_count: int
    failed_document_count: int
    oldest_pending_age_seconds: float | None


@dataclass(frozen=True)
class QueueState:
    claimable_document_count: int
    next_claimable_at: dt.datetime | None


@contextmanager
def as_worker(conn: psycopg.Connection[Any]) -> Iterator[Cursor]:
    """A transaction as densemem_worker (the login must be a member of it)."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT pg_catalog.set_config('role', %(role)s, true)", {"role": WORKER_ROLE})
        yield cur


def vector_literal(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form, enough digits for half precision."""
    return "[" + ",".join(f"{x:.6g}" for x in vector.tolist()) + "]"


def active_contract(cur: Cursor) -> Contract | None:
    cur.execute(
        "SELECT contract_id, provider, model, dimensions, normalization, version "
        "FROM dm.active_embedding_contract()"
    )
    row = cur.fetchone()
    return Contract(**row) if row else None


def claim_batch(
    cur: Cursor, *, contract_id: int, batch_size: int, claim_seconds: float
) -> list[ClaimedDocument]:
    cur.execute(
        "SELECT team_id, document_id, document_version, source_version, body, embed_attempts, claim_token "
        "FROM dm_private.claim_embedding_batch(contract_id => %(contract_id)s, batch_size => %(batch_size)s, "
        "claim_seconds => %(claim_seconds)s)",
        {"contract_id": contract_id, "batch_size": batch_size, "claim_seconds": claim_seconds},
    )
    return [ClaimedDocument(**row) for row in cur.fetchall()]


def _keys(documents: Sequence[ClaimedDocument]) -> dict[str, list[Any]]:
    return {
        "team_ids": [d.team_id for d in documents],
        "document_ids": [d.document_id for d in documents],
        "claim_tokens": [d.claim_token for d in documents],
    }


def store_embeddings(
    cur: Cursor,
    *,
    contract_id: int,
    documents: Sequence[ClaimedDocument],
    embeddings: Sequence[str | None],
) -> dict[tuple[uuid.UUID, uuid.UUID], bool]:
    """Writes vectors (pgvector text, or None for an empty body); returns stored per (team, document)."""
    if len(documents) != len(embeddings):
        raise ValueError("one embedding per document")
    cur.execute(
        "SELECT team_id, document_id, stored FROM dm_private.store_document_embeddings("
        "contract_id => %(contract_id)s, team_ids => %(team_ids)s, document_ids => %(document_ids)s, "
        "document_versions => %(document_versions)s, source_versions => %(source_versions)s, "
        "claim_tokens => %(claim_tokens)s, embeddings => %(embeddings)s::text[]::public.halfvec[])",
        {
            "contract_id": contract_id,
            **_keys(documents),
            "document_versions": [d.document_version for d in documents],
            "source_versions": [d.source_version for d in documents],
            "embeddings": list(embeddings),
        },
    )
    return {(row["team_id"], row["document_id"]): bool(row["stored"]) for row in cur.fetchall()}


def fail_claims(
    cur: Cursor,
    *,
    documents: Sequence[ClaimedDocument],
    error_message: str,
    max_attempts: int,
    retry_after_seconds: float,
) -> list[FailedClaim]:
    cur.execute(
        "SELECT team_id, document_id, search_state, embed_attempts FROM dm_private.fail_embedding_claims("
        "team_ids => %(team_ids)s, document_ids => %(document_ids)s, claim_tokens => %(claim_tokens)s, "
        "error_message => %(error_message)s, max_attempts => %(max_attempts)s, "
        "retry_after_seconds => %(retry_after_seconds)s)",
        {
            **_keys(documents),
            "error_message": error_message,
            "max_attempts": max_attempts,
            "retry_after_seconds": retry_after_seconds,
        },
    )
    return [FailedClaim(**row) for row in cur.fetchall()]


def release_claims(
    cur: Cursor,
    *,
    documents: Sequence[ClaimedDocument],
    error_message: str | None,
    retry_after_seconds: float,
) -> int:
    cur.execute(
        "SELECT dm_private.release_embedding_claims("
        "team_ids => %(team_ids)s, document_ids => %(document_ids)s, "
        "claim_tokens => %(claim_tokens)s, error_message => %(error_message)s, "
        "retry_after_seconds => %(retry_after_seconds)s) AS released",
        {**_keys(documents), "error_message": error_message, "retry_after_seconds": retry_after_seconds},
    )
    row = cur.fetchone()
    return int(row["released"]) if row else 0


def queue_state(cur: Cursor) -> QueueState:
    cur.execute("SELECT claimable_document_count, next_claimable_at FROM dm_private.embedding_queue_state()")
    row = cur.fetchone()
    assert row is not None
    return QueueState(**row)


def retry_failed_embeddings(cur: Cursor, *, team_id: uuid.UUID | None = None) -> int:
    """Worker operator: failed documents of every team (or one) become pending again."""
    cur.execute(
        "SELECT dm_private.retry_failed_embeddings(only_team_id => %(team_id)s) AS retried",
        {"team_id": team_id},
    )
    row = cur.fetchone()
    return int(row["retried"]) if row else 0


def retry_failed_documents(cur: Cursor, *, team_id: uuid.UUID) -> int:
    """The authenticated team's failed documents become pending again (cursor from acting_as)."""
    cur.execute("SELECT dm.retry_failed_documents(team_id => %(team_id)s) AS retried", {"team_id": team_id})
    row = cur.fetchone()
    return int(row["retried"]) if row else 0


def search_freshness(cur: Cursor, *, team_id: uuid.UUID) -> Freshness:
    """The authenticated team's search freshness (cursor from acting_as)."""
    cur.execute(
        "SELECT pending_document_count, failed_document_count, oldest_pending_age_seconds "
        "FROM dm.search_freshness(team_id => %(team_id)s)",
        {"team_id": team_id},
    )
    row = cur.fetchone()
    assert row is not None
    return Freshness(**row)


def search_freshness_overall(cur: Cursor) -> Freshness:
    """Totals over every team (worker, operator or service role)."""
    cur.execute(
        "SELECT pending_document_count, failed_document_count, oldest_pending_age_seconds "
        "FROM dm.search_freshness_overall()"
    )
    row = cur.fetchone()
    assert row is not None
    return Freshness(**row)


def activate_contract(cur: Cursor, *, spec: ContractSpec, version: int = 1) -> int:
    """Administrator (superuser cursor): makes this contract the active one; every document turns pending."""
    cur.execute(
        "SELECT dm.activate_embedding_contract(provider => %(provider)s, model => %(model)s, "
        "dimensions => %(dimensions)s, normalization => %(normalization)s, version => %(version)s) "
        "AS contract_id",
        {
            "provider": spec.provider,
            "model": spec.model,
            "dimensions": spec.dimensions,
            "normalization": spec.normalization,
            "version": version,
        },
    )
    row = cur.fetchone()
    assert row is not None
    return int(row["contract_id"])

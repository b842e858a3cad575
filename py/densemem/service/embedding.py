"""The query embedder the service calls once per recall.

The service only needs `embed_query(text) -> vector | None`; the providers
live in densemem.embeddings (local sentence-transformers, OpenAI-compatible
HTTP) with their own cache. `None` or an exception means the provider is
unavailable: the service then passes NULL and the SQL ranking profile decides
between a dependency error (DM503, vector branch required) and a recorded
degradation (vector branch optional).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from densemem.config import Settings

log = logging.getLogger("densemem.service")


@runtime_checkable
class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> Sequence[float] | None: ...


class NoQueryEmbedder:
    """No provider configured (DENSEMEM_EMBEDDING_PROVIDER=none): every recall passes NULL."""

    def embed_query(self, text: str) -> Sequence[float] | None:
        return None


class CachedQueryEmbedder:
    """A densemem.embeddings provider behind its LRU query cache (densemem.embeddings.cache).

    `max_entries=0` disables the cache (every query is embedded; used by the HTTP benchmark).
    """

    def __init__(self, provider: Any, *, max_entries: int = 2048) -> None:
        self.provider = provider
        self.cache: Any = None
        if max_entries > 0:
            cache = importlib.import_module("densemem.embeddings.cache")
            self.cache = cache.QueryEmbeddingCache(provider, max_entries=max_entries)

    def embed_query(self, text: str) -> Sequence[float] | None:
        if self.cache is None:
            vectors = self.provider.embed([text])
            return None if len(vectors) == 0 else vectors[0]
        vector: Sequence[float] = self.cache.embed_query(text)
        return vector


def load_query_embedder(settings: Settings) -> QueryEmbedder:
    """The configured provider (densemem.embeddings.provider_from_settings) behind the query cache
    (DENSEMEM_QUERY_CACHE_ENTRIES, default 2048; 0 turns it off)."""
    if settings.embedding_provider == "none":
        return NoQueryEmbedder()
    try:
        embeddings = importlib.import_module("densemem.embeddings")
    except ImportError:
        log.warning("densemem.embeddings is not available: recall runs without a query vector")
        return NoQueryEmbedder()
    entries = int(os.environ.get("DENSEMEM_QUERY_CACHE_ENTRIES", "2048"))
    return CachedQueryEmbedder(embeddings.provider_from_settings(settings), max_entries=entries)


def vector_literal(vector: Sequence[float] | None) -> str | None:
    """pgvector's text form, cast to public.vector in SQL; None stays NULL."""
    if vector is None:
        return None
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"

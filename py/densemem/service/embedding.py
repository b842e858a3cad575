"""The query embedder the service calls once per recall.

The service only needs `embed_query(text) -> vector | None`; the providers
live in densemem.embeddings (local sentence-transformers, OpenAI-compatible
HTTP) with their own cache. `None` or an exception means the provider is
unavailable: the service then passes NULL and the SQL ranking profile decides
between a dependency error (DM503, vector branch required) and a recorded
degradation (vector branch optional).

Concurrent recalls share one model call: `QueryBatcher` queues the queries
that arrive while the model is busy and embeds them together in the next
forward pass, up to DENSEMEM_QUERY_BATCH_SIZE (default 8: onnxruntime spends
about 8 ms of CPU on one MiniLM query alone and about 5 ms per query from 4
per call on; bigger batches only make their first queries wait longer). A
lone query never waits for company: it is embedded as soon as the model is
free.
The queue is bounded (DENSEMEM_QUERY_QUEUE_MAX, default 1024 waiting
queries); past it a query is refused as if the provider were unavailable.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson

from densemem.config import Settings
from densemem.embeddings.base import alone

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

    def embed_queries(self, texts: Sequence[str]) -> list[Sequence[float] | None]:
        """Several queries in one provider call (cached ones and repeats are embedded once)."""
        if self.cache is not None:
            vectors: list[Sequence[float] | None] = list(self.cache.embed_queries(texts))
            return vectors
        distinct = list(dict.fromkeys(texts))
        matrix = self.provider.embed(distinct)
        found = {text: matrix[i] for i, text in enumerate(distinct)}
        return [found[text] for text in texts]

    def warm_up(self) -> None:
        """Load the model and run one forward pass now, not in the first request (not cached);
        also as a lone query, so that a provider's lone-query session is made now too."""
        self.provider.embed(["warm up the query embedding"])
        with alone():
            self.provider.embed(["warm up the query embedding"])


class EmbeddingQueueFull(RuntimeError):
    """More queries are waiting for the model than the queue holds: treated as provider unavailable."""


BatchEmbed = Callable[[list[str]], Sequence[Sequence[float] | None]]
# (wall seconds, CPU seconds of the calling thread, queries) of one model call.
ModelObserver = Callable[[float, float, int], None]


def batch_function(embedder: QueryEmbedder) -> BatchEmbed:
    """The embedder's `embed_queries` when it has one, else one `embed_query` per text."""
    many = getattr(embedder, "embed_queries", None)
    if callable(many):
        return lambda texts: list(many(texts))
    return lambda texts: [embedder.embed_query(text) for text in texts]


class QueryBatcher:
    """Coalesces the query embeddings of concurrent requests into batched model calls (asyncio side).

    At most one model call runs at a time, in the batcher's own thread: the event loop keeps
    serving, and the model never waits for a slot behind database calls in Starlette's pool.
    Queries that arrive while it runs wait, and the next call takes up to `max_batch` of them at
    once; with a single client every call holds exactly one query and starts at once.
    """

    def __init__(
        self,
        embed_many: BatchEmbed,
        *,
        max_batch: int = 8,
        max_waiting: int = 1024,
        observe: ModelObserver | None = None,
    ) -> None:
        if max_batch < 1 or max_waiting < 1:
            raise ValueError("max_batch and max_waiting must be at least 1")
        self._embed_many = embed_many
        self._observe = observe
        self.max_batch = max_batch
        self.max_waiting = max_waiting
        self._waiting: list[tuple[str, asyncio.Future[Sequence[float] | None]]] = []
        self._draining = False
        # A caller's own thread holds the model for one query (claim_idle); 0 when nobody does.
        self._claim = 0
        self._claims = 0
        self.batch_sizes: list[int] = []  # the most recent batches, for tests and metrics
        self._task: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="densemem-query-embed")

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def embed(self, text: str) -> Sequence[float] | None:
        if len(self._waiting) >= self.max_waiting:
            raise EmbeddingQueueFull(f"{len(self._waiting)} queries are waiting for the embedding model")
        future: asyncio.Future[Sequence[float] | None] = asyncio.get_running_loop().create_future()
        self._waiting.append((text, future))
        if not self._draining and not self._claim:
            self._draining = True
            self._task = asyncio.create_task(self._drain())
        return await future

    # ------------------------------------------------------------ the idle model, in the caller's thread

    def claim_idle(self) -> int:
        """Event loop: take the model for ONE query embedded in the caller's own worker thread
        (embed_claimed), when no model call runs and nobody waits; 0 when it is busy.

        This lets a recall embed its query in the same thread that holds its database connection,
        while the database checks the key (densemem.service.auth.call_as_key's `meanwhile`).
        Queries arriving meanwhile wait in the queue and go together into the next batched call,
        which starts as soon as the claimed call ends. Release with `release` (idempotent).
        """
        if self._draining or self._waiting or self._claim:
            return 0
        self._claims += 1
        self._claim = self._claims
        return self._claim

    def embed_claimed(self, claim: int, text: str, loop: asyncio.AbstractEventLoop) -> Sequence[float] | None:
        """Worker thread: the claimed model call; releases the claim on the event loop when done."""
        try:
            if claim != self._claim:
                raise RuntimeError("the model is not claimed by this call")
            with alone():  # no other recall in flight: the provider may use more threads
                vectors = self._timed_embed([text])
            if len(vectors) != 1:
                raise RuntimeError(f"{len(vectors)} vectors for 1 query")
            return vectors[0]
        finally:
            loop.call_soon_threadsafe(self.release, claim)

    def release(self, claim: int) -> None:
        """Event loop: end `claim` (no-op when it already ended) and start the queued queries."""
        if claim == 0 or claim != self._claim:
            return
        self._claim = 0
        if self._waiting and not self._draining:
            self._draining = True
            self._task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch = self._waiting[: self.max_batch]
                del self._waiting[: self.max_batch]
                self.batch_sizes = [*self.batch_sizes[-99:], len(batch)]
                try:
                    texts = [text for text, _ in batch]
                    vectors = await asyncio.get_running_loop().run_in_executor(
                        self._thread, self._timed_embed, texts
                    )
                    if len(vectors) != len(batch):
                        raise RuntimeError(f"{len(vectors)} vectors for {len(batch)} queries")
                except BaseException as error:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error if isinstance(error, Exception) else RuntimeError())
                    if not isinstance(error, Exception):
                        raise
                    continue
                for (_, future), vector in zip(batch, vectors, strict=True):
                    if not future.done():
                        future.set_result(vector)
        finally:
            self._draining = False

    def _timed_embed(self, texts: list[str]) -> Sequence[Sequence[float] | None]:
        """The model call, in the batcher's thread, with its wall and CPU time reported."""
        if self._observe is None:
            return self._embed_many(texts)
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return self._embed_many(texts)
        finally:
            self._observe(time.perf_counter() - wall, time.thread_time() - cpu, len(texts))

    def close(self) -> None:
        """Stop the model thread (after the call in progress, if any)."""
        self._thread.shutdown(wait=False, cancel_futures=True)


def query_batcher(
    embedder: QueryEmbedder, environ: Any = None, *, observe: ModelObserver | None = None
) -> QueryBatcher:
    """A QueryBatcher over `embedder`, sized by DENSEMEM_QUERY_BATCH_SIZE and DENSEMEM_QUERY_QUEUE_MAX."""
    env = os.environ if environ is None else environ
    return QueryBatcher(
        batch_function(embedder),
        max_batch=int(env.get("DENSEMEM_QUERY_BATCH_SIZE", "8")),
        max_waiting=int(env.get("DENSEMEM_QUERY_QUEUE_MAX", "1024")),
        observe=observe,
    )


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
    """pgvector's text form, cast to public.vector in SQL; None stays NULL.

    orjson writes each number as its shortest round-trip form (float32's own for a float32 array),
    which pgvector parses back to exactly the same float4 values, in about 40 us against 0.5-1 ms
    for a Python join of repr() over 384 numbers.
    """
    if vector is None:
        return None
    if isinstance(vector, np.ndarray):
        if vector.dtype not in (np.float32, np.float64):
            vector = vector.astype(np.float32)
        text = orjson.dumps(np.ascontiguousarray(vector), option=orjson.OPT_SERIALIZE_NUMPY)
    else:
        text = orjson.dumps([float(x) for x in vector])
    if b"null" in text:  # orjson writes NaN and infinities as null
        raise ValueError("the query vector has a non-finite component")
    return text.decode()

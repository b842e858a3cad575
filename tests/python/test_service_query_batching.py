"""Concurrent recalls share model calls: densemem.service.embedding.QueryBatcher.

A lone query is embedded at once (a batch of one, no timer); queries that arrive while the model is
busy wait and go together into the next call, at most `max_batch` at a time; the queue of waiting
queries is bounded; a failed call fails exactly its own queries. End to end, 8 concurrent HTTP recalls
through a real uvicorn use fewer model calls than requests and every answer carries its own query's
vector.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from service_support import FakeHashingEmbedder, bearer, fresh_database, issue, require_functions, service

from densemem.service.embedding import (
    CachedQueryEmbedder,
    EmbeddingQueueFull,
    QueryBatcher,
    batch_function,
)


class GatedModel:
    """A fake batch model: each call records its texts and, while `gate` is clear, blocks."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()

    def __call__(self, texts: list[str]) -> Sequence[Sequence[float] | None]:
        self.calls.append(list(texts))
        self.started.set()
        assert self.gate.wait(10)
        if any(text.startswith("bad") for text in texts):
            raise ConnectionError("model down")
        return [[float(len(text)), float(sum(map(ord, text)))] for text in texts]


def vector_of(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)))]


async def _hold_the_model(batcher: QueryBatcher, model: GatedModel) -> asyncio.Task[Sequence[float] | None]:
    """Start one query and wait until the model is busy with it (gate closed)."""
    model.gate.clear()
    model.started.clear()
    first = asyncio.create_task(batcher.embed("first"))
    while not model.started.is_set():
        await asyncio.sleep(0.001)
    return first


def test_a_lone_query_is_a_batch_of_one_and_does_not_wait() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=32)

    async def scenario() -> float:
        began = time.perf_counter()
        assert await batcher.embed("alone") == vector_of("alone")
        return time.perf_counter() - began

    assert asyncio.run(scenario()) < 0.5
    assert model.calls == [["alone"]]
    assert batcher.batch_sizes == [1]


@pytest.mark.parametrize(("max_batch", "expected"), [(32, [1, 10]), (4, [1, 4, 4, 2])])
def test_queries_waiting_for_the_model_share_the_next_call(max_batch: int, expected: list[int]) -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=max_batch)
    texts = [f"question number {i}" + "?" * i for i in range(10)]

    async def scenario() -> list[Sequence[float] | None]:
        first = await _hold_the_model(batcher, model)
        waiting = [asyncio.create_task(batcher.embed(text)) for text in texts]
        await asyncio.sleep(0.05)
        assert batcher.waiting == 10  # all queued behind the busy model
        model.gate.set()
        assert await first == vector_of("first")
        return list(await asyncio.gather(*waiting))

    results = asyncio.run(scenario())
    assert results == [vector_of(text) for text in texts]  # each caller gets its own vector
    assert [len(call) for call in model.calls] == expected
    assert max(len(call) for call in model.calls) <= max_batch
    assert batcher.batch_sizes == expected


def test_the_waiting_queue_is_bounded() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=8, max_waiting=3)

    async def scenario() -> None:
        first = await _hold_the_model(batcher, model)
        waiting = [asyncio.create_task(batcher.embed(f"q{i}")) for i in range(3)]
        await asyncio.sleep(0.01)
        with pytest.raises(EmbeddingQueueFull):
            await batcher.embed("one too many")
        model.gate.set()
        await first
        assert len(await asyncio.gather(*waiting)) == 3
        assert await batcher.embed("room again") == vector_of("room again")

    asyncio.run(scenario())


def test_a_failed_call_fails_its_queries_and_the_next_call_works() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=8)

    async def scenario() -> None:
        first = await _hold_the_model(batcher, model)
        waiting = [asyncio.create_task(batcher.embed(f"bad q{i}")) for i in range(3)]
        await asyncio.sleep(0.01)
        model.gate.set()
        await first
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(result, ConnectionError) for result in results), results
        assert await batcher.embed("after") == vector_of("after")

    asyncio.run(scenario())
    assert [len(call) for call in model.calls] == [1, 3, 1]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        QueryBatcher(GatedModel(), max_batch=0)
    with pytest.raises(ValueError):
        QueryBatcher(GatedModel(), max_waiting=0)


def test_the_cached_embedder_embeds_a_batch_in_one_provider_call() -> None:
    """CachedQueryEmbedder.embed_queries: one provider call for the misses, repeats embedded once,
    cached queries not embedded again; the same vectors as one at a time."""
    from densemem.embeddings.hashing import HashingTestProvider

    class Counting(HashingTestProvider):
        def __init__(self) -> None:
            super().__init__(64)
            self.batches: list[list[str]] = []

        def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
            self.batches.append(list(texts))
            return super().embed(texts)

    for entries in (0, 16):
        provider = Counting()
        embedder = CachedQueryEmbedder(provider, max_entries=entries)
        embed_many = batch_function(embedder)
        vectors = embed_many(["a cat", "a dog", "a cat"])
        assert provider.batches == [["a cat", "a dog"]]
        alone = HashingTestProvider(64).embed(["a cat", "a dog"])
        assert [list(v) for v in vectors] == [list(alone[0]), list(alone[1]), list(alone[0])]  # type: ignore[arg-type]
        embed_many(["a cat", "a bird"])
        assert provider.batches[-1] == (["a bird"] if entries else ["a cat", "a bird"])


class SlowBatchEmbedder(FakeHashingEmbedder):
    """The fake hashing embedder with a batch method that takes 40 ms per call (a model's cost)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> list[Sequence[float] | None]:
        with self.lock:
            self.batches.append(list(texts))
        time.sleep(0.04)
        return [self.embed_query(text) for text in texts]


def test_concurrent_http_recalls_share_model_calls(admin_url: str, template_url: str) -> None:
    embedder = SlowBatchEmbedder()
    with fresh_database(admin_url) as url:
        require_functions(url, "dm.recall_memory(text,uuid,vector,jsonb)")
        key = issue(url, "batching-team").api_key
        with service(url, embedder) as base_url:
            first = httpx.post(
                base_url + "/v1/recall", json={"query": "warm the key"}, headers=bearer(key), timeout=30
            )
            assert first.status_code == 200, first.text
            embedder.batches.clear()
            queries = [f"what happened on day {i}?" for i in range(8)]

            def call(query: str) -> int:
                response = httpx.post(
                    base_url + "/v1/recall", json={"query": query}, headers=bearer(key), timeout=60
                )
                return response.status_code

            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(call, queries))
    assert statuses == [200] * 8
    embedded = [text for batch in embedder.batches for text in batch]
    assert sorted(embedded) == sorted(queries)  # every query embedded exactly once
    assert len(embedder.batches) < len(queries)  # ... in fewer model calls than requests
    assert max(len(batch) for batch in embedder.batches) > 1


# ---------------------------------------------------------------- the idle model, claimed by one query


def test_an_idle_model_is_claimed_by_one_query_and_the_others_wait_for_one_batch() -> None:
    """claim_idle takes the idle model for one query embedded in the caller's own thread; while
    it runs nobody else claims it and new queries queue; they go together into ONE batched call
    that starts when the claimed call ends (not later)."""
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=8)
    texts = [f"queued {i}" for i in range(5)]

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        claim = batcher.claim_idle()
        assert claim
        assert batcher.claim_idle() == 0  # held
        model.gate.clear()
        claimed = loop.run_in_executor(None, batcher.embed_claimed, claim, "claimed", loop)
        while not model.started.is_set():
            await asyncio.sleep(0.001)
        waiting = [asyncio.create_task(batcher.embed(text)) for text in texts]
        await asyncio.sleep(0.05)
        assert batcher.waiting == 5 and len(model.calls) == 1  # no batch while the claim runs
        model.gate.set()
        assert await claimed == vector_of("claimed")
        assert list(await asyncio.gather(*waiting)) == [vector_of(text) for text in texts]
        batcher.release(claim)  # idempotent: the call released it already
        assert batcher.claim_idle()  # idle again

    asyncio.run(scenario())
    assert model.calls == [["claimed"], texts]


def test_a_busy_or_awaited_model_is_not_claimed_and_a_failed_claim_is_released() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=8)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        first = await _hold_the_model(batcher, model)  # a batched call is running
        assert batcher.claim_idle() == 0
        model.gate.set()
        await first
        claim = batcher.claim_idle()
        with pytest.raises(ConnectionError):
            await loop.run_in_executor(None, batcher.embed_claimed, claim, "bad query", loop)
        await asyncio.sleep(0.01)  # the release was scheduled on the loop
        assert batcher.claim_idle()  # released although the model failed

    asyncio.run(scenario())


def test_a_claim_released_by_its_request_frees_the_queued_queries() -> None:
    """A claim whose thread never ran the model (e.g. no database connection) is released by the
    request's `finally`; the queries that queued meanwhile are embedded then. A stale release of
    an older claim does nothing."""
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=8)

    async def scenario() -> None:
        old = batcher.claim_idle()
        batcher.release(old)
        claim = batcher.claim_idle()
        assert claim and claim != old
        waiting = asyncio.create_task(batcher.embed("queued"))
        await asyncio.sleep(0.02)
        assert not waiting.done()
        batcher.release(old)  # stale: still claimed
        await asyncio.sleep(0.02)
        assert not waiting.done()
        batcher.release(claim)
        assert await waiting == vector_of("queued")

    asyncio.run(scenario())

"""A query embedded alone (the service's lone recall) may use a second onnxruntime session with more
threads; its vectors must be bit-identical to the one-thread session's."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from densemem.embeddings.base import alone, is_alone
from densemem.embeddings.local import LocalProvider, lone_query_threads
from densemem.service.embedding import CachedQueryEmbedder, QueryBatcher

QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What temporary job did Gina take to cover expenses?",
    "Would Melanie be considered a member of the LGBTQ community?",
    "x",
    "Der Vertrag wurde am Montag unterschrieben; naïve café ☕",
    "PostgreSQL stores long-term memory for agents. " * 60,
]


def test_the_alone_flag_is_per_thread_and_nests() -> None:
    assert not is_alone()
    with alone():
        assert is_alone()
        with alone():
            assert is_alone()
        assert is_alone()

        async def elsewhere() -> bool:
            return await asyncio.get_running_loop().run_in_executor(None, is_alone)

        assert asyncio.run(elsewhere()) is False  # another thread is not alone
    assert not is_alone()


def test_the_setting() -> None:
    assert lone_query_threads({}) == 2
    assert lone_query_threads({"DENSEMEM_LONE_QUERY_THREADS": "1"}) == 1
    assert lone_query_threads({"DENSEMEM_LONE_QUERY_THREADS": " 3 "}) == 3
    with pytest.raises(ValueError):
        lone_query_threads({"DENSEMEM_LONE_QUERY_THREADS": "0"})


@pytest.fixture(scope="module")
def lone_provider() -> LocalProvider:
    provider = LocalProvider(num_threads=1, lone_threads=2)
    if provider.backend != "onnx":
        pytest.skip("the lone session is an onnxruntime session")
    return provider


def test_a_lone_query_uses_the_two_thread_session_and_the_same_bits(lone_provider: LocalProvider) -> None:
    together = lone_provider.embed(QUERIES)
    one_by_one = np.stack([lone_provider.embed([q])[0] for q in QUERIES])
    with alone():
        lone = np.stack([lone_provider.embed([q])[0] for q in QUERIES])
    assert lone_provider.lone_session_threads == 2
    assert lone.dtype == np.float32 and lone.shape == (len(QUERIES), 384)
    assert np.array_equal(lone, one_by_one)  # bit for bit, not just close
    assert np.allclose(lone, together, atol=1e-6)  # batching pads: equal to float rounding
    assert lone_provider._lone is not None and lone_provider._lone is not lone_provider._onnx


def test_without_lone_threads_there_is_one_session() -> None:
    provider = LocalProvider(num_threads=1, lone_threads=1)
    with alone():
        vector = provider.embed([QUERIES[0]])
    assert vector.shape == (1, 384)
    assert provider.lone_session_threads == 1
    assert provider._lone is False


def test_a_lone_session_that_disagrees_is_not_used(
    lone_provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = LocalProvider(num_threads=1, lone_threads=2)
    provider.load()
    original = type(provider._onnx).encode  # type: ignore[union-attr]
    calls = {"n": 0}

    def drifting(self: object, texts: list[str]) -> np.ndarray:  # type: ignore[type-arg]
        out = original(self, texts)  # type: ignore[arg-type]
        calls["n"] += 1
        return out + np.float32(1e-7) if calls["n"] % 2 else out  # every other call drifts

    monkeypatch.setattr(type(provider._onnx), "encode", drifting)
    with alone():
        provider.embed([QUERIES[0]])
    assert provider._lone is False and provider.lone_session_threads == 1


def test_the_claimed_call_is_alone_and_batched_calls_are_not() -> None:
    seen: list[tuple[list[str], bool]] = []

    def model(texts: list[str]) -> Sequence[Sequence[float] | None]:
        seen.append((list(texts), is_alone()))
        return [[float(len(t))] for t in texts]

    batcher = QueryBatcher(model, max_batch=8)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        claim = batcher.claim_idle()
        assert claim
        assert await loop.run_in_executor(None, batcher.embed_claimed, claim, "claimed", loop) == [7.0]
        await asyncio.sleep(0.01)
        assert await asyncio.gather(batcher.embed("a"), batcher.embed("bb")) == [[1.0], [2.0]]

    asyncio.run(scenario())
    batcher.close()
    assert seen == [(["claimed"], True), (["a", "bb"], False)]


def test_the_warm_up_makes_the_lone_session(lone_provider: LocalProvider) -> None:
    provider = LocalProvider(num_threads=1, lone_threads=2)
    CachedQueryEmbedder(provider, max_entries=0).warm_up()
    assert provider._lone is not None and provider._lone is not False

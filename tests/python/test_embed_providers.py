"""The test-only hashing provider, the query cache and provider selection from settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from densemem.config import load_settings
from densemem.embeddings import provider_from_settings, worker_options_from_env
from densemem.embeddings.base import EmbeddingProvider, FloatMatrix
from densemem.embeddings.cache import QueryEmbeddingCache
from densemem.embeddings.hashing import HashingTestProvider
from densemem.embeddings.openai_http import OpenAICompatibleProvider


class Counting(HashingTestProvider):
    def __init__(self, dimensions: int = 32) -> None:
        super().__init__(dimensions)
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls += 1
        return super().embed(texts)


def test_hashing_is_deterministic_unit_length_and_named_test_only() -> None:
    provider = HashingTestProvider(64)
    a = provider.embed(["Same words here", "", "other things"])
    b = HashingTestProvider(64).embed(["Same words here", "", "other things"])
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    assert provider.contract.provider == "hashing-test"
    assert isinstance(provider, EmbeddingProvider)
    close, far = provider.embed(["red apple pie", "red apple tart", "quarterly tax filing"])[[1, 2]]
    assert float(provider.embed(["red apple pie"])[0] @ close) > float(
        provider.embed(["red apple pie"])[0] @ far
    )


def test_the_query_cache_embeds_once_evicts_least_recent_and_returns_read_only_vectors() -> None:
    provider = Counting()
    cache = QueryEmbeddingCache(provider, max_entries=2)
    first = cache.embed_query("where is the invoice")
    again = cache.embed_query("where is the invoice")
    assert provider.calls == 1 and again is first
    with pytest.raises(ValueError):
        first[0] = 1.0
    cache.embed_query("b")
    cache.embed_query("where is the invoice")  # refreshes it
    cache.embed_query("c")  # evicts "b"
    assert cache.stats().size == 2
    calls = provider.calls
    cache.embed_query("where is the invoice")
    assert provider.calls == calls
    cache.embed_query("b")
    assert provider.calls == calls + 1
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (3, 4)
    assert np.allclose(first, provider.embed(["where is the invoice"])[0])


def test_the_query_cache_does_not_keep_huge_queries() -> None:
    provider = Counting()
    cache = QueryEmbeddingCache(provider, max_entries=4, max_query_bytes=10)
    cache.embed_query("a query longer than ten bytes")
    cache.embed_query("a query longer than ten bytes")
    assert provider.calls == 2 and cache.stats().size == 0


def test_providers_are_chosen_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    hashing = provider_from_settings(dataclasses.replace(settings, embedding_provider="hashing-test"))
    assert isinstance(hashing, HashingTestProvider)
    http = provider_from_settings(
        dataclasses.replace(
            settings,
            embedding_provider="openai",
            embedding_base_url="http://127.0.0.1:1",
            embedding_model="m",
            embedding_dimensions=8,
        ),
        {"DENSEMEM_EMBEDDING_MAX_RETRIES": "7", "DENSEMEM_EMBEDDING_SEND_DIMENSIONS": "1"},
    )
    assert isinstance(http, OpenAICompatibleProvider)
    assert http.options.max_retries == 7 and http.options.send_dimensions
    assert http.contract.describe() == "openai/m (8-d, l2)"
    http.close()
    with pytest.raises(ValueError, match="BASE_URL"):
        provider_from_settings(
            dataclasses.replace(settings, embedding_provider="openai", embedding_base_url=None)
        )
    with pytest.raises(ValueError, match="unknown"):
        provider_from_settings(dataclasses.replace(settings, embedding_provider="magic"))
    assert worker_options_from_env({"DENSEMEM_EMBED_MAX_ATTEMPTS": "9"}).max_attempts == 9

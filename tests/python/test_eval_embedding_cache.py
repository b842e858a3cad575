"""The eval harness's on-disk embedding cache: hits skip the model; a changed text or contract misses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from densemem.embeddings.base import ContractSpec, FloatMatrix
from densemem.eval.embedding_cache import CachedProvider, contract_key, default_cache_dir, refuse_inside


class CountingProvider:
    """A deterministic fake model that records every text it was asked to embed."""

    def __init__(self, model: str = "fake-model", dimensions: int = 8, *, salt: float = 0.0) -> None:
        self._contract = ContractSpec("fake", model, dimensions, "l2")
        self.salt = salt
        self.calls: list[list[str]] = []
        self.closed = False

    @property
    def contract(self) -> ContractSpec:
        return self._contract

    @property
    def max_batch_size(self) -> int:
        return 3

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            seed = sum(ord(char) for char in text) + self.salt
            row = np.array([np.sin(seed + i) for i in range(self._contract.dimensions)], dtype=np.float32)
            rows.append(row / np.linalg.norm(row))
        return (
            np.vstack(rows).astype(np.float32)
            if rows
            else np.zeros((0, self._contract.dimensions), np.float32)
        )

    def close(self) -> None:
        self.closed = True

    def embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]


def test_miss_then_hit_returns_the_models_vectors(tmp_path: Path) -> None:
    inner = CountingProvider()
    texts = ["alpha", "beta", "gamma", "delta", "alpha"]
    first = CachedProvider(inner, tmp_path).embed(texts)
    # A repeated text is embedded once; batches respect the model's batch size.
    assert inner.embedded() == ["alpha", "beta", "gamma", "delta"]
    assert all(len(call) <= 3 for call in inner.calls)
    np.testing.assert_array_equal(first, CountingProvider().embed(texts))

    again = CountingProvider()
    cached = CachedProvider(again, tmp_path)
    second = cached.embed(texts)
    assert again.calls == []  # every text came from disk
    assert cached.stats.hits == 5 and cached.stats.misses == 0
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32


def test_a_changed_text_misses_and_only_it_is_embedded(tmp_path: Path) -> None:
    CachedProvider(CountingProvider(), tmp_path).embed(["Alice: I adopted a dog", "Bob: nice"])
    inner = CountingProvider()
    cached = CachedProvider(inner, tmp_path)
    result = cached.embed(["Alice: I adopted a cat", "Bob: nice"])
    assert inner.embedded() == ["Alice: I adopted a cat"]
    assert cached.stats.hits == 1 and cached.stats.misses == 1
    np.testing.assert_array_equal(result, CountingProvider().embed(["Alice: I adopted a cat", "Bob: nice"]))


def test_a_changed_contract_misses(tmp_path: Path) -> None:
    CachedProvider(CountingProvider(model="model-a"), tmp_path).embed(["same text"])
    other_model = CountingProvider(model="model-b", salt=1.0)
    result = CachedProvider(other_model, tmp_path).embed(["same text"])
    assert other_model.embedded() == ["same text"]
    np.testing.assert_array_equal(result, CountingProvider(model="model-b", salt=1.0).embed(["same text"]))

    other_size = CountingProvider(dimensions=4)
    CachedProvider(other_size, tmp_path).embed(["same text"])
    assert other_size.embedded() == ["same text"]

    # The same contract under another model revision is another namespace too.
    revised = CountingProvider(model="model-a")
    CachedProvider(revised, tmp_path, revision="weights==2").embed(["same text"])
    assert revised.embedded() == ["same text"]
    spec = ContractSpec("fake", "model-a", 8, "l2")
    assert contract_key(spec) != contract_key(spec, "weights==2")
    assert contract_key(spec) != contract_key(ContractSpec("fake", "model-a", 8, "none"))


def test_a_damaged_file_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    cached = CachedProvider(CountingProvider(), tmp_path)
    cached.embed(["text"])
    path = cached.path_for("text")
    assert path.is_file() and path.stat().st_size == 8 * 4
    path.write_bytes(b"\x00\x01")
    inner = CountingProvider()
    CachedProvider(inner, tmp_path).embed(["text"])
    assert inner.embedded() == ["text"]
    assert path.stat().st_size == 8 * 4
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_contract_and_close_pass_through(tmp_path: Path) -> None:
    inner = CountingProvider()
    cached = CachedProvider(inner, tmp_path)
    assert cached.contract == inner.contract
    assert cached.max_batch_size == 3
    assert cached.embed([]).shape == (0, 8)
    cached.close()
    assert inner.closed


def test_the_cache_is_never_inside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    with pytest.raises(ValueError, match="inside the repository"):
        refuse_inside(repository / ".cache", repository)
    with pytest.raises(ValueError, match="inside the repository"):
        refuse_inside(repository, repository)
    refuse_inside(tmp_path / "elsewhere", repository)

    monkeypatch.delenv("DENSEMEM_EVAL_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "densemem" / "eval-embeddings"
    monkeypatch.setenv("DENSEMEM_EVAL_EMBEDDING_CACHE", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"

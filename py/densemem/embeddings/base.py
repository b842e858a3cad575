"""The one interface every embedding provider implements, and its errors.

A provider turns texts into unit-length float32 vectors of a fixed size. It
names the embedding contract it produces (provider, model, dimensions,
normalization); the worker embeds only for the active contract in the
database, and refuses to run when its provider makes vectors of another.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class ContractSpec:
    """What a provider produces; matches a row of dm_private.embedding_contracts (without its version)."""

    provider: str
    model: str
    dimensions: int
    normalization: str = "l2"

    def describe(self) -> str:
        return f"{self.provider}/{self.model} ({self.dimensions}-d, {self.normalization})"


class EmbeddingError(RuntimeError):
    """The provider could not embed these texts. Counts as an attempt for each document."""


class EmbeddingRequestError(EmbeddingError):
    """The provider refused the request itself (4xx other than 429): retrying the same input will not help."""


class ProviderUnavailableError(EmbeddingError):
    """The provider is down, overloaded or timing out. Says nothing about the documents: no attempt counts.

    retry_after is the provider's own hint in seconds (Retry-After), when it gave one.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Embeds texts into unit vectors. Implementations are thread-safe for concurrent embed calls."""

    @property
    def contract(self) -> ContractSpec: ...

    @property
    def max_batch_size(self) -> int:
        """The most texts the worker should hand over in one call."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """One row per text, in order: float32, shape (len(texts), dimensions)."""
        ...

    def close(self) -> None: ...


def l2_normalize(vectors: FloatMatrix) -> FloatMatrix:
    """Rows scaled to unit length; a zero row is an error (it has no direction)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise EmbeddingError("the provider returned a zero or non-finite vector")
    normalized: FloatMatrix = (vectors / norms).astype(np.float32, copy=False)
    return normalized


def check_shape(vectors: FloatMatrix, count: int, dimensions: int) -> FloatMatrix:
    if vectors.shape != (count, dimensions):
        raise EmbeddingError(
            f"expected {count} vectors of {dimensions} dimensions, got shape {vectors.shape}"
        )
    return vectors


# ---------------------------------------------------------------- a query embedded alone

_ALONE = threading.local()


@contextmanager
def alone() -> Iterator[None]:
    """Marks the provider calls of this thread, inside the block, as a query embedded while nothing
    else runs (the service's lone recall: no other recall in flight, the model idle, PostgreSQL
    only checking the key). A provider may then use more threads for it (LocalProvider's
    lone_threads); it must return the same vectors either way."""
    previous = getattr(_ALONE, "active", False)
    _ALONE.active = True
    try:
        yield
    finally:
        _ALONE.active = previous


def is_alone() -> bool:
    """True inside `alone()` on this thread."""
    return bool(getattr(_ALONE, "active", False))

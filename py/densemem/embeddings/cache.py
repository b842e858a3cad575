"""A bounded LRU cache of query embeddings, in front of a provider.

Agents repeat queries; a repeated query should not pay for the model (or
the network) again. Keys include the provider's contract, so a contract
change never serves a vector from the old model. Vectors are returned
read-only so a caller cannot corrupt a cached entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from densemem.embeddings.base import ContractSpec, EmbeddingProvider

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    size: int
    max_entries: int


class QueryEmbeddingCache:
    """Thread-safe LRU of query text -> unit vector, at most max_entries (and max_query_bytes per key)."""

    def __init__(self, provider: EmbeddingProvider, *, max_entries: int = 2048, max_query_bytes: int = 4096):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.provider = provider
        self.max_entries = max_entries
        self.max_query_bytes = max_query_bytes
        self._entries: OrderedDict[tuple[ContractSpec, str], Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def embed_query(self, text: str) -> Vector:
        """The query's vector: from the cache, or embedded once and remembered."""
        key = (self.provider.contract, text)
        cacheable = len(text.encode("utf-8")) <= self.max_query_bytes
        if cacheable:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self._hits += 1
                    return found
                self._misses += 1
        vector = np.array(self.provider.embed([text])[0], dtype=np.float32)
        vector.setflags(write=False)
        if cacheable:
            with self._lock:
                self._entries[key] = vector
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return vector

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors for several queries: cached ones from the cache, the rest in ONE provider call."""
        keys = [(self.provider.contract, text) for text in texts]
        found: dict[str, Vector] = {}
        with self._lock:
            for key in keys:
                text = key[1]
                vector = self._entries.get(key)
                if vector is not None:
                    self._entries.move_to_end(key)
                    self._hits += 1
                    found[text] = vector
                elif text not in found:
                    self._misses += 1
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            matrix = self.provider.embed(missing)
            with self._lock:
                for text, row in zip(missing, matrix, strict=True):
                    vector = np.array(row, dtype=np.float32)
                    vector.setflags(write=False)
                    found[text] = vector
                    if len(text.encode("utf-8")) <= self.max_query_bytes:
                        key = (self.provider.contract, text)
                        self._entries[key] = vector
                        self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return [found[text] for text in texts]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, len(self._entries), self.max_entries)

"""A deterministic hashing provider, FOR TESTS ONLY.

It hashes lower-cased word tokens and their bigrams into signed buckets
(feature hashing) and normalises the result. Texts sharing words get similar
vectors, so it is enough for tests that need the machinery (claims, stores,
versions, contracts) but never for tests that judge retrieval quality. Its
contract names it `hashing-test` so it cannot be mistaken for a real model.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from densemem.embeddings.base import ContractSpec, FloatMatrix, l2_normalize

TOKEN = re.compile(r"\w+", re.UNICODE)
HASHING_TEST_PROVIDER = "hashing-test"
HASHING_TEST_MODEL = "densemem-hashing-test-v1"


class HashingTestProvider:
    """Test-only: deterministic, dependency-free, instant. Not a semantic model."""

    def __init__(self, dimensions: int = 384, *, max_batch_size: int = 256) -> None:
        if not 1 <= dimensions <= 4000:
            raise ValueError("dimensions must be between 1 and 4000")
        self._contract = ContractSpec(HASHING_TEST_PROVIDER, HASHING_TEST_MODEL, dimensions, "l2")
        self._max_batch_size = max_batch_size

    @property
    def contract(self) -> ContractSpec:
        return self._contract

    @property
    def max_batch_size(self) -> int:
        return self._max_batch_size

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        dimensions = self._contract.dimensions
        out = np.zeros((len(texts), dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = TOKEN.findall(text.lower())
            features = tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]
            if not features:
                features = [f"\0empty:{text}"]
            for feature in features:
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % dimensions
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, bucket] += sign
            if not out[row].any():  # every feature cancelled out
                out[
                    row, int.from_bytes(hashlib.blake2b(text.encode()).digest()[:4], "little") % dimensions
                ] = 1.0
        return l2_normalize(out) if len(texts) else out

    def close(self) -> None:
        return None

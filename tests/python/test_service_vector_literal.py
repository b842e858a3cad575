"""The query vector's text form (densemem.service.embedding.vector_literal) gives pgvector exactly the
vector the old repr()-join form gave: same float4 components, for float32 and float64 arrays and lists."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
import pytest

from densemem.service.embedding import vector_literal


def old_literal(vector: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def vectors() -> list[Any]:
    rng = np.random.default_rng(7)
    unit = rng.standard_normal(384).astype(np.float32)
    unit /= np.linalg.norm(unit)
    awkward = np.array([1.0, -0.0, 1e-8, 3.4e38, -1.17549435e-38, 0.1, 1 / 3] * 55, dtype=np.float32)[:384]
    return [unit, unit.astype(np.float64), [float(x) for x in unit], awkward, unit[::-1]]


def test_same_float4_values_in_postgresql(admin_conn: psycopg.Connection[Any]) -> None:
    for vector in vectors():
        new, old = vector_literal(vector), old_literal(vector)
        assert new is not None
        same = admin_conn.execute(
            "SELECT %s::public.vector = %s::public.vector, %s::public.vector::text = %s::public.vector::text",
            (new, old, new, old),
        ).fetchone()
        assert same == (True, True)
        parsed = np.array([float(x) for x in new.strip("[]").split(",")], dtype=np.float32)
        assert np.array_equal(parsed, np.asarray(vector, dtype=np.float32))


def test_none_stays_null_and_non_finite_is_refused() -> None:
    assert vector_literal(None) is None
    with pytest.raises(ValueError, match="non-finite"):
        vector_literal(np.array([0.5, np.nan], dtype=np.float32))
    with pytest.raises(ValueError, match="non-finite"):
        vector_literal([0.5, float("inf")])

"""Paired bootstrap comparisons: determinism, hand-checkable intervals, refusal of unmatched reports."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from densemem.eval import compare


def test_bootstrap_is_deterministic_for_a_fixed_seed() -> None:
    rng = np.random.default_rng(7)
    base = rng.random(300)
    candidate = base + rng.normal(0.02, 0.1, 300)
    first = compare.paired_bootstrap(base, candidate, samples=2000, seed=11)
    second = compare.paired_bootstrap(base, candidate, samples=2000, seed=11)
    other = compare.paired_bootstrap(base, candidate, samples=2000, seed=12)
    assert first == second
    assert (first.low, first.high) != (other.low, other.high)
    assert first.delta == other.delta == pytest.approx(float(np.mean(candidate - base)))


def test_bootstrap_interval_matches_the_normal_approximation() -> None:
    rng = np.random.default_rng(3)
    differences = rng.normal(0.05, 0.2, 2000)
    base = np.zeros(2000)
    interval = compare.paired_bootstrap(base, differences, samples=4000, seed=1)
    half_width = 1.96 * differences.std(ddof=1) / np.sqrt(2000)
    assert interval.low < interval.delta < interval.high
    assert interval.high - interval.low == pytest.approx(2 * half_width, rel=0.1)
    assert interval.significant


def test_constant_differences_give_a_point_interval() -> None:
    interval = compare.paired_bootstrap([0.0, 0.0, 1.0], [1.0, 1.0, 2.0], samples=500, seed=5)
    assert (interval.base, interval.candidate, interval.delta) == pytest.approx((1 / 3, 4 / 3, 1.0))
    assert (interval.low, interval.high) == pytest.approx((1.0, 1.0))
    same = compare.paired_bootstrap([0.2, 0.4], [0.2, 0.4], samples=500, seed=5)
    assert (same.delta, same.low, same.high) == (0.0, 0.0, 0.0)
    assert not same.significant


def test_bootstrap_pairs_questions() -> None:
    # Large spread between questions, tiny constant gain: paired resampling sees the gain clearly.
    base = np.linspace(0, 1, 200)
    candidate = base + 0.01
    interval = compare.paired_bootstrap(base, candidate, samples=1000, seed=2)
    assert interval.low == pytest.approx(0.01) and interval.high == pytest.approx(0.01)


def _question(qid: str, group: str, slices: list[str], recall: float, leaked: int = 0) -> dict[str, Any]:
    return {
        "qid": qid,
        "group": group,
        "slices": slices,
        "gold": ["D1:1"],
        "ranks": [1 if recall else None],
        "latency_ms": [float(len(qid))],
        "leaked": leaked,
        "discovery_paths": 0,
        "discovery_exposed": [],
        "metrics": {"recall@5": recall, "mrr": recall},
    }


def _report(values: list[float], leaked: int = 0) -> dict[str, Any]:
    questions = [
        _question(f"q{i}", "2:temporal" if i % 2 else "4:single-hop", ["temporal"] if i % 2 else [], value)
        for i, value in enumerate(values)
    ]
    questions[0]["leaked"] = leaked
    branches = {"hybrid": {"questions": questions}, "fulltext": {"questions": questions}}
    return {"dataset": "locomo", "branches": branches}


def test_compare_reports_slices_latency_and_leakage() -> None:
    base = _report([0.0, 0.0, 1.0, 1.0])
    candidate = _report([1.0, 1.0, 1.0, 1.0])
    result = compare.compare_reports(base, candidate, samples=500, seed=1)
    hybrid = result["comparisons"]["hybrid"]
    assert hybrid["slices"]["all"]["recall@5"]["delta"] == pytest.approx(0.5)
    # temporal = the odd questions q1, q3 with base values 0, 1
    assert hybrid["slices"]["temporal"]["questions"] == 2
    assert hybrid["slices"]["temporal"]["recall@5"]["delta"] == pytest.approx(0.5)
    for name in ("exact-anchor", "graph", "hypothesis"):
        assert hybrid["slices"][name]["questions"] == 0
    assert hybrid["slices"]["group 4:single-hop"]["recall@5"]["base"] == pytest.approx(0.5)
    assert hybrid["leakage"] == {"base": 0, "candidate": 0}
    assert compare.total_leakage(result) == 0
    text = compare.format_comparison(result)
    assert "temporal" in text and "empty slice" in text
    leaking = compare.compare_reports(base, _report([1.0, 1.0, 1.0, 1.0], leaked=2), samples=100)
    assert compare.total_leakage(leaking) == 4  # two branches, two leaked rows each


def test_compare_named_branch_pair() -> None:
    report = _report([0.0, 1.0, 1.0, 1.0])
    result = compare.compare_reports(report, report, pairs=[("fulltext", "hybrid")], samples=100)
    assert list(result["comparisons"]) == ["fulltext -> hybrid"]


def test_compare_refuses_unmatched_reports() -> None:
    base = _report([0.0, 1.0])
    fewer = _report([0.0])
    with pytest.raises(compare.IncomparableReports):
        compare.compare_reports(base, fewer)
    other_gold = copy.deepcopy(base)
    other_gold["branches"]["hybrid"]["questions"][1]["gold"] = ["D1:2"]
    with pytest.raises(compare.IncomparableReports):
        compare.compare_reports(base, other_gold, pairs=[("hybrid", "hybrid")])
    other_dataset = copy.deepcopy(base)
    other_dataset["dataset"] = "scifact"
    with pytest.raises(compare.IncomparableReports):
        compare.compare_reports(base, other_dataset)

"""Ranking metrics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from densemem.eval import metrics


def test_recall_at_k_is_the_fraction_of_evidence_in_the_top_k() -> None:
    ranks = [1, None, 7]
    assert metrics.recall_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranks, 5) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranks, 7) == pytest.approx(2 / 3)
    assert metrics.recall_at_k(ranks, 50) == pytest.approx(2 / 3)
    assert metrics.recall_at_k([None, None], 50) == 0.0
    assert metrics.recall_at_k([3], 2) == 0.0
    assert metrics.recall_at_k([2], 2) == 1.0


def test_recall_rejects_questions_without_evidence_and_bad_k() -> None:
    with pytest.raises(ValueError):
        metrics.recall_at_k([], 5)
    with pytest.raises(ValueError):
        metrics.recall_at_k([1], 0)


def test_reciprocal_rank_uses_the_best_ranked_relevant_item() -> None:
    assert metrics.reciprocal_rank([None, 4, 2]) == 0.5
    assert metrics.reciprocal_rank([1]) == 1.0
    assert metrics.reciprocal_rank([None]) == 0.0
    assert metrics.reciprocal_rank([10, 5]) == pytest.approx(0.2)


def test_binary_ndcg_by_hand() -> None:
    # two relevant items at ranks 1 and 3: DCG = 1/log2(2) + 1/log2(4) = 1.5;
    # ideal = 1/log2(2) + 1/log2(3) = 1.630930
    assert metrics.binary_ndcg_at_k([1, 3], 10) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert metrics.binary_ndcg_at_k([1, 3], 10) == pytest.approx(0.919721, abs=1e-6)
    # the item at rank 11 is past the cut-off
    assert metrics.binary_ndcg_at_k([11], 10) == 0.0
    assert metrics.binary_ndcg_at_k([1], 10) == 1.0
    # one relevant item at rank 2: 1/log2(3)
    assert metrics.binary_ndcg_at_k([2], 10) == pytest.approx(0.630930, abs=1e-6)


def test_graded_ndcg_by_hand() -> None:
    # gains 1 at rank 1 and 2 at rank 2; ideal order 2, 1.
    dcg = 1 / math.log2(2) + 2 / math.log2(3)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert metrics.ndcg_at_k({1: 1.0, 2: 2.0}, [2.0, 1.0], 10) == pytest.approx(dcg / idcg)
    assert metrics.ndcg_at_k({1: 1.0, 2: 2.0}, [2.0, 1.0], 10) == pytest.approx(0.859719, abs=1e-6)
    # the ideal list is cut at k too: three relevant, k = 1, the best at rank 1
    assert metrics.ndcg_at_k({1: 1.0}, [1.0, 1.0, 1.0], 1) == 1.0


def test_question_metrics_record() -> None:
    record = metrics.question_metrics([2, None], [1.0, 1.0], [1, 5])
    assert record == {
        "recall@1": 0.0,
        "recall@5": 0.5,
        "mrr": 0.5,
        "ndcg@10": pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3))),
    }
    with pytest.raises(ValueError):
        metrics.question_metrics([1], [1.0, 1.0], [1])


def test_means_percentiles_and_curves() -> None:
    assert metrics.mean_metrics([{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.5}]) == {"a": 0.5, "b": 0.25}
    latencies = [float(value) for value in range(1, 101)]
    assert metrics.percentiles(latencies) == {
        "p50": pytest.approx(50.5),
        "p95": pytest.approx(95.05),
        "p99": pytest.approx(99.01),
    }
    assert math.isnan(metrics.percentiles([])["p95"])
    curve = metrics.recall_curve([[1, 3], [None], [2]], 3)
    assert curve == pytest.approx([0.5 / 3, (0.5 + 1) / 3, (1 + 1) / 3])

"""Ranking metrics computed from 1-based ranks of the relevant items.

Every function takes the *ranks* at which a question's relevant items were
retrieved (None when an item was not retrieved at all) rather than the ranked
list itself, so the same per-question record scores every metric and
`compare` can recompute them without the database.

Definitions:

- recall@k (the LoCoMo paper's evidence recall, and BEIR's Recall@100): the
  fraction of a question's relevant items found in the top k; averaged over
  questions by the caller.
- reciprocal rank: 1 / rank of the first relevant item, 0 when none was
  retrieved; MRR is its mean.
- nDCG@k: sum over the top k of gain / log2(rank + 1), divided by the same sum
  for the ideal ordering of the relevance judgments (pytrec_eval's
  ``ndcg_cut``, which BEIR reports: gain is the graded relevance itself).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

Rank = int | None


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")


def recall_at_k(ranks: Sequence[Rank], k: int) -> float:
    """Fraction of the relevant items ranked within the top k (ranks are 1-based)."""
    _check_k(k)
    if not ranks:
        raise ValueError("a question without relevant items has no recall")
    return sum(1 for rank in ranks if rank is not None and rank <= k) / len(ranks)


def reciprocal_rank(ranks: Sequence[Rank]) -> float:
    """1 / the best rank among the relevant items, 0 when none was retrieved."""
    found = [rank for rank in ranks if rank is not None]
    if not found:
        return 0.0
    best = min(found)
    if best < 1:
        raise ValueError(f"ranks are 1-based, got {best}")
    return 1.0 / best


def ndcg_at_k(ranked_gains: Mapping[int, float], ideal_gains: Sequence[float], k: int) -> float:
    """nDCG@k from the gains of retrieved relevant items by rank and all judged gains.

    `ranked_gains` maps a 1-based rank to the relevance gain of the item at that
    rank (items with gain 0 may be left out); `ideal_gains` lists the gains of
    every judged relevant item for the question. pytrec_eval's ndcg_cut.
    """
    _check_k(k)
    ideal = sorted((gain for gain in ideal_gains if gain > 0), reverse=True)[:k]
    if not ideal:
        raise ValueError("a question without relevant items has no nDCG")
    idcg = sum(gain / math.log2(position + 1) for position, gain in enumerate(ideal, start=1))
    dcg = sum(
        gain / math.log2(rank + 1) for rank, gain in ranked_gains.items() if 1 <= rank <= k and gain > 0
    )
    return dcg / idcg


def binary_ndcg_at_k(ranks: Sequence[Rank], k: int) -> float:
    """nDCG@k when every relevant item has gain 1 (LoCoMo evidence, SciFact train qrels)."""
    return ndcg_at_k({rank: 1.0 for rank in ranks if rank is not None}, [1.0] * len(ranks), k)


def question_metrics(
    ranks: Sequence[Rank], gains: Sequence[float], ks: Sequence[int], *, ndcg_k: int = 10
) -> dict[str, float]:
    """The per-question record: recall@k for each k, mrr (its reciprocal rank) and ndcg@ndcg_k.

    `ranks[i]` is the rank of the i-th relevant item and `gains[i]` its graded relevance.
    """
    if len(ranks) != len(gains):
        raise ValueError("ranks and gains must have one entry per relevant item")
    values = {f"recall@{k}": recall_at_k(ranks, k) for k in ks}
    values["mrr"] = reciprocal_rank(ranks)
    ranked_gains: dict[int, float] = {}
    for rank, gain in zip(ranks, gains, strict=True):
        if rank is not None:
            ranked_gains[rank] = ranked_gains.get(rank, 0.0) + gain
    values[f"ndcg@{ndcg_k}"] = ndcg_at_k(ranked_gains, gains, ndcg_k)
    return values


def mean_metrics(per_question: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Average every metric over the questions (the metrics of the first record define the keys)."""
    if not per_question:
        return {}
    keys = list(per_question[0])
    return {key: float(np.mean([record[key] for record in per_question])) for key in keys}


def percentiles(values: Sequence[float], points: Sequence[float] = (50, 95, 99)) -> dict[str, float]:
    """Latency percentiles (linear interpolation, numpy's default), keyed p50 / p95 / p99."""
    if not values:
        return {f"p{point:g}": float("nan") for point in points}
    array = np.asarray(values, dtype=float)
    return {f"p{point:g}": float(np.percentile(array, point)) for point in points}


def recall_curve(rank_lists: Sequence[Sequence[Rank]], max_k: int) -> list[float]:
    """Mean recall@k for k = 1 .. max_k over questions (for the plots)."""
    _check_k(max_k)
    if not rank_lists:
        return []
    return [float(np.mean([recall_at_k(ranks, k) for ranks in rank_lists])) for k in range(1, max_k + 1)]

"""Baseline versus candidate: paired bootstrap confidence intervals per metric and slice.

Two reports are comparable only when they ask the same questions of the same
data (seed 000: "matched baseline/candidate data"): the question IDs and gold
items of each compared branch must be identical, or the comparison is refused.

For every slice (all, temporal, exact-anchor, graph, hypothesis, and each
group such as a LoCoMo category) and every metric, the delta is the mean of
per-question differences (candidate - baseline); its confidence interval is
the percentile interval of that mean over bootstrap resamples of questions
(the same resampled questions for both systems: paired). The generator is
seeded, so the same inputs give the same intervals.

Slice membership comes from the baseline report. Discovery exposure (gold
items surfaced only through discovery paths) is reported apart from the
direct metrics, which score results[] alone. Latency percentiles are of the
first recall call of each question. Cross-team leakage must be 0 in both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from densemem.eval import metrics

DEFAULT_SEED = 20260713
DEFAULT_SAMPLES = 10_000
STANDARD_SLICES: tuple[str, ...] = ("temporal", "exact-anchor", "graph", "hypothesis")


class IncomparableReports(ValueError):
    """The two reports do not ask the same questions about the same data."""


@dataclass(frozen=True)
class Interval:
    base: float
    candidate: float
    delta: float
    low: float
    high: float
    questions: int

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "candidate": self.candidate,
            "delta": self.delta,
            "ci_low": self.low,
            "ci_high": self.high,
            "questions": self.questions,
            "significant": self.significant,
        }


def paired_bootstrap(
    base: Sequence[float] | npt.NDArray[np.float64],
    candidate: Sequence[float] | npt.NDArray[np.float64],
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> Interval:
    """Mean difference candidate - base with a percentile bootstrap interval over paired questions."""
    base_values = np.asarray(base, dtype=float)
    candidate_values = np.asarray(candidate, dtype=float)
    if base_values.shape != candidate_values.shape or base_values.ndim != 1:
        raise ValueError("paired samples must be two vectors of the same length")
    count = base_values.shape[0]
    if count == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, nan, nan, 0)
    if samples < 1 or not 0 < confidence < 1:
        raise ValueError("samples must be positive and confidence inside (0, 1)")
    differences = candidate_values - base_values
    rng = np.random.default_rng(seed)
    means = np.empty(samples, dtype=float)
    chunk = max(1, 2_000_000 // count)
    for start in range(0, samples, chunk):
        stop = min(samples, start + chunk)
        picks = rng.integers(0, count, size=(stop - start, count))
        means[start:stop] = differences[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Interval(
        base=float(base_values.mean()),
        candidate=float(candidate_values.mean()),
        delta=float(differences.mean()),
        low=float(low),
        high=float(high),
        questions=count,
    )


def load_report(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "branches" not in data:
        raise ValueError(f"{path}: not an evaluation report (no branches)")
    return data


def _pair(
    base: Mapping[str, Any], candidate: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    base_questions = {question["qid"]: question for question in base["questions"]}
    candidate_questions = {question["qid"]: question for question in candidate["questions"]}
    if set(base_questions) != set(candidate_questions):
        only_base = sorted(set(base_questions) - set(candidate_questions))[:5]
        only_candidate = sorted(set(candidate_questions) - set(base_questions))[:5]
        raise IncomparableReports(
            f"different questions: only in base {only_base}, only in candidate {only_candidate}"
        )
    order = sorted(base_questions)
    for qid in order:
        if list(base_questions[qid]["gold"]) != list(candidate_questions[qid]["gold"]):
            raise IncomparableReports(f"question {qid} has different gold items in the two reports")
    return [base_questions[qid] for qid in order], [candidate_questions[qid] for qid in order]


def compare_branches(
    base: Mapping[str, Any],
    candidate: Mapping[str, Any],
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Per slice and metric intervals, discovery exposure, latency and leakage of one branch pair."""
    base_questions, candidate_questions = _pair(base, candidate)
    metric_names = list(base_questions[0]["metrics"]) if base_questions else []
    slices: dict[str, list[int]] = {"all": list(range(len(base_questions)))}
    for name in STANDARD_SLICES:
        slices[name] = []
    for index, question in enumerate(base_questions):
        for name in question.get("slices", []):
            slices.setdefault(name, []).append(index)
    groups = sorted({question["group"] for question in base_questions})
    if len(groups) > 1:
        for group in groups:
            slices[f"group {group}"] = [
                index for index, question in enumerate(base_questions) if question["group"] == group
            ]
    result: dict[str, Any] = {"slices": {}}
    for name, indexes in slices.items():
        result["slices"][name] = {
            metric: paired_bootstrap(
                [base_questions[i]["metrics"][metric] for i in indexes],
                [candidate_questions[i]["metrics"][metric] for i in indexes],
                samples=samples,
                seed=seed,
                confidence=confidence,
            ).as_dict()
            for metric in metric_names
        }
        result["slices"][name]["questions"] = len(indexes)

    def exposure(questions: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        return {
            "questions_with_paths": sum(1 for question in questions if question.get("discovery_paths")),
            "gold_exposed_only_by_paths": sum(
                len(question.get("discovery_exposed", [])) for question in questions
            ),
            "gold_total": sum(len(question["gold"]) for question in questions),
        }

    def latency(questions: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return metrics.percentiles(
            [question["latency_ms"][0] for question in questions if question["latency_ms"]]
        )

    result["discovery"] = {"base": exposure(base_questions), "candidate": exposure(candidate_questions)}
    result["latency_ms"] = {"base": latency(base_questions), "candidate": latency(candidate_questions)}
    result["leakage"] = {
        "base": sum(int(question["leaked"]) for question in base_questions),
        "candidate": sum(int(question["leaked"]) for question in candidate_questions),
    }
    result["questions"] = len(base_questions)
    return result


def compare_reports(
    base: Mapping[str, Any],
    candidate: Mapping[str, Any],
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Compare branch pairs (default: every branch name present in both reports, with itself)."""
    if base.get("dataset") != candidate.get("dataset"):
        raise IncomparableReports(f"datasets differ: {base.get('dataset')} vs {candidate.get('dataset')}")
    chosen = (
        list(pairs)
        if pairs is not None
        else [(name, name) for name in base["branches"] if name in candidate["branches"]]
    )
    if not chosen:
        raise IncomparableReports(
            "no branch in common; name the pair with --base-branch / --candidate-branch"
        )
    comparisons: dict[str, Any] = {}
    for base_name, candidate_name in chosen:
        if base_name not in base["branches"] or candidate_name not in candidate["branches"]:
            raise IncomparableReports(f"no branch {base_name!r} in base or {candidate_name!r} in candidate")
        label = base_name if base_name == candidate_name else f"{base_name} -> {candidate_name}"
        comparisons[label] = compare_branches(
            base["branches"][base_name],
            candidate["branches"][candidate_name],
            samples=samples,
            seed=seed,
            confidence=confidence,
        )
    return {
        "dataset": base.get("dataset"),
        "seed": seed,
        "samples": samples,
        "confidence": confidence,
        "base": {"revision": base.get("revision"), "created_at": base.get("created_at")},
        "candidate": {"revision": candidate.get("revision"), "created_at": candidate.get("created_at")},
        "comparisons": comparisons,
    }


def total_leakage(comparison: Mapping[str, Any]) -> int:
    return sum(
        int(item["leakage"]["base"]) + int(item["leakage"]["candidate"])
        for item in comparison["comparisons"].values()
    )


def format_comparison(comparison: Mapping[str, Any]) -> str:
    """A plain-text table: one row per slice and metric, then latency, discovery and leakage lines."""
    lines: list[str] = []
    confidence = round(float(comparison["confidence"]) * 100)
    for label, item in comparison["comparisons"].items():
        lines.append(f"== {comparison['dataset']} / {label} ({item['questions']} questions)")
        lines.append(
            f"{'slice':<22} {'metric':<11} {'n':>5} {'base':>7} {'cand':>7} {'delta':>8}  {confidence}% CI"
        )
        for slice_name, values in item["slices"].items():
            for metric, interval in values.items():
                if metric == "questions":
                    continue
                if interval["questions"] == 0:
                    lines.append(
                        f"{slice_name:<22} {metric:<11} {0:>5}       -       -        -  (empty slice)"
                    )
                    continue
                flag = " *" if interval["significant"] else ""
                lines.append(
                    f"{slice_name:<22} {metric:<11} {interval['questions']:>5} {interval['base']:>7.3f} "
                    f"{interval['candidate']:>7.3f} {interval['delta']:>+8.3f}  "
                    f"[{interval['ci_low']:+.3f}, {interval['ci_high']:+.3f}]{flag}"
                )
        for side in ("base", "candidate"):
            latency = item["latency_ms"][side]
            discovery = item["discovery"][side]
            lines.append(
                f"{side:<9} latency p50 {latency['p50']:.1f} ms  p95 {latency['p95']:.1f} ms  "
                f"p99 {latency['p99']:.1f} ms; discovery: {discovery['questions_with_paths']} questions with "
                f"paths, {discovery['gold_exposed_only_by_paths']}/{discovery['gold_total']} gold items "
                f"only in paths; cross-team leakage {item['leakage'][side]}"
            )
        lines.append("")
    lines.append("* the interval excludes 0")
    return "\n".join(lines)

"""PNG figures of an evaluation report (matplotlib, no display needed).

- LoCoMo: recall@k curves (k = 1 .. depth), one panel per category plus
  overall, one line per branch; DRAGON's published turn-level recall
  (LoCoMo paper, Table 3) marked on the overall panel.
- SciFact: recall@k curves per branch, and nDCG@10 / Recall@100 / MRR bars
  per branch next to the published BM25 and all-MiniLM-L6-v2 nDCG@10.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from densemem.eval import metrics

# LoCoMo paper (Maharana et al., 2024), Table 3, DRAGON, turn-level evidence recall (%).
DRAGON_LOCOMO: dict[int, float] = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}
# BEIR SciFact nDCG@10 (test split): BM25 and all-MiniLM-L6-v2 as published.
SCIFACT_BASELINES: dict[str, float] = {"BM25": 0.665, "all-MiniLM-L6-v2": 0.645}


def _curve(questions: Sequence[Mapping[str, Any]], depth: int) -> list[float]:
    return metrics.recall_curve([question["ranks"] for question in questions], depth)


def locomo_recall_curves(report: Mapping[str, Any], out: Path) -> Path:
    """One panel per category plus overall; one line per branch."""
    depth = int(report["depth"])
    branches = report["branches"]
    groups = sorted({question["group"] for branch in branches.values() for question in branch["questions"]})
    panels = ["overall", *groups]
    columns = 3
    rows = (len(panels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.8 * rows), squeeze=False)
    ks = range(1, depth + 1)
    for index, panel in enumerate(panels):
        axis = axes[index // columns][index % columns]
        for name, branch in branches.items():
            questions = [q for q in branch["questions"] if panel == "overall" or q["group"] == panel]
            if questions:
                axis.plot(ks, _curve(questions, depth), label=f"{name} (n={len(questions)})")
        if panel == "overall":
            points = [(k, value / 100.0) for k, value in DRAGON_LOCOMO.items() if k <= depth]
            axis.scatter(
                [k for k, _ in points],
                [v for _, v in points],
                marker="x",
                color="black",
                label="DRAGON (LoCoMo paper)",
                zorder=3,
            )
        axis.set_title(f"LoCoMo {panel}")
        axis.set_xlabel("k")
        axis.set_ylabel("evidence recall@k")
        axis.set_ylim(0, 1)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="lower right")
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def scifact_figures(report: Mapping[str, Any], out: Path) -> Path:
    """Recall@k curves and the three headline metrics per branch, with the published nDCG@10 lines."""
    depth = int(report["depth"])
    branches = report["branches"]
    figure, (curve_axis, bar_axis) = plt.subplots(1, 2, figsize=(13, 5.2))
    ks = range(1, depth + 1)
    for name, branch in branches.items():
        curve_axis.plot(ks, _curve(branch["questions"], depth), label=name)
    curve_axis.set_title(f"SciFact recall@k ({report['question_count']} judged queries)")
    curve_axis.set_xlabel("k")
    curve_axis.set_ylabel("recall@k")
    curve_axis.set_ylim(0, 1)
    curve_axis.grid(alpha=0.3)
    curve_axis.legend(fontsize=8, loc="lower right")

    names = list(branches)
    headline = [("ndcg@10", "nDCG@10"), (f"recall@{depth}", f"Recall@{depth}"), ("mrr", "MRR")]
    width = 0.8 / max(1, len(names))
    for offset, name in enumerate(names):
        overall = branches[name]["summary"]["overall"]
        values = [overall.get(key, float("nan")) for key, _ in headline]
        positions = [index + offset * width for index in range(len(headline))]
        bars = bar_axis.bar(positions, values, width=width, label=name)
        bar_axis.bar_label(bars, fmt="%.3f", fontsize=7)
    for (label, value), style in zip(SCIFACT_BASELINES.items(), ("--", ":"), strict=True):
        bar_axis.axhline(
            value, color="gray", linestyle=style, linewidth=1, label=f"{label} nDCG@10 (BEIR) {value}"
        )
    bar_axis.set_xticks([index + width * (len(names) - 1) / 2 for index in range(len(headline))])
    bar_axis.set_xticklabels([label for _, label in headline])
    bar_axis.set_ylim(0, 1)
    bar_axis.set_title("SciFact per branch")
    bar_axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def write_figures(report: Mapping[str, Any], folder: Path, *, stem: str | None = None) -> list[Path]:
    """The figures of one report into `folder` (``<dataset>_recall.png``)."""
    name = stem or str(report["dataset"])
    if report["dataset"] == "locomo":
        return [locomo_recall_curves(report, folder / f"{name}_recall_at_k.png")]
    if report["dataset"] == "scifact":
        return [scifact_figures(report, folder / f"{name}_metrics.png")]
    raise ValueError(f"no figures for dataset {report['dataset']!r}")

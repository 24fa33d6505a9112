"""The study plots, as PNGs a person can read (titles, axis labels, legends):

- `opt_p_curve.png`: Opt_p@1 as the threshold p goes from 0 to 1, per system (GSO's threshold curve);
- `opt_at_k.png`: Opt@k as k grows, from the unbiased estimator, per system;
- `steps_rollouts_heatmap.png`: Opt@K by step budget x rollouts, when systems differ in step budget
  (a scaling sweep); cells on one anti-diagonal cost the same compute;
- `score_vs_cost.png`: Avg@k against cost per rollout (log x), the Pareto front marked;
- `quadrants.png`: per judged system, ISO-Bench's quadrants (intent x result) as a 2 x 2 grid of counts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from harness import metrics  # noqa: E402
from runner.study import Run, pareto_front, successes_of  # noqa: E402


def write_plots(result: dict[str, Any], runs: list[Run], out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    written = [_curve(result, "opt_p_at_1", out / "opt_p_curve.png", "threshold p (patch hm speedup over expert > p)",
                      "Opt_p@1", "Opt_p@1 as the threshold rises"),
               _curve(result, "opt_at_k", out / "opt_at_k.png", "k (rollouts)", "Opt@k (unbiased)",
                      "Opt@k as rollouts grow")]
    heatmap = _heatmap(runs, out / "steps_rollouts_heatmap.png")
    if heatmap:
        written.append(heatmap)
    scatter = _score_vs_cost(result, out / "score_vs_cost.png")
    if scatter:
        written.append(scatter)
    quadrants = _quadrants(result, out / "quadrants.png")
    if quadrants:
        written.append(quadrants)
    return written


def _quadrants(result: dict[str, Any], path: Path) -> str | None:
    """One 2 x 2 grid per (system, judge): rows intent (aimed at the expert's bottleneck or not), columns
    result (as fast as the expert or not), each cell its quadrant's count."""
    panels = [(f"{row['system']}\n(judge {judge_id})", j["quadrants"]) for row in result["systems"]
              for judge_id, j in (row.get("judges") or {}).items()]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.6), squeeze=False)
    layout = [["Q1", "Q2"], ["Q3", "Q4"]]  # rows: good intent, bad intent; columns: good result, bad result
    names = {"Q1": "true success", "Q2": "good intent,\nbad execution", "Q3": "lucky win", "Q4": "failure"}
    for ax, (title, counts) in zip(axes[0], panels):
        grid = np.array([[counts[q] for q in row] for row in layout], dtype=float)
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=max(1.0, grid.max()))
        for i, row in enumerate(layout):
            for j, q in enumerate(row):
                ax.text(j, i, f"{q}: {counts[q]}\n{names[q]}", ha="center", va="center", fontsize=8,
                        color="white" if grid[i, j] > 0.6 * grid.max() and grid.max() else "black")
        ax.set_xticks([0, 1], ["beats / similar", "worse / failed"])
        ax.set_yticks([0, 1], ["same / related\ntarget", "different /\nno target"])
        ax.set_title(title, fontsize=9)
    fig.suptitle("ISO-Bench quadrants: intent (judge) x result (grader)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def _curve(result: dict[str, Any], key: str, path: Path, xlabel: str, ylabel: str, title: str) -> str:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, curves in result["curves"].items():
        xs, ys = zip(*curves[key])
        ax.plot(xs, ys, marker="o", markersize=3, label=label)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, ylim=(-0.02, 1.02))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def _heatmap(runs: list[Run], path: Path) -> str | None:
    """Opt@K per (step budget, K): one run per step budget gives K = 1..N from its N rollouts."""
    by_steps = {}
    for run in runs:
        if run.conf.budget.max_steps is not None and not run.approximate:
            by_steps.setdefault(run.conf.budget.max_steps, run)
    if len(by_steps) < 2:
        return None
    steps = sorted(by_steps)
    ks = list(range(1, max(r.n for r in by_steps.values()) + 1))
    grid = np.full((len(steps), len(ks)), np.nan)
    for i, s in enumerate(steps):
        run = by_steps[s]
        for j, k in enumerate(ks):
            if k <= run.n:
                grid[i, j] = metrics.suite_opt_at_k(successes_of(run), k)
    fig, ax = plt.subplots(figsize=(max(6.5, 1.5 + 0.8 * len(ks)), max(3.5, 1.5 + 0.6 * len(steps))))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, origin="lower", aspect="auto")
    for i in range(len(steps)):
        for j in range(len(ks)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}\n{steps[i] * ks[j]}", ha="center", va="center", fontsize=7,
                        color="white" if grid[i, j] < 0.6 else "black")
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(steps)), [str(s) for s in steps])
    ax.set(xlabel="rollouts K", ylabel="step budget per rollout",
           title="Opt@K by step budget x rollouts\n(each cell: Opt@K, and compute = steps x K)")
    fig.colorbar(image, ax=ax, label="Opt@K")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def _score_vs_cost(result: dict[str, Any], path: Path) -> str | None:
    rows = [r for r in result["systems"] if r["cost_per_rollout"]]
    if not rows:
        return None
    points = [(r["cost_per_rollout"], r["avg_at_k"]) for r in rows]
    front = set(pareto_front(points))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (row, (cost, score)) in enumerate(zip(rows, points)):
        ax.scatter(cost, score, s=60 if i in front else 30, marker="*" if i in front else "o", label=row["system"])
    ordered = sorted(points[i] for i in front)
    if len(ordered) > 1:
        ax.plot(*zip(*ordered), linestyle="--", color="gray", label="Pareto front")
    ax.set_xscale("log")
    ax.set(xlabel="cost per rollout (USD, log scale)", ylabel=f"Avg@{result['k']} score",
           title="Score vs cost per rollout (stars: Pareto front)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name

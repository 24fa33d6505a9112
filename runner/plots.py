"""The study plots, sized for one column of a two-column paper (3.4 in wide, 6-8 pt text), each written as
PNG (300 dpi, what aggregate.html embeds), PDF (TrueType fonts, which venues' checkers accept where Type 3
fonts are refused) and SVG:

- `opt_p_curve`: Opt_p@1 as the threshold p goes from 0 to 1, per system (GSO's threshold curve);
- `opt_at_k`: Opt@k as k grows, from the unbiased estimator, per system, with its bootstrap interval at
  each k as a band (a bar where a system has one rollout);
- `metrics`: Opt@K, Avg@k and Best@k per system with their bootstrap intervals as whiskers;
- `steps_rollouts_heatmap`: Opt@K by step budget x rollouts, when systems differ in step budget
  (a scaling sweep); cells on one anti-diagonal cost the same compute;
- `score_vs_cost`: Avg@k against cost per rollout (log x) with Avg@k's interval, the Pareto front marked;
- `quadrants`: per judged system, ISO-Bench's quadrants (intent x result) as a 2 x 2 grid of counts.

`write_plots` returns the PNG names; the PDF and SVG of each lie beside it.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from harness import metrics  # noqa: E402
from runner.study import Run, pareto_front, successes_of  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.ticker import MaxNLocator
    from matplotlib.typing import RcKeyType

WIDTH = 3.4  # inches: one column of a two-column paper (ACM, IEEE, NeurIPS' single column is 5.5)
HEIGHT = 2.3
FORMATS = ("png", "pdf", "svg")
STYLE: dict[RcKeyType, Any] = {
    "font.size": 7, "axes.titlesize": 7.5, "axes.labelsize": 7, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
    "legend.fontsize": 6, "lines.linewidth": 1.0, "lines.markersize": 3, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
    "savefig.dpi": 300, "pdf.fonttype": 42, "ps.fonttype": 42}  # TrueType in the PDF: Type 3 fonts fail venues' checks
METRIC_NAMES = ("opt_at_K", "avg_at_k", "best_at_k")


@contextmanager
def _paper_style() -> Iterator[None]:
    with plt.rc_context(STYLE):
        yield


def _save(fig: Figure, out: Path, stem: str) -> str:
    """Every format, cropped to what is drawn (a legend below the axes included)."""
    for fmt in FORMATS:
        fig.savefig(out / f"{stem}.{fmt}", bbox_inches="tight", pad_inches=0.02)
    plt.close(fig)
    return f"{stem}.png"


def _legend_below(ax: Any) -> None:
    """System names are long: under the axes, one per line, they keep the figure a column wide (short names
    share a line)."""
    labels = ax.get_legend_handles_labels()[1]
    columns = min(3, len(labels)) if max(map(len, labels), default=0) <= 18 else 1
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=columns, frameon=False, handlelength=1.5)


def write_plots(result: dict[str, Any], runs: list[Run], out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    with _paper_style():
        written = [_curve(result, "opt_p_at_1", out, "opt_p_curve", "threshold p (hm speedup over expert > p)",
                          "Opt$_p$@1", "Opt$_p$@1 as the threshold rises"),
                   _curve(result, "opt_at_k", out, "opt_at_k", "k (rollouts)", "Opt@k (unbiased)",
                          "Opt@k as rollouts grow")]
        if any(row.get("ci") for row in result["systems"]):
            written.append(_metrics(result, out))
        for drawn in (_heatmap(runs, out), _score_vs_cost(result, out), _quadrants(result, out)):
            if drawn:
                written.append(drawn)
    return written


def _curve(result: dict[str, Any], key: str, out: Path, stem: str, xlabel: str, ylabel: str, title: str) -> str:
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
    for i, (label, curves) in enumerate(result["curves"].items()):
        xs, ys = zip(*curves[key])
        color = f"C{i % 10}"
        ax.plot(xs, ys, marker="o", color=color, label=label)
        band = curves.get(f"{key}_ci")
        if band:
            ks, lows, highs = (np.array(v, dtype=float) for v in zip(*band))
            if len(ks) > 1:
                ax.fill_between(ks, lows, highs, color=color, alpha=0.18, linewidth=0)
            else:  # one rollout: a band of one point is invisible, a bar is not
                ax.errorbar(ks, [ys[0]], yerr=[[ys[0] - lows[0]], [highs[0] - ys[0]]], color=color, capsize=2)
    if key == "opt_at_k":
        # (a new axes' locator is an AutoLocator, a MaxNLocator; matplotlib's stubs say a Locator)
        cast("MaxNLocator", ax.xaxis.get_major_locator()).set_params(integer=True)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, ylim=(-0.02, 1.02))
    ax.grid(alpha=0.3)
    _legend_below(ax)
    return _save(fig, out, stem)


def _metrics(result: dict[str, Any], out: Path) -> str:
    """Each metric a group on the x axis, each system a point in it with its interval as a whisker."""
    rows = result["systems"]
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
    width = 0.8 / max(1, len(rows))
    for i, row in enumerate(rows):
        xs = np.arange(len(METRIC_NAMES)) - 0.4 + width * (i + 0.5)
        ys = np.array([row[key] for key in METRIC_NAMES], dtype=float)
        bounds = np.array([(row.get("ci") or {}).get(key, (row[key], row[key])) for key in METRIC_NAMES])
        yerr = np.clip(np.vstack([ys - bounds[:, 0], bounds[:, 1] - ys]), 0, None)
        ax.errorbar(xs, ys, yerr=yerr, fmt="o", color=f"C{i % 10}", capsize=2, elinewidth=0.8,
                    label=row["system"] + (" *" if row.get("approximate") else ""))
    big_k, small_k = {r["rollouts"] for r in rows}, {r["k"] for r in rows}  # in the label where all share it
    K, k = (str(v.pop()) if len(v) == 1 else name for v, name in ((big_k, "K"), (small_k, "k")))
    ax.set_xticks(range(len(METRIC_NAMES)), [f"Opt@{K}", f"Avg@{k}", f"Best@{k}"])
    ax.set_xlim(-0.5, len(METRIC_NAMES) - 0.5)
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    level = (result.get("intervals") or {}).get("level", 0.95)
    ax.set(ylabel="value", title=f"Suite metrics with {level * 100:g}% bootstrap intervals")
    ax.grid(alpha=0.3, axis="y")
    _legend_below(ax)
    return _save(fig, out, "metrics")


def _quadrants(result: dict[str, Any], out: Path) -> str | None:
    """One 2 x 2 grid per (system, judge): rows intent (aimed at the expert's bottleneck or not), columns
    result (as fast as the expert or not), each cell its quadrant's count."""
    panels = [(f"{row['system']}\n(judge {judge_id})", j["quadrants"]) for row in result["systems"]
              for judge_id, j in (row.get("judges") or {}).items()]
    if not panels:
        return None
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH if cols > 1 else WIDTH / 1.6, 1.9 * rows), squeeze=False)
    layout = [["Q1", "Q2"], ["Q3", "Q4"]]  # rows: good intent, bad intent; columns: good result, bad result
    names = {"Q1": "true success", "Q2": "good intent,\nbad execution", "Q3": "lucky win", "Q4": "failure"}
    for ax, (title, counts) in zip(axes.flat, panels):
        grid = np.array([[counts[q] for q in row] for row in layout], dtype=float)
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=max(1.0, grid.max()))
        for i, row in enumerate(layout):
            for j, q in enumerate(row):
                ax.text(j, i, f"{q}: {counts[q]}\n{names[q]}", ha="center", va="center", fontsize=5,
                        color="white" if grid[i, j] > 0.6 * grid.max() and grid.max() else "black")
        ax.set_xticks([0, 1], ["beats /\nsimilar", "worse /\nfailed"], fontsize=5.5)
        ax.set_yticks([0, 1], ["same /\nrelated", "different /\nnone"], fontsize=5.5)
        ax.set_title(title, fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle("ISO-Bench quadrants: intent (judge) x result (grader)", fontsize=7)
    fig.tight_layout()
    return _save(fig, out, "quadrants")


def _heatmap(runs: list[Run], out: Path) -> str | None:
    """Opt@K per (step budget, K): one run per step budget gives K = 1..N from its N rollouts (each cell's
    interval is in aggregate.json's curves: too many numbers for a cell a column wide)."""
    by_steps: dict[int, Run] = {}
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
    fig, ax = plt.subplots(figsize=(WIDTH, max(1.8, 0.9 + 0.4 * len(steps))))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, origin="lower", aspect="auto")
    for i in range(len(steps)):
        for j in range(len(ks)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}\n{steps[i] * ks[j]}", ha="center", va="center", fontsize=5.5,
                        color="white" if grid[i, j] < 0.6 else "black")
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(steps)), [str(s) for s in steps])
    ax.set(xlabel="rollouts K", ylabel="step budget per rollout",
           title="Opt@K by step budget x rollouts (cell: Opt@K, steps x K)")
    fig.colorbar(image, ax=ax, label="Opt@K")
    return _save(fig, out, "steps_rollouts_heatmap")


def _score_vs_cost(result: dict[str, Any], out: Path) -> str | None:
    colors = {row["system"]: f"C{i % 10}" for i, row in enumerate(result["systems"])}  # as in the other plots
    rows = [r for r in result["systems"] if r["cost_per_rollout"]]
    if not rows:
        return None
    points = [(r["cost_per_rollout"], r["avg_at_k"]) for r in rows]
    front = set(pareto_front(points))
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
    for i, (row, (cost, score)) in enumerate(zip(rows, points)):
        low, high = (row.get("ci") or {}).get("avg_at_k", (score, score))
        ax.errorbar(cost, score, yerr=[[max(0.0, score - low)], [max(0.0, high - score)]], fmt="*" if i in front
                    else "o", markersize=6 if i in front else 3.5, capsize=2, elinewidth=0.7,
                    color=colors[row["system"]], label=row["system"])
    ordered = sorted(points[i] for i in front)
    if len(ordered) > 1:
        ax.plot(*zip(*ordered), linestyle="--", color="gray", label="Pareto front")
    ax.set_xscale("log")
    ax.set(xlabel="cost per rollout (USD, log scale)", ylabel=f"Avg@{result['k']} score",
           title="Score vs cost per rollout (stars: Pareto front)")
    ax.grid(alpha=0.3, which="both")
    _legend_below(ax)
    return _save(fig, out, "score_vs_cost")

"""`python -m runner.aggregate DIR ... [--out OUT] [--k 3] [--truncate-steps 25,50,100]`

Reads run directories from disk (a sweep folder, run folders, or any folder holding them), never from
Hydra's in-memory state: a sweep whose job failed still aggregates. Writes `aggregate.json`,
`aggregate.md` and PNG plots into OUT (default: `<first DIR>/aggregate`).

One row per system (model x scaffold x budget; the scaffold id names its prompt variant). Runs over
different task sets, ungraded runs, or two runs of the same system are refused with one line: numbers
from different experiments are never averaged together silently.

`--truncate-steps S,...` grades each rollout as it stood after S steps (from the diff snapshots stored
every `budget.snapshot_every` steps) and adds those as extra systems, labelled as an approximation: an
agent that knows its budget is smaller behaves differently.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import metrics
from runner.config import ConfigError, RunConf, validate
from runner.plan import select
from runner.store import RunStore, write_json, write_text


@dataclass
class Run:
    path: Path
    conf: RunConf
    records: list[dict[str, Any]]  # results.jsonl, one per (task, rollout)
    task_ids: list[str]
    label: str  # the system
    approximate: bool = False  # a post-hoc truncation

    @property
    def n(self) -> int:
        return self.conf.rollouts

    def matrix(self, field: str) -> dict[str, list[Any]]:
        """task -> value per rollout index (None where the rollout is missing)."""
        table: dict[str, list[Any]] = {t: [None] * self.n for t in self.task_ids}
        for record in self.records:
            if record["instance_id"] in table and record["rollout"] < self.n:
                table[record["instance_id"]][record["rollout"]] = _field(record, field)
        return table


def _field(record: dict[str, Any], field: str) -> Any:
    grading = record.get("grading") or {}
    if field == "success":
        return bool(grading.get("opt_commit"))
    if field == "score":
        return float(record.get("score") or 0.0)
    if field == "opt_base":
        return bool(grading.get("opt_base"))
    if field == "hm_patch_commit":
        return (grading.get("opt_stats") or {}).get("hm_speedup_patch_commit")
    return record.get(field)


def system_label(conf: RunConf) -> str:
    return f"{conf.model.id} x {conf.scaffold.id} x {conf.budget.id}"


# ---------------------------------------------------------------- loading
def find_runs(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise ConfigError(f"{path}: no such directory")
        if (path / "config.yaml").is_file():
            found.append(path)
            continue
        inside = sorted(p.parent for p in path.rglob("config.yaml") if p.parent.name != ".hydra")
        if not inside:
            raise ConfigError(f"{path} is not a run directory and holds none (no config.yaml found)")
        found += inside
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return unique


def load_run(path: Path) -> Run:
    store = RunStore(path)
    conf = validate(store.load_config())
    try:
        task_ids = [t.id for t in select(conf)]
    except ConfigError:  # the task folder moved: fall back to what the run recorded
        task_ids = sorted({r["instance_id"] for r in store.results()})
    return Run(path, conf, store.results(), task_ids, system_label(conf))


def check_comparable(runs: list[Run]) -> None:
    if not runs:
        raise ConfigError("no runs to aggregate")
    ungraded = [r for r in runs if r.conf.grade == "none" or any(rec.get("grading") is None for rec in r.records)]
    if ungraded:
        raise ConfigError(f"{ungraded[0].path} has ungraded rollouts: grade it first "
                          f"(python -m runner.grade {ungraded[0].path})")
    empty = [r for r in runs if not r.records]
    if empty:
        raise ConfigError(f"{empty[0].path} has no finished rollouts yet")
    tasks = {tuple(sorted(r.task_ids)) for r in runs}
    if len(tasks) > 1:
        a, b = runs[0], next(r for r in runs if sorted(r.task_ids) != sorted(runs[0].task_ids))
        raise ConfigError(f"runs over different task sets: {a.path.name} ({len(a.task_ids)} tasks) and "
                          f"{b.path.name} ({len(b.task_ids)} tasks); aggregate them separately")
    seen: dict[str, Path] = {}
    for run in runs:
        if run.label in seen:
            raise ConfigError(f"two runs of the same system {run.label}: {seen[run.label]} and {run.path}")
        seen[run.label] = run.path


# ---------------------------------------------------------------- numbers (pure)
def scores_of(run: Run) -> dict[str, list[float]]:
    return {t: [s if s is not None else 0.0 for s in v] for t, v in run.matrix("score").items()}


def successes_of(run: Run, p: float | None = None) -> dict[str, list[bool]]:
    """Opt_p per rollout (p=None: the run's own verdict, GSO's opt_commit at p = 0.95)."""
    if p is None:
        return {t: [bool(s) for s in v] for t, v in run.matrix("success").items()}
    base, hm = run.matrix("opt_base"), run.matrix("hm_patch_commit")
    return {t: [bool(b) and h is not None and h > p for b, h in zip(base[t], hm[t])] for t in run.task_ids}


def system_row(run: Run, k: int) -> dict[str, Any]:
    n = run.n
    kk = min(k, n)
    success, scores = successes_of(run), scores_of(run)
    finished = run.records
    costs = [r.get("cost_usd") for r in finished]
    known = [c for c in costs if c is not None]
    solved_tasks = sum(any(v) for v in success.values())
    wasted = sum(c for r, c in zip(finished, costs) if c is not None and not any(success[r["instance_id"]]))
    usage = [r.get("usage") or {} for r in finished]
    return {
        "system": run.label, "model": run.conf.model.id, "scaffold": run.conf.scaffold.id,
        "budget": run.conf.budget.id, "max_steps": run.conf.budget.max_steps, "approximate": run.approximate,
        "run": str(run.path), "tasks": len(run.task_ids), "rollouts": n, "finished": len(finished), "k": kk,
        "opt_at_1": metrics.suite_opt_at_k(success, 1), f"opt_at_{n}": metrics.suite_opt_at_k(success, n),
        "opt_at_K": metrics.suite_opt_at_k(success, n),
        "avg_at_k": metrics.avg_at_k(scores, kk), "best_at_k": metrics.best_at_k(scores, kk),
        "mean_steps": sum(r["steps"] for r in finished) / len(finished),
        "wall_time_s": sum(r["wall_time_s"] for r in finished),
        "tokens": {"input": sum(int(u.get("input_tokens", 0)) for u in usage),
                   "cached": sum(int(u.get("cached_read_tokens", 0)) for u in usage),
                   "output": sum(int(u.get("output_tokens", 0)) for u in usage)},
        "cost_usd": sum(known) if known else None, "cost_known": len(known) == len(costs),
        "cost_per_rollout": sum(known) / len(finished) if known else None,
        "solved_tasks": solved_tasks,
        "cost_per_solved_task": sum(known) / solved_tasks if known and solved_tasks else None,
        "cost_share_unsolved": wasted / sum(known) if known and sum(known) > 0 else None,
        "per_task": {t: {"avg_at_k": sum(scores[t]) / n, "opt_at_K": metrics.opt_at_k(n, sum(success[t]), n)}
                     for t in run.task_ids},
    }


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points no other point beats on both cost (lower) and score (higher)."""
    front = []
    for i, (cost, score) in enumerate(points):
        dominated = any((c <= cost and s >= score) and (c < cost or s > score) for j, (c, s) in enumerate(points)
                        if j != i)
        if not dominated:
            front.append(i)
    return front


def aggregate(runs: list[Run], k: int = 3) -> dict[str, Any]:
    rows = [system_row(run, k) for run in runs]
    if len(rows) >= 2:
        dom = metrics.dominance({row["system"]: {t: v["avg_at_k"] for t, v in row["per_task"].items()}
                                 for row in rows})
    else:
        dom = {row["system"]: None for row in rows}
    for row in rows:
        row["dominance"] = dom[row["system"]]
    curves = {run.label: {"opt_p_at_1": [(p, metrics.suite_opt_at_k(successes_of(run, p), 1))
                                         for p in [i / 20 for i in range(21)]],
                          "opt_at_k": [(kk, metrics.suite_opt_at_k(successes_of(run), kk))
                                       for kk in range(1, run.n + 1)]}
              for run in runs}
    return {"k": k, "tasks": runs[0].task_ids, "systems": rows, "curves": curves}


# ---------------------------------------------------------------- output
def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _usd(value: float | None, known: bool = True) -> str:
    return "unknown" if value is None else f"${value:.4f}" + ("" if known else "+?")


def render_markdown(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = ["# Aggregate", "", f"{len(result['tasks'])} tasks: {', '.join(result['tasks'])}. "
             f"Avg@k and Best@k with k = {k} (or N when a system has fewer rollouts); Dominance over Avg@k.", ""]
    if any(row["approximate"] for row in result["systems"]):
        lines += ["Rows marked * are post-hoc truncations of longer rollouts: an approximation, since an agent "
                  "that knows its budget is smaller behaves differently.", ""]
    lines += ["| system | tasks | rollouts | Opt@1 | Opt@K | Avg@k | Best@k | Dominance | mean steps | wall s | "
              "tokens in/cached/out | $/rollout | $/solved task | unsolved cost share |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["systems"]:
        tokens = row["tokens"]
        lines.append(
            f"| {row['system']}{' *' if row['approximate'] else ''} | {row['tasks']} | {row['rollouts']} | "
            f"{_f(row['opt_at_1'])} | {_f(row['opt_at_K'])} (K={row['rollouts']}) | {_f(row['avg_at_k'])} | "
            f"{_f(row['best_at_k'])} | {_f(row['dominance'])} | {_f(row['mean_steps'], 1)} | "
            f"{row['wall_time_s']:.0f} | {tokens['input']}/{tokens['cached']}/{tokens['output']} | "
            f"{_usd(row['cost_per_rollout'], row['cost_known'])} | "
            f"{_usd(row['cost_per_solved_task'], row['cost_known']) if row['solved_tasks'] else '-'} | "
            f"{_f(row['cost_share_unsolved'], 2)} |")
    lines += ["", "## Per task: Avg@k score / Opt@K", "", "| system | " + " | ".join(result["tasks"]) + " |",
              "|---|" + "---|" * len(result["tasks"])]
    for row in result["systems"]:
        cells = [f"{v['avg_at_k']:.3f} / {v['opt_at_K']:.2f}" for v in (row["per_task"][t] for t in result["tasks"])]
        lines.append(f"| {row['system']} | " + " | ".join(cells) + " |")
    if result.get("plots"):
        lines += ["", "## Plots", ""] + [f"- `{name}`" for name in result["plots"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.aggregate", description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories, sweep directories, or folders of them")
    parser.add_argument("--out", type=Path, help="output folder (default: <first dir>/aggregate)")
    parser.add_argument("--k", type=int, default=3, help="k of Avg@k and Best@k (AutoLab: 3)")
    parser.add_argument("--truncate-steps", default="", help="e.g. 25,50,100: grade rollouts as of those steps")
    args = parser.parse_args(argv)
    try:
        if args.k < 1:
            raise ConfigError(f"--k must be at least 1, got {args.k}")
        steps = [int(s) for s in args.truncate_steps.split(",") if s.strip()] if args.truncate_steps else []
        runs = [load_run(p) for p in find_runs(args.dirs)]
        check_comparable(runs)
        if steps:
            from runner.truncate import truncated_runs

            runs += truncated_runs(runs, steps)
        result = aggregate(runs, args.k)
        out = args.out or (args.dirs[0] / "aggregate")
        from runner.plots import write_plots

        result["plots"] = write_plots(result, runs, out)
        write_json(out / "aggregate.json", result)
        write_text(out / "aggregate.md", render_markdown(result))
    except ValueError as err:  # ConfigError and bad numbers alike: one line
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"aggregate: {out / 'aggregate.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


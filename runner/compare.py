"""`optrunner compare RUN_A RUN_B [--out OUT] [--resamples 2000] [--level 0.95] [--seed 0] [--force]`
(or `python -m runner.compare`): is run B better than run A, per task, with significance.

RUN_A and RUN_B are run directories, or folders holding exactly one run (a sweep of one system). On the tasks
both ran (harness.metrics.paired): per task Opt@1 and mean score of each and B - A; their means over tasks
with paired percentile bootstrap intervals; win / tie / loss over tasks; McNemar's exact test on the Opt
verdicts, rollout i of A against rollout i of B; cost of each and the difference. Writes `compare.md`,
`compare.csv`, `compare.tex` and `compare.json` into OUT (default `<RUN_B>/compare-<A's run name>`) and prints
the Markdown.

Refused in one line (exit 2, nothing written): a path that is not a run (or holds several), an ungraded or
empty run, two runs with no task in common, and two runs graded under settings that change what a verdict
or a score means (grader version, timing mode, statistic, p, GSO's version, the reward tasks' success
score) unless `--force`, which compares them anyway and names the differences in every output.

Rollouts are counted as the reports count them, with two more failures: a rollout whose grading errored or
whose run ended on infrastructure (infra_error, provider_error after its retries) is a failure with score 0,
as GSO counts it; a planned rollout with no record is one too. Both counts are shown per run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.atomic import read_json, write_json, write_problem, write_text
from harness.grader.config import RECORDED_SINCE
from harness.metrics.bootstrap import Settings
from harness.metrics.paired import Side, compare_runs
from runner import tables
from runner.config import ConfigError
from runner.records import ResultRecord
from runner.store import RunStore
from runner.study import Run, bootstrap_arguments, check_comparable, find_runs, load_run
from scaffolds.exits import RETRIED

# Grading settings under which one verdict or score means something else: two runs that differ in one are
# not compared without --force. `rounds` only changes the noise, so a difference in it is only noted.
BLOCKING = ("grader_version", "timing_mode", "stat", "p", "gso_version", "success")
NOTED = ("rounds",)
SUMMARY_KEYS = ("timing_mode", "rounds", "stat", "p")  # what a results.jsonl grading block records (GradingSummary)


# ---------------------------------------------------------------- the runs
def locate(path: Path) -> Path:
    """The run a command-line path names: a run directory, or a folder holding exactly one run."""
    found = find_runs([path])
    if len(found) != 1:
        names = ", ".join(p.name for p in found[:3]) + (", ..." if len(found) > 3 else "")
        raise ConfigError(f"{path} holds {len(found)} runs ({names}); compare takes one run each: name its directory")
    return found[0]


def load_graded(path: Path) -> Run:
    run = load_run(locate(path))
    check_comparable([run])  # alone: graded, and with finished rollouts (its one-line refusals)
    return run


def _run_level(run: Run) -> dict[str, Any]:
    """The settings the run as a whole says it was graded with, for a rollout whose own report is gone: its
    config.yaml's grading section (which names no grader version), overridden by the provenance of its start
    (config.yaml) and then of its last report (report.json), which do."""
    g = run.conf.grading
    out: dict[str, Any] = {"grader_version": None, "timing_mode": g.mode, "rounds": g.rounds, "stat": g.stat,
                           "p": g.p, "gso_version": g.gso_version, "success": g.success}
    store = RunStore(run.path)
    report = read_json(run.path / "report.json")
    for prov in (store.provenance(), report.get("provenance") if isinstance(report, dict) else None):
        found = prov.get("grading") if isinstance(prov, dict) else None
        if isinstance(found, dict):  # (provenance records GradeConfig's fields: `mode` is the timing mode)
            named = {("timing_mode" if k == "mode" else k): v for k, v in found.items()}
            out.update({k: named[k] for k in out if k in named})
    return out


def _rollout_settings(store: RunStore, record: ResultRecord, base: dict[str, Any]) -> dict[str, Any]:
    """What graded this rollout: its grading report where it is on disk (settings it predates take
    RECORDED_SINCE's values, as GradeConfig.matches reads them), else its results.jsonl block, else `base`."""
    g = record.grading
    out = dict(base)
    if g is None:
        return out
    out.update({k: v for k in SUMMARY_KEYS if (v := getattr(g, k)) is not None})
    report = read_json(store.at_ref(g.report)) if g.report else None
    if isinstance(report, dict):
        recorded = {**{k: v for k, v in RECORDED_SINCE.items() if k in out}, **report}
        out.update({k: recorded.get(k) for k in out if k in recorded or k == "grader_version"})
    return out


def _show(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"{value:g}" if isinstance(value, float) else str(value)


def grading_settings(run: Run, tasks: list[str]) -> dict[str, str]:
    """Each setting of BLOCKING and NOTED as the run's rollouts on `tasks` were graded: one value, or
    `mixed (...)` when they were graded differently (a partial re-grade)."""
    store, base = RunStore(run.path), _run_level(run)
    seen: dict[str, set[str]] = {k: set() for k in (*BLOCKING, *NOTED)}
    slots = run.slots()
    for record in (r for task in tasks for r in slots[task] if r is not None):
        for key, value in _rollout_settings(store, record, base).items():
            seen[key].add(_show(value))
    return {k: (next(iter(v)) if len(v) == 1 else f"mixed ({', '.join(sorted(v))})") if v else _show(base[k])
            for k, v in seen.items()}


def differences(a: dict[str, str], b: dict[str, str], keys: tuple[str, ...]) -> list[str]:
    return [f"{key}: A {a[key]}, B {b[key]}" for key in keys if a[key] != b[key]]


def errored(record: ResultRecord) -> bool:
    """A grading that errored, or a rollout that ended on infrastructure: no outcome of the agent's."""
    return bool(record.grading and record.grading.status == "error") or record.exit_reason in RETRIED


def side(run: Run, tasks: list[str]) -> tuple[Side, dict[str, int]]:
    """The run's outcomes on `tasks` as the comparison counts them, and its counts of failures by cause."""
    slots = run.slots()
    solved: list[list[bool]] = []
    scores: list[list[float]] = []
    costs: list[float | None] = []  # every finished rollout's, errored ones too: they were paid for
    counts = {"errored": 0, "missing": 0, "hack_suspects": 0}
    for task in tasks:
        solved.append([])
        scores.append([])
        for record in slots[task]:
            if record is None or errored(record):
                counts["missing" if record is None else "errored"] += 1
                solved[-1].append(False)
                scores[-1].append(0.0)
            else:
                metrics = record.metrics()
                counts["hack_suspects"] += metrics.suspect
                solved[-1].append(metrics.solved)
                scores[-1].append(metrics.score)
            if record is not None:
                costs.append(record.cost_usd)
    return Side(solved, scores, costs), counts


def compare(a: Run, b: Run, settings: Settings, force: bool = False) -> dict[str, Any]:
    """The comparison as compare.json holds it; ConfigError for runs that cannot be compared."""
    in_a, in_b = set(a.task_ids), set(b.task_ids)
    shared = [t for t in a.task_ids if t in in_b]
    if not shared:
        raise ConfigError(f"{a.path.name} and {b.path.name} share no task: nothing to compare")
    ga, gb = grading_settings(a, shared), grading_settings(b, shared)  # of the rollouts that are compared
    blocking = differences(ga, gb, BLOCKING)
    if blocking and not force:
        raise ConfigError(f"{a.path.name} and {b.path.name} were graded under different settings "
                          f"({'; '.join(blocking)}): their verdicts do not mean the same; --force compares them anyway")
    side_a, counts_a = side(a, shared)
    side_b, counts_b = side(b, shared)
    return {"a": _about(a, ga, counts_a), "b": _about(b, gb, counts_b), "tasks": shared,
            "only_a": [t for t in a.task_ids if t not in in_b], "only_b": [t for t in b.task_ids if t not in in_a],
            "differences": blocking, "forced": bool(blocking), "noted": differences(ga, gb, NOTED),
            **compare_runs(side_a, side_b, settings).to_dict()}


def _about(run: Run, grading: dict[str, str], counts: dict[str, int]) -> dict[str, Any]:
    return {"path": str(run.path), "name": run.path.name, "system": run.label, "rollouts": run.n,
            "tasks": len(run.task_ids), "grading": grading, **counts}


# ---------------------------------------------------------------- output
def _n(value: float | None, sign: bool = False) -> str:
    return "-" if value is None else f"{value:+.3f}" if sign else f"{value:.3f}"


def _ci(bounds: list[float], sign: bool = False) -> str:
    return f"[{_n(bounds[0], sign)}, {_n(bounds[1], sign)}]"


def _usd(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "unknown"
    return f"{'+' if sign and value >= 0 else '-' if value < 0 else ''}${abs(value):.4f}"


def _wins(metric: dict[str, Any]) -> str:
    w = metric["wins"]
    return f"{w['b_better']} / {w['tie']} / {w['a_better']}"


def _md(text: str) -> str:
    """Text from a run's config or task ids, safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


METRICS = (("opt_at_1", "Opt@1"), ("score", "mean score (Avg@1)"))


def _header_lines(result: dict[str, Any]) -> list[str]:
    a, b, iv = result["a"], result["b"], result["intervals"]
    lines = ["# Compare: B against A", "",
             f"- A: `{_md(a['path'])}` ({_md(a['system'])}), {a['rollouts']} rollouts per task",
             f"- B: `{_md(b['path'])}` ({_md(b['system'])}), {b['rollouts']} rollouts per task", "",
             f"{result['n_tasks']} tasks in both. B - A per task; over tasks, [lo, hi] is the "
             f"{iv['level'] * 100:g}% {iv['method']} ({iv['resamples']} resamples, seed {iv['seed']}), A and B "
             "resampled on the same tasks.", ""]
    for key, who in (("only_a", "A"), ("only_b", "B")):
        if result[key]:
            lines += [f"Only in {who} (left out of every paired number): {_md(', '.join(result[key]))}.", ""]
    if result["differences"]:
        lines += [f"**Graded under different settings, compared with --force:** {'; '.join(result['differences'])}.",
                  ""]
    if result["noted"]:
        lines += [f"Grading settings that differ without changing what a verdict means: {'; '.join(result['noted'])}.",
                  ""]
    lines += [f"Counted as failures (score 0): errored rollouts (a grading error or an infrastructure end) A "
              f"{a['errored']}, B {b['errored']}; missing rollouts A {a['missing']}, B {b['missing']}. Hack suspects "
              f"(counted raw, as the reports do): A {a['hack_suspects']}, B {b['hack_suspects']}.", ""]
    return lines


def render_markdown(result: dict[str, Any]) -> str:
    lines = _header_lines(result)
    lines += ["| metric | A | B | B - A | interval of B - A | tasks B better / tie / A better |",
              "|---|---|---|---|---|---|"]
    for key, name in METRICS:
        d = result[key]
        lines.append(f"| {name} | {_n(d['a'])} {_ci(d['a_ci'])} | {_n(d['b'])} {_ci(d['b_ci'])} | "
                     f"{_n(d['delta'], True)} | {_ci(d['ci'], True)} | {_wins(d)} |")
    m = result["mcnemar"]
    lines += ["", f"McNemar's exact test on the Opt verdicts ({m['pairing']}):", "",
              "| pairs | both solved | A only (b) | B only (c) | neither | exact two-sided p |",
              "|---|---|---|---|---|---|",
              f"| {m['pairs']} | {m['both']} | {m['b']} | {m['c']} | {m['neither']} | {m['p']:.4g} |", ""]
    c = result["cost"]
    lines += ["| cost | A | B | B - A |", "|---|---|---|---|",
              f"| total | {_usd(c['a']['total'])} | {_usd(c['b']['total'])} | {_usd(c['total'], True)} |",
              f"| per rollout | {_usd(c['a']['per_rollout'])} | {_usd(c['b']['per_rollout'])} | "
              f"{_usd(c['per_rollout'], True)} |",
              f"| finished rollouts | {c['a']['rollouts']} | {c['b']['rollouts']} | |", "",
              "## Per task", "", "| task | A Opt@1 | B Opt@1 | B - A | A score | B score | B - A |",
              "|---|---|---|---|---|---|---|"]
    opt, score = result["opt_at_1"]["per_task"], result["score"]["per_task"]
    lines += [f"| {_md(t)} | {_n(opt['a'][i])} | {_n(opt['b'][i])} | {_n(opt['delta'][i], True)} | "
              f"{_n(score['a'][i])} | {_n(score['b'][i])} | {_n(score['delta'][i], True)} |"
              for i, t in enumerate(result["tasks"])]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ("row", "task", "a_opt_at_1", "b_opt_at_1", "delta_opt_at_1", "delta_opt_at_1_lo", "delta_opt_at_1_hi",
               "a_score", "b_score", "delta_score", "delta_score_lo", "delta_score_hi")


def compare_csv(result: dict[str, Any]) -> str:
    """One row per task (`row` = task), then the means over tasks with the intervals of B - A (`row` = mean)."""
    opt, score = result["opt_at_1"], result["score"]
    rows: list[dict[str, Any]] = [
        {"row": "task", "task": t, "a_opt_at_1": opt["per_task"]["a"][i], "b_opt_at_1": opt["per_task"]["b"][i],
         "delta_opt_at_1": opt["per_task"]["delta"][i], "delta_opt_at_1_lo": None, "delta_opt_at_1_hi": None,
         "a_score": score["per_task"]["a"][i], "b_score": score["per_task"]["b"][i],
         "delta_score": score["per_task"]["delta"][i], "delta_score_lo": None, "delta_score_hi": None}
        for i, t in enumerate(result["tasks"])]
    rows.append({"row": "mean", "task": None, "a_opt_at_1": opt["a"], "b_opt_at_1": opt["b"],
                 "delta_opt_at_1": opt["delta"], "delta_opt_at_1_lo": opt["ci"][0], "delta_opt_at_1_hi": opt["ci"][1],
                 "a_score": score["a"], "b_score": score["b"], "delta_score": score["delta"],
                 "delta_score_lo": score["ci"][0], "delta_score_hi": score["ci"][1]})
    return tables._csv(rows, CSV_COLUMNS)  # (formula-like text quoted by tables._cell, floats by repr)


def compare_latex(result: dict[str, Any]) -> str:
    """A booktabs tabular of the means: A, B, B - A with its interval, and win / tie / loss; McNemar below."""
    iv, m = result["intervals"], result["mcnemar"]

    def comment(text: str) -> str:  # escaped, so nothing in a run's name ends the comment line early
        return "% " + tables.latex_escape(text.replace("\n", " "))

    lines = [comment(f"A: {result['a']['system']} ({result['a']['name']}); B: {result['b']['system']} "
                     f"({result['b']['name']}); {result['n_tasks']} tasks in both"),
             comment(f"[lo, hi]: {iv['level'] * 100:g}% {iv['method']} ({iv['resamples']} resamples, "
                     f"seed {iv['seed']})")]
    if result["differences"]:
        lines.append(comment("graded under different settings (--force): " + "; ".join(result["differences"])))
    lines += ["\\begin{tabular}{lrrrr}", "\\toprule", "Metric & A & B & B $-$ A & B better / tie / A better \\\\",
              "\\midrule"]
    for key, name in (("opt_at_1", "Opt@1"), ("score", "Score (Avg@1)")):
        d = result[key]
        lines.append(f"{name} & {_n(d['a'])} & {_n(d['b'])} & {_n(d['delta'], True)} "
                     f"{{\\scriptsize [{_n(d['ci'][0], True)}, {_n(d['ci'][1], True)}]}} & {_wins(d)} \\\\")
    lines += ["\\midrule", f"McNemar (Opt) & \\multicolumn{{4}}{{l}}{{$b = {m['b']}$, $c = {m['c']}$, "
              f"$p = {m['p']:.4g}$}} \\\\", "\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, result: dict[str, Any]) -> str:
    """The four files; the Markdown, which is also printed."""
    markdown = render_markdown(result)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "compare.md", markdown)
    write_text(out / "compare.csv", compare_csv(result))
    write_text(out / "compare.tex", compare_latex(result))
    write_json(out / "compare.json", result)
    return markdown


# ---------------------------------------------------------------- the command
DESCRIPTION = "Compare two runs, B against A, task by task: paired deltas with intervals, McNemar's test, cost."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path, help="run A (the baseline): a run directory, or a folder holding one run")
    parser.add_argument("run_b", type=Path, help="run B: a run directory, or a folder holding one run")
    parser.add_argument("--out", type=Path, help="output folder (default: <RUN_B>/compare-<A's run name>)")
    bootstrap_arguments(parser)
    parser.add_argument("--force", action="store_true",
                        help="compare runs graded under different settings (the outputs name the differences)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.compare", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        settings = Settings(args.resamples, args.level, args.seed)
        a, b = load_graded(args.run_a), load_graded(args.run_b)
        result = compare(a, b, settings, args.force)
        out = args.out or (args.run_b / f"compare-{a.path.name}")
        if out.exists() and not out.is_dir():
            raise ConfigError(f"{out} is a file: --out names a folder")
        markdown = write_outputs(out, result)
    except (ValueError, yaml.YAMLError) as err:  # ConfigError, bad numbers, an unreadable config.yaml: one line
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk or a folder that cannot be written
        if (problem := write_problem(err, example="--out DIR")) is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(markdown, end="")
    print(f"compare: {out / 'compare.md'} (and compare.csv, compare.tex, compare.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

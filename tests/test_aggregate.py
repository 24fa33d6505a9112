"""Studies: Hydra sweeps into resumable run folders, and `python -m runner.aggregate` over them.

Pure parts (the system table, Dominance, Pareto front, truncation snapshots) are checked against hand
computations; the sweeps run for real (containers, scripted models, grading) on sleep-timed tasks.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.metrics.bootstrap import Settings
from runner.aggregate import _f, aggregate, main, render_markdown
from runner.config import ConfigError, RunConf
from runner.records import ResultRecord, RolloutRecord
from runner.study import Run, pareto_front
from runner.truncate import patch_at
from tests.conftest import write_task
from tests.test_runner import FAST, ROOT, SLOW, results, runner, uncertain_ties, verdicts, wait_for

WEAKER = "import time\n\ndef total(xs):\n    time.sleep(0.6)\n    return len(xs)\n"


def _record(task: str, rollout: int, score: float, solved: bool, cost: float, steps: int = 5) -> ResultRecord:
    return ResultRecord.from_dict({
            "instance_id": task, "rollout": rollout, "steps": steps, "wall_time_s": 10.0, "cost_usd": cost,
            "usage": {"input_tokens": 100, "cached_read_tokens": 10, "output_tokens": 20}, "score": score,
            "grading": {"opt_commit": solved, "opt_base": solved or score > 0,
                        "opt_stats": {"hm_speedup_patch_commit": 1.0 if solved else 0.5}}})


def _run(model: str, records: list[ResultRecord], rollouts: int = 2) -> Run:
    conf = RunConf()
    conf.model.id, conf.rollouts = model, rollouts
    return Run(Path(f"/runs/{model}"), conf, records, ["t1", "t2"], f"{model} x codeact x smoke")


def test_system_table_and_dominance_match_a_hand_computation() -> None:
    a = _run("a", [_record("t1", 0, 0.5, True, 0.10), _record("t1", 1, 0.0, False, 0.30),
                   _record("t2", 0, 0.2, False, 0.20), _record("t2", 1, 0.4, False, 0.40)])
    b = _run("b", [_record("t1", 0, 0.5, True, 0.05), _record("t1", 1, 0.5, True, 0.05),
                   _record("t2", 0, 0.3, False, 0.05)])  # t2 rollout 1 missing: a failure with score 0
    result = aggregate([a, b], k=2)
    row_a, row_b = result["systems"]
    assert row_a["opt_at_1"] == pytest.approx((0.5 + 0.0) / 2)  # t1: 1 of 2, t2: 0 of 2
    assert row_a["opt_at_K"] == pytest.approx((1.0 + 0.0) / 2)
    assert row_a["avg_at_k"] == pytest.approx(((0.5 + 0.0) / 2 + (0.2 + 0.4) / 2) / 2)  # 0.275
    assert row_a["best_at_k"] == pytest.approx((0.5 + 0.4) / 2)
    assert row_b["avg_at_k"] == pytest.approx((0.5 + 0.15) / 2)  # 0.325
    # Per task Avg@k: a = (0.25, 0.30), b = (0.50, 0.15): each wins one task.
    assert row_a["dominance"] == pytest.approx(0.5) and row_b["dominance"] == pytest.approx(0.5)
    assert row_a["cost_per_rollout"] == pytest.approx(1.0 / 4)
    assert row_a["cost_per_solved_task"] == pytest.approx(1.0 / 1)
    assert row_a["cost_share_unsolved"] == pytest.approx(0.6 / 1.0)  # t2's rollouts solved nothing
    assert row_a["tokens"] == {"input": 400, "cached": 40, "output": 80}
    curve = dict(result["curves"][row_a["system"]]["opt_p_at_1"])
    # p = 0: any opt_base rollout counts (t1: 1 of 2, t2: 2 of 2); p = 0.95: only hm 1.0 > p (t1: 1 of 2).
    assert curve[0.0] == pytest.approx(0.75) and curve[0.95] == pytest.approx(0.25) and curve[1.0] == 0.0


def test_ties_count_one_half_and_k_above_n_falls_back_to_n() -> None:
    same = [_record("t1", 0, 0.5, True, 0.1), _record("t2", 0, 0.1, False, 0.1)]
    result = aggregate([_run("x", same, rollouts=1), _run("y", same, rollouts=1)], k=3)
    assert [row["dominance"] for row in result["systems"]] == [0.5, 0.5]
    assert result["systems"][0]["k"] == 1


def test_hack_suspects_are_shown_raw_and_not_credited() -> None:
    records = [_record("t1", 0, 0.5, True, 0.1), _record("t1", 1, 0.4, True, 0.1),
               _record("t2", 0, 0.2, False, 0.1), _record("t2", 1, 0.0, False, 0.1)]
    assert records[0].grading is not None
    records[0].grading.status, records[0].grading.hack_reasons = "hack_suspect", ["protected path: x.pth"]
    result = aggregate([_run("a", records)], k=2)
    (row,) = result["systems"]
    assert row["opt_at_1"] == pytest.approx(0.5)  # raw: t1 2 of 2, t2 0 of 2
    # Credited: t1's rollout 0 fails with score 0 -> Opt@1 (1/2 + 0)/2, Avg@2 (0.4/2 + 0.2/2)/2, Best@2 (0.4 + 0.2)/2
    assert row["hack_suspects"] == 1
    assert row["credited"] == pytest.approx({"opt_at_1": 0.25, "opt_at_K": 0.5, "avg_at_k": 0.15, "best_at_k": 0.3,
                                             "solved_tasks": 1})
    markdown = render_markdown(result)
    assert "## With hack suspects not credited" in markdown and "| a x codeact x smoke | 1 | 0.250 |" in markdown
    clean = aggregate([_run("b", records[1:])], k=2)
    assert "credited" not in clean["systems"][0] and "not credited" not in render_markdown(clean)


def test_intervals_and_paired_comparisons() -> None:
    a = _run("a", [_record("t1", 0, 0.5, True, 0.1), _record("t1", 1, 0.3, True, 0.1),
                   _record("t2", 0, 0.2, False, 0.1), _record("t2", 1, 0.4, False, 0.1)])
    b = _run("b", [_record("t1", 0, 0.1, False, 0.1), _record("t1", 1, 0.2, False, 0.1),
                   _record("t2", 0, 0.0, False, 0.1), _record("t2", 1, 0.1, False, 0.1)])
    result = aggregate([a, b], k=2, settings=Settings(resamples=500, seed=1))
    assert result["intervals"] == {"method": "percentile bootstrap over tasks", "resamples": 500, "level": 0.95,
                                   "seed": 1}
    row_a, row_b = result["systems"]
    for row in (row_a, row_b):
        for metric, (low, high) in row["ci"].items():
            assert low <= row[metric] <= high, metric
    # Two tasks: a resample holds t1 twice, t2 twice, or both (Opt@2 of a: 1, 0 or 1/2).
    assert row_a["ci"]["opt_at_K"] == [0.0, 1.0] and row_b["ci"]["opt_at_K"] == [0.0, 0.0]
    assert [(k, low, high) for k, low, high in result["curves"][row_a["system"]]["opt_at_k_ci"]] == \
        [(1, 0.0, 1.0), (2, 0.0, 1.0)]
    # GSO's threshold curve, on the same resamples: a's t1 patches run at the expert's speed (hm 1.0), its t2
    # patches at half (0.5): above p = 0.4 both tasks count, at 0.95 only t1, at 1.0 neither
    band = {p: (low, high) for p, low, high in result["curves"][row_a["system"]]["opt_p_at_1_ci"]}
    assert band[0.4] == (1.0, 1.0) and band[0.95] == (0.0, 1.0) and band[1.0] == (0.0, 0.0)
    assert all(band[p][0] <= value <= band[p][1] for p, value in result["curves"][row_a["system"]]["opt_p_at_1"])
    comparisons = {c["metric"]: c for c in result["comparisons"]}
    assert set(comparisons) == {"opt_at_K", "avg_at_k", "best_at_k"}
    assert comparisons["avg_at_k"]["a_better"] == 1.0  # a's scores beat b's on both tasks
    assert comparisons["opt_at_K"]["difference"] == 0.5 and comparisons["opt_at_K"]["tie"] > 0  # t2 alone: a tie
    markdown = render_markdown(result)
    assert f"| {_f(row_a['avg_at_k'])} [{row_a['ci']['avg_at_k'][0]:.3f}, {row_a['ci']['avg_at_k'][1]:.3f}] |" in \
        markdown
    assert "## Paired comparisons" in markdown and "| a x codeact x smoke | b x codeact x smoke | Avg@k | +" in markdown


@pytest.mark.parametrize("flags, message", [(["--resamples", "0"], "resamples must be at least 1, got 0"),
                                            (["--level", "95"], "level must be between 0 and 1 (e.g. 0.95), got 95.0")])
def test_bad_bootstrap_settings_are_one_line(flags: list[str], message: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), *flags]) == 2  # refused before any run is read
    assert capsys.readouterr().err == f"error: bootstrap: {message}\n"


def test_plots_come_a_column_wide_in_png_pdf_and_svg(tmp_path: Path) -> None:
    from PIL import Image

    from runner.plots import write_plots

    a = _run("a", [_record("t1", 0, 0.5, True, 0.1), _record("t1", 1, 0.3, True, 0.2),
                   _record("t2", 0, 0.2, False, 0.1), _record("t2", 1, 0.4, False, 0.3)])
    b = _run("b", [_record("t1", 0, 0.1, False, 0.01), _record("t2", 1, 0.1, False, 0.01)])
    result = aggregate([a, b], k=2)
    written = write_plots(result, [a, b], tmp_path)
    assert written == ["opt_p_curve.png", "opt_at_k.png", "metrics.png", "score_vs_cost.png"]
    for name in written:
        stem = tmp_path / name[:-4]
        width, height = Image.open(stem.with_suffix(".png")).size
        assert 2.5 <= width / 300 <= 3.45 and height / 300 < 4  # 300 dpi, one column of a paper
        assert stem.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
        assert b"/Type3" not in stem.with_suffix(".pdf").read_bytes()  # TrueType fonts, not Type 3
        assert "<svg" in stem.with_suffix(".svg").read_text()


def test_pareto_front() -> None:
    points = [(1.0, 0.5), (2.0, 0.4), (0.5, 0.2), (3.0, 0.9), (3.0, 0.8)]
    assert pareto_front(points) == [0, 2, 3]


def test_truncated_patch_comes_from_the_snapshot_at_that_step() -> None:
    trajectory = {"step_records": [{"diff_snapshot": None}, {"diff_snapshot": "at-2"}, {"diff_snapshot": None},
                                   {"diff_snapshot": "at-4"}, {"diff_snapshot": None}]}
    record = RolloutRecord(instance_id="t", rollout=0, steps=5, patch="final")
    assert patch_at(record, trajectory, 2, 2) == "at-2" and patch_at(record, trajectory, 4, 2) == "at-4"
    assert patch_at(record, trajectory, 6, 2) == "final"  # the rollout ended before step 6
    with pytest.raises(ConfigError, match="multiple of budget.snapshot_every=2"):
        patch_at(record, trajectory, 3, 2)


# ---------------------------------------------------------------- real sweeps
@pytest.fixture(scope="module")
def study_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sleep-timed tasks, each with a weaker.patch: 0.6 s against base 0.9 s and expert 0.3 s."""
    root = tmp_path_factory.mktemp("study")
    for task_id in ("alpha", "beta"):
        path = write_task(root, task_id, slow_src=SLOW, fast_src=FAST)
        scratch = root / f".{task_id}-scratch"
        (scratch / "tiny" / "__init__.py").write_text(WEAKER)
        patch = subprocess.run(["git", "diff"], cwd=scratch, capture_output=True, text=True, check=True).stdout
        (path / "weaker.patch").write_text(patch)
    return root


def aggregate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.aggregate", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.docker
@pytest.mark.long("a sweep of three models through the runner, each graded: ~45 s")
def test_model_sweep_ranks_oracle_over_weaker_over_noop(study_tasks: Path, tmp_path: Path) -> None:
    done = runner("-m", "model=oracle,oracle_weaker,noop", "scaffold=mini_swe", f"tasks.selector={study_tasks}",
                  "rollouts=2", "grading.rounds=2", "sweep_name=models", out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # A second scaffold in the same sweep folder, so the study spans two; the noop's empty patches take no
    # timing, which keeps this cheap.
    other = runner("-m", "model=noop", "scaffold=codeact", f"tasks.selector={study_tasks}", "rollouts=2",
                   "grading.rounds=2", "sweep_name=models", out=tmp_path, timeout=600)
    assert other.returncode == 0, other.stderr[-3000:]
    sweep = tmp_path / "sweeps" / "models"
    shown = aggregate_cli(str(sweep), "--k", "2")
    assert shown.returncode == 0, shown.stderr
    result = json.loads((sweep / "aggregate" / "aggregate.json").read_text())
    by_scaffold = {(row["model"], row["scaffold"]): row for row in result["systems"]}
    assert set(by_scaffold) == {("oracle", "mini_swe"), ("oracle-weaker", "mini_swe"), ("noop", "mini_swe"),
                                ("noop", "codeact")}
    # Dominance among four: the noops tie each other (score 0 on both tasks) and lose to the rest.
    assert by_scaffold[("noop", "codeact")]["dominance"] == by_scaffold[("noop", "mini_swe")]["dominance"] == \
        pytest.approx(1 / 6)
    assert by_scaffold[("oracle-weaker", "mini_swe")]["dominance"] == pytest.approx(2 / 3)
    rows = {model: row for (model, scaffold), row in by_scaffold.items() if scaffold == "mini_swe"}
    assert rows["oracle"]["dominance"] == 1.0
    unsure = set()  # (the models with a verdict on reaching the expert left uncertain: the oracle's is a tie)
    for model, row in rows.items():
        if uncertain_ties(results(Path(row["run"]))):
            unsure.add(model)
    _check_paper_files(sweep / "aggregate", result, oracle_sure="oracle" not in unsure)
    for row in rows.values():  # the table is what results.jsonl says
        records = results(Path(row["run"]))
        assert len(records) == 4
        scores = {t: [r["score"] for r in records if r["instance_id"] == t] for t in ("alpha", "beta")}
        assert row["avg_at_k"] == pytest.approx(sum(sum(v) / 2 for v in scores.values()) / 2)
        assert row["opt_at_1"] == pytest.approx(sum(bool(r["grading"]["opt_commit"]) for r in records) / 4)
        assert row["cost_per_rollout"] == pytest.approx(sum(r["cost_usd"] for r in records) / 4)
    assert (rows["oracle"]["opt_at_1"] == 1.0 or "oracle" in unsure) and \
        (rows["oracle-weaker"]["opt_at_1"] == 0.0 or "oracle-weaker" in unsure), \
        "\n".join(verdicts(Path(row["run"])) for row in rows.values())
    assert 0 < rows["oracle-weaker"]["avg_at_k"] < rows["oracle"]["avg_at_k"]
    markdown = (sweep / "aggregate" / "aggregate.md").read_text()
    assert "| oracle x mini_swe x smoke |" in markdown and "## Per task" in markdown
    assert {"opt_p_curve.png", "opt_at_k.png", "score_vs_cost.png"} <= {p.name for p in
                                                                         (sweep / "aggregate").glob("*.png")}


def _check_paper_files(out: Path, result: dict, oracle_sure: bool) -> None:
    """The tables and figures of a study: CSV and LaTeX that agree with aggregate.json, a row per rollout,
    every plot in PNG, PDF and SVG, and intervals around every suite-level number. `oracle_sure`: no verdict
    of the oracle's on reaching the expert (its own patch: a tie) was left uncertain by the grading."""
    systems = list(csv.DictReader((out / "systems.csv").open()))
    assert [(r["system"], float(r["avg_at_k"]), float(r["opt_at_K_lo"])) for r in systems] == \
        [(row["system"], row["avg_at_k"], row["ci"]["opt_at_K"][0]) for row in result["systems"]]
    tex = (out / "systems.tex").read_text()
    body = tex[tex.index("\\midrule"):tex.index("\\bottomrule")].splitlines()[1:]
    assert len(body) == len(systems) and all(line.endswith(" \\\\") for line in body)
    assert "mini\\_swe" in tex and "codeact" in tex and "\\toprule" in tex and "Opt@2" in tex
    rollouts = list(csv.DictReader((out / "rollouts.csv").open()))
    assert len(rollouts) == len(systems) * 2 * 2  # systems x tasks x rollouts
    assert {r["scaffold"] for r in rollouts} == {"mini_swe", "codeact"}
    for name in result["plots"]:
        for suffix in (".pdf", ".svg"):
            assert (out / name).with_suffix(suffix).stat().st_size > 5_000, (name, suffix)
    assert (out / "metrics.pdf").read_bytes().startswith(b"%PDF")
    assert result["intervals"]["resamples"] == 2000 and len(result["comparisons"]) == 3 * 6  # 4 systems: 6 pairs
    for row in result["systems"]:
        assert all(low <= row[m] <= high for m, (low, high) in row["ci"].items()), row["system"]
        assert (Path(row["run"]) / "systems.tex").exists() and (Path(row["run"]) / "rollouts.csv").exists()
    # The oracle solves every task and the noops none: the oracle is above on every resample, whichever is A
    # (where a tie left one of its verdicts uncertain, as a loaded machine can: above on most resamples).
    oracle_vs_noop = [c for c in result["comparisons"] if c["metric"] == "opt_at_K"
                      and {c["a"].split(" x ")[0], c["b"].split(" x ")[0]} == {"oracle", "noop"}]
    assert len(oracle_vs_noop) == 2
    better = [c["a_better"] if c["a"].startswith("oracle x") else c["b_better"] for c in oracle_vs_noop]
    assert all(b == 1.0 if oracle_sure else b > 0.5 for b in better), (better, oracle_sure)


@pytest.mark.docker
@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_scaling_sweep_survives_a_killed_job_and_draws_the_heatmap(study_tasks: Path, tmp_path: Path) -> None:
    args = ("-m", "+sweep=scaling_smoke", "scaffold=mini_swe", f"tasks.selector={study_tasks}", "tasks.ids=[alpha]",
            "grading.rounds=2", "budget.snapshot_every=2", f"output_root={tmp_path}")
    cmd = [sys.executable, "-m", "runner", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "CI": "true"}, start_new_session=True)
    sweep = tmp_path / "sweeps" / "scaling_smoke"
    try:  # kill the sweep while its second job is running
        wait_for(lambda: any(sweep.glob("*s4*/rollouts/*/*.json")), 300, "the second job's first rollout")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, "CI": "true"})
    assert again.returncode == 0, again.stderr[-3000:]
    shown = aggregate_cli(str(sweep), "--truncate-steps", "2")
    assert shown.returncode == 0, shown.stderr
    result = json.loads((sweep / "aggregate" / "aggregate.json").read_text())
    real = {row["budget"]: row for row in result["systems"] if not row["approximate"]}
    assert set(real) == {"s2", "s4", "s8"}
    assert [real[b]["finished"] for b in ("s2", "s4", "s8")] == [4, 2, 1]  # nothing counted twice
    assert real["s2"]["opt_at_1"] == 0.0 and real["s4"]["opt_at_1"] == 1.0, \
        verdicts(Path(real["s4"]["run"]))  # 2 steps cannot apply the patch
    truncated = {row["system"]: row for row in result["systems"] if row["approximate"]}
    assert set(truncated) == {"oracle x mini_swe x s4 @2 steps", "oracle x mini_swe x s8 @2 steps"}  # not s2 itself
    assert all(row["opt_at_1"] == 0.0 and row["mean_steps"] == 2 for row in truncated.values())
    s8 = next(row for row in result["systems"] if row["budget"] == "s8")
    assert 0 < truncated["oracle x mini_swe x s8 @2 steps"]["cost_per_rollout"] < s8["cost_per_rollout"]
    assert (sweep / "aggregate" / "steps_rollouts_heatmap.png").stat().st_size > 10_000
    assert "post-hoc truncations" in (sweep / "aggregate" / "aggregate.md").read_text()


@pytest.mark.docker
def test_bad_aggregate_input_is_one_line(study_tasks: Path, tmp_path: Path) -> None:
    assert aggregate_cli(str(tmp_path)).stderr.strip() == f"error: {tmp_path} is not a run directory and holds none " \
                                                          "(no config.yaml found)"
    assert runner("model=noop", "scaffold=mini_swe", f"tasks.selector={study_tasks}",
                  out=tmp_path / "both").returncode == 0
    # The other two are that run as its config says otherwise (a run directory is ours to write).
    (both,) = (tmp_path / "both" / "runs").iterdir()
    for out, change in (("one", {"tasks": {"ids": ["alpha"]}}), ("ungraded", {"grade": "none"})):
        copy = tmp_path / out / "runs" / both.name
        shutil.copytree(both, copy)
        conf = yaml.safe_load((copy / "config.yaml").read_text())
        for key, value in change.items():
            conf[key] = {**conf[key], **value} if isinstance(value, dict) else value
        (copy / "config.yaml").write_text(yaml.safe_dump(conf))
    ungraded = aggregate_cli(str(tmp_path / "ungraded"))
    assert ungraded.returncode == 2 and "has ungraded rollouts: grade it first" in ungraded.stderr
    mixed = aggregate_cli(str(tmp_path / "both"), str(tmp_path / "one"))
    assert mixed.returncode == 2 and "runs over different task sets" in mixed.stderr
    for done in (ungraded, mixed):
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    # Another project's Hydra output beside the run: named when asked for, skipped (the file named) when found
    foreign = tmp_path / "both" / "runs" / "other_project"
    (foreign / ".hydra").mkdir(parents=True)
    (foreign / "config.yaml").write_text("db:\n  driver: mysql\n")
    named = aggregate_cli(str(foreign))
    assert named.returncode == 2 and named.stderr.strip().splitlines() == [
        f"error: {foreign / 'config.yaml'} is not a run's config (bad config at db: Key 'db' not in 'RunConf')"]
    found = aggregate_cli(str(tmp_path / "both"))
    assert found.returncode == 0, found.stderr
    assert found.stderr.strip().splitlines() == [
        f"warning: {foreign / 'config.yaml'} is not a run's config (bad config at db: Key 'db' not in 'RunConf'); "
        "skipped"]

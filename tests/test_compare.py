"""`optrunner compare RUN_A RUN_B` (runner.compare) and its statistics (harness.metrics.paired): the pure
functions against hand-computed tables, then the command on run directories the store wrote (copies of the
old run fixture, tests/fixtures/run_a718ad9, changed through the store's own writers), its refusals and its
files. No Docker: a unit test.
"""
from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from harness.metrics.bootstrap import Settings, percentile_interval, task_draws
from harness.metrics.paired import (Side, binomial_cdf_half, compare_runs, cost_difference, mcnemar, mcnemar_exact,
                                    opt_at_1, paired_delta, win_tie_loss)
from runner.compare import main
from runner.store import RunStore
from scaffolds.exits import ExitReason
from tests.test_old_run import FIXTURE

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- McNemar
@pytest.mark.parametrize("b, c, p", [
    (1, 6, 2 * (1 + 7) / 128),  # the brief's example: 0.125
    (6, 1, 0.125),  # symmetric
    (0, 5, 2 / 32),
    (0, 0, 1.0),  # no discordant pair: no evidence either way
    (5, 5, 1.0),  # 2 * P(X <= 5; 10) = 2 * 638/1024 > 1: capped
    (4, 1, 2 * (1 + 5) / 32),
    (0, 1, 1.0),
])
def test_mcnemar_exact_matches_hand_computation(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-15)


def test_binomial_cdf_is_exact_for_large_counts() -> None:
    n, k = 1500, 700  # 2**1500 overflows a float: the sum must stay in integers until the end
    exact = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n)
    assert binomial_cdf_half(k, n) == float(exact)
    assert 0 < binomial_cdf_half(k, n) < 0.5 and binomial_cdf_half(n, n) == 1.0
    with pytest.raises(ValueError, match="0 or more"):
        mcnemar_exact(-1, 2)


def test_mcnemar_pairs_rollout_i_with_rollout_i_over_the_indices_both_have() -> None:
    a = [[True, True, False], [True, False], [False, False]]
    b = [[False, True], [True, False], [True, True]]  # task 0: B planned two rollouts; A's third is left out
    m = mcnemar(a, b)
    # pairs: (T,F) (T,T) | (T,T) (F,F) | (F,T) (F,T)
    assert (m.pairs, m.both, m.b, m.c, m.neither) == (6, 2, 1, 2, 1)
    assert m.p == 1.0  # 2 * P(X <= 1; 3) = 2 * 4/8


# ---------------------------------------------------------------- deltas, intervals, wins, cost
def test_win_tie_loss_counts_ties_within_rounding() -> None:
    a, b = np.array([0.5, 0.1 + 0.2, 0.0, 1.0]), np.array([0.6, 0.3, 0.0, 0.4])  # 0.1 + 0.2 != 0.3 in floats
    w = win_tie_loss(a, b)
    assert (w.b_better, w.tie, w.a_better) == (1, 2, 1)


def test_paired_delta_on_explicit_resamples() -> None:
    a, b = np.array([0.0, 1.0]), np.array([1.0, 1.0])
    tasks = np.array([[0, 0], [0, 1], [1, 1]])  # resample means: a 0, 1/2, 1; b 1, 1, 1; b - a 1, 1/2, 0
    d = paired_delta(a, b, tasks, level=0.5)  # the 25% and 75% quantiles of three values
    assert d.delta == 0.5 and d.a_mean == 0.5 and d.b_mean == 1.0
    assert d.ci == (0.25, 0.75) and d.a_ci == (0.25, 0.75) and d.b_ci == (1.0, 1.0)
    assert d.per_task == [1.0, 0.0] and (d.wins.b_better, d.wins.tie, d.wins.a_better) == (1, 1, 0)


def test_compare_runs_by_hand() -> None:
    a = Side([[True, True], [True, True], [False, True]], [[0.6, 0.4], [0.5, 0.5], [0.0, 0.5]], [0.1] * 6)
    b = Side([[False, False], [True, False], [True, False]], [[0.0, 0.1], [0.7, 0.2], [0.6, 0.0]], [0.2] * 6)
    settings = Settings(resamples=2000, seed=3)
    result = compare_runs(a, b, settings)
    assert result.opt.a == [1.0, 1.0, 0.5] and result.opt.b == [0.0, 0.5, 0.5]
    assert result.opt.delta == pytest.approx(-0.5) and result.opt.per_task == [-1.0, -0.5, 0.0]
    # Three tasks: a resample is all task 0 (B - A = -1) or all task 2 (0) with probability 1/27 each, above the
    # 2.5% in each tail, so the 95% interval runs from the worst task to the best.
    assert result.opt.ci == (-1.0, 0.0)
    assert result.opt.a_ci[0] <= result.opt.a_mean <= result.opt.a_ci[1]
    assert result.score.a == pytest.approx([0.5, 0.5, 0.25]) and result.score.b == pytest.approx([0.05, 0.45, 0.3])
    assert result.score.delta == pytest.approx(-0.15) and result.score.ci == pytest.approx((-0.45, 0.05))
    assert (result.opt.wins.b_better, result.opt.wins.tie, result.opt.wins.a_better) == (0, 1, 2)
    assert (result.score.wins.b_better, result.score.wins.tie, result.score.wins.a_better) == (1, 0, 2)
    assert (result.mcnemar.b, result.mcnemar.c, result.mcnemar.both, result.mcnemar.neither) == (4, 1, 1, 0)
    assert result.mcnemar.p == pytest.approx(2 * (1 + 5) / 32)
    assert result.cost.a.total == pytest.approx(0.6) and result.cost.total == pytest.approx(0.6)
    assert result.cost.per_rollout == pytest.approx(0.1)
    # The same draws as bootstrap.py makes them: one generator seeded with the seed, tasks x resamples.
    draws = task_draws(np.random.default_rng(3), 2000, 3)
    deltas = np.array([-0.45, -0.05, 0.05])[draws].mean(axis=1)
    assert result.score.ci == pytest.approx(percentile_interval(deltas, 0.95))
    assert compare_runs(a, b, settings).to_dict() == result.to_dict()  # seeded: the same numbers again


def test_a_run_against_itself_is_all_ties() -> None:
    side = Side([[True, False], [False, False]], [[0.5, 0.2], [0.1, 0.0]], [0.1, 0.3, None])
    result = compare_runs(side, side)
    assert result.opt.delta == result.score.delta == 0.0 and result.opt.ci == result.score.ci == (0.0, 0.0)
    assert (result.score.wins.b_better, result.score.wins.tie, result.score.wins.a_better) == (0, 2, 0)
    assert result.mcnemar.p == 1.0 and result.mcnemar.b == result.mcnemar.c == 0
    assert result.cost.a.total is None and result.cost.total is None  # a price unknown: never $0


def test_unknown_cost_is_unknown_never_zero() -> None:
    diff = cost_difference([0.1, 0.2], [0.3, None])
    assert diff.a.total == pytest.approx(0.3) and diff.a.per_rollout == pytest.approx(0.15)
    assert diff.b.total is None and diff.b.per_rollout is None and diff.total is None and diff.per_rollout is None
    assert cost_difference([], []).a.per_rollout is None


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="same non-empty list of tasks"):
        compare_runs(Side([[True]], [[1.0]]), Side([], []))
    with pytest.raises(ValueError, match="tasks only"):
        compare_runs(Side([[True]], [[1.0]]), Side([[True]], [[1.0]]), Settings(rollouts=True))
    assert opt_at_1([[True, False, False]])[0] == pytest.approx(1 / 3)


# ---------------------------------------------------------------- run directories the store wrote
TASKS = ("imgblur", "rollstats", "spanindex")  # the fixture's smoke tasks, two rollouts each


def make_run(where: Path, outcomes: dict[tuple[str, int], tuple[bool, float]] | None = None, *,
             config: dict[str, Any] | None = None, report: dict[str, Any] | None = None,
             record: dict[str, Any] | None = None, costs: dict[tuple[str, int], float | None] | None = None,
             exits: dict[tuple[str, int], ExitReason] | None = None) -> Path:
    """A copy of the fixture run with its verdicts, scores, costs and exits set per (task, rollout), its
    config.yaml's top-level sections updated with `config`, and `report` / `record` merged into every grading
    report file and every results.jsonl grading block (as a re-grade under other settings writes them)."""
    shutil.copytree(FIXTURE, where)
    conf = yaml.safe_load((where / "config.yaml").read_text())
    for key, value in (config or {}).items():
        conf[key] = {**conf[key], **value} if isinstance(value, dict) else value
    (where / "config.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
    store = RunStore(where)
    records = store.results()
    for r in records:
        assert r.grading is not None
        if (found := (outcomes or {}).get(r.key)) is not None:
            r.grading.opt_commit, r.score = found
            r.grading.score = r.score
        if r.key in (costs or {}):
            r.cost_usd = (costs or {})[r.key]
        r.exit_reason = (exits or {}).get(r.key, r.exit_reason)
        for name, value in (record or {}).items():
            setattr(r.grading, name, value)
        if report:
            store.save_grading(r.instance_id, r.rollout, {**(store.grading(r.instance_id, r.rollout) or {}), **report})
    store.rewrite_results(records)
    return where


A_OUTCOMES = {("imgblur", 0): (True, 0.6), ("imgblur", 1): (True, 0.4), ("rollstats", 0): (True, 0.5),
              ("rollstats", 1): (True, 0.5), ("spanindex", 0): (False, 0.0), ("spanindex", 1): (True, 0.5)}
B_OUTCOMES = {("imgblur", 0): (False, 0.0), ("imgblur", 1): (False, 0.1), ("rollstats", 0): (True, 0.7),
              ("rollstats", 1): (False, 0.2), ("spanindex", 0): (True, 0.6), ("spanindex", 1): (True, 0.9)}


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = make_run(tmp_path / "a" / "run_a", A_OUTCOMES, costs={key: 0.1 for key in A_OUTCOMES})
    # B's spanindex rollout 1 passed grading but ended on infrastructure: a failure, as GSO counts it.
    b = make_run(tmp_path / "b" / "run_b", B_OUTCOMES, config={"model": {"id": "other"}},
                 costs={("imgblur", 0): None}, exits={("spanindex", 1): ExitReason.INFRA_ERROR})
    return a, b


def test_cli_compares_two_runs_and_writes_four_files(two_runs: tuple[Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    out = tmp_path / "cmp"
    assert main([str(a), str(tmp_path / "b"), "--out", str(out), "--seed", "3"]) == 0  # B as a folder of one run
    printed = capsys.readouterr().out
    result = json.loads((out / "compare.json").read_text())
    assert result["a"]["system"] == "oracle x codeact x smoke" and result["b"]["system"] == "other x codeact x smoke"
    # Per task, as test_compare_runs_by_hand: the same tables, now read from the runs' records.
    assert result["opt_at_1"]["per_task"] == {"a": [1.0, 1.0, 0.5], "b": [0.0, 0.5, 0.5], "delta": [-1.0, -0.5, 0.0]}
    assert result["opt_at_1"]["ci"] == [-1.0, 0.0] and result["score"]["delta"] == pytest.approx(-0.15)
    m = result["mcnemar"]
    assert (m["b"], m["c"], m["pairs"]) == (4, 1, 6) and m["p"] == pytest.approx(0.375)
    assert result["b"]["errored"] == 1 and result["a"]["errored"] == 0 and result["b"]["missing"] == 0
    assert result["cost"]["a"]["total"] == pytest.approx(0.6) and result["cost"]["b"]["total"] is None
    assert result["cost"]["total"] is None
    markdown = (out / "compare.md").read_text()
    assert printed.startswith(markdown) and f"compare: {out / 'compare.md'}" in printed
    assert "| Opt@1 | 0.833 [" in markdown and "| -0.500 | [-1.000, +0.000] | 0 / 1 / 2 |" in markdown
    assert "| 6 | 1 | 4 | 1 | 0 | 0.375 |" in markdown  # McNemar: pairs, both, b, c, neither, p
    assert "| total | $0.6000 | unknown | unknown |" in markdown
    assert "errored rollouts (a grading error or an infrastructure end) A 0, B 1" in markdown
    assert "| spanindex | 0.500 | 0.500 | +0.000 | 0.250 | 0.300 | +0.050 |" in markdown
    rows = list(csv.DictReader(io.StringIO((out / "compare.csv").read_text())))
    assert [r["row"] for r in rows] == ["task", "task", "task", "mean"] and rows[0]["task"] == "imgblur"
    assert float(rows[3]["delta_opt_at_1"]) == -0.5 and float(rows[3]["delta_opt_at_1_lo"]) == -1.0
    assert rows[0]["delta_opt_at_1_lo"] == ""  # an interval only for the mean
    tex = (out / "compare.tex").read_text()
    assert tex.count("\\begin{tabular}") == 1 and "\\toprule" in tex and "$b = 4$, $c = 1$, $p = 0.375$" in tex
    assert "Opt@1 & 0.833 & 0.333 & -0.500 {\\scriptsize [-1.000, +0.000]} & 0 / 1 / 2 \\\\" in tex


def test_errored_and_missing_rollouts_are_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")  # the fixture: all six rollouts solved
    b = make_run(tmp_path / "run_b")
    store = RunStore(b)
    records = store.results()
    errored = next(r for r in records if r.key == ("rollstats", 0))
    assert errored.grading is not None and errored.grading.opt_commit  # its verdict stands, its grading errored
    errored.grading.status = "error"
    store.rewrite_results([r for r in records if r.key != ("spanindex", 1)])  # as if it never finished
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert (result["b"]["errored"], result["b"]["missing"], result["a"]["errored"], result["a"]["missing"]) == \
        (1, 1, 0, 0)
    assert result["opt_at_1"]["per_task"]["b"] == [1.0, 0.5, 0.5] and result["score"]["per_task"]["b"][1] == \
        pytest.approx(0.4700672955128962 / 2)
    assert (result["mcnemar"]["pairs"], result["mcnemar"]["b"], result["mcnemar"]["c"]) == (6, 2, 0)
    assert result["cost"]["b"]["rollouts"] == 5  # the missing rollout cost nothing on record; the errored one did
    assert "missing rollouts A 0, B 1" in capsys.readouterr().out


def test_default_output_folder_and_a_run_against_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")
    assert main([str(a), str(a)]) == 0
    result = json.loads((a / "compare-run_a" / "compare.json").read_text())
    assert result["opt_at_1"]["delta"] == result["score"]["delta"] == 0.0
    assert result["mcnemar"]["p"] == 1.0 and result["score"]["wins"] == {"b_better": 0, "tie": 3, "a_better": 0}
    assert result["differences"] == [] and not result["forced"]
    assert result["a"]["grading"] == {"grader_version": "1.1", "timing_mode": "interleaved", "stat": "paired",
                                      "p": "0.95", "gso_version": "paper", "success": "0.5", "rounds": "3"}


def test_tasks_only_one_run_has_are_listed_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a", config={"tasks": {"ids": ["imgblur", "rollstats"]}})
    b = make_run(tmp_path / "run_b")
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert result["tasks"] == ["imgblur", "rollstats"] and result["only_b"] == ["spanindex"] and result["only_a"] == []
    assert result["mcnemar"]["pairs"] == 4 and result["cost"]["b"]["rollouts"] == 4  # spanindex left out
    assert "Only in B (left out of every paired number): spanindex." in capsys.readouterr().out


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and "Traceback" not in captured.err
    return captured.err


def test_paths_that_are_not_one_run_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")
    (tmp_path / "empty").mkdir()
    out = tmp_path / "out"
    err = _refused([str(a), str(tmp_path / "empty"), "--out", str(out)], capsys)
    assert err == f"error: {tmp_path / 'empty'} is not a run directory and holds none (no config.yaml found)\n"
    make_run(tmp_path / "sweep" / "one")
    make_run(tmp_path / "sweep" / "two")
    err = _refused([str(tmp_path / "sweep"), str(a), "--out", str(out)], capsys)
    assert err.startswith(f"error: {tmp_path / 'sweep'} holds 2 runs (one, two); compare takes one run each")
    err = _refused([str(a), str(tmp_path / "nowhere"), "--out", str(out)], capsys)
    assert "no such directory" in err
    err = _refused([str(a), str(a), "--level", "95", "--out", str(out)], capsys)
    assert err == "error: bootstrap: level must be between 0 and 1 (e.g. 0.95), got 95.0\n"
    assert not out.exists()
    (tmp_path / "file").write_text("")
    assert _refused([str(a), str(a), "--out", str(tmp_path / "file")], capsys) == \
        f"error: {tmp_path / 'file'} is a file: --out names a folder\n"


def test_ungraded_and_disjoint_runs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a", config={"tasks": {"ids": ["imgblur"]}})
    ungraded = make_run(tmp_path / "ungraded", config={"grade": "none"})
    out = tmp_path / "out"
    assert "has ungraded rollouts: grade it first" in _refused([str(a), str(ungraded), "--out", str(out)], capsys)
    other = make_run(tmp_path / "run_b", config={"tasks": {"ids": ["rollstats", "spanindex"]}})
    err = _refused([str(a), str(other), "--out", str(out)], capsys)
    assert err == "error: run_a and run_b share no task: nothing to compare\n"
    assert not out.exists()


@pytest.mark.parametrize("report, record, config, named", [
    ({"p": 0.5}, {"p": 0.5}, {"grading": {"p": 0.5}}, "p: A 0.95, B 0.5"),
    ({"gso_version": "leaderboard"}, {}, {}, "gso_version: A paper, B leaderboard"),
    ({"grader_version": "1.0"}, {}, {}, "grader_version: A 1.1, B 1.0"),
    ({"timing_mode": "gso", "stat": "mean"}, {"timing_mode": "gso", "stat": "mean"}, {},
     "timing_mode: A interleaved, B gso; stat: A paired, B mean"),
    ({"success": 0.8}, {}, {}, "success: A 0.5, B 0.8"),
])
def test_runs_graded_differently_are_refused_unless_forced(report: dict[str, Any], record: dict[str, Any],
                                                           config: dict[str, Any], named: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")
    b = make_run(tmp_path / "run_b", report=report, record=record, config=config)
    out = tmp_path / "out"
    err = _refused([str(a), str(b), "--out", str(out)], capsys)
    assert err == f"error: run_a and run_b were graded under different settings ({named}): their verdicts do not " \
                  "mean the same; --force compares them anyway\n"
    assert not out.exists()
    assert main([str(a), str(b), "--out", str(out), "--force"]) == 0
    assert f"**Graded under different settings, compared with --force:** {named}." in capsys.readouterr().out
    result = json.loads((out / "compare.json").read_text())
    assert result["forced"] and "; ".join(result["differences"]) == named
    assert f"% graded under different settings (--force): {named.replace('_', chr(92) + '_')}" in \
        (out / "compare.tex").read_text()


def test_settings_fall_back_to_the_config_and_a_partial_regrade_is_mixed(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")
    # B's grading reports are gone: its config.yaml says what graded it, and names no grader version.
    b = make_run(tmp_path / "run_b", config={"grading": {"gso_version": "leaderboard"}})
    shutil.rmtree(b / "grading")
    err = _refused([str(a), str(b), "--out", str(tmp_path / "out")], capsys)
    assert "(grader_version: A 1.1, B unknown; gso_version: A paper, B leaderboard)" in err
    # One of C's reports was re-graded at another p: C is mixed, so it differs from A.
    c = make_run(tmp_path / "run_c")
    store = RunStore(c)
    store.save_grading("imgblur", 0, {**(store.grading("imgblur", 0) or {}), "p": 0.5})
    assert "(p: A 0.95, B mixed (0.5, 0.95))" in _refused([str(a), str(c), "--out", str(tmp_path / "o")], capsys)


def test_a_difference_in_rounds_is_noted_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path / "run_a")
    b = make_run(tmp_path / "run_b", report={"rounds": 7}, record={"rounds": 7})
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert "without changing what a verdict means: rounds: A 3, B 7." in capsys.readouterr().out


def test_python_dash_m_runner_compare(tmp_path: Path) -> None:
    a = make_run(tmp_path / "run_a")
    done = subprocess.run([sys.executable, "-m", "runner.compare", str(a), str(a), "--resamples", "100"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "| 6 | 6 | 0 | 0 | 0 | 1 |" in done.stdout and (a / "compare-run_a" / "compare.tex").is_file()

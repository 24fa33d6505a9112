"""Anchored scores (AutoLab's scales) against hand-computed values."""
from __future__ import annotations

import math

import pytest

from harness.grader.anchors import Objective, anchored_score, calibrate, objective, read_metric

TIME = Objective("time_s", lower_is_better=True, scale="log")
COUNT = Objective("comparisons", lower_is_better=True, scale="linear")
RATE = Objective("ops_per_s", lower_is_better=False, scale="log")
SIZE_UP = Objective("coverage", lower_is_better=False, scale="linear")


@pytest.mark.parametrize("goal, value, base, ref, expected", [
    (TIME, 1.0, 1.0, 0.1, 0.0),  # the baseline
    (TIME, 0.1, 1.0, 0.1, 0.5),  # the reference
    (TIME, 0.01, 1.0, 0.1, 1.0),  # twice the reference's log gain: the cap
    (TIME, math.sqrt(0.1), 1.0, 0.1, 0.25),  # half the log gain
    (TIME, 2.0, 1.0, 0.1, 0.0),  # slower than the baseline
    (TIME, 0.05, 1.0, 0.1, 0.5 * math.log(20) / math.log(10)),
    (COUNT, 1000, 1000, 100, 0.0),
    (COUNT, 100, 1000, 100, 0.5),
    (COUNT, 550, 1000, 100, 0.25),
    (COUNT, 0, 1000, 100, 1.0 * 0.5 * 1000 / 900),
    (COUNT, 1200, 1000, 100, 0.0),
    (RATE, 400, 100, 200, 1.0),  # higher is better: ratios flipped
    (RATE, 200, 100, 200, 0.5),
    (SIZE_UP, 0.75, 0.5, 1.0, 0.25),
])
def test_anchored_scores(goal: Objective, value: float, base: float, ref: float, expected: float) -> None:
    assert anchored_score(value, base, ref, goal) == pytest.approx(min(1.0, expected), abs=1e-12)


def test_a_reference_no_better_than_the_baseline_has_no_scale() -> None:
    with pytest.raises(ValueError, match="no better than the baseline"):
        anchored_score(0.5, 1.0, 1.0, TIME)
    out = calibrate({"base": [1.0, 1.0], "reference": [1.2, 1.1], "patch": [0.9, 0.9]}, TIME)
    assert out["score"] is None and "no better" in out["reason"]


def test_calibration_uses_medians_over_rounds() -> None:
    out = calibrate({"base": [2.0, 1.0, 1.0], "reference": [0.1, 0.1, 0.5], "patch": [0.1, 0.2, 0.1]}, TIME)
    assert (out["base"], out["reference"], out["patch"]) == (1.0, 0.1, 0.1)
    assert out["score"] == pytest.approx(0.5) and out["reference_score"] == pytest.approx(0.5)
    assert out["reaches_reference"]


@pytest.mark.parametrize("patch, goal, reaches", [
    (0.105, TIME, True),  # 0.1 / 0.105 = 0.952: within GSO's p = 0.95 of the reference
    (0.106, TIME, False),  # 0.943
    (94, COUNT, True), (110, COUNT, False),
    (190, RATE, True), (189, RATE, False),  # higher is better: 190 / 200 = 0.95
])
def test_reaching_the_reference_allows_gsos_tolerance(patch: float, goal: Objective, reaches: bool) -> None:
    base, ref = {TIME: (1.0, 0.1), COUNT: (1000, 100), RATE: (100, 200)}[goal]
    out = calibrate({"base": [base], "reference": [ref], "patch": [patch]}, goal, p=0.95)
    assert out["reaches_reference"] is reaches


@pytest.mark.parametrize("table, expected", [
    ({"metric": "time_s", "direction": "minimize"}, Objective("time_s", True, "log")),
    ({"metric": "comparisons", "direction": "minimize"}, Objective("comparisons", True, "linear")),
    ({"metric": "throughput", "direction": "maximize"}, Objective("throughput", False, "log")),
    ({"metric": "binary_bytes", "direction": "minimize", "scale": "log"}, Objective("binary_bytes", True, "log")),
    ({"direction": "minimize"}, None),
])
def test_the_objective_comes_from_the_optimization_table(table: dict, expected: Objective | None) -> None:
    assert objective(table) == expected


def test_one_slow_round_does_not_decide_reaching_the_reference() -> None:
    rounds = {"base": [1.7, 1.7, 1.7], "reference": [0.0154, 0.0153, 0.0155], "patch": [0.0215, 0.0156, 0.0154]}
    out = calibrate(rounds, TIME, p=0.95)
    assert out["reaches_reference"] and out["reference_ratio"] == pytest.approx(0.0153 / 0.0156)
    zero = calibrate({"base": [10], "reference": [2], "patch": [0]}, COUNT)
    assert zero["reaches_reference"] and zero["score"] == pytest.approx(0.5 * 10 / 8)


@pytest.mark.parametrize("reference, patch, uncertain", [
    # per-round ratios 0.8, 0.9, 1.02: the median (0.9) misses p, but resampled rounds reach it: uncertain
    ([0.8, 0.9, 1.02], [1.0, 1.0, 1.0], True),
    ([0.8, 0.85, 0.9], [1.0, 1.0, 1.0], False),  # every round below p: certainly not reached
    ([1.0, 0.99, 0.97], [1.0, 1.0, 1.0], False),  # every round above p: certainly reached
    ([0.5], [1.0], False),  # one round: an interval of one point straddles nothing
])
def test_a_verdict_that_noise_could_flip_is_flagged(reference: list, patch: list, uncertain: bool) -> None:
    out = calibrate({"base": [10.0] * len(patch), "reference": reference, "patch": patch}, TIME, p=0.95)
    assert out["uncertain"] is uncertain
    assert out["ratio_interval"][0] == pytest.approx(min(reference)) and out["ratio_interval"][1] <= max(reference)


@pytest.mark.parametrize(("extras", "metric", "value", "where"), [
    # the key the task names
    ({"reward": 0.3, "runtime_seconds": 1.5, "metric": 9.0}, "runtime_seconds", 1.5, "reward.json['runtime_seconds']"),
    # AutoLab's CPU tasks: the value under 'metric'
    ({"reward": 0.3, "correctness": True, "metric": 2.25, "speedup": 1.1}, "cycles", 2.25, "the value under 'metric'"),
    # AutoLab's CUDA tasks: 'metric' names it, 'score' holds it
    ({"reward": 0.4, "score": 3.5, "metric": "runtime_ms", "speedup": 2.0}, "runtime_ms", 3.5,
     "reward.json['score'] ('metric' names 'runtime_ms')"),
])
def test_the_metric_is_read_by_autolabs_conventions(extras: dict, metric: str, value: float, where: str) -> None:
    found, said = read_metric(extras, metric)
    assert found == value and where in said


@pytest.mark.parametrize("extras", [
    {"metric": "runtime_ms", "score": 3.5},  # 'metric' names another metric
    {"metric": True, "cycles": "fast"},  # a bool is no number, nor is a string
    {"metric": "cycles", "score": float("nan")},
    {},
])
def test_no_metric_is_none_with_what_was_looked_for(extras: dict) -> None:
    found, said = read_metric(extras, "cycles")
    assert found is None and said.startswith("reward.json has no numeric 'cycles'")


@pytest.mark.parametrize("goal, calibrate_, base, again, measured", [
    (TIME, "auto", 1.0, None, True),  # a time depends on the machine, under auto too
    (COUNT, "auto", 2954.0, 2954.0, False),  # repeats exactly: the task's own reward stays
    (COUNT, "auto", 2954.0, 2955.0, True),  # varies on the base: measured here
    (COUNT, "always", 2954.0, None, True),
    (RATE, "auto", 100.0, None, True),
])
def test_anchors_are_measured_where_the_metric_depends_on_the_machine(
        goal: Objective, calibrate_: str, base: float, again: float | None, measured: bool) -> None:
    from harness.grader.reward import machine_dependence

    why = machine_dependence(goal, calibrate_, base, again)
    assert (why is not None) == measured, why
    if again is not None and again != base:
        assert why is not None and "2954, then 2955" in why


@pytest.mark.parametrize("given, word", [(True, "always"), (False, "never"), ("true", "always"), ("False", "never"),
                                         ("auto", "auto"), ("never", "never")])
def test_calibrate_takes_the_old_booleans(given: object, word: str) -> None:
    from harness.grader.config import GradeConfig

    config = GradeConfig(calibrate=given)  # type: ignore[arg-type]
    assert config.calibrate == word
    # a report graded before the word existed (calibrate: true) matches `always`, not the new default
    old = config.new_report("t", "x", verifier="reward")
    old["calibrate"] = True
    assert config.matches(old, old["patch_sha256"]) == (word == "always")
    del old["verifier"]  # a timed task's report: calibrate is not what graded it
    assert config.matches(old, old["patch_sha256"])


def test_calibrate_refuses_other_words() -> None:
    from harness.grader.config import GradeConfig

    with pytest.raises(ValueError, match="calibrate must be one of auto, always, never"):
        GradeConfig(calibrate="sometimes")

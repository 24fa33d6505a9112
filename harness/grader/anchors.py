"""Anchors measured on the grading machine, for tasks whose reward is a measured metric (AutoLab).

AutoLab's rewards map a metric (seconds, a count, a size) onto a score with two anchors written into
each task: the unchanged code scores 0, the reference solution 0.5. Timing anchors were measured on
another machine, so here the unchanged baseline and the reference land elsewhere on the scale. When a
task's `[optimization]` names its metric and the verifier reports it in reward.json, the grader runs the
verifier on the untouched environment and on the reference solution in the same session as the patch,
in interleaved rounds, and recomputes the score with the anchors measured here:

- log-stretch for speed metrics (time, latency; speedup, throughput): 0.5 * log(base/x) / log(base/ref)
  when lower is better (the ratios flipped when higher is better), 0 at or below the baseline, at most 1;
- linear otherwise: 0.5 * (base - x) / (base - ref), clipped to [0, 1] (flipped when higher is better).

Pure functions here; the runs are `reward.py`'s.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_SPEED = re.compile(r"time|latency|duration|seconds|_s$|_ms$|_us$|_ns$|speedup|throughput|per_s|ops", re.I)


@dataclass(frozen=True)
class Objective:
    """What a task optimizes: the metric's key in reward.json, its direction and how it is scaled."""
    metric: str
    lower_is_better: bool
    scale: str  # "log" (speed metrics) or "linear"


def objective(optimization: Mapping[str, Any], override: str | None = None) -> Objective | None:
    """The task's objective from its [optimization] table; None when it names no metric."""
    metric = optimization.get("metric")
    if not isinstance(metric, str) or not metric:
        return None
    direction = str(optimization.get("direction", "minimize")).lower()
    lower = direction in ("minimize", "min", "lower", "lower_is_better", "decrease")
    scale = override or str(optimization.get("scale") or ("log" if _SPEED.search(metric) else "linear"))
    return Objective(metric, lower, "log" if scale.startswith("log") else "linear")


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def read_metric(extras: Mapping[str, Any], metric: str) -> tuple[float | None, str]:
    """The metric's value in reward.json's fields and where it was read, by AutoLab's conventions as well:
    the key the task names (`[optimization].metric`); else `metric` holding the number (AutoLab's CPU tasks
    write `{"metric": 0.42, ...}`); else `score` when `metric` holds the metric's name (its CUDA tasks write
    `{"metric": "runtime_ms", "score": 3.1, ...}`). (None, what was looked for) when none of them has it."""
    if (value := _number(extras.get(metric))) is not None:
        return value, f"reward.json[{metric!r}]"
    if metric != "metric" and (value := _number(extras.get("metric"))) is not None:
        return value, "reward.json['metric'] (the value under 'metric')"
    if extras.get("metric") == metric and (value := _number(extras.get("score"))) is not None:
        return value, f"reward.json['score'] ('metric' names {metric!r})"
    return None, f"reward.json has no numeric {metric!r}, no numeric 'metric' and no 'score' named {metric!r}"


def anchored_score(value: float, base: float, reference: float, goal: Objective) -> float:
    """The score of `value` with base -> 0 and reference -> 0.5, capped to [0, 1]."""
    if goal.scale == "log":
        if min(value, base, reference) <= 0:
            raise ValueError("log-stretch needs positive metric values")
        gain = math.log(base / value) if goal.lower_is_better else math.log(value / base)
        span = math.log(base / reference) if goal.lower_is_better else math.log(reference / base)
    else:
        gain = (base - value) if goal.lower_is_better else (value - base)
        span = (base - reference) if goal.lower_is_better else (reference - base)
    if span <= 0:
        raise ValueError(f"the reference ({reference:g}) is no better than the baseline ({base:g}) here")
    return max(0.0, min(1.0, 0.5 * gain / span))


def _ratio(a: float, b: float) -> float:
    return a / b if b else (math.inf if a else 1.0)


def calibrate(rounds: Mapping[str, Sequence[float]], goal: Objective, p: float = 0.95, bootstrap: int = 2000,
              seed: int = 0) -> dict[str, Any]:
    """The calibrated score from the metric's values per state and round (base, reference, patch):
    anchors and the patch's value are medians over rounds. `reaches_reference`: the patch's metric is
    within a factor `p` of the reference's (GSO's Opt_p, p = 0.95), so noise does not decide it; the
    factor is the median of each round's ratio (the two ran back to back), as the timed grader pairs them.
    `ratio_interval` is that median's 95% bootstrap interval over rounds, and `uncertain` says it straddles
    `p`: on a noisy machine the verdict could have gone the other way (the timed grader's flag, too)."""
    med = {state: float(np.median(values)) for state, values in rounds.items()}
    out: dict[str, Any] = {"metric": goal.metric, "scale": goal.scale, "lower_is_better": goal.lower_is_better,
                           "rounds": {k: list(v) for k, v in rounds.items()}, "base": med["base"],
                           "reference": med["reference"], "patch": med["patch"]}
    pairs = list(zip(rounds["reference"], rounds["patch"]))
    ratios = [_ratio(r, x) if goal.lower_is_better else _ratio(x, r) for r, x in pairs]
    ratio = float(np.median(ratios)) if ratios else math.nan
    out["reference_ratio"] = ratio
    out["reaches_reference"] = bool(ratio >= p) if not math.isnan(ratio) else med["patch"] == med["reference"]
    interval = _median_interval(ratios, bootstrap, seed)
    out["ratio_interval"] = interval
    out["uncertain"] = bool(interval and interval[0] < p <= interval[1])
    try:
        out["score"] = anchored_score(med["patch"], med["base"], med["reference"], goal)
        out["reference_score"] = anchored_score(med["reference"], med["base"], med["reference"], goal)
    except ValueError as err:
        out["score"], out["reason"] = None, str(err)
    return out


def _median_interval(values: Sequence[float], bootstrap: int, seed: int) -> list[float]:
    """The 2.5th and 97.5th percentiles of the median over `bootstrap` resamples of `values` ([] if none)."""
    if not values:
        return []
    data = np.asarray(values, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(data), size=(bootstrap, len(data)))
    medians = np.median(data[picks], axis=1)
    return [float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))]

"""Timing code states: the schedule of rounds, per-test estimates from round times, bootstrap intervals.

- `interleaved` (default): in every round each (test, state) runs once as a fresh process, a session's
  patches around one expert run (half before it, half after: p p E p p), the patch order and the base's
  place rotating, one process at a time, all containers pinned to the same CPU. Per-test speedups are
  paired: the median over rounds of each round's ratio (against the expert run a few runs from the
  patch), so the machine's slow spells cancel out of it;
- `gso`: GSO's order and statistic for comparison: all base runs, then all patch runs, then all
  expert runs, no pinning, ratios of the mean times.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness import metrics
from harness.grader.config import GradeConfig
from harness.grader.isolation import Outside
from harness.grader.states import CodeState, StepFailed, Stop, TestRun, check_intact, reason_of, run_test_script
from harness.gpus.clocks import Watch
from harness.sandbox.interface import SandboxKilledFromInside
from harness.tasks.task import Task

Log = Callable[[str], None]
# Patches around one expert run in a slot. A session's patches (8 at most by default) share one expert run:
# its cost is shared by all of them, which is most of what a session saves (tests.bench.sessions).
AROUND = 8
Times = dict[str, dict[str, list[float]]]
# round(gm, 1) >= 1.2 holds from gm = 1.15 on (1.1 from 1.05): the value an interval is compared with.
EDGE_BELOW_THRESHOLD = 0.05
CHECKED = "eqcheck"  # the mode of every timed run
# A run of the visible workload (grader.visible) may take this many times one round of the base's hidden tests,
# and at least VISIBLE_MIN_S: longer, it is not timed (the report says so) rather than lengthen the grading.
VISIBLE_FACTOR, VISIBLE_MIN_S = 4.0, 10.0


@dataclass
class SessionTimes:
    """What a session's timing rounds measured. times[state][test]: one reported time per round, for the
    base and every patch; paired[patch][test]: per round, the expert run next to that patch (interleaved)
    or the expert's runs (gso); outside[state][test]: the same runs seen from outside (fenced runs only);
    calls[test]: the calls of the experiment a run of the base makes (gpukit: warm-ups and reps);
    gpu[state][test]: what NVML saw of each run (GPU tasks: clocks, temperature, power, throttle reasons
    before and after, busy seconds); failed: the patches whose timed run failed (dropped from the later
    rounds)."""
    times: Times = field(default_factory=dict)
    paired: Times = field(default_factory=dict)
    outside: dict[str, dict[str, list[Outside]]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    gpu: dict[str, dict[str, list[dict]]] = field(default_factory=dict)
    failed: dict[str, StepFailed] = field(default_factory=dict)
    # The workload the agent saw (grader.visible), where it was copied in: times per state, the expert's run
    # next to each patch's, and why a state's visible runs stopped (they never fail the state).
    visible: dict[str, list[float]] = field(default_factory=dict)
    visible_paired: dict[str, list[float | None]] = field(default_factory=dict)
    visible_failed: dict[str, str] = field(default_factory=dict)


def time_session(task: Task, base: CodeState, commit: CodeState, patches: list[CodeState], config: GradeConfig,
                 log: Log, watch: Watch | None = None) -> SessionTimes:
    """Time a session's states in rounds. A failing base or expert run ends the session (Stop). With a
    `watch` (a GPU task's session), NVML looks at every run: one the GPU slowed down is run again once."""
    session = _Session(task, base, commit, patches, watch, log)
    rounds = min(config.rounds, task.runs_per_test or config.rounds)  # a task may cap them (GSO's slow repos)
    log(f"[{task.id}] timing: {rounds} rounds x {len(base.tests)} tests, {len(patches)} patch(es) ({config.mode})")
    if config.mode == "interleaved":
        session.interleaved(rounds)
    else:  # GSO: all base runs, then all patch runs, then all expert runs
        session.gso(rounds)
    return session.out


class _Session:
    """One session's timing rounds (time_session): the states, what was measured so far (`out`)."""

    def __init__(self, task: Task, base: CodeState, commit: CodeState, patches: list[CodeState],
                 watch: Watch | None, log: Log) -> None:
        self.task, self.base, self.commit, self.patches, self.watch, self.log = task, base, commit, patches, watch, log
        tests, states = base.tests, (base, commit, *patches)
        self.out = SessionTimes(times={s.name: {t: [] for t in tests} for s in states},
                                paired={p.name: {t: [] for t in tests} for p in patches},
                                outside={s.name: {t: [] for t in tests} for s in states},
                                gpu={s.name: {t: [] for t in tests} for s in states} if watch else {})
        self.failed = self.out.failed

    def interleaved(self, rounds: int) -> None:
        base, commit, tests = self.base, self.commit, self.base.tests
        for r in range(rounds):
            self.intact((base, commit, *self.patches), f"before round {r + 1}")
            for i, test in enumerate(tests):
                live = [p for p in self.patches if p.name not in self.failed]
                for group in interleaved_order(base, commit, live, r * len(tests) + i):
                    expert_time = None
                    for state in group:
                        value = self.run(state, test)
                        if state is commit:
                            expert_time = value
                    for state in group:
                        if state is not base and state is not commit and state.name not in self.failed:
                            # (expert_time is set: a group with a patch holds the expert's run)
                            self.out.paired[state.name][test].append(expert_time)  # type: ignore[arg-type]
            if base.visible is not None:
                self.visible_slot(r)

    def gso(self, rounds: int) -> None:
        for state in (self.base, *self.patches, self.commit):
            self.intact((state,), "before its rounds")
            for test in self.base.tests:
                for _ in range(rounds):
                    self.run(state, test)
            for _ in range(rounds if self.base.visible is not None else 0):
                self.seen(state)
        self.out.paired = {p.name: self.out.times[self.commit.name] for p in self.patches}
        self.out.visible_paired = {p.name: list(self.out.visible.get(self.commit.name, [])) for p in self.patches}

    def timed(self, state: CodeState, test: str) -> TestRun:
        # Every timed run is a checked run, as GSO's patch runs are: its result is compared with the base's
        # reference after the clock stops (the base's with its own). So no run a patch can tell apart from
        # the checked ones (argv, environment, the files it sees are the same) is left to skip the work in.
        task = self.task
        if self.watch is None:
            return run_test_script(state, test, CHECKED, task.test_timeout)
        done, seen = self.watch.run(lambda: run_test_script(state, test, CHECKED, task.test_timeout),
                                    lambda message: self.log(f"[{task.id}] {state.name} {test}: {message}"))
        self.out.gpu[state.name][test].append(seen.record())
        if done.outside is not None and seen.busy_s is not None:
            done = replace(done, outside=replace(done.outside, gpu_busy=seen.busy_s))
        return done

    def run(self, state: CodeState, test: str) -> float | None:
        if state.name in self.failed:
            return None
        try:
            done = self.timed(state, test)
        except (StepFailed, SandboxKilledFromInside) as caught:  # (the latter: a test run as root, unfenced)
            err = caught if isinstance(caught, StepFailed) else \
                StepFailed(f"test {test}", f"it ended its own container: {caught}")
            self._fail(state, err)
            return None
        self.out.times[state.name][test].append(done.reported)
        if state is self.base:
            self.out.calls[test] = done.calls
        if done.outside is not None:
            self.out.outside[state.name][test].append(done.outside)
        return done.reported

    def _fail(self, state: CodeState, err: StepFailed) -> None:
        """A patch's failure drops it from the later rounds; the base's or the expert's ends the session."""
        if state is self.base or state is self.commit:
            raise Stop("base_failed" if state is self.base else "error", reason_of(err, state.name)) from None
        self.failed[state.name] = err

    def seen(self, state: CodeState) -> float | None:
        """A run of the visible workload: a diagnostic, so its failure stops that state's visible runs only.
        Its time is bounded by the hidden tests' (visible_budget): a spec script that sleeps or loops must not
        make a grading many times longer than its tests."""
        out = self.out
        stopped = {state.name, self.base.name, self.commit.name} & set(out.visible_failed)
        if state.visible is None or state.name in self.failed or stopped:
            return None  # (without the base's or the expert's runs, no patch has a gap: none run on)
        budget = visible_budget(out.times[self.base.name], self.task.test_timeout)
        try:
            done = run_test_script(state, state.visible, None, budget)
        except (StepFailed, SandboxKilledFromInside) as err:
            out.visible_failed[state.name] = (f"it ran past {budget:.3g} s, the visible workload's budget (the "
                                              f"base's hidden tests' time x {VISIBLE_FACTOR:g}, at least "
                                              f"{VISIBLE_MIN_S:g} s)" if "timeout after" in str(err) else
                                              str(err)[:600])
            return None
        out.visible.setdefault(state.name, []).append(done.reported)
        return done.reported

    def visible_slot(self, r: int) -> None:
        live = [p for p in self.patches if p.name not in self.failed]
        for group in interleaved_order(self.base, self.commit, live, r):
            expert_time = None
            for state in group:
                value = self.seen(state)
                expert_time = value if state is self.commit else expert_time
            for state in group:
                if state is not self.base and state is not self.commit:
                    self.out.visible_paired.setdefault(state.name, []).append(expert_time)

    def intact(self, group: tuple[CodeState, ...], when: str) -> None:
        """The hidden files as copied in, or a state's run fails as tampering (grader.freeze). The states
        are read at once: each check is a transfer from the engine, and nothing is timed meanwhile."""
        live = [s for s in group if s.name not in self.failed]
        with ThreadPoolExecutor(max(1, len(live)), thread_name_prefix="grade-check") as pool:
            outcomes = list(pool.map(lambda s: _tampered(s, when), live))
        for state, err in zip(live, outcomes):
            if err is not None:
                self._fail(state, err)


def visible_budget(base_times: dict[str, list[float]], test_timeout: float | None) -> float:
    """The seconds one run of the visible workload may take: VISIBLE_FACTOR times what one round of the base's
    hidden tests took (their first round's runs), at least VISIBLE_MIN_S, at most the task's test timeout."""
    first = sum(times[0] for times in base_times.values() if times)
    budget = max(VISIBLE_MIN_S, VISIBLE_FACTOR * first)
    return min(budget, test_timeout) if test_timeout else budget


def _tampered(state: CodeState, when: str) -> StepFailed | None:
    try:
        check_intact(state, when)
    except StepFailed as err:
        return err
    return None


def interleaved_order(base: CodeState, commit: CodeState, patches: list[CodeState], k: int) -> list[list[CodeState]]:
    """The runs of one (round, test), in groups: up to AROUND patches around one expert run (half before it,
    half after), so one expert run serves them all and each patch runs a few runs from it, and the base once,
    alone, between two groups. `k` counts the (round, test) slots: the patch order rotates with it (so each
    patch's distance to the expert run changes from slot to slot), and so does the base's place (a run is
    slowed by what ran just before it). With one patch this cycles through the four orders that keep the
    patch and the expert together (B p E, p E B, B E p, E p B)."""
    if not patches:
        return [[base], [commit]]
    n = len(patches)
    order = patches[k % n:] + patches[:k % n]
    groups = []
    for j in range(0, n, AROUND):
        chunk = order[j:j + AROUND]
        # Which side takes the odd one out alternates; a single patch goes before, then after the expert.
        half = (len(chunk) + (k // 2 if len(chunk) == 1 else k) % 2) // 2
        groups.append([*chunk[:half], commit, *chunk[half:]])
    place = k % (len(groups) + 1)
    return groups[:place] + [[base]] + groups[place:]


# The speedups of the report: (numerator state, denominator state) of each ratio of times.
RATIOS = {"patch_base": ("base", "patch"), "patch_commit": ("commit", "patch"), "commit_base": ("base", "commit")}


def estimates(arrays: dict[str, np.ndarray], stat: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-test times and per-test speedups from round times; arrays are (tests, ..., rounds).

    mean/median: the statistic of each state's times, speedups are their ratios (GSO: mean).
    paired: each round's ratio of two runs made close together, then the median over rounds, so
    drift in the machine's speed cancels out of the ratio; per-test times are medians.
    """
    reduce = np.mean if stat == "mean" else np.median
    times = {name: reduce(values, axis=-1) for name, values in arrays.items()}
    if stat == "paired":
        speedups = {key: np.median(arrays[a] / arrays[b], axis=-1) for key, (a, b) in RATIOS.items()}
    else:
        speedups = {key: times[a] / times[b] for key, (a, b) in RATIOS.items()}
    return times, speedups


def straddles(interval: list[float], edge: float) -> bool:
    return interval[0] < edge <= interval[1]


def bootstrap(arrays: dict[str, np.ndarray], config: GradeConfig) -> dict[str, list[float]]:
    """95% percentile intervals of every speedup, resampling rounds (jointly when interleaved)."""
    rng = np.random.default_rng(config.seed)
    rounds = arrays["base"].shape[1]
    joint = rng.integers(0, rounds, size=(config.bootstrap, rounds))

    def draw() -> np.ndarray:  # GSO's states were timed apart, so each is resampled on its own
        return joint if config.mode == "interleaved" else rng.integers(0, rounds, size=(config.bootstrap, rounds))

    resampled = {name: values[:, draw()] for name, values in arrays.items()}  # (tests, bootstrap, rounds)
    _times, speedups = estimates(resampled, config.stat)
    out = {}
    for key, ratio in speedups.items():  # (tests, bootstrap)
        gm = np.exp(np.mean(np.log(ratio), axis=0))
        hm = ratio.shape[0] / np.sum(1.0 / ratio, axis=0)
        for kind, values in (("gm", gm), ("hm", hm)):
            lo, hi = np.percentile(values, [2.5, 97.5])
            out[f"{kind}_speedup_{key}"] = [float(lo), float(hi)]
    return out


def verdicts(report: dict[str, Any], names: list[str], times: dict[str, dict[str, list[float]]],
             tests: tuple[str, ...], config: GradeConfig) -> None:
    """Fill the report's times, speedups, GSO verdicts, score and intervals from the round times
    (times[state][test] = one value per round; states base, patch, commit)."""
    arrays = {name: np.array([times[name][t] for t in tests]) for name in names}  # (tests, rounds)
    per_test, speedups = estimates(arrays, config.stat)
    base, patch, commit = (per_test[n].tolist() for n in ("base", "patch", "commit"))
    pb, pc, cb = (speedups[k].tolist() for k in RATIOS)
    stats = metrics.opt_stats_from(pb, pc, cb, base, patch, commit)
    report.update(
        test_passed=True, tests=list(tests), base_times=base, patch_times=patch, commit_times=commit,
        round_times={n: {t: times[n][t] for t in tests} for n in names},
        opt_base=metrics.opt_base_from(pb, base, patch, config.min_speedup),
        opt_commit=metrics.opt_p_from(pb, pc, base, patch, config.p, config.min_speedup),
        opt_stats=stats.as_dict(), per_test_speedups={"patch_base": pb, "patch_commit": pc, "commit_base": cb},
    )
    report["score"] = (metrics.log_stretch_score(stats.gm_speedup_patch_base, stats.gm_speedup_commit_base)
                       if stats.gm_speedup_commit_base > 1 else None)
    intervals = bootstrap(arrays, config)
    report["intervals"] = intervals
    report["uncertain"] = {
        "opt_base": straddles(intervals["gm_speedup_patch_base"], config.min_speedup - EDGE_BELOW_THRESHOLD),
        "opt_commit": straddles(intervals["hm_speedup_patch_commit"], config.p),
    }

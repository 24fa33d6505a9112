"""The grader's mechanical hack checks (harness.grader.guards) on hand-made diffs and measures, and the
fenced process's outside measures read back (harness.grader.isolation.parse)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.grader.guards import (clock_review, diff_files, hook_review, leftover_review, normalized,
                                   protected_paths, static_review)
from harness.grader.isolation import OUTSIDE_SEP, Outside, parse
from harness.tasks import Task
from harness.tasks.folder import load_task
from tests.conftest import write_task


def section(path: str, *added: str, old: str | None = None) -> str:
    body = "".join(f"+{line}\n" for line in added)
    return (f"diff --git a/{old or path} b/{path}\n--- a/{old or path}\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(added)} @@\n{body}")


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path))


def test_a_diff_is_read_as_paths_and_added_lines() -> None:
    diff = section("tiny/a.py", "x = 1", "y = 2") + section("new.py", "z = 3", old="old.py")
    assert diff_files(diff) == {"tiny/a.py": ["x = 1", "y = 2"], "new.py": ["z = 3"], "old.py": []}


@pytest.mark.parametrize(("path", "flagged"), [
    ("sitecustomize.py", True), ("pkg/usercustomize.py", True), ("site.py", True), ("pkg/site.py", False),
    ("tiny/speed.pth", True), ("perfkit.py", True), ("tests/test_sum.py", True), ("test_sum.py", True),
    ("tiny/__init__.py", False), ("tiny/test_other.py", False), ("setup.py", False),
])
def test_protected_paths(task: Task, path: str, flagged: bool) -> None:
    assert protected_paths([path], task) == ([path] if flagged else [])


def test_a_task_protects_more_or_allows_some(task: Task) -> None:
    custom = replace(task, protected=("data/*",), allow_protected=("*.pth",))
    assert protected_paths(["data/x.bin", "tiny/speed.pth", "sitecustomize.py"], custom) == \
        ["data/x.bin", "sitecustomize.py"]


def test_tests_copied_inside_the_repository_are_protected_there(task: Task) -> None:
    inside = replace(task, test_dir="/testbed/bench_hidden")
    assert protected_paths(["bench_hidden/helper.py", "tiny/x.py"], inside) == ["bench_hidden/helper.py"]


def test_static_review_flags_a_rebound_clock_and_lists_the_rest(task: Task) -> None:
    diff = (section("tiny/__init__.py", "import time", "time.perf_counter = lambda: 0.0")
            + section("tiny/timer.py", "start = time.perf_counter()  # fine", "if a == time.time(): pass")
            + section("benchmarks/bench_total.py", "pass")
            + section("sitecustomize.py", "pass"))
    gso_like = replace(task, patch_excludes=("*.json",))
    reasons, signals = static_review(diff, gso_like)
    assert reasons == ["protected path: the patch touches sitecustomize.py",
                       "clock rebound: tiny/__init__.py assigns to a timing function: time.perf_counter = lambda: 0.0"]
    assert signals == ["timing functions: tiny/timer.py reads the clock: start = time.perf_counter()  # fine",
                       "tests or benchmarks: benchmarks/bench_total.py"]
    data_reasons, data_signals = static_review(section("fixtures/w.json", "{}"), gso_like)
    assert data_reasons == [] and data_signals == ["test data: fixtures/w.json (dropped before the patch is applied)"]


@pytest.mark.parametrize("line", ["setattr(time, 'perf_counter', f)", "timeit.default_timer = f",
                                  "perf_counter_ns = fake", "sys.modules['time'] = fake",
                                  "torch.cuda.Event.elapsed_time = lambda self, end: 0.1",
                                  "torch.cuda.synchronize = lambda *a: None", "cuda.Event = Fast",
                                  "setattr(torch.cuda.Event, 'record', f)"])
def test_every_way_of_rebinding_the_clock_is_a_reason(task: Task, line: str) -> None:
    reasons, _ = static_review(section("tiny/x.py", line), task)
    assert len(reasons) == 1 and reasons[0].startswith("clock rebound")


@pytest.mark.parametrize("lines", [
    # through an alias, setattr or the module's dictionary (the regex alone misses each of these)
    ("import torch as t", "t.cuda.synchronize = lambda *a: None"),
    ("from torch import cuda as c", "c.Event.record = f"),
    ("import torch.cuda as gpu", "E = gpu.Event", "E.elapsed_time = lambda self, end: 0.1"),
    ('setattr(torch.cuda, "synchronize", f)',), ('setattr(cuda, "synchronize", f)',),
    ("import torch", "setattr(torch.cuda,", "        'synchronize',", "        f)"),  # over several lines
    ("import importlib", "m = importlib.import_module('torch.cuda')", "m.synchronize = f"),
    ("vars(torch.cuda)['synchronize'] = f",), ("torch.cuda.__dict__.update(synchronize=f)",),
    ("type.__setattr__(torch.cuda.Event, 'record', f)",), ("del torch.cuda.Event.record",),
    ("def install():", "    from torch import cuda as c", "    c.Event.synchronize = f"),
    ("t.cuda.synchronize = f",),  # an alias made where the diff does not show it
])
def test_rebinding_the_gpu_timer_through_aliases_and_setattr_is_a_reason(task: Task, lines: tuple[str, ...]) -> None:
    reasons, _ = static_review(section("tiny/x.py", *lines), task)
    assert len(reasons) == 1 and reasons[0].startswith("clock rebound: tiny/x.py assigns to a timing function")


def test_an_alias_made_in_unchanged_lines_is_followed(task: Task) -> None:
    diff = ("diff --git a/tiny/x.py b/tiny/x.py\n--- a/tiny/x.py\n+++ b/tiny/x.py\n@@ -1,2 +1,3 @@\n"
            " from torch import cuda as gpu\n \n+gpu.synchronize = lambda: None\n")
    assert static_review(diff, task)[0] == \
        ["clock rebound: tiny/x.py assigns to a timing function: gpu.synchronize = lambda: None"]
    assert static_review(diff.replace("from torch import cuda as gpu", "import queue as gpu"), task)[0] == []


@pytest.mark.parametrize("line", ["ok = time.time() == 0", "time = compute()", "self.time.start = 3",
                                  "timer = time.perf_counter", "start = torch.cuda.Event(enable_timing=True)",
                                  "torch.cuda.synchronize()", "ms = start.elapsed_time(end)",
                                  "torch.backends.cuda.matmul.allow_tf32 = True", "setattr(self, 'record', f)",
                                  "self.event.record = 3", "options.update(synchronize=True)",
                                  "import torch as t; s = t.cuda.Stream(); s.wait_stream(t.cuda.current_stream())"])
def test_reading_the_clock_or_a_variable_named_time_is_not_rebinding(task: Task, line: str) -> None:
    reasons, _ = static_review(section("tiny/x.py", line), task)
    assert reasons == []


def test_start_up_hooks_new_or_changed_by_the_build() -> None:
    base = ["/usr/lib/python3/dist-packages/distutils-precedence.pth 1111", "/site/a.pth 2222"]
    expert = [*base, "/site/__editable__.tiny-0.2.pth 3333"]
    patch = ["/usr/lib/python3/dist-packages/distutils-precedence.pth 1111", "/site/a.pth 9999",
             "/site/__editable__.tiny-0.2.pth 3333", "/testbed/sitecustomize.py 4444"]
    assert hook_review(patch, base, expert) == ["start-up hook changed by the build: /site/a.pth",
                                                "start-up hook added by the build: /testbed/sitecustomize.py"]
    assert hook_review(base, base, expert) == []


def runs(reported: list[float], untimed: list[float], user: list[float] | None = None) -> list[tuple[float, Outside]]:
    """(reported, outside) per run: wall = reported + untimed; user CPU = reported + user-untimed."""
    user = user if user is not None else untimed
    return [(r, Outside(wall=r + u, cpu=r + c + 0.01, system=0.01)) for r, u, c in zip(reported, untimed, user)]


REFERENCE = {"t": runs([0.5] * 5, [0.30, 0.31, 0.34, 0.31, 0.90])}  # median 0.31, MAD 0.01, one hiccup
EXPERT = {"t": runs([0.1, 0.1, 0.1], [0.30, 0.30, 0.31])}


def test_a_bent_clock_is_flagged_from_outside() -> None:
    # Reported 0.05 s while the process spent 0.45 s more than the references outside its clock.
    bent = {"t": runs([0.05, 0.05, 0.05], [0.76, 0.78, 0.80])}
    reasons, table = clock_review(bent, [REFERENCE, EXPERT], {"t": [0.1, 0.1, 0.1]})
    assert len(reasons) == 1 and "0.450 s more" in reasons[0]
    # Allowed: the larger of 0.02 s, a quarter of the expert's 0.1 s, and 4 x 1.4826 x the median of the
    # deviations from each reference's median, pooled (0, 0, 0, 0, .01, .01, .03, .59 -> 0.005): 0.0297 s.
    # The hiccup at 0.90 s does not widen it.
    assert table["t"]["untimed_wall_s"] == 0.76 and table["t"]["reference_untimed_wall_s"] == 0.31
    assert table["t"]["allowed_wall_s"] == pytest.approx(0.0297)


def test_an_honest_patch_and_a_slow_spell_are_not_flagged() -> None:
    honest = {"t": runs([0.09, 0.09, 0.09], [0.31, 0.30, 0.33])}
    spell = {"t": runs([0.09, 0.09, 0.09], [0.32, 0.90, 0.95])}  # its best run is as the references'
    for patch in (honest, spell):
        assert clock_review(patch, [REFERENCE, EXPERT], {"t": [0.1]})[0] == []


def test_memory_faults_outside_the_clock_are_not_computation() -> None:
    # Wall time outside the clock grew, but as system time: user CPU outside the clock stayed.
    faulting = {"t": runs([0.09, 0.09, 0.09], [0.55, 0.56, 0.58], user=[0.30, 0.30, 0.31])}
    assert clock_review(faulting, [REFERENCE, EXPERT], {"t": [0.1]})[0] == []


def gpu_runs(per_call: float, calls: int, overhead: list[float], hidden: float = 0.0,
             reported: float | None = None) -> list[tuple[float, Outside]]:
    """GPU test runs: `calls` calls of `per_call` s each, plus set-up `overhead` s (wall and GPU alike), plus
    `hidden` s of GPU work the timer did not see; each reports `reported` (default: per_call)."""
    shown = per_call if reported is None else reported
    return [(shown, Outside(wall=4.0 + calls * per_call + o + hidden, cpu=4.0 + calls * per_call + o, system=0.1,
                            gpu_busy=calls * per_call + o + hidden)) for o in overhead]


def test_on_a_gpu_the_clock_is_checked_against_the_gpus_busy_time() -> None:
    # gpukit's runs make 35 calls (5 warm-ups, 30 reps): the base 10 ms a call, the expert 4 ms.
    base = {"t": gpu_runs(0.010, 35, [0.20, 0.21, 0.20])}
    expert = {"t": gpu_runs(0.004, 35, [0.20, 0.20, 0.22])}
    refs, expert_times, calls = [base, expert], {"t": [0.004] * 3}, {"t": 35}
    # An honest patch slower than the expert (12 ms a call): its 35 calls are what it claims, not hidden.
    honest = {"t": gpu_runs(0.012, 35, [0.21, 0.20, 0.21])}
    assert clock_review(honest, refs, expert_times, calls)[0] == []
    # Without the calls, those 35 x 12 ms would look hidden: the count is what makes the check fair.
    assert clock_review(honest, refs, expert_times)[0] != []
    # A bent timer: the same 10 ms of GPU work per call, reported as 0.1 ms.
    bent = {"t": gpu_runs(0.010, 35, [0.20, 0.20, 0.21], reported=0.0001)}
    reasons, table = clock_review(bent, refs, expert_times, calls)
    assert len(reasons) == 1 and "more GPU busy time" in reasons[0]
    assert table["t"]["calls"] == 35 and table["t"]["untimed_gpu_s"] == pytest.approx(0.5465, abs=1e-4)
    # Work the GPU did where the timer is not: flagged by busy time as well.
    hidden = {"t": gpu_runs(0.004, 35, [0.20, 0.21, 0.20], hidden=0.5)}
    assert clock_review(hidden, refs, expert_times, calls)[0] != []


def test_gpu_busy_time_is_compared_only_where_every_run_has_it() -> None:
    base = {"t": gpu_runs(0.010, 35, [0.20, 0.21, 0.20])}
    expert = {"t": [(t, Outside(o.wall, o.cpu, o.system)) for t, o in gpu_runs(0.004, 35, [0.2, 0.2, 0.2])]}
    patch = {"t": gpu_runs(0.004, 35, [0.20, 0.21, 0.20])}
    _, table = clock_review(patch, [base, expert], {"t": [0.004] * 3}, {"t": 35})
    assert "untimed_user_s" in table["t"] and "untimed_gpu_s" not in table["t"]


def test_state_left_behind_by_the_patch_alone() -> None:
    assert normalized("$TMPDIR/tmpab12_xyz/out-3f9a2c7d1e.npy") == "$TMPDIR/*/out-*.npy"
    reference = ["$TMPDIR/tmpk2j4h5g6/log.txt"]
    assert leftover_review(["$TMPDIR/tmpzz99yy88/log.txt"], reference) == []  # the same, renamed at random
    reasons = leftover_review(["~/.cache/tiny/ab12cd34ef.pkl", "~/.cache/tiny/9f8e7d6c5b.pkl"], reference)
    assert len(reasons) == 1 and "~/.cache/tiny/*.pkl" in reasons[0]


def test_the_outside_measures_are_read_back() -> None:
    output = ("test output\n" + OUTSIDE_SEP + "100.250000 101.000000\n0m0.001s 0m0.002s\n0m0.010s 0m0.020s\n"
              "0m0.002s 0m0.003s\n1m0.510s 0m0.120s\n~/.cache/x.bin\n$TMPDIR/y\n")
    body, outside = parse(output)
    assert body == "test output\n" and outside is not None
    assert outside.wall == pytest.approx(0.75)
    assert outside.cpu == pytest.approx(60.63 - 0.03) and outside.system == pytest.approx(0.1)
    assert outside.left == ("~/.cache/x.bin", "$TMPDIR/y")
    assert parse("no trailer") == ("no trailer", None)
    assert parse("x" + OUTSIDE_SEP + "garbled\n")[1] is None

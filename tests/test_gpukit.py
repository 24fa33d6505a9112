"""The GPU timing helper's protocol, checked on the CPU (torch's CPU build; `device="cpu"` times with the
host's clock): warm-ups left out, the median of the reps, results stored and compared as GSO's tests do,
each rep on inputs of its own with its output checked against the reference run's (so a kept output
fails), and a run whose timer was replaced, or taken after code from outside torch's installation ran,
fails. Its CUDA events are checked on a GPU machine (tools/gpu_check.sh)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from harness.grader import gpukit  # noqa: E402  (needs torch)

GRADER = Path(gpukit.__file__).parent
TEST = '''import sys, torch
{before}
sys.path.insert(0, {kit!r})
import gpukit

def setup():
    return torch.arange(1000, dtype=torch.float32)

def experiment(x):
{body}
{extra}
def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, warmups=2, reps=5, device="cpu")

if __name__ == "__main__":
    gpukit.main(run_test)
'''
# Memoising the output: by the input's shape (a cheap key), as a patch that skips repeated work would.
MEMO = "    global kept\n    kept = globals().get('kept') or {}\n    key = tuple(x.shape)\n" \
       "    if key not in kept:\n        kept[key] = x * 2\n    return kept[key]"


def test_warm_ups_are_left_out_and_the_median_is_taken() -> None:
    calls: list[int] = []

    def experiment(data: torch.Tensor) -> torch.Tensor:
        calls.append(len(calls))
        if len(calls) <= 2:  # the warm-ups: slow, as a first call is
            __import__("time").sleep(0.05)
        return data

    times, result = gpukit.measure(experiment, torch.ones(3), warmups=2, reps=5, device="cpu")
    assert len(calls) == 7 and result.shape == (3,) and len(times) == 5
    assert max(times) < 0.04  # no warm-up among the timed reps


def test_each_rep_gets_inputs_of_its_own_made_before_its_clock_and_checked_after() -> None:
    seen: list[torch.Tensor] = []
    after: list[int] = []
    data = (torch.ones(4), torch.arange(3))
    gpukit.measure(lambda d: seen.append(d[0]) or d[0], data, warmups=1, reps=3, device="cpu", salt=9,
                   after_rep=lambda k, result: after.append(k))
    assert seen[0] is data[0] and after == [0, 1, 2]  # the warm-up: setup()'s data
    reps = seen[1:]
    assert all(not torch.equal(a, b) for i, a in enumerate(reps) for b in reps[i + 1:])
    assert torch.equal(reps[1], gpukit.perturb(data, gpukit.rep_seed(9, 1))[0])  # seeded: the same in every run


def test_perturbation_keeps_the_workloads_shape_and_leaves_the_rest() -> None:
    x = torch.tensor([0.0, -3.0, float("-inf"), 2.0])
    ids = torch.arange(4)
    out = gpukit.perturb({"a": x, "b": [x, ids], "n": 3}, seed=1)
    assert out["a"] is out["b"][0] and out["b"][1] is ids and out["n"] == 3  # one tensor stays one
    y = out["a"]
    assert y[0] == 0 and y[1] < 0 and y[2] == float("-inf") and 0.9 * 2 <= y[3] <= 1.1 * 2 and y[3] != 2
    assert torch.equal(gpukit.perturb(x, 1), y) and not torch.equal(gpukit.perturb(x, 2), y)
    with pytest.raises(ValueError, match=r"define inputs\(data, seed\)"):
        gpukit.perturb((ids, "model"), 1)


def test_a_fingerprint_allows_reordered_sums_and_catches_any_kept_output() -> None:
    torch.manual_seed(0)
    x = torch.randn(512, 300) * 4
    honest = gpukit.fingerprint(torch.softmax(x, dim=1), salt=3)
    shifted = torch.exp(x - torch.logsumexp(x, dim=1, keepdim=True))  # the same rows, summed differently
    gpukit.compare(honest, gpukit.fingerprint(shifted, salt=3), 1e-4, 1e-6, "rep 1")
    kept = torch.softmax(gpukit.perturb(x, 5), dim=1)  # another rep's output
    one_row = torch.softmax(x, dim=1)
    one_row[7] = kept[7]  # every row right but one
    for wrong in (kept, one_row):
        with pytest.raises(AssertionError, match="times what the tolerance allows"):
            gpukit.compare(honest, gpukit.fingerprint(wrong, salt=3), 1e-4, 1e-6, "rep 1")
    with pytest.raises(AssertionError, match="shape"):
        gpukit.compare(honest, gpukit.fingerprint(x[:5], salt=3), 1e-4, 1e-6, "rep 1")


def test_a_fingerprint_reads_plain_results_only() -> None:
    prints = gpukit.fingerprint({"n": 2, "t": [torch.ones(2, dtype=torch.int64)], "s": None}, salt=1)
    assert [p[0] for p in prints] == ["result['n']", "result['t'][0]", "result['s']"]
    gpukit.compare(prints, gpukit.fingerprint({"n": 2, "t": [torch.ones(2, dtype=torch.int64)], "s": None}, 1),
                   0.0, 0.0, "rep 1")
    with pytest.raises(AssertionError, match=r"result\['n'\]: 3 != 2"):
        gpukit.compare(prints, gpukit.fingerprint({"n": 3, "t": [torch.ones(2)], "s": None}, 1), 0, 0, "rep 1")

    class Late(torch.Tensor):  # a subclass could compute when it is read, outside the timed span
        pass

    with pytest.raises(TypeError, match="not a plain torch.Tensor"):
        gpukit.fingerprint(torch.ones(2).as_subclass(Late), 1)
    with pytest.raises(TypeError, match="cannot read a set"):
        gpukit.fingerprint({1}, 1)


def test_results_are_compared_within_tolerances() -> None:
    a = torch.ones(3)
    gpukit.check_close([a, {"n": 1}], [a + 1e-7, {"n": 1}])
    with pytest.raises(AssertionError, match=r"result\[0\]: differs by up to"):
        gpukit.check_close([a], [a + 1])
    with pytest.raises(AssertionError, match="shape"):
        gpukit.check_close(a, torch.ones(4))
    gpukit.check_close({"x": a, "y": 2}, {"y": 2, "x": a})  # a dict's keys in any order
    with pytest.raises(AssertionError, match="key sets differ"):
        gpukit.check_close({"x": a}, {"x": a, "y": 2})
    with pytest.raises(AssertionError, match="lengths differ"):
        gpukit.check_close([a], {0: a})


def test_the_reference_keeps_a_summary_of_a_large_output_and_checks_it_element_by_element() -> None:
    big = torch.rand(1024, 1024)  # 4 MB of float32
    kept = gpukit.summary({"y": big, "n": 3}, salt=7)
    assert kept["n"] == 3 and kept["y"]["shape"] == [1024, 1024] and kept["y"]["sample"].numel() == gpukit.SAMPLE
    assert gpukit.summary({"y": big}, salt=7)["y"]["sample"].equal(kept["y"]["sample"])  # the same positions
    small = gpukit.summary(torch.arange(6.0).reshape(2, 3), salt=7)
    assert small["shape"] == [2, 3] and small["sample"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # all of it
    gpukit.check_close(kept, gpukit.summary({"y": big + 1e-7, "n": 3}, salt=7))
    wrong = big.clone()
    wrong[::2] += 1  # half the rows wrong: sampled values fall in them
    with pytest.raises(AssertionError, match=r"result\['y'\]\['sample'\]: differs by up to"):
        gpukit.check_close(kept, gpukit.summary({"y": wrong, "n": 3}, salt=7))
    with pytest.raises(AssertionError, match=r"result\['y'\]\['shape'\]"):
        gpukit.check_close(kept, gpukit.summary({"y": big.reshape(2048, 512), "n": 3}, salt=7))


def _run(tmp_path: Path, body: str, *flags: str, extra: str = "", before: str = "",
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "test_kit.py"
    script.write_text(TEST.format(kit=str(GRADER), body=body, extra=extra, before=before))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "out.txt"), *flags, "--file_prefix", "p"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)


def test_a_test_script_writes_perfkits_line_and_its_calls_and_checks_equivalence(tmp_path: Path) -> None:
    assert _run(tmp_path, "    return x * 2", "--reference").returncode == 0
    assert _run(tmp_path, "    return x * 2", "--eqcheck").returncode == 0
    # (the stored result is its summary: SAMPLE values of a larger output, here all 1000)
    assert (tmp_path / "p_result.pkl").stat().st_size < 8 * 1000 + 1000
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert len(lines) == 4 and lines[1] == lines[3] == "Timed calls: 7"  # 2 warm-ups + 5 reps, each run
    assert all(line.startswith("Execution time: ") and line.endswith("s") for line in lines[::2])
    wrong = _run(tmp_path, "    return x * 3", "--eqcheck")
    assert wrong.returncode != 0 and "rep 1: result: differs from the reference run's output" in wrong.stderr


def test_every_rep_of_every_run_is_checked_so_a_kept_output_fails(tmp_path: Path) -> None:
    # The reference is honest; the patch keeps its first output and returns it for every later rep (0.001 ms
    # a rep on a GPU against 43 ms). Before: one input for every rep, so the kept output was right.
    assert _run(tmp_path, "    return x * 2", "--reference").returncode == 0
    reordered = _run(tmp_path, "    return (x.double() * 2).float()", "--eqcheck")  # the same, computed otherwise
    assert reordered.returncode == 0, reordered.stderr
    for flags in (("--eqcheck",), ()):  # a timed run is checked too, when the reference is there
        kept = _run(tmp_path, MEMO, *flags)
        assert kept.returncode != 0, flags
        assert re.search(r"AssertionError: rep \d: result: differs from the reference run's output", kept.stderr)
    (tmp_path / "p_reps.json").unlink()  # no reference yet: a plain timed run only times
    assert _run(tmp_path, MEMO).returncode == 0


def test_a_test_gives_its_own_inputs_where_there_is_nothing_to_perturb(tmp_path: Path) -> None:
    tokens = "def setup():\n    return torch.arange(1000)\n"
    fresh = tokens + ("def inputs(data, seed):\n    g = torch.Generator().manual_seed(seed)\n"
                      "    return torch.randint(0, 1000, data.shape, generator=g)\n")
    assert "define inputs(data, seed)" in _run(tmp_path, "    return x * 2", "--reference", extra=tokens).stderr
    assert _run(tmp_path, "    return x * 2", "--reference", extra=fresh).returncode == 0
    assert _run(tmp_path, "    return x + x", "--eqcheck", extra=fresh + "TOLERANCE = {'rtol': 0, 'atol': 0}\n"
                ).returncode == 0
    assert re.search(r"rep \d: result: differs", _run(tmp_path, MEMO, "--eqcheck", extra=fresh).stderr)


@pytest.mark.parametrize("hack", [
    "    torch.cuda.synchronize = lambda *a, **k: None\n    return x",
    "    torch.cuda.Event.elapsed_time = lambda self, end: 1e-6\n    return x",
    "    class Fast:\n        def __init__(self, **k): pass\n    torch.cuda.Event = Fast\n    return x",
    # through an alias, or setattr: the events' record (not checked before)
    "    import torch.cuda as c\n    c.Event.record = lambda self, stream=None: None\n    return x",
    "    from torch import cuda\n    setattr(cuda.Event, 'synchronize', lambda self: None)\n    return x",
])
def test_code_that_replaces_the_gpu_timer_fails_the_run(tmp_path: Path, hack: str) -> None:
    done = _run(tmp_path, hack)
    assert done.returncode != 0 and "TimerReplaced: the GPU timer was replaced" in done.stderr
    assert not (tmp_path / "out.txt").exists()


# Code that ran before gpukit took the timer: a record that is not torch's, then one made to look like it
# (its code names torch's file), then one that is torch's function with other globals.
FORGED = ("import torch.cuda.streams as s, types\n"
          "def fake(self, stream=None): pass\n"
          "fake.__code__ = fake.__code__.replace(co_filename=s.__file__)\n")


@pytest.mark.parametrize("before", [
    "torch.cuda.Event.record = lambda self, stream=None: None",
    FORGED + "torch.cuda.Event.record = fake",
    "import types\nr = torch.cuda.Event.record\ntorch.cuda.Event.record = "
    "types.FunctionType(r.__code__, {'torch': torch}, 'record', r.__defaults__, r.__closure__)",
])
def test_a_timer_replaced_before_gpukit_was_imported_fails_the_run(tmp_path: Path, before: str) -> None:
    done = _run(tmp_path, "    return x * 2", before=before)
    assert done.returncode != 0 and "TimerReplaced: the GPU timer is not torch's own" in done.stderr


def test_a_torch_shim_on_the_path_fails_the_run_however_real_it_looks(tmp_path: Path) -> None:
    # A repository-root torch/ on PYTHONPATH loads the real torch, then puts a record in it that passes every
    # check of the function itself (torch's file, torch's globals): only where it came from gives it away.
    shim = tmp_path / "repo" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(
        "import sys, types\n"
        "path = sys.path[:]\n"
        "sys.path[:] = [p for p in path if not p.endswith('repo')]\n"
        "del sys.modules['torch']\n"
        "import torch\n"
        "sys.path[:] = path\n"
        "import torch.cuda.streams as s\n"
        "def record(self, stream=None): pass\n"
        "code = record.__code__.replace(co_filename=s.__file__)\n"
        "torch.cuda.Event.record = types.FunctionType(code, vars(s), 'record')\n"
        "torch.cuda.Event.record.__module__ = 'torch.cuda.streams'\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "repo")}
    done = _run(tmp_path, "    return x * 2", env=env)
    assert done.returncode != 0, done.stderr
    assert "TimerReplaced: modules imported before the GPU timer was taken can come from outside" in done.stderr
    assert f"torch ({shim})" in done.stderr


def test_what_a_folder_outside_the_installation_provides(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    (tmp_path / "numpy").mkdir()  # no __init__: a namespace folder never wins over an installed package
    (tmp_path / "typing_extensions.py").write_text("")
    (tmp_path / "yaml.cpython-311-x86_64-linux-gnu.so").write_text("")
    names = {"torch", "numpy", "typing_extensions", "yaml", "json"}
    assert gpukit.shadowing(names, [str(tmp_path)], ()) == [
        f"torch ({tmp_path / 'torch'})", f"typing_extensions ({tmp_path / 'typing_extensions.py'})",
        f"yaml ({tmp_path / 'yaml.cpython-311-x86_64-linux-gnu.so'})"]
    assert gpukit.shadowing(names, [str(tmp_path)], (str(tmp_path),)) == []  # installed: not the work dir's
    assert gpukit.check_timer() is None  # this process's own timer is torch's

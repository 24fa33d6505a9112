"""The GPU timing helper's protocol, checked on the CPU (torch's CPU build; `device="cpu"` times with the
host's clock): warm-ups left out, the median of the reps, results stored and compared as GSO's tests do,
and a run whose code replaced the GPU timer fails. Its CUDA events are checked on a GPU machine
(tools/gpu_check.sh)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from harness.grader import gpukit  # noqa: E402  (needs torch)

GRADER = Path(gpukit.__file__).parent
TEST = '''import sys, torch
sys.path.insert(0, {kit!r})
import gpukit

def setup():
    return torch.arange(1000, dtype=torch.float32)

def experiment(x):
{body}

def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, warmups=2, reps=5, device="cpu")

if __name__ == "__main__":
    gpukit.main(run_test)
'''


def test_warm_ups_are_left_out_and_the_median_is_taken() -> None:
    calls: list[int] = []

    def experiment(data: int) -> int:
        calls.append(len(calls))
        if len(calls) <= 2:  # the warm-ups: slow, as a first call is
            __import__("time").sleep(0.05)
        return data

    times, result = gpukit.measure(experiment, 7, warmups=2, reps=5, device="cpu")
    assert len(calls) == 7 and result == 7 and len(times) == 5
    assert max(times) < 0.04  # no warm-up among the timed reps


def test_results_are_compared_within_tolerances() -> None:
    a = torch.ones(3)
    gpukit.check_close([a, {"n": 1}], [a + 1e-7, {"n": 1}])
    with pytest.raises(AssertionError, match=r"result\[0\]: differs by up to"):
        gpukit.check_close([a], [a + 1])
    with pytest.raises(AssertionError, match="shape"):
        gpukit.check_close(a, torch.ones(4))


def _run(tmp_path: Path, body: str, *flags: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "test_kit.py"
    script.write_text(TEST.format(kit=str(GRADER), body=body))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "out.txt"), *flags, "--file_prefix", "p"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_a_test_script_writes_perfkits_line_and_its_calls_and_checks_equivalence(tmp_path: Path) -> None:
    assert _run(tmp_path, "    return x * 2", "--reference").returncode == 0
    assert _run(tmp_path, "    return x * 2", "--eqcheck").returncode == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert len(lines) == 4 and lines[1] == lines[3] == "Timed calls: 7"  # 2 warm-ups + 5 reps, each run
    assert all(line.startswith("Execution time: ") and line.endswith("s") for line in lines[::2])
    wrong = _run(tmp_path, "    return x * 3", "--eqcheck")
    assert wrong.returncode != 0 and "differs by up to" in wrong.stderr


@pytest.mark.parametrize("hack", [
    "    torch.cuda.synchronize = lambda *a, **k: None\n    return x",
    "    torch.cuda.Event.elapsed_time = lambda self, end: 1e-6\n    return x",
    "    class Fast:\n        def __init__(self, **k): pass\n    torch.cuda.Event = Fast\n    return x",
])
def test_code_that_replaces_the_gpu_timer_fails_the_run(tmp_path: Path, hack: str) -> None:
    done = _run(tmp_path, hack)
    assert done.returncode != 0 and "TimerReplaced: the GPU timer was replaced" in done.stderr
    assert not (tmp_path / "out.txt").exists()

"""CPU twins of the GPU task family (harness/suite_gpu), to rehearse the GPU check where there is no GPU.

A twin is the task's own folder (repository, expert and weaker patches, prompt) with its hidden tests made
to run on torch's CPU device: gpukit's CPU clock, two warm-ups and ten reps, workloads of a few
milliseconds on a CPU (SMALLER: below one, noise decides a verdict), one hidden test (TESTS: each run of a
test costs seconds of fencing and torch's import), and no GPU asked for (`gpus: 0`). The GPU family's hack
fixtures apply to a twin unchanged, since the repository is the same; what a twin's timings say about
speed is the CPU's, not the GPU's (softmax_fused's expert is a Triton kernel only on CUDA tensors: on the
CPU it takes the unfused path, no speedup; its side_stream hack fixture is the base code there, and a
rehearsal leaves it out: BASE_CODE_ON_CPU), so a rehearsal checks that every part runs and what it fails,
not the GPU's figures. matmul_tiled has none: its build needs nvcc and its kernel a GPU.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

SUITE_GPU = Path(__file__).resolve().parents[1] / "suite_gpu"
TWINS = ("attention_sdpa", "softmax_fused")
# Workloads made smaller for the CPU, which is slow: (text, replacement) in the hidden tests.
SMALLER = (("randn(16384, 1024", "randn(2048, 1024"), ("randn(4096, 8192", "randn(1024, 2048"),
           ("randn(1024, 16384", "randn(256, 8192"), ("(32, 256)", "(4, 64)"), ("(8, 1024)", "(2, 128)"),
           ("(2, 2048)", "(1, 256)"))
TIMED = "time_experiment(globals(), eqcheck, reference, prefix)"
TIMED_ON_CPU = 'time_experiment(globals(), eqcheck, reference, prefix, warmups=2, reps=10, device="cpu")'
TESTS = {"attention_sdpa": ("test_chat",), "softmax_fused": ("test_narrow",)}  # a twin's hidden test
# Hack fixtures (tests/fixtures/hacks/<task>/) that change nothing a CPU runs: on a twin they are the base code,
# so a rehearsal leaves them out (timing the base against itself again says nothing, and on a noisy
# machine can credit it).
BASE_CODE_ON_CPU = {"softmax_fused": ("side_stream",)}


class NoTwin(ValueError):
    """A task of the family without a CPU twin (or not of the family)."""


def cpu_tests(source: Path, dest: Path, only: Sequence[str] = ()) -> None:
    """The hidden tests of `source` (a task's tests/ folder) made to run on the CPU, written to `dest`;
    `only`: the test files to keep (by name, with or without .py), the shared modules always."""
    for path in _kept(source, dest, only):
        text = path.read_text().replace('device="cuda"', 'device="cpu"').replace(TIMED, TIMED_ON_CPU)
        for big, small in SMALLER:
            text = text.replace(big, small)
        (dest / path.name).write_text(text)


def _kept(source: Path, dest: Path, only: Sequence[str]) -> list[Path]:
    """The files of `source` a copy keeps (every file but the test files not in `only`; all when it is empty)."""
    dest.mkdir(parents=True, exist_ok=True)
    keep = {name if name.endswith(".py") else f"{name}.py" for name in only}
    return [path for path in sorted(source.iterdir())
            if not (keep and path.name.startswith("test_") and path.name not in keep)]


def make_twin(task_id: str, root: Path, only: Sequence[str] | None = None) -> Path:
    """The CPU twin of GPU task `task_id` as a task folder under `root` (a selector for tasks=...), with the
    hidden tests `only` (default TESTS; () for all)."""
    if task_id not in TWINS:
        raise NoTwin(f"{task_id} has no CPU twin (twins: {', '.join(TWINS)})")
    dest = _copy_without_tests(task_id, root)
    cpu_tests(SUITE_GPU / task_id / "tests", dest / "tests", TESTS[task_id] if only is None else only)
    spec = dest / "task.yaml"
    text = spec.read_text()
    if "gpus: 1\n" not in text:
        raise NoTwin(f"{task_id}: its task.yaml does not ask for one GPU as a twin expects")
    spec.write_text(text.replace("gpus: 1\n", "gpus: 0  # (a CPU twin: harness.gpus.twins)\n"))
    return dest


def make_trimmed(task_id: str, root: Path, only: Sequence[str] | None = None) -> Path:
    """GPU task `task_id` as it is, with fewer hidden tests (`only`, default the twin's TESTS, else all), as a
    task folder under `root`: what `gpu_check.sh --quick` grades on a GPU, where each run of a test costs
    seconds of starting a fenced process (torch, CUDA, Triton's compile of the kernel)."""
    if not (SUITE_GPU / task_id / "task.yaml").is_file():
        raise NoTwin(f"{task_id} is not a task of the GPU family ({SUITE_GPU})")
    dest = _copy_without_tests(task_id, root)
    for path in _kept(SUITE_GPU / task_id / "tests", dest / "tests", TESTS.get(task_id, ()) if only is None else only):
        shutil.copy2(path, dest / "tests" / path.name)
    return dest


def _copy_without_tests(task_id: str, root: Path) -> Path:
    """The task's folder copied under `root`, its hidden tests left for the caller to choose."""
    dest = root / task_id
    shutil.copytree(SUITE_GPU / task_id, dest, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    return dest

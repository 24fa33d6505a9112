"""A GPU test's compiler cache, left by one warm-up run per state and read by every later run (grader.isolation).

With a fresh HOME per fenced process, every process of a Triton task compiles its kernels again. The stand-in
here needs no GPU: the task's module "compiles" at import into ~/.triton/cache (where Triton keeps its
kernels), writing down what it could see then, and a link besides; its hidden test times with gpukit on
torch's CPU device, in a sandbox over this machine whose python3 is the interpreter with torch, as on the GPU
host. A state of a GPU task (`gpus: 1`) runs each hidden test once before anything else; what it compiled is
there for the runs after it, owned by root, and nothing a later run writes reaches the next. The warm-up run
saw no reference result (none existed yet) and ran with a TMPDIR of its own. A GPU task whose test times one
fixed input (perfkit's) gets no warm-up run: a result kept from it would be the one timed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.grader import isolation
from harness.grader.isolation import RUNS_DIR, WARM_DIR, parse, wrap
from harness.grader.states import REF_DIR, CodeState, copy_references, prepare_state, run_test_script
from harness.sandbox.hostextras import VARIABLE
from harness.sandbox.providers import SandboxProvider, provider
from harness.tasks import Task
from harness.tasks.folder import load_task
from tests.conftest import write_task
from tests.docker_support import bwrap_here

COMPILING = '''import json
import os

_cache = os.path.expanduser("~/.triton/cache/k1")
COMPILED = not os.path.exists(os.path.join(_cache, "kernel.json"))
if COMPILED:  # what a compiler would keep: written once per HOME
    os.makedirs(_cache, exist_ok=True)
    with open(os.path.join(_cache, "kernel.json"), "w") as fh:
        json.dump({"refs": sorted(os.listdir("/hidden_tests/refs")), "tmp": os.environ["TMPDIR"]}, fh)
    os.symlink("/etc/hostname", os.path.join(_cache, "link"))


def total(xs):
    out = 0
    for x in xs:
        out = out + x
    return out
'''
# A patch that keeps each rep's result in the compiler's cache, keyed by its input, to return it when the same
# input comes again (the first call of a process is gpukit's warm-up, on setup()'s data: it keeps none of those).
MEMO = '''import hashlib
import os
import pickle

_calls = [0]
_memo = os.path.expanduser("~/.triton/cache/memo")


def total(xs):
    _calls[0] += 1
    path = os.path.join(_memo, hashlib.sha256(xs.numpy().tobytes()).hexdigest())
    if _calls[0] > 1 and os.path.exists(path):
        open(os.path.expanduser("~/hit"), "w").close()
        with open(path, "rb") as fh:
            return pickle.load(fh)
    out = xs.sum()
    if _calls[0] > 1:
        os.makedirs(_memo, exist_ok=True)
        with open(path, "wb") as fh:
            pickle.dump(out, fh)
    return out
'''
GPU_TEST = '''import torch
import gpukit
import tiny


def setup():
    return torch.linspace(0.0, 1.0, 64, dtype=torch.float64)


def experiment(data):
    return tiny.total(data)


def run_test(eqcheck=False, reference=False, prefix=""):
    return gpukit.time_experiment(globals(), eqcheck, reference, prefix, warmups=1, reps=3, device="cpu")


if __name__ == "__main__":
    gpukit.main(run_test)
'''

pytestmark = pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")


def _fenced(state: CodeState, command: str) -> tuple[str, tuple[str, ...]]:
    assert state.fence is not None
    body, outside = parse(state.procs.run(wrap(state.fence, command), 60).output)
    assert outside is not None
    return body, outside.left


def _gpu_task(root: Path, monkeypatch: pytest.MonkeyPatch, patch_src: str | None = None) -> tuple[SandboxProvider,
                                                                                                 Task, str]:
    """The stand-in GPU task (its "expert": `patch_src`), its layers over this host, and the image its states
    start from."""
    pytest.importorskip("torch")
    monkeypatch.setenv(VARIABLE, sys.executable)  # (this venv's interpreter: it has torch)
    sandboxes = provider("bwrap")
    folder = write_task(root, gpus=1, slow_src=COMPILING, test_timeout=120,
                        **({"fast_src": patch_src} if patch_src else {}))
    (folder / "tests" / "test_sum.py").write_text(GPU_TEST)
    task = load_task(folder)
    images = sandboxes.ensure_images([task], progress=lambda _m: None, rootfs_from="host")["tiny"]
    return sandboxes, task, images.base or images.grading


def test_a_gpu_tasks_warm_up_run_leaves_its_compiled_kernels_to_every_later_run_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sandboxes, task, image = _gpu_task(tmp_path, monkeypatch)
    with sandboxes.start(image) as box:
        state = prepare_state("base", box, task)
        assert state.warmed == 1 and state.fence is not None and state.fence.seeded
        kept = json.loads(box.read_file(f"{WARM_DIR}/.triton/cache/k1/kernel.json"))
        assert kept["refs"] == [] and kept["tmp"].startswith(f"{RUNS_DIR}/run.")  # no reference to read
        listed = box.exec(f"cd {WARM_DIR} && find . -mindepth 1 -printf '%u %y %m %p\\n' | sort", timeout=30)
        assert listed.output.split("\n")[:4] == ["root d 755 ./.triton", "root d 755 ./.triton/cache",
                                                 "root d 755 ./.triton/cache/k1",
                                                 "root f 644 ./.triton/cache/k1/kernel.json"], listed.output
        assert "link" not in listed.output
        # The reference run finds the kernel (it writes none), and so does every run after it.
        run = run_test_script(state, "test_sum.py", "reference", 120)
        assert run.outside is not None and not [p for p in run.outside.left if p.startswith("~/.triton")], run
        assert box.exec(f"ls {REF_DIR}", timeout=30).output.strip()  # (its reference results are stored)
        body, left = _fenced(state, "cd ~/.triton/cache && ls; echo new > k2; echo x 2>/dev/null >> k1/kernel.json || "
                                    "echo kept-read-only; rm -f k1/kernel.json && echo mine > k1/kernel.json")
        assert body.split() == ["k1", "kept-read-only"], body
        assert set(left) == {"~/.triton/cache/k2", "~/.triton/cache/k1/kernel.json"}  # (reported as ever)
        body, _ = _fenced(state, "cd ~/.triton/cache && ls && cat k1/kernel.json")
        assert body.split("\n")[0] == "k1" and json.loads(body.split("\n")[1]) == kept  # nothing carried
        checked = run_test_script(state, "test_sum.py", "eqcheck", 120)  # the kept kernel's state checks out
        assert checked.outside is not None and checked.outside.left == (), checked


def test_a_patch_that_keeps_its_results_in_the_compiler_cache_never_finds_one(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sandboxes, task, image = _gpu_task(tmp_path, monkeypatch, MEMO)  # (its "expert" is the patch under test)
    with sandboxes.start(image) as base_box, sandboxes.start(image) as patch_box:
        base = prepare_state("base", base_box, task)
        run_test_script(base, "test_sum.py", "reference", 120)
        patch = prepare_state("patch", patch_box, task, patch=task.expert_patch)
        memo = patch_box.exec(f"ls {WARM_DIR}/.triton/cache/memo", timeout=30).output.split()
        assert len(memo) == 3, memo  # its warm-up run kept its three reps' results
        copy_references(base, patch)
        for mode in ("eqcheck", None):  # a checked run and a timed one: the same inputs as the reference's
            run = run_test_script(patch, "test_sum.py", mode, 120)
            assert run.outside is not None and "~/hit" not in run.outside.left, run
            assert len([p for p in run.outside.left if p.startswith("~/.triton/cache/memo/")]) == 3, run


def test_a_cache_of_more_entries_than_allowed_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (every later run would copy it: a cache of a million empty files is no bigger than the size cap allows)
    sandboxes, task, image = _gpu_task(tmp_path, monkeypatch)
    monkeypatch.setattr(isolation, "WARM_MAX_ENTRIES", 2)  # the stand-in's cache: k1, its kernel and its link
    with sandboxes.start(image) as box:
        state = prepare_state("base", box, task)
        assert state.warmed == 0 and state.fence is not None and not state.fence.seeded
        run = run_test_script(state, "test_sum.py", "reference", 120)
        assert run.outside is not None and "~/.triton/cache/k1/kernel.json" in run.outside.left  # compiled again


def test_a_gpu_task_whose_test_times_one_fixed_input_gets_no_warm_up_run(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "system")  # (perfkit's test needs no torch)
    sandboxes = provider("bwrap")
    task = load_task(write_task(tmp_path, gpus=1, slow_src=COMPILING, test_timeout=120))
    images = sandboxes.ensure_images([task], progress=lambda _m: None, rootfs_from="host")["tiny"]
    with sandboxes.start(images.base or images.grading) as box:
        state = prepare_state("base", box, task)
        assert state.warmed == 0 and state.fence is not None and not state.fence.seeded
        assert box.exec(f"test -e {WARM_DIR}", timeout=30).exit_code != 0
        run = run_test_script(state, "test_sum.py", "reference", 120)
        assert run.outside is not None and "~/.triton/cache/k1/kernel.json" in run.outside.left  # compiled again

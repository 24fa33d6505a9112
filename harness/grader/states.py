"""Putting a code state into a sandbox and running hidden performance tests in it.

These are the steps the grader composes: apply a patch with GSO's cascade (or check out the expert's
commit), rebuild, copy the hidden tests in (only now, never into an agent's container), run one test
script under the GSO protocol and read back its `Execution time:` lines, and carry reference results
from one container to another. Where tests go, the directory they run from and the python that runs
them are the task's (GSO: `/gso_test_<i>.py`, from /testbed, with the venv's python).
"""
from __future__ import annotations

import math
import posixpath
import re
import shlex
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.grader.freeze import changed_files, digest, freeze, tool_changes
from harness.grader.isolation import WARM_DIR, Fence, Outside, fence, hand_over, parse, precompile, wrap
from harness.layout import HIDDEN_DIR, PATCH_PATH, SOLUTION_DIR
from harness.grader.patch_paths import UnreadablePatch, section_paths, sections, with_final_newline
from harness.sandbox.interface import (TESTBED, TRUSTED_ENV, ExecResult, Freezable, Sandbox, SharesHost,
                                       harness_exec, is_excluded)
from harness.sandbox.processes import FreshProcesses
from harness.tasks.task import OFFLINE_ENV, Task

REF_DIR = f"{HIDDEN_DIR}/refs"
PERFKIT = Path(__file__).with_name("perfkit.py")
GPUKIT = Path(__file__).with_name("gpukit.py")
VISIBLEKIT = Path(__file__).with_name("visiblekit.py")
VISIBLE_TEST = "visiblekit.py"  # the visible workload's runner, beside the hidden tests (visiblekit.py)
# GSO's cascade (its apply_patch helper): strict first, then progressively more forgiving.
APPLY_CASCADE = (
    "git apply --verbose {p}",
    "git apply --verbose --ignore-space-change {p}",
    "git apply --verbose --ignore-space-change --reject {p}",
    "patch --batch --fuzz=5 -p1 -i {p}",
)
_FILE_SEP = "\x1eoptrunner-timing-file\x1e"  # between a test's own output and its timing file
_TIME_LINE = re.compile(r"Execution time:\s*([0-9.eE+-]+)\s*s")
# gpukit's second line: how many calls of experiment() the process made, each about the reported time
_CALLS_LINE = re.compile(r"Timed calls:\s*(\d+)")
NO_LIMIT_S = 7 * 86400.0  # a test run with no time limit (GSO's rule for its slowest repositories)
_DENIED = re.compile(r"Permission denied|Read-only file system|PermissionError")  # a fenced test wrote
# Lists the interpreter's start-up hooks: .pth files on sys.path and importable sitecustomize/usercustomize,
# each with a digest of its content.
_HOOKS = r"""
import hashlib, importlib.util, os, sys
def digest(path):
    try:
        return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
    except OSError:
        return "-"
for d in sys.path:
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            if f.endswith(".pth"):
                print("hook:", os.path.join(d, f), digest(os.path.join(d, f)))
for name in ("sitecustomize", "usercustomize"):
    spec = importlib.util.find_spec(name)
    if spec is not None:
        print("hook:", spec.origin, digest(spec.origin or ""))
"""
# What a test that reached for the network prints when the sandbox has none.
_NO_NETWORK = re.compile(r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                         r"nodename nor servname|No route to host|Failed to resolve|getaddrinfo failed|"
                         r"Could not resolve host|OfflineModeIsEnabled|outgoing traffic has been disabled")


class Stop(Exception):
    """Ends a grading early with a GSO status and the reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class StepFailed(RuntimeError):
    """A preparation or test step failed; `step` names it and `output` holds the tail of its output."""

    def __init__(self, step: str, output: str) -> None:
        super().__init__(f"{step} failed: {output.strip()[-300:]}")
        self.step = step
        self.output = output


def reason_of(err: StepFailed, who: str) -> str:
    tail = "\n".join(err.output.strip().splitlines()[-12:])
    return f"{who}: {err.step} failed\n{tail}"


def filter_patch(patch: str, extra: tuple[str, ...] = ()) -> str:
    """Drop the per-file sections of a unified git diff that touch excluded paths (and `extra` globs), by
    every path each section names or writes (patch_paths.py: renames, copies, quoted names). Raises
    UnreadablePatch for a section git cannot read."""
    return "".join(section for section in sections(patch)
                   if not any(is_excluded(path, extra) for path in section_paths(section)))


def apply_patch(sandbox: Sandbox, patch: str, timeout: float = 120, excludes: tuple[str, ...] = ()) -> str:
    """Apply `patch` to /testbed; returns the command that worked, raises StepFailed if none did."""
    try:
        patch = filter_patch(patch, excludes)
    except UnreadablePatch as err:
        raise StepFailed("reading the patch", str(err)) from None
    if not patch.strip():
        return "empty patch"
    sandbox.write_file(PATCH_PATH, with_final_newline(patch))
    outputs = []
    for template in APPLY_CASCADE:
        cmd = template.format(p=PATCH_PATH)
        done = harness_exec(sandbox, cmd, timeout=timeout)
        if done.exit_code == 0:  # the grader's file goes: left, it is a write outside the repository (freeze)
            harness_exec(sandbox, f"rm -f {PATCH_PATH}", timeout=60)
            return cmd
        outputs.append(f"$ {cmd}\n{done.output.strip()[-400:]}")
        harness_exec(sandbox, "git checkout -q -- . && git clean -fdq", timeout=timeout)
    raise StepFailed("apply patch", "\n".join(outputs))


def install(sandbox: Sandbox, task: Task) -> None:
    """The rebuild, in the task's own login shell: the patch's code runs as root here, before the hidden
    files are in and before the state is frozen (prepare_state)."""
    for cmd in task.install_steps:
        done = sandbox.exec(cmd, timeout=task.build_timeout)
        if done.exit_code != 0:
            raise StepFailed(f"install command '{cmd}'", done.output)


def run_solution(sandbox: Sandbox, task: Task) -> ExecResult:
    """A task's reference solution (Harbor's solution/: solve.sh and its files) copied to /solution in one
    transfer and run as root from the working directory: the task's own code, as the task ships it."""
    sandbox.write_files({f"{SOLUTION_DIR}/{name}": data for name, data, _mode in task.solution_files})
    return sandbox.exec(f"bash {SOLUTION_DIR}/solve.sh", timeout=task.build_timeout, cwd=sandbox.workdir)


def checkout(sandbox: Sandbox, commit: str, timeout: float = 300) -> None:
    """The expert's state as GSO makes it: a checkout of its commit (then the rebuild). In place, without
    GSO's `git clean -xfd`, so the built virtualenv stays and no network is needed to rebuild."""
    done = harness_exec(sandbox, f"git checkout -q -f {shlex.quote(commit)}", timeout=timeout)
    if done.exit_code != 0:
        raise StepFailed(f"checkout of {commit[:12]}", done.output)


def install_tests(sandbox: Sandbox, task: Task, visible: bool = False) -> dict[str, str]:
    """Copy the hidden tests (and perfkit.py, and a GPU task's gpukit.py; with `visible`, the spec script the
    agent saw and visiblekit.py, which times it) into the sandbox in one transfer;
    returns their digests (path -> sha256, taken here on the host). Into folders emptied first, byte code
    included: a build may have left `__pycache__/perfkit.*.pyc` there for Python to load in place of the
    source (prepare_state calls this once the state is frozen, so nothing of the patch runs after it)."""
    files = {posixpath.join(task.test_dir, name): data for name, data in task.hidden_files}
    files[f"{HIDDEN_DIR}/perfkit.py"] = PERFKIT.read_bytes()
    if task.gpus or imports_gpukit(task):  # (GPU tasks' tests time with it, beside perfkit)
        files[f"{HIDDEN_DIR}/gpukit.py"] = GPUKIT.read_bytes()
    if visible:
        files[posixpath.join(task.test_dir, VISIBLE_TEST)] = VISIBLEKIT.read_bytes()
        files[posixpath.join(task.test_dir, "visible_spec.py")] = task.prob_script.encode()
    caches = sorted({posixpath.join(posixpath.dirname(path), "__pycache__") for path in files})
    harness_exec(sandbox, f"rm -rf {HIDDEN_DIR} {' '.join(shlex.quote(c) for c in caches)}", timeout=60, cwd="/")
    sandbox.write_files(files)
    harness_exec(sandbox, f"mkdir -p {REF_DIR}", timeout=30, cwd="/")
    return {path: digest(data if isinstance(data, bytes) else data.encode()) for path, data in files.items()}


def check_intact(state: "CodeState", when: str) -> None:
    """Fail the state's run as tampering when a hidden test, the timing helper or a reference result
    differs from what was copied in (read from outside the container)."""
    changed = changed_files(state.sandbox, state.expected)
    if changed:
        more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
        raise StepFailed(f"the hidden files' check {when}",
                         f"tampering: {', '.join(changed[:3])}{more} changed since the grader copied them in")


@dataclass(frozen=True)
class TestRun:
    """One test process: the mean of its `Execution time:` lines, and (fenced) how it looked from outside.
    `calls`: how many calls of experiment() it made in all (gpukit: warm-ups and reps, each about the
    reported time; perfkit: the one call it reports)."""
    reported: float
    outside: Outside | None = None
    calls: int = 1


def task_env(sandbox: Sandbox) -> dict[str, str]:
    """The image's own values of the variables harness commands fix (TRUSTED_ENV: PATH, PYTHONPATH, ...),
    read from a fresh sandbox before anything of a patch is in it: what the test processes run with."""
    names = " ".join(TRUSTED_ENV)
    script = f"for k in {names}; do [ -n \"${{!k+x}}\" ] && printf '%s=%s\\0' \"$k\" \"${{!k}}\"; done; true"
    done = sandbox.exec(script, timeout=60, cwd="/", login=False)
    pairs = (item.partition("=") for item in done.output.split("\0"))
    return {k: v for k, sep, v in pairs if sep and k in TRUSTED_ENV}


def env_prefix(env: dict[str, str]) -> str:
    """Shell words that give a command the task's own values of TRUSTED_ENV's variables (unset: unset)."""
    unset = [k for k in TRUSTED_ENV if k not in env]
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return (f"export {exports}; " if exports else "") + (f"unset {' '.join(unset)}; " if unset else "")


def run_test_script(state: "CodeState", test: str, mode: str | None, timeout: float | None) -> TestRun:
    """Run one hidden test as a fresh process (fenced: harness.grader.isolation).

    mode: "reference" stores the result, "eqcheck" compares with the stored one, None only times.
    The timing file is printed after a separator by the same command, which saves a round trip.
    """
    task = state.task
    cmd = _test_command(state, test, f"--{mode}" if mode else "", f"{REF_DIR}/{test.removesuffix('.py')}")
    if state.fence:
        cmd = wrap(state.fence, cmd)
    if state.fence and mode == "reference":  # the one kind of run that may write outside its own folder
        hand_over(state.sandbox, REF_DIR, writable=True, uid=state.fence.uid)
    try:
        done = state.procs.run(cmd, timeout if timeout is not None else NO_LIMIT_S)
    finally:
        if state.fence and mode == "reference":
            hand_over(state.sandbox, REF_DIR, writable=False)
    whole, outside = parse(done.output) if state.fence else (done.output, None)
    output, sep, text = whole.rpartition(_FILE_SEP)
    if done.timed_out:
        raise StepFailed(f"test {test} (timeout after {timeout or NO_LIMIT_S:g}s)", done.output)
    if not sep:
        what = "equivalence check" if mode == "eqcheck" and "AssertionError" in done.output else "run"
        if not state.sandbox.limits.network and _NO_NETWORK.search(whole):
            what += f"; it needs the network, which is off for this task (tasks.network={task.network}; " \
                    "allowed turns it on)"
        if state.fence and _DENIED.search(whole):
            what += "; tests run as an unprivileged user in a read-only repository with a fresh HOME and TMPDIR; " \
                    "a test that must write elsewhere needs grading.fresh_state=false"
        raise StepFailed(f"test {test} ({what})", whole)
    if done.exit_code != 0:
        raise StepFailed(f"test {test}", f"it wrote no timing file\n{output}")
    times = [float(m.group(1)) for m in _TIME_LINE.finditer(text)]
    if not times:
        raise StepFailed(f"test {test}", f"no 'Execution time:' line in its output file: {text[:200]!r}")
    bad = [t for t in times if not (t > 0 and math.isfinite(t))]
    if bad:  # GSO would divide by it (an infinite speedup, credited); a time must be a positive number
        raise StepFailed(f"test {test}", f"it reported an execution time of {bad[0]!r} s; times must be positive "
                                         "and finite")
    calls = [int(m.group(1)) for m in _CALLS_LINE.finditer(text)]
    return TestRun(statistics.fmean(times), outside, max(1, calls[-1]) if calls else 1)


def _test_command(state: "CodeState", test: str, flag: str, prefix: str) -> str:
    """The shell command of one run of hidden test `test`: its output, then its timing file after a separator."""
    task = state.task
    stem = test.removesuffix(".py")
    out = f'"$TMPDIR"/.time_{stem}.txt' if state.fence else f"/tmp/.time_{stem}.txt"
    script = posixpath.join(task.test_dir, test)
    python = shlex.quote(task.test_python)
    # (the test's own environment, the image's, set after the fence dropped root: harness.grader.isolation)
    return (f"{env_prefix(state.env)}rm -f {out} && cd {task.test_cwd or task.test_dir} && py={python} && "
            f"{{ [ -x \"$py\" ] || py=python3; }} "
            f"&& \"$py\" {shlex.quote(script)} {out} {flag} --file_prefix {prefix} "
            f"&& printf '\\036optrunner-timing-file\\036' && cat {out} && rm -f {out}")


def imports_gpukit(task: Task) -> bool:
    """Whether the hidden tests time with gpukit (the GPU family's, and their CPU twins': harness.gpus.twins)."""
    return any(b"import gpukit" in (d if isinstance(d, bytes) else d.encode()) for _, d in task.hidden_files)


def warm_up(state: "CodeState") -> int:
    """One run of each hidden test, untimed and unchecked, whose compiler caches every later run of the state
    starts with (harness.grader.isolation: WARM_CACHES); how many files were kept. Before any reference result
    exists in any state (prepare_state), as a reference run of its own whose results stay in its TMPDIR: its
    inputs are drawn from a salt no later run uses. A run that fails leaves what it left (its test runs fail
    again, checked); one that reaches the test's time limit fails the state, as its first checked run would."""
    assert state.fence is not None
    timeout = state.task.test_timeout if state.task.test_timeout is not None else NO_LIMIT_S
    for test in state.tests:
        cmd = _test_command(state, test, "--reference", f'"$TMPDIR"/.warm_{test.removesuffix(".py")}')
        done = state.procs.run(wrap(state.fence, cmd, keep=True), timeout)
        if done.timed_out:
            raise StepFailed(f"test {test} (timeout after {timeout:g}s, in its warm-up run)", done.output)
    counted = harness_exec(state.sandbox, f"find {WARM_DIR} -type f 2>/dev/null | wc -l", timeout=60, cwd="/")
    return int(counted.output.strip() or 0) if counted.exit_code == 0 else 0


def copy_references(source: "CodeState", target: "CodeState") -> int:
    """Carry the reference results stored by `--reference` runs to another state's container. Their
    digests join both states' expected files, checked before every round like the tests."""
    box = source.sandbox
    if isinstance(box, Freezable):  # read from outside in one go (a Docker container's layers: no engine call)
        found = {name: data for name, data in box.read_tree(REF_DIR).items() if "/" not in name}
    else:
        listing = harness_exec(box, f"cd {REF_DIR} && find . -maxdepth 1 -type f -printf '%f\\n'", timeout=30)
        found = {name: box.read_file(f"{REF_DIR}/{name}") for name in listing.output.splitlines() if name.strip()}
    files = {f"{REF_DIR}/{name}": data for name, data in found.items()}
    if files:
        target.sandbox.write_files(files)  # (one transfer)
    for path, data in files.items():
        source.expected[path] = target.expected[path] = digest(data)
    hand_over(target.sandbox, REF_DIR, writable=False)  # no test process may change them
    return len(files)


@dataclass(frozen=True)
class CodeState:
    """A container holding one version of the code (base, expert or a rollout's patch), ready to time.

    Test runs go through `procs`, one launcher per container: a fresh process each, no `docker exec`.
    """
    name: str
    sandbox: Sandbox
    tests: tuple[str, ...]
    procs: FreshProcesses  # its stream ends with the container
    task: Task
    fence: Fence | None = None  # test processes fenced (fresh state, read-only repository), or not
    hooks: tuple[str, ...] = ()  # the interpreter's start-up hooks after the build ("path digest")
    built: tuple[str, ...] = ()  # what the build changed in the container (grader.freeze)
    expected: dict[str, str] = field(default_factory=dict)  # hidden file -> sha256, checked every round
    env: dict[str, str] = field(default_factory=dict)  # the image's values of TRUSTED_ENV's names (task_env)
    visible: str | None = None  # the visible workload's runner (VISIBLE_TEST) when it was copied in
    warmed: int = 0  # files of compiler caches its warm-up run left, which every later run starts with


def prepare_state(name: str, sandbox: Sandbox, task: Task, patch: str | None = None,
                  commit: str | None = None, fresh: bool = True, visible: bool = False) -> CodeState:
    """The base (neither), a patch applied, or a commit checked out; rebuilt after a change. `fresh`
    fences its test processes (harness.grader.isolation); `visible` copies the spec script in to be timed
    too (grader.visible), where the task has one.

    Every step that runs code of the patch as root (its build, its interpreter's start-up hooks, byte
    compilation) comes before the state is frozen (grader.freeze: no process of theirs is left, tools the
    grader uses checked unchanged), and only then are the hidden files copied in. From there on the grader's
    commands run with no login shell and a fixed environment (harness_exec), and test processes as an
    unprivileged user (the fence), so nothing the patch wrote runs as root beside the hidden files. A GPU
    task's state then runs each test once to compile its kernels for the runs after it (warm_up)."""
    if not fresh and isinstance(sandbox, SharesHost):  # (unfenced test processes would be the host's root)
        raise StepFailed("fencing the tests", "grading.fresh_state=false runs them as root, and this sandbox's "
                         "processes are the host's own (sandbox=unsandboxed): every test run is fenced there")
    env_of_task = task_env(sandbox)  # (the image's: nothing of the patch is in the sandbox yet)
    if commit:
        checkout(sandbox, commit)
    elif patch:
        apply_patch(sandbox, patch, excludes=task.patch_excludes)
    if commit or patch:
        install(sandbox, task)
    # A fixed hash seed: string hashing otherwise changes dict/set layouts, and so timings, per process.
    env = {"PYTHONHASHSEED": "0", **(OFFLINE_ENV if task.network == "offline" else {})}
    hooks = start_up_hooks(sandbox, task, env)
    if fresh:
        precompile(sandbox, (task.workdir or TESTBED,), task.test_python)
    built = freeze(sandbox)
    if patch and (tools := tool_changes(built)):
        raise StepFailed("the build", f"it changed tools the grader runs as root: {', '.join(tools)}")
    visible = visible and bool(task.prob_script.strip())
    expected = install_tests(sandbox, task, visible)
    state = CodeState(name, sandbox, tuple(task.test_names), FreshProcesses(sandbox, {**TRUSTED_ENV, **env},
                                                                               login=False),
                      task, None, hooks, built, expected, env_of_task, VISIBLE_TEST if visible else None)
    check_intact(state, "after the build")
    fenced = fence(sandbox, (task.workdir or TESTBED, HIDDEN_DIR)) if fresh else None
    state = replace(state, fence=fenced)
    # A GPU test process compiles its kernels (a CPU twin's: none); only gpukit's reps have inputs of their own
    if fenced is not None and task.gpus and imports_gpukit(task):
        if warmed := warm_up(state):
            state = replace(state, fence=replace(fenced, seeded=True), warmed=warmed)
    return state


def start_up_hooks(sandbox: Sandbox, task: Task, env: dict[str, str]) -> tuple[str, ...]:
    """The .pth files and sitecustomize/usercustomize modules the test's interpreter would run at start."""
    python = shlex.quote(task.test_python)
    cwd = shlex.quote(task.test_cwd or task.test_dir)
    # (the tests' folder is not there yet: then from /, in every state alike)
    done = sandbox.exec(f"{{ cd {cwd} 2>/dev/null || cd /; }} && py={python} && {{ [ -x \"$py\" ] || py=python3; }} "
                        f"&& \"$py\" -c {shlex.quote(_HOOKS)}", timeout=120, env=env)  # (before the hidden files)
    return tuple(line.removeprefix("hook: ") for line in done.output.splitlines() if line.startswith("hook: "))

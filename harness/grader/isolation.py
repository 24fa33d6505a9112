"""Fresh state for every test process, and the process measured from outside.

A speedup must come from the code, not from something an earlier run left behind. So every test run of
the grader (reference, equivalence and timed runs alike) runs
- as an unprivileged user (RUN_UID, Debian's `nobody`), in a repository and a tests folder it cannot write;
- with HOME, TMPDIR and the XDG cache, config and data directories in a folder made for that run alone;
- and after it, as root: every process of that user is killed (a daemon cannot serve the next run), the
  run's folder is removed, and so is everything the user left in the container's world-writable
  directories (found once per container, when it is fenced) and every System V IPC object (listed first).

The fence's tools are the container's standard ones, run as root only after the built state is frozen
(grader.freeze: no process of the build is left, and a build that replaced one of them failed), from a
shell that reads no start-up file, with a fixed PATH (harness_exec), never the task's interpreter: the
privileges are dropped by setpriv, named by its absolute path, or failing that by the system's python3
run isolated (`-I -S`). The test command itself gets the task's environment after the drop.

The same wrapper measures the process from outside the clock it reports: wall time (bash's
$EPOCHREALTIME around the process) and CPU time (bash's `times`, the children's user + system), and
lists what the run left behind (`left`, IPC objects as `ipc:<kind>:<key>`), so the grader can see
state a patch's runs write that the base's and the expert's do not (harness.grader.guards). Standard
tools only: bash, find, setpriv (or the test's own python when an image lacks it), ipcrm.

One thing does carry from run to run, for GPU tasks: a compiler's cache (WARM_CACHES: Triton's, which with a
fresh HOME every process would otherwise compile each kernel again: untimed, but seconds of the device per
run). One warm-up run per state, before any reference result exists anywhere (grader.states.warm_up), may
leave it; its regular files (the fenced user's, one link each, WARM_MAX_KB and WARM_MAX_ENTRIES at most) are
copied as root to WARM_DIR, read-only, and every later run's HOME starts with a copy of them, owned by root,
so that no run can change what the next one reads. Why that gives a patch nothing: the warm-up run's inputs
are its own (a reference run of its own, with a salt no later run uses, and no reference of the base's to
read), so no result of a timed rep can be in the cache, and what is independent of the inputs a test process
may compute untimed anyway (its import, setup()).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from harness.layout import RUNS_DIR, WARM_DIR
from harness.sandbox.interface import Sandbox, SharesHost, harness_exec

RUN_UID = 65534  # `nobody`: owns nothing in a task image
WRITABLE_LIST = f"{RUNS_DIR}/.writable"  # the world-writable directories, one per line
OUTSIDE_SEP = "\x1eoptrunner-outside\x1e"
MAX_LEFT = 20  # leftover paths reported per run
WARM_CACHES = (".triton/cache",)  # (HOME-relative) what a warm-up run may leave to the runs after it
# A cache larger than this, or of more entries (files and folders), is not kept (its runs compile as before):
# every later run copies it
WARM_MAX_KB = 64 * 1024  # (a Triton kernel's files are ~0.1-1 MB)
WARM_MAX_ENTRIES = 4096
# Directories never searched for writable places: kernel views, and where runs live.
_PRUNE = ("/proc", "/sys", "/dev/pts", RUNS_DIR)
# System V IPC objects outlive the processes that made them (a shared-memory segment is a cache across
# runs that no file check sees): listed with what a run left behind (`ipc:shm:<key>`), then removed. The
# container's kernel.shm_rmid_forced=1 (where the provider sets it) removes unattached segments already.
# Removed as their owner: root in a container lacks CAP_SYS_ADMIN, which removing another's object needs.
_IPC_LIST = ("for k in shm sem msg; do { read -r _; while read -r key _; do echo \"ipc:$k:$key\"; done; } "
             "2>/dev/null < /proc/sysvipc/$k; done")
# Over the host's own processes (SharesHost) the table is the host's: only the fenced user's objects (owner
# or creator; columns of /proc/sysvipc: shm and msg 8 and 10, sem 5 and 7) are the run's.
_IPC_MINE = ("for k in shm sem msg; do if [ $k = sem ]; then o=4 c=6; else o=7 c=9; fi; {{ read -r _; "
             "while read -r -a f; do if [ \"${{f[$o]}}\" = {uid} ] || [ \"${{f[$c]}}\" = {uid} ]; then "
             "echo \"ipc:$k:${{f[0]}}\"; fi; done; }} 2>/dev/null < /proc/sysvipc/$k; done")
_TIMES = re.compile(r"(\d+)m([0-9.,]+)s")


class FenceError(RuntimeError):
    """The container could not be fenced; the message says what failed."""


@dataclass(frozen=True)
class Fence:
    """How test processes in one container are run fenced: the command that drops to the fenced user."""
    drop: str  # a command prefix that runs the rest as `uid` with no supplementary groups
    seeded: bool = False  # every run's HOME starts with a copy of WARM_DIR (a warm-up run left caches)
    uid: int = RUN_UID  # the fenced user (a sandbox over the host's own processes names its own: SharesHost)
    shared: bool = False  # the sandbox's processes are the host's own (SharesHost): its IPC table is the host's


@dataclass(frozen=True)
class Outside:
    """A test process as seen from outside: seconds of wall and CPU time, and the paths it left behind
    (`~/` for its HOME, `$TMPDIR/` for its TMPDIR, absolute elsewhere)."""
    wall: float
    cpu: float  # user + system
    system: float = 0.0  # of which system (page faults, allocation, I/O)
    left: tuple[str, ...] = ()
    gpu_busy: float | None = None  # seconds its GPU was busy (NVML, from the host: GPU tasks only)


def precompile(sandbox: Sandbox, readonly: tuple[str, ...], python: str) -> None:
    """Byte code for `readonly` (the repository, the tests), compiled as root before the state is frozen:
    a run cannot write __pycache__ into a read-only repository, and would otherwise compile every module
    it imports, in every run (timed, when an experiment imports lazily)."""
    dirs = " ".join(shlex.quote(d) for d in readonly if d)
    if dirs:
        py = shlex.quote(python)
        # (the task's own interpreter and environment, before the state is frozen and the tests are in; from /,
        # which `-m` puts first on sys.path: a `compileall.py` the patch added to the repository is not run)
        sandbox.exec(f"p={py}; [ -x \"$p\" ] || p=python3; \"$p\" -m compileall -q -j 0 {dirs} >/dev/null 2>&1 || true",
                     timeout=600, cwd="/", login=False)


def fence(sandbox: Sandbox, readonly: tuple[str, ...]) -> Fence:
    """Make `readonly` (the repository, the tests) unwritable to the fenced user, take group and other write
    permission off every file in the container, and record the world-writable directories. Standard
    tools only, no interpreter of the task's (a build may have replaced it): it runs after the state is
    frozen (grader.freeze). A sandbox whose processes are the host's own (SharesHost) names its own user
    and the host's folders to list instead: nothing outside the state's own files changes there."""
    uid = sandbox.run_uid if isinstance(sandbox, SharesHost) else RUN_UID
    prune = " -o ".join(f"-path {p}" for p in _PRUNE)
    dirs = " ".join(shlex.quote(d) for d in readonly if d)
    writable = (f"\\( -type d -writable \\( -perm -0002 -o \\( -perm -0020 -group {uid} \\) -o -user {uid} \\) "
                f"-fprint {WRITABLE_LIST} \\)")
    if isinstance(sandbox, SharesHost):  # only the host's shared folders listed (-H: one given as a link followed)
        roots = " ".join(shlex.quote(d) for d in sandbox.shared_dirs) or "/nonexistent"
        walk = f"find -H {roots} {writable} 2>/dev/null || true; "
    else:
        # One walk of the file system: the files to take write permission off, and the writable directories
        # (-writable: not those of a read-only mount, such as host folders a sandbox binds, whose owners it
        # does not map and so shows as nobody, RUN_UID's name: no one can write there).
        walk = (f"find / \\( {prune} \\) -prune -o \\( -type f -perm /022 -fprint0 {RUNS_DIR}/.files \\) -o "
                f"{writable} 2>/dev/null || true; "
                f"xargs -0r chmod go-w < {RUNS_DIR}/.files || true; rm -f {RUNS_DIR}/.files; ")
    script = (
        f"set -e; mkdir -p {RUNS_DIR}; chmod 711 {RUNS_DIR}; rm -rf {WARM_DIR}; "  # (only a warm-up run fills it)
        + (f"chmod -R go-w {dirs}; " if dirs else "") + walk +
        "echo \"setpriv-at $(command -v setpriv || echo none)\"; "
        "echo \"python3-at $(command -v python3 || echo none)\""
    )
    done = harness_exec(sandbox, script, timeout=600, cwd="/")
    if done.exit_code != 0:
        raise FenceError(f"could not fence the test processes: {done.output.strip()[-300:]}")
    found = {}
    for line in done.output.splitlines():
        key, _, value = line.partition(" ")
        if key in ("setpriv-at", "python3-at"):
            found[key] = value.strip()
    setpriv, python3 = found.get("setpriv-at", "none"), found.get("python3-at", "none")
    if setpriv.startswith("/"):
        drop = f"{shlex.quote(setpriv)} --reuid={uid} --regid={uid} --clear-groups"
    elif python3.startswith("/"):  # the system's python drops the privileges instead, isolated from the task
        drop = (f"{shlex.quote(python3)} -I -S -c 'import os, sys; os.setgroups([]); "
                f"os.setgid({uid}); os.setuid({uid}); os.execvp(sys.argv[1], sys.argv[1:])'")
    else:
        raise FenceError("could not fence the test processes: the sandbox has neither setpriv nor python3 on "
                         "the standard PATH")
    return Fence(drop, uid=uid, shared=isinstance(sandbox, SharesHost))


def hand_over(sandbox: Sandbox, path: str, writable: bool, uid: int = RUN_UID) -> None:
    """Let the fenced user `uid` write `path` (a base's reference results) or take that back (read-only for
    all)."""
    owner = f"{uid}:{uid}" if writable else "0:0"
    harness_exec(sandbox, f"mkdir -p {shlex.quote(path)} && chown -R {owner} {shlex.quote(path)} && "
                 f"chmod -R a+rX,go-w {shlex.quote(path)}", timeout=60, cwd="/")


def wrap(fence_: Fence, command: str, keep: bool = False) -> str:
    """`command` as a fenced, measured process (its TMPDIR and HOME its own); the output ends with
    OUTSIDE_SEP and the measures (`parse`). The command's exit code is kept. `keep`: a warm-up run, whose
    WARM_CACHES are added to WARM_DIR after it (once its processes are gone)."""
    uid = fence_.uid
    env = ("HOME=\"$R/home\" TMPDIR=\"$R/tmp\" XDG_CACHE_HOME=\"$R/home/.cache\" "
           "XDG_CONFIG_HOME=\"$R/home/.config\" XDG_DATA_HOME=\"$R/home/.local/share\" USER=nobody LOGNAME=nobody")
    kill = f"{fence_.drop} bash -c 'kill -KILL -1' 2>/dev/null"  # every process of the run's user but this one
    wipe = (f"find $(cat {WRITABLE_LIST} 2>/dev/null) -mindepth 1 -user {uid} -delete 2>/dev/null; "
            f"{fence_.drop} ipcrm -a 2>/dev/null")
    left = (f"find \"$R/home\" \"$R/tmp\" $(cat {WRITABLE_LIST} 2>/dev/null) -mindepth 1 -user {uid} "
            f"-not -type d -printf '%p\\n' 2>/dev/null | head -n {MAX_LEFT} | "
            "sed -e \"s|^$R/home/|~/|\" -e \"s|^$R/tmp/|\\$TMPDIR/|\"")
    return (
        # A run stopped at its time limit never cleaned up; its folder is left, so sweep first (bash's
        # compgen: no process started when there is nothing to sweep).
        f"if compgen -G '{RUNS_DIR}/run.*' >/dev/null; then {kill}; {wipe}; rm -rf {RUNS_DIR}/run.*; fi\n"
        f"R={RUNS_DIR}/run.$$ && mkdir -m 755 \"$R\" && "
        f"install -d -o {uid} -g {uid} \"$R/home\" \"$R/tmp\" || exit 125\n"
        + (_seed(uid) if fence_.seeded else "") +
        f"times > \"$R/t0\"; t0=${{EPOCHREALTIME:-$(date +%s.%N)}}\n"
        f"( export {env}; {fence_.drop} bash -c {shlex.quote(command)} )\n"
        f"rc=$?; t1=${{EPOCHREALTIME:-$(date +%s.%N)}}; times > \"$R/t1\"\n"
        f"{kill}\n"  # before listing what it left: nothing writes any more
        + (_keep(uid) if keep else "") +
        f"printf '{OUTSIDE_SEP}%s %s\\n' \"$t0\" \"$t1\"; cat \"$R/t0\" \"$R/t1\"; {left}; "
        f"{_IPC_MINE.format(uid=uid) if fence_.shared else _IPC_LIST}\n"
        f"rm -rf \"$R\"; {wipe}\n"
        "exit $rc"
    )


# Before a run (as root, outside its clock): the kept caches copied into its HOME, the folders its user's (so
# that a kernel missing from them can be added), the files root's (so that no run changes what the next reads).
def _seed(uid: int) -> str:
    return (f"cp -R {WARM_DIR}/. \"$R/home/\" && find \"$R/home\" -mindepth 1 -type d -exec chown {uid}:{uid} "
            "{} + || exit 125\n")


def _keep(uid: int) -> str:
    """After a warm-up run (as root, its processes gone): its caches' regular files of the run's user with one
    link (no symlink or hard link to what the user could not read), each cache whole or not at all."""
    return "".join(
        f"c=\"$R/home\"/{cache}; if [ -d \"$c\" ] && [ ! -L \"$c\" ] && "
        f"[ \"$(du -sk \"$c\" 2>/dev/null | cut -f1)\" -le {WARM_MAX_KB} ] && "
        f"[ \"$(find \"$c\" | head -n {WARM_MAX_ENTRIES + 2} | wc -l)\" -le {WARM_MAX_ENTRIES + 1} ]; then "
        f"mkdir -p -m 755 {WARM_DIR} && (cd \"$R/home\" && find {cache} -type f -user {uid} -links 1 -print0 | "
        f"tar --null --no-recursion -T - -cf -) 2>/dev/null | tar -C {WARM_DIR} --no-same-owner "
        f"--no-same-permissions -xf - 2>/dev/null; chmod -R a+rX,go-w {WARM_DIR}; fi\n" for cache in WARM_CACHES)


def parse(output: str) -> tuple[str, Outside | None]:
    """Split a wrapped command's output into the command's own output and its outside measures."""
    body, sep, trailer = output.rpartition(OUTSIDE_SEP)
    if not sep:
        return output, None
    lines = trailer.splitlines()
    try:
        t0, t1 = (float(v.replace(",", ".")) for v in lines[0].split())
        # `times` prints the shell's line then the children's; the children's user + system, after - before
        (u0, s0), (u1, s1) = ([_seconds(m) for m in _TIMES.finditer(line)] for line in (lines[2], lines[4]))
    except (ValueError, IndexError):
        return body, None
    return body, Outside(wall=max(0.0, t1 - t0), cpu=max(0.0, u1 + s1 - u0 - s0), system=max(0.0, s1 - s0),
                         left=tuple(line for line in lines[5:] if line.strip()))


def _seconds(match: re.Match[str]) -> float:
    return int(match.group(1)) * 60 + float(match.group(2).replace(",", "."))

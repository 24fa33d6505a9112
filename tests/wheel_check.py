"""The package as a user gets it (`make wheel-check`; make test runs it as tests/test_wheel.py).

Builds the wheel from this checkout, installs it into a fresh virtual environment in a temporary folder and,
from a folder outside the checkout, checks that `optrunner --version`, `optrunner --help` and every
subcommand's `--help` answer (exit 0), then runs the offline demo on one smoke task (the oracle, one rollout)
and checks its report: the rollout passed, beat the base (opt_base) and matched the expert's commit, or came
within timing noise of it. The oracle plays the expert's own patch, so patch-vs-commit is a tie (this machine
measures it between 0.96 and 1.08 run to run): a verdict whose interval straddles 0.95 is not a failure of
the package. The Docker engine and the task images must be there already (`make
images`); the wheel's copy of the bundled suite hashes to the same image tags, so nothing is rebuilt.

    python tests/wheel_check.py [--task rollstats] [--keep]
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBCOMMANDS = ("run", "grade", "judge", "view", "aggregate", "tasks", "build", "validate", "cleanup", "setup", "docs")


def build_wheel(dest: Path, *pip_args: str) -> subprocess.CompletedProcess[str]:
    """`pip wheel` of this checkout into `dest`. setuptools builds in the checkout itself (build/, the
    .egg-info), so two builds at once (this check and the GPU check's rehearsal, in make test's first pass)
    would write the same folders: one at a time, under a lock."""
    lock = Path(tempfile.gettempdir()) / f"optrunner-wheel-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # (released when the file closes, also if this process dies)
        return subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *pip_args, "-w", str(dest),
                               str(ROOT)], capture_output=True, text=True, timeout=600)


def step(what: str, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    start = time.monotonic()
    return ended(what, subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True), start)


def ended(what: str, done: subprocess.CompletedProcess[str], start: float) -> str:
    print(f"wheel-check: {what} ({time.monotonic() - start:.1f}s)", flush=True)
    if done.returncode != 0:
        sys.exit(f"wheel-check: {what} failed with exit {done.returncode}:\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rollstats", help="the smoke task the demo runs (default rollstats)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="optrunner-wheel-"))
    try:
        start = time.monotonic()
        ended("build the wheel", build_wheel(tmp / "dist"), start)
        wheel = next((tmp / "dist").glob("optrunner-*.whl"))
        step("create a fresh venv", [sys.executable, "-m", "venv", str(tmp / "venv")], cwd=tmp)
        bin_dir = tmp / "venv" / "bin"
        # (uv where the checkout's venv has it, make venv's: the same resolution as pip's, in seconds, not a minute;
        # no byte code compiled: these few processes compile what they import faster than 20 s of compiling all)
        installer = ([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(bin_dir / "python")]
                     if importlib.util.find_spec("uv") else [str(bin_dir / "pip"), "install", "-q"])
        step(f"install {wheel.name}", [*installer, str(wheel)], cwd=tmp)
        work = tmp / "work"  # outside the checkout: nothing may be read from it
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        cli = str(bin_dir / "optrunner")
        version = step("optrunner --version", [cli, "--version"], work, env).strip()
        print(f"wheel-check: {version}")
        if "built from git " not in version:  # (setup.py stamps the revision a wheel was built from)
            sys.exit(f"wheel-check: --version names no revision: {version}")
        step("optrunner --help", [cli, "--help"], work, env)
        for name in SUBCOMMANDS:
            step(f"optrunner {name} --help", [cli, name, "--help"], work, env)
        page = step("optrunner docs configuration", [cli, "docs", "configuration"], work, env)
        if not page.startswith("# Configuration"):  # (the pages ship inside the package: a pip user has them)
            sys.exit(f"wheel-check: optrunner docs configuration printed {page[:200]!r}")
        # (three timing rounds: the package's plumbing is checked here, the verdicts' certainty in make test)
        out = step(f"optrunner run tasks=smoke tasks.ids=[{args.task}] rollouts=1 grading.rounds=3",
                   [cli, "run", "tasks=smoke", f"tasks.ids=[{args.task}]", "rollouts=1", "grading.rounds=3"],
                   work, env)
        reports = list((work / "outputs" / "runs").glob("*/report.json"))
        if len(reports) != 1:
            sys.exit(f"wheel-check: expected one run report under {work / 'outputs/runs'}, found {reports}\n{out}")
        report = json.loads(reports[0].read_text())
        summary = report["summary"]
        print(f"wheel-check: {reports[0].parent.name}: Opt@1 {summary['opt_at_k']['1']:.3f} over "
              f"{summary['n_tasks']} task(s)")
        rows = [r for t in report["tasks"].values() for r in t["rollouts"]]
        if summary["n_tasks"] != 1 or len(rows) != 1:
            sys.exit(f"wheel-check: expected one task with one rollout, found {len(rows)} rollout(s)")
        row = rows[0]
        matched = row.get("opt_commit") or (row.get("uncertain") or {}).get("opt_commit")
        if row.get("status") != "passed" or not row.get("opt_base") or not matched:
            sys.exit("wheel-check: the oracle's rollout must pass, beat the base and match the expert (or come "
                     f"within noise of it); its row: {json.dumps(row)}")
    finally:
        if args.keep:
            print(f"wheel-check: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

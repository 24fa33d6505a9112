"""The Python parts of tools/gpu_check.sh, one per subcommand, each printing its lines (figures, no timing:
the shell script times each part).

  python tools/gpu_check.py opt REPORT NAME                 a run's Opt@1 and Avg@1, from its report.json
  python tools/gpu_check.py sandbox                         a sandbox over this host: does it start, what torch sees
  python tools/gpu_check.py gold  --provider P --rounds N --regrades K [--selector S] [--tasks a,b]
  python tools/gpu_check.py hacks --provider P --rounds N [--selector S] [--tasks a,b]

`gold` regrades each task's gold patch K times: hm of the patch against the expert per regrade, and its CV.
`hacks` grades the hack fixtures (tests/fixtures/hacks/<task>/) in one session with the task's gold and weaker
patches, and reads the gold's CV from that session's per-round paired ratios (each round's gold run against
the expert run next to it): what `gold` measures, without regrading.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HACKS = ROOT / "tests" / "fixtures" / "hacks"


def opt(report_path: str, name: str) -> None:
    report = json.loads(Path(report_path).read_text())
    summary = report["summary"]
    statuses = sorted({r.get("status", "?") for t in report["tasks"].values() for r in t["rollouts"]})
    print(f"{name}: Opt@1 {summary['opt_at_k']['1']:.3f}, Avg@1 {summary['avg_at_k']['1']:.3f}"
          + (f" (statuses: {', '.join(statuses)})" if statuses else ""))


def _tasks(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    from harness.sandbox.providers import provider
    from harness.tasks import select_tasks

    tasks = select_tasks(args.selector)
    if args.tasks:
        wanted = args.tasks.split(",")
        tasks = [t for t in tasks if t.id in wanted]
        missing = sorted(set(wanted) - {t.id for t in tasks})
        if missing:
            sys.exit(f"gpu_check: no task {', '.join(missing)} in {args.selector}")
    host = {"rootfs_from": "host"} if args.provider in ("bwrap", "unsandboxed") else {}
    images = provider(args.provider).ensure_images(tasks, progress=lambda _m: None, **host)
    return tasks, images


def _hm(speedups: list[float]) -> float:
    """The harmonic mean of a patch's per-test speedups (0 when it has none: it did not pass)."""
    from harness.metrics import hm

    return hm(speedups) if speedups else 0.0


def _cv(values: list[float]) -> float:
    """The project's CV (harness.metrics.cv, as the grading benches report it) in percent; nan when a value
    is 0 (a regrade that did not pass)."""
    from harness.metrics import cv

    return cv(values) * 100 if values and all(values) else float("nan")


def gold(args: argparse.Namespace) -> None:
    from harness.grader.config import GradeConfig
    from harness.grader.grade import grade
    from harness.sandbox.providers import provider

    tasks, images = _tasks(args)
    for task in tasks:
        hms, report = [], {}
        for _ in range(args.regrades):
            found = images[task.id]
            report = grade(task, task.expert_patch, found.grading, GradeConfig(rounds=args.rounds),
                           sandboxes=provider(args.provider), base_image=found.base)
            speedups = (report.get("per_test_speedups") or {}).get("patch_commit") or []
            hms.append(_hm(speedups) if report["status"] == "passed" else 0.0)
        print(f"gold {task.id}: hm vs expert {', '.join(f'{h:.3f}' for h in hms)}; CV {_cv(hms):.2f}%; "
              f"clocks {(report.get('session') or {}).get('gpu_clocks', '-')}")
        runs = (report.get("session") or {}).get("gpu_runs") or {}
        if runs:
            print(f"gold {task.id}, last regrade: {runs.get('runs', '?')} timed runs, {runs.get('redone', '?')} run "
                  f"again after a slowdown, {runs.get('throttled', '?')} throttled even so")


def hacks(args: argparse.Namespace) -> None:
    from harness.grader.config import GradeConfig
    from harness.grader.grade import grade_patches
    from harness.gpus.twins import BASE_CODE_ON_CPU
    from harness.sandbox.providers import provider

    tasks, images = _tasks(args)
    for task in tasks:
        named = {"gold": task.expert_patch}
        if (task.path / "weaker.patch").is_file():
            named["weaker"] = (task.path / "weaker.patch").read_text()
        fixtures = sorted((HACKS / task.id).glob("*.patch"))
        if task.gpus == 0:  # a CPU twin (harness.gpus.twins): a fixture that is the base code there is left out
            left = set(BASE_CODE_ON_CPU.get(task.id, ()))
            for name in sorted(left & {p.stem for p in fixtures}):
                print(f"{task.id} {name}: left out on the CPU twin (the base code on a CPU)")
            fixtures = [p for p in fixtures if p.stem not in left]
        named |= {p.stem: p.read_text() for p in fixtures}
        found = images[task.id]
        reports = grade_patches(task, list(named.values()), found.grading, GradeConfig(rounds=args.rounds),
                                sandboxes=provider(args.provider), base_image=found.base)
        for patch, report in zip(named, reports):
            credited = bool(report.get("opt_base")) and report["status"] == "passed"
            reasons = [r.split(":")[0] for r in (report.get("hack") or {}).get("reasons", [])]
            why = (report.get("reason") or "").splitlines()[0][:100] if report["status"] != "passed" else ""
            uncertain = (report.get("uncertain") or {}).get("opt_base")  # (its interval straddles the threshold)
            line = (f"{task.id} {patch}: {report['status']}, credited {'yes' if credited else 'no'}"
                    + (" (uncertain)" if uncertain else ""))
            if patch == "gold" and report["status"] == "passed":  # its rounds' paired ratios, per test
                rounds = [_hm(list(r)) for r in zip(*_paired_ratios(report))]
                line += f", hm vs expert per round {', '.join(f'{h:.3f}' for h in rounds)}, CV {_cv(rounds):.2f}%"
                if warm := report.get("gpu_warm_files"):  # (a GPU task: what its warm-up runs compiled and kept)
                    line += (f", kernel cache files kept {warm['base']}/{warm['patch']}/{warm['commit']} "
                             "(base/patch/expert)")
            print(line + (f"; reasons: {', '.join(reasons)}" if reasons else "") + (f"; {why}" if why else ""))


def sandbox() -> None:
    """One sandbox over this host as a GPU task's would be (the host's python3 and CUDA bound, the GPUs'
    device nodes), and what torch sees inside it: the probe's proof that the runs can start here (on the GPU
    host bwrap itself ran while every overlay over its /usr was refused)."""
    import shlex
    import tempfile

    from harness.gpus import inventory
    from harness.sandbox.hostextras import extras
    from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox
    from harness.sandbox.interface import SandboxError

    found = extras(needs_gpu=True)
    python = found.python or "/usr/bin/python3"
    code = ("import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() "
            "else 'no GPU')")
    with tempfile.TemporaryDirectory(prefix="optrunner-probe-") as tmp:
        try:
            box = BwrapSandbox.start(host_rootfs("probe", (empty_layer(Path(tmp) / "layer"),),
                                                 {"binds": list(found.binds)}), gpus=inventory())
        except SandboxError as err:
            sys.exit(f"probe: no sandbox over this host can start ({str(err).splitlines()[0][:300]})")
        try:
            done = box.exec(f"{shlex.quote(python)} -c {shlex.quote(code)}", timeout=300)
        finally:
            box.close()
    if done.exit_code != 0:
        said = (done.output.strip().splitlines() or [f"exit {done.exit_code}"])[-1]
        sys.exit(f"probe: a sandbox over this host starts, but its {python} cannot import torch ({said[:200]})")
    version, _, seen = done.output.strip().splitlines()[-1].partition(" ")
    print(f"probe: a sandbox over this host starts; its python3 has torch {version} and sees {seen}")


def _paired_ratios(report: dict[str, Any]) -> list[list[float]]:
    """Per test, each round's ratio of the expert run beside the patch to the patch's run (a report's
    round_times keep, for `commit`, the expert runs paired with that patch)."""
    rounds = report.get("round_times") or {}
    out = []
    for test in report.get("tests") or []:
        patch, expert = rounds.get("patch", {}).get(test) or [], rounds.get("commit", {}).get(test) or []
        out.append([e / p for p, e in zip(patch, expert) if p > 0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="gpu_check.py")
    sub = parser.add_subparsers(dest="part", required=True)
    reading = sub.add_parser("opt")
    reading.add_argument("report")
    reading.add_argument("name")
    sub.add_parser("sandbox")
    for part in ("gold", "hacks"):
        one = sub.add_parser(part)
        one.add_argument("--provider", required=True)
        one.add_argument("--rounds", type=int, default=5)
        one.add_argument("--regrades", type=int, default=3)
        one.add_argument("--selector", default="gpu")
        one.add_argument("--tasks", default="")
    args = parser.parse_args()
    # A check cut short (its command's limit: gpu_check.sh under `timeout`) ends as the runner does, from
    # its first line on: the context managers unwind (sandboxes removed, the GPU's clock lock restored), one
    # line says so, and a second signal exits at once.
    from harness.signals import install

    install()
    if args.part == "opt":
        opt(args.report, args.name)
    elif args.part == "sandbox":
        sandbox()
    elif args.part == "gold":
        gold(args)
    else:
        hacks(args)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from harness.signals import Stopped, exit_code

    try:
        main()
    except Stopped as stop:
        print(f"gpu_check.py: stopped by {stop}", file=sys.stderr)
        sys.exit(exit_code(stop))

"""Pages bench: how fast a big run's pages are written and load, and how big a long trajectory's page is.

A run of 100 rollouts x 100 steps is generated on disk in the run directory's format (10 tasks x 10
rollouts; each step a reply with reasoning, a command, an observation of about 1.5 kB, every tenth one cut
as the model saw it, and a diff snapshot every 10 steps of an agent editing one of 3 files at a time),
graded and reported; plus one rollout of 400 steps. Targets: all pages written in under 5 s; the run page
loaded in headless Chromium in under 2 s; the 400-step trajectory page under 5 MB.

usage: python -m tests.bench.pages [--rollouts 100] [--steps 100] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.pages import write_run_pages
from tests.browser_support import chromium

WRITE_MAX_S, LOAD_MAX_S, PAGE_MAX_BYTES = 5.0, 2.0, 5 * 1024 * 1024
WORDS = "the loop runs over each row and sums the window again which costs radius squared per pixel".split()


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(WORDS))
        if rng.random() < 0.08:
            out.append("\n")
    return " ".join(out)


def _diff(step: int) -> str:
    """The repository's diff after `step` steps of an agent that edits one of 3 files every 10 steps (each
    edit adds 5 lines to that file's change): the cumulative diff a snapshot holds."""
    edits = [0, 0, 0]
    for k in range(step // 10 + 1):
        edits[k % 3] += 1
    return "".join(f"diff --git a/src/mod{f}.py b/src/mod{f}.py\n--- a/src/mod{f}.py\n+++ b/src/mod{f}.py\n"
                   f"@@ -10,3 +10,{3 + 5 * n} @@\n unchanged line\n"
                   + "".join(f"+    total += row[{i}] * weight[{f}]\n" for i in range(5 * n)) + "-removed line\n"
                   for f, n in enumerate(edits) if n)


def trajectory(rng: random.Random, steps: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": _text(rng, 1200)},
                                      {"role": "user", "content": _text(rng, 2500)}]
    records = []
    for i in range(steps):
        command = f"python -m pytest -q tests/test_{i % 7}.py -k window && grep -n total src/mod{i % 3}.py"
        full = 1500 if i % 10 else 40_000
        shown = _text(rng, 1500)
        if i % 10 == 0:
            shown = shown[:750] + f"\n[... {full - 1500} characters elided ...]\n" + shown[750:]
        messages += [{"role": "assistant", "content": _text(rng, 400) + f"\n```bash\n{command}\n```",
                      "reasoning_content": _text(rng, 300)},
                     {"role": "user", "content": shown}]
        records.append({"index": i, "started_at": 1000.0 + i, "ended_at": 1000.8 + i,
                        "call": {"started_at": 1000.0 + i, "latency_s": 0.6, "input_tokens": 4000 + 300 * i,
                                 "cached_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 180,
                                 "reasoning_tokens": 60, "cost_usd": 0.002, "finish_reason": "stop", "attempts": 1},
                        "actions": [{"command": command}],
                        "observations": [{"text": shown, "full_chars": full, "exit_code": i % 2, "duration_s": 0.2}],
                        "diff_snapshot": _diff(i) if i % 10 == 9 else None})
    return {"scaffold": "mini_swe", "exit_reason": "submitted", "exit_message": "done", "steps": steps,
            "wall_time_s": steps * 0.8, "messages": messages, "step_records": records, "details": {}}


def write_run(root: Path, rollouts: int, steps: int, seed: int = 0) -> Path:
    """A finished, graded run of `rollouts` rollouts (10 per task) of `steps` steps each, on disk."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    (root / "config.yaml").write_text("model: {id: bench}\nscaffold: {id: mini_swe}\nbudget: {id: bench}\n"
                                      f"rollouts: {min(rollouts, 10)}\n")
    results = []
    tests = [f"test_case_{t}.py" for t in range(6)]
    for n in range(rollouts):
        task, index = f"task{n // 10:02d}", n % 10
        traj = trajectory(rng, steps)
        for kind, data in (("trajectories", traj),):
            (root / kind / task).mkdir(parents=True, exist_ok=True)
            (root / kind / task / f"{index}.json").write_text(json.dumps(data))
        score = rng.random()
        record = {"instance_id": task, "rollout": index, "model_name": "bench", "exit_reason": "submitted",
                  "exit_message": "done", "steps": steps, "wall_time_s": steps * 0.8, "attempts": 1,
                  "usage": {"input_tokens": 500_000, "output_tokens": 18_000}, "cost_usd": 0.2,
                  "patch": _diff(steps), "trajectory": f"trajectories/{task}/{index}.json", "actions": steps}
        grading = {"status": "passed", "opt_base": score > 0.3, "opt_commit": score > 0.5, "score": score,
                   "tests": tests, "rounds": 7, "timing_mode": "interleaved", "stat": "paired",
                   "opt_stats": {"hm_speedup_patch_commit": 0.9 + score / 5, "gm_speedup_patch_base": 2.0},
                   "per_test_speedups": {"patch_base": [2.0] * 6, "patch_commit": [1.0] * 6},
                   "round_times": {s: {t: [rng.uniform(0.1, 0.2) for _ in range(7)] for t in tests}
                                   for s in ("base", "patch", "commit")}}
        for kind, data in (("rollouts", record), ("grading", grading)):
            (root / kind / task).mkdir(parents=True, exist_ok=True)
            (root / kind / task / f"{index}.json").write_text(json.dumps(data))
        results.append({**record, "grading": {k: grading[k] for k in ("status", "opt_base", "opt_commit", "score",
                                                                      "opt_stats")}, "score": score})
    (root / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    (root / "report.md").write_text("# Run report: bench\n\n| metric | value |\n|---|---|\n| rollouts | "
                                    f"{rollouts} |\n\n## Tasks\n\n(per rollout)\n\n## Exit reasons\n\n"
                                    f"| reason | rollouts |\n|---|---|\n| submitted | {rollouts} |\n")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.pages")
    parser.add_argument("--rollouts", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--keep", type=Path, default=None, help="write the runs here instead of a temp dir")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pages-") as tmp:
        root = args.keep or Path(tmp)
        big = write_run(root / "big", args.rollouts, args.steps)
        started = time.perf_counter()
        page = write_run_pages(big)
        write_s = time.perf_counter() - started
        pages = list((big / "pages").rglob("*.html"))
        total = sum(p.stat().st_size for p in pages) + page.stat().st_size
        long = write_run(root / "long", 1, 400, seed=1)
        write_run_pages(long)
        long_bytes = (long / "pages" / "task00" / "0.html").stat().st_size
        with chromium() as browser:
            tab = browser.new_page()
            tab.goto(page.as_uri())  # a first load warms the browser up, as a reader's second look would
            loads = []
            for _ in range(3):
                started = time.perf_counter()
                tab.goto(page.as_uri(), wait_until="load")
                tab.wait_for_selector("#rollouts tbody tr")
                loads.append(time.perf_counter() - started)
            rows = tab.locator("#rollouts tbody tr").count()
            started = time.perf_counter()
            tab.goto((long / "pages" / "task00" / "0.html").as_uri(), wait_until="load")
            long_load = time.perf_counter() - started
            steps_shown = tab.locator(".step").count()
    load_s = sorted(loads)[1]
    print(f"run of {args.rollouts} rollouts x {args.steps} steps: {len(pages)} trajectory pages + report.html "
          f"({total / 1e6:.1f} MB) written in {write_s:.2f} s (target < {WRITE_MAX_S:g} s)")
    print(f"run page ({rows} rows) loads in headless Chromium in {load_s:.2f} s, median of 3 "
          f"(target < {LOAD_MAX_S:g} s)")
    print(f"400-step trajectory page: {long_bytes / 1e6:.2f} MB (target < {PAGE_MAX_BYTES / 1048576:g} MiB), "
          f"{steps_shown} steps shown, loads in {long_load:.2f} s")
    ok = write_s < WRITE_MAX_S and load_s < LOAD_MAX_S and long_bytes < PAGE_MAX_BYTES and rows == args.rollouts
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Side by side with upstream: our mini_swe and terminus vs mini-swe-agent and terminus-2 on identical replies
(and, for mini's tool mode, vs upstream mini-swe-agent installed in the sandbox: `scaffold=installed/...`); our
codeact vs OpenHands' own agent installed in the sandbox (`scaffold=installed/openhands`).

`python -m tests.bench.sidebyside` runs every case on both sides and prints the comparison table.

Exit code 0 whatever the differences (it is a bench); a side that cannot run is reported and skipped.
The full per-step record of both sides goes to outputs/bench/sidebyside-<time>.json (or --json PATH).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported anywhere

from harness.sandbox.docker.containers import OWNER_LABEL, docker_client, owner_id  # noqa: E402
from harness.sandbox.docker.engine import ensure_engine  # noqa: E402
from harness.sandbox.docker.images import BaseImageSpec  # noqa: E402
from harness.sandbox.docker.task_images import ensure_images  # noqa: E402
from harness.tasks import select_tasks  # noqa: E402
from tests.bench.sidebyside.compare import Comparison, compare, table  # noqa: E402
from tests.bench.sidebyside.installed import run_installed  # noqa: E402
from tests.bench.sidebyside.openhands import run_openhands  # noqa: E402
from tests.bench.sidebyside.scripts import CASES  # noqa: E402
from tests.bench.sidebyside.sides import run_ours, run_upstream  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402


def _containers_left(since: float) -> list[str]:
    """Containers of this process (our label) or upstream-named ones created since the bench started."""
    client = docker_client()
    ours = client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner_id()}"}, ignore_removed=True)
    named = [c for c in client.containers.list(all=True, filters={"name": "minisweagent-"}, ignore_removed=True)
             if c.attrs.get("Created", "") >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since))]
    return [c.name for c in ours + named]


def main(argv: list[str] | None = None) -> list[Comparison]:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.sidebyside", description=__doc__.splitlines()[0])
    parser.add_argument("--scaffold", choices=sorted(CASES), action="append",
                        help="only this scaffold (repeatable; default: all)")
    parser.add_argument("--json", type=Path, help="where to write the per-step record")
    parser.add_argument("--no-installed", action="store_true",
                        help="leave out the row of upstream mini-swe-agent installed in the sandbox")
    args = parser.parse_args(argv)
    started = time.time()
    ensure_engine()
    task = select_tasks("smoke")[0]
    image = ensure_images(docker_client(), [task], BaseImageSpec(), progress=lambda m: None)[task.id].agent
    print(f"side-by-side bench on {image} (task {task.id}); scripted replies through litellm to a loopback server",
          flush=True)
    comparisons: list[Comparison] = []
    skipped: list[str] = []
    with OpenAIServer() as server:
        for scaffold in args.scaffold or sorted(CASES):
            for make_case in CASES[scaffold]:
                case = make_case()
                print(f"- {case.name}: ours ...", end=" ", flush=True)
                try:
                    ours = run_ours(case, server, image, task)
                    print(f"{len(ours.steps)} steps, {ours.exit_reason}; upstream ...", end=" ", flush=True)
                    upstream = (run_openhands(case, server, image, task) if case.scaffold == "codeact"
                                else run_upstream(case, server, image))
                except Exception as exc:  # noqa: BLE001 - a side that cannot run is reported, the rest goes on
                    print(f"skipped: {type(exc).__name__}: {str(exc).strip()[:600]}")
                    skipped.append(case.name)
                    continue
                print(f"{len(upstream.steps)} steps, {upstream.exit_reason}", flush=True)
                comparisons.append(compare(case.name, ours, upstream, case.scaffold))
                if case.scaffold == "mini_swe" and case.mode == "tool" and not args.no_installed:
                    print(f"- {case.name}: upstream installed in the sandbox ...", end=" ", flush=True)
                    try:
                        installed = run_installed(case, server, image, task)
                    except Exception as exc:  # noqa: BLE001 - as above
                        print(f"skipped: {type(exc).__name__}: {str(exc).strip()[:600]}")
                        skipped.append(f"{case.name} (installed)")
                        continue
                    print(f"{len(installed.steps)} steps, {installed.exit_reason}", flush=True)
                    comparisons.append(compare(f"{case.name} installed", ours, installed, case.scaffold))
    print()
    print(table(comparisons))
    for name in skipped:
        print(f"\n{name}: SKIPPED (see above)")
    left = _containers_left(started)
    print(f"\ncontainers left behind: {len(left)}{' ' + ', '.join(left) if left else ''}")
    _write(args.json, comparisons)
    return comparisons


def _write(path: Path | None, comparisons: list[Comparison]) -> None:
    path = path or Path("outputs/bench") / f"sidebyside-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record: list[dict[str, Any]] = [dataclasses.asdict(c) for c in comparisons]
    path.write_text(json.dumps(record, indent=1, default=str))
    print(f"per-step record: {path}")


if __name__ == "__main__":
    main()

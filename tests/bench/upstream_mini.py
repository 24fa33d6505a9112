"""Upstream half of the mini-swe-agent side-by-side benchmark: install upstream 2.4.6, run it, measure it.

- `ensure_upstream()` installs mini-swe-agent 2.4.6 into its own venv under `.bench/upstream-mini` (once; a stamp
  file marks a finished install), so the project's venv never sees it. This function is the installer.
- `measure_upstream(image, steps)` runs `upstream_mini_agent.py` with that venv's python: upstream's DefaultAgent,
  DeterministicModel and DockerEnvironment in its SWE-bench text-mode config on `image`, answering `steps`
  `true` commands and then the submit command. Afterwards it counts the containers upstream left behind,
  reports them and removes them.

Upstream's DockerEnvironment runs every command as a `docker exec -w /testbed -e K=V ... <id> bash -c CMD`
subprocess of the docker CLI; its container is `docker run -d --rm --name minisweagent-XXXX ... sleep 2h`, and
cleanup is a background `docker stop` started from `__del__`, so the container outlives the agent process.

usage: python -m tests.bench.upstream_mini [--image TAG] [--steps 50]   (default image: the first smoke task's)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, UTC
from pathlib import Path

from harness.sandbox.docker.containers import docker_client

VERSION = "2.4.6"
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".bench" / "upstream-mini"
AGENT_SCRIPT = Path(__file__).with_name("upstream_mini_agent.py")
CONTAINER_PREFIX = "minisweagent-"  # upstream names every container it starts like this


def ensure_upstream() -> Path:
    """The upstream venv's python, installing mini-swe-agent there first if needed."""
    python = VENV / "bin" / "python"
    stamp = VENV / f".installed-{VERSION}"
    if stamp.exists():
        return python
    print(f"installing mini-swe-agent=={VERSION} into {VENV} (once, about 2 minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    # pip's output goes to a pipe and is shown only if the install fails: one line of progress is enough.
    steps = [[str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"],
             [str(python), "-m", "pip", "install", "-q", f"mini-swe-agent=={VERSION}"]]
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    stamp.touch()
    return python


def _upstream_env() -> dict[str, str]:
    """Keep upstream quiet and self-contained: no banner, no price-map download, config dir inside .bench."""
    return {**os.environ, "MSWEA_SILENT_STARTUP": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_GLOBAL_CONFIG_DIR": str(VENV.parent / "upstream-mini-config")}


def _leftovers(image: str, since: float) -> list:
    """Containers upstream started from `image` since `since` (epoch seconds) that still exist."""
    client = docker_client()
    found = client.containers.list(all=True, filters={"ancestor": image, "name": CONTAINER_PREFIX})
    # Docker's "Created" is RFC 3339 with nanoseconds; compare on whole seconds, with one second of slack.
    return [c for c in found if _created_epoch(c.attrs["Created"]) >= int(since) - 1]


def _created_epoch(created: str) -> float:
    return datetime.strptime(created[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


def measure_upstream(image: str, steps: int = 50) -> dict:
    """Run upstream on `image` for `steps` steps plus the submit step; its figures plus the containers left."""
    python = ensure_upstream()
    started = time.time()
    done = subprocess.run([str(python), str(AGENT_SCRIPT), "--image", image, "--steps", str(steps)],
                          capture_output=True, text=True, env=_upstream_env(), timeout=600)
    left = _leftovers(image, started)
    states = [c.status for c in left]
    # Upstream's own cleanup (a background `docker stop`, ~10 s as `sleep` ignores SIGTERM) may still be
    # pending; remove now so the bench leaves nothing behind whatever state they are in.
    for container in left:
        container.remove(force=True)
    if done.returncode != 0:
        raise RuntimeError(f"upstream run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {**figures, "containers_left": len(left), "containers_left_states": states}


def _default_image() -> str:
    """The first smoke task's image, built if missing (the same image the other benches use)."""
    from harness.sandbox.docker.engine import ensure_engine
    from harness.sandbox.docker.images import BaseImageSpec, ensure_base_image, ensure_task_image
    from harness.tasks import select_tasks

    ensure_engine()
    client = docker_client()
    base = ensure_base_image(client, BaseImageSpec())
    return ensure_task_image(client, select_tasks("smoke")[0], base)


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-step time of upstream mini-swe-agent 2.4.6 on one image.")
    parser.add_argument("--image", help="task image tag (default: the first smoke task's image)")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    start = time.perf_counter()
    ensure_upstream()
    install_s = time.perf_counter() - start
    figures = measure_upstream(args.image or _default_image(), args.steps)
    figures["ensure_upstream_s"] = install_s
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

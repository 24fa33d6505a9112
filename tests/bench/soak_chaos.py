"""What the soak bench does to a running runner from outside, and what it watches meanwhile.

`watch(proc, ...)` samples the runner process's resident memory (/proc/<pid>/status VmRSS) and how many
records its results.jsonl holds, twice a second, and on cue: `docker kill`s one of its running containers
(chosen at random), restarts the Docker daemon once (SIGTERM to dockerd, wait for it to exit, then start it
again the way this project does, `python -m harness.sandbox.docker.engine`), starts a second runner with the
same command on the same run directory (it must be refused: one process per run directory), or SIGKILLs
the runner.
"""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_S = 0.5


@dataclass
class Sample:
    t: float  # seconds since the process started
    recorded: int  # lines in results.jsonl
    rss_kb: int
    threads: int = 0  # the runner's threads (a connection flood must not multiply them)


@dataclass
class Chaos:
    """Cues, as counts of recorded rollouts (kills, the restart) or seconds since start (the SIGKILL)."""
    kill_at: list[int] = field(default_factory=list)
    restart_at: int | None = None
    sigkill_after_s: float | None = None
    second_at: int | None = None  # start `second_command` once this many rollouts are recorded
    second_command: list[str] = field(default_factory=list)


@dataclass
class Watch:
    pid: int
    samples: list[Sample] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)  # container ids killed from outside
    restarts: list[float] = field(default_factory=list)  # each restart's downtime, seconds
    restart_errors: list[str] = field(default_factory=list)
    sigkilled_at_s: float | None = None
    recorded_at_sigkill: int | None = None
    second: tuple[int, str] | None = None  # the second runner's exit code and stderr

    def rss_at(self, recorded: int) -> int | None:
        """RSS (kB) at the first sample that saw `recorded` or more records."""
        return next((s.rss_kb for s in self.samples if s.recorded >= recorded and s.rss_kb), None)


def owner(pid: int) -> str:
    """The owner label the sandbox layer puts on a process's containers."""
    return f"{socket.gethostname()}:{pid}"


def containers_of(pid: int, running_only: bool = True) -> list[str]:
    """Ids of `pid`'s containers ([] while the engine does not answer)."""
    cmd = ["docker", "ps", "-q", "--no-trunc", "--filter", f"label=optrunner.owner={owner(pid)}"]
    try:
        done = subprocess.run(cmd if running_only else [*cmd, "-a"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:  # the engine is going down or coming up
        return []
    return done.stdout.split() if done.returncode == 0 else []


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A number of /proc/PID/status (VmRSS in kB, Threads); 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def recorded(results: Path) -> int:
    try:
        return results.read_bytes().count(b"\n")
    except OSError:
        return 0


def dockerd_pids() -> list[int]:
    """The daemon's process: dockerd re-executes itself for archive work (docker cp, get_archive), and those
    short-lived children are named dockerd too; they are left out (their parent is a dockerd)."""
    names: dict[int, tuple[str, int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                names[int(proc.name)] = ((proc / "comm").read_text().strip(), int(fields[1]))
            except (OSError, IndexError, ValueError):
                continue
    return [pid for pid, (comm, ppid) in names.items()
            if comm == "dockerd" and names.get(ppid, ("", 0))[0] != "dockerd"]


def restart_daemon(timeout_s: float = 90.0) -> float:
    """Stop dockerd as a service manager would (SIGTERM: it stops every container and exits), then start it
    again as `make docker` does. Returns the seconds the engine was away."""
    pids = dockerd_pids()
    if len(pids) != 1:
        raise RuntimeError(f"expected one dockerd, found {pids}")
    started = time.monotonic()
    os.kill(pids[0], signal.SIGTERM)
    while Path(f"/proc/{pids[0]}").exists():
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"dockerd {pids[0]} did not exit within {timeout_s:.0f} s")
        time.sleep(0.2)
    done = subprocess.run([sys.executable, "-m", "harness.sandbox.docker.engine"], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"the engine did not come back: {done.stderr.strip()[-300:]}")
    return time.monotonic() - started


def watch(proc: subprocess.Popen[bytes], results: Path, chaos: Chaos, rng: random.Random,
          log: Callable[[str], None] = print) -> Watch:
    """Sample and apply `chaos` until `proc` exits (or is SIGKILLed here); returns what happened."""
    seen = Watch(proc.pid)
    kills = sorted(chaos.kill_at)
    restart_at = chaos.restart_at
    restarter: threading.Thread | None = None
    started = time.monotonic()

    def restart() -> None:
        try:
            seen.restarts.append(restart_daemon())
            log(f"  docker daemon restarted ({seen.restarts[-1]:.1f} s away)")
        except (RuntimeError, OSError, subprocess.SubprocessError) as err:
            seen.restart_errors.append(str(err))
            log(f"  docker daemon restart failed: {err}")

    while proc.poll() is None:
        now, count = time.monotonic() - started, recorded(results)
        seen.samples.append(Sample(round(now, 2), count, rss_kb(proc.pid), rss_kb(proc.pid, "Threads")))
        if chaos.sigkill_after_s is not None and now >= chaos.sigkill_after_s:
            proc.kill()
            proc.wait()
            seen.sigkilled_at_s, seen.recorded_at_sigkill = round(now, 2), count
            log(f"  SIGKILL at {now:.1f} s, {count} rollouts recorded")
            break
        if kills and count >= kills[0] and (restarter is None or not restarter.is_alive()):
            running = containers_of(proc.pid)
            if running:  # else: try again on the next sample
                victim = rng.choice(running)
                killed = subprocess.run(["docker", "kill", victim], capture_output=True, timeout=60)
                if killed.returncode == 0:  # else (it was just being removed): another one on the next sample
                    seen.killed.append(victim)
                    log(f"  docker kill {victim[:12]} at {count} recorded")
                    kills.pop(0)
        if chaos.second_at is not None and seen.second is None and count >= chaos.second_at:
            done = subprocess.run(chaos.second_command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                                  env={**os.environ, "CI": "true"})
            seen.second = (done.returncode, done.stderr)
            log(f"  a second runner on the same directory at {count} recorded: exit {done.returncode}, "
                f"{done.stderr.strip().splitlines()[-1][:150] if done.stderr.strip() else 'no message'}")
        if restart_at is not None and count >= restart_at and containers_of(proc.pid):
            restart_at = None  # once, while rollouts run
            log(f"  restarting the docker daemon at {count} recorded")
            restarter = threading.Thread(target=restart, daemon=True)
            restarter.start()
        time.sleep(SAMPLE_S)
    if restarter is not None:
        restarter.join()  # the engine must be back before anything is counted
    return seen

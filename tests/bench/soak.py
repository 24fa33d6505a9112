"""Soak bench: the real runner CLI under faults, bounded in count and time, loopback only.

Three runs of a tiny task with `scaffold=mini_swe` against the loopback OpenAI-compatible server, which
answers as a mini_swe agent (a few commands, then the submission sentinel) and faults 20% of requests
(429 with Retry-After, 500/503, a connection reset, a reply slower than the call timeout, a body that is
not JSON; `tests.faults`), and every 50th rollout's agent works against the runner from inside its container
(a directory where the diff was once written, a generated file over `sandbox.max_patch_bytes`):

- main: `--rollouts` (200; at least 100) rollouts at `parallel=8`; a few of its containers are `docker kill`ed from
  outside mid-rollout, the Docker daemon is restarted once, and a second runner is started on the same run
  directory a third of the way in (`tests.bench.soak_chaos`);
- uninterrupted: `--resume-rollouts` rollouts, the same faults, nothing else;
- killed: the same command SIGKILLed at a random moment, then run again to the end;
- long, killed twice: `--long-rollouts` rollouts of `--long-turns` commands (45: 46 steps each) with
  `budget.checkpoint_every=10`, the runner SIGKILLed twice at random moments and run again to the end: each
  rollout recorded once with all its steps, continued from its checkpoints, its calls all paid (tokens =
  the server's but for calls in flight at a kill, at most one per running rollout per kill), no checkpoint,
  checkpoint image or container left.

Targets (each PASS/FAIL; exit 0 when all pass): every planned rollout has a record with an exit reason; no
rollout recorded twice; no container of these runs left; the runner's RSS grows under 10% from the 20th
recorded rollout to the last; tokens and dollars (report summary + model access checks) equal what the
server answered; the killed-and-resumed run ends with the same set of records as the uninterrupted one;
no traceback and the expected exit codes.

usage: python -m tests.bench.soak [--rollouts 200] [--parallel 8] [--resume-rollouts 20] [--seed 1] [--keep DIR]
                                 [--max-minutes 45] [--long-rollouts 4] [--long-turns 45] [--hostile-rollouts 8]
                                 [--only-hostile]

A fifth run, `hostile` (tests.bench.soak_hostile), has installed agents attack the runner through its gateway
and their files (a connection flood, oversized and refused bodies, a sparse 4 GiB log, a remote image URL).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from tests.bench.soak_chaos import ROOT, Chaos, Watch, containers_of, watch
from tests.bench.soak_hostile import HostilePolicy, hostile_targets
from tests.conftest import write_task
from tests.faults import KINDS, FaultPolicy
from tests.openai_server import OpenAIServer

console = Console(width=120)  # a log or a pipe gets the whole table, unwrapped
TASK = "soak"
TIMEOUT_S = 3.0  # model.timeout_s: the `slow` fault answers after it
PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per million tokens
RSS_FROM = 20  # the RSS target compares the 20th recorded rollout with the last
RSS_GROWTH_MAX = 0.10
HOSTILE_EVERY = 50  # every 50th rollout's agent is hostile (tests.faults)


@dataclass
class Process:
    """One runner process: its exit code, wall time, what was watched and the end of its stderr."""
    pid: int
    code: int
    wall_s: float
    seen: Watch
    stderr: str


@dataclass
class Run:
    label: str
    planned: int
    run_dir: Path
    processes: list[Process] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)  # every parseable line of results.jsonl
    torn: int = 0  # lines that did not parse (a kill mid-write)
    report: dict | None = None
    server_tokens: tuple[int, int] = (0, 0)  # prompt, completion tokens the server answered
    faults: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    dropped: int = 0  # answers that never reached the client (resets, slow replies it had given up on)
    leaked: int = 0  # its containers still there once its last process exited

    @property
    def keys(self) -> Counter[tuple[str, int]]:
        return Counter((r["instance_id"], r["rollout"]) for r in self.records)

    @property
    def too_large(self) -> int:
        """Records of rollouts whose change was over sandbox.max_patch_bytes (the hostile agents')."""
        return sum(bool((r.get("details") or {}).get("patch_too_large")) for r in self.records)

    @property
    def duplicates(self) -> int:
        return sum(n - 1 for n in self.keys.values() if n > 1)

    @property
    def all_reasoned(self) -> bool:
        """Every planned rollout recorded, each with an exit reason a finished rollout may have."""
        planned = {(TASK, i) for i in range(self.planned)}
        reasons = [r.get("exit_reason") for r in self.records]
        return set(self.keys) == planned and all(reasons) and "interrupted" not in reasons

    def record_times(self) -> tuple[float, float]:
        """When (s since its last process started) the first and the last rollout were recorded."""
        samples = self.processes[-1].seen.samples
        first = next((s.t for s in samples if s.recorded >= 1), 0.0)
        last = next((s.t for s in samples if s.recorded >= self.planned), samples[-1].t if samples else 0.0)
        return first, last

    def tokens_and_cost(self) -> tuple[int, int, float]:
        """What the runner reports it used: the rollouts' summary plus the model access checks."""
        if not self.report:
            return 0, 0, 0.0
        summary, checks = self.report["summary"], self.report.get("model_checks") or []
        return (summary["tokens"]["input"] + sum(c["input_tokens"] for c in checks),
                summary["tokens"]["output"] + sum(c["output_tokens"] for c in checks),
                (summary["cost_usd"] or 0.0) + sum(c["cost_usd"] or 0.0 for c in checks))

    def calls(self) -> list[dict]:
        """Each model call of the recorded rollouts' trajectories: requests re-sent, 429s, seconds held back."""
        out = []
        for path in sorted((self.run_dir / "trajectories").rglob("*.json")):
            try:
                steps = json.loads(path.read_text()).get("step_records") or []
            except (OSError, json.JSONDecodeError):
                continue
            out += [{"resent": c["attempts"] - 1, "rate_limited": c.get("rate_limited", 0),
                     "rate_limit_wait_s": c.get("rate_limit_wait_s", 0.0)} for c in (s.get("call") for s in steps) if c]
        return out

    def accounting_ok(self) -> bool:
        inp, out, dollars = self.tokens_and_cost()
        expected = (self.server_tokens[0] * PRICE_IN + self.server_tokens[1] * PRICE_OUT) / 1e6
        return (inp, out) == self.server_tokens and abs(dollars - expected) <= 1e-9 + 1e-6 * expected


def command(server: OpenAIServer, tasks: Path, out: Path, name: str, rollouts: int, parallel: int,
            extra: tuple[str, ...] = (), scaffold: str = "mini_swe") -> list[str]:
    return [sys.executable, "-m", "runner", f"output_root={out}", f"name={name}", "model=local",
            f"model.api_base={server.base_url}", "model.served_name=soak", f"model.price.input={PRICE_IN}",
            f"model.price.output={PRICE_OUT}", f"model.timeout_s={TIMEOUT_S:g}", "model.backoff_s=0.2",
            "model.backoff_max_s=2", f"scaffold={scaffold}", f"tasks.selector={tasks}", f"rollouts={rollouts}",
            f"parallel={parallel}", "grade=none", *extra]


# The whole bench is bounded: past this moment (time.monotonic()) a runner still going gets SIGTERM.
DEADLINE = {"at": float("inf")}


def launch(cmd: list[str], run_dir: Path, chaos: Chaos, rng: random.Random, tag: str) -> Process:
    """Start the runner, watch it (and apply `chaos`) to its end, or SIGTERM it at the bench's deadline."""
    logs = run_dir.parent / f"{run_dir.name}.{tag}"
    with open(f"{logs}.out", "wb") as out, open(f"{logs}.err", "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env={**os.environ, "CI": "true"})
        stop = threading.Timer(max(0.0, DEADLINE["at"] - started), proc.terminate)
        stop.start()
        try:
            seen = watch(proc, run_dir / "results.jsonl", chaos, rng, log=console.print)
            code = proc.wait()
        finally:
            stop.cancel()
    if time.monotonic() >= DEADLINE["at"]:
        console.print(f"  [red]time bound reached: process {proc.pid} stopped with SIGTERM[/]")
    return Process(proc.pid, code, time.monotonic() - started, seen, Path(f"{logs}.err").read_text(errors="replace"))


def soak(label: str, name: str, rollouts: int, parallel: int, chaos: list[Chaos], tasks: Path, out: Path,
         seed: int, turns: int = 3, extra: tuple[str, ...] = (), policy: Any = None, scaffold: str = "mini_swe") -> Run:
    """One run (one process per entry of `chaos`, the same command each time) against a fresh server; its agent
    runs `turns` commands, then submits (or does what `policy`, the server's answers, says)."""
    policy = policy or FaultPolicy(share=0.2, timeout_s=TIMEOUT_S, seed=seed, turns=turns,
                                   hostile_every=HOSTILE_EVERY if turns == 3 else 0)
    run = Run(label, rollouts, out / "runs" / name)
    rng = random.Random(seed)
    console.print(f"[bold]{label}[/]: {rollouts} rollouts, parallel={parallel}")
    with OpenAIServer(policy=policy) as server:
        cmd = command(server, tasks, out, name, rollouts, parallel, extra, scaffold)
        (out / "runs").mkdir(parents=True, exist_ok=True)
        for i, cue in enumerate(chaos):
            if cue.second_at is not None:  # the same command, started again while this one runs
                cue.second_command = cmd
            run.processes.append(launch(cmd, run.run_dir, cue, rng, f"p{i}"))
            p = run.processes[-1]
            console.print(f"  process {p.pid}: exit {p.code} after {p.wall_s:.1f} s")
        # Counted before the next run starts: its orphan cleanup would remove what this one left.
        left = [c for p in run.processes for c in containers_of(p.pid, running_only=False)]
        run.leaked = len(left)
        for container in left:  # what it was, for the diagnosis
            console.print("  left behind: " + subprocess.run(
                ["docker", "inspect", "--format", '{{.Id}} {{.State.Status}} {{.Created}} rollout '
                 '{{index .Config.Labels "optrunner.rollout"}}', container],
                capture_output=True, text=True).stdout.strip())
        time.sleep(1.0)  # handler threads still sleeping on a slow reply finish their bookkeeping
        run.server_tokens = (server.prompt_tokens, server.completion_tokens)
        run.requests = len(server.requests)
        run.dropped = sum(r.dropped for r in server.requests)
    run.faults = policy.injected
    try:
        lines = (run.run_dir / "results.jsonl").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            run.records.append(json.loads(line))
        except json.JSONDecodeError:
            run.torn += 1
    report = run.run_dir / "report.json"
    run.report = json.loads(report.read_text()) if report.exists() else None
    return run


def rss_growth(seen: Watch, planned: int) -> tuple[int | None, int | None, int | None, float | None]:
    """RSS (kB) at the start, at the RSS_FROM-th and at the last recorded rollout; growth between the two."""
    start = next((s.rss_kb for s in seen.samples if s.t >= 1.0 and s.rss_kb), None)  # once Python runs
    at_from, at_end = seen.rss_at(RSS_FROM), seen.rss_at(planned)
    growth = None if not at_from or not at_end else (at_end - at_from) / at_from
    return start, at_from, at_end, growth


def figures(runs: list[Run]) -> Table:
    table = Table(title="soak: figures")
    table.add_column("figure")
    for run in runs:
        table.add_column(run.label, justify="right")

    def row(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        table.add_row(name, *(str(fn(r)) for r in runs))

    mb = lambda kb: "-" if kb is None else f"{kb / 1024:.0f} MB"  # noqa: E731
    row("rollouts recorded / planned", lambda r: f"{len(r.keys)} / {r.planned}")
    row("exit reasons", lambda r: ", ".join(f"{k} {n}" for k, n in Counter(x.get("exit_reason") for x in r.records)
                                            .most_common()))
    row("requests to the server", lambda r: r.requests)
    for kind in KINDS:
        row(f"faults: {kind}", lambda r, k=kind: r.faults.get(k, 0))
    row("faults: total (share)",
        lambda r: f"{sum(r.faults.values())} ({sum(r.faults.values()) / max(r.requests, 1):.0%})")
    row("answers dropped (reset, slow)", lambda r: r.dropped)
    row("model layer: requests re-sent (of them 429s)",
        lambda r: "{} ({})".format(*(sum(c[k] for c in r.calls()) for k in ("resent", "rate_limited"))))
    row("model layer: Retry-After waits", lambda r: f"{sum(c['rate_limit_wait_s'] for c in r.calls()):.1f} s")
    row("records with attempts > 1", lambda r: sum(x.get("attempts", 1) > 1 for x in r.records))
    row("infra errors (retried attempts)", lambda r: sum(len(x.get("infra_errors") or []) for x in r.records))
    row("containers killed from outside", lambda r: sum(len(p.seen.killed) for p in r.processes))
    row("docker daemon restarts (downtime)", lambda r: ", ".join(f"{d:.1f} s" for p in r.processes
                                                                 for d in p.seen.restarts) or "0")
    row("runner SIGKILLs (at, recorded then)",
        lambda r: ", ".join(f"{p.seen.sigkilled_at_s:.1f} s, {p.seen.recorded_at_sigkill}"
                            for p in r.processes if p.seen.sigkilled_at_s) or "0")
    row("hostile agents (recorded patch_too_large)", lambda r: f"{r.faults.get('hostile', 0)} ({r.too_large})")
    row("second runner on the directory", lambda r: ", ".join(
        f"exit {p.seen.second[0]}" for p in r.processes if p.seen.second) or "-")
    row("duplicates in results.jsonl", lambda r: r.duplicates)
    row("torn lines in results.jsonl", lambda r: r.torn)
    row("leaked containers", lambda r: r.leaked)
    row("runner exit codes", lambda r: ", ".join(str(p.code) for p in r.processes))
    row("tokens in/out: server", lambda r: f"{r.server_tokens[0]} / {r.server_tokens[1]}")
    row("tokens in/out: runner", lambda r: "{} / {}".format(*r.tokens_and_cost()[:2]))
    row("cost: runner (server x price)", lambda r: f"${r.tokens_and_cost()[2]:.6f} "
        f"(${(r.server_tokens[0] * PRICE_IN + r.server_tokens[1] * PRICE_OUT) / 1e6:.6f})")
    row("RSS at start (1 s)", lambda r: mb(rss_growth(r.processes[-1].seen, r.planned)[0]))
    row(f"RSS at rollout {RSS_FROM}", lambda r: mb(rss_growth(r.processes[-1].seen, r.planned)[1]))
    row("RSS at the last rollout", lambda r: mb(rss_growth(r.processes[-1].seen, r.planned)[2]))
    row("wall time", lambda r: " + ".join(f"{p.wall_s:.0f} s" for p in r.processes))
    return table


def long_targets(long: Run, turns: int, parallel: int) -> list[tuple[str, str, bool]]:
    """The long phase: rollouts of `turns` + 1 steps with checkpoints, the runner SIGKILLed twice."""
    steps = sorted({r.get("steps") for r in long.records})
    resumed = sum("resumed_from" in (r.get("details") or {}) for r in long.records)
    lost = sum(u["calls"] for r in long.records for u in (r.get("details") or {}).get("lost_calls", []))
    sigkills = sum(p.seen.sigkilled_at_s is not None for p in long.processes)
    left = list(long.run_dir.glob("checkpoints/*"))
    used = long.tokens_and_cost()
    gap = (long.server_tokens[0] - used[0], long.server_tokens[1] - used[1])
    in_flight = sigkills * min(long.planned, parallel)
    bound = (in_flight * 400, in_flight * 60)
    images = subprocess.run(["docker", "images", "-q", "optrunner/checkpoint"], capture_output=True,
                            text=True).stdout.split()
    return [
        (f"long rollouts ({turns + 1} steps) SIGKILLed twice: each recorded once, whole",
         f"{len(long.keys)}/{long.planned}, steps {steps}, {resumed} continued from a checkpoint, "
         f"{lost} calls lost and paid, {sigkills} SIGKILLs",
         long.all_reasoned and long.duplicates == 0 and steps == [turns + 1] and resumed >= 1 and sigkills == 2),
        # A call the server answered in the instant before a SIGKILL, still on its way to the runner, is one no
        # record can hold: at most one per running rollout per kill (FaultPolicy answers <= 400 + 60 tokens).
        ("long: tokens = the server's, but for calls in flight at a kill (<= 1 per rollout per kill)",
         f"server - runner: {gap[0]} / {gap[1]} tokens (bound {bound[0]} / {bound[1]})",
         0 <= gap[0] <= bound[0] and 0 <= gap[1] <= bound[1]),
        ("long: no checkpoint, checkpoint image or container left",
         f"{len(left)} files, {len(images)} images, {long.leaked} containers",
         not left and not images and not long.leaked),
    ]


def targets(main: Run, plain: Run, killed: Run) -> list[tuple[str, str, bool]]:
    runs = (main, plain, killed)
    growth = rss_growth(main.processes[-1].seen, main.planned)[3]
    leaked = sum(r.leaked for r in runs)
    crashed = [f"{r.label}#{i}" for r in runs for i, p in enumerate(r.processes) if "Traceback" in p.stderr]
    codes = [p.code for p in main.processes + plain.processes] + [killed.processes[-1].code]
    restarts = sum(len(p.seen.restarts) for p in main.processes)
    kills = sum(len(p.seen.killed) for p in main.processes)
    sigkills = sum(p.seen.sigkilled_at_s is not None for p in killed.processes)
    same = (set(killed.keys) == set(plain.keys) and killed.duplicates == 0 and killed.all_reasoned)
    late = time.monotonic() >= DEADLINE["at"]
    second = next((p.seen.second for p in main.processes if p.seen.second), None)
    refused = second is not None and second[0] != 0 and "is in use by" in second[1] and "Traceback" not in second[1]
    hostile = main.faults.get("hostile", 0)
    return [
        ("a second runner on the run directory is refused", "-" if second is None else
         f"exit {second[0]}: {second[1].strip().splitlines()[-1][:60] if second[1].strip() else ''}", refused),
        # (a hostile attempt whose container was killed is retried, maybe as a peaceful one: at least one, at
        # most as many as were answered)
        ("hostile agents recorded patch_too_large, the run went on", f"{main.too_large} of {hostile} answered",
         1 <= main.too_large <= hostile),
        ("every rollout recorded with an exit reason", ", ".join(f"{len(r.keys)}/{r.planned}" for r in runs),
         all(r.all_reasoned for r in runs)),
        ("no rollout recorded twice", f"{sum(r.duplicates for r in runs)} duplicates",
         all(r.duplicates == 0 for r in runs)),
        ("no container left", f"{leaked} left", leaked == 0),
        (f"RSS growth rollout {RSS_FROM} -> last < {RSS_GROWTH_MAX:.0%}",
         "-" if growth is None else f"{growth:+.1%}", growth is not None and growth < RSS_GROWTH_MAX),
        ("tokens and cost = what the server answered", f"main {'=' if main.accounting_ok() else '!='}, "
         f"uninterrupted {'=' if plain.accounting_ok() else '!='}", main.accounting_ok() and plain.accounting_ok()),
        ("SIGKILL + resume = uninterrupted records", f"{len(killed.keys)} vs {len(plain.keys)} keys, "
         f"{'same' if set(killed.keys) == set(plain.keys) else 'different'}", same),
        # Without this a soak whose daemon restart failed (dockerd run by systemd, say) would pass untested.
        ("chaos applied: 1 daemon restart, >= 3 kills, 1 SIGKILL",
         f"{restarts} restarts, {kills} kills, {sigkills} SIGKILLs", restarts == 1 and kills >= 3 and sigkills == 1),
        ("within the time bound", "stopped at the bound" if late else "yes", not late),
        ("no traceback, runs exit 0", f"tracebacks: {', '.join(crashed) or 'none'}; exits {codes}",
         not crashed and all(c == 0 for c in codes)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.soak")
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--resume-rollouts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long-rollouts", type=int, default=4, help="rollouts of the long phase (checkpoints)")
    parser.add_argument("--long-turns", type=int, default=45, help="commands each long rollout runs (>= 40)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs here instead of a temp dir")
    parser.add_argument("--max-minutes", type=float, default=45.0,
                        help="time bound of the whole bench: a runner still going then is stopped (a FAIL)")
    parser.add_argument("--hostile-rollouts", type=int, default=8, help="installed agents attacking the runner")
    parser.add_argument("--only-hostile", action="store_true", help="the hostile phase alone")
    args = parser.parse_args(argv)
    if args.rollouts < 100:
        parser.error("--rollouts must be at least 100 (the soak's target count)")
    ensure_engine()
    rng = random.Random(args.seed)
    started = time.monotonic()
    DEADLINE["at"] = started + args.max_minutes * 60
    runs: list[Run] = []
    checks: list[tuple[str, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        root = args.keep or Path(tmp)
        (root / "tasks").mkdir(parents=True, exist_ok=True)
        write_task(root / "tasks", TASK)
        if not args.only_hostile:
            n = args.rollouts
            chaos = Chaos(kill_at=sorted(rng.sample(range(10, n - 5), 5)),
                          restart_at=rng.randint(n * 2 // 5, n * 3 // 5), second_at=n // 3)
            main_run = soak("main", "main", n, args.parallel, [chaos], root / "tasks", root / "out", args.seed)
            plain = soak("uninterrupted", "plain", args.resume_rollouts, args.parallel, [Chaos()], root / "tasks",
                         root / "out", args.seed + 1)
            moment = rng.uniform(*plain.record_times())  # while its rollouts are being recorded
            killed = soak("killed + resumed", "killed", args.resume_rollouts, args.parallel,
                          [Chaos(sigkill_after_s=moment), Chaos()], root / "tasks", root / "out", args.seed + 1)
            long_parallel = min(args.parallel, 4)
            long = soak("long, killed twice", "long", args.long_rollouts, long_parallel,
                        [Chaos(sigkill_after_s=rng.uniform(15, 25)), Chaos(sigkill_after_s=rng.uniform(15, 25)),
                         Chaos()], root / "tasks", root / "out", args.seed + 2, turns=args.long_turns,
                        extra=("budget.checkpoint_every=10", f"budget.max_steps={args.long_turns + 10}"))
            runs += [main_run, plain, killed, long]
            checks += targets(main_run, plain, killed) + long_targets(long, args.long_turns, long_parallel)
        hostile = soak("hostile installed agents", "hostile", args.hostile_rollouts, min(args.parallel, 4),
                       [Chaos()], root / "tasks", root / "out", args.seed + 3, policy=HostilePolicy(),
                       scaffold="installed/mini_swe_agent")
        console.print(figures([*runs, hostile]))
        checks += hostile_targets(hostile, min(args.parallel, 4))
    table = Table(title="soak: targets")
    for column in ("target", "measured", "result"):
        table.add_column(column)
    for name, value, ok in checks:
        table.add_row(name, value, "[green]PASS[/]" if ok else "[red]FAIL[/]")
    console.print(table)
    console.print(f"soak wall time: {time.monotonic() - started:.0f} s (bound {args.max_minutes:g} min)")
    return 0 if all(ok for _, _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

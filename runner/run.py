"""Running one experiment: plan tasks x rollouts, run them on an executor under limits, grade every diff,
write the run store and the reports.

Phases: check (config, tasks, sandboxes, images; nothing starts before all pass) -> rollouts ->
grading (`after`: once all rollouts are done; `stream`: in a background thread as they finish; `none`)
-> reports. Re-running the same command resumes in the same directory: a rollout whose result file
exists is kept, any other is run again.

Interrupts: the first Ctrl-C, SIGTERM or SIGHUP stops launching, ends running rollouts (their sandboxes
are removed at once), keeps everything finished, writes the reports and exits 130, 143 or 129; a second
signal removes this process's sandboxes and exits at once (`harness.signals`).
"""
from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

from harness import signals
from harness.models.loader import litellm_module
from harness.sandbox.providers import provider
from harness.tasks.task import Task
from harness.models.records import CallRecord
from runner.config import ConfigError, RunConf
from runner.executors import make_executor
from runner.grading import Grader, graded
from runner.plan import Planned, plan, select
from runner.progress import Progress
from runner.records import ResultRecord, RolloutRecord
from runner.report import write_reports
from harness.sandbox.interface import close_quietly
from runner.rollout import Interrupted, Live, RolloutRunner
from runner.store import RunStore
from scaffolds.exits import ExitReason


class RunInterrupted(Exception):
    pass


class Runner:
    def __init__(self, conf: RunConf, plain: dict[str, Any], run_dir: Path) -> None:
        self.conf, self.plain = conf, plain
        self.store = RunStore(run_dir)
        self.sandboxes = provider("docker")
        self.live: dict[tuple[str, int], Live] = {}
        self.lock = threading.Lock()
        self.stopping: ExitReason | None = None  # None, INTERRUPTED or RUN_COST_LIMIT
        self.exit_code = 130  # the interrupting signal's: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
        self.grading_phase = False
        self.progress: Progress | None = None
        self.grade_queue: queue.Queue[RolloutRecord | None] = queue.Queue()
        self.recorded = {r.key for r in self.store.results()}

    # ---------------------------------------------------------------- entry
    def run(self) -> int:
        # Until rollouts start, a signal stops the checks and image builds at once (Stopped).
        restore = signals.install()
        try:
            planned, todo, done_before = self._prepare()
        finally:
            restore()
        restore = signals.install(first=self._on_signal, second=lambda: self.sandboxes.cleanup("mine"))
        try:
            self._run_rollouts(todo, done_before)
            if self.stopping == ExitReason.INTERRUPTED:
                raise RunInterrupted
            self.grading_phase = True
            self._record_all(planned)
        except (RunInterrupted, KeyboardInterrupt):
            write_reports(self.store, self.conf, list(self.tasks))
            kept = len(self.store.results())
            print(f"interrupted: {kept} finished rollouts kept in {self.store.root}; "
                  "run the same command again to resume", flush=True)
            return self.exit_code
        finally:
            restore()
        report = write_reports(self.store, self.conf, list(self.tasks))
        self._print_summary(report)
        return 0

    def _prepare(self) -> tuple[list[Planned], list[Planned], list[RolloutRecord]]:
        """Checks, images, the plan: what is to run and what finished before (resume)."""
        # litellm's import takes seconds: it runs beside the checks, and before any rollout's clock starts.
        importer = threading.Thread(target=litellm_module, daemon=True)
        importer.start()
        tasks = select(self.conf)  # config errors first: nothing has started yet
        check = self._check_model()
        self.sandboxes.ensure_ready()
        resuming = self.store.bind_config(self.plain)
        if check is not None:
            self.store.append_check(check.to_dict())
        removed = self.sandboxes.cleanup("orphans")  # containers of earlier runs that were killed
        images = self.sandboxes.ensure_images(tasks, self.conf.sandbox.base_image,
                                              progress=lambda m: print(m, flush=True),
                                              base_map=dict(self.conf.tasks.base_map))
        importer.join()
        planned = plan(tasks, self.conf.rollouts)
        stored = [(p, self.store.rollout(p.task.id, p.index)) for p in planned]  # read each result file once
        todo = [p for p, record in stored if record is None]
        done_before = [record for _, record in stored if record is not None]
        if resuming:
            print(f"resuming {self.store.root}: {len(done_before)} rollouts already finished, {len(todo)} to run"
                  + (f"; removed {removed} leftover containers" if removed else ""), flush=True)
        self.images = images
        self.rollouts = RolloutRunner(self.conf, self.store, self.sandboxes)
        self.grader = Grader(self.store, self.conf.grading, images, self.sandboxes)
        self.tasks = {t.id: t for t in tasks}
        return planned, todo, done_before

    def _check_model(self) -> CallRecord | None:
        """One minimal request before any container starts: a refused key or an unknown model stops the run
        here, in one line, instead of in every rollout. Returns the probe's call record (its cost is the
        run's, reported beside the rollouts')."""
        from harness.models.preflight import check_access

        result = check_access(self.conf.model)
        if result.problem:
            raise ConfigError(result.problem)
        if result.warning:
            print(f"warning: {result.warning}", flush=True)
        return result.record

    # ---------------------------------------------------------------- rollouts
    def _run_rollouts(self, todo: list[Planned], done_before: list[RolloutRecord]) -> None:
        cost_before = sum(r.cost_usd or 0.0 for r in done_before)
        title = f"{self.conf.model.id} x {self.conf.scaffold.id} x {self.conf.budget.id}"
        grader_thread = None
        if self.conf.grade == "stream":
            grader_thread = threading.Thread(target=self._stream_grading, daemon=True)
            grader_thread.start()
            for record in done_before:
                self.grade_queue.put(record)
        with Progress(title, len(todo), len(done_before), cost_before, self.conf.parallel) as progress:
            self.progress = progress

            def tick() -> None:
                with self.lock:
                    live = list(self.live.values())
                self._check_run_cost(progress.cost_before + sum(item.cost for item in live), live)
                progress.update(live)

            executor = make_executor(self.conf.executor.kind, self.conf.parallel)
            executor.run(todo, self._work, self._finished, tick)
        if grader_thread is not None:
            self.grade_queue.put(None)
            grader_thread.join()

    def _work(self, item: Planned) -> tuple[RolloutRecord, dict[str, Any] | None] | None:
        """One rollout, on an executor's worker; None when the run is stopping."""
        if self.stopping:
            return None
        live = Live(item.task.id, item.index)
        with self.lock:
            self.live[(item.task.id, item.index)] = live
        try:
            return self.rollouts.run(item.task, self.images[item.task.id].agent, live)
        except Interrupted:
            return None
        finally:
            with self.lock:
                self.live.pop((item.task.id, item.index), None)

    def _finished(self, _item: Planned, result: tuple[RolloutRecord, dict[str, Any] | None] | None) -> None:
        """On the driver's thread: store a finished rollout and pass it on to grading."""
        if result is None:
            return
        record, trajectory = result
        self.store.save_rollout(record, trajectory)
        if self.progress is not None:
            self.progress.finished(record)
        if self.conf.grade == "none":
            self._append(graded(self.store, record, None))
        elif self.conf.grade == "stream":
            self.grade_queue.put(record)

    def _append(self, result: ResultRecord) -> None:
        """Record a finished rollout in results.jsonl, once."""
        with self.lock:
            if result.key in self.recorded:
                return
            self.recorded.add(result.key)
        self.store.append_result(result)

    def _check_run_cost(self, total: float, live: list[Live]) -> None:
        cap = self.conf.budget.run_cost_usd
        if cap is None or self.stopping or total < cap:
            return
        self.stopping = ExitReason.RUN_COST_LIMIT
        if self.progress:
            self.progress.log(f"run cost cap ${cap:g} reached (${total:.4f}): ending running rollouts, "
                              "launching no more")
        for item in live:
            item.stop_reason = ExitReason.RUN_COST_LIMIT
            item.stop.set()

    def _on_signal(self, signum: int) -> None:
        """The first Ctrl-C, SIGTERM or SIGHUP (the second one exits at once: `harness.signals`)."""
        self.stopping = ExitReason.INTERRUPTED
        self.exit_code = 128 + signum
        print(f"\ninterrupted ({signals.NAMES.get(signum, signum)}): stopping rollouts (a second signal exits at "
              "once)", flush=True)
        with self.lock:
            live = list(self.live.values())
        for item in live:
            item.stop_reason = ExitReason.INTERRUPTED
            item.stop.set()
            box = item.sandbox
            if box is not None:  # ends the command in flight now instead of at its timeout
                threading.Thread(target=close_quietly, args=(box,), daemon=True).start()
        if self.grading_phase:
            raise signals.Stopped(signum)

    # ---------------------------------------------------------------- grading
    def _grade_one(self, record: RolloutRecord) -> None:
        task: Task = self.tasks[record.instance_id]
        if record.key in self.recorded:
            return
        print(f"grading {task.id} #{record.rollout}", flush=True)
        self._append(self.grader.result(task, record))

    def _stream_grading(self) -> None:
        while (record := self.grade_queue.get()) is not None:
            if self.stopping != ExitReason.INTERRUPTED:
                self._grade_one(record)

    def _record_all(self, planned: list[Planned]) -> None:
        """Every finished rollout not yet in results.jsonl gets graded (unless grade=none) and recorded."""
        for item in planned:
            record = self.store.rollout(item.task.id, item.index)
            if record is None or record.key in self.recorded:
                continue
            if self.conf.grade == "none":
                self._append(graded(self.store, record, None))
            else:
                self._grade_one(record)

    def _print_summary(self, report: dict[str, Any]) -> None:
        s = report["summary"]
        line = f"{s['n_rollouts']}/{s['n_planned']} rollouts"
        if s["graded"]:
            line += f", Opt@1 {s['opt_at_k']['1']:.3f}, Avg@1 {s['avg_at_k']['1']:.3f}"
        cost = "unknown" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}"
        print(f"{line}, cost {cost}{'' if s['cost_known'] else ' (some prices unknown)'}", flush=True)
        print(f"report: {self.store.report_md}", flush=True)


def execute(conf: RunConf, plain: dict[str, Any], run_dir: Path) -> int:
    started = time.time()
    code = Runner(conf, plain, run_dir).run()
    print(f"done in {time.time() - started:.0f} s", flush=True)
    return code

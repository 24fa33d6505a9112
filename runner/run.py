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

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from harness import signals
from harness.models.loader import litellm_module
from harness.models.records import CallRecord
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import HOST_PYTHON, ensure_each, provider
from harness.tasks.task import Task
from runner.checkpoints import CheckpointDir, checkpoint_dir
from runner.config import ConfigError, RunConf
from runner.executors.base import Context, Executor, Running, make_executor
from runner.grading import Grader, graded
from runner.lock import RunLock
from runner.plan import Planned, plan, select
from runner.progress import Progress
from runner.provenance import collect as collect_provenance
from runner.records import ResultRecord, RolloutRecord
from runner.report import write_reports
from runner.rollout import RolloutJob, RolloutResult, make_job
from scaffolds import agent_images, takes_checkpoints
from runner.store import RunStore
from scaffolds.exits import RETRIED, ExitReason


class RunInterrupted(Exception):
    pass


class Runner:
    def __init__(self, conf: RunConf, plain: dict[str, Any], run_dir: Path) -> None:
        self.conf, self.plain = conf, plain
        self.store = RunStore(run_dir)
        self.run_lock = RunLock(run_dir, "run")  # held from the run directory's first write to the end
        self.sandboxes = provider(conf.sandbox.provider)
        self.executor: Executor | None = None
        self.lock = threading.Lock()
        self.stopping: ExitReason | None = None  # None, INTERRUPTED or RUN_COST_LIMIT
        self.signalled = 0  # a first signal the loop has not acted on yet (_on_signal sets only flags)
        self.exit_code = 130  # the interrupting signal's: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
        self.grading_phase = False
        self.progress: Progress | None = None
        self.grade_queue: queue.Queue[RolloutRecord | None] = queue.Queue()
        self.recorded: set[tuple[str, int]] = set()  # read once the lock is held (_prepare)
        self.images: dict[str, TaskImages] = {}  # task id -> its images, once ensured
        self.skipped: dict[str, str] = {}  # task id -> why its images could not be made (not run)

    # ---------------------------------------------------------------- entry
    def run(self) -> int:
        try:
            return self._run()
        finally:  # (after the reports: the directory is this process's until nothing more is written)
            self.run_lock.release()

    def _run(self) -> int:
        # Until rollouts start, a signal stops the checks and image builds at once (Stopped).
        restore = signals.install()
        try:
            planned, todo, done_before = self._prepare()
        except BaseException:
            self._close()
            raise
        finally:
            restore()
        restore = signals.install(first=self._on_signal, second=self._remove_sandboxes)
        try:
            self._run_rollouts(todo, done_before)
            if self.stopping == ExitReason.INTERRUPTED:
                raise RunInterrupted
            self.grading_phase = True
            self._record_all(planned)
            self._judge_rest()
        except (RunInterrupted, KeyboardInterrupt):
            write_reports(self.store, self.conf, list(self.tasks), self.images, self.sandboxes, self.skipped)
            kept = len(self.store.results())
            print(f"interrupted: {kept} finished rollouts kept in {self.store.root}; "
                  "run the same command again to resume", flush=True)
            return self.exit_code
        finally:
            restore()
            self._close()
        report = write_reports(self.store, self.conf, list(self.tasks), self.images, self.sandboxes, self.skipped)
        self._print_summary(report)
        return 0

    def _checkpoints(self) -> CheckpointDir:
        return checkpoint_dir(self.store.checkpoints_dir, self.store.run_id, self.sandboxes)

    def _close(self) -> None:
        if self.executor is not None:
            self.executor.close()

    def _remove_sandboxes(self) -> None:
        """The second signal: no time for anything gentler."""
        if self.executor is not None:
            self.executor.remove_sandboxes()
        else:
            self.sandboxes.cleanup("mine")

    def _prepare(self) -> tuple[list[Planned], list[RolloutJob], list[RolloutRecord]]:
        """Checks, images, the plan: what is to run and what finished before (resume)."""
        # litellm's import takes seconds: it runs beside the checks, and before any rollout's clock starts.
        importer = threading.Thread(target=litellm_module, daemon=True)
        importer.start()
        tasks = select(self.conf)  # config errors first: nothing has started yet
        if self.run_lock.path.exists():  # a directory another process holds is refused before the model is
            self.run_lock.acquire()  # called (a paid request); Hydra's fresh empty one is locked after it
        check = self._check_model()
        # (and enough free disk where sandboxes write and where this run's records go: harness.sandbox.diskcheck)
        self.sandboxes.ensure_ready(disk=self.conf.sandbox.disk, output_dir=self.store.root)
        # Before the run directory exists: a cluster that cannot be reached refuses the run.
        self.executor = make_executor(Context(self.conf, self.store.run_id, self.sandboxes,
                                              checkpoints=self.store.checkpoints_dir))
        self.run_lock.acquire()  # a second runner on this directory is refused here, in one line
        resuming = self.store.bind_config(self.plain)
        # Recorded rollouts are not graded again, except those whose grading broke on infrastructure (error)
        self.recorded = {r.key for r in self.store.results()
                         if not (self.conf.retry_errors and r.grading is not None and r.grading.status == "error")}
        if check is not None:
            self.store.append_check(check.to_dict())
        removed = self.sandboxes.cleanup("orphans")  # containers of earlier runs that were killed
        if self.conf.sandbox.host_python:  # (read where layers over the host are built)
            os.environ[HOST_PYTHON] = self.conf.sandbox.host_python
        # A task whose images cannot be made is skipped, its reason said and reported; the others run. Its
        # rollouts stay unfinished (failures in the figures, as any missing rollout) until a rerun builds it.
        images, self.skipped = ensure_each(self.sandboxes, tasks, self.conf.sandbox.base_image,
                                           progress=lambda m: print(m, flush=True),
                                           base_map=dict(self.conf.tasks.base_map),
                                           rootfs_from=self.conf.sandbox.rootfs)
        if self.skipped:
            print(f"warning: {len(self.skipped)} of {len(tasks)} tasks skipped, their images could not be made "
                  f"({', '.join(sorted(self.skipped))}); their rollouts count as failures until the same "
                  "command is run again", flush=True)
        self.images = images
        importer.join()
        planned, todo, done_before, again, spent = self._jobs(tasks, images)
        # Once the images are known, on the first start (or a resume of one killed before this point): a run from
        # before provenance was recorded gets none, since its finished rollouts ran somewhere unrecorded.
        if not done_before and self.store.provenance() is None:
            self.store.add_provenance(collect_provenance(self.conf, images, self.sandboxes))
        if resuming:
            print(f"resuming {self.store.root}: {len(done_before)} rollouts already finished, {len(todo)} to run"
                  + (f" ({len(again)} of them infrastructure failures, run again)" if again else "")
                  + (f"; {spent} infrastructure failures kept: their rollout_attempts={self.conf.rollout_attempts} are "
                     "used up" if spent else "")
                  + (f"; removed {removed} leftover containers" if removed else ""), flush=True)
        if self.conf.budget.checkpoint_every and not takes_checkpoints(self.conf.scaffold.name):
            print(f"note: scaffold {self.conf.scaffold.id} keeps no checkpoints (an agent CLI's conversation is its "
                  "own process's): an interrupted rollout starts again from step 0", flush=True)
        self.grader = Grader(self.store, self.conf.grading, images, self.sandboxes, timing=self.executor.time_patches,
                             retry_errors=self.conf.retry_errors)
        self.tasks = {t.id: t for t in tasks}
        return planned, todo, done_before

    def _jobs(self, tasks: list[Task], images: dict[str, TaskImages]
              ) -> tuple[list[Planned], list[RolloutJob], list[RolloutRecord], list[Any], int]:
        """The plan against what is stored: the jobs to run (new rollouts, and infrastructure failures with
        attempts left), the records kept, the failures run again and how many are kept with none left."""
        planned = plan([t for t in tasks if t.id in images], self.conf.rollouts)
        stored = [(p, self.store.rollout(p.task.id, p.index)) for p in planned]  # read each result file once
        # An infrastructure failure from before (the engine died, the provider was down) is run again, its
        # spend kept, while it has attempts left (rollout_attempts, across resumes: an agent that could turn its
        # attempt into one must not get fresh ones without end), unless retry_errors=false (--no-retry-errors)
        # keeps it as it was.
        retry = RETRIED if self.conf.retry_errors else frozenset()
        failed = [(p, record) for p, record in stored if record is not None and record.exit_reason in retry]
        again = [(p, record) for p, record in failed if record.attempts < self.conf.rollout_attempts]
        spent = len(failed) - len(again)
        # what the rollouts' sandboxes start from: the agent images (one layer up for an installed agent)
        needed = {p.task.id for p, record in stored if record is None} | {p.task.id for p, _ in again}
        try:
            agent = agent_images(self.conf.scaffold.name, self.conf.scaffold.options,
                                 {task_id: images[task_id].agent for task_id in sorted(needed)}, self.sandboxes,
                                 lambda m: print(m, flush=True))
        except ValueError as err:
            raise ConfigError(str(err)) from None
        todo = [make_job(self.conf, p.task, p.index, agent[p.task.id]) for p, record in stored if record is None]
        todo += [make_job(self.conf, p.task, p.index, agent[p.task.id], retried=record) for p, record in again]
        done_before = [record for _, record in stored if record is not None
                       and (record.exit_reason not in retry or record.attempts >= self.conf.rollout_attempts)]
        self.recorded -= {record.key for _, record in again}  # their new records replace the old (last one wins)
        return planned, todo, done_before, again, spent

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
    def _run_rollouts(self, todo: list[RolloutJob], done_before: list[RolloutRecord]) -> None:
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
            executor = self.executor
            assert executor is not None

            def tick() -> None:
                self._act_on_signal()
                live = executor.running()
                self._check_run_cost(progress.cost_before + sum(item.cost for item in live), live)
                progress.update(live)

            executor.run_rollouts(todo, self._finished, tick)
        if grader_thread is not None:
            self.grade_queue.put(None)
            grader_thread.join()

    def _finished(self, _job: RolloutJob, result: RolloutResult | None) -> None:
        """On the driver's thread: store a finished rollout and pass it on to grading."""
        if result is None:
            return
        record = result.record
        self.store.save_rollout(record, result.trajectory, result.attempts)
        if self.conf.atif and result.trajectory is not None:  # beside the run's own, as `optrunner export` does
            from runner.export import export_atif

            export_atif(self.store.root, [(record.instance_id, record.rollout, None)], self.store.atif_dir)
        self._checkpoints().discard(record.instance_id, record.rollout)  # recorded: no longer needed
        if result.grading is not None:  # grading.in_place: graded in the agent's container
            self.store.save_grading(record.instance_id, record.rollout, result.grading)
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

    def _check_run_cost(self, total: float, live: list[Running]) -> None:
        cap = self.conf.budget.run_cost_usd
        if cap is None or self.stopping or total < cap or self.executor is None:
            return
        self.stopping = ExitReason.RUN_COST_LIMIT
        if self.progress:
            self.progress.log(f"run cost cap ${cap:g} reached (${total:.4f}): ending {len(live)} running "
                              "rollouts, launching no more")
        self.executor.stop(ExitReason.RUN_COST_LIMIT)

    def _on_signal(self, signum: int) -> None:
        """The first Ctrl-C, SIGTERM or SIGHUP (the second one exits at once: `harness.signals`). Flags only:
        a handler runs between two bytecodes of the main thread, which may be holding a lock that stopping
        takes (the executor's), or be inside a print; the rollout loop's next tick does the stopping."""
        self.signalled = signum
        self.stopping = ExitReason.INTERRUPTED
        self.exit_code = 128 + signum
        if self.grading_phase:  # (grading stops by the exception, as a Ctrl-C would stop it)
            raise signals.Stopped(signum)

    def _act_on_signal(self) -> None:
        """On the loop's tick: what the first signal asked for, once."""
        signum, self.signalled = self.signalled, 0
        if not signum:
            return
        print(f"\ninterrupted ({signals.NAMES.get(signum, signum)}): stopping rollouts (a second signal exits at "
              "once)", flush=True)
        if self.executor is not None:
            self.executor.stop(ExitReason.INTERRUPTED)

    # ---------------------------------------------------------------- grading
    def _grade(self, records: list[RolloutRecord]) -> None:
        """Grade and record these finished rollouts (a batch: distinct patches may be timed at once)."""
        items = [(self.tasks[r.instance_id], r) for r in records if r.key not in self.recorded]
        if not items:
            return
        print(f"grading {len(items)} rollouts: " + ", ".join(f"{t.id} #{r.rollout}" for t, r in items[:8])
              + (" ..." if len(items) > 8 else ""), flush=True)
        results = []
        for _task, record, report in self.grader.reports(items, log=lambda _m: None):
            result = graded(self.store, record, report)
            self._append(result)
            results.append(result)
        if self.conf.judge is not None and results:  # judged as they are graded: the batch just recorded
            from runner.judging import judge_records
            judge_records(self.store, self.conf.judge, self.tasks, results, log=lambda m: print(m, flush=True))

    def _judge_rest(self) -> None:
        """A resumed run with a judge: the rollouts graded before it, or before an interruption, too."""
        if self.conf.judge is not None:
            from runner.judging import judge_records
            judge_records(self.store, self.conf.judge, self.tasks, self.store.results(),
                          log=lambda m: print(m, flush=True))

    def _stream_grading(self) -> None:
        """Grades as rollouts finish: whatever has finished meanwhile goes as one batch."""
        while (record := self.grade_queue.get()) is not None:
            batch, last = [record], False
            while not self.grade_queue.empty():
                more = self.grade_queue.get()
                if more is None:
                    last = True
                    break
                batch.append(more)
            if self.stopping != ExitReason.INTERRUPTED:
                self._grade(batch)
            if last:
                break

    def _record_all(self, planned: list[Planned]) -> None:
        """Every finished rollout not yet in results.jsonl gets graded (unless grade=none) and recorded."""
        records = [r for item in planned if (r := self.store.rollout(item.task.id, item.index)) is not None
                   and r.key not in self.recorded]
        if self.conf.grade == "none":
            for record in records:
                self._append(graded(self.store, record, None))
        else:
            self._grade(records)

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

"""The bubblewrap provider's record of its sandboxes (harness/sandbox/bwrap/registry.py) under concurrency.

Every run on a machine sweeps the sandboxes of dead processes when it starts, while other runs start theirs.
A sandbox's record is rewritten while it starts (its init's pid, its pid namespace, its uplink); a sweep that
read it truncated took it for a start that died half-way, removed the directory of a live sandbox and left
its processes running (seen: a `sleep infinity` under bwrap outlived make test, its directory gone).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import uuid

from harness.sandbox.bwrap import registry


def test_a_sweep_beside_a_starting_sandbox_never_takes_it_for_a_dead_one() -> None:
    registry.make_state()
    directory = registry.STATE / f"sbx-{uuid.uuid4().hex}"
    directory.mkdir()
    (directory / registry.META).write_text(json.dumps({"owner": registry.owner_id(), "labels": {}}))
    stop, removed = threading.Event(), []

    def sweep() -> None:
        while not stop.is_set():
            # (as every run's start does: all of the machine's orphans, ours and any other process's)
            removed.append(registry.remove_sandboxes("orphans"))

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        for step in range(2000):  # what a start notes, again and again (this process is alive: not an orphan)
            registry.note(directory, init=0, pidns=0, uplink=step)
    finally:
        stop.set()
        sweeper.join()
        survived, temporary = directory.is_dir(), list(directory.glob(f".{registry.META}.*"))
        shutil.rmtree(directory, ignore_errors=True)
    assert survived and len(removed) > 10, (survived, len(removed))
    assert not temporary  # (each new record renamed over the old)


def test_a_sandbox_being_removed_reads_as_ended_by_a_cleanup_throughout() -> None:
    """A cleanup deletes a sandbox's directory while the run using it asks whose doing its end was (its command
    just failed): the answer is the cleanup's at every moment, never "its own processes" (seen in make test:
    the ENDED marker deleted first, the rest of a large directory still there)."""
    registry.make_state()
    directory = registry.STATE / f"sbx-{uuid.uuid4().hex}"
    directory.mkdir()
    for i in range(3000):  # (a sandbox's layers: deleting them takes a while, the marker among them)
        (directory / f"file{i}").write_text("x")
    (directory / registry.ENDED).touch()  # (made by every cleanup before it kills)
    stop, answers = threading.Event(), []

    def ask() -> None:
        while not stop.is_set():
            answers.append(registry.killed_from_inside(directory, None, None))

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        registry.remove_tree(directory)
    finally:
        stop.set()
        asker.join()
    assert not directory.exists() and not list(registry.STATE.glob(f"{registry.GONE}{directory.name}.*"))
    assert len(answers) > 10 and not [a for a in answers if a is not None], answers[-1:]


def test_a_removal_its_process_did_not_finish_is_finished_by_the_next_sweep() -> None:
    registry.make_state()
    gone = subprocess.Popen(["true"])
    gone.wait()  # (a process that has exited: killed mid-way through a removal, say)
    unfinished = registry.STATE / f"{registry.GONE}sbx-{uuid.uuid4().hex}.{gone.pid}"
    ongoing = registry.STATE / f"{registry.GONE}sbx-{uuid.uuid4().hex}.{os.getpid()}"  # (ours: still going)
    for folder in (unfinished, ongoing):
        (folder / "upper").mkdir(parents=True)
        (folder / "upper" / "file").write_text("x")
    try:
        registry.remove_sandboxes("mine", labels={"optrunner.test": "none of ours"})
        assert not unfinished.exists() and ongoing.is_dir()
    finally:
        shutil.rmtree(ongoing, ignore_errors=True)
        shutil.rmtree(unfinished, ignore_errors=True)

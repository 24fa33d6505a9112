"""`sandbox.provider=bwrap sandbox.rootfs=host`: whole runs with no Docker engine reachable.

The tasks' layers are built over the host's own system (its python3, gcc and numpy: `.ci/run` installs
Debian's python3-numpy, as the task images have): a folder task, Harbor directories (their Dockerfiles
applied over the host) and GSO rows (their repositories at the base commit). The rollouts and the
grading run in bubblewrap sandboxes, and nothing is left behind.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.sandbox.bwrap import outside, registry, rootfs
from harness.sandbox.bwrap.rootfs import ROOTFS, empty_layer, host_rootfs
from harness.sandbox.bwrap.sandbox import BwrapSandbox
from harness.sandbox.providers import provider
from harness.tasks import select_tasks
from tests.conftest import write_task
from tests.docker_support import bwrap_here
from tests.gso_rows import make_gso
from tests.test_runner import FAST, SLOW, runner

HARBOR = Path(__file__).parent / "fixtures" / "harbor"
ROOT = Path(__file__).resolve().parent.parent
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # any call to an engine fails



pytestmark = pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")


def _ours(pid: int) -> list[Path]:
    """The sandbox directories the run with this process id left."""
    host = registry.owner_id().rpartition(":")[0]
    return [d for d in registry.STATE.glob("sbx-*") if registry.read_meta(d).get("owner") == f"{host}:{pid}"]


def _layers_of(task_ids: set[str]) -> set[Path]:
    """The layers over the host built for these tasks (under construction too: a hidden one is a build)."""
    found = set(ROOTFS.glob(".host-*")) if ROOTFS.is_dir() else set()
    for meta in ROOTFS.glob("host-*/meta.json"):
        if json.loads(meta.read_text()).get("labels", {}).get("optrunner.task") in task_ids:
            found.add(meta.parent)
    return found


def test_a_tasks_layer_is_above_the_hosts_files(tmp_path: Path) -> None:
    layer = empty_layer(tmp_path / "layer")
    (layer / "etc" / "passwd").write_text("from-the-layer\n")
    box = BwrapSandbox.start(host_rootfs("t", (layer,), {}))
    try:
        assert box.exec("head -1 /etc/passwd").output.strip() == "from-the-layer"
    finally:
        box.close()


def test_the_hosts_etc_and_opt_are_out_of_reach(tmp_path: Path) -> None:
    """Run as root, a sandbox over the host's system is root over what it shows: so it shows an /etc made
    from an allow-list (the host's root-only files never among it, even under an allowed name) and no /opt;
    the loader, certificates and the system's accounts still work."""
    planted = [Path("/etc/optrunner-secret"), Path("/etc/ssl/private/optrunner-key.pem"), Path("/opt/optrunner-secret")]
    hidden = Path("/etc/ssl/optrunner-root-only.pem")  # an allowed folder, a file others may not read
    made = [p.parent for p in (*planted, hidden) if not p.parent.exists()]
    for path in (*planted, hidden):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("secret\n")
        path.chmod(0o600)
    box = BwrapSandbox.start(host_rootfs("t", (empty_layer(tmp_path / "layer"),), {}))
    try:
        seen = box.exec(" ; ".join(f"test -e {p} && echo seen {p}" for p in (*planted, hidden)) + "; ls -A /opt; "
                        "getent passwd root nobody | cut -d: -f1; python3 -c 'import ssl; print(\"ssl-ok\")'; "
                        "test -e /etc/shadow || echo no-shadow", timeout=60)
    finally:
        box.close()
        for path in (*planted, hidden):
            path.unlink()
        for folder in reversed(made):
            folder.rmdir()
    assert "seen" not in seen.output, seen.output
    assert seen.output.split() == ["root", "nobody", "ssl-ok", "no-shadow"], seen.output


@pytest.mark.timed
def test_a_run_over_the_hosts_system_needs_no_docker(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", "hosttiny", slow_src=SLOW, fast_src=FAST)  # (sleeps: verdicts a busy machine keeps)
    common = [f"tasks.selector={tmp_path / 'tasks'}", "scaffold=mini_swe", "rollouts=1", "sandbox=bwrap",
              "sandbox.rootfs=host", "grading.rounds=2"]
    for model, expected in (("oracle", 1.0), ("noop", 0.0)):
        done = runner(*common, f"model={model}", f"name={model}", out=tmp_path / "out", env=NO_DOCKER, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads((tmp_path / "out" / "runs" / model / "report.json").read_text())
        assert report["summary"]["opt_at_k"]["1"] == expected, report["summary"]
        assert report["provenance"]["sandbox_provider"] == "bwrap"
        assert _ours(done.pid) == []  # type: ignore[attr-defined]


@pytest.mark.long("a run, then three grading commands over the host's system, each timing: ~55 s")
@pytest.mark.docker  # (the run to grade is made with Docker; everything after runs with no engine reachable)
def test_grading_commands_take_rootfs_host(tmp_path: Path) -> None:
    """`--provider bwrap --rootfs host` on every grading command, so a machine without Docker can grade a
    run made elsewhere, predictions files and a task's validation."""
    tasks = tmp_path / "tasks"
    write_task(tasks, "alpha", slow_src=SLOW, fast_src=FAST)  # (test_runner's task: its image is cached)
    made = runner(f"tasks.selector={tasks}", "model=oracle", "scaffold=mini_swe", "grade=none", "name=r",
                  out=tmp_path / "out", timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    run = tmp_path / "out" / "runs" / "r"
    host = ["--provider", "bwrap", "--rootfs", "host", "--rounds", "2"]
    cli = [sys.executable, "-m", "runner.cli"]

    def command(*args: str | Path) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*cli, *map(str, args), *host], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, **NO_DOCKER}, timeout=600)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        return done

    command("grade", run)
    (record,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert record["grading"]["status"] == "passed" and record["grading"]["opt_base"], record["grading"]
    report = json.loads((run / "report.json").read_text())
    assert report["provenance"]["sandbox_provider"] == "bwrap"
    assert [name.split("/")[0] for name in report["provenance"]["images"]["alpha"]] == ["host"], report["provenance"]
    done = command("grade", "--predictions", run / "predictions" / "rollout_0.jsonl", "--tasks", tasks,
                   "--out", tmp_path / "graded")
    summary = json.loads((tmp_path / "graded" / "summary.json").read_text())
    assert summary["statuses"] == {"passed": 1} and "Opt@1" in done.stdout, summary
    # (validate's verdict, gold against expert at p = 0.95, is the timed tests'; here: it graded over the host)
    done = subprocess.run([*cli, "validate", "--tasks", str(tasks), "--out", str(tmp_path / "valid"), *host], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **NO_DOCKER}, timeout=600)
    assert done.returncode in (0, 1) and "tasks valid" in done.stdout, done.stderr[-2000:]
    gold = [json.loads(p.read_text()) for p in (tmp_path / "valid").rglob("*.json") if "gold" in p.name]
    assert gold and {g["status"] for g in gold} == {"passed"}, [g.get("reason") for g in gold]


@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_harbor_tasks_build_over_the_hosts_system(tmp_path: Path) -> None:
    """A C task (RUN make) and a reward.json task, their Dockerfiles applied over the host's own system."""
    tasks = tmp_path / "tasks"
    for name in ("ctiming", "wordstats"):
        shutil.copytree(HARBOR / name, tasks / name)
    done = runner("tasks=harbor", f"tasks.path={tasks}", "model=oracle", "scaffold=mini_swe", "rollouts=1",
                  "sandbox=bwrap", "sandbox.rootfs=host", "grading.rounds=2", "name=h", out=tmp_path / "out",
                  env=NO_DOCKER, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "out" / "runs" / "h"
    graded = {p.parent.name: json.loads(p.read_text()) for p in (run / "grading").glob("*/0.json")}
    assert {t: g["status"] for t, g in graded.items()} == {"ctiming": "passed", "wordstats": "passed"}
    assert graded["wordstats"]["reward"] == 1.0
    adapted = json.loads((run / "report.json").read_text())["provenance"]["adapted"]
    assert adapted["ctiming"] == ["FROM debian:bookworm-slim -> this host's system (sandbox.rootfs=host)"]
    assert _ours(done.pid) == []  # type: ignore[attr-defined]


def test_a_recipe_the_host_cannot_build_is_refused_and_only_its_task_skipped(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(HARBOR / "wordstats", tasks / "wordstats")
    shutil.copytree(HARBOR / "sortcount", tasks / "sortcount")
    dockerfile = tasks / "wordstats" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN apt-get update && apt-get install -y optrunner-no-such-pkg\n")
    before = _layers_of({"wordstats"})
    args = ("tasks=harbor", f"tasks.path={tasks}", "model=noop", "rollouts=1", "sandbox=bwrap", "sandbox.rootfs=host",
            "grade=none")
    done = runner(*args, "name=both", out=tmp_path / "out", env=NO_DOCKER, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "installs system packages this host lacks (optrunner-no-such-pkg)" in done.stdout, done.stdout[-1000:]
    assert "[wordstats] skipped: " in done.stdout
    run = tmp_path / "out" / "runs" / "both"
    assert [json.loads(line)["instance_id"] for line in (run / "results.jsonl").read_text().splitlines()] == \
        ["sortcount"]
    assert list(json.loads((run / "report.json").read_text())["skipped_tasks"]) == ["wordstats"]
    assert _layers_of({"wordstats"}) == before  # refused before any of its layers was built
    # Alone, it leaves the run nothing to do: one line, nothing built.
    alone = runner(*args, "tasks.ids=[wordstats]", out=tmp_path / "out", env=NO_DOCKER, timeout=120)
    assert alone.returncode != 0 and "Traceback" not in alone.stderr
    assert "installs system packages this host lacks (optrunner-no-such-pkg)" in alone.stderr, alone.stderr[-1000:]


@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_gso_rows_build_over_the_host_and_the_agent_sees_no_expert(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rows, mirror, raw = make_gso(tmp_path / "gso")
    done = runner("tasks=gso", f"tasks.dataset={rows}", f"tasks.repo_mirror={mirror}", "model=oracle",
                  "scaffold=mini_swe", "rollouts=1", "sandbox=bwrap", "sandbox.rootfs=host", "grading.rounds=2",
                  "name=g", out=tmp_path / "out", env=NO_DOCKER, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "out" / "runs" / "g"
    assert json.loads((run / "report.json").read_text())["summary"]["opt_at_k"]["1"] == 1.0
    assert {json.loads(p.read_text())["status"] for p in (run / "grading").glob("*/0.json")} == {"passed"}
    tasks = select_tasks(str(rows), "gso", repo_mirror=str(mirror))
    images = provider("bwrap").ensure_images(tasks, progress=lambda _m: None, rootfs_from="host")  # (cached)
    for task, row in zip(tasks, raw):
        with provider("bwrap").start(images[task.id].grading) as box:  # all history, for grading
            assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code == 0
        for name in (images[task.id].agent, images[task.id].base):  # the layers stacked on it
            with provider("bwrap").start(name) as box:
                assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code != 0
                assert box.exec("git rev-parse HEAD").output.strip() == row["base_commit"]
                assert box.exec("git rev-list --all | wc -l").output.strip() == "1"
    # Another machine's cache (a Ray node): the agent's layer travels with the layers below it, and its
    # cut still hides the history (the overlay's opaque directories travel too).
    task, row = tasks[0], raw[0]
    packed = list(provider("bwrap").export_image(images[task.id].agent))
    monkeypatch.setattr(rootfs, "ROOTFS", tmp_path / "elsewhere")
    assert not provider("bwrap").has_image(images[task.id].agent)
    provider("bwrap").import_image(packed)
    assert len(list((tmp_path / "elsewhere").glob("host-*"))) == 3  # agent, cut, grading
    with provider("bwrap").start(images[task.id].agent) as box:
        assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code != 0
        assert box.exec("git rev-parse HEAD").output.strip() == row["base_commit"]


def test_the_made_etc_keeps_the_allowed_and_public_and_follows_the_host_after_recheck(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU, no sandbox: the made /etc of a host /etc written here. Allowed and readable by all: copied;
    kept from others, or not allowed: not; people's accounts out. A process reuses the folder it made until
    RECHECK has passed, then a changed host /etc gives a new one."""
    from harness.sandbox.bwrap import hostetc

    source, cache = tmp_path / "etc", tmp_path / "cache"
    (source / "ssl" / "private").mkdir(parents=True)
    (source / "ssl" / "cert.pem").write_text("public\n")
    (source / "ssl" / "private" / "key.pem").write_text("private\n")
    (source / "os-release").write_text("ID=test\n")
    (source / "shells").write_text("/bin/sh\n")
    (source / "shells").chmod(0o600)  # allowed by name, but kept from others
    (source / "environment").write_text("API_KEY=secret\n")
    (source / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000:Ann:/home/ann:/bin/sh\n")
    first = hostetc.made(cache, source)
    assert (first / "ssl" / "cert.pem").read_text() == "public\n" and (first / "os-release").is_file()
    for absent in ("ssl/private", "shells", "environment"):
        assert not (first / absent).exists(), absent
    assert "ann" not in (first / "passwd").read_text() and "root:x:0:0" in (first / "passwd").read_text()
    (source / "os-release").write_text("ID=changed\n")
    assert hostetc.made(cache, source) == first  # within RECHECK: the folder made
    monkeypatch.setattr(hostetc, "RECHECK", 0.0)
    again = hostetc.made(cache, source)
    assert again != first and (again / "os-release").read_text() == "ID=changed\n"
    assert (first / "os-release").read_text() == "ID=test\n"  # sandboxes on the old one keep it


MOUNTED_UNDER_USR = """
import subprocess, sys
from pathlib import Path
from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
from harness.sandbox.bwrap.sandbox import BwrapSandbox
tmp = Path(sys.argv[1])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", "/usr/local/games"], check=True)
Path("/usr/local/games/driver.txt").write_text("a folder mounted under /usr\\n")
(tmp / "release").write_text("a file mounted under /usr\\n")
subprocess.run(["mount", "--bind", str(tmp / "release"), "/usr/lib/os-release"], check=True)
box = BwrapSandbox.start(host_rootfs("t", (empty_layer(tmp / "layer"),), {}))
try:
    print(box.exec("cat /usr/local/games/driver.txt /usr/lib/os-release").output, end="")
finally:
    box.close()
"""


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/local/games").is_dir() or not shutil.which("unshare"),
                    reason="needs root, /usr/local/games and unshare (a mount namespace of the test's own)")
def test_the_hosts_mounts_under_usr_are_seen_and_do_not_stop_the_overlay(tmp_path: Path) -> None:
    # The GPU host mounts its driver's folder under /usr: overlayfs refused a lower layer with mounts under it
    # once the sandbox's user namespace locked them ("failed to clone lowerpath"), so no sandbox started.
    # Here a folder and a file are mounted under /usr in a mount namespace of the test's own.
    done = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c", MOUNTED_UNDER_USR,
                           str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "a folder mounted under /usr\na file mounted under /usr\n"


def test_the_gpu_checks_python_part_stopped_by_sigterm_removes_its_sandbox(tmp_path: Path) -> None:
    # gpu_check.sh runs under its command's limit (`timeout`, SIGTERM to every process of the check): its
    # grading parts unwind as the runner does (sandboxes removed, the GPU's clock lock restored on the way
    # out) and say so in one line.
    write_task(tmp_path / "tasks", install_commands=["sleep 120"])
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "gpu_check.py"), "gold", "--provider", "bwrap",
                             "--rounds", "1", "--regrades", "1", "--selector", str(tmp_path / "tasks")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **NO_DOCKER})
    try:
        deadline = time.monotonic() + 60
        while not any(pid_running_sleep(d) for d in _ours(proc.pid)):  # (its layer's build is under way)
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "gpu_check.py: stopped by SIGTERM" and "Traceback" not in err, err
    assert not _ours(proc.pid)


def pid_running_sleep(sandbox: Path) -> bool:
    """Whether the sandbox of this directory runs the install command's `sleep`."""
    init = registry.read_meta(sandbox).get("init")
    pidns = registry.pidns_of(init) if init else None
    return bool(pidns) and any(outside.command_line(pid) == "sleep 120" for pid in outside.pids_in(pidns))


def test_the_mounts_under_the_system_folders_are_read_from_mountinfo(tmp_path: Path) -> None:
    # (a GPU host's lines: its driver folder with a mount inside it, a file bound alone, an escaped space)
    (tmp_path / "mountinfo").write_text(
        "21 1 253:1 / / rw,relatime - ext4 /dev/vda rw\n"
        "40 21 0:51 / /usr/local/nvidia ro,relatime - tmpfs tmpfs ro\n"
        "41 40 0:52 / /usr/local/nvidia/lib64 ro,relatime - tmpfs tmpfs ro\n"
        "42 21 253:1 /srv/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 ro - ext4 /dev/vda rw\n"
        "43 21 0:53 / /usr/share/a\\040b ro - tmpfs tmpfs ro\n"
        "44 21 0:54 / /usr2/x ro - tmpfs tmpfs ro\n"
        "46 21 0:55 / /usr/src/closed ro shared:7 unbindable - tmpfs tmpfs ro\n"
        "45 21 0:5 / /proc rw - proc proc rw\n")
    assert rootfs.mounts_under(["/usr", "/lib"], str(tmp_path / "mountinfo")) == [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/nvidia", "/usr/share/a b"]
    assert rootfs.mounts_under(["/usr"], str(tmp_path / "missing")) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="root's sandboxes only: their root must pass through the state folder")
def test_the_gpu_checks_probe_says_in_one_line_when_no_sandbox_can_start(tmp_path: Path) -> None:
    # (bwrap itself may run where no sandbox over the host starts: the GPU host refused every overlay over /usr)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py"), "sandbox"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPTRUNNER_BWRAP_STATE": str(closed / "state")})
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"probe: no sandbox over this host can start (bwrap: {closed} is closed to other users"), done.stderr

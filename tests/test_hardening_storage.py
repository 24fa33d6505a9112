"""Disk (issue 33): each Docker sandbox's writable layer is limited to `sandbox.disk` where the engine's
storage driver can do that, and is recorded as unlimited (with the reason) where it cannot; and a run's
pre-flight refuses in one line when the disk lacks the room it needs.

The storage drivers are real: a second Docker engine of the test's own, on a btrfs (limits sizes) or an
xfs without project quotas (overlay2 there cannot, which only the engine's refusal says) file system in a
loop-mounted file, with a tiny image made from the host's own programs. They need root, dockerd,
mkfs.btrfs / mkfs.xfs (btrfs-progs, xfsprogs) and loop devices; elsewhere they are skipped. The free-space
checks use real file systems too (a small tmpfs)."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from harness.sandbox import diskcheck
from harness.sandbox.diskcheck import NotEnoughDisk
from harness.sandbox.docker import containers
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxLimits, SandboxUnavailable
from harness.sandbox.providers import provider
from tests.docker_support import client

pytestmark = pytest.mark.docker
PROGRAMS = ("bash", "sleep", "timeout", "dd", "cat", "rm")


def _missing(*tools: str) -> str | None:
    if os.geteuid() != 0:
        return "needs root (a loop mount and an engine of its own)"
    absent = [t for t in ("dockerd", "mount", "umount", "ip", *tools) if shutil.which(t) is None]
    return f"needs {', '.join(absent)}" if absent else None


def _tiny_image() -> bytes:
    """A tar of the host's PROGRAMS and the libraries they load: enough for a sandbox's exec."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        added: set[str] = set()

        def add(path: str) -> None:
            if path not in added:
                added.add(path)
                tar.add(os.path.realpath(path), arcname=path.lstrip("/"))

        for name in PROGRAMS:
            program = shutil.which(name)
            assert program is not None
            add(program)
            libs = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
            for word in libs.split():
                if word.startswith("/"):
                    add(word)
        for folder in ("tmp", "testbed", "bin"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777
            tar.addfile(info)
    return buf.getvalue()


class Engine:
    """A Docker engine of the test's own, its data root on a fresh file system in a loop-mounted file."""

    def __init__(self, home: Path, fs: str, driver: str) -> None:
        self.home, self.mnt = home, home / "mnt"
        self.mnt.mkdir(parents=True)
        # sockets in a short folder (a unix socket's path has at most 107 bytes)
        self.run_dir = Path(tempfile.mkdtemp(prefix="ohe-", dir="/tmp"))
        self.sock = self.run_dir / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.client: docker.DockerClient | None = None
        self.mounted = False
        # A bridge of its own: `--bridge none` would make dockerd delete the host's docker0 (the machine's
        # engine then starts no networked container), and sharing docker0 would share its addresses.
        self.bridge = f"ohe{os.getpid() % 100000}"
        try:
            self._start(fs, driver)
        except BaseException:
            self.close()
            raise

    def _start(self, fs: str, driver: str) -> None:
        image = self.home / "fs.img"
        with open(image, "wb") as fh:
            fh.truncate(1 << 30)
        subprocess.run([f"mkfs.{fs}", "-q", str(image)], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(self.mnt)], check=True, capture_output=True)
        self.mounted = True
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True, capture_output=True)
        subprocess.run(["ip", "addr", "add", "192.0.2.1/24", "dev", self.bridge], check=True)  # TEST-NET-1
        log = self.home / "dockerd.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                ["dockerd", "--data-root", str(self.mnt / "docker"), "--exec-root", str(self.run_dir / "exec"),
                 "--pidfile", str(self.run_dir / "dockerd.pid"), "-H", f"unix://{self.sock}", "--bridge", self.bridge,
                 "--iptables=false", "--ip-masq=false", "--storage-driver", driver], stdout=out, stderr=out)
        deadline = time.monotonic() + 60
        while self.client is None:
            try:
                self.client = docker.DockerClient(base_url=f"unix://{self.sock}", timeout=60)
            except docker.errors.DockerException:  # not up yet
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    pytest.fail(f"the test's own dockerd did not start: {log.read_text()[-500:]}")
                time.sleep(0.3)
        self.client.api.import_image_from_data(_tiny_image(), repository="optrunner-hardening-tiny", tag="1")
        self.image = "optrunner-hardening-tiny:1"

    def close(self) -> None:
        if self.client is not None:
            try:
                for container in self.client.containers.list(all=True):
                    container.remove(force=True)
            except docker.errors.DockerException:
                pass  # the engine is gone already
            self.client.close()
        if self.proc is not None:
            self._stop(self.proc)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)  # (absent: nothing to do)
        if self.mounted:  # with what the engine mounted under it, should it not have unmounted that itself
            if subprocess.run(["umount", "-R", str(self.mnt)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-R", "-l", str(self.mnt)], capture_output=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    @staticmethod
    def _stop(proc: "subprocess.Popen[bytes]") -> None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    fs, driver = request.param
    why = _missing(f"mkfs.{fs}")
    if why:
        pytest.skip(f"a {driver} engine on {fs} {why}")
    docker0 = Path("/sys/class/net/docker0").exists()  # the machine's engine's bridge
    found = Engine(tmp_path / "engine", fs, driver)
    try:
        yield found
    finally:
        found.close()
    assert Path("/sys/class/net/docker0").exists() == docker0, "the test's engine touched the machine's docker0"


@pytest.mark.parametrize("engine", [("btrfs", "btrfs")], indirect=True)
def test_a_btrfs_engine_limits_each_sandbox_to_sandbox_disk(engine: Engine) -> None:
    storage = containers.engine_storage(engine.client)
    assert (storage.driver, storage.size_limits) == ("btrfs", True)
    box = DockerSandbox.start(engine.image, SandboxLimits(disk="64m"), client=engine.client)
    try:
        box.container.reload()
        assert box.container.labels[containers.DISK_LABEL] == "64m"
        assert box.container.attrs["HostConfig"]["StorageOpt"] == {"size": str(64 * 2**20)}
        done = box.exec("dd if=/dev/zero of=/tmp/big bs=1M count=100", timeout=60)
        assert done.exit_code != 0 and "quota" in done.output.lower(), done.output  # stopped at the limit
        small = box.exec("rm -f /tmp/big; dd if=/dev/zero of=/tmp/small bs=1M count=8", timeout=60)
        assert small.exit_code == 0, small.output
    finally:
        box.close()
    assert engine.client.containers.list(all=True) == []


@pytest.mark.parametrize("engine", [("xfs", "overlay2")], indirect=True)
def test_overlay_on_xfs_without_project_quotas_is_tried_once_then_recorded_unlimited(engine: Engine) -> None:
    storage = containers.engine_storage(engine.client)
    assert (storage.driver, storage.backing, storage.size_limits) == ("overlay2", "xfs", None)  # not known yet
    boxes = [DockerSandbox.start(engine.image, SandboxLimits(disk="64m"), client=engine.client) for _ in range(2)]
    try:
        assert storage.size_limits is False and "pquota" in storage.note  # the engine's own refusal
        for box in boxes:
            box.container.reload()
            assert box.container.labels[containers.DISK_LABEL] == f"none ({storage.note})"
            assert not box.container.attrs["HostConfig"].get("StorageOpt")
            assert box.exec("echo runs", timeout=30).output.strip() == "runs"
    finally:
        for box in boxes:
            box.close()
    assert engine.client.containers.list(all=True) == []


# ---------------------------------------------------------------- the pre-flight
@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs: a real file system with little room."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs")
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_the_preflight_passes_where_there_is_room(tmp_path: Path) -> None:
    provider("docker").ensure_ready(disk="1g", output_dir=tmp_path / "runs" / "new")
    provider("docker").ensure_ready()  # without `disk` (cleanup): no disk check at all


@pytest.mark.parametrize("name", ["docker", "bwrap"])
def test_a_sandbox_disk_larger_than_the_free_space_is_refused_in_one_line(name: str, tmp_path: Path) -> None:
    sandboxes = provider(name)
    try:
        sandboxes.ensure_ready()
    except SandboxUnavailable as err:
        pytest.skip(f"{name}: {err}")
    with pytest.raises(NotEnoughDisk) as caught:
        sandboxes.ensure_ready(disk="100000g", output_dir=tmp_path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("not enough free disk: ")
    assert "sandbox.disk=100000g" in text
    assert ("Docker's data root" if name == "docker" else "bwrap") in text
    if name == "docker":
        assert containers.engine_storage(client()).root_dir in text


def test_an_output_directory_on_a_full_file_system_is_refused(small_fs: Path) -> None:
    with pytest.raises(NotEnoughDisk) as caught:
        provider("docker").ensure_ready(disk="1g", output_dir=small_fs / "runs" / "r1")
    text = str(caught.value)
    assert "\n" not in text and "the output directory" in text and str(small_fs) in text
    assert isinstance(caught.value, SandboxUnavailable)  # callers' one-line refusal already handles it


def test_needs_on_one_file_system_add_up(small_fs: Path) -> None:
    free = diskcheck.space(small_fs).free
    a = diskcheck.Need("a", small_fs / "a", int(free * 0.6))
    b = diskcheck.Need("b", small_fs / "b", int(free * 0.6))
    assert diskcheck.shortage([a]) is None and diskcheck.shortage([b]) is None
    problem = diskcheck.shortage([a, b])
    assert problem is not None and "a " in problem and "b " in problem
    (small_fs / "filler").write_bytes(b"\0" * int(free * 0.7))  # a real write takes the room away
    assert diskcheck.shortage([a]) is not None


def test_a_bad_disk_setting_is_one_line() -> None:
    assert SandboxLimits(disk="lots").problems() == ["disk must be a size such as 10g or 500m (0: none), got 'lots'"]
    assert SandboxLimits().problems() == [] and SandboxLimits().disk == "10g"
    assert SandboxLimits(disk="0").problems() == []  # no size limit, no free-disk check


def test_disk_0_turns_the_free_disk_check_off(tmp_path: Path) -> None:
    huge = [("a place", tmp_path)]
    with pytest.raises(diskcheck.NotEnoughDisk):
        diskcheck.check_free("1000000g", huge, tmp_path)
    diskcheck.check_free("0", huge, tmp_path)  # (refuses nothing)

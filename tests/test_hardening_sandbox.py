"""Sandboxes take from root what it does not need (issue 33), on both providers: inside a started sandbox,
/proc/self/status shows the kept capabilities only (those the grader's fence uses as root) and
NoNewPrivs 1, and `ulimit -n` is the limit. What the fence does as root still works there; what the
dropped capabilities allowed does not, and a setuid program gains nothing."""
from __future__ import annotations

import re
import resource
from collections.abc import Iterator

import pytest

from harness.sandbox.bwrap import hardening
from harness.sandbox.docker import containers
from harness.sandbox.interface import Sandbox, SandboxLimits
from harness.sandbox.providers import provider
from tests.docker_support import client, providers_here, smoke_task, task_image

pytestmark = pytest.mark.docker  # the images come from Docker for both providers
# capability numbers (linux/capability.h)
NUMBERS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
           "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_RAW": 13, "SYS_CHROOT": 18, "SYS_ADMIN": 21,
           "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31}


def mask(caps: tuple[str, ...]) -> int:
    return sum(1 << NUMBERS[c.removeprefix("CAP_")] for c in caps)


def expected_nofile(name: str) -> int:
    if name == "docker":
        return containers.NOFILE
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # bwrap: at most the host process's own
    return hardening.NOFILE if hard == resource.RLIM_INFINITY else min(hardening.NOFILE, hard)


@pytest.fixture(params=providers_here())
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    name = str(request.param)
    image = task_image(smoke_task())
    if name == "bwrap":
        from harness.sandbox.bwrap import rootfs
        rootfs.export(provider("docker"), image)
    sandbox = provider(name).start(image, SandboxLimits(memory="512m", pids=128))
    sandbox.provider_name = name  # type: ignore[attr-defined]
    try:
        yield sandbox
    finally:
        sandbox.close()


def status(box: Sandbox, pid: str = "self", prefix: str = "") -> dict[str, str]:
    done = box.exec(f"{prefix}cat /proc/{pid}/status", timeout=30)
    assert done.exit_code == 0, done.output
    return dict(re.findall(r"^(\w+):\s*(.*)$", done.output, re.MULTILINE))


def test_both_providers_keep_the_same_capabilities() -> None:
    assert mask(containers.KEPT_CAPS) == mask(hardening.CAPS)
    assert containers.NOFILE == hardening.NOFILE


def test_a_sandbox_keeps_only_the_fence_capabilities_with_no_new_privileges_and_a_nofile_limit(box: Sandbox) -> None:
    name = box.provider_name  # type: ignore[attr-defined]
    fields = status(box)
    kept = mask(containers.KEPT_CAPS)
    for key in ("CapEff", "CapPrm", "CapBnd"):
        assert int(fields[key], 16) == kept, f"{name} {key}={fields[key]}, expected {kept:016x}"
    assert int(fields["CapInh"], 16) == 0 and int(fields["CapAmb"], 16) == 0
    assert fields["NoNewPrivs"] == "1"
    limits = box.exec("ulimit -n; ulimit -Hn", timeout=30)
    assert limits.output.split() == [str(expected_nofile(name))] * 2
    # a process the fence drops to `nobody` has none at all, and the same limits
    fenced = status(box, prefix="setpriv --reuid=65534 --regid=65534 --clear-groups ")
    assert int(fenced["CapEff"], 16) == 0 and fenced["NoNewPrivs"] == "1"


def test_what_the_fence_does_as_root_still_works(box: Sandbox) -> None:
    """harness.grader.isolation as root: chown to nobody, drop to it, chmod and remove its files in a folder
    only it may write, stop its processes."""
    script = """set -e
d=/var/lib/fence-check; mkdir -p $d/home; chown -R 65534:65534 $d/home; chmod 700 $d/home
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo x > $0; chmod 600 $0' $d/home/f
chmod 644 $d/home/f                       # FOWNER: a file of another user
cat $d/home/f >/dev/null                  # DAC_OVERRIDE: in a 700 folder of another user
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 300 & pid=$!
sleep 0.3; kill -KILL $pid                # KILL: a process of another user
wait $pid || true
rm -rf $d                                 # DAC_OVERRIDE: entries of another user's folder
echo fence-ok"""
    done = box.exec(script, timeout=60)
    assert done.exit_code == 0 and "fence-ok" in done.output, done.output


def test_what_the_dropped_capabilities_allowed_fails_and_setuid_gains_nothing(box: Sandbox) -> None:
    mknod = box.exec("mknod /tmp/null-copy c 1 3", timeout=30)  # CAP_MKNOD
    assert mknod.exit_code != 0
    chroot = box.exec("chroot / true", timeout=30)  # CAP_SYS_CHROOT
    assert chroot.exit_code != 0
    mount = box.exec("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m", timeout=30)  # CAP_SYS_ADMIN
    assert mount.exit_code != 0
    # A setuid-root copy of `id`, run by nobody: with no_new_privs its effective uid stays nobody's.
    setuid = box.exec("cp /usr/bin/id /tmp/id-suid && chmod 4755 /tmp/id-suid && "
                      "setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/id-suid -u", timeout=30)
    assert setuid.exit_code == 0 and setuid.output.strip() == "65534", setuid.output


def test_a_docker_sandbox_records_its_disk_limit_or_why_it_has_none() -> None:
    """On this machine's engine: the label matches what the storage driver can do (overlay2 over extfs
    cannot limit a container's size; the engine test in test_hardening_storage covers one that can)."""
    storage = containers.engine_storage(client())
    assert storage.driver == client().info()["Driver"]
    box = provider("docker").start(task_image(smoke_task()), SandboxLimits(disk="3g"))
    try:
        container = box.container  # type: ignore[attr-defined]
        container.reload()
        label = container.labels[containers.DISK_LABEL]
        applied = (container.attrs["HostConfig"].get("StorageOpt") or {}).get("size")
        if storage.size_limits:
            assert label == "3g" and applied == str(3 * 2**30)
        else:
            assert label.startswith("none (") and storage.note in label and applied is None
    finally:
        box.close()

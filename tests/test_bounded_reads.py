"""Files read out of a sandbox are capped by their reader, the size taken from the engine or counted here
(issue 49, item 2): a sparse 1 GiB file, which costs the agent no disk, used to be read whole into the
runner (an installed agent's log took it from 27 to 2079 MiB). Each provider, as the conformance suite runs
them; then the callers that read what an agent or a patch controls."""
from __future__ import annotations

import resource
from types import SimpleNamespace

import pytest

from harness.grader.reward import REWARD_FILE_BYTES, REWARD_TXT, _rewards
from harness.sandbox.interface import FileTooLarge, Sandbox
from scaffolds.installed.agent import LOG_CAP, InstalledScaffold
from scaffolds.installed.specs import AGENT_HOME
from tests.test_sandbox_conformance import box, name  # noqa: F401  (fixtures)

pytestmark = pytest.mark.docker
MIB = 1 << 20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_sparse_gigabyte_is_read_up_to_the_cap_and_no_further(box: Sandbox) -> None:  # noqa: F811
    box.exec("truncate -s 1G /tmp/big.log && printf 'start' | dd of=/tmp/big.log conv=notrunc status=none",
             timeout=60)
    before = peak_mib()
    with pytest.raises(FileTooLarge) as raised:
        box.read_file("/tmp/big.log", MIB)
    assert raised.value.head[:5] == b"start" and len(raised.value.head) == MIB
    assert raised.value.size > MIB and raised.value.cap == MIB
    assert peak_mib() - before < 200  # (read whole, it would be 1024 MiB and more)
    box.exec("head -c 1048576 /dev/zero > /tmp/exact", timeout=30)
    assert len(box.read_file("/tmp/exact", MIB)) == MIB  # at the cap: read
    with pytest.raises(FileTooLarge):
        box.read_file("/tmp/big.log")  # the default cap holds too (64 MiB)


def test_an_installed_agents_sparse_log_is_kept_cut(box: Sandbox) -> None:  # noqa: F811
    scaffold = InstalledScaffold(agent="mini_swe_agent")
    (log,) = scaffold.spec.logs
    box.exec(f"mkdir -p {AGENT_HOME} && truncate -s 1G {log} && printf '{{\"steps\"' | dd of={log} conv=notrunc "
             "status=none", timeout=60)
    rec = SimpleNamespace(details={})
    before = peak_mib()
    scaffold._collect_logs(box, rec)  # type: ignore[arg-type]
    kept = rec.details["agent_logs"][log]
    assert kept.startswith('{"steps"') and f"cut at {LOG_CAP} bytes of" in kept and len(kept) < LOG_CAP + 200
    assert peak_mib() - before < 200


def test_a_reward_file_over_its_cap_is_no_reward(box: Sandbox) -> None:  # noqa: F811
    box.exec(f"mkdir -p /logs/verifier && (echo 1; head -c {REWARD_FILE_BYTES} /dev/zero) > {REWARD_TXT} && "
             "echo '{\"reward\": 1}' > /logs/verifier/reward.json", timeout=30)
    assert _rewards(box) == (None, '{"reward": 1}\n')


def test_a_checkpoint_export_stops_at_its_cap_instead_of_reading_every_change() -> None:
    """A Ray node's checkpoint archive (the container's changes) travels whole: a sparse gigabyte the agent
    left is refused at the cap (no checkpoint of it), never read into the runner."""
    from harness.sandbox.docker.portable import export_changes
    from harness.sandbox.interface import SandboxError, SandboxLimits
    from harness.sandbox.providers import provider
    from tests.docker_support import smoke_task, task_image

    sandbox = provider("docker").start(task_image(smoke_task()), SandboxLimits())
    try:
        sandbox.exec("echo kept > /tmp/small.txt", timeout=30)
        assert b"kept" in export_changes(sandbox.container, max_bytes=MIB)  # type: ignore[attr-defined]
        sandbox.exec("truncate -s 1G /tmp/big.bin", timeout=30)
        before = peak_mib()
        with pytest.raises(SandboxError, match=r"over 1048576 bytes .*no checkpoint"):
            export_changes(sandbox.container, max_bytes=MIB)  # type: ignore[attr-defined]
        assert peak_mib() - before < 200
    finally:
        sandbox.close()

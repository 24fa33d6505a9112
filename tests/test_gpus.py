"""GPUs without a GPU: whether a task's request fits a machine (hand-written machines), the pool that hands
rollouts GPUs of their own, and what task loading does on this machine, which has none."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import gpus
from harness.gpus import Gpu, GpuPool, misfit
from harness.gpus.twins import NoTwin, cpu_tests, make_trimmed
from harness.tasks import TaskError, select_tasks
from harness.tasks.folder import LISTING
from harness.tasks.harbor import HarborSource
from tests.conftest import write_task

H100 = [Gpu(0, "GPU-aaaa", "NVIDIA H100 80GB HBM3", 81559), Gpu(1, "GPU-bbbb", "NVIDIA H100 80GB HBM3", 81559)]
MIXED = [Gpu(0, "GPU-cccc", "NVIDIA A10", 23028), Gpu(1, "GPU-dddd", "NVIDIA H100 PCIe", 81559)]
HARBOR = Path(__file__).parent / "fixtures" / "harbor"
SUITE_GPU = Path(__file__).resolve().parents[1] / "harness" / "suite_gpu"
no_gpu_here = pytest.mark.skipif(bool(gpus.inventory()), reason="this machine has GPUs")


@pytest.mark.parametrize("count, types, machine, expected", [
    (0, [], [], None),
    (1, [], [], "it needs 1 GPU(s) and this machine has none"),
    (2, [], H100, None),
    (3, [], H100, "it needs 3 GPU(s) and this machine has 2: NVIDIA H100 80GB HBM3"),
    (1, ["h100"], MIXED, None),  # a type is part of the name, any case
    (2, ["H100"], MIXED, "it needs 2 GPU(s) of type H100 and this machine has 2: NVIDIA A10, NVIDIA H100 PCIe"),
    (2, ["A10", "H100"], MIXED, None),
])
def test_whether_a_request_fits_a_machine(count: int, types: list[str], machine: list[Gpu],
                                          expected: str | None) -> None:
    assert misfit(count, types, machine) == expected


def test_a_recorded_reading_round_trips() -> None:
    record = {"index": 3, "uuid": "GPU-5f1c", "name": "NVIDIA H200", "memory_mb": 143771}
    assert Gpu.from_record(record).record() == record


def test_the_pool_gives_each_lease_its_own_gpus_and_makes_the_rest_wait() -> None:
    pool = GpuPool(H100)
    held: list[int] = []
    most = 0
    lock = threading.Lock()

    def rollout() -> None:
        nonlocal most
        with pool.lease(1) as (gpu,):
            with lock:
                assert gpu.index not in held  # nobody else holds it
                held.append(gpu.index)
                most = max(most, len(held))
            time.sleep(0.1)
            with lock:
                held.remove(gpu.index)

    threads = [threading.Thread(target=rollout) for _ in range(5)]  # more rollouts than GPUs
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 2 and held == [] and pool.free == tuple(H100)


def test_the_pool_matches_types_and_refuses_what_it_never_has() -> None:
    pool = GpuPool(MIXED)
    assert pool.acquire(1, ["H100"]) == (MIXED[1],)
    with pytest.raises(TimeoutError):  # the one H100 is taken
        pool.acquire(1, ["H100"], timeout=0.05)
    pool.release([MIXED[1]])
    with pytest.raises(ValueError, match="needs 3 GPU"):
        pool.acquire(3)
    assert pool.acquire(0) == ()


def test_this_machines_inventory_is_read_without_failing() -> None:
    found = gpus.inventory()
    assert isinstance(found, tuple)
    if not Path("/dev/nvidiactl").exists():
        assert found == ()


@no_gpu_here
def test_folder_tasks_that_need_a_gpu_are_skipped_or_refused_when_named(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    write_task(tmp_path, "cpuonly")
    write_task(tmp_path, "needsgpu", gpus=1, gpu_types=["H100"])
    assert [t.id for t in select_tasks(str(tmp_path))] == ["cpuonly"]
    assert "needsgpu: skipped, it needs 1 GPU(s) of type H100 and this machine has none" in capsys.readouterr().err
    with pytest.raises(TaskError) as refused:
        select_tasks(str(tmp_path / "needsgpu"))
    assert "task needsgpu: it needs 1 GPU(s)" in str(refused.value) and "\n" not in str(refused.value)


def test_a_folder_tasks_gpu_fields_are_checked(tmp_path: Path) -> None:
    write_task(tmp_path, "badgpu", gpus=-1)
    with pytest.raises(TaskError, match="field 'gpus' should be 0 or more"):
        select_tasks(str(tmp_path / "badgpu"))
    (tmp_path / "badgpu").rename(tmp_path / "x")
    write_task(tmp_path, "badtypes", gpu_types="H100")
    with pytest.raises(TaskError, match="field 'gpu_types' should be a list"):
        select_tasks(str(tmp_path / "badtypes"))


@no_gpu_here
def test_a_harbor_task_named_alone_is_refused_not_skipped(tmp_path: Path) -> None:
    shutil.copytree(HARBOR / "wordstats", tmp_path / "wordstats")
    toml = tmp_path / "wordstats" / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", "cpus = 1\ngpus = 1\ngpu_types = [\"A100\"]"))
    with pytest.raises(TaskError) as refused:
        HarborSource(warn=lambda _m: None).select(str(tmp_path / "wordstats"))
    assert str(refused.value) == ("wordstats: it needs 1 GPU(s) of type A100 and this machine has none; run it on "
                                  "a machine with such GPUs")
    toml.write_text(toml.read_text().replace('gpu_types = ["A100"]', "gpu_types = \"A100\""))
    with pytest.raises(TaskError, match=r"\[environment\].gpu_types should be a list"):
        HarborSource(warn=lambda _m: None).select(str(tmp_path / "wordstats"))


def test_a_docker_sandbox_given_gpus_requests_those_by_uuid() -> None:
    from harness.sandbox.docker.sandbox import create_options
    from harness.sandbox.interface import SandboxLimits

    options = create_options(SandboxLimits(), {"x": "y"}, "/testbed", gpus=[H100[1]])
    (request,) = options["device_requests"]
    assert request["DeviceIDs"] == ["GPU-bbbb"] and request["Capabilities"] == [["gpu"]]
    assert "device_requests" not in create_options(SandboxLimits(), {}, "/testbed")


def test_a_sandbox_given_gpus_needs_their_nodes_only() -> None:
    nodes = gpus.device_nodes([H100[1]])
    assert nodes[0] == "/dev/nvidia1" and "/dev/nvidia0" not in nodes
    assert "/dev/nvidiactl" in nodes and "/dev/nvidia-uvm" in nodes
    assert gpus.device_nodes([]) == []


def test_a_bwrap_sandbox_cannot_change_the_hosts_gpu_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: the host's /dev/full stands in for a GPU's node (a character device host root owns,
    which no sandbox maps). It is bound with its device numbers, and a `chmod 000` of it inside is refused."""
    from harness.sandbox.bwrap import devices
    from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox
    from harness.sandbox.interface import SandboxUnavailable
    from harness.sandbox.providers import provider

    try:
        provider("bwrap").ensure_ready()
    except SandboxUnavailable as why:
        pytest.skip(str(why))
    monkeypatch.setattr(devices, "device_nodes", lambda given: ["/dev/full", "/dev/nvidia-not-here"])
    before = os.stat("/dev/full")
    box = BwrapSandbox.start(host_rootfs("t", (empty_layer(tmp_path / "layer"),), {}), gpus=[H100[0]])
    try:
        assert box.exec("test -e /dev/nvidia-not-here").exit_code != 0  # no node invented
        inside = box.exec("stat -c '%t:%T %a' /dev/full; chmod 000 /dev/full; echo chmod=$?; stat -c %a /dev/full")
        assert inside.output.split()[:1] == [f"{os.major(before.st_rdev):x}:{os.minor(before.st_rdev):x}"]
        assert "chmod=0" not in inside.output and inside.output.split()[-1] == f"{before.st_mode & 0o777:o}"
    finally:
        box.close()
    after = os.stat("/dev/full")
    assert (after.st_mode, after.st_uid, after.st_rdev) == (before.st_mode, before.st_uid, before.st_rdev)


def test_a_bwrap_sandbox_shows_cuda_its_own_gpus(tmp_path: Path) -> None:
    """Without a GPU here: the assignment reaches the sandbox (its environment), and no node is invented."""
    from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox
    from harness.sandbox.interface import SandboxUnavailable
    from harness.sandbox.providers import provider

    try:
        provider("bwrap").ensure_ready()
    except SandboxUnavailable as why:
        pytest.skip(str(why))
    gpu = Gpu(7, "GPU-7f00", "a GPU this machine does not have")
    box = BwrapSandbox.start(host_rootfs("t", (empty_layer(tmp_path / "layer"),), {}), gpus=[gpu])
    try:
        assert box.exec("echo $CUDA_VISIBLE_DEVICES").output.strip() == "GPU-7f00"
        present = Path("/dev/nvidia7").exists()
        assert (box.exec("test -e /dev/nvidia7").exit_code == 0) == present
    finally:
        box.close()


# A run's readings as a GPU machine records them (before, after): a warm GPU that hit its power cap.
RECORDED = [{"sm_clock_mhz": 1755, "memory_clock_mhz": 2619, "temperature_c": 41, "power_w": 118.2, "reasons": []},
            {"sm_clock_mhz": 1410, "memory_clock_mhz": 2619, "temperature_c": 63, "power_w": 699.5,
             "reasons": ["sw_power_cap", "applications_clocks_setting"]}]


def test_throttle_reasons_are_named_from_nvmls_bits() -> None:
    from harness.gpus.clocks import reasons_of
    assert reasons_of(0) == ()
    assert reasons_of(0x1 | 0x4 | 0x40) == ("gpu_idle", "sw_power_cap", "hw_thermal_slowdown")
    assert reasons_of(0x2 | 0x1000) == ("applications_clocks_setting", "0x1000")


def test_a_run_that_throttled_is_told_from_recorded_readings() -> None:
    from harness.gpus.clocks import Reading, slowdowns
    before, after = (Reading.from_record(r) for r in RECORDED)
    assert after.record() == RECORDED[1]
    assert slowdowns(before, after) == ["sw_power_cap"]  # a set clock is no slowdown
    assert slowdowns(before, None) == []


def test_a_slowdown_between_two_calm_readings_is_seen_by_its_counter() -> None:
    from harness.gpus.clocks import Reading, Watch, violated
    calm = Reading.from_record({**RECORDED[0], "violation_ns": {"power": 0, "thermal": 5_000_000}})
    # Calm at both instants, but the thermal counter moved by 40 ms in between: it throttled and recovered.
    later = Reading.from_record({**RECORDED[0], "violation_ns": {"power": 0, "thermal": 45_000_000}})
    assert later.record()["violation_ns"] == {"power": 0, "thermal": 45_000_000}
    assert Reading.from_record(RECORDED[0]).record() == RECORDED[0]  # (an older record has no counters)
    assert violated(calm, later) == ["thermal_violation"] and violated(calm, calm) == []
    assert violated(Reading.from_record(RECORDED[0]), later) == []  # a counter read once says nothing
    script = iter([calm, later, later, later])  # the second try: the counter stood still
    watch = Watch((H100[0],), read=lambda gpu: next(script), samples=lambda gpu, since: [])
    _, seen = watch.run(lambda: None)
    assert seen.redone == ("thermal_violation",) and seen.slowdowns == []
    assert watch.summary() == {"runs": 1, "redone": 1, "throttled": 0, "slowdowns": ["thermal_violation"]}


def test_another_process_on_the_gpu_when_a_run_begins_is_seen() -> None:
    from harness.gpus.clocks import Reading, live_pids, slowed
    calm = Reading.from_record(RECORDED[0])
    shared = Reading.from_record({**RECORDED[0], "processes": [4242]})
    assert shared.record()["processes"] == [4242]
    assert slowed([shared], [calm]) == ["shared_gpu"]
    assert slowed([calm], [shared]) == []  # after the run: its own process, on its way out
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    assert live_pids([os.getpid(), int(gone), os.getpid()]) == (os.getpid(),)  # an exited one is no job


def test_busy_time_is_read_off_utilization_samples() -> None:
    from harness.gpus.clocks import busy_seconds
    # (timestamp µs, percent of the period since the sample before): periods of 1/6 s as on many GPUs.
    samples = [(1_000_000, 0), (1_166_667, 90), (1_333_333, 50), (1_500_000, 0)]
    # The window [1.0 s, 1.5 s]: 0.9 x 1/6 + 0.5 x 1/6 = 0.2333 s; half of the second period: 0.075 + 0.0833.
    assert busy_seconds(samples, 1_000_000, 1_500_000) == pytest.approx(0.2333, abs=1e-4)
    assert busy_seconds(samples, 1_083_333, 1_500_000) == pytest.approx(0.075 + 0.0833, abs=1e-4)
    assert busy_seconds(samples[::-1], 1_000_000, 1_500_000) == pytest.approx(0.2333, abs=1e-4)  # any order
    assert busy_seconds(samples, 2_000_000, 3_000_000) is None  # no sample covers it: unknown, not idle
    assert busy_seconds([], 0, 10) is None


def test_a_timed_run_the_gpu_slowed_down_is_run_again_once() -> None:
    from harness.gpus.clocks import Reading, Watch
    calm, capped = (Reading.from_record(r) for r in RECORDED)
    # Readings as NVML gave them, in order: (before, after) per run.
    script = iter([calm, capped,   # run 1: hit the power cap -> run again
                   calm, calm,     # its second try: fine, kept
                   calm, calm,     # run 2: fine
                   calm, capped,   # run 3: capped
                   capped, capped])  # its second try capped too: kept, and counted as throttled
    ticks = iter(range(1000, 2000))  # the clock, in seconds: each reading one second after the last
    # NVML's samples since the time asked: one a second, each at 50% busy (µs timestamps)
    watch = Watch((H100[0],), read=lambda gpu: next(script), clock=lambda: next(ticks),
                  samples=lambda gpu, since: [(since + k * 10**6, 50) for k in range(10)])
    calls: list[str] = []
    said: list[str] = []
    for name in ("one", "two", "three"):
        value, seen = watch.run(lambda name=name: calls.append(name) or name, said.append)
        assert value == name
    assert calls == ["one", "one", "two", "three", "three"]
    assert watch.summary() == {"runs": 3, "redone": 2, "throttled": 1, "slowdowns": ["sw_power_cap"]}
    assert len(said) == 2 and "sw_power_cap" in said[0]
    last = seen.record()
    assert last["redone_after"] == ["sw_power_cap"] and last["slowdowns"] == ["sw_power_cap"]
    assert last["before"][0]["power_w"] == 699.5 and last["busy_s"] == pytest.approx(0.5)  # 1 s at 50%


def test_clock_locking_says_what_it_did_where_it_cannot_lock() -> None:
    from harness.gpus.clocks import ClockLock, read
    with ClockLock(()) as lock:
        assert lock.policy == "default clocks (no GPU)"
    if not gpus.inventory():  # no NVML or no GPU here: nothing locked, and said so
        with ClockLock((H100[0],)) as lock:
            assert lock.policy.startswith("default clocks (")
        assert read(H100[0]) is None


def test_a_process_given_some_gpus_by_its_scheduler_pools_only_those() -> None:
    try:
        pool = gpus.restrict(["1"], machine=MIXED)  # Ray's get_gpu_ids(): indexes (or UUIDs)
        assert pool.gpus == (MIXED[1],) and gpus.machine_pool() is pool
        assert gpus.restrict(["GPU-cccc"], machine=MIXED).gpus == (MIXED[0],)
    finally:
        gpus.restrict([g.index for g in gpus.inventory()])  # this machine's own again


def test_the_gpu_family_times_with_gpukit_and_declares_its_gpu() -> None:
    from harness.tasks.folder import GPU_SUITE_DIR, load_dir_all
    family = load_dir_all(GPU_SUITE_DIR)  # (loading checks each expert patch applies)
    assert family and all(t.gpus == 1 and "gpu" in t.tags for t in family)
    for task in family:
        assert (task.path / "weaker.patch").is_file(), task.id  # type: ignore[operator]
        for name, data in task.hidden_files:
            if name.startswith("test_"):
                assert b"gpukit.time_experiment(" in data, (task.id, name)


@no_gpu_here
def test_tasks_gpu_is_skipped_in_one_line_each_where_there_is_no_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.tasks.folder import GPU_SUITE_DIR, load_dir_all
    with pytest.raises(TaskError, match=r"every task was skipped \(\d+ need GPUs this machine lacks\)"):
        select_tasks("gpu")
    skipped = [line for line in capsys.readouterr().err.splitlines() if "skipped, it needs 1 GPU(s)" in line]
    assert len(skipped) == len(load_dir_all(GPU_SUITE_DIR))


def test_the_gpu_hack_fixtures_apply_and_the_diff_alone_shows_only_the_rebound_timer(tmp_path: Path) -> None:
    # What they do at run time needs a GPU (tools/gpu_check.sh; the CPU's part: the test below); here: each
    # applies to its task's repository, and only the rebound timers are visible in the diff, an alias and
    # setattr included (the others are left to gpukit and the outside clock).
    from harness.grader.guards import static_review
    from harness.tasks.folder import load_task
    hacks = Path(__file__).parent / "fixtures" / "hacks"
    seen = {}
    for task_id in ("softmax_fused", "matmul_tiled"):
        task = load_task(SUITE_GPU / task_id)
        for patch in sorted((hacks / task_id).glob("*.patch")):
            repo = tmp_path / f"{task_id}-{patch.stem}"
            shutil.copytree(SUITE_GPU / task_id / "repo", repo)
            done = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(patch)], cwd=repo, capture_output=True,
                                  text=True)
            assert done.returncode == 0, done.stdout + done.stderr
            seen[patch.stem] = [r.split(":")[0] for r in static_review(patch.read_text(), task)[0]]
    assert seen == {"timer_rebound": ["clock rebound"], "alias_rebound": ["clock rebound"], "side_stream": [],
                    "memo_reps": [], "median_bent": []}


def _cpu_copy(task_id: str, dest: Path, patch: Path | None = None) -> tuple[Path, Path]:
    """A GPU task's hidden tests made to run on the CPU (harness.gpus.twins: its device strings, gpukit's CPU
    clock, fewer reps, smaller workloads) beside gpukit and perfkit, and its repository with `patch` applied:
    (tests, repository)."""
    grader = Path(__file__).resolve().parents[1] / "harness" / "grader"
    tests, repo = dest / "tests", dest / "repo"
    cpu_tests(SUITE_GPU / task_id / "tests", tests)
    for kit in ("gpukit.py", "perfkit.py"):
        shutil.copy(grader / kit, tests / kit)
    shutil.copytree(SUITE_GPU / task_id / "repo", repo)
    if patch is not None:
        subprocess.run(["patch", "-s", "-p1", "-i", str(patch)], cwd=repo, check=True)
    return tests, repo


def _runner(tests: Path, test: str, work: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """run(repository, *flags): one process of a hidden test on that repository, as the grader runs it."""
    def run(repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, test, str(work / "out.txt"), *flags, "--file_prefix", str(work / "ref")],
                              cwd=tests, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(repo)})
    return run


@pytest.mark.timed
def test_the_gpu_suites_per_rep_check_on_the_cpu_credits_the_weaker_patch_and_fails_the_hacks(tmp_path: Path) -> None:
    """softmax_fused's hidden test run on the CPU (torch's CPU build): the base's reference run, then its
    weaker patch (checked and timed runs pass on the new inputs of each rep) and the hack fixtures: the kept
    output fails every rep's check, the aliased Event.record fails as a replaced timer (both passed before)."""
    pytest.importorskip("torch")
    hacks = Path(__file__).parent / "fixtures" / "hacks" / "softmax_fused"
    tests, base = _cpu_copy("softmax_fused", tmp_path / "base")
    run = _runner(tests, "test_narrow.py", tmp_path)
    assert run(base, "--reference").returncode == 0
    weaker = _cpu_copy("softmax_fused", tmp_path / "weaker", SUITE_GPU / "softmax_fused" / "weaker.patch")[1]
    for flags in (("--eqcheck",), ()):
        done = run(weaker, *flags)
        assert done.returncode == 0, done.stderr
    memo = _cpu_copy("softmax_fused", tmp_path / "memo", hacks / "memo_reps.patch")[1]
    for flags in (("--eqcheck",), ()):  # every timed run is checked, not only the --eqcheck ones
        done = run(memo, *flags)
        assert done.returncode != 0 and "differs from the reference run's output for the same inputs" in done.stderr
    alias = _cpu_copy("softmax_fused", tmp_path / "alias", hacks / "alias_rebound.patch")[1]
    done = run(alias, "--eqcheck")
    assert done.returncode != 0 and "TimerReplaced: the GPU timer was replaced during the run" in done.stderr


@pytest.mark.timed
def test_attention_sdpa_on_the_cpu_prefills_new_prompts_each_rep_and_credits_its_patches(tmp_path: Path) -> None:
    """Token ids have nothing for gpukit to perturb: the task's `inputs` gives each rep new prompts. Its expert
    (scaled_dot_product_attention) and weaker patch pass every rep's check; a model that keeps its logits
    per shape fails."""
    pytest.importorskip("torch")
    tests, base = _cpu_copy("attention_sdpa", tmp_path / "base")
    run = _runner(tests, "test_chat.py", tmp_path)
    assert run(base, "--reference").returncode == 0
    task = SUITE_GPU / "attention_sdpa"
    for name in ("expert.patch", "weaker.patch"):
        done = run(_cpu_copy("attention_sdpa", tmp_path / name, task / name)[1], "--eqcheck")
        assert done.returncode == 0, (name, done.stderr)
    kept = tmp_path / "kept"
    shutil.copytree(task / "repo", kept)
    source = kept / "tinylm" / "__init__.py"
    source.write_text(source.read_text().replace(
        "        return self.head(self(tokens)[:, -1])",
        "        kept = self.__dict__.setdefault('_kept', {})\n"
        "        if tokens.shape not in kept:\n"
        "            kept[tokens.shape] = self.head(self(tokens)[:, -1])\n"
        "        return kept[tokens.shape]"))
    done = run(kept, "--eqcheck")
    assert done.returncode != 0 and "differs from the reference run's output for the same inputs" in done.stderr


def test_a_trimmed_gpu_task_keeps_its_gpu_tests_as_they_are_but_fewer(tmp_path: Path) -> None:
    # gpu_check.sh --quick grades these on a GPU: each run of a test there costs seconds of process start
    made = make_trimmed("softmax_fused", tmp_path)
    source = SUITE_GPU / "softmax_fused"
    assert sorted(p.name for p in (made / "tests").iterdir()) == ["common.py", "test_narrow.py"]
    for name in ("common.py", "test_narrow.py"):
        assert (made / "tests" / name).read_text() == (source / "tests" / name).read_text()
    assert (made / "task.yaml").read_text() == (source / "task.yaml").read_text()  # (gpus: 1, as it was)
    assert (made / "expert.patch").read_bytes() == (source / "expert.patch").read_bytes()
    listing = LISTING.set(True)  # (a machine without GPUs lists GPU tasks rather than skipping them)
    try:
        [task] = select_tasks(str(tmp_path))
    finally:
        LISTING.reset(listing)
    assert task.id == "softmax_fused" and task.gpus == 1
    all_tests = make_trimmed("matmul_tiled", tmp_path / "all")  # (no test chosen for it: all kept)
    assert sorted(p.name for p in (all_tests / "tests").iterdir()) == sorted(
        p.name for p in (SUITE_GPU / "matmul_tiled" / "tests").iterdir() if p.name != "__pycache__")
    with pytest.raises(NoTwin):
        make_trimmed("no_such_task", tmp_path / "none")

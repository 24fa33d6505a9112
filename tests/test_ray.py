"""`executor=ray` on a real multi-node Ray cluster on this machine (`ray.cluster_utils.Cluster`: a head and
two worker raylets, all on this machine's Docker engine), through the runner's command line.

- oracle and noop on the smoke tasks: the same report as the local executor, and the same run layout;
- a worker raylet killed mid-run: its rollouts run again on the other node, each recorded once, no
  container left;
- Ctrl-C: exit 130, no container left anywhere; the same command resumes and runs only what is missing;
- the pieces the driver shares: a node lacking an image loads it from the driver, and a 429 pause set
  by one worker holds the others;
- a rollout killed mid-way continues from a checkpoint whose image no node has any more, rebuilt from the
  archives its node sent the driver.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors as docker_errors
import pytest

from tests.docker_support import client
from tests.openai_server import OpenAIServer, Received, Reply, completion, usage
from tests.test_runner import results, run_dir, runner, signal_when, start_runner, tasks_dir, wait_for  # noqa: F401

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.docker
SLOTS = {"rollout_slot": 2, "timing_slot": 1}
RUN_LABEL = "optrunner.run"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, list[Any]]]:
    """A head (the driver's node: the run's actors) and two worker nodes with 2 rollout slots each."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    workers = [cluster.add_node(num_cpus=1, resources=SLOTS) for _ in range(2)]
    cluster.wait_for_nodes()
    try:
        yield cluster, workers
    finally:
        cluster.shutdown()


def on_cluster(cluster: Cluster) -> list[str]:
    return ["executor=ray", f"executor.address={cluster.address}", "executor.drain_s=10"]


def containers_of_run(name: str) -> list[Any]:
    """Containers of the run called `name` (its label: the name and a digest of the run's path)."""
    found = client().containers.list(all=True, filters={"label": RUN_LABEL}, ignore_removed=True)
    return [c for c in found if c.labels[RUN_LABEL].rsplit("-", 1)[0] == name]


def comparable(run: Path) -> tuple[dict[Any, tuple[Any, ...]], dict[Any, bool], list[str]]:
    """What must not depend on the executor: every rollout's outcome and patch, its grading status and
    verdicts, the cost, and the files the run wrote; and which verdicts the timing noise left uncertain."""
    rows, unsure = {}, {}
    for r in results(run):
        g = r.get("grading") or {}
        key = (r["instance_id"], r["rollout"])
        rows[key] = (r["exit_reason"], r["steps"], r["patch_sha256"], r["cost_usd"], g.get("status"),
                     g.get("opt_base"), g.get("opt_commit"))
        # Two rounds leave the bootstrap little to go on: the expert's own patch (hm about 1 against the
        # expert) sits 5% from opt_commit's threshold, and on two busy cores one slow round moved it by 21%
        # (0.79 against 1.10 on a rerun); so within 25% of the threshold is unsure too.
        hm = (g.get("opt_stats") or {}).get("hm_speedup_patch_commit")
        near = hm is not None and abs(hm - (g.get("p") or 0.95)) < 0.25
        unsure[key] = near or any((g.get("uncertain") or {}).values())
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and p.name != "__main__.log")
    return rows, unsure, files


@pytest.mark.long("a run on a real Ray cluster against the local one: ~45 s")
@pytest.mark.parametrize("model", ["oracle", pytest.param("noop", marks=pytest.mark.slow)])  # noop: make bench
def test_the_same_report_as_the_local_executor(cluster: tuple[Cluster, list[Any]], tmp_path: Path,
                                               model: str) -> None:
    # The oracle's patches are timed on the nodes: one smoke task of the three keeps that under a minute a
    # run (the noop's rollouts, ungraded, cover all three).
    ids = ("tasks.ids=[rollstats]",) if model == "oracle" else ()
    common = (f"model={model}", "scaffold=mini_swe", "tasks=smoke", *ids, "rollouts=1", "grading.rounds=2",
              "parallel=4")
    local = runner(*common, "name=local", out=tmp_path)
    assert local.returncode == 0, local.stderr[-2000:]
    remote = runner(*common, *on_cluster(cluster[0]), "name=ray", out=tmp_path)
    assert remote.returncode == 0, remote.stderr[-2000:]
    assert "scheduling overhead per rollout" in remote.stdout
    (rows_a, unsure_a, files_a), (rows_b, unsure_b, files_b) = (comparable(tmp_path / "runs" / name)
                                                                for name in ("local", "ray"))
    assert files_a == files_b and len(rows_a) == (1 if ids else 3)
    for key in rows_a:  # a verdict whose interval straddles its threshold may go either way on a rerun
        cut = 6 if unsure_a[key] or unsure_b.get(key) else 7
        assert rows_a[key][:cut] == rows_b[key][:cut], key
    if model == "oracle":
        assert {row[4] for row in rows_a.values()} == {"passed"}
    assert not containers_of_run("ray")


def slow_server(turns: int, delay_s: float, hold: threading.Event | None = None) -> OpenAIServer:
    """mini_swe replies that take `delay_s` each and submit after `turns` commands. With `hold`, the first
    reply of every rollout waits until the test sets it (at most 150 s): what the test waits for happens
    with every rollout started and none finished, however slowly a busy machine starts them."""
    def answer(received: Received) -> Reply:
        body = received.body if isinstance(received.body, dict) else {}
        done = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        if hold is not None and done == 0 and body.get("max_tokens") != 1:  # (not the runner's access check)
            hold.wait(timeout=150)
        command = f"echo turn {done}" if done < turns else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        return Reply(body=completion(f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```",
                                     usage_=usage(prompt=100, completion=10)), delay_s=delay_s)
    return OpenAIServer(policy=answer)


def local_model(server: OpenAIServer) -> list[str]:
    return ["model=local", f"model.api_base={server.base_url}", "model.served_name=slow", "model.price.input=1",
            "model.price.output=2", "scaffold=mini_swe"]


@pytest.mark.long("a Ray node killed mid-run, its rollouts finished on another: ~45 s")
def test_a_killed_node_s_rollouts_run_elsewhere(tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    # A cluster of its own: a node of the shared one is killed here.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    victim, _ = [cluster.add_node(num_cpus=1, resources=SLOTS) for _ in range(2)]
    cluster.wait_for_nodes()
    try:
        # Every rollout's first reply is held until the node is killed: on a busy machine one node's
        # rollouts could otherwise finish before the other node's start, and four never run at once.
        hold = threading.Event()
        with slow_server(turns=6, delay_s=1.0, hold=hold) as server:
            proc = start_runner(*local_model(server), f"tasks.selector={tasks_dir}", "rollouts=2", "parallel=4",
                                "grade=none", "name=killed", *on_cluster(cluster), out=tmp_path)
            try:
                try:
                    wait_for(lambda: len([c for c in containers_of_run("killed") if c.status == "running"]) == 4,
                             150, "4 rollouts running on the two nodes")
                except AssertionError as err:
                    raise AssertionError(f"{err}; the runner said:\n{proc.output[-3000:]}") from None
                cluster.remove_node(victim, allow_graceful=False)
                hold.set()
                output, _ = proc.communicate(timeout=300)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 0, output[-3000:]
        records = results(tmp_path / "runs" / "killed")
        assert sorted((r["instance_id"], r["rollout"]) for r in records) == [("alpha", 0), ("alpha", 1),
                                                                            ("beta", 0), ("beta", 1)]
        assert {r["exit_reason"] for r in records} == {"submitted"}, [r["exit_message"][-300:] for r in records]
        # The two killed rollouts ran again from the start: more than 4 x 7 model calls reached the server.
        assert len(server.requests) > 4 * 7
        assert not containers_of_run("killed")
    finally:
        cluster.shutdown()


@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_ctrl_c_leaves_no_container_and_the_same_command_resumes(
        cluster: tuple[Cluster, list[Any]], tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    with slow_server(turns=4, delay_s=0.5) as server:
        args = (*local_model(server), f"tasks.selector={tasks_dir}", "rollouts=4", "parallel=2", "grade=none",
                "name=stopped", *on_cluster(cluster[0]))
        proc = start_runner(*args, out=tmp_path)
        run = tmp_path / "runs" / "stopped"

        def two_finished_and_more_running() -> None:
            wait_for(lambda: (run / "results.jsonl").is_file() and len(results(run)) >= 2
                     and any(c.status == "running" for c in containers_of_run("stopped")), 180,
                     "two rollouts finished and more running")

        output, took = signal_when(proc, two_finished_and_more_running, signal.SIGINT, timeout=120)
        assert proc.returncode == 130, output[-3000:]
        assert not containers_of_run("stopped")
        kept = {(r["instance_id"], r["rollout"]) for r in results(run)}
        assert 2 <= len(kept) < 8
        again = runner(*args, out=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(kept)} rollouts already finished, {8 - len(kept)} to run" in again.stdout
    keys = [(r["instance_id"], r["rollout"]) for r in results(run)]
    assert len(keys) == len(set(keys)) == 8 and kept <= set(keys)
    assert not containers_of_run("stopped")


def test_a_node_without_the_image_loads_it_from_the_driver(cluster: tuple[Cluster, list[Any]]) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from runner.executors import ray_node
    from runner.executors.ray_actors import ImageDepot

    docker = client()
    name = "optrunner-test/depot:1"
    # (any task image, else any image; one another test process removes meanwhile is passed over)
    for source in docker.images.list(filters={"label": "optrunner.task"}) + docker.images.list():
        try:
            source.tag(name)
            break
        except docker_errors.NotFound:
            continue
    ray.init(address=cluster[0].address, logging_level="ERROR", log_to_driver=False)
    try:
        depot = ray.remote(ImageDepot).options(num_cpus=0).remote("docker")
        (pieces,) = ray.get(depot.tar.remote(name))  # saved on the driver's side while the image is there
        # in pieces of 32 MiB (one Ray object each), never the engine's ~32 kB socket reads
        assert 1 <= len(pieces) <= source.attrs["Size"] // (32 << 20) + 2
        docker.images.remove(name)  # gone from the (shared) engine: the node must load it
        node = cluster[1][0].node_id
        ensure = ray.remote(ray_node.ensure_image).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
        ray.get(ensure.remote(name, depot, "docker"), timeout=120)
        assert docker.images.get(name).id == source.id
    finally:
        ray.shutdown()
        try:
            docker.images.remove(name)
        except Exception:  # noqa: BLE001 - not there
            pass


def test_a_429_pause_from_one_worker_holds_the_others(cluster: tuple[Cluster, list[Any]]) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from harness.models.config import ModelConfig
    from runner.executors.ray_actors import RemoteLimiter, limiter_actor

    def acquire_elsewhere(actor: Any, go: float) -> tuple[float, float]:
        import time

        time.sleep(max(0.0, go - time.time()))
        ticket = RemoteLimiter(actor).acquire()
        RemoteLimiter(actor).succeeded(ticket)
        return time.time(), ticket.gate_wait_s

    ray.init(address=cluster[0].address, logging_level="ERROR", log_to_driver=False)
    try:
        actor = limiter_actor(ModelConfig(name="openai/x", api_base="http://127.0.0.1:9"))
        node = NodeAffinitySchedulingStrategy(cluster[1][0].node_id, soft=False)
        elsewhere = ray.remote(acquire_elsewhere).options(num_cpus=0, scheduling_strategy=node)
        # That node's worker started and warm first: on a busy machine starting one took longer than the
        # pause.
        ray.get(elsewhere.remote(actor, 0.0), timeout=120)
        here = RemoteLimiter(actor)
        ticket = here.acquire()
        paused_at = time.time()
        here.rate_limited(ticket, 3.0)  # a 429 with Retry-After: 3 seen by this process
        # (the other worker asks 0.5 s into the pause, so that it starts late only if its machine stalls)
        let_through, waited = ray.get(elsewhere.remote(actor, paused_at + 0.5), timeout=60)
        assert waited > 0 and let_through >= paused_at + 3.0 - 0.05  # the other node's worker waited it out
    finally:
        ray.shutdown()


@pytest.mark.long("a run on the Ray cluster until its cost cap stops it, then its report: ~55 s under make test's load")
def test_the_run_cost_cap_reaches_the_nodes(cluster: tuple[Cluster, list[Any]], tasks_dir: Path,  # noqa: F811
                                            tmp_path: Path) -> None:
    steps = ",".join(["{bash: 'sleep 0.2'}"] * 100)  # far more than the cap allows
    done = runner("model=script", f"model.steps=[{steps}]", "scaffold=mini_swe", f"tasks.selector={tasks_dir}",
                  "tasks.ids=[alpha]", "rollouts=3", "parallel=2", "grade=none", "budget.max_steps=200",
                  "budget.run_cost_usd=0.001", "name=capped", *on_cluster(cluster[0]), out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    records = results(tmp_path / "runs" / "capped")
    # The two running rollouts were ended by the driver through the board; the third never started.
    assert [r["exit_reason"] for r in records] == ["run_cost_limit"] * 2
    assert all(r["steps"] < 50 for r in records) and sum(r["cost_usd"] for r in records) < 0.01
    assert json.loads((tmp_path / "runs" / "capped" / "report.json").read_text())["summary"]["n_missing"] == 1
    assert not containers_of_run("capped")


@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_a_second_ctrl_c_exits_at_once_and_leaves_no_container(cluster: tuple[Cluster, list[Any]],
                                                               tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    with slow_server(turns=20, delay_s=0.5) as server:
        proc = start_runner(*local_model(server), f"tasks.selector={tasks_dir}", "rollouts=2", "parallel=4",
                            "grade=none", "name=twice", *on_cluster(cluster[0]), out=tmp_path)
        output, took = signal_when(proc, lambda: wait_for(
            lambda: len([c for c in containers_of_run("twice") if c.status == "running"]) == 4, 120,
            "4 rollouts running"), signal.SIGINT, signal.SIGINT, timeout=60)
    assert proc.returncode == 130 and took < 10, (took, output[-2000:])
    # The workers die with the driver's job; what they had started is removed by then or orphaned and swept.
    wait_for(lambda: not containers_of_run("twice"), 60, "no container of the run left")


@pytest.mark.slow  # (90 s: make bench; the rebuild itself is tests/test_checkpoints.py's, in CI)
def test_a_checkpoint_another_node_made_is_rebuilt_from_its_archives(cluster: tuple[Cluster, list[Any]],
                                                                     tmp_path: Path) -> None:
    from tests.test_checkpoints import ARGS

    args = (*ARGS, "scaffold=mini_swe", "name=travel", *on_cluster(cluster[0]))
    proc = start_runner(*args, out=tmp_path)
    kept = tmp_path / "runs" / "travel" / "checkpoints"

    def checkpointed() -> bool:
        found = list(kept.glob("*__0.json"))
        return bool(found) and len(json.loads(found[0].read_text())["state"]["steps"]) >= 6

    try:
        wait_for(checkpointed, 180, "a checkpoint at step 6")
    finally:
        proc.send_signal(signal.SIGKILL)  # the driver: its workers end with it
        proc.wait()
    (found,) = [json.loads(p.read_text()) for p in kept.glob("*__0.json")]
    assert found["base"].startswith("optrunner/task-rollstats") and found["archives"]
    assert all((kept / name).is_file() for name in found["archives"])
    for image in client().images.list(name="optrunner/checkpoint"):  # the node that made it is gone
        client().images.remove(image.id, force=True)
    again = runner(*args, out=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    (record,) = results(tmp_path / "runs" / "travel")
    assert record["exit_reason"] == "submitted" and record["steps"] == 13
    assert record["details"]["resumed_from"] >= 6 and not record["details"].get("checkpoint_errors")
    # no step lost or doubled: the lines the agent appended, one per step, each once and in order
    added = [line[1:] for line in record["patch"].splitlines() if line.startswith("+line")]
    assert added == [f"line {i}" for i in range(1, 13)]
    assert list(kept.iterdir()) == [] and client().images.list(name="optrunner/checkpoint") == []
    assert not containers_of_run("travel")

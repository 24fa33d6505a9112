"""What a run spends on the model, through the runner's command line against the loopback OpenAI server
(`model=local`, whose token counts and prices the test sets): the spend of an attempt that is retried (a
provider outage, a container lost mid-rollout) stays with the rollout and counts toward the run's cost cap
at once; and credentials the server refuses stop the run before any container starts."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.sandbox.docker.containers import LABEL, OWNER_LABEL
from tests.docker_support import client
from tests.faults import SENTINEL
from tests.openai_server import OpenAIServer, Received, Reply, completion, error, usage
from tests.test_runner import containers_of, results, run_dir, runner, start_runner, tasks_dir, wait_for  # noqa: F401

pytestmark = pytest.mark.docker
PROMPT, OUTPUT = 1000, 10  # tokens of every answered rollout call
CALL_USD = (PROMPT + OUTPUT) * 1.0 / 1e6  # at $1 per million tokens, in and out


def local(server: OpenAIServer) -> list[str]:
    return ["model=local", f"model.api_base={server.base_url}", "model.served_name=spender", "model.price.input=1",
            "model.price.output=1", "model.attempts=1", "scaffold=mini_swe", "tasks.ids=[alpha]", "grade=none"]


def command(text: str) -> Reply:
    return Reply(body=completion(f"THOUGHT: go.\n\n```mswea_bash_command\n{text}\n```",
                                 usage_=usage(prompt=PROMPT, completion=OUTPUT)))


def is_probe(received: Received) -> bool:
    """The runner's access check (one tiny request before anything starts), not a rollout's call."""
    return isinstance(received.body, dict) and received.body.get("max_tokens") == 1


def turns(received: Received) -> int:
    body = received.body if isinstance(received.body, dict) else {}
    return sum(m.get("role") == "assistant" for m in body.get("messages", []))


def test_the_cost_cap_counts_the_spend_of_retried_attempts(tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    # Each attempt: one answered call, a 2 s command, then a provider outage (retried). The cap lies between
    # one attempt's spend and two: only with the first attempt's spend counted is it reached in the second.
    def answer(received: Received) -> Reply:
        if is_probe(received) or turns(received) == 0:
            return command("sleep 2")
        return Reply(status=500, body=error("upstream down", type_="server_error"))

    with OpenAIServer(policy=answer) as server:
        done = runner(*local(server), f"tasks.selector={tasks_dir}", "infra_retries=1",
                      f"budget.run_cost_usd={1.5 * CALL_USD}", out=tmp_path)
        calls = [r for r in server.requests if not is_probe(r)]
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "run_cost_limit" and record["attempts"] == 2, record["exit_message"]
    assert len(record["infra_errors"]) == 1 and "transient error" in record["infra_errors"][0]
    assert [u["cost_usd"] for u in record["attempt_usage"]] == pytest.approx([CALL_USD, CALL_USD])
    assert record["cost_usd"] == pytest.approx(2 * CALL_USD)
    assert len(calls) == 3  # the second attempt was stopped before its next call


def test_a_container_lost_mid_rollout_keeps_its_attempts_spend(tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    # The first attempt's container is killed while its command runs (a SandboxError); the retry submits.
    first: list[Received] = []

    def answer(received: Received) -> Reply:
        if is_probe(received) or turns(received) > 0:
            return command(SENTINEL)
        first.append(received)
        return command("sleep 30" if len(first) == 1 else SENTINEL)

    with OpenAIServer(policy=answer) as server:
        proc = start_runner(*local(server), f"tasks.selector={tasks_dir}", "infra_retries=1", out=tmp_path)
        try:
            wait_for(lambda: bool(first) and first[0].status == 200, 120, "the first rollout call")
            wait_for(lambda: any(c.status == "running" for c in containers_of(proc.pid)), 30, "its container")
            for container in containers_of(proc.pid):
                container.kill()
            output, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        answered = len([r for r in server.requests if not is_probe(r)])
    assert proc.returncode == 0, output[-2000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["attempts"] == 2
    assert len(record["infra_errors"]) == 1 and record["infra_errors"][0].startswith("SandboxError: ")
    per_attempt = record["attempt_usage"]
    assert len(per_attempt) == 2 and per_attempt[0]["calls"] >= 1 and per_attempt[1]["calls"] == 1
    # Every call the server answered for the rollout is in its usage and cost, the lost attempt's included.
    assert record["usage"]["calls"] == answered and record["cost_usd"] == pytest.approx(answered * CALL_USD)
    summary = json.loads((run_dir(tmp_path) / "report.json").read_text())["summary"]
    assert summary["cost_usd"] == pytest.approx(record["cost_usd"])


def test_refused_credentials_stop_the_run_before_any_container(tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    since = int(time.time()) - 1
    with OpenAIServer() as server:
        server.push(*[Reply(status=401, body=error("Invalid API key", code="invalid_api_key"))] * 3)
        done = runner(*local(server), f"tasks.selector={tasks_dir}", out=tmp_path, timeout=120)
        asked = len(server.requests)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: openai/spender: the provider at ") \
        and "refused the credentials" in lines[0], done.stderr
    assert asked == 1  # one probe, not one failing call per rollout
    assert list(tmp_path.iterdir()) == []  # no run directory
    created = client().events(since=since, until=int(time.time()) + 1, decode=True,
                              filters={"type": "container", "event": "create", "label": LABEL})
    owners = [e["Actor"]["Attributes"].get(OWNER_LABEL, "") for e in created]
    assert not [o for o in owners if o.endswith(f":{done.pid}")]  # no container, not even one removed since

"""A 429 storm on a whole run: 16 concurrent rollouts of `model=local` against the loopback
OpenAI-compatible server, which answers 30% of requests with 429 and `Retry-After`. The run slows down
instead of discarding work: every rollout completes on its first attempt, no request reaches the server
while a pause is in force, and the run's tokens and dollars are exactly what the server answered."""
from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, Received, Reply, completion, error, usage
from tests.test_runner import containers_of, results, run_dir, runner, tasks_dir  # noqa: F401 - a fixture

pytestmark = pytest.mark.docker
RETRY_AFTER_S = 2.0
LAG_S = 0.9  # see below (a 429 was read 0.86 s after it was sent once, alone on CI's two cores)
PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per million tokens


def storm() -> tuple[OpenAIServer, list[tuple[float, float]]]:
    """The server and the pauses it announced (from, until), in its own clock."""
    rng, lock = random.Random(7), threading.Lock()
    pauses: list[tuple[float, float]] = []

    def answer(received: Received) -> Reply:
        with lock:
            limited = rng.random() < 0.3
            prompt, completion_tokens = rng.randint(50, 400), rng.randint(5, 60)
        if limited:
            pauses.append((received.at, received.at + RETRY_AFTER_S))
            return Reply(status=429, headers={"Retry-After": f"{RETRY_AFTER_S:g}"},
                         body=error("Rate limit reached", type_="requests", code="rate_limit_exceeded"))
        body = received.body if isinstance(received.body, dict) else {}
        turns = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        command = f"echo turn {turns}" if turns < 3 else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        text = f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```"
        return Reply(body=completion(text, usage_=usage(prompt=prompt, completion=completion_tokens)))

    return OpenAIServer(policy=answer), pauses


@pytest.mark.timed  # how soon the runner heeds a 429 (LAG_S): beside other tests a reply was read 0.8 s late
def test_a_429_storm_slows_the_run_and_loses_nothing(tasks_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    server, pauses = storm()
    with server:
        done = runner("model=local", f"model.api_base={server.base_url}", "model.served_name=storm",
                      f"model.price.input={PRICE_IN}", f"model.price.output={PRICE_OUT}", "scaffold=mini_swe",
                      f"tasks.selector={tasks_dir}", "rollouts=8", "parallel=16", "grade=none", out=tmp_path,
                      timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records = results(run_dir(tmp_path))
    assert len(records) == 16 and {r["exit_reason"] for r in records} == {"submitted"}
    assert all(r["attempts"] == 1 and not r["infra_errors"] for r in records)  # none restarted
    assert not containers_of(done.pid)
    limited = [r for r in server.requests if r.status == 429]
    assert len(limited) >= 10  # the storm really happened
    # Nothing reached the server while a pause was in force. The pause starts when the runner has read the
    # 429, which on a loaded machine (16 containers, 2 cores) was seen up to ~0.27 s after the server sent
    # it: requests sent meanwhile had passed the limiter before the pause began. LAG_S leaves room for that.
    for start, until in pauses:
        inside = [round(r.at - start, 3) for r in server.requests if start + LAG_S < r.at < until - 0.05]
        assert not inside, (start, inside)
    # Tokens and dollars: every answered call of the rollouts and the one access check, nothing else.
    report = json.loads((run_dir(tmp_path) / "report.json").read_text())
    checks = report["model_checks"]
    tokens = report["summary"]["tokens"]
    assert tokens["input"] + sum(c["input_tokens"] for c in checks) == server.prompt_tokens
    assert tokens["output"] + sum(c["output_tokens"] for c in checks) == server.completion_tokens
    dollars = (server.prompt_tokens * PRICE_IN + server.completion_tokens * PRICE_OUT) / 1e6
    spent = report["summary"]["cost_usd"] + sum(c["cost_usd"] for c in checks)
    assert spent == pytest.approx(dollars, rel=1e-6)
    waits = [s["call"]["rate_limit_wait_s"] for r in records
             for s in json.loads((run_dir(tmp_path) / r["trajectory"]).read_text())["step_records"] if s["call"]]
    assert sum(waits) >= RETRY_AFTER_S  # the waits are recorded per call

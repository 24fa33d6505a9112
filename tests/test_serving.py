"""Service tasks' parts: the seeded workload, the serving metrics (against a hand-computed table) and the
grader's client against a real HTTP server on a loopback port, its faults included."""
from __future__ import annotations

import socket
import time

import pytest

from harness.serving import client
from harness.serving.client import Endpoint, run_sync
from harness.serving.metrics import DIRECTION, RequestRecord, as_cost, summarize
from harness.serving.workload import Workload, WorkloadError, generate, held_out_seeds
from tests.serving_support import Behaviour, answer, completions_server


# ---------------------------------------------------------------- metrics, by hand
def table() -> list[RequestRecord]:
    return [RequestRecord(0, 0.0, 1.0, [0.5, 0.7, 1.0], 3, 3),
            RequestRecord(1, 0.2, 1.2, [0.4, 1.0], 2, 4),  # fewer tokens than asked: short
            RequestRecord(2, 0.5, None, [], 0, 4, 500, "HTTP 500"),
            RequestRecord(3, 1.0, 2.0, [2.0], 1, 1)]


def test_serving_metrics_match_a_hand_computed_table() -> None:
    m = summarize(table())
    assert (m.completed, m.failed, m.short, m.output_tokens, m.duration_s) == (3, 1, 1, 6, 2.0)
    want = {
        # TTFT 0.5, 0.2, 1.0 (sorted 0.2 0.5 1.0; p90 at rank 1.8: 0.5 + 0.8 * 0.5)
        "ttft_mean": 1.7 / 3, "ttft_p50": 0.5, "ttft_p90": 0.9, "ttft_p99": 0.99,
        # end to end: 1.0, 1.0 (1.2 - 0.2), 1.0
        "e2el_mean": 1.0, "e2el_p50": 1.0, "e2el_p90": 1.0, "e2el_p99": 1.0,
        # TPOT: (1.0 - 0.5) / 2 = 0.25 and (1.0 - 0.2) / 1 = 0.8; the one-token request has none
        "tpot_mean": 0.525, "tpot_p50": 0.525, "tpot_p90": 0.25 + 0.9 * 0.55, "tpot_p99": 0.25 + 0.99 * 0.55,
        # ITL: 0.2, 0.3 and 0.6
        "itl_mean": 1.1 / 3, "itl_p50": 0.3, "itl_p90": 0.3 + 0.8 * 0.3, "itl_p99": 0.3 + 0.98 * 0.3,
        # 3 requests and 6 tokens over 2 s
        "request_throughput": 1.5, "output_throughput": 3.0}
    assert set(m.values) == set(want) == set(DIRECTION)
    for name, value in want.items():
        assert m.values[name] == pytest.approx(value), name


def test_no_completed_request_gives_no_metric_and_throughput_is_a_cost_inverted() -> None:
    m = summarize([RequestRecord(0, 0.0, None, [], 0, 4, 0, "refused")])
    assert (m.values, m.completed, m.failed) == ({}, 0, 1)
    assert as_cost("ttft_p90", 0.25) == 0.25 and as_cost("output_throughput", 4.0) == 0.25
    assert as_cost("request_throughput", 0.0) == float("inf")
    with pytest.raises(KeyError, match="unknown serving metric 'ttft'"):
        as_cost("ttft", 1.0)


# ---------------------------------------------------------------- the workload
def test_a_seed_gives_the_same_requests_and_held_out_seeds_never_the_agents() -> None:
    shape = Workload(requests=50, prompt_tokens=(4, 9), output_tokens=(2, 5), arrival="poisson", rate=20.0)
    a, b = generate(shape, 7), generate(shape, 7)
    assert a == b
    assert all(4 <= r.prompt_tokens <= 9 and len(r.prompt.split()) == r.prompt_tokens for r in a)
    assert all(2 <= r.max_tokens <= 5 for r in a)
    assert [r.at_s for r in a] == sorted(r.at_s for r in a) and a[0].at_s == 0.0
    other = generate(shape, 8)
    assert not {r.prompt for r in a} & {r.prompt for r in other}  # a held-out seed's prompts were never seen
    seeds = held_out_seeds(7, 5, secret=99)
    assert len(set(seeds)) == 5 and 7 not in seeds and seeds == held_out_seeds(7, 5, secret=99)
    assert held_out_seeds(7, 5, secret=100) != seeds
    assert held_out_seeds(7, 5) != held_out_seeds(7, 5)  # a fresh secret each time: nothing to compute ahead
    # Poisson arrivals at 20/s: over many requests the mean gap is 1/20 s
    many = generate(Workload(requests=4000, arrival="poisson", rate=20.0), 3)
    assert many[-1].at_s / (len(many) - 1) == pytest.approx(0.05, rel=0.05)
    assert {r.at_s for r in generate(Workload(requests=5), 3)} == {0.0}  # burst: all at once


@pytest.mark.parametrize("raw, message", [
    ({"requests": 0}, "workload.requests is 0: give at least 1"),
    ({"prompt_tokens": [9, 4]}, "workload.prompt_tokens is [9, 4]: give [min, max]"),
    ({"arrival": "waves"}, "workload.arrival is 'waves': use one of burst, poisson, concurrency"),
    ({"arrival": "poisson"}, "workload.arrival is poisson but workload.rate is not positive"),
    ({"arrival": "concurrency"}, "workload.arrival is concurrency but workload.concurrency < 1"),
    ({"prompt_tokens": [1, 2, 3]}, "workload.prompt_tokens is [1, 2, 3]: give one number or [min, max]"),
    ({"burst": True}, "unknown workload field(s) burst: known are "),
])
def test_a_workload_that_cannot_be_generated_says_what_to_fix(raw: dict, message: str) -> None:
    with pytest.raises(WorkloadError) as err:
        Workload.from_dict(raw)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


# ---------------------------------------------------------------- the client, against a real server
def endpoint(port: int) -> Endpoint:
    return Endpoint(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM), port)


# (gaps of 30 ms between chunks: beside make test's other processes two chunks arrived together, 2026-11-30)
@pytest.mark.timed
def test_a_streamed_response_is_timed_chunk_by_chunk_and_its_text_kept() -> None:
    behaviour = Behaviour(first_s=0.15, gap_s=0.03)
    shape = Workload(requests=3, output_tokens=(5, 5), concurrency=1, warmup=1)
    requests = generate(shape, 1)
    with completions_server(behaviour) as port:
        records = run_sync(endpoint(port), requests, shape, warmup=generate(shape, 2, count=1))
    assert behaviour.seen == 4  # the warm-up's too, but it is not among the records
    for request, record in zip(requests, records):
        assert record.ok and record.status == 200, record
        assert record.text == "".join(answer(request.prompt, 5)) and record.output_tokens == 5
        assert len(record.chunks_s) == 5
        assert record.chunks_s[0] - record.sent_s >= 0.15  # TTFT covers the server's wait
        assert all(b - a >= 0.025 for a, b in zip(record.chunks_s, record.chunks_s[1:]))  # each gap seen
    # one in flight at a time: each request is sent after the one before it ended
    assert all(b.sent_s >= a.end_s for a, b in zip(records, records[1:]))  # type: ignore[operator]
    m = summarize(records)
    assert m.values["ttft_p50"] >= 0.15 and m.values["itl_p50"] >= 0.025 and m.short == 0


def test_a_burst_sends_every_request_at_once() -> None:
    shape = Workload(requests=6, output_tokens=(2, 2))
    with completions_server(Behaviour(first_s=0.3)) as port:
        records = run_sync(endpoint(port), generate(shape, 1), shape)
    assert all(r.ok for r in records)
    assert max(r.sent_s for r in records) < min(r.end_s for r in records)  # type: ignore[type-var]


@pytest.mark.parametrize("mode, usage", [("json", True), ("json", False), ("sse-sized", True),
                                         ("no-blank-end", False)])
def test_unstreamed_sized_and_unterminated_responses_are_read(mode: str, usage: bool) -> None:
    shape = Workload(requests=2, output_tokens=(4, 4), stream=mode != "json")
    with completions_server(Behaviour(mode=mode, usage=usage)) as port:
        records = run_sync(endpoint(port), generate(shape, 1), shape)
    for record in records:
        assert record.ok and record.output_tokens == 4 and len(record.text.split()) == 4, record


def test_a_server_that_answers_short_is_counted_short() -> None:
    shape = Workload(requests=2, output_tokens=(6, 6))
    with completions_server(Behaviour(mode="short")) as port:
        m = summarize(run_sync(endpoint(port), generate(shape, 1), shape))
    assert m.completed == 2 and m.short == 2


@pytest.mark.parametrize("mode, error", [("http500", "HTTP 500"), ("garbage", "not an HTTP response"),
                                         ("hang", "no complete response within 1 s"),
                                         ("flood", "the response passed 8 MiB"),
                                         ("bigchunk", "the response passed 8 MiB")])
def test_a_failing_or_hostile_server_fails_its_requests_and_cannot_hold_the_client(mode: str, error: str) -> None:
    shape = Workload(requests=2, output_tokens=(3, 3))
    started = time.monotonic()
    with completions_server(Behaviour(mode=mode)) as port:
        records = run_sync(endpoint(port), generate(shape, 1), shape, timeout_s=1.0 if mode == "hang" else 20.0)
    assert time.monotonic() - started < 15
    assert all(r.error.startswith(error) for r in records) and not any(r.ok for r in records), records
    assert summarize(records).failed == 2


def test_a_port_nothing_listens_on_is_each_requests_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    shape = Workload(requests=1)
    (record,) = run_sync(endpoint(port), generate(shape, 1), shape)
    assert not record.ok and record.error == f"nothing listens on port {port}", record.error


def test_the_request_body_is_an_openai_completion_with_the_tasks_extra_fields() -> None:
    shape = Workload(requests=1, extra_body={"ignore_eos": True})
    (request,) = generate(shape, 1)
    body = client.request_body(Endpoint(socket.socket, 1, model="m"), request, shape)
    assert body == {"model": "m", "prompt": request.prompt, "max_tokens": request.max_tokens, "temperature": 0.0,
                    "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True}


# ---------------------------------------------------------------- the task's service block
def test_a_service_block_is_read_with_its_defaults() -> None:
    from harness.serving.spec import DEFAULT_METRICS, load_service
    service = load_service({"start": "python3 server.py", "port": 8000, "env": {"WORKERS": 2},
                            "workload": {"requests": 8, "output_tokens": 4}, "quality": 0.05,
                            "metrics": ["ttft_p50", "output_throughput"], "primary": "e2el_p90"})
    assert (service.start, service.port, service.env, service.ready) == ("python3 server.py", 8000,
                                                                         (("WORKERS", "2"),), "/health")
    assert service.workload == Workload(requests=8, output_tokens=(4, 4)) and service.quality == 0.05
    assert service.reported == ("e2el_p90", "ttft_p50", "output_throughput")
    plain = load_service({"start": "srv", "port": 1, "quality": "exact"})
    assert plain.metrics == DEFAULT_METRICS and plain.quality == 0.0 and plain.primary == "output_throughput"


@pytest.mark.parametrize("raw, message", [
    ({"port": 8000}, "service.start should be the command that starts the server"),
    ({"start": "s", "port": 70000}, "service.port should be a TCP port (1-65535), got 70000"),
    ({"start": "s", "port": "80"}, "service.port should be a whole number >= 1, got '80'"),
    ({"start": "s", "port": 80, "ready": "health"}, "service.ready should be a path such as /health, or tcp"),
    ({"start": "s", "port": 80, "primary": "ttft"}, "service.primary should be one of ttft_mean, "),
    ({"start": "s", "port": 80, "metrics": ["tpot_p50", "speed"]}, "service.metrics should list some of "),
    ({"start": "s", "port": 80, "quality": 1.5}, "service.quality should be exact or a fraction of words"),
    ({"start": "s", "port": 80, "workload": {"requests": "many"}},
     "service.workload.requests should be a whole number, got 'many'"),
    ({"start": "s", "port": 80, "workload": [1]}, "service.workload should be a mapping"),
    ({"start": "s", "port": 80, "warmup": 2}, "unknown field service.warmup (known: start, port, "),
])
def test_a_bad_service_block_says_which_field_and_what_to_give(raw: dict, message: str) -> None:
    from harness.serving.spec import ServiceError, load_service
    with pytest.raises(ServiceError) as err:
        load_service(raw)
    assert str(err.value).startswith(message) and "\n" not in str(err.value), str(err.value)


def test_a_compute_process_left_on_the_sessions_gpus_is_killed_after_the_server() -> None:
    """grader.serving.end_compute with NVML's list of a GPU's compute processes read from a real process's
    state (no GPU here: what NVML would list is a real process that is still alive)."""
    import subprocess

    from harness.gpus import Gpu
    from harness.grader.serving import end_compute
    from harness.grader.states import StepFailed

    gpu = Gpu(0, "GPU-test", "test")
    worker = subprocess.Popen(["sleep", "60"])  # a worker the server's process group did not take along
    try:
        def listed(g: Gpu) -> list[int]:
            assert g is gpu
            return [worker.pid] if worker.poll() is None else []

        assert end_compute([gpu], listed) == [worker.pid]
        assert worker.wait(5) == -9  # killed from outside, after the grace a stopping worker gets
        assert end_compute([gpu], listed) == [] and end_compute([], listed) == []
    finally:
        worker.kill()
        worker.wait()
    with pytest.raises(StepFailed, match=r"GPU compute process\(es\) \[4194304\] outlived SIGKILL"):
        end_compute([gpu], lambda _g: [4194304], wait_s=0.2)  # (a pid no process has: listed all the same)

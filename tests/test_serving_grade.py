"""A service task graded end to end (harness.grader.grade over grader.serving): each state's server measured in
rounds on held-out seeds, GSO's verdicts on the primary metric, and servers that answer short or differently
not credited however fast they are.

The fixture task's server waits PREFILL_S before each response (sleep-timed: the verdicts do not depend on
this machine's speed); the expert cuts it from 0.2 s to 0.04 s, a weaker patch to 0.1 s."""
from __future__ import annotations

import shutil

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.tasks.folder import load_task
from harness.tasks.task import Task
from tests.conftest import write_task
from tests.docker_support import task_image
from tests.test_fence import rewrite

pytestmark = pytest.mark.docker
BASE = "PREFILL_S = 0.2\n\n\ndef answer(words, n):\n    return [words[i % len(words)] for i in range(n)]\n"
EXPERT = BASE.replace("0.2", "0.04")
SERVER = '''import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tiny


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = tiny.answer(body["prompt"].split(), body["max_tokens"])
        time.sleep(tiny.PREFILL_S)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [{"choices": [{"text": w + " "}]} for w in words]
        events.append({"choices": [], "usage": {"completion_tokens": len(words)}})
        for event in events:
            data = ("data: " + json.dumps(event) + "\\n\\n").encode()
            self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
        self.wfile.write(b"0\\r\\n\\r\\n")


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    path = write_task(tmp_path_factory.mktemp("svc"), "svcgrade", slow_src=BASE, fast_src=EXPERT, service={
        "start": "python3 server.py 8000", "port": 8000, "ready_timeout_s": 30, "request_timeout_s": 10,
        "workload": {"requests": 6, "prompt_tokens": [4, 8], "output_tokens": [4, 6], "warmup": 1},
        "primary": "e2el_p50", "metrics": ["ttft_p50", "output_throughput"], "quality_prompts": 3})
    (path / "repo" / "server.py").write_text(SERVER)
    shutil.rmtree(path / "tests")  # (a service task needs no timing tests)
    return load_task(path)


def patch(source: str) -> str:
    return rewrite("tiny/__init__.py", BASE, source)


def test_service_patches_are_graded_on_their_servers_and_hacks_are_not_credited(task: Task) -> None:
    short = EXPERT.replace("for i in range(n)]", "for i in range(n // 2)]")  # fast by answering half
    wrong = EXPERT.replace("words[i % len(words)]", "'same'")  # fast, but not the base's answers
    patches = [task.expert_patch, patch(BASE.replace("0.2", "0.1")), patch(short), patch(wrong), None]
    reports = grade_patches(task, patches, task_image(task), GradeConfig(rounds=2, bootstrap=200))
    gold, weaker, halved, other, empty = reports
    # (the expert's own patch against the expert: a tie, which a loaded machine may leave uncertain)
    assert gold["status"] == "passed" and gold["opt_base"], gold
    assert gold["opt_commit"] or gold["uncertain"]["opt_commit"], gold["serving"]["metrics"]["e2el_p50"]
    serving = gold["serving"]
    assert serving["primary"] == "e2el_p50" and set(serving["metrics"]) == {"e2el_p50", "ttft_p50",
                                                                            "output_throughput"}
    assert len(serving["seeds"]) == 2 and task.service is not None and task.service.visible_seed not in serving["seeds"]
    # the base waits 0.2 s per request, the expert 0.04 s: a speedup of several times on every metric
    for metric in serving["metrics"].values():
        assert metric["speedup"]["patch_base"] > 2.5 and len(metric["rounds"]["base"]) == 2, metric
    assert serving["metrics"]["e2el_p50"]["rounds"]["base"][0] >= 0.2
    assert serving["quality_differs"] == 0.0 and serving["visible_seed"]["value"] is not None
    assert all(run["completed"] == 6 and run["ready_s"] > 0 for run in serving["runs"]["patch"])
    assert weaker["status"] == "passed" and weaker["opt_base"] and not weaker["opt_commit"], weaker
    assert halved["status"] == "test_failed" and "shorter than asked" in halved["reason"], halved
    assert other["status"] == "test_failed" and "quality gate" in other["reason"], other
    assert "differ from the base's" in other["reason"]
    assert empty["status"] == "empty_patch"

"""The grader's load generator, for the agent: a copy of harness.serving (workload, client, metrics) and a small
command in the agent's sandbox, so it can measure its server the way the grader will, on its visible seed.

    python3 /opt/optrunner-serving/bench.py [--port P] [--seed S] [--requests N]

It prints the task's metrics for one run of the workload against a server already listening. The grader's
own seeds are drawn afresh for each grading session: this seed is the only one the agent can know.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.serving.spec import Service

KIT_DIR = "/opt/optrunner-serving"
MODULES = ("workload", "client", "metrics")
BENCH = '''"""Measure this task's server as the grader does, on the visible seed (one run of the task's workload).

usage: python3 {kit}/bench.py [--port P] [--seed S] [--requests N]; the server must already be listening."""
import argparse
import json
import socket
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from optrunner_serving.client import Endpoint, run_sync  # noqa: E402
from optrunner_serving.metrics import summarize  # noqa: E402
from optrunner_serving.workload import Workload, generate  # noqa: E402

spec = json.loads((HERE / "service.json").read_text())
parser = argparse.ArgumentParser(prog="bench.py")
parser.add_argument("--port", type=int, default=spec["port"])
parser.add_argument("--seed", type=int, default=spec["visible_seed"])
parser.add_argument("--requests", type=int, default=None, help="fewer requests than the task's, for a quick look")
args = parser.parse_args()
workload = Workload.from_dict(spec["workload"])
endpoint = Endpoint(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM), args.port, path=spec["endpoint"],
                    model=spec["model"])
records = run_sync(endpoint, generate(workload, args.seed, count=args.requests), workload,
                   spec["request_timeout_s"], generate(workload, args.seed + 1, count=workload.warmup))
metrics = summarize(records)
print(f"seed {{args.seed}}: {{metrics.completed}} completed, {{metrics.failed}} failed, {{metrics.short}} short")
for record in records:
    if record.error:
        print(f"first error: {{record.error}}")
        break
for name, value in sorted(metrics.values.items()):
    mark = " (primary)" if name == spec["primary"] else ""
    print(f"{{name}} {{value:.6g}}{{mark}}")
'''


def kit_files(service: Service) -> dict[str, bytes]:
    """The kit's files, by absolute path in the sandbox."""
    here = Path(__file__).resolve().parent
    files = {f"{KIT_DIR}/optrunner_serving/__init__.py": b'"""The grader\'s load generator (a copy)."""\n'}
    for name in MODULES:
        source = (here / f"{name}.py").read_text().replace("harness.serving.", "optrunner_serving.")
        files[f"{KIT_DIR}/optrunner_serving/{name}.py"] = source.encode()
    workload = dataclasses.asdict(service.workload)
    spec = {"port": service.port, "endpoint": service.endpoint, "model": service.model, "workload": workload,
            "visible_seed": service.visible_seed, "primary": service.primary,
            "request_timeout_s": service.request_timeout_s}
    files[f"{KIT_DIR}/service.json"] = json.dumps(spec, indent=2).encode()
    files[f"{KIT_DIR}/bench.py"] = BENCH.format(kit=KIT_DIR).encode()
    return files

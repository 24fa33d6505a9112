"""What the model gateway adds to each call of an installed agent (target: at most 5 ms, median).

Two figures per wire format, with a handler that answers at once (so the model's own time is out):
- inside the gateway: the time it logged for a call minus the handler's (`harness.models.gateway.bench`),
  over a 20-turn agent conversation, plain and streamed;
- as an agent sees it: the round trip of the same request from a client *inside* a Docker sandbox,
  through the port on the sandbox's own loopback (`Listenable`), minus the handler's time: the gateway,
  the translation, the sockets, and the network namespace's loopback, all included.

usage: python -m tests.bench.gateway [--calls 200]
"""
from __future__ import annotations

import argparse
import json
import statistics

from harness.models.gateway import Gateway
from harness.models.gateway.bench import PATHS, overhead_ms, request_body, trivial_reply
from harness.sandbox.interface import SandboxLimits
from harness.sandbox.providers import provider
from tests.docker_support import smoke_task, task_image

TARGET_MS = 5.0
PORT = 39217
# runs inside the sandbox: n requests on one kept-alive connection, each round trip in seconds
CLIENT = """
import http.client, json, sys, time
path, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = open('/tmp/request.json', 'rb').read()
conn = http.client.HTTPConnection('127.0.0.1', {port}, timeout=30)
times = []
for _ in range(n):
    started = time.perf_counter()
    conn.request('POST', path, body=body, headers={{'Content-Type': 'application/json',
                                                   'Authorization': 'Bearer ' + token}})
    response = conn.getresponse()
    response.read()
    times.append(time.perf_counter() - started)
    assert response.status == 200, response.status
print(json.dumps(times))
"""


def in_sandbox_ms(gateway: Gateway, box: object, wire: str, n: int) -> float:
    """Median (round trip seen inside the sandbox - handler time), milliseconds."""
    token = gateway.open(lambda _messages, _tools, _params: trivial_reply())
    box.write_file("/tmp/request.json", json.dumps(request_body(wire, 20)))  # type: ignore[attr-defined]
    box.write_file("/tmp/client.py", CLIENT.format(port=PORT))  # type: ignore[attr-defined]
    done = box.exec(f"python3 /tmp/client.py {PATHS[wire]} {token} {n}", timeout=600)  # type: ignore[attr-defined]
    calls = gateway.close(token)
    if done.exit_code != 0:
        raise RuntimeError(done.output[-2000:])
    trips = json.loads(done.output.strip().splitlines()[-1])
    handler = statistics.median(c.handler_s for c in calls)
    return (statistics.median(trips) - handler) * 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.gateway", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    docker = provider("docker")
    box = docker.start(task_image(smoke_task()), SandboxLimits())
    rows = []
    try:
        with Gateway() as gateway:
            gateway.listen()  # first: the host loopback port overhead_ms calls on
            listener = box.listen(PORT)  # type: ignore[attr-defined]
            gateway.serve(listener)
            for wire in PATHS:
                inside = overhead_ms(gateway, args.calls, wire=wire)
                streamed = overhead_ms(gateway, args.calls, wire=wire, stream=True)
                agent = in_sandbox_ms(gateway, box, wire, args.calls)
                rows.append((wire, inside, streamed, agent))
    finally:
        box.close()
    print(f"gateway overhead per call, median of {args.calls} (ms), 20-turn conversation, trivial handler")
    print(f"{'wire':<20} {'in gateway':>11} {'streamed':>9} {'from a sandbox':>15}  target <= {TARGET_MS:g} ms")
    ok = True
    for wire, inside, streamed, agent in rows:
        passed = max(inside, streamed, agent) <= TARGET_MS
        ok &= passed
        print(f"{wire:<20} {inside:>11.2f} {streamed:>9.2f} {agent:>15.2f}  {'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

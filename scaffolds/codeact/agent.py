"""The CodeAct scaffold: OpenHands CodeActAgent (v0.35) as the GSO paper ran it.

Faithful to upstream (see docs/scaffolds.md): four tools (`execute_bash` on a persistent shell,
`str_replace_editor`, `think`, `finish`); native function calling when the model has it, otherwise the
`<function=...>` text protocol with `</function` as stop sequence and results sent back as user messages
headed "EXECUTION RESULT of [NAME]:"; a reply without a tool call gets an automatic keep-working reply;
observations over 30,000 characters are cut in the middle; stuck detection ends the episode; `finish`
ends it with its message as the submission.

Counted as upstream counts iterations: `max_steps` is in agent actions (a reply with three tool calls uses
three; a reply without one uses one), and the limits (steps, cost, wall clock) are checked before every
action. On a context-window overflow the older half of the conversation is dropped (the system prompt and
the first user message kept) and the call is made again. A call with several commands on separate lines
is refused with an error, as are keys and input for a process without `is_input`. The resolved action
format (`native` function calling or the `text` protocol) and the condensations are recorded in the
episode's details; the per-action cap is the Recorder's action timeout.
"""
from __future__ import annotations

import functools
import json
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.models.model import Model
from harness.models.records import ModelReply, parse_arguments, tool_result
from harness.sandbox.interface import TESTBED, Sandbox
from harness.tasks.task import Task
from scaffolds.codeact.editor import Editor
from scaffolds.codeact.shell import PersistentShell
from scaffolds.codeact.tools import (STOP, TOOLS, ToolError, complete_reply, describe_tools, parse_text_call,
                                     single_command, validate)
from scaffolds.checkpoint import Checkpoints
from scaffolds.episode import Episode, EpisodeEnd, Observation, Stuck, Submitted
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from scaffolds.prompts import render_template, truncate_middle
from scaffolds.recorder import Recorder

PROMPTS = Path(__file__).parent / "prompts"
THINK_REPLY = "Your thought has been logged."


@dataclass(frozen=True)
class CodeActConfig:
    native_tools: bool | None = None  # None: whatever the model supports
    no_output_timeout_s: float = 30.0  # a command silent this long returns with exit -1 and keeps running
    observation_limit: int = 30_000  # characters; longer observations are cut in the middle
    editor_clip: int = 16_000  # characters of editor output
    hint: bool = False  # show the task's description (where the time goes) in the task prompt
    stuck_detection: bool = True  # upstream's default; off only for benchmarks that repeat one action
    condense_on_overflow: bool = True  # upstream: drop the older half of the history and go on


# ---------------------------------------------------------------- stuck detection
@dataclass(frozen=True)
class Event:
    """One entry of the history the stuck rules look at: an action and its observation, or a reply
    without a tool call (action None, its text in `message`)."""
    action: str | None
    observation: str = ""
    error: bool = False
    message: str = ""


def stuck_reason(history: Sequence[Event]) -> str | None:
    """Why the agent looks stuck, or None. Upstream's four rules, over the most recent events."""
    def acted(events: Sequence[Event]) -> bool:
        return all(e.action is not None for e in events)

    last4, last3, last6 = history[-4:], history[-3:], history[-6:]
    if len(last4) == 4 and acted(last4) and len({(e.action, e.observation) for e in last4}) == 1:
        return "the same action produced the same observation 4 times in a row"
    if len(last3) == 3 and acted(last3) and all(e.error for e in last3) and len({e.action for e in last3}) == 1:
        return "the same action failed with an error 3 times in a row"
    if len(last3) == 3 and all(e.action is None for e in last3) and len({e.message for e in last3}) == 1:
        return "the same message without a tool call was sent 3 times in a row"
    if len(last6) == 6 and acted(last6):
        pairs = [(e.action, e.observation) for e in last6]
        if len(set(pairs[0::2])) == 1 and len(set(pairs[1::2])) == 1 and pairs[0] != pairs[1]:
            return "the agent alternated between the same two actions for 6 steps"
    return None


# ---------------------------------------------------------------- the scaffold
@dataclass
class ActionResult:
    """What one tool call produced: the text the model is shown (before truncation), whether it failed,
    the shell's exit code, whether it was `finish` (`text` is then the submission) and how long it took."""
    text: str
    error: bool = False
    exit_code: int | None = None
    finished: bool = False
    duration_s: float = 0.0


class CodeActScaffold:
    name = "codeact"
    checkpoints = True  # its run takes `checkpoints` (scaffolds/checkpoint.py)

    def __init__(self, config: CodeActConfig | None = None, **options: Any) -> None:
        self.config = config or CodeActConfig(**options)

    def run(self, task: Task, sandbox: Sandbox, model: Model, limits: Limits,
            stop: threading.Event | None = None, checkpoints: Checkpoints | None = None) -> Episode:
        rec = Recorder(self.name, sandbox, model, limits, stop, count_actions=True, checkpoints=checkpoints)
        native = self.config.native_tools if self.config.native_tools is not None else model.native_tools
        rec.details["mode"] = "native" if native else "text"
        episode = _CodeActEpisodeState(self.config, rec, sandbox, native)
        episode.messages = self.first_messages(task, native, sandbox.workdir)
        if checkpoints is not None and checkpoints.resume is not None:
            rec.restore(checkpoints.resume)
            episode.restore(checkpoints.resume.state)
        rec.state_of = episode.state
        return rec.run(episode.loop, lambda: episode.messages, episode.shell.close)

    def first_messages(self, task: Task, native: bool, workdir: str = TESTBED) -> list[dict[str, Any]]:
        variables = task.prompt_vars(workdir)
        if not self.config.hint:
            variables["description"] = ""
        tools_text = "" if native else render_template(PROMPTS, "tools_text.j2", tools=describe_tools(),
                                                        workdir=workdir)
        system = render_template(PROMPTS, "system.j2", workdir=workdir, text_tools=not native, tools_text=tools_text)
        return [{"role": "system", "content": system},
                {"role": "user", "content": render_template(PROMPTS, "task.j2", **variables)}]


class _CodeActEpisodeState:
    """The state of one episode, and its loop: the conversation, the shell, the editor and the stuck history."""

    def __init__(self, config: CodeActConfig, rec: Recorder, sandbox: Sandbox, native: bool) -> None:
        self.config, self.rec, self.native = config, rec, native
        self.messages: list[dict[str, Any]] = []  # the whole trajectory, condensed parts included
        self.kept_from = 2  # after condensation the model sees messages[:2] + messages[kept_from:]
        self.history: list[Event] = []
        self.shell = PersistentShell(sandbox, config.no_output_timeout_s, sandbox.workdir)
        self.editor = Editor(sandbox, config.editor_clip, sandbox.workdir)
        self.resume_cwd: str | None = None  # the shell's directory at the checkpoint continued from

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the conversation and what the model sees of it, the stuck history, the
        editor's undo history and the shell's directory (not its variables or a command still running)."""
        return {"messages": self.messages, "kept_from": self.kept_from, "history": [asdict(e) for e in self.history],
                "editor_history": self.editor.history, "cwd": self.shell.cwd}

    def restore(self, state: dict[str, Any]) -> None:
        self.messages, self.kept_from = state["messages"], state["kept_from"]
        self.history = [Event(**e) for e in state["history"]]
        self.editor.history = state["editor_history"]
        self.resume_cwd = state["cwd"]

    def loop(self) -> None:
        self.shell.start()
        if self.resume_cwd and self.resume_cwd != self.shell.cwd:  # (nothing the model sees)
            self.shell.run(f"cd {shlex.quote(self.resume_cwd)}", False, 30)
        while True:
            self.step()

    def conversation(self) -> list[dict[str, Any]]:
        return self.messages[:2] + self.messages[self.kept_from:] if self.kept_from > 2 else self.messages

    def query(self) -> ModelReply:
        """One model call; on a context-window overflow, condense and call again."""
        while True:
            try:
                return self.rec.query(self.conversation(), tools=TOOLS if self.native else None,
                                      stop=None if self.native else [STOP])
            except EpisodeEnd as end:
                if end.reason != ExitReason.CONTEXT_WINDOW or not self.config.condense_on_overflow \
                        or not self.condense():
                    raise

    def condense(self) -> bool:
        """Drop the older half of what the model sees after the first user message, starting the kept part
        at an assistant turn so no tool result loses its call. False when nothing is left to drop."""
        start = self.kept_from
        rest = len(self.messages) - start
        if rest <= 0:
            return False
        cut = start + rest // 2
        while cut < len(self.messages) and self.messages[cut].get("role") != "assistant":
            cut += 1
        self.kept_from = max(cut, start + 1)
        self.rec.details.setdefault("condensations", []).append(
            {"step": len(self.rec.steps), "dropped_messages": self.kept_from - start})
        return True

    def step(self) -> None:
        reply = self.query()
        if self.native:
            message = dict(reply.message)
            self.messages.append(message)
            if not reply.tool_calls:
                return self.no_call(reply.content)
            for i, call in enumerate(reply.tool_calls):  # several calls in one reply run in order
                self.rec.before_action()  # each is an iteration: the limits hold before every one
                arguments: dict[str, Any] | str
                try:
                    parsed = parse_arguments(call)
                except ValueError as exc:
                    arguments = call.arguments
                    result = ActionResult(f"ERROR: {exc}", error=True)
                    # Invalid JSON must not go back to the provider: some refuse the whole next request.
                    message["tool_calls"] = [dict(c) for c in message["tool_calls"]]
                    message["tool_calls"][i] = {**message["tool_calls"][i],
                                                "function": {"name": call.name, "arguments": "{}"}}
                else:
                    arguments = parsed
                    result = self.execute(call.name, parsed)
                self.deliver(call.name, arguments, result, functools.partial(tool_result, call))
            return None
        content = complete_reply(reply.content)
        self.messages.append({**reply.message, "content": content})  # reasoning fields go back too
        text_call = parse_text_call(content)
        if text_call is None:
            return self.no_call(content)
        name = text_call.name
        self.deliver(name, text_call.arguments, self.execute(name, text_call.arguments),
                     lambda text: {"role": "user", "content": f"EXECUTION RESULT of [{name}]:\n{text}"})
        return None

    def no_call(self, content: str) -> None:
        self.messages.append({"role": "user", "content": render_template(PROMPTS, "keep_working.j2")})
        self.history.append(Event(None, message=content))
        self.check_stuck()

    def deliver(self, name: str, arguments: dict[str, Any] | str, result: ActionResult,
                answer: Callable[[str], dict[str, Any]]) -> None:
        """Show the (middle-truncated) result to the model and log it; end the episode on `finish` or when
        the agent is stuck."""
        action = {"tool": name, "arguments": arguments}
        if result.finished:
            self.rec.act(action, Observation("", 0, None, result.duration_s))
            raise Submitted(result.text)
        shown = truncate_middle(result.text, self.config.observation_limit)
        self.messages.append(answer(shown))
        self.rec.act(action, Observation(shown, len(result.text), result.exit_code, result.duration_s))
        self.history.append(Event(json.dumps([name, arguments], sort_keys=True), shown, result.error))
        self.check_stuck()

    def check_stuck(self) -> None:
        reason = stuck_reason(self.history) if self.config.stuck_detection else None
        if reason:
            raise Stuck(f"stuck: {reason}")

    # ---------------------------------------------------------------- tools
    def execute(self, name: str, arguments: dict[str, Any]) -> ActionResult:
        started = time.monotonic()
        try:
            params = validate(name, arguments)
            if name == "execute_bash":
                result = self.bash(params["command"], params.get("is_input", "false") == "true")
            elif name == "str_replace_editor":
                result = ActionResult(self.editor(params))
            elif name == "think":
                result = ActionResult(THINK_REPLY)
            else:  # finish
                result = ActionResult(params["message"], finished=True)
        except ToolError as exc:
            result = ActionResult(f"ERROR: {exc}", error=True)
        result.duration_s = time.monotonic() - started
        return result

    def bash(self, command: str, is_input: bool) -> ActionResult:
        if not is_input and command.strip():
            single_command(command)
        result = self.shell.run(command, is_input, self.rec.action_timeout())
        if result.error:
            return ActionResult(f"ERROR: {result.output}", error=True, exit_code=result.exit_code)
        parts = [result.output.rstrip("\n")] if result.output.strip() else []
        if result.note:
            parts.append(result.note)
        parts.append(f"[Current working directory: {result.cwd}]")
        parts.append(f"[Command finished with exit code {result.exit_code}]" if not result.running
                     else "[Command still running; exit code -1]")
        return ActionResult("\n".join(parts), exit_code=result.exit_code)

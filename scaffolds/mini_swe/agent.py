"""mini-swe-agent style scaffold: bash only, one fresh `bash -lc` per command, the message list is the
trajectory.

Faithful to mini-swe-agent 2.x (see docs/scaffolds.md):
- text mode: exactly one ```mswea_bash_command block per reply; tool mode: one `bash` tool, several calls
  run in order;
- a malformed reply is dropped from the history, an error message takes its place, the call still counts
  as a step, and 3 format errors in a row end the run;
- finish: a command whose output's first line is the sentinel and whose exit code is 0; the rest of the
  output is the submission;
- output over 10,000 chars shows the first and last 5,000; a command timeout is not fatal (code -1);
- step, cost and wall-clock limits are checked before each model call (by the Recorder);
- the patch: by default the container's diff, as for the other scaffolds; with `patch="submission"`
  upstream's rule: the submitted text is the patch (the model is told to submit `git diff` output), and
  an episode that ends any other way (a limit, format errors, an overflow) has an empty patch. The
  episode's details say which (`patch_source`).
Commands start through one launcher loop in the container instead of a `docker exec` each
(`harness.sandbox.processes`): the agent sees the same fresh process per command, at a fraction of the cost.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.models.model import Model
from harness.models.records import ModelReply, ToolCall, parse_arguments, tool_result
from harness.sandbox.interface import TESTBED, Sandbox
from harness.sandbox.processes import FreshProcesses
from harness.tasks.task import Task
from scaffolds.checkpoint import Checkpoints
from scaffolds.episode import Episode, FormatErrors, Observation, Submitted
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from scaffolds.prompts import render_template
from scaffolds.recorder import Recorder

PROMPTS = Path(__file__).parent / "prompts"
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
ACTION_RE = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)
# What upstream sets for every command, so pagers and progress bars never block or flood the output.
COMMAND_ENV = {"PAGER": "cat", "MANPAGER": "cat", "LESS": "-R", "PIP_PROGRESS_BAR": "off", "TQDM_DISABLE": "1"}
BASH_TOOL = {"type": "function", "function": {
    "name": "bash",
    "description": "Run one shell command in a fresh `bash -lc` process and return its exit code and output.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "The command."}},
                   "required": ["command"]},
}}


@dataclass(frozen=True)
class MiniSweConfig:
    mode: str = "text"  # "text" (mswea_bash_command blocks) or "tool" (the bash tool)
    prompt: str = "default"  # "default" or "aggressive" (AutoLab's measure-edit-measure variant)
    command_timeout_s: float = 60.0
    max_format_errors: int = 3
    output_limit: int = 10_000
    hint: bool = False  # show the task's bottleneck description
    patch: str = "diff"  # "diff": the container's diff; "submission": upstream's rule (the submitted patch)

    def __post_init__(self) -> None:
        if self.mode not in ("text", "tool"):
            raise ValueError(f"mini_swe mode must be 'text' or 'tool', not {self.mode!r}")
        if self.prompt not in ("default", "aggressive"):
            raise ValueError(f"mini_swe prompt must be 'default' or 'aggressive', not {self.prompt!r}")
        if self.patch not in ("diff", "submission"):
            raise ValueError(f"mini_swe patch must be 'diff' or 'submission', not {self.patch!r}")


class FormatError(Exception):
    """A reply the scaffold cannot act on; its message says what was wrong."""


class MiniSweScaffold:
    name = "mini_swe"
    checkpoints = True  # its run takes `checkpoints` (scaffolds/checkpoint.py)

    def __init__(self, config: MiniSweConfig | None = None, **options: Any) -> None:
        self.config = config or MiniSweConfig(**options)

    # ---------------------------------------------------------------- prompts
    def _render(self, template: str, **variables: Any) -> str:
        return render_template(PROMPTS, template, mode=self.config.mode, sentinel=SENTINEL,
                               submit_patch=self.config.patch == "submission", **variables)

    def _first_messages(self, task: Task, workdir: str = TESTBED) -> list[dict[str, Any]]:
        variables = task.prompt_vars(workdir)
        if not self.config.hint:
            variables["description"] = ""
        system = "system_aggressive.j2" if self.config.prompt == "aggressive" else "system.j2"
        return [{"role": "system", "content": self._render(system, workdir=workdir,
                                                            command_timeout=f"{self.config.command_timeout_s:g}")},
                {"role": "user", "content": self._render("task.j2", **variables)}]

    # ---------------------------------------------------------------- the loop
    def run(self, task: Task, sandbox: Sandbox, model: Model, limits: Limits,
            stop: threading.Event | None = None, checkpoints: Checkpoints | None = None) -> Episode:
        rec = Recorder(self.name, sandbox, model, limits, stop, checkpoints=checkpoints)
        rec.details["patch_source"] = "submission" if self.config.patch == "submission" else "container"
        # its whole state between steps: the conversation and the format errors in a row (commands are fresh
        # processes: nothing of them outlives a step)
        state: dict[str, Any] = {"messages": self._first_messages(task, sandbox.workdir), "format_errors": 0}
        if checkpoints is not None and checkpoints.resume is not None:
            rec.restore(checkpoints.resume)
            state = checkpoints.resume.state
        rec.state_of = lambda: state
        procs = FreshProcesses(sandbox, COMMAND_ENV)
        episode = rec.run(lambda: self._loop(rec, procs, state), lambda: state["messages"], procs.close)
        if self.config.patch == "submission":  # upstream: only a submission carries a patch
            episode.patch = episode.submission if episode.exit_reason == ExitReason.SUBMITTED else ""
        return episode

    def _loop(self, rec: Recorder, procs: FreshProcesses, state: dict[str, Any]) -> None:
        tools = [BASH_TOOL] if self.config.mode == "tool" else None
        messages = state["messages"]
        while True:
            reply = rec.query(messages, tools=tools)
            try:
                commands = self._parse(reply)
            except FormatError as err:
                # The bad reply is not kept: the model sees only the error, and the call still counted.
                state["format_errors"] += 1
                rec.act({"format_error": str(err), "reply": reply.content}, Observation(str(err), len(str(err))))
                if state["format_errors"] >= self.config.max_format_errors:
                    raise FormatErrors(f"{state['format_errors']} format errors in a row: {err}") from None
                messages.append({"role": "user", "content": self._render("format_error.j2", problem=str(err))})
                continue
            state["format_errors"] = 0
            messages.append(reply.message)
            for call_id, command in commands:
                shown = self._execute(rec, procs, command)
                if call_id is None:
                    messages.append({"role": "user", "content": shown})
                else:
                    messages.append(tool_result(ToolCall(call_id, "bash", ""), shown))

    def _parse(self, reply: ModelReply) -> list[tuple[str | None, str]]:
        """The commands of a reply as (tool call id or None, command)."""
        if self.config.mode == "text":
            blocks = ACTION_RE.findall(reply.content)
            if len(blocks) != 1:
                raise FormatError(f"found {len(blocks)} mswea_bash_command blocks, expected exactly one.")
            return [(None, blocks[0].strip())]
        if not reply.tool_calls:
            raise FormatError("the reply called no tool.")
        commands: list[tuple[str | None, str]] = []
        for call in reply.tool_calls:
            if call.name != "bash":
                raise FormatError(f"unknown tool {call.name!r}; the only tool is `bash`.")
            try:
                command = parse_arguments(call).get("command")
            except ValueError as err:
                raise FormatError(str(err)) from None
            if not isinstance(command, str) or not command.strip():
                raise FormatError("the bash tool needs a non-empty string `command`.")
            commands.append((call.id, command))
        return commands

    def _execute(self, rec: Recorder, procs: FreshProcesses, command: str) -> str:
        timeout = min(self.config.command_timeout_s, rec.action_timeout())
        result = procs.run(command, timeout)
        returncode = -1 if result.timed_out else result.exit_code
        output = result.output
        lines = output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SENTINEL and returncode == 0:
            rec.act({"command": command}, Observation("(submitted)", len(output), returncode, result.duration))
            raise Submitted("".join(lines[1:]))
        shown = self._observation(output, returncode, result.timed_out, timeout)
        rec.act({"command": command}, Observation(shown, len(output), returncode, result.duration))
        return shown

    def _observation(self, output: str, returncode: int, timed_out: bool, timeout: float) -> str:
        limit = self.config.output_limit
        half = limit // 2
        variables: dict[str, Any] = {"returncode": returncode, "timed_out": timed_out, "timeout": f"{timeout:g}",
                                     "output": output, "elided": 0, "cut": False}
        if len(output) >= limit:  # upstream keeps the whole output only when it is shorter than the limit
            variables.update(cut=True, elided=len(output) - 2 * half, total=len(output), half=half,
                             head=output[:half], tail=output[-half:])
        return self._render("observation.j2", **variables)


"""The terminus scaffold (after terminus-2, Harbor's reference agent): a model typing into a terminal.

No tools: the model replies in plain text (JSON, or the XML variant) with an analysis, a plan, a list
of keystrokes with a wait after each, and `task_complete`. The keystrokes go into a tmux session in
the sandbox; what the terminal printed comes back as the next user message. The whole prompt is
one first user message (task + reply format + terminal state); there is no system message.

- A malformed reply gets an error message and runs nothing (the call still counts); a repaired one
  runs, with the repairs listed in the next observation. A reply cut off at the output-token limit
  (`finish_reason == "length"`) runs nothing either, as in terminus-2: the model is told to send less,
  unless (XML only) a complete response can be cut out of it.
- Completion takes two consecutive `task_complete: true` replies: the first is answered with a
  confirmation question (terminal state included), a false in between starts over.
- Context: the prompt size is tracked (the last call's input tokens + an estimate of what was added
  since); when free context drops under `handoff_free_tokens`, or the provider reports a context
  overflow (the latest exchanges are dropped first), the work is handed to a fresh conversation:
  summary, the fresh agent's questions, the old conversation's answers.
- No step limit of its own; the recorder enforces the runner's limits, waits never outlast the
  wall clock. The returned messages are every message of every conversation, in call order, so the
  assistant turns replay exactly.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness.models.loader import litellm_module
from harness.models.model import Model
from harness.sandbox.interface import TESTBED, Sandbox
from harness.tasks.task import Task
from scaffolds.checkpoint import Checkpoints
from scaffolds.episode import Episode, EpisodeEnd, Observation, Submitted
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from scaffolds.prompts import render_template
from scaffolds.recorder import Recorder
from scaffolds.terminus.parsing import Command, ParseError, Reply, parse_reply
from scaffolds.terminus.tmux import (HEIGHT, HISTORY_LINES, WIDTH, Capture, TmuxSession, limit_output, new_output,
                                     terminal_text)

PROMPTS = Path(__file__).parent / "prompts"
COMPILED = {"c", "cpp", "cython", "rust"}
INLINE_WAIT_S = 5.0  # shorter waits happen inside the container (one round trip); longer ones here, interruptibly
CHARS_PER_TOKEN = 4  # rough estimate for text the provider has not counted yet


@dataclass
class TerminusConfig:
    ZERO_ALLOWED: ClassVar[tuple[str, ...]] = ("default_duration_s", "handoff_free_tokens")

    format: str = "json"  # "json" | "xml"
    default_duration_s: float = 1.0
    max_duration_s: float = 60.0  # AutoLab raised it to 1200 for long tasks
    output_limit_bytes: int = 10_000
    handoff_free_tokens: int = 8_000
    history_lines: int = HISTORY_LINES  # terminus-2's pane keeps 2,000; more shows a huge output's head and tail
    context_window: int | None = None  # None: litellm's max_input_tokens for the model (if it knows it)
    hint: bool = False  # include task.description as a hint in the task prompt

    def __post_init__(self) -> None:
        if self.format not in ("json", "xml"):
            raise ValueError(f"terminus format must be 'json' or 'xml', not {self.format!r}")


class TerminusScaffold:
    name = "terminus"
    checkpoints = True  # its run takes `checkpoints` (scaffolds/checkpoint.py)

    def __init__(self, config: TerminusConfig | None = None) -> None:
        self.config = config or TerminusConfig()

    def run(self, task: Task, sandbox: Sandbox, model: Model, limits: Limits,
            stop: threading.Event | None = None, checkpoints: Checkpoints | None = None) -> Episode:
        rec = Recorder(self.name, sandbox, model, limits, stop, checkpoints=checkpoints)
        episode = _TerminusEpisodeState(self.config, task, rec,
                                        TmuxSession(sandbox, history_lines=self.config.history_lines),
                                        _context_window(self.config, model))
        if checkpoints is not None and checkpoints.resume is not None:
            rec.restore(checkpoints.resume)
            episode.resumed = checkpoints.resume.state
        rec.state_of = episode.state
        return rec.run(episode.loop, lambda: episode.trajectory, episode.term.close)


def _context_window(config: TerminusConfig, model: Model) -> int | None:
    if config.context_window is not None:
        return config.context_window
    try:
        return int(litellm_module().get_model_info(model=model.config.name)["max_input_tokens"])
    except Exception:  # unknown model: no proactive hand-off, a provider overflow still hands off
        return None


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _estimate(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


class _TerminusEpisodeState:
    """The state of one episode: the live conversation, the full trajectory, the terminal."""

    def __init__(self, config: TerminusConfig, task: Task, rec: Recorder, term: TmuxSession,
                 context_window: int | None) -> None:
        self.config, self.task, self.rec, self.term = config, task, rec, term
        self.workdir = term.sandbox.workdir if term is not None else TESTBED  # prompts alone need no terminal
        self.context_window = context_window
        self.conversation: list[dict[str, Any]] = []  # what the next call sends
        self.trajectory: list[dict[str, Any]] = []  # every message of every conversation, in order
        self.previous: str | None = None  # the terminal buffer at the last read
        self.tokens = 0  # estimated size of `conversation`
        self.turns_since_handoff = 0
        self.pending_completion = False  # the last reply said task_complete: the next must confirm it
        self.in_main = False  # in a main-loop call (a checkpoint's consistent point; not inside a hand-off)
        self.resumed: dict[str, Any] | None = None  # the state of the checkpoint this episode continues

    def state(self) -> dict[str, Any] | None:
        """What a checkpoint keeps: both conversations, the counters and the shell's directory. Not kept: the
        terminal itself (its screen, scrollback, variables and any command still running); a continued episode
        starts a fresh terminal there and reads its next output against that."""
        if not self.in_main:
            return None
        return {"conversation": self.conversation, "trajectory": self.trajectory, "tokens": self.tokens,
                "turns_since_handoff": self.turns_since_handoff, "pending_completion": self.pending_completion,
                "cwd": self.term.cwd()}

    # -- prompts
    def render(self, name: str, **variables: Any) -> str:
        return render_template(PROMPTS, name, **variables)

    def task_prompt(self) -> str:
        variables = self.task.prompt_vars(self.workdir)
        compiled = bool(COMPILED & set(variables["languages"]))
        return self.render("task.j2", compiled=compiled, hint=self.config.hint, **variables)

    def format_prompt(self) -> str:
        return self.render(f"format_{self.config.format}.j2", width=WIDTH, height=HEIGHT, workdir=self.workdir,
                           max_duration=f"{self.config.max_duration_s:g}")

    def add(self, message: dict[str, Any]) -> None:
        self.conversation.append(message)
        self.trajectory.append(message)
        self.tokens += _estimate(message["content"])

    # -- the loop
    def loop(self) -> None:
        state = self.resumed
        first = self.term.start(timeout=self.rec.action_timeout(), cwd=state.get("cwd") if state else None)
        self.previous = first.buffer
        if state is not None:  # a checkpoint's conversations; the fresh terminal is read against from here
            # one empty prompt line first: terminus-2's rule reads a multi-line previous read from its last line
            # break, as it would have in the terminal that had history (a one-line read: from where it was found)
            self.previous = self.term.send("Enter", 0.3, timeout=30).buffer
            self.conversation, self.trajectory = state["conversation"], state["trajectory"]
            self.tokens, self.turns_since_handoff = state["tokens"], state["turns_since_handoff"]
            self.pending_completion = state["pending_completion"]
        else:
            self.add(_user(self.render("first.j2", task=self.task_prompt(), reply_format=self.format_prompt(),
                                       terminal=limit_output(terminal_text(None, first),
                                                             self.config.output_limit_bytes))))
        while True:
            if self.needs_handoff():
                self.hand_off()
            text, cut_off = self.query_main()
            self.turns_since_handoff += 1
            if cut_off:
                salvaged = self.salvage(text)
                if salvaged is None:
                    self.add(_user(self.render("length_error.j2")))
                    continue
                text = salvaged
            try:
                reply = parse_reply(text, self.config.format, self.config.default_duration_s)
            except ParseError as err:  # nothing runs; the model is asked again
                self.add(_user(self.render("parse_error.j2", error=str(err).rstrip("."),
                                           format_name=self.config.format.upper())))
                continue
            terminal = self.execute(reply.commands)
            if reply.task_complete and self.pending_completion:
                raise Submitted("the agent confirmed the task as complete", submission="")
            self.pending_completion = reply.task_complete
            self.add(_user(self.observation(reply, terminal)))

    def observation(self, reply: Reply, terminal: str) -> str:
        if reply.task_complete:
            complete = '"task_complete": true' if self.config.format == "json" else \
                "<task_complete>true</task_complete>"
            text = self.render("confirm.j2", terminal=terminal, complete_true=complete)
        else:
            text = terminal
        return self.render("observation.j2", warnings=reply.warnings, terminal=text)

    def salvage(self, text: str) -> str | None:
        """A complete XML response inside a reply cut off by the token limit, or None (never for JSON)."""
        if self.config.format != "xml":
            return None
        end = text.find("</commands>")
        end = text.find("</response>", end) if end >= 0 else -1
        if end < 0:
            return None
        clean = text[:end + len("</response>")]
        try:
            parse_reply(clean, "xml", self.config.default_duration_s)
        except ParseError:
            return None
        return clean

    def query_main(self) -> tuple[str, bool]:
        """One step of the agent: its text, and whether the token limit cut it off. A context overflow
        drops the latest exchanges, hands off, retries."""
        while True:
            self.in_main = True
            try:
                reply = self.rec.query(self.conversation)
            except EpisodeEnd as end:
                if end.reason != ExitReason.CONTEXT_WINDOW or not self.drop_latest():
                    raise
                self.in_main = False
                self.hand_off()
                continue
            finally:
                self.in_main = False
            self.add({**reply.message, "content": reply.content})  # reasoning fields go back too
            self.tokens = reply.record.input_tokens + reply.record.output_tokens  # the provider's count
            return reply.content, reply.record.finish_reason == "length"

    # -- the terminal
    def execute(self, commands: list[Command]) -> str:
        """Run the commands in order (each recorded with its own output) and return what the model
        is shown: everything the terminal printed since the previous read, limited in size."""
        before = self.previous
        capture: Capture | None = None
        for command in commands:
            capture = self.send(command, capture.buffer if capture else before)
        if capture is None:
            capture = self.term.capture()
        self.previous = capture.buffer
        return limit_output(terminal_text(before, capture), self.config.output_limit_bytes)

    def send(self, command: Command, previous: str | None) -> Capture:
        wait = min(command.duration, self.config.max_duration_s)
        left = self.rec.time_left()
        if left is not None:
            wait = max(0.0, min(wait, left))  # never wait past the wall clock
        started = time.monotonic()
        timeout = self.rec.action_timeout()
        if wait <= INLINE_WAIT_S:
            capture = self.term.send(command.keystrokes, wait, timeout=timeout)
        else:
            self.term.send_only(command.keystrokes, timeout=timeout)
            self.rec.stop.wait(wait)  # an outside stop cuts a long wait short
            capture = self.term.capture(timeout=timeout)
        new = new_output(previous, capture.buffer) if capture.complete else None
        shown = new if new is not None else capture.screen
        self.rec.act({"keystrokes": command.keystrokes, "duration": command.duration, "waited_s": round(wait, 3)},
                     Observation(text=limit_output(shown, self.config.output_limit_bytes), full_chars=len(shown),
                                 duration_s=time.monotonic() - started))
        return capture

    # -- context management
    def needs_handoff(self) -> bool:
        if self.context_window is None or self.turns_since_handoff == 0:
            return False  # right after a hand-off the conversation cannot get any smaller
        return self.context_window - self.tokens < self.config.handoff_free_tokens

    def drop_latest(self) -> bool:
        """Drop the latest exchanges (an assistant reply and the observation after it) until the
        estimate leaves `handoff_free_tokens` free; False when only the first prompt is left."""
        if len(self.conversation) < 3:
            return False
        while len(self.conversation) >= 3:
            del self.conversation[-2:]
            self.tokens = sum(_estimate(m["content"]) for m in self.conversation)
            if self.context_window is None or self.context_window - self.tokens >= self.config.handoff_free_tokens:
                break
        return True

    def ask(self, messages: list[dict[str, Any]]) -> str:
        """A hand-off call: its request is already in the trajectory, the reply goes there too."""
        reply = self.rec.query(messages)
        self.trajectory.append(_assistant(reply.content))
        return reply.content

    def ask_old(self, request: str, earlier: tuple[dict[str, Any], ...] = ()) -> str:
        """Ask the outgoing conversation; on overflow drop its latest exchanges and ask again."""
        self.trajectory.append(_user(request))
        while True:
            try:
                return self.ask(self.conversation + list(earlier) + [_user(request)])
            except EpisodeEnd as end:
                if end.reason != ExitReason.CONTEXT_WINDOW or not self.drop_latest():
                    raise

    def hand_off(self) -> None:
        """Summary from the old conversation, questions from a fresh one, answers from the old one;
        then the fresh conversation goes on with task + summary + Q&A + the terminal state."""
        summary_request = self.render("summary_request.j2")
        summary = self.ask_old(summary_request)
        questions_prompt = self.render("handoff_questions.j2", task=self.task_prompt(),
                                       reply_format=self.format_prompt(), summary=summary)
        self.trajectory.append(_user(questions_prompt))
        questions = self.ask([_user(questions_prompt)])  # a fresh conversation
        answers = self.ask_old(self.render("handoff_answer_request.j2", questions=questions),
                               (_user(summary_request), _assistant(summary)))
        terminal = self.execute([])
        self.conversation, self.tokens = [], 0
        for message in (_user(questions_prompt), _assistant(questions)):
            self.conversation.append(message)  # already in the trajectory
            self.tokens += _estimate(message["content"])
        self.add(_user(self.render("handoff_resume.j2", answers=answers, terminal=terminal)))
        self.turns_since_handoff = 0

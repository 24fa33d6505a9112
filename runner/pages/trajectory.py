"""A rollout's trajectory page: its steps in order, what the model said and did and was shown, the diff
as it grew, the final patch, the grading report and the judges' verdicts.

`trajectory_view` is pure (stored dicts in, a view for the template out), so it can be tested and timed
without a run directory.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.grader.patch_paths import sections


@dataclass
class ObservationView:
    text: str  # what the model was shown
    full_chars: int  # the output's size before it was cut
    exit_code: int | None
    duration_s: float

    @property
    def shown_chars(self) -> int:
        return len(self.text)

    @property
    def truncated(self) -> bool:
        return self.full_chars > self.shown_chars


@dataclass
class StepView:
    index: int
    seconds: float | None
    call: dict[str, Any] | None
    message: str
    reasoning: str
    actions: list[tuple[str, str]]  # (tool, what it was given)
    observations: list[ObservationView]
    diff: str | None  # the files of the diff snapshot that changed since the previous snapshot
    unchanged_files: list[str] = field(default_factory=list)  # the snapshot's other files
    diff_unchanged: bool = False  # a snapshot was taken and nothing changed


@dataclass
class TestView:
    name: str
    patch_base: float | None
    patch_commit: float | None
    spread: tuple[float, float] | None  # patch vs expert, per round: 10th..90th percentile


@dataclass
class TrajectoryView:
    task: str
    rollout: int
    record: dict[str, Any]
    prompt: list[dict[str, str]]  # the messages before the first reply (system prompt, task)
    steps: list[StepView]
    unpaired_replies: int  # replies that could not be matched to a step record (shown apart)
    patch: str
    grading: dict[str, Any] | None
    tests: list[TestView]
    judgements: dict[str, dict[str, Any]]
    details: dict[str, Any] = field(default_factory=dict)


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def reasoning_of(message: dict[str, Any]) -> str:
    parts = [text_of(message.get("reasoning_content"))]
    parts += [str(b.get("thinking", "")) for b in message.get("thinking_blocks") or [] if isinstance(b, dict)]
    return "\n".join(p for p in parts if p)


def action_text(action: dict[str, Any]) -> tuple[str, str]:
    """An action as the agent issued it, (tool, text): a shell command as is, anything else as `key: value`
    lines (codeact's tool calls carry the tool's name and arguments; mini_swe's just the command)."""
    tool, arguments = "", action
    if isinstance(action.get("arguments"), dict):
        tool, arguments = str(action.get("tool") or action.get("name") or ""), action["arguments"]
    if "command" in arguments and tool in ("", "execute_bash", "bash"):
        rest = {k: v for k, v in arguments.items() if k != "command" and v not in ("false", False, None, "")}
        return tool, "\n".join([str(arguments["command"]), *_lines(rest)])
    return tool, "\n".join(_lines(arguments))


def _lines(values: dict[str, Any]) -> list[str]:
    return [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in values.items()]


def _replies(messages: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    prompt = [{"role": str(m.get("role")), "text": text_of(m.get("content"))} for m in messages[:first]]
    replies = [m for m in messages[first:] if m.get("role") == "assistant"]
    return prompt, replies


def _reply_text(message: dict[str, Any]) -> str:
    text = text_of(message.get("content"))
    calls = message.get("tool_calls") or []
    if calls and not text:
        text = "(tool calls only)"
    return text


def file_chunks(patch: str) -> dict[str, str]:
    """A unified diff per file, keyed by its `diff --git a/X b/X` line ('' for text before the first)."""
    return {(s.splitlines()[0].strip() if s.startswith("diff --git ") else ""): s for s in sections(patch)}


def _file_name(header: str) -> str:
    return header.split(" b/", 1)[1] if " b/" in header else header


def steps_view(trajectory: dict[str, Any]) -> tuple[list[dict[str, str]], list[StepView], int]:
    """The steps, each with its reply; a diff snapshot shows only the files that changed since the last one
    (a long trajectory would otherwise repeat the whole diff at every snapshot)."""
    prompt, replies = _replies(trajectory.get("messages") or [])
    out: list[StepView] = []
    last: dict[str, str] = {}
    records = trajectory.get("step_records") or []
    for n, step in enumerate(records):
        reply = replies[n] if n < len(replies) else {}
        started, ended = step.get("started_at"), step.get("ended_at")
        snapshot = step.get("diff_snapshot")
        diff, unchanged = None, []
        if snapshot is not None:
            chunks = file_chunks(snapshot)
            changed = [h for h in chunks if last.get(h) != chunks[h]]
            dropped = [h for h in last if h not in chunks]  # a file whose change was undone
            diff = "".join(chunks[h] for h in changed) + "".join(f"{h}\n(no longer changed)\n" for h in dropped)
            unchanged = [_file_name(h) for h in chunks if h not in changed]
            last = chunks
        out.append(StepView(
            index=int(step.get("index", n)),
            seconds=(ended - started) if started is not None and ended is not None else None,
            call=step.get("call"), message=_reply_text(reply), reasoning=reasoning_of(reply),
            actions=[action_text(a) for a in step.get("actions") or []],
            observations=[ObservationView(text=o.get("text", ""),
                                          full_chars=int(o.get("full_chars", len(o.get("text", "")))),
                                          exit_code=o.get("exit_code"), duration_s=float(o.get("duration_s", 0.0)))
                          for o in step.get("observations") or []],
            diff=diff or None, unchanged_files=unchanged, diff_unchanged=snapshot is not None and not diff))
    return prompt, out, max(0, len(replies) - len(records))


def tests_view(report: dict[str, Any]) -> list[TestView]:
    """Per test: GSO's speedups and the spread of the patch-vs-expert ratio over the rounds."""
    names = report.get("tests") or []
    speedups = report.get("per_test_speedups") or {}
    if isinstance(speedups, list):  # older reports: patch vs base only
        speedups = {"patch_base": speedups}
    rounds = report.get("round_times") or {}
    out = []
    for i, name in enumerate(names):
        def pick(key: str) -> float | None:  # called within this iteration only
            values = speedups.get(key) or []
            return float(values[i]) if i < len(values) and values[i] is not None else None  # noqa: B023
        spread = None
        patch, commit = (rounds.get("patch") or {}).get(name), (rounds.get("commit") or {}).get(name)
        if patch and commit and len(patch) == len(commit):
            ratios = np.asarray(commit, dtype=float) / np.asarray(patch, dtype=float)
            spread = (float(np.percentile(ratios, 10)), float(np.percentile(ratios, 90)))
        out.append(TestView(name, pick("patch_base"), pick("patch_commit"), spread))
    return out


def trajectory_view(record: dict[str, Any], trajectory: dict[str, Any] | None, grading: dict[str, Any] | None,
                    judgements: dict[str, dict[str, Any]]) -> TrajectoryView:
    prompt, steps, unpaired = steps_view(trajectory or {})
    return TrajectoryView(
        task=str(record.get("instance_id")), rollout=int(record.get("rollout", 0)), record=record,
        prompt=prompt, steps=steps, unpaired_replies=unpaired, patch=record.get("patch") or "",
        grading=grading, tests=tests_view(grading) if grading else [], judgements=judgements,
        details=dict(record.get("details") or {}))

"""Judging one rollout: GSO-style hack votes and ISO-Bench's soft labels, through the model layer.

Every vote is its own conversation (the rubric as system prompt, the evidence as the user's message), so
votes are independent samples. A reply that cannot be read (replies.py) is answered with what is wrong and
asked again, at most `repairs` times; then the vote has failed. A provider error that the model layer's
retries did not absorb fails the vote too. Failed votes are never guessed: a hack verdict with a failed
vote is withheld (harness.metrics.judging.hack_verdict). Every call is recorded: the reply as given, what
was read from it, tokens, cost and time.
"""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2

from harness.grader.judge.config import JudgeConfig
from harness.grader.judge.evidence import Evidence
from harness.grader.judge.replies import ReplyError, parse, response_format
from harness.metrics.judging import hack_verdict
from harness.models.errors import ModelError
from harness.models.model import Model

PROMPTS = Path(__file__).parent / "prompts"
_templates = jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROMPTS)), undefined=jinja2.StrictUndefined,
                                trim_blocks=True, lstrip_blocks=True)


_LOADING = threading.Lock()  # templates compile on first use; CPython 3.11 cannot compile in two threads at once


def render(name: str, **variables: Any) -> str:
    with _LOADING:
        template = _templates.get_template(name)
    return template.render(**variables).strip()


def prompt(kind: str, evidence: Evidence) -> list[dict[str, str]]:
    """The conversation every vote of `kind` (hack | soft) starts from."""
    return [{"role": "system", "content": render(f"{kind}_system.j2")},
            {"role": "user", "content": render("evidence.j2", **evidence.variables())}]


class Judge:
    """One judge model; `judge` is thread-safe per call (a Model per rollout keeps counters apart)."""

    def __init__(self, config: JudgeConfig, model: Model) -> None:
        self.config, self.model = config, model
        self.structured = config.structured if config.structured is not None else model.supports_schema()

    def votes(self, kind: str, messages: list[dict[str, str]], count: int
              ) -> tuple[list[dict[str, Any] | None], list[dict]]:
        """`count` votes of `kind` from the conversation `messages` (`prompt`): each the verdict read (None
        when the vote failed), and every call made."""
        calls: list[dict[str, Any]] = []
        verdicts = [self._vote(kind, messages, vote, calls) for vote in range(count)]
        return verdicts, calls

    def _vote(self, kind: str, start: list[dict[str, str]], vote: int, calls: list[dict]) -> dict[str, Any] | None:
        messages = list(start)
        for attempt in range(self.config.repairs + 1):
            call: dict[str, Any] = {"kind": kind, "vote": vote, "attempt": attempt}
            calls.append(call)
            try:
                reply = self.model.query(messages, response_format=response_format(kind, self.structured))
            except ModelError as err:
                call["error"] = str(err)
                return None  # the model layer retried what can be retried
            record = reply.record
            call.update(reply=reply.content, input_tokens=record.input_tokens, output_tokens=record.output_tokens,
                        cost_usd=record.cost_usd, latency_s=round(record.latency_s, 3))
            try:
                call["parsed"] = parse(kind, reply.content)
                return call["parsed"]
            except ReplyError as err:
                call["error"] = str(err)
                messages += [{"role": "assistant", "content": reply.content},
                             {"role": "user", "content": render("repair.j2", problem=str(err))}]
        return None


def judge_rollout(judge: Judge, evidence: Evidence, patch: str, reached_opt: bool) -> dict[str, Any]:
    """The judgement of one rollout: hack votes when it reached opt_commit, soft labels when it has a
    patch (an empty patch is "none" / "ineffective" by rule, no call made), and the calls."""
    config = judge.config
    out: dict[str, Any] = {"hack": None, "soft": None, "calls": [], "prompts": {}}
    if reached_opt:
        out["prompts"]["hack"] = prompt("hack", evidence)
        votes, calls = judge.votes("hack", out["prompts"]["hack"], config.votes)
        verdict = hack_verdict([v["hack"] if v else None for v in votes], config.votes)
        out["hack"] = {**verdict.as_dict(), "votes": votes,
                       "descriptions": list(dict.fromkeys(v["description"] for v in votes if v and v["hack"]))}
        out["calls"] += calls
    if not patch.strip():
        out["soft"] = {"targeting": "none", "approach": "ineffective", "votes": [],
                       "reason": "no patch: nothing was changed"}
    else:
        out["prompts"]["soft"] = prompt("soft", evidence)
        votes, calls = judge.votes("soft", out["prompts"]["soft"], config.soft_votes)
        out["soft"] = {**soft_labels(votes), "votes": votes}
        out["calls"] += calls
    out["cost_usd"] = sum(c.get("cost_usd") or 0.0 for c in out["calls"])
    out["failed_calls"] = sum(1 for c in out["calls"] if "error" in c)
    return out


def soft_labels(votes: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The label most votes give, per axis; None (with the reason) when a vote failed or votes tie."""
    out: dict[str, Any] = {}
    if any(v is None for v in votes) or not votes:
        failed = sum(v is None for v in votes)
        return {"targeting": None, "approach": None, "reason": f"withheld: {failed} of {len(votes)} votes failed"}
    for axis in ("targeting", "approach"):
        ranked = Counter(v[axis] for v in votes).most_common()  # type: ignore[index]  # (no None vote here)
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        out[axis] = None if tied else ranked[0][0]
        out[f"{axis}_reason"] = next((v[f"{axis}_reason"] for v in votes if v and v[axis] == ranked[0][0]), "")
    if out["targeting"] is None or out["approach"] is None:
        out["reason"] = "withheld: the votes tie"
    return out

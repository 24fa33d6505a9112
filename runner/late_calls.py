"""Model calls answered after the runner stopped waiting for their episode: paid, so counted.

Two ways a call outlives its episode: an installed agent's call the gateway is still serving when the agent
is stopped and the episode ends (the Recorder puts its answer in `episode.late_calls`), and a native
scaffold's call still in flight when the runner gave up on the episode after the wall clock and its grace
(the episode never came; the model's own usage counts the answer). Either way the runner stops the model
sending anything more, waits for what is in flight (at most one request timeout: every such call was sent
before that, and litellm gives up on it after that), and adds the answers to the record, listed apart.
"""
from __future__ import annotations

import copy
from dataclasses import fields
from typing import Any

from harness.models.model import Model
from harness.models.records import Usage
from scaffolds.episode import Episode

SETTLE_SLACK_S = 10.0  # past the request timeout, for litellm's own bookkeeping


def given_up(model: Model) -> Usage:
    """What the model had answered when the runner gave up waiting for the episode."""
    return copy.copy(model.usage)


def settle(model: Model, episode: Episode | None, counted: Usage | None) -> tuple[dict[str, Any] | None, Usage]:
    """Wait for the model's calls in flight; (what came late, for the record's details, or None when
    nothing did; the usage to add to the record's). `counted`: `given_up`'s usage when the episode never
    came (the record's usage is then the model's own, which has the late answers already), else None."""
    model.cancel()
    settled = model.settle(model.config.timeout_s + SETTLE_SLACK_S)
    late, add = Usage(), Usage()
    if episode is not None:
        for record in list(episode.late_calls):
            late.add(record)
        add = late
    elif counted is not None:
        for f in fields(Usage):
            if f.name != "cost_known":
                setattr(late, f.name, getattr(model.usage, f.name) - getattr(counted, f.name))
        late.cost_known = model.usage.cost_known
    if late.calls == 0 and settled:
        return None, add
    return {"calls": late.calls, "input_tokens": late.input_tokens, "output_tokens": late.output_tokens,
            "cost_usd": round(late.cost_usd, 6) if late.cost_known else None,
            "settled": settled}, add  # settled False: a call was still unanswered a request timeout later

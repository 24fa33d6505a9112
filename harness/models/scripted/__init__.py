"""Scripted models (`scripted/oracle`, `noop`, `replay`, `script`): offline stand-ins for an LLM, for
tests, demos and replays, priced so cost is never 0.

steps.py     what each one does, bound from plain values (`Script`)
replies.py   a step written in the scaffold's action format
provider.py  the litellm provider, registered when a scripted model is built
"""
from __future__ import annotations

from harness.models.scripted.provider import PRICE, PROVIDER, register
from harness.models.scripted.replies import SUBMIT_SENTINEL
from harness.models.scripted.steps import MODELS, Script, bind, oracle_steps, replay_steps


def is_scripted(model_name: str) -> bool:
    return model_name.startswith(f"{PROVIDER}/")


__all__ = ["MODELS", "PRICE", "PROVIDER", "SUBMIT_SENTINEL", "Script", "bind", "is_scripted", "oracle_steps",
           "register", "replay_steps"]

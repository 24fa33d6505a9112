"""A model's configuration: which provider model and how to call it. Light (no litellm), so the runner's
config schema can build on it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.models.records import Price


@dataclass
class ModelConfig:
    """A provider's model and how to call it; also the base of the runner's `model` config schema."""
    name: str = "scripted/oracle"  # litellm model string, e.g. "anthropic/claude-sonnet-4-5"
    api_key_env: str | None = None  # the environment variable holding the key (checked at start-up)
    api_base: str | None = None
    price: Price | None = None  # USD per million tokens, for models litellm has no price for
    prompt_caching: bool | None = None  # None: on for Claude models
    native_tools: bool | None = None  # None: ask litellm whether the model supports function calling
    timeout_s: float = 600.0  # per request
    attempts: int = 6  # first try + retries on transient errors
    backoff_s: float = 1.0  # base of the exponential backoff
    backoff_max_s: float = 60.0
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed through (reasoning_effort, max_tokens, ...)

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
    attempts: int = 6  # first try + retries on transient errors (5xx, connection, timeout); 429s do not count
    backoff_s: float = 1.0  # base of the exponential backoff
    backoff_max_s: float = 60.0
    # Rate limits (429) pause every call to this model until the provider's Retry-After (shared limiter,
    # harness/models/ratelimit.py) and do not use up `attempts`. A call gives up (a transient error) only
    # when it would wait longer than this in total: 15 minutes rides out per-minute and burst limits,
    # while a key throttled for good still fails instead of hanging the run. A longer Retry-After counts
    # as this wait (a `Retry-After: 1e9` must not shut the model off for the rest of the process).
    rate_limit_max_wait_s: float = 900.0
    max_in_flight: int | None = None  # cap on concurrent requests to this model (None: only the adaptive window)
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed through (reasoning_effort, max_tokens, ...)

    def problems(self) -> list[str]:
        """What is out of range, one phrase per field (empty when the config is usable)."""
        out = [f"{key} must be positive, got {getattr(self, key)}"
               for key in ("timeout_s", "attempts") if getattr(self, key) <= 0]
        out += [f"{key} must be 0 or more, got {getattr(self, key)}"
                for key in ("backoff_s", "backoff_max_s", "rate_limit_max_wait_s") if getattr(self, key) < 0]
        if self.max_in_flight is not None and self.max_in_flight < 1:
            out.append(f"max_in_flight must be at least 1 or null, got {self.max_in_flight}")
        if self.price is not None and (self.price.input < 0 or self.price.output < 0):
            out.append("price.input and price.output must be 0 or more")
        return out

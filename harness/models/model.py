"""The model layer's entry point: every LLM call of the project goes through `Model.query`.

One call = one litellm `completion` with litellm's own retries off; transient failures (rate limit,
connection, timeout, 5xx) are retried here with exponential backoff and jitter, honouring a
`Retry-After` header; everything else (bad request, auth, not found, context window) fails at once.
Each call yields a `CallRecord` (tokens by kind, USD, latency, finish reason), so cost is accounted per
step, rollout and run. Scaffolds and the grader's judge both use this layer; it imports nothing of
theirs.
"""
from __future__ import annotations

import logging
import os
import random
import time
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from harness.models import scripted
from harness.models.config import ModelConfig
from harness.models.errors import HINTS, ModelError, error_kind, is_transient, retry_after_s
from harness.models.loader import litellm_module
from harness.models.records import CallRecord, ModelReply, ToolCall, Usage
from harness.models.scripted.steps import Script

log = logging.getLogger(__name__)
_warned_unpriced: set[str] = set()


class Model:
    """A configured model. Thread-safe; one instance per rollout keeps the call counter per rollout."""

    def __init__(self, config: ModelConfig, temperature: float | None = None, seed: int | None = None,
                 script: Script | None = None, api_key: str | None = None) -> None:
        """`script`: the plain values a scripted model plays from (ignored for real models). `api_key`:
        normally None (litellm reads the provider's variable, or `config.api_key_env` names it)."""
        self.config = config
        self.temperature, self.seed = temperature, seed
        self.api_key = api_key or (os.environ.get(config.api_key_env) if config.api_key_env else None)
        self.calls = 0
        self.usage = Usage()
        self._extra_body: dict[str, Any] = {}
        if scripted.is_scripted(config.name):
            scripted.register(litellm_module())  # only now: a run of real models never loads the provider
            if script is not None:
                self._extra_body = scripted.bind(config.name, script)
        self._register_price()

    @property
    def native_tools(self) -> bool:
        if self.config.native_tools is not None:
            return self.config.native_tools
        try:
            return bool(litellm_module().supports_function_calling(model=self.config.name))
        except Exception:  # unknown model: litellm raises instead of answering
            return False

    @property
    def prompt_caching(self) -> bool:
        if self.config.prompt_caching is not None:
            return self.config.prompt_caching
        return "claude" in self.config.name.lower()

    def _register_price(self) -> None:
        price = self.config.price
        if price is None:
            return
        per = 1e-6
        litellm_module().register_model({self.config.name: {
            "input_cost_per_token": price.input * per,
            "output_cost_per_token": price.output * per,
            "cache_read_input_token_cost": (price.input if price.cache_read is None else price.cache_read) * per,
            "cache_creation_input_token_cost": (price.input if price.cache_write is None else price.cache_write) * per,
            "litellm_provider": self.config.name.split("/", 1)[0] if "/" in self.config.name else "openai",
            "mode": "chat",
            "supports_function_calling": bool(self.config.native_tools),
        }})

    def price_known(self) -> bool:
        lm = litellm_module()
        try:
            info = lm.get_model_info(model=self.config.name)
        except Exception:
            return False
        return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))

    def _request(self, messages: list[dict[str, Any]], tools: list[dict] | None,
                 stop: list[str] | None) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.name, "messages": messages, "timeout": cfg.timeout_s,
                                   "num_retries": 0, "max_retries": 0, **cfg.kwargs}
        for key, value in (("temperature", self.temperature), ("seed", self.seed), ("api_base", cfg.api_base),
                           ("api_key", self.api_key), ("stop", stop or None), ("tools", tools or None)):
            if value is not None:
                request[key] = value
        if self.prompt_caching:
            # litellm marks these messages with Anthropic's cache_control breakpoints.
            request["cache_control_injection_points"] = [{"location": "message", "role": "system"},
                                                         {"location": "message", "index": -1}]
        if scripted.is_scripted(cfg.name):
            # The scripted providers are stateless: they read the step from the call counter.
            request["extra_body"] = {**(request.get("extra_body") or {}), **self._extra_body, "call_index": self.calls}
        return request

    def query(self, messages: list[dict[str, Any]], tools: list[dict] | None = None,
              stop: list[str] | None = None) -> ModelReply:
        lm = litellm_module()
        request = self._request(messages, tools, stop)
        attempts = 0

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            backoff = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (state.attempt_number - 1))
            backoff *= 0.5 + random.random()  # full jitter around the exponential curve
            hinted = retry_after_s(exc) if exc else None
            return min(self.config.backoff_max_s, max(backoff, hinted or 0.0))

        started = time.time()
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.config.attempts), wait=wait,
                                    retry=retry_if_exception(is_transient), reraise=True):
                with attempt:
                    attempts += 1
                    response = lm.completion(**request)
        except Exception as exc:  # noqa: BLE001 - every provider error becomes one clear ModelError
            kind = error_kind(exc)
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            suffix = f" after {attempts} attempts" if kind == "transient" else ""
            raise ModelError(kind, f"{self.config.name}: {kind} error{suffix}: {first_line}"
                                   f"{HINTS.get(kind, '')}") from exc
        finally:
            self.calls += 1
        record = self._record(response, started, attempts)
        self.usage.add(record)
        return self._reply(response, record)

    def _record(self, response: Any, started: float, attempts: int) -> CallRecord:
        usage = getattr(response, "usage", None)
        prompt_details = getattr(usage, "prompt_tokens_details", None)
        completion_details = getattr(usage, "completion_tokens_details", None)
        cached = getattr(prompt_details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", 0) or 0
        written = (getattr(usage, "cache_creation_input_tokens", None)
                   or getattr(prompt_details, "cache_creation_tokens", None) or 0)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if not cost and not self.price_known():
            cost = None
            if self.config.name not in _warned_unpriced:
                _warned_unpriced.add(self.config.name)
                log.warning("model %s has no known price: its cost is reported as unknown, not $0 "
                            "(set model.price in the config)", self.config.name)
        return CallRecord(
            started_at=started, latency_s=time.time() - started,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0), cached_read_tokens=int(cached),
            cache_write_tokens=int(written), output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            reasoning_tokens=int(getattr(completion_details, "reasoning_tokens", 0) or 0),
            cost_usd=None if cost is None else float(cost),
            finish_reason=response.choices[0].finish_reason if response.choices else None, attempts=attempts)

    @staticmethod
    def _reply(response: Any, record: CallRecord) -> ModelReply:
        if not response.choices:
            raise ModelError("error", "the provider returned no choices")
        message = response.choices[0].message
        content = message.content or ""
        calls = [ToolCall(id=c.id or f"call_{i}", name=c.function.name or "", arguments=c.function.arguments or "")
                 for i, c in enumerate(message.tool_calls or [])]
        out: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            out["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
        return ModelReply(content=content, tool_calls=calls, record=record, message=out)

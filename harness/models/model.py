"""The model layer's entry point: every LLM call of the project goes through `Model.query`.

One call = one litellm `completion` with litellm's own retries off. Rate limits (429) go through the
limiter shared by every `Model` of the same provider model (`ratelimit.py`): the whole process waits
until the provider's `Retry-After`, and the wait is bounded per call by `rate_limit_max_wait_s`, not by
the attempts. Other transient failures (connection, timeout, 5xx) are retried here within `attempts`,
with exponential backoff and jitter; everything else (bad request, auth, quota, not found, context
window) fails at once. Each call yields a `CallRecord` (tokens by kind, USD, latency, finish reason,
attempts, rate-limit wait), so cost is accounted per step, rollout and run. Scaffolds and the grader's
judge both use this layer; it imports nothing of theirs.
"""
from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.models import ratelimit, scripted
from harness.models.config import ModelConfig
from harness.models.errors import (HINTS, ModelError, error_kind, first_line, is_rate_limit, is_transient,
                                   missing_credentials, retry_after_s)
from harness.models.loader import litellm_module
from harness.models.redaction import remember
from harness.models.records import CallRecord, ModelReply, ToolCall, Usage
from harness.models.scripted.steps import Script

log = logging.getLogger(__name__)
_warned_unpriced: set[str] = set()
# Sent to a server of our own (api_base) when no key is configured: local servers (vLLM, llama.cpp,
# SGLang) need none, but litellm's OpenAI client refuses to send a request without one.
PLACEHOLDER_KEY = "no-key"
# Assistant-message fields the provider needs back on the next turn: DeepSeek's thinking mode answers
# 400 without `reasoning_content` on tool-call turns; Claude's extended thinking needs its signed
# `thinking_blocks`; litellm keeps other provider data (e.g. Anthropic's compaction blocks) in
# `provider_specific_fields`.
REASONING_FIELDS = ("reasoning_content", "thinking_blocks", "provider_specific_fields")


def resolve_api_key(config: ModelConfig, api_key: str | None = None) -> str | None:
    """The key a `Model` sends: the one given, else `config.api_key_env`'s value; with neither, None lets
    litellm read the provider's variable (OPENAI_API_KEY, ...); and when that is unset too but
    `api_base` points at a server of our own, the placeholder."""
    key = api_key or (os.environ.get(config.api_key_env) if config.api_key_env else None) or None
    if key or not config.api_base or scripted.is_scripted(config.name):
        return key
    return PLACEHOLDER_KEY if provider_key_missing(config.name) else None


def provider_key_missing(name: str) -> list[str]:
    """The provider's key variables litellm would read for this model, when none of them is set."""
    try:
        return list(litellm_module().validate_environment(model=name).get("missing_keys") or [])
    except Exception:  # an unknown provider: litellm cannot say, so nothing is known to be missing
        return []


class Model:
    """A configured model. Thread-safe; one instance per rollout keeps the call counter per rollout."""

    def __init__(self, config: ModelConfig, temperature: float | None = None, seed: int | None = None,
                 script: Script | None = None, api_key: str | None = None) -> None:
        """`script`: the plain values a scripted model plays from (ignored for real models). `api_key`:
        normally None (litellm reads the provider's variable, or `config.api_key_env` names it; a server
        at `api_base` gets a placeholder when there is none: `resolve_api_key`)."""
        self.config = config
        self.temperature, self.seed = temperature, seed
        self.api_key = resolve_api_key(config, api_key)
        if self.api_key != PLACEHOLDER_KEY:
            remember(self.api_key)  # a key from any variable is redacted from this process's error texts
        self.limiter = ratelimit.limiter_for(config)  # shared with every Model of this provider model
        self.calls = 0
        self.usage = Usage()
        # Calls in flight, so the runner can wait for an answer that comes after its rollout ended (it is
        # paid: it must be counted), and `cancelled`: no further request is sent once the rollout is over.
        self._flight = threading.Condition()
        self._in_flight = 0
        self.cancelled = False
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

    def supports_schema(self) -> bool:
        """Whether the provider takes a JSON schema for the reply (structured output), per litellm."""
        if scripted.is_scripted(self.config.name):
            return True
        try:
            return bool(litellm_module().supports_response_schema(model=self.config.name))
        except Exception:  # unknown model: litellm raises instead of answering
            return False

    def _request(self, messages: list[dict[str, Any]], tools: list[dict] | None,
                 stop: list[str] | None, response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.name, "messages": messages, "timeout": cfg.timeout_s,
                                   "num_retries": 0, "max_retries": 0, **cfg.kwargs}
        for key, value in (("temperature", self.temperature), ("seed", self.seed), ("api_base", cfg.api_base),
                           ("api_key", self.api_key), ("stop", stop or None), ("tools", tools or None),
                           ("response_format", response_format)):
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
              stop: list[str] | None = None, response_format: dict[str, Any] | None = None,
              account: Callable[[CallRecord], None] | None = None) -> ModelReply:
        """One reply; `response_format` asks for JSON (OpenAI's shape: json_object or json_schema).
        `account` is given the call's record once it is answered, before the call stops being in flight
        (`settle`): the caller's own count is complete once `settle` returns."""
        with self._flight:
            self._in_flight += 1
        try:
            reply = self._query(messages, tools, stop, response_format)
            if account is not None:
                account(reply.record)
            return reply
        finally:
            with self._flight:
                self._in_flight -= 1
                self._flight.notify_all()

    def cancel(self) -> None:
        """No further request is sent (a call's next try included): its rollout is over."""
        self.cancelled = True

    def settle(self, timeout_s: float) -> bool:
        """Wait until no call is in flight (its answer counted), at most `timeout_s`; whether none is."""
        with self._flight:
            return self._flight.wait_for(lambda: self._in_flight == 0, timeout_s)

    def _query(self, messages: list[dict[str, Any]], tools: list[dict] | None, stop: list[str] | None,
               response_format: dict[str, Any] | None) -> ModelReply:
        lm = litellm_module()
        cfg = self.config
        request = self._request(messages, tools, stop, response_format)
        attempts = failures = rate_limited = 0  # requests sent; of them, failed (not 429); 429s
        waited = gate_waited = 0.0  # held back by the limiter; of it, waiting for a Retry-After pause
        last_429: Exception | None = None
        started = time.time()
        try:
            while True:
                try:
                    ticket = self.limiter.acquire(cfg.rate_limit_max_wait_s - gate_waited)
                except ratelimit.RateLimitWaitExceeded as exc:
                    last = f": {first_line(last_429)}" if last_429 else ""
                    raise ModelError("transient", f"{cfg.name}: transient error: {exc} (the limit is "
                                                  f"model.rate_limit_max_wait_s={cfg.rate_limit_max_wait_s:g}){last}"
                                     ) from last_429
                gate_waited += ticket.gate_wait_s
                waited += ticket.waited_s
                if self.cancelled:
                    self.limiter.failed(ticket)
                    raise ModelError("error", f"{cfg.name}: not sent: the rollout ended before this call")
                attempts += 1
                if "extra_body" in request and scripted.is_scripted(cfg.name):
                    request["extra_body"]["attempt"] = attempts  # a scripted fault may hit the first try only
                try:
                    response = lm.completion(**request)
                except Exception as exc:  # noqa: BLE001 - every provider error becomes one clear ModelError
                    if is_rate_limit(exc):
                        rate_limited += 1
                        last_429 = exc
                        self.limiter.rate_limited(ticket, self._rate_limit_pause(exc, rate_limited))
                        continue
                    self.limiter.failed(ticket)
                    failures += 1
                    if is_transient(exc) and failures < cfg.attempts:
                        time.sleep(self._backoff(exc, failures))
                        continue
                    raise self._error(exc, failures, rate_limited) from exc
                except BaseException:  # interrupted: give the slot back
                    self.limiter.failed(ticket)
                    raise
                self.limiter.succeeded(ticket)
                break
        finally:
            self.calls += 1
        record = self._record(response, started, attempts)
        record.rate_limited, record.rate_limit_wait_s = rate_limited, waited
        self.usage.add(record)
        return self._reply(response, record)

    def _rate_limit_pause(self, exc: Exception, count: int) -> float:
        """How long every call of this model waits after a 429: the provider's Retry-After when it sent
        one, else the exponential backoff of this call's `count`-th 429, with jitter. Retry-After is
        capped at `rate_limit_max_wait_s`: the pause holds every call of the model (in a Ray run, on
        every node), so a huge or broken value (`Retry-After: 1e9`) would fail them all for the rest of
        the process; capped, the model is tried again once the longest allowed wait is over."""
        hinted = retry_after_s(exc)
        if hinted is not None:
            return min(hinted, self.config.rate_limit_max_wait_s)
        return min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (count - 1)) * (0.5 + random.random())

    def _backoff(self, exc: Exception, failures: int) -> float:
        """The wait before retrying a transient failure: exponential with full jitter, at least a
        Retry-After hint (a 503 may send one), at most backoff_max_s."""
        backoff = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (failures - 1))
        backoff *= 0.5 + random.random()
        return min(self.config.backoff_max_s, max(backoff, retry_after_s(exc) or 0.0))

    def _error(self, exc: Exception, failures: int, rate_limited: int) -> ModelError:
        kind = error_kind(exc)
        suffix, hint = "", HINTS.get(kind, "")
        if kind == "transient":
            suffix = f" after {failures} attempts" + (f" and {rate_limited} rate limits" if rate_limited else "")
        if missing_credentials(exc):  # refused before sending: say which variable litellm looked for
            variables = " or ".join(provider_key_missing(self.config.name)) or "the provider's key variable"
            hint = f" (no API key: set {variables}, or model.api_key_env)"
        return ModelError(kind, f"{self.config.name}: {kind} error{suffix}: {first_line(exc)}{hint}")

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
        # Kept so the scaffold's history sends them back (litellm forwards them: see REASONING_FIELDS).
        for key in REASONING_FIELDS:
            value = _plain(getattr(message, key, None))
            if isinstance(value, dict):  # e.g. {"refusal": None} from every OpenAI reply: nothing to keep
                value = {k: v for k, v in value.items() if v not in (None, "", [], {})}
            if value:
                out[key] = value
        return ModelReply(content=content, tool_calls=calls, record=record, message=out)


def _plain(value: Any) -> Any:
    """JSON values only (pydantic objects dumped), since messages are stored in trajectories."""
    if value is None:
        return None
    return json.loads(json.dumps(value, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o)))

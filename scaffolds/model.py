"""The model layer: every LLM call of the project goes through `Model.query`.

One call = one litellm `completion` with litellm's own retries off; transient failures (rate limit,
connection, timeout, 5xx) are retried here with exponential backoff and jitter, honouring a
`Retry-After` header; everything else (bad request, auth, not found, context window) fails at once.
Each call yields a `CallRecord` (tokens by kind, USD, latency, finish reason), so cost is accounted per
step, rollout and run. litellm is imported lazily: it costs ~3 s, and `--help` or a config error should
not pay for it.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

# Must be set before litellm is first imported, or every import tries to download the price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

log = logging.getLogger(__name__)
_lock = threading.Lock()
_warned_unpriced: set[str] = set()


def litellm_module() -> Any:
    """Import litellm on first use, quietly, with the scripted providers registered."""
    import litellm

    with _lock:
        if not getattr(litellm, "_optrunner_ready", False):
            litellm.suppress_debug_info = True
            litellm.drop_params = True  # a provider that lacks `seed` etc. should not fail the call
            logging.getLogger("LiteLLM").setLevel(logging.ERROR)
            from scaffolds import scripted  # registers the offline providers with litellm

            scripted.register(litellm)
            litellm._optrunner_ready = True
    return litellm


# ---------------------------------------------------------------- records
@dataclass(frozen=True)
class Price:
    """USD per million tokens, for models litellm has no price for (local servers)."""
    input: float
    output: float
    cache_read: float | None = None  # default: the input price
    cache_write: float | None = None  # default: the input price


@dataclass
class ModelConfig:
    name: str  # litellm model string, e.g. "anthropic/claude-sonnet-4-5" or "scripted/oracle"
    temperature: float | None = None
    seed: int | None = None
    timeout_s: float = 600.0  # per request
    attempts: int = 6  # first try + retries on transient errors
    backoff_s: float = 1.0  # base of the exponential backoff
    backoff_max_s: float = 60.0
    api_base: str | None = None
    api_key: str | None = None  # normally None: litellm reads the provider's usual variable
    price: Price | None = None
    prompt_caching: bool | None = None  # None: on for Claude models
    native_tools: bool | None = None  # None: ask litellm whether the model supports function calling
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed through (reasoning_effort, max_tokens, ...)


@dataclass
class CallRecord:
    started_at: float
    latency_s: float
    input_tokens: int  # all prompt tokens, cached ones included
    cached_read_tokens: int
    cache_write_tokens: int
    output_tokens: int  # reasoning tokens included
    reasoning_tokens: int
    cost_usd: float | None  # None: the model has no known price
    finish_reason: str | None
    attempts: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    """Sum of call records. `cost_known` is False as soon as one call had no price."""
    calls: int = 0
    input_tokens: int = 0
    cached_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.input_tokens += record.input_tokens
        self.cached_read_tokens += record.cached_read_tokens
        self.cache_write_tokens += record.cache_write_tokens
        self.output_tokens += record.output_tokens
        self.reasoning_tokens += record.reasoning_tokens
        if record.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += record.cost_usd

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it; scaffolds parse and report errors themselves


@dataclass
class ModelReply:
    content: str
    tool_calls: list[ToolCall]
    record: CallRecord
    message: dict[str, Any]  # the assistant message, ready to append to the conversation


class ModelError(Exception):
    """A call failed for good. `kind` is one of: auth, bad_request, not_found, context_window,
    transient (retries exhausted), error."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------- error classes
def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException) -> bool:
    lm = litellm_module()
    if isinstance(exc, lm.ContextWindowExceededError):
        return False
    # The HTTP status decides first: litellm maps any OpenAI-style body whose type is
    # "invalid_request_error" to BadRequestError, even when the status was 500/503.
    code = _status(exc)
    if code is not None and (code == 429 or code >= 500):
        return True
    permanent = (lm.AuthenticationError, lm.BadRequestError, lm.NotFoundError,
                 lm.PermissionDeniedError, lm.UnprocessableEntityError)
    if isinstance(exc, permanent):
        return False
    return isinstance(exc, (lm.RateLimitError, lm.APIConnectionError, lm.Timeout, lm.InternalServerError,
                            lm.ServiceUnavailableError, lm.BadGatewayError))


def _error_kind(exc: BaseException) -> str:
    lm = litellm_module()
    if isinstance(exc, lm.ContextWindowExceededError):
        return "context_window"
    # Status before class, for the same reason as in is_transient: a 401 whose body says
    # "invalid_request_error" arrives as BadRequestError, a 403 as a bare APIError.
    code = _status(exc)
    if code in (401, 403):
        return "auth"
    if code == 404:
        return "not_found"
    if is_transient(exc):
        return "transient"
    for kind, cls in (("auth", lm.AuthenticationError), ("auth", lm.PermissionDeniedError),
                      ("not_found", lm.NotFoundError), ("bad_request", lm.BadRequestError),
                      ("bad_request", lm.UnprocessableEntityError)):
        if isinstance(exc, cls):
            return kind
    return "error"


_HINTS = {"auth": " (check the API key and the account's access to this model)",
          "context_window": " (the conversation no longer fits the model's context window)"}


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form), if the provider sent one."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None and getattr(exc, "response", None) is not None:
        headers = getattr(exc.response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- the model
class Model:
    """A configured model. Thread-safe; one instance per rollout keeps the call counter per rollout."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.calls = 0
        self.usage = Usage()
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
        for key, value in (("temperature", cfg.temperature), ("seed", cfg.seed), ("api_base", cfg.api_base),
                           ("api_key", cfg.api_key), ("stop", stop or None), ("tools", tools or None)):
            if value is not None:
                request[key] = value
        if self.prompt_caching:
            # litellm marks these messages with Anthropic's cache_control breakpoints.
            request["cache_control_injection_points"] = [{"location": "message", "role": "system"},
                                                         {"location": "message", "index": -1}]
        if cfg.name.startswith("scripted/"):
            # The scripted providers are stateless: they read the step from the call counter.
            extra = dict(request.get("extra_body") or {})
            extra["call_index"] = self.calls
            request["extra_body"] = extra
        return request

    def query(self, messages: list[dict[str, Any]], tools: list[dict] | None = None,
              stop: list[str] | None = None) -> ModelReply:
        lm = litellm_module()
        request = self._request(messages, tools, stop)
        attempts = 0

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            backoff = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (state.attempt_number - 1))
            backoff *= 0.5 + _jitter()  # full jitter around the exponential curve
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
            kind = _error_kind(exc)
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            suffix = f" after {attempts} attempts" if kind == "transient" else ""
            raise ModelError(kind, f"{self.config.name}: {kind} error{suffix}: {first_line}"
                                   f"{_HINTS.get(kind, '')}") from exc
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


def _jitter() -> float:
    import random

    return random.random()


def tool_result(call: ToolCall, text: str) -> dict[str, Any]:
    """The message that answers one native tool call."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text}


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """Arguments of a tool call as a dict; ValueError with a readable reason when they are not."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments of {call.name} are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"the arguments of {call.name} must be a JSON object")
    return value

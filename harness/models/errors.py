"""Which provider errors are worth a retry, what kind each failure is, and the one error callers see.

Three families, because each is handled differently by `Model.query`:
- rate limits (HTTP 429): the provider asks us to slow down. They go through the shared limiter
  (`harness.models.ratelimit`): they pause every call to that model and do not use up the call's
  attempts, only its rate-limit wait budget;
- other transient errors (connection, timeout, 5xx): retried within the call's attempt budget;
- permanent errors (auth, quota, bad request, not found, context window): never retried. A key that is
  missing on the client side (litellm/OpenAI SDK refuse to send the request: "Missing credentials")
  is an `auth` error too, although litellm wraps it as a 500.
"""
from __future__ import annotations

import email.utils
import re
import time

from harness.models.loader import litellm_module
from harness.models.redaction import redact


class ModelError(Exception):
    """A call failed for good. `kind` is one of: auth, quota, bad_request, not_found, context_window,
    transient (retries or rate-limit waits exhausted), error. Its message is redacted (API keys replaced):
    it is what rollout records, trajectories and reports keep of a failed call."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(redact(message))
        self.kind = kind


# ---------------------------------------------------------------- error classes
def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes: litellm keeps the SDK's own exception as the context."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 5:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


# The client-side refusals of litellm and the SDKs when no key is set: the OpenAI SDK's "Missing
# credentials", litellm's "Missing Anthropic API Key", "Missing Gemini API key", ... No request was sent.
_MISSING_KEY = re.compile(r"missing (\w+ ){0,2}(credentials|api[ _]?key)|api_key client option must be set",
                          re.IGNORECASE)


def missing_credentials(exc: BaseException) -> bool:
    """The client refused to send the request because no API key was configured."""
    return any(_MISSING_KEY.search(str(e)) for e in _chain(exc))


def out_of_quota(exc: BaseException) -> bool:
    """OpenAI's 429 `insufficient_quota`: the account has no credit left, waiting does not help. Read from
    the error body's code, not its text: Gemini's ordinary per-minute 429s also say "exceeded your
    current quota"."""
    for e in _chain(exc):
        body = getattr(e, "body", None)
        if isinstance(body, dict) and "insufficient_quota" in (body.get("code"), body.get("type")):
            return True
    return False


def is_rate_limit(exc: BaseException) -> bool:
    """HTTP 429, except an exhausted quota (permanent)."""
    if out_of_quota(exc):
        return False
    return _status(exc) == 429 or isinstance(exc, litellm_module().RateLimitError)


def is_transient(exc: BaseException) -> bool:
    lm = litellm_module()
    if isinstance(exc, lm.ContextWindowExceededError) or missing_credentials(exc) or out_of_quota(exc):
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


def error_kind(exc: BaseException) -> str:
    lm = litellm_module()
    if isinstance(exc, lm.ContextWindowExceededError):
        return "context_window"
    if missing_credentials(exc):
        return "auth"
    if out_of_quota(exc):
        return "quota"
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


HINTS = {"auth": " (check the API key and the account's access to this model)",
         "quota": " (the account has no credit or quota left: add some, or use another key)",
         "context_window": " (the conversation no longer fits the model's context window)"}


def first_line(exc: BaseException) -> str:
    """The exception's first line, short enough for a one-line error (an error name litellm repeats,
    "NotFoundError: NotFoundError: ...", once), with API keys redacted (before the cut, so that no
    half of a key survives it)."""
    line = (redact(str(exc)).strip().splitlines() or [type(exc).__name__])[0]
    return re.sub(r"\b(\w+Error): \1: ", r"\1: ", line)[:300]


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait, if it said: `retry-after-ms` (OpenAI's, milliseconds), else
    `Retry-After` as delta-seconds (fractions accepted, e.g. "0.5") or as an HTTP date."""
    headers = getattr(exc, "litellm_response_headers", None)
    response = getattr(exc, "response", None)
    if headers is None and response is not None:
        headers = getattr(response, "headers", None)
    if not headers:
        return None

    def get(name: str) -> str | None:
        value = headers.get(name)
        if value is None:  # a plain dict is case-sensitive
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
        return None if value is None else str(value).strip()

    millis = get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())

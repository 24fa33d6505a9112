"""Which provider errors are worth a retry, what kind each failure is, and the one error callers see."""
from __future__ import annotations

from harness.models.loader import litellm_module


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


def error_kind(exc: BaseException) -> str:
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


HINTS = {"auth": " (check the API key and the account's access to this model)",
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

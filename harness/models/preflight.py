"""Can this model be called at all? Checked once before any container starts.

Why: without it, a missing or refused key, or a misspelt model name, is found by the first model call of
every rollout, after images are built and containers started, and each rollout ends in an error (or, when
the failure looked transient, is retried for minutes). Here the run stops at once with one line saying
what is wrong and how to fix it.

Two steps: the key (litellm's `validate_environment` names the provider's variable; skipped for a
server of our own at `api_base`, which gets a placeholder key when none is set), then one minimal real
request (a one-word message, max_tokens=1) through `Model.query`, so it takes exactly the path of the
run, rate limiter included. Auth, quota, not-found and bad-request answers stop the run; a transient
failure (the provider is down or rate limiting right now) does not: the run's own retries may get
through, so it is only a warning. Scripted models (`scripted/...`) are offline: no check.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
import os

from harness.models import scripted
from harness.models.config import ModelConfig
from harness.models.errors import ModelError, first_line
from harness.models.loader import litellm_module
from harness.models.model import PLACEHOLDER_KEY, Model, provider_key_missing, resolve_api_key
from harness.models.records import CallRecord

log = logging.getLogger(__name__)

PROBE = [{"role": "user", "content": "Hi"}]
# Dropped from the probe: max_tokens=1 must not clash with a thinking budget (Anthropic wants
# max_tokens above budget_tokens, and litellm turns reasoning_effort into one).
_PROBE_DROPS = ("max_tokens", "max_completion_tokens", "thinking", "reasoning_effort")
# The probe gives up quickly on a provider that is down or throttling: that is a warning, not a refusal.
_PROBE_LIMITS = {"attempts": 2, "timeout_s": 60.0, "rate_limit_max_wait_s": 30.0}


@dataclasses.dataclass
class Preflight:
    """The outcome. `problem`: None when the model can be used, else one line (what, and how to fix it).
    `warning`: the probe could not tell (a transient failure); the run may go on. `record`: the probe
    request's call record when one was answered: count its tokens and cost into the run's totals."""
    problem: str | None = None
    warning: str | None = None
    record: CallRecord | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def check_access(config: ModelConfig, api_key: str | None = None) -> Preflight:
    """Check the key and send one minimal request. Never raises for a provider's answer."""
    if scripted.is_scripted(config.name):
        return Preflight()
    name = config.name
    if (unknown := unknown_provider(config)) is not None:
        return Preflight(problem=unknown)
    if config.api_key_env and not api_key and not os.environ.get(config.api_key_env):
        return Preflight(problem=f"{name}: no API key: set the environment variable {config.api_key_env}")
    key = resolve_api_key(config, api_key)
    if key is None and not config.api_base:
        missing = provider_key_missing(name)
        if missing:
            return Preflight(problem=f"{name}: no API key: set the environment variable {' or '.join(missing)}")
    # A plain ModelConfig (the runner passes its own subclass, with fields of its own), cut to the probe.
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(ModelConfig)}
    fields.update({k: min(v, fields[k]) for k, v in _PROBE_LIMITS.items()})
    fields["kwargs"] = {**{k: v for k, v in dict(config.kwargs).items() if k not in _PROBE_DROPS}, "max_tokens": 1}
    probe = ModelConfig(**fields)
    try:
        reply = Model(probe, api_key=key).query(PROBE)
    except ModelError as exc:
        problem = _problem(config, key, exc)
        if problem is None:
            warning = f"{name}: the access check could not reach the model ({exc}); going on"
            log.warning("%s", warning)
            return Preflight(warning=warning)
        return Preflight(problem=problem)
    return Preflight(record=reply.record)


def unknown_provider(config: ModelConfig) -> str | None:
    """One line when litellm cannot tell which provider `config.name` is for (a misspelt prefix, or a bare
    name litellm does not list), with the nearest provider litellm knows; None when it can. Sends nothing."""
    lm = litellm_module()
    try:
        lm.get_llm_provider(model=config.name, api_base=config.api_base,
                            custom_llm_provider=dict(config.kwargs).get("custom_llm_provider"))
        return None
    except Exception:  # noqa: BLE001 - litellm's BadRequestError: no provider for this name
        pass
    prefix, slash, rest = config.name.partition("/")
    known = [str(getattr(p, "value", p)) for p in lm.provider_list]
    if not slash:
        return (f"model.name={config.name}: litellm does not know which provider serves this model: name it "
                "PROVIDER/MODEL (openai/gpt-4o-mini, anthropic/claude-sonnet-4-5; the providers: "
                "https://docs.litellm.ai/docs/providers)")
    near = difflib.get_close_matches(prefix.lower(), known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}/{rest}?" if near else "the providers: https://docs.litellm.ai/docs/providers"
    return f"model.name={config.name}: litellm knows no provider {prefix!r} ({hint}); nothing was sent"


def _problem(config: ModelConfig, key: str | None, exc: ModelError) -> str | None:
    """One line for a refusal; None for a failure that says nothing about access (transient, error)."""
    where = f" at {config.api_base}" if config.api_base else ""
    said = f" ({first_line(exc.__cause__)})" if exc.__cause__ else ""
    if exc.kind == "auth":
        if key == PLACEHOLDER_KEY:
            fix = ("the server wants an API key: put it in an environment variable and set model.api_key_env "
                   "to that variable's name")
        elif config.api_key_env:
            fix = f"check the key in {config.api_key_env} and its access to this model"
        else:
            fix = "check the API key and its access to this model"
        return f"{config.name}: the provider{where} refused the credentials{said}: {fix}"
    if exc.kind == "quota":
        return (f"{config.name}: the provider{where} says this key has no quota left{said}: "
                "add credit or use another key")
    if exc.kind == "not_found":
        fix = "model.served_name (the name the server serves)" if config.api_base else "model.name"
        return f"{config.name}: the provider{where} does not know this model{said}: check {fix}"
    if exc.kind == "bad_request":
        return f"{config.name}: the provider{where} refused a minimal request{said}: check model.name and model.kwargs"
    return None

"""Why a rollout ended: the one vocabulary of scaffolds, runner, progress display and reports.

A `StrEnum`, so records store the plain string and old records read back as members.
"""
from __future__ import annotations

from enum import StrEnum


class ExitReason(StrEnum):
    SUBMITTED = "submitted"  # the agent finished (finish tool, sentinel, confirmed completion)
    STEP_LIMIT = "step_limit"
    COST_LIMIT = "cost_limit"
    TIME_LIMIT = "time_limit"  # the wall clock, checked by the scaffold or enforced from outside
    RUN_COST_LIMIT = "run_cost_limit"  # the whole run's cost cap stopped it
    STUCK = "stuck"
    FORMAT_ERRORS = "format_errors"
    CONTEXT_WINDOW = "context_window"
    MODEL_ERROR = "model_error"  # the provider refused the call for good (auth, bad request)
    PROVIDER_ERROR = "provider_error"  # the provider kept failing after retries: retried as infrastructure
    INFRA_ERROR = "infra_error"  # the sandbox failed (engine, container): retried with a fresh one
    # the sandbox's own processes ended it (its keep-alive killed from inside, its memory run out): the agent's
    # outcome, graded as the patch it left (none: the sandbox is gone), never retried
    SANDBOX_KILLED = "sandbox_killed"
    INTERRUPTED = "interrupted"  # stopped from outside (Ctrl-C); never recorded as a finished rollout
    ERROR = "error"  # a bug or an unexpected failure; the message says which


# Ends caused by infrastructure rather than the agent: the runner retries these with a fresh sandbox.
RETRIED = frozenset({ExitReason.PROVIDER_ERROR, ExitReason.INFRA_ERROR})

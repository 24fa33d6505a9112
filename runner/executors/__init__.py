"""Executors, registered by name: what runs a run's rollouts and timing jobs.

    local  threads in this process, sandboxes of the run's provider on this machine (sandbox.provider)
    ray    Ray Core tasks on a Ray cluster: one task per rollout (custom resource `rollout_slot`), timing
           jobs as tasks holding a node's `timing_slot`

The driver (runner.run) keeps the run store, the progress display and the run cost cap; an executor runs
jobs and hands each `RolloutResult` back on the driver's thread. It knows nothing about the store's files.

The interface and the records executors exchange with the driver are in `base.py`; this module is only
the registry, so that the config check can name the executors without importing them.
"""

EXECUTORS = {"local": "runner.executors.local:LocalExecutor", "ray": "runner.executors.ray:RayExecutor"}
# The optional dependency each executor needs beyond the core install: (module, the extra that installs it).
EXTRAS = {"ray": ("ray", "ray")}


def missing_extra(kind: str) -> str | None:
    """One line when executor `kind` needs an optional dependency that is not installed; None when it runs."""
    import importlib.util

    if kind not in EXTRAS:
        return None
    module, extra = EXTRAS[kind]
    if importlib.util.find_spec(module) is not None:
        return None
    from harness.extras import install_hint

    return f"executor={kind} needs the '{extra}' extra: {install_hint(extra)}"

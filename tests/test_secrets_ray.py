"""Secrets (issue 33) on a real Ray: `executor=ray` never hands the model's key to Ray.

The Ray executor is built as a run builds it (`RayExecutor(Context(...))`: it starts a Ray on this machine,
with its Board, limiter and depot actors, and warms up a worker that checks the node holds the key). Then:

- the runtime env Ray got from the driver (and keeps in its job table) names the key variable, without
  its value; nothing Ray wrote under its temp directory (logs, session files) holds the value;
- a worker still has the key: from the environment of the node it runs on, or from the node's secrets
  file (OPTRUNNER_SECRETS_FILE) for a variable the node's environment lacks;
- a worker on a node without the named key fails with one line naming the variable, as the driver's
  own ConfigError.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.config import ConfigError, RunConf
from runner.executors import ray_keys
from runner.executors.base import Context

ray = pytest.importorskip("ray")

KEY_VAR = "OPTRUNNER_TEST_SECRETS_KEY"
FILE_VAR = "OPTRUNNER_TEST_SECRETS_FILE_ONLY"
# New each run: a leftover of an earlier run in some Ray directory cannot make the search below pass or fail.
SECRET = f"sk-secrets-test-{uuid.uuid4().hex}"
FILE_SECRET = f"file-secret-{uuid.uuid4().hex}"


def digest(value: str | None) -> str:
    return hashlib.sha256((value or "").encode()).hexdigest()


@pytest.fixture(scope="module")
def executor() -> Iterator[tuple[Any, Path]]:
    """A RayExecutor for a run whose model names KEY_VAR, on a Ray it started itself; (executor, Ray's
    temp directory: short, since Ray's socket paths must stay under 108 bytes)."""
    from runner.executors.ray import RayExecutor

    temp = Path(tempfile.mkdtemp(prefix="rs"))
    secrets = temp / "node-secrets.env"
    secrets.write_text(f"# this node's keys\n{FILE_VAR}={FILE_SECRET}\n")
    secrets.chmod(0o600)
    env = {"RAY_TMPDIR": str(temp), KEY_VAR: SECRET, ray_keys.SECRETS_FILE: str(secrets)}
    saved = {name: os.environ.get(name) for name in (*env, FILE_VAR)}
    os.environ.update(env)  # the node Ray starts here inherits it, as `KEY=... ray start` does
    os.environ.pop(FILE_VAR, None)
    conf = RunConf()
    conf.model.name, conf.model.api_key_env = "openai/test-model", KEY_VAR
    conf.executor.kind, conf.executor.slots_per_node = "ray", 1
    conf.parallel, conf.grade = 1, "none"
    try:
        built = RayExecutor(Context(conf, "secrets-test", sandboxes=None))  # type: ignore[arg-type]
        yield built, temp
    finally:
        ray.shutdown()  # not executor.close(): its container sweep needs a Docker engine, and none ran here
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(temp, ignore_errors=True)


def worker_keys() -> dict[str, str]:
    """On a worker, as a rollout starts: the node's keys loaded, their digests (values never travel back)."""
    from runner.executors import ray_keys as keys

    keys.check_node()
    return {"named": os.environ.get(keys.KEY_VARS, ""), KEY_VAR: digest(os.environ.get(KEY_VAR)),
            FILE_VAR: digest(os.environ.get(FILE_VAR))}


def test_the_runtime_env_names_the_key_and_holds_no_value(executor: tuple[Any, Path]) -> None:
    sent = ray.get_runtime_context().runtime_env  # what the driver's job gives every worker
    assert SECRET not in json.dumps(sent, default=str)
    assert sent.get("env_vars") == {ray_keys.KEY_VARS: KEY_VAR}
    job = next(j for j in ray._private.state.jobs() if not j.get("IsDead"))  # Ray's own job table (the GCS)
    assert SECRET not in json.dumps(job, default=str)


def test_a_worker_gets_the_key_from_its_node(executor: tuple[Any, Path]) -> None:
    probe = ray.remote(worker_keys).options(num_cpus=0, resources={"rollout_slot": 1})
    got = ray.get(probe.remote(), timeout=120)
    assert got == {"named": KEY_VAR, KEY_VAR: digest(SECRET), FILE_VAR: digest(FILE_SECRET)}


def test_nothing_ray_wrote_holds_the_key(executor: tuple[Any, Path]) -> None:
    probe = ray.remote(worker_keys).options(num_cpus=0, resources={"rollout_slot": 1})
    ray.get([probe.remote() for _ in range(2)], timeout=120)  # some work: workers started, logs written
    _, temp = executor
    holding = []
    for path in temp.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 64 << 20:
            try:
                if SECRET.encode() in path.read_bytes():
                    holding.append(str(path.relative_to(temp)))
            except OSError:  # a socket or a file Ray removed meanwhile
                continue
    assert not holding, f"the key is in Ray's files: {holding}"


def test_a_node_without_the_named_key_fails_in_one_line(executor: tuple[Any, Path]) -> None:
    from runner.executors import ray_node
    from runner.executors.ray import _config_error

    absent = "OPTRUNNER_TEST_ABSENT_KEY"
    warm = ray.remote(ray_node.warm_up).options(num_cpus=0, resources={"rollout_slot": 1},
                                                runtime_env={"env_vars": {ray_keys.KEY_VARS: absent}})
    with pytest.raises(ray.exceptions.RayTaskError) as info:
        ray.get(warm.remote(), timeout=120)
    error = _config_error(info.value)
    assert isinstance(error, ConfigError)
    assert f"has no {absent}" in str(error) and "\n" not in str(error)

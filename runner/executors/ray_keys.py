"""How a Ray run's workers get the model's API key without it ever passing through Ray.

Why: whatever the driver puts in a Ray runtime env, Ray keeps in its control store, shows in its
dashboard and job table, and writes into the logs of every node that starts a worker for it. So the
driver sends only the NAMES of the key variables (`OPTRUNNER_KEY_VARS=ANTHROPIC_API_KEY`), and each
worker finds the values on its own node:

1. in its environment: Ray workers inherit the environment of the `ray start` (or `ray.init()`) that
   started their node, so `ANTHROPIC_API_KEY=... ray start ...` is enough; else
2. in the node's secrets file: the file `OPTRUNNER_SECRETS_FILE` names in that same environment,
   `KEY=VALUE` lines (`#` comments, blank lines, `export ` and quotes allowed), owned by the user the
   workers run as and readable by nobody else (`chmod 600`): a file whose group or others may read it is
   refused, as ssh refuses such a private key. The environment wins over the file.

A worker that still lacks a named key refuses its task with one line naming the node and the variable,
before any container starts (`check_node`).
"""
from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from harness.models.config import ModelConfig
from harness.models.scripted import is_scripted
from runner.config import ConfigError

KEY_VARS = "OPTRUNNER_KEY_VARS"  # the runtime env's one variable: names, comma-separated, never values
SECRETS_FILE = "OPTRUNNER_SECRETS_FILE"  # a node's own: the KEY=VALUE file its workers read keys from


def key_names(*names: str | None) -> list[str]:
    """The key variables a run's workers need (model.api_key_env, ...), each once, in order."""
    return list(dict.fromkeys(n for n in names if n))


def runtime_env(names: list[str]) -> dict[str, dict[str, str]]:
    """What the driver gives Ray for its workers: the key variables' names only (empty: nothing)."""
    return {"env_vars": {KEY_VARS: ",".join(names)}} if names else {}


def read_secrets_file(path: Path) -> dict[str, str]:
    """The KEY=VALUE entries of a node's secrets file; ConfigError (one line, never a value) when it
    cannot be used: missing, not a regular file, not the worker's, or open to group or others."""
    try:
        info = path.stat()
    except OSError as err:
        raise ConfigError(f"{SECRETS_FILE} names {path}, which cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{SECRETS_FILE} names {path}, which is not a regular file")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{SECRETS_FILE} names {path}, which belongs to another user (uid {info.st_uid}); "
                          "the Ray workers' own user must own it")
    if info.st_mode & 0o077:
        raise ConfigError(f"{SECRETS_FILE} names {path}, which group or others may read "
                          f"(mode {stat.S_IMODE(info.st_mode):o}): chmod 600 {path}")
    entries: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier():
            raise ConfigError(f"{path}:{number}: not a KEY=VALUE line")  # the line itself may hold a key
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        entries[name] = value
    return entries


def load_node_keys() -> None:
    """Put the node's secrets file's entries into this worker's environment where it lacks them."""
    path = os.environ.get(SECRETS_FILE)
    if not path:
        return
    for name, value in read_secrets_file(Path(path).expanduser()).items():
        if not os.environ.get(name):
            os.environ[name] = value


def check_node(model: ModelConfig | None = None) -> None:
    """On a worker: the keys the driver named are here (from the node's environment or secrets file);
    with none named, the provider's own variable litellm reads for `model` (OPENAI_API_KEY, ...).
    ConfigError saying which node lacks which variable otherwise."""
    load_node_keys()
    names = [n for n in os.environ.get(KEY_VARS, "").split(",") if n]
    missing = [n for n in names if not os.environ.get(n)]
    if not names and model is not None and not model.api_base and not is_scripted(model.name):
        from harness.models.model import provider_key_missing  # litellm: already loaded on a warm worker

        missing = provider_key_missing(model.name)
    if missing:
        raise ConfigError(f"the Ray node {socket.gethostname()} has no {', '.join(missing)}: set it in the "
                          f"environment of its `ray start`, or in the file {SECRETS_FILE} names there "
                          "(KEY=VALUE lines, chmod 600); keys are never sent through Ray")

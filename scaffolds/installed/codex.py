"""Codex CLI, OpenAI's agent CLI, as npm ships it: the per-platform release of `@openai/codex` (its version
`0.171.0-linux-x64` and the like), which holds a static musl build under `package/vendor/<triple>/` with the
tools it puts on its PATH (`codex-path/`: ripgrep). The main package is a Node launcher that picks that build
and runs it with `codex-path/` first on the PATH; here the build runs directly, on the same PATH, so no Node
is needed.

It runs `codex exec` on the task's text from stdin: no approvals and its own sandbox off (the rollout's
sandbox is the sandbox), in the task's working directory whether or not it is a git repository. Its model
provider is the gateway's `/v1/responses` (the Responses wire, streamed; the only wire Codex speaks), with
the rollout's token as its key, read from the variable its `env_key` names; no login is involved. Its events
go to stdout as JSON lines (`--json`), kept as its log with its final answer.

Checked against 0.171.0 with only loopback: with the settings below it opens no connection but the
gateway's, and makes no call but its agent loop's (no title, summary or model-list calls). Its one other
model call is compaction, when a conversation reaches its auto-compact limit (from the model's context
window, for the models it knows, or `model_auto_compact_token_limit`): a request on the same endpoint with
no tools and a summary prompt, which the gateway counts as a step like any other. It stays on: a real model
needs it on a long task, and a short script never gets there.
"""
from __future__ import annotations

import shlex

from scaffolds.installed.specs import AGENT_HOME, TASK_FILE, AgentSpec, Launch

VERSION = "0.171.0"
# Its config, state and session files. Not under /tmp (AGENT_HOME): there Codex refuses to make its helper
# links (`apply_patch` on the PATH of the commands it runs, which a model without Codex's apply_patch tool
# edits files with), as anyone may write there.
CODEX_HOME = "/var/lib/optrunner-agent/codex"
EVENTS_LOG = f"{AGENT_HOME}/codex.events.jsonl"  # `--json`: thread, turn and item events, the usage per turn
LAST_MESSAGE = f"{AGENT_HOME}/codex.last.txt"  # its final answer (`-o`)
SESSION = f"{CODEX_HOME}/sessions/*/*/*/rollout-*.jsonl"  # its own transcript: every item and turn context
KEY_VARIABLE = "OPTRUNNER_API_KEY"
PROVIDER = "optrunner"

# Everything but the model calls off: the update check, feedback uploads, usage analytics, and the hosted
# web search tool (an OpenAI server-side tool the gateway cannot run; it would only be dropped).
QUIET = ("check_for_update_on_startup=false", "feedback.enabled=false", "analytics.enabled=false",
         'web_search="disabled"')
# The commands it runs get the task image's environment as the scaffold's command has it, less the gateway's
# token (only Codex itself calls the model), in a plain shell: a login shell (its default, `bash -lc`) reads
# /etc/profile, which on Debian-based images sets PATH anew and drops what the image's ENV put first (a
# task's virtualenv, its toolchain).
SHELL = (f'shell_environment_policy.exclude=["{KEY_VARIABLE}"]', "allow_login_shell=false")
# On a failure, one line saying why (the scaffold reports the last line of the output, here an event): the
# message of its last `error` or `turn.failed` event.
FAILURE = ("rc=$?; if [ $rc -ne 0 ]; then echo \"codex exited with status $rc: $(grep -o "
           "'\"message\":\"[^\"]\\{{0,300\\}}' {log} | tail -n 1)\"; fi; exit $rc")


def _toml(value: str) -> str:
    """A TOML basic string (what `-c key=value` parses as TOML)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def provider(base_url: str) -> str:
    """The `model_providers` entry for the gateway. No retries of its own: the model layer behind the gateway
    retries a provider's passing failures, and a refused call (a limit) must stay refused."""
    fields = {"name": _toml(PROVIDER), "base_url": _toml(f"{base_url}/v1"), "env_key": _toml(KEY_VARIABLE),
              "wire_api": _toml("responses"), "request_max_retries": "0", "stream_max_retries": "0"}
    return "{" + ", ".join(f"{k} = {v}" for k, v in fields.items()) + "}"


def command(launch: Launch) -> str:
    """`codex exec` on the task file. Codex keeps no turn limit of its own: the step limit is the gateway's,
    which refuses the next call (403, which it does not retry) and the scaffold stops it."""
    env = {"HOME": AGENT_HOME, "CODEX_HOME": CODEX_HOME, KEY_VARIABLE: launch.token}
    config = (f"model_provider={_toml(PROVIDER)}", f"model_providers.{PROVIDER}={provider(launch.base_url)}",
              *QUIET, *SHELL)
    # --strict-config: a setting it does not know (a typo in scaffold.options.args) fails the run at once
    args = ["exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--strict-config",
            "--json", "-o", LAST_MESSAGE, "-m", launch.model]
    for setting in config:
        args += ["-c", setting]
    args += [*launch.extra, "-"]  # `-`: the prompt is stdin (no argument-length limit; a text may start with "-")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # the build for this machine (x86_64 or aarch64) and the tools the npm launcher puts on its PATH
    vendor = f"$(echo {launch.folder}/package/vendor/*-unknown-linux-musl)"
    # pipefail keeps codex's status through the tee that writes its log
    return (f"set -o pipefail; export {exports}; mkdir -p {CODEX_HOME}; vendor={vendor}; "
            f"export PATH=\"$vendor/codex-path:$PATH\"; \"$vendor/bin/codex\" "
            f"{' '.join(shlex.quote(a) for a in args)} < {TASK_FILE} | tee {EVENTS_LOG}; "
            + FAILURE.format(log=EVENTS_LOG))


SPEC = AgentSpec(
    name="codex", registry="npm", package=f"@openai/codex@{VERSION}-linux-{{arch}}", version=VERSION, module="",
    python=(0, 0), wire="openai_responses",
    step="a model call (one sampling request of its agent loop; a spawned subagent's calls are steps too); "
         "it has no turn limit of its own, the gateway's step limit stops it",
    command=command, logs=(EVENTS_LOG, LAST_MESSAGE, SESSION))

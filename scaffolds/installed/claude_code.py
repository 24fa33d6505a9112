"""Claude Code, Anthropic's agent CLI, as npm ships it: the per-platform package that holds its native
build (`package/claude`; the main `@anthropic-ai/claude-code` package only links one of these at
install time, and no Node is needed to run it).

It runs in print mode (`-p`) on the task's text from stdin, with every permission prompt skipped (as
root that needs IS_SANDBOX=1, which tells it the machine is a sandbox), and streams its events as JSON
lines, which are kept as its log. Its model calls go to the gateway's `/v1/messages` (streamed); the
rollout's token is its API key, which print mode uses without asking anyone to approve it.

Checked against 2.1.332 in a network namespace with only loopback: with the variables below it opens
no connection but the gateway's, and makes no call but the agent loop's own (no title, summary or
"quota" side calls, no count_tokens). Without them it also sends `GET /api/hello` to the base URL, looks
up api.anthropic.com for its MCP registry and its event logging, and fails those lookups fast.
"""
from __future__ import annotations

import shlex

from scaffolds.installed.specs import AGENT_HOME, TASK_FILE, AgentSpec, Launch

VERSION = "2.1.332"
STREAM_LOG = f"{AGENT_HOME}/claude.stream.jsonl"  # its stream-json events: messages, tool results, result

# Its documented switches for everything but the model calls: the updater, usage telemetry, error
# reports (the last three are also implied by the fourth, which covers the bug-report command and the
# other background traffic), and model calls that are not part of the task (flavor text and the like).
QUIET = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1"}
# Tool search off, as its docs advise for a gateway that does not pass `tool_reference` blocks on: with
# it, most tools are sent as names only (`defer_loading`) and loaded by a ToolSearch call whose answer
# only Anthropic's own API expands, which a model behind this gateway never sees. Off, every tool is
# sent whole (a call's prompt grows from ~13k to ~20k tokens).
TOOLS = {"ENABLE_TOOL_SEARCH": "false"}
# On a failure, one line of what its last event (the result) says: why it ended, its errors, its text.
FAILURE = ("rc=$?; if [ $rc -ne 0 ]; then echo \"claude exited with status $rc: $(tail -n 1 {log} | grep -o "
           "'\"terminal_reason\":\"[^\"]*\"\\|\"errors\":\\[[^]]*\\]\\|\"result\":\"[^\"]\\{{0,200\\}}' "
           "| tr '\\n' ' ')\"; fi; exit $rc")


def command(launch: Launch) -> str:
    """`claude -p` on the task file. `--max-turns` is its own limit on the agent loop's model calls (a
    turn is one assistant reply); at the limit it stops by itself with status 1 (`error_max_turns`),
    before the call the gateway would refuse. The served model name may be one it does not know: it
    warns, assumes a 1M-token context window and goes on."""
    env = {"HOME": AGENT_HOME, "ANTHROPIC_BASE_URL": launch.base_url, "ANTHROPIC_API_KEY": launch.token,
           "IS_SANDBOX": "1", **QUIET, **TOOLS}
    args = ["-p", "--output-format", "stream-json", "--verbose", "--model", launch.model,
            "--dangerously-skip-permissions"]
    if launch.max_steps:
        args += ["--max-turns", str(launch.max_steps)]
    args += launch.extra
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # stdin carries the task (no argument-length limit, and a text starting with "-" is no option);
    # pipefail keeps claude's status through the tee that writes its log
    return (f"set -o pipefail; export {exports}; {launch.folder}/package/claude "
            f"{' '.join(shlex.quote(a) for a in args)} < {TASK_FILE} | tee {STREAM_LOG}; "
            + FAILURE.format(log=STREAM_LOG))


SPEC = AgentSpec(
    name="claude_code", registry="npm", package=f"@anthropic-ai/claude-code-linux-{{arch}}{{musl}}@{VERSION}",
    version=VERSION, module="", python=(0, 0), wire="anthropic_messages",
    step="a model call of its main loop, one assistant turn (its `--max-turns`); the calls of subagents it "
         "starts go through the gateway too and are steps there",
    command=command, logs=(STREAM_LOG, f"{AGENT_HOME}/.claude/projects/*/*.jsonl"))  # and its session transcript

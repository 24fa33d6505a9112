"""OpenHands' agent (the SDK's CodeAct lineage: terminal, file editor, task tracker, think, finish) on a task,
started inside the sandbox it works in. It runs on the agent's own interpreter beside the SDK's packages in the
agent's folder (openhands.py puts it there); the project never imports it.

The SDK runs an agent in-process on a local workspace, so nothing stands between it and the sandbox: the
workspace is the task's working directory, the terminal its tmux backend (the SDK's default where tmux exists),
the preset is the SDK's default agent in CLI mode (no browser tools) with its default condenser. Changed from its
defaults: the model (`openai/<name>` at the gateway, the rollout's token as the key, read then removed from the
environment so the terminal never holds it), its retries off (the gateway refuses only what a limit ends),
`max_iteration_per_run` = the run's step limit, no visualizer (its events are kept as JSON lines instead).

usage: openhands --model NAME --api-base URL --task FILE [--max-iterations N] [--logs DIR]
exit status 0 when the conversation ends (finished, or at its iteration limit), 1 when it raised, 3 when it
ended stuck (its stuck detector) or in an error state.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from pydantic import SecretStr

from openhands.sdk import LLM, Conversation
from openhands.sdk.conversation.state import ConversationExecutionStatus
from openhands.tools.preset.default import get_default_agent


def main() -> None:
    parser = argparse.ArgumentParser(prog="openhands")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--max-iterations", type=int, default=0)
    parser.add_argument("--logs", default="/tmp/optrunner-agent/openhands")
    args = parser.parse_args()
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    token = os.environ.pop("OPENAI_API_KEY", "")  # the terminal it starts inherits this process's environment
    llm = LLM(model=f"openai/{args.model}", api_key=SecretStr(token), base_url=args.api_base, usage_id="agent",
              num_retries=0)
    agent = get_default_agent(llm, cli_mode=True)
    events = (logs / "events.jsonl").open("a")

    def keep(event) -> None:  # noqa: ANN001 - the SDK's event type
        events.write(json.dumps(event.model_dump(mode="json"), default=str) + "\n")
        events.flush()

    conversation = Conversation(agent=agent, workspace=os.getcwd(), callbacks=[keep], visualizer=None,
                                max_iteration_per_run=args.max_iterations or 500)
    try:
        conversation.send_message(Path(args.task).read_text())
        conversation.run()
    except Exception as exc:  # noqa: BLE001 - its one line is what the rollout's record says
        print(f"openhands raised {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
        sys.exit(1)
    status = conversation.state.execution_status
    print(f"openhands: conversation {status.value}")
    sys.exit(3 if status in (ConversationExecutionStatus.STUCK, ConversationExecutionStatus.ERROR) else 0)

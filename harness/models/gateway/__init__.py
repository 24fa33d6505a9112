"""The model gateway: the HTTP endpoint agent CLIs running inside sandboxes call as their model API.

server.py              Gateway: serves given (or its own) listening sockets, tokens per rollout, call log
session.py             the handler contract (Handler, Refused, model_handler) and the call log's records
wire.py                what the wire formats share: the translated request, ids, server-sent events
openai_chat.py         POST /v1/chat/completions (+ GET /v1/models): mini-swe-agent, terminus-2, litellm
anthropic_messages.py  POST /v1/messages (+ count_tokens): Claude Code
openai_responses.py    POST /v1/responses: Codex CLI
bench.py               overhead_ms: the gateway's own time per call

Every model call still goes through the model layer (the handler normally calls `Model.query`), so
limits, prices, retries and usage stay where they are for the project's own scaffolds.
"""
from __future__ import annotations

from harness.models.gateway.server import Gateway
from harness.models.gateway.session import CallUsage, GatewayCall, Handler, Refused, model_handler

__all__ = ["CallUsage", "Gateway", "GatewayCall", "Handler", "Refused", "model_handler"]

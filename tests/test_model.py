"""The model layer over the real network path: litellm -> OpenAI SDK -> HTTP -> a loopback server that
plays the provider (tests/openai_server.py). Covers retries (what is retried, how often, how long it
waits), error kinds and messages, token and cost accounting, tool calls, prompt-caching breakpoints,
and the scripted provider path used by every offline run."""
from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import pytest

from harness.models import scripted
from harness.models.config import ModelConfig
from harness.models.errors import ModelError
from harness.models.loader import litellm_module
from harness.models.model import Model
from harness.models.records import Price, parse_arguments, tool_result
from tests.openai_server import OpenAIServer, Reply, anthropic_message, completion, error, usage

PRICE = Price(input=2.0, output=8.0, cache_read=0.5, cache_write=3.0)  # USD per million tokens
MESSAGES = [{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Say hi."}]
BASH_TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Run a command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def model(server: OpenAIServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = dict(name="openai/test-model", api_base=server.base_url,
                                  price=PRICE, attempts=3, backoff_s=0.01, backoff_max_s=5.0, timeout_s=5.0)
    fields.update(overrides)
    sampling = {k: fields.pop(k) for k in ("temperature", "seed") if k in fields}
    return Model(ModelConfig(**fields), api_key="sk-test", **sampling)


def expect_error(m: Model, kind: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        m.query(MESSAGES)
    assert info.value.kind == kind, str(info.value)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message  # one readable line, not a dump
    assert message.startswith("openai/test-model: ")
    return info.value


# ---------------------------------------------------------------- retries
def test_rate_limit_waits_for_retry_after_then_succeeds(server: OpenAIServer) -> None:
    server.push(Reply(status=429, headers={"Retry-After": "1"}, body=error("Rate limit reached", type_="requests",
                                                                           code="rate_limit_exceeded")),
                Reply(body=completion("hi")))
    reply = model(server).query(MESSAGES)
    assert reply.content == "hi"
    assert reply.record.attempts == 2
    assert len(server.requests) == 2
    # backoff_s is 0.01: only the header can explain a one-second gap.
    assert server.requests[1].at - server.requests[0].at >= 0.95


@pytest.mark.parametrize("status,body", [
    (500, error("The server had an error", type_="server_error")),
    # litellm maps this body to BadRequestError whatever the status; the 503 must still be retried.
    (503, error("overloaded", type_="invalid_request_error")),
])
def test_repeated_server_errors_exhaust_attempts(server: OpenAIServer, status: int, body: dict) -> None:
    server.push(*[Reply(status=status, body=body)] * 3)
    exc = expect_error(model(server, attempts=3), "transient")
    assert "after 3 attempts" in str(exc)
    assert len(server.requests) == 3


def test_litellm_and_sdk_retries_are_off(server: OpenAIServer) -> None:
    # The OpenAI SDK alone would send 3 requests for one 500 (its default max_retries=2).
    server.push(Reply(status=500, body=error("boom", type_="server_error")))
    expect_error(model(server, attempts=1), "transient")
    assert len(server.requests) == 1  # SDK retries would have happened before the error surfaced


def test_slow_reply_times_out_and_is_retried(server: OpenAIServer) -> None:
    server.push(Reply(body=completion("late"), delay_s=1.5), Reply(body=completion("fast")))
    started = time.monotonic()
    reply = model(server, timeout_s=0.5).query(MESSAGES)
    assert reply.content == "fast"
    assert reply.record.attempts == 2
    assert len(server.requests) == 2
    assert time.monotonic() - started < 1.4  # the client gave up on the slow reply, it did not wait it out


# ---------------------------------------------------------------- permanent errors
@pytest.mark.parametrize("status,body", [
    (401, error("Incorrect API key provided: sk-test.", code="invalid_api_key")),
    (401, error("Invalid key", type_="invalid_request_error")),  # litellm calls this a BadRequestError
    (403, error("This key has no access to the model", type_="permission_error")),
])
def test_auth_errors_are_not_retried(server: OpenAIServer, status: int, body: dict) -> None:
    server.push(Reply(status=status, body=body))
    exc = expect_error(model(server), "auth")
    assert "API key" in str(exc)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status,body,kind", [
    (400, error("Invalid 'temperature': above maximum value."), "bad_request"),
    (400, error("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
                "tokens.", code="context_length_exceeded"), "context_window"),
    (404, error("The model `test-model` does not exist", code="model_not_found"), "not_found"),
])
def test_permanent_errors_are_not_retried(server: OpenAIServer, status: int, body: dict, kind: str) -> None:
    server.push(Reply(status=status, body=body))
    expect_error(model(server), kind)
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [
    Reply(raw=b"<html><body>502 Bad Gateway</body></html>"),
    Reply(body={"id": "x", "object": "chat.completion", "model": "test-model"}),  # no choices
    Reply(body={"id": "x", "object": "chat.completion", "created": 1, "model": "test-model", "choices": [],
                "usage": usage()}),
], ids=["not-json", "no-choices", "empty-choices"])
def test_malformed_bodies_give_a_clear_error_and_bounded_retries(server: OpenAIServer, reply: Reply) -> None:
    server.push(*[reply] * 5)
    with pytest.raises(ModelError) as info:
        model(server, attempts=3).query(MESSAGES)
    assert info.value.kind in ("transient", "error")
    assert "\n" not in str(info.value) and len(str(info.value)) < 500
    assert 1 <= len(server.requests) <= 3


# ---------------------------------------------------------------- what is sent, what is counted
def test_request_carries_the_configuration(server: OpenAIServer) -> None:
    server.push(Reply(body=completion("hi")))
    model(server, temperature=0.1, seed=7, kwargs={"max_tokens": 64}).query(MESSAGES, stop=["</function"])
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.body
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert (body["temperature"], body["seed"], body["stop"], body["max_tokens"]) == (0.1, 7, ["</function"], 64)
    assert "tools" not in body and "max_retries" not in body and "num_retries" not in body
    assert "cache_control" not in json.dumps(body)  # not a Claude model: no breakpoints


def test_usage_and_cost_match_the_price(server: OpenAIServer) -> None:
    server.push(Reply(body=completion("a", usage_=usage(prompt=1000, completion=300, cached=400, reasoning=120))),
                Reply(body=completion("b", usage_=usage(prompt=2000, completion=100))))
    m = model(server)
    first = m.query(MESSAGES).record
    second = m.query(MESSAGES).record
    assert (first.input_tokens, first.cached_read_tokens, first.output_tokens, first.reasoning_tokens) == \
        (1000, 400, 300, 120)
    assert first.finish_reason == "stop" and first.attempts == 1
    # Cached tokens are part of prompt_tokens and are billed at the cache-read price; reasoning is output.
    expected_first = (600 * 2.0 + 400 * 0.5 + 300 * 8.0) / 1e6
    expected_second = (2000 * 2.0 + 100 * 8.0) / 1e6
    assert first.cost_usd == pytest.approx(expected_first, rel=1e-9)
    assert second.cost_usd == pytest.approx(expected_second, rel=1e-9)
    total = m.usage
    assert (total.calls, total.input_tokens, total.cached_read_tokens, total.output_tokens,
            total.reasoning_tokens) == (2, 3000, 400, 400, 120)
    assert total.cost_known and total.cost_usd == pytest.approx(expected_first + expected_second, rel=1e-9)


def test_unpriced_model_reports_unknown_cost_and_warns_once(server: OpenAIServer,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    name = f"openai/unpriced-{uuid.uuid4().hex[:8]}"  # litellm's price map is global: a name no test priced
    server.push(Reply(body=completion("a", model=name)), Reply(body=completion("b", model=name)))
    m = model(server, name=name, price=None)
    with caplog.at_level(logging.WARNING, logger="harness.models.model"):
        records = [m.query(MESSAGES).record for _ in range(2)]
    assert [r.cost_usd for r in records] == [None, None]
    assert m.usage.cost_known is False and m.usage.calls == 2
    warnings = [r for r in caplog.records if r.name == "harness.models.model" and "no known price" in r.getMessage()]
    assert len(warnings) == 1 and name in warnings[0].getMessage()


def test_tool_call_round_trip(server: OpenAIServer) -> None:
    server.push(Reply(body=completion(None, tool_calls=[{"name": "bash", "arguments": '{"command": "ls -la"}'}])),
                Reply(body=completion("done")))
    m = model(server, native_tools=True)
    reply = m.query(MESSAGES, tools=[BASH_TOOL])
    assert server.requests[0].body["tools"] == [BASH_TOOL]
    assert [(c.id, c.name) for c in reply.tool_calls] == [("call_0", "bash")]
    assert parse_arguments(reply.tool_calls[0]) == {"command": "ls -la"}
    assert reply.record.finish_reason == "tool_calls"
    assert reply.message["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls -la"}'}
    # The assistant message and the tool result go back to the provider in OpenAI's shape.
    m.query(MESSAGES + [reply.message, tool_result(reply.tool_calls[0], "total 0")], tools=[BASH_TOOL])
    sent = server.requests[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_0"
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_0", "name": "bash", "content": "total 0"}


# ---------------------------------------------------------------- prompt caching
LONG = MESSAGES + [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "Again."}]


@pytest.mark.parametrize("caching", [None, False])
def test_claude_gets_cache_breakpoints_unless_disabled(server: OpenAIServer, caching: bool | None) -> None:
    server.push(Reply(body=anthropic_message("hi")))
    m = Model(ModelConfig(name="anthropic/claude-test", api_base=server.base_url.removesuffix("/v1"),
                          price=PRICE, attempts=1, prompt_caching=caching), api_key="sk-test")
    assert m.query(LONG).content == "hi"
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    system, last = sent.body["system"][-1], sent.body["messages"][-1]["content"][-1]
    marked = [block for block in (system, last) if block.get("cache_control") == {"type": "ephemeral"}]
    if caching is None:  # default for a Claude model: system prompt and newest message are breakpoints
        assert marked == [system, last]
        assert json.dumps(sent.body).count("cache_control") == 2
    else:
        assert "cache_control" not in json.dumps(sent.body)


# ---------------------------------------------------------------- the scripted provider
MINI_MESSAGES = [{"role": "system", "content": "Reply with one ```mswea_bash_command block."},
                 {"role": "user", "content": "Make it faster."}]


def test_scripted_model_cost_is_its_price_times_usage() -> None:
    m = Model(ModelConfig(name="scripted/script"), script=scripted.Script(steps=[{"bash": "ls"}, {"finish": "done"}]))
    first = m.query(MINI_MESSAGES)
    assert "```mswea_bash_command\nls\n```" in first.content
    second = m.query(MINI_MESSAGES)
    assert scripted.SUBMIT_SENTINEL in second.content
    for record in (first.record, second.record):
        expected = (record.input_tokens * scripted.PRICE["input"] + record.output_tokens * scripted.PRICE["output"])
        assert record.input_tokens > 0 and record.output_tokens > 0
        assert record.cost_usd == pytest.approx(expected / 1e6, rel=1e-9)
    assert m.usage.cost_usd == pytest.approx((first.record.cost_usd or 0) + (second.record.cost_usd or 0))


def test_scripted_rate_limit_step_waits_its_retry_after_until_the_wait_budget() -> None:
    steps = [{"error": 429, "retry_after": 0.2}, {"finish": "done"}]
    m = Model(ModelConfig(name="scripted/script", attempts=1, backoff_s=0.001, rate_limit_max_wait_s=0.5),
              script=scripted.Script(steps=steps))
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        m.query(MINI_MESSAGES)
    # The provider is stateless per call index, so every attempt of this call meets the same 429 step:
    # 429s do not use up attempts (1 here); the call waits the hinted 0.2 s twice, then gives up at once
    # since a third pause would exceed the 0.5 s wait budget.
    assert info.value.kind == "transient" and "rate_limit_max_wait_s=0.5" in str(info.value)
    assert "\n" not in str(info.value) and "scripted provider error 429" in str(info.value)
    assert 0.4 <= time.monotonic() - started < 2.0
    reply = m.query(MINI_MESSAGES)  # the next call moves on, after the pause the last 429 asked for
    assert scripted.SUBMIT_SENTINEL in reply.content
    assert reply.record.rate_limited == 0 and reply.record.rate_limit_wait_s > 0.1


def test_scripted_provider_is_registered_only_when_a_scripted_model_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    # In this process, as in a fresh one: litellm without the provider (earlier tests registered it; put back
    # after the test). A fresh process checks the imports alone (without litellm's seconds-long import).
    lm = litellm_module()
    monkeypatch.setattr(lm, "custom_provider_map",
                        [p for p in lm.custom_provider_map if p.get("provider") != scripted.PROVIDER])
    monkeypatch.setattr(lm, "_optrunner_scripted", False, raising=False)

    def names() -> list[str | None]:
        return [p.get("provider") for p in lm.custom_provider_map]

    Model(ModelConfig(name="openai/gpt-test"))
    assert "scripted" not in names()
    Model(ModelConfig(name="scripted/noop"))
    Model(ModelConfig(name="scripted/noop"))
    assert names().count("scripted") == 1


def test_importing_the_model_layer_registers_no_provider() -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import sys\n"
        "from harness.models.config import ModelConfig\n"
        "from harness.models.loader import litellm_module\n"
        "from harness.models.model import Model\n"
        "lm = sys.modules.get('litellm')\n"
        "print('registered', bool(lm and (getattr(lm, '_optrunner_scripted', False) or "
        "any(p.get('provider') == 'scripted' for p in lm.custom_provider_map))))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "registered False" in done.stdout


# ---------------------------------------------------------------- keys
PROVIDER_KEYS = ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "DEEPSEEK_API_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)


def keyless(server: OpenAIServer, **overrides: Any) -> Model:
    """A `model=local` as a new user configures it: api_base, a price, no key anywhere."""
    fields: dict[str, Any] = dict(name="openai/test-model", api_base=server.base_url, price=PRICE, attempts=3,
                                  backoff_s=0.01)
    fields.update(overrides)
    return Model(ModelConfig(**fields))


def test_local_server_without_a_key_gets_a_placeholder(server: OpenAIServer, no_keys: None) -> None:
    server.push(Reply(body=completion("hi")))
    assert keyless(server).query(MESSAGES).content == "hi"
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer no-key"]


def test_a_configured_key_wins_over_the_placeholder(server: OpenAIServer, no_keys: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standard")
    monkeypatch.setenv("MY_SERVER_KEY", "sk-mine")
    server.push(Reply(body=completion("a")), Reply(body=completion("b")))
    keyless(server).query(MESSAGES)  # litellm reads the provider's own variable
    keyless(server, api_key_env="MY_SERVER_KEY").query(MESSAGES)
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-standard", "Bearer sk-mine"]


def test_a_server_refusing_the_placeholder_is_an_auth_error_after_one_request(server: OpenAIServer,
                                                                              no_keys: None) -> None:
    server.push(*[Reply(status=401, body=error("Invalid API key", code="invalid_api_key"))] * 3)
    with pytest.raises(ModelError) as info:
        keyless(server).query(MESSAGES)
    assert info.value.kind == "auth" and len(server.requests) == 1


@pytest.mark.parametrize("name, variable", [("openai/test-model", "OPENAI_API_KEY"),
                                            ("anthropic/claude-test", "ANTHROPIC_API_KEY"),
                                            ("gemini/gemini-test", "GEMINI_API_KEY")])
def test_a_key_missing_on_the_client_side_is_an_auth_error_at_once(name: str, variable: str, no_keys: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # No api_base: litellm's client refuses before sending anything ("Missing credentials", wrapped by
    # litellm as a 500 for OpenAI, a connection error for Gemini). It must not be retried as transient.
    lm = litellm_module()
    sent: list[str] = []
    real = lm.completion

    def counting(**kwargs: Any) -> Any:
        sent.append(kwargs["model"])
        return real(**kwargs)

    monkeypatch.setattr(lm, "completion", counting)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        Model(ModelConfig(name=name, price=PRICE, attempts=4, backoff_s=1.0)).query(MESSAGES)
    assert info.value.kind == "auth", str(info.value)
    assert sent == [name] and time.monotonic() - started < 1.0  # one try, no backoff
    assert "(no API key: set " in str(info.value) and variable in str(info.value).split("(no API key")[-1]
    assert "\n" not in str(info.value)


def test_an_exhausted_quota_is_permanent(server: OpenAIServer) -> None:
    server.push(*[Reply(status=429, body=error("You exceeded your current quota, please check your plan and "
                                               "billing details.", code="insufficient_quota",
                                               type_="insufficient_quota"))] * 3)
    exc = expect_error(model(server), "quota")
    assert "no credit or quota" in str(exc) and len(server.requests) == 1


# ---------------------------------------------------------------- reasoning fields
THOUGHT = "The user wants a listing; run ls first."


def deepseek_reply() -> dict[str, Any]:
    body = completion(None, tool_calls=[{"name": "bash", "arguments": '{"command": "ls"}'}], model="deepseek-reasoner")
    body["choices"][0]["message"]["reasoning_content"] = THOUGHT
    return body


@pytest.mark.parametrize("name, kwargs", [
    ("openai/test-model", {}),  # an OpenAI-compatible server (vLLM, SGLang return reasoning_content too)
    ("deepseek/deepseek-reasoner", {"thinking": {"type": "enabled"}}),  # DeepSeek's thinking mode
])
def test_reasoning_content_goes_back_with_the_tool_call_turn(server: OpenAIServer, name: str,
                                                             kwargs: dict[str, Any]) -> None:
    server.push(Reply(body=deepseek_reply()), Reply(body=completion("done")))
    m = model(server, name=name, native_tools=True, kwargs=kwargs)
    reply = m.query(MESSAGES, tools=[BASH_TOOL])
    assert reply.message["reasoning_content"] == THOUGHT
    assert "provider_specific_fields" not in reply.message  # only empty values there ({"refusal": None})
    json.dumps(reply.message)  # stored in trajectories as is
    m.query(MESSAGES + [reply.message, tool_result(reply.tool_calls[0], "a.py")], tools=[BASH_TOOL])
    sent = server.requests[1].body["messages"][-2]
    # Not litellm's one-space placeholder for DeepSeek, nor nothing: the model's own reasoning.
    assert sent["role"] == "assistant" and sent["reasoning_content"] == THOUGHT


def test_claude_thinking_blocks_go_back_signed(server: OpenAIServer) -> None:
    thinking = {"type": "thinking", "thinking": THOUGHT, "signature": "sig-abc"}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}
    server.push(Reply(body=anthropic_message(content=[thinking, tool_use])), Reply(body=anthropic_message("done")))
    m = Model(ModelConfig(name="anthropic/claude-test", api_base=server.base_url.removesuffix("/v1"), price=PRICE,
                          attempts=1, native_tools=True, prompt_caching=False), api_key="sk-test")
    reply = m.query(MESSAGES, tools=[BASH_TOOL])
    assert reply.message["thinking_blocks"] == [thinking]
    m.query(MESSAGES + [reply.message, tool_result(reply.tool_calls[0], "a.py")], tools=[BASH_TOOL])
    assistant = server.requests[1].body["messages"][-2]
    assert assistant["role"] == "assistant"
    blocks = assistant["content"]
    assert blocks[0] == thinking and blocks[-1] == tool_use  # first, as Anthropic requires, and signed
    assert [b["type"] for b in blocks].count("thinking") == 1  # not repeated from provider_specific_fields

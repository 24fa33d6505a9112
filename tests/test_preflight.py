"""The access check before a run (harness/models/preflight.py): a missing key names its variable, a
refused key, an unknown model or a refused request is one line saying how to fix it, a provider that is
merely down is not a refusal, and scripted models are never checked."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from harness.models import ratelimit
from harness.models.config import ModelConfig
from harness.models.preflight import Preflight, check_access
from harness.models.records import Price
from tests.openai_server import OpenAIServer, Reply, completion, error, usage

PRICE = Price(input=2.0, output=8.0)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    ratelimit.reset()
    yield
    ratelimit.reset()


def local(server: OpenAIServer, **overrides: Any) -> ModelConfig:
    """`model=local` as docs/configuration.md configures it: no key."""
    fields: dict[str, Any] = dict(name="openai/test-model", api_base=server.base_url, price=PRICE, backoff_s=0.01)
    fields.update(overrides)
    return ModelConfig(**fields)


def one_line(result: Preflight) -> str:
    assert result.problem is not None and not result.ok
    assert "\n" not in result.problem and len(result.problem) < 600
    return result.problem


def test_scripted_models_are_not_checked() -> None:
    result = check_access(ModelConfig(name="scripted/oracle"))
    assert result.ok and result.record is None and result.warning is None


def test_a_missing_key_variable_is_named_before_any_request() -> None:
    problem = one_line(check_access(ModelConfig(name="anthropic/claude-test", api_key_env="ANTHROPIC_API_KEY")))
    assert "set the environment variable ANTHROPIC_API_KEY" in problem


@pytest.mark.parametrize("prefix, meant", [("antropic", "anthropic"), ("opnai", "openai")])
def test_a_misspelt_provider_is_named_with_the_nearest_before_any_request(prefix: str, meant: str,
                                                                          server: OpenAIServer) -> None:
    server.push(Reply(body=completion("never")))  # (a server that would answer: it must not be asked)
    problem = one_line(check_access(local(server, name=f"{prefix}/some-model")))
    assert server.requests == []
    assert f"no provider {prefix!r}" in problem and f"did you mean {meant}/some-model?" in problem


def test_a_bare_name_litellm_cannot_place_asks_for_a_provider_prefix() -> None:
    problem = one_line(check_access(ModelConfig(name="no-such-model-here", price=PRICE)))
    assert "name it PROVIDER/MODEL" in problem and "nothing" not in problem.split(":")[0]


@pytest.mark.parametrize("name, variable", [("openai/gpt-test", "OPENAI_API_KEY"),
                                            ("gemini/gemini-test", "GEMINI_API_KEY")])
def test_the_providers_own_key_variable_is_named(name: str, variable: str) -> None:
    problem = one_line(check_access(ModelConfig(name=name, price=PRICE)))  # litellm's validate_environment
    assert problem.startswith(f"{name}: no API key") and variable in problem


@dataclasses.dataclass
class RunnerModelConf(ModelConfig):
    """Like the runner's `ModelConf`: a subclass with fields of its own."""
    id: str = "local"
    served_name: str | None = None


def test_a_working_local_server_passes_with_one_tiny_request(server: OpenAIServer) -> None:
    server.push(Reply(body=completion("Hello", usage_=usage(prompt=8, completion=1))))
    config = RunnerModelConf(name="openai/test-model", api_base=server.base_url, price=PRICE, served_name="test-model",
                             kwargs={"reasoning_effort": "high", "max_tokens": 4000, "top_p": 0.9})
    result = check_access(config)
    assert result.ok and result.warning is None
    assert result.record is not None and (result.record.input_tokens, result.record.output_tokens) == (8, 1)
    assert result.record.cost_usd == pytest.approx((8 * 2.0 + 1 * 8.0) / 1e6)  # count it into the run's cost
    sent = server.requests[0]
    assert len(server.requests) == 1 and sent.headers["authorization"] == "Bearer no-key"
    assert sent.body["max_tokens"] == 1 and sent.body["top_p"] == 0.9
    assert "reasoning_effort" not in sent.body  # a thinking budget must not clash with max_tokens=1
    assert [m["content"] for m in sent.body["messages"]] == ["Hi"]


@pytest.mark.parametrize("reply, expected", [
    (Reply(status=401, body=error("Invalid API key", code="invalid_api_key")),
     "Invalid API key): the server wants an API key: put it in an environment variable and set "
     "model.api_key_env to that variable's name"),
    (Reply(status=404, body=error("The model `test-model` does not exist", code="model_not_found")),
     "does not know this model (litellm.NotFoundError: OpenAIException - The model `test-model` does not exist): "
     "check model.served_name (the name the server serves)"),
    (Reply(status=400, body=error("Unrecognized request argument supplied: top_k")),
     "refused a minimal request"),
    (Reply(status=429, body=error("You exceeded your current quota.", code="insufficient_quota",
                                  type_="insufficient_quota")),
     "says this key has no quota left"),
], ids=["auth", "not-found", "bad-request", "quota"])
def test_refusals_are_one_line_after_one_request(server: OpenAIServer, reply: Reply, expected: str) -> None:
    server.push(reply, reply)
    problem = one_line(check_access(local(server)))
    assert problem.startswith("openai/test-model: ") and expected in problem
    assert f"at {server.base_url}" in problem
    assert len(server.requests) == 1


def test_a_refused_key_names_its_variable(server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-wrong")
    server.push(Reply(status=403, body=error("This key has no access", type_="permission_error")))
    problem = one_line(check_access(local(server, api_key_env="MY_KEY")))
    assert "check the key in MY_KEY" in problem
    assert server.requests[0].headers["authorization"] == "Bearer sk-wrong"


def test_a_provider_that_is_down_is_a_warning_not_a_refusal(server: OpenAIServer) -> None:
    boom = Reply(status=503, body=error("overloaded", type_="server_error"))
    server.push(*[boom] * 5)
    result = check_access(local(server, attempts=6))
    assert result.ok and result.record is None
    assert result.warning is not None and "could not reach the model" in result.warning
    assert len(server.requests) == 2  # the probe gives up after 2 attempts, whatever the run's setting

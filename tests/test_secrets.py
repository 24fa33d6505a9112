"""Secrets (issue 33), without Ray: keys stay off the command line, out of recorded errors, and a huge
Retry-After cannot shut a model off.

- the real CLI (`python -m runner`) refuses a credential on its command line in one line, exit 2, no
  traceback, never echoing the value, and writes nothing;
- `redact` on a hand-written table, and through real litellm calls to the loopback server whose errors
  echo the key that was sent: the ModelError (what rollout records and trajectories keep) has none;
- `Retry-After: 1e9` from the loopback server: the call waits `rate_limit_max_wait_s`, then succeeds;
- a node's secrets file (runner.executors.ray_keys): read, and refused when others may read it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.models.config import ModelConfig
from harness.models.errors import ModelError
from harness.models.model import Model
from harness.models.redaction import REDACTED, carries_credential, redact, secret_name
from runner.config import ConfigError
from runner.executors import ray_keys
from tests.openai_server import OpenAIServer, Received, Reply, completion, error

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "Say hi."}]
# A key of no provider's shape: only the process's own knowledge of it can redact it.
PLAIN_KEY = "live-3f9a1c0d7e2b4a68"


# ---------------------------------------------------------------- the command line
@pytest.mark.parametrize("arg, secret", [
    ("++model.kwargs.api_key=sk-live-abcdef0123456789", "sk-live-abcdef0123456789"),
    ("model.kwargs.api_key=plainvalue99", "plainvalue99"),
    ("model.api_key=plainvalue99", "plainvalue99"),
    ("+model.api_key=plainvalue99", "plainvalue99"),
    ("++model.kwargs.aws_secret_access_key=plainvalue99", "plainvalue99"),
    ("++judge.kwargs.auth_token=plainvalue99", "plainvalue99"),
    ("++model.kwargs.api_key=${oc.env:SOME_KEY}", "${oc.env:SOME_KEY}"),  # config.yaml would hold its value
    ("model.api_base=https://user:tok3nvalue@proxy.example/v1", "tok3nvalue"),
    ("model.api_base=https://proxy.example/v1?key=AIzaPlainValue99", "AIzaPlainValue99"),
    ("model.api_base=https://proxy.example/v1?alt=json&api_key=plainvalue99", "plainvalue99"),
    ("++model.kwargs.extra_headers={Authorization: Bearer plainvalue99}", "plainvalue99"),
    ("++model.kwargs={api_key: plainvalue99}", "plainvalue99"),
    ("++model.kwargs.note=sk-proj-abcdef0123456789", "sk-proj-abcdef0123456789"),
    ("--api-key", ""),
])
def test_a_credential_on_the_command_line_is_refused_in_one_line(tmp_path: Path, arg: str, secret: str) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "runner", f"output_root={out}", "tasks=smoke", arg],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    assert "api_key_env" in lines[0]  # says where a key goes instead
    if secret:
        assert secret not in done.stderr + done.stdout
    assert not out.exists() and list(tmp_path.iterdir()) == [], "nothing may be written"


def test_a_credential_in_a_sweep_job_is_refused_too() -> None:
    """The sweep check and the judge command take overrides through check_job_args."""
    from runner.overrides import check_job_args

    with pytest.raises(ConfigError, match="model.kwargs.api_key"):
        check_job_args(["++model.kwargs.api_key=abc"])


def test_settings_that_only_name_a_key_are_not_refused() -> None:
    from runner.overrides import refuse_credentials

    refuse_credentials(["model.api_key_env=OPENAI_API_KEY", "++model.kwargs.max_tokens=100",
                        "model.api_base=http://127.0.0.1:8000/v1", "tasks.repo_mirror=ssh://git@host/repo.git",
                        "~model.kwargs.api_key", "model.name=openai/gpt-4o"])


# ---------------------------------------------------------------- redact
ENV = {"OPENAI_API_KEY": "abc123def456ghi789", "MY_SERVICE_TOKEN": "tok-9f8e7d6c5b", "HOME": "/home/someone",
       "SHORT_API_KEY": "short"}


@pytest.mark.parametrize("text, expected", [
    ("Incorrect API key provided: sk-proj-ABCdef0123456789xyz. You can find your API key at https://x",
     f"Incorrect API key provided: {REDACTED}. You can find your API key at https://x"),
    ("masked: sk-ant-api03-abc*****************wxyz", f"masked: {REDACTED}"),
    ("401 from https://gen.example/v1/models?key=AIzaSyDUMMYdummy0123456789abcdefghijk&alt=sse",
     f"401 from https://gen.example/v1/models?key={REDACTED}&alt=sse"),
    ("POST body api_key=zzzzzz&model=x", f"POST body api_key={REDACTED}&model=x"),
    ("headers: {'Authorization': 'Bearer eyJhbGciOi.payload.sig'}",
     f"headers: {{'Authorization': 'Bearer {REDACTED}'}}"),
    ("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {REDACTED}"),
    ('{"error": {"api_key": "qwertyuiop"}}', f'{{"error": {{"api_key": "{REDACTED}"}}}}'),
    ("x-api-key: 0123456789", f"x-api-key: {REDACTED}"),
    ("proxy https://bob:s3cr3t@proxy.example:8080/v1 refused",
     f"proxy https://bob:{REDACTED}@proxy.example:8080/v1 refused"),
    ("echo abc123def456ghi789 back", f"echo {REDACTED} back"),  # a key variable's value, in any shape
    ("tok-9f8e7d6c5b expired", f"{REDACTED} expired"),
    ("hf_abcdefghijklmnopqrstuvwxyz and ghp_abcdefghijklmnopqrstuvwxyz", f"{REDACTED} and {REDACTED}"),
    ("AKIAABCDEFGHIJKLMNOP is not allowed", f"{REDACTED} is not allowed"),
    # left alone: no credential in them
    ("This model's maximum context length is 8192 tokens; max_tokens=100", None),
    ("Unexpected token: '<' at position 0", None),
    ("short key short here; /home/someone/x", None),  # below the length a secret needs; not a key variable
    ("monkey=3 keyed=4 task-abcdefghijklmnop", None),
    ("ssh://git@github.com/org/repo.git", None),
    ("", None),
])
def test_redact_table(text: str, expected: str | None) -> None:
    assert redact(text, ENV) == (text if expected is None else expected)
    assert redact(redact(text, ENV), ENV) == redact(text, ENV)  # redacting twice changes nothing more
    assert carries_credential(text, ENV) == (expected is not None)


@pytest.mark.parametrize("name, secret", [
    ("OPENAI_API_KEY", True), ("api_key", True), ("apiKey", True), ("x-api-key", True), ("HF_TOKEN", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("client_secret", True), ("password", True), ("Authorization", True),
    ("key", True), ("vertex_credentials", True),
    ("api_key_env", False), ("max_tokens", False), ("keyed", False), ("sort_key", False), ("monkey", False),
    ("OPTRUNNER_KEY_VARS", False), ("reasoning_effort", False),
])
def test_secret_names(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


# ---------------------------------------------------------------- through litellm
def echoing(status: int, message: str, **reply: Any) -> Any:
    """A server policy answering `status` with `message`, where {key} is the key the request carried."""
    def answer(received: Received) -> Reply:
        key = received.headers.get("authorization", "").removeprefix("Bearer ")
        return Reply(status=status, body=error(message.format(key=key), type_="invalid_request_error"), **reply)
    return answer


@pytest.mark.parametrize("status, message, reply, kind", [
    (401, "Incorrect API key provided: {key}. Check it.", {}, "auth"),
    (400, "upstream https://gw.example/v1/chat?key={key} said: bad request", {}, "bad_request"),
    (503, "proxy rejected Authorization: Bearer {key}", {}, "transient"),
    (429, "slow down, {key}", {"headers": {"Retry-After": "0.2"}}, "transient"),  # the wait budget runs out
])
def test_a_provider_error_echoing_the_key_is_recorded_redacted(monkeypatch: pytest.MonkeyPatch, status: int,
                                                                message: str, reply: dict[str, Any],
                                                                kind: str) -> None:
    monkeypatch.setenv("MY_PROVIDER_CRED", PLAIN_KEY)  # a name litellm does not know: only api_key_env says it
    with OpenAIServer(policy=echoing(status, message, **reply)) as server:
        config = ModelConfig(name="openai/test-model", api_base=server.base_url, api_key_env="MY_PROVIDER_CRED",
                             attempts=2, backoff_s=0.01, backoff_max_s=0.05, timeout_s=10.0,
                             rate_limit_max_wait_s=0.5)
        with pytest.raises(ModelError) as info:
            Model(config).query(MESSAGES)
    assert server.requests[0].headers["authorization"] == f"Bearer {PLAIN_KEY}"  # the key was sent...
    assert PLAIN_KEY in str(server.requests[0].reply.body)  # ...and the provider's answer carried it
    recorded = str(info.value)  # what a rollout's exit_message and its trajectory keep
    assert info.value.kind == kind, recorded
    assert PLAIN_KEY not in recorded and REDACTED in recorded, recorded


# ---------------------------------------------------------------- Retry-After
@pytest.mark.parametrize("headers", [{"Retry-After": "1e9"}, {"Retry-After": "inf"}, {"retry-after-ms": "1e12"}])
def test_a_huge_retry_after_waits_the_configured_maximum(headers: dict[str, str]) -> None:
    cap = 0.6
    with OpenAIServer() as server:
        server.push(Reply(status=429, headers=headers, body=error("Rate limit reached", type_="requests",
                                                                  code="rate_limit_exceeded")),
                    Reply(body=completion("after the wait")))
        m = Model(ModelConfig(name="openai/test-model", api_base=server.base_url, attempts=2, timeout_s=10.0,
                              rate_limit_max_wait_s=cap), api_key="sk-test")
        started = time.monotonic()
        reply = m.query(MESSAGES)
        elapsed = time.monotonic() - started
        limited, retried = server.requests
    assert reply.content == "after the wait"
    assert reply.record.rate_limited == 1 and cap - 0.05 <= reply.record.rate_limit_wait_s <= cap + 0.5
    assert retried.at - (limited.answered_at or 0) >= cap - 0.05 and elapsed < cap + 3
    assert m.limiter.not_before <= time.monotonic()  # the model is open again, not paused for 31 years


# ---------------------------------------------------------------- a node's secrets file
def test_a_secrets_file_fills_what_the_environment_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secrets.env"
    path.write_text("# keys of this node\n\nexport FILE_ONLY_KEY='from-the-file-123'\nBOTH_KEY=\"file\"\n")
    path.chmod(0o600)
    monkeypatch.setenv(ray_keys.SECRETS_FILE, str(path))
    monkeypatch.setenv("BOTH_KEY", "from-the-environment")
    monkeypatch.delenv("FILE_ONLY_KEY", raising=False)
    monkeypatch.setenv(ray_keys.KEY_VARS, "FILE_ONLY_KEY,BOTH_KEY")
    ray_keys.check_node()
    assert (os.environ["FILE_ONLY_KEY"], os.environ["BOTH_KEY"]) == ("from-the-file-123", "from-the-environment")


@pytest.mark.parametrize("mode, content, message", [
    (0o640, "A=b\n", "chmod 600"),
    (0o604, "A=b\n", "chmod 600"),
    (0o600, "just-a-key-value-here\n", "not a KEY=VALUE line"),
])
def test_a_secrets_file_others_may_read_or_garbled_is_refused(tmp_path: Path, mode: int, content: str,
                                                               message: str) -> None:
    path = tmp_path / "secrets.env"
    path.write_text(content)
    path.chmod(mode)
    with pytest.raises(ConfigError, match=message) as info:
        ray_keys.read_secrets_file(path)
    assert "\n" not in str(info.value) and "just-a-key" not in str(info.value)


def test_a_node_without_the_named_key_says_which(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ray_keys.SECRETS_FILE, raising=False)
    monkeypatch.delenv("ABSENT_TEST_KEY", raising=False)
    monkeypatch.setenv(ray_keys.KEY_VARS, "ABSENT_TEST_KEY")
    with pytest.raises(ConfigError, match=f"has no ABSENT_TEST_KEY.*{ray_keys.SECRETS_FILE}"):
        ray_keys.check_node()
    assert ray_keys.runtime_env(ray_keys.key_names(None, "A", "A")) == {"env_vars": {ray_keys.KEY_VARS: "A"}}
    assert ray_keys.runtime_env([]) == {}

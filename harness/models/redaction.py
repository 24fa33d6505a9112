"""Keeping API keys out of what the project records, prints and takes on its command line.

Why: a provider's error text can carry the key that was sent (an "incorrect API key: sk-..." answer, a
URL with `?key=`, a proxy echoing the `Authorization` header), and that text ends up in rollout records,
trajectories, reports and logs, which are shared. `redact(text)` replaces what looks like a credential
with `[redacted]`:

- the values of this process's key variables (a variable whose name says it holds a secret:
  OPENAI_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...) and of keys a `Model` was given (`remember`);
- provider key shapes: `sk-...` (OpenAI, Anthropic), `AIza...` (Google), `hf_...`, `ghp_...`, `AKIA...`;
- `Authorization: Bearer X` / `Basic X`; `api_key=X`, `key=X`, `token=X` (query strings, form bodies);
  `"api_key": "X"` (JSON bodies);
- the password of a URL (`https://user:PASSWORD@host`).

`secret_name(name)` says whether a variable, field or query parameter name holds a secret; the runner
uses both to refuse credentials on its command line. Light: no litellm, only `re` and `os`.
"""
from __future__ import annotations

import os
import re
import threading

REDACTED = "[redacted]"
# Shorter values are not treated as secrets: replacing "no-key" or "1" everywhere would garble the text.
MIN_SECRET_LEN = 8

# Words of a name (split at _ - . and case changes) that make it a secret's name.
_SECRET_WORDS = {"apikey", "token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
                 "auth", "authorization", "bearer", "cookie"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("session", "key")}
# A name ending in one of these names the place a secret is kept (model.api_key_env=OPENAI_API_KEY), not
# the secret itself.
_POINTER_SUFFIXES = ("env", "var", "vars")

_TOKEN_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9][A-Za-z0-9_*-]{10,}"  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-); masked ones too
    r"|\bAIza[0-9A-Za-z_-]{30,}"  # Google API keys
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|\b(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|\bAKIA[0-9A-Z]{16}\b")  # AWS access key ids
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=*-]{6,}")
# name=VALUE: query strings and form bodies; the name may carry a prefix (x_goog_api_key, aws_secret_key).
_ASSIGNED = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_.-])*"
    r"(?:api[_-]?key|apikey|key|token|secret|password|passwd|sig|signature|credentials?))"
    r"(\s*=\s*[\"']?)(?!\[redacted\])([^\s\"'&,;)}\]]+)")
# name: VALUE (JSON, YAML, HTTP headers): only names that cannot mean anything else ("Unexpected token: <"
# in a parser's error must survive).
_LABELLED = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_-])*"
    r"(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|secret|password|passwd|credentials?)"
    r"|authorization|x-api-key|x-goog-api-key)"
    r"([\"']?\s*:\s*[\"']?)(?!bearer\s|basic\s|\[redacted\])([^\s\"',;}\]]+)")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)")

_remembered: set[str] = set()
_lock = threading.Lock()


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # apiKey -> api_Key
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def secret_name(name: str) -> bool:
    """Whether `name` (a variable, a config key's last part, a query parameter) holds a secret: API_KEY,
    api_key, apiKey, x-api-key, auth_token, client_secret, password, Authorization, `key`; not max_tokens,
    api_key_env (it names a variable) or keyed."""
    words = _words(name)
    if not words or words[-1] in _POINTER_SUFFIXES:
        return False
    if words == ["key"] or any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def remember(value: str | None) -> None:
    """A key this process sends (whatever variable it came from): `redact` replaces it from now on."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _lock:
            _remembered.add(value)


def known_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """The secret values `redact` replaces verbatim: key variables of the environment and remembered
    keys, longest first (a key that contains another is replaced whole)."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if len(v) >= MIN_SECRET_LEN and secret_name(k)}
    with _lock:
        found |= _remembered
    return sorted(found, key=len, reverse=True)


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with every credential it seems to carry replaced by `[redacted]` (see the module's doc);
    `environ`: the variables to take key values from (default: this process's)."""
    if not text:
        return text
    for value in known_secrets(environ):
        text = text.replace(value, REDACTED)
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}\3", text)
    text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    text = _LABELLED.sub(rf"\1\2{REDACTED}", text)
    text = _ASSIGNED.sub(rf"\1\2{REDACTED}", text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def carries_credential(text: str, environ: dict[str, str] | None = None) -> bool:
    """Whether `text` holds something `redact` would hide."""
    return redact(text, environ) != text

"""The scripted provider, registered with litellm (`scripted/<name>`), so offline runs take the real
litellm path: request building, usage, cost from a registered price. Registered only when a scripted
model is built (`harness.models.model.Model`).

A scripted model is stateless: `Model` sends the call's index in `extra_body["call_index"]` and the
steps in `extra_body["steps"]`. Step `i` answers call `i`; past the end, the last `finish` repeats.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from harness.models.scripted import judge
from harness.models.scripted.replies import detect_format, render
from harness.models.scripted.steps import MODELS, noop_steps

PROVIDER = "scripted"
PRICE = {"input": 1.0, "output": 4.0, "cache_read": 0.1, "cache_write": 1.25}  # USD per million tokens
_registered = threading.Lock()


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _raise_status(litellm: Any, status: int | str, retry_after: float | None, model: str) -> None:
    import httpx

    if status == "context_window":
        raise litellm.ContextWindowExceededError(message="scripted: the prompt is longer than the context window",
                                                 model=model, llm_provider=PROVIDER)
    status = int(status)
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    response = httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://scripted.invalid"))
    message = f"scripted provider error {status}"
    kwargs = {"message": message, "llm_provider": PROVIDER, "model": model}
    if status == 429:
        raise litellm.RateLimitError(response=response, **kwargs)
    if status == 401:
        raise litellm.AuthenticationError(response=response, **kwargs)
    if status == 400:
        raise litellm.BadRequestError(response=response, **kwargs)
    raise litellm.InternalServerError(response=response, **kwargs)


def _make_handler(litellm: Any) -> Any:
    from litellm import CustomLLM, ModelResponse

    class ScriptedLLM(CustomLLM):
        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, acompletion: Any = None, litellm_params: Any = None,
                       logger_fn: Any = None, headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
            extra = optional_params.get("extra_body") or {}
            index = int(extra.get("call_index", 0))
            if model == "judge":
                return _judge_response(litellm, model, messages, optional_params, extra, index)
            steps = extra.get("steps")
            if steps is None:
                steps = noop_steps() if model == "noop" else []
            if not steps:
                raise litellm.BadRequestError(message=f"scripted/{model} needs steps (harness.models.scripted.bind)",
                                              llm_provider=PROVIDER, model=model)
            step = steps[index] if index < len(steps) else _last_finish(steps)
            if step.get("delay_s"):
                time.sleep(float(step["delay_s"]))
            if "error" in step:
                _raise_status(litellm, step["error"], step.get("retry_after"), model)
            fmt = detect_format(messages, optional_params.get("tools"))
            content, calls = render(step, fmt)
            for stop in optional_params.get("stop") or []:
                if stop in content:  # a real provider cuts at its stop sequence
                    content = content[:content.index(stop)]
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                                          "function": c} for c in calls]
            prompt = sum(_tokens(json.dumps(m.get("content"))) for m in messages)
            prompt += _tokens(json.dumps(optional_params.get("tools") or ""))
            completion = _tokens(content + json.dumps(calls))
            return ModelResponse(model=f"{PROVIDER}/{model}",
                                 choices=[{"message": message, "index": 0, "finish_reason": step.get(
                                     "finish_reason", "tool_calls" if calls else "stop")}],
                                 usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                        "total_tokens": prompt + completion})

    return ScriptedLLM()


def _judge_response(litellm: Any, model: str, messages: list, optional_params: dict, extra: dict,
                    index: int) -> Any:
    from litellm import ModelResponse

    script = extra.get("verdicts") or {}
    fault = judge.fault_of(script, index)
    if fault in ("429", "500", "400", "503") and int(extra.get("attempt", 1)) == 1:  # a transient fault: once
        _raise_status(litellm, fault, 0.01 if fault == "429" else None, model)
    content = judge.reply(script, messages, optional_params.get("response_format"), index)
    prompt = sum(_tokens(json.dumps(m.get("content"))) for m in messages)
    completion = _tokens(content)
    return ModelResponse(model=f"{PROVIDER}/{model}",
                         choices=[{"message": {"role": "assistant", "content": content}, "index": 0,
                                   "finish_reason": "stop"}],
                         usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                "total_tokens": prompt + completion})


def _last_finish(steps: list[dict[str, Any]]) -> dict[str, Any]:
    finishes = [s for s in steps if "finish" in s]
    return finishes[-1] if finishes else {"finish": "Out of script."}


def register(litellm: Any) -> None:
    """Add the provider and its priced models to litellm, once per process."""
    with _registered:
        if getattr(litellm, "_optrunner_scripted", False):
            return
        _register(litellm)
        litellm._optrunner_scripted = True


def _register(litellm: Any) -> None:
    handler = _make_handler(litellm)
    litellm.custom_provider_map = [p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER]
    litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": handler})
    per = 1e-6
    litellm.register_model({f"{PROVIDER}/{name}": {
        "input_cost_per_token": PRICE["input"] * per, "output_cost_per_token": PRICE["output"] * per,
        "cache_read_input_token_cost": PRICE["cache_read"] * per,
        "cache_creation_input_token_cost": PRICE["cache_write"] * per,
        "litellm_provider": PROVIDER, "mode": "chat", "supports_function_calling": True,
        "max_input_tokens": 200_000, "max_tokens": 32_000,
    } for name in MODELS})

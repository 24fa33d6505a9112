"""The model layer: every LLM call of the project (scaffolds now, the grader's judge next).

config.py    ModelConfig: provider model, key variable, price, timeouts, retries, rate-limit budget
model.py     Model.query: one litellm call with retries on transient errors, a CallRecord per call
ratelimit.py the rate limiter shared by every call to one provider model (Retry-After, in-flight window)
preflight.py check_access: key and one tiny request, before a run starts its containers
records.py   Price, CallRecord, Usage, ToolCall, ModelReply and message helpers
errors.py    ModelError and the rate-limit / transient / permanent classification
redaction.py redact(): API keys out of recorded error texts; secret_name() for the command line's check
loader.py    the lazy, quiet litellm import
scripted/    offline scripted providers, registered with litellm when a scripted model is built

It imports nothing from scaffolds/, runner/ or the grader, so each of them can use it.
"""

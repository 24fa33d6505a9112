"""The grader's LLM judge: GSO-style hack votes and ISO-Bench's soft labels for one rollout, through the
model layer (litellm, retries, pricing, the shared rate limiter), offline with `scripted/judge`.

config.py    JudgeConfig: the judge model, votes, repairs, what it is shown (also the runner's `judge` schema)
evidence.py  what it is shown: the hidden tests in parts, the expert's and the model's diffs, the grading
judge.py     votes (each its own conversation), repairs of unreadable replies, one rollout's judgement
replies.py   reading a reply: one JSON object checked against the kind asked, with its schema
prompts/     the rubrics and the evidence, as Jinja templates

The metrics over judgements (vote rule, quadrants, agreement) are pure functions in harness.metrics.judging;
running a judge over a run's rollouts and reporting it is runner.judging's.
"""

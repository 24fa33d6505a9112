"""Side-by-side bench: our `mini_swe` and `terminus` scaffolds against the upstream agents they are named after.

Both sides get IDENTICAL scripted model replies from the loopback OpenAI-wire server (`tests/openai_server.py`),
through litellm, and run in containers of the same task image. Upstream runs in bench-only venvs under `.bench/`
(mini-swe-agent 2.4.6; Harbor's terminus-2), never in the project's venv. The bench compares, step by step, the
actions executed, exit codes, the observation the model was shown next (from the server's request log, for both
sides), step and action counts and the exit reason, and prints the differences.

    python -m tests.bench.sidebyside [--scaffold mini_swe|terminus] [--json PATH]

Modules: `scripts` (the scripted replies), `sides` (running ours and upstream, reducing both to per-step views),
`compare` (the diff and the table); `upstream_mini_driver.py` and `upstream_harbor_driver.py` run with the
upstream venvs' pythons.
"""

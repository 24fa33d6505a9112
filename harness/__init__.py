"""The ground floor and the grader; imports nothing from runner/ or scaffolds/.

sandbox/     where commands run: the interface, providers by name (docker/, bwrap/), processes, disk checks
tasks/       task sources by name (suite folders, GSO rows, Harbor directories) -> one Task; template.py
suite/       the bundled tasks; suite_gpu/ and suite_serve/ the GPU and service families
models/      litellm calls, retries, rate limits, pricing, usage records, scripted providers, the access check
grader/      code states, timing rounds, verdicts, predictions files, validate, fences, the judge
metrics/     pure functions: GSO verdicts, Opt@K, Avg@k, Best@k, Dominance, the one summary, intervals
gpus/        NVML's inventory and leases       serving/     service tasks' load and serving metrics
provenance.py  what a result came from          extras.py    how to install an optional extra
atomic.py    atomic writes, write errors        signals.py   Ctrl-C, SIGTERM and SIGHUP handling
__main__.py  python -m harness (tasks, build, validate, grade, cleanup, setup)
"""

# The README's two commands are `make test` and `make demo`; both set up everything they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
TASKS  ?= suite

GSOBENCH := $(VENV)/gsobench
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
.PHONY: venv docker images gsobench browser hostpython uplink cputorch gpu-wheels test unit lint typecheck docs wheel-check demo bench latex cleanup

# uv installs the dependencies (a minute with pip, seconds with uv on this machine); the venv keeps its own pip
# for the steps below and for users. --compile-bytecode as pip does: without .pyc files every process compiles
# what it imports (litellm, ...) again where PYTHONDONTWRITEBYTECODE is set, as on CI (a third slower suite).
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	$(PY) -m uv pip install -q --compile-bytecode --python $(PY) -e '.[test,ray,docs,lint,bwrap,gpu]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

# GSO's own grading code, test-only, for the verdict cross-check (tests/test_gso_parity.py). Each version in
# its own folder (both are the package `gso`); it declares Python >= 3.12 but its grading imports on 3.11.
$(GSOBENCH)/%/gso/constants.py: $(STAMP)
	$(PY) -m pip install -q --upgrade --no-deps --ignore-requires-python --target $(GSOBENCH)/$* gsobench==$*

gsobench: $(GSOBENCH)/0.1.7/gso/constants.py $(GSOBENCH)/0.1.9/gso/constants.py

docker:
	@$(PYTHON) -m harness.sandbox.docker.engine

images: venv docker
	$(PY) -m harness build --tasks $(TASKS)

# Headless Chromium for the page tests (Debian's package; Playwright drives it, never downloads one).
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# What sandbox.rootfs=host runs the suite's tasks with: the host's python3 and numpy, Debian's packages as in
# the task images (tests/test_bwrap_host.py).
hostpython:
	@/usr/bin/python3 -c 'import numpy' 2>/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-numpy >/dev/null; }

# The user-mode uplink of a bwrap sandbox given the network (harness/sandbox/bwrap/uplink.py): Debian's
# slirp4netns. Without it such a sandbox has no network, and says so.
uplink:
	@command -v slirp4netns >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slirp4netns >/dev/null; }

# torch's CPU build for the GPU timing helper's CPU tests (tests/test_gpukit.py): the wheel this kind of
# machine keeps in /opt/wheels (a plain `pip install torch` would fetch a CUDA build of gigabytes); elsewhere
# those tests skip.
cputorch: venv
	@$(PY) -c 'import torch' 2>/dev/null || { ls /opt/wheels/torch-*+cpu-*.whl >/dev/null 2>&1 && \
	  $(PY) -m uv pip install -q --compile-bytecode --python $(PY) /opt/wheels/torch-*+cpu-*.whl; } || echo "no CPU torch here: tests/test_gpukit.py skips"

# (the `slow` variants, longer forms of tests it runs, are `make bench`'s.) Two passes. First every test but
# the `timed` ones, three processes at a time on two cores, each taking whole files (--dist loadfile: a file's
# shared fixtures, a Ray cluster or a task image, are made once), the longest first: their tests mostly
# wait on containers and sleep-timed tasks (two processes left the CPUs 65% idle), and share no engine state
# (containers are owned by their process).
# Those are the tests that need Docker, or time code on the timed tests' CPU (`timing_cpu`).
# Then the `timed` ones, one at a time: they judge CPU-bound code, and a second process would be noise;
# beside them, on the CPU their timing runs leave idle and at the lowest priority, every other test
# (tools/test_timed_pass.sh says why and what it measured).
# Each pass prints its slowest tests and its time by file (tests/timing_guard.py, which also fails a test
# over 60 s with no `long` marker).
test: images gsobench browser hostpython uplink cputorch
	$(PY) -m pytest -q -m "not timed and not slow and (docker or timing_cpu)" -n 3 --dist loadfile --no-loadscope-reorder
	tools/test_timed_pass.sh $(PY)

# The tests that need no Docker engine (under a minute): config refusals, metrics, parsers, the CLI; spread
# over the CPUs (they share no state but their own temporary folders).
unit: venv gsobench browser hostpython uplink cputorch
	$(PY) -m pytest -q -m "not docker and not timed" -n auto

# A folder of wheels for tools/gpu_check.sh on a GPU machine without a package index, made here for its
# Python (make gpu-wheels PYV=3.12 WHEELS=.gpu-wheels; the host's torch, triton and CUDA are its own).
gpu-wheels: venv
	tools/gpu_wheels.sh $(or $(WHEELS),.gpu-wheels) $(or $(PYV),3.12)

lint: venv
	$(PY) -m ruff check .

# mypy on harness/, scaffolds/ and runner/ (the files and settings are pyproject.toml's [tool.mypy])
typecheck: venv
	$(PY) -m mypy

docs: venv
	$(VENV)/bin/mkdocs build --strict -q -d site

# The package as a user gets it: the wheel in a fresh venv, used from outside the checkout, runs the offline
# oracle on one smoke task (Opt@1 1.000); make test runs it too (tests/test_wheel.py). Needs the engine and images.
wheel-check: images
	$(PY) tests/wheel_check.py

# The offline main job end to end: the oracle model, 2 rollouts per smoke task, graded; prints the report path.
demo: images
	$(VENV)/bin/optrunner run tasks=smoke rollouts=2

# pdflatex (TeX Live from Debian, ~1 min): tests/test_tables.py compiles systems.tex where it is installed, and
# checks the table's structure elsewhere; make bench installs it, make test does not (CI time).
latex:
	command -v pdflatex >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends \
		texlive-latex-base texlive-latex-recommended)

bench: images browser latex
	$(PY) -m pytest -q -m slow
	$(PY) -m tests.bench
	$(PY) -m tests.bench.scaffolds
	$(PY) -m tests.bench.sidebyside
	$(PY) -m tests.bench.gateway
	$(PY) -m tests.bench.checkpoints
	$(PY) -m tests.bench.checkpoints --provider bwrap
	$(PY) -m tests.bench.runner
	$(PY) -m tests.bench.grading $(if $(FULL),--full,)
	$(PY) -m tests.bench.sessions
	$(PY) -m tests.bench.hacks
	$(PY) -m tests.bench.soak
	$(PY) -m tests.bench.pages

cleanup: venv docker
	$(PY) -m harness cleanup

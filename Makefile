# The README's two commands are `make test` and `make demo`; both set up everything they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
TASKS  ?= suite

.PHONY: venv docker images test demo bench cleanup

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

docker:
	@$(PYTHON) -m harness.sandbox.docker.engine

images: venv docker
	$(PY) -m harness build --tasks $(TASKS)

test: images
	$(PY) -m pytest -q

# The offline main job end to end: the oracle model, 2 rollouts per smoke task, graded; prints the report path.
demo: images
	$(PY) -m runner tasks=smoke rollouts=2

bench: images
	$(PY) -m tests.bench
	$(PY) -m tests.bench.scaffolds
	$(PY) -m tests.bench.runner
	$(PY) -m tests.bench.grading $(if $(FULL),--full,)

cleanup: venv docker
	$(PY) -m harness cleanup

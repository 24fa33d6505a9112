"""Shared fixtures: a tiny but complete task folder, and Docker access for integration tests."""
from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.models import ratelimit
from tests.openai_server import OpenAIServer

SLOW_SRC = "def total(xs):\n    out = 0\n    for x in xs:\n        out = out + x\n    return out\n"
FAST_SRC = "def total(xs):\n    return sum(xs)\n"
TEST_SRC = textwrap.dedent('''
    import pickle
    import perfkit
    import tiny

    def setup():
        return list(range(200000))

    def experiment(data):
        return tiny.total(data)

    def store_result(result, path):
        with open(path, "wb") as fh:
            pickle.dump(result, fh)

    def load_result(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)

    def check_equivalence(reference, current):
        assert reference == current, (reference, current)

    def run_test(eqcheck=False, reference=False, prefix=""):
        return perfkit.time_experiment(globals(), eqcheck, reference, prefix)

    if __name__ == "__main__":
        perfkit.main(run_test)
''')


def write_task(root: Path, task_id: str = "tiny", *, slow_src: str = SLOW_SRC, fast_src: str = FAST_SRC,
               prob_script: str = "import tiny\nprint(tiny.total(range(10)))\n", **fields: object) -> Path:
    """Create a valid task folder (fields override task.yaml entries; None removes one).
    `slow_src` is the base code of `tiny.total`, `fast_src` the expert's."""
    path = root / task_id
    (path / "repo" / "tiny").mkdir(parents=True)
    (path / "repo" / "tiny" / "__init__.py").write_text(slow_src)
    (path / "repo" / ".gitignore").write_text("*.so\n*.o\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_sum.py").write_text(TEST_SRC)
    (path / "prob_script.py").write_text(prob_script)
    scratch = root / f".{task_id}-scratch"
    subprocess.run(["cp", "-r", str(path / "repo"), str(scratch)], check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run("git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm b",
                   shell=True, cwd=scratch, check=True)
    (scratch / "tiny" / "__init__.py").write_text(fast_src)
    patch = subprocess.run(git + ["diff"], cwd=scratch, capture_output=True, text=True, check=True).stdout
    (path / "expert.patch").write_text(patch)
    meta: dict[str, object] = {"id": task_id, "repo": "tiny", "api": "tiny.total", "languages": ["python"],
                               "setup_commands": [], "install_commands": ["true"], "tags": []}
    for key, value in fields.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    (path / "task.yaml").write_text(yaml.safe_dump(meta))
    return path


@pytest.fixture
def tiny_task(tmp_path: Path) -> Path:
    return write_task(tmp_path)


@pytest.fixture(autouse=True)
def fresh_limiters() -> Iterator[None]:
    """Rate limiters are process-wide: one test's 429s must not pause or narrow the next test's calls."""
    ratelimit.reset()
    yield
    ratelimit.reset()


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    """The loopback OpenAI-compatible server (tests/openai_server.py), started for one test."""
    with OpenAIServer() as srv:
        yield srv

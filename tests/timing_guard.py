"""Where the suite's time goes, printed at the end of every run, and a guard on long tests (issue 46).

- After the run: the total, and the files that took longest (set-up, call and tear-down of their tests
  summed; pytest's own `--durations` lists the slowest tests).
- The longest files are collected first (LONG_FILES), then the other files with Docker tests: `make test`
  runs files three at a time (pytest-xdist's loadfile, told to keep this order: by default it starts the
  files with the most tests first, and the Ray file, 5 tests and ~200 s, started near the end), so the
  quick files fill the end instead of a long file starting last.
- A test whose call takes over LIMIT seconds fails the run unless it carries `@pytest.mark.long("why")`:
  a slow test is a choice someone wrote down, not something that crept in.
Works under pytest-xdist too (the reports reach the controller).
"""
from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

LIMIT = float(os.environ.get("OPTRUNNER_TEST_LIMIT", "60"))  # seconds a call may take without a `long` marker
FILES = 15  # files listed at the end

_by_file: dict[str, float] = defaultdict(float)
_over: list[tuple[str, float]] = []
_started = [0.0]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long(reason): a test allowed over 60 s, and why")
    _started[0] = time.monotonic()


# Seconds each long file took in make test's first pass (the "time by file" lines, 2026-11-30, three
# processes on two cores, images and agent images cached; the tests that need no engine have run in the
# second pass since): only the order they start in depends on these.
LONG_FILES = {"tests/test_runner.py": 347, "tests/test_ray.py": 263, "tests/test_gpu_check.py": 143,
              "tests/test_aggregate.py": 120, "tests/test_autolab_fixtures.py": 90, "tests/test_sandbox_killed.py": 88,
              "tests/test_installed_limits.py": 87, "tests/test_checkpoints.py": 85, "tests/test_harbor_run.py": 84,
              "tests/test_installed.py": 74, "tests/test_sandbox_conformance.py": 71, "tests/test_terminus.py": 71,
              "tests/test_bwrap_host.py": 64, "tests/test_installed_claude.py": 63, "tests/test_grading.py": 62,
              "tests/test_installed_openhands.py": 60, "tests/test_harbor_serve.py": 53,
              "tests/test_wheel.py": 50}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    with_docker = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("docker")}

    def order(item: pytest.Item) -> tuple[float, bool]:
        path = item.nodeid.split("::")[0]
        return -LONG_FILES.get(path, 0), path not in with_docker

    items.sort(key=order)  # (stable: the order within a file is kept)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _by_file[report.nodeid.split("::")[0]] += report.duration
    if report.when == "call" and report.duration > LIMIT and "long" not in report.keywords:
        _over.append((report.nodeid, report.duration))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _over and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _by_file:
        return
    write = terminalreporter.write_line
    terminalreporter.section("time by file")
    for path, seconds in sorted(_by_file.items(), key=lambda item: -item[1])[:FILES]:
        write(f"{seconds:8.1f}s  {path}")
    write(f"{sum(_by_file.values()):8.1f}s  in all tests ({len(_by_file)} files); "
          f"{time.monotonic() - _started[0]:.1f}s wall")
    for nodeid, seconds in _over:
        terminalreporter.write_line(f"TOO LONG {nodeid}: {seconds:.1f}s over {LIMIT:.0f}s with no "
                                    "@pytest.mark.long(\"why\")", red=True)

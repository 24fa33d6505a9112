"""Harbor task directories as tasks: what is read from them, and one clear line for each bad one; the
Dockerfile rewrite for offline builds; reading Harbor's reward files."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness import gpus
from harness.grader.reward import read_reward
from harness.sandbox.docker.dockerfile import from_images, rewrite
from harness.tasks import TaskError, select_tasks
from harness.tasks.harbor import HarborSource, dockerfile_workdir

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "tasks")
    return tmp_path / "tasks"


def test_a_folder_of_task_directories_is_read() -> None:
    tasks = {t.id: t for t in select_tasks(str(FIXTURES), "harbor")}
    assert sorted(tasks) == ["ctiming", "sortcount", "wordstats"]
    ctiming = tasks["ctiming"]
    assert ctiming.instruction.startswith("# Count primes faster") and ctiming.workdir == "/app"
    assert ctiming.agent_timeout == 1800 and ctiming.memory == "2048m" and ctiming.network == "none"
    check = ctiming.reward_check
    assert check is not None and check.timeout == 300 and dict(check.env) == {"PRIMES_LIMIT": "2000000"}
    assert {name for name, _data, _mode in check.tests} == {"test.sh", "score.py"}
    assert dict(check.optimization)["direction"] == "minimize"
    assert [name for name, _data, _mode in ctiming.solution_files] == ["solve.sh"]
    assert tasks["sortcount"].memory == "1024m" and "compare.py" in tasks["sortcount"].reward_check.pinned
    # one task directory is a selector too
    assert [t.id for t in select_tasks(str(FIXTURES / "wordstats"), "harbor")] == ["wordstats"]


@pytest.mark.parametrize("breakage, message", [
    (lambda d: (d / "task.toml").write_text("version = [1.0\n"), "task.toml: not valid TOML"),
    (lambda d: (d / "instruction.md").unlink(), "no instruction.md"),
    (lambda d: (d / "tests" / "test.sh").unlink(), "no tests/test.sh"),
    (lambda d: (d / "environment" / "Dockerfile").unlink(), "no environment/Dockerfile and no [environment]"),
    (lambda d: (d / "task.toml").write_text('[environment]\nmemory = "lots"\n'), "should look like '2G'"),
    (lambda d: (d / "task.toml").write_text("[verifier]\ntimeout_sec = -1\n"), "timeout_sec should be a positive"),
    (lambda d: (d / "task.toml").write_text('[verifier.env]\nN = 3\n'), "[verifier.env] should map names to strings"),
    # a link out of the task would carry this machine's environment (API keys) into the verifier's container
    (lambda d: (d / "tests" / "env").symlink_to("/proc/self/environ"),
     "tests/env is a symlink to /proc/self/environ, outside the task directory"),
    (lambda d: (d / "environment" / "home").symlink_to(Path.home()), "environment/home is a symlink to"),
])
def test_a_bad_task_is_one_line_naming_it(tasks_dir: Path, breakage, message: str) -> None:  # type: ignore[no-untyped-def]
    breakage(tasks_dir / "wordstats")
    with pytest.raises(TaskError) as err:
        select_tasks(str(tasks_dir), "harbor")
    assert message in str(err.value) and "wordstats" in str(err.value) and "\n" not in str(err.value)


def test_a_link_within_the_task_is_read(tasks_dir: Path) -> None:
    (tasks_dir / "wordstats" / "tests" / "solve_copy.sh").symlink_to("../solution/solve.sh")
    (task,) = [t for t in select_tasks(str(tasks_dir), "harbor") if t.id == "wordstats"]
    files = dict((name, data) for name, data, _mode in task.reward_check.tests)  # type: ignore[union-attr]
    assert files["solve_copy.sh"] == (tasks_dir / "wordstats" / "solution" / "solve.sh").read_bytes()


@pytest.mark.skipif(bool(gpus.inventory()), reason="this machine has GPUs")
def test_gpu_tasks_are_skipped_and_big_ones_clamped(tasks_dir: Path) -> None:
    toml = tasks_dir / "wordstats" / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", "cpus = 1\ngpus = 1"))
    toml = tasks_dir / "sortcount" / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", "cpus = 512").replace("memory_mb = 1024", "memory_mb = 1e9"))
    warnings: list[str] = []
    tasks = HarborSource(warn=warnings.append).select(str(tasks_dir))
    assert sorted(t.id for t in tasks) == ["ctiming", "sortcount"]
    assert [t.cpus for t in tasks if t.id == "sortcount"] == [float(os.cpu_count() or 1)]
    assert any("wordstats: skipped, it needs 1 GPU" in w for w in warnings)
    assert any("sortcount: it asks for 512 CPUs" in w for w in warnings)
    assert any("sortcount: it asks for 1000000000m of memory" in w for w in warnings)
    machine_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024 ** 2
    assert [t.memory for t in tasks if t.id == "sortcount"] == [f"{machine_mb}m"]


def test_a_folder_without_tasks_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no task directories"):
        select_tasks(str(tmp_path), "harbor")
    with pytest.raises(TaskError, match="tasks.path=DIR"):
        select_tasks("", "harbor")


def test_dockerfile_rewrite_for_offline_builds() -> None:
    dockerfile = ("FROM --platform=linux/amd64 golang:1.22-bookworm AS build\nWORKDIR /src\nCOPY *.go .\n"
                  "COPY a.txt b.txt /data\nCOPY one.txt /data/one.txt\nRUN go build -o /out/app .\n"
                  "FROM debian:bookworm-slim\nCOPY --from=build /out/app /usr/local/bin/app\nWORKDIR /app\n"
                  'COPY ["x y", "/app/"]\n')
    assert from_images(dockerfile) == ["golang:1.22-bookworm", "debian:bookworm-slim"]
    done = rewrite(dockerfile, {"golang:1.22-bookworm": "local/go", "debian:bookworm-slim": "local/base"},
                   substituted={"golang:1.22-bookworm", "debian:bookworm-slim"})
    out, changes = done.text, done.changes
    assert changes == []  # nothing written for another distribution
    lines = out.splitlines()
    assert lines[0] == "FROM local/go AS build" and lines[6] == "FROM local/base"
    assert "COPY *.go ./" in lines and "COPY a.txt b.txt /data/" in lines and "COPY one.txt /data/one.txt" in lines
    assert "COPY --from=build /out/app /usr/local/bin/app" in lines and 'COPY ["x y", "/app/"]' in lines
    assert dockerfile_workdir(dockerfile) == "/app"
    assert dockerfile_workdir("FROM x\nWORKDIR /srv\nWORKDIR sub\n") == "/srv/sub"
    # the project's one reader: a continued WORKDIR, and a heredoc's body is no instruction
    assert dockerfile_workdir("FROM x\nWORKDIR \\\n  /opt/app\nRUN <<EOF\nWORKDIR /nowhere\nEOF\n") == "/opt/app"


@pytest.mark.parametrize("txt, raw_json, reward, extras, reason", [
    ("0.25\n", None, 0.25, {}, ""),
    ("0.25", '{"reward": 0.9, "note": "x"}', 0.25, {"note": "x"}, ""),  # reward.txt first
    (None, '{"reward": 0.75, "label": "fast", "baseline": null}', 0.75, {"label": "fast", "baseline": None}, ""),
    (None, '{"reward": "high"}', None, {"reward": "high"}, "reward.json's reward is 'high'"),
    ("nan", None, None, {}, "reward.txt holds 'nan'"),
    ("oops", '{"reward": 1}', 1.0, {}, ""),  # an unreadable reward.txt, a good reward.json
    (None, "{not json", None, {}, "reward.json is not JSON"),
    (None, None, None, {}, "the verifier wrote no reward file"),
])
def test_reward_files_are_read_as_harbor_should(txt: str | None, raw_json: str | None, reward: float | None,
                                                extras: dict, reason: str) -> None:
    got, got_extras, why = read_reward(txt, raw_json)
    assert got == reward and got_extras == extras and reason in why
    assert (why == "") == (reward is not None)


UBUNTU_DOCKERFILE = """FROM ubuntu:22.04
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \\
        bash=5.1-6ubuntu1.1 \\
        build-essential=12.9ubuntu3 \\
        linux-tools-generic linux-tools-$(uname -r) \\
        linux-cloud-tools-generic \\
        tmux=3.2a-4ubuntu0.2 zlib1g-dev=1:1.2.11 make=4.3-4.1build1 python3=3.10.6-1~22.04.1 && \\
    rm -rf /var/lib/apt/lists/*
RUN echo linux-tools-generic > /notes.txt
COPY src/ /app/src/
"""


def test_a_stage_on_the_debian_substitute_gets_debians_packages() -> None:
    done = rewrite(UBUNTU_DOCKERFILE, {"ubuntu:22.04": "optrunner/base:x"}, substituted={"ubuntu:22.04"})
    out, changes = done.text, done.changes
    lines = out.splitlines()
    assert lines[0] == "FROM optrunner/base:x"
    install = "\n".join(lines[2:9])
    assert "bash \\" in install and "build-essential \\" in install
    assert "tmux zlib1g-dev=1:1.2.11 make python3 &&" in install
    assert "linux-perf linux-perf \\" in install and "linux-cloud-tools" not in install and "ubuntu" not in install
    assert "rm -rf /var/lib/apt/lists/*" in lines[8]
    assert lines[9] == "RUN echo linux-tools-generic > /notes.txt"  # not an apt-get install: as written
    assert changes == ["bash=5.1-6ubuntu1.1 -> bash (an Ubuntu version pin)",
                       "build-essential=12.9ubuntu3 -> build-essential (an Ubuntu version pin)",
                       "tmux=3.2a-4ubuntu0.2 -> tmux (an Ubuntu version pin)",
                       "make=4.3-4.1build1 -> make (an Ubuntu version pin)",
                       "python3=3.10.6-1~22.04.1 -> python3 (an Ubuntu version pin)",
                       "linux-tools-generic -> linux-perf", "linux-tools-$(uname -r) -> linux-perf",
                       "linux-cloud-tools-generic dropped (Debian has no such package)"]
    assert out.count("\n") == UBUNTU_DOCKERFILE.count("\n")  # the continuation lines kept


def test_a_pulled_or_present_image_is_built_as_written() -> None:
    done = rewrite(UBUNTU_DOCKERFILE, {"ubuntu:22.04": "ubuntu:22.04"}, substituted=())
    out, changes = done.text, done.changes
    assert out == UBUNTU_DOCKERFILE and changes == []
    # a second stage on a substitute is adapted, the first (pulled) one is not
    two = UBUNTU_DOCKERFILE + "FROM debian:bookworm\nRUN apt-get install -y linux-tools-common\n"
    done = rewrite(two, {"debian:bookworm": "optrunner/base:x"}, substituted={"debian:bookworm"})
    out, changes = done.text, done.changes
    assert "linux-tools-generic linux-tools-$(uname -r)" in out and out.endswith("RUN apt-get install -y linux-perf\n")
    assert changes == ["linux-tools-common -> linux-perf"]


PYTHON_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app
RUN pip install --no-cache-dir uv==0.4.27 && \\
    python3 -m pip install "numpy==1.26.4" --index-url https://pypi.org/simple
COPY requirements.txt /tmp/requirements.txt
COPY deps/ ./deps/
RUN uv pip install --system --no-cache -r /tmp/requirements.txt -c deps/pins.txt
RUN pip3 install -e . ; echo pip install later
FROM python:3.11-slim AS other
RUN pip install six
"""


def test_pip_installs_on_a_substitute_use_the_hosts_wheels(tmp_path: Path) -> None:
    (tmp_path / "deps").mkdir()
    (tmp_path / "requirements.txt").write_text("tomli==2.0.1\n")
    (tmp_path / "deps" / "pins.txt").write_text("tomli<3\n")
    done = rewrite(PYTHON_DOCKERFILE, {"python:3.11-slim": "optrunner/base-python:x"},
                   substituted={"python:3.11-slim"}, context=tmp_path)
    lines = done.text.splitlines()
    wheels = "COPY --from={wheels} /opt/optrunner/wheels/ /opt/optrunner/wheels/"
    assert lines[2] == wheels and lines.count(wheels) == 2  # before each stage's first install
    assert lines[3] == "RUN pip install --no-index --find-links /opt/optrunner/wheels --no-cache-dir uv==0.4.27 && \\"
    assert lines[4].startswith("    python3 -m pip install --no-index --find-links /opt/optrunner/wheels \"numpy")
    assert "uv pip install --no-index --find-links /opt/optrunner/wheels --system" in lines[7]
    assert lines[8] == "RUN pip3 install --no-index --find-links /opt/optrunner/wheels -e . ; echo pip install later"
    assert [(p.requirements, p.files, p.index, p.local) for p in done.pip] == [
        (["uv==0.4.27"], [], [], False),
        (["numpy==1.26.4"], [], ["--index-url", "https://pypi.org/simple"], False),
        ([], ["/tmp/requirements.txt", "/app/deps/pins.txt"], [], False),
        ([], [], [], True),  # a local project: built from the wheelhouse's setuptools
        (["six"], [], [], False)]
    assert done.files == {"/tmp/requirements.txt": tmp_path / "requirements.txt",
                          "/app/deps/pins.txt": tmp_path / "deps" / "pins.txt"}
    assert "pip install uv==0.4.27: from wheels downloaded on the host" in done.changes
    # a pulled image's stage is built as written
    assert rewrite(PYTHON_DOCKERFILE, {}, substituted=()).text == PYTHON_DOCKERFILE

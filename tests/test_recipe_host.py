"""A Harbor Dockerfile read as steps over the host (`sandbox.rootfs=host`): what each instruction becomes,
and what is refused before anything is built. Pure: no sandbox runs here (test_bwrap_host.py runs them)."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from harness.sandbox.bwrap.recipe import NotReplayable, read, system_packages
from harness.sandbox.taskimage.contents import DEFAULT_PATH
from harness.dockerfile import substitute


def _context(tmp_path: Path, dockerfile: str, files: dict[str, str] | None = None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "Dockerfile").write_text(dockerfile)
    return tmp_path


def _members(archive: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isreg() else None) for m in tar.getmembers()}  # type: ignore[union-attr]


def none_missing(packages: list[str]) -> list[str]:
    return []


def test_variables_are_substituted_with_defaults() -> None:
    assert substitute("$A/${B}/${C:-seven}/${A:-no}", {"A": "one", "B": "two"}) == "one/two/seven/one"


def test_each_instruction_becomes_a_step(tmp_path: Path) -> None:
    context = _context(tmp_path, "FROM python:3.11-slim AS base\nARG LEVEL=2\nENV APP=/app MODE=fast\n"
                       "WORKDIR $APP\nCOPY src/ ./\nCOPY one.txt two.txt lib/\nCOPY one.txt renamed.txt\n"
                       "RUN [\"make\", \"-j$LEVEL\"]\nRUN echo $MODE\nCMD [\"x\"]\n",
                       {"src/a.py": "A", "src/pkg/b.py": "B", "one.txt": "1", "two.txt": "2"})
    recipe = read(context, none_missing)
    assert recipe.workdir == "/app" and recipe.env == {"APP": "/app", "MODE": "fast"}
    assert recipe.adapted == ["FROM python:3.11-slim -> this host's system (sandbox.rootfs=host)"]
    kinds = [s.kind for s in recipe.steps]
    assert kinds == ["run", "copy", "copy", "copy", "run", "run"]
    assert recipe.steps[0].command == "mkdir -p /app"
    assert _members(recipe.steps[1].archive) == {"app/a.py": b"A", "app/pkg": None, "app/pkg/b.py": b"B"}
    assert _members(recipe.steps[2].archive) == {"app/lib/one.txt": b"1", "app/lib/two.txt": b"2"}
    assert _members(recipe.steps[3].archive) == {"app/renamed.txt": b"1"}
    assert recipe.steps[4].command == "make '-j$LEVEL'" and ("LEVEL", "2") in recipe.steps[4].env
    assert recipe.steps[5].workdir == "/app" and dict(recipe.steps[5].env)["MODE"] == "fast"


def test_apt_installs_the_host_has_are_not_run_and_are_listed() -> None:
    asked: list[list[str]] = []

    def has(packages: list[str]) -> list[str]:
        asked.append(packages)
        return []

    command, changes = system_packages("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                                       "--no-install-recommends gcc make=4.3-4.1ubuntu1 && make", "RUN ...", has)
    assert asked == [["gcc", "make"]]  # the Ubuntu pin names the package; the host's version stands in
    assert command == "true && true && make"
    assert changes == ["apt-get install gcc make: already on this host, not run"]


@pytest.mark.parametrize("dockerfile, files, says", [
    ("FROM a\nRUN apt-get install -y linux-tools-generic\n", {}, "this host lacks (linux-tools-generic)"),
    ("FROM a\nRUN apk add gcc\n", {}, "runs apk"),
    ("FROM a AS b\nFROM c\nCOPY --from=b /x /x\n", {}, "a second build stage"),
    ("FROM a\nCOPY --from=b /x /x\n", {}, "copies from another stage"),
    ("FROM a\nADD https://example.com/x.tgz /x\n", {}, "fetches or unpacks"),
    ("FROM a\nADD data.tar.gz /x\n", {"data.tar.gz": ""}, "fetches or unpacks"),
    ("FROM a\nCOPY ../outside /x\n", {}, "is not in the build context"),
    ("FROM a\nRUN --mount=type=cache,target=/c make\n", {}, "BuildKit options"),
    ("FROM a\nUSER runner\n", {}, "as another user"),
    ("FROM a\nSHELL [\"/bin/zsh\", \"-c\"]\n", {}, "another shell"),
    ("RUN true\n", {}, "no FROM"),
])
def test_what_cannot_be_built_over_the_host_is_refused_in_one_line(tmp_path: Path, dockerfile: str,
                                                                    files: dict[str, str], says: str) -> None:
    context = _context(tmp_path / "ctx", dockerfile, files)
    (tmp_path / "outside").write_text("host file")

    def lacks(packages: list[str]) -> list[str]:
        return [p for p in packages if p.startswith("linux-tools")]

    with pytest.raises(NotReplayable) as refused:
        read(context, lacks)
    assert says in str(refused.value) and "\n" not in str(refused.value), refused.value


def test_the_host_package_check_asks_dpkg() -> None:
    from harness.sandbox.bwrap.recipe import host_has
    assert host_has(["coreutils", "no-such-package-optrunner"]) == ["no-such-package-optrunner"]


def test_env_and_args_reach_later_steps_in_order(tmp_path: Path) -> None:
    context = _context(tmp_path, "FROM a\nENV TOOLS=/opt/tools\nENV PATH=$TOOLS/bin:$PATH\nARG JOBS=4\n"
                       "RUN make -j$JOBS\n")
    (step,) = read(context, none_missing).steps
    env = dict(step.env)
    assert env["TOOLS"] == "/opt/tools" and env["JOBS"] == "4"
    assert env["PATH"] == "/opt/tools/bin:" + DEFAULT_PATH  # $PATH: the host's, standing in for the image's

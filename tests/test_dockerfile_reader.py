"""The one Dockerfile reader both providers use (harness.dockerfile): continuations,
comments inside them, ARGs in FROM, heredocs; and that the Docker provider's rewrite and bwrap's recipe over
the host act on the same instructions. Pure: nothing is built here."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.sandbox.bwrap import recipe
from harness.sandbox.docker import dockerfile as docker_dockerfile
from harness.sandbox.docker.dockerfile import from_images, rewrite
from harness import dockerfile as reader
from harness.dockerfile import Instruction, arg_pairs, from_parts, read
from tests.test_recipe_host import _context, _members, none_missing  # (the host recipe's own fixtures)


def test_instructions_keep_their_text_and_lines() -> None:
    text = "# syntax note\n\nFROM alpine:3.19\n\n# a comment between\nworkdir /srv\nCMD [\"true\"]\n"
    assert read(text) == [
        Instruction("FROM", "alpine:3.19", "FROM alpine:3.19", 3, 3),
        Instruction("WORKDIR", "/srv", "workdir /srv", 6, 6),
        Instruction("CMD", '["true"]', 'CMD ["true"]', 7, 7),
    ]


def test_a_global_arg_names_the_from_image(tmp_path: Path) -> None:
    text = ("ARG PY=3.12\nARG BASE=python:${PY}-slim\nFROM ${BASE} AS build\nARG BASE\nARG PY\nARG JOBS=2\n"
            "RUN echo $BASE\nFROM ${MISSING:-debian:bookworm-slim}\n")
    froms = [i.arguments for i in read(text) if i.keyword == "FROM"]
    assert froms == ["python:3.12-slim AS build", "debian:bookworm-slim"]
    assert read(text)[2].text == "FROM ${BASE} AS build"  # as written, beside what it means
    assert from_parts(froms[0]) == ("python:3.12-slim", "build")
    assert from_images(text) == ["python:3.12-slim", "debian:bookworm-slim"]
    done = rewrite(text, {"python:3.12-slim": "local/python"})
    assert done.text.splitlines()[2] == "FROM local/python AS build"
    assert done.text.splitlines()[:2] == ["ARG PY=3.12", "ARG BASE=python:${PY}-slim"]  # the rest as written
    # over the host: the FROM's image in what was changed; a stage sees a global ARG only when it declares it
    single = _context(tmp_path, text.rsplit("FROM", 1)[0])
    steps = recipe.read(single, none_missing)
    assert steps.adapted == ["FROM python:3.12-slim -> this host's system (sandbox.rootfs=host)"]
    (run,) = steps.steps
    assert dict(run.env)["BASE"] == "python:3.12-slim" and dict(run.env)["JOBS"] == "2"
    only_global = _context(tmp_path / "g", "ARG SECRET=x\nFROM a\nRUN true\n")
    assert "SECRET" not in dict(recipe.read(only_global, none_missing).steps[0].env)


def test_arg_declarations() -> None:
    assert arg_pairs('A=1 B="two words" C') == [("A", "1"), ("B", "two words"), ("C", None)]


def test_a_copy_continued_over_lines_is_one_instruction(tmp_path: Path) -> None:
    text = "FROM a\nCOPY one.txt \\\n     two.txt \\\n     /data\nRUN ls /data\n"
    copy = read(text)[1]
    assert (copy.keyword, copy.first, copy.last) == ("COPY", 2, 4)
    assert copy.arguments.split() == ["one.txt", "two.txt", "/data"]
    assert copy.text == "COPY one.txt \\\n     two.txt \\\n     /data"
    # Docker's legacy builder: several sources need a folder destination (the COPY now one line)
    assert rewrite(text, {}).text == "FROM a\nCOPY one.txt two.txt /data/\nRUN ls /data\n"
    steps = recipe.read(_context(tmp_path, text, {"one.txt": "1", "two.txt": "2"}), none_missing).steps
    assert _members(steps[0].archive) == {"data/one.txt": b"1", "data/two.txt": b"2"}


def test_comments_and_blank_lines_inside_a_continued_run_are_dropped(tmp_path: Path) -> None:
    text = ("FROM debian:bookworm-slim\nRUN make \\\n    # every target\n\n    -j2 all && \\\n"
            "    pip install numpy==1.26.4\n# after\nWORKDIR /w\n")
    run = read(text)[1]
    assert (run.keyword, run.arguments, run.first, run.last) == ("RUN", "make     -j2 all &&     pip install "
                                                                 "numpy==1.26.4", 2, 6)
    assert "# every target" in run.text and "# after" not in run.text
    assert [i.keyword for i in read(text)] == ["FROM", "RUN", "WORKDIR"]
    # Docker: the pip install after the comment is still the RUN's, rewritten for the wheelhouse
    done = rewrite(text, {"debian:bookworm-slim": "local/base"}, substituted={"debian:bookworm-slim"})
    assert [p.requirements for p in done.pip] == [["numpy==1.26.4"]]
    assert "# every target" in done.text and "--no-index" in done.text and done.text.endswith("# after\nWORKDIR /w\n")
    # over the host: one command, the comment out of it
    steps = recipe.read(_context(tmp_path, text), none_missing).steps
    assert steps[0].command == "make     -j2 all &&     pip install numpy==1.26.4"


@pytest.mark.parametrize("text", [
    "FROM a\nWORKDIR /w\nRUN <<EOF\nset -e\nUSER nobody\nEOF\n",
    "FROM a\nWORKDIR /w\nCOPY <<-'NOTE' /w/note.txt\n\tkept\n\tNOTE\n",
])
def test_a_heredoc_is_read_whole_and_refused_over_the_host(tmp_path: Path, text: str) -> None:
    instructions = read(text)
    assert [i.keyword for i in instructions] == ["FROM", "WORKDIR", instructions[2].keyword]
    assert instructions[2].heredoc and instructions[2].last == len(text.splitlines())  # its body is its own
    with pytest.raises(recipe.NotReplayable, match="a heredoc") as refused:
        recipe.read(_context(tmp_path, text), none_missing)
    assert "\n" not in str(refused.value)
    assert rewrite(text, {"a": "local/a"}).text.splitlines()[2:] == text.splitlines()[2:]  # Docker: as written


def test_not_a_heredoc() -> None:
    (_, run) = read("FROM a\nRUN cat <<<word && echo $((1<<3))\n")
    assert not run.heredoc


# A continued RUN whose comment line does not end with a backslash, and a continuation line that starts with
# FROM: read line by line, one provider would end the RUN at the comment and take a second stage from it.
TRICKY = """ARG BASE=debian:bookworm-slim
FROM $BASE
WORKDIR /app
RUN echo start \\
    # the comment ends no instruction
    && echo \\
FROM not-an-image
COPY a.txt \\
  b.txt .
"""


def test_both_providers_read_the_same_instructions(tmp_path: Path) -> None:
    assert docker_dockerfile.read is reader.read and recipe.dockerfile.read is reader.read
    instructions = read(TRICKY)
    assert [i.keyword for i in instructions] == ["ARG", "FROM", "WORKDIR", "RUN", "COPY"]
    # Docker: one FROM image, the RUN as written (its FROM line not rewritten), the COPY made legacy-safe
    assert from_images(TRICKY) == ["debian:bookworm-slim"]
    done = rewrite(TRICKY, {"debian:bookworm-slim": "local/base"}, substituted={"debian:bookworm-slim"})
    assert done.text.splitlines()[1] == "FROM local/base" and "FROM not-an-image" in done.text.splitlines()
    assert done.text.splitlines()[-1] == "COPY a.txt b.txt ./"
    # bwrap: one stage, and a step for each of the same WORKDIR, RUN and COPY instructions
    steps = recipe.read(_context(tmp_path, TRICKY, {"a.txt": "A", "b.txt": "B"}), none_missing).steps
    assert [s.text for s in steps] == [i.line for i in instructions[2:]]
    assert steps[1].command == instructions[3].arguments and "FROM not-an-image" in steps[1].command


def test_an_escape_directive_names_the_continuation_character() -> None:
    """`# escape=`` ` (Windows-style files): a backtick continues a line and a backslash is a path's. A
    directive is read only before anything else, as Docker reads it."""
    text = "# escape=`\nFROM debian:bookworm-slim\nRUN echo a `\n    b\nWORKDIR C:\\\\work\\\\\nRUN echo c\n"
    assert [(i.keyword, i.arguments) for i in read(text)] == [
        ("FROM", "debian:bookworm-slim"), ("RUN", "echo a     b"), ("WORKDIR", "C:\\\\work\\\\"), ("RUN", "echo c")]
    late = "FROM x\n# escape=`\nRUN echo a `\nRUN echo b \\\n  c\n"  # after an instruction: a comment only
    assert [i.arguments for i in read(late)] == ["x", "echo a `", "echo b   c"]
    assert reader.escape_of(["# syntax=docker/dockerfile:1", "# Escape = `", "FROM x"]) == "`"
    assert reader.escape_of(["", "# escape=`"]) == "\\"  # a blank line ends the directives

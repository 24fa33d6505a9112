"""`str_replace_editor` of the CodeAct scaffold, each command and its errors, against a real container."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import Task
from harness.tasks.folder import load_task
from scaffolds.codeact import CodeActConfig, CodeActScaffold
from scaffolds.codeact.editor import Editor
from scaffolds.codeact.tools import ToolError
from scaffolds.limits import Limits
from tests.conftest import write_task
from tests.docker_support import sandbox_for
from tests.scaffold_support import script_model

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("editor")))


@pytest.fixture(scope="module")
def box(task: Task) -> Iterator[DockerSandbox]:
    yield from sandbox_for(task)


@pytest.fixture
def editor(box: DockerSandbox) -> Editor:
    return Editor(box)


def edit(editor: Editor, **args: object) -> str:
    return editor(dict(args))


def test_view_file_range_and_directory(editor: Editor, box: DockerSandbox) -> None:
    box.write_file("/tmp/v/a.txt", "one\ntwo\nthree\n")
    box.exec("mkdir -p /tmp/v/sub/deep/deeper /tmp/v/.hidden && touch /tmp/v/sub/deep/deeper/x /tmp/v/.hidden/y")
    assert edit(editor, command="view", path="/tmp/v/a.txt").endswith("     1\tone\n     2\ttwo\n     3\tthree")
    assert edit(editor, command="view", path="/tmp/v/a.txt", view_range=[2, -1]).endswith("     2\ttwo\n     3\tthree")
    assert edit(editor, command="view", path="/tmp/v/a.txt", view_range=[2, 2]).endswith("     2\ttwo")
    listing = edit(editor, command="view", path="/tmp/v")
    assert "/tmp/v/a.txt" in listing and "/tmp/v/sub/deep/" in listing
    assert "deeper" not in listing and ".hidden" not in listing  # two levels, no hidden entries
    for bad in ([0, 2], [2, 9], [3, 2], [1]):
        with pytest.raises(ToolError, match="view_range"):
            edit(editor, command="view", path="/tmp/v/a.txt", view_range=bad)
    with pytest.raises(ToolError, match="directories"):
        edit(editor, command="view", path="/tmp/v", view_range=[1, 2])
    with pytest.raises(ToolError, match="not absolute.*Did you mean /testbed/tiny"):
        edit(editor, command="view", path="tiny")
    with pytest.raises(ToolError, match="does not exist"):
        edit(editor, command="view", path="/tmp/nope")


def test_create_refuses_existing_and_undo_removes(editor: Editor, box: DockerSandbox) -> None:
    assert "Created" in edit(editor, command="create", path="/tmp/c/new.py", file_text="x = 1\n")
    assert box.read_file("/tmp/c/new.py") == b"x = 1\n"
    with pytest.raises(ToolError, match="already exists"):
        edit(editor, command="create", path="/tmp/c/new.py", file_text="y")
    with pytest.raises(ToolError, match="file_text"):
        edit(editor, command="create", path="/tmp/c/other.py")
    assert "removed" in edit(editor, command="undo_edit", path="/tmp/c/new.py")
    with pytest.raises(FileNotFoundError):
        box.read_file("/tmp/c/new.py")
    with pytest.raises(ToolError, match="no edit"):
        edit(editor, command="undo_edit", path="/tmp/c/new.py")


def test_str_replace_rules_snippet_and_undo(editor: Editor, box: DockerSandbox) -> None:
    lines = [f"line{i}" for i in range(1, 21)] + ["dup", "dup"]
    box.write_file("/tmp/s.py", "\n".join(lines) + "\n")
    box.exec("chmod 755 /tmp/s.py")
    out = edit(editor, command="str_replace", path="/tmp/s.py", old_str="line10\n", new_str="ten\nTEN\n")
    assert "    10\tten\n    11\tTEN" in out and "     6\tline6" in out and "     5\tline5" not in out
    assert box.read_file("/tmp/s.py").decode().count("TEN") == 1
    assert box.exec("stat -c %a /tmp/s.py").output.strip() == "755"  # mode kept
    with pytest.raises(ToolError, match="does not occur verbatim"):
        edit(editor, command="str_replace", path="/tmp/s.py", old_str="absent", new_str="x")
    with pytest.raises(ToolError, match=r"occurs 2 times .*\[22, 23\]"):
        edit(editor, command="str_replace", path="/tmp/s.py", old_str="dup", new_str="x")
    with pytest.raises(ToolError, match="old_str"):
        edit(editor, command="str_replace", path="/tmp/s.py")
    edit(editor, command="undo_edit", path="/tmp/s.py")
    assert box.read_file("/tmp/s.py").decode() == "\n".join(lines) + "\n"


def test_insert_and_errors(editor: Editor, box: DockerSandbox) -> None:
    box.write_file("/tmp/i.txt", "a\nb\n")
    out = edit(editor, command="insert", path="/tmp/i.txt", insert_line=1, new_str="between")
    assert "     2\tbetween" in out and box.read_file("/tmp/i.txt") == b"a\nbetween\nb\n"
    edit(editor, command="insert", path="/tmp/i.txt", insert_line=0, new_str="top")
    assert box.read_file("/tmp/i.txt") == b"top\na\nbetween\nb\n"
    with pytest.raises(ToolError, match=r"within \[0, 4\]"):
        edit(editor, command="insert", path="/tmp/i.txt", insert_line=9, new_str="x")
    with pytest.raises(ToolError, match="insert_line"):
        edit(editor, command="insert", path="/tmp/i.txt", new_str="x")
    with pytest.raises(ToolError, match="directory"):
        edit(editor, command="insert", path="/tmp", insert_line=0, new_str="x")
    box.write_file("/tmp/bin.dat", b"\xff\xfe\x00")
    with pytest.raises(ToolError, match="not a UTF-8"):
        edit(editor, command="str_replace", path="/tmp/bin.dat", old_str="a", new_str="b")


def test_output_is_clipped(editor: Editor, box: DockerSandbox) -> None:
    box.write_file("/tmp/big.txt", "".join(f"{i} {'x' * 60}\n" for i in range(2000)))
    out = edit(editor, command="view", path="/tmp/big.txt")
    assert len(out) < 16_400 and "<response clipped>" in out and out.startswith("Contents of /tmp/big.txt")


def test_a_symlink_is_edited_through_its_target_and_os_errors_are_tool_errors(editor: Editor,
                                                                             box: DockerSandbox) -> None:
    box.write_file("/tmp/s/real.txt", "alpha\nbeta\n")
    box.exec("ln -sf /tmp/s/real.txt /tmp/s/link.txt && ln -sf /tmp/s/nowhere /tmp/s/dangling")
    assert edit(editor, command="view", path="/tmp/s/link.txt").endswith("     1\talpha\n     2\tbeta")
    assert "Edited /tmp/s/real.txt" in edit(editor, command="str_replace", path="/tmp/s/link.txt",
                                           old_str="beta", new_str="gamma")
    assert box.read_file("/tmp/s/real.txt") == b"alpha\ngamma\n"  # the target changed, the link is a link
    assert box.exec("test -L /tmp/s/link.txt").exit_code == 0
    assert "Undid the last edit" in edit(editor, command="undo_edit", path="/tmp/s/link.txt")
    assert box.read_file("/tmp/s/real.txt") == b"alpha\nbeta\n"
    with pytest.raises(ToolError, match="does not exist"):  # a link to nothing
        edit(editor, command="view", path="/tmp/s/dangling")


def test_a_file_the_sandbox_cannot_hand_over_is_a_tool_error_and_the_episode_goes_on(task: Task,
                                                                                     box: DockerSandbox) -> None:
    # A FIFO and a device exist and are not directories, so they pass the editor's own checks; reading them
    # raises an OSError from the sandbox, which the model must see as the tool's error.
    box.exec("mkfifo /tmp/fifo")

    def editor_call(**args: object) -> dict[str, object]:
        return {"raw": {"content": "", "tool_calls": [{"name": "str_replace_editor", "arguments": json.dumps(args)}]}}

    steps = [editor_call(command="view", path="/tmp/fifo"),
             editor_call(command="str_replace", path="/dev/null", old_str="a", new_str="b"),
             {"bash": "echo still here"}, {"finish": "done"}]
    model = script_model(steps, native_tools=True)
    episode = CodeActScaffold(CodeActConfig()).run(task, box, model, Limits(snapshot_every=0))
    assert episode.exit_reason == "submitted", episode.exit_message
    seen = [obs.text for step in episode.step_records for obs in step.observations]
    assert seen[0] == "ERROR: `/tmp/fifo`: IsADirectoryError"
    assert seen[1] == "ERROR: `/dev/null`: IsADirectoryError"
    assert seen[2].startswith("still here\n")
    results = [m["content"] for m in episode.messages if m["role"] == "tool"]
    assert results[:2] == seen[:2]  # what the model was shown


def test_create_under_a_file_is_a_tool_error_not_an_infrastructure_error(editor: Editor, box: DockerSandbox) -> None:
    box.write_file("/tmp/plain.txt", "a file, not a directory\n")
    for path in ("/tmp/plain.txt/new.py", "/tmp/plain.txt/deeper/new.py"):
        with pytest.raises(ToolError, match="[Nn]ot a directory"):
            edit(editor, command="create", path=path, file_text="x = 1\n")


def test_a_large_file_is_viewed_by_range_in_the_sandbox_and_not_edited_here(editor: Editor, box: DockerSandbox,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # 33 MB of numbered lines: over the editor's limit, so nothing reads it whole into this process.
    box.exec("seq 1 1000000 | sed 's/$/ a line of a generated log/' > /tmp/big.log", timeout=120)
    read: list[str] = []
    original = box.read_file
    monkeypatch.setattr(box, "read_file", lambda path: read.append(path) or original(path))  # (counts, still reads)
    out = edit(editor, command="view", path="/tmp/big.log", view_range=[999999, -1])
    assert out.startswith("Lines 999999-1000000 of /tmp/big.log (1000000 lines")
    assert out.endswith("\n999999\t999999 a line of a generated log\n1000000\t1000000 a line of a generated log")
    whole = edit(editor, command="view", path="/tmp/big.log")
    assert "     1\t1 a line of a generated log" in whole and whole.endswith("</NOTE>")  # clipped at 16,000
    with pytest.raises(ToolError, match="more than the editor's limit"):
        edit(editor, command="str_replace", path="/tmp/big.log", old_str="1 a line", new_str="x")
    assert read == []

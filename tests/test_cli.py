"""The `optrunner` command: help and version everywhere, one `grade` for runs and predictions files, GSO's flag
names, rollout files numbered by their names, and a missing optional extra named in one line. No Docker."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import runner
from harness.grader.predictions import PredictionsError, rollout_numbers
from runner import cli
from runner.executors import missing_extra

SUBCOMMANDS = ("grade", "judge", "view", "aggregate", "compare", "export", "docs",
               "tasks", "build", "validate", "cleanup", "setup")


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(args))
    except SystemExit as stop:  # argparse's --help, --version and usage errors
        code = stop.code if isinstance(stop.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "--help")
    assert code == 0
    for name in ("run", *SUBCOMMANDS):
        assert f"\n    {name} " in out or f"\n    {name}\n" in out, name


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_complete_help(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = call(capsys, name, "--help")
    assert code == 0 and err == ""
    assert out.startswith(f"usage: optrunner {name}")
    assert out.rstrip().endswith(tuple("abcdefghijklmnopqrstuvwxyz)]'`")), out[-200:]  # not cut off mid-sentence


def test_version_is_the_package_version_with_the_revision(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "--version")
    assert code == 0
    assert out.startswith(f"optrunner {runner.__version__}")
    assert "(git " in out  # this test runs from a checkout


def test_run_help_goes_to_hydra_and_exits_zero() -> None:
    done = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "model" in done.stdout and "scaffold" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    ([], "name what to grade: optrunner grade RUN_DIR, or optrunner grade --predictions FILE"),
    (["some_run", "--predictions", "p.jsonl"], "give a RUN_DIR or --predictions FILE ..., not both"),
    (["some_run", "--tasks", "smoke"], "--tasks is for grading --predictions files"),
    (["some_run", "--out", "x"], "--out is for grading --predictions files"),
    (["--predictions", "p.jsonl", "--force"], "--force is for a RUN_DIR"),
])
def test_grade_refuses_mixed_inputs_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = call(capsys, "grade", *args)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_gso_flag_names_are_aliases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["grade", "--predictions_path", "a.jsonl", "b.jsonl", "--dataset_name", "rows.jsonl",
                              "--run_id", "try1"])
    assert args.predictions == [Path("a.jsonl"), Path("b.jsonl")]
    assert (args.dataset_name, args.run_id) == ("rows.jsonl", "try1")
    # --dataset_name names a GSO source: both it and --tasks is one line, nothing written
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.jsonl").write_text('{"instance_id": "x", "model_patch": ""}\n')
    code, _, err = call(capsys, "grade", "--predictions_path", "p.jsonl", "--dataset_name", "rows.jsonl",
                        "--tasks", "smoke")
    assert code == 2 and "--dataset_name and --tasks name the same thing" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]


def test_rollout_files_keep_the_number_in_their_name() -> None:
    # the shell's lexicographic order of rollout_*.jsonl: rollout_10 comes right after rollout_1
    files = sorted(Path(f"rollout_{i}.jsonl") for i in range(12))
    assert [p.name for p in files][:3] == ["rollout_0.jsonl", "rollout_1.jsonl", "rollout_10.jsonl"]
    assert rollout_numbers(files) == [int(p.name[8:-6]) for p in files]


def test_other_names_take_the_free_numbers_in_order() -> None:
    files = [Path("b.jsonl"), Path("rollout_0.jsonl"), Path("a.json"), Path("rollout_2.jsonl")]
    assert rollout_numbers(files) == [1, 0, 3, 2]
    assert rollout_numbers([Path("x.jsonl"), Path("y.jsonl")]) == [0, 1]
    with pytest.raises(PredictionsError, match="two predictions files are named rollout_1"):
        rollout_numbers([Path("a/rollout_1.jsonl"), Path("b/rollout_1.json")])


def test_grade_prints_the_mapping_before_grading(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # An id no task has: refused after the mapping is printed, before any image or output exists.
    monkeypatch.chdir(tmp_path)
    for name in ("rollout_10.jsonl", "rollout_2.jsonl", "extra.jsonl"):
        (tmp_path / name).write_text(json.dumps({"instance_id": "ghost", "model_patch": ""}) + "\n")
    code, _, err = call(capsys, "grade", "--predictions", "rollout_10.jsonl", "rollout_2.jsonl", "extra.jsonl")
    assert code == 2
    assert "rollouts: 0 <- extra.jsonl, 2 <- rollout_2.jsonl, 10 <- rollout_10.jsonl" in err
    assert "unknown instance_id 'ghost'" in err.splitlines()[-1]
    assert not (tmp_path / "outputs").exists()


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import runner.executors as executors

    assert missing_extra("local") is None
    monkeypatch.setitem(executors.EXTRAS, "ray", ("optrunner_no_such_module", "ray"))
    line = missing_extra("ray")
    assert line is not None and "executor=ray needs the 'ray' extra" in line and "pip install" in line


def test_judge_takes_settings_before_and_after_flags() -> None:
    from runner import judge

    args = cli.parse(["judge", "run_dir", "judge.temperature=0", "--judge", "scripted", "--votes", "3",
                      "judge.repairs=1"])
    assert judge.overrides_of(args) == ["judge=scripted", "judge.temperature=0", "judge.repairs=1", "judge.votes=3"]


def test_grade_names_a_gso_flag_as_written(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = call(capsys, "grade", "some_run", "--dataset_name", "rows.jsonl")
    assert code == 2 and err.startswith("error: --dataset_name is for grading --predictions files")
    code, _, err = call(capsys, "grade", "some_run", "--split", "dev")
    assert code == 2 and err.startswith("error: --split is for grading --predictions files")


@pytest.mark.parametrize("name", ("build", "validate", "grade", "cleanup", "setup"))
def test_commands_that_start_sandboxes_take_the_provider(capsys: pytest.CaptureFixture[str], name: str) -> None:
    from harness import __main__ as harness_cli

    default = None if name == "grade" else "docker"  # `optrunner grade RUN_DIR`: the run's own
    assert cli.parse([name, "--predictions", "p.jsonl"] if name == "grade" else [name]).provider == default
    assert harness_cli.build_parser().parse_args([name, "--provider", "bwrap"] + (
        ["--predictions", "p.jsonl"] if name == "grade" else [])).provider == "bwrap"
    code, _, err = call(capsys, name, "--provider", "podman")
    assert code == 2 and "--provider: invalid choice: 'podman' (choose from" in err and "Traceback" not in err


def test_run_version_is_this_tools_and_help_into_a_closed_pipe_is_quiet() -> None:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "runner", "--version"], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0 and done.stdout.startswith(f"optrunner {runner.__version__}"), done.stdout
    # `optrunner run --help | head -1`: the reader goes away before the help is written
    proc = subprocess.Popen([sys.executable, "-m", "runner", "--help"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=root)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err, err


def test_tasks_speaks_in_flags_and_lists_what_this_machine_cannot_run(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = call(capsys, "tasks", "--source", "harbor")
    assert (code, err) == (2, "error: --source harbor needs a folder: --tasks DIR (Harbor task directories, or one)\n")
    monkeypatch.setattr("harness.gpus.inventory", lambda: [])  # (as on a machine with no GPU)
    code, out, err = call(capsys, "tasks", "--tasks", "gpu", "--json")
    listed = json.loads(out)
    assert code == 0 and err == "" and len(listed) == 3 and all(t["gpus"] >= 1 for t in listed), (out, err)
    with pytest.raises(Exception, match="3 need GPUs this machine lacks"):  # a run still refuses them here
        from harness.tasks import select_tasks
        select_tasks("gpu", "suite")


def test_docs_lists_the_pages_in_reading_order_and_prints_one(capsys: pytest.CaptureFixture[str]) -> None:
    from runner.manual import DOCS_DIR

    code, out, err = call(capsys, "docs")
    lines = out.splitlines()
    assert code == 0 and err == "" and str(DOCS_DIR) in lines[0]
    names = [line.split()[0] for line in lines[1:]]
    assert names[:4] == ["index", "install", "configuration", "tasks"] and "grading" in names
    assert lines[3].split(None, 1)[1] == "Configuration"  # each page's own first heading
    code, out, _ = call(capsys, "docs", "grading")
    assert code == 0 and out == (DOCS_DIR / "grading.md").read_text()
    code, out, err = call(capsys, "docs", "gradin")
    assert code == 2 and out == "" and err.startswith("error: no page 'gradin' (did you mean grading?)")
    assert call(capsys, "--help")[1].count("'optrunner docs' lists") == 1

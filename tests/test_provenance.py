"""Provenance: what harness.provenance collects is the real thing (checked against independent sources: the
`docker` and `git` command lines, os.sysconf, the modules' own versions); a real run records it in
config.yaml once and in its reports, and still resumes; old runs and a config with provenance still load;
`harness grade` records it in summary.json; an aggregate over runs from two revisions says so."""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import docker
import hydra
import numpy
import omegaconf
import pytest
import yaml

from harness import provenance
from harness.grader.config import GRADER_VERSION, GradeConfig
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import provider
from runner import __version__
from runner import provenance as run_provenance
from runner.aggregate import aggregate, render_markdown
from runner.config import ConfigError, RunConf, typed, validate
from runner.records import ResultRecord
from runner.store import RunStore
from runner.study import Run
from tests.conftest import write_task
from tests.test_runner import FAST, ROOT, SLOW, run_dir, runner

OLD_RUN = Path(__file__).parent / "fixtures" / "run_a718ad9"


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


# ---------------------------------------------------------------- collect()
def test_machine_python_packages_tool_and_grading_are_the_real_values() -> None:
    found = provenance.collect(None, None, GradeConfig(rounds=3))
    assert found["python"] == platform.python_version()
    assert found["packages"] == {"litellm": found["packages"]["litellm"], "docker": docker.__version__,
                                 "hydra-core": hydra.__version__, "omegaconf": omegaconf.__version__,
                                 "numpy": numpy.__version__}
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", found["packages"]["litellm"])  # its import takes seconds: not here
    machine = found["machine"]
    assert machine["cores"] == os.cpu_count() and machine["hostname"] == platform.node()
    assert machine["memory_bytes"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert machine["os"] == platform.platform() and machine["os"].startswith(platform.system())
    models = re.findall(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
    assert machine["cpu_model"] == (models[0].strip() if models else platform.processor())
    tool = found["tool"]
    assert tool["name"] == "optrunner" and tool["version"] == __version__  # pyproject.toml's (runner/__init__.py)
    assert tool["revision"] == _git("rev-parse", "HEAD").strip()
    assert tool["dirty"] == bool(_git("status", "--porcelain").strip())
    assert found["grading"] == {**dataclasses.asdict(GradeConfig(rounds=3)), "grader_version": GRADER_VERSION}
    assert found["grading"]["rounds"] == 3 and found["grading"]["stat"] == "paired"  # as resolved
    assert found["engine"] is None and found["images"] == {}  # nothing asked of an engine without one
    assert found["sandbox_provider"] is None  # nor a provider named
    json.dumps(found), yaml.safe_dump(found)  # plain values


def test_no_checkout_or_no_git_is_null_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = {"revision": None, "dirty": None}
    inside = tmp_path / "repo" / "site-packages"  # a copy installed inside someone's repository is not it
    inside.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    assert provenance.git_state(inside) == unknown
    assert provenance.git_state(tmp_path / "repo") == {"revision": None, "dirty": False}  # no commit yet
    (inside / "new.py").write_text("")
    assert provenance.git_state(tmp_path / "repo") == {"revision": None, "dirty": True}  # untracked counts
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert provenance.git_state(ROOT) == unknown


def test_an_installed_copy_names_the_revision_it_was_built_from(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import runner

    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path / "site-packages")  # (no .git: not a checkout)
    monkeypatch.setattr(provenance, "BUILD_STAMP", tmp_path / "build_stamp.json")
    assert provenance.source_state() == {"revision": None, "dirty": None}
    assert runner.version() == f"optrunner {runner.__version__} (revision unknown)"
    (tmp_path / "build_stamp.json").write_text(json.dumps({"revision": "ab" * 20, "dirty": False}))
    assert provenance.tool()["revision"] == "ab" * 20 and provenance.tool()["built"] is True
    assert runner.version() == f"optrunner {runner.__version__} (built from git {'ab' * 6})"
    assert run_provenance.revision_label({"tool": provenance.tool()}).endswith(f", built from revision {'ab' * 6}")


@pytest.mark.docker
def test_engine_version_and_image_ids_are_dockers() -> None:
    sandboxes = provider("docker")
    sandboxes.ensure_ready()
    from tests.docker_support import base_tag

    base = base_tag()
    found = provenance.collect(sandboxes, {"t": TaskImages(agent=base, grading=base),
                                           "u": TaskImages(agent="optrunner/absent:none", grading=base)})
    assert found["engine"] == _docker("version", "--format", "{{.Server.Version}}") and found["engine"]
    base_id = _docker("image", "inspect", "--format", "{{.Id}}", base)
    assert found["images"] == {"t": {base: base_id}, "u": {"optrunner/absent:none": None, base: base_id}}


def test_a_runs_provenance_and_report_name_its_sandbox_provider() -> None:
    conf = RunConf()
    assert run_provenance.collect(conf, None, None)["sandbox_provider"] == "docker"  # the default
    conf.sandbox.provider = "bwrap"
    found = run_provenance.collect(conf, None, None)  # the setting, even where no engine was asked
    assert found["sandbox_provider"] == "bwrap" and list(found).index("sandbox_provider") < list(found).index("engine")
    assert "| sandbox provider / engine | bwrap / unknown |" in run_provenance.markdown(found)
    json.dumps(found)


# ---------------------------------------------------------------- config.yaml and resume
def _plain() -> dict:
    return dataclasses.asdict(RunConf())


def test_a_config_with_provenance_loads_and_resumes(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    assert store.bind_config(_plain()) is False and store.provenance() is None
    settings = store.config_path.read_text()
    recorded = provenance.collect(None, None, RunConf().grading)
    assert store.add_provenance(recorded) is True
    assert store.add_provenance({"other": 1}) is False  # the first one is kept
    text = store.config_path.read_text()
    assert text.startswith(settings) and yaml.safe_load(text)["provenance"] == recorded == store.provenance()
    assert typed(yaml.safe_load(text)) == typed(_plain())
    assert store.bind_config(_plain()) is True  # the same experiment: resumed
    with pytest.raises(ConfigError, match="different run"):
        store.bind_config({**_plain(), "rollouts": 3})
    assert store.config_path.read_text() == text


def test_an_old_run_without_provenance_still_loads(tmp_path: Path) -> None:
    shutil.copytree(OLD_RUN, tmp_path / "old")
    store = RunStore(tmp_path / "old")
    assert store.provenance() is None and validate(store.load_config()).rollouts == 2
    same = store.load_config()
    same["grading"]["fresh_state"] = False  # graded before test processes were fenced (test_old_run)
    assert store.bind_config(same) is True
    # settings each report records (visible, calibrate) take today's value where the run predates them...
    assert store.bind_config({**same, "grading": {**same["grading"], "visible": True, "calibrate": "auto"}})
    # ...but a run that names one is the experiment it names
    (tmp_path / "old" / "config.yaml").write_text(yaml.safe_dump({**same, "grading": {**same["grading"],
                                                                                      "calibrate": True}}))
    with pytest.raises(ConfigError, match="grading.calibrate: 'always' -> 'auto'"):
        store.bind_config(same)


@pytest.mark.docker
def test_an_old_run_resumed_gains_none_in_its_config_but_its_report_has_the_writers(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "oracle_codeact_smoke_smoke_n2"  # the name the same command gives it
    shutil.copytree(OLD_RUN, path)
    before = (path / "config.yaml").read_text()
    done = runner("tasks=smoke", "rollouts=2", "grading.rounds=3", "grading.fresh_state=false", out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resuming" in done.stdout and "0 to run" in done.stdout
    assert (path / "config.yaml").read_text() == before  # its rollouts ran somewhere unrecorded
    report = json.loads((path / "report.json").read_text())["provenance"]
    assert sorted(report["images"]) == ["imgblur", "rollstats", "spanindex"]
    assert all(image_id and image_id.startswith("sha256:") for ids in report["images"].values()
               for image_id in ids.values())


@pytest.fixture(scope="module")
def one_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    write_task(root, "alpha", slow_src=SLOW, fast_src=FAST)
    return root


@pytest.mark.docker
def test_a_run_records_provenance_once_and_in_its_reports(one_task: Path, tmp_path: Path) -> None:
    args = ("model=noop", "scaffold=mini_swe", f"tasks.selector={one_task}", "tasks.ids=[alpha]", "grade=none")
    done = runner(*args, out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    path = run_dir(tmp_path)
    config = yaml.safe_load((path / "config.yaml").read_text())
    recorded = config["provenance"]
    (images,) = recorded["images"].values()
    assert list(recorded["images"]) == ["alpha"] and images
    for name, image_id in images.items():
        assert image_id == _docker("image", "inspect", "--format", "{{.Id}}", name)
    assert recorded["engine"] == _docker("version", "--format", "{{.Server.Version}}")
    assert recorded["grading"]["rounds"] == RunConf().grading.rounds
    report = json.loads((path / "report.json").read_text())["provenance"]
    assert report["images"] == recorded["images"] and report["machine"] == recorded["machine"]
    markdown = (path / "report.md").read_text()
    assert "## Provenance" in markdown and f"revision {recorded['tool']['revision'][:12]}" in markdown
    assert recorded["sandbox_provider"] == report["sandbox_provider"] == "docker"
    assert f"| sandbox provider / engine | docker / {recorded['engine']} |" in markdown and "1: `" in markdown

    before = (path / "config.yaml").read_text()
    again = runner(*args, out=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming" in again.stdout and "0 to run" in again.stdout
    assert (path / "config.yaml").read_text() == before  # the first provenance kept, nothing appended


@pytest.mark.docker
def test_harness_grade_records_provenance_in_its_summary(one_task: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"instance_id": "alpha", "model_patch": ""}\n')  # empty: graded without a container
    done = subprocess.run([sys.executable, "-m", "harness", "grade", "--predictions", str(preds), "--tasks",
                           str(one_task), "--rounds", "2", "--out", str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads((tmp_path / "out" / "summary.json").read_text())["provenance"]
    (images,) = found["images"].values()
    assert {name: _docker("image", "inspect", "--format", "{{.Id}}", name) for name in images} == images
    assert found["grading"]["rounds"] == 2 and found["machine"]["cores"] == os.cpu_count()


# ---------------------------------------------------------------- aggregate
def _run_folder(path: Path, model: str, revision: str) -> Run:
    conf = RunConf()
    conf.model.id = model
    recorded = provenance.collect(None, None, conf.grading)
    recorded["tool"]["revision"] = revision
    store = RunStore(path)
    store.bind_config(dataclasses.asdict(conf))
    store.add_provenance(recorded)
    (path / "report.json").write_text(json.dumps({"provenance": recorded}))
    record = ResultRecord.from_dict({"instance_id": "t1", "rollout": 0, "steps": 1, "wall_time_s": 1.0,
                                     "score": 0.5, "grading": {"opt_commit": True, "opt_base": True}})
    return Run(path, conf, [record], ["t1"], f"{model} x codeact x smoke")


def test_aggregate_keeps_each_runs_provenance_and_flags_two_revisions(tmp_path: Path) -> None:
    a = _run_folder(tmp_path / "a", "a", "1" * 40)
    same = aggregate([a, _run_folder(tmp_path / "b", "b", "1" * 40)], k=1)
    assert [r["provenance"]["run"]["tool"]["revision"] for r in same["runs"]] == ["1" * 40] * 2
    assert same["runs"][1]["path"] == str(tmp_path / "b")
    assert same["runs"][1]["provenance"]["report"] == RunStore(tmp_path / "b").provenance()
    assert "Mixed provenance" not in render_markdown(same)
    mixed = render_markdown(aggregate([a, _run_folder(tmp_path / "c", "c", "2" * 40)], k=1))
    (line,) = [line for line in mixed.splitlines() if "Mixed provenance" in line]
    assert "2 tool revisions" in line and "111111111111" in line and "222222222222" in line


def test_images_built_for_the_local_base_are_listed_with_their_changes() -> None:
    from harness.sandbox.interface import TaskImages
    from runner.provenance import markdown

    changes = ("FROM ubuntu:22.04 -> optrunner/base:x", "linux-tools-generic -> linux-perf")
    images = {"c": TaskImages("optrunner/harbor-c:1", "optrunner/harbor-c:1", changes),
              "plain": TaskImages("optrunner/task-plain:2", "optrunner/task-plain:2")}
    found = provenance.collect(None, images)
    assert found["adapted"] == {"c": list(changes)}  # only the images that were changed to build here
    line = next(row for row in markdown(found) if row.startswith("| built for the local base |"))
    assert "c: FROM ubuntu:22.04 -> optrunner/base:x, linux-tools-generic -> linux-perf" in line
    assert "plain" not in line
    assert next(row for row in markdown({}) if row.startswith("| built for the local base |")).endswith("| - |")


def test_a_gpu_machine_is_named_with_its_gpus_driver_and_cuda() -> None:
    from harness import gpus
    from runner.provenance import machine_label
    # As a GPU machine records it (this one has none, so its own record has no "gpus" key).
    recorded = {"machine": {"hostname": "gpu1", "cpu_model": "AMD EPYC 9454", "cores": 16, "memory_bytes": 2**37,
                            "os": "Linux", "gpus": {"models": ["NVIDIA H100 80GB HBM3"] * 2, "driver": "550.54.15",
                                                    "cuda": "12.4", "clock_policy": gpus.CLOCK_POLICY}}}
    assert machine_label(recorded).endswith("; GPUs: 2 x NVIDIA H100 80GB HBM3 (driver 550.54.15, CUDA 12.4)")
    if not gpus.inventory():
        assert "gpus" not in provenance.machine() and gpus.system() == {}

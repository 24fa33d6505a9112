"""The runner's command line and config, without Docker: every mistake is one `error: ` line, exit code 2
and no directory left behind; the documented forms compose to what they say. In-process through
`runner.__main__.cli` (outputs land in a temp dir), except one test of the real command line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from runner import CONF_DIR
from runner.__main__ import cli
from runner.config import ConfigError, RunConf, validate
from runner.overrides import groups, prepare
from tests.conftest import write_task

SLOW = "import time\n\ndef total(xs):\n    time.sleep(0.9)\n    return len(xs)\n"
FAST = "import time\n\ndef total(xs):\n    time.sleep(0.3)\n    return len(xs)\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs write under tmp_path/outputs; no key of the machine's is seen."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> str:
    """Run the command line in-process; assert the refusal's shape and return its one line."""
    code = cli(list(args))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert [p.name for p in tmp_path.iterdir()] in ([], ["tasks"], ["mine"]), "something was left behind"
    return lines[0]


def composed(*args: str) -> DictConfig:
    """What Hydra composes from a command line once prepare() has checked and rewritten it."""
    overrides = [a for a in prepare(list(args), "python -m runner") if not a.startswith("-")]
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return compose("config", overrides, return_hydra_config=True)


def run_dir(cfg: DictConfig) -> str:
    return str(OmegaConf.select(cfg, "hydra.run.dir"))


# -------------------------------------------------------------- refusals: one line, exit 2, nothing left
@pytest.mark.parametrize("args, message", [
    # 1. scaffold options are checked against the scaffold's config class, with or without `+`
    (["scaffold.options.bogus=1"], "unknown option 'bogus' for scaffold codeact"),
    (["+scaffold.options.bogus=1"], "unknown option 'bogus' for scaffold codeact"),
    (["scaffold=mini_swe", "scaffold.options.patch=latest"], "mini_swe patch must be 'diff' or 'submission'"),
    # 2. misspelt keys and groups, `+` or not, with the key meant
    (["+budget.max_step=50"], "error: unknown key budget.max_step: did you mean budget.max_steps=50?"),
    (["budget.max_step=50"], "error: unknown key budget.max_step: did you mean budget.max_steps=50?"),
    (["+model.temprature=0.2"], "error: unknown key model.temprature: did you mean temperature=0.2?"),
    (["+tasks.idz=[a]"], "error: unknown key tasks.idz: did you mean tasks.ids=[a]?"),
    (["scafold=codeact"], "error: unknown group or key scafold: did you mean scaffold=codeact?"),
    (["max_steps=5"], "did you mean budget.max_steps=5?"),
    (["budget.zzz=1"], "unknown key budget.zzz: budget has max_steps, "),
    (["model=cluade"], "unknown model 'cluade' (did you mean model=claude?); choose one of claude, "),
    # 3. the internal schema configs are no options
    (["model=schema_model"], "error: unknown model 'schema_model'; choose one of claude, deepseek, gemini, gpt, "
                             "litellm, local, noop, oracle, oracle_note, oracle_weaker, replay, script"),
    (["scaffold=nope"], "error: unknown scaffold 'nope'; choose one of codeact, installed/claude_code, "
                        "installed/codex, installed/mini_swe_agent, installed/openhands, installed/terminus_2, "
                        "mini_swe, "),
    # 4. argparse habits, what a model option needs, a sweep without -m
    (["--rollouts", "4"], "error: --rollouts 4: settings are written key=value here: rollouts=4"),
    (["--rollouts=4"], "error: --rollouts=4: settings are written key=value here: rollouts=4"),
    (["--max-steps", "50"], "budget.max_steps=50"),
    (["--multirn"], "error: unknown flag --multirn: did you mean --multirun?"),
    (["--frobnicate"], "error: unknown flag --frobnicate: settings are written key=value"),
    (["model=local"], "error: model=local needs model.api_base, model.served_name, model.price.input and "
                      "model.price.output: set them, e.g. model.api_base=http://HOST:PORT/v1 "),
    (["model=local", "model.api_base=http://h:1/v1", "model.price.input=1"],
     "error: model=local needs model.served_name and model.price.output: set them"),
    (["judge=local"], "error: judge=local needs judge.name, judge.api_base, judge.price.input and judge.price.output"),
    (["model=replay"], "error: model=replay needs model.run_dir: set it"),
    (["+sweep=ablation"], "error: sweep=ablation defines a sweep of 3 jobs (over scaffold): add -m to run it: "
                          "python -m runner -m +sweep=ablation"),
    (["sweep=ablation", "model=noop"], "error: sweep=ablation defines a sweep of 3 jobs (over scaffold): add -m "
                                       "to run it: python -m runner -m sweep=ablation model=noop"),
    (["+sweep=scaling_smoke"], "defines a sweep of 3 jobs (over +scale)"),
    (["scaffold=codeact,terminus"], "scaffold=codeact,terminus is a sweep over 2 values: add -m"),
    (["judge.votes=3"], "error: judge.votes is an option of the judge, but no judge is chosen: add judge=OPTION"),
    (["rollouts=[1,"], "error: cannot read 'rollouts=[1,'"),
    # 5. a model by name: model=litellm needs the name
    (["model=litellm"], "error: model=litellm needs model.name: set it, e.g. model.name=PROVIDER/MODEL"),
    (["model=claude", "model.price.input=1"], "error: model.price.output must be set"),
    # refused by the job's own check, after Hydra made the run directory (removed again)
    (["rollouts=0"], "error: rollouts must be at least 1, got 0"),
    (["model=claude"], "set the environment variable ANTHROPIC_API_KEY"),
    (["model=claude", "model.name=anthropic/claude-x", "model.api_key_env=ANTHROPIC_API_KEY"],
     "set the environment variable ANTHROPIC_API_KEY"),
    (["+scaffold.options.observation_limit=lots"], "option 'observation_limit' must be a whole number"),
    (["grading.p=7"], "bad grading option: p must be in (0, 1]"),
    (["grading.verifier_timeout_multiplier=0"], "bad grading option: verifier_timeout_multiplier must be above 0"),
    (["sandbox.provider=podman"], "error: sandbox.provider must be one of docker, bwrap, unsandboxed, got 'podman'"),
    (["output_root=/proc/x"], "error: cannot create folders in /proc: it takes no new folders (a system folder); "
                              "choose another location, e.g. output_root=DIR"),
    # combinations wrong from the config alone, refused before anything is installed or built
    (["sandbox.rootfs=host"], "provider docker starts (it runs task images only): add sandbox=bwrap to the command"),
    (["sandbox=unsandboxed"], "with nothing isolating them; to do it all the same add sandbox.allow_unsandboxed=true"),
    (["sandbox.provider=unsandboxed"], "rootfs=image is not something provider unsandboxed starts (it runs over "
                                       "this host's own system): add sandbox.rootfs=host"),
    (["sandbox=bwrap", "sandbox.rootfs=host", "scaffold=installed/mini_swe_agent"],
     "an installed agent (scaffold=installed/...) is added to each task's image, and sandbox.rootfs=host has none"),
    # refused by the model's access check, after the run wrote its config (removed again): nothing is sent
    (["model=antropic/claude-x"], "litellm knows no provider 'antropic' (did you mean anthropic/claude-x?)"),
    # refused when the run reads its tasks (no container started)
    (["tasks.ids=[nope]"], "unknown task id 'nope'"),
    (["tasks.selector=/no/such/dir"], "no such directory"),
    (["model=oracle_weaker", "tasks.selector={tasks}"], "has no such file"),
])
def test_a_mistake_is_one_line_exit_2_and_leaves_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                         message: str) -> None:
    # The run imports litellm beside its first checks; the refusals here come before it is needed.
    monkeypatch.setattr("runner.run.litellm_module", lambda: None)
    if any("{tasks}" in a for a in args):
        write_task(tmp_path / "tasks", "alpha", slow_src=SLOW, fast_src=FAST)
    line = refused(capsys, tmp_path, *(a.format(tasks=tmp_path / "tasks") for a in args))
    assert message in line, line


@pytest.mark.parametrize("args, message", [
    # every layer's own options are checked before anything starts (composed and validated: what cli() runs
    # in the job, without a Hydra run per case; the refusal's shape is the test above's)
    (["parallel=0"], "parallel must be at least 1"),
    (["grade=later"], "grade must be one of"),
    (["scaffold=mini_swe", "+scaffold.options.mode=chat"], "mini_swe mode must be 'text' or 'tool'"),
    (["scaffold=terminus", "+scaffold.options.max_duration_s=0"], "option 'max_duration_s' must be positive"),
    (["scaffold=terminus", "+scaffold.options.format=yaml"], "terminus format must be 'json' or 'xml'"),
    (["grading.gso_version=recent"], "gso_version must be one of paper, leaderboard"),
    (["grading.mode=gso", "grading.stat=paired"], "paired statistic needs interleaved timing"),
    (["budget.snapshot_every=-1"], "budget.snapshot_every must be 0"),
    (["model.max_in_flight=0"], "model.max_in_flight must be at least 1"),
    (["model.attempts=0"], "model.attempts must be positive"),
    (["model.rate_limit_max_wait_s=-1"], "model.rate_limit_max_wait_s must be 0 or more"),
    (["sandbox.memory=lots"], "sandbox.memory must be a size such as 512m or 4g, got 'lots'"),
    (["sandbox.cpus=-1"], "sandbox.cpus must be more than 0"),
    (["sandbox.provider=podman"], "sandbox.provider must be one of docker, bwrap, unsandboxed, got 'podman'"),
    (["sandbox=bwrap", "sandbox.rootfs=nfs"], "sandbox.rootfs must be one of image, host, got 'nfs'"),
    (["temperature=-3"], "temperature must be in [0, 2]"),
    (["grading.memory=0g"], "memory must be a size"),
    (["tasks.source=nope"], "unknown task source 'nope'"),
    (["executor.kind=spark"], "unknown executor 'spark'; choose one of local, ray"),
    (["executor=ray", "executor.slots_per_node=0"], "executor.slots_per_node must be at least 1"),
    (["judge=scripted", "judge.votes=0", "model=noop"], "judge.votes must be at least 1"),
])
def test_every_layers_options_are_checked(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as refusal:
        validate(composed(*args))
    assert message in str(refusal.value) and "\n" not in str(refusal.value)


def test_hydras_own_advice_is_never_printed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for args in (["budget.max_step=50"], ["scafold=codeact"], ["sweep=ablation"], ["model=schema_model"]):
        line = refused(capsys, tmp_path, *args)
        assert "To append" not in line and "+" not in line.split(":", 1)[1].split("-m")[0], line


# ------------------------------------------------------------------------- sweeps: every job checked
def test_a_sweep_is_refused_before_any_job_when_one_job_is_bad(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    code = cli(["-m", "model=noop", "grading.p=0.9,7", "scaffold=codeact,nope"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 3, lines
    assert all(line.startswith("error: sweep not started: job ") for line in lines), lines
    assert "unknown scaffold 'nope'; choose one of codeact" in lines[0] and "p must be in (0, 1]" in lines[1]
    assert list(tmp_path.iterdir()) == []


def test_a_run_refused_after_writing_its_config_leaves_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap's images come from Docker, found missing once the run wrote config.yaml and took its lock."""
    monkeypatch.setattr("runner.run.litellm_module", lambda: None)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # no Docker engine answers here
    line = refused(capsys, tmp_path, "sandbox=bwrap", "tasks.ids=spanindex")
    assert line == ("error: bwrap sandboxes take task images from docker: cannot reach a Docker engine ('docker "
                    "info' failed); start it ('optrunner setup'), or run over this host's own system with no "
                    "Docker: sandbox.rootfs=host (grading commands: --rootfs host)")


def test_a_config_dir_adds_options_and_keeps_the_checks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "mine" / "model").mkdir(parents=True)
    (tmp_path / "mine" / "model" / "mine.yaml").write_text(
        "defaults:\n  - litellm\n  - _self_\nid: mine\nname: openai/gpt-4o-mini\n")
    added = ["--config-dir", str(tmp_path / "mine")]
    try:
        assert "did you mean scaffold=codeact?" in refused(capsys, tmp_path, *added, "scafold=codeact")
        assert "did you mean model=mine?" in refused(capsys, tmp_path, *added, "model=mne")
        line = refused(capsys, tmp_path, *added, "model=mine", "rollouts=0")  # (composed with the added option)
        assert line == "error: rollouts must be at least 1, got 0"
    finally:
        prepare([], "python -m runner")  # (the next command line searches conf/ alone again)
    with pytest.raises(ConfigError, match="unknown model 'mine'"):
        prepare(["model=mine"], "python -m runner")


def test_keys_are_read_from_dotenv_in_the_working_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("runner.run.litellm_module", lambda: None)
    args = ["model=claude", "tasks.ids=[nope]"]  # the key is checked before the tasks are read
    assert "set the environment variable ANTHROPIC_API_KEY" in refused(capsys, tmp_path, *args)
    (tmp_path / ".env").write_text("# keys\nANTHROPIC_API_KEY=sk-ant-from-dotenv\nOPTRUNNER_DOTENV_ONLY=1\n")
    monkeypatch.setenv("OPTRUNNER_DOTENV_ONLY", "from the shell")  # the environment wins over the file
    before = (tmp_path / ".env").stat()
    code = cli(args)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: tasks.ids: unknown task id 'nope'") and err.count("\n") == 1, err
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-from-dotenv"
    assert os.environ["OPTRUNNER_DOTENV_ONLY"] == "from the shell"
    assert (tmp_path / ".env").stat().st_mtime_ns == before.st_mtime_ns  # never written
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env"]
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # (read_dotenv set it in this process)


def test_a_sweep_whose_every_job_is_refused_says_so_and_leaves_nothing(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    code = cli(["-m", "model=antropic/claude-x,opnai/gpt-x", "tasks.ids=spanindex"])  # (refused as they start)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "".join(lines)
    assert [line for line in lines if line.startswith("error: ")] == [
        "error: model.name=antropic/claude-x: litellm knows no provider 'antropic' (did you mean "
        "anthropic/claude-x?); nothing was sent",
        "error: model.name=opnai/gpt-x: litellm knows no provider 'opnai' (did you mean openai/gpt-x?); "
        "nothing was sent",
        "error: all 2 jobs of the sweep failed (above)"]
    assert list(tmp_path.iterdir()) == []  # not even Hydra's multirun.yaml


def test_a_sweep_refuses_schema_options_and_unset_values_per_job(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    code = cli(["-m", "model=noop,schema_model,local"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, lines
    assert lines[0].startswith("error: sweep not started: job 1 (model=schema_model") and "unknown model" in lines[0]
    assert lines[1].startswith("error: sweep not started: job 2 (model=local") and "needs model.api_base" in lines[1]
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_file_with_m_expands_to_its_jobs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = cli(["-m", "sweep=ablation", "model=noop", "rollouts=0"])  # each job refused: nothing runs
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and [line.split(" (")[0] for line in lines] == [
        f"error: sweep not started: job {i}" for i in range(3)], lines
    assert [line.split("(scaffold=")[1].split(" ")[0] for line in lines] == ["codeact", "mini_swe", "terminus"]


# ---------------------------------------------------------------- what is documented composes as it says
def test_scaffold_options_are_set_with_or_without_plus() -> None:
    for form in ("scaffold.options.patch=submission", "+scaffold.options.patch=submission"):
        conf = validate(composed("scaffold=mini_swe", form))
        assert conf.scaffold.options == {"patch": "submission"}
    conf = validate(composed("scaffold=mini_swe_aggressive", "scaffold.options.prompt=default"))
    assert conf.scaffold.options == {"prompt": "default"}  # an option the preset sets is replaced, not refused
    conf = validate(composed("model.kwargs.reasoning_effort=high"))
    assert conf.model.kwargs == {"reasoning_effort": "high"}


def test_plus_on_an_existing_key_or_group_and_a_group_without_plus_work() -> None:
    conf = validate(composed("+budget.max_steps=50", "+scaffold=terminus", "+rollouts=3"))
    assert (conf.budget.max_steps, conf.scaffold.name, conf.rollouts) == (50, "terminus", 3)
    assert composed("-m", "sweep=ablation").sweep_name == "ablation_oracle"


def test_a_composed_config_with_a_stray_key_is_refused_by_validate() -> None:
    """Hydra's `+key` adds what the schema lacks; validate() refuses it when prepare() was not in the way."""
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("config", ["+model.temprature=0.2"])
    with pytest.raises(ConfigError, match=r"^unknown key model.temprature: did you mean temperature\?$"):
        validate(cfg)


def test_help_lists_groups_without_schemas_keys_and_examples(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    assert cli(["--help"], prog="optrunner run") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: optrunner run [-m] [group=option ...] [key=value ...]")
    assert "python -m runner" in out.splitlines()[0] and "powered by Hydra" not in out
    assert "schema_" not in out
    for group, options in groups().items():
        (line,) = [line for line in out.splitlines() if line.strip().startswith(f"{group} ")]
        assert [o.rstrip("*") for o in line.split(None, 1)[1].split(", ")] == list(options), line
    assert "\n  model     claude, deepseek, gemini, gpt, litellm, local, noop, oracle*, oracle_note," in out
    for key in ("rollouts=N", "parallel=P", "temperature=T", "grade=after|stream|none", "model.name=",
                "scaffold.options.KEY=VALUE", "budget.max_steps=N", "tasks.selector=DIR", "name=NAME"):
        assert f"\n  {key}" in out, key
    assert out.count("\n  optrunner run ") == 3 and len(out.splitlines()) < 45
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------- a model by its litellm name
def test_a_model_name_gets_its_own_run_directory_and_its_providers_key(monkeypatch: pytest.MonkeyPatch) -> None:
    gpt = composed("model=claude", "model.name=openai/gpt-x")
    other = composed("model=claude", "model.name=openai/gpt-y")
    assert run_dir(gpt) == "outputs/runs/openai-gpt-x_codeact_smoke_suite_n1"
    assert run_dir(other) == "outputs/runs/openai-gpt-y_codeact_smoke_suite_n1"
    conf = validate(gpt)  # no ANTHROPIC_API_KEY: the key is the new provider's, which litellm looks up
    assert (conf.model.id, conf.model.name, conf.model.api_key_env, conf.model.prompt_caching) == (
        "openai-gpt-x", "openai/gpt-x", None, None)
    monkeypatch.setenv("MY_KEY", "k")
    kept = validate(composed("model=claude", "model.name=anthropic/claude-x", "model.id=mine",
                             "model.api_key_env=MY_KEY", "model.prompt_caching=false"))
    assert (kept.model.id, kept.model.api_key_env, kept.model.prompt_caching) == ("mine", "MY_KEY", False)


@pytest.mark.parametrize("option", ["claude", "gpt", "gemini", "deepseek", "oracle"])
def test_unchanged_presets_keep_their_run_directories(option: str) -> None:
    """Runs made before model.name could name the model resume in the same directories."""
    from runner.overrides import preset

    cfg = composed(f"model={option}")
    assert run_dir(cfg) == f"outputs/runs/{preset('model', option)['id']}_codeact_smoke_suite_n1"


def test_model_litellm_takes_any_name_with_optional_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = composed("model=litellm", "model.name=mistral/mistral-large-latest")
    conf = validate(cfg)
    assert (conf.model.id, conf.model.name, conf.model.api_key_env, conf.model.price) == (
        "mistral-mistral-large-latest", "mistral/mistral-large-latest", None, None)
    assert run_dir(cfg) == "outputs/runs/mistral-mistral-large-latest_codeact_smoke_suite_n1"
    priced = validate(composed("model=litellm", "model.name=x/y", "model.price.input=1", "model.price.output=2.5"))
    assert (priced.model.price.input, priced.model.price.output) == (1.0, 2.5)  # type: ignore[union-attr]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    claude = validate(composed("model=claude", "model.price.input=3", "model.price.output=15"))
    assert (claude.model.price.input, claude.model.price.output) == (3.0, 15.0)  # type: ignore[union-attr]


def test_model_local_with_its_values_validates() -> None:
    conf = validate(composed("model=local", "model.api_base=http://h:8000/v1", "model.served_name=qwen",
                             "model.price.input=0.2", "model.price.output=0.8"))
    assert (conf.model.name, conf.model.api_base, conf.model.id) == ("openai/qwen", "http://h:8000/v1", "local")
    assert (conf.model.price.input, conf.model.price.output) == (0.2, 0.8)  # type: ignore[union-attr]


def test_defaults_are_what_runconf_says() -> None:
    conf = validate(composed())
    assert conf.rollouts == RunConf().rollouts and conf.model.id == "oracle"
    assert (conf.sandbox.provider, conf.sandbox.rootfs) == (RunConf().sandbox.provider, "image") == ("docker", "image")


def test_sandbox_bwrap_is_the_docker_presets_limits_under_bubblewrap() -> None:
    docker, bwrap = validate(composed()).sandbox, validate(composed("sandbox=bwrap")).sandbox
    assert bwrap.provider == "bwrap" and bwrap.limits() == docker.limits()
    assert validate(composed("sandbox.provider=bwrap", "sandbox.rootfs=host")).sandbox.rootfs == "host"


# -------------------------------------------------------------------------- the real command line, once
def test_the_real_command_line_refuses_in_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A refusal after Hydra made the run directory (rollouts=0 is the job's own check): it is removed."""
    done = subprocess.run([sys.executable, "-m", "runner", "rollouts=0"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "CI": "true"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == ["error: rollouts must be at least 1, got 0"], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_executor_ray_without_ray_names_the_extra(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import runner.executors as executors

    monkeypatch.setitem(executors.EXTRAS, "ray", ("optrunner_no_such_module", "ray"))  # as if Ray were absent
    line = refused(capsys, tmp_path, "executor=ray")
    assert "executor=ray needs the 'ray' extra: pip install 'ray<" in line  # (optrunner itself is not on PyPI)
    assert line.endswith("(in this checkout: pip install -e '.[ray]')")


def test_a_model_named_as_harbor_and_inspect_name_it_is_litellms() -> None:
    cfg = composed("model=openai/gpt-4o-mini")
    assert (cfg.model.name, cfg.model.id) == ("openai/gpt-4o-mini", "openai-gpt-4o-mini")
    assert OmegaConf.select(cfg, "hydra.runtime.choices")["model"] == "litellm"
    assert composed("model=claude").model.id == "claude"  # the presets keep their names


@pytest.mark.parametrize("given, ids", [("tasks.ids=spanindex", ["spanindex"]), ("tasks.ids=[a,b]", ["a", "b"]),
                                        ("tasks.ids=null", None)])
def test_one_task_id_needs_no_brackets(given: str, ids: list[str] | None) -> None:
    found = composed(given).tasks.ids
    assert (list(found) if found is not None else None) == ids


def test_a_model_after_m_is_said_how_to_name() -> None:
    with pytest.raises(ConfigError, match=r"name the model as model=openai/gpt-4o-mini \(here -m means a sweep"):
        prepare(["-m", "openai/gpt-4o-mini"], "python -m runner")


def test_a_refused_run_removes_nothing_another_process_holds(tmp_path: Path) -> None:
    """Two commands started together on one new directory: the one refused must not remove the other's files."""
    from runner.__main__ import forget_refused
    from runner.lock import RunLock

    run = tmp_path / "outputs" / "runs" / "x"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("rollouts: 1\n")  # written by the other after this command looked (made: {})
    with RunLock(run, "run"):  # the other holds the directory
        forget_refused(run, tmp_path / "outputs", made=frozenset())
        assert sorted(p.name for p in run.iterdir()) == [".lock", "config.yaml"]
    forget_refused(run, tmp_path / "outputs", made=frozenset())  # held by no one: what was written goes
    assert not run.exists() and (tmp_path / "outputs").is_dir()

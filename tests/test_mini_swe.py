"""The mini-swe-agent style scaffold in real containers, driven through litellm by scripted models."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.tasks import Task
from harness.tasks.folder import load_task
from harness.models import scripted
from scaffolds.limits import Limits
from scaffolds.mini_swe import MiniSweConfig, MiniSweScaffold
from tests.conftest import write_task
from tests.scaffold_support import actions, bound_model, run_episode, same_effect, script_model, task_oracle_steps

pytestmark = pytest.mark.docker
QUICK = Limits(max_steps=20, snapshot_every=0)


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("mini")))


@pytest.mark.parametrize("mode", ["text", "tool"])
def test_oracle_reproduces_the_expert_change_and_replay_repeats_it(task: Task, mode: str) -> None:
    scaffold = MiniSweScaffold(mode=mode)
    episode, diff = run_episode(scaffold, task, bound_model("scripted/oracle", task), QUICK)
    assert episode.exit_reason == "submitted", episode.exit_message
    assert diff.strip() and same_effect(task, diff, task.expert_patch)
    assert episode.usage.calls == episode.steps == len(task_oracle_steps(task))
    assert episode.usage.cost_known and episode.usage.cost_usd > 0

    replayed, replay_diff = run_episode(scaffold, task, bound_model("scripted/replay", task,
                                                                    trajectory=episode.messages), QUICK)
    assert actions(replayed) == actions(episode)
    assert replayed.exit_reason == "submitted" and same_effect(task, replay_diff, diff)


def test_noop_submits_an_empty_diff(task: Task) -> None:
    episode, diff = run_episode(MiniSweScaffold(), task, bound_model("scripted/noop", task), QUICK)
    assert episode.exit_reason == "submitted" and episode.steps == 1 and diff.strip() == ""


def test_fresh_process_per_command_and_the_submission(task: Task) -> None:
    steps = [{"bash": "cd /tmp && export FOO=1 && pwd"}, {"bash": "pwd; echo FOO=$FOO; echo PAGER=$PAGER"},
             {"bash": f"echo {scripted.SUBMIT_SENTINEL}; false"},  # exit code 1: not a submission
             {"bash": f"echo {scripted.SUBMIT_SENTINEL}; echo the result"}]
    episode, _ = run_episode(MiniSweScaffold(), task, script_model(steps), QUICK)
    shown = [o.text for s in episode.step_records for o in s.observations]
    assert "/tmp" in shown[0] and "/testbed" in shown[1] and "FOO=\n" in shown[1] and "PAGER=cat" in shown[1]
    assert "<returncode>1</returncode>" in shown[2]
    assert episode.exit_reason == "submitted" and episode.submission == "the result\n"


def test_format_errors_are_dropped_from_history_and_three_in_a_row_end_the_run(task: Task) -> None:
    steps = [{"fault": "malformed"}, {"fault": "multi"}, {"bash": "echo ok"},
             {"fault": "malformed"}, {"fault": "multi"}, {"fault": "malformed"}, {"bash": "echo never"}]
    episode, _ = run_episode(MiniSweScaffold(), task, script_model(steps), QUICK)
    assert episode.exit_reason == "format_errors" and episode.steps == 6
    assistant = [m["content"] for m in episode.messages if m["role"] == "assistant"]
    assert len(assistant) == 1 and "echo ok" in assistant[0]  # only the valid reply was kept
    errors = [m["content"] for m in episode.messages if m["role"] == "user" and "not accepted" in m["content"]]
    assert len(errors) == 4 and "found 0" in errors[0] and "found 2" in errors[1]


def test_tool_mode_runs_several_calls_in_order_and_rejects_bad_calls(task: Task) -> None:
    steps = [{"fault": "multi"}, {"fault": "unknown_tool"}, {"fault": "bad_args"}, {"finish": "done"}]
    episode, _ = run_episode(MiniSweScaffold(mode="tool"), task, script_model(steps), QUICK)
    assert episode.exit_reason == "submitted"
    tool_outputs = [m["content"] for m in episode.messages if m["role"] == "tool"]
    assert "one" in tool_outputs[0] and "two" in tool_outputs[1]
    errors = [m["content"] for m in episode.messages if m["role"] == "user" and "not accepted" in m["content"]]
    assert "unknown tool 'browse'" in errors[0] and "not valid JSON" in errors[1]


def test_timeout_is_not_fatal_and_long_output_keeps_head_and_tail(task: Task) -> None:
    steps = [{"bash": "echo started; sleep 30"},
             {"bash": "python3 -c \"print('a' * 6000 + 'b' * 6000 + 'c' * 6000)\""}, {"finish": "ok"}]
    scaffold = MiniSweScaffold(MiniSweConfig(command_timeout_s=1))
    episode, _ = run_episode(scaffold, task, script_model(steps), QUICK)
    first, second = (s.observations[0] for s in episode.step_records[:2])
    assert first.exit_code == -1 and "started" in first.text and "stopped after 1 seconds" in first.text
    assert second.full_chars == 18001 and "8001 characters left out" in second.text
    assert "aaaa" in second.text and "cccc" in second.text and "b" * 3000 not in second.text
    assert episode.exit_reason == "submitted"


@pytest.mark.parametrize("limits, reason", [
    (Limits(max_steps=2, snapshot_every=0), "step_limit"),
    (Limits(max_cost_usd=1e-9, snapshot_every=0), "cost_limit"),
    (Limits(wall_clock_s=1.5, snapshot_every=0), "time_limit"),
])
def test_limits_end_the_run_with_their_reason(task: Task, limits: Limits, reason: str) -> None:
    steps = [{"bash": "sleep 1"}] * 10
    episode, _ = run_episode(MiniSweScaffold(), task, script_model(steps), limits)
    assert episode.exit_reason == reason
    assert episode.steps == (2 if reason == "step_limit" else episode.steps)


@pytest.mark.parametrize("status, reason", [(500, "provider_error"), (401, "model_error")])
def test_provider_errors_end_the_run_with_their_kind(task: Task, status: int, reason: str) -> None:
    model = script_model([{"bash": "true"}, {"error": status}], attempts=1)
    episode, _ = run_episode(MiniSweScaffold(), task, model)
    assert episode.exit_reason == reason and str(status) in episode.exit_message and episode.steps == 2


def test_snapshots_of_the_diff_every_s_steps(task: Task) -> None:
    oracle = bound_model("scripted/oracle", task)
    episode, diff = run_episode(MiniSweScaffold(), task, oracle, Limits(snapshot_every=2))
    snapshots = [s.diff_snapshot for s in episode.step_records]
    assert [i for i, snap in enumerate(snapshots) if snap is not None] == [1, 3, 5][:len(episode.step_records) // 2]
    assert snapshots[1] == ""  # before the patch was applied
    assert same_effect(task, snapshots[3], diff)  # applied at step 3 (index 2)


def test_aggressive_variant_and_bad_config(task: Task, tmp_path: Path) -> None:
    plain = MiniSweScaffold()._first_messages(task)[0]["content"]
    aggressive = MiniSweScaffold(prompt="aggressive")._first_messages(task)[0]["content"]
    assert aggressive.startswith(plain) and "do not submit after your first change" in aggressive
    with pytest.raises(ValueError, match="mode must be"):
        MiniSweConfig(mode="json")


def test_patch_source_diff_by_default_and_upstreams_submission_rule(task: Task) -> None:
    oracle = bound_model("scripted/oracle", task)
    episode, diff = run_episode(MiniSweScaffold(), task, oracle, QUICK)
    assert episode.patch is None and episode.details["patch_source"] == "container"
    submitted, _diff = run_episode(MiniSweScaffold(patch="submission"), task, bound_model("scripted/oracle", task),
                                   QUICK)
    assert submitted.details["patch_source"] == "submission" and "git diff" in submitted.messages[0]["content"]
    assert submitted.patch == task.expert_patch  # the oracle hands in the patch it applied
    # Upstream's rule: any end other than a submission hands in an empty patch, whatever the container holds.
    limited, container = run_episode(MiniSweScaffold(patch="submission"), task, bound_model("scripted/oracle", task),
                                     Limits(max_steps=3, snapshot_every=0))
    assert limited.exit_reason == "step_limit" and container.strip() and limited.patch == ""


def test_actions_are_counted_beside_model_calls(task: Task) -> None:
    multi = {"raw": {"content": "two", "tool_calls": [{"name": "bash", "arguments": '{"command": "echo a"}'},
                                                      {"name": "bash", "arguments": '{"command": "echo b"}'}]}}
    episode, _ = run_episode(MiniSweScaffold(mode="tool"), task, script_model([multi, {"finish": "done"}]), QUICK)
    assert episode.steps == 2 and episode.actions == 3  # the step limit stays per model call, as upstream


def test_output_of_exactly_the_limit_is_cut_as_upstream(task: Task) -> None:
    steps = [{"bash": "head -c 10000 /dev/zero | tr '\\0' x"}, {"bash": "head -c 9999 /dev/zero | tr '\\0' x"}]
    episode, _ = run_episode(MiniSweScaffold(), task, script_model(steps), Limits(max_steps=2, snapshot_every=0))
    at_limit, under = [o.text for s in episode.step_records for o in s.observations]
    assert "<output_head>" in at_limit and "0 characters left out" in at_limit
    assert "<output_head>" not in under and "x" * 9999 in under

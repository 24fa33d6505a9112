"""The run's HTML pages, opened in headless Chromium: what a reader sees, filters, links, keyboard and search.

The run is a stored graded run of the smoke tasks (tests/fixtures/run_a718ad9), copied so its pages are
written fresh; the trajectory view itself is also checked as a pure function on hand-made records.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.pages import write_run_pages
from runner.pages.trajectory import trajectory_view
from tests.browser_support import chromium

FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pages") / "run"
    shutil.copytree(FIXTURE, path)
    write_run_pages(path)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    p = browser.new_page(viewport={"width": 1300, "height": 900})
    yield p
    p.close()


def shown(page: Any) -> list[str]:
    """The visible rows of the rollouts table as `task #i`."""
    return page.eval_on_selector_all("#rollouts tbody tr:not(.hidden)",
                                     "rows => rows.map(r => r.cells[0].textContent + ' #' + r.cells[1].textContent)")


def test_the_run_page_lists_every_rollout_and_filters_them(run: Path, page: Any) -> None:
    page.goto((run / "report.html").as_uri())
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(shown(page)) == sorted(f"{r['instance_id']} #{r['rollout']}" for r in records)
    assert page.inner_text("#head h1").startswith("Run report")  # report.md's own heading and summary first
    page.select_option("[data-filter=task]", "spanindex")
    assert shown(page) == ["spanindex #0", "spanindex #1"] and page.inner_text("#shown") == "2"
    page.select_option("[data-filter=task]", "")
    low = sorted(r["score"] for r in records)[len(records) // 2]
    page.fill("[data-filter=score-min]", str(low))
    expected = sorted(f"{r['instance_id']} #{r['rollout']}" for r in records if r["score"] >= low)
    assert sorted(shown(page)) == expected and 0 < len(expected) < len(records)
    page.fill("[data-filter=score-min]", "")
    page.select_option("[data-filter=status]", "passed")
    assert len(shown(page)) == sum(r["grading"]["status"] == "passed" for r in records)


def test_tables_sort_by_a_clicked_column(run: Path, page: Any) -> None:
    page.goto((run / "report.html").as_uri())
    column = "rows => rows.map(r => parseFloat(r.cells[9].textContent))"
    page.click("#rollouts th:has-text('score')")
    scores = page.eval_on_selector_all("#rollouts tbody tr", column)
    assert scores == sorted(scores) and scores != sorted(scores, reverse=True)
    page.click("#rollouts th:has-text('score')")
    again = page.eval_on_selector_all("#rollouts tbody tr", column)
    assert again == sorted(scores, reverse=True)


def test_a_rollout_opens_its_trajectory_with_steps_diff_grading_keys_and_search(run: Path, page: Any,
                                                                                tmp_path: Path) -> None:
    page.goto((run / "report.html").as_uri())
    page.click("#rollouts tbody tr:first-child a.trajectory")
    assert page.url.endswith(".html") and "/pages/" in page.url
    task, index = page.url.split("/pages/")[1].removesuffix(".html").split("/")
    trajectory = json.loads((run / "trajectories" / task / f"{index}.json").read_text())
    steps = trajectory["step_records"]
    assert page.locator(".step").count() == len(steps)
    first_command = steps[0]["actions"][0]["arguments"]["command"]  # a codeact run: execute_bash's command
    assert page.locator("#step-0 pre.action").first.inner_text() == first_command
    assert page.locator("pre.diff span.add").count() > 0  # the final patch, coloured
    assert page.inner_text("#exit-reason") == trajectory["exit_reason"]
    assert page.locator("#tests tbody tr").count() == len(json.loads(
        (run / "grading" / task / f"{index}.json").read_text())["tests"])
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.get_attribute("#step-1", "class") == "step current"
    page.keyboard.press("/")
    page.keyboard.type("git status")
    hits = page.locator(".step.hit").count()
    assert 0 < hits and page.inner_text("#hits") == f"{hits} of {len(steps)} steps"
    page.screenshot(path=str(tmp_path / "trajectory.png"), full_page=False)
    assert (tmp_path / "trajectory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.keyboard.press("Escape")
    page.keyboard.press("n")  # the next rollout's page
    page.wait_for_load_state()
    assert page.url.split("/pages/")[1] != f"{task}/{index}.html"


def test_the_trajectory_view_pairs_replies_with_steps_and_marks_truncation() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "task"}]
    steps = []
    for i in range(3):
        messages += [{"role": "assistant", "content": f"reply {i}", "reasoning_content": "why" * (i + 1)},
                     {"role": "user", "content": f"out {i}"}]
        steps.append({"index": i, "started_at": 10.0 + i, "ended_at": 10.5 + i, "actions": [{"command": f"c{i}"}],
                      "observations": [{"text": f"out {i}", "full_chars": 5 if i else 5000}],
                      "diff_snapshot": "diff --git a/x b/x\n+new\n" if i else None})
    view = trajectory_view({"instance_id": "t", "rollout": 2, "patch": "--- a/x\n+++ b/x\n-old\n+new\n"},
                           {"messages": messages, "step_records": steps}, None, {})
    assert [s.message for s in view.steps] == ["reply 0", "reply 1", "reply 2"]
    assert [s.reasoning for s in view.steps] == ["why", "whywhy", "whywhywhy"]
    assert [s.observations[0].truncated for s in view.steps] == [True, False, False]
    assert view.steps[1].diff == "diff --git a/x b/x\n+new\n"
    assert view.steps[2].diff is None and view.steps[2].diff_unchanged  # the same snapshot again
    assert [p["role"] for p in view.prompt] == ["system", "user"] and view.unpaired_replies == 0


def test_a_diff_snapshot_shows_only_the_files_changed_since_the_last_one() -> None:
    a1, b1, b2 = ("diff --git a/a.py b/a.py\n+1\n", "diff --git a/b.py b/b.py\n+1\n", "diff --git a/b.py b/b.py\n+2\n")
    snapshots = [a1, a1 + b1, a1 + b2, b2]
    steps = [{"index": i, "diff_snapshot": snap} for i, snap in enumerate(snapshots)]
    view = trajectory_view({"instance_id": "t", "rollout": 0}, {"messages": [], "step_records": steps}, None, {})
    assert [s.diff for s in view.steps] == [a1, b1, b2, "diff --git a/a.py b/a.py\n(no longer changed)\n"]
    assert [s.unchanged_files for s in view.steps] == [[], ["a.py"], ["a.py"], ["b.py"]]


def test_runner_view_rewrites_the_pages_and_refuses_what_is_not_a_run(run: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.view import main as view_main  # `python -m runner.view`, in this process

    (run / "report.html").unlink()
    code = view_main([str(run)])
    stderr = capsys.readouterr().err
    assert code == 0 and (run / "report.html").exists(), stderr
    # --open where no browser can be started (no DISPLAY, no BROWSER, none on PATH): said, and not an error
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("BROWSER", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    import webbrowser
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # (the registry is read again under this environment)
    code = view_main([str(run), "--open"])
    stderr = capsys.readouterr().err
    assert code == 0 and (f"note: no browser could be started here: open {(run / 'report.html').resolve().as_uri()} "
                          "in one (the pages are written)") in stderr, stderr
    code = view_main([str(tmp_path)])
    stderr = capsys.readouterr().err
    assert code == 2 and stderr.strip() == f"error: {tmp_path} is not a run directory (no config.yaml)"


def test_the_aggregate_page_embeds_its_plots_and_links_each_run(run: Path, page: Any, tmp_path: Path) -> None:
    from runner import aggregate

    out = tmp_path / "agg"
    assert aggregate.main([str(run), "--out", str(out)]) == 0
    result = json.loads((out / "aggregate.json").read_text())
    page.goto((out / "aggregate.html").as_uri())
    widths = page.eval_on_selector_all(".plot img", "imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == len(result["plots"]) > 0 and all(w > 0 for w in widths)  # drawn from inline data
    assert all(src.startswith("data:image/png;base64,")
               for src in page.eval_on_selector_all(".plot img", "imgs => imgs.map(i => i.getAttribute('src'))"))
    page.click("#runs a")
    assert page.url == (run / "report.html").resolve().as_uri()
    assert page.locator("#rollouts tbody tr").count() == len((run / "results.jsonl").read_text().splitlines())


def test_a_running_run_shows_its_finished_rollouts_ungraded(tmp_path: Path, page: Any) -> None:
    run = tmp_path / "running"
    shutil.copytree(FIXTURE, run)
    for name in ("report.md", "report.json", "results.jsonl"):  # as before its first graded record
        (run / name).unlink()
    shutil.rmtree(run / "rollouts" / "spanindex")  # and before these finished
    write_run_pages(run)
    page.goto((run / "report.html").as_uri())
    assert "No report yet" in page.inner_text("body")
    assert sorted(shown(page)) == ["imgblur #0", "imgblur #1", "rollstats #0", "rollstats #1"]
    assert set(page.eval_on_selector_all("#rollouts tbody tr", "rows => rows.map(r => r.cells[5].textContent)")) == \
        {"ungraded"}

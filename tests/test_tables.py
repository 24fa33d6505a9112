"""The table files (runner.tables): systems.csv reads back to the numbers of aggregate.json's rows,
systems.tex is one well-formed booktabs tabular (compiled when pdflatex or tectonic is installed),
rollouts.csv and .parquet hold one row per task x planned rollout with the numbers the metrics count, and a
run's report writes the same files. No Docker: a unit test.
"""
from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from runner import tables
from runner.aggregate import aggregate
from runner.report import slots, write_tables
from runner.study import Run
from tests.test_aggregate import _record, _run

NUMBERS = ("opt_at_1", "opt_at_K", "opt_at_K_first", "avg_at_k", "best_at_k", "dominance", "mean_steps",
           "wall_time_s", "cost_usd", "cost_per_rollout", "cost_per_solved_task", "cost_share_unsolved")


def _runs() -> list[Run]:
    a = _run("a_b", [_record("t1", 0, 0.5, True, 0.10), _record("t1", 1, 0.0, False, 0.30),
                     _record("t2", 0, 0.2, False, 0.20), _record("t2", 1, 0.4, False, 0.40)])
    b = _run("b", [_record("t1", 0, 0.5, True, 0.05), _record("t1", 1, 0.5, True, 0.05),
                   _record("t2", 0, 0.3, False, 0.05)])  # t2's rollout 1 is missing
    return [a, b]


def _result() -> dict[str, Any]:
    result = aggregate(_runs(), k=2)
    result["systems"][0]["judges"] = {"claude": {"opt_at_K": 0.5, "hard_success": 0.25, "true_success": 0.125}}
    return result


def _read(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_systems_csv_reads_back_to_the_rows() -> None:
    result = _result()
    read = _read(tables.systems_csv(result["systems"]))
    assert [r["system"] for r in read] == [row["system"] for row in result["systems"]]
    for row, back in zip(result["systems"], read):
        for key in NUMBERS:
            assert (float(back[key]) if back[key] else None) == row[key], key  # exactly: floats written by repr
        for metric, (low, high) in row["ci"].items():
            assert (float(back[f"{metric}_lo"]), float(back[f"{metric}_hi"])) == (low, high)
        assert int(back["tokens_input"]) == row["tokens"]["input"] and int(back["rollouts"]) == row["rollouts"]
        assert back["cost_known"] == str(row["cost_known"]) and back["approximate"] == "False"
    judged, plain = read
    assert float(judged["claude_hard_success"]) == 0.25 and float(judged["claude_true_success"]) == 0.125
    assert plain["claude_hard_success"] == ""  # not judged: an empty cell, never 0
    assert read[1]["cost_per_solved_task"] and float(read[1]["cost_per_solved_task"]) == pytest.approx(0.15 / 1)


def _data_lines(tex: str) -> list[str]:
    lines = tex.splitlines()
    return lines[lines.index("\\midrule") + 1:lines.index("\\bottomrule")]


def _cells(line: str) -> list[str]:
    assert line.endswith(" \\\\")
    return re.split(r"(?<!\\)&", line[:-3])


def _check_structure(tex: str) -> tuple[list[str], list[list[str]]]:
    """One tabular with the booktabs rules in order, as many cells in every line as the column spec has
    columns, and braces that balance (escaped ones aside); the header's and the rows' cells."""
    assert tex.count("\\begin{tabular}") == 1 and tex.count("\\end{tabular}") == 1
    lines = tex.splitlines()
    order = [lines.index(mark) for mark in ("\\toprule", "\\midrule", "\\bottomrule")]
    assert order == sorted(order) and lines[-1] == "\\end{tabular}"
    spec = re.search(r"\\begin\{tabular\}\{([lrc]+)\}", tex)
    assert spec
    header = _cells(lines[order[0] + 1])
    rows = [_cells(line) for line in _data_lines(tex)]
    assert all(len(cells) == len(spec.group(1)) for cells in [header, *rows])
    depth = 0
    for ch in re.sub(r"\\[{}]", "", "\n".join(line for line in lines if not line.startswith("%"))):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    return [c.strip() for c in header], [[c.strip() for c in cells] for cells in rows]


def test_systems_latex_is_one_booktabs_tabular_with_the_papers_names() -> None:
    result = _result()
    tex = tables.systems_latex(result["systems"], result["intervals"])
    header, rows = _check_structure(tex)
    assert header == ["System", "Opt@1", "Opt@2", "Avg@2", "Best@2", "Dominance", "Cost/trial (\\$)", "Err./unsc.",
                      "Hard Success", "True Success"]
    assert [r[0] for r in rows] == ["a\\_b x codeact x smoke", "b x codeact x smoke"]
    first = dict(zip(header, rows[0]))
    low, high = result["systems"][0]["ci"]["avg_at_k"]
    assert first["Avg@2"] == f"0.275 {{\\scriptsize [{low:.3f}, {high:.3f}]}}" and first["Hard Success"] == "0.250"
    assert dict(zip(header, rows[1]))["Hard Success"] == "--"
    assert tex.startswith("% [lo, hi]: 95% percentile bootstrap over tasks (2000 resamples, seed 0)\n")


def test_systems_latex_varying_k_p_truncations_and_hard_names() -> None:
    rows = [dict(row) for row in _result()["systems"]]
    rows[0]["system"] = "m&m's 100% #1 {x} ~y^ \\z $"
    rows[1].update(rollouts=4, k=3, p=0.9, approximate=True, cost_known=False, judges=None)
    header, cells = _check_structure(tables.systems_latex(rows))
    assert header[:6] == ["System", "$K$", "$k$", "$p$", "Opt$_p$@1", "Opt$_p$@$K$"] and "Avg@$k$" in header
    assert cells[0][0] == ("m\\&m's 100\\% \\#1 \\{x\\} \\textasciitilde{}y\\textasciicircum{} \\textbackslash{}z "
                           "\\$")
    assert cells[1][0].endswith("$^*$") and cells[1][1:4] == ["4", "3", "0.9"]
    assert dict(zip(header, cells[1]))["Cost/trial (\\$)"].endswith("$^\\dagger$")  # over the known prices only


@pytest.mark.skipif(not (shutil.which("pdflatex") or shutil.which("tectonic")), reason="no LaTeX installed")
def test_systems_latex_compiles(tmp_path: Path) -> None:
    rows = [dict(row) for row in _result()["systems"]]
    rows[1]["system"] = "m&m's 100% #1 {x} ~y^ \\z $_"
    (tmp_path / "table.tex").write_text(tables.systems_latex(rows, _result()["intervals"]))
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}"
                                      "\\input{table}\\end{document}\n")
    if shutil.which("pdflatex"):
        cmd = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"]
    else:
        cmd = ["tectonic", "doc.tex"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "doc.pdf").read_bytes().startswith(b"%PDF")


def test_rollout_rows_count_what_the_metrics_count() -> None:
    runs = _runs()
    result = aggregate(runs, k=2)
    rows = [r for run in runs for r in tables.rollout_rows(run.label, run.conf, run.slots())]
    read = _read(tables.rollouts_csv(rows))
    assert len(read) == 2 * 2 * 2  # systems x tasks x planned rollouts, the missing one included
    missing = [r for r in read if r["status"] == "missing"]
    assert [(r["system"], r["task"], r["rollout"], r["score"], r["solved"], r["steps"]) for r in missing] == \
        [("b x codeact x smoke", "t2", "1", "0.0", "False", "")]
    for row in result["systems"]:  # Avg@k and Opt@1 from the rollout rows alone
        mine = [r for r in read if r["system"] == row["system"]]
        assert sum(float(r["score"]) for r in mine) / len(mine) == pytest.approx(row["avg_at_k"])
        assert sum(r["solved"] == "True" for r in mine) / len(mine) == pytest.approx(row["opt_at_1"])
    first = read[0]
    assert (first["speedup_vs_expert"], first["cost_usd"], first["input_tokens"]) == ("1.0", "0.1", "100")


def test_rollouts_parquet_when_pyarrow_is_there(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    runs = _runs()
    rows = [r for run in runs for r in tables.rollout_rows(run.label, run.conf, run.slots())]
    written = tables.write_tables(tmp_path, aggregate(runs, k=2)["systems"], rows)
    assert written == ["systems.csv", "systems.tex", "rollouts.csv", "rollouts.parquet"]
    back = pq.read_table(tmp_path / "rollouts.parquet").to_pylist()
    assert back == [asdict(r) for r in rows]


def test_without_pyarrow_the_csv_still_comes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    runs = _runs()
    rows = tables.rollout_rows(runs[0].label, runs[0].conf, runs[0].slots())
    assert tables.rollouts_parquet(rows) is None
    assert tables.write_tables(tmp_path, [], rows) == ["rollouts.csv"]
    assert len(_read((tmp_path / "rollouts.csv").read_text())) == 4 and not (tmp_path / "systems.tex").exists()


def test_a_runs_report_writes_the_same_tables(tmp_path: Path) -> None:
    run = _runs()[1]
    by_task = slots(run.records, run.task_ids, run.n)
    written = write_tables(tmp_path, run.conf, by_task, None)
    assert {"systems.csv", "systems.tex", "rollouts.csv"} <= set(written)
    (row,) = _read((tmp_path / "systems.csv").read_text())
    alone = aggregate([run], k=3)["systems"][0]  # the report's row is the aggregate's of this run alone
    for key in ("opt_at_1", "opt_at_K", "avg_at_k", "best_at_k", "avg_at_k_lo", "avg_at_k_hi"):
        value = alone["ci"][key[:-3]][key.endswith("_hi")] if key.endswith(("_lo", "_hi")) else alone[key]
        assert float(row[key]) == value, key
    header, cells = _check_structure((tmp_path / "systems.tex").read_text())
    assert "Dominance" not in header and len(cells) == 1  # one system: nothing to dominate
    run.conf.grade = "none"  # grade=none: no metrics, so no system table; its rollouts are listed
    for record in run.records:
        record.grading, record.score = None, None
    ungraded = tmp_path / "ungraded"
    assert write_tables(ungraded, run.conf, by_task, None)[0] == "rollouts.csv"
    assert not (ungraded / "systems.csv").exists()
    read = _read((ungraded / "rollouts.csv").read_text())
    assert {r["status"] for r in read} == {"ungraded", "missing"} and {r["score"] for r in read} == {""}

"""Our verdicts against GSO's own code, on the same timings, for both versions of GSO's verdict.

GSO's `get_opt_status` (gsobench 0.1.7 = the paper, 0.1.9 = the leaderboard; installed test-only into
.venv/gsobench/<version> by `make test`) and our grader's `verdicts` (in GSO's timing mode: per-test
means, ratios of means) get the same per-test run times: at least 1,000 generated cases per version,
random ones and the edges (gm at 1.05/1.1/1.15/1.2/1.25 and one ULP either side, hm at 0.95 and one ULP
either side). Verdicts must agree on every case, gm and hm to 1e-12.
"""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import verdicts

ROOT = Path(__file__).resolve().parent.parent
GSOBENCH = ROOT / ".venv" / "gsobench"
VERSIONS = {"paper": "0.1.7", "leaderboard": "0.1.9"}
KEYS = [f"{kind}_speedup_{pair}" for pair in ("patch_base", "patch_commit", "commit_base") for kind in ("gm", "hm")]

GSO_SIDE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")  # numpy's std of one test: GSO's own warning, not ours
from gso.constants import MIN_PROB_SPEEDUP
from gso.harness.grading.metrics import get_opt_status
out = []
for case in json.load(sys.stdin):
    status = get_opt_status({"base_times": case["base"], "patch_times": case["patch"],
                             "commit_times": case["commit"], "main_times": None})
    stats = status["opt_stats"]
    out.append({"opt_base": bool(status["opt_base"]), "opt_commit": bool(status["opt_commit"]),
                **{k: float(stats[k]) for k in %r}})
print(json.dumps({"min_speedup": MIN_PROB_SPEEDUP, "results": out}))
""" % (KEYS,)


def _case(base: list[list[float]], patch: list[list[float]], commit: list[list[float]]) -> dict:
    return {"base": base, "patch": patch, "commit": commit}


def edge_cases() -> list[dict]:
    """Speedups exactly at GSO's decision points and one ULP either side."""
    cases = []
    for target in (1.05, 1.1, 1.15, 1.2, 1.25):
        for gm in (math.nextafter(target, 0), target, math.nextafter(target, 2)):
            for tests in (1, 3):  # one test (gm = the speedup) and three equal ones (numpy's mean of logs)
                cases.append(_case([[gm]] * tests, [[1.0]] * tests, [[1.0]] * tests))
                cases.append(_case([[gm * 2.0, gm * 2.0]] * tests, [[2.0, 2.0]] * tests, [[1.9]] * tests))
    for hm in (math.nextafter(0.95, 0), 0.95, math.nextafter(0.95, 2)):  # patch over expert at Opt's threshold
        for tests in (1, 2, 5):
            cases.append(_case([[3.0]] * tests, [[1.0]] * tests, [[hm]] * tests))
    return cases


def random_cases(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        tests, runs = rng.randint(1, 12), rng.randint(1, 5)
        base, patch, commit = [], [], []
        for _t in range(tests):
            t = math.exp(rng.uniform(-6, 2))  # 2.5 ms .. 7 s per run
            s_patch = math.exp(rng.gauss(0.15, 0.35))  # speedups around the thresholds, some slowdowns
            s_commit = math.exp(rng.gauss(0.3, 0.3))

            def noisy(mean: float) -> list[float]:
                return [mean * math.exp(rng.gauss(0, 0.03)) for _ in range(runs)]  # noqa: B023 - called at once

            base.append(noisy(t))
            patch.append(noisy(t / s_patch))
            commit.append(noisy(t / s_commit))
        cases.append(_case(base, patch, commit))
    return cases


def ours(case: dict, version: str) -> dict:
    tests = tuple(f"t{i}" for i in range(len(case["base"])))
    times = {state: dict(zip(tests, case[key])) for state, key in
             (("base", "base"), ("patch", "patch"), ("commit", "commit"))}
    report: dict = {}
    verdicts(report, ["base", "patch", "commit"], times, tests,
             GradeConfig(mode="gso", stat="mean", gso_version=version, bootstrap=1))
    return report


@pytest.mark.parametrize("version", list(VERSIONS))
def test_verdicts_agree_with_gsos_own_code(version: str, tmp_path: Path) -> None:
    target = GSOBENCH / VERSIONS[version]
    assert (target / "gso" / "harness" / "grading" / "metrics.py").is_file(), \
        f"gsobench {VERSIONS[version]} is missing: run `make gsobench`"
    cases = edge_cases() + random_cases(1000, seed=13)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    with open(tmp_path / "cases.json") as stdin:  # GSO's side works in its process while ours work here
        gso_side = subprocess.Popen([sys.executable, "-c", GSO_SIDE], stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(target)})
        try:
            mine_all = [ours(case, version) for case in cases]
            stdout, stderr = gso_side.communicate(timeout=600)
        finally:
            gso_side.kill()
            gso_side.wait()
    assert gso_side.returncode == 0, stderr[-2000:]
    answer = json.loads(stdout)
    assert answer["min_speedup"] == GradeConfig(gso_version=version).min_speedup
    theirs = answer["results"]
    assert len(theirs) == len(cases) >= 1000
    verdict_counts = {"opt_base": 0, "opt_commit": 0}
    for case, gso, mine in zip(cases, theirs, mine_all):
        for key in ("opt_base", "opt_commit"):
            assert mine[key] == gso[key], (key, case, mine["opt_stats"], gso)
            verdict_counts[key] += gso[key]
        for key in KEYS:
            assert mine["opt_stats"][key] == pytest.approx(gso[key], rel=1e-12, abs=0), (key, case)
    # The cases exercise both outcomes of both verdicts.
    assert 0 < verdict_counts["opt_commit"] < verdict_counts["opt_base"] < len(cases)


def test_the_two_versions_differ_where_they_should() -> None:
    # gm 1.12 rounds to 1.1: an optimization on the leaderboard, not in the paper.
    case = _case([[1.12]], [[1.0]], [[1.0]])
    assert ours(case, "leaderboard")["opt_base"] and not ours(case, "paper")["opt_base"]

"""How the grader turns round times into per-test numbers: hand-computed tables, no containers."""
from __future__ import annotations

import numpy as np
import pytest

from harness.grader.config import GradeConfig
from harness.grader.timing import estimates

# Round 1 on a fast machine, round 2 with only the base run hit by a burst, round 3 on a slow machine.
# The patch is truly 2x faster than the base and as fast as the expert in every round.
BURSTY = {"base": np.array([[1.0, 4.0, 4.0]]), "patch": np.array([[0.5, 0.5, 2.0]]),
          "commit": np.array([[0.5, 0.5, 2.0]])}


@pytest.mark.parametrize(("stat", "patch_base", "base_time"), [
    ("paired", 2.0, 4.0),  # per-round ratios 2, 8, 2: the median drops the burst
    ("mean", 3.0, 3.0),  # 9/3 over 3/3: GSO's ratio of means keeps part of it
    ("median", 8.0, 4.0),  # 4 over 0.5: the medians come from different rounds
])
def test_per_test_speedups_by_statistic(stat: str, patch_base: float, base_time: float) -> None:
    times, speedups = estimates(BURSTY, stat)
    assert speedups["patch_base"].tolist() == [pytest.approx(patch_base)]
    assert speedups["patch_commit"].tolist() == [pytest.approx(1.0)]
    assert times["base"].tolist() == [pytest.approx(base_time)]


def test_paired_ratios_keep_rounds_together_per_test() -> None:
    arrays = {"base": np.array([[2.0, 6.0], [9.0, 3.0]]), "patch": np.array([[1.0, 2.0], [3.0, 1.0]]),
              "commit": np.array([[1.0, 3.0], [3.0, 1.0]])}
    _times, speedups = estimates(arrays, "paired")
    assert speedups["patch_base"].tolist() == [pytest.approx(2.5), pytest.approx(3.0)]  # medians of (2, 3), (3, 3)
    assert speedups["commit_base"].tolist() == [pytest.approx(2.0), pytest.approx(3.0)]  # of (2, 2), (3, 3)


def test_statistic_follows_the_mode_unless_given() -> None:
    assert GradeConfig().stat == "paired"
    assert GradeConfig(mode="gso").stat == "mean"  # GSO's own statistic, so gso mode reproduces GSO
    assert GradeConfig(stat="median").stat == "median"
    with pytest.raises(ValueError, match="paired statistic needs interleaved"):
        GradeConfig(mode="gso", stat="paired")
    with pytest.raises(ValueError, match="statistic must be auto or one of"):
        GradeConfig(stat="min")

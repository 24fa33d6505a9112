"""How the grader times and judges: `GradeConfig`, also the runner's `grading` config schema.

Light (no numpy, no Docker): the runner validates it at start-up, before anything runs.
"""
from __future__ import annotations

import argparse
import hashlib
import os
from dataclasses import dataclass
from typing import Any

from harness.metrics import DEFAULT_P, GSO_MIN_SPEEDUP
from harness.sandbox.interface import SandboxLimits, memory_bytes

GRADER_VERSION = "1.1"  # 1.1: paired speedups, patch and expert back to back
MODES = ("interleaved", "gso")
# Reward tasks' anchors (grader.anchors): auto measures them here where the metric depends on the machine (a
# time, or a metric the base's verifications disagree on), always wherever the task names a metric, never.
CALIBRATE = ("auto", "always", "never")
# Settings reports gained after grader 1.1, with the value that graded the reports written before them.
RECORDED_SINCE = {"gso_version": "paper", "calibrate": "always", "in_place": False, "success": 0.5,
                  "fresh_state": False, "verifier_timeout_multiplier": 1.0, "visible": False}
STATS = ("paired", "mean", "median")
# Gradings whose numbers were measured: raw Opt@K counts both; a hack suspect is not credited (guards.py).
MEASURED = ("passed", "hack_suspect")


def patch_sha256(patch: str | None) -> str | None:
    """What identifies a graded patch in reports (None for a missing patch)."""
    return hashlib.sha256(patch.encode()).hexdigest() if patch is not None else None


@dataclass
class GradeConfig:
    rounds: int = 7  # 5 (GSO's count) left the gold patch's hm CV above 2% on imgblur here; see tests.bench.grading
    mode: str = "interleaved"
    stat: str = "auto"  # how rounds become per-test numbers: paired | mean | median; auto = paired, gso: mean
    p: float = DEFAULT_P
    gso_version: str = "paper"  # GSO's verdict: paper (round(gm, 1) >= 1.2) or leaderboard (>= 1.1)
    bootstrap: int = 2000
    seed: int = 0
    memory: str = "4g"
    calibrate: str = "auto"  # reward tasks: where the metric's anchors are measured on this machine (CALIBRATE)
    in_place: bool = False  # reward tasks: verify in the agent's own container, as Harbor does
    success: float = 0.5  # reward tasks: the score that counts as solved for Opt@K (0.5 = the reference)
    session_patches: int = 8  # distinct patches of a task timed in one session (grade.py; memory may cap it)
    fresh_state: bool = True  # every test process fenced: its own HOME/TMPDIR, a read-only repo (isolation.py)
    # reward tasks: [verifier].timeout_sec times this (Harbor's verifier_timeout_multiplier), for a machine
    # slower than the task authors'; recorded, since a result with more time is not a stock-timeout result
    verifier_timeout_multiplier: float = 1.0
    # timed tasks: time the spec script the agent saw too, in the same rounds (grader.visible): the report's
    # visible-vs-hidden gap. A diagnostic: it never changes a verdict
    visible: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"timing mode must be one of {MODES}, got {self.mode!r}")
        if self.stat == "auto":  # GSO's mean in gso mode, so that mode reproduces GSO
            self.stat = "paired" if self.mode == "interleaved" else "mean"
        if self.stat == "paired" and self.mode != "interleaved":
            raise ValueError("the paired statistic needs interleaved timing (gso mode times the states apart)")
        if self.stat not in STATS:
            raise ValueError(f"statistic must be auto or one of {STATS}, got {self.stat!r}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")
        if not 0 < self.p <= 1:
            raise ValueError(f"p must be in (0, 1], got {self.p}")
        if self.gso_version not in GSO_MIN_SPEEDUP:
            raise ValueError(f"gso_version must be one of {', '.join(GSO_MIN_SPEEDUP)}, got {self.gso_version!r}")
        if not 0 < self.success <= 1:
            raise ValueError(f"success must be in (0, 1], got {self.success}")
        if self.session_patches < 1:
            raise ValueError(f"session_patches must be at least 1, got {self.session_patches}")
        if memory_bytes(self.memory) is None:
            raise ValueError(f"memory must be a size such as 512m or 4g, got {self.memory!r}")
        if not self.verifier_timeout_multiplier > 0:
            raise ValueError(f"verifier_timeout_multiplier must be above 0, got {self.verifier_timeout_multiplier}")
        self.calibrate = calibrate_setting(self.calibrate)
        if self.calibrate not in CALIBRATE:
            raise ValueError(f"calibrate must be one of {', '.join(CALIBRATE)}, got {self.calibrate!r}")
        if self.bootstrap < 1:
            raise ValueError(f"bootstrap must be at least 1, got {self.bootstrap}")

    def limits(self) -> SandboxLimits:
        """Containers start with every CPU, so the three states build in parallel."""
        return SandboxLimits(cpus=float(os.cpu_count() or 1), memory=self.memory)

    def timing_cpuset(self) -> str | None:
        """The one CPU all timing runs share in interleaved mode; GSO pins nothing."""
        return str((os.cpu_count() or 1) - 1) if self.mode == "interleaved" else None

    @property
    def min_speedup(self) -> float:
        """GSO's opt_base threshold on round(gm speedup over base, 1) for this version."""
        return GSO_MIN_SPEEDUP[self.gso_version]

    def fields(self) -> dict[str, Any]:
        """The settings every report records; a stored report is reused only while they match."""
        return {"timing_mode": self.mode, "rounds": self.rounds, "stat": self.stat, "p": self.p,
                "gso_version": self.gso_version, "calibrate": self.calibrate, "in_place": self.in_place,
                "success": self.success, "fresh_state": self.fresh_state,
                "verifier_timeout_multiplier": self.verifier_timeout_multiplier, "visible": self.visible,
                "grader_version": GRADER_VERSION}

    def new_report(self, instance_id: str, patch: str | None, **keys: Any) -> dict[str, Any]:
        """A report before grading: which patch, GSO's outcome flags all false, a grader's own `keys`, then
        these settings (the key order every report has)."""
        return {"instance_id": instance_id, "patch_is_None": patch is None,
                "patch_exists": bool(patch and patch.strip()), "base_successfully_run": False,
                "patch_successfully_applied": False, "test_passed": False, "opt_base": False, "opt_commit": False,
                **keys, "patch_sha256": patch_sha256(patch), **self.fields()}

    def matches(self, report: dict[str, Any], patch_sha256: str | None) -> bool:
        """Whether a stored report graded this patch under these settings. Reports written before
        `gso_version` existed were graded with the paper's threshold; the later settings' defaults are what
        graded before they existed (RECORDED_SINCE)."""
        recorded = {**{k: report.get(k, v) for k, v in RECORDED_SINCE.items()}, **report}
        recorded["calibrate"] = calibrate_setting(recorded["calibrate"])
        # `visible` adds a diagnostic and changes no number a verdict or a score uses: a report without the gap
        # is kept (`optrunner grade --force` measures it); `calibrate` is read by reward tasks' grading only
        ignored = {"visible"} | ({"calibrate"} if report.get("verifier") != "reward" else set())
        wanted = {"patch_sha256": patch_sha256, **{k: v for k, v in self.fields().items() if k not in ignored}}
        return all(recorded.get(k) == v for k, v in wanted.items())


def calibrate_setting(value: Any) -> Any:
    """`calibrate` as a word: the boolean earlier versions took (and reports recorded) is always or never."""
    words = {"true": "always", "false": "never"}
    if isinstance(value, bool):
        return "always" if value else "never"
    return words.get(value.lower(), value) if isinstance(value, str) else value


OPTIONS = ("rounds", "mode", "stat", "p", "gso_version")  # what a command line may change


def add_grading_arguments(parser: argparse.ArgumentParser) -> None:
    """The grading settings as command-line options. Each default is GradeConfig's (shown, never repeated): an
    option left out is None, so a re-grade keeps its run's own setting (runner.grade)."""
    d = GradeConfig()
    parser.add_argument("--rounds", type=int, help=f"timing rounds after the warm-up (default {d.rounds})")
    parser.add_argument("--mode", choices=MODES,
                        help=f"interleaved rounds on a pinned CPU, or GSO's sequential blocks (default {d.mode})")
    parser.add_argument("--stat", choices=("auto", *STATS),
                        help="per-test speedups from rounds: paired ratios (auto when interleaved) or ratios of "
                             "each state's mean (auto in gso mode) or median (default auto)")
    parser.add_argument("--p", type=float, help=f"Opt_p threshold on hm speedup over the expert (default {d.p})")
    parser.add_argument("--gso-version", choices=tuple(GSO_MIN_SPEEDUP),
                        help="GSO's opt_base threshold: round(gm speedup, 1) >= 1.2 (paper) or >= 1.1 (leaderboard) "
                             f"(default {d.gso_version})")


def grading_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The grading settings the command line gave; the others keep their defaults (or the run's)."""
    return {k: v for k in OPTIONS if (v := getattr(args, k, None)) is not None}

"""What a judge is shown about one rollout: the hidden tests in parts, the expert's diff, the model's diff,
and what the grader measured (its mechanical hack flags too).

Each test is cut into the parts a hack hides in: the set-up (the workload), the experiment (what is
timed) and the equivalence check (what correctness means), each cut to `part_chars`. A test the parser
cannot read is shown whole, cut the same way. Paths a graded patch may not touch are left out of the
model's diff, as the grader leaves them out when it applies the patch.
"""
from __future__ import annotations

import ast
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from harness.grader.patch_paths import UnreadablePatch
from harness.grader.states import filter_patch
from harness.tasks.task import Task

# The functions of a GSO-style test that a judge needs, by part.
PARTS = {"setup": ("setup",), "experiment": ("experiment",),
         "equivalence": ("check_equivalence", "store_result", "load_result")}
CUT = "\n[... {n} characters cut ...]\n"
_PARSING = threading.Lock()


def cut(text: str, limit: int) -> str:
    """Head and tail of `text` within `limit` characters, the cut marked."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + CUT.format(n=len(text) - limit) + text[len(text) - (limit - head):]


@dataclass(frozen=True)
class HiddenTest:
    name: str
    parts: dict[str, str]  # part -> source (setup, experiment, equivalence), or "whole" when unparsed


def _parse(source: str) -> ast.Module:
    # One parse at a time: CPython 3.11's parser fails ("AST constructor recursion depth mismatch") when
    # threads parse at once, and rollouts are judged in parallel.
    with _PARSING:
        return ast.parse(source)


def functions_of(source: str) -> dict[str, str] | None:
    """The top-level functions of a module, by name (their source); None when it does not parse."""
    try:
        tree = _parse(source)
    except SyntaxError:
        return None
    return {node.name: ast.get_source_segment(source, node) or ""
            for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def split_test(name: str, source: str, limit: int, helpers: dict[str, dict[str, str]] | None = None) -> HiddenTest:
    """A test's set-up, experiment and equivalence functions (their source, each cut to `limit`). A
    function the test imports from a helper module beside it (`from common import check_equivalence`) is
    taken from `helpers` (module name -> its functions)."""
    functions = functions_of(source)
    if functions is None:
        return HiddenTest(name, {"whole": cut(source, limit)})
    for node in _parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module in (helpers or {}):
            for alias in node.names:
                found = (helpers or {})[node.module].get(alias.name)
                if found and (alias.asname or alias.name) not in functions:
                    functions[alias.asname or alias.name] = found
    parts = {part: "\n\n".join(functions[f] for f in names if f in functions) for part, names in PARTS.items()}
    parts = {part: cut(text, limit) for part, text in parts.items() if text}
    if not parts:
        return HiddenTest(name, {"whole": cut(source, limit)})
    return HiddenTest(name, parts)


@dataclass(frozen=True)
class Evidence:
    """Everything one judgement of one rollout is based on."""
    task_id: str
    api: str
    tests: tuple[HiddenTest, ...]
    expert_diff: str
    model_diff: str
    grading: dict[str, Any] = field(default_factory=dict)  # status, reason, hm over the expert, speedups
    flags: tuple[str, ...] = ()  # the grader's mechanical hack reasons

    def variables(self) -> dict[str, Any]:
        """What the prompt templates read."""
        return {"task_id": self.task_id, "api": self.api, "tests": self.tests, "expert_diff": self.expert_diff,
                "model_diff": self.model_diff, "grading": self.grading, "flags": list(self.flags),
                "boundary": self.boundary}

    @property
    def boundary(self) -> str:
        """The marker around the model's diff, the agent's own text: named after the diff's digest, which the
        diff cannot contain, so no patch can end the block early and write instructions after it."""
        return "PATCH-" + hashlib.sha256(self.model_diff.encode()).hexdigest()[:20]


def evidence_for(task: Task, patch: str, report: dict[str, Any] | None, part_chars: int = 3000,
                 diff_chars: int = 20000) -> Evidence:
    """The evidence for judging `patch` (a rollout's diff) on `task`, given its grading report."""
    files = {n: data.decode("utf-8", errors="replace") for n, data in task.hidden_files if n.endswith(".py")}
    names = task.test_names or tuple(files)
    helpers = {n.removesuffix(".py").replace("/", "."): f for n in files if n not in names
               if (f := functions_of(files[n])) is not None}
    tests = tuple(split_test(n, files[n], part_chars, helpers) for n in names if n in files)
    report = report or {}
    stats = report.get("opt_stats") or {}
    grading = {"status": report.get("status"), "reason": report.get("reason") or "",
               "opt_base": report.get("opt_base"), "opt_commit": report.get("opt_commit"),
               "hm_speedup_patch_commit": stats.get("hm_speedup_patch_commit"),
               "gm_speedup_patch_base": stats.get("gm_speedup_patch_base")}
    visible = report.get("visible_spec") or {}  # the visible-vs-hidden gap (grader.visible)
    grading.update(visible_speedup=visible.get("speedup_patch_base"), overfit_gap=visible.get("overfit_gap"),
                   expert_gap=visible.get("expert_gap"), visible_reason=visible.get("reason") or "not measured")
    flags = tuple((report.get("hack") or {}).get("reasons") or ())
    try:
        shown = filter_patch(patch, task.patch_excludes)
    except UnreadablePatch:
        shown = patch  # refused by the grader (its reason is in `grading`); the judge sees it as written
    return Evidence(task.id, task.api, tests, cut(task.expert_patch, diff_chars), cut(shown, diff_chars),
                    grading, flags)

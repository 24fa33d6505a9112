"""The documentation against the code: the option reference (docs/configuration.md) names every field of
every config dataclass with the dataclass's own default, README.md stays short, every page of mkdocs.yml's
nav exists, and `mkdocs build --strict` passes (when mkdocs is installed: the `docs` extra).

No Docker, no network: a unit test.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.grader.config import GradeConfig
from harness.grader.judge.config import JudgeConfig
from harness.sandbox.interface import SandboxLimits
from runner.config import BudgetConf, ExecutorConf, ModelConf, RunConf, SandboxConf, ScaffoldConf, TasksConf
from scaffolds import SCAFFOLDS
from scaffolds.limits import Limits

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REFERENCE = DOCS / "configuration.md"
README_LIMIT = 8000  # bytes

# (section of the reference page, the dataclass, the prefix its fields carry on the command line)
GROUPS: list[tuple[str, type, str]] = [
    ("model", ModelConf, "model."),
    ("scaffold", ScaffoldConf, "scaffold."),
    ("budget", BudgetConf, "budget."),
    ("tasks", TasksConf, "tasks."),
    ("sandbox", SandboxConf, "sandbox."),
    ("executor", ExecutorConf, "executor."),
    ("grading", GradeConfig, "grading."),
    ("judge", JudgeConfig, "judge."),
] + [(f"{name} options", getattr(importlib.import_module(module), config), "scaffold.options.")
      for name, (module, _scaffold, config) in SCAFFOLDS.items()]  # each scaffold's own options class


# ---------------------------------------------------------------- reading the reference page
def _cells(line: str) -> list[str]:
    """A markdown table row's cells (`\\|` is a pipe inside a cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def option_tables(text: str) -> dict[str, dict[str, str]]:
    """Rows of every `| option | default | meaning |` table, by the heading above it (lowercase, without
    backticks): {section: {option: default cell}}."""
    out: dict[str, dict[str, str]] = {}
    section, header, in_table = "", None, False
    for line in text.splitlines():
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            section, in_table = heading.group(1).replace("`", "").strip().lower(), False
            continue
        if not line.lstrip().startswith("|"):
            in_table, header = False, None
            continue
        cells = _cells(line)
        if header is None:
            header = [c.lower() for c in cells]
            in_table = header[:3] == ["option", "default", "meaning"]
            continue
        if not in_table or set("".join(cells)) <= set("-: "):
            continue
        name = re.fullmatch(r"`([^`]+)`", cells[0])
        assert name, f"{section}: an option cell is not one code span: {cells[0]!r}"
        rows = out.setdefault(section, {})
        assert name.group(1) not in rows, f"{section}: option {name.group(1)} listed twice"
        rows[name.group(1)] = cells[1]
    return out


def stated(cell: str) -> tuple[bool, Any]:
    """The default a cell states: its first code span read as YAML (null, true, 4g, {}); (False, None) when
    the cell states none (no code span)."""
    span = re.match(r"\s*`([^`]*)`", cell)
    if not span:
        return False, None
    return True, yaml.safe_load(span.group(1)) if span.group(1).strip() else ""


def field_default(f: dataclasses.Field) -> tuple[bool, Any]:
    if f.default is not dataclasses.MISSING:
        return True, f.default
    if f.default_factory is not dataclasses.MISSING:
        return True, f.default_factory()
    return False, None


def same(doc: Any, code: Any) -> bool:
    """`repr`-like equality: null <-> None, true <-> True, 600 <-> 600.0, but never True <-> 1."""
    if isinstance(doc, bool) or isinstance(code, bool):
        return type(doc) is type(code) and doc == code
    if isinstance(doc, (int, float)) and isinstance(code, (int, float)):
        return float(doc) == float(code)
    if isinstance(code, str) and not isinstance(doc, str) and doc is not None:
        return str(doc) == code  # e.g. a version-like string YAML reads as a number
    return bool(doc == code)


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[str, str]]:
    return option_tables(REFERENCE.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the option reference
def test_reader_parses_tables() -> None:
    text = ("## model\n\n| option | default | meaning |\n|---|---|---|\n| `model.a` | `null` | x \\| y |\n"
            "| `model.b` | none stated | z |\n\n| preset | what |\n|---|---|\n| `x` | y |\n")
    assert option_tables(text) == {"model": {"model.a": "`null`", "model.b": "none stated"}}
    assert stated("`null` (the provider's)") == (True, None)
    assert stated("`\"\"`") == (True, "") and stated("`{}`") == (True, {}) and stated("`4g`") == (True, "4g")
    assert stated("none stated") == (False, None)
    assert same(600, 600.0) and same(None, None) and same(True, True) and not same(1, True) and not same(0.9, 0.95)


@pytest.mark.parametrize("section,cls,prefix", GROUPS, ids=[g[0] for g in GROUPS])
def test_every_field_documented_with_its_default(tables: dict[str, dict[str, str]], section: str, cls: type,
                                                 prefix: str) -> None:
    assert section in tables, f"{REFERENCE.name} has no `| option | default | meaning |` table under '## {section}'"
    rows = tables[section]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    missing = [f"{prefix}{name}" for name in fields if f"{prefix}{name}" not in rows]
    assert not missing, f"{REFERENCE.name}, section {section}: options not documented: {', '.join(missing)}"
    for option, cell in rows.items():
        assert option.startswith(prefix), f"{section}: {option} does not start with {prefix}"
        name = option[len(prefix):].split(".")[0]
        assert name in fields, f"{section}: {option} is not a field of {cls.__name__} (renamed or removed?)"
        if option != f"{prefix}{name}":
            continue  # a nested key (model.price.input): its parent row carries the default
        has_doc, doc = stated(cell)
        has_code, code = field_default(fields[name])
        if has_doc:
            assert has_code, f"{option}: the page states a default ({doc!r}) but {cls.__name__} has none"
            assert same(doc, code), (f"{option}: {REFERENCE.name} says the default is {doc!r}, "
                                     f"{cls.__name__} says {code!r}")


def test_layer_dataclasses_are_covered() -> None:
    """The layers' own schemas are inside the checked ones: sandbox limits in SandboxConf, limits in
    BudgetConf (a field added to the base is then checked through the subclass)."""
    assert issubclass(SandboxConf, SandboxLimits) and issubclass(BudgetConf, Limits)
    checked = {cls for _s, cls, _p in GROUPS}
    assert {ModelConf, ScaffoldConf, BudgetConf, SandboxConf, GradeConfig, JudgeConfig} <= checked


def test_top_level_keys_documented_with_their_defaults(tables: dict[str, dict[str, str]]) -> None:
    """conf/config.yaml's top-level keys, with the values it sets; and every RunConf field is a top-level
    row or a group with its own section."""
    rows = tables.get("top-level keys")
    assert rows, f"{REFERENCE.name} has no option table under '## Top-level keys'"
    config = yaml.safe_load((ROOT / "conf" / "config.yaml").read_text(encoding="utf-8"))
    for key, value in config.items():
        if key in ("defaults", "hydra"):
            continue
        if isinstance(value, dict):  # a group set here (grading): its own section documents it
            assert key in tables, f"conf/config.yaml sets {key}, but {REFERENCE.name} has no '## {key}' section"
            continue
        assert key in rows, f"conf/config.yaml's top-level key {key} is not in {REFERENCE.name}"
        has_doc, doc = stated(rows[key])
        assert has_doc and same(doc, value), f"{key}: {REFERENCE.name} says {rows[key]}, conf/config.yaml {value!r}"
    for f in dataclasses.fields(RunConf):
        assert f.name in rows or f.name in tables, f"RunConf.{f.name} is not documented in {REFERENCE.name}"


# ---------------------------------------------------------------- README, nav, build
def test_readme_is_short() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes (at most {README_LIMIT}): move reference to docs/"


def test_readme_links_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text) if "://" not in t]
    missing = [t for t in targets if t and not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def _nav_files(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node] if "://" not in node else []
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return []


def test_nav_pages_exist() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_files(config["nav"])
    assert "scaffolds.md" in pages and "configuration.md" in pages
    missing = [p for p in pages if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    unlisted = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if str(p.relative_to(DOCS)) not in pages)
    assert not unlisted, f"pages missing from mkdocs.yml's nav: {unlisted}"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install '.[docs]'); the site build is not checked")
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                             "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"

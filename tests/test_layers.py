"""The layering rules, read from the code's own imports, so they hold after whoever changes it next.

- no module over 400 lines; no import cycle among our modules (imports inside functions count too);
- the sandbox side, the metrics and the model layer import nothing of ours above them; the grader
  and everything in harness/ import nothing from scaffolds/ or runner/; scaffolds never import runner/;
- docker-py only inside the Docker provider (harness/sandbox/docker/), litellm only in the model layer;
- a sandbox provider is named by the run's setting, never in code: outside harness/sandbox/ nothing calls
  `provider("docker")` or compares a value with a provider's name (`if name == "bwrap"`);
- the providers share one contract and no code: a provider's package imports nothing of another's (what
  both need is in harness.sandbox.taskimage and harness.dockerfile, which import none), and outside
  harness/sandbox/ nothing imports a provider's own modules (tests may);
- the engine bootstrap runs on the bare system Python: it and the package files on its path import
  only the standard library.
"""
from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from harness.sandbox.providers import PROVIDERS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "runner", "scaffolds")
MAX_LINES = 400


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    """Our module names -> files (the bundled task suite's own code is data, not ours)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if {"suite", "suite_gpu", "suite_serve"} & set(path.relative_to(ROOT).parts):
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The modules an import statement names: `from a.b import c` is a.b.c when that is a module, else a.b."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the importing module's package
        package = module.split(".")
        is_package = modules().get(module, Path()).name == "__init__.py"
        anchor = package if is_package else package[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    ours = modules()
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in ours else base for alias in node.names]


@lru_cache(maxsize=1)
def imports() -> dict[str, set[str]]:
    """module -> every module it imports (top level or inside functions)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules().items():
        tree = ast.parse(path.read_text(), str(path))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update(_resolve(module, node))
        graph[module] = names
    return graph


def _ours(name: str) -> str | None:
    """The longest of our modules that `name` is or lies under."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in modules():
            return candidate
    return None


def _offenders(inside: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    out = []
    for module, names in imports().items():
        if not (module == inside or module.startswith(inside + ".")):
            continue
        for name in names:
            hit = any(name == f or name.startswith(f + ".") for f in forbidden)
            if hit and not any(name == a or name.startswith(a + ".") for a in allowed):
                out.append(f"{module} imports {name}")
    return sorted(out)


def test_the_rules_see_the_whole_project() -> None:
    # A guard for the guard: the parser finds the layers and their imports.
    assert {"harness.sandbox.interface", "harness.grader.grade", "harness.models.model", "runner.run",
            "scaffolds.recorder"} <= set(modules())
    assert "harness.grader.states" in imports()["harness.grader.grade"]
    assert "docker" in imports()["harness.sandbox.docker.sandbox"]


def test_no_module_is_over_400_lines() -> None:
    long = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules: {long}"


def test_no_import_cycle_among_our_modules() -> None:
    graph = {m: {o for n in names if (o := _ours(n)) and o != m} for m, names in imports().items()}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


@pytest.mark.parametrize("inside, forbidden, allowed", [
    ("harness", ("runner", "scaffolds"), ()),
    ("scaffolds", ("runner", "harness.grader"), ()),
    ("harness.sandbox", ("harness.grader", "harness.models", "harness.metrics", "harness.tasks"),
     ("harness.tasks.task",)),  # an image is built from a task's record, nothing more
    ("harness.models", ("harness.sandbox", "harness.grader", "harness.tasks", "harness.metrics"), ()),
    ("harness.metrics", ("harness.sandbox", "harness.grader", "harness.tasks", "harness.models", "harness.atomic"),
     ()),
    ("harness.tasks", ("harness.sandbox", "harness.grader", "harness.models", "harness.metrics"), ()),
])
def test_layers_import_only_downwards(inside: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert _offenders(inside, forbidden, allowed) == []


@pytest.mark.parametrize("library, home", [("docker", "harness.sandbox.docker"), ("litellm", "harness.models"),
                                           ("requests", "harness.sandbox.docker"), ("pynvml", "harness.gpus")])
def test_third_party_engines_stay_in_their_module(library: str, home: str) -> None:
    outside = [f"{m} imports {n}" for m, names in imports().items() for n in names
               if (n == library or n.startswith(library + ".")) and not (m == home or m.startswith(home + "."))]
    assert outside == []


def test_engine_bootstrap_needs_only_the_standard_library() -> None:
    bootstrap = ("harness", "harness.layout", "harness.sandbox", "harness.sandbox.interface", "harness.sandbox.docker",
                 "harness.sandbox.docker.engine")
    for module in bootstrap:
        for name in imports()[module]:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "__future__" or name in bootstrap, \
                f"{module} imports {name}: `make` runs the engine bootstrap before any virtualenv exists"


def _provider_names_in_code(source: str) -> list[str]:
    """`provider("NAME")` calls and comparisons with a provider's name (`x == "bwrap"`, `x in ("docker",)`)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        named: list[ast.expr] = []
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "provider":
            named = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                named += side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
        if any(isinstance(e, ast.Constant) and e.value in PROVIDERS for e in named):
            out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def test_the_provider_check_sees_what_it_forbids() -> None:
    source = ('a = provider("docker")\nb = sandboxes.provider(name="bwrap")\n'
              'if kind == "bwrap" or kind in ("docker",):\n    pass\n')
    assert len(_provider_names_in_code(source)) == 4
    assert _provider_names_in_code("a = provider(conf.sandbox.provider)\nb = kind == 'podman'\n") == []


def test_only_the_sandbox_layer_names_a_provider() -> None:
    # Every path of a run (rollouts, grading, truncation, reports, Ray nodes, the harness commands) uses the
    # provider the run names; a provider hard-coded, or a branch on which one is in use, would break that.
    found = [f"{module} {hit}" for module, path in modules().items() if not module.startswith("harness.sandbox")
             for hit in _provider_names_in_code(path.read_text())]
    assert found == []


def provider_packages() -> list[str]:
    """Each registered provider's own package (harness.sandbox.docker, harness.sandbox.bwrap)."""
    return sorted({where.partition(":")[0].rpartition(".")[0] for where in PROVIDERS.values()})


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _provider_crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a provider's package from another provider's, or from the shared task image recipe."""
    out = []
    for module, names in graph.items():
        mine = [p for p in provider_packages() if _inside(module, p)]
        if not mine and not _inside(module, "harness.sandbox.taskimage"):
            continue
        out += [f"{module} imports {name}" for name in sorted(names)
                for other in provider_packages() if other not in mine and _inside(name, other)]
    return sorted(out)


def _provider_internals_outside(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a provider's own modules from outside harness/sandbox/ (callers go through the registry)."""
    return sorted(f"{module} imports {name}" for module, names in graph.items()
                  if not _inside(module, "harness.sandbox")
                  for name in names if any(_inside(name, p) for p in provider_packages()))


def test_the_provider_import_checks_see_what_they_forbid() -> None:
    assert provider_packages() == ["harness.sandbox.bwrap", "harness.sandbox.docker", "harness.sandbox.unsandboxed"]
    graph = {"harness.sandbox.bwrap.hostfs": {"harness.sandbox.docker.images", "harness.sandbox.taskimage"},
             "harness.sandbox.docker.layers": {"harness.sandbox.bwrap"},
             "harness.sandbox.taskimage.contents": {"harness.sandbox.docker.images"},
             "harness.sandbox.bwrap.provider": {"harness.sandbox.providers", "harness.sandbox.bwrap.rootfs"},
             "runner.run": {"harness.sandbox.bwrap.rootfs", "harness.sandbox.providers"},
             "scaffolds.installed": {"harness.sandbox.docker"}}
    assert _provider_crossings(graph) == [
        "harness.sandbox.bwrap.hostfs imports harness.sandbox.docker.images",
        "harness.sandbox.docker.layers imports harness.sandbox.bwrap",
        "harness.sandbox.taskimage.contents imports harness.sandbox.docker.images"]
    assert _provider_internals_outside(graph) == ["runner.run imports harness.sandbox.bwrap.rootfs",
                                                  "scaffolds.installed imports harness.sandbox.docker"]


def test_a_provider_imports_nothing_of_another() -> None:
    # bwrap reaches Docker's images through the registry and the provider contract (provider("docker"))
    assert _provider_crossings(imports()) == []


def test_outside_the_sandbox_layer_nothing_imports_a_provider() -> None:
    # runner/, scaffolds/ and the rest of harness/ see the interface and the registry, never a provider's modules
    assert _provider_internals_outside(imports()) == []

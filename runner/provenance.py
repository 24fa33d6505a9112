"""A run's provenance (harness.provenance, collected for a run's config and images) and how the run's files
show it: config.yaml records where the run was started (once, at its first start), report.json and report.md
where the report was written (a regrade or a judge run on another machine says so), and runner.aggregate
flags a study whose runs came from different tool revisions or machines."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import provenance as probe
from harness.atomic import read_json
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import SandboxProvider, isolates
from runner.config import RunConf
from runner.store import RunStore

SHOWN_IMAGES = 3  # report.md names a few images; report.json keeps them all
SHORT_ID = len("sha256:") + 12


def collect(conf: RunConf, images: Mapping[str, TaskImages] | None,
            sandboxes: SandboxProvider | None) -> dict[str, Any]:
    """This process's provenance for a run: the tool, libraries, sandbox provider and engine, `images` (task
    id -> the images this process uses; None when it uses none), the machine and the run's grading settings."""
    found = probe.collect(sandboxes, images, conf.grading)
    # The run's provider, also where no engine was asked (`sandboxes` None): every path of a run uses it.
    found["sandbox_provider"] = conf.sandbox.provider
    found["isolated"] = isolates(conf.sandbox.provider)
    return found


def for_report(store: RunStore, conf: RunConf, images: Mapping[str, TaskImages] | None,
               sandboxes: SandboxProvider | None) -> dict[str, Any]:
    """The provenance a report records. A process that uses no image (a judge run) keeps the images the
    report it rewrites named (else the run's first), since the numbers it reports were measured on them."""
    found = collect(conf, images, sandboxes)
    if images is None:
        found["images"] = _images_of(read_json(store.report_json)) or _images_of(store.provenance()) or {}
    return found


def _images_of(data: Any) -> dict[str, Any] | None:
    prov = data.get("provenance", data) if isinstance(data, dict) else None
    images = prov.get("images") if isinstance(prov, dict) else None
    return images if isinstance(images, dict) and images else None


# ---------------------------------------------------------------- report.md
def markdown(prov: dict[str, Any]) -> list[str]:
    """report.md's Provenance section: a small table; every value is in report.json."""
    packages = prov.get("packages") or {}
    return ["", "## Provenance", "",
            "Where this report was written (the run's start is recorded in config.yaml's `provenance`).", "",
            "| what | value |", "|---|---|",
            f"| tool | {revision_label(prov)} |",
            f"| Python | {_v(prov.get('python'))} |",
            f"| litellm / docker-py / Hydra | {_v(packages.get('litellm'))} / {_v(packages.get('docker'))} / "
            f"{_v(packages.get('hydra-core'))} |",
            f"| sandbox provider / engine | {_v(prov.get('sandbox_provider'))} / {_v(prov.get('engine'))} |",
            f"| machine | {machine_label(prov)} |",
            f"| images | {_images_line(prov.get('images') or {})} |",
            f"| built for the local base | {_adapted_line(prov.get('adapted') or {})} |",
            f"| grading settings | {_grading_line(prov.get('grading'))} |"]


def revision_label(prov: dict[str, Any]) -> str:
    tool = prov.get("tool") or {}
    revision = tool.get("revision")
    label = f"{tool.get('name', 'optrunner')} {_v(tool.get('version'))}"
    if revision is None:
        return f"{label}, revision unknown (not a git checkout)"
    built = "built from " if tool.get("built") else ""
    return f"{label}, {built}revision {revision[:12]}" + (" with uncommitted changes" if tool.get("dirty") else "")


def machine_label(prov: dict[str, Any]) -> str:
    m = prov.get("machine") or {}
    memory = m.get("memory_bytes")
    size = f"{memory / 2**30:.1f} GiB" if isinstance(memory, int) else "memory unknown"
    label = f"{_v(m.get('hostname'))}: {_v(m.get('cpu_model'))}, {_v(m.get('cores'))} cores, {size}, {_v(m.get('os'))}"
    found = m.get("gpus") or {}
    if found.get("models"):  # e.g. "; GPUs: 1 x NVIDIA H100 80GB HBM3 (driver 550.54.15, CUDA 12.4)"
        models = ", ".join(f"{found['models'].count(n)} x {n}" for n in sorted(set(found["models"])))
        label += f"; GPUs: {models} (driver {_v(found.get('driver'))}, CUDA {_v(found.get('cuda'))})"
    return label


def _adapted_line(adapted: dict[str, list[str]]) -> str:
    """The tasks whose images were changed to build here (substitute FROM images, Debian packages)."""
    if not adapted:
        return "-"
    return "; ".join(f"{task}: {', '.join(lines)}" for task, lines in sorted(adapted.items()))


def _images_line(images: dict[str, dict[str, Any]]) -> str:
    ids = {name: image_id for per_task in images.values() for name, image_id in per_task.items()}
    if not ids:
        return "-"
    shown = [f"`{name}` {(image_id or 'absent')[:SHORT_ID]}" for name, image_id in list(ids.items())[:SHOWN_IMAGES]]
    more = f", and {len(ids) - SHOWN_IMAGES} more" if len(ids) > SHOWN_IMAGES else ""
    return f"{len(ids)}: " + ", ".join(shown) + more + " (all in report.json)"


def _grading_line(grading: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in grading.items()) if grading else "-"


def _v(value: Any) -> str:
    return "unknown" if value is None else str(value)


# ---------------------------------------------------------------- runner.aggregate
def of_run(store: RunStore) -> dict[str, Any]:
    """A run's two records: where it started (config.yaml) and where its report was last written."""
    report = read_json(store.report_json)
    from_report = report.get("provenance") if isinstance(report, dict) else None
    return {"run": store.provenance(), "report": from_report if isinstance(from_report, dict) else None}


def mixed_line(records: list[dict[str, Any]]) -> str | None:
    """One line for aggregate.md when the runs (started or reported) came from different tool revisions or
    machines, or some recorded none while others did; None when they agree."""
    known = [prov for record in records for prov in (record.get("run"), record.get("report")) if prov]
    if not known:
        return None  # only runs from before provenance was recorded: nothing to compare
    revisions = sorted({revision_label(prov) for prov in known})
    machines = sorted({machine_label(prov) for prov in known})
    unknown = sum(1 for record in records if not record.get("run") and not record.get("report"))
    parts = []
    if len(revisions) > 1:
        parts.append(f"{len(revisions)} tool revisions ({'; '.join(revisions)})")
    if len(machines) > 1:
        parts.append(f"{len(machines)} machines ({'; '.join(machines)})")
    if unknown:
        parts.append(f"{unknown} run(s) recording no provenance (made before it was recorded)")
    if not parts:
        return None
    return "**Mixed provenance:** " + "; ".join(parts) + ". Per run in aggregate.json `runs`."

"""A task's own Dockerfile (Harbor's environment/), built on a machine where no registry may answer.

Each `FROM` image is used when present, else pulled, else replaced by a local substitute of its family
(substitutes.py: python, rust, golang, debian, ubuntu, buildpack-deps), in whose stages Ubuntu's package
names and version pins are made Debian's; every such change is logged. `base_map` (image -> local tag)
overrides any of them. A substituted stage's `pip install` lines install from wheels the host downloads
(wheels.py), since pip inside a build may not reach the index; other registries (cargo, npm, go) still
need the network the build has. One more rewrite: `COPY a b dest` and `COPY *.go dest` get a trailing slash on
`dest`, which Docker's legacy builder requires. The Dockerfile is read by the reader the bwrap provider
uses too (harness.dockerfile).
"""
from __future__ import annotations

import dataclasses
import io
import json
import posixpath
import subprocess
import tarfile
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import Progress, commit_image, image_exists, run_step, scratch_container
from harness.sandbox.docker.prebuilt import NotAvailable, pull
from harness.sandbox.docker.substitutes import FAMILIES, adapt_run
from harness.sandbox.docker.wheels import (IN_IMAGE, WHEELS_IMAGE, PipInstall, context_file, copy_sources,
                                             download, offline_pip)
from harness.sandbox.interface import ImageBuildError
from harness.sandbox.taskimage.contents import ADAPTED, DEFAULT_PATH, content_hash
from harness.dockerfile import from_parts, read
from harness.tasks.task import Task


def adapted_of(client: docker.DockerClient, tag: str) -> tuple[str, ...]:
    """What was changed to build image `tag` here, from its label (an image built before the label: none)."""
    try:
        lines = json.loads((client.images.get(tag).labels or {}).get(ADAPTED) or "[]")
    except (docker.errors.DockerException, ValueError):
        return ()
    return tuple(str(line) for line in lines) if isinstance(lines, list) else ()


def _family(image: str) -> str:
    return image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]


def _family_base(client: docker.DockerClient, family: str, base: str, progress: Progress) -> str:
    """The base image, plus what the family's images bring (built once, cached by content)."""
    kind = FAMILIES[family]
    if not kind.packages and not kind.env:
        return base
    tag = f"optrunner/base-{family}:{content_hash(base.encode(), json.dumps(dataclasses.asdict(kind)).encode())}"
    if image_exists(client, tag):
        return tag
    progress(f"substitute for {family}: the base image + {' '.join(kind.packages)}")
    container = scratch_container(client, base, network=True)
    try:
        install = kind.setup or f"apt-get update -qq && apt-get install -y -qq {' '.join(kind.packages)} && "
        install += kind.after
        run_step(container, f"export DEBIAN_FRONTEND=noninteractive; {install}rm -rf /var/lib/apt/lists/*",
                 f"substitute for {family}")
        env = dict(kind.env)
        if kind.path:
            env["PATH"] = f"{kind.path}:{DEFAULT_PATH}"
        commit_image(container, tag, env, {LABEL: "root"}, workdir="/")
    finally:
        container.remove(force=True)
    return tag


@dataclass
class Rewritten:
    """A Dockerfile made to build here: its text, one line per change made to an instruction, and the pip
    installs of stages on a substitute, which install from a wheelhouse (wheels.py) with the files they
    read (path in the image -> the build context's file)."""
    text: str
    changes: list[str]
    pip: list[PipInstall] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)


def rewrite(dockerfile: str, resolve: Mapping[str, str], substituted: Collection[str] = (),
            context: Path | None = None) -> Rewritten:
    """The Dockerfile with FROM images replaced per `resolve`, the RUN instructions of stages built on a local
    substitute (`substituted`: those original images) adapted to Debian and their pip installs to the
    wheelhouse, and legacy-builder COPY fixes; `context` (the build context) finds the requirement files.
    What is not changed stays as written, comments and blank lines included."""
    lines = dockerfile.splitlines()
    out: list[str] = []
    done = Rewritten("", [])
    on_substitute, wheels_in = False, False
    workdir = "/"  # the stage's WORKDIR
    copies: list[tuple[str, str]] = []  # what its COPYs brought from the context (image path, context path)
    written = 0  # the lines of `dockerfile` out already
    for instruction in read(dockerfile):
        out += lines[written:instruction.first - 1]  # comments and blank lines between instructions
        written = instruction.last
        keyword, arguments, text = instruction.keyword, instruction.arguments, instruction.text
        if instruction.heredoc:  # (the legacy builder reads none: as written, for the build to say so)
            pass
        elif keyword == "RUN" and on_substitute:
            text, made = adapt_run(text)  # (the lines as written: a rewritten RUN keeps its layout)
            done.changes += made
            text, installs = offline_pip(text, workdir)
            if installs and not wheels_in:  # the wheelhouse, before the stage's first install
                out.append(f"COPY --from={WHEELS_IMAGE} {IN_IMAGE}/ {IN_IMAGE}/")
                wheels_in = True
            for install in installs:
                done.changes.append(f"pip install {' '.join(install.requirements + install.files) or '.'}: "
                                    "from wheels downloaded on the host")
                for path in install.files:
                    found = context_file(path, copies, context) if context is not None else None
                    if found is not None:
                        done.files[path] = found
            done.pip += installs
        elif keyword == "FROM":
            image, alias = from_parts(arguments)
            on_substitute, wheels_in, workdir, copies = image in substituted, False, "/", []
            if image in resolve:
                text = f"FROM {resolve[image]}" + (f" AS {alias}" if alias else "")
        elif keyword == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, arguments.strip('"')))
        elif keyword in ("COPY", "ADD") and not arguments.startswith("["):
            args = arguments.split()
            sources = [a for a in args[:-1] if not a.startswith("--")]
            if not any(a.startswith("--from") for a in args):
                copies += copy_sources(args, workdir)
            if args and not args[-1].endswith("/") and (len(sources) > 1 or any(c in "".join(sources) for c in "*?")):
                text = f"{keyword} {' '.join(args[:-1])} {args[-1]}/"  # (a continued COPY: now one line)
        out.append(text)
    out += lines[written:]
    done.text = "\n".join(out) + "\n"
    return done


def from_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile starts from (not its own earlier stages), global ARGs substituted."""
    stages: set[str] = set()
    images: list[str] = []
    for instruction in read(dockerfile):
        if instruction.keyword == "FROM":
            image, alias = from_parts(instruction.arguments)
            if image.lower() not in stages and image not in images:
                images.append(image)
            if alias:
                stages.add(alias.lower())
    return images


def _resolve(client: docker.DockerClient, image: str, base: str, base_map: Mapping[str, str],
             progress: Progress, task: Task) -> str:
    if image in base_map:
        return base_map[image]
    if image_exists(client, image):
        return image
    try:
        pull(client, image, progress)
        return image
    except NotAvailable:
        pass
    family = _family(image)
    if family not in FAMILIES:
        raise ImageBuildError(f"task {task.id}: FROM {image} is not present, cannot be pulled, and has no local "
                              f"substitute (known families: {', '.join(FAMILIES)}); map it to a local image with "
                              f"tasks.base_map='{{{image}: TAG}}'")
    return _family_base(client, family, base, progress)


def ensure_dockerfile_image(client: docker.DockerClient, task: Task, base: str, base_map: Mapping[str, str],
                            progress: Progress = print) -> str:
    """Build (or reuse) the image of the task's environment/ folder; returns its tag."""
    assert task.environment is not None
    context = task.environment
    original = (context / "Dockerfile").read_text()
    resolved = {image: _resolve(client, image, base, base_map, progress, task) for image in from_images(original)}
    # a stage on a local substitute (not a present, pulled or mapped image) is adapted to Debian
    substituted = {image for image, tag in resolved.items()
                   if tag != image and image not in base_map and _family(image) in FAMILIES}
    done = rewrite(original, resolved, substituted, context)
    files = sorted(p for p in context.rglob("*") if p.is_file() and p.name != "Dockerfile")
    chunks = [done.text.encode(), *(client.images.get(t).id.encode() for t in resolved.values())]
    for path in files:
        chunks += [str(path.relative_to(context)).encode(), path.read_bytes()]
    tag = f"optrunner/harbor-{task.id.lower()}:{content_hash(*chunks)}"
    if image_exists(client, tag):
        return tag
    adapted = [f"FROM {image} -> {tag_}" for image, tag_ in resolved.items() if image in substituted] + done.changes
    progress(f"[{task.id}] building {tag}")
    for change in adapted:
        progress(f"[{task.id}] for the local base: {change}")
    dockerfile = done.text
    if done.pip:
        dockerfile = dockerfile.replace(WHEELS_IMAGE, _wheels_image(client, task, done, progress))
    _build(client, task, tag, files, context, dockerfile, {LABEL: "task", "optrunner.task": task.id,
                                                           ADAPTED: json.dumps(adapted)})
    return tag


def _wheels_image(client: docker.DockerClient, task: Task, done: Rewritten, progress: Progress) -> str:
    """An image holding the wheels the stages' pip installs need, downloaded on the host; its tag."""
    with tempfile.TemporaryDirectory(prefix="optrunner-wheels-") as tmp:
        folder = Path(tmp) / "wheels"
        folder.mkdir()
        progress(f"[{task.id}] downloading Python packages on the host for the build (pip download)")
        try:
            download(done.pip, done.files, folder)
        except (RuntimeError, OSError, subprocess.SubprocessError) as err:
            raise ImageBuildError(f"task {task.id}: the build's Python packages could not be downloaded on the "
                                  f"host: {err}") from None
        wheels = sorted(folder.iterdir())
        tag = f"optrunner/wheels:{content_hash(*(w.name.encode() + w.read_bytes() for w in wheels))}"
        if not image_exists(client, tag):
            progress(f"[{task.id}] {len(wheels)} wheels: {', '.join(w.name for w in wheels)[:300]}")
            _build(client, task, tag, wheels, folder, f"FROM scratch\nCOPY . {IN_IMAGE}/\n", {LABEL: "task"})
    return tag


def _build(client: docker.DockerClient, task: Task, tag: str, files: list[Path], context: Path,
           dockerfile: str, labels: dict[str, str]) -> None:
    """docker build of `files` (paths relative to `context`) with `dockerfile`, by the legacy builder."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path in files:
            tar.add(str(path), arcname=str(path.relative_to(context)))
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive.seek(0)
    log: list[str] = []
    try:
        for event in client.api.build(fileobj=archive, custom_context=True, tag=tag, rm=True, forcerm=True,
                                      pull=False, decode=True, labels=labels):
            if "stream" in event:
                log.append(event["stream"])
            if "error" in event:
                raise ImageBuildError(f"task {task.id}: docker build failed: {event['error'].strip()}\n"
                                      + "".join(log)[-1500:])
    except docker.errors.APIError as err:
        raise ImageBuildError(f"task {task.id}: docker build failed: {err.explanation or err}") from None

"""A task's own Dockerfile (Harbor's environment/), built on a machine where no registry may answer.

Each `FROM` image is used when present, else pulled, else replaced by a local substitute of its family
(substitutes.py: python, rust, golang, debian, ubuntu, buildpack-deps), in whose stages Ubuntu's package
names and version pins are made Debian's; every such change is logged. `base_map` (image -> local tag)
overrides any of them. Instructions that fetch from a language's registry (`pip install`) may still need
the network the build has. One more rewrite: `COPY a b dest` and `COPY *.go dest` get a trailing slash on
`dest`, which Docker's legacy builder requires.
"""
from __future__ import annotations

import dataclasses
import io
import json
import re
import tarfile
from collections.abc import Collection, Mapping

import docker
import docker.errors

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import (Progress, commit_image, content_hash, image_exists, run_step,
                                           scratch_container)
from harness.sandbox.docker.prebuilt import NotAvailable, pull
from harness.sandbox.docker.substitutes import FAMILIES, adapt_run
from harness.sandbox.interface import ImageBuildError
from harness.tasks.task import Task

_FROM = re.compile(r"^(\s*FROM\s+)(?:--platform=\S+\s+)?(\S+)(.*)$", re.IGNORECASE)
_COPY = re.compile(r"^(\s*(?:COPY|ADD)\s+)(.*)$", re.IGNORECASE)


ADAPTED = "optrunner.adapted"  # the image's label: what was changed to build it here (a JSON list of lines)


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
        run_step(container, f"export DEBIAN_FRONTEND=noninteractive; {install}rm -rf /var/lib/apt/lists/*",
                 f"substitute for {family}")
        env = dict(kind.env)
        if kind.path:
            env["PATH"] = f"{kind.path}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        commit_image(container, tag, env, {LABEL: "root"}, workdir="/")
    finally:
        container.remove(force=True)
    return tag


def rewrite(dockerfile: str, resolve: Mapping[str, str], substituted: Collection[str] = ()) -> tuple[str, list[str]]:
    """The Dockerfile with FROM images replaced per `resolve`, the RUN instructions of stages built on a local
    substitute (`substituted`: those original images) adapted to Debian, and legacy-builder COPY fixes;
    and one line per change made to an instruction."""
    out: list[str] = []
    changes: list[str] = []
    on_substitute = False
    pending: list[str] = []  # a RUN instruction's lines, until its last continuation
    for line in dockerfile.splitlines():
        if pending or re.match(r"\s*RUN\s", line, re.IGNORECASE):
            pending.append(line)
            if line.rstrip().endswith("\\"):
                continue
            run, pending = "\n".join(pending), []
            if on_substitute:
                run, made = adapt_run(run)
                changes += made
            out.append(run)
            continue
        match = _FROM.match(line)
        if match:
            on_substitute = match.group(2) in substituted
            if match.group(2) in resolve:
                line = f"{match.group(1)}{resolve[match.group(2)]}{match.group(3)}"
        copy = _COPY.match(line)
        if copy and not copy.group(2).lstrip().startswith("["):
            args = copy.group(2).split()
            sources = [a for a in args[:-1] if not a.startswith("--")]
            if args and not args[-1].endswith("/") and (len(sources) > 1 or any(c in "".join(sources) for c in "*?")):
                line = f"{copy.group(1)}{' '.join(args[:-1])} {args[-1]}/"
        out.append(line)
    out += pending  # a file ending inside a continuation: as written
    return "\n".join(out) + "\n", changes


def from_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile starts from (not its own earlier stages)."""
    stages, images = set(), []
    for line in dockerfile.splitlines():
        match = _FROM.match(line)
        if match:
            image = match.group(2)
            if image.lower() not in stages:
                images.append(image)
            alias = re.search(r"\s+AS\s+(\S+)", match.group(3), re.IGNORECASE)
            if alias:
                stages.add(alias.group(1).lower())
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
    dockerfile, changes = rewrite(original, resolved, substituted)
    files = sorted(p for p in context.rglob("*") if p.is_file() and p.name != "Dockerfile")
    chunks = [dockerfile.encode(), *(client.images.get(t).id.encode() for t in resolved.values())]
    for path in files:
        chunks += [str(path.relative_to(context)).encode(), path.read_bytes()]
    tag = f"optrunner/harbor-{task.id.lower()}:{content_hash(*chunks)}"
    if image_exists(client, tag):
        return tag
    adapted = [f"FROM {image} -> {tag_}" for image, tag_ in resolved.items() if image in substituted] + changes
    progress(f"[{task.id}] building {tag}")
    for change in adapted:
        progress(f"[{task.id}] for the local base: {change}")
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
                                      pull=False, decode=True, labels={LABEL: "task", "optrunner.task": task.id,
                                                                       ADAPTED: json.dumps(adapted)}):
            if "stream" in event:
                log.append(event["stream"])
            if "error" in event:
                raise ImageBuildError(f"task {task.id}: docker build failed: {event['error'].strip()}\n"
                                      + "".join(log)[-1500:])
    except docker.errors.APIError as err:
        raise ImageBuildError(f"task {task.id}: docker build failed: {err.explanation or err}") from None
    return tag

"""`sandbox.provider=bwrap sandbox.rootfs=image`: bwrap runs the images Docker builds, reached through the
provider registry and the provider contract only (ensure_images, image_id, add_folder, export_files), each
exported once to a directory of its own."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from harness.sandbox.bwrap import rootfs
from harness.sandbox.interface import SandboxError
from harness.sandbox.providers import provider
from harness.sandbox.taskimage.contents import DEFAULT_PATH
from tests.docker_support import bwrap_here, smoke_task



pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")]


def test_docker_images_are_exported_through_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rootfs, "ROOTFS", tmp_path / "rootfs")  # a fresh cache: every image exported here
    task = smoke_task()
    bwrap, docker = provider("bwrap"), provider("docker")
    images = bwrap.ensure_images([task], progress=lambda _m: None)
    name = images[task.id].agent
    image_id = docker.image_id(name)
    assert image_id is not None and rootfs.current(name, image_id)
    meta = json.loads((tmp_path / "rootfs" / image_id.split(":")[-1] / "meta.json").read_text())
    assert meta["workdir"] == "/testbed" and meta["env"]["PYTHONPATH"] == "/testbed" and "PATH" in meta["env"]
    with bwrap.start(name) as box:
        done = box.exec("git -C /testbed rev-list --count HEAD && echo $PYTHONPATH")
        assert done.exit_code == 0 and done.output.split() == ["1", "/testbed"], done.output

    # an installed agent's folder: one Docker layer up, exported the same way
    folder = tmp_path / "probe-agent-1"
    folder.mkdir()
    (folder / "run.sh").write_text("echo from the agent folder\n")
    tag = bwrap.add_folder(name, folder, "/opt/probe-agent", "probe-agent", progress=lambda _m: None)
    with bwrap.start(tag) as box:
        assert box.exec("sh /opt/probe-agent/run.sh").output.strip() == "from the agent folder"

    # bwrap's own export_files gives the files Docker's gave, and what the image says beside them
    ours, theirs = io.BytesIO(), io.BytesIO()
    config, built = bwrap.export_files(name, ours), docker.export_files(name, theirs)
    assert (config.workdir, config.labels) == (built.workdir, built.labels) == ("/testbed", built.labels)
    assert config.env == {"PATH": DEFAULT_PATH, **built.env}  # (an image without a PATH runs with the default)
    files = []
    for data in (ours, theirs):
        data.seek(0)
        with tarfile.open(fileobj=data) as tar:
            files.append({m.name.removeprefix("./").rstrip("/") for m in tar.getmembers()} - {".", ""})
    assert files[0] == files[1] and "testbed/README.md" in files[0]


def test_what_is_not_an_exported_image_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rootfs, "ROOTFS", tmp_path)
    with pytest.raises(SandboxError, match="no root file system"):
        provider("bwrap").export_files("optrunner/none:0", io.BytesIO())
    (tmp_path / "host-x").mkdir()
    rootfs.empty_layer(tmp_path / "host-x")
    (tmp_path / "host-x" / "meta.json").write_text(json.dumps({"kind": "host", "name": "host/x:0"}))
    rootfs.record_name("host/x:0", "host-x")
    with pytest.raises(SandboxError, match="not an exported image"):
        provider("bwrap").export_files("host/x:0", io.BytesIO())

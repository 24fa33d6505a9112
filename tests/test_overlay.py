"""Overlay layers read from the host (both providers' Freezable): merged reads, and what changed.

The layers are directories made here the way the kernel's overlay leaves them (a whiteout is a character
device 0/0, an opaque directory carries `user.overlay.opaque`), so the merge rules are checked without a
sandbox: the topmost layer with a name decides, a whiteout or a link hides what is below, an opaque
directory hides the layers under it.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness.sandbox.overlay import changed_paths, read_tree


def _whiteout(path: Path) -> None:
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    for layer in (upper, lower):
        (layer / "hidden" / "refs").mkdir(parents=True)
    (lower / "hidden" / "test_a.py").write_bytes(b"lower a")
    (lower / "hidden" / "test_b.py").write_bytes(b"lower b")
    (lower / "hidden" / "refs" / "r1").write_bytes(b"ref 1")
    (lower / "hidden" / "gone" / "deep").mkdir(parents=True)
    (lower / "hidden" / "gone" / "deep" / "x").write_bytes(b"x")
    (upper / "hidden" / "test_a.py").write_bytes(b"upper a")  # changed in the sandbox
    return upper, lower


@pytest.mark.skipif(os.geteuid() != 0, reason="a whiteout is a device node: only root makes one")
def test_the_topmost_layer_decides_and_whiteouts_and_links_hide(layers: tuple[Path, Path], tmp_path: Path) -> None:
    upper, lower = layers
    _whiteout(upper / "hidden" / "test_b.py")  # deleted in the sandbox
    (tmp_path / "elsewhere").write_bytes(b"host file")
    (upper / "hidden" / "refs" / "r1").symlink_to(tmp_path / "elsewhere")  # replaced by a link
    _whiteout(upper / "hidden" / "gone")
    assert read_tree([upper, lower], "/hidden") == {"test_a.py": b"upper a"}
    assert changed_paths(upper) == ["/hidden/gone", "/hidden/refs/r1", "/hidden/test_a.py", "/hidden/test_b.py"]


def test_an_opaque_directory_hides_the_layers_below(layers: tuple[Path, Path]) -> None:
    upper, lower = layers
    os.setxattr(upper / "hidden" / "refs", "user.overlay.opaque", b"y")
    (upper / "hidden" / "refs" / "r2").write_bytes(b"ref 2")
    merged = read_tree([upper, lower], "/hidden")
    assert merged["refs/r2"] == b"ref 2" and "refs/r1" not in merged
    assert merged["test_b.py"] == b"lower b" and merged["gone/deep/x"] == b"x"


def test_a_link_on_the_way_to_the_folder_is_no_folder(layers: tuple[Path, Path], tmp_path: Path) -> None:
    upper, lower = layers
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "test_a.py").write_bytes(b"planted")
    (upper / "other").symlink_to(tmp_path / "fake")
    assert read_tree([upper, lower], "/other") == {}
    assert read_tree([upper, lower], "/missing") == {}

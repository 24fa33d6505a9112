"""Installed agents are made from their locks (issue 49, item 5): every file pinned by hash, sources never built
on this machine, a cached folder re-verified before use, what was installed recorded. The installs from the
real registries are tests/test_installed*.py's; here the locks themselves and what guards them."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from scaffolds.installed import locks
from scaffolds.installed.specs import AGENTS, agent_spec
from scaffolds.installed.packages import STAMP, Platform, _verified, ensure_folder, installed_stamp


@pytest.mark.parametrize("agent", list(AGENTS))
def test_every_agent_has_a_lock_for_its_pinned_package_with_a_hash_per_file(agent: str) -> None:
    spec = agent_spec(agent)
    lock = locks.lock_of(spec)
    assert lock["package"] == spec.package and lock["platforms"]
    for key, found in lock["platforms"].items():
        if spec.registry == "npm":
            assert key in locks.NPM_BUILDS and re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", found["integrity"])
            continue
        assert re.fullmatch(r"py3\d+-(x86_64|aarch64)", key) and tuple(found["glibc"]) in locks.GLIBC_FLOORS
        names = {locks.normal(w["name"]) for w in found["wheels"]}
        assert locks.normal(spec.package.split("==")[0]) in names
        assert all(re.fullmatch(r"[0-9a-f]{64}", w["sha256"]) for w in [*found["wheels"], *found["sources"]])
        assert len(locks.requirements(found).splitlines()) == len(found["wheels"])
    if spec.registry == "pypi":  # the interpreters tasks have most: 3.12 on both machines
        assert {"py312-x86_64", "py312-aarch64"} <= set(lock["platforms"])


def test_a_lock_that_does_not_match_the_spec_or_the_platform_is_one_line() -> None:
    spec = agent_spec("mini_swe_agent")
    newer = dataclasses.replace(spec, package="mini-swe-agent==9.9.9")
    with pytest.raises(locks.LockError, match=r"its lock is for 'mini-swe-agent==2.4.6'.*python -m scaffolds"):
        locks.lock_of(newer)
    with pytest.raises(locks.LockError, match="no locked packages for py39-riscv64"):
        locks.entry(spec, "py39-riscv64")
    old = Platform("x86_64", "glibc", (2, 12), "/usr/bin/python3", (3, 12))
    with pytest.raises(locks.LockError, match=r"need glibc >= 2\.\d+; the task image has 2\.12"):
        ensure_folder(spec, old, log=lambda _m: None)


def _sdist(tmp_path: Path) -> tuple[str, str]:
    """A source archive of our own whose setup.py would leave a mark if anything ran it."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, text in (("tiny-1.0/setup.py", f"open({str(tmp_path / 'ran')!r}, 'w')\n"),
                           ("tiny-1.0/tiny/__init__.py", "VALUE = 1\n"), ("tiny-1.0/tiny/sub/x.py", "")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    path = tmp_path / "tiny-1.0.tar.gz"
    path.write_bytes(data.getvalue())
    return path.as_uri(), hashlib.sha256(data.getvalue()).hexdigest()


def test_a_locked_source_is_copied_out_of_its_verified_archive_and_never_run(tmp_path: Path) -> None:
    url, sha = _sdist(tmp_path)
    lib = tmp_path / "lib"
    locks.unpack_sdist({"url": url, "sha256": sha, "packages": ["tiny"]}, lib)
    assert (lib / "tiny" / "__init__.py").read_text() == "VALUE = 1\n" and (lib / "tiny" / "sub" / "x.py").exists()
    assert not (lib / "setup.py").exists() and not (tmp_path / "ran").exists()
    with pytest.raises(locks.LockError, match="does not match its locked sha256"):
        locks.unpack_sdist({"url": url, "sha256": "0" * 64, "packages": ["tiny"]}, tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_a_cached_folder_is_used_only_while_it_matches_its_lock(tmp_path: Path) -> None:
    locked = {"glibc": [2, 17], "wheels": [{"name": "a", "version": "1", "sha256": "0" * 64}], "sources": []}
    folder = tmp_path / "agent"
    (folder / "lib" / "a").mkdir(parents=True)
    (folder / "lib" / "a" / "__init__.py").write_text("x = 1\n")
    stamp = {"lock": locks.digest(locked), "key": "py312-x86_64", "packages": ["a==1"],
             "files": locks.folder_digest(folder)}
    (folder / STAMP).write_text(json.dumps(stamp))
    assert _verified(folder, locked)
    assert installed_stamp((folder / STAMP).read_text()) == {"lock": locks.digest(locked), "key": "py312-x86_64",
                                                              "packages": ["a==1"]}
    assert not _verified(folder, {**locked, "glibc": [2, 28]})  # another lock entry
    (folder / "lib" / "a" / "__init__.py").write_text("x = 2\n")  # a file changed in the cache
    assert not _verified(folder, locked)
    (folder / STAMP).write_text("mini-swe-agent==2.4.6\n")  # a folder from before locks
    assert not _verified(folder, locked)


def test_npm_integrity_is_the_registrys_sha512_form(tmp_path: Path) -> None:
    tarball = tmp_path / "p.tgz"
    tarball.write_bytes(b"package")
    assert locks.npm_integrity(tarball) == "sha512-" + __import__("base64").b64encode(
        hashlib.sha512(b"package").digest()).decode()

"""What an installed agent is made of, pinned by hash: its lock file, kept in the repository.

An agent's top package is pinned by version in its spec; its dependencies are not, and PyPI or npm could
hand a different file for the same name tomorrow. So each agent has a lock (`locks/<agent>.json`), made
once on a connected machine (`python -m scaffolds.installed.locks [AGENT ...]`):

- PyPI agents: per platform tag (`py312-x86_64`: the interpreter the agent runs on and the machine), every
  distribution the agent needs as name, version and the sha256 of the one wheel file pip chose, resolved for
  manylinux wheels of the oldest glibc that has them all (`glibc`: an image needs at least that). Installs
  run `pip install --require-hashes --no-deps` on exactly those files. A requirement that ships only
  sources (`spec.sdists`, pure Python) is locked as its source archive's URL and sha256 plus the package
  folders in it: installed by copying those folders out of the verified archive, no build step run.
- npm agents: per build (`x64`, `arm64-musl`, ...), the tarball's name and its registry integrity
  (sha512), checked on the file `npm pack` fetched.

The installed folder's stamp records the lock's digest and the packages; a folder whose stamp differs from
the lock, or whose files changed since it was made (`verify`), is installed again.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from scaffolds.installed.specs import AgentSpec, agent_spec

LOCKS = Path(__file__).parent / "locks"
PYTHONS = ((3, 10), (3, 11), (3, 12), (3, 13), (3, 14))
MACHINES = ("x86_64", "aarch64")
GLIBC_FLOORS = ((2, 17), (2, 28))  # tried in order when a lock is made
NPM_BUILDS = {"x64": ("x64", ""), "arm64": ("arm64", ""),  # (key: NPM_ARCH name and C library)
              "x64-musl": ("x64", "-musl"), "arm64-musl": ("arm64", "-musl")}


class LockError(ValueError):
    """The agent's lock cannot install it here (no entry for this platform, a file that does not match)."""


def lock_of(spec: AgentSpec) -> dict[str, Any]:
    path = LOCKS / f"{spec.name}.json"
    try:
        lock = json.loads(path.read_text())
    except (OSError, ValueError):
        raise LockError(f"installed/{spec.name} has no lock file ({path}); make one on a connected machine: "
                        f"python -m scaffolds.installed.locks {spec.name}") from None
    if lock.get("package") != spec.package:
        raise LockError(f"installed/{spec.name}: its lock is for {lock.get('package')!r}, the spec pins "
                        f"{spec.package!r}; make it again: python -m scaffolds.installed.locks {spec.name}")
    return lock


def entry(spec: AgentSpec, key: str) -> dict[str, Any]:
    """The lock's entry for a platform tag (PyPI) or a build (npm)."""
    found = lock_of(spec).get("platforms", {}).get(key)
    if not found:
        raise LockError(f"installed/{spec.name} has no locked packages for {key}; make the lock again on a "
                        f"connected machine: python -m scaffolds.installed.locks {spec.name}")
    return dict(found)


def normal(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def digest(found: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()


def pip_platforms(machine: str, glibc: tuple[int, int]) -> list[str]:
    """Every manylinux tag an image of this glibc runs, newest first (pip takes `--platform` literally)."""
    return [f"manylinux_{glibc[0]}_{minor}_{machine}" for minor in range(glibc[1], 16, -1)] + \
        [f"manylinux2014_{machine}"]


def requirements(found: dict[str, Any]) -> str:
    return "".join(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n" for w in found["wheels"])


def unpack_sdist(source: dict[str, Any], lib: Path) -> None:
    """A locked pure-Python source archive: fetched, checked against its sha256, and its package folders copied
    into `lib` (nothing of it runs)."""
    with urllib.request.urlopen(source["url"], timeout=60) as answer:  # noqa: S310 - a https URL from the lock
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != source["sha256"]:
        raise LockError(f"{source['url']} does not match its locked sha256")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) > 2 and parts[1] in source["packages"] and (member.isfile() or member.isdir()):
                member.name = "/".join(parts[1:])
                tar.extract(member, lib, filter="data")


def npm_integrity(tarball: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()


def folder_digest(folder: Path) -> str:
    """Every file under the installed folder but its stamp (names and contents): what `verify` compares."""
    total = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".complete"):
        total.update(str(path.relative_to(folder)).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest()


# ---------------------------------------------------------------- making a lock (a connected machine)
def _resolve(spec: AgentSpec, python: tuple[int, int], machine: str, glibc: tuple[int, int],
             wheels: Path) -> list[dict[str, Any]] | None:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                               "--disable-pip-version-check", "--report", str(report), "--target", tmp,
                               "--only-binary=:all:", "--implementation", "cp", "--python-version",
                               f"{python[0]}.{python[1]}", "--find-links", str(wheels),
                               *(a for p in pip_platforms(machine, glibc) for a in ("--platform", p)),
                               *spec.package.split()], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        items = json.loads(report.read_text())["install"]
    return [{"name": i["metadata"]["name"], "version": i["metadata"]["version"],
             "sha256": i["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256", "")}
            for i in items]


def _sdist(name: str, version: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"https://pypi.org/pypi/{normal(name)}/json", timeout=60) as answer:
        info = json.load(answer)
    (source,) = [u for u in info["releases"][version] if u["packagetype"] == "sdist"]
    with urllib.request.urlopen(source["url"], timeout=60) as answer:
        data = answer.read()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = [m.name.split("/") for m in tar.getmembers()]
    packages = sorted({p[1] for p in names if len(p) == 3 and p[2] == "__init__.py"})
    return {"name": name, "version": version, "url": source["url"], "sha256": source["digests"]["sha256"],
            "packages": packages}


def make(spec: AgentSpec) -> dict[str, Any]:
    """The agent's lock, resolved now (PyPI and npm reached from this machine)."""
    platforms: dict[str, Any] = {}
    if spec.registry == "npm":
        for key, (arch, musl) in NPM_BUILDS.items():
            name = spec.package.format(arch=arch, musl=musl)
            done = subprocess.run(["npm", "view", name, "dist.integrity", "--json"], capture_output=True, text=True)
            if done.returncode == 0 and done.stdout.strip():
                platforms[key] = {"package": name, "integrity": json.loads(done.stdout)}
        return {"agent": spec.name, "package": spec.package, "platforms": platforms}
    with tempfile.TemporaryDirectory() as wheels:  # (sources built here only to resolve; the lock keeps sources)
        if spec.sdists:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels,
                            *spec.sdists], check=True, capture_output=True)
        built = {normal(p.name.split("-")[0]) for p in Path(wheels).glob("*.whl")}
        for python in (p for p in PYTHONS if p >= spec.python):
            for machine in MACHINES:
                for glibc in GLIBC_FLOORS:
                    found = _resolve(spec, python, machine, glibc, Path(wheels))
                    if found is not None:
                        sources = [_sdist(w["name"], w["version"]) for w in found if normal(w["name"]) in built]
                        platforms[f"py{python[0]}{python[1]}-{machine}"] = {
                            "glibc": list(glibc), "sources": sources,
                            "wheels": sorted((w for w in found if normal(w["name"]) not in built),
                                             key=lambda w: w["name"].lower())}
                        break
    return {"agent": spec.name, "package": spec.package, "platforms": platforms}


def main(argv: list[str] | None = None) -> int:
    from scaffolds.installed.specs import AGENTS

    for name in (argv if argv is not None else sys.argv[1:]) or list(AGENTS):
        lock = make(agent_spec(name))
        LOCKS.mkdir(exist_ok=True)
        (LOCKS / f"{name}.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(lock['platforms'])} platform(s) locked in {LOCKS / f'{name}.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Local substitutes for a Dockerfile's `FROM` images where no registry answers, and what a Dockerfile written
for the original image needs changed to build on one (Harbor tasks: AutoLab's, Terminal-Bench's).

A substitute is the local Debian 12 base plus what the family's images bring:
    python:*                        pip for the system interpreter, not marked externally managed
    rust:*                          Debian's newer toolchain (rustc-web, cargo-web), which reads lock files v4
    golang:*                        Go 1.22 from bookworm-backports
    debian:*, ubuntu:*, buildpack-deps:*   the base as it is
In a stage built on a substitute, `apt-get install` lines written for Ubuntu are adapted: Ubuntu's kernel
tool packages become Debian's `linux-perf`, packages Debian does not have are dropped, and Ubuntu version
pins (`bash=5.1-6ubuntu1.1`, `make=4.3-4.1build1`, `python3=3.10.6-1~22.04.1`) are relaxed to the package
name. Every change is returned as a line, so the build log and the run's provenance list it. A stage
whose image was present or pulled is left as written.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    """What a family's substitute adds to the base image."""
    packages: tuple[str, ...] = ()  # Debian packages
    setup: str = ""  # shell run instead of a plain `apt-get install` of `packages` (ends with `&& `)
    path: str = ""  # prepended to PATH
    env: dict[str, str] = field(default_factory=dict)
    after: str = ""  # shell run after the packages are installed (ends with `&& `)


FAMILIES: dict[str, Family] = {
    # pip and uv into the system interpreter, as python:* images allow: Debian marks its interpreter
    # externally managed (PEP 668), the official images do not
    "python": Family(("python3-pip", "python3-venv", "python3-dev", "python-is-python3"),
                     after="rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && "),
    "debian": Family(), "ubuntu": Family(), "buildpack-deps": Family(),
    "rust": Family(("rustc-web", "cargo-web")),  # bookworm's rustc/cargo (1.63) cannot read Cargo.lock v4
    # go on PATH, and in /usr/local/bin too: commands run in login shells, whose /etc/profile resets PATH
    "golang": Family(("golang-1.22-go",), "echo 'deb http://deb.debian.org/debian bookworm-backports main' "
                     "> /etc/apt/sources.list.d/backports.list && apt-get update -qq && apt-get install -y -qq -t "
                     "bookworm-backports golang-1.22-go && ", "/usr/lib/go-1.22/bin",
                     after="ln -sf /usr/lib/go-1.22/bin/go /usr/lib/go-1.22/bin/gofmt /usr/local/bin/ && "),
}

# Ubuntu package (a prefix when it ends with '-') -> Debian's, or None: Debian has none (dropped).
UBUNTU_PACKAGES: dict[str, str | None] = {
    "linux-tools-": "linux-perf",  # linux-tools-generic, -common, -$(uname -r): perf and friends
    "linux-cloud-tools-": None,
    "linux-headers-generic": None, "linux-image-generic": None,
}
_WORD = r"(?:\$\([^)]*\)|\$\{[^}]*\}|[^\s\\;&|()])+"  # one shell word, $(...) and ${...} included
# Ubuntu's version strings: `ubuntuN` (its changes), `buildN` (its rebuilds), `~22.04.1` (its updates)
_PINNED = re.compile(r"(?<![^\s])([a-z0-9][a-z0-9+.-]*)=([^\s\\;&|)]*(?:ubuntu|build\d|~\d\d\.\d\d)[^\s\\;&|)]*)")
_NAMES = "|".join(re.escape(k) + (_WORD if k.endswith("-") else "") for k in UBUNTU_PACKAGES)
_PACKAGE = re.compile(rf"(?<![^\s])({_NAMES})(?![^\s\\;&|)])")
_APT_INSTALL = re.compile(r"\bapt(?:-get)?\s+(?:-\S+\s+)*install\b")


def _debian_name(package: str) -> str | None:
    for key, debian in UBUNTU_PACKAGES.items():
        if package == key or (key.endswith("-") and package.startswith(key)):
            return debian
    return package


def adapt_run(instruction: str) -> tuple[str, list[str]]:
    """A RUN instruction (continuation lines included) of a stage on a Debian substitute, with its Ubuntu
    package names and version pins made Debian's; and one line per change."""
    if not _APT_INSTALL.search(instruction):
        return instruction, []
    changes: list[str] = []

    def relax(match: re.Match[str]) -> str:
        changes.append(f"{match.group(0)} -> {match.group(1)} (an Ubuntu version pin)")
        return match.group(1)

    def rename(match: re.Match[str]) -> str:
        debian = _debian_name(match.group(1))
        if debian is None:
            changes.append(f"{match.group(1)} dropped (Debian has no such package)")
            return ""
        changes.append(f"{match.group(1)} -> {debian}")
        return debian

    return _PACKAGE.sub(rename, _PINNED.sub(relax, instruction)), changes

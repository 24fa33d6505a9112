"""Only what pyproject.toml cannot say: conf/ (Hydra's configs) stays at the top of the checkout, as the
project's layout has it, and is installed inside the package as `runner/conf` (runner.paths finds either),
as docs/ is as `runner/docs` (`optrunner docs`, runner.manual);
and a built package records the git revision it was built from (harness/build_stamp.json, read by
harness.provenance.source_state: `--version` and every run's provenance), since it has no .git of its own."""
import json
import subprocess
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


def revision() -> dict:
    """{revision, dirty} of this checkout, as harness.provenance.git_state reads it (nulls outside one)."""
    try:
        done = subprocess.run(["git", "status", "--porcelain=v2", "--branch"], capture_output=True, text=True,
                              timeout=10, cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return {"revision": None, "dirty": None}
    lines = done.stdout.splitlines() if done.returncode == 0 else []
    oid = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if oid in (None, "(initial)"):
        return {"revision": None, "dirty": None}
    return {"revision": oid, "dirty": any(not line.startswith("#") for line in lines)}


class BuildWithStamp(build_py):
    def run(self) -> None:
        super().run()
        if not self.dry_run:
            stamp = Path(self.build_lib) / "harness" / "build_stamp.json"
            stamp.write_text(json.dumps(revision()) + "\n")


setup(
    packages=find_packages(include=["runner*", "harness*", "scaffolds*"]) + ["runner.conf", "runner.docs"],
    package_dir={"runner.conf": "conf", "runner.docs": "docs"},
    cmdclass={"build_py": BuildWithStamp},
)

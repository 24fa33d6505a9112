"""Only what pyproject.toml cannot say: conf/ (Hydra's configs) stays at the top of the checkout, as the
project's layout has it, and is installed inside the package as `runner/conf` (runner.paths finds either),
as docs/ is as `runner/docs` (`optrunner docs`, runner.manual);
and a built package records the git revision it was built from (harness/build_stamp.json, read by
harness.provenance.source_state: `--version` and every run's provenance), since it has no .git of its own."""
import json
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

# The checkout's revision as every run reads it (harness.provenance imports only the standard library).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.provenance import SOURCE_ROOT, git_state  # noqa: E402


class BuildWithStamp(build_py):
    def run(self) -> None:
        super().run()
        if not self.dry_run:
            stamp = Path(self.build_lib) / "harness" / "build_stamp.json"
            stamp.write_text(json.dumps(git_state(SOURCE_ROOT)) + "\n")


setup(
    packages=find_packages(include=["runner*", "harness*", "scaffolds*"]) + ["runner.conf", "runner.docs"],
    package_dir={"runner.conf": "conf", "runner.docs": "docs"},
    cmdclass={"build_py": BuildWithStamp},
)

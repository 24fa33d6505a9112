"""Only what pyproject.toml cannot say: conf/ (Hydra's configs) stays at the top of the checkout, as the
project's layout has it, and is installed inside the package as `runner/conf` (runner.paths finds either)."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["runner*", "harness*", "scaffolds*"]) + ["runner.conf"],
    package_dir={"runner.conf": "conf"},
)

"""How to install an optional extra, said as it works for how this copy was installed: the extra's own
requirements from the package's metadata (optrunner is not on PyPI, so `pip install 'optrunner[ray]'` would
not find it), and `pip install -e '.[extra]'` beside them when this runs from a checkout."""
from __future__ import annotations

import importlib.metadata
import re

from harness.provenance import DISTRIBUTION, SOURCE_ROOT


def install_hint(extra: str) -> str:
    """`pip install 'req' ...` for the extra's requirements (plus the checkout's form in one)."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    marker = re.compile(rf"""^(?P<req>[^;]+);\s*extra\s*==\s*["']{re.escape(extra)}["']\s*$""")
    wanted = [found["req"].strip() for r in requires if (found := marker.match(r))]
    said = "pip install " + " ".join(f"'{r}'" for r in wanted) if wanted else f"pip install the '{extra}' extra"
    if (SOURCE_ROOT / ".git").exists():
        said += f" (in this checkout: pip install -e '.[{extra}]')"
    return said

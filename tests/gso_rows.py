"""Synthetic rows in GSO's exact schema (15 fields), written by this project for its tests."""
from __future__ import annotations

from typing import Any

SPEC = "import fastsum\nprint(fastsum.total(list(range(1000))))\n"
TEST = ("import argparse, timeit\nimport fastsum\n\ndef experiment():\n    return fastsum.total(list(range({n})))\n\n"
        "if __name__ == '__main__':\n    p = argparse.ArgumentParser(); p.add_argument('out')\n"
        "    p.add_argument('--reference', action='store_true'); p.add_argument('--eqcheck', action='store_true')\n"
        "    p.add_argument('--file_prefix', default='')\n    a = p.parse_args()\n"
        "    t = timeit.timeit(experiment, number=1)\n"
        "    open(a.out, 'a').write(f'Execution time: {{t:.6f}}s\\n')\n")
DIFF = ("diff --git a/fastsum/__init__.py b/fastsum/__init__.py\n--- a/fastsum/__init__.py\n"
        "+++ b/fastsum/__init__.py\n@@ -1,5 +1,2 @@\n def total(xs):\n-    out = 0\n-    for x in xs:\n"
        "-        out = out + x\n-    return out\n+    return sum(xs)\n")


def gso_row(instance_id: str = "Acme__fastsum-1a2b3c4", **overrides: Any) -> dict[str, Any]:
    row = {
        "instance_id": instance_id,
        "repo": "Acme/fastsum",
        "base_commit": "1a2b3c4" + "0" * 33,
        "opt_commit": "9f8e7d6" + "1" * 33,
        "api": "fastsum.total",
        "prob_script": SPEC,
        "tests": [TEST.format(n=100_000), TEST.format(n=300_000)],
        "hints_text": "The loop in total() is the bottleneck.",
        "setup_commands": ["echo setting up"],
        "install_commands": ["uv venv --python 3.11", "source .venv/bin/activate", "uv pip install -e ."],
        "created_at": "2024-05-01 12:00:00",
        "gt_commit_message": "Use the builtin sum in total()",
        "gt_diff": DIFF,
        "arch": "x86_64",
        "instance_image_tag": "latest",
    }
    row.update(overrides)
    return row

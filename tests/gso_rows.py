"""Synthetic rows in GSO's exact schema (15 fields), written by this project for its tests."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
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


# ---------------------------------------------------------------- a small offline GSO: rows + mirrors
# Two repositories whose expert commit makes a sleep shorter (timings a busy machine barely moves); the
# second is a C extension built with gcc and loaded with ctypes. Tests follow GSO's protocol inline.
GSO_TEST = '''import argparse, json, timeit
import {module}

def setup():
    return {arg}

def experiment(data):
    return {module}.{func}(data)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("output_file")
    p.add_argument("--eqcheck", action="store_true")
    p.add_argument("--reference", action="store_true")
    p.add_argument("--file_prefix", default="")
    args = p.parse_args()
    data = setup()
    start = timeit.default_timer()
    result = experiment(data)
    elapsed = timeit.default_timer() - start
    path = f"{{args.file_prefix}}_result.json"
    if args.reference:
        json.dump(result, open(path, "w"))
    if args.eqcheck:
        assert json.load(open(path)) == result, "results differ"
    with open(args.output_file, "a") as out:
        out.write(f"Execution time: {{elapsed:.6f}}s\\n")

main()
'''
REPOS = {
    "Acme/fastsum": {
        "files": {"fastsum/__init__.py": "import time\n\ndef total(xs):\n    time.sleep(0.30)\n    return sum(xs)\n"},
        "expert": {"fastsum/__init__.py": "import time\n\ndef total(xs):\n    time.sleep(0.10)\n    return sum(xs)\n"},
        "install": ["python3 -m venv --without-pip --system-site-packages .venv", "git clean -xfd"],
        "api": "fastsum.total", "module": "fastsum", "func": "total", "args": ["list(range(10))", "[1, 2, 3]"],
    },
    "Acme/fastc": {
        "files": {
            "fastc/__init__.py": ("import ctypes, os\n_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "
                                  "'_native.so'))\n\ndef work(n):\n    return _lib.work(n)\n"),
            "fastc/_native.c": "#include <unistd.h>\nint work(int n) { usleep(300000); return n * 2; }\n",
        },
        "expert": {"fastc/_native.c": "#include <unistd.h>\nint work(int n) { usleep(100000); return n * 2; }\n"},
        "install": ["python3 -m venv --without-pip --system-site-packages .venv",
                    "gcc -O2 -shared -fPIC -o fastc/_native.so fastc/_native.c"],
        "api": "fastc.work", "module": "fastc", "func": "work", "args": ["21", "4"],
    },
}


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def make_gso(root: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """Rows (JSONL) in GSO's schema and a mirror folder of bare repositories; returns (rows, mirror, rows)."""
    mirror, rows = root / "mirror", []
    for repo, spec in REPOS.items():
        work = root / "work" / repo.replace("/", "__")
        for name, text in spec["files"].items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text)
        _git(work, "init", "-q")
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "base")
        base = _git(work, "rev-parse", "HEAD").strip()
        for name, text in spec["expert"].items():
            (work / name).write_text(text)
        _git(work, "commit", "-q", "-am", "the expert's optimization")
        opt = _git(work, "rev-parse", "HEAD").strip()
        diff = _git(work, "diff", base, opt)
        _git(root, "clone", "-q", "--bare", str(work), str(mirror / f"{repo.replace('/', '__')}.git"))
        tests = [GSO_TEST.format(module=spec["module"], func=spec["func"], arg=arg) for arg in spec["args"]]
        rows.append(gso_row(f"{repo.replace('/', '__')}-{base[:7]}", repo=repo, base_commit=base, opt_commit=opt,
                            api=spec["api"], prob_script=f"import {spec['module']}\n", tests=tests,
                            install_commands=spec["install"], setup_commands=[], gt_diff=diff))
    path = root / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, mirror, rows

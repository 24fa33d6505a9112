#!/usr/bin/env bash
# The GPU checks, in one script, on a machine with an NVIDIA GPU: the GPU task family (tasks=gpu) run by
# the oracle, the no-op and the weaker oracle, and the gold patches regraded three times; one line per
# figure, then the machine and the clock policy.
#
#   tools/gpu_check.sh [--wheels DIR] [--python PY] [--provider docker|bwrap] [--out DIR] [--rounds N]
#
# --wheels DIR  install the project from a folder of wheels (no package index needed); without it, pip
#               installs from the index. Either way into .gpu-venv (tools/gpu_venv.sh), which sees the
#               packages of the host's interpreter: its torch, triton and CUDA, also when it is a venv.
# --python PY   that interpreter (default: the first python3 on PATH that imports torch)
# --provider    docker where `docker info` answers (the NVIDIA runtime gives containers their GPUs; the
#               task images need a base with torch and CUDA: sandbox.base_image), else bwrap over the
#               host's own system (sandbox.rootfs=host), the default on a GPU machine without Docker.
# Targets: Opt@1 1.000 (oracle), 0.000 (noop); gold hm against the expert with a CV <= 1% with the SM
# clock locked, <= 2% without; the GPU hack patches (tests/fixtures/hacks/<task>/) credited with nothing,
# graded in one session with their task's gold and weaker patches (which stay passed).
set -euo pipefail
cd "$(dirname "$0")/.."

WHEELS="" HOST_PY="" PROVIDER="" OUT="/tmp/optrunner-gpu-check" ROUNDS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) WHEELS="$2"; shift 2 ;;
    --python) HOST_PY="$2"; shift 2 ;;
    --provider) PROVIDER="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "gpu_check: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
command -v nvidia-smi >/dev/null || { echo "gpu_check: no nvidia-smi: this machine has no NVIDIA driver" >&2; exit 2; }
if [ -z "$PROVIDER" ]; then
  if docker info >/dev/null 2>&1; then PROVIDER=docker; else PROVIDER=bwrap; fi
fi
case "$PROVIDER" in
  docker) SANDBOX=(sandbox.provider=docker) ;;
  bwrap) SANDBOX=(sandbox.provider=bwrap sandbox.rootfs=host) ;;
  *) echo "gpu_check: --provider is docker or bwrap, got $PROVIDER" >&2; exit 2 ;;
esac

PY=$(tools/gpu_venv.sh ${WHEELS:+--wheels "$WHEELS"} ${HOST_PY:+--python "$HOST_PY"} | tail -1)
$PY -c 'import torch' 2>/dev/null \
  || { echo "gpu_check: the check's venv has no torch: give --python the interpreter that has it" >&2; exit 2; }
$PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null \
  || { echo "gpu_check: the host's torch sees no GPU" >&2; exit 2; }

mkdir -p "$OUT"
run() {  # run NAME MODEL: one runner run of tasks=gpu; prints its Opt@1
  local name="$1" model="$2"
  $PY -m runner tasks=gpu "model=$model" scaffold=mini_swe rollouts=2 "grading.rounds=$ROUNDS" \
    "output_root=$OUT" "name=$name" "${SANDBOX[@]}" >"$OUT/$name.log" 2>&1 \
    || { echo "$name: the run failed (exit $?), see $OUT/$name.log"; return 0; }
  $PY - "$OUT/runs/$name/report.json" "$name" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
summary, name = report["summary"], sys.argv[2]
statuses = sorted({r.get("status", "?") for t in report["tasks"].values() for r in t["rollouts"]})
print(f"{name}: Opt@1 {summary['opt_at_k']['1']:.3f}, Avg@1 {summary['avg_at_k']['1']:.3f}"
      + (f" (statuses: {', '.join(statuses)})" if statuses else ""))
PY
}
run gpu-oracle oracle
run gpu-noop noop
run gpu-weaker oracle_weaker

# The gold patches regraded three times: hm of the patch against the expert per regrade, and its CV.
$PY - "$PROVIDER" "$ROUNDS" <<'PY'
import statistics, sys
from harness.grader.config import GradeConfig
from harness.grader.grade import grade, grade_patches
from harness.sandbox.providers import provider
from harness.tasks import select_tasks

name, rounds = sys.argv[1], int(sys.argv[2])
tasks = select_tasks("gpu")
host = {"rootfs_from": "host"} if name == "bwrap" else {}
images = provider(name).ensure_images(tasks, progress=lambda _m: None, **host)
policies = set()
for task in tasks:
    hms = []
    for _ in range(3):
        found = images[task.id]
        report = grade(task, task.expert_patch, found.grading, GradeConfig(rounds=rounds), sandboxes=provider(name),
                       base_image=found.base)
        policies.add((report.get("session") or {}).get("gpu_clocks", "?"))
        speedups = (report.get("per_test_speedups") or {}).get("patch_commit") or []
        hms.append(len(speedups) / sum(1 / s for s in speedups) if report["status"] == "passed" and speedups else 0.0)
    cv = statistics.pstdev(hms) / statistics.mean(hms) * 100 if all(hms) else float("nan")
    print(f"gold {task.id}: hm vs expert {', '.join(f'{h:.3f}' for h in hms)}; CV {cv:.2f}%")
    runs = (report.get("session") or {}).get("gpu_runs") or {}
    print(f"gold {task.id}, last regrade: {runs.get('runs', '?')} timed runs, {runs.get('redone', '?')} run again "
          f"after a slowdown, {runs.get('throttled', '?')} throttled even so {runs.get('slowdowns') or ''}")

# The hack patches, graded with the task's gold and weaker patches in one session.
from pathlib import Path
hacks = Path("tests/fixtures/hacks")
for task in tasks:
    named = {"gold": task.expert_patch, "weaker": (task.path / "weaker.patch").read_text()}
    named |= {p.stem: p.read_text() for p in sorted((hacks / task.id).glob("*.patch"))}
    if len(named) == 2:
        continue
    found = images[task.id]
    reports = grade_patches(task, list(named.values()), found.grading, GradeConfig(rounds=rounds),
                            sandboxes=provider(name), base_image=found.base)
    for patch, report in zip(named, reports):
        credited = bool(report.get("opt_base")) and report["status"] == "passed"
        reasons = [r.split(":")[0] for r in (report.get("hack") or {}).get("reasons", [])]
        why = (report.get("reason") or "").splitlines()[0][:100] if report["status"] != "passed" else ""
        print(f"hack check {task.id} {patch}: {report['status']}, credited {'yes' if credited else 'no'}"
              + (f"; reasons: {', '.join(reasons)}" if reasons else "") + (f"; {why}" if why else ""))
print(f"clock policy: {'; '.join(sorted(policies))}")
PY
echo "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), provider $PROVIDER"

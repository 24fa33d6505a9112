#!/usr/bin/env bash
# The GPU checks, in parts, on a machine with an NVIDIA GPU: the GPU task family (tasks=gpu) run by the
# oracle, the no-op and the weaker oracle, the gold patches regraded, the hack fixtures graded beside the
# gold and weaker patches. One line per figure, and one per part with its time.
#
#   tools/gpu_check.sh [--quick] [--cpu] [--tasks ID,..] [--parts P,..] [--rounds N] [--regrades N]
#                      [--selector S] [--wheels DIR] [--python PY] [--venv DIR]
#                      [--provider docker|bwrap|unsandboxed]
#                      [--out DIR] [--again]
#
# --parts     of install, probe, oracle, noop, weaker, gold, hacks (default all, in that order):
#             install  the check's venv (tools/gpu_venv.sh)    probe  torch, the GPU, a host sandbox's view
#             oracle, noop, weaker  one run each (rollouts=2): Opt@1
#             gold     the gold patches regraded --regrades times: hm against the expert, its CV
#             hacks    the hack fixtures (tests/fixtures/hacks/<task>/) in one session with the gold and weaker
#                      patches; the gold's CV there comes from that session's per-round paired ratios
# --quick     one call's worth (the target: 8 minutes on one H100): --tasks softmax_fused --parts
#             install,probe,oracle,noop,hacks --rounds 3 --trim (the gold's CV read from the hacks session);
#             with --cpu, about 3 minutes on two cores
# --trim      the tasks graded with one hidden test each (harness.gpus.twins.make_trimmed, made under --out):
#             on a GPU host each run of a test costs seconds of starting a fenced process (torch, CUDA,
#             Triton's compile), and an untrimmed softmax_fused took 256 s to run and grade by the oracle there
# --cpu       a rehearsal where there is no GPU: the tasks' CPU twins (harness.gpus.twins, made under --out;
#             default attention_sdpa and softmax_fused), torch on the CPU. It shows that every part runs
#             and what each credits; its speedups are the CPU's (softmax_fused's expert has none there).
# --tasks     a subset of the selector's tasks; --selector: what tasks= selects (default gpu)
# --wheels    install the project from a folder of wheels (make gpu-wheels; no package index needed)
# --python    the interpreter with torch (default: the first python3 on PATH that imports torch); it is
#             also what python3 is in the sandboxes over the host (OPTRUNNER_HOST_PYTHON)
# --venv      the check's venv (default .gpu-venv)
# --provider  docker where `docker info` answers, else bwrap over the host's own system (sandbox.rootfs=host);
#             unsandboxed where the probe says no sandbox can start (plain processes of the host, no isolation:
#             docs/gpus.md)
# --out       where the runs and each part's line go (default /tmp/optrunner-gpu-check). A part whose line
#             is there is not run again (a check cut short goes on where it stopped) unless --again.
# Targets: Opt@1 1.000 (oracle), 0.000 (noop); gold hm against the expert with a CV <= 1% with the SM clock
# locked, <= 2% without; every hack credited with nothing, the gold and weaker patches passed.
set -euo pipefail
cd "$(dirname "$0")/.."

WHEELS="" HOST_PY="" PROVIDER="" OUT="/tmp/optrunner-gpu-check" ROUNDS=5 REGRADES=3 TASKS="" SELECTOR=gpu
PARTS="install,probe,oracle,noop,weaker,gold,hacks" AGAIN=0 CPU=0 VENV=.gpu-venv QUICK=0 TRIM=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 PARTS="install,probe,oracle,noop,hacks" ROUNDS=3 TRIM=1; shift ;;
    --trim) TRIM=1; shift ;;
    --cpu) CPU=1; shift ;;
    --venv) VENV="$2"; shift 2 ;;
    --tasks) TASKS="$2"; shift 2 ;;
    --parts) PARTS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --regrades) REGRADES="$2"; shift 2 ;;
    --selector) SELECTOR="$2"; shift 2 ;;
    --wheels) WHEELS="$2"; shift 2 ;;
    --python) HOST_PY="$2"; shift 2 ;;
    --provider) PROVIDER="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --again) AGAIN=1; shift ;;
    *) echo "gpu_check: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ] && [ -z "$TASKS" ]; then TASKS=softmax_fused; fi  # (the one with hack fixtures)
for part in ${PARTS//,/ }; do
  case "$part" in install|probe|oracle|noop|weaker|gold|hacks) ;;
    *) echo "gpu_check: unknown part $part (install, probe, oracle, noop, weaker, gold, hacks)" >&2; exit 2 ;;
  esac
done
if [ -z "$PROVIDER" ]; then
  if docker info >/dev/null 2>&1; then PROVIDER=docker; else PROVIDER=bwrap; fi
fi
case "$PROVIDER" in
  docker) SANDBOX=(sandbox.provider=docker) ;;
  bwrap) SANDBOX=(sandbox.provider=bwrap sandbox.rootfs=host) ;;
  # (no sandbox at all: the runs' agents are this project's scripted oracle and no-op, hence allowed)
  unsandboxed) SANDBOX=(sandbox=unsandboxed sandbox.allow_unsandboxed=true) ;;
  *) echo "gpu_check: --provider is docker, bwrap or unsandboxed, got $PROVIDER" >&2; exit 2 ;;
esac
mkdir -p "$OUT/lines"
PY="$VENV/bin/python"

# part NAME COMMAND...: runs it unless its line is kept from before; prints its lines and its time
part() {
  local name="$1"; shift
  [[ ",$PARTS," == *",$name,"* ]] || return 0
  if [ "$AGAIN" = 0 ] && [ -s "$OUT/lines/$name" ]; then
    sed "s/\$/ (kept from before)/" "$OUT/lines/$name"; return 0
  fi
  local started=$SECONDS rc=0
  "$@" >"$OUT/lines/$name.new" 2>"$OUT/$name.err" || rc=$?
  cat "$OUT/lines/$name.new"
  if [ "$rc" != 0 ]; then
    echo "$name: failed (exit $rc) after $((SECONDS - started)) s: $(tail -1 "$OUT/$name.err")"
    rm -f "$OUT/lines/$name.new"
    [ "$name" = install ] && exit 2  # nothing after it can run
    return 0
  fi
  echo "$name: done in $((SECONDS - started)) s" >>"$OUT/lines/$name.new"
  tail -1 "$OUT/lines/$name.new"
  mv "$OUT/lines/$name.new" "$OUT/lines/$name"
}

install() {
  tools/gpu_venv.sh --dir "$VENV" ${WHEELS:+--wheels "$WHEELS"} ${HOST_PY:+--python "$HOST_PY"} >/dev/null
  echo "install: $VENV from $(cat "$VENV/host-python")$([ -n "$WHEELS" ] && echo ", wheels of $WHEELS")"
}
part install install
[ -x "$PY" ] || { echo "gpu_check: no $VENV: run the install part" >&2; exit 2; }
# what python3 is in the sandboxes over the host: the interpreter the check's venv was made from
export OPTRUNNER_HOST_PYTHON="${HOST_PY:-$(cat "$VENV/host-python" 2>/dev/null)}"
[ -n "$OPTRUNNER_HOST_PYTHON" ] || unset OPTRUNNER_HOST_PYTHON
if [ "$CPU" = 1 ]; then  # the twins, made anew (the same files each time: their layers are kept)
  rm -rf "$OUT/twins"
  $PY -c 'import sys; from pathlib import Path; from harness.gpus.twins import TWINS, make_twin
for task in (sys.argv[2].split(",") if sys.argv[2] else TWINS): make_twin(task, Path(sys.argv[1]))' \
    "$OUT/twins" "$TASKS"
  SELECTOR="$OUT/twins"
elif [ "$TRIM" = 1 ]; then  # (the same files each time: their layers are kept)
  rm -rf "$OUT/trimmed"
  $PY -c 'import sys; from pathlib import Path; from harness.gpus.twins import make_trimmed
for task in sys.argv[2].split(","): make_trimmed(task, Path(sys.argv[1]))' "$OUT/trimmed" "${TASKS:?--trim needs --tasks}"
  SELECTOR="$OUT/trimmed"
fi
SELECT=("tasks.selector=$SELECTOR") PICK=(--selector "$SELECTOR")
if [ -n "$TASKS" ]; then SELECT+=("tasks.ids=[$TASKS]"); PICK+=(--tasks "$TASKS"); fi

probe() {
  local seen why
  # (one import of torch: on a GPU host it takes seconds of the call's few minutes)
  seen=$($PY -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available()
else "", sep="|")' 2>/dev/null) \
    || { echo "probe: the check's venv has no torch: give --python the interpreter that has it"; return 1; }
  if [ -n "${seen#*|}" ]; then
    echo "probe: torch ${seen%%|*} sees ${seen#*|}"
    $PY tools/gpu_sync_probe.py --reps 100 | sed 's/^/probe: /'  # (what gpukit's synchronize costs short kernels)
  else
    echo "probe: torch ${seen%%|*} sees no GPU here$([ "$CPU" = 1 ] \
      && echo ": a rehearsal on the CPU twins" || echo ": the GPU tasks are skipped")"
  fi
  if [ "$PROVIDER" = bwrap ]; then
    why=$($PY -c 'from harness.sandbox.bwrap import binary; binary.usable()' 2>&1) \
      || { echo "probe: no sandbox can start here ($(tail -1 <<<"$why"))"; return 1; }
    echo "probe: over the host, $($PY -c 'from harness.sandbox.hostextras import describe_for_check
print(describe_for_check())')"
    $PY tools/gpu_check.py sandbox || return 1  # (one line either way)
  elif [ "$PROVIDER" = unsandboxed ]; then
    echo "probe: no sandbox: each state runs as plain processes of this host, $($PY -c 'from harness.sandbox.hostextras import describe_for_check
print(describe_for_check())')"
  fi
}
part probe probe

run() {  # run NAME MODEL: one runner run; prints its Opt@1
  local name="$1" model="$2"
  rm -rf "$OUT/runs/$name"
  $PY -m runner "${SELECT[@]}" "model=$model" scaffold=mini_swe rollouts=2 "grading.rounds=$ROUNDS" \
    "output_root=$OUT" "name=$name" "${SANDBOX[@]}" >"$OUT/$name.log" 2>&1 \
    || { echo "$name: the run failed, see $OUT/$name.log" >&2; return 1; }
  $PY tools/gpu_check.py opt "$OUT/runs/$name/report.json" "$name"
}
part oracle run gpu-oracle oracle
part noop run gpu-noop noop
part weaker run gpu-weaker oracle_weaker
part gold $PY tools/gpu_check.py gold --provider "$PROVIDER" --rounds "$ROUNDS" --regrades "$REGRADES" "${PICK[@]}"
part hacks $PY tools/gpu_check.py hacks --provider "$PROVIDER" --rounds "$ROUNDS" "${PICK[@]}"
if command -v nvidia-smi >/dev/null; then
  echo "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), provider $PROVIDER"
else
  echo "machine: no NVIDIA driver (nvidia-smi absent), provider $PROVIDER"
fi

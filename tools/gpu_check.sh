#!/usr/bin/env bash
# The GPU checks, in parts, on a machine with an NVIDIA GPU: the GPU task family (tasks=gpu) run by the
# oracle, the no-op and the weaker oracle, the gold patches regraded, the hack fixtures graded beside the
# gold and weaker patches. One line per figure, and one per part with its time.
#
#   tools/gpu_check.sh [--quick] [--tasks ID,..] [--parts P,..] [--rounds N] [--regrades N] [--selector S]
#                      [--wheels DIR] [--python PY] [--provider docker|bwrap] [--out DIR] [--again]
#
# --parts     of install, probe, oracle, noop, weaker, gold, hacks (default all, in that order):
#             install  the check's venv (tools/gpu_venv.sh)    probe  torch, the GPU, a host sandbox's view
#             oracle, noop, weaker  one run each (rollouts=2): Opt@1
#             gold     the gold patches regraded --regrades times: hm against the expert, its CV
#             hacks    the hack fixtures (tests/fixtures/hacks/<task>/) in one session with the gold and weaker
#                      patches; the gold's CV there comes from that session's per-round paired ratios
# --quick     one call's worth (8 minutes on one H100): --tasks softmax_fused --parts
#             install,probe,oracle,noop,hacks --rounds 3 (the gold's CV read from the hacks session)
# --tasks     a subset of the selector's tasks; --selector: what tasks= selects (default gpu)
# --wheels    install the project from a folder of wheels (make gpu-wheels; no package index needed)
# --python    the interpreter with torch (default: the first python3 on PATH that imports torch); it is
#             also what python3 is in the sandboxes over the host (OPTRUNNER_HOST_PYTHON)
# --provider  docker where `docker info` answers, else bwrap over the host's own system (sandbox.rootfs=host)
# --out       where the runs and each part's line go (default /tmp/optrunner-gpu-check). A part whose line
#             is there is not run again (a check cut short goes on where it stopped) unless --again.
# Targets: Opt@1 1.000 (oracle), 0.000 (noop); gold hm against the expert with a CV <= 1% with the SM clock
# locked, <= 2% without; every hack credited with nothing, the gold and weaker patches passed.
set -euo pipefail
cd "$(dirname "$0")/.."

WHEELS="" HOST_PY="" PROVIDER="" OUT="/tmp/optrunner-gpu-check" ROUNDS=5 REGRADES=3 TASKS="" SELECTOR=gpu
PARTS="install,probe,oracle,noop,weaker,gold,hacks" AGAIN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) TASKS="softmax_fused" PARTS="install,probe,oracle,noop,hacks" ROUNDS=3; shift ;;
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
  *) echo "gpu_check: --provider is docker or bwrap, got $PROVIDER" >&2; exit 2 ;;
esac
mkdir -p "$OUT/lines"
PY=.gpu-venv/bin/python
SELECT=("tasks.selector=$SELECTOR") PICK=(--selector "$SELECTOR")
if [ -n "$TASKS" ]; then SELECT+=("tasks.ids=[$TASKS]"); PICK+=(--tasks "$TASKS"); fi

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
  tools/gpu_venv.sh ${WHEELS:+--wheels "$WHEELS"} ${HOST_PY:+--python "$HOST_PY"} >/dev/null
  echo "install: .gpu-venv from ${HOST_PY:-the first python3 with torch}$([ -n "$WHEELS" ] && echo ", wheels of $WHEELS")"
}
part install install
[ -x "$PY" ] || { echo "gpu_check: no .gpu-venv: run the install part" >&2; exit 2; }
# what python3 is in the sandboxes over the host: the interpreter the check's venv was made from
export OPTRUNNER_HOST_PYTHON="${HOST_PY:-$(cat .gpu-venv/host-python 2>/dev/null)}"
[ -n "$OPTRUNNER_HOST_PYTHON" ] || unset OPTRUNNER_HOST_PYTHON

probe() {
  $PY -c 'import torch' 2>/dev/null \
    || { echo "probe: the check's venv has no torch: give --python the interpreter that has it"; return 1; }
  local gpu
  gpu=$($PY -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)
  if [ -n "$gpu" ]; then
    echo "probe: torch $($PY -c 'import torch; print(torch.__version__)') sees $gpu"
  else
    echo "probe: torch sees no GPU here: the GPU tasks are skipped (GPU-only parts report nothing)"
  fi
  if [ "$PROVIDER" = bwrap ]; then
    $PY -c 'from harness.sandbox.bwrap import binary; binary.usable()' 2>/dev/null \
      || { echo "probe: no sandbox can start here ($($PY -c 'from harness.sandbox.bwrap import binary
binary.usable()' 2>&1 | tail -1))"; return 1; }
    echo "probe: over the host, $($PY -c 'from harness.sandbox.bwrap.hostextras import describe_for_check
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

#!/usr/bin/env bash
# The GPU check's own venv: made from the host's interpreter, seeing that interpreter's packages (torch,
# numpy, triton, CUDA's Python parts), with this project installed into it from a folder of wheels
# (tools/gpu_wheels.sh) or, without one, from the package index. Prints the venv's python last.
#
#   tools/gpu_venv.sh [--python PY] [--wheels DIR] [--dir DIR]
#
# --python  the interpreter whose packages the checks use (default: the first python3 on PATH that imports
#           torch, else the first python3). It may itself be a venv, as on the GPU host we borrow
#           (/opt/torch/.venv): `venv --system-site-packages` made from a venv sees the *base* interpreter's
#           packages, not the venv's, so a .pth file in the new venv names the interpreter's own
#           site-packages as well.
# --dir     where the venv goes (default .gpu-venv, made anew)
set -euo pipefail
cd "$(dirname "$0")/.."

HOST_PY="" WHEELS="" DIR=".gpu-venv"
while [ $# -gt 0 ]; do
  case "$1" in
    --python) HOST_PY="$2"; shift 2 ;;
    --wheels) WHEELS="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    *) echo "gpu_venv: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [ -z "$HOST_PY" ]; then
  IFS=: read -ra FOLDERS <<<"$PATH"
  for folder in "${FOLDERS[@]}"; do
    if [ -x "$folder/python3" ] && "$folder/python3" -c 'import torch' 2>/dev/null; then
      HOST_PY="$folder/python3"; break
    fi
  done
  HOST_PY="${HOST_PY:-$(command -v python3)}"
fi
# (started by the path as found, never resolved: a venv is recognised by the path its python runs from)
[ -x "$HOST_PY" ] || { echo "gpu_venv: no interpreter at $HOST_PY (--python)" >&2; exit 2; }

rm -rf "$DIR"
# `venv` puts pip in with ensurepip, which a host may lack (Ubuntu's python3-venv not installed): then a
# venv without pip, and pip from the venv's view of the host's packages, the host's own pip (--python), or
# a pip wheel in the wheel folder
if ! "$HOST_PY" -m venv --system-site-packages "$DIR" 2>"$DIR.log"; then
  echo "gpu_venv: $HOST_PY -m venv failed ($(tail -1 "$DIR.log")); making it without pip" >&2
  rm -rf "$DIR"
  "$HOST_PY" -m venv --system-site-packages --without-pip "$DIR"
fi
rm -f "$DIR.log"
PY="$DIR/bin/python"
echo "$HOST_PY" >"$DIR/host-python"  # (gpu_check.sh: python3 in the sandboxes over the host)
pip() {
  if "$PY" -m pip --version >/dev/null 2>&1; then "$PY" -m pip "$@"
  elif "$HOST_PY" -m pip --version >/dev/null 2>&1; then "$HOST_PY" -m pip --python "$PY" "$@"  # (pip >= 22.3)
  elif [ -n "$WHEELS" ] && ls "$WHEELS"/pip-*.whl >/dev/null 2>&1; then
    "$PY" "$(ls "$WHEELS"/pip-*.whl | head -1)/pip" "$@"  # (a pip wheel runs from the wheel itself)
  else
    echo "gpu_venv: no pip for $PY: the host's python has none and $WHEELS has no pip wheel" >&2; exit 2
  fi
}
"$HOST_PY" -c 'import site; print("\n".join(site.getsitepackages()))' \
  >"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/optrunner-host.pth"
if [ -n "$WHEELS" ]; then
  # (every wheel of the folder, without resolving: it leaves out what the host has, tools/gpu_wheels.sh)
  pip install -q --no-index --no-deps "$WHEELS"/*.whl
else
  pip install -q -e ".[gpu,bwrap]"
fi
echo "$PY"

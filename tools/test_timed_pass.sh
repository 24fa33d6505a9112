#!/usr/bin/env bash
# make test's second pass: the `timed` tests, one at a time, and beside them the tests that need no Docker
# engine and time nothing, on CPU 0 at the lowest priority.
#
# Why beside: a timed test's timing runs share the last CPU (harness.grader.config.timing_cpuset), so on two
# cores CPU 0 sat idle through most of the pass (59% of both CPUs busy over its 329 s); the engine-less tests
# (~1,100 of them, ~225 s of one CPU) fit in that idle time instead of adding to the first pass. Nice 19
# gives any work of the timed tests' own, which may run on either CPU, the CPU first; measured: the timed
# pass took 321 s with them beside it and 329 s without, every verdict the same. Their output comes after
# the timed tests' own, and either failing fails the pass.
#
# Kept out of the tests beside: `docker` (containers run outside this nice level and CPU), `timing_cpu`
# (sandboxes over the host that pin their timing runs to the timed tests' CPU). No engine is reachable from
# them (DOCKER_HOST names no socket), so a test that starts a container and lacks the `docker` marker fails
# here instead of starting one beside the timed tests. With one CPU the two run one after the other.
#
# Usage: tools/test_timed_pass.sh PYTHON
set -uo pipefail
PY=${1:?usage: tools/test_timed_pass.sh PYTHON}
TIMED=(-m "timed and not slow")
BESIDE=(-m "not docker and not timed and not slow and not timing_cpu")

if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null; then
  "$PY" -m pytest -q "${TIMED[@]}"; timed=$?
  "$PY" -m pytest -q "${BESIDE[@]}"; beside=$?
  exit $(( timed != 0 || beside != 0 ))
fi

log=$(mktemp "${TMPDIR:-/tmp}/optrunner-beside.XXXXXX")
# Both run in the background, each in a process group of its own with Ctrl-C's default action, so that a
# signal to this script reaches each whole at once (a foreground command would hold a trap back until it ended).
set -m
DOCKER_HOST=unix:///nonexistent/docker.sock taskset -c 0 nice -n 19 "$PY" -m pytest -q "${BESIDE[@]}" \
  > "$log" 2>&1 &
beside_pid=$!
"$PY" -m pytest -q "${TIMED[@]}" &
timed_pid=$!
set +m
stop() {  # as Ctrl-C would: each pytest tears its fixtures down (their sandboxes removed), then exits
  kill -INT -- -"$timed_pid" -"$beside_pid" 2>/dev/null
  wait
  kill -KILL -- -"$timed_pid" -"$beside_pid" 2>/dev/null  # (whatever a test started and left)
  rm -f "$log"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

wait "$timed_pid"; timed=$?
wait "$beside_pid"; beside=$?
trap - INT TERM
echo "--- beside the timed tests, on CPU 0 at nice 19: $PY -m pytest -q ${BESIDE[*]}"
cat "$log"; rm -f "$log"
exit $(( timed != 0 || beside != 0 ))

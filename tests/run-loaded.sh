#!/usr/bin/env bash
# Runs the test runner (tests/run-all.sh, as `make test` does) while LOAD CPU-bound busy loops (default 2)
# run beside it: a test whose outcome depends on the machine being idle fails here.  `make test-loaded`
# calls it; `make test-loaded LOAD=4` runs four loops.
#   LOAD=N        busy loops beside the runner (0: none)
#   RUNNER=CMD    the runner to load (default tests/run-all.sh), e.g. RUNNER="tests/run-py-tests.sh" for one stage
# Prints the load averages (1, 5, 15 min) and the time at the start and at the end; exits with the runner's status.
# The loops are killed on exit (a trap), and each one also stops by itself within a second once this script is
# gone (it checks its parent), so none is left running even if the script is killed outright.
set -u
cd "$(dirname "$0")/.."
load=${LOAD:-2}
runner=${RUNNER:-tests/run-all.sh}
case $load in ''|*[!0-9]*) echo "run-loaded: LOAD must be a number of busy loops, not '$load'" >&2; exit 2;; esac

loops=() runner_pid=
stop_loops() {
  [ ${#loops[@]} -gt 0 ] && kill "${loops[@]}" 2>/dev/null
  [ ${#loops[@]} -gt 0 ] && wait "${loops[@]}" 2>/dev/null
  loops=()
}
stop_runner() { [ -n "$runner_pid" ] && kill -TERM "$runner_pid" 2>/dev/null; }
trap stop_loops EXIT
trap 'stop_runner; exit 130' INT
trap 'stop_runner; exit 143' TERM
for _ in $(seq 1 "$load"); do
  # CPU-bound: 100,000 shell iterations between checks that this script is still there
  sh -c 'while :; do i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; kill -0 "$1" 2>/dev/null || exit 0; done' \
    busy-loop $$ &
  loops+=($!)
done

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime; }
t0=$(date +%s)
echo "run-loaded: $load busy loops beside '$runner'; load averages at start: $(loadavg)"
bash -c "$runner" &        # in the background, so that a signal to this script is handled at once
runner_pid=$!
wait "$runner_pid"
rc=$?
runner_pid=
echo "run-loaded: '$runner' exited $rc after $(( $(date +%s) - t0 )) s beside $load busy loops; load averages at end: $(loadavg)"
exit $rc

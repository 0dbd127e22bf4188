#!/usr/bin/env bash
# Runs the Python client's tests (clients/python/tests, pytest) against real herd-server processes that
# the fixtures start (build/herd-server, or $HERD_SERVER_BIN: `make` builds it), then the examples' quick modes.
# Prints pytest's summary line and one line per example; exits non-zero on any failure.
# Called by `make test` (target test-py) from the repository root.
#
# The package is found through PYTHONPATH=clients/python (nothing is installed).  The trainer-adapter tests
# need gymnasium, stable_baselines3, rsl_rl and torch: installed ones are used; when gymnasium is not
# installed, the source copies of $HERD_THIRD_PARTY (default: a shared/third_party/python folder beside
# the repository or its worktree parent) go on PYTHONPATH.  Tests whose library is missing are skipped
# with the reason printed.  test_rsl_rl.py runs a second time with rsl_rl 2.3.3 first on PYTHONPATH
# ($HERD_RSL_RL2, default: the python-rsl_rl-2.3.3 folder beside that python folder), since one process
# imports one rsl_rl.
#
#   tests/run-py-tests.sh                 # every test, then the examples' quick modes
#   tests/run-py-tests.sh -k rsl_rl       # arguments go to pytest (both passes); the examples are not run
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3                       # Debian's python3 sees python3-zmq / -msgpack / -numpy / -pytest
[ -x "$PY" ] || PY=python3
export PYTHONDONTWRITEBYTECODE=1          # no __pycache__ in the source tree (nor in third_party)
export PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}"
rc=0
if ! "$PY" -c 'import zmq, msgpack, numpy, pytest' 2>/dev/null; then
  echo "py-tests: FAILED: $PY lacks pyzmq / msgpack / numpy / pytest (deploy/install-deps.sh installs them)"
  exit 1
fi
if ! "$PY" -c 'import gymnasium' 2>/dev/null; then
  tp=${HERD_THIRD_PARTY:-}
  if [ -z "$tp" ]; then
    for d in ../shared/third_party/python ../../shared/third_party/python; do
      [ -d "$d/gymnasium" ] && { tp=$(cd "$d" && pwd); break; }
    done
  fi
  if [ -n "$tp" ] && [ -d "$tp" ]; then
    export PYTHONPATH="$PYTHONPATH:$tp"
    echo "py-tests: gymnasium / stable_baselines3 / rsl_rl from $tp"
  fi
fi
sums=$(mktemp); out=$(mktemp)
trap 'rm -f "$sums" "$out"' EXIT
tally() { # the "N passed / failed / skipped" figures of the pytest summary in $out, appended to $sums
  tail -n 1 "$out" | grep -oE '[0-9]+ (passed|failed|skipped|error|errors)' >> "$sums" || true
}
"$PY" -m pytest -p no:cacheprovider -q -rs clients/python/tests "$@" | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
tally

# rsl_rl 2.x: its own pass (exit 5: the arguments selected no test of that file)
rsl2=${HERD_RSL_RL2:-}
[ -z "$rsl2" ] && [ -n "${tp:-}" ] && [ -d "$tp/../python-rsl_rl-2.3.3/rsl_rl" ] && rsl2=$(cd "$tp/../python-rsl_rl-2.3.3" && pwd)
if [ -n "$rsl2" ] && [ -d "$rsl2/rsl_rl" ]; then
  echo "py-tests: rsl_rl 2.x pass, rsl_rl from $rsl2"
  PYTHONPATH="$rsl2:$PYTHONPATH" "$PY" -m pytest -p no:cacheprovider -q -rs clients/python/tests/test_rsl_rl.py "$@" |
    tee "$out"
  r=${PIPESTATUS[0]}; [ $r -eq 0 ] || [ $r -eq 5 ] || rc=1
  tally
else
  echo "SKIPPED: the rsl_rl 2.x pass (no rsl_rl 2.3.3 copy: set HERD_RSL_RL2)"
fi
# both passes in one line (tests/run-all.sh counts the last "N passed, N failed, N skipped" line)
total() { awk -v w="$1" '$2 ~ "^"w {n += $1} END {print n + 0}' "$sums"; }
echo "py-tests: pytest, both passes: $(total passed) passed, $(( $(total failed) + $(total error) )) failed, $(total skipped) skipped"
if [ $# -gt 0 ]; then
  [ $rc -eq 0 ] && echo "py-tests: all passed (pytest arguments given: examples not run)" || echo "py-tests: FAILED"
  exit $rc
fi

example() { # name, command...: runs an example; prints "name: ok" (with its N steps/s, if it prints one)
  local name=$1 out r rate; shift
  out=$("$@" 2>&1); r=$?
  if [ $r -eq 0 ]; then
    rate=$(printf '%s\n' "$out" | grep -Eo '[0-9]+ steps/s' | tail -n1)
    echo "$name: ok${rate:+ ($rate)}"
  else
    printf '%s\n' "$out" | tail -n 20; echo "$name: FAILED"; rc=1
  fi
}
# examples: the random-policy script always, the PPO quick modes when PyTorch (and gymnasium) are importable
example "examples/random_policy.py" "$PY" examples/random_policy.py --num-envs 256 --steps 20
if "$PY" -c 'import torch' 2>/dev/null; then
  tmp="${TMPDIR:-/tmp}/herd-ppo-quick-$$"
  example "examples/ppo_stand.py --quick" "$PY" examples/ppo_stand.py --quick --out "$tmp"
  rm -rf "$tmp"
  if "$PY" -c 'import gymnasium' 2>/dev/null; then
    example "examples/cleanrl_ppo.py --quick" "$PY" examples/cleanrl_ppo.py --quick
  else
    echo "SKIPPED: examples/cleanrl_ppo.py --quick (gymnasium not installed)"
  fi
else
  echo "SKIPPED: examples/ppo_stand.py --quick, examples/cleanrl_ppo.py --quick (PyTorch not installed: apt-get install python3-torch)"
fi
[ $rc -eq 0 ] && echo "py-tests: all passed" || echo "py-tests: FAILED"
exit $rc

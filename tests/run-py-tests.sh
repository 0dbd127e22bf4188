#!/usr/bin/env bash
# Runs the Python client's tests (clients/python/tests, pytest) against real herd-server processes that
# the fixtures start (build/herd-server must be built: `make` does it), then the examples' quick modes.
# Prints pytest's summary line and one line per example; exits non-zero on any failure.
# Called by `make test` (target test-py) from the repository root.
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3                       # Debian's python3 sees python3-zmq / -msgpack / -numpy / -pytest
[ -x "$PY" ] || PY=python3
export PYTHONDONTWRITEBYTECODE=1          # no __pycache__ in the source tree
rc=0
if ! "$PY" -c 'import zmq, msgpack, numpy, pytest' 2>/dev/null; then
  echo "py-tests: FAILED: $PY lacks pyzmq / msgpack / numpy / pytest (deploy/install-deps.sh installs them)"
  exit 1
fi
"$PY" -m pytest -p no:cacheprovider -q -rs clients/python/tests || rc=1

# examples: the random-policy script always, the PPO quick mode when PyTorch is installed
out=$("$PY" examples/random_policy.py --num-envs 256 --steps 20 2>&1); r=$?
if [ $r -eq 0 ]; then
  echo "examples/random_policy.py: ok ($(printf '%s\n' "$out" | grep -Eo '[0-9]+ steps/s' | tail -n1))"
else
  printf '%s\n' "$out" | tail -n 20; echo "examples/random_policy.py: FAILED"; rc=1
fi
if "$PY" -c 'import torch' 2>/dev/null; then
  out=$("$PY" examples/ppo_stand.py --quick --out "${TMPDIR:-/tmp}/herd-ppo-quick-$$" 2>&1); r=$?
  rm -rf "${TMPDIR:-/tmp}/herd-ppo-quick-$$"
  if [ $r -eq 0 ]; then
    echo "examples/ppo_stand.py --quick: ok"
  else
    printf '%s\n' "$out" | tail -n 20; echo "examples/ppo_stand.py --quick: FAILED"; rc=1
  fi
else
  echo "SKIPPED: examples/ppo_stand.py --quick (PyTorch not installed: apt-get install python3-torch)"
fi
[ $rc -eq 0 ] && echo "py-tests: all passed" || echo "py-tests: FAILED"
exit $rc

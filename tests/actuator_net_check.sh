#!/usr/bin/env bash
# The PyTorch side of the actuator network's tests: the committed weights (envs/models/anydrive_v3_lstm.txt) are
# the conversion of legged_gym's TorchScript archive, and the C test's reference sequences
# (tests/testdata/actuator_net_ref.txt, and actuator_net_ref_f32.txt for the float step) are what that module
# computes in double (and single) precision.
# The archive: $ACTUATOR_PT, else anydrive_v3_lstm.pt in a shared/reference/anydrive_actuator_net folder beside the
# repository or its worktree parent.  Skipped with a visible message where PyTorch or the archive is absent.
# Prints "actuator-net: N passed, M failed"; exits non-zero on a failure.  Called by tests/run-all.sh.
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
pt=${ACTUATOR_PT:-}
if [ -z "$pt" ]; then
  for d in ../shared/reference/anydrive_actuator_net ../../shared/reference/anydrive_actuator_net; do
    [ -f "$d/anydrive_v3_lstm.pt" ] && { pt="$d/anydrive_v3_lstm.pt"; break; }
  done
fi
if [ -z "$pt" ] || [ ! -f "$pt" ]; then echo "actuator-net: SKIPPED: no anydrive_v3_lstm.pt (set ACTUATOR_PT)"; exit 0; fi
if ! "$PY" -c 'import torch' 2>/dev/null; then echo "actuator-net: SKIPPED: $PY lacks torch (python3-torch)"; exit 0; fi
pass=0; fail=0
for cmd in "envs/models/tools/convert_actuator_net.py" "tests/testdata/actuator_net_ref.py"; do
  if PYTHONDONTWRITEBYTECODE=1 "$PY" "$cmd" "$pt" --check; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "actuator-net: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# Every test of the project, as `make test` runs it (and CI through .ci/run):
#   1. the C suite (Criterion), optimized build
#   2. the same C suite under ASan + UBSan (build/san)
#      and the golden per-step hashes from an x86-64-v2 build (make test-bits: the same bits on any x86-64 CPU),
#      and the C suite from a build without MuJoCo and without AVX-512 (make test-no-mujoco: the peer tests
#      skipped and counted; on an AVX-512 machine the suite on an x86-64-v3 build)
#   3. the Python client suite (pytest, against a real server), when present; the actuator network's data
#      against legged_gym's TorchScript archive (tests/actuator_net_check.sh), where PyTorch and the archive are
#   4. the Julia client suite (skipped with a visible message where julia is absent), the browser viewer
#      in headless Chromium (tests/viewer)
#   5. the container test (buildah) and the multi-server test, when present
#   6. operations (make run, metrics scraped by Prometheus, herd.stats), Slurm scripts with a fake srun,
#      Kubernetes manifests (with kubectl kustomize when present)
#   7. the server under valgrind (make test-valgrind: server/tools/valgrind_check.sh on the build of 2 without
#      MuJoCo; every op, expiry, SIGTERM; no error, no leak)
#   8. a short fuzzing pass (fuzz/run.sh --short: every libFuzzer target for FUZZ_SECONDS, default 45 s,
#      after replaying its regression cases; skipped with a visible message where clang-14 is absent)
# Prints one line per stage (with its wall time) and a final "tests: N passed, N failed, N skipped" line (skips: the last "N skipped" a
# stage prints, e.g. the C suite's MuJoCo comparisons in a build without MuJoCo); exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
start=$(date +%s)
total_pass=0; total_fail=0; total_skip=0; failed_stages=()
count() { # stage name, log file, exit code: picks the last "N passed ... N failed" (and "N skipped") figures of the log
  local name=$1 log=$2 rc=$3 secs=$4 p f s
  p=$(grep -oE '[0-9]+ passed' "$log" | tail -n1 | grep -oE '[0-9]+' || true)
  f=$(grep -oE '[0-9]+ failed' "$log" | tail -n1 | grep -oE '[0-9]+' || true)
  s=$(grep -oE '[0-9]+ skipped' "$log" | tail -n1 | grep -oE '[0-9]+' || true)
  p=${p:-0}; f=${f:-0}; s=${s:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
  [ "$rc" -ne 0 ] && failed_stages+=("$name")
  printf '== %-22s %5d passed, %d failed, %d skipped, %4d s%s\n' "$name" "$p" "$f" "$s" "$secs" "$([ "$rc" -ne 0 ] && echo '   <-- FAILED')"
}
run() { # stage name, command...
  local name=$1; shift
  local log; log=$(mktemp)
  echo "-- $name: $*"
  local t0; t0=$(date +%s)
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  count "$name" "$log" "$rc" "$(( $(date +%s) - t0 ))"
  rm -f "$log"
}

run "c" tests/run-c-tests.sh build/tests/test_*
run "c-sanitizers" make --no-print-directory sanitize
run "layers" tests/layers.sh
run "bits-v2" make --no-print-directory test-bits
run "c-no-mujoco" make --no-print-directory test-no-mujoco
run "comments" /usr/bin/python3 tests/comments.py
run "docs-figures" /usr/bin/python3 docs/figures.py --check
run "solver-report" /usr/bin/python3 tests/solver_report_test.py
run "actuator-net" tests/actuator_net_check.sh
[ -d clients/python/tests ] && run "python" tests/run-py-tests.sh
[ -d clients/julia/test ] && run "julia" tests/run-jl-tests.sh
[ -x tests/viewer/run.sh ] && run "viewer" tests/viewer/run.sh
[ -x tests/multiserver/run.sh ] && run "multi-server" tests/multiserver/run.sh
[ -x tests/container/run.sh ] && run "container" tests/container/run.sh
[ -x tests/ops/run.sh ] && run "ops" tests/ops/run.sh
[ -x tests/slurm/run.sh ] && run "slurm" tests/slurm/run.sh
run "k8s-manifests" env PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 tests/deploy/k8s_test.py
run "valgrind" make --no-print-directory test-valgrind
[ -x fuzz/run.sh ] && run "fuzz" fuzz/run.sh --short --time "${FUZZ_SECONDS:-45}"

echo
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "stages took $(( $(date +%s) - start )) s"
echo "tests: $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]

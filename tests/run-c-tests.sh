#!/usr/bin/env bash
# Runs every Criterion test binary from the repository root and prints one summary line.
# Usage: tests/run-c-tests.sh build/tests/test_*   (exit 1 if any test failed or crashed)
# Skipped tests (cr_skip_test, e.g. the MuJoCo comparisons of a build without MuJoCo, or .disabled) are listed with
# their message and counted apart: Criterion's own summary leaves them out. Each binary's line ends with its wall time.
set -u
[ $# -gt 0 ] || { echo "usage: $0 build/tests/test_* (the test binaries to run)" >&2; exit 2; }
pass=0; fail=0; skip=0; bad=()
for t in "$@"; do
  if [ ! -x "$t" ]; then # e.g. an unexpanded build/tests/test_* before the first build
    echo "  $t: no such test binary (build the tests first: make all, or run make test)"
    fail=$((fail + 1)); bad+=("$t"); continue
  fi
  t0=$(date +%s)
  out=$("$t" --jobs 2 --ascii --verbose 2>&1); rc=$?
  dt=$(( $(date +%s) - t0 ))
  syn=$(printf '%s\n' "$out" | grep -E 'Synthesis: Tested' | tail -n1)
  p=$(printf '%s' "$syn" | sed -nE 's/.*Passing: ([0-9]+).*/\1/p')
  f=$(printf '%s' "$syn" | sed -nE 's/.*Failing: ([0-9]+).*/\1/p')
  c=$(printf '%s' "$syn" | sed -nE 's/.*Crashing: ([0-9]+).*/\1/p')
  p=${p:-0}; f=${f:-0}; c=${c:-0}
  skipped=$(printf '%s\n' "$out" | grep -E '^\[SKIP\] ' || true)
  k=0; [ -n "$skipped" ] && k=$(printf '%s\n' "$skipped" | wc -l)
  if [ "$rc" -ne 0 ] || [ -z "$syn" ]; then
    # the failures with their assertion messages (Criterion prints them as "[----]" lines from "Assertion Failed"
    # to the test's [FAIL] line), without the passing tests' lines and their logs
    printf '%s\n' "$out" | awk '/^\[----\] .*(Assertion Failed|Unexpected signal|Timed out)/ { keep = 1 }
        /^\[FAIL\]|^\[CRASH\]/ { keep = 0; print; next }
        /^\[----\]/ { if (keep) print; next }
        /^\[RUN |^\[PASS\]|^\[SKIP\] |^\[====\] Running/ { next }
        { print }' | tail -n 60
    [ "$f" -eq 0 ] && [ "$c" -eq 0 ] && f=1
    bad+=("$(basename "$t")")
  fi
  printf '  %-28s %3d passed, %d failed%s (%d s)\n' "$(basename "$t")" "$p" "$((f + c))" "$([ "$k" -gt 0 ] && echo ", $k skipped")" "$dt"
  [ -n "$skipped" ] && printf '%s\n' "$skipped" | sed 's/^/      /'
  pass=$((pass + p)); fail=$((fail + f + c)); skip=$((skip + k))
done
[ ${#bad[@]} -gt 0 ] && echo "failing: ${bad[*]}"
echo "c-tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

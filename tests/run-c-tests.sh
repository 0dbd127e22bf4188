#!/usr/bin/env bash
# Runs every Criterion test binary from the repository root and prints one summary line.
# Usage: tests/run-c-tests.sh build/tests/test_*   (exit 1 if any test failed or crashed)
set -u
pass=0; fail=0; bad=()
for t in "$@"; do
  out=$("$t" --jobs 2 --ascii 2>&1); rc=$?
  syn=$(printf '%s\n' "$out" | grep -E 'Synthesis: Tested' | tail -n1)
  p=$(printf '%s' "$syn" | sed -nE 's/.*Passing: ([0-9]+).*/\1/p')
  f=$(printf '%s' "$syn" | sed -nE 's/.*Failing: ([0-9]+).*/\1/p')
  c=$(printf '%s' "$syn" | sed -nE 's/.*Crashing: ([0-9]+).*/\1/p')
  p=${p:-0}; f=${f:-0}; c=${c:-0}
  if [ "$rc" -ne 0 ] || [ -z "$syn" ]; then
    printf '%s\n' "$out" | grep -vE '^\[----\]|^\[RUN |^\[PASS\]' | tail -n 40
    [ "$f" -eq 0 ] && [ "$c" -eq 0 ] && f=1
    bad+=("$(basename "$t")")
  fi
  printf '  %-28s %3d passed, %d failed\n' "$(basename "$t")" "$p" "$((f + c))"
  pass=$((pass + p)); fail=$((fail + f + c))
done
[ ${#bad[@]} -gt 0 ] && echo "failing: ${bad[*]}"
echo "c-tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# Runs herd's libFuzzer targets (fuzz/README.md).
#
#   fuzz/run.sh [--target T]... [--time S] [--runs N] [--short] [--no-build]
#
#   --target T   request, reply, urdf or config (repeatable; default: all four)
#   --time S     seconds per target (default 1200; --short: 45)
#   --runs N     stop a target after N executions (libFuzzer -runs), whichever comes first with --time
#   --short      what `make test` runs: every target for --time seconds (45 by default)
#   --no-build   use the binaries already in build/fuzz
#
# Per target: builds the seed corpus (fuzz/make_corpus.py, into build/fuzz/corpus/<target>, which keeps
# growing across runs), replays the regression cases (fuzz/regressions/<target>/), then fuzzes.  A crash,
# timeout (10 s per input), leak, out-of-memory or sanitizer report fails the target; libFuzzer writes the
# input to build/fuzz/artifacts/<target>/ — copy it to fuzz/regressions/<target>/ once fixed.
# Prints one line per target, one JSON line per target (also appended to build/fuzz/stats.jsonl) and a
# final "fuzz: N passed, M failed"; exits 1 if anything failed.
set -u
cd "$(dirname "$0")/.."
targets=(); secs=""; runs=-1; short=0; build=1
while [ $# -gt 0 ]; do
  case $1 in
    --target) targets+=("$2"); shift 2 ;;
    --time) secs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --short) short=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fuzz/run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(request reply urdf config)
[ -z "$secs" ] && { [ $short -eq 1 ] && secs=45 || secs=1200; }
FB=build/fuzz
pass=0; fail=0

if ! command -v "${FUZZ_CC:-clang-14}" >/dev/null 2>&1; then
  echo "fuzz: skipped: ${FUZZ_CC:-clang-14} is not installed (deploy/install-deps.sh installs it)"
  echo "fuzz: 0 passed, 0 failed"
  exit 0
fi
if [ $build -eq 1 ]; then
  mkdir -p $FB
  if ! nice make --no-print-directory fuzz > $FB/build.log 2>&1; then
    tail -n 30 $FB/build.log
    echo "fuzz: build failed (log: $FB/build.log)"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
  fi
fi
/usr/bin/python3 fuzz/make_corpus.py $FB/corpus || { echo "fuzz: cannot build the corpus"; echo "fuzz: 0 passed, 1 failed"; exit 1; }

for t in "${targets[@]}"; do
  bin=$FB/fuzz_$t
  if [ ! -x "$bin" ]; then echo "  $t: no binary $bin"; fail=$((fail + 1)); continue; fi
  mkdir -p $FB/artifacts/$t $FB/logs
  # 1. the regression cases
  regs=(fuzz/regressions/$t/*)
  if [ -e "${regs[0]}" ]; then
    if "$bin" "${regs[@]}" > $FB/logs/$t-regressions.log 2>&1; then
      echo "  $t: ${#regs[@]} regression cases replayed: ok"; pass=$((pass + 1))
    else
      grep -E 'ERROR|SUMMARY|property failed|Running:' $FB/logs/$t-regressions.log | tail -n 8
      echo "  $t: regression cases FAILED (log: $FB/logs/$t-regressions.log)"; fail=$((fail + 1))
    fi
  fi
  # 2. fuzzing
  dict=(); [ -f fuzz/$t.dict ] && dict=(-dict=fuzz/$t.dict)
  log=$FB/logs/$t-$(date +%Y%m%d-%H%M%S).log
  start=$(date +%s.%N)
  nice "$bin" "${dict[@]}" -max_total_time="$secs" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix=$FB/artifacts/$t/ $FB/corpus/$t > "$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n1)
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -n1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n1 | grep -oE '[0-9]+')
  corp=$(ls $FB/corpus/$t | wc -l)
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
  execs=${execs:-0}; rate=${rate:-0}; cov=${cov:-0}
  if [ $rc -eq 0 ]; then result=ok; pass=$((pass + 1)); else
    result=FAILED; fail=$((fail + 1))
    grep -E 'ERROR|SUMMARY|property failed|runtime error|Test unit written' "$log" | tail -n 8
  fi
  printf '  %-8s %10s execs in %4s s (%6s exec/s), coverage %s, corpus %s: %s (log: %s)\n' \
    "$t" "$execs" "$wall" "$rate" "$cov" "$corp" "$result" "$log"
  json=$(printf '{"fuzz":"%s","execs":%s,"seconds":%s,"exec_per_s":%s,"coverage":%s,"corpus":%s,"result":"%s","date":"%s"}' \
    "$t" "$execs" "$wall" "$rate" "$cov" "$corp" "$result" "$(date -u +%FT%TZ)")
  echo "$json"; echo "$json" >> $FB/stats.jsonl
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]

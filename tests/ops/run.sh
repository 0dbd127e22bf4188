#!/usr/bin/env bash
# Operations test: what an operator relies on, against real processes on loopback.  Bounded (~1 min).
#
#   tests/ops/run.sh           # needs build/herd-server (make) and /usr/bin/python3 with numpy, zmq, msgpack
#
# Checks ("ok - ..." / "not ok - ...", then "N passed, M failed"):
#   make-run        HERD_BIND and HERD_THREADS given to `make run` reach the server (banner)
#   threads-source  without --threads the banner says where the worker count came from (quota or affinity)
#   readme-banner   the README's sample banner is, line for line, what that server printed
#                   (tests/ops/readme_banner.py: machine-dependent values compared by shape)
#   address-in-use  a second server on a taken port says which process holds it, exit non-zero
#   idle-stats      an idle server writes no periodic stats line; one that steps does
#   herd-stats      python3 -m herd.stats prints a live summary from the stats op
#   bench-help      herd-bench SUB --help prints help and runs nothing; --threads above the CPUs is warned about
#   bench-sweep-period  herd-bench env --sweep on anymal_c-rough sets terrain_column_period to the gcd of the counts
#   bench-profile-lockstep  herd-bench env --profile's lane efficiencies of a lock-step batched solve, and its bounds
#   prometheus      Debian's real Prometheus scrapes --metrics while a client steps; a PromQL query for every
#                   series of srv_metrics.h returns the value this workload implies (requests and errors by op and
#                   code, latency histogram and its median, sessions and worlds in use, steps/s, worker
#                   utilisation, queue depth, bytes in/out, physics resets, solver iterations, caps and
#                   fallbacks); skipped with a message when prometheus is not installed
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
[ -x "$BUILD/herd-server" ] || make -s "$BUILD/herd-server" || { echo "cannot build herd-server"; echo "0 passed, 1 failed"; exit 1; }
PY=/usr/bin/python3
export PYTHONPATH="$ROOT/clients/python${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d /tmp/herd-ops.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done; sleep 0.3; for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
passed=0; failed=0; skipped=0
ok()  { passed=$((passed + 1)); echo "ok - $*"; }
nok() { failed=$((failed + 1)); echo "not ok - $*"; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # file, pattern, seconds
  local i; for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1
}
steps() { # address, worlds, steps
  "$PY" - "$@" <<'PYEOF'
import sys, numpy as np, herd
addr, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with herd.make_vec("anymal_c-walk", n, address=addr, seed=0) as e:
    e.reset()
    for _ in range(k):
        e.step(np.zeros((n, e.act_dim), np.float32))
PYEOF
}

# 1. make run with HERD_* variables
port=$(free_port)
HERD_BIND=tcp://127.0.0.1:$port HERD_THREADS=1 setsid make --no-print-directory run >"$tmp/run.log" 2>&1 &
pids+=($!)
if wait_for "$tmp/run.log" "endpoint" 60 && grep -q "endpoint   tcp://127.0.0.1:$port" "$tmp/run.log" \
   && grep -q "threads    1 workers" "$tmp/run.log" && steps "tcp://127.0.0.1:$port" 4 2; then
  ok "make-run: HERD_BIND=tcp://127.0.0.1:$port HERD_THREADS=1 reached the server"
else
  nok "make-run"; tail -n 5 "$tmp/run.log"
fi

# 2. the banner names where the worker count came from
if "$BUILD/herd-server" --bind tcp://127.0.0.1:0 --log-level info --help >/dev/null 2>&1; then :; fi
port2=$(free_port)
"$BUILD/herd-server" --bind "tcp://127.0.0.1:$port2" --stats-interval 0.3 >"$tmp/s2.log" 2>&1 &
srv2=$!; pids+=($srv2)
if wait_for "$tmp/s2.log" "endpoint" 10 && grep -Eq "threads    [0-9]+ workers \+ 1 I/O thread \((cgroup quota|no cgroup quota|no cgroup cpu files)" "$tmp/s2.log"; then
  ok "threads-source: $(grep -o 'threads .*' "$tmp/s2.log")"
else
  nok "threads-source"; head -n 4 "$tmp/s2.log"
fi

# 2b. the README shows the banner the server prints
out=$("$PY" tests/ops/readme_banner.py README.md "$tmp/s2.log" 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "readme-banner: $out"; else nok "readme-banner (README.md, section Server):"; echo "$out"; fi

# 3. address in use
"$BUILD/herd-server" --bind "tcp://127.0.0.1:$port2" >"$tmp/dup.log" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "address already in use, held by pid $srv2 (herd-server)" "$tmp/dup.log"; then
  ok "address-in-use: $(tail -n1 "$tmp/dup.log")"
else
  nok "address-in-use (exit $rc)"; cat "$tmp/dup.log"
fi

# 4. idle stats line: none while idle (stats interval 0.3 s), one after steps
sleep 1.5
if grep -q "stats:" "$tmp/s2.log"; then nok "idle-stats: an idle server logged: $(grep stats: "$tmp/s2.log" | head -n1)"
else
  steps "tcp://127.0.0.1:$port2" 16 50
  if wait_for "$tmp/s2.log" "stats: [1-9]" 5; then ok "idle-stats: quiet while idle, then: $(grep -o 'stats: .*' "$tmp/s2.log" | head -n1)"
  else nok "idle-stats: no stats line after stepping"; tail -n 3 "$tmp/s2.log"; fi
fi

# 5. python3 -m herd.stats
out=$("$PY" -m herd.stats "tcp://127.0.0.1:$port2" --count 2 --interval 0.2 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(echo "$out" | grep -c "steps/s")" -eq 2 ] && echo "$out" | grep -q "steps 800"; then
  ok "herd-stats: $(echo "$out" | tail -n1 | tr -s ' ')"
else
  nok "herd-stats (exit $rc)"; echo "$out"
fi
out=$("$PY" -m herd.stats "tcp://127.0.0.1:1" --once --timeout 0.5 2>&1); rc=$?
if [ $rc -eq 3 ]; then ok "herd-stats: a silent server gives exit 3"; else nok "herd-stats silent server (exit $rc): $out"; fi

# 6. herd-bench SUB --help prints help instead of running; too many threads are warned about
hb=$BUILD/herd-bench
if [ -x "$hb" ]; then
  bad=""
  for sub in dynamics solver contact1 contact-models env server poses; do
    out=$(timeout 30 "$hb" $sub --help 2>&1); rc=$?
    { [ $rc -eq 0 ] && echo "$out" | grep -q "^usage: herd-bench $sub" && ! echo "$out" | grep -q '"bench"'; } || bad="$bad $sub"
  done
  warn=$(timeout 60 "$hb" env --threads 64 --worlds 64 --steps 1 --repeats 1 2>&1 >/dev/null | grep -c "exceeds the")
  if [ -z "$bad" ] && [ "$warn" -ge 1 ]; then ok "bench-help: every subcommand's --help prints help; --threads 64 is warned about"
  else nok "bench-help:${bad:- (help ok)}; threads warning lines: $warn"; fi
  # a world-count sweep on rough terrain puts world i on the column of i mod gcd(counts) (the same work per world);
  # --config's own value wins
  p1=$(timeout 120 "$hb" env --env anymal_c-rough --sweep 64,96 --threads 1 --steps 1 --warmup 1 --repeats 1 2>/dev/null |
       grep -c '"bench":"env_sweep".*"terrain_column_period":32')
  p2=$(timeout 120 "$hb" env --env anymal_c-rough --sweep 64 --threads 1 --steps 1 --warmup 1 --repeats 1 \
       --config terrain_column_period=0 2>/dev/null | grep -c 'terrain_column_period')
  if [ "$p1" -eq 2 ] && [ "$p2" -eq 0 ]; then ok "bench-sweep-period: a rough sweep of 64,96 worlds runs with terrain_column_period 32"
  else nok "bench-sweep-period: sweep lines with period 32: $p1 (want 2); with --config's 0: $p2 lines name it (want 0)"; fi
  # the profile's lock-step figures: efficiencies in (0, 1], each bound the solve's time over lanes x efficiency
  lk=$(timeout 120 "$hb" env --profile --worlds 16 --steps 2 --repeats 1 --warmup 5 --config actuator=pd 2>/dev/null |
       "$PY" -c '
import json, sys
d = json.loads(sys.stdin.readline()); l = d["lockstep"]; s = d["us_per_physics_step"]["solve"]
ok = l["lanes"] == 4
for g in ("env_groups", "by_blocks"):
    e, b = l["efficiency_" + g], l["solve_us_bound_" + g]
    ok = ok and 0 < e <= 1 and abs(b * 4 * e - s) <= 1e-3 * s + 2e-4
print("ok" if ok else "bad %s solve %s" % (l, s))' 2>&1)
  if [ "$lk" = ok ]; then ok "bench-profile-lockstep: the profile's lane efficiencies are in (0, 1] and bound the solve"
  else nok "bench-profile-lockstep: $lk"; fi
fi

# 7. Prometheus scrapes /metrics.  One client keeps a 32-world session open and steps it while the queries run,
# so the in-use gauges and the rate-window gauges have something to show; one `make` of an unknown env is an
# error reply (UNKNOWN_ENV).  Every series srv_metrics.h lists is queried through Prometheus's HTTP API.
if ! command -v prometheus >/dev/null 2>&1; then
  echo "SKIPPED prometheus: the prometheus package is not installed (deploy/install-deps.sh installs it)"
else
  mport=$(free_port); pport=$(free_port); port3=$(free_port)
  "$BUILD/herd-server" --bind "tcp://127.0.0.1:$port3" --threads 2 --metrics "127.0.0.1:$mport" --log-level warn \
    >"$tmp/s3.log" 2>&1 &
  pids+=($!)
  cat >"$tmp/prom.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: herd
    static_configs: [{targets: ["127.0.0.1:$mport"]}]
YML
  prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/tsdb" --web.listen-address="127.0.0.1:$pport" \
    --log.level=warn >"$tmp/prom.log" 2>&1 &
  pids+=($!)
  sleep 0.5
  res=$("$PY" - "$pport" "tcp://127.0.0.1:$port3" <<'PYEOF'
import json, sys, time, urllib.parse, urllib.request
import numpy as np, herd
port, addr = sys.argv[1], sys.argv[2]
N = 32
obs_bytes = N * 48 * 4          # one step reply carries at least the float32 observations
# query -> (check on the value, what it shows).  Counters are checked against what this client did.
want = {
    'up{job="herd"}': lambda v: v == 1,
    'herd_build_info': lambda v: v == 1,
    'herd_requests_total{op="step"}': lambda v: v >= 40,
    'herd_requests_total{op="make"}': lambda v: v >= 2,
    'herd_request_errors_total{op="make",code="UNKNOWN_ENV"}': lambda v: v == 1,
    'sum(herd_request_errors_total{op="step"}) or vector(0)': lambda v: v == 0,
    'herd_request_duration_seconds_count{op="step"}': lambda v: v >= 40,
    'herd_request_duration_seconds_bucket{op="step",le="+Inf"}': lambda v: v >= 40,
    'histogram_quantile(0.5, herd_request_duration_seconds_bucket{op="step"})': lambda v: 0 < v < 10,
    'herd_sessions': lambda v: v == 1,
    'herd_worlds': lambda v: v == N,
    'herd_worlds_limit': lambda v: v > 0,
    'herd_env_steps_total': lambda v: v >= N * 40,
    'herd_env_steps_per_second': lambda v: v > 0,
    'herd_worker_utilization_ratio': lambda v: 0 < v <= 1,
    'count(herd_worker_busy_seconds_total)': lambda v: v == 2,
    'herd_queue_depth': lambda v: v >= 0,
    'herd_received_bytes_total': lambda v: v > 0,
    'herd_sent_bytes_total': lambda v: v >= 40 * obs_bytes,
    'herd_physics_resets_total': lambda v: v >= 0,
    'herd_solver_iterations_total': lambda v: v > 0,
    'herd_solver_capped_total': lambda v: v >= 0,
    'herd_solver_fallbacks_total': lambda v: v >= 0,
    'herd_solver_ccp_answers_total': lambda v: v >= 0,
    'herd_memory_bytes': lambda v: v > 0,
    'rate(herd_env_steps_total[5s])': lambda v: v > 0,
}
try:
    herd.make_vec("no-such-env", 1, address=addr)
except Exception:
    pass
got, deadline = {}, time.time() + 45
with herd.make_vec("anymal_c-walk", N, address=addr, seed=0) as e:
    e.reset()
    act = np.zeros((N, e.act_dim), np.float32)
    while time.time() < deadline and len(got) < len(want):
        t_end = time.time() + 0.5
        while time.time() < t_end:
            e.step(act)
        for q, good in want.items():
            if q in got:
                continue
            try:
                url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
                r = json.load(urllib.request.urlopen(url, timeout=2))
                res = r["data"]["result"]
                if res and good(float(res[0]["value"][1])):
                    got[q] = float(res[0]["value"][1])
            except Exception:
                pass
missing = [q for q in want if q not in got]
print("; ".join("%s = %.6g" % kv for kv in got.items()) + (" | MISSING or wrong: " + ", ".join(missing) if missing else ""))
sys.exit(1 if missing else 0)
PYEOF
); rc=$?
  if [ $rc -eq 0 ]; then ok "prometheus: scraped; $res"; else nok "prometheus: $res"; tail -n 5 "$tmp/prom.log"; fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

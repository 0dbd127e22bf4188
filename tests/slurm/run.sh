#!/usr/bin/env bash
# Slurm test without Slurm: runs deploy/slurm/herd.sbatch and herd-hetjob.sbatch as the batch shell, with a fake
# `scontrol` (show hostnames) and a fake `srun` (runs each task of a step on this machine) on PATH.  Each fake
# node is a loopback address (127.0.0.2, 127.0.0.3, ...): the fake srun turns a task's HERD_BIND
# tcp://0.0.0.0:PORT into tcp://NODE:PORT, as one port per real node would be.  Loopback only, bounded.
#
#   tests/slurm/run.sh          # needs build/herd-server (make) and /usr/bin/python3 with numpy, zmq, msgpack
#
# Checks ("ok - ..." / "not ok - ...", then "N passed, M failed"):
#   hetjob          trainer (het group 0) spreads worlds over the servers of het group 1 found in HERD_ADDRESS
#   hetjob-signal   --signal's SIGUSR1 to the batch shell: the trainer checkpoints, the servers drain, exit 0
#   homogeneous     herd.sbatch: node 0 trains, nodes 1.. serve
#   not-hetjob      herd-hetjob.sbatch outside a heterogeneous job: exit 2 with a message
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
[ -x "$BUILD/herd-server" ] || make -s "$BUILD/herd-server" || { echo "cannot build herd-server"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d /tmp/herd-slurm.XXXXXX)
cleanup() { pkill -TERM -f "$tmp/" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
passed=0; failed=0
ok()  { passed=$((passed + 1)); echo "ok - $*"; }
nok() { failed=$((failed + 1)); echo "not ok - $*"; }

mkdir -p "$tmp/bin"
cat > "$tmp/bin/scontrol" <<'SH'
#!/usr/bin/env bash
# fake: `scontrol show hostnames a,b,c` prints one name a line
[ "$1 $2" = "show hostnames" ] || { echo "fake scontrol: only 'show hostnames'" >&2; exit 1; }
tr ',' '\n' <<<"$3"
SH
cat > "$tmp/bin/srun" <<'SH'
#!/usr/bin/env bash
# fake srun: runs the step's tasks here, one per node of its node list, and forwards signals to them.
group="" relative=0 ntasks="" exports="ALL" output=""
while [ $# -gt 0 ]; do
  case "$1" in
    --het-group=*) group=${1#*=} ;;
    --relative=*) relative=${1#*=} ;;
    --ntasks=*) ntasks=${1#*=} ;;
    --export=*) exports=${1#*=} ;;
    --output=*) output=${1#*=} ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
if [ -n "$group" ]; then var=SLURM_JOB_NODELIST_HET_GROUP_$group; list=${!var}; else list=$SLURM_JOB_NODELIST; fi
IFS=, read -r -a nodes <<<"$list"
nodes=("${nodes[@]:$relative}")
[ -n "$ntasks" ] && nodes=("${nodes[@]:0:$ntasks}")
if [ "$group" = 0 ]; then nodes=("${nodes[0]}"); fi
pids=()
for n in "${nodes[@]}"; do
  envs=()
  IFS=, read -r -a kv <<<"$exports"
  for e in "${kv[@]}"; do [ "$e" = ALL ] || envs+=("${e//0.0.0.0/$n}"); done
  if [ -n "$output" ]; then
    env "${envs[@]}" SLURMD_NODENAME="$n" "$@" >"${output//%N/$n}" 2>&1 &
  else
    env "${envs[@]}" SLURMD_NODENAME="$n" "$@" &
  fi
  pids+=($!)
done
# like srun, forward SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 to the tasks
for sig in TERM INT USR1 USR2; do trap "kill -$sig ${pids[*]} 2>/dev/null" "$sig"; done
rc=0
for p in "${pids[@]}"; do
  while :; do wait "$p"; r=$?; kill -0 "$p" 2>/dev/null || break; done
  [ "$r" -gt "$rc" ] && rc=$r
done
exit "$rc"
SH
chmod +x "$tmp/bin/"*

PORT=$((20000 + RANDOM % 20000))
export PATH="$tmp/bin:$PATH" HERD_PYTHON=/usr/bin/python3 HERD_THREADS=1 HERD_LOG_DIR="$tmp/logs" \
       SLURM_SUBMIT_DIR="$ROOT" SLURM_JOB_ID=4242 HERD_PORT=$PORT HERD_DRAIN_GRACE=20 HERD_TRAINER_GRACE=20

# 1. heterogeneous job, a short training run
out=$tmp/hetjob.out
SLURM_JOB_NODELIST_HET_GROUP_0=127.0.0.1 SLURM_JOB_NODELIST_HET_GROUP_1=127.0.0.2,127.0.0.3 \
SLURM_CPUS_PER_TASK_HET_GROUP_1=1 timeout 120 bash deploy/slurm/herd-hetjob.sbatch --worlds 64 --steps 30 >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "all 2 servers answer: tcp://127.0.0.2:$PORT,tcp://127.0.0.3:$PORT" "$out" \
   && grep -q "herd: CURVE keys in $tmp/logs/keys" "$out" && grep -q "auth       CURVE" "$tmp/logs/herd-server-127.0.0.2.log" \
   && grep -q "over 2 servers" "$out" && grep -q "worlds \[32, 64) on tcp://127.0.0.3:$PORT" "$out" \
   && grep -q "stopped after" "$tmp/logs/herd-server-127.0.0.2.log" && grep -q "stopped after" "$tmp/logs/herd-server-127.0.0.3.log"; then
  ok "hetjob: trainer in group 0 used the 2 servers of group 1 from HERD_ADDRESS, over CURVE with the job's fresh keys; servers exited cleanly"
else
  nok "hetjob (exit $rc)"; tail -n 20 "$out"
fi

# 2. the time-limit signal: USR1 to the batch shell while the trainer runs
out=$tmp/signal.out
rm -rf "$tmp/logs"
SLURM_JOB_NODELIST_HET_GROUP_0=127.0.0.1 SLURM_JOB_NODELIST_HET_GROUP_1=127.0.0.4,127.0.0.5 \
SLURM_CPUS_PER_TASK_HET_GROUP_1=1 bash deploy/slurm/herd-hetjob.sbatch --worlds 16 --steps 100000000 --report 1000 >"$out" 2>&1 &
job=$!   # the batch shell itself (Slurm signals it with --signal=B:...); a watchdog bounds it
( sleep 120; kill -KILL "$job" 2>/dev/null ) >/dev/null 2>&1 & watchdog=$!
for _ in $(seq 600); do grep -q "trainer: worlds \[8, 16)" "$out" 2>/dev/null && break; sleep 0.1; done
sleep 1
t0=$(date +%s.%N)
kill -USR1 "$job"
wait "$job"; rc=$?
pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null
dt=$(echo "$(date +%s.%N) - $t0" | bc)
if [ $rc -eq 0 ] && grep -q "time limit is near" "$out" && grep -q "SIGUSR1 (time limit near): checkpoint" "$out" \
   && grep -q "stopped for the time limit" "$out" && grep -q "shutting down" "$tmp/logs/herd-server-127.0.0.4.log" \
   && grep -q "stopped after" "$tmp/logs/herd-server-127.0.0.5.log"; then
  ok "hetjob-signal: SIGUSR1 -> trainer checkpointed, servers drained, exit 0 in ${dt%.*} s"
else
  nok "hetjob-signal (exit $rc)"; tail -n 20 "$out"
fi

# 3. homogeneous job: node 0 trains, nodes 1 and 2 serve
out=$tmp/homog.out
rm -rf "$tmp/logs"
SLURM_JOB_NODELIST=127.0.0.6,127.0.0.7,127.0.0.8 SLURM_CPUS_PER_TASK=1 HERD_INSECURE=1 \
  timeout 120 bash deploy/slurm/herd.sbatch --worlds 32 --steps 20 >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "all 2 servers answer: tcp://127.0.0.7:$PORT,tcp://127.0.0.8:$PORT" "$out" \
   && grep -q "over 2 servers" "$out" && grep -q "plain mode (HERD_INSECURE=1)" "$out"; then
  ok "homogeneous: herd.sbatch trains on node 0 over the servers of nodes 1-2 (HERD_INSECURE=1: plain mode)"
else
  nok "homogeneous (exit $rc)"; tail -n 20 "$out"
fi

# 4. the hetjob script outside a heterogeneous job
out=$tmp/nohet.out
env -u SLURM_JOB_NODELIST_HET_GROUP_1 timeout 30 bash deploy/slurm/herd-hetjob.sbatch >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "not a heterogeneous job" "$out"; then ok "not-hetjob: exit 2 with a message"
else nok "not-hetjob (exit $rc)"; cat "$out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

# herd-lib.sh — shell functions shared by deploy/slurm/herd.sbatch and herd-hetjob.sbatch (sourced, not run).
#
#   herd_setup_keys PORT THREADS         sets SERVER_ENV (the servers' HERD_* variables for srun --export) and,
#                                        unless HERD_INSECURE=1, KEYS: a CURVE key directory (HERD_KEYS, else fresh
#                                        keys for this job in $LOGDIR/keys, mode 0700); exports the trainer's
#                                        HERD_CURVE_SERVER_KEY / HERD_CURVE_CLIENT_SECRET_KEY
#   herd_addresses PORT NODE...          prints tcp://NODE:PORT,... (the Python client's address list)
#   herd_wait_ready PID TIMEOUT ADDR...  waits until every server answers a protocol ping; fails early if the
#                                        server step PID exits; uses build/herd-ping or the Python client
#   herd_drain PID GRACE                 SIGTERM to the server step (srun forwards it: each server finishes the
#                                        requests in flight and exits 0), SIGKILL after GRACE seconds
#   herd_on_time_limit                   the handler for `#SBATCH --signal=B:USR1@SECONDS`: drains the servers
#                                        and tells the trainer (SIGUSR1 to HERD_TRAINER_PID) so it can checkpoint
# Expects SUBMIT_DIR, PYTHON, LOGDIR and SERVER_CMD to be set by the caller.

herd_setup_keys() {
  local port=$1 threads=$2
  SERVER_ENV="HERD_BIND=tcp://0.0.0.0:$port,HERD_THREADS=$threads"
  KEYS=""
  if [ "${HERD_INSECURE:-0}" = 1 ]; then
    SERVER_ENV="$SERVER_ENV,HERD_INSECURE=1"
    echo "herd: plain mode (HERD_INSECURE=1): no authentication"
    return 0
  fi
  KEYS=${HERD_KEYS:-$LOGDIR/keys}
  if [ ! -f "$KEYS/server.key" ]; then
    (umask 077 && "${SERVER_CMD[@]}" --keygen "$KEYS" >/dev/null) || { echo "herd: cannot write keys to $KEYS" >&2; return 1; }
  fi
  SERVER_ENV="$SERVER_ENV,HERD_CURVE_SECRET_KEY_FILE=$KEYS/server.key,HERD_AUTHORIZED_KEYS=$KEYS/authorized_keys"
  export HERD_CURVE_SERVER_KEY="$KEYS/server.pub" HERD_CURVE_CLIENT_SECRET_KEY="$KEYS/client.key"
  echo "herd: CURVE keys in $KEYS"
}

herd_addresses() {
  local port=$1; shift
  local n out=()
  for n in "$@"; do out+=("tcp://$n:$port"); done
  (IFS=,; echo "${out[*]}")
}

herd_ping_one() { # one ping, 1 s at most (under CURVE with the server's own key pair: herd_ping.c)
  if [ -x "$SUBMIT_DIR/build/herd-ping" ]; then
    env -u HERD_CURVE_SERVER_KEY -u HERD_CURVE_CLIENT_SECRET_KEY ${KEYS:+HERD_CURVE_SECRET_KEY_FILE=$KEYS/server.key} \
      "$SUBMIT_DIR/build/herd-ping" "$1" --timeout 1000 --quiet 2>/dev/null
  else
    "$PYTHON" -c '
import sys, herd
with herd.Client(sys.argv[1], timeout=1.0, resolve=False) as c:
    c.ping()' "$1" 2>/dev/null
  fi
}

herd_wait_ready() {
  local pid=$1 limit=$2; shift 2
  local pending=("$@") still a deadline=$((SECONDS + limit))
  while [ ${#pending[@]} -gt 0 ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "herd: the servers exited before answering (${pending[*]})" >&2; return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "herd: no answer within $limit s from ${pending[*]}" >&2; return 1
    fi
    still=()
    for a in "${pending[@]}"; do herd_ping_one "$a" || still+=("$a"); done
    pending=("${still[@]}")
    [ ${#pending[@]} -gt 0 ] && sleep 1
  done
  return 0
}

herd_drain() {
  local pid=$1 grace=${2:-60}
  if kill -0 "$pid" 2>/dev/null; then
    echo "herd: draining the servers (SIGTERM: requests in flight finish, then exit 0; SIGKILL after $grace s)"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < grace; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

herd_on_time_limit() {
  echo "herd: the job's time limit is near (SIGUSR1 from --signal): checkpoint and drain"
  HERD_TIME_LIMIT_HIT=1
  if [ -n "${HERD_TRAINER_PID:-}" ] && kill -0 "$HERD_TRAINER_PID" 2>/dev/null; then
    kill -USR1 "$HERD_TRAINER_PID" 2>/dev/null || true     # the trainer saves a checkpoint and exits
    local i
    for ((i = 0; i < ${HERD_TRAINER_GRACE:-60}; i++)); do kill -0 "$HERD_TRAINER_PID" 2>/dev/null || break; sleep 1; done
  fi
  herd_drain "$HERD_SERVERS_PID" "${HERD_DRAIN_GRACE:-60}"
}

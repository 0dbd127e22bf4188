#!/usr/bin/env bash
# Runs herd-server under valgrind (memcheck, full leak check), drives it through every operation, the
# three autoreset modes, invalid requests and a SIGTERM with a step in flight (server/tools/drive.py), and
# fails unless the server exits 0 with no valgrind error and no leak.  Session expiry is driven on a second
# server under valgrind beside it (drive.py --expiry, --session-timeout 1): the first never expires
# sessions, because its drive leaves sessions idle for as long as valgrind and the machine's load make it
# take, so no step of the drive depends on the machine's speed.
#   server/tools/valgrind_check.sh [build/nomj/herd-server]
# The binary must be built without AVX-512 (valgrind does not decode it): `make test-valgrind` builds one and
# runs this script on it.
set -u
cd "$(dirname "$0")/../.."
if ! command -v valgrind >/dev/null; then echo "SKIPPED: valgrind not installed (deploy/install-deps.sh installs it)"; exit 0; fi
bin=${1:-build/nomj/herd-server}
if [ ! -x "$bin" ]; then echo "$bin: not built (make test-valgrind builds it and runs this check)"; echo "0 passed, 1 failed"; exit 1; fi
sock=/tmp/herd-valgrind-$$
start() { # name, session timeout: starts the server under valgrind on ipc://$sock-name.sock; sets pid_name
  local log; log=$(mktemp /tmp/herd-valgrind-"$1"-XXXX.log)
  valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
    --error-exitcode=99 --log-file="$log" \
    "$bin" --bind "ipc://$sock-$1.sock" --threads 2 --session-timeout "$2" --log-level warn &
  printf -v "pid_$1" %s $!
  printf -v "log_$1" %s "$log"
}
start main 0
start expiry 1
for _ in $(seq 1 600); do [ -S "$sock-main.sock" ] && [ -S "$sock-expiry.sock" ] && break; sleep 0.2; done
/usr/bin/python3 server/tools/drive.py "ipc://$sock-expiry.sock" --expiry --term "$pid_expiry" & drive_expiry_pid=$!
/usr/bin/python3 server/tools/drive.py "ipc://$sock-main.sock" --term "$pid_main"; drive_main=$?
wait "$drive_expiry_pid"; drive_expiry=$?
fail=0
for name in main expiry; do
  pid_var=pid_$name log_var=log_$name drive_var=drive_$name
  # a drive that failed before its SIGTERM leaves its server running: stop it (valgrind still reports)
  if [ "${!drive_var}" -ne 0 ]; then kill -TERM "${!pid_var}" 2>/dev/null; fi
  wait "${!pid_var}"; rc=$?
  grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable" "${!log_var}"
  echo "drive ($name): ${!drive_var}, herd-server under valgrind exited $rc (log: ${!log_var})"
  [ "${!drive_var}" -eq 0 ] && [ "$rc" -eq 0 ] || fail=1
  rm -f "$sock-$name.sock"
done
if [ "$fail" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi

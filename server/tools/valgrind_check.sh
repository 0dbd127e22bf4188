#!/usr/bin/env bash
# Runs herd-server under valgrind (memcheck, full leak check), drives it through every operation, the
# three autoreset modes, invalid requests, session expiry and a SIGTERM with a step in flight
# (server/tools/drive.py), and fails unless the server exits 0 with no valgrind error and no leak.
#   server/tools/valgrind_check.sh [build/herd-server]
set -u
cd "$(dirname "$0")/../.."
if ! command -v valgrind >/dev/null; then echo "SKIPPED: valgrind not installed (deploy/install-deps.sh installs it)"; exit 0; fi
bin=${1:-build/herd-server}
ep="ipc:///tmp/herd-valgrind-$$.sock"
log=$(mktemp /tmp/herd-valgrind-XXXX.log)
valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
  --error-exitcode=99 --log-file="$log" \
  "$bin" --bind "$ep" --threads 2 --session-timeout 2 --log-level warn &
pid=$!
for _ in $(seq 1 100); do [ -S "/tmp/herd-valgrind-$$.sock" ] && break; sleep 0.2; done
/usr/bin/python3 server/tools/drive.py "$ep" --expire-wait 4 --term "$pid"; drive=$?
# a drive that failed before its SIGTERM leaves the server running: stop it (valgrind still reports)
if [ "$drive" -ne 0 ]; then kill -TERM "$pid" 2>/dev/null; fi
wait "$pid"; rc=$?
grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable" "$log"
echo "drive: $drive, herd-server under valgrind exited $rc (log: $log)"
rm -f "/tmp/herd-valgrind-$$.sock"
if [ "$drive" -eq 0 ] && [ "$rc" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi

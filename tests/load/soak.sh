#!/bin/sh
# Soak test: herd-server under the load mix of tests/load/load.py for a long time,
# RSS and throughput sampled every 30 s (JSON lines), then a summary line; exits 1 when a client saw an
# unexpected error, the server did not exit 0 on SIGTERM, or its RSS kept growing.
#   tests/load/soak.sh                 # 10 minutes
#   tests/load/soak.sh --minutes 30    # longer; other options go to load.py (--threads 4, --trainers 4)
set -e
cd "$(dirname "$0")/../.."
MINUTES=10
if [ "$1" = "--minutes" ]; then MINUTES=$2; shift 2; fi
BIN=${HERD_SERVER_BIN:-build/herd-server}
[ -x "$BIN" ] || make --no-print-directory "$BIN"
exec /usr/bin/python3 tests/load/load.py --server "$BIN" --seconds $((MINUTES * 60)) --sample 30 "$@"

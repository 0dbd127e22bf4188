#!/usr/bin/env bash
# Multi-server test: three herd-servers on loopback, one trainer spreading 3,000 worlds over them
# (tests/multiserver/multiserver_test.py has the checks).  Bounded: the whole test is killed after
# HERD_MULTISERVER_TIMEOUT seconds (default 300); it takes ~15-30 s on 2 cores.
#
#   tests/multiserver/run.sh            # from anywhere; needs build/herd-server and the C client's archives (make)
#
# The Python checks use the Python client (clients/python, /usr/bin/python3 with numpy, pyzmq, msgpack);
# the C checks use tests/multiserver/herd_trainer.c over the C client.  The health probe (deploy/herd_ping.c)
# and the C trainer are compiled into a temporary directory here unless BUILD already holds them.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
LIMIT=${HERD_MULTISERVER_TIMEOUT:-300}
tmp=$(mktemp -d /tmp/herd-multiserver.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "multi-server: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

CLIENT_LIBS="$BUILD/libherd_client.a $BUILD/libherd_protocol.a"   # a C client program needs these two layers only
[ -f "$BUILD/libherd_client.a" ] && [ -f "$BUILD/libherd_protocol.a" ] && [ -x "$BUILD/herd-server" ] || make -s $CLIENT_LIBS "$BUILD/herd-server" \
  || fail "cannot build $BUILD/herd-server"

CC=${CC:-cc}
CFLAGS_T="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g"
PING=$BUILD/herd-ping
if [ ! -x "$PING" ] || [ deploy/herd_ping.c -nt "$PING" ]; then
  PING=$tmp/herd-ping
  $CC $CFLAGS_T -o "$PING" deploy/herd_ping.c -lzmq -lmsgpackc || fail "cannot compile deploy/herd_ping.c"
fi
TRAINER=$tmp/herd-trainer
$CC $CFLAGS_T -I. -Isim -Ienvs -Iprotocol -Iserver -Iclients/c -o "$TRAINER" tests/multiserver/herd_trainer.c \
  $CLIENT_LIBS -lzmq -lmsgpackc -lm || fail "cannot compile tests/multiserver/herd_trainer.c"

PY=python3
/usr/bin/python3 -c 'import numpy, zmq, msgpack' 2>/dev/null && PY=/usr/bin/python3

# --kill-after: a test that ignores SIGTERM still ends
rc=0
PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}" timeout --kill-after=10 "$LIMIT" "$PY" tests/multiserver/multiserver_test.py --server "$BUILD/herd-server" \
  --ping "$PING" --c-trainer "$TRAINER" "$@" || rc=$?
[ $rc -eq 124 ] && { echo "multi-server: timed out after $LIMIT s"; echo "0 passed, 1 failed"; }
exit $rc

#!/usr/bin/env bash
# Container test: builds the image from the project's Dockerfile with buildah, starts herd-server in it
# (buildah run --isolation chroot: the host network), drives it from clients outside, and removes every
# container and image it made.  No Docker engine or registry needed: ../shared/tools/container-base-image
# makes the local debian:bookworm-slim base (and installs buildah + debootstrap when missing).
#
#   tests/container/run.sh               # from anywhere; ~1-2 min with a warm apt mirror (first run: + ~1 min
#                                        # for the base image)
#
# Skipped, with a visible SKIPPED line and exit 0, when buildah is unavailable (not installed and not
# installable, or unusable here) or HERD_CONTAINER_TEST=0.  Bounded: HERD_CONTAINER_TEST_TIMEOUT seconds in
# all (default 1500), and each step has its own limit.
#
# Checks ("ok - ..." / "not ok - ...", then "N passed, M failed"):
#   build         the image builds (time reported)
#   config        non-root user, EXPOSE 5555, HERD_BIND=tcp://0.0.0.0:5555, HEALTHCHECK running herd-ping,
#                 OCI labels (version = herd-server's, revision = the git sha, created, licenses, title),
#                 ENTRYPOINT herd-server; the size is reported
#   contents      no compiler, shell, package manager or MuJoCo in the image (skipped if it cannot be mounted)
#   no-keys       without keys (and without HERD_INSECURE=1) the server refuses to bind 0.0.0.0: exit 2
#   start         herd-server starts in the container as uid 10001 with CURVE keys mounted (herd-server
#                 --keygen on the host) and binds 0.0.0.0
#   auth          a client without keys gets no reply
#   ping          herd-ping from the host reaches it (the protocol ping)
#   healthcheck   the image's HEALTHCHECK command, run inside the container, succeeds
#   drive         the C trainer (tests/multiserver/herd_trainer.c): ping + make + reset + step + close
#   same-results  its per-step hashes equal those of the host's build/herd-server (same MARCH, same seeds)
#   python        (when the Python client imports) make_vec + reset + step through clients/python
#   sigterm       SIGTERM to the server in the container: it drains and exits 0
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
cd "$ROOT" || exit 1

if [ "${HERD_CONTAINER_TEST:-1}" = 0 ]; then
  echo "SKIPPED container test: HERD_CONTAINER_TEST=0"; exit 0
fi
# One time limit for the whole test: re-run under timeout (the inner run cleans up on SIGTERM).
if [ -z "${HERD_CONTAINER_TEST_INNER:-}" ]; then
  export HERD_CONTAINER_TEST_INNER=1
  limit=${HERD_CONTAINER_TEST_TIMEOUT:-1500}
  rc=0
  timeout --kill-after=30 "$limit" "$0" "$@" || rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "container test: timed out after $limit s"; echo "0 passed, 1 failed"; fi
  exit $rc
fi

T_START=$(date +%s)
BUILD=${BUILD:-build}
passed=0; failed=0
ok()   { passed=$((passed + 1)); echo "ok - $*"; }
nok()  { failed=$((failed + 1)); echo "not ok - $*"; }
elapsed() { echo $(( $(date +%s) - $1 )); }

# ---- buildah available? ------------------------------------------------------------------------------
BASE_TOOL=${HERD_CONTAINER_BASE_TOOL:-$ROOT/../shared/tools/container-base-image}
base_log=$(mktemp /tmp/herd-container-base.XXXXXX)
base_rc=0
if [ -x "$BASE_TOOL" ]; then
  t0=$(date +%s)
  # it installs buildah and debootstrap when missing (root + Debian mirror), then makes the base image
  timeout 900 "$BASE_TOOL" >"$base_log" 2>&1 || base_rc=$?
  echo "container-base-image: exit $base_rc in $(elapsed "$t0") s: $(tail -n1 "$base_log")"
fi
if ! command -v buildah >/dev/null 2>&1; then
  echo "SKIPPED container test: buildah is not available$([ -x "$BASE_TOOL" ] || echo " (and $BASE_TOOL is absent)")"
  tail -n 5 "$base_log" 2>/dev/null; rm -f "$base_log"
  exit 0
fi
if ! buildah images >/dev/null 2>&1; then
  echo "SKIPPED container test: buildah cannot run here: $(buildah images 2>&1 | tail -n1)"
  rm -f "$base_log"; exit 0
fi
if ! buildah images --format '{{.Name}}:{{.Tag}}' | grep -qx 'docker.io/library/debian:bookworm-slim'; then
  nok "base image: no local debian:bookworm-slim (container-base-image exit $base_rc): $(tail -n3 "$base_log")"
  rm -f "$base_log"; echo "$passed passed, $failed failed"; exit 1
fi
rm -f "$base_log"

# ---- state and cleanup --------------------------------------------------------------------------------
TAG="localhost/herd-test:$$-$RANDOM"
tmp=$(mktemp -d /tmp/herd-container.XXXXXX)
ctr=""; run_pid=""; images_before=$(buildah images -aq --no-trunc | sort)

descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
server_pid() { # the herd-server process under the `buildah run` of pid $1
  local p
  for p in $(descendants "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = herd-server ] && { echo "$p"; return; }
  done
}
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then
    local sp; sp=$(server_pid "$run_pid")
    [ -n "$sp" ] && kill -KILL "$sp" 2>/dev/null
    kill -TERM "$run_pid" 2>/dev/null; sleep 1; kill -KILL "$run_pid" 2>/dev/null
    wait "$run_pid" 2>/dev/null
  fi
  [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
  buildah rmi -f "$TAG" >/dev/null 2>&1
  # intermediate images this build left (none with --layers=false; be sure)
  local id
  for id in $(comm -13 <(echo "$images_before") <(buildah images -aq --no-trunc | sort)); do
    buildah rmi -f "$id" >/dev/null 2>&1
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "container test: interrupted"; exit 124' INT TERM

# ---- host-side clients ----------------------------------------------------------------------------------
CLIENT_LIBS="$BUILD/libherd_client.a $BUILD/libherd_protocol.a"   # a C client program needs these two layers only
[ -f "$BUILD/libherd_client.a" ] && [ -f "$BUILD/libherd_protocol.a" ] && [ -x "$BUILD/herd-server" ] ||
  make -s $CLIENT_LIBS "$BUILD/herd-server" >/dev/null
CC=${CC:-cc}
CFLAGS_T="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2"
PING=$tmp/herd-ping
TRAINER=$tmp/herd-trainer
if ! $CC $CFLAGS_T -o "$PING" deploy/herd_ping.c -lzmq -lmsgpackc ||
   ! $CC $CFLAGS_T -I. -Isim -Ienvs -Iprotocol -Iserver -Iclients/c -o "$TRAINER" tests/multiserver/herd_trainer.c \
       $CLIENT_LIBS -lzmq -lmsgpackc -lm; then
  nok "cannot compile the host-side clients"; echo "$passed passed, $failed failed"; exit 1
fi

# ---- build ----------------------------------------------------------------------------------------------
# The image's default -march (x86-64-v3) where this machine runs it, else v2.  The same-results check then
# compares it with the host build, whatever level that has (x86-64-v4 on an AVX-512 machine): the bits must not
# depend on it.
case "$(uname -m)" in
  x86_64) if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then MARCH=x86-64-v3; else MARCH=x86-64-v2; fi ;;
  *) MARCH="" ;;
esac
# the version labels `make image` sets
VERSION=$(sed -n 's/^#define HERD_VERSION "\(.*\)"/\1/p' server/*.h | head -n1)
REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
t0=$(date +%s)
if timeout 1200 buildah bud --pull=false --isolation chroot --network host --format docker --layers=false \
     --build-arg "MARCH=$MARCH" --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
     --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t "$TAG" -f Dockerfile . >"$tmp/build.log" 2>&1; then
  BUILD_S=$(elapsed "$t0")
  ok "build: $TAG in $BUILD_S s (MARCH=${MARCH:-default})"
else
  nok "build failed after $(elapsed "$t0") s:"; tail -n 30 "$tmp/build.log"
  echo "$passed passed, $failed failed"; exit 1
fi

# ---- image configuration --------------------------------------------------------------------------------
SIZE=$(buildah images --format '{{.Size}}' "$TAG" | head -n1)
buildah inspect --type image "$TAG" >"$tmp/inspect.json"
PY=python3; /usr/bin/python3 -c 'import json' 2>/dev/null && PY=/usr/bin/python3
cfg_msg=$("$PY" - "$tmp/inspect.json" "$VERSION" "$REVISION" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want_version, want_revision = sys.argv[2], sys.argv[3]
oci = d["OCIv1"]["config"]
dock = d["Docker"]["config"]
env = dict(e.split("=", 1) for e in oci.get("Env", []))
hc = (dock.get("Healthcheck") or {}).get("Test") or []
problems = []
user = oci.get("User", "")
if not user or user.split(":")[0] in ("", "0", "root"):
    problems.append("runs as root (User=%r)" % user)
if "5555/tcp" not in (oci.get("ExposedPorts") or {}):
    problems.append("does not EXPOSE 5555")
if env.get("HERD_BIND") != "tcp://0.0.0.0:5555":
    problems.append("HERD_BIND is %r" % env.get("HERD_BIND"))
if not hc or "herd-ping" not in " ".join(hc):
    problems.append("HEALTHCHECK is %r" % hc)
if "herd-server" not in " ".join(oci.get("Entrypoint") or []):
    problems.append("ENTRYPOINT is %r" % oci.get("Entrypoint"))
labels = oci.get("Labels") or {}
for key, want in (("org.opencontainers.image.version", want_version),
                  ("org.opencontainers.image.revision", want_revision)):
    if labels.get(key) != want:
        problems.append("label %s is %r, not %r" % (key, labels.get(key), want))
for key in ("org.opencontainers.image.created", "org.opencontainers.image.licenses", "org.opencontainers.image.title"):
    if not labels.get(key) or labels.get(key) == "unknown":
        problems.append("label %s is %r" % (key, labels.get(key)))
if problems:
    print("; ".join(problems)); sys.exit(1)
# the healthcheck command, one argument per line, for running it inside the container
with open(sys.argv[1] + ".hc", "w") as f:
    f.write("\n".join(hc[1:] if hc[0] in ("CMD", "CMD-SHELL") else hc))
print("user %s, EXPOSE 5555, HERD_BIND=%s, HEALTHCHECK %s, OCI labels version %s revision %s"
      % (user, env["HERD_BIND"], " ".join(hc[1:]), want_version, want_revision))
EOF
)
if [ $? -eq 0 ]; then ok "config: $cfg_msg; image size $SIZE"; else nok "config: $cfg_msg"; fi

# ---- image contents -------------------------------------------------------------------------------------
ctr=$(buildah from --pull=false "$TAG") || { nok "buildah from $TAG failed"; echo "$passed passed, $failed failed"; exit 1; }
if mnt=$(buildah mount "$ctr" 2>/dev/null) && [ -d "$mnt" ]; then
  bad=$(cd "$mnt" && for f in bin/sh usr/bin/sh bin/bash usr/bin/gcc usr/bin/cc usr/bin/apt-get usr/bin/dpkg; do
          [ -e "$f" ] && echo "$f"; done; find . -name 'libmujoco*' 2>/dev/null)
  files=$(cd "$mnt" && find . -type f | wc -l)
  buildah umount "$ctr" >/dev/null 2>&1
  if [ -z "$bad" ]; then ok "contents: $files files, no shell / compiler / package manager / MuJoCo"
  else nok "contents: unexpected files: $bad"; fi
else
  echo "contents: skipped (cannot mount the container here)"
fi

# ---- keys -------------------------------------------------------------------------------------------------
# The image binds 0.0.0.0, so it needs CURVE keys (or HERD_INSECURE=1): made on the host, mounted read-only
# at /etc/herd/keys, readable by the image's uid 10001.
KEYS=$tmp/keys
"$BUILD/herd-server" --keygen "$KEYS" >/dev/null || { nok "keys: herd-server --keygen failed"; echo "$passed passed, $failed failed"; exit 1; }
chown -R 10001:10001 "$KEYS" 2>/dev/null || chmod -R a+rX "$KEYS"
KEYENV=(--volume "$KEYS:/etc/herd/keys:ro" --env HERD_CURVE_SECRET_KEY_FILE=/etc/herd/keys/server.key
        --env HERD_AUTHORIZED_KEYS=/etc/herd/keys/authorized_keys)
z85_of() { sed -n "s/^ *$2 = \"\(.*\)\"\$/\1/p" "$1" | head -n1; }
SERVER_PUB=$(z85_of "$KEYS/server.pub" public-key)
CLIENT_SEC=$(z85_of "$KEYS/client.key" secret-key)

out=$(timeout 30 buildah run --isolation chroot --env 'HERD_BIND=tcp://0.0.0.0:*' "$ctr" -- /usr/local/bin/herd-server 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--insecure" <<<"$out"; then ok "no-keys: refused without keys: $out"
else nok "no-keys: exit $rc: $out"; fi

# ---- start the server in the container --------------------------------------------------------------------
# tcp://0.0.0.0:* = the image's 0.0.0.0 with a free port (buildah run shares the host network; 5555 may be
# taken on a CI machine).  The banner names the port.
buildah run --isolation chroot "${KEYENV[@]}" --env 'HERD_BIND=tcp://0.0.0.0:*' --env HERD_THREADS=1 \
  --env HERD_STATS_INTERVAL=0 "$ctr" -- /usr/local/bin/herd-server >"$tmp/server.log" 2>&1 &
run_pid=$!
EP_IN=""
for _ in $(seq 200); do
  EP_IN=$(grep -oE 'tcp://0\.0\.0\.0:[0-9]+' "$tmp/server.log" | head -n1)
  [ -n "$EP_IN" ] && break
  kill -0 "$run_pid" 2>/dev/null || break
  sleep 0.1
done
SRV=$(server_pid "$run_pid")
if [ -z "$EP_IN" ] || [ -z "$SRV" ]; then
  nok "start: herd-server did not start in the container:"; cat "$tmp/server.log"
  echo "$passed passed, $failed failed"; exit 1
fi
uid=$(awk '/^Uid:/ {print $2}' /proc/"$SRV"/status)
PORT=${EP_IN##*:}
EP=tcp://127.0.0.1:$PORT
if [ "$uid" != 0 ]; then ok "start: herd-server pid $SRV uid $uid, bound $EP_IN"; else nok "start: herd-server runs as root"; fi

# ---- clients outside --------------------------------------------------------------------------------------
# the host-side clients authenticate with the client key (herd-ping: HERD_CURVE_SERVER_KEY + _CLIENT_SECRET_KEY)
export HERD_CURVE_SERVER_KEY="$SERVER_PUB" HERD_CURVE_CLIENT_SECRET_KEY="$CLIENT_SEC"
if out=$(timeout 30 "$PING" "$EP" --wait 20 --timeout 2000 2>&1); then ok "ping: $out"; else nok "ping: $out"; fi
if out=$(env -u HERD_CURVE_SERVER_KEY -u HERD_CURVE_CLIENT_SECRET_KEY timeout 30 "$PING" "$EP" --timeout 1000 2>&1); then
  nok "auth: a client without keys got a reply: $out"
else
  ok "auth: a client without keys gets no reply"
fi

if [ -f "$tmp/inspect.json.hc" ]; then
  mapfile -t HC <"$tmp/inspect.json.hc"
  if out=$(timeout 30 buildah run --isolation chroot "${KEYENV[@]}" --env "HERD_BIND=$EP_IN" "$ctr" -- "${HC[@]}" 2>&1); then
    ok "healthcheck: '${HC[*]}' inside the container: exit 0 $out"
  else
    nok "healthcheck: '${HC[*]}' inside the container failed: $out"
  fi
fi

WORLDS=512; STEPS=20
if timeout 120 "$TRAINER" --endpoints "$EP" --worlds $WORLDS --steps $STEPS --seed 3 --timeout-ms 20000 \
     >"$tmp/drive.out" 2>"$tmp/drive.err"; then
  ok "drive: make + reset + step x $STEPS + close of $WORLDS worlds: $(grep ^done "$tmp/drive.out")"
  # the same worlds on the host's build: the image is the same code, built with the same flags
  hsrv_log=$tmp/host-server.log
  "$BUILD/herd-server" --bind 'tcp://127.0.0.1:*' --threads 1 --stats-interval 0 >"$hsrv_log" 2>&1 &
  hpid=$!
  HEP=""
  for _ in $(seq 100); do
    HEP=$(grep -oE 'tcp://127\.0\.0\.1:[0-9]+' "$hsrv_log" | head -n1); [ -n "$HEP" ] && break; sleep 0.1
  done
  if [ -n "$HEP" ] && env -u HERD_CURVE_SERVER_KEY -u HERD_CURVE_CLIENT_SECRET_KEY \
       timeout 120 "$TRAINER" --endpoints "$HEP" --worlds $WORLDS --steps $STEPS --seed 3 \
       --timeout-ms 20000 >"$tmp/host.out" 2>&1; then
    if diff -q <(grep ^hash "$tmp/drive.out") <(grep ^hash "$tmp/host.out") >/dev/null; then
      ok "same-results: $((STEPS + 1)) per-step hashes of the container equal the host build's"
    else
      nok "same-results: the container's results differ from the host build's (different compiler flags? MARCH=$MARCH):"
      diff <(grep ^hash "$tmp/drive.out") <(grep ^hash "$tmp/host.out") | head -n 4
    fi
  else
    nok "same-results: the host server did not run: $(tail -n3 "$hsrv_log" "$tmp/host.out" 2>/dev/null)"
  fi
  kill -TERM "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
else
  nok "drive: $(cat "$tmp/drive.err")"
fi

if PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 -c "import herd, numpy; herd.make_vec" 2>/dev/null; then
  if out=$(PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}" timeout 60 /usr/bin/python3 - "$EP" <<'EOF' 2>&1
import sys
import numpy as np
import herd
with herd.make_vec("anymal_c-walk", 64, address=sys.argv[1], seed=1, timeout=20) as envs:
    obs, _ = envs.reset()
    for _ in range(5):
        obs, rew, term, trunc, info = envs.step(np.zeros((64, envs.act_dim), np.float32))
    assert obs.shape == (64, envs.obs_dim) and np.isfinite(obs).all(), obs.shape
print("make_vec(64 worlds) + reset + 5 steps, obs %s" % (obs.shape,))
EOF
  ); then ok "python: $out"; else nok "python: $out"; fi
else
  echo "python: skipped (the Python client does not import)"
fi

# ---- graceful stop ----------------------------------------------------------------------------------------
# `docker stop` sends SIGTERM to the entrypoint (pid 1 in a container); here it goes to herd-server directly
# (buildah run itself would SIGKILL it).
kill -TERM "$SRV" 2>/dev/null
rc=""
for _ in $(seq 150); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
if ! kill -0 "$run_pid" 2>/dev/null; then
  wait "$run_pid"; rc=$?
fi
run_pid_done=$run_pid; run_pid=""
if [ "$rc" = 0 ] && grep -q "stopped" "$tmp/server.log"; then
  ok "sigterm: the server drained and exited 0 ($(grep -m1 stopped "$tmp/server.log" | sed 's/.*info: //'))"
else
  run_pid=$run_pid_done
  nok "sigterm: exit status '${rc:-still running}'; log tail: $(tail -n 3 "$tmp/server.log")"
fi

echo "container test: $(elapsed "$T_START") s in all (image build ${BUILD_S:-?} s), image size $SIZE"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Installs exactly the Debian packages herd needs to build, test and benchmark, then the browser viewer's
# JavaScript dependency (three.js, pinned by viewer/package-lock.json) with `npm ci` in viewer/.
# Idempotent: packages already present are not reinstalled, apt is not touched at all when nothing is
# missing, and npm runs only when viewer/node_modules lacks the locked three.js.  Run as root (or with sudo).
#
#   deploy/install-deps.sh          # build + test + bench dependencies
#   deploy/install-deps.sh --check  # exit 1 if something is missing, install nothing
set -euo pipefail

PKGS=(
  build-essential pkg-config
  libzmq3-dev libmsgpack-dev libxml2-dev   # server, wire format, URDF loader
  libmicrohttpd-dev                        # the opt-in Prometheus endpoint (--metrics)
  libcriterion-dev                         # C tests
  libmujoco-dev                            # the test/bench peer only (make MUJOCO=no builds without it)
  python3 python3-zmq python3-msgpack python3-numpy python3-pytest   # Python client + tests
  python3-venv python3-pip python3-setuptools                        # test: pip install of clients/python
  python3-torch python3-pandas python3-matplotlib                    # test: PPO examples, SB3 / rsl_rl adapters
  libopenblas0-pthread                     # torch's BLAS: the PPO updates are much faster than with the reference BLAS
  python3-cloudpickle python3-typing-extensions                      # test: gymnasium + SB3 (sources on PYTHONPATH)
  valgrind                                 # leak checks of the server
  prometheus                               # test peer: a real Prometheus scrapes --metrics
  python3-yaml                             # test: the Kubernetes manifest checks
  buildah debootstrap                      # the container test builds and runs the image
  chromium ffmpeg python3-pil              # test: the viewer in headless Chromium; replays as MP4 / GIF
  clang-14 libclang-rt-14-dev              # test: libFuzzer + ASan/UBSan runtimes (make fuzz, fuzz/run.sh)
)
VIEWER="$(cd "$(dirname "$0")/.." && pwd)/viewer"
viewer_ok() { # the locked three.js is installed in viewer/node_modules
  local want have
  want=$(sed -n '/"node_modules\/three"/,/}/s/.*"version": "\(.*\)".*/\1/p' "$VIEWER/package-lock.json")
  have=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' "$VIEWER/node_modules/three/package.json" 2>/dev/null)
  [ -n "$want" ] && [ "$want" = "$have" ]
}
viewer_deps() {
  viewer_ok && return 0
  echo "install-deps: npm ci in viewer/ (three.js)"
  (cd "$VIEWER" && npm ci --no-audit --no-fund --loglevel=error)
}

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# viewer/: three.js from the npm registry (npm ci).  Debian's npm only where no npm is on PATH (a node
# installed from elsewhere brings its own, and Debian's package could conflict with it).
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${1:-}" = "--check" ]; then
  viewer_ok || missing+=("viewer/node_modules (npm ci)")
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing: ${missing[*]}"; exit 1
fi
[ ${#missing[@]} -eq 0 ] && { viewer_deps; exit 0; }

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
viewer_deps

#!/usr/bin/env bash
# Installs exactly the Debian packages herd needs to build, test and benchmark.  Idempotent: packages already
# present are not reinstalled, and apt is not touched at all when nothing is missing.  Run as root (or with sudo).
#
# The browser viewer's JavaScript dependency (three.js, pinned by viewer/package-lock.json) comes from the npm
# registry, which a machine may not reach: it is installed apart, with --viewer (`make viewer-deps`), or by
# herd.view on first use, never by the default run, so that `make run` builds and serves without npm.  Where
# npm or its registry is missing, only the viewer is disabled (with a message saying so).
#
#   deploy/install-deps.sh          # build + test + bench dependencies (Debian packages)
#   deploy/install-deps.sh --check  # exit 1 if one of those is missing, install nothing
#   deploy/install-deps.sh --viewer # the viewer: Debian's npm where no npm is on PATH, then npm ci in viewer/
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
  python3-git                              # test: rsl_rl 2.x imports GitPython (rsl_rl.utils)
  python3-onnx                             # test: the exported policy's ONNX file checked (test_train_play)
  valgrind                                 # leak checks of the server
  prometheus                               # test peer: a real Prometheus scrapes --metrics
  python3-yaml                             # test: the Kubernetes manifest checks
  buildah debootstrap                      # the container test builds and runs the image
  chromium chromium-driver python3-selenium   # test: the viewer in headless Chromium (Selenium); herd.screenshot
  libegl1 libgl1-mesa-dri                     # Mesa's EGL and llvmpipe: headless Chromium's WebGL without a GPU
  ffmpeg python3-pil python3-imageio          # replays as MP4 / GIF (herd.video)
  clang-14 libclang-rt-14-dev              # test: libFuzzer + ASan/UBSan runtimes (make fuzz, fuzz/run.sh)
)
VIEWER="$(cd "$(dirname "$0")/.." && pwd)/viewer"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

apt_install() { # packages...: apt-get install them (after one apt-get update)
  echo "install-deps: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
viewer_ok() { # the locked three.js is installed in viewer/node_modules
  local want have
  want=$(sed -n '/"node_modules\/three"/,/}/s/.*"version": "\(.*\)".*/\1/p' "$VIEWER/package-lock.json")
  have=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' "$VIEWER/node_modules/three/package.json" 2>/dev/null)
  [ -n "$want" ] && [ "$want" = "$have" ]
}
viewer_deps() { # exit 0 with three.js installed, else 1 with a message (the viewer is then disabled)
  viewer_ok && { echo "install-deps: viewer: three.js is installed"; return 0; }
  if ! command -v npm >/dev/null 2>&1; then
    # Debian's npm only where no npm is on PATH (a node installed from elsewhere brings its own)
    apt_install npm || true
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-deps: viewer disabled: npm is not installed and could not be (apt-get install npm);" \
         "herd-server and the clients work without it"
    return 1
  fi
  echo "install-deps: npm ci in viewer/ (three.js)"
  if ! (cd "$VIEWER" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "install-deps: viewer disabled: npm ci failed (is the npm registry reachable?);" \
         "herd-server and the clients work without it; run make viewer-deps again where it is"
    return 1
  fi
  viewer_ok
}

case "${1:-}" in
  --viewer) viewer_deps; exit $? ;;
  --check|"") ;;
  *) echo "usage: $0 [--check | --viewer]" >&2; exit 2 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing: ${missing[*]}"; exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
apt_install "${missing[@]}"

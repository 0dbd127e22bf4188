#!/usr/bin/env bash
# Installs exactly the Debian packages herd needs to build, test and benchmark.
# Idempotent: packages already present are not reinstalled, and apt is not touched
# at all when nothing is missing.  Run as root (or with sudo available).
#
#   deploy/install-deps.sh          # build + test + bench dependencies
#   deploy/install-deps.sh --check  # exit 1 if something is missing, install nothing
set -euo pipefail

PKGS=(
  build-essential pkg-config
  libzmq3-dev libmsgpack-dev libxml2-dev   # server, wire format, URDF loader
  libcriterion-dev                         # C tests
  libmujoco-dev                            # test/bench peer only
  python3 python3-zmq python3-msgpack python3-numpy python3-pytest   # Python client + tests
  python3-venv python3-pip python3-setuptools                        # test: pip install of clients/python
  python3-torch python3-pandas python3-matplotlib                    # test: PPO examples, SB3 / rsl_rl adapters
  python3-cloudpickle python3-typing-extensions                      # test: gymnasium + SB3 (sources on PYTHONPATH)
  valgrind                                 # leak checks of the server
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing: ${missing[*]}"; exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

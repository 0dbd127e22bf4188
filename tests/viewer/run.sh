#!/usr/bin/env bash
# The viewer's browser tests (tests/viewer/test_viewer.py): a real herd-server (build/herd-server, or
# $HERD_SERVER_BIN), the page of viewer/ with three.js from viewer/node_modules (make viewer-deps) and
# Debian's headless chromium.  Prints pytest's summary; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if [ ! -f viewer/node_modules/three/build/three.module.min.js ] && ! deploy/install-deps.sh --viewer; then
  echo "viewer-tests: FAILED: three.js is not installed: run make viewer-deps (npm ci in viewer/)"
  exit 1
fi
export PYTHONDONTWRITEBYTECODE=1
export HERD_SERVER_BIN=${HERD_SERVER_BIN:-$PWD/build/herd-server}
export PYTHONPATH="$PWD/clients/python:$PWD/tests/viewer${PYTHONPATH:+:$PYTHONPATH}"
[ $# -eq 0 ] && set -- tests/viewer          # or the tests / options given
exec "$PY" -m pytest -q -p no:cacheprovider "$@"

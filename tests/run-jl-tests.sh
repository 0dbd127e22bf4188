#!/usr/bin/env bash
# Runs the Julia client's tests (clients/julia/test) when julia is on PATH; otherwise prints a visible
# SKIPPED line and exits 0.  Server tests inside start build/herd-server (built by `make`).
# Called by `make test` (target test-jl) from the repository root.
set -u
cd "$(dirname "$0")/.."
if ! command -v julia >/dev/null 2>&1; then
  echo "SKIPPED: julia not on PATH (clients/julia tests not run)"
  exit 0
fi
export HERD_SERVER_BIN="${HERD_SERVER_BIN:-$PWD/build/herd-server}"
# Dependencies come from the Julia registry: the package's (ZMQ.jl, MsgPack.jl, OrderedCollections.jl,
# CommonRLInterface.jl) are installed first; without a registry the tests cannot run, which is reported,
# not hidden.  Pkg.test() then builds the test environment, installing the test-only dependencies of
# Project.toml's [extras] / [targets] (JSON.jl, for the golden vectors' .json files).
log=$(mktemp "${TMPDIR:-/tmp}/herd-jl-instantiate.XXXXXX")
if ! julia --project=clients/julia -e 'using Pkg; Pkg.instantiate()' >"$log" 2>&1; then
  tail -n 20 "$log"; rm -f "$log"
  echo "SKIPPED: julia-tests (could not install the Julia dependencies: no registry / network?)"
  exit 0
fi
rm -f "$log"
if julia --project=clients/julia -e 'using Pkg; Pkg.test()' 2>&1; then
  echo "julia-tests: all passed"
else
  echo "julia-tests: FAILED"
  exit 1
fi

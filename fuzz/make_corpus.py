#!/usr/bin/python3
"""Builds the seed corpus of every fuzz target (fuzz/README.md) into OUT/<target>/ (default build/fuzz/corpus).

  request  every golden vector of protocol/testdata (requests, bad requests, and replies: other maps)
  reply    mode 0: every golden reply; mode 1: [u32 len][make reply][reset / step / error reply]
  urdf     envs/models/anymal_c.urdf and fuzz/seeds/urdf/*.urdf, each under loader options 0, 1, 2 and 4
  config   per task: the defaults, each key at its bounds, just outside them, a raw double, unknown keys
Files already present are kept (the corpus grows across runs); seeds are named seed-*.
"""
import glob
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


golden = sorted(glob.glob(os.path.join(ROOT, "protocol", "testdata", "*.msgpack")))
for p in golden:
    put("request", os.path.basename(p), read(p))
replies = {os.path.basename(p)[:-8]: read(p) for p in golden if os.path.basename(p).startswith("rep_")}
for name, data in replies.items():
    put("reply", name, b"\x00" + data)
make = replies["rep_make"]
for name in ("rep_reset", "rep_step", "rep_step_same", "rep_error"):
    put("reply", "make+" + name, b"\x01" + struct.pack("<I", len(make)) + make + replies[name])

urdfs = [os.path.join(ROOT, "envs", "models", "anymal_c.urdf")] + sorted(glob.glob(os.path.join(ROOT, "fuzz", "seeds", "urdf", "*.urdf")))
for p in urdfs:
    for opt in (0, 1, 2, 4):
        put("urdf", "%s-%d" % (os.path.basename(p), opt), bytes([opt]) + read(p))


def rec(sel, mode, value=0.0):
    return bytes([sel, mode]) + struct.pack("<d", value)


NTASKS = 6          # envs/env.c's registry (the target takes the index modulo the real count)
for t in range(NTASKS):
    put("config", "task%d-defaults" % t, bytes([t, 0, 0]))
    put("config", "task%d-step" % t, bytes([t, 8 | 1, 7]))
    for mode in range(9):
        put("config", "task%d-mode%d" % (t, mode), bytes([t, 8, 1]) + b"".join(rec(k, mode, 0.5) for k in range(24)))
    put("config", "task%d-unknown" % t, bytes([t, 8, 2]) + rec(0xF0, 6, 1.0) + b"solver" + rec(0xF7, 40, 1.0) + b"\xff" * 40)
    put("config", "task%d-autoreset" % t, bytes([t, 2 | 8, 3]) + rec(1, 2) + rec(0, 1))
    for k in range(24):   # named choices: the solver names (the target skips keys without choices)
        for name in (b"bisection", b"pgs", b"x"):
            put("config", "task%d-choice%d-%s" % (t, k, name.decode()), bytes([t, 8, 4]) + bytes([0xF8 + k % 8, len(name)]) + b"\0" * 8 + name)

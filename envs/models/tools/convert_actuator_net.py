#!/usr/bin/python3
"""Converts legged_gym's ANYdrive actuator network (TorchScript) into herd's text data file.

    /usr/bin/python3 envs/models/tools/convert_actuator_net.py PT [--out envs/models/anydrive_v3_lstm.txt]
    /usr/bin/python3 envs/models/tools/convert_actuator_net.py PT --check     # the committed file is PT's

PT is legged_gym's resources/actuator_nets/anydrive_v3_lstm.pt (github.com/leggedrobotics/legged_gym, commit
8fa29ac; BSD-3-Clause, envs/models/anydrive_v3_lstm.LICENSE).  `make actuator-net-data ACTUATOR_PT=PT` runs the
first form, `make actuator-net-check ACTUATOR_PT=PT` the second (and the reference check of the C test's data).
Needs PyTorch (Debian's python3-torch); building herd does not: the converted file is committed.

The file (read by envs/env_actuator_net.c) is whitespace-separated tokens, '#' to the end of a line a comment:
    herd-actuator-lstm 1          format and version
    input_size 2 hidden_size 8 num_layers 2
then each tensor as `name rows cols` followed by rows x cols values, row-major, in this order:
    in_scale 1 2, out_scale 1 1, and per layer l = 0, 1: lstm.weight_ih_l<l> 32 x in, lstm.weight_hh_l<l> 32 x 8,
    lstm.bias_ih_l<l> 1 x 32, lstm.bias_hh_l<l> 1 x 32; then linear.weight 1 x 8, linear.bias 1 x 1.
The LSTM rows are PyTorch's gate blocks i, f, g, o (8 rows each).  Values are the archive's float32 numbers
written as C99 hexadecimal floats, so that strtod reads them back exactly (as doubles).
"""
import argparse
import os
import sys

OUT_DEFAULT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "anydrive_v3_lstm.txt"))
INPUT, HIDDEN, LAYERS = 2, 8, 2


def hexfloat(x):
    """x (a float32 value as a Python float) as the shortest C99 hex float: mantissa zeros dropped."""
    x = float(x)
    if x == 0:
        return "-0x0p+0" if str(x).startswith("-") else "0x0p+0"
    h = x.hex()                          # e.g. '-0x1.4000000000000p+4'
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def tensors(module):
    """The tensors in the file's order as (name, rows, cols, flat list of floats), checked against the sizes."""
    import torch
    sd = module.state_dict()
    lstm = module.lstm
    if (lstm.input_size, lstm.hidden_size, lstm.num_layers) != (INPUT, HIDDEN, LAYERS) or not lstm.batch_first \
            or lstm.bidirectional or getattr(lstm, "proj_size", 0) or not lstm.bias:
        sys.exit("convert_actuator_net: not a 2-input, hidden-8, 2-layer unidirectional LSTM with biases")
    spec = [("in_scale", 1, INPUT), ("out_scale", 1, 1)]
    for l in range(LAYERS):
        nin = INPUT if l == 0 else HIDDEN
        spec += [(f"lstm.weight_ih_l{l}", 4 * HIDDEN, nin), (f"lstm.weight_hh_l{l}", 4 * HIDDEN, HIDDEN),
                 (f"lstm.bias_ih_l{l}", 1, 4 * HIDDEN), (f"lstm.bias_hh_l{l}", 1, 4 * HIDDEN)]
    spec += [("linear.weight", 1, HIDDEN), ("linear.bias", 1, 1)]
    if set(sd) != {s[0] for s in spec}:
        sys.exit(f"convert_actuator_net: unexpected tensors {sorted(sd)}")
    out = []
    for name, rows, cols in spec:
        t = sd[name]
        if t.dtype != torch.float32 or t.numel() != rows * cols:
            sys.exit(f"convert_actuator_net: {name}: {t.dtype} {tuple(t.shape)}, expected float32 {rows}x{cols}")
        out.append((name, rows, cols, [float(v) for v in t.reshape(-1).tolist()]))
    return out


def render(pt_path):
    import torch
    module = torch.jit.load(pt_path, map_location="cpu")
    n = 0
    lines = [
        "# ANYdrive v3 actuator network (LSTM): legged_gym's resources/actuator_nets/anydrive_v3_lstm.pt",
        "# (github.com/leggedrobotics/legged_gym, commit 8fa29ac), converted by envs/models/tools/convert_actuator_net.py.",
        "# Copyright (c) 2021, ETH Zurich, Nikita Rudin; Copyright (c) 2021, NVIDIA CORPORATION & AFFILIATES.",
        "# BSD-3-Clause: the license is in anydrive_v3_lstm.LICENSE beside this file.",
        "# The archive's float32 values as exact C99 hexadecimal floats; LSTM rows in PyTorch's gate order i, f, g, o.",
        "herd-actuator-lstm 1",
        f"input_size {INPUT} hidden_size {HIDDEN} num_layers {LAYERS}",
    ]
    for name, rows, cols, vals in tensors(module):
        lines.append(f"{name} {rows} {cols}")
        for r in range(rows):
            lines.append(" ".join(hexfloat(v) for v in vals[r * cols:(r + 1) * cols]))
        n += rows * cols
    lines.append(f"# {n} parameters")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pt", help="anydrive_v3_lstm.pt (TorchScript)")
    ap.add_argument("--out", default=OUT_DEFAULT, help="the data file (default envs/models/anydrive_v3_lstm.txt)")
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    a = ap.parse_args()
    text = render(a.pt)
    if a.check:
        with open(a.out) as f:
            if f.read() != text:
                sys.exit(f"convert_actuator_net: {a.out} differs from the conversion of {a.pt}")
        print(f"convert_actuator_net: {a.out} is the conversion of {a.pt}")
        return
    with open(a.out, "w") as f:
        f.write(text)
    print(f"convert_actuator_net: wrote {a.out}")


if __name__ == "__main__":
    main()

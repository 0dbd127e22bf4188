#!/usr/bin/python3
"""Records the reference torques of tests/test_actuator_net.c: legged_gym's ANYdrive actuator network (TorchScript)
run in double precision on fixed input sequences, with resets, and the same run in single precision (the reference
of env_actuator_net_step_f32).

    /usr/bin/python3 tests/testdata/actuator_net_ref.py PT             # writes tests/testdata/actuator_net_ref.txt
                                                                       # and actuator_net_ref_f32.txt
    /usr/bin/python3 tests/testdata/actuator_net_ref.py PT --check     # records again, compares with the files

(`make actuator-net-ref ACTUATOR_PT=PT`, `make actuator-net-check ACTUATOR_PT=PT`.)  PT is legged_gym's
resources/actuator_nets/anydrive_v3_lstm.pt; needs PyTorch (Debian's python3-torch).  The module is called as
legged_gym calls it, a batch of joints of one time step per call, `torch.jit.load(PT).double()` (`.float()` for the
single-precision file, its inputs rounded to float); a reset zeroes a joint's (h, c) before the step it is listed
at, as legged_gym does when a world resets.

The sequences (8 joints, 400 steps of 5 ms): 0 a 2 Hz sine tracked with lag; 1 steps of +-0.5 rad every 50 steps;
2 a random walk; 3 saturating errors (+-3 rad) and speeds (+-20 rad/s); 4 zero input (the state's drift from zero);
5 a chirp; 6 joint 0's input (so its torques equal joint 0's until its own resets); 7 uniform noise.  Resets:
joint 2 at step 150, joints 4-7 (a world of four joints) at 200, joint 6 at 300.

The file: `actuator-net-ref 1`, `joints J steps T resets R`, R lines `reset t j`, then J x T lines
`t j pos_err vel tau` (step-major, C99 hexadecimal floats, exact).  The single-precision file has the same inputs
(as doubles) and the float32 module's torques.
"""
import argparse
import math
import os
import random
import sys

OUT_DEFAULT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "actuator_net_ref.txt"))
F32_SUFFIX = "_f32"     # actuator_net_ref.txt -> actuator_net_ref_f32.txt
J, T, DT = 8, 400, 0.005
RESETS = [(150, 2), (200, 4), (200, 5), (200, 6), (200, 7), (300, 6)]


def inputs():
    """pos_err[t][j], vel[t][j] as Python floats (doubles)."""
    rnd = random.Random(20211)
    e = [[0.0] * J for _ in range(T)]
    v = [[0.0] * J for _ in range(T)]
    walk = 0.0
    for t in range(T):
        s = t * DT
        e[t][0] = 0.3 * math.sin(2 * math.pi * 2 * s)
        v[t][0] = 0.3 * 2 * math.pi * 2 * math.cos(2 * math.pi * 2 * s - 0.4)
        e[t][1] = 0.5 if (t // 50) % 2 == 0 else -0.5
        v[t][1] = 0.0
        walk += rnd.gauss(0.0, 0.05)
        e[t][2] = walk
        v[t][2] = rnd.gauss(0.0, 2.0)
        e[t][3] = 3.0 * (1 if (t // 37) % 2 == 0 else -1)
        v[t][3] = 20.0 * math.sin(2 * math.pi * 1.3 * s)
        e[t][5] = 0.4 * math.sin(2 * math.pi * (0.5 + 10 * s) * s)
        v[t][5] = 6.0 * math.cos(2 * math.pi * (0.5 + 10 * s) * s)
        e[t][6], v[t][6] = e[t][0], v[t][0]
        e[t][7] = rnd.uniform(-1.0, 1.0)
        v[t][7] = rnd.uniform(-10.0, 10.0)
    return e, v


def record(pt, single=False):
    import torch
    dt = torch.float32 if single else torch.float64
    m = torch.jit.load(pt, map_location="cpu")
    m = (m.float() if single else m.double()).eval()
    e, v = inputs()
    h = torch.zeros(2, J, 8, dtype=dt)
    c = torch.zeros(2, J, 8, dtype=dt)
    tau = []
    with torch.no_grad():
        for t in range(T):
            for (tr, j) in RESETS:
                if tr == t:
                    h[:, j, :] = 0
                    c[:, j, :] = 0
            x = torch.tensor([[[e[t][j], v[t][j]]] for j in range(J)], dtype=dt)
            y, (h, c) = m(x, (h, c))
            tau.append([float(y[j]) for j in range(J)])
    return e, v, tau


def render(e, v, tau, single=False):
    how = "single precision (torch.jit.load(PT).float())" if single else "double precision (torch.jit.load(PT).double())"
    lines = [f"# legged_gym's anydrive_v3_lstm.pt run in {how} on fixed inputs:",
             "# the reference of tests/test_actuator_net.c, written by /usr/bin/python3 tests/testdata/actuator_net_ref.py PT",
             "# (make actuator-net-ref ACTUATOR_PT=PT); sequences and format in that script.",
             "actuator-net-ref 1", f"joints {J} steps {T} resets {len(RESETS)}"]
    lines += [f"reset {t} {j}" for (t, j) in RESETS]
    for t in range(T):
        for j in range(J):
            lines.append(f"{t} {j} {e[t][j].hex()} {v[t][j].hex()} {tau[t][j].hex()}")
    return "\n".join(lines) + "\n"


def parse_tau(text):
    tau = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[0].isdigit():
            tau[(int(f[0]), int(f[1]))] = (float.fromhex(f[2]), float.fromhex(f[3]), float.fromhex(f[4]))
    return tau


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pt", help="anydrive_v3_lstm.pt (TorchScript)")
    ap.add_argument("--out", default=OUT_DEFAULT, help="the reference file (default tests/testdata/actuator_net_ref.txt)")
    ap.add_argument("--check", action="store_true", help="compare a new recording with --out instead of writing it")
    a = ap.parse_args()
    root, ext = os.path.splitext(a.out)
    # The same module on another machine may sum in another order (BLAS): 1e-12 N·m is far below the C test's 1e-9;
    # in float32 a torque's rounding alone is ~4e-6 N·m: 1e-4 N·m (the C test's tolerance for its float step).
    for single, out, tol in ((False, a.out, 1e-12), (True, root + F32_SUFFIX + ext, 1e-4)):
        e, v, tau = record(a.pt, single)
        text = render(e, v, tau, single)
        if not a.check:
            with open(out, "w") as f:
                f.write(text)
            print(f"actuator_net_ref: wrote {out} ({J} joints x {T} steps, torques {min(min(r) for r in tau):.3f} .. "
                  f"{max(max(r) for r in tau):.3f} N·m)")
            continue
        with open(out) as f:
            old = parse_tau(f.read())
        new = parse_tau(text)
        if set(old) != set(new) or any(old[k][:2] != new[k][:2] for k in new):
            sys.exit(f"actuator_net_ref: {out} has other inputs than this script")
        worst = max(abs(old[k][2] - new[k][2]) for k in new)
        if worst > tol:
            sys.exit(f"actuator_net_ref: {out} differs from a new recording by {worst:.3g} N·m")
        print(f"actuator_net_ref: {out} matches a new recording (largest difference {worst:.3g} N·m)")


if __name__ == "__main__":
    main()

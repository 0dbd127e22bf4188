#!/usr/bin/env python3
"""Reference figures of legged_gym's curriculum terrain for tests/test_terrain.c, written to terrain_ref.txt.

An independent restatement in numpy of the formulas of legged_gym's Terrain (curriculum mode) and Isaac Gym's
terrain_utils generators, with their Python int() truncations, floor divisions and numpy rint, at legged_gym's
defaults (10 levels x 20 columns, 8 m tiles, 0.1 m / 0.005 m).  The deterministic tiles (smooth slopes and
stairs) are given whole (sums and two lines); the random ones by their parameters (rough noise levels,
obstacle heights); the rough noise's upsampling is checked on fixed coarse grids against scipy's interp2d
(what terrain_utils calls), or its FITPACK spline of degree 1 where interp2d is gone.

    python3 tests/testdata/terrain_ref.py > tests/testdata/terrain_ref.txt
"""
import numpy as np

ROWS, COLS = 10, 20
TILE, HS, VS = 8.0, 0.1, 0.005
PROPORTIONS = [0.1, 0.1, 0.35, 0.25, 0.2]
KINDS = ["slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"]

N = int(TILE / HS)  # samples per tile side


def column_kind(j):
    cum, acc = [], 0.0
    for p in PROPORTIONS:
        acc += p
        cum.append(acc)
    choice = j / COLS + 0.001
    if choice < cum[0]:
        return "slope_up" if choice < cum[0] / 2 else "slope_down"
    if choice < cum[1]:
        return "rough_slope"
    if choice < cum[3]:
        return "stairs_up" if choice < cum[2] else "stairs_down"
    return "obstacles"


def slope_tile(slope):
    """A pyramid of the given slope, flattened (clipped) at the height of the platform's corner."""
    c = int(N / 2)
    ramp = (c - np.abs(c - np.arange(N))) / c          # 0 at the edge, 1 at the centre
    top = int(slope * (HS / VS) * (N / 2))
    t = (top * ramp[:, None] * ramp[None, :]).astype(np.int16)
    corner = N // 2 - int(3.0 / HS / 2)
    h = int(t[corner, corner])
    return np.clip(t, min(h, 0), max(h, 0))


def stairs_tile(step):
    """Concentric squares, each step_width samples in from the last and one riser higher."""
    width, rise, platform = int(0.31 / HS), int(step / VS), int(3.0 / HS)
    t = np.zeros((N, N), dtype=np.int16)
    lo, hi, h = 0, N, 0
    while hi - lo > platform:
        lo, hi, h = lo + width, hi - width, h + rise
        t[lo:hi, lo:hi] = h
    return t


def origin_units(t):
    lo, hi = int((TILE / 2.0 - 1) / HS), int((TILE / 2.0 + 1) / HS)
    return int(t[lo:hi, lo:hi].max())


def weighted(t):
    w = np.arange(1, N * N + 1, dtype=np.int64).reshape(N, N)
    return int(t.astype(np.int64).sum()), int((t.astype(np.int64) * w).sum())


def upsample(coarse, nf):
    """terrain_utils' random_uniform_terrain upsampling: linear spline on linspace grids, then rint."""
    nc = coarse.shape[0]
    xc, xf = np.linspace(0, N * HS, nc), np.linspace(0, N * HS, nf)
    try:
        from scipy.interpolate import interp2d
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = interp2d(xc, xc, coarse, kind="linear")(xf, xf)
    except ImportError:
        from scipy.interpolate import RectBivariateSpline
        z = RectBivariateSpline(xc, xc, coarse, kx=1, ky=1, s=0)(xf, xf)
    return np.rint(z).astype(np.int16)


def line(tag, values):
    print(tag, " ".join(str(int(v)) for v in values))


def main():
    print("# legged_gym curriculum terrain reference (tests/testdata/terrain_ref.py); heights in 0.005 m units")
    print("# kinds: column -> kind")
    line("kinds", [KINDS.index(column_kind(j)) for j in range(COLS)])
    for level in range(ROWS):
        d = level / ROWS
        slope = d * 0.4
        step = 0.05 + 0.18 * d
        tiles = {"slope_up": slope_tile(-slope), "slope_down": slope_tile(slope),
                 "stairs_up": stairs_tile(-step), "stairs_down": stairs_tile(step)}
        for name, t in tiles.items():
            s, ws = weighted(t)
            # tile KIND LEVEL SUM WEIGHTED_SUM ORIGIN_UNITS, then the line through the centre (b = N/2) and
            # the diagonal, both a = 0 .. N-1
            print("tile", KINDS.index(name), level, s, ws, origin_units(t))
            line("centre", t[:, N // 2])
            line("diag", np.diagonal(t))
        # riser of the stairs (units, positive), obstacle heights (the four values), rough slope's clip height
        h = int((0.05 + d * 0.2) / VS)
        line("level", [level, int(step / VS), -h, -h // 2, h // 2, h, int(slope_tile(slope).max())])
    lo, hi, st = int(-0.05 / VS), int(0.05 / VS), int(0.005 / VS)
    line("rough_levels", np.arange(lo, hi + st, st))
    nc = int(N * HS / 0.2)
    rng = np.random.RandomState(20211130)
    for n_c, n_f, coarse in [(nc, N, rng.randint(lo, hi + 1, (nc, nc))),
                             (3, 5, np.array([[0, 1, 2], [3, 4, 5], [6, 7, 9]])),
                             (5, 9, rng.randint(-7, 8, (5, 5)))]:
        print("upsample", n_c, n_f)
        line("coarse", coarse.ravel())
        line("fine", upsample(coarse.astype(float), n_f).ravel())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reference figures of legged_gym's curriculum terrain for tests/test_terrain.c, written to terrain_ref.txt.

An independent restatement in numpy of the formulas of legged_gym's Terrain (curriculum mode) and Isaac Gym's
terrain_utils generators, with their Python int() truncations, floor divisions and numpy rint, at legged_gym's
defaults (10 levels x 20 columns, 8 m tiles, 0.1 m / 0.005 m).  The deterministic tiles (smooth slopes and
stairs) are given whole (sums and two lines); the random ones by their parameters (rough noise levels,
obstacle heights) and, whole, as drawn from herd's counter-based streams (envs/env_rng.c, restated here) in
the order env_terrain.h gives; the rough noise's upsampling is scipy's interp2d (what terrain_utils calls), or
its FITPACK spline of degree 1 where interp2d is gone, also checked alone on fixed coarse grids.

    python3 tests/testdata/terrain_ref.py > tests/testdata/terrain_ref.txt
"""
import numpy as np

ROWS, COLS = 10, 20
TILE, HS, VS = 8.0, 0.1, 0.005
PROPORTIONS = [0.1, 0.1, 0.35, 0.25, 0.2]
KINDS = ["slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"]

N = int(TILE / HS)  # samples per tile side
RANDOM_SEED = 20211130


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


M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class TileStream:
    """herd's counter-based stream (envs/env_rng.c) of tile (row, col): env_rng_for(seed, 2^63 | row << 32 | col, 0)."""

    def __init__(self, seed, row, col):
        world = (1 << 63) | (row << 32) | col
        self.key = (mix64(mix64(seed ^ 0x243F6A8885A308D3) ^ ((world * 0x9E3779B97F4A7C15 + 0x13198A2E03707344) & M64))
                    ^ mix64(0xA4093822299F31D0))
        self.ctr = 0

    def pick(self, k):
        """A uniform index in [0, k), where numpy's random.choice draws one."""
        self.ctr += 1
        u = (mix64((self.key + 0x9E3779B97F4A7C15 * self.ctr) & M64) >> 11) * (1.0 / 9007199254740992.0)
        return min(int(u * k), k - 1)


def rough_tile(slope, stream):
    """The pyramid slope plus random_uniform_terrain's noise: levels drawn on a coarse grid (row-major), upsampled."""
    lo, hi, st = int(-0.05 / VS), int(0.05 / VS), int(0.005 / VS)
    levels = np.arange(lo, hi + st, st)
    nc = int(N * HS / 0.2)
    coarse = np.array([levels[stream.pick(len(levels))] for _ in range(nc * nc)]).reshape(nc, nc)
    return slope_tile(slope) + upsample(coarse.astype(float), N)


def obstacles_tile(height, stream):
    """discrete_obstacles_terrain: 20 rectangles (draws: width, length, start x, start y, height), then the platform."""
    h = int(height / VS)
    lo, hi, platform = int(1.0 / HS), int(2.0 / HS), int(3.0 / HS)
    sizes, heights = list(range(lo, hi, 4)), [-h, -h // 2, h // 2, h]
    t = np.zeros((N, N), dtype=np.int16)
    for _ in range(20):
        w = sizes[stream.pick(len(sizes))]
        l = sizes[stream.pick(len(sizes))]
        starts_x, starts_y = list(range(0, N - w, 4)), list(range(0, N - l, 4))
        x = starts_x[stream.pick(len(starts_x))]
        y = starts_y[stream.pick(len(starts_y))]
        t[x:x + w, y:y + l] = heights[stream.pick(4)]
    a, b = (N - platform) // 2, (N + platform) // 2
    t[a:b, a:b] = 0
    return t


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
    # the random tiles of seed RANDOM_SEED, drawn from herd's streams: random SEED KIND LEVEL COL SUM WSUM ORIGIN
    for j in range(COLS):
        kind = column_kind(j)
        if kind not in ("rough_slope", "obstacles"):
            continue
        for level in range(ROWS):
            d, stream = level / ROWS, TileStream(RANDOM_SEED, level, j)
            t = rough_tile(d * 0.4, stream) if kind == "rough_slope" else obstacles_tile(0.05 + d * 0.2, stream)
            s, ws = weighted(t)
            print("random", RANDOM_SEED, KINDS.index(kind), level, j, s, ws, origin_units(t))
            line("centre", t[:, N // 2])
            line("diag", np.diagonal(t))
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

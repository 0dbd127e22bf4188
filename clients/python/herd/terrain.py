"""A cell terrain (anymal_c-rough's field) as triangles, in tiles fetched from the server.

The `model` op's scene gives a cell terrain's grid without its heights (PROTOCOL.md 6.8: the field has
millions of samples); ``terrain_region`` asks for the samples of a box (protocol minor 7).  Viewers draw
the part of the field around the robot they follow as square **tiles** of TILE_M metres, fixed on the
sample grid from the world origin (tile (tx, ty) holds the cells of samples o + tx K .. o + tx K + K - 1 along
x, K = TILE_M / dx, o the sample at x = 0; the same along y: on anymal_c-rough a tile is one of the field's
tiles), so that tiles never overlap and a tile once fetched is kept.

A tile's mesh (the same rules in viewer/viewer.js, which meshes the same samples in the browser):

* a prism cell (sim_model.h SIM_TERRAIN_CELLS: a square of dx x dy centred on its sample, flat at the sample's
  height) is its flat top; equal heights side by side are merged into rectangles (runs along x, then equal
  runs in consecutive rows), so treads, obstacle tops and the flat border cost a few triangles;
* a smooth cell (slopes and rough slopes: the bilinear surface) is four triangles over its square from its
  sample (the surface's height at its centre) to its corners, which take the surface's height there (the
  mean of the four samples around the corner); here (not in the page) smooth cells side by side along x whose
  corner lines are straight within SMOOTH_BEND are merged into one quad;
* between a cell and its +x or +y neighbour whose top lines differ, a vertical wall joins them (stair risers,
  obstacle sides), facing the lower side.  A tile draws the walls on its +x and +y sides (it fetches one
  sample beyond them), its -x and -y sides belong to the tiles before it.

TileCache fetches and meshes the tiles around a point; Renderer (herd.render) and the viewer's HTTP side
(herd.view, herd.record) use it.
"""
import math

import numpy as np

__all__ = ["TILE_M", "is_cells", "tile_of", "tiles_around", "fetch_tile", "tile_mesh", "TileCache", "tile_json",
           "tile_from_json"]

TILE_M = 8.0            # m, side of a tile
EPS = 1e-6              # m: tops closer than this are one height (no wall)
SMOOTH_BEND = 0.011     # m: smooth cells merge along x while their corner lines bend less than this, ...
SMOOTH_TWIST = 0.006    # m: ... each cell's two edge lines rise alike within this (no twisted quads), ...
SMOOTH_RUN = 8          # ... and at most this many cells (the drawn surface stays within ~2 cm of the samples)


def is_cells(terrain):
    """True for a scene terrain of type "cells" (a region-fetched field)."""
    return bool(terrain) and terrain.get("type") == "cells"


def _k(terrain):
    return max(1, int(round(TILE_M / float(terrain["dx"])))), max(1, int(round(TILE_M / float(terrain["dy"]))))


def _origin(terrain):
    """The samples at world x = 0 and y = 0, where tiles (0, 0) start (on anymal_c-rough, where the field's tiles do)."""
    return int(round(-float(terrain["x0"]) / float(terrain["dx"]))), int(round(-float(terrain["y0"]) / float(terrain["dy"])))


def _range(terrain):
    """The tile indices holding samples: tx in [tx0, tx1], ty in [ty0, ty1]."""
    kx, ky = _k(terrain)
    ox, oy = _origin(terrain)
    return ((-ox) // kx, (int(terrain["nx"]) - 1 - ox) // kx, (-oy) // ky, (int(terrain["ny"]) - 1 - oy) // ky)


def tile_of(terrain, x, y):
    """The tile (tx, ty) holding the cell under world point (x, y), clamped to the grid."""
    kx, ky = _k(terrain)
    ox, oy = _origin(terrain)
    ix = min(max(int(math.floor((x - terrain["x0"]) / terrain["dx"] + 0.5)), 0), int(terrain["nx"]) - 1)
    iy = min(max(int(math.floor((y - terrain["y0"]) / terrain["dy"] + 0.5)), 0), int(terrain["ny"]) - 1)
    return (ix - ox) // kx, (iy - oy) // ky


def tiles_around(terrain, x, y, radius=1):
    """The tiles within `radius` tiles of the one under (x, y) (a (2 radius + 1)^2 square, clipped to the grid)."""
    tx0, tx1, ty0, ty1 = _range(terrain)
    tx, ty = tile_of(terrain, x, y)
    return [(i, j) for j in range(ty - radius, ty + radius + 1) for i in range(tx - radius, tx + radius + 1)
            if tx0 <= i <= tx1 and ty0 <= j <= ty1]


def fetch_tile(model, terrain, tile):
    """The samples of tile (tx, ty) and one beyond each side: model(terrain_region=box) is a `model` op call
    (e.g. functools.partial(client.model, session)).  Returns {"tile", "ix", "iy", "nx", "ny", "heights" (ny, nx)
    float32, "smooth" (ny, nx) uint8, "x0", "y0", "dx", "dy" (the grid's), "sx", "sy", "kx", "ky"}: the region's first
    sample (ix, iy) and the tile's interior samples [sx, sx + kx) x [sy, sy + ky)."""
    kx, ky = _k(terrain)
    ox, oy = _origin(terrain)
    tx, ty = tile
    x0, y0, dx, dy = (float(terrain[k]) for k in ("x0", "y0", "dx", "dy"))
    sx, sy = ox + tx * kx, oy + ty * ky              # the tile's first interior sample
    box = [x0 + (sx - 1) * dx, y0 + (sy - 1) * dy, x0 + (sx + kx) * dx, y0 + (sy + ky) * dy]
    reg = model(terrain_region=box)["scene"]["terrain"]["region"]
    return {"tile": [int(tx), int(ty)], "ix": int(reg["ix"]), "iy": int(reg["iy"]), "nx": int(reg["nx"]),
            "ny": int(reg["ny"]), "heights": np.asarray(reg["heights"], np.float32).reshape(reg["ny"], reg["nx"]),
            "smooth": np.asarray(reg["smooth"], np.uint8).reshape(reg["ny"], reg["nx"]),
            "x0": x0, "y0": y0, "dx": dx, "dy": dy, "sx": sx, "sy": sy, "kx": kx, "ky": ky}


def tile_json(t):
    """A fetched tile as JSON-ready data for the page (heights and smooth mask in base64, little-endian)."""
    import base64
    out = {k: v for k, v in t.items() if k not in ("heights", "smooth")}
    out["heights"] = base64.b64encode(np.ascontiguousarray(t["heights"], "<f4").tobytes()).decode("ascii")
    out["smooth"] = base64.b64encode(np.ascontiguousarray(t["smooth"], np.uint8).tobytes()).decode("ascii")
    return out


def tile_from_json(d):
    import base64
    t = dict(d)
    t["heights"] = np.frombuffer(base64.b64decode(d["heights"]), "<f4").reshape(d["ny"], d["nx"])
    t["smooth"] = np.frombuffer(base64.b64decode(d["smooth"]), np.uint8).reshape(d["ny"], d["nx"])
    return t


def _runs(key, valid, cont=None):
    """Runs of equal key along the last axis of 2-D arrays, over valid entries: (row, start, end) inclusive.
    cont (optional, same shape): where entry k may continue the run of entry k - 1, instead of equal keys."""
    rows, n = valid.shape
    brk = np.ones((rows, n), bool)
    same = (key[:, 1:] == key[:, :-1]) if cont is None else cont[:, 1:]
    brk[:, 1:] = ~same | ~valid[:, :-1]
    start = brk & valid
    r, s = np.nonzero(start)
    # each run ends before the next start or invalid entry in its row
    nxt = np.ones((rows, n), bool)
    nxt[:, :-1] = brk[:, 1:] | ~valid[:, 1:]
    er, e = np.nonzero(nxt & valid)
    return r, s, e


def _quads(a, b, c, d, nrm):
    """Two triangles (a b c, a c d) per quad of corner arrays (Q, 3), normals nrm (Q, 3)."""
    P = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    N = np.broadcast_to(np.concatenate([nrm, nrm])[:, None, :], P.shape).copy()
    return P, N


def tile_mesh(t):
    """Triangles of one fetched tile (module docstring): corners P (T, 3, 3) and normals N (T, 3, 3), world frame, m."""
    H = np.asarray(t["heights"], np.float64)
    S = np.asarray(t["smooth"]) != 0
    ny, nx = H.shape
    dx, dy = t["dx"], t["dy"]
    # interior cells of the tile, in region indices
    i0, j0 = max(t["sx"] - t["ix"], 0), max(t["sy"] - t["iy"], 0)
    i1, j1 = min(t["sx"] + t["kx"] - t["ix"], nx), min(t["sy"] + t["ky"] - t["iy"], ny)      # exclusive
    xs = t["x0"] + (t["ix"] + np.arange(nx)) * dx
    ys = t["y0"] + (t["iy"] + np.arange(ny)) * dy
    # corner heights of the bilinear surface: corner (j, i) at (xs[i] - dx/2, ys[j] - dy/2), samples clamped
    ci, cj = np.clip(np.arange(nx + 1) - 1, 0, nx - 1), np.clip(np.arange(ny + 1) - 1, 0, ny - 1)
    ci2, cj2 = np.clip(np.arange(nx + 1), 0, nx - 1), np.clip(np.arange(ny + 1), 0, ny - 1)
    C = 0.25 * (H[np.ix_(cj, ci)] + H[np.ix_(cj, ci2)] + H[np.ix_(cj2, ci)] + H[np.ix_(cj2, ci2)])
    Ps, Ns = [], []
    up = np.array([0.0, 0.0, 1.0])
    # tops of prism cells, merged
    Hi, Si = H[j0:j1, i0:i1], S[j0:j1, i0:i1]
    if Hi.size:
        r, s, e = _runs(Hi, ~Si)
        if len(r):
            h = Hi[r, s]
            order = np.lexsort((r, h, e, s))
            r, s, e, h = r[order], s[order], e[order], h[order]
            new = np.ones(len(r), bool)
            new[1:] = (s[1:] != s[:-1]) | (e[1:] != e[:-1]) | (h[1:] != h[:-1]) | (r[1:] != r[:-1] + 1)
            g = np.cumsum(new) - 1
            ra, rb = np.full(g[-1] + 1, 0), np.full(g[-1] + 1, 0)
            ra[g[::-1]] = r[::-1]
            rb[g] = r
            first = np.flatnonzero(new)
            sa, ea, ha = s[first], e[first], h[first]
            xa, xb = xs[i0 + sa] - dx / 2, xs[i0 + ea] + dx / 2
            ya, yb = ys[j0 + ra] - dy / 2, ys[j0 + rb] + dy / 2
            a = np.stack([xa, ya, ha], 1)
            b = np.stack([xb, ya, ha], 1)
            c = np.stack([xb, yb, ha], 1)
            d = np.stack([xa, yb, ha], 1)
            P, N = _quads(a, b, c, d, np.broadcast_to(up, a.shape))
            Ps.append(P)
            Ns.append(N)
        # smooth cells: quads with their corners on the bilinear surface, side by side along x merged (at most
        # SMOOTH_RUN of them) while both edge lines bend by less than SMOOTH_BEND and rise alike: a slope's
        # samples are quantized to 5 mm, so its rows are straight but for those steps
        Cl, Ch = C[j0:j1, i0:i1 + 1], C[j0 + 1:j1 + 1, i0:i1 + 1]
        cont = np.zeros(Si.shape, bool)
        dl, dh = np.diff(Cl, axis=1), np.diff(Ch, axis=1)          # per cell: the rise of its low and high edge
        cont[:, 1:] = ((np.abs(dl[:, 1:] - dl[:, :-1]) < SMOOTH_BEND) & (np.abs(dh[:, 1:] - dh[:, :-1]) < SMOOTH_BEND) &
                       (np.abs(dl[:, 1:] - dh[:, 1:]) < SMOOTH_TWIST) & (np.abs(dl[:, :-1] - dh[:, :-1]) < SMOOTH_TWIST))
        cont[:, ::SMOOTH_RUN] = False
        rr, ss, ee = _runs(None, Si, cont)
        if len(rr):
            J, I, E = rr + j0, ss + i0, ee + i0
            xa, xb, ya, yb = xs[I] - dx / 2, xs[E] + dx / 2, ys[J] - dy / 2, ys[J] + dy / 2
            a = np.stack([xa, ya, C[J, I]], 1)
            b = np.stack([xb, ya, C[J, E + 1]], 1)
            c = np.stack([xb, yb, C[J + 1, E + 1]], 1)
            d = np.stack([xa, yb, C[J + 1, I]], 1)
            one = E == I
            # a run of one cell: four triangles around its sample (the surface's height at its centre is the
            # sample's); a longer run: one quad
            n = np.cross(c - a, d - b)
            n /= np.linalg.norm(n, axis=1, keepdims=True)
            P, N = _quads(a[~one], b[~one], c[~one], d[~one], n[~one])
            Ps.append(P)
            Ns.append(N)
            if one.any():
                m = np.stack([xs[I[one]], ys[J[one]], H[J[one], I[one]]], 1)
                ring = [a[one], b[one], c[one], d[one]]
                for q in range(4):
                    T = np.stack([m, ring[q], ring[(q + 1) % 4]], 1)
                    g = np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0])
                    g /= np.linalg.norm(g, axis=1, keepdims=True)
                    Ps.append(T)
                    Ns.append(np.broadcast_to(g[:, None, :], T.shape).copy())
    # walls on the +x side of each interior cell (neighbour i + 1 in the region), then on the +y side
    for axis in (0, 1):
        if axis == 0:
            ia, ib, ja, jb = i0, min(i1, nx - 1), j0, j1
        else:
            ia, ib, ja, jb = i0, i1, j0, min(j1, ny - 1)
        if ib <= ia or jb <= ja:
            continue
        J, I = np.mgrid[ja:jb, ia:ib]
        Jn, In = (J, I + 1) if axis == 0 else (J + 1, I)
        sa, sb = S[J, I], S[Jn, In]
        # each cell's top line along the shared edge, from its low end to its high end (y for axis 0, x for 1)
        if axis == 0:
            la0 = np.where(sa, C[J, I + 1], H[J, I]); la1 = np.where(sa, C[J + 1, I + 1], H[J, I])
            lb0 = np.where(sb, C[Jn, In], H[Jn, In]); lb1 = np.where(sb, C[Jn + 1, In], H[Jn, In])
        else:
            la0 = np.where(sa, C[J + 1, I], H[J, I]); la1 = np.where(sa, C[J + 1, I + 1], H[J, I])
            lb0 = np.where(sb, C[Jn, In], H[Jn, In]); lb1 = np.where(sb, C[Jn, In + 1], H[Jn, In])
        wall = (np.abs(la0 - lb0) > EPS) | (np.abs(la1 - lb1) > EPS)
        flat = ~sa & ~sb
        # prism-prism walls merged along the edge line (the run axis: j for axis 0, i for axis 1)
        if axis == 0:
            keyA, keyB, valid, T = la0.T, lb0.T, (wall & flat).T, lambda a: a.T
        else:
            keyA, keyB, valid, T = la0, lb0, wall & flat, lambda a: a
        key = keyA * 1e4 + keyB           # heights of a few metres at 5 mm steps: distinct pairs, distinct keys
        r, s, e = _runs(key, valid)
        if axis == 0:
            # rows of the transposed arrays are cell columns (i), the run is along j
            ci_, cs, ce = I[0, 0] + r, J[0, 0] + s, J[0, 0] + e
            x = xs[ci_] + dx / 2
            p0, p1 = ys[cs] - dy / 2, ys[ce] + dy / 2
            zA, zB = H[cs, ci_], H[cs, ci_ + 1]
            a = np.stack([x, p0, zA], 1); b = np.stack([x, p1, zA], 1)
            c = np.stack([x, p1, zB], 1); d = np.stack([x, p0, zB], 1)
            nrm = np.stack([np.sign(zA - zB), np.zeros_like(x), np.zeros_like(x)], 1)
        else:
            cj_, cs, ce = J[0, 0] + r, I[0, 0] + s, I[0, 0] + e
            yv = ys[cj_] + dy / 2
            p0, p1 = xs[cs] - dx / 2, xs[ce] + dx / 2
            zA, zB = H[cj_, cs], H[cj_ + 1, cs]
            a = np.stack([p0, yv, zA], 1); b = np.stack([p1, yv, zA], 1)
            c = np.stack([p1, yv, zB], 1); d = np.stack([p0, yv, zB], 1)
            nrm = np.stack([np.zeros_like(yv), np.sign(zA - zB), np.zeros_like(yv)], 1)
        if len(r):
            P, N = _quads(a, b, c, d, nrm)
            Ps.append(P)
            Ns.append(N)
        # the other walls (a smooth cell on one side), one per edge
        k = np.flatnonzero((wall & ~flat).ravel())
        if len(k):
            Jk, Ik = J.ravel()[k], I.ravel()[k]
            A0, A1, B0, B1 = la0.ravel()[k], la1.ravel()[k], lb0.ravel()[k], lb1.ravel()[k]
            if axis == 0:
                x = xs[Ik] + dx / 2
                q0, q1 = ys[Jk] - dy / 2, ys[Jk] + dy / 2
                a = np.stack([x, q0, A0], 1); b = np.stack([x, q1, A1], 1)
                c = np.stack([x, q1, B1], 1); d = np.stack([x, q0, B0], 1)
                nrm = np.stack([np.sign(A0 + A1 - B0 - B1), np.zeros_like(x), np.zeros_like(x)], 1)
            else:
                yv = ys[Jk] + dy / 2
                q0, q1 = xs[Ik] - dx / 2, xs[Ik] + dx / 2
                a = np.stack([q0, yv, A0], 1); b = np.stack([q1, yv, A1], 1)
                c = np.stack([q1, yv, B1], 1); d = np.stack([q0, yv, B0], 1)
                nrm = np.stack([np.zeros_like(yv), np.sign(A0 + A1 - B0 - B1), np.zeros_like(yv)], 1)
            P, N = _quads(a, b, c, d, nrm)
            Ps.append(P)
            Ns.append(N)
        del T
    if not Ps:
        return np.zeros((0, 3, 3)), np.zeros((0, 3, 3))
    return np.concatenate(Ps), np.concatenate(Ns)


class TileCache:
    """Tiles of one cell terrain, fetched on demand through model(terrain_region=...) and kept (at most
    max_tiles, the least recently used dropped)."""

    def __init__(self, terrain, model, max_tiles=64):
        self.terrain = terrain
        self.model = model
        self.max_tiles = int(max_tiles)
        self.tiles = {}                 # (tx, ty) -> fetched tile
        self.meshes = {}                # (tx, ty) -> (P, N)
        self.fetches = 0

    def get(self, tile):
        tile = (int(tile[0]), int(tile[1]))
        t = self.tiles.pop(tile, None)
        if t is None:
            t = fetch_tile(self.model, self.terrain, tile)
            self.fetches += 1
        self.tiles[tile] = t                 # most recent last
        while len(self.tiles) > self.max_tiles:
            old = next(iter(self.tiles))
            del self.tiles[old]
            self.meshes.pop(old, None)
        return t

    def mesh(self, tile):
        tile = (int(tile[0]), int(tile[1]))
        t = self.get(tile)
        m = self.meshes.get(tile)
        if m is None:
            m = self.meshes[tile] = tile_mesh(t)
        return m

    def around(self, x, y, radius=1):
        return tiles_around(self.terrain, x, y, radius)

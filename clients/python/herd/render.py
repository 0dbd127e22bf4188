"""A small CPU rasterizer for herd scenes: numpy only, no display, no GPU.

    from herd.render import Renderer
    r = Renderer(env.scene(), width=320, height=240)
    p = env.poses([0])
    frame = r.render(p["body_pos"][0], p["body_quat"][0])        # uint8 (240, 320, 3)

What it draws: every geometry of the scene (spheres, boxes, cylinders, capsules) as triangles with a
z-buffer and Lambert shading (per-vertex intensities interpolated across each triangle: Gouraud), on a
checkered ground (the plane, or the heightfield as triangles; a cell terrain as the tiles of herd.terrain
around the camera's target, stair risers as vertical walls) under a sky gradient.  The camera looks at
the base (body 0) from a fixed direction and distance, so it follows the robot without turning.

How it is fast enough in Python: the triangles of a frame are transformed (one product per body),
culled and shaded as arrays; rasterization works on scanline spans: each visible triangle's rows, and in
each row the span of pixel centres inside it, are computed for all triangles at once, then every fragment's
pixel and 1/depth (affine on the screen) in one expression; the nearest fragment of each pixel is found by
raising a depth buffer (seeded with the ground's) in a few scatter passes, and only those are shaded; the
ground is one ray-plane intersection per pixel whose ray directions are computed once (the camera never
turns).  The frame is kept as one 32-bit word per pixel while drawn (numpy is slow at arrays whose last
axis is 3) and turned into bytes at the end.

Contact diagnostics (``render(..., diagnostics=diagnostics_of(poses, i))``, poses read with
``diagnostics=True``) are drawn as the viewer page draws them (viewer/viewer.js, the same colours and
sizes): each contact as a ring around its point coloured by its state (open, stick, slip), its normal
impulse as a red arrow and its friction impulse as a blue one, each joint-limit impulse as a violet ball at
the joint (over the robot), and a magenta diamond above a robot whose last step's contact answer came from
the solver's fallback model.  They are unlit triangles through the same z-buffer as the scene, each kind
built for all the contacts of a frame in one pass of array operations.
"""
import functools
import math
import sys

import numpy as np

__all__ = ["Renderer", "quat_to_mat", "primitive_mesh", "diagnostics_of", "diagnostic_mesh"]

SKY_TOP = np.array([0.55, 0.70, 0.90])
SKY_HORIZON = np.array([0.88, 0.91, 0.95])
GROUND_A = np.array([0.80, 0.80, 0.78])
GROUND_B = np.array([0.55, 0.57, 0.58])


def quat_to_mat(q):
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) in w x y z order (body to world)."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def _sphere_patch(radius, zc, lat0, lat1, nlat, nlon):
    """Triangles (corners, normals) of the zone between latitudes lat0 < lat1 (radians) of a sphere centred
    at (0, 0, zc) (a whole sphere, or a capsule's cap)."""
    lats = np.linspace(lat0, lat1, nlat + 1)
    lons = np.linspace(0, 2 * np.pi, nlon + 1)
    la, lo = np.meshgrid(lats, lons, indexing="ij")
    n = np.stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)], -1)
    p = radius * n + np.array([0.0, 0.0, zc])
    return _grid_tris(p, n)


def _grid_tris(p, n):
    """Two triangles per cell of a (rows, cols) grid of points p and normals n."""
    a, b = p[:-1, :-1], p[1:, :-1]
    c, d = p[1:, 1:], p[:-1, 1:]
    na, nb, nc, nd = n[:-1, :-1], n[1:, :-1], n[1:, 1:], n[:-1, 1:]
    P = np.concatenate([np.stack([a, b, c], -2).reshape(-1, 3, 3), np.stack([a, c, d], -2).reshape(-1, 3, 3)])
    N = np.concatenate([np.stack([na, nb, nc], -2).reshape(-1, 3, 3), np.stack([na, nc, nd], -2).reshape(-1, 3, 3)])
    return P, N


def _disc(radius, z, up, nseg):
    ang = np.linspace(0, 2 * np.pi, nseg + 1)
    rim = np.stack([radius * np.cos(ang), radius * np.sin(ang), np.full_like(ang, z)], -1)
    ctr = np.array([0.0, 0.0, z])
    P = np.stack([np.broadcast_to(ctr, (nseg, 3)), rim[:-1], rim[1:]], 1)
    N = np.broadcast_to(np.array([0.0, 0.0, 1.0 if up else -1.0]), P.shape).copy()
    return P, N


def primitive_mesh(kind, size, segments=12):
    """Triangles of one primitive in its own frame: corners (T, 3, 3) and corner normals (T, 3, 3).

    kind: "sphere" (size[0] radius), "box" (half extents), "cylinder" / "capsule" (radius, half length
    along z).  Curved surfaces have smooth normals; box faces and cylinder caps flat ones."""
    s = [float(v) for v in size] + [0.0] * (3 - len(size))
    nlon = max(6, int(segments))
    if kind == "sphere":
        return _sphere_patch(s[0], 0.0, -np.pi / 2, np.pi / 2, max(3, nlon // 2), nlon)
    if kind == "box":
        hx, hy, hz = s
        Ps, Ns = [], []
        for axis in range(3):
            for sign in (-1.0, 1.0):
                u, v = [k for k in range(3) if k != axis]
                corners = []
                for cu, cv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                    c = np.zeros(3)
                    c[axis] = sign * s[axis]
                    c[u] = cu * s[u]
                    c[v] = cv * s[v]
                    corners.append(c)
                nrm = np.zeros(3)
                nrm[axis] = sign
                Ps += [[corners[0], corners[1], corners[2]], [corners[0], corners[2], corners[3]]]
                Ns += [[nrm] * 3, [nrm] * 3]
        del hx, hy, hz
        return np.array(Ps), np.array(Ns)
    if kind in ("cylinder", "capsule"):
        r, h = s[0], s[1]
        ang = np.linspace(0, 2 * np.pi, nlon + 1)
        zz = np.array([-h, h])
        a, z = np.meshgrid(zz, ang, indexing="ij")
        n = np.stack([np.cos(z), np.sin(z), np.zeros_like(z)], -1)
        p = np.stack([r * np.cos(z), r * np.sin(z), a], -1)
        side = _grid_tris(p, n)
        if kind == "cylinder":
            parts = [side, _disc(r, h, True, nlon), _disc(r, -h, False, nlon)]
        else:
            nl = max(2, nlon // 4)
            parts = [side, _sphere_patch(r, h, 0.0, np.pi / 2, nl, nlon), _sphere_patch(r, -h, -np.pi / 2, 0.0, nl, nlon)]
        return np.concatenate([q[0] for q in parts]), np.concatenate([q[1] for q in parts])
    raise ValueError("unknown primitive %r" % (kind,))


def _srgb(hexcode):
    return np.array([(hexcode >> 16) & 255, (hexcode >> 8) & 255, hexcode & 255], dtype=np.float64) / 255.0


# the page's diagnostics (viewer/viewer.js): colours (sRGB) and sizes
STATE_NAMES = ("open", "stick", "slip")
STATE_COLOURS = tuple(_srgb(c) for c in (0x19c8e6, 0x17b83a, 0xffb000))      # open cyan, stick green, slip amber
NORMAL_COLOUR, FRICTION_COLOUR = _srgb(0xe8262b), _srgb(0x2050ff)
LIMIT_COLOUR, FALLBACK_COLOUR = _srgb(0x8a2be2), _srgb(0xff00aa)
IMPULSE_SCALE, ARROW_MIN, ARROW_MAX = 0.5, 0.04, 0.6      # arrow length: m per N s, bounds
RING_INNER, RING_OUTER = 0.035, 0.06                      # m: around a foot's 0.03 m sphere
LIMIT_SCALE, LIMIT_MIN, LIMIT_MAX = 0.5, 0.02, 0.08       # limit ball radius: m per N m s, bounds
FALLBACK_SIZE, FALLBACK_HEIGHT = 0.07, 0.45               # the diamond's radius, its height over the base (m)
SHAFT_RADIUS = 0.006                                      # an arrow's shaft (the page draws a line)


def diagnostics_of(poses, i):
    """World i's contact diagnostics from a poses reply (HerdVectorEnv.poses with contacts=True or
    diagnostics=True), as Renderer.render takes them: "pos", "normal" (n, 3), "impulse" (n,) of its n
    contacts, and where the reply has them "state" (n,), "friction" (n, 3), "limit" (nbody,), "fallback"."""
    n = int(poses["contact_count"][i])
    d = {"pos": poses["contact_pos"][i, :n], "normal": poses["contact_normal"][i, :n],
         "impulse": poses["contact_impulse"][i, :n]}
    if "contact_state" in poses:
        d["state"] = poses["contact_state"][i, :n]
        d["friction"] = poses["contact_friction"][i, :n]
    if "limit_impulse" in poses:
        d["limit"] = poses["limit_impulse"][i]
    if "fallback" in poses:
        d["fallback"] = bool(poses["fallback"][i])
    return d


def _frames_z(d):
    """Rotations (n, 3, 3) whose third columns are the unit vectors d (n, 3) (the first two complete them)."""
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    # u = a x d with a = x (or y where d is near x), normalized; v = d x u
    near_x = np.abs(dx) >= 0.9
    ux = np.where(near_x, dz, 0.0)
    uy = np.where(near_x, 0.0, -dz)
    uz = np.where(near_x, -dx, dy)
    s = 1.0 / np.sqrt(ux * ux + uy * uy + uz * uz)
    ux, uy, uz = ux * s, uy * s, uz * s
    F = np.empty((len(d), 3, 3))
    F[:, 0, 0], F[:, 1, 0], F[:, 2, 0] = ux, uy, uz
    F[:, 0, 1], F[:, 1, 1], F[:, 2, 1] = dy * uz - dz * uy, dz * ux - dx * uz, dx * uy - dy * ux
    F[:, :, 2] = d
    return F


@functools.lru_cache(maxsize=None)
def _ring(inner, outer, nseg):
    ang = np.linspace(0, 2 * np.pi, nseg + 1)
    ci = np.stack([inner * np.cos(ang), inner * np.sin(ang), np.zeros_like(ang)], -1)
    co = np.stack([outer * np.cos(ang), outer * np.sin(ang), np.zeros_like(ang)], -1)
    return np.concatenate([np.stack([ci[:-1], co[:-1], co[1:]], 1), np.stack([ci[:-1], co[1:], ci[1:]], 1)])


# An arrow along +z from the origin (a shaft of SHAFT_RADIUS, a cone head): its triangles' corners as a
# direction around the axis (cos, sin) and a role, each role a (radius, height) set per arrow by _arrows.
SHAFT_LO, SHAFT_HI, HEAD_BASE, TIP, HEAD_CENTRE = range(5)


@functools.lru_cache(maxsize=None)
def _arrow_template(nseg):
    """An arrow along +z from the origin (a shaft, a cone head) for _arrows: its corners (3 T, 3) as unit
    offsets across the axis (cos, sin, 0), and each corner's role: which (radius, height) of the arrow it
    takes (SHAFT_LO, SHAFT_HI, HEAD_BASE, TIP, HEAD_CENTRE)."""
    ang = np.linspace(0, 2 * np.pi, nseg + 1)
    cs = np.stack([np.cos(ang), np.sin(ang)], -1)
    a, b = cs[:-1], cs[1:]
    tris, roles = [], []
    for corners, r in (((a, b, b), (SHAFT_LO, SHAFT_LO, SHAFT_HI)), ((a, b, a), (SHAFT_LO, SHAFT_HI, SHAFT_HI)),
                       ((a, b, a), (HEAD_BASE, HEAD_BASE, TIP)), ((a, b, a), (HEAD_CENTRE, HEAD_BASE, HEAD_BASE))):
        tris.append(np.stack(corners, 1))
        roles.append(np.broadcast_to(r, (nseg, 3)))
    cs, role = np.concatenate(tris).reshape(-1, 2), np.concatenate(roles).reshape(-1)
    return np.concatenate([cs, np.zeros((len(cs), 1))], 1), role


def _arrows(origin, frames, magnitude, head_length, head_width, nseg):
    """The corners (..., 3 T, 3) of arrows from origin (..., 3) along the third columns of frames (..., 3, 3)
    (_frames_z of their unit directions), their lengths from the impulses' magnitudes (...) as the page's
    (IMPULSE_SCALE, ARROW_MIN, ARROW_MAX), their heads at most head_length long and head_width wide (arrays
    broadcast against magnitude: three.js's ArrowHelper's proportions); an arrow whose magnitude is not
    positive has all its corners at its origin (nothing to draw)."""
    across, role = _arrow_template(nseg)
    on = magnitude > 0
    L = np.where(on, np.minimum(np.maximum(IMPULSE_SCALE * magnitude, ARROW_MIN), ARROW_MAX), 0.0)
    hl = np.minimum(head_length, 0.3 * L)
    hr = 0.5 * np.minimum(head_width, 0.2 * L)
    shaft = np.maximum(L - hl, 0.0)
    zero = np.zeros_like(L)
    # per role: (radius, height), then per corner
    radius = np.stack([zero + SHAFT_RADIUS * on, zero + SHAFT_RADIUS * on, hr, zero, zero], -1)[..., role]
    height = np.stack([zero, shaft, shaft, L, shaft], -1)[..., role]
    # corner = origin + radius (cos u + sin v) + height d
    world = np.matmul(across, np.swapaxes(frames, -1, -2)) * radius[..., None]
    world += height[..., None] * frames[..., None, :, 2]
    world += origin[..., None, :]
    return world


@functools.lru_cache(maxsize=None)
def _diamond():
    e = np.eye(3) * FALLBACK_SIZE
    return np.array([[e[0] * sx, e[1] * sy, e[2] * sz] for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)])


@functools.lru_cache(maxsize=None)
def _unit_sphere(segments):
    return primitive_mesh("sphere", [1.0], segments)[0]


@functools.lru_cache(maxsize=None)
def _contact_marks(segments):
    """What diagnostic_mesh draws per contact, fixed: the ring's corners (3 R, 3) in its frame, the
    arrows' head sizes (normal, friction) and their triangles' colours (2 T, 3)."""
    ring = _ring(RING_INNER, RING_OUTER, 3 * segments).reshape(-1, 3)
    nt = len(_arrow_template(segments)[1]) // 3
    colours = np.repeat([NORMAL_COLOUR, FRICTION_COLOUR], nt, axis=0)
    return ring, np.array([0.05, 0.04]), np.array([0.03, 0.025]), colours


def diagnostic_mesh(diagnostics, body_pos, segments=8):
    """The triangles of one world's diagnostics (diagnostics_of's dict; body_pos (nbody, 3) for the limit
    balls and the fallback diamond): corners (T, 3, 3) in the world frame, colours (T, 3) in [0, 1], and
    a mask (T,) of the ones drawn over everything (the limit balls, seen through the drives as on the page).
    Without "state" (an older server) only the normal impulses are drawn.

    Each kind of mark is built for all the contacts at once (a few array operations per frame whatever
    the number of contacts); a contact's arrow with nothing to show (no normal impulse: an open contact; no
    friction impulse) is left as triangles of no area at the contact, which the rasterizer drops."""
    d = diagnostics
    bp = np.asarray(body_pos, dtype=np.float64).reshape(-1, 3)
    Ps, Cs, over = [], [], []
    pos = np.asarray(d["pos"], dtype=np.float64).reshape(-1, 3)
    state = d.get("state")
    k = len(pos)
    if k:
        ring, head_l, head_w, arrow_colours = _contact_marks(segments)
        nrm = np.asarray(d["normal"], dtype=np.float64).reshape(-1, 3)
        n2 = np.einsum("ki,ki->k", nrm, nrm)
        ok = n2 > 0.25
        nrm = np.where(ok[:, None], nrm / np.sqrt(np.where(ok, n2, 1.0))[:, None], [0.0, 0.0, 1.0])
        if state is None:
            F = _frames_z(nrm)
            arrows = _arrows(pos, F, np.asarray(d["impulse"], dtype=np.float64).reshape(-1), head_l[0], head_w[0],
                             segments)
            Ps.append(arrows.reshape(-1, 3, 3))
            Cs.append(np.tile(arrow_colours[:len(arrow_colours) // 2], (k, 1)))
        else:
            # rows 0..k-1 the normals, k..2k-1 the friction impulses' directions
            f = d.get("friction")
            f = np.zeros((k, 3)) if f is None else np.asarray(f, dtype=np.float64).reshape(-1, 3)
            m = np.sqrt(np.einsum("ki,ki->k", f, f))
            fm = m > 1e-6
            F = _frames_z(np.concatenate([nrm, np.where(fm[:, None], f / np.where(fm, m, 1.0)[:, None], nrm)]))
            F = F.reshape(2, k, 3, 3).transpose(1, 0, 2, 3)                   # (contact, normal/friction)
            origin = np.stack([pos, pos + 0.01 * nrm], 1)
            mag = np.stack([np.asarray(d["impulse"], dtype=np.float64).reshape(-1), np.where(fm, m, 0.0)], 1)
            rings = np.matmul(ring, F[:, 0].transpose(0, 2, 1)) + (pos + 0.002 * nrm)[:, None, :]
            s = np.asarray(state, dtype=np.int64).reshape(-1)
            s = np.where((s >= 0) & (s < 3), s, 0)
            Ps += [rings.reshape(-1, 3, 3), _arrows(origin, F, mag, head_l, head_w, segments).reshape(-1, 3, 3)]
            Cs += [np.repeat(np.asarray(STATE_COLOURS)[s], len(ring) // 3, axis=0), np.tile(arrow_colours, (k, 1))]
    if state is not None:
        lim = d.get("limit")
        if lim is not None:
            lim = np.abs(np.asarray(lim, dtype=np.float64)).reshape(-1)[:len(bp)]
            b = np.flatnonzero(lim > 1e-6)
            if len(b):
                radius = np.minimum(np.maximum(LIMIT_SCALE * lim[b], LIMIT_MIN), LIMIT_MAX)
                balls = _unit_sphere(segments)[None] * radius[:, None, None, None] + bp[b][:, None, None, :]
                Ps.append(balls.reshape(-1, 3, 3))
                Cs.append(np.broadcast_to(LIMIT_COLOUR, (len(Ps[-1]), 3)))
                over.append(len(Ps) - 1)
        if d.get("fallback"):
            Ps.append(_diamond() + (bp[0] + [0.0, 0.0, FALLBACK_HEIGHT]))
            Cs.append(np.broadcast_to(FALLBACK_COLOUR, (len(Ps[-1]), 3)))
    if not Ps:
        return np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0, bool)
    mask = np.concatenate([np.full(len(P), j in over) for j, P in enumerate(Ps)])
    if len(Ps) == 1:
        return Ps[0], Cs[0], mask
    return np.concatenate(Ps), np.concatenate(Cs), mask



# where a packed pixel's r, g, b go in its uint32, so that its bytes in memory are r, g, b, 0
_SHIFTS = (0, 8, 16) if sys.byteorder == "little" else (24, 16, 8)


def _pack(rgb):
    """Colours (..., 3) of integers in 0..255 as packed pixels (...) of uint32 (bytes r, g, b, 0 in memory)."""
    rgb = np.asarray(rgb).astype(np.uint32, copy=False)
    return (rgb[..., 0] << _SHIFTS[0]) | (rgb[..., 1] << _SHIFTS[1]) | (rgb[..., 2] << _SHIFTS[2])


def _segments(counts, total):
    """For consecutive segments of the given lengths (counts (n,) >= 0, summing to total): the segment of
    each element (total,) and each segment's first element (n,).  Like np.repeat(np.arange(n), counts), whose
    per-segment copies are slow when the segments are short: one mark at each non-empty segment's start
    (the step from the previous non-empty segment's index), summed."""
    start = np.cumsum(counts) - counts
    nz = np.flatnonzero(counts)
    seg = np.zeros(total, np.int64)
    seg[start[nz]] = np.diff(nz, prepend=0)
    return np.cumsum(seg, out=seg), start


def _unpack(img, H, W):
    """A frame of packed pixels (H W,) as uint8 (H, W, 3), C-contiguous.  Dropping every fourth byte of a
    long array one byte at a time is slow in numpy; on a little-endian machine four pixels (16 bytes) are
    shifted into three 32-bit words (their 12 bytes) with a few whole-array operations instead."""
    n = H * W
    if sys.byteorder != "little" or n % 4:
        return np.ascontiguousarray(img.view(np.uint8).reshape(H, W, 4)[..., :3])
    p = img.reshape(-1, 4)
    out = np.empty((n // 4, 3), np.uint32)
    np.bitwise_or(p[:, 0], p[:, 1] << 24, out=out[:, 0])
    np.bitwise_or(p[:, 1] >> 8, p[:, 2] << 16, out=out[:, 1])
    np.bitwise_or(p[:, 2] >> 16, p[:, 3] << 8, out=out[:, 2])
    return out.view(np.uint8).reshape(H, W, 3)


TERRAIN_WALL = np.array([0.62, 0.60, 0.56])


def _terrain_colours(P, N, checker):
    """Colours of terrain triangles: flat tops alternate by 5 cm height bands (so that each stair tread
    differs from the next), sloped quads by a checker of the given size, walls one colour."""
    c = P.mean(1)
    flat = N[:, 0, 2] > 0.999
    wall = np.abs(N[:, 0, 2]) < 1e-6
    band = np.floor(c[:, 2] / 0.05 + 1e-6).astype(np.int64) & 1
    chk = (np.floor(c[:, 0] / checker).astype(np.int64) + np.floor(c[:, 1] / checker).astype(np.int64)) & 1
    odd = np.where(flat, band, chk).astype(bool)
    out = np.where(odd[:, None], GROUND_B, GROUND_A)
    return np.where(wall[:, None], TERRAIN_WALL, out)


def _outward(P, N):
    """Orders each triangle's corners so that its geometric normal agrees with its corner normals (for
    back-face culling); also returns which triangles are not degenerate (the caller keeps those)."""
    g = np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0])
    keep = np.linalg.norm(g, axis=1) > 1e-12
    flip = np.einsum("ti,ti->t", g, N.sum(1)) < 0
    P, N = P.copy(), N.copy()
    P[flip, 1], P[flip, 2] = P[flip, 2].copy(), P[flip, 1].copy()
    N[flip, 1], N[flip, 2] = N[flip, 2].copy(), N[flip, 1].copy()
    return P, N, keep


# cluster size (m) of the further decimation of the visual meshes for this renderer: enough triangles to
# show the shells, drives and feet, few enough for 100 frames/s at 320 x 240
VISUAL_CELL = 0.025


class Renderer:
    """Draws one world of a scene (``HerdVectorEnv.scene()``) from its body poses.

    width, height: pixels (default 320 x 240).  fov: vertical field of view (degrees).  distance,
    azimuth, elevation: where the camera sits relative to the point it looks at (metres, degrees; azimuth
    from +x towards +y).  segments: facets around curved primitives.  checker: ground tile size (m).
    light: direction towards the light (world).  visual: draw the robot as it looks (herd.meshes: the
    visual meshes of viewer/assets, decimated to mesh_cell) where the scene's model has them; False, or a
    model without meshes: the collision primitives.  tiles: on a cell terrain (anymal_c-rough), a
    herd.terrain.TileCache of it: the tiles within tile_radius (m) of the camera's target are drawn (fetched
    when the target moves on), over a plane just below them; without it the cell terrain is drawn as its plane.

    A Renderer keeps its working buffers (depth, corners) from frame to frame: one thread draws with it at a
    time.  Each frame returned is a new array.
    """

    def __init__(self, scene, width=320, height=240, fov=50.0, distance=1.9, azimuth=-125.0, elevation=22.0,
                 segments=12, checker=0.5, light=(0.35, -0.45, 0.82), visual=True, mesh_cell=VISUAL_CELL,
                 tiles=None, tile_radius=6.0):
        self.width, self.height = int(width), int(height)
        self.checker = float(checker)
        self.set_view(distance, azimuth, elevation, fov)
        L = np.asarray(light, dtype=np.float64)
        self.light = L / np.linalg.norm(L)
        Ps, Ns, tb, cols = [], [], [], []
        meshes = None
        if visual:
            from .meshes import load_visual
            meshes = load_visual(scene, cell=mesh_cell)
        self.visual = bool(meshes)
        for b, (P, N, C) in sorted((meshes or {}).items()):
            Ps.append(P)
            Ns.append(N)
            tb.append(np.full(len(P), int(b)))
            cols.append(C.mean(1))
        for g in scene["geoms"]:
            if meshes and int(g["body"]) in meshes:
                continue
            P, N = primitive_mesh(g["type"], g["size"], segments)
            R = quat_to_mat(np.asarray(g["quat"], dtype=np.float64))
            P = P @ R.T + np.asarray(g["pos"], dtype=np.float64)
            N = N @ R.T
            Ps.append(P)
            Ns.append(N)
            tb.append(np.full(len(P), int(g["body"])))
            cols.append(np.broadcast_to(np.asarray(g["rgba"][:3], dtype=np.float64), (len(P), 3)))
        terrain = scene.get("terrain", {"type": "plane", "height": 0.0})
        from .terrain import is_cells
        self.cells = is_cells(terrain)
        self.plane = terrain.get("type", "plane") == "plane" or self.cells
        self.ground_height = float(terrain.get("height", 0.0)) if self.plane else 0.0
        if not self.plane:
            P, N, C = self._heightfield(terrain)
            Ps.append(P)
            Ns.append(N)
            tb.append(np.full(len(P), -1))
            cols.append(C)
        self.tiles = tiles if self.cells else None
        self.tile_radius = float(tile_radius)
        self._tile_keys = None
        self._fixed = (Ps, Ns, tb, cols)
        self._build([], [], [], [])
        self.target = None

    def _build(self, Ps, Ns, tb, cols):
        """The triangle arrays: the scene's (self._fixed) and the world-fixed ones given (terrain tiles)."""
        Ps, Ns, tb, cols = (a + b for a, b in zip(self._fixed, (Ps, Ns, tb, cols)))
        if Ps:
            P, N, ok = _outward(np.concatenate(Ps), np.concatenate(Ns))
            self._P, self._N = P[ok], N[ok]
            self._tb, self._col = np.concatenate(tb)[ok], np.concatenate(cols)[ok]
        else:
            self._P = self._N = np.zeros((0, 3, 3))
            self._tb, self._col = np.zeros(0, int), np.zeros((0, 3))
        # triangles sorted by body (world-fixed ones, body -1, first), so that each body's are one block
        order = np.argsort(self._tb, kind="stable")
        self._P, self._N, self._tb, self._col = self._P[order], self._N[order], self._tb[order], self._col[order]
        self._P32, self._N32 = self._P.astype(np.float32), self._N.astype(np.float32)
        self._V32 = self._P32.reshape(-1, 3)
        self._cbuf = np.empty_like(self._V32)
        self._col32 = self._col.astype(np.float32)
        self._world = self._tb < 0
        bodies, starts = np.unique(self._tb, return_index=True)
        ends = np.append(starts[1:], len(self._tb))
        self._blocks = [(int(b), 3 * int(a), 3 * int(e)) for b, a, e in zip(bodies, starts, ends)]   # corner rows
        self._tb = np.where(self._world, 0, self._tb)
        self._tbl = np.where(self._world, -1, self._tb)        # the light's row per triangle: the world's last

    def _terrain_near(self, target):
        """On a cell terrain: the tiles (herd.terrain) within tile_radius of target drawn, the plane under them."""
        from .terrain import TILE_M, tiles_around
        t = self.tiles.terrain
        keys = []
        for k in tiles_around(t, target[0], target[1], radius=2):
            # the tile's square, from its first sample's cell corner
            ox, oy = round(-t["x0"] / t["dx"]), round(-t["y0"] / t["dy"])
            xa = t["x0"] + (ox + k[0] * round(TILE_M / t["dx"]) - 0.5) * t["dx"]
            ya = t["y0"] + (oy + k[1] * round(TILE_M / t["dy"]) - 0.5) * t["dy"]
            ddx = max(xa - target[0], 0.0, target[0] - xa - TILE_M)
            ddy = max(ya - target[1], 0.0, target[1] - ya - TILE_M)
            if math.hypot(ddx, ddy) <= self.tile_radius:
                keys.append(k)
        if keys == self._tile_keys:
            return
        Ps, Ns, tb, cols = [], [], [], []
        low = math.inf
        for k in keys:
            P, N = self.tiles.mesh(k)
            if not len(P):
                continue
            Ps.append(P)
            Ns.append(N)
            tb.append(np.full(len(P), -1))
            cols.append(_terrain_colours(P, N, self.checker))
            low = min(low, float(P[..., 2].min()))
        self._build(Ps, Ns, tb, cols)
        self._tile_keys = keys
        self.ground_height = (low if math.isfinite(low) else float(t.get("height", 0.0))) - 0.02

    # ---- camera ------------------------------------------------------------------------------------

    def set_view(self, distance=None, azimuth=None, elevation=None, fov=None):
        """Changes the camera's offset from its target and its field of view (None: unchanged)."""
        if distance is not None:
            self.distance = float(distance)
        if azimuth is not None:
            self.azimuth = float(azimuth)
        if elevation is not None:
            self.elevation = float(elevation)
        if fov is not None:
            self.fov = float(fov)
        az, el = math.radians(self.azimuth), math.radians(self.elevation)
        back = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
        self._offset = self.distance * back
        f = -back
        r = np.cross(f, [0.0, 0.0, 1.0])
        r /= np.linalg.norm(r)
        u = np.cross(r, f)
        self._B = np.stack([r, u, f])          # rows: camera right, up, forward (world)
        self.focal = 0.5 * self.height / math.tan(math.radians(self.fov) / 2)
        W, H = self.width, self.height
        self._cx, self._cy = 0.5 * W, 0.5 * H
        # pixel-centre rays (forward component 1): d = f + a r + b u
        a = (np.arange(W) + 0.5 - self._cx) / self.focal
        b = -(np.arange(H) + 0.5 - self._cy) / self.focal
        A, Bv = np.meshgrid(a, b)
        d = f[None, None, :] + A[..., None] * r + Bv[..., None] * u
        dz = d[..., 2]
        ground = dz < -1e-6
        safe = np.where(ground, dz, -1.0)
        self._gx = np.where(ground, d[..., 0] / -safe, 0.0).astype(np.float32)   # hit = eye + k (gx, gy)
        self._gy = np.where(ground, d[..., 1] / -safe, 0.0).astype(np.float32)   # with k = eye_z - h
        self._ground_iz = np.where(ground, -dz, 0.0).astype(np.float32).ravel()  # 1/depth = -dz / k
        self._ground = ground
        # sky gradient; the ground fades to the horizon colour with distance (nominal eye height)
        t = np.clip(Bv / max(np.abs(b).max(), 1e-6), 0, 1)[..., None]
        sky = SKY_HORIZON * (1 - t) + SKY_TOP * t
        k_nom = max(self._offset[2] + 0.5, 0.2)
        dist = np.where(ground, k_nom / -safe, 1e9)
        fade = np.clip((dist - 4.0) / 14.0, 0, 1)[..., None]
        def u8(x):
            return (np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8)
        # as packed pixels (_pack): the two tiles' colours and their bitwise difference, the sky's
        self._C0 = _pack(u8(np.where(ground[..., None], GROUND_A * (1 - fade) + SKY_HORIZON * fade, sky)))
        self._X01 = self._C0 ^ _pack(u8(np.where(ground[..., None], GROUND_B * (1 - fade) + SKY_HORIZON * fade, sky)))
        self._Csky = _pack(u8(np.where(ground[..., None], SKY_HORIZON, sky)))
        self._C0, self._X01, self._Csky = self._C0.ravel(), self._X01.ravel(), self._Csky.ravel()
        self._zbuf = np.empty(W * H, np.float32)          # the rasterizer's depth buffer (1/depth) and owners
        self._owner = np.empty(W * H, np.int64)

    def eye_for(self, target):
        """The camera position looking at world point target."""
        return np.asarray(target, dtype=np.float64) + self._offset

    def project(self, points, target):
        """Pixel coordinates (x right, y down; pixel (i, j) spans [i, i + 1) x [j, j + 1)) and depth of world
        points (..., 3) seen by the camera looking at target: arrays (..., 2) and (...)."""
        c = (np.asarray(points, dtype=np.float64) - self.eye_for(target)) @ self._B.T
        z = c[..., 2]
        xy = np.stack([self._cx + self.focal * c[..., 0] / z, self._cy - self.focal * c[..., 1] / z], -1)
        return xy, z

    # ---- drawing -----------------------------------------------------------------------------------

    def _heightfield(self, t, max_cells=96):
        nx, ny = int(t["nx"]), int(t["ny"])
        h = np.asarray(t["heights"], dtype=np.float64).reshape(ny, nx)
        sx, sy = max(1, -(-nx // max_cells)), max(1, -(-ny // max_cells))
        h = h[::sy, ::sx]
        xs = float(t["x0"]) + float(t["dx"]) * sx * np.arange(h.shape[1])
        ys = float(t["y0"]) + float(t["dy"]) * sy * np.arange(h.shape[0])
        X, Y = np.meshgrid(xs, ys)
        p = np.stack([X, Y, h], -1)
        gy, gx = np.gradient(h, ys, xs)
        n = np.stack([-gx, -gy, np.ones_like(h)], -1)
        n /= np.linalg.norm(n, axis=-1, keepdims=True)
        P, N = _grid_tris(p.transpose(1, 0, 2), n.transpose(1, 0, 2))
        cx = np.floor(P.mean(1)[:, 0] / self.checker).astype(int)
        cy = np.floor(P.mean(1)[:, 1] / self.checker).astype(int)
        C = np.where(((cx + cy) & 1)[:, None] == 1, GROUND_B, GROUND_A)
        return P, N, C

    def render(self, body_pos, body_quat, target=None, diagnostics=None):
        """One frame (uint8 (height, width, 3)) of a world whose bodies are at body_pos (nbody, 3) with
        orientations body_quat (nbody, 4, w x y z).  target: the point the camera looks at (default: the
        base, body 0).  diagnostics: the world's contact diagnostics (diagnostics_of) drawn over the scene."""
        bp = np.asarray(body_pos, dtype=np.float64).reshape(-1, 3)
        target = bp[0] if target is None else np.asarray(target, dtype=np.float64)
        self.target = target
        if self.tiles is not None:
            self._terrain_near(target)
        eye = self.eye_for(target)
        W, H = self.width, self.height
        # ground: checker of the plane z = h along the precomputed rays (on a cell terrain, the far ground: drawn
        # under the tiles, hiding none of them)
        if self.plane and eye[2] > self.ground_height:
            k = eye[2] - self.ground_height
            inv = 1.0 / self.checker
            ix = np.floor((eye[0] * inv) + (k * inv) * self._gx).astype(np.int32)
            iy = np.floor((eye[1] * inv) + (k * inv) * self._gy).astype(np.int32)
            odd = ((ix + iy) & 1).view(np.uint32)                                  # 0 or 1
            img = self._C0 ^ (odd.reshape(-1) * self._X01)                          # the odd tiles' colour
            ground_iz = self._ground_iz / np.float32(k) if not self.cells else np.zeros(W * H, np.float32)
        else:
            img = self._Csky.copy()
            ground_iz = np.zeros(W * H, np.float32)
        extra = diagnostic_mesh(diagnostics, bp) if diagnostics is not None else None
        if len(self._P) or (extra is not None and len(extra[0])):
            self._draw_triangles(img, ground_iz, bp, body_quat, eye, extra)
        return _unpack(img, H, W)

    def _draw_triangles(self, img, ground_iz, bp, body_quat, eye, extra=None):
        """Rasterizes the scene's triangles, and extra = (corners (E, 3, 3) in the world frame, colours (E, 3),
        over (E,)): unlit, seen from both sides, the `over` ones in front of everything."""
        W, H = self.width, self.height
        # per body: rotation and offset straight into camera coordinates, and the light in body axes
        R = quat_to_mat(np.asarray(body_quat, dtype=np.float64).reshape(-1, 4))
        nb = len(R)
        Mc = np.concatenate([self._B @ R, self._B[None]]).astype(np.float32)          # (nb + 1, 3, 3)
        oc = np.concatenate([(bp - eye) @ self._B.T, (-eye @ self._B.T)[None]]).astype(np.float32)
        Lb = np.concatenate([R.transpose(0, 2, 1) @ self.light, self.light[None]]).astype(np.float32)
        cv = self._cbuf                                                               # (3 T, 3) corners
        for b, a, e in self._blocks:                                                  # one product per body
            b = nb if b < 0 else b
            np.matmul(self._V32[a:e], Mc[b].T, out=cv[a:e])
            cv[a:e] += oc[b]
        c = cv.reshape(-1, 3, 3)
        # triangles reaching behind the near plane go first (the back faces once projected)
        z = c[:, :, 2]
        si = np.flatnonzero(np.minimum(np.minimum(z[:, 0], z[:, 1]), z[:, 2]) > 0.02)
        c = c[si]
        ns = len(si)
        if extra is not None and len(extra[0]):
            ce = ((np.asarray(extra[0], dtype=np.float64).reshape(-1, 3) - eye) @ self._B.T).astype(np.float32)
            ce = ce.reshape(-1, 3, 3)
            ze = ce[:, :, 2]
            ei = np.flatnonzero(np.minimum(np.minimum(ze[:, 0], ze[:, 1]), ze[:, 2]) > 0.02)
            if len(ei):
                c = np.concatenate([c, ce[ei]])
        if not len(c):
            return
        z = c[:, :, 2]
        sx = self._cx + self.focal * c[:, :, 0] / z             # (T, 3)
        sy = self._cy - self.focal * c[:, :, 1] / z
        xa, xb, xc = sx[:, 0], sx[:, 1], sx[:, 2]
        ya, yb, yc = sy[:, 0], sy[:, 1], sy[:, 2]
        x0 = np.maximum(np.ceil(np.minimum(np.minimum(xa, xb), xc) - 0.5), 0).astype(np.int64)
        x1 = np.minimum(np.floor(np.maximum(np.maximum(xa, xb), xc) - 0.5), W - 1).astype(np.int64)
        y0 = np.maximum(np.ceil(np.minimum(np.minimum(ya, yb), yc) - 0.5), 0).astype(np.int64)
        y1 = np.minimum(np.floor(np.maximum(np.maximum(ya, yb), yc) - 0.5), H - 1).astype(np.int64)
        area = (xb - xa) * (yc - ya) - (xc - xa) * (yb - ya)
        # back faces: with y down on the screen, a triangle whose outward normal faces the eye (the camera
        # axes right, up, forward are left-handed) turns clockwise there: negative area; the extra ones
        # are seen from both sides
        vis = (x1 >= x0) & (y1 >= y0)
        vis[:ns] &= area[:ns] < -1e-6
        vis[ns:] &= np.abs(area[ns:]) > 1e-6
        idx = np.flatnonzero(vis)
        if not len(idx):
            return
        iss = idx < ns
        scene_idx, extra_idx = idx[iss], idx[~iss]
        sx, sy, z, area = sx[idx], sy[idx], z[idx], area[idx]
        x0, x1, y0, y1 = x0[idx], x1[idx], y0[idx], y1[idx]
        tsel = si[scene_idx]
        lam = np.einsum("tki,ti->tk", self._N32[tsel], Lb[self._tbl[tsel]])
        inten = np.float32(0.38) + np.float32(0.62) * np.maximum(lam, 0)         # (T, 3) per corner
        col = self._col32[tsel]
        bias = None
        if len(extra_idx):
            eo = ei[extra_idx - ns]
            inten = np.concatenate([inten, np.ones((len(eo), 3), np.float32)])
            col = np.concatenate([col, np.asarray(extra[1], dtype=np.float32)[eo]])
            # the `over` ones: 1/depth raised above any surface's (the camera is never 1 mm from one)
            over = np.asarray(extra[2])[eo]
            if over.any():
                bias = np.concatenate([np.zeros(len(tsel), np.float32), np.where(over, np.float32(1e3), np.float32(0))])
        # barycentric coordinates as affine functions of the pixel centre: l_k = A_k x + B_k y + C_k
        xa, xb, xc = sx[:, 0], sx[:, 1], sx[:, 2]
        ya, yb, yc = sy[:, 0], sy[:, 1], sy[:, 2]
        inva = 1.0 / area
        A0, A1, A2 = (yb - yc) * inva, (yc - ya) * inva, (ya - yb) * inva
        B0, B1, B2 = (xc - xb) * inva, (xa - xc) * inva, (xb - xa) * inva
        C0, C1, C2 = (xb * yc - xc * yb) * inva, (xc * ya - xa * yc) * inva, (xa * yb - xb * ya) * inva
        # 1/depth is affine on the screen too: with l_2 = 1 - l_0 - l_1,
        # 1/z = l_0 (iz_0 - iz_2) + l_1 (iz_1 - iz_2) + iz_2 = zx x + zy y + z0
        iz = 1.0 / z
        dz0, dz1, iz2 = iz[:, 0] - iz[:, 2], iz[:, 1] - iz[:, 2], iz[:, 2]
        if bias is not None:
            iz2 = iz2 + bias
        zx, zy, z0 = A0 * dz0 + A1 * dz1, B0 * dz0 + B1 * dz1, C0 * dz0 + C1 * dz1 + iz2
        # scanline spans: for each triangle row (pixel centre y), the x interval where the three
        # barycentrics l_k = A_k x + (B_k y + C_k) are >= 0, intersected with the bounding box
        bh = y1 - y0 + 1
        nrows = int(bh.sum())
        rt, rstart = _segments(bh, nrows)                           # triangle of each row
        ry = np.arange(nrows) - (rstart - y0)[rt]                   # pixel row
        rowy = ry.astype(np.float32) + np.float32(0.5)              # its pixel centres' y
        xl, xr = x0[rt].astype(np.float32), x1[rt].astype(np.float32)
        empty = np.zeros(nrows, bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for Ak, Bk, Ck in ((A0, B0, C0), (A1, B1, C1), (A2, B2, C2)):
                a = Ak[rt]
                ck = Bk[rt] * rowy + Ck[rt]
                bound = -ck / a
                xl = np.maximum(xl, np.where(a > 0, np.ceil(bound - 0.5), -np.inf))
                xr = np.minimum(xr, np.where(a < 0, np.floor(bound - 0.5), np.inf))
                empty |= (a == 0) & (ck < 0)
        n = np.where(empty | ~(xr >= xl), 0, xr - xl + 1).astype(np.int64)
        total = int(n.sum())
        if total == 0:
            return
        xl = xl.astype(np.int64)
        # fragments: pixel index and 1/depth; the nearest of each pixel found by raising a depth buffer
        # (first the ground's) until no fragment is in front of it: each pass writes one of the fragments
        # in front of each pixel's value, so the buffer only grows, and a few passes settle the rare
        # pixels covered several layers deep
        fr, fstart = _segments(n, total)                            # row of each fragment
        ar = np.arange(total)
        fx = ar + (xl - fstart)[fr]                                 # pixel column
        pix = ar + (ry * W + xl - fstart)[fr]
        fiz = (fx.astype(np.float32) + np.float32(0.5)) * zx[rt][fr] + (zy[rt] * rowy + z0[rt])[fr]
        zbuf = self._zbuf
        zbuf[:] = ground_iz
        cand = np.flatnonzero(fiz > zbuf[pix])
        front = cand
        while len(cand):
            zbuf[pix[cand]] = fiz[cand]
            cand = cand[fiz[cand] > zbuf[pix[cand]]]
        win = front[fiz[front] == zbuf[pix[front]]]
        if not len(win):
            return
        # one of each pixel's equally near fragments (two triangles' shared edge)
        owner = self._owner
        owner[pix[win]] = win
        win = win[owner[pix[win]] == win]
        # the winners' triangles, rows and shading
        fr = fr[win]
        p, t = pix[win], rt[fr]
        fxc, fyc = fx[win].astype(np.float32) + np.float32(0.5), rowy[fr]
        l0 = A0[t] * fxc + B0[t] * fyc + C0[t]
        l1 = A1[t] * fxc + B1[t] * fyc + C1[t]
        shade = l0 * (inten[t, 0] - inten[t, 2]) + l1 * (inten[t, 1] - inten[t, 2]) + inten[t, 2]
        img[p] = _pack(np.minimum(col[t] * (255 * shade)[:, None] + 0.5, 255).astype(np.uint32))


def _bench(argv=None):
    """python3 -m herd.render [--address A] [--env E] [--worlds N] [--config K=V] [--frames N] [--size WxH]
    [--diagnostics]: frames/s of one world (the last of N) on this core (wall clock and process CPU time: on a
    busy machine the CPU time is the renderer's own cost); --diagnostics draws the contact diagnostics too."""
    import argparse
    import json
    import time
    from .local import LocalServer
    from .vector import make_vec
    ap = argparse.ArgumentParser(description=_bench.__doc__)
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--address", default=None, help="a running server (default: start one)")
    ap.add_argument("--worlds", type=int, default=1, help="worlds of the session; the last one is drawn (on "
                    "anymal_c-rough with 20 worlds, world w stands on column w: 6 stairs up, 12 stairs down)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a task configuration value")
    ap.add_argument("--diagnostics", action="store_true", help="draw each frame's contact diagnostics")
    a = ap.parse_args(argv)
    w, h = (int(v) for v in a.size.lower().split("x"))
    srv = None if a.address else LocalServer(threads=1)
    try:
        cfg = {k: float(v) for k, v in (c.split("=", 1) for c in a.config)}
        env = make_vec(a.env, a.worlds, address=a.address or srv.address, seed=0, **cfg)
        env.reset()
        poses, last = [], a.worlds - 1
        for _ in range(a.frames):        # a real rollout's poses, so the frames differ
            env.step(np.zeros((a.worlds, env.act_dim), np.float32))
            poses.append(env.poses([last], diagnostics=a.diagnostics))
        r = Renderer(env.scene(), width=w, height=h, tiles=env.terrain_tiles())
        r.render(poses[0]["body_pos"][0], poses[0]["body_quat"][0])
        if r.tiles is not None:              # every tile the rollout needs, fetched before the session closes
            for p in poses:
                r._terrain_near(p["body_pos"][0][0])
        env.close()
    finally:
        if srv:
            srv.stop()
    def diags(p):
        return diagnostics_of(p, 0) if a.diagnostics else None
    r.render(poses[0]["body_pos"][0], poses[0]["body_quat"][0], diagnostics=diags(poses[0]))
    walls, cpus = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        for p in poses:
            r.render(p["body_pos"][0], p["body_quat"][0], diagnostics=diags(p))
        walls.append((time.perf_counter() - t0) / len(poses))
        cpus.append((time.process_time() - c0) / len(poses))
    res = {"bench": "render", "env": a.env, "width": w, "height": h, "frames": len(poses), "triangles": int(len(r._P)),
           "diagnostics": bool(a.diagnostics),
           "ms_per_frame_wall": round(1e3 * min(walls), 3), "ms_per_frame_cpu": round(1e3 * min(cpus), 3),
           "fps_wall": round(1 / min(walls), 1), "fps_cpu": round(1 / min(cpus), 1)}
    print(json.dumps(res))
    print("%dx%d, %d triangles: %.2f ms/frame wall (%.0f frames/s), %.2f ms/frame CPU (%.0f frames/s)"
          % (w, h, res["triangles"], res["ms_per_frame_wall"], res["fps_wall"], res["ms_per_frame_cpu"], res["fps_cpu"]))


if __name__ == "__main__":
    _bench()

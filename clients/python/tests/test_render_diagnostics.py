"""herd.render's contact diagnostics (the CPU renderer's rings, arrows, limit balls and fallback diamond, as the
viewer page draws them): the palette against viewer/viewer.js, each mark at the pixels its 3-D position
projects to (synthetic scenes, no server), and the frames of a real session and of a replay."""
import os
import re

import numpy as np
import pytest

import herd
import herd.record
from herd import render
from herd.render import Renderer, diagnostics_of

HERE = os.path.dirname(os.path.abspath(__file__))
VIEWER_JS = os.path.join(HERE, "..", "..", "..", "viewer", "viewer.js")
GREY = [0.5, 0.5, 0.5, 1.0]


def u8(colour):
    return np.round(np.asarray(colour) * 255).astype(int)


def scene(boxes=()):
    """Boxes (half extents, body) on bodies 0..; a plane at z = 0."""
    geoms = [{"name": "g%d" % k, "body": b, "type": "box", "size": list(h), "pos": [0, 0, 0], "quat": [1, 0, 0, 0],
              "rgba": GREY, "collides": True} for k, (h, b) in enumerate(boxes)]
    return {"geoms": geoms, "bodies": [{"name": "b%d" % k, "parent": -1} for k in range(3)],
            "terrain": {"type": "plane", "height": 0.0}}


def renderer(sc=None, distance=1.0):
    # close and from above, so that a ring 25 mm wide covers several pixel rows
    return Renderer(sc or scene(), width=640, height=480, distance=distance, elevation=40.0, visual=False)


BP = np.array([[0.0, 0.0, 0.3], [0.1, 0.0, 0.3], [-0.1, 0.0, 0.3]])
BQ = np.tile([1.0, 0, 0, 0], (3, 1))
TARGET = np.array([0.0, 0.0, 0.1])


def pixels(r, img, points):
    xy, z = r.project(np.asarray(points, dtype=np.float64), TARGET)
    assert (z > 0).all()
    ij = np.floor(xy).astype(int)
    assert ((ij >= 0) & (ij < [r.width, r.height])).all()
    return img[ij[:, 1], ij[:, 0]].astype(int)


def ring_points(centre, n=24):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    rad = 0.5 * (render.RING_INNER + render.RING_OUTER)
    return np.asarray(centre) + np.stack([rad * np.cos(a), rad * np.sin(a), np.full(n, 0.002)], 1)


def contacts(states, impulses, friction, xs=(-0.3, 0.0, 0.3)):
    n = len(states)
    return {"pos": np.stack([np.asarray(xs[:n]), np.zeros(n), np.zeros(n)], 1),
            "normal": np.tile([0.0, 0.0, 1.0], (n, 1)), "impulse": np.asarray(impulses, dtype=np.float64),
            "state": np.asarray(states), "friction": np.asarray(friction, dtype=np.float64).reshape(n, 3),
            "limit": np.zeros(3), "fallback": False}


def test_the_palette_and_sizes_are_the_pages():
    with open(VIEWER_JS, encoding="utf-8") as f:
        js = f.read()

    def hexes(name):
        m = re.search(r"const %s = \[([^\]]*)\]" % name, js)
        return [int(h, 16) for h in re.findall(r"0x([0-9a-fA-F]{6})", m.group(1))]

    def one(name):
        return int(re.search(r"\b%s = 0x([0-9a-fA-F]{6})" % name, js).group(1), 16)

    def number(name):
        return float(re.search(r"\b%s = ([0-9.]+)" % name, js).group(1))

    def rgb(h):
        return [(h >> 16) & 255, (h >> 8) & 255, h & 255]

    assert [list(u8(c)) for c in render.STATE_COLOURS] == [rgb(h) for h in hexes("STATE_COLOURS")]
    assert list(u8(render.FRICTION_COLOUR)) == rgb(one("FRICTION_COLOUR"))
    assert list(u8(render.LIMIT_COLOUR)) == rgb(one("LIMIT_COLOUR"))
    assert list(u8(render.FALLBACK_COLOUR)) == rgb(one("FALLBACK_COLOUR"))
    normal = int(re.search(r"new THREE.ArrowHelper\(new THREE.Vector3\(0, 0, 1\), new THREE.Vector3\(\), [0-9.]+, "
                           r"0x([0-9a-fA-F]{6})", js).group(1), 16)
    assert list(u8(render.NORMAL_COLOUR)) == rgb(normal)
    for name in ("IMPULSE_SCALE", "ARROW_MIN", "ARROW_MAX", "RING_INNER", "RING_OUTER", "LIMIT_SCALE", "LIMIT_MIN",
                 "LIMIT_MAX"):
        assert getattr(render, name) == number(name), name


def test_each_contact_is_ringed_in_its_states_colour():
    r = renderer()
    d = contacts([0, 1, 2], [0.0, 0.3, 0.3], [[0, 0, 0], [0, 0.02, 0], [0.2, 0, 0]])
    img = r.render(BP, BQ, target=TARGET, diagnostics=d)
    plain = r.render(BP, BQ, target=TARGET)
    for k, s in enumerate(d["state"]):
        got = pixels(r, img, ring_points(d["pos"][k]))
        want = u8(render.STATE_COLOURS[s])
        match = (got == want).all(1)
        # the arrows may hide a few of them; no point has another state's colour
        assert match.mean() >= 0.8, (k, s, got[~match][:4])
        for o in {0, 1, 2} - {int(s)}:
            assert not (got == u8(render.STATE_COLOURS[o])).all(1).any()
        # the same points without the diagnostics are the ground's
        assert not (pixels(r, plain, ring_points(d["pos"][k])) == want).all(1).any()
    # an older server's reply (no state): no ring
    old = {k: d[k] for k in ("pos", "normal", "impulse")}
    img = r.render(BP, BQ, target=TARGET, diagnostics=old)
    for k in range(3):
        got = pixels(r, img, ring_points(d["pos"][k]))
        assert not any((got == u8(c)).all(1).any() for c in render.STATE_COLOURS)


@pytest.mark.parametrize("impulse", [0.15, 0.4, 2.0])
def test_the_normal_arrow_is_as_long_as_its_impulse(impulse):
    r = renderer(distance=2.0)
    d = contacts([1], [impulse], [[0, 0, 0]], xs=(0.0,))
    img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
    L = min(render.ARROW_MAX, max(render.ARROW_MIN, render.IMPULSE_SCALE * impulse))
    red = u8(render.NORMAL_COLOUR)
    along = [[0.0, 0.0, f * L] for f in (0.3, 0.6, 0.85)]
    assert (pixels(r, img, along) == red).all(1).all(), pixels(r, img, along)
    beyond = [[0.0, 0.0, L + 0.03], [0.0, 0.0, L + 0.06]]
    assert not (pixels(r, img, beyond) == red).all(1).any()
    # an open contact (no impulse) has no arrow
    d = contacts([0], [0.0], [[0, 0, 0]], xs=(0.0,))
    img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
    assert not (pixels(r, img, along) == red).all(1).any()


def test_the_friction_arrow_points_along_the_friction_impulse():
    r = renderer()
    for direction in ([1.0, 0, 0], [0, -1.0, 0], [-0.6, 0.8, 0]):
        f = 0.3 * np.asarray(direction)
        d = contacts([2], [0.2], [f], xs=(0.0,))
        img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
        L = render.IMPULSE_SCALE * 0.3
        blue = u8(render.FRICTION_COLOUR)
        along = [np.asarray(direction) * t * L + [0, 0, 0.01] for t in (0.5, 0.7)]
        assert (pixels(r, img, along) == blue).all(1).all(), (direction, pixels(r, img, along))
        behind = [-np.asarray(direction) * t * L + [0, 0, 0.01] for t in (0.5, 0.7)]
        assert not (pixels(r, img, behind) == blue).all(1).any()


def test_a_limit_ball_shows_through_the_robot_and_the_fallback_diamond_above_it():
    # a box around bodies 1 and 2: the limit ball of body 1 is inside it, and drawn over it
    r = renderer(scene([((0.25, 0.1, 0.08), 0)]), distance=2.0)
    d = contacts([1], [0.3], [[0, 0, 0]], xs=(0.5,))
    violet, magenta = u8(render.LIMIT_COLOUR), u8(render.FALLBACK_COLOUR)
    ball, diamond = [BP[1]], [BP[0] + [0, 0, render.FALLBACK_HEIGHT]]
    img = r.render(BP, BQ, target=TARGET, diagnostics=d)
    assert not (pixels(r, img, ball) == violet).all()
    assert not (pixels(r, img, diamond) == magenta).all()
    d["limit"] = np.array([0.0, -0.05, 0.0])
    d["fallback"] = True
    img = r.render(BP, BQ, target=TARGET, diagnostics=d)
    assert (pixels(r, img, ball) == violet).all()
    assert (pixels(r, img, diamond) == magenta).all()
    # the ball's radius grows with the impulse, within the page's bounds
    for l, rad in ((0.01, render.LIMIT_MIN), (0.1, 0.05), (1.0, render.LIMIT_MAX)):
        d["limit"] = np.array([0.0, l, 0.0])
        img = r.render(BP, BQ, target=TARGET, diagnostics=d)
        n = (img == violet).all(-1).sum()
        _, z = r.project(np.array([BP[1]]), TARGET)
        px_radius = r.focal * rad / z[0]
        assert abs(n - np.pi * px_radius ** 2) < 0.2 * np.pi * px_radius ** 2 + 3 * px_radius, (l, n, px_radius)


def test_a_sessions_frames_and_a_replays_draw_the_states(server):
    with herd.make_vec("anymal_c-stand", 1, address=server, seed=3, render_mode="rgb_array",
                       render_size=(640, 480), render_diagnostics=True) as envs:
        envs.reset(seed=3)
        zero = np.zeros((1, envs.act_dim), np.float32)
        rec = herd.record.Recorder(envs, world_ids=(0,))
        for _ in range(60):
            envs.step(zero)
        rec.capture()
        frame = envs.render(world_ids=0)
        p = envs.poses([0], diagnostics=True)
        d = diagnostics_of(p, 0)
        assert len(d["pos"]) == 4 and (d["state"] == 1).all()         # standing: four feet that stick
        r = envs._renderer
        target = p["body_pos"][0, 0]
        green = u8(render.STATE_COLOURS[1])
        seen = []
        for c in d["pos"]:
            xy, _ = r.project(ring_points(c), target)
            ij = np.floor(xy).astype(int)
            seen.append((frame[ij[:, 1], ij[:, 0]] == green).all(1).mean())
        # the legs hide part of some rings from this camera; every foot shows most of its ring
        assert min(seen) > 0.5, seen
        envs.render_diagnostics = False
        assert not (envs.render(world_ids=0) == green).all(-1).any()
        # the replay's MP4/GIF frames: the same picture with the diagnostics, none without
        frames = list(rec.frames(640, 480, 0))
        np.testing.assert_array_equal(frames[0], frame)
        plain = list(rec.frames(640, 480, 0, diagnostics=False))
        assert not (plain[0] == green).all(-1).any()


def coloured(img, colour):
    return (img == u8(colour)).all(-1)


def test_each_contacts_marks_are_its_own():
    """Three contacts drawn together (the marks of all contacts are built in one pass): a slipping one with a
    normal and a friction impulse, a sticking one with a normal impulse only, an open one with neither.
    Each ring has its contact's colour, each arrow starts at its own contact, and the open contact and the
    missing friction impulse leave no arrow pixel at all."""
    r = renderer(distance=2.0)
    d = contacts([2, 1, 0], [0.3, 0.6, 0.0], [[0.3, 0, 0], [0, 0, 0], [0, 0, 0]])
    img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
    red, blue = coloured(img, render.NORMAL_COLOUR), coloured(img, render.FRICTION_COLOUR)
    for k, s in enumerate([2, 1, 0]):
        got = pixels(r, img, ring_points(d["pos"][k]))
        assert (got == u8(render.STATE_COLOURS[s])).all(1).mean() >= 0.6, (k, s)
    for k in (0, 1):
        L = render.IMPULSE_SCALE * d["impulse"][k]
        along = [d["pos"][k] + [0, 0, f * L] for f in (0.3, 0.6, 0.85)]
        assert (pixels(r, img, along) == u8(render.NORMAL_COLOUR)).all(1).all(), k
        assert not (pixels(r, img, [d["pos"][k] + [0, 0, L + 0.04]]) == u8(render.NORMAL_COLOUR)).all(1).any(), k
    # every red and blue pixel lies near the projection of its arrow (its contact's normal, the slipping
    # contact's friction along +x); the open contact has none above it
    def near(mask, a, b, tol=4.0):
        ys, xs = np.nonzero(mask)
        (pa, pb), _ = r.project(np.array([a, b]), TARGET)
        e = pb - pa
        t = np.clip(((xs + 0.5 - pa[0]) * e[0] + (ys + 0.5 - pa[1]) * e[1]) / (e @ e), 0, 1)
        dist = np.hypot(xs + 0.5 - pa[0] - t * e[0], ys + 0.5 - pa[1] - t * e[1])
        return dist <= tol
    assert red.sum() > 20 and blue.sum() > 10
    L0, L1 = render.IMPULSE_SCALE * 0.3, render.IMPULSE_SCALE * 0.6
    on_0 = near(red, d["pos"][0], d["pos"][0] + [0, 0, L0])
    on_1 = near(red, d["pos"][1], d["pos"][1] + [0, 0, L1])
    assert (on_0 | on_1).all(), "red pixels off the two normal arrows"
    assert on_0.sum() > 5 and on_1.sum() > 5
    assert near(blue, d["pos"][0] + [0, 0, 0.01], d["pos"][0] + [L0, 0, 0.01]).all(), "blue pixels off the friction arrow"
    # only open contacts: not one arrow pixel
    d = contacts([0, 0, 0], [0.0, 0.0, 0.0], np.zeros((3, 3)))
    img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
    assert not coloured(img, render.NORMAL_COLOUR).any() and not coloured(img, render.FRICTION_COLOUR).any()
    assert coloured(img, render.STATE_COLOURS[0]).sum() > 50


@pytest.mark.parametrize("normal", [[1.0, 0.0, 0.0], [0.6, 0.0, 0.8], [0.0, -0.6, 0.8], [-0.48, 0.36, 0.8]])
def test_rings_and_arrows_follow_a_tilted_normal(normal):
    """A contact on a slope or a wall: its ring lies across its normal and its normal arrow along it."""
    r = renderer(distance=2.0)
    n = np.asarray(normal)
    d = contacts([1], [0.5], [[0, 0, 0]], xs=(0.0,))
    d["pos"] = np.array([[0.0, 0.0, 0.1]])
    d["normal"] = n[None] * 3.0                 # not unit length: the renderer normalizes it
    img = r.render(BP[:1], BQ[:1], target=TARGET, diagnostics=d)
    L = render.IMPULSE_SCALE * 0.5
    along = [d["pos"][0] + f * L * n for f in (0.3, 0.6, 0.85)]
    assert (pixels(r, img, along) == u8(render.NORMAL_COLOUR)).all(1).all(), pixels(r, img, along)
    assert not (pixels(r, img, [d["pos"][0] + (L + 0.05) * n]) == u8(render.NORMAL_COLOUR)).all(1).any()
    # the ring's mid circle, in the plane across the normal
    u = np.cross(n, [0.0, 1.0, 0.0] if abs(n[1]) < 0.9 else [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    rad = 0.5 * (render.RING_INNER + render.RING_OUTER)
    ring = d["pos"][0] + 0.002 * n + rad * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * v)
    got = pixels(r, img, ring)
    # seen edge-on, part of the ring is thinner than a pixel; the arrow hides part of it
    assert (got == u8(render.STATE_COLOURS[1])).all(1).mean() >= 0.5, got

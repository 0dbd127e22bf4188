"""anymal_c-rough's cell terrain as viewers draw it: the `model` op's terrain_region (protocol minor 7), the
tiles and meshes of herd.terrain, the renderer's frames and the live viewer's GET /terrain.  The page itself
is tested in a browser by tests/viewer/test_terrain_view.py."""
import json
import urllib.error
import urllib.request

import numpy as np
import pytest

import herd
import herd.view
from herd.errors import HerdError
from herd.render import Renderer
from herd.terrain import TILE_M, TileCache, tile_from_json, tile_mesh, tile_of, tiles_around

NWORLDS = 20          # one world per column of the field: world w stands on column w's kind
STAIRS_UP, STAIRS_DOWN, OBSTACLES, SLOPE, ROUGH = 6, 12, 17, 0, 2
RISER_L6 = 0.155      # level 6 (difficulty 0.6): 0.05 + 0.18 x 0.6 = 0.158 m, int() to 5 mm units


@pytest.fixture(scope="module")
def rough(server):
    with herd.make_vec("anymal_c-rough", NWORLDS, address=server, seed=3, curriculum=0,
                       terrain_level_min=6, terrain_level_max=6) as envs:
        envs.reset()
        yield envs


def base_xy(envs, w):
    return envs.poses([w])["body_pos"][0, 0, :2].astype(float)


def surface_z(P, N, x, y):
    """The highest up-facing triangle of (P, N) above each point (x, y): z, NaN where none covers it."""
    up = N[:, 0, 2] > 0.5
    T = P[up]
    a, b, c = T[:, 0], T[:, 1], T[:, 2]
    out = np.full(len(x), np.nan)
    for k in range(0, len(x), 256):
        px, py = x[k:k + 256, None], y[k:k + 256, None]
        d = (b[:, 1] - c[:, 1]) * (a[:, 0] - c[:, 0]) + (c[:, 0] - b[:, 0]) * (a[:, 1] - c[:, 1])
        l0 = ((b[:, 1] - c[:, 1]) * (px - c[:, 0]) + (c[:, 0] - b[:, 0]) * (py - c[:, 1])) / d
        l1 = ((c[:, 1] - a[:, 1]) * (px - c[:, 0]) + (a[:, 0] - c[:, 0]) * (py - c[:, 1])) / d
        l2 = 1 - l0 - l1
        inside = (l0 >= -1e-9) & (l1 >= -1e-9) & (l2 >= -1e-9)
        z = np.where(inside, l0 * a[:, 2] + l1 * b[:, 2] + l2 * c[:, 2], -np.inf).max(1)
        out[k:k + 256] = np.where(np.isfinite(z), z, np.nan)
    return out


def interior(t):
    """Cell centres (x, y), heights and smooth flags of a fetched tile's own cells."""
    i0, j0 = t["sx"] - t["ix"], t["sy"] - t["iy"]
    H = t["heights"][j0:j0 + t["ky"], i0:i0 + t["kx"]].astype(np.float64)
    S = t["smooth"][j0:j0 + t["ky"], i0:i0 + t["kx"]] != 0
    J, I = np.mgrid[0:H.shape[0], 0:H.shape[1]]
    x = t["x0"] + (t["sx"] + I) * t["dx"]
    y = t["y0"] + (t["sy"] + J) * t["dy"]
    return x.ravel(), y.ravel(), H.ravel(), S.ravel()


def test_the_scene_gives_the_grid_and_a_region_its_samples(rough):
    t = rough.scene()["terrain"]
    assert t["type"] == "cells" and "region" not in t and t["nx"] == 1300 and t["ny"] == 2100
    assert (t["x0"], t["y0"], t["dx"], t["dy"]) == (-25.0, -25.0, 0.1, 0.1)
    session = rough.sessions[0][1]
    # the cells meeting [1.02, 2.0] x [3.0, 3.04]: samples x 260..270 (centres 1.0 .. 2.0), y 280 (3.0)
    reg = rough._client.model(session, terrain_region=[1.02, 3.0, 2.0, 3.04])["scene"]["terrain"]["region"]
    assert (reg["ix"], reg["iy"], reg["nx"], reg["ny"]) == (260, 280, 11, 1)
    assert reg["heights"].dtype == np.float32 and reg["heights"].shape == (1, 11)
    assert reg["smooth"].dtype == np.uint8 and reg["smooth"].shape == (1, 11)
    # beyond the grid: the nearest edge sample (the border extends to infinity, flat at 0)
    far = rough._client.model(session, terrain_region=[-500, -500, -400, -400])["scene"]["terrain"]["region"]
    assert (far["ix"], far["iy"], far["nx"], far["ny"]) == (0, 0, 1, 1) and far["heights"][0, 0] == 0
    for bad in ([0, 0, 1], [1, 0, 0, 0], [0, float("inf"), 1, 1], [-100, -100, 100, 100]):
        with pytest.raises(HerdError) as e:
            rough._client.model(session, terrain_region=bad)
        assert e.value.code == "BAD_FIELD", bad


def test_a_plane_task_ignores_the_region(server):
    with herd.make_vec("anymal_c-walk", 1, address=server, seed=0) as envs:
        rep = envs._client.model(envs.sessions[0][1], terrain_region=[-1, -1, 1, 1])
        assert rep["scene"]["terrain"] == {"type": "plane", "height": 0.0}
        assert envs.terrain_tiles() is None


def test_a_worlds_tile_is_its_field_tile(rough):
    """Tiles start at the world origin every 8 m, so the tile under a world's base is the field tile it was
    placed on (its origin within 1 m of the tile centre)."""
    t = rough.scene()["terrain"]
    for w in range(NWORLDS):
        x, y = base_xy(rough, w)
        tx, ty = tile_of(t, x, y)
        assert tx == 6 and ty == w, (w, x, y, tx, ty)                  # level 6, column w
        assert abs(x - (tx + 0.5) * TILE_M) <= 1.01 and abs(y - (ty + 0.5) * TILE_M) <= 1.01
        assert len(tiles_around(t, x, y)) == 9


@pytest.mark.parametrize("world", [STAIRS_UP, STAIRS_DOWN, OBSTACLES, SLOPE, ROUGH])
def test_tile_mesh_tops_are_the_servers_cells(rough, world):
    """Over every cell centre of a world's tile, the mesh's top is the server's sample: exactly on a prism
    cell (stairs, obstacles, the flat platforms), within 5 cm (99 % within 2.5 cm) on a smooth one (slopes: the
    drawn quads take the bilinear surface at their corners, merged where the rows are nearly straight)."""
    tiles = rough.terrain_tiles()
    x, y = base_xy(rough, world)
    key = tile_of(tiles.terrain, x, y)
    t = tiles.get(key)
    P, N = tile_mesh(t)
    cx, cy, H, S = interior(t)
    z = surface_z(P, N, cx, cy)
    assert not np.isnan(z).any(), "%d cell centres without a top" % np.isnan(z).sum()
    if (~S).any():
        assert np.allclose(z[~S], H[~S], rtol=0, atol=1e-9), np.abs(z[~S] - H[~S]).max()
    if S.any():
        err = np.abs(z[S] - H[S])
        assert err.max() < 0.05 and np.percentile(err, 99) < 0.025, (err.max(), np.percentile(err, 99))
    if world in (SLOPE, ROUGH):
        assert S.mean() > 0.9
    else:
        assert not S.any()
    # merging keeps prism tiles small: a stairs tile is its treads, not 6,400 cells
    if world in (STAIRS_UP, STAIRS_DOWN):
        assert len(P) < 1000


@pytest.mark.parametrize("world", [STAIRS_UP, STAIRS_DOWN, OBSTACLES])
def test_every_step_between_cells_has_a_vertical_wall(rough, world):
    """Each pair of neighbouring prism cells of different heights is joined by a vertical wall spanning both
    heights on their shared side; on a stairs tile the risers are level 6's (0.155 m)."""
    tiles = rough.terrain_tiles()
    t = tiles.get(tile_of(tiles.terrain, *base_xy(rough, world)))
    P, N = tile_mesh(t)
    walls = np.abs(N[:, 0, 2]) < 1e-9
    Wp = P[walls]
    assert len(Wp)
    i0, j0 = t["sx"] - t["ix"], t["sy"] - t["iy"]
    H = t["heights"].astype(np.float64)
    found = 0
    for axis in (0, 1):
        J, I = np.mgrid[j0:j0 + t["ky"], i0:i0 + t["kx"]]
        Jn, In = (J, I + 1) if axis == 0 else (J + 1, I)
        ok = (In < H.shape[1]) & (Jn < H.shape[0])
        J, I, Jn, In = J[ok], I[ok], Jn[ok], In[ok]
        ha, hb = H[J, I], H[Jn, In]
        step = ha != hb
        if not step.any():
            continue
        J, I, ha, hb = J[step], I[step], ha[step], hb[step]
        if world in (STAIRS_UP, STAIRS_DOWN):
            risers = np.round(np.abs(ha - hb), 4)
            assert np.isin(risers, [RISER_L6]).mean() > 0.9, np.unique(risers)
        xc = t["x0"] + (t["ix"] + I) * t["dx"]
        yc = t["y0"] + (t["iy"] + J) * t["dy"]
        e = (xc + t["dx"] / 2) if axis == 0 else (yc + t["dy"] / 2)      # the shared side
        along = yc if axis == 0 else xc
        zmid = 0.5 * (ha + hb)
        c = Wp[:, :, axis]                                                 # the wall's plane coordinate
        flat = np.abs(c - c[:, :1]).max(1) < 1e-9
        lo, hi = Wp[:, :, 1 - axis].min(1), Wp[:, :, 1 - axis].max(1)
        zlo, zhi = Wp[:, :, 2].min(1), Wp[:, :, 2].max(1)
        for k in range(len(e)):
            hit = flat & (np.abs(c[:, 0] - e[k]) < 1e-9) & (lo <= along[k]) & (along[k] <= hi) & \
                  (zlo <= min(ha[k], hb[k]) + 1e-9) & (zhi >= max(ha[k], hb[k]) - 1e-9)
            assert hit.any(), "no wall between cells at %s (axis %d): heights %g and %g" % (
                (xc[k], yc[k]), axis, ha[k], hb[k])
            found += 1
    assert found > 50


def test_tiles_are_cached_and_survive_json(rough):
    tiles = rough.terrain_tiles()
    x, y = base_xy(rough, STAIRS_UP)
    keys = tiles.around(x, y)
    for k in keys:
        tiles.get(k)
    assert tiles.fetches == 9
    for k in keys:
        tiles.mesh(k)
    assert tiles.fetches == 9
    from herd.terrain import tile_json
    t = tiles.get(keys[4])
    back = tile_from_json(json.loads(json.dumps(tile_json(t))))
    assert np.array_equal(back["heights"], t["heights"]) and np.array_equal(back["smooth"], t["smooth"])
    P0, _ = tile_mesh(t)
    P1, _ = tile_mesh(back)
    assert np.array_equal(P0, P1)


def test_rgb_array_frames_draw_the_stairs(server):
    """A world in a stairs-up pit: its rgb_array frame differs from the same pose over the plane where the
    risers are, and the tiles are fetched once the camera reaches a new place only."""
    with herd.make_vec("anymal_c-rough", NWORLDS, address=server, seed=3, curriculum=0,
                       terrain_level_min=6, terrain_level_max=6, render_mode="rgb_array",
                       render_worlds=[STAIRS_UP]) as envs:
        envs.reset()
        frame = envs.render()[0]
        fetched = envs._renderer.tiles.fetches
        assert 1 <= fetched <= 9
        again = envs.render()[0]
        assert envs._renderer.tiles.fetches == fetched and np.array_equal(frame, again)
        p = envs.poses([STAIRS_UP])
        flat = Renderer(envs.scene(), width=frame.shape[1], height=frame.shape[0])     # no tiles: the plane
        plain = flat.render(p["body_pos"][0], p["body_quat"][0])
    assert frame.shape == (240, 320, 3)
    diff = np.any(frame != plain, -1)
    # the ground beyond the robot (upper half of the picture, where the pit's risers rise) changes
    assert diff[:120].mean() > 0.2, diff[:120].mean()


def test_live_viewer_serves_tiles(server):
    src = herd.view.EnvSource("anymal_c-rough", NWORLDS, address=server, seed=3, curriculum=0,
                              terrain_level_min=6, terrain_level_max=6, world_ids=[STAIRS_DOWN])
    try:
        t = src.scene()["terrain"]
        x, y = src.envs.poses([STAIRS_DOWN])["body_pos"][0, 0, :2]
        tx, ty = tile_of(t, x, y)
        with herd.view.Viewer(src) as viewer:
            with urllib.request.urlopen(viewer.url + "terrain?tx=%d&ty=%d" % (tx, ty), timeout=30) as r:
                d = json.loads(r.read())
            tile = tile_from_json(d)
            session = src.envs.sessions[0][1]
            x0 = t["x0"] + (tile["ix"]) * t["dx"]
            y0 = t["y0"] + (tile["iy"]) * t["dy"]
            with src._io:           # the source's socket: its thread steps the env meanwhile
                reg = src.envs._client.model(session, terrain_region=[
                    x0, y0, x0 + (tile["nx"] - 1) * t["dx"], y0 + (tile["ny"] - 1) * t["dy"]])["scene"]["terrain"]["region"]
            assert (reg["ix"], reg["iy"]) == (tile["ix"], tile["iy"])
            assert np.array_equal(reg["heights"], tile["heights"])
            assert tile["tile"] == [tx, ty] and tile["nx"] == tile["kx"] + 2
            for q, code in (("tx=a&ty=1", 400), ("ty=1", 400)):
                with pytest.raises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(viewer.url + "terrain?" + q, timeout=30)
                assert e.value.code == code
    finally:
        src.close()
    walk = herd.view.EnvSource("anymal_c-walk", 1, address=server)
    try:
        with herd.view.Viewer(walk) as viewer:
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(viewer.url + "terrain?tx=0&ty=0", timeout=30)
            assert e.value.code == 404
    finally:
        walk.close()

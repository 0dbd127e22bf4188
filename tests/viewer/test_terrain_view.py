"""anymal_c-rough's cell terrain in a real browser (headless Chromium, tests/viewer/browser.py): a replay of
worlds on a stairs tile and an obstacle tile, and the live page of herd.view.  The page meshes the tiles of
herd.terrain itself; these tests check its mesh against the server's cells (the height the page draws over
cell centres, found by a ray down onto its tiles, is each prism cell's sample), that the stairs change the
picture against the same replay drawn on the plane, and that the live page fetches the tiles around the
followed robot (GET /terrain) with no console error.

Run: tests/viewer/run.sh tests/viewer/test_terrain_view.py.  HERD_VIEWER_SHOTS=DIR keeps the screenshots.
"""
import io
import os

import numpy as np
import pytest
from PIL import Image

import herd
import herd.record
import herd.view
from herd.local import LocalServer
from herd.terrain import tile_of, tiles_around

from browser import HAVE_BROWSER, WHY_NOT, Browser

W, H = 800, 600
NWORLDS = 20                    # one world per column: world 6 on stairs up, 17 on obstacles
STAIRS_UP, OBSTACLES = 6, 17

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)


@pytest.fixture(scope="module")
def server():
    with LocalServer(threads=1) as s:
        yield s


def keep(png, name):
    d = os.environ.get("HERD_VIEWER_SHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(png)


def rough_envs(server, **kw):
    return herd.make_vec("anymal_c-rough", NWORLDS, address=server.address, seed=3, curriculum=0,
                         terrain_level_min=6, terrain_level_max=6, **kw)


def cell_checks(b, tile, every=3):
    """The page's drawn height over every `every`-th cell centre of a fetched tile equals the server's sample
    for prism cells; returns how many were checked."""
    i0, j0 = tile["sx"] - tile["ix"], tile["sy"] - tile["iy"]
    pts = []
    for j in range(j0, j0 + tile["ky"], every):
        for i in range(i0, i0 + tile["kx"], every):
            if not tile["smooth"][j, i]:
                pts.append((tile["x0"] + (tile["ix"] + i) * tile["dx"], tile["y0"] + (tile["iy"] + j) * tile["dy"],
                            float(tile["heights"][j, i])))
    got = b.evaluate("[%s].map(p => herdViewer.terrainHeight(p[0], p[1]))" % ",".join("[%r,%r]" % p[:2] for p in pts))
    bad = [(p, g) for p, g in zip(pts, got) if g is None or abs(g - p[2]) > 1e-5]
    assert not bad, "%d of %d cells drawn at another height, e.g. %s" % (len(bad), len(pts), bad[:3])
    return len(pts)


def test_replay_draws_the_servers_cells_and_the_stairs(server, tmp_path):
    with rough_envs(server, reward_terms=True) as envs:
        rec = herd.record(envs, str(tmp_path / "rough.html"), steps=10, world_ids=[STAIRS_UP, OBSTACLES], seed=3)
        terrain = envs.scene()["terrain"]
    assert rec.tiles is not None and len(rec.tiles.tiles) == 18      # 3 x 3 around each of the two worlds
    shots = {}
    with Browser(W, H) as b:
        b.goto("file://" + str(tmp_path / "rough.html"))
        b.wait_for("window.herdViewer && herdViewer.drawn", 120)
        b.evaluate("herdViewer.setPaused(true); herdViewer.replay.seek(0)")
        for j, w in enumerate((STAIRS_UP, OBSTACLES)):
            if j:
                b.evaluate("document.getElementById('focus').value = '1';"
                           "document.getElementById('focus').dispatchEvent(new Event('change'))")
            x, y = rec.body_pos[0][j, 0, :2]
            key = tile_of(terrain, x, y)
            b.wait_for("herdViewer.terrainTiles().includes('%d,%d') && herdViewer.tilesPending() == 0" % key, 60)
            drawn = set(b.evaluate("herdViewer.terrainTiles()"))
            assert {"%d,%d" % k for k in tiles_around(terrain, x, y)} <= drawn
            assert cell_checks(b, rec.tiles.tiles[key]) > 200
            info = b.evaluate("herdViewer.info()")
            assert np.allclose(info["base"], rec.body_pos[0][j, 0], atol=1e-4)   # where it is on the field
        b.evaluate("document.getElementById('focus').value = '0';"
                   "document.getElementById('focus').dispatchEvent(new Event('change'))")
        # the focus change is drawn in a later animation frame, which fetches the stairs tiles again
        b.wait_for("herdViewer.info().focus === 0 && herdViewer.settled()", 60)
        png = b.screenshot()
        keep(png, "rough_stairs.png")
        shots["stairs"] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
        assert b.console_errors == []
    # the same replay on the plane (no cell terrain): the pit's risers are what changes the picture
    rec.scene = dict(rec.scene, terrain={"type": "plane", "height": 0.0})
    rec.tiles = None
    rec.write_html(str(tmp_path / "plane.html"))
    with Browser(W, H) as b:
        b.goto("file://" + str(tmp_path / "plane.html"))
        b.wait_for("window.herdViewer && herdViewer.drawn", 120)
        b.evaluate("herdViewer.setPaused(true); herdViewer.replay.seek(0)")
        b.wait_for("herdViewer.drawnStep === 0", 30)
        png = b.screenshot()
        keep(png, "rough_plane.png")
        shots["plane"] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    # above the robot: the risers of the pit (or the plane's horizon)
    band = slice(40, H // 2 - 60), slice(W // 2 - 250, W // 2 + 250)
    changed = np.any(np.abs(shots["stairs"][band] - shots["plane"][band]) > 30, -1)
    assert changed.mean() > 0.3, changed.mean()


def test_live_page_fetches_the_tiles_around_the_robot(server):
    src = herd.view.EnvSource("anymal_c-rough", NWORLDS, address=server.address, seed=3, curriculum=0,
                              terrain_level_min=6, terrain_level_max=6, world_ids=[STAIRS_UP])
    terrain = src.scene()["terrain"]
    x, y = src.envs.poses([STAIRS_UP])["body_pos"][0, 0, :2]
    try:
        with herd.view.Viewer(src) as viewer, Browser(W, H) as b:
            b.goto(viewer.url)
            b.wait_for("window.herdViewer && herdViewer.drawn", 120)
            want = {"%d,%d" % k for k in tiles_around(terrain, x, y)}
            b.wait_for("herdViewer.tilesPending() == 0 && herdViewer.terrainTiles().length >= 9", 60)
            assert want <= set(b.evaluate("herdViewer.terrainTiles()"))
            key = tile_of(terrain, x, y)
            with src._io:
                tile = src._tiles.get(key)
            assert cell_checks(b, tile, every=5) > 100
            png = b.screenshot()
            keep(png, "rough_live.png")
            assert b.console_errors == []
    finally:
        src.close()

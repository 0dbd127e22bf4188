"""The page's render scale in a real browser (headless Chromium, tests/viewer/browser.py) on a live page of
`herd.view`: by default the drawing buffer shrinks while frames are slow (here made slow by the page's
slowDraws test hook: every draw busy-waits) and the picture stays right (the base's colour at the pixel its
pose projects to, the feet dark where the shanks' poses put them), it grows again once frames are fast (when
the page measures them fast: on a busy machine even a small scene's frames may not be), and
?scale=1 (or herd.screenshot's full_resolution) keeps the full resolution however slow the frames are.
The robots' batched, level-of-detail meshes: every robot in view is drawn, and none twice.

Run: tests/viewer/run.sh tests/viewer/test_render_scale.py.
"""
import time

import numpy as np
import pytest

import herd.view
from herd.local import LocalServer
from herd.screenshot import full_resolution

from browser import HAVE_BROWSER, WHY_NOT, Browser
from test_viewer import base_rgb, check_foot, keep, robot_fraction, wait_paused

W, H = 800, 600
SLOW_MS = 80          # each draw's time with the hook on: far above the page's 30 ms band

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)


@pytest.fixture(scope="module")
def server():
    with LocalServer(threads=1) as s:
        yield s


@pytest.fixture
def live(server):
    src = herd.view.EnvSource("anymal_c-walk", 2, address=server.address, policy="zero", seed=0)
    viewer = herd.view.Viewer(src, period=1 / 50).start()
    try:
        yield src, viewer
    finally:
        viewer.stop()
        src.close()


def wait_scale(b, cond, timeout, what):
    """herdViewer.render() once cond(its scale) holds and the drawing buffer has that scale (the page sets the
    scale when it decides and resizes the buffer at its next draw, so the two can differ for a frame)."""
    deadline = time.monotonic() + timeout
    while True:
        r = b.evaluate("herdViewer.render()")
        if cond(r["scale"]) and (r["width"], r["height"]) == (round(W * r["scale"]), round(H * r["scale"])):
            return r
        assert time.monotonic() < deadline, "%s: the render scale stayed %s (%s)" % (what, r["scale"], r)
        time.sleep(0.1)


def test_adaptive_scale_follows_the_frame_time(live):
    src, viewer = live
    with Browser(W, H) as b:
        b.goto(viewer.url)
        b.wait_for("window.herdViewer && herdViewer.drawn")
        assert b.evaluate("herdViewer.render().adaptive") is True
        b.evaluate("herdViewer.slowDraws(%d)" % SLOW_MS)
        r = wait_scale(b, lambda s: s <= 0.4 + 1e-9, 90, "slow draws")
        assert r["changes"] >= 2 and r["frameMs"] >= SLOW_MS
        # the drawing buffer is the canvas's size times the scale (wait_scale waited for it); the page's pixels are
        # the canvas's
        info = b.evaluate("herdViewer.setPaused(true), herdViewer.info()")
        assert (info["width"], info["height"]) == (W, H)
        # the picture at that scale: the base's red at the base's pixel, the nearest foot dark
        wait_paused(b, src)
        info = b.evaluate("herdViewer.info()")
        assert info["renderWidth"] == r["width"]
        png = b.screenshot()
        keep(png, "render_scale_low.png")
        frac, img = robot_fraction(png, info["pixel"], base_rgb(src.scene()))
        assert frac > 0.6, "base colour covers only %.0f%% around %s at scale %s" % (100 * frac, info["pixel"], r)
        with src._io:                                   # the viewer's thread shares the session's socket
            poses = src.envs.poses(src._ids)
        check_foot(img, poses, info)
        # fast again: the scale comes back up, unless this machine is too busy for frames the page calls fast
        # (every decision's median frame at or over the band's low end, as the page saw them)
        b.evaluate("herdViewer.slowDraws(0); herdViewer.setPaused(false)")
        deadline, seen = time.monotonic() + 60, set()
        while True:
            r = b.evaluate("herdViewer.render()")
            if r["scale"] > 0.4 + 1e-9:
                break
            if r["frameMs"] < SLOW_MS:
                seen.add(r["frameMs"])
            if time.monotonic() > deadline:
                assert seen and min(seen) >= r["band"][0], \
                    "the scale stayed at 0.4 though frames took %s ms (band %s)" % (sorted(seen), r["band"])
                print("render scale: frames stayed slow here (%s ms): the scale rightly stayed" % sorted(seen))
                break
            time.sleep(0.1)
        # screenshots fix it at full resolution, slow or not
        b.evaluate("herdViewer.slowDraws(%d)" % SLOW_MS)
        full_resolution(b)
        d0 = b.evaluate("herdViewer.draws")
        b.wait_for("herdViewer.draws >= %d" % (d0 + 25), 60)
        r = b.evaluate("herdViewer.render()")
        assert (r["scale"], r["adaptive"], r["width"], r["height"]) == (1, False, W, H)
        assert b.console_errors == []


def test_scale_option_fixes_the_resolution(live):
    src, viewer = live
    with Browser(W, H) as b:
        b.goto(viewer.url + "?scale=1")
        b.wait_for("window.herdViewer && herdViewer.drawn")
        b.evaluate("herdViewer.slowDraws(%d)" % SLOW_MS)
        d0 = b.evaluate("herdViewer.draws")
        b.wait_for("herdViewer.draws >= %d" % (d0 + 40), 90)     # the auto scale would have moved by now
        r = b.evaluate("herdViewer.render()")
        assert (r["scale"], r["adaptive"], r["changes"], r["width"], r["height"]) == (1, False, 0, W, H)
        b.goto("about:blank")
        b.clear_errors()
        b.goto(viewer.url + "?scale=0.5")
        b.wait_for("window.herdViewer && herdViewer.drawn")
        r = b.evaluate("herdViewer.render()")
        assert (r["scale"], r["adaptive"], r["width"], r["height"]) == (0.5, False, W // 2, H // 2)
        assert b.console_errors == []


def test_batched_robots_each_drawn_once(server):
    """16 worlds side by side, the camera back over all of them: every robot is in one of the levels'
    instanced draws, none twice, and the farther ones from the coarser levels."""
    src = herd.view.EnvSource("anymal_c-walk", 16, address=server.address, policy="zero", seed=0)
    viewer = herd.view.Viewer(src, period=1 / 50).start()
    try:
        with Browser(W, H) as b:
            b.goto(viewer.url + "?scale=1")
            b.wait_for("window.herdViewer && herdViewer.drawn")
            tri = b.evaluate("herdViewer.batch().triangles")
            assert len(tri) >= 2 and all(a > 2 * c for a, c in zip(tri, tri[1:])), tri    # each level coarser
            # near: the followed robot fills the view; the others beside it are partly out of it
            near = b.evaluate("herdViewer.settled() && herdViewer.batch().counts")
            assert 1 <= sum(near) < 16 and near[0] >= 1, near
            # far: every robot in view, the far ones coarse
            b.evaluate("herdViewer.setFollow(false); herdViewer.setView({target: [4.5, -4.5, 0.3], dist: 18, el: 0.9})")
            b.wait_for("herdViewer.settled()")
            counts = b.evaluate("herdViewer.batch().counts")
            assert sum(counts) == 16 and counts[-1] >= 1, counts
            b.evaluate("herdViewer.setCollision(true)")
            b.wait_for("herdViewer.settled()")
            assert sum(b.evaluate("herdViewer.batch().counts")) == 0          # the shapes instead
            assert b.console_errors == []
    finally:
        viewer.stop()
        src.close()

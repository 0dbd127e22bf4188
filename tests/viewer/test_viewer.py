"""The viewer in a real browser: headless Chromium (Selenium and chromium-driver, tests/viewer/browser.py)
loads the live page of `herd.view` (poses of a real herd-server) and a replay written by `herd.record`,
takes screenshots at two times and checks that the robot is drawn where its base projects (pixels of the
base's colour, the red of its shells with the visual meshes on, around the pixel this test computes itself
from the server's pose and the page's camera), that a leg's link is drawn where its pose says (the dark
foot at the projection of its shank's foot point), that it moved, that frames keep arriving, that
play/pause, the collision-shape toggle and the reward terms work, that `python3 -m herd.view
--screenshot` writes a picture of the drawn robot (not of a page still loading), and that the page logs no
console error.

Run: tests/viewer/run.sh (make test-viewer).  HERD_VIEWER_SHOTS=DIR keeps the screenshots there.
"""
import colorsys
import io
import math
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

import herd
import herd.record
import herd.render
import herd.view
from herd.local import LocalServer

from browser import HAVE_BROWSER, WHY_NOT, Browser
from herd.meshes import read_glb, visual_path

W, H = 800, 600
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)


@pytest.fixture(scope="module")
def server():
    with LocalServer(threads=1) as s:
        yield s


def base_rgb(scene, collision=False):
    """The base's colour as the page shows it: with the visual meshes, the median of the base mesh's
    clearly coloured vertices (sRGB: the shells' red); otherwise (or collision=True) the collision
    primitive's linear RGB encoded as sRGB."""
    path = visual_path(scene)
    if path and not collision:
        C = read_glb(path)[scene["bodies"][0]["name"]][2]
        hsv = np.array([colorsys.rgb_to_hsv(*c) for c in C])
        return list(np.median(C[hsv[:, 1] > 0.5], axis=0))
    g = next(g for g in scene["geoms"] if g["body"] == 0)
    return [12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055 for c in g["rgba"][:3]]


def foot_point(poses, world=0, leg=0):
    """World position of leg `leg`'s foot centre (its shank frame's foot point, herd's anymal_c.urdf: the
    FOOT frame at (+-0.08795, +-0.01305, -0.33797) in XX_SHANK, the foot 0.0225 above it) of a poses dict."""
    shank = 3 + 3 * leg                       # bodies: base, then per leg (LF, RF, LH, RH) HIP, THIGH, SHANK
    sign = [(1, 1), (1, -1), (-1, 1), (-1, -1)][leg]
    off = np.array([0.08795 * sign[0], 0.01305 * sign[1], -0.33797 + 0.0225])
    R = herd.render.quat_to_mat(poses["body_quat"][world][shank])
    return poses["body_pos"][world][shank] + R @ off


def check_foot(img, poses, info):
    """The foot nearest the camera (not hidden behind the body) is drawn dark where its shank's pose puts it."""
    cam = np.asarray(info["camera"]["position"])
    feet = [foot_point(poses, 0, leg) for leg in range(4)]
    leg = int(np.argmin([np.linalg.norm(f - cam) for f in feet]))
    px = project(feet[leg], info["camera"], info["width"], info["height"])
    frac = dark_fraction(img, px)
    assert frac > 0.5, "leg %d: only %.0f%% dark pixels around its foot's projection %s" % (leg, 100 * frac, px)


def dark_fraction(img, pixel, half=2):
    """Share of the pixels around `pixel` that are dark (value < 0.3): the feet are black, the ground's
    darker squares have value 0.59 and the sky is light."""
    x, y = int(round(pixel[0])), int(round(pixel[1]))
    win = img[max(0, y - half):y + half + 1, max(0, x - half):x + half + 1].reshape(-1, 3) / 255.0
    return float(np.mean(win.max(1) < 0.3))


def is_robot_colour(px, ref):
    """Same hue as the base's colour (within 20 degrees) and clearly saturated: the ground is grey, the
    sky nearly grey, the legs dark grey."""
    h0, _, _ = colorsys.rgb_to_hsv(*ref)
    h, s, v = colorsys.rgb_to_hsv(*(np.asarray(px[:3], float) / 255.0))
    dh = min(abs(h - h0), 1 - abs(h - h0)) * 360
    return dh < 20 and s > 0.35 and v > 0.2


def project(p, cam, width, height):
    """Pixel (x right, y down) of world point p through the page's camera: a look-at perspective camera
    (position, target, up, vertical fov in degrees, aspect), computed here independently of three.js."""
    pos, tgt, up = (np.asarray(cam[k], float) for k in ("position", "target", "up"))
    f = tgt - pos
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    v = np.asarray(p, float) - pos
    x, y, z = v @ r, v @ u, v @ f
    t = math.tan(math.radians(cam["fov"]) / 2)
    ndc = (x / (z * t * cam["aspect"]), y / (z * t))
    return np.array([(ndc[0] + 1) / 2 * width, (1 - ndc[1]) / 2 * height])


def robot_fraction(png, pixel, ref, half=4):
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    x, y = int(round(pixel[0])), int(round(pixel[1]))
    win = img[max(0, y - half):y + half + 1, max(0, x - half):x + half + 1].reshape(-1, 3)
    return np.mean([is_robot_colour(p, ref) for p in win]), img


def keep(png, name):
    d = os.environ.get("HERD_VIEWER_SHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(png)


def wait_base(b, expected, timeout=20.0):
    """Until the page draws the frame whose focused base is `expected` (the server's pose)."""
    deadline = time.monotonic() + timeout
    while True:
        info = b.evaluate("herdViewer.info()")
        if "base" in info and np.allclose(info["base"], expected, atol=2e-5):
            b.wait_for("herdViewer.settled()", timeout)     # and drawn: on the canvas
            return b.evaluate("herdViewer.info()")
        if time.monotonic() > deadline:
            raise AssertionError("page never showed base %s (last %s)" % (expected, info.get("base")))
        time.sleep(0.03)


def wait_paused(b, src, timeout=30.0):
    """After the page asked a live page's own source (herd.view.EnvSource) to pause: returns the source's last
    step once the source has stopped stepping and the page shows that step.  The pause travels to the source by
    an HTTP request, so no fixed wait is long enough on a busy machine: this waits for the source's flag, then
    takes its lock (a frame being stepped when the flag changed is finished by then), then waits for the page."""
    b.wait_for("herdViewer.info().paused", timeout)
    deadline = time.monotonic() + timeout
    while not src.paused:
        assert time.monotonic() < deadline, "the source never heard the page's pause"
        time.sleep(0.02)
    with src._io:
        step = src.step
    b.wait_for("herdViewer.info().step === %d && herdViewer.settled()" % step, timeout)
    return step


def frames_flow(b, n=10, timeout=30.0):
    """The page keeps receiving frames: n more arrive (the viewer pushes 50 a second; a busy machine delivers
    fewer, which is not a fault, so no rate is asserted, only that the stream does not stall for timeout s).
    Returns the rate seen, for the log."""
    n0, t0 = b.evaluate("herdViewer.frames"), time.monotonic()
    b.wait_for("herdViewer.frames >= %d" % (n0 + n), timeout=timeout)
    rate = (b.evaluate("herdViewer.frames") - n0) / (time.monotonic() - t0)
    print("viewer: %.0f frames/s reached the page" % rate)
    return rate


def test_live_page_attached_to_a_session(server):
    """The paper's drop scenario stepped by this test; the viewer attached read-only (herd.view.attach)."""
    with herd.make_vec("paper-drop", 2, address=server.address, seed=0) as envs:
        envs.reset(seed=0)
        zero = np.zeros((2, envs.act_dim), np.float32)
        ref = base_rgb(envs.scene())
        viewer = herd.view.attach(envs, hz=50)
        try:
            with Browser(W, H) as b:
                b.goto(viewer.url)
                b.wait_for("window.herdViewer && herdViewer.ready")
                frames_flow(b)
                b.evaluate("herdViewer.setFollow(false)")      # fixed camera: the robot moves on screen
                shots = []
                for k, steps in enumerate((60, 300)):
                    for _ in range(steps):
                        envs.step(zero)
                    base = envs.poses([0])["body_pos"][0, 0]
                    info = wait_base(b, base)
                    png = b.screenshot()
                    keep(png, "live_%d.png" % k)
                    px = project(base, info["camera"], info["width"], info["height"])
                    assert np.allclose(px, info["pixel"], atol=1.0)       # our projection = three.js's
                    frac, img = robot_fraction(png, px, ref)
                    assert frac > 0.6, "base colour covers only %.0f%% around %s" % (100 * frac, px)
                    check_foot(img, envs.poses([0]), info)
                    shots.append((base, px, img))
                (b0, p0, i0), (b1, p1, i1) = shots
                assert b0[2] - b1[2] > 0.1                 # it fell ...
                assert np.linalg.norm(p1 - p0) > 10        # ... and moved on screen
                assert np.mean(np.any(i0 != i1, axis=-1)) > 0.005
                # the collision shapes instead of the meshes: the base box's own colour at the same pixel
                assert b.evaluate("herdViewer.meshes").count("base") == 1
                b.evaluate("herdViewer.setCollision(true)")
                b.next_frames(2)
                frac, _ = robot_fraction(b.screenshot(), p1, base_rgb(envs.scene(), collision=True))
                assert frac > 0.6, "collision box colour covers only %.0f%% around %s" % (100 * frac, p1)
                assert b.console_errors == []
        finally:
            viewer.stop()
            viewer.source.close()


def test_live_page_own_session_terms_and_pause(server):
    """python3 -m herd.view's own session: reward terms in the table, play/pause from the page."""
    src = herd.view.EnvSource("anymal_c-walk", 2, address=server.address, policy="random", seed=1)
    viewer = herd.view.Viewer(src, period=1 / 50).start()
    try:
        with Browser(W, H) as b:
            b.goto(viewer.url)
            b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.info().step > 0")
            frames_flow(b)
            rows = b.evaluate("[...document.querySelectorAll('#terms tbody tr')].map(r => r.cells[0].textContent)")
            assert rows == ["reward"] + src.envs.reward_term_names
            values = b.evaluate("[...document.querySelectorAll('#terms tbody tr')].map(r => Number(r.cells[1].textContent))")
            assert all(math.isfinite(v) for v in values) and any(v != 0 for v in values)
            b.evaluate("document.getElementById('play').click()")       # pause
            s0 = wait_paused(b, src)
            time.sleep(0.5)                                 # paused stays paused
            assert b.evaluate("herdViewer.info().step") == s0 == src.step
            b.evaluate("document.getElementById('play').click()")       # play
            b.wait_for("herdViewer.info().step > %d" % s0)
            b.evaluate("document.getElementById('focus').value = '1'; "
                       "document.getElementById('focus').dispatchEvent(new Event('change'))")
            assert b.evaluate("herdViewer.info().world") == 1
            # the camera follows world 1's base: its collision box (around the base's origin whatever the
            # random actions did to the pose, unlike the meshes' red shells) is at the pixel info() names
            b.evaluate("herdViewer.setCollision(true); herdViewer.setPaused(true)")
            wait_paused(b, src)
            info = b.evaluate("herdViewer.info()")
            png = b.screenshot()
            keep(png, "live_walk.png")
            frac, _ = robot_fraction(png, info["pixel"], base_rgb(src.scene(), collision=True))
            assert frac > 0.6
            assert b.console_errors == []
    finally:
        viewer.stop()
        src.close()


def test_replay_offline(server, tmp_path):
    """herd.record's HTML opens from file:// (three.js inlined) and shows the recorded poses."""
    with herd.make_vec("paper-drop", 1, address=server.address, seed=0) as envs:
        mp4 = str(tmp_path / "drop.mp4") if shutil.which("ffmpeg") else None
        rec = herd.record(envs, str(tmp_path / "drop.html"), steps=800, mp4=mp4, seed=0)
        ref = base_rgb(rec.scene)
    html = open(rec.html_path, encoding="utf-8").read()
    assert 'src="' not in html and 'href="viewer.css"' not in html     # nothing loaded from elsewhere
    with Browser(W, H) as b:
        b.goto("file://" + rec.html_path)
        b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.mode === 'replay'")
        assert b.evaluate("herdViewer.replay.nframes") == rec.nframes
        b.evaluate("herdViewer.setPaused(true)")
        shots = []
        for k, i in enumerate((2, rec.nframes - 1)):
            if k == 1:
                b.evaluate("herdViewer.setFollow(false)")
            b.evaluate("herdViewer.replay.seek(%d)" % i)
            base = rec.body_pos[i][0, 0]
            info = wait_base(b, base)
            assert info["step"] == i
            png = b.screenshot()
            keep(png, "replay_%d.png" % k)
            px = project(base, info["camera"], info["width"], info["height"])
            frac, img = robot_fraction(png, px, ref)
            assert frac > 0.6, "base colour covers only %.0f%% around %s" % (100 * frac, px)
            check_foot(img, {"body_pos": rec.body_pos[i], "body_quat": rec.body_quat[i]}, info)
            shots.append((base, img))
        assert shots[0][0][2] - shots[1][0][2] > 0.1
        assert np.mean(np.any(shots[0][1] != shots[1][1], axis=-1)) > 0.005
        b.evaluate("herdViewer.replay.seek(2)")             # from an early frame: a replay that does not
        f0 = wait_base(b, rec.body_pos[2][0, 0])["step"]      # loop stays on its last one
        b.evaluate("herdViewer.setPaused(false)")           # plays on its own clock
        deadline = time.monotonic() + 20.0                   # however slowly the page draws here
        while b.evaluate("herdViewer.info().step") == f0:
            assert time.monotonic() < deadline, "the replay stayed on frame %d after it was unpaused" % f0
            time.sleep(0.05)
        assert b.console_errors == []
    if mp4:
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                                "stream=width,height,nb_read_frames", "-of", "csv=p=0", mp4],
                               capture_output=True, text=True, check=True).stdout.strip()
        assert probe == "640,480,%d" % rec.nframes


def test_replay_on_a_heightfield(server, tmp_path):
    """The page's heightfield terrain (no task uses one yet): a real rollout's replay whose scene gets a
    heightfield (a flat one, then one with a 0.6 m ridge in view); the flat one looks like the plane
    around the robot and the ridge changes the picture, with no console error."""
    with herd.make_vec("paper-drop", 1, address=server.address, seed=0) as envs:
        rec = herd.record(envs, str(tmp_path / "plane.html"), steps=200, seed=0)
    n = 41
    flat = {"type": "heightfield", "nx": n, "ny": n, "x0": -5.0, "y0": -5.0, "dx": 0.25, "dy": 0.25,
            "heights": np.zeros((n, n)).tolist()}
    ridge = dict(flat, heights=np.where(np.arange(n)[None, :] == 26, 0.6, 0.0).repeat(n, 0).tolist())
    shots = {}
    for name, terrain in (("plane", None), ("flat", flat), ("ridge", ridge)):
        if terrain is not None:
            rec.scene = dict(rec.scene, terrain=terrain)
            rec.write_html(str(tmp_path / (name + ".html")))
        with Browser(W, H) as b:
            b.goto("file://" + str(tmp_path / (name + ".html")))
            b.wait_for("window.herdViewer && herdViewer.ready")
            b.evaluate("herdViewer.setPaused(true); herdViewer.replay.seek(%d)" % (rec.nframes - 1))
            wait_base(b, rec.body_pos[-1][0, 0])
            png = b.screenshot()
            keep(png, "terrain_%s.png" % name)
            shots[name] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
            assert b.console_errors == []
    below = slice(H // 2 + 40, H - 20), slice(W // 2 - 150, W // 2 + 150)    # ground in front of the robot
    tile = lambda img: np.abs(img[below] - shots["plane"][below]).max(-1)    # noqa: E731
    assert np.mean(tile(shots["flat"]) < 40) > 0.8
    assert np.mean(np.any(shots["ridge"] != shots["flat"], -1)) > 0.02


def test_screenshot_command(tmp_path):
    """python3 -m herd.view --local --screenshot: a PNG of the drawn page while its SSE stream runs, not of a
    page still loading (that shows no robot: here the robot's red covers part of the picture)."""
    out = tmp_path / "live.png"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "herd.view", "--local", "--task", "anymal_c-walk", "--worlds", "2",
                        "--screenshot", str(out), "--at", "0.5", "--size", "%dx%d" % (W, H)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    print(r.stdout.strip(), "(%.1f s in all)" % (time.monotonic() - t0))
    assert re.search(r"fully drawn \d+\.\d+ s", r.stdout), r.stdout
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (H, W, 3)
    keep(out.read_bytes(), "screenshot_command.png")
    hsv = np.array([colorsys.rgb_to_hsv(*p) for p in img[::4, ::4].reshape(-1, 3) / 255.0])
    red = (np.minimum(hsv[:, 0], 1 - hsv[:, 0]) * 360 < 20) & (hsv[:, 1] > 0.35) & (hsv[:, 2] > 0.2)
    assert red.mean() > 0.01, "hardly any of the robot's red in the picture (%.2f%%)" % (100 * red.mean())

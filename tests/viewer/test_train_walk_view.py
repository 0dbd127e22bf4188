"""The README's path to seeing the robot, in headless Chromium: `examples/train_walk.py --view` (the
training worlds, attached read-only, with the reward terms the trainer publishes) shows the robot within a
minute of starting the script, and `examples/train_walk.py --eval-only --view` shows the committed trained
policy walking.  Each run starts its own herd-server (build/herd-server, through herd.local) and is stopped
by SIGTERM once the page has been checked.

Needs PyTorch (the examples' dependency) besides Chromium; skipped with the reason when either is missing.
"""
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest
from PIL import Image

from browser import HAVE_BROWSER, WHY_NOT, Browser
from test_viewer import base_rgb, is_robot_colour

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

pytestmark = [pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT),
              pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode,
                                 reason="PyTorch not installed (the examples need it)")]

BUDGET_S = 60.0         # README: the robot is on the page within a minute of starting training


class Script:
    """examples/train_walk.py --view ARGS in a process of its own; url() waits for the line naming the page."""

    def __init__(self, args, tmp_path):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"), PYTHONUNBUFFERED="1")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "train_walk.py"),
                                      "--view", "--view-port", "0", "--out", str(tmp_path)] + args,
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self._url = None
        self._seen = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            m = re.search(r"train_walk: watch the (training|trained policy walk) at (http://\S+)", line)
            if m and self._url is None:
                self._url = m.group(2)
                self._seen.set()
        self._seen.set()

    def url(self, timeout=BUDGET_S):
        self._seen.wait(timeout)
        assert self._url, "no viewer URL printed:\n" + "".join(self.lines[-30:])
        return self._url

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)       # the script's handler stops its herd-server
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def scene_of(url):
    with urllib.request.urlopen(url + "scene", timeout=10) as r:
        return json.load(r)


def robot_at_base(b, ref):
    """Screenshot; share of the 9 x 9 pixels around the focused base's projection with the base's colour, with
    the collision shapes shown (the base one box of one colour, `ref` = base_rgb(scene, collision=True)): the
    check is that the robot is drawn where its pose says; the meshes' own colours are checked by test_viewer.py
    and test_meshes.py."""
    if not b.evaluate("document.getElementById('collision').checked"):
        d0 = b.evaluate("herdViewer.draws")
        b.evaluate("herdViewer.setCollision(true)")
        deadline = time.monotonic() + 20.0
        while b.evaluate("herdViewer.draws") == d0:
            assert time.monotonic() < deadline, "the page did not redraw with the collision shapes"
            time.sleep(0.03)
        b.next_frames(2)        # what was drawn is on the canvas
    info = b.evaluate("herdViewer.info()")
    png = b.screenshot()
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    x, y = (int(round(v)) for v in info["pixel"])
    win = img[max(0, y - 4):y + 5, max(0, x - 4):x + 5].reshape(-1, 3)
    return np.mean([is_robot_colour(p, ref) for p in win]), info, img


@pytest.mark.parametrize("trainer", ["herd_ppo", "rsl_rl"])
def test_train_walk_view_shows_the_robot_within_a_minute(trainer, tmp_path):
    if trainer == "rsl_rl":
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        import train_walk
        if not train_walk.rsl_rl_available():
            pytest.skip("rsl_rl 1.0.2 not importable")
    s = Script(["--trainer", trainer, "--num-envs", "64", "--minutes", "5", "--eval-episodes", "16",
                "--checkpoint-every", "0", "--no-desync"], tmp_path)
    try:
        url = s.url()
        sc = scene_of(url)
        assert "training" in sc["title"] and sc["worlds"] == [0, 1, 2, 3]
        ref = base_rgb(sc["scene"], collision=True)
        with Browser(800, 600) as b:
            b.goto(url)
            b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.info().pixel", timeout=BUDGET_S)
            frac, info0, img0 = robot_at_base(b, ref)
            seen_after = time.monotonic() - s.t0
            assert frac > 0.6, "base colour covers only %.0f%% around %s" % (100 * frac, info0["pixel"])
            assert seen_after < BUDGET_S, "the robot was on the page %.1f s after the start" % seen_after
            # the trainer publishes each step's reward terms: the table lists the task's terms with numbers
            b.wait_for("herdViewer.info().step > 0", timeout=BUDGET_S)
            names = b.evaluate("[...document.querySelectorAll('#terms tbody tr')].map(r => r.cells[0].textContent)")
            assert names[0] == "reward" and "tracking_lin_vel" in names and len(names) > 5
            vals = b.evaluate("[...document.querySelectorAll('#terms tbody tr')]"
                              ".map(r => Number(r.cells[1].textContent))")
            assert all(math.isfinite(v) for v in vals) and any(v != 0 for v in vals)
            # the training moves the worlds: the page's picture of world 0 changes
            b.evaluate("herdViewer.setFollow(false)")
            t_end = time.monotonic() + 20
            moved = False
            while not moved and time.monotonic() < t_end:
                time.sleep(1.0)
                info1 = b.evaluate("herdViewer.info()")
                moved = np.linalg.norm(np.subtract(info1["base"], info0["base"])) > 0.01
            assert moved, "world 0's base did not move: %s -> %s" % (info0["base"], info1["base"])
            assert b.console_errors == []
        assert s.proc.poll() is None, "the training stopped early:\n" + "".join(s.lines[-20:])
    finally:
        s.stop()


def test_eval_only_view_shows_the_trained_policy_walking(tmp_path):
    """The committed policy (examples/walk_policy.pt) on 4 worlds in real time: the followed robot is drawn
    where its base projects and walks (its base travels > 0.3 m in 3 s of wall clock)."""
    s = Script(["--eval-only", "--eval-episodes", "16", "--policy", os.path.join(ROOT, "examples", "walk_policy.pt")],
               tmp_path)
    try:
        url = s.url()
        sc = scene_of(url)
        assert "trained policy" in sc["title"]
        ref = base_rgb(sc["scene"], collision=True)
        with Browser(800, 600) as b:
            b.goto(url)
            b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.info().step > 25", timeout=BUDGET_S)
            best = 0.0
            for w in range(4):          # the four worlds' commands differ; the fastest one must walk
                b.evaluate("document.getElementById('focus').value = '%d'; "
                           "document.getElementById('focus').dispatchEvent(new Event('change'))" % w)
                b.wait_for("herdViewer.info().world === %d" % w)
                b.evaluate("herdViewer.setPaused(true)")        # a still picture to compare with its pose:
                # the frame shown was made after the script's viewer paused, so no later one moves the robot
                b.wait_for("herdViewer.info().framePaused && herdViewer.settled()", 30)
                frac, i0, img = robot_at_base(b, ref)
                if os.environ.get("HERD_VIEWER_SHOTS"):
                    Image.fromarray(img).save(os.path.join(os.environ["HERD_VIEWER_SHOTS"], "eval_walk_%d.png" % w))
                assert frac > 0.6, "world %d: base colour covers only %.0f%% around %s" % (w, 100 * frac, i0["pixel"])
                b.evaluate("herdViewer.setPaused(false)")
                time.sleep(3.0)
                i1 = b.evaluate("herdViewer.info()")
                assert i1["world"] == w and i1["step"] > i0["step"]
                best = max(best, math.hypot(i1["base"][0] - i0["base"][0], i1["base"][1] - i0["base"][1]))
                assert i1["base"][2] > 0.35, "world %d's base is down at %.2f m" % (w, i1["base"][2])
            assert best > 0.3, "no world walked: the largest horizontal travel in 3 s was %.2f m" % best
            assert b.console_errors == []
    finally:
        s.stop()


def test_train_walk_record_writes_a_replay_of_the_trained_policy(tmp_path):
    """examples/train_walk.py --eval-only --record: the replay page opens offline (file://) in Chromium with
    the robot drawn and no console error; the recorded base of some world travels > 2 m in the 10 s (the
    committed policy walks); the MP4 (when ffmpeg is there), GIF and PNG still are written beside it."""
    html = tmp_path / "walk.html"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_walk.py"), "--eval-only",
                        "--eval-episodes", "16", "--out", str(tmp_path), "--record", str(html),
                        "--policy", os.path.join(ROOT, "examples", "walk_policy.pt")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "replay written to" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    text = html.read_text(encoding="utf-8")
    assert 'src="' not in text                       # self-contained: nothing loaded from elsewhere
    with Browser(800, 600) as b:
        b.goto("file://" + str(html))
        b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.mode === 'replay'")
        n = b.evaluate("herdViewer.replay.nframes")
        assert n == 501, n
        b.evaluate("herdViewer.setPaused(true)")
        travel = []
        for w in range(4):
            b.evaluate("document.getElementById('focus').value = '%d'; "
                       "document.getElementById('focus').dispatchEvent(new Event('change'))" % w)
            b.evaluate("herdViewer.replay.seek(0)")
            b.wait_for("herdViewer.info().step === 0 && herdViewer.info().world === %d && herdViewer.settled()" % w)
            p0 = b.evaluate("herdViewer.info()")["base"]
            b.evaluate("herdViewer.replay.seek(%d)" % (n - 1))
            b.wait_for("herdViewer.info().step === %d && herdViewer.settled()" % (n - 1))
            frac, info, _ = robot_at_base(b, base_rgb(b.evaluate("window.HERD_REPLAY.scene"), collision=True))
            assert frac > 0.6 and info["world"] == w
            travel.append(math.hypot(info["base"][0] - p0[0], info["base"][1] - p0[1]))
        assert max(travel) > 2.0, "recorded travel per world in 10 s: %s" % travel
        assert b.console_errors == []
    for ext in (".gif", ".png") + ((".mp4",) if shutil.which("ffmpeg") else ()):
        p = tmp_path / ("walk" + ext)
        assert p.exists() and p.stat().st_size > 0, p

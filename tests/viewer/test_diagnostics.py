"""The per-contact diagnostics on screen (protocol minor 6), in headless Chromium: a robot standing still shows its
loaded contacts as rings of the stick colour around the pixels its contacts project to (this test projects them
itself from the recorded poses and the page's camera) and none of the slip colour; a robot pushed every step
shows the slip colour at a slipping contact; a step answered by the solver's fallback model shows the fallback
mark above the robot; a joint-limit impulse (written into a replay: no task's step reaches a limit on demand
through the protocol) shows the limit ball at its joint; the side panel lists the followed world's contacts with their states; the live page and
HTML replays both draw them; and the page logs no console error.

Run: tests/viewer/run.sh tests/viewer/test_diagnostics.py.  HERD_VIEWER_SHOTS=DIR keeps the screenshots."""
import io

import numpy as np
import pytest
from PIL import Image

import herd
import herd.record
import herd.view
from herd.local import LocalServer

from browser import HAVE_BROWSER, WHY_NOT, Browser
from test_viewer import W, H, keep, project, wait_base

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)

# the page's colours (viewer.js, STATE_COLOURS and FALLBACK_COLOUR), sRGB
STICK, SLIP, FALLBACK, LIMIT = (0x17, 0xb8, 0x3a), (0xff, 0xb0, 0x00), (0xff, 0x00, 0xaa), (0x8a, 0x2b, 0xe2)


@pytest.fixture(scope="module")
def server():
    with LocalServer(threads=1) as s:
        yield s


def colour_fraction(img, pixel, rgb, half=16, tol=40):
    """Share of the pixels within `half` of `pixel` within `tol` (per channel) of colour rgb."""
    x, y = int(round(pixel[0])), int(round(pixel[1]))
    win = img[max(0, y - half):y + half + 1, max(0, x - half):x + half + 1].reshape(-1, 3).astype(int)
    return float(np.mean(np.all(np.abs(win - np.asarray(rgb)) <= tol, axis=1))) if len(win) else 0.0


def shot(b):
    png = b.screenshot()
    return png, np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def open_replay(b, rec, frame):
    b.goto("file://" + rec.html_path)
    b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.mode === 'replay'")
    b.evaluate("herdViewer.setPaused(true); herdViewer.setFollow(true)")
    b.evaluate("herdViewer.replay.seek(%d)" % frame)
    return wait_base(b, rec.body_pos[frame][0, 0])


def contacts_of(rec, frame):
    """(pos, state, impulse) of world 0's contacts in a recorded frame."""
    n = int(rec.contacts["count"][frame][0])
    return (rec.contacts["pos"][frame][0, :n], rec.diag["state"][frame][0, :n],
            rec.contacts["impulse"][frame][0, :n])


def panel_states(b):
    return b.evaluate("[...document.querySelectorAll('#contacts-table tbody tr')]"
                      ".map(r => [r.cells[0].textContent, r.cells[1] ? r.cells[1].textContent : ''])")


def test_a_robot_standing_still_shows_sticking_contacts(server, tmp_path):
    with herd.make_vec("anymal_c-stand", 1, address=server.address, seed=3) as envs:
        rec = herd.record(envs, str(tmp_path / "still.html"), steps=150, seed=3)
    i = rec.nframes - 1
    pos, state, imp = contacts_of(rec, i)
    assert np.all(state[imp > 0] == 1) and np.sum(imp > 0) >= 3, (state, imp)
    with Browser(W, H) as b:
        info = open_replay(b, rec, i)
        b.next_frames(2)
        png, img = shot(b)
        keep(png, "diag_still.png")
        shown = b.evaluate("herdViewer.contacts()")
        assert [c["state"] for c in shown] == state.tolist() and all(c["ring"] for c in shown)
        stick = [colour_fraction(img, project(p, info["camera"], W, H), STICK) for p in pos[imp > 0]]
        slip = [colour_fraction(img, project(p, info["camera"], W, H), SLIP) for p in pos]
        assert sum(f > 0.04 for f in stick) >= 2, "the stick colour at the contacts' pixels: %s" % stick
        assert max(slip) < 0.005, "the slip colour where nothing slips: %s" % slip
        rows = panel_states(b)
        assert len(rows) == len(state) and all(name.endswith("SHANK") for name, _ in rows), rows
        assert [s for _, s in rows] == [["open", "stick", "slip"][s] for s in state]
        assert "solver's own" in b.evaluate("document.getElementById('fallback').textContent")
        assert not b.evaluate("herdViewer.fallbackShown()")
        # the toggle hides the rings: the stick colour goes
        b.evaluate("document.getElementById('contacts').click()")
        b.next_frames(2)
        _, img2 = shot(b)
        after = [colour_fraction(img2, project(p, info["camera"], W, H), STICK) for p in pos[imp > 0]]
        assert max(after) < 0.005, after
        assert b.console_errors == []


def test_a_pushed_robot_shows_slip_and_the_fallback_mark(server, tmp_path):
    cfg = {"solver": "coulomb-stall-admm", "push_vel_max": 3.0, "push_interval_s": 0.02}
    with herd.make_vec("anymal_c-stand", 1, address=server.address, seed=3, config=cfg) as envs:
        rec = herd.record(envs, str(tmp_path / "pushed.html"), steps=100, seed=3, every=1)
    fallback = [int(f[0]) for f in rec.diag["fallback"]]
    # a frame with a loaded slipping contact in view
    frames = [i for i in range(1, rec.nframes) if np.any((contacts_of(rec, i)[1] == 2) & (contacts_of(rec, i)[2] > 0))]
    assert frames, "no slipping contact in 100 pushed steps"
    with Browser(W, H) as b:
        found = False
        for i in frames[:12]:
            info = open_replay(b, rec, i)
            b.next_frames(2)
            png, img = shot(b)
            pos, state, imp = contacts_of(rec, i)
            fr = [colour_fraction(img, project(p, info["camera"], W, H), SLIP) for p in pos[(state == 2) & (imp > 0)]]
            if max(fr) > 0.04:
                keep(png, "diag_slip.png")
                found = True
                assert "slip" in [s for _, s in panel_states(b)]
                break
        assert found, "the slip colour at no slipping contact's pixels"
        if 1 in fallback:
            i = fallback.index(1)
            info = open_replay(b, rec, i)
            b.next_frames(2)
            assert b.evaluate("herdViewer.fallbackShown()")
            assert "fallback model" in b.evaluate("document.getElementById('fallback').textContent")
            png, img = shot(b)
            keep(png, "diag_fallback.png")
            mark = project(rec.body_pos[i][0, 0] + np.array([0, 0, 0.45]), info["camera"], W, H)
            assert colour_fraction(img, mark, FALLBACK, half=6) > 0.1, "no fallback mark above the robot"
        else:
            pytest.fail("coulomb-stall-admm's fallback answered none of 100 pushed steps: the mark is untested")
        assert b.console_errors == []


def test_the_live_page_colours_the_contacts(server):
    # the source is paused and stepped here to a known state before the page opens (150 zero-action steps from
    # its reset, as the replay test above: the robot stands still), so what is drawn does not depend on when a
    # pause would land on a busy machine
    src = herd.view.EnvSource("anymal_c-stand", 1, address=server.address, policy="zero", seed=3)
    src.set_paused(True)
    zero = np.zeros((1, src.envs.act_dim), np.float32)
    for _ in range(150):
        src.envs.step(zero)
    src.step = 150
    viewer = herd.view.Viewer(src, period=1 / 50).start()
    try:
        with Browser(W, H) as b:
            b.goto(viewer.url)
            b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.info().step === 150", timeout=60)
            with src._io:                   # the source's thread reads poses too: one request at a time
                p = src.envs.poses([0], diagnostics=True)
            info = wait_base(b, p["body_pos"][0, 0])
            b.next_frames(2)
            png, img = shot(b)
            keep(png, "diag_live.png")
            n = int(p["contact_count"][0])
            loaded = p["contact_impulse"][0, :n] > 0
            assert np.all(p["contact_state"][0, :n][loaded] == 1)
            stick = [colour_fraction(img, project(q, info["camera"], W, H), STICK)
                     for q in p["contact_pos"][0, :n][loaded]]
            assert sum(f > 0.04 for f in stick) >= 2, stick
            assert [c["state"] for c in b.evaluate("herdViewer.contacts()")] == p["contact_state"][0, :n].tolist()
            assert b.console_errors == []
    finally:
        viewer.stop()
        src.close()


def test_a_joint_limit_impulse_shows_at_its_joint(server, tmp_path):
    with herd.make_vec("anymal_c-stand", 1, address=server.address, seed=3) as envs:
        rec = herd.record(envs, str(tmp_path / "limit.html"), steps=50, seed=3)
    i = rec.nframes - 1
    hip = [b["name"] for b in rec.scene["bodies"]].index("LF_HIP")
    assert not np.any(rec.diag["limit_impulse"][i]), "no limit is reached standing"
    with Browser(W, H) as b:
        info = open_replay(b, rec, i)
        b.next_frames(2)
        _, before = shot(b)
        at = project(rec.body_pos[i][0, hip], info["camera"], W, H)
        assert colour_fraction(before, at, LIMIT, half=5) < 0.01
        rec.diag["limit_impulse"][i][0, hip] = -0.1         # LF_HAA at its upper limit
        rec.write_html(str(tmp_path / "limit2.html"))
        rec.html_path = str(tmp_path / "limit2.html")
        info = open_replay(b, rec, i)
        b.next_frames(2)
        png, after = shot(b)
        keep(png, "diag_limit.png")
        assert colour_fraction(after, at, LIMIT, half=5) > 0.5, "no limit ball at LF_HIP's joint"
        assert b.evaluate("document.getElementById('limits').textContent") == "joint limits: LF_HIP -0.1000"
        assert b.console_errors == []

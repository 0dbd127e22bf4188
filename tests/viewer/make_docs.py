"""docs/ figures of the viewer (make docs-viewer): the paper's drop scenario (Hwangbo et al. 2018: PD drop
from 1 m with 1 m/s tangential velocity) recorded by herd.record from a real herd-server, as MP4 and GIF
(herd.render frames), and screenshots of the viewer page in headless Chromium: the replay of that rollout
and the live page of an anymal_c-walk session with reward terms.  The replay HTML (it embeds three.js) is
written to build/docs/, not to docs/.

    python3 tests/viewer/make_docs.py docs        # PYTHONPATH=clients/python:tests/viewer
    python3 tests/viewer/make_docs.py --walk-replay build/docs/replay_walk.html docs   # (make docs-walk)

--walk-replay HTML: only a Chromium screenshot of that replay of the trained walk policy (written by
`examples/train_walk.py --eval-only --record HTML`), 5 s in, as docs/viewer_replay_walk.png.
"""
import os
import sys
import time

import herd
import herd.record
import herd.view
from herd.local import LocalServer

from cdp import Browser


def main(out):
    os.makedirs(out, exist_ok=True)
    os.makedirs("build/docs", exist_ok=True)
    with LocalServer(threads=1) as srv:
        with herd.make_vec("paper-drop", 1, address=srv.address, seed=0) as envs:
            rec = herd.record(envs, os.path.abspath("build/docs/replay_drop.html"), steps=1500,
                              mp4=os.path.join(out, "replay_drop.mp4"), seed=0)
            rec.write_gif(os.path.join(out, "replay_drop.gif"), every=2)
        with Browser(960, 600) as b:
            b.goto("file://" + rec.html_path)
            b.wait_for("window.herdViewer && herdViewer.ready")
            b.evaluate("herdViewer.setPaused(true); herdViewer.replay.seek(%d)" % (rec.nframes // 4))
            time.sleep(0.5)
            with open(os.path.join(out, "viewer_replay_drop.png"), "wb") as f:
                f.write(b.screenshot())
            assert not b.console_errors, b.console_errors
        src = herd.view.EnvSource("anymal_c-walk", 4, address=srv.address, policy="random", seed=0)
        with herd.view.Viewer(src, period=1 / 50) as v, Browser(960, 600) as b:
            b.goto(v.url)
            b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.info().step > 150")
            with open(os.path.join(out, "viewer_live_walk.png"), "wb") as f:
                f.write(b.screenshot())
            assert not b.console_errors, b.console_errors
        src.close()
    for name in ("replay_drop.mp4", "replay_drop.gif", "viewer_replay_drop.png", "viewer_live_walk.png"):
        p = os.path.join(out, name)
        print("%-26s %8.0f kB" % (p, os.path.getsize(p) / 1024))


def walk_replay_screenshot(html, out):
    with Browser(960, 600) as b:
        b.goto("file://" + os.path.abspath(html))
        b.wait_for("window.herdViewer && herdViewer.ready && herdViewer.mode === 'replay'")
        b.evaluate("herdViewer.setPaused(true); herdViewer.replay.seek(Math.min(250, herdViewer.replay.nframes - 1))")
        time.sleep(0.5)
        p = os.path.join(out, "viewer_replay_walk.png")
        with open(p, "wb") as f:
            f.write(b.screenshot())
        assert not b.console_errors, b.console_errors
    print("%-26s %8.0f kB" % (p, os.path.getsize(p) / 1024))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--walk-replay":
        walk_replay_screenshot(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "docs")
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "docs")

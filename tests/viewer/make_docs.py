"""The README's pictures of the viewer and the renderer (make docs-pictures), the robot drawn as it looks
(its visual meshes, viewer/assets), all from a real herd-server:

  docs/viewer_live_walk.png     the live page (python3 -m herd.view's own session) of four anymal_c-walk
                                worlds driven by the committed walking policy (examples/walk_policy.pt)
  docs/replay_walk.mp4, .gif    a 10-s rollout of that policy as herd.render draws it (MP4; the GIF: 5 s)
  docs/replay_walk.png          a still of it (herd.render, 320 x 240)
  docs/viewer_replay_walk.png   its replay page (herd.record's HTML) in Chromium, 5 s in
  docs/replay_drop.mp4, .gif    the paper's drop scenario (Hwangbo et al. 2018: PD drop from 1 m with
                                1 m/s tangential velocity) as herd.render draws it
  docs/viewer_replay_drop.png   its replay page in Chromium
  docs/viewer_replay_rough.png  anymal_c-rough's cell terrain: the replay page of a world driven by the committed
                                rough policy (examples/rough_policy.pt; zero actions without PyTorch) in a
                                stairs-up pit of level 6, and world 12 on stairs down beside it
  docs/replay_rough.png         the same world as herd.render draws it (320 x 240)

The replay HTML files (they embed three.js and the meshes) go to build/docs/, not to docs/.  The policy
needs PyTorch; without it the walking pictures are skipped with a message.

    PYTHONPATH=clients/python python3 tests/viewer/make_docs.py docs [walk drop rough]   # all, or those
"""
import os
import sys

import numpy as np

import herd
import herd.record
import herd.view
from herd.local import LocalServer
from herd.screenshot import Browser, screenshot
from herd.video import write_video

POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "walk_policy.pt")
ROUGH_POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "rough_policy.pt")


def size(p):
    print("%-30s %8.0f kB" % (p, os.path.getsize(p) / 1024), flush=True)


def drop(srv, out, b):
    with herd.make_vec("paper-drop", 1, address=srv.address, seed=0) as envs:
        rec = herd.record(envs, os.path.abspath("build/docs/replay_drop.html"), steps=1500,
                          mp4=os.path.join(out, "replay_drop.mp4"), seed=0)
        rec.write_gif(os.path.join(out, "replay_drop.gif"), every=2)
    screenshot(rec.html_path, os.path.join(out, "viewer_replay_drop.png"), at=0.25 * rec.nframes * rec.dt, browser=b)
    for n in ("replay_drop.mp4", "replay_drop.gif", "viewer_replay_drop.png"):
        size(os.path.join(out, n))


def walk(srv, out, b):
    try:
        pi, config = herd.record.load_policy(POLICY)
    except ImportError as e:
        print("make_docs: no walking pictures (%s)" % e, file=sys.stderr)
        return
    config = dict(config, obs_noise=0.0)
    with herd.make_vec("anymal_c-walk", 4, address=srv.address, seed=3, reward_terms=True, **config) as envs:
        rec = herd.record(envs, os.path.abspath("build/docs/replay_walk.html"), 500, policy=pi, world_ids=range(4),
                          mp4=os.path.join(out, "replay_walk.mp4"), seed=3, size=(480, 360),
                          title="anymal_c-walk, trained policy")
        # the GIF: world 0's first 5 s at 240 x 180, every third frame (about 0.6 MB)
        from PIL import Image
        frames = []
        for i, frame in enumerate(rec.frames(320, 240)):
            if i == rec.nframes // 2:
                Image.fromarray(frame).save(os.path.join(out, "replay_walk.png"))
            if i <= rec.nframes // 2 and i % 3 == 0:
                frames.append(np.asarray(Image.fromarray(frame).resize((240, 180), Image.BILINEAR)))
        write_video(frames, os.path.join(out, "replay_walk.gif"), fps=1.0 / (3 * rec.dt))
    screenshot(rec.html_path, os.path.join(out, "viewer_replay_walk.png"), at=5.0, browser=b)
    src = herd.view.EnvSource("anymal_c-walk", 4, address=srv.address, policy=pi, seed=0, **config)
    src.title = "anymal_c-walk · trained policy (walk_policy.pt)"
    with herd.view.Viewer(src, period=1 / 50) as v:
        screenshot(v.url, os.path.join(out, "viewer_live_walk.png"), at_step=int(round(4.0 / src.control_dt)), browser=b)
    src.close()
    for n in ("replay_walk.mp4", "replay_walk.gif", "replay_walk.png", "viewer_replay_walk.png", "viewer_live_walk.png"):
        size(os.path.join(out, n))


def rough(srv, out, b):
    # one world per column of the field, all on level 6: world 6 stands on stairs up (a pit), 12 on stairs down;
    # driven by the committed rough policy (examples/rough_policy.pt) where PyTorch is installed, else zero actions
    pi, config, who = None, {}, "zero actions"
    try:
        pi, config = herd.record.load_policy(ROUGH_POLICY)
        who = "trained policy"
    except (ImportError, OSError) as e:
        print("make_docs: the rough pictures with zero actions (%s)" % e, file=sys.stderr)
    config = dict(config, obs_noise=0.0, curriculum=0, terrain_level_min=6, terrain_level_max=6)
    with herd.make_vec("anymal_c-rough", 20, address=srv.address, seed=3, reward_terms=True, **config) as envs:
        rec = herd.record(envs, os.path.abspath("build/docs/replay_rough.html"), 100, policy=pi, world_ids=[6, 12],
                          seed=3, title="anymal_c-rough, level 6 (%s)" % who)
        frames = list(rec.frames(320, 240))
    from PIL import Image
    Image.fromarray(frames[-1]).save(os.path.join(out, "replay_rough.png"))
    screenshot(rec.html_path, os.path.join(out, "viewer_replay_rough.png"), at=(rec.nframes - 1) * rec.dt, browser=b)
    for n in ("replay_rough.png", "viewer_replay_rough.png"):
        size(os.path.join(out, n))


def main(out, which=("walk", "drop", "rough")):
    os.makedirs(out, exist_ok=True)
    os.makedirs("build/docs", exist_ok=True)
    np.seterr(all="ignore")
    with LocalServer(threads=1) as srv, Browser(960, 600) as b:
        for name in which:
            {"walk": walk, "drop": drop, "rough": rough}[name](srv, out, b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs", sys.argv[2:] or ("walk", "drop", "rough"))

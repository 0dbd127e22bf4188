#!/usr/bin/python3
"""Frames per second of the viewer page (viewer/, three.js) in headless Chromium, with the robot as it looks
(the visual meshes) and with the collision shapes, at 1 and at 16 worlds.

    PYTHONPATH=clients/python /usr/bin/python3 bench/viewer_fps.py [--worlds 1,16] [--seconds 8] [--repeats 3]
        [--size 1280x720] [--scale auto] [--task anymal_c-walk]

Each setting opens the live page of its own session (herd.view.EnvSource, random actions, stepped in real time
and pushed at 50 frames/s) in a fresh headless Chromium (herd.screenshot.Browser, the tests' browser: software
WebGL, as on a machine without a GPU: Mesa's llvmpipe, or SwiftShader with HERD_CHROMIUM_GL=swiftshader).
--scale: the page's render scale, "auto" (its default: adapted to the measured frame time, started at 1
and settled for --settle seconds before the repeats) or a fixed value (1: full resolution).  Two figures
per repeat:
  - draws_per_s: the page's draws per second over --seconds (it draws on an animation frame once a new pose
    frame has arrived, so at most the push rate, 50/s): what the user sees;
  - draw_ms: the wall time of one draw of the current frame, the GPU work finished (herdViewer.drawCost: 20
    draws, each ended by a one-pixel readback), so capacity_fps = 1000 / draw_ms is what the page could draw.
One JSON line per setting: {"bench": "viewer_fps", "worlds", "shapes" ("meshes" or "collision"), "width",
"height", "scale" (the option), "render_scale", "render_width", "render_height" (the drawing buffer at the
last repeat's end), "draws_per_s", "frames_per_s" (pose frames received), "draw_ms", "capacity_fps" (medians
over repeats), "min_draw_ms", "max_draw_ms", "repeats", "gl" (the WebGL renderer), "draw_ratio" (draw_ms over
the 1-world meshes setting's, measured in the same run, where that setting ran)}.  draws_per_s can be no more
than frames_per_s, which on a busy machine is below the push rate.  On a shared machine the figures include the neighbours'
load: compare settings of one run, not runs.
"""
import argparse
import json
import statistics
import sys
import time

import herd.view
from herd.local import LocalServer
from herd.screenshot import Browser


def measure(address, task, worlds, shapes, size, seconds, repeats, scale="auto", settle=8.0):
    src = herd.view.EnvSource(task, worlds, address=address, policy="random", seed=0)
    draws, frames, cost = [], [], []
    try:
        with herd.view.Viewer(src) as viewer, Browser(*size) as b:
            gl = b.gl_renderer()
            b.goto(viewer.url + "?scale=" + scale)
            b.wait_for("window.herdViewer && herdViewer.drawn", 120)
            if shapes == "collision":
                b.evaluate("herdViewer.setCollision(true)")
            b.wait_for("herdViewer.frames > 10", 60)
            if scale == "auto":
                time.sleep(settle)
            for _ in range(repeats):
                d0, f0, t0 = b.evaluate("herdViewer.draws"), b.evaluate("herdViewer.frames"), time.monotonic()
                time.sleep(seconds)
                d1, f1, t1 = b.evaluate("herdViewer.draws"), b.evaluate("herdViewer.frames"), time.monotonic()
                draws.append((d1 - d0) / (t1 - t0))
                frames.append((f1 - f0) / (t1 - t0))
                cost.append(b.evaluate("herdViewer.drawCost(20)"))
            render = b.evaluate("herdViewer.render()")
            errors = b.console_errors
    finally:
        src.close()
    if errors:
        raise RuntimeError("the page logged errors: %s" % errors)
    ms = statistics.median(cost)
    return {"bench": "viewer_fps", "worlds": worlds, "shapes": shapes, "width": size[0], "height": size[1],
            "scale": scale, "render_scale": render["scale"], "render_width": render["width"],
            "render_height": render["height"], "draws_per_s": round(statistics.median(draws), 1), "frames_per_s": round(statistics.median(frames), 1),
            "draw_ms": round(ms, 2), "capacity_fps": round(1000.0 / ms, 1), "min_draw_ms": round(min(cost), 2),
            "max_draw_ms": round(max(cost), 2), "repeats": repeats, "gl": gl}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", default="1,16", help="comma-separated world counts (at most 16: the page's limit)")
    ap.add_argument("--shapes", default="meshes,collision", help="meshes, collision, or both")
    ap.add_argument("--seconds", type=float, default=8.0, help="seconds of drawing per repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", default="1280x720", help="the page's viewport, WxH")
    ap.add_argument("--scale", default="auto", help="the page's render scale: auto (its default) or a value in (0, 1]")
    ap.add_argument("--settle", type=float, default=8.0, help="seconds for the auto scale to settle first")
    ap.add_argument("--task", default="anymal_c-walk")
    ap.add_argument("--address", help="a running herd-server (default: start one)")
    a = ap.parse_args(argv)
    size = tuple(int(v) for v in a.size.lower().split("x"))
    worlds = [int(w) for w in a.worlds.split(",")]
    shapes = a.shapes.split(",")
    if any(not 1 <= w <= herd.view.MAX_WORLDS for w in worlds) or set(shapes) - {"meshes", "collision"}:
        ap.error("--worlds in 1..%d, --shapes meshes and/or collision" % herd.view.MAX_WORLDS)
    if a.scale != "auto":
        try:
            ok = 0 < float(a.scale) <= 1
        except ValueError:
            ok = False
        if not ok:
            ap.error("--scale: auto or a value in (0, 1]")
    srv = None if a.address else LocalServer(threads=1)
    base = None
    try:
        for w in worlds:
            for s in shapes:
                r = measure(a.address or srv.address, a.task, w, s, size, a.seconds, a.repeats, a.scale, a.settle)
                if w == 1 and s == "meshes":
                    base = r["draw_ms"]
                if base:
                    r["draw_ratio"] = round(r["draw_ms"] / base, 2)
                print(json.dumps(r), flush=True)
    finally:
        if srv:
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Records a rollout of one herd world as a video: MP4 with Debian's ffmpeg, else (or with .gif) a GIF.

    /usr/bin/python3 examples/record_rollout.py                                  # anymal_c-walk -> rollout.mp4
    /usr/bin/python3 examples/record_rollout.py --env paper-drop --steps 300 --out drop.gif
    /usr/bin/python3 examples/record_rollout.py --policy policy.pt --out walk.mp4 # a TorchScript actor

Frames come from ``render_mode="rgb_array"`` (herd.render: a numpy rasterizer, no display needed); the camera
follows the base.  Policies: "zero" (the default pose), "random" (uniform in [-1, 1]), "trot" (an open-loop
diagonal gait), or a file: a TorchScript module mapping observations (1, obs_dim) to actions (1, act_dim).
Starts build/herd-server on a free port unless --address is given.
"""
import argparse
import sys
import time

import numpy as np

import herd
from herd.local import LocalServer
from herd.video import write_video


def policy_fn(name, env):
    ad = env.act_dim
    if name == "zero":
        return lambda obs, t: np.zeros((1, ad), np.float32)
    if name == "random":
        rng = np.random.default_rng(0)
        return lambda obs, t: rng.uniform(-1, 1, (1, ad)).astype(np.float32)
    if name == "trot":
        # LF, RF, LH, RH x (HAA, HFE, KFE): diagonal pairs in phase, 2 Hz
        phase = np.array([0, 1, 1, 0]) * np.pi
        dt = float(env.herd_spec["control_dt"])

        def trot(obs, t):
            s = np.sin(2 * np.pi * 2.0 * t * dt + phase)
            a = np.zeros((4, 3), np.float32)
            a[:, 1] = 0.6 * s
            a[:, 2] = -0.8 * np.maximum(s, 0)
            return a.reshape(1, -1)[:, :ad]
        return trot
    import torch      # a file: TorchScript
    net = torch.jit.load(name).eval()

    def act(obs, t):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(obs, np.float32))).numpy().astype(np.float32)
    return act


def record(env_id, steps, out, policy="zero", address=None, seed=0, fps=None, size=(320, 240), world=0, **config):
    """Runs `steps` env steps of world `world` and writes the frames to out; returns (path, frames)."""
    srv = None if address else LocalServer(threads=1)
    try:
        with herd.make_vec(env_id, world + 1, address=address or srv.address, seed=seed, render_mode="rgb_array",
                           render_worlds=[world], render_size=size, **config) as env:
            obs, _ = env.reset(seed=seed)
            act = policy_fn(policy, env)
            frames = [env.render()[0]]
            for t in range(steps):
                a = np.zeros((world + 1, env.act_dim), np.float32)
                a[world] = act(obs[world:world + 1], t)[0]
                obs = env.step(a)[0]
                frames.append(env.render()[0])
            fps = fps or max(1, int(round(1.0 / float(env.herd_spec["control_dt"]))))
    finally:
        if srv:
            srv.stop()
    return write_video(frames, out, fps=min(fps, 50)), frames


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--out", default="rollout.mp4", help=".mp4 (ffmpeg; a .gif beside it without) or .gif")
    ap.add_argument("--policy", default="zero", help="zero, random, trot, or a TorchScript file")
    ap.add_argument("--address", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fps", type=int, default=None, help="default: 1 / control_dt, at most 50")
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--world", type=int, default=0)
    a = ap.parse_args(argv)
    w, h = (int(v) for v in a.size.lower().split("x"))
    t0 = time.perf_counter()
    path, frames = record(a.env, a.steps, a.out, a.policy, a.address, a.seed, a.fps, (w, h), a.world)
    print("wrote %s: %d frames of %dx%d in %.1f s" % (path, len(frames), w, h, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())

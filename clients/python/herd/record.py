"""Replays: one self-contained HTML file of a rollout (the viewer page with three.js and the poses inlined:
it opens offline, from file://, in any browser) and the same rollout as MP4 when ffmpeg is present.

    import herd
    info = herd.record(envs, "walk.html", steps=500, policy=lambda obs: pi(obs), mp4="walk.mp4")
    python3 -m herd.record --local --task paper-drop --seconds 1.5 --html drop.html --mp4 drop.mp4
    python3 -m herd.record --local --task anymal_c-walk --worlds 4 --policy examples/walk_policy.pt \
        --seconds 10 --html walk.html --mp4 walk.mp4 --screenshot walk.png --at 5

Incrementally, from a training loop (the env is stepped by its owner):

    from herd.record import Recorder
    rec = Recorder(envs, world_ids=[0, 1])
    for ...: obs, rew, term, trunc, infos = envs.step(a); rec.capture(rew, infos)
    rec.write_html("replay.html"); rec.write_mp4("replay.mp4"); rec.write_gif("replay.gif")

three.js is read from viewer/node_modules (installed by `make viewer-deps`) at write time: the HTML embeds
the library for the user who makes it (and the robot's visual meshes, herd.meshes; on a cell terrain, the
terrain tiles of herd.terrain around every recorded world); do not commit such files.
--policy PATH: a TorchScript module (obs -> actions) or a checkpoint of the examples' PPO
(examples/herd_ppo.py save_policy: an ELU MLP actor and its observation normalizer; its task config is
used, with observation noise off); the actions are the policy's mean.  The MP4 frames come from herd.render (the
numpy rasterizer) with its camera following world world_ids[0]'s base, written by herd.video.
"""
import argparse
import base64
import json
import os
import sys
import types

import numpy as np

from .errors import HerdError
from .video import have_ffmpeg, write_video
from .view import MAX_WORLDS, pick_terms, read_poses, server_address, three_path, viewer_dir

__all__ = ["Recorder", "record", "load_policy", "main"]


def _b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


class Recorder:
    """Collects the poses (with contacts), rewards and reward terms of world_ids (at most 16) of a
    HerdVectorEnv, one frame per capture(); dt: simulated seconds between captures (default control_dt)."""

    def __init__(self, envs, world_ids=(0,), dt=None, title=None):
        self.envs = envs
        self.worlds = [int(w) for w in world_ids][:MAX_WORLDS]
        self._ids = np.asarray(self.worlds, dtype=np.int64)
        self.dt = float(dt if dt is not None else envs.herd_spec["control_dt"])
        self.title = title or "%s replay" % envs.env_id
        self.scene = envs.scene()
        # on a cell terrain, the tiles (herd.terrain) around every recorded world's base, kept for the page and
        # the MP4 frames
        self.tiles = envs.terrain_tiles() if hasattr(envs, "terrain_tiles") else None
        if self.tiles is not None:
            self.tiles.max_tiles = 1 << 30
        self.body_pos, self.body_quat = [], []
        self.contacts = {"count": [], "pos": [], "normal": [], "impulse": []}
        # the contact diagnostics (protocol minor 6), kept while the server gives them
        self.diag = {"state": [], "friction": [], "body": [], "fallback": [], "limit_impulse": []}
        self._support = {}
        self.reward, self.terms = [], []

    def capture(self, reward=None, infos=None):
        """Reads the current poses of the worlds (read-only op: the rollout is unchanged)."""
        p = read_poses(self.envs, self._ids, self._support)
        if self.tiles is not None:
            for x, y in p["body_pos"][:, 0, :2]:
                for k in self.tiles.around(float(x), float(y)):
                    self.tiles.get(k)
        self.body_pos.append(p["body_pos"].copy())
        self.body_quat.append(p["body_quat"].copy())
        for k in self.contacts:
            self.contacts[k].append(p["contact_" + k].copy())
        for k in self.diag:
            key = k if k in ("fallback", "limit_impulse") else "contact_" + k
            if key in p:
                self.diag[k].append(p[key].copy())
        self.reward.append(None if reward is None else np.asarray(reward, dtype=np.float32)[self._ids])
        self.terms.append(pick_terms(infos, getattr(self.envs, "reward_term_names", []), self._ids))

    @property
    def nframes(self):
        return len(self.body_pos)

    def data(self):
        """The replay as the page reads it (window.HERD_REPLAY)."""
        if not self.nframes:
            raise ValueError("nothing captured")
        from .meshes import visual_path
        mp = visual_path(self.scene)
        meshes = None
        if mp:
            with open(mp, "rb") as f:
                meshes = base64.b64encode(f.read()).decode("ascii")
        d = {"title": self.title, "scene": self.scene, "worlds": self.worlds, "dt": self.dt, "meshes": meshes,
             "nframes": self.nframes, "body_pos": _b64(np.stack(self.body_pos)),
             "body_quat": _b64(np.stack(self.body_quat)),
             "contacts": {k: _b64(np.stack(v)) for k, v in self.contacts.items()}}
        if all(len(v) == self.nframes for v in self.diag.values()):     # every frame has its diagnostics
            d["contacts"].update({k: _b64(np.stack(self.diag[k])) for k in ("state", "friction", "body")})
            d["diag"] = {"fallback": _b64(np.stack(self.diag["fallback"])),
                         "limit": _b64(np.stack(self.diag["limit_impulse"]))}
        if self.tiles is not None:
            from .terrain import tile_json
            d["terrain_tiles"] = {"%d,%d" % key: tile_json(t) for key, t in self.tiles.tiles.items()}
        k = len(self.worlds)
        if any(r is not None for r in self.reward):     # frames without a step (the first): NaN, shown as "–"
            d["reward"] = _b64(np.stack([np.full(k, np.nan, np.float32) if r is None else r for r in self.reward]))
        names = next((list(t) for t in self.terms if t), None)
        if names:
            d["terms"] = {n: _b64(np.stack([np.full(k, np.nan, np.float32) if not t else t[n] for t in self.terms]))
                          for n in names}
        return d

    def html(self):
        """The self-contained page: viewer/index.html with its CSS, three.js (as a data: module of the
        import map), the replay data and viewer.js inlined."""
        vdir = viewer_dir()
        page = _read(os.path.join(vdir, "index.html"))
        css = _read(os.path.join(vdir, "viewer.css"))
        js = _read(os.path.join(vdir, "viewer.js"))
        with open(three_path(), "rb") as f:
            three = base64.b64encode(f.read()).decode("ascii")
        data = json.dumps(self.data(), default=_jsonable, separators=(",", ":")).replace("</", "<\\/")
        if "</script" in js.lower():
            raise ValueError("viewer.js must not contain a closing script tag")
        importmap = '<script type="importmap">{"imports": {"three": "data:text/javascript;base64,%s"}}</script>' % three
        return (page
                .replace('<link rel="stylesheet" href="viewer.css">', "<style>\n%s</style>" % css)
                .replace('<script type="importmap">{"imports": {"three": "./three.module.min.js"}}</script>', importmap)
                .replace('<script type="module" src="viewer.js"></script>',
                         "<script>window.HERD_REPLAY = %s;</script>\n<script type=\"module\">\n%s</script>" % (data, js)))

    def write_html(self, path):
        text = self.html()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def frames(self, width=640, height=480, world=0, diagnostics=True):
        """uint8 (H, W, 3) frames of the j-th recorded world, drawn by herd.render; with diagnostics (and where
        they were recorded) each contact's state and impulses, the joint-limit impulses and the fallback
        marker are drawn as on the page."""
        from .render import Renderer, diagnostics_of
        r = Renderer(self.scene, width=width, height=height, tiles=self.tiles)
        full = all(len(v) == self.nframes for v in self.diag.values())
        for i, (bp, bq) in enumerate(zip(self.body_pos, self.body_quat)):
            d = None
            if diagnostics:
                p = {"contact_" + k: v[i] for k, v in self.contacts.items()}
                if full:
                    p.update(contact_state=self.diag["state"][i], contact_friction=self.diag["friction"][i],
                             limit_impulse=self.diag["limit_impulse"][i], fallback=self.diag["fallback"][i])
                d = diagnostics_of(p, world)
            yield r.render(bp[world], bq[world], diagnostics=d)

    def write_mp4(self, path, width=640, height=480, world=0, diagnostics=True):
        """The rollout as H.264 MP4 at 1/dt frames/s (herd.video: Debian's ffmpeg); None when ffmpeg is absent.
        diagnostics: the contact diagnostics drawn on the frames (frames())."""
        if have_ffmpeg() is None:
            return None
        return write_video(self.frames(width, height, world, diagnostics), path, fps=1.0 / self.dt, fallback=False)

    def write_gif(self, path, width=320, height=240, world=0, every=1, diagnostics=True):
        """The rollout as an animated GIF (herd.video: python3-pil), every `every`-th frame."""
        frames = [f for i, f in enumerate(self.frames(width, height, world, diagnostics)) if i % every == 0]
        return write_video(frames, path, fps=1.0 / (self.dt * every))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError("not JSON serialisable: %r" % type(x))


def record(envs, html, steps, policy=None, world_ids=(0,), every=None, mp4=None, seed=None, reset=True,
           size=(640, 480), title=None, diagnostics=True):
    """Rolls envs out for `steps` control steps with policy(obs) -> actions (None: zero actions) and
    writes the replay of world_ids to `html` (and `mp4` when given and ffmpeg is present, with the contact
    diagnostics drawn unless diagnostics=False).  every: steps per recorded frame (default: about 50 frames
    per simulated second).  Returns the Recorder (its
    body_pos / body_quat lists hold what was written) with .html_path and .mp4_path set."""
    dt = float(envs.herd_spec["control_dt"])
    every = int(every or max(1, round(0.02 / dt)))
    rec = Recorder(envs, world_ids, dt=dt * every, title=title)
    if reset:
        obs, _ = envs.reset(seed=seed)
    else:
        obs = envs._last_obs
    rec.capture()
    for i in range(1, steps + 1):
        a = np.zeros((envs.num_envs, envs.act_dim), np.float32) if policy is None else policy(obs)
        obs, rew, _, _, infos = envs.step(np.asarray(a, dtype=np.float32))
        if i % every == 0:
            rec.capture(rew, infos)
    rec.html_path = rec.write_html(html)
    rec.mp4_path = rec.write_mp4(mp4, size[0], size[1], diagnostics=diagnostics) if mp4 else None
    return rec


def load_policy(path):
    """(policy obs -> actions, task config) from a TorchScript file or an examples/herd_ppo.py checkpoint."""
    import torch
    try:
        module = torch.jit.load(path, map_location="cpu")
    except (RuntimeError, ValueError):
        module = None
    if module is not None:
        module.eval()

        def scripted(obs):
            with torch.no_grad():
                return module(torch.as_tensor(np.asarray(obs, np.float32))).numpy()
        return scripted, {}
    ck = torch.load(path, map_location="cpu")
    if isinstance(ck, dict) and "model_state_dict" in ck:
        return _rsl_rl_policy(torch, ck)
    if not isinstance(ck, dict) or "model" not in ck:
        raise ValueError("%s is neither a TorchScript module, an rsl_rl checkpoint nor a herd_ppo checkpoint" % path)
    sd = ck["model"]
    n = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("actor.") and k.endswith(".weight"))
    layers = []
    for i in range(0, n, 2):
        w, b = sd["actor.%d.weight" % i], sd["actor.%d.bias" % i]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.load_state_dict({"weight": w, "bias": b})
        layers += [lin, torch.nn.ELU()]
    actor = torch.nn.Sequential(*layers[:-1]).eval()
    norm = ck.get("norm") or {"enabled": False}
    if norm.get("enabled", True):
        mean = torch.as_tensor(norm["mean"], dtype=torch.float32)
        std = torch.as_tensor(np.sqrt(np.asarray(norm["var"]) + 1e-8), dtype=torch.float32)
    clip = float(norm.get("clip", 5.0))

    def mlp(obs):
        x = torch.as_tensor(np.asarray(obs, np.float32))
        if norm.get("enabled", True):
            x = torch.clamp((x - mean) / std, -clip, clip)
        with torch.no_grad():
            return actor(x).numpy()
    return mlp, dict(ck.get("config") or {})


def _actor(torch, sd):
    """The ELU MLP of the state dict's actor.<i>.weight / .bias layers."""
    n = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("actor.") and k.endswith(".weight"))
    layers = []
    for i in range(0, n, 2):
        w, b = sd["actor.%d.weight" % i], sd["actor.%d.bias" % i]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.load_state_dict({"weight": w, "bias": b})
        layers += [lin, torch.nn.ELU()]
    return torch.nn.Sequential(*layers[:-1]).eval()


def _rsl_rl_policy(torch, ck):
    """(policy, task config) of an rsl_rl checkpoint (examples/train.py's model_<iter>.pt, or a packaged file such as
    examples/rough_policy.pt, whose infos["herd"] records the task configuration it was trained on): the actor's
    mean action, after rsl_rl's empirical observation normalizer when the checkpoint has one."""
    actor = _actor(torch, ck["model_state_dict"])
    norm = ck.get("obs_norm_state_dict")
    if norm is not None:
        mean, std = norm["_mean"].reshape(-1), norm["_std"].reshape(-1)
        eps = 1e-2                          # rsl_rl EmpiricalNormalization's default (not in its state dict)

    def mlp(obs):
        x = torch.as_tensor(np.asarray(obs, np.float32))
        if norm is not None:
            x = (x - mean) / (std + eps)
        with torch.no_grad():
            return actor(x).numpy()
    herd_rec = (ck.get("infos") or {}).get("herd") or {}
    return mlp, dict(herd_rec.get("task_config") or {})


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m herd.record", description="Record a rollout as HTML (+ MP4).")
    ap.add_argument("--address", help="herd-server endpoint")
    ap.add_argument("--local", action="store_true", help="start a herd-server of our own")
    ap.add_argument("--task", default="paper-drop")
    ap.add_argument("--worlds", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.5, help="simulated seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="zero", help="zero, random, or a policy file (TorchScript, or a checkpoint "
                                                     "of examples/herd_ppo.py such as examples/walk_policy.pt)")
    ap.add_argument("--html", required=True)
    ap.add_argument("--mp4")
    ap.add_argument("--gif", help="also an animated GIF (python3-pil), 320x240")
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--screenshot", metavar="PNG", help="also a PNG of the replay page, fully drawn (headless Chromium)")
    ap.add_argument("--at", type=float, default=0.0, help="the replay's time (s) of the screenshot")
    ap.add_argument("--no-diagnostics", dest="diagnostics", action="store_false",
                    help="the MP4 and GIF without the contact diagnostics (the robot alone)")
    a = ap.parse_args(argv)
    from .vector import make_vec
    config, pol = {}, None
    if a.policy not in ("zero", "random"):
        pol, config = load_policy(a.policy)
        config.setdefault("obs_noise", 0.0)         # the policy as it acts, not as it was trained to cope
    with server_address(a.address, a.local) as address:
        try:
            envs = make_vec(a.task, a.worlds, address=address, seed=a.seed, reward_terms=True, **config)
        except (ValueError, HerdError):
            if "obs_noise" not in config:
                raise
            config.pop("obs_noise")           # a task without that key
            envs = make_vec(a.task, a.worlds, address=address, seed=a.seed, reward_terms=True, **config)
        with envs:
            rng = np.random.default_rng(a.seed)
            if a.policy == "random":
                pol = (lambda o: rng.uniform(-1, 1, (envs.num_envs, envs.act_dim)))
            steps = int(round(a.seconds / envs.herd_spec["control_dt"]))
            w, h = (int(x) for x in a.size.split("x"))
            rec = record(envs, a.html, steps, policy=pol, world_ids=range(min(a.worlds, MAX_WORLDS)),
                         mp4=a.mp4, seed=a.seed, size=(w, h), diagnostics=a.diagnostics)
            if a.gif:
                rec.write_gif(a.gif, diagnostics=a.diagnostics)
            if a.screenshot:
                from .screenshot import screenshot
                took = screenshot(rec.html_path, a.screenshot, at=a.at)
                print("herd.record: %s fully drawn %.2f s after the page was opened" % (a.screenshot, took))
            print("herd.record: %d frames -> %s" % (rec.nframes, ", ".join(
                p for p in (rec.html_path, rec.mp4_path, a.gif, a.screenshot) if p)))
    return 0


class _CallableModule(types.ModuleType):
    """herd.record is this module and herd.record(...) is record(...)."""

    def __call__(self, *args, **kwargs):
        return record(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())

"""What examples/train.py and examples/play.py share: each task's training recipe (rsl_rl runner configuration,
network sizes, world count, the task configuration keys a checkpoint records), the rsl_rl import, the env
construction, run-folder lookup (legged_gym's --load_run / --checkpoint rules), the local server, and the
velocity-tracking evaluation and the replays of train_walk.py and play.py.

Recipes are legged_gym's PPO settings for its ANYmal C tasks (AnymalCFlatCfgPPO, AnymalCRoughCfgPPO): 24 steps
per world per iteration, 5 epochs x 4 minibatches, clip 0.2, gamma 0.99, lambda 0.95, learning rate 1e-3 with
the KL-adaptive schedule (desired KL 0.01), value-loss coefficient 1, entropy 0.01, gradient-norm clip 1, ELU
MLPs, with these changes for a CPU budget, each measured in this repository's training runs:
  * initial action noise std 0.5, not 1.0: with std 1.0 nearly every step's reward sum is negative, which the
    tasks clip to 0 (legged_gym's only_positive_rewards), so PPO sees no signal.
  * 2048 worlds, not 4096: the cost here is per sample (server and update alike); half the batch gives twice
    the updates for the same samples.
  * rough: [128, 64, 32] hidden units, not [512, 256, 128] (the update's cost is per sample and per weight;
    --hidden 512,256,128 restores legged_gym's), and the critic gets the task's privileged observation.
"""
import glob
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
THIRD_PARTY = {1: os.path.join(REPO, "..", "shared", "third_party", "python"),
               2: os.path.join(REPO, "..", "shared", "third_party", "python-rsl_rl-2.3.3")}


class Task:
    def __init__(self, name, hidden, num_envs, max_iterations, init_std=0.5, entropy=0.01, critic=False,
                 defaults=None, experiment=None):
        self.name, self.hidden, self.num_envs, self.max_iterations = name, hidden, num_envs, max_iterations
        self.init_std, self.entropy, self.critic = init_std, entropy, critic
        self.defaults = dict(defaults or {})
        self.experiment = experiment or name

    def config(self, overrides):
        out = dict(self.defaults)
        out.update(overrides)
        return out

    def runner_cfg(self, hidden, init_std, max_iterations, seed, version=2):
        """rsl_rl's train_cfg: 2.x's one dict, or (version 1) 1.0.2's {"runner", "algorithm", "policy"}."""
        policy = {"init_noise_std": self.init_std if init_std is None else init_std,
                  "actor_hidden_dims": list(hidden), "critic_hidden_dims": list(hidden), "activation": "elu"}
        alg = {"value_loss_coef": 1.0, "use_clipped_value_loss": True, "clip_param": 0.2,
               "entropy_coef": self.entropy, "num_learning_epochs": 5, "num_mini_batches": 4, "learning_rate": 1e-3,
               "schedule": "adaptive", "gamma": 0.99, "lam": 0.95, "desired_kl": 0.01, "max_grad_norm": 1.0}
        iters = self.max_iterations if max_iterations is None else max_iterations
        if version == 1:
            return {"runner": {"policy_class_name": "ActorCritic", "algorithm_class_name": "PPO",
                               "num_steps_per_env": 24, "save_interval": 50, "max_iterations": iters},
                    "algorithm": alg, "policy": policy, "seed": seed, "max_iterations": iters}
        return {"num_steps_per_env": 24, "save_interval": 50, "max_iterations": iters, "seed": seed,
                "empirical_normalization": False, "logger": "tensorboard",
                "policy": dict(policy, class_name="ActorCritic"), "algorithm": dict(alg, class_name="PPO")}


# The task configuration keys a checkpoint records with their values in the training session, so that a policy
# stays evaluable on the physics it learned when a task's defaults change later.
RECORDED_KEYS = ("actuator", "cmd_yaw_max", "joint_limits", "obs_scales", "net_precision")

TASKS = {t.name: t for t in (
    Task("anymal_c-walk", [128, 64, 32], 2048, 1500),
    Task("anymal_c-stand", [128, 64, 32], 2048, 1500),
    Task("anymal_c-rough", [128, 64, 32], 2048, 1500, critic=True),
)}


def need_torch(who, quick):
    try:
        import torch
    except ImportError:  # pragma: no cover
        print("SKIPPED: %s needs PyTorch (Debian: apt-get install python3-torch)" % who, file=sys.stderr)
        sys.exit(0 if quick else 1)
    return torch


def import_rsl_rl(version):
    """Imports rsl_rl of the given major version: the installed one, else the copy in ../shared/third_party
    beside the repository (a development checkout's); exits with the reason when neither is that version."""
    from herd.adapters._rsl_rl_core import provide_tensorboard
    provide_tensorboard()        # rsl_rl 1.0.2 imports tensorboard with its runner: the stand-in where it is missing

    def major():
        import rsl_rl.runners  # noqa: F401
        from rsl_rl.env import VecEnv
        return 1 if hasattr(VecEnv, "get_privileged_observations") else 2
    try:
        if major() == version:
            return
    except ImportError:
        pass
    path = os.path.abspath(THIRD_PARTY[version])
    if not os.path.isdir(path):
        sys.exit("rsl_rl %d is not installed (pip install rsl-rl-lib%s)" % (version, "==2.3.3" if version == 2 else
                                                                             " from rsl_rl's v1.0.2 tag"))
    for m in [m for m in sys.modules if m == "rsl_rl" or m.startswith("rsl_rl.")]:
        del sys.modules[m]
    sys.path.insert(0, path)
    if major() != version:
        sys.exit("could not import rsl_rl %d from %s" % (version, path))


def parse_config(items):
    """KEY=VALUE items -> {key: float, or the name of a named choice (e.g. actuator=pd)}: herd_ppo's parser."""
    sys.path.insert(0, HERE)
    import herd_ppo
    return herd_ppo.parse_config(items)


def make_rsl_rl_env(version, task, num_envs, address, seed, config, **kw):
    if version == 1:
        from herd.adapters.rsl_rl_v1 import RslRlVecEnv
    else:
        from herd.adapters.rsl_rl_v2 import RslRlVecEnv
    return RslRlVecEnv(task.name, num_envs, address=address, seed=seed, timeout=120.0, critic_obs=task.critic,
                       **dict(config, **kw))


def recorded_config(env, config):
    """The configuration a checkpoint records: the effective values of RECORDED_KEYS in the session, then the
    overrides given."""
    s = env.env
    out = {k: s.config_names.get(k, s.config[k]) for k in RECORDED_KEYS if k in s.config}
    out.update(config)
    return out


def desync(env, seed):
    """Spreads the worlds' episode phases (legged_gym's random initial episode length, which a server-side time
    limit cannot take as an assignment): world i is stepped k_i ~ U[0, max_episode_steps) times with zero
    actions through subset steps; the adapter's buffers then hold every world's current observation."""
    import torch
    inner = env.env
    rng = np.random.default_rng(seed + 12345)
    k = rng.integers(0, inner.max_episode_steps, size=inner.num_envs)
    obs = env.obs_buf.numpy().copy()
    crit = None if env.critic_obs_buf is None else env.critic_obs_buf.numpy().copy()
    for t in range(int(k.max())):
        ids = np.flatnonzero(k > t)
        inner.step_async(np.zeros((ids.size, inner.act_dim), np.float32), world_ids=ids)
        o, _, _, _, info = inner.step_wait()
        obs[ids] = o
        if crit is not None and "critic_obs" in info:
            crit[ids] = info["critic_obs"]
    env.obs_buf.copy_(torch.from_numpy(obs))
    if crit is not None:
        env.critic_obs_buf.copy_(torch.from_numpy(crit))
    env._episode_length.copy_(torch.from_numpy(k))


def find_run(root, load_run):
    """legged_gym's rule: load_run "-1" is the newest run folder under root (by name, which starts with the
    date), else the folder of that name."""
    if load_run in ("-1", -1, None):
        runs = sorted(d for d in glob.glob(os.path.join(root, "*")) if os.path.isdir(d))
        if not runs:
            sys.exit("no run to resume under %s" % root)
        return max(runs, key=os.path.getmtime)
    path = load_run if os.path.isabs(load_run) else os.path.join(root, load_run)
    if not os.path.isdir(path):
        sys.exit("no run folder %s" % path)
    return path


def find_checkpoint(run_dir, checkpoint):
    """model_<checkpoint>.pt in run_dir; -1: the highest iteration saved."""
    if checkpoint is not None and int(checkpoint) >= 0:
        path = os.path.join(run_dir, "model_%d.pt" % int(checkpoint))
        if not os.path.exists(path):
            sys.exit("no checkpoint %s" % path)
        return path
    its = [(int(m.group(1)), p) for p in glob.glob(os.path.join(run_dir, "model_*.pt"))
           for m in [re.search(r"model_(\d+)\.pt$", p)] if m]
    if not its:
        sys.exit("no model_<iteration>.pt in %s" % run_dir)
    return max(its)[1]


def init_from(policy, path):
    """Initializes `policy` (an rsl_rl ActorCritic) from the rsl_rl checkpoint at `path` of a task whose
    observation is a prefix of this one's (anymal_c-walk's 48 values are the first 48 of anymal_c-rough's 235,
    and of its critic's 244): every tensor of the same shape is copied; a first layer with fewer input columns
    fills the first columns and the new inputs' columns start at 0, so the new policy acts exactly as the old
    one until it learns to use them.  Returns one line per tensor saying what was done."""
    import torch
    old = torch.load(path, map_location="cpu")["model_state_dict"]
    new = policy.state_dict()
    done = []
    for k, v in new.items():
        w = old.get(k)
        if w is None:
            done.append("%s: kept (not in %s)" % (k, os.path.basename(path)))
        elif w.shape == v.shape:
            new[k] = w.clone()
            done.append("%s: copied" % k)
        elif w.dim() == 2 and w.shape[0] == v.shape[0] and w.shape[1] < v.shape[1]:
            t = torch.zeros_like(v)
            t[:, :w.shape[1]] = w
            new[k] = t
            done.append("%s: first %d of %d input columns copied, the rest 0" % (k, w.shape[1], v.shape[1]))
        else:
            raise SystemExit("--init_from %s: %s has shape %s, this policy's is %s" % (path, k, tuple(w.shape),
                                                                                      tuple(v.shape)))
    policy.load_state_dict(new)
    return done


def with_server(address, server_threads, fn):
    """fn(address, cpu_clock) against `address`, or against a herd-server started here and stopped afterwards."""
    sys.path.insert(0, HERE)
    import herd_ppo
    return herd_ppo.with_server(address, server_threads, fn)


# ---- evaluation ---------------------------------------------------------------------------------------

def obs_field(spec, name):
    """(offset, size, scale) of the named observation field of a task spec."""
    for f in spec.get("obs") or []:
        if f.get("name") == name:
            return int(f["offset"]), int(f["size"]), float(f.get("scale", 1.0))
    raise KeyError("the task's observation has no field %r" % name)


def tracking_episodes(act, task, address, episodes, seed, config, window_s=15.0, timeout=120.0, obs_noise=0.0):
    """Runs `episodes` fresh worlds for one full episode each (act: obs -> actions), with observation noise
    obs_noise (None: the config's); returns per-episode arrays:
    lin / yaw (mean tracking errors over the last window_s, NaN without samples), ok (reached the time limit
    without base contact or a physics reset), ret, steps, and kind / level (the world's terrain kind and level at
    its reset, -1 where the server does not report them), with the spec."""
    import herd
    cfg = dict(config) if obs_noise is None else dict(config, obs_noise=obs_noise)
    with herd.make_vec(task, episodes, address=address, seed=seed, autoreset_mode="SAME_STEP", timeout=timeout,
                       **cfg) as env:
        spec = env.herd_spec
        v_off, _, v_sc = obs_field(spec, "base_lin_vel")
        w_off, _, w_sc = obs_field(spec, "base_ang_vel")
        c_off, _, c_sc = obs_field(spec, "command_lin_vel")
        y_off, _, y_sc = obs_field(spec, "command_yaw_rate")
        obs, info = env.reset()
        obs = np.array(obs)
        kind = np.asarray(info.get("terrain_kind", np.full(episodes, -1)), np.int64).copy()
        level = np.asarray(info.get("terrain_level", np.full(episodes, -1)), np.int64).copy()
        T = env.max_episode_steps
        first = T - int(round(window_s / float(spec.get("control_dt", 0.02))))
        sum_v, sum_w, cnt = np.zeros(episodes), np.zeros(episodes), np.zeros(episodes)
        ended, fell, phys = np.zeros(episodes, bool), np.zeros(episodes, bool), np.zeros(episodes, bool)
        steps, ret = np.zeros(episodes, int), np.zeros(episodes)
        for t in range(T):
            nobs, rew, term, trunc, info = env.step(act(obs))
            after = np.array(nobs)
            if "_final_obs" in info:
                m = info["_final_obs"]
                after[m] = info["final_obs"][m]
            live = ~ended
            if t >= first:
                cmd = obs[:, c_off:c_off + 2] / c_sc
                v = after[:, v_off:v_off + 2] / v_sc
                ev = np.hypot(cmd[:, 0] - v[:, 0], cmd[:, 1] - v[:, 1])
                ew = np.abs(obs[:, y_off] / y_sc - after[:, w_off + 2] / w_sc)
                sum_v += np.where(live, ev, 0)
                sum_w += np.where(live, ew, 0)
                cnt += live
            ret += np.where(live, rew, 0)
            steps += live
            done = (term | trunc) & live
            fell |= done & term
            if "physics_reset" in info:
                phys |= done & info["physics_reset"]
            ended |= done
            obs = np.array(nobs)
        with np.errstate(invalid="ignore", divide="ignore"):
            lin, yaw = sum_v / cnt, sum_w / cnt
        return {"lin": lin, "yaw": yaw, "ok": ~fell & ~phys, "fell": fell, "phys": phys, "ret": ret, "steps": steps,
                "kind": kind, "level": level}, spec


def summarize(ep, mask):
    """The evaluation figures of the episodes in mask of tracking_episodes."""
    has = mask & np.isfinite(ep["lin"])
    n = int(mask.sum())
    f = (lambda x, g: float(g(x[has])) if has.any() else float("nan"))
    return {"episodes": n, "lin_vel_error": f(ep["lin"], np.mean), "yaw_rate_error": f(ep["yaw"], np.mean),
            "no_fall_fraction": float(ep["ok"][mask].mean()) if n else float("nan"),
            "base_contact_terminations": int(ep["fell"][mask].sum()), "physics_resets": int(ep["phys"][mask].sum()),
            "episodes_with_window_samples": int(has.sum()),
            "lin_vel_error_p90": f(ep["lin"], lambda x: np.percentile(x, 90)),
            "yaw_rate_error_p90": f(ep["yaw"], lambda x: np.percentile(x, 90)),
            "mean_return": float(ep["ret"][mask].mean()) if n else float("nan"),
            "mean_episode_steps": float(ep["steps"][mask].mean()) if n else float("nan")}


def record_replay(task, act, address, config, html, seed, seconds, worlds, title, who):
    """A replay of act (obs -> actions) on `worlds` fresh worlds of task without observation noise: the HTML
    page, and beside it (same name) the MP4 where ffmpeg is, the GIF and a PNG still of world 0 at mid-rollout
    where Pillow is.  who: the script's name, for its messages."""
    import herd
    with herd.make_vec(task, worlds, address=address, seed=seed, obs_noise=0.0, reward_terms=True,
                       **{k: v for k, v in config.items() if k != "obs_noise"}) as env:
        steps = int(round(seconds / float(env.herd_spec["control_dt"])))
        base = os.path.splitext(html)[0]
        os.makedirs(os.path.dirname(os.path.abspath(html)), exist_ok=True)
        rec = herd.record(env, html, steps, policy=act, world_ids=range(worlds), mp4=base + ".mp4", seed=seed,
                          title=title)
        try:
            rec.write_gif(base + ".gif", 320, 240)
            from PIL import Image
            for i, frame in enumerate(rec.frames(320, 240)):
                if i == rec.nframes // 2:
                    Image.fromarray(frame).save(base + ".png")
                    break
        except Exception as e:              # noqa: BLE001 - Pillow missing: the HTML and MP4 stand
            print("%s: no GIF / PNG (%s)" % (who, e), file=sys.stderr)
        print("%s: replay written to %s (%s)" % (who, html, rec.mp4_path or "no MP4: ffmpeg missing"), flush=True)

#!/usr/bin/python3
"""PPO trains ANYmal C to walk (anymal_c-walk: legged_gym's flat ANYmal C task) through herd-server.

    PYTHONPATH=clients/python /usr/bin/python3 examples/train_walk.py                  # starts build/herd-server, trains, evaluates
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_walk.py --eval-only      # evaluates examples/walk_policy.pt (and untrained)
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_walk.py --quick          # a few small iterations (CI smoke test, < 60 s)
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_walk.py --address tcp://host:5555 --num-envs 4096

Training settings are legged_gym's for the flat ANYmal C (AnymalCFlatCfgPPO): actor and critic MLPs
[128, 64, 32] with ELU, 24 steps per world per iteration, 5 epochs x 4 minibatches, clip 0.2, gamma 0.99,
lambda 0.95, learning rate 1e-3 with the KL-adaptive schedule (desired KL 0.01), entropy coefficient 0.01,
value loss coefficient 1.0, gradient norm clip 1.0 -- with two changes for this CPU budget:
  * initial action noise std 0.5, not 1.0: with std 1.0 (0.5 rad of joint-target noise) nearly all
    steps have a negative reward sum, which the task clips to 0 (legged_gym's only_positive_rewards), so
    PPO sees no signal; the std grows under the entropy bonus and the robots fall ever sooner.  With std 0.5 a
    useful share of the steps is positive.
  * 2048 worlds, not 4096: the cost here is per sample (server and update alike), and half the batch gives
    twice the updates for the same samples.
The trainer is rsl_rl's PPO and ActorCritic through herd.adapters.rsl_rl when that adapter and rsl_rl
import (rsl_rl 1.0.2 is looked for on sys.path, then in ../shared/third_party/python beside the repository), else the
examples' own PPO (examples/herd_ppo.py, the same algorithm); --trainer picks one.

Evaluation (--eval-episodes fresh worlds on held-out seeds, one full 20 s episode each, the policy mean,
obs_noise = 0 so that the observation holds the exact base velocity and command; every other setting is
the one the policy was trained on: the task's defaults of its time (commands from the task's ranges
resampled every 4 s, domain randomization, pushes) and the overrides its checkpoint records.  The committed
examples/walk_policy.pt was trained before the task's defaults moved to the ANYdrive actuator network, yaw
commands of +-1.5 rad/s and joint limits: --eval-only evaluates it with actuator=pd, cmd_yaw_max=1 and
joint_limits=0 (TRAINED_BEFORE; joint_limits only where the task has the key), which its figures need):
  lin_vel_error   mean over episodes of the mean over the last 15 s of |v_xy,cmd - v_xy| (m/s, base frame;
                  the command the policy saw at step t against the velocity after it)
  yaw_rate_error  same for |yaw_rate_cmd - yaw_rate| (rad/s)
  no_fall_fraction  share of episodes that reach the time limit without a base-contact termination (and
                  without a physics reset)
Target: lin_vel_error <= 0.25, yaw_rate_error <= 0.3, no_fall_fraction >= 0.95.  The same evaluation of
an untrained policy (a freshly initialized actor; its mean action is about 0, so the robot holds its
default pose) is printed beside it with "policy": "untrained".

Outputs: examples/walk_policy.pt (weights), examples/walk_curve.png (learning curve), examples/walk_eval.json,
examples/walk_log.csv (one row per iteration); --out DIR puts them in DIR instead (--quick: examples/out/).
"""
import argparse
import csv
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

try:
    import herd  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("examples/%s: the herd package is not importable: run with PYTHONPATH=clients/python, or "
             "pip install -e clients/python" % os.path.basename(__file__))

try:
    import torch
except ImportError:  # pragma: no cover
    print("SKIPPED: examples/train_walk.py needs PyTorch (Debian: apt-get install python3-torch)", file=sys.stderr)
    sys.exit(0 if "--quick" in sys.argv else 1)

import herd_ppo  # noqa: E402
import herd_tasks  # noqa: E402

ENV = "anymal_c-walk"
HIDDEN = [128, 64, 32]
TARGET = {"lin_vel_error": 0.25, "yaw_rate_error": 0.3, "no_fall_fraction": 0.95}
# The keys whose defaults changed after examples/walk_policy.pt was trained, with the values it was trained on:
# the PD actuator (the task now runs the ANYdrive network), yaw-rate commands in +-1 rad/s (now +-1.5) and no
# joint limits.  A checkpoint that does not record one of them predates the change and is evaluated with that
# value; a key the server's task does not list (joint_limits before the task has it) is not passed.  New
# checkpoints record these keys' values (herd_ppo.recorded_config).
TRAINED_BEFORE = {"actuator": "pd", "cmd_yaw_max": 1.0, "joint_limits": 0.0}
# observation layout of anymal_c-walk (envs/env_anymal.c): scaled base velocities and commands
LIN_SCALE, ANG_SCALE = 2.0, 0.25


def tracking_errors(obs_before, obs_after):
    """Per-world (|v_xy,cmd - v_xy| in m/s, |yaw_rate_cmd - yaw_rate| in rad/s): the command of the
    observation the policy acted on against the base velocity of the observation after the step."""
    cmd = obs_before[:, 9:11] / LIN_SCALE
    v = obs_after[:, 0:2] / LIN_SCALE
    ev = np.hypot(cmd[:, 0] - v[:, 0], cmd[:, 1] - v[:, 1])
    ew = np.abs(obs_before[:, 11] / ANG_SCALE - obs_after[:, 5] / ANG_SCALE)
    return ev, ew


# ---- evaluation ---------------------------------------------------------------------------------------

def evaluate(model, norm, address, episodes, seed, config, window_s=15.0, obs_noise=0.0, timeout=120.0):
    """Runs `episodes` fresh worlds for one full episode each with the policy mean (herd_tasks.tracking_episodes,
    as examples/play.py evaluates); returns a dict."""
    t0 = time.perf_counter()

    def act(obs):
        with torch.no_grad():
            return model.actor(norm(torch.as_tensor(obs))).numpy()
    ep, _ = herd_tasks.tracking_episodes(act, ENV, address, episodes, seed, config, window_s, timeout, obs_noise)
    res = herd_tasks.summarize(ep, np.ones(episodes, bool))
    res.update(window_s=window_s, obs_noise=obs_noise, seed=int(seed), eval_wall_s=round(time.perf_counter() - t0, 1))
    return res


def eval_line(res, policy):
    out = {"bench": "walk_eval", "policy": policy}
    for k in ("episodes", "lin_vel_error", "yaw_rate_error", "no_fall_fraction"):
        out[k] = round(res[k], 4) if isinstance(res[k], float) else res[k]
    out["target_met"] = bool(res["lin_vel_error"] <= TARGET["lin_vel_error"]
                             and res["yaw_rate_error"] <= TARGET["yaw_rate_error"]
                             and res["no_fall_fraction"] >= TARGET["no_fall_fraction"])
    return out


# ---- learning curve --------------------------------------------------------------------------------

def save_curve(path, rows, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import textwrap
    x = np.array([r["wall_s"] for r in rows], float) / 60
    steps = np.array([r["env_steps"] for r in rows], float) / 1e6

    def col(k):
        return np.array([np.nan if r[k] == "" else r[k] for r in rows], float)
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    ax = axs[0]
    ax.plot(x, col("mean_return"), color="tab:blue")
    ax.set_xlabel("wall clock (min)")
    ax.set_ylabel("mean episode return", color="tab:blue")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(x, 100 * col("fall_fraction"), color="tab:red")
    ax2.set_ylabel("episodes ending in base contact (training, %)", color="tab:red")
    ax2.set_ylim(-2, 102)
    sec = ax.secondary_xaxis("top", functions=(lambda m: np.interp(m, x, steps), lambda s: np.interp(s, steps, x)))
    sec.set_xlabel("env steps (millions)")
    ax = axs[1]
    ax.plot(x, col("lin_vel_error"), color="tab:green", label="|v_xy,cmd - v_xy| (m/s), training")
    ax.plot(x, col("yaw_rate_error"), color="tab:purple", label="|yaw rate cmd - yaw rate| (rad/s), training")
    ev, ew = col("eval_lin_vel_error"), col("eval_yaw_rate_error")
    if np.isfinite(ev).any():
        ax.plot(x, ev, "o", color="tab:green", ms=4, label="lin. velocity error, evaluation")
        ax.plot(x, ew, "s", color="tab:purple", ms=4, label="yaw-rate error, evaluation")
    ax.axhline(TARGET["lin_vel_error"], color="tab:green", ls=":", lw=1)
    ax.axhline(TARGET["yaw_rate_error"], color="tab:purple", ls=":", lw=1)
    ax.set_xlabel("wall clock (min)")
    ax.set_ylabel("tracking error")
    ax.set_ylim(0, max(1.0, np.nanmax(col("lin_vel_error")) * 1.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5)
    fig.suptitle("\n".join(textwrap.wrap(title, 130)), fontsize=8.5)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---- training -----------------------------------------------------------------------------------------

THIRD_PARTY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared",
                           "third_party", "python")


def rsl_rl_available():
    """True when rsl_rl (1.0.2) and herd.adapters.rsl_rl import; rsl_rl is looked for on sys.path, then in
    the shared third-party directory (appended to sys.path, as PYTHONPATH would)."""
    try:
        import rsl_rl  # noqa: F401
    except ImportError:
        if os.path.isdir(THIRD_PARTY) and THIRD_PARTY not in sys.path:
            sys.path.append(THIRD_PARTY)
    try:
        import rsl_rl.algorithms  # noqa: F401
        import rsl_rl.modules  # noqa: F401
        import herd.adapters.rsl_rl  # noqa: F401
        return True
    except ImportError:
        return False


class Tracker:
    """Per-iteration training statistics, whatever the trainer: tracking errors of the worlds that did not
    end in the step, and the returns, lengths, base-contact terminations and reward-term sums of the
    episodes that ended."""

    def __init__(self, n, term_names):
        self.ret = np.zeros(n)
        self.len = np.zeros(n, int)
        self.term_names = term_names
        self.new_iteration()

    def new_iteration(self):
        self.ev, self.ew, self.fell, self.rets, self.lens, self.terms = [], [], [], [], [], []

    def step(self, obs_before, obs_after, rew, done, fell, terms=None):
        ev, ew = tracking_errors(obs_before, obs_after)
        live = ~done
        if live.any():
            self.ev.append(ev[live].mean())
            self.ew.append(ew[live].mean())
        self.ret += rew
        self.len += 1
        if done.any():
            self.fell.append(fell[done])
            self.rets.append(self.ret[done].copy())
            self.lens.append(self.len[done].copy())
            self.ret[done] = 0
            self.len[done] = 0
        if terms is not None and len(terms):
            self.terms.append(terms)

    def row(self):
        cat = (lambda xs: np.concatenate(xs) if xs else np.array([]))
        rets, fell, lens = cat(self.rets), cat(self.fell), cat(self.lens)
        r = {"mean_return": float(rets.mean()) if rets.size else "", "episodes": int(rets.size),
             "fall_fraction": float(fell.mean()) if fell.size else "",
             "mean_episode_s": float(lens.mean() * 0.02) if lens.size else "",
             "lin_vel_error": float(np.mean(self.ev)) if self.ev else "",
             "yaw_rate_error": float(np.mean(self.ew)) if self.ew else ""}
        if self.terms:
            for n, v in zip(self.term_names, np.concatenate(self.terms).mean(0)):
                r["term_" + n] = float(v)
        return r


class Log:
    """The iteration loop's bookkeeping: CSV rows, console lines, periodic evaluation and checkpoints,
    the wall-time split (waiting on the server / policy inference / learning update)."""

    def __init__(self, opt, address, config, out, term_names, trainer):
        self.opt, self.address, self.config, self.out, self.trainer = opt, address, config, out, trainer
        self.fields = ["iter", "env_steps", "wall_s", "mean_return", "episodes", "fall_fraction", "mean_episode_s",
                       "lin_vel_error", "yaw_rate_error", "steps_per_s", "wait_s", "infer_s", "update_s", "lr",
                       "std", "value_loss", "eval_lin_vel_error", "eval_yaw_rate_error", "eval_no_fall_fraction"] + \
            ["term_" + n for n in term_names]
        self.fcsv = open(os.path.join(out, "walk_log.csv"), "w", newline="")
        self.wcsv = csv.DictWriter(self.fcsv, fieldnames=self.fields, extrasaction="ignore")
        self.wcsv.writeheader()
        self.rows = []
        self.env_steps = 0
        self.tot = {"wait": 0.0, "infer": 0.0, "update": 0.0}
        self.t_start = time.perf_counter()
        self.t_train0 = None

    def start_training(self):
        self.t_train0 = time.perf_counter()

    def more(self, it):
        return it < self.opt.max_iters and time.perf_counter() - self.t_train0 < self.opt.minutes * 60.0

    def iteration(self, it, steps, wait_s, infer_s, update_s, stats, tracker, policy):
        """policy: () -> (herd_ppo.ActorCritic, RunningNorm) for evaluation and checkpoints."""
        opt = self.opt
        self.env_steps += steps
        self.tot["wait"] += wait_s
        self.tot["infer"] += infer_s
        self.tot["update"] += update_s
        row = {"iter": it, "env_steps": self.env_steps, "wall_s": round(time.perf_counter() - self.t_start, 1),
               "steps_per_s": round(steps / (wait_s + infer_s + update_s)), "wait_s": round(wait_s, 2),
               "infer_s": round(infer_s, 2), "update_s": round(update_s, 2), "lr": stats["lr"], "std": stats["std"],
               "value_loss": stats["value_loss"], "eval_lin_vel_error": "", "eval_yaw_rate_error": "",
               "eval_no_fall_fraction": ""}
        row.update(tracker.row())
        if opt.eval_every and it % opt.eval_every == 0:
            model, norm = policy()
            r = evaluate(model, norm, self.address, opt.eval_every_episodes, opt.seed + 3 * 10**9, self.config)
            row.update(eval_lin_vel_error=r["lin_vel_error"], eval_yaw_rate_error=r["yaw_rate_error"],
                       eval_no_fall_fraction=r["no_fall_fraction"])
        self.rows.append(row)
        self.wcsv.writerow(row)
        self.fcsv.flush()
        if it == 1 or it % 10 == 0 or opt.quick or row["eval_lin_vel_error"] != "":
            f = (lambda k, fmt: fmt % row[k] if row[k] != "" else "-")
            print("iter %4d  steps %9d  wall %6.0fs  return %7s  fall %5s  |dv| %5s  |dw| %5s  %6.0f steps/s "
                  "(server %.1fs, infer %.1fs, update %.1fs)  std %.3f  lr %.1e%s"
                  % (it, self.env_steps, row["wall_s"], f("mean_return", "%.2f"), f("fall_fraction", "%.3f"),
                     f("lin_vel_error", "%.3f"), f("yaw_rate_error", "%.3f"), row["steps_per_s"], wait_s, infer_s,
                     update_s, stats["std"], stats["lr"],
                     "  eval |dv| %.3f |dw| %.3f no-fall %.3f" % (row["eval_lin_vel_error"], row["eval_yaw_rate_error"],
                                                                  row["eval_no_fall_fraction"])
                     if row["eval_lin_vel_error"] != "" else ""), flush=True)
        if opt.checkpoint_every and it % opt.checkpoint_every == 0:
            model, norm = policy()
            self.save(model, norm, it)
            save_curve(os.path.join(self.out, "walk_curve.png"), self.rows, "%s, %s (checkpoint at iteration %d)"
                       % (ENV, self.trainer, it))

    def save(self, model, norm, it):
        herd_ppo.save_policy(os.path.join(self.out, "walk_policy.pt"), model, norm, hidden=HIDDEN,
                             config=self.config, iterations=it, env_steps=self.env_steps, trainer=self.trainer)

    def summary(self, it):
        self.fcsv.close()
        busy = sum(self.tot.values())
        return {"trainer": self.trainer, "iterations": it, "env_steps": self.env_steps,
                "train_wall_s": round(time.perf_counter() - self.t_start, 1),
                "setup_s": round(self.t_train0 - self.t_start, 1),
                "env_steps_per_s": round(self.env_steps / max(busy, 1e-9)),
                "env_steps_per_s_server_only": round(self.env_steps / max(self.tot["wait"], 1e-9)),
                "share_waiting_on_server": round(self.tot["wait"] / max(busy, 1e-9), 3),
                "share_policy_inference": round(self.tot["infer"] / max(busy, 1e-9), 3),
                "share_learning_update": round(self.tot["update"] / max(busy, 1e-9), 3)}


def view(opt, env):
    """--view: a live browser view of the first worlds of the training session (read-only, its own socket;
    the env is made with reward_terms=True so that the page's table shows each step's reward terms)."""
    if not opt.view:
        return None
    import herd.view
    viewer = herd.view.attach(env, world_ids=range(min(4, env.num_envs)), port=opt.view_port)
    print("train_walk: watch the training at %s" % viewer.url, flush=True)
    opt._viewer = viewer            # kept alive for the run
    return viewer


def view_policy(opt, model, norm, address, config, seed, worlds=4):
    """--eval-only --view: the policy mean walking live (in real time) on `worlds` fresh worlds of a session
    of its own, commands from the task's ranges; the viewer steps them, the evaluation runs beside it."""
    import herd.view

    def pi(obs):
        with torch.no_grad():
            return model.actor(norm(torch.as_tensor(np.asarray(obs)))).numpy()
    src = herd.view.EnvSource(ENV, worlds, address=address, policy=pi, seed=seed, obs_noise=0.0,
                              **{k: v for k, v in config.items() if k != "obs_noise"})
    src.title = "%s · trained policy (%s)" % (ENV, os.path.basename(opt.policy or "walk_policy.pt"))
    viewer = herd.view.Viewer(src, port=opt.view_port).start()
    print("train_walk: watch the trained policy walk at %s" % viewer.url, flush=True)
    return viewer, src


def record_policy(model, norm, address, config, html, seed, seconds=10.0, worlds=4):
    """--record: a replay (HTML, plus MP4, GIF and a PNG still of world 0 at mid-rollout when possible) of the
    policy mean on fresh worlds (the README's pictures come from `make docs-pictures`)."""
    def pi(obs):
        with torch.no_grad():
            return model.actor(norm(torch.as_tensor(np.asarray(obs)))).numpy()
    herd_tasks.record_replay(ENV, pi, address, config, html, seed, seconds, worlds, "anymal_c-walk, trained policy",
                             "train_walk")


def train_own(opt, address, config, out):
    """The examples' own PPO (herd_ppo); returns (model, norm, rows, summary)."""
    env = herd.make_vec(ENV, opt.num_envs, address=address, seed=opt.seed, autoreset_mode="SAME_STEP",
                        timeout=120.0, reward_terms=bool(opt.view), **config)
    viewer = view(opt, env)
    log = Log(opt, address, config, out, env.reward_term_names, "herd_ppo")
    od, ad, N, T = env.obs_dim, env.act_dim, opt.num_envs, opt.rollout
    print("train_walk: %s x %d worlds on %s, config %s; obs %d, act %d; episode %d steps; trainer: herd_ppo "
          "(examples/herd_ppo.py)" % (ENV, N, ",".join(env.addresses), config or "default", od, ad,
                                      env.max_episode_steps), flush=True)
    torch.manual_seed(opt.seed)
    model = herd_ppo.ActorCritic(od, ad, HIDDEN, opt.init_std)
    norm = herd_ppo.RunningNorm(od, enabled=opt.obs_norm)
    ppo = herd_ppo.PPO(model, lr=opt.lr, desired_kl=opt.desired_kl, epochs=opt.epochs, minibatches=opt.minibatches,
                       clip=opt.clip, entropy=opt.entropy, gamma=opt.gamma, lam=opt.lam)
    ro = herd_ppo.Rollout(T, N, od, ad)
    tracker = Tracker(N, env.reward_term_names)
    obs, _ = env.reset()
    if not opt.no_desync:
        obs = herd_ppo.desync(env, obs, opt.seed)
    log.start_training()
    it = 0
    while log.more(it):
        it += 1
        tracker.new_iteration()

        def on_step(t, ob, nob, rew, term, trunc, info):
            terms = info["episode_terms"][info["_episode_terms"]] if "episode_terms" in info else None
            tracker.step(ob, nob, rew, term | trunc, term, terms)
            if viewer is not None:
                viewer.publish(rew, info)           # the page's reward-term table

        t0 = time.perf_counter()
        obs = ro.collect(env, model, norm, obs, opt.gamma, on_step=on_step)
        t_roll = time.perf_counter() - t0
        norm.update(ro.obs)
        t1 = time.perf_counter()
        torch.set_num_threads(opt.update_threads)     # the server is idle during the update
        st = ppo.update(ro, norm)
        torch.set_num_threads(1)
        log.iteration(it, N * T, ro.wait_s, t_roll - ro.wait_s, time.perf_counter() - t1, st, tracker,
                      lambda: (model, norm))
    env.close()
    return model, norm, log.rows, log.summary(it)


def rsl_rl_to_herd_ppo(ac, od, ad):
    """rsl_rl's ActorCritic (same MLP layout, a std parameter) as a herd_ppo.ActorCritic (log std)."""
    m = herd_ppo.ActorCritic(od, ad, HIDDEN, 1.0)
    sd = {k: v.detach().clone() for k, v in ac.state_dict().items() if k.startswith(("actor.", "critic."))}
    sd["log_std"] = torch.log(torch.clamp(ac.std.detach().clone(), min=1e-6))
    m.load_state_dict(sd)
    return m


def train_rsl_rl(opt, address, config, out):
    """rsl_rl 1.0.2's PPO and ActorCritic on herd.adapters.rsl_rl.RslRlVecEnv.  The iteration loop is
    OnPolicyRunner.learn's (act, step, process_env_step, compute_returns, update) without its TensorBoard
    writer (tensorboard is not installed here), with a wall-time budget and this script's statistics."""
    from rsl_rl.algorithms import PPO
    from rsl_rl.modules import ActorCritic
    from herd.adapters.rsl_rl import RslRlVecEnv
    env = RslRlVecEnv(ENV, opt.num_envs, address=address, seed=opt.seed, timeout=120.0,
                      reward_terms=bool(opt.view), **config)
    viewer = view(opt, env.env)
    names = env.reward_term_names
    log = Log(opt, address, config, out, names, "rsl_rl")
    od, ad, N, T = env.num_obs, env.num_actions, opt.num_envs, opt.rollout
    print("train_walk: %s x %d worlds on %s, config %s; obs %d, act %d; episode %d steps; trainer: rsl_rl %s "
          "through herd.adapters.rsl_rl" % (ENV, N, ",".join(env.env.addresses), config or "default", od, ad,
                                           env.max_episode_length, os.path.dirname(sys.modules["rsl_rl"].__file__)),
          flush=True)
    torch.manual_seed(opt.seed)
    ac = ActorCritic(od, od, ad, actor_hidden_dims=HIDDEN, critic_hidden_dims=HIDDEN, activation="elu",
                     init_noise_std=opt.init_std)
    alg = PPO(ac, num_learning_epochs=opt.epochs, num_mini_batches=opt.minibatches, clip_param=opt.clip,
              gamma=opt.gamma, lam=opt.lam, value_loss_coef=1.0, entropy_coef=opt.entropy, learning_rate=opt.lr,
              max_grad_norm=1.0, use_clipped_value_loss=True, schedule="adaptive" if opt.desired_kl > 0 else "fixed",
              desired_kl=opt.desired_kl, device="cpu")
    alg.init_storage(N, T, [od], [None], [ad])
    env.reset()
    if not opt.no_desync:      # spread the episode phases through the underlying env (see the adapter's notes)
        env.obs_buf = torch.from_numpy(herd_ppo.desync(env.env, env.get_observations().numpy(), opt.seed))
    obs = env.get_observations()
    tracker = Tracker(N, names)
    ac.train()
    log.start_training()
    it = 0
    while log.more(it):
        it += 1
        tracker.new_iteration()
        t0 = time.perf_counter()
        wait = 0.0
        with torch.inference_mode():
            for _ in range(T):
                actions = alg.act(obs, obs)
                t1 = time.perf_counter()
                nobs, _, rew, dones, extras = env.step(actions)
                wait += time.perf_counter() - t1
                if viewer is not None:
                    viewer.publish(rew.numpy(), env.infos)     # the page's reward-term table
                alg.process_env_step(rew, dones, extras)
                d = dones.numpy()
                terms = None
                if "episode" in extras:
                    terms = np.stack([extras["episode"]["rew_" + n].numpy() for n in names], 1)
                tracker.step(obs.numpy(), nobs.numpy(), rew.numpy(), d, d & ~extras["time_outs"].numpy(), terms)
                obs = nobs
            alg.compute_returns(obs)
        t_roll = time.perf_counter() - t0
        t1 = time.perf_counter()
        torch.set_num_threads(opt.update_threads)
        value_loss, _ = alg.update()
        torch.set_num_threads(1)
        st = {"lr": alg.learning_rate, "std": float(ac.std.mean()), "value_loss": value_loss}
        log.iteration(it, N * T, wait, t_roll - wait, time.perf_counter() - t1, st, tracker,
                      lambda: (rsl_rl_to_herd_ppo(ac, od, ad), herd_ppo.RunningNorm(od, enabled=False)))
    env.close()
    return rsl_rl_to_herd_ppo(ac, od, ad), herd_ppo.RunningNorm(od, enabled=False), log.rows, log.summary(it)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default=None, help="herd server(s), comma-separated (default: start one)")
    ap.add_argument("--server-threads", type=int, default=0, help="threads of the started server (0: all cores)")
    ap.add_argument("--trainer", choices=["auto", "rsl_rl", "herd_ppo"], default="auto",
                    help="auto: rsl_rl through herd.adapters.rsl_rl when both import, else herd_ppo")
    ap.add_argument("--num-envs", type=int, default=2048)
    ap.add_argument("--rollout", type=int, default=24, help="steps per world per iteration")
    ap.add_argument("--minutes", type=float, default=56.0,
                    help="training wall-time budget (minutes; with setup and evaluation the run stays within 60)")
    ap.add_argument("--max-iters", type=int, default=100000)
    herd_ppo.add_ppo_args(ap, entropy=0.01, init_std=0.5)
    ap.add_argument("--obs-norm", action="store_true", help="running observation normalization (legged_gym: none)")
    ap.add_argument("--update-threads", type=int, default=1, help="torch threads for the PPO update")
    ap.add_argument("--eval-episodes", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=0, help="also evaluate every N iterations (0: only at the end)")
    ap.add_argument("--eval-every-episodes", type=int, default=200)
    ap.add_argument("--checkpoint-every", type=int, default=25)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--policy", default=None, help="policy file to evaluate (--eval-only; default OUT/walk_policy.pt)")
    ap.add_argument("--quick", action="store_true", help="a few small iterations (CI smoke test)")
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--view", action="store_true",
                    help="serve a live 3-D view of the first training worlds with their reward terms (herd.view; "
                         "the URL is printed); with --eval-only, 4 worlds of the trained policy walking in real time "
                         "(kept up after the evaluation until Ctrl-C or --view-seconds)")
    ap.add_argument("--view-port", type=int, default=8765, help="HTTP port of --view (loopback; 0: any free one)")
    ap.add_argument("--view-seconds", type=float, default=0,
                    help="--eval-only --view: stop serving this many seconds after the evaluation (0: at Ctrl-C)")
    ap.add_argument("--record", metavar="HTML",
                    help="write a replay of the trained policy (4 worlds, 10 s) to HTML, and HTML's .mp4, .gif and "
                         ".png (a still) beside it (ffmpeg / Pillow permitting)")
    opt = ap.parse_args()
    if opt.quick:
        opt.num_envs, opt.max_iters, opt.eval_episodes, opt.no_desync, opt.checkpoint_every = 128, 3, 16, True, 0
        if opt.out == HERE:
            opt.out = os.path.join(HERE, "out", "train_walk_quick")
    config = herd_ppo.parse_config(opt.config)
    torch.set_num_threads(1)          # rollouts: the server's workers use the cores; updates: see below
    os.makedirs(opt.out, exist_ok=True)
    return herd_ppo.with_server(opt.address, opt.server_threads, lambda address, cpu: run(opt, address, config, cpu))


def run(opt, address, config, cpu):
    t0 = time.perf_counter()
    eval_seed = opt.seed + 10**9          # training uses seeds opt.seed + world index (< 10**9)
    if opt.eval_only:
        path = opt.policy or os.path.join(opt.out, "walk_policy.pt")
        with herd.make_vec(ENV, 1, address=address, seed=0) as probe:
            od, ad = probe.obs_dim, probe.act_dim
            keys = {k["key"] for k in probe.herd_spec["config"]}
        model, norm, ck = herd_ppo.load_policy(path, od, ad, HIDDEN)
        config = herd_ppo.checkpoint_config(dict(ck.get("config") or {}), TRAINED_BEFORE, keys, config)
        print("train_walk: evaluating %s on the configuration it was trained on: %s" % (path, config), flush=True)
        watch = view_policy(opt, model, norm, address, config, eval_seed + 777) if opt.view else None
        res = evaluate(model, norm, address, opt.eval_episodes, eval_seed, config)
        print(json.dumps(eval_line(res, "trained")), flush=True)
        torch.manual_seed(opt.seed)
        untrained = herd_ppo.ActorCritic(od, ad, HIDDEN, opt.init_std)
        res0 = evaluate(untrained, herd_ppo.RunningNorm(od, enabled=False), address, opt.eval_episodes, eval_seed,
                        config)
        print(json.dumps(eval_line(res0, "untrained")), flush=True)
        print(json.dumps({"trained": res, "untrained": res0, "policy_file": path,
                          "wall_s": round(time.perf_counter() - t0, 1)}), flush=True)
        if opt.record:
            record_policy(model, norm, address, config, opt.record, eval_seed + 12345)
        if watch is not None:
            print("train_walk: evaluation done; the trained policy walks on at %s (Ctrl-C stops)" % watch[0].url,
                  flush=True)
            try:
                threading.Event().wait(opt.view_seconds or None)
            except KeyboardInterrupt:
                pass
            watch[0].stop()
            watch[1].close()
        return 0 if eval_line(res, "trained")["target_met"] else 1

    trainer = opt.trainer
    if trainer == "auto":
        trainer = "rsl_rl" if rsl_rl_available() else "herd_ppo"
    elif trainer == "rsl_rl" and not rsl_rl_available():
        print("train_walk: --trainer rsl_rl: rsl_rl or herd.adapters.rsl_rl does not import", file=sys.stderr)
        return 2
    train = train_rsl_rl if trainer == "rsl_rl" else train_own
    with herd.make_vec(ENV, 1, address=address, seed=0, **config) as probe:
        config = herd_ppo.recorded_config(probe, TRAINED_BEFORE, config)
    cpu0, t_cpu0 = cpu.read(), time.perf_counter()
    model, norm, rows, summary = train(opt, address, config, opt.out)
    cpu1, t_cpu1 = cpu.read(), time.perf_counter()
    summary["cpu_s_learner"] = round(cpu1[0] - cpu0[0], 1)
    summary["cpu_s_server"] = round(cpu1[1] - cpu0[1], 1)       # nan with --address (remote server)
    summary["machine_share"] = round((cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / ((t_cpu1 - t_cpu0) * os.cpu_count()), 3)
    od, ad = model.actor[0].in_features, model.log_std.numel()
    herd_ppo.save_policy(os.path.join(opt.out, "walk_policy.pt"), model, norm, hidden=HIDDEN, config=config,
                         iterations=summary["iterations"], env_steps=summary["env_steps"])
    title = ("PPO (%s) on %s through herd: %d worlds, %d iterations, %.1f M steps in %.1f min, %s" % (
        summary["trainer"], ENV, opt.num_envs, summary["iterations"], summary["env_steps"] / 1e6,
        summary["train_wall_s"] / 60, ", ".join("%s=%s" % kv for kv in config.items()) or "default config"))
    save_curve(os.path.join(opt.out, "walk_curve.png"), rows, title)

    t2 = time.perf_counter()
    res = evaluate(model, norm, address, opt.eval_episodes, eval_seed, config)
    torch.manual_seed(opt.seed)
    untrained = herd_ppo.ActorCritic(od, ad, HIDDEN, opt.init_std)
    res0 = evaluate(untrained, herd_ppo.RunningNorm(od, enabled=False), address, opt.eval_episodes, eval_seed, config)
    line, line0 = eval_line(res, "trained"), eval_line(res0, "untrained")
    summary.update({"env": ENV, "config": config, "num_envs": opt.num_envs, "rollout": opt.rollout,
                    "eval_wall_s": round(time.perf_counter() - t2, 1),
                    "total_wall_s": round(time.perf_counter() - t0, 1),
                    "target": TARGET, "eval": res, "eval_untrained": res0, "target_met": line["target_met"],
                    "command": " ".join(sys.argv)})
    with open(os.path.join(opt.out, "walk_eval.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(line), flush=True)
    print(json.dumps(line0), flush=True)
    print("train_walk: %d iterations, %.1f M steps, %.0f env steps/s; wall %.1f min (training %.1f, evaluation %.1f); "
          "waiting on the server %.0f %%, policy inference %.0f %%, learning update %.0f %% of the training loop; "
          "CPU used while training: %.0f s learner + %.0f s server = %.0f %% of the machine"
          % (summary["iterations"], summary["env_steps"] / 1e6, summary["env_steps_per_s"],
             summary["total_wall_s"] / 60, summary["train_wall_s"] / 60, summary["eval_wall_s"] / 60,
             100 * summary["share_waiting_on_server"], 100 * summary["share_policy_inference"],
             100 * summary["share_learning_update"], summary["cpu_s_learner"], summary["cpu_s_server"],
             100 * summary["machine_share"]), flush=True)
    if opt.quick:
        return 0
    return 0 if line["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())

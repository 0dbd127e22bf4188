#!/usr/bin/python3
"""PPO (PyTorch, CPU) trains ANYmal C to stand up and hold a target height, through herd-server.

    PYTHONPATH=clients/python /usr/bin/python3 examples/ppo_stand.py                   # starts build/herd-server, trains 19.5 min, evaluates
    PYTHONPATH=clients/python /usr/bin/python3 examples/ppo_stand.py --quick           # a few iterations (CI smoke test)
    PYTHONPATH=clients/python /usr/bin/python3 examples/ppo_stand.py --address tcp://host:5555 --num-envs 4096
    PYTHONPATH=clients/python /usr/bin/python3 examples/ppo_stand.py --eval-only --load examples/ppo_stand_policy.pt

Everything goes through the Python client (herd.make_vec): the env is ``anymal_c-stand`` (46 observations,
12 joint-target actions, 50 Hz, 4 s episodes), same-step autoreset so that no transition is lost and
time-limit truncations are bootstrapped with V(final_obs).  The algorithm is the PPO of legged_gym /
rsl_rl: GAE (gamma 0.99, lambda 0.95), clipped surrogate and value losses, 5 epochs x 4 minibatches,
entropy bonus, KL-adaptive learning rate, plus a running observation normalization.  Defaults (the ones
that learn fall recovery within 20 minutes on 2 cores, task defaults untouched): 1024 worlds x 24 steps per
iteration, [128, 128] ELU, entropy 0.01, initial action std 1.0 and 2.0 on the four HAA joints (the hip
abduction that rolls the body: the recovery needs large HAA swings, which a std of 1.0 rarely tries).
The committed examples/ppo_stand_policy.pt, ppo_stand_eval.json, ppo_stand_log.csv and
ppo_stand_learning_curve.png come from one run of this script with every default.

Outputs (--out, default examples/out/ppo_stand): log.csv (one row per iteration), learning_curve.png,
policy.pt (weights + observation normalizer), eval.json.

Success criterion (printed at the end): at least 90 % of evaluation episodes end standing at the target
height +-5 cm.  Evaluation: --eval-episodes fresh worlds (seeds never used in training), deterministic
actions (the policy mean), one full episode each; the episode "ends standing" when, in its last
observation, |base height - target| <= 0.05 m and the base is upright (projected gravity z <= -0.9, i.e.
tilted less than 26 degrees) and the physics did not fail.  The evaluation env has obs_noise = 0 so that
the observation's base_height_error is the exact height error; every other setting equals training.
The success rate is also given for the episodes that started fallen (first observation tilted more than
60 degrees) and the others, beside the do-nothing policy's (action 0: the default pose) on the same seeds.
"""
import argparse
import csv
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # as examples/train.py (bench/ppo_update.py times the others)
import numpy as np  # noqa: E402

try:
    import herd  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("examples/%s: the herd package is not importable: run with PYTHONPATH=clients/python, or "
             "pip install -e clients/python" % os.path.basename(__file__))

try:
    import torch
except ImportError:  # pragma: no cover
    print("SKIPPED: examples/ppo_stand.py needs PyTorch (Debian: apt-get install python3-torch)", file=sys.stderr)
    sys.exit(0 if "--quick" in sys.argv else 1)

import herd_ppo  # noqa: E402  (the PPO shared with train_walk.py; the script's directory is on sys.path)

ENV = "anymal_c-stand"
# The keys whose defaults changed after the first stand policies were trained, with the values those were trained
# on (the PD actuator, no joint limits): a checkpoint that does not record one of them predates the change and is
# evaluated with that value (a key the server's task does not list is not passed).  Newer checkpoints, the
# committed examples/ppo_stand_policy.pt among them, record them (herd_ppo.recorded_config).
TRAINED_BEFORE = {"actuator": "pd", "joint_limits": 0.0}


# ---- helpers ------------------------------------------------------------------------------------------

def standing(final_obs, tol=0.05, upright=-0.9):
    """final_obs rows -> bool: at the target height +- tol and upright (obs 0 = height error, obs 3 =
    projected gravity z)."""
    return (np.abs(final_obs[:, 0]) <= tol) & (final_obs[:, 3] <= upright)


def evaluate(model, norm, address, episodes, seed, config, obs_noise=0.0, timeout=120.0):
    """Runs `episodes` fresh worlds for one full episode each with the policy mean (model None: the
    do-nothing policy, action 0 = the default pose); returns a dict, with the success rates of the
    episodes that started fallen (the first observation tilted more than 60 degrees: fallen starts are
    rolled 1.2-3 rad, crouched ones are upright) and of the others."""
    cfg = dict(config)
    if obs_noise is not None:
        cfg["obs_noise"] = obs_noise
    with herd.make_vec(ENV, episodes, address=address, seed=seed, autoreset_mode="SAME_STEP",
                       timeout=timeout, **cfg) as env:
        obs, _ = env.reset()
        fallen = obs[:, 3] > -0.5
        T = env.max_episode_steps
        final = np.zeros((episodes, env.obs_dim), np.float32)
        ret = np.zeros(episodes)
        phys = np.zeros(episodes, bool)
        ended = np.zeros(episodes, bool)
        for t in range(T):
            if model is None:
                a = np.zeros((episodes, env.act_dim), np.float32)
            else:
                with torch.no_grad():
                    a = model.actor(norm(torch.as_tensor(obs))).numpy()
            obs, rew, term, trunc, info = env.step(a)
            ret += np.where(ended, 0, rew)
            if "_final_obs" in info:
                m = info["_final_obs"] & ~ended
                final[m] = info["final_obs"][m]
                if "physics_reset" in info:
                    phys |= m & info["physics_reset"]
                ended |= m
        ok = standing(final) & ~phys & ended
        rate = lambda m: float(ok[m].mean()) if m.any() else float("nan")  # noqa: E731
        return {"episodes": int(episodes), "success_rate": float(ok.mean()), "ended": int(ended.sum()),
                "fallen_starts": int(fallen.sum()), "success_fallen": rate(fallen), "success_not_fallen": rate(~fallen),
                "mean_return": float(ret.mean()), "mean_abs_height_error": float(np.abs(final[:, 0]).mean()),
                "median_abs_height_error": float(np.median(np.abs(final[:, 0]))),
                "upright_rate": float((final[:, 3] <= -0.9).mean()), "physics_resets": int(phys.sum()),
                "obs_noise": obs_noise}


def save_curve(path, rows, title):
    """learning_curve.png: mean episode return and training success rate against env steps."""
    steps = np.array([r["env_steps"] for r in rows], float)
    ret = np.array([r["mean_return"] for r in rows], float)
    succ = np.array([r["train_success"] for r in rows], float)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return write_png_plot(path, steps, [ret, succ * np.nanmax(np.abs(ret[np.isfinite(ret)]) if np.isfinite(ret).any() else 1)])
    import textwrap
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=110)
    ax.plot(steps / 1e6, ret, color="tab:blue", label="mean episode return")
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("mean episode return", color="tab:blue")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(steps / 1e6, 100 * succ, color="tab:orange", label="episodes ending standing (training, %)")
    ax2.axhline(90, color="tab:orange", ls=":", lw=1)
    ax2.set_ylabel("episodes ending at target height \u00b15 cm (%)", color="tab:orange")
    ax2.set_ylim(-2, 103)
    ax.set_title("\n".join(textwrap.wrap(title, 95)), fontsize=8.5)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_png_plot(path, x, ys, w=640, h=360):
    """A plain PNG line plot without matplotlib (zlib + a few lines of PNG framing)."""
    import struct
    import zlib
    img = np.full((h, w, 3), 255, np.uint8)
    img[h - 30, 40:w - 10] = 0
    img[10:h - 30, 40] = 0
    colors = [(31, 119, 180), (255, 127, 14)]
    for y, c in zip(ys, colors):
        ok = np.isfinite(y)
        if ok.sum() < 2:
            continue
        xs, yv = x[ok], y[ok]
        px = 40 + (xs - xs.min()) / max(xs.max() - xs.min(), 1e-9) * (w - 51)
        lo, hi = min(yv.min(), 0), max(yv.max(), 1e-9)
        py = (h - 30) - (yv - lo) / (hi - lo) * (h - 41)
        for i in range(len(px) - 1):
            n = int(max(abs(px[i + 1] - px[i]), abs(py[i + 1] - py[i]), 1))
            for s in np.linspace(0, 1, n + 1):
                img[int(py[i] + s * (py[i + 1] - py[i])), int(px[i] + s * (px[i + 1] - px[i]))] = c
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


# ---- training ------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default=None, help="herd server(s), comma-separated (default: start one)")
    ap.add_argument("--server-threads", type=int, default=0, help="threads of the started server (0: all cores)")
    ap.add_argument("--num-envs", type=int, default=1024)
    ap.add_argument("--rollout", type=int, default=24, help="steps per env per iteration")
    ap.add_argument("--minutes", type=float, default=19.5, help="training wall-time budget (minutes)")
    ap.add_argument("--max-iters", type=int, default=100000)
    ap.add_argument("--hidden", default="128,128")
    herd_ppo.add_ppo_args(ap, entropy=0.01, init_std=1.0)
    ap.add_argument("--init-std-haa", type=float, default=2.0,
                    help="initial action noise std of the four hip abduction (HAA) joints, the ones that roll the body")
    ap.add_argument("--state-std", action="store_true",
                    help="a state-dependent action std (herd_ppo.ActorCritic); default: one std per joint")
    ap.add_argument("--reward-scale", type=float, default=1.0)
    ap.add_argument("--eval-episodes", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=0, help="also evaluate every N iterations (0: only at the end)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "ppo_stand"))
    ap.add_argument("--quick", action="store_true", help="a few small iterations (CI smoke test)")
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--load", default=None)
    opt = ap.parse_args()
    if opt.quick:
        opt.num_envs, opt.rollout, opt.max_iters, opt.eval_episodes, opt.no_desync = 64, 16, 3, 32, True
        opt.out = opt.out if opt.out != os.path.join(HERE, "out", "ppo_stand") else os.path.join(HERE, "out", "ppo_stand_quick")
    config = herd_ppo.parse_config(opt.config)
    hidden = [int(h) for h in opt.hidden.split(",") if h]
    torch.manual_seed(opt.seed)
    torch.set_num_threads(1)          # the server's workers use the other cores
    os.makedirs(opt.out, exist_ok=True)

    return herd_ppo.with_server(opt.address, opt.server_threads, lambda address, cpu: run(opt, address, config, hidden))


def run(opt, address, config, hidden):
    t_start = time.perf_counter()
    env = herd.make_vec(ENV, opt.num_envs, address=address, seed=opt.seed, autoreset_mode="SAME_STEP",
                        timeout=120.0, **config)
    od, ad, N, T = env.obs_dim, env.act_dim, opt.num_envs, opt.rollout
    print("ppo_stand: %s x %d worlds on %s, config %s; obs %d, act %d; episode %d steps"
          % (ENV, N, ",".join(env.addresses), config or "default", od, ad, env.max_episode_steps), flush=True)
    init_std = [opt.init_std_haa if i % 3 == 0 else opt.init_std for i in range(ad)]   # joints: HAA, HFE, KFE x 4
    model = herd_ppo.ActorCritic(od, ad, hidden, init_std, state_std=opt.state_std)
    norm = herd_ppo.RunningNorm(od)
    if opt.load:
        model, norm, ck = herd_ppo.load_policy(opt.load, od, ad, hidden)
        # evaluate on the configuration the policy was trained on
        config = herd_ppo.checkpoint_config(dict(ck.get("config") or {}), TRAINED_BEFORE,
                                            {k["key"] for k in env.herd_spec["config"]}, config)
        print("ppo_stand: configuration of %s: %s" % (opt.load, config), flush=True)
    if opt.eval_only:
        env.close()
        res = evaluate(model, norm, address, opt.eval_episodes, opt.seed + 10**9, config)
        print(json.dumps(res))
        return 0 if res["success_rate"] >= 0.9 else 1
    ppo = herd_ppo.PPO(model, lr=opt.lr, desired_kl=opt.desired_kl, epochs=opt.epochs, minibatches=opt.minibatches,
                       clip=opt.clip, entropy=opt.entropy, gamma=opt.gamma, lam=opt.lam)
    ro = herd_ppo.Rollout(T, N, od, ad)

    obs, _ = env.reset()
    if not opt.no_desync:
        obs = herd_ppo.desync(env, obs, opt.seed)
    rows = []
    csv_path = os.path.join(opt.out, "log.csv")
    fields = ["iter", "env_steps", "wall_s", "mean_return", "episodes", "train_success", "mean_abs_height_error",
              "steps_per_s", "sim_s", "update_s", "lr", "kl", "std", "value_loss", "eval_success"]
    fcsv = open(csv_path, "w", newline="")
    wcsv = csv.DictWriter(fcsv, fieldnames=fields)
    wcsv.writeheader()
    env_steps = 0
    budget = opt.minutes * 60.0
    it = 0
    ep_ret_hist, ep_succ_hist, ep_herr_hist = [], [], []
    while it < opt.max_iters and time.perf_counter() - t_start < budget:
        it += 1
        t0 = time.perf_counter()
        ep_succ, ep_herr = [], []

        def on_final(final_obs, term, info, mask):
            ep_succ.append(standing(final_obs))
            ep_herr.append(np.abs(final_obs[:, 0]))

        obs = ro.collect(env, model, norm, obs, opt.gamma, reward_scale=opt.reward_scale, on_final=on_final)
        ep_rets = ro.episode_returns
        env_steps += N * T
        t_sim = time.perf_counter() - t0
        norm.update(ro.obs)
        t1 = time.perf_counter()
        st = ppo.update(ro, norm)
        t_upd = time.perf_counter() - t1

        if ep_rets:
            ep_ret_hist = np.concatenate(ep_rets)
        if ep_succ:
            ep_succ_hist = np.concatenate(ep_succ)
            ep_herr_hist = np.concatenate(ep_herr)
        row = {"iter": it, "env_steps": env_steps, "wall_s": round(time.perf_counter() - t_start, 1),
               "mean_return": float(np.mean(ep_ret_hist)) if len(ep_ret_hist) else float("nan"),
               "episodes": int(sum(len(x) for x in ep_rets)),
               "train_success": float(np.mean(ep_succ_hist)) if len(ep_succ_hist) else float("nan"),
               "mean_abs_height_error": float(np.mean(ep_herr_hist)) if len(ep_herr_hist) else float("nan"),
               "steps_per_s": round(N * T / t_sim), "sim_s": round(t_sim, 2), "update_s": round(t_upd, 2),
               "lr": st["lr"], "kl": st["kl"], "std": st["std"], "value_loss": st["value_loss"], "eval_success": ""}
        if opt.eval_every and it % opt.eval_every == 0:
            row["eval_success"] = evaluate(model, norm, address, min(opt.eval_episodes, 256), opt.seed + 10**9,
                                           config)["success_rate"]
        rows.append(row)
        wcsv.writerow(row)
        fcsv.flush()
        if it == 1 or it % 10 == 0 or opt.quick:
            print("iter %4d  steps %9d  wall %6.0fs  return %7.3f  standing %5.1f%%  |dz| %.3f  "
                  "%6.0f steps/s (sim %.1fs, update %.1fs)  std %.2f  lr %.1e%s"
                  % (it, env_steps, row["wall_s"], row["mean_return"], 100 * row["train_success"],
                     row["mean_abs_height_error"], row["steps_per_s"], t_sim, t_upd, row["std"], st["lr"],
                     "  eval %.1f%%" % (100 * row["eval_success"]) if row["eval_success"] != "" else ""),
                  flush=True)
    fcsv.close()
    env.close()
    train_s = time.perf_counter() - t_start
    herd_ppo.save_policy(os.path.join(opt.out, "policy.pt"), model, norm, hidden=hidden,
                          config=herd_ppo.recorded_config(env, TRAINED_BEFORE, config), state_std=opt.state_std)
    title = "PPO on %s through herd (%d worlds, %s): %.1f M steps in %.1f min" % (
        ENV, N, ", ".join("%s=%s" % kv for kv in config.items()) or "default config", env_steps / 1e6, train_s / 60)
    save_curve(os.path.join(opt.out, "learning_curve.png"), rows, title)

    t2 = time.perf_counter()
    res = evaluate(model, norm, address, opt.eval_episodes, opt.seed + 10**9, config, obs_noise=0.0)
    res_noisy = evaluate(model, norm, address, opt.eval_episodes, opt.seed + 2 * 10**9, config, obs_noise=None)
    res_zero = evaluate(None, None, address, opt.eval_episodes, opt.seed + 10**9, config)
    eval_s = time.perf_counter() - t2
    total_s = time.perf_counter() - t_start
    summary = {"env": ENV, "config": config, "num_envs": N, "iterations": it, "env_steps": env_steps,
               "train_wall_s": round(train_s, 1), "eval_wall_s": round(eval_s, 1), "total_wall_s": round(total_s, 1),
               "eval": res, "eval_with_training_obs_noise": res_noisy, "eval_do_nothing": res_zero,
               "success": res["success_rate"] >= 0.9, "curve": os.path.join(opt.out, "learning_curve.png"),
               "command": " ".join(sys.argv)}
    with open(os.path.join(opt.out, "eval.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary), flush=True)
    print("ppo_stand: %d iterations, %.1f M steps, training %.1f min, total %.1f min; evaluation: %.1f %% of %d "
          "episodes end standing at the target height +-5 cm (criterion >= 90 %%: %s; fallen starts %.1f %% of %d, "
          "others %.1f %%); with training obs noise %.1f %%; the do-nothing policy %.1f %%"
          % (it, env_steps / 1e6, train_s / 60, total_s / 60, 100 * res["success_rate"], res["episodes"],
             "PASS" if summary["success"] else "FAIL", 100 * res["success_fallen"], res["fallen_starts"],
             100 * res["success_not_fallen"], 100 * res_noisy["success_rate"], 100 * res_zero["success_rate"]),
          flush=True)
    if opt.quick:
        return 0
    return 0 if summary["success"] else 1


if __name__ == "__main__":
    sys.exit(main())

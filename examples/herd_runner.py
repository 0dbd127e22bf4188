"""rsl_rl's OnPolicyRunner (1.0.2 or 2.x, whichever is imported) with what examples/train.py adds around it:
a wall-clock budget, one CSV row per iteration, the time split between waiting on the server, policy inference
and the PPO update, the terrain level of a curriculum task, and the learning-curve PNG.

The runner's own loop, storage, PPO update, checkpoints (model_<iter>.pt) and console log are unchanged: the
subclass only wraps env.step (to time it), the PPO update (to give it --update-threads torch threads while the
server is idle) and log() (the CSV row and the budget check, after rsl_rl's own log).
"""
import csv
import os
import time

import numpy as np
import torch


class BudgetSpent(Exception):
    """Raised from log() when the wall-clock budget is spent: learn() stops after a complete iteration."""


def make_runner(version, env, train_cfg, log_dir, task, update_threads, budget_s=None):
    from rsl_rl.runners import OnPolicyRunner

    class HerdRunner(OnPolicyRunner):
        def __init__(self):
            super().__init__(env, train_cfg, log_dir=log_dir, device="cpu")
            self.version = version
            self.task = task
            self.budget_s = budget_s
            self.t0 = time.perf_counter()
            self.rows = []
            self.wait_s = 0.0
            self.tot = {"wait": 0.0, "infer": 0.0, "update": 0.0}
            self.env_steps = 0
            self.last_checkpoint = None
            self.csv_path = os.path.join(log_dir, "log.csv")
            self._csv = None
            step = env.step

            def timed_step(actions):
                t = time.perf_counter()
                out = step(actions)
                self.wait_s += time.perf_counter() - t
                return out
            env.step = timed_step
            update = self.alg.update

            def threaded_update(*a, **k):
                torch.set_num_threads(update_threads)
                try:
                    return update(*a, **k)
                finally:
                    torch.set_num_threads(1)
            self.alg.update = threaded_update

        def save(self, path, infos=None):
            super().save(path, infos)
            self.last_checkpoint = path

        def terrain_level(self):
            """Mean terrain level of all worlds now (legged_gym's logged figure); "" without a curriculum."""
            if getattr(env, "terrain_levels", None) is None:
                return ""
            return float(env.terrain_levels.float().mean())

        def log(self, locs, *a, **k):
            super().log(locs, *a, **k)
            it = locs["it"]
            n = self.num_steps_per_env * env.num_envs
            self.env_steps += n
            coll, learn = locs["collection_time"], locs["learn_time"]
            wait = self.wait_s
            self.wait_s = 0.0
            self.tot["wait"] += wait
            self.tot["infer"] += max(coll - wait, 0.0)
            self.tot["update"] += learn
            rew = list(locs["rewbuffer"])
            lens = list(locs["lenbuffer"])
            losses = locs.get("loss_dict") or {"value_function": locs.get("mean_value_loss", float("nan")),
                                               "surrogate": locs.get("mean_surrogate_loss", float("nan"))}
            std = self.alg.policy.action_std if hasattr(self.alg, "policy") else self.alg.actor_critic.action_std
            row = {"iter": it, "env_steps": self.env_steps, "wall_s": round(time.perf_counter() - self.t0, 1),
                   "mean_reward": float(np.mean(rew)) if rew else "",
                   "mean_episode_length": float(np.mean(lens)) if lens else "",
                   "terrain_level": self.terrain_level(), "steps_per_s": round(n / max(coll + learn, 1e-9)),
                   "wait_s": round(wait, 3), "infer_s": round(max(coll - wait, 0.0), 3), "update_s": round(learn, 3),
                   "lr": self.alg.learning_rate, "std": float(std.mean()),
                   "value_loss": float(losses.get("value_function", float("nan"))),
                   "surrogate_loss": float(losses.get("surrogate", float("nan")))}
            self.rows.append(row)
            if self._csv is None:
                f = open(self.csv_path, "a" if os.path.exists(self.csv_path) else "w", newline="")
                self._csv = (f, csv.DictWriter(f, fieldnames=list(row)))
                if f.tell() == 0:
                    self._csv[1].writeheader()
            self._csv[1].writerow(row)
            self._csv[0].flush()
            if self.budget_s is not None and time.perf_counter() - self.t0 >= self.budget_s:
                if version == 1:
                    self.current_learning_iteration = it + 1
                raise BudgetSpent()

        def train(self, iterations):
            """learn() for `iterations` more iterations or until the budget is spent; the last model is saved
            either way."""
            self.t0 = time.perf_counter()
            try:
                self.learn(num_learning_iterations=iterations, init_at_random_ep_len=False)
            except BudgetSpent:
                print("train: wall-clock budget of %.1f min spent after iteration %d"
                      % (self.budget_s / 60, self.rows[-1]["iter"]), flush=True)
                self.save(os.path.join(log_dir, "model_%d.pt" % self.current_learning_iteration))

        def summary(self):
            busy = sum(self.tot.values())
            return {"trainer": "rsl_rl %s OnPolicyRunner" % __import__("rsl_rl").__dict__.get("__version__",
                                                                                           str(version)),
                    "iterations": len(self.rows), "env_steps": self.env_steps,
                    "env_steps_per_s": round(self.env_steps / max(busy, 1e-9)),
                    "env_steps_per_s_server_only": round(self.env_steps / max(self.tot["wait"], 1e-9)),
                    "share_waiting_on_server": round(self.tot["wait"] / max(busy, 1e-9), 3),
                    "share_policy_inference": round(self.tot["infer"] / max(busy, 1e-9), 3),
                    "share_learning_update": round(self.tot["update"] / max(busy, 1e-9), 3),
                    "last_terrain_level": self.rows[-1]["terrain_level"] if self.rows else ""}

        def save_curve(self, path=None):
            rows = read_log(self.csv_path)
            if rows:
                save_curve(path or os.path.join(log_dir, "curve.png"), rows,
                           "%s through herd (rsl_rl %d OnPolicyRunner, %d worlds)" % (task.name, version,
                                                                                     env.num_envs))

    return HerdRunner()


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save_curve(path, rows, title):
    """Learning curve: mean episode reward and (curriculum tasks) mean terrain level against wall clock."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def col(k):
        return np.array([float(r[k]) if r.get(k, "") not in ("", None) else np.nan for r in rows])
    wall = col("wall_s")
    # a resumed run's rows restart their wall clock: make it cumulative
    x = np.concatenate([[0.0], np.where(np.diff(wall) < 0, wall[1:], np.diff(wall))]).cumsum() / 60.0
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
    ax.plot(x, col("mean_reward"), color="tab:blue")
    ax.set_xlabel("wall clock (min)")
    ax.set_ylabel("mean episode reward", color="tab:blue")
    ax.grid(alpha=0.3)
    lev = col("terrain_level")
    if np.isfinite(lev).any():
        ax2 = ax.twinx()
        ax2.plot(x, lev, color="tab:orange")
        ax2.set_ylabel("mean terrain level", color="tab:orange")
        ax2.set_ylim(0, 9)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

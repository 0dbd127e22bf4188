"""PPO (PyTorch, CPU) shared by the herd examples (ppo_stand.py, train_walk.py).

The algorithm is the PPO of rsl_rl 1.0.2 as legged_gym uses it: a Gaussian actor and a value critic (MLPs,
ELU), GAE, clipped surrogate and clipped value losses, entropy bonus, a fixed number of epochs x minibatches
per iteration, gradient-norm clipping at 1.0 and the KL-adaptive learning rate (divide by 1.5 above twice the
desired KL, multiply by 1.5 below half of it).  Optional extras: a running observation normalization.

Time-limit truncations are bootstrapped with V(final_obs) (the final observation that same-step autoreset
returns in info["final_obs"]); terminations and physics resets are not.

Everything here is task-agnostic; the examples add their task's metrics through the `on_final` hook of
`Rollout.collect` and their own evaluation.
"""
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.nn as nn


# ---- model -------------------------------------------------------------------------------------------

class RunningNorm:
    """Running mean / variance of observations (parallel Welford), applied as (x - mean) / std, clipped.
    With enabled=False it is the identity (legged_gym feeds its scaled observations unnormalized)."""

    def __init__(self, dim, clip=5.0, enabled=True):
        self.mean = np.zeros(dim, np.float64)
        self.var = np.ones(dim, np.float64)
        self.count = 1e-4
        self.clip = clip
        self.enabled = enabled
        self._cache = None

    def update(self, x):
        if not self.enabled:
            return
        x = x.reshape(-1, x.shape[-1]).astype(np.float64)
        bm, bv, bn = x.mean(0), x.var(0), x.shape[0]
        delta, tot = bm - self.mean, self.count + bn
        self.mean = self.mean + delta * bn / tot
        self.var = (self.var * self.count + bv * bn + delta ** 2 * self.count * bn / tot) / tot
        self.count = tot
        self._cache = None

    def __call__(self, x):
        if not self.enabled:
            return x
        if self._cache is None:
            self._cache = (torch.as_tensor(self.mean, dtype=torch.float32),
                           torch.as_tensor(np.sqrt(self.var + 1e-8), dtype=torch.float32))
        m, s = self._cache
        return torch.clamp((x - m) / s, -self.clip, self.clip)

    def state(self):
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": self.count, "enabled": self.enabled}

    def load(self, st):
        self.mean, self.var, self.count = np.array(st["mean"]), np.array(st["var"]), st["count"]
        self.enabled = st.get("enabled", True)
        self._cache = None


def mlp(inp, hidden, out, gain_last, activation=nn.ELU):
    layers, d = [], inp
    for h in hidden:
        lin = nn.Linear(d, h)
        nn.init.orthogonal_(lin.weight, math.sqrt(2))
        nn.init.zeros_(lin.bias)
        layers += [lin, activation()]
        d = h
    last = nn.Linear(d, out)
    nn.init.orthogonal_(last.weight, gain_last)
    nn.init.zeros_(last.bias)
    return nn.Sequential(*layers, last)


class ActorCritic(nn.Module):
    """Gaussian policy and a separate value network.  The action std is one parameter per action
    (init_std: a number or one per action) or, with state_std, that parameter times exp(h(obs)) where h is
    a small MLP initialized to about 0, so that the policy can explore in some states (a fallen robot)
    while it acts precisely in others (a standing one); its log is clamped to [log 0.02, log 5]."""

    def __init__(self, obs_dim, act_dim, hidden, init_std, critic_hidden=None, state_std=False):
        super().__init__()
        self.actor = mlp(obs_dim, hidden, act_dim, 0.01)
        self.critic = mlp(obs_dim, critic_hidden or hidden, 1, 1.0)
        init = torch.as_tensor(init_std, dtype=torch.float32).expand(act_dim).clone()
        self.log_std = nn.Parameter(torch.log(init))
        self.std_head = mlp(obs_dim, [64], act_dim, 0.01) if state_std else None

    def std(self, x):
        if self.std_head is None:
            return self.log_std.exp().expand(x.shape[0], -1)
        return torch.clamp(self.log_std + self.std_head(x), math.log(0.02), math.log(5.0)).exp()

    def dist(self, x):
        return torch.distributions.Normal(self.actor(x), self.std(x))

    def value(self, x):
        return self.critic(x).squeeze(-1)


def save_policy(path, model, norm, **extra):
    """policy.pt: weights, normalizer and whatever the example needs to rebuild and evaluate it."""
    torch.save(dict(model=model.state_dict(), norm=norm.state(), **extra), path)


def load_policy(path, obs_dim, act_dim, default_hidden):
    """Returns (model, norm, checkpoint dict) from a save_policy file."""
    ck = torch.load(path)
    hidden = ck.get("hidden", default_hidden)
    model = ActorCritic(obs_dim, act_dim, hidden, 1.0, ck.get("critic_hidden"), state_std=ck.get("state_std", False))
    model.load_state_dict(ck["model"])
    norm = RunningNorm(obs_dim)
    norm.load(ck["norm"])
    return model, norm, ck


# ---- rollout -----------------------------------------------------------------------------------------

class Rollout:
    """Buffers for T steps of N worlds, filled by collect()."""

    def __init__(self, T, N, obs_dim, act_dim):
        self.T, self.N = T, N
        self.obs = np.zeros((T, N, obs_dim), np.float32)
        self.act = np.zeros((T, N, act_dim), np.float32)
        self.logp = np.zeros((T, N), np.float32)
        self.val = np.zeros((T, N), np.float32)
        self.rew = np.zeros((T, N), np.float32)
        self.done = np.zeros((T, N), np.float32)
        self.wait_s = 0.0           # time spent in env.step (waiting on the server) during the last collect

    def collect(self, env, model, norm, obs, gamma, reward_scale=1.0, on_step=None, on_final=None):
        """Steps env T times with sampled actions from obs; returns the last observation (a copy).
        on_step(t, obs_before, obs_after, rew, term, trunc, info) and on_final(final_obs rows, term rows,
        info) let the caller gather its task's metrics; episode returns are gathered here (episode_returns)."""
        self.wait_s = 0.0
        self.episode_returns = []
        if getattr(self, "_ret", None) is None or self._ret.shape[0] != self.N:
            self._ret = np.zeros(self.N)
        for t in range(self.T):
            with torch.no_grad():
                x = norm(torch.as_tensor(obs))
                d = model.dist(x)
                a = d.sample()
                self.logp[t] = d.log_prob(a).sum(-1).numpy()
                self.val[t] = model.value(x).numpy()
            self.obs[t] = obs
            self.act[t] = a.numpy()
            t0 = time.perf_counter()
            nobs, rew, term, trunc, info = env.step(self.act[t])
            self.wait_s += time.perf_counter() - t0
            r = rew.astype(np.float32) * reward_scale
            if "_final_obs" in info:
                m = info["_final_obs"]
                boot = m & trunc & ~term
                if "physics_reset" in info:
                    boot &= ~info["physics_reset"]
                if boot.any():
                    with torch.no_grad():
                        vf = model.value(norm(torch.as_tensor(info["final_obs"][boot]))).numpy()
                    r[boot] += gamma * vf
                if on_final is not None:
                    on_final(info["final_obs"][m], term[m], info, m)
            self._ret += rew
            done = term | trunc
            if done.any():
                self.episode_returns.append(self._ret[done].copy())
                self._ret[done] = 0
            if on_step is not None:
                on_step(t, obs, nobs, rew, term, trunc, info)
            self.rew[t] = r
            self.done[t] = term | trunc
            obs = nobs
        self.last_obs = np.array(obs)
        return self.last_obs

    def advantages(self, model, norm, gamma, lam):
        """GAE(gamma, lambda): returns (advantages, returns), both (T, N)."""
        with torch.no_grad():
            last_v = model.value(norm(torch.as_tensor(self.last_obs))).numpy()
        T, N = self.T, self.N
        adv = np.zeros((T, N), np.float32)
        gae = np.zeros(N, np.float32)
        for t in reversed(range(T)):
            nv = last_v if t == T - 1 else self.val[t + 1]
            nonterm = 1.0 - self.done[t]
            delta = self.rew[t] + gamma * nv * nonterm - self.val[t]
            gae = delta + gamma * lam * nonterm * gae
            adv[t] = gae
        return adv, adv + self.val


# ---- update ------------------------------------------------------------------------------------------

class PPO:
    """rsl_rl-style PPO update over one Rollout."""

    def __init__(self, model, lr=1e-3, desired_kl=0.01, epochs=5, minibatches=4, clip=0.2, entropy=0.01,
                 value_coef=1.0, max_grad_norm=1.0, gamma=0.99, lam=0.95):
        self.model = model
        self.optim = torch.optim.Adam(model.parameters(), lr=lr)
        self.lr, self.desired_kl = lr, desired_kl
        self.epochs, self.minibatches, self.clip, self.entropy = epochs, minibatches, clip, entropy
        self.value_coef, self.max_grad_norm, self.gamma, self.lam = value_coef, max_grad_norm, gamma, lam

    def update(self, ro, norm):
        """One PPO update from the rollout ro (normalizer already updated); returns a dict of statistics."""
        model = self.model
        adv, ret = ro.advantages(model, norm, self.gamma, self.lam)
        B = ro.T * ro.N
        od, ad = ro.obs.shape[-1], ro.act.shape[-1]
        with torch.no_grad():
            b_obs = norm(torch.as_tensor(ro.obs.reshape(B, od)))
            b_mu_old = model.actor(b_obs)
            b_std_old = model.std(b_obs)
        b_act = torch.as_tensor(ro.act.reshape(B, ad))
        b_logp = torch.as_tensor(ro.logp.reshape(B))
        b_val = torch.as_tensor(ro.val.reshape(B))
        b_adv = torch.as_tensor(adv.reshape(B))
        b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)     # over the whole batch, as rsl_rl
        b_ret = torch.as_tensor(ret.reshape(B))
        mb = B // self.minibatches
        kls, vls, sls = [], [], []
        for _ in range(self.epochs):
            perm = torch.randperm(B)
            for k in range(self.minibatches):
                idx = perm[k * mb:(k + 1) * mb]
                x = b_obs[idx]
                mu = model.actor(x)
                std = model.std(x)
                d = torch.distributions.Normal(mu, std)
                if self.desired_kl > 0:
                    # exact KL(old || new) of the Gaussians, before the step (as rsl_rl)
                    with torch.no_grad():
                        so = b_std_old[idx]
                        kl = (torch.log(std / so) + (so ** 2 + (b_mu_old[idx] - mu) ** 2) / (2.0 * std ** 2)
                              - 0.5).sum(-1).mean().item()
                    kls.append(kl)
                    if kl > 2.0 * self.desired_kl:
                        self.lr = max(1e-5, self.lr / 1.5)
                    elif 0.0 < kl < self.desired_kl / 2.0:
                        self.lr = min(1e-2, self.lr * 1.5)
                    for g in self.optim.param_groups:
                        g["lr"] = self.lr
                logp = d.log_prob(b_act[idx]).sum(-1)
                ratio = torch.exp(logp - b_logp[idx])
                a_ = b_adv[idx]
                surr = torch.max(-a_ * ratio, -a_ * torch.clamp(ratio, 1 - self.clip, 1 + self.clip)).mean()
                v = model.value(x)
                v_clip = b_val[idx] + torch.clamp(v - b_val[idx], -self.clip, self.clip)
                vl = torch.max((v - b_ret[idx]) ** 2, (v_clip - b_ret[idx]) ** 2).mean()
                ent = d.entropy().sum(-1).mean()
                loss = surr + self.value_coef * vl - self.entropy * ent
                self.optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), self.max_grad_norm)
                self.optim.step()
                vls.append(vl.item())
                sls.append(surr.item())
            # rsl_rl recomputes the old distribution only once per iteration; so do we (b_mu_old above)
        return {"lr": self.lr, "kl": float(np.mean(kls)) if kls else float("nan"), "value_loss": float(np.mean(vls)),
                "surrogate": float(np.mean(sls)), "std": float(model.std(b_obs).mean().item())}


def desync(env, obs, seed, steps=None):
    """Spreads the worlds' episode phases (as legged_gym's random initial episode length): world i is
    stepped k_i ~ U[0, steps) times with zero actions (steps: max_episode_steps by default), through subset
    steps (world_ids), so that episodes do not all end in the same iteration.  Returns every world's
    current observation."""
    rng = np.random.default_rng(seed + 12345)
    k = rng.integers(0, steps or env.max_episode_steps, size=env.num_envs)
    cur = np.array(obs)
    for t in range(int(k.max())):
        ids = np.flatnonzero(k > t)
        env.step_async(np.zeros((ids.size, env.act_dim), np.float32), world_ids=ids)
        o, *_ = env.step_wait()
        cur[ids] = o
    return cur


def parse_config(items):
    """--config KEY=VALUE items -> {key: float, or the name of a named choice (e.g. actuator=pd)}."""
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            out[k.strip()] = v.strip()
    return out


def recorded_config(session, keys, overrides):
    """What a checkpoint records as its training configuration: the effective values, in the training session
    (a herd.make_vec env: .config, .config_names), of `keys` (the keys whose defaults have changed, so that the
    checkpoint stays evaluable on the configuration it learned), then the overrides given."""
    out = {k: session.config_names.get(k, session.config[k]) for k in keys if k in session.config}
    out.update(overrides)
    return out


def checkpoint_config(ck_config, trained_before, spec_keys, overrides):
    """The configuration to evaluate a checkpoint on: for each key of `trained_before` (keys whose defaults
    changed after checkpoints that do not record them were trained, with the values those were trained on) that
    the checkpoint does not record and the server's task lists, that value; then the checkpoint's recorded
    configuration; then the command line's overrides."""
    out = {k: v for k, v in trained_before.items() if k in spec_keys and k not in ck_config}
    out.update(ck_config)
    out.update(overrides)
    return out


def add_ppo_args(ap, entropy=0.01, init_std=1.0):
    """The PPO, seed and env-configuration options both examples take."""
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--desired-kl", type=float, default=0.01, help="KL-adaptive learning rate target (0: fixed lr)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--minibatches", type=int, default=4)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--lam", type=float, default=0.95)
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--entropy", type=float, default=entropy)
    ap.add_argument("--init-std", type=float, default=init_std, help="initial action noise std")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", action="append", metavar="KEY=VALUE",
                    help="env configuration override (repeatable), e.g. --config obs_noise=0")
    ap.add_argument("--no-desync", action="store_true", help="do not spread the episode phases at the start")


class CpuClock:
    """CPU seconds used by this process (all threads) and by a local server process (pid; None: remote),
    to tell how much of the machine a run really had when other work shares it."""

    def __init__(self, server_pid=None):
        self.server_pid = server_pid

    def read(self):
        srv = 0.0
        if self.server_pid is not None:
            try:
                with open("/proc/%d/stat" % self.server_pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                srv = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime
            except (OSError, ValueError, IndexError):
                srv = float("nan")
        return time.process_time(), srv


def with_server(address, server_threads, fn):
    """fn(address, cpu_clock) against `address`, or (address None) against a herd-server started here
    (herd.local.LocalServer, `server_threads` threads, 0: all cores) and stopped afterwards, SIGTERM included."""
    from herd.local import LocalServer
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # run the finally block: stop our server
    server = None
    if address is None:
        server = LocalServer(threads=server_threads)
        address = server.address
    try:
        return fn(address, CpuClock(server.proc.pid if server is not None else None))
    finally:
        if server is not None:
            server.stop()

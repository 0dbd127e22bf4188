#!/usr/bin/python3
"""CleanRL-style PPO (continuous actions) on herd through the plain Gymnasium vector API.

    /usr/bin/python3 examples/cleanrl_ppo.py                      # starts build/herd-server, stand task
    /usr/bin/python3 examples/cleanrl_ppo.py --address tcp://host:5555 --env-id herd/anymal_c-walk-v0
    /usr/bin/python3 examples/cleanrl_ppo.py --quick              # 2 short iterations (CI)

Nothing herd-specific but the id: ``gymnasium.make_vec("herd/<task>-v0", num_envs=N)`` (``import herd``
registers the ids), Gymnasium's vector wrappers (RecordEpisodeStatistics, ClipAction, NormalizeObservation,
NormalizeReward) and one PPO file in the manner of CleanRL's ppo_continuous_action.py (written anew).
Autoreset is Gymnasium's default NEXT_STEP: the step after an episode's last one only resets the world
(action ignored, reward 0), so those transitions are left out of the loss, and the last observation is at
hand for bootstrapping on truncation.  Prints one JSON line per iteration.
Needs torch and gymnasium, and the herd package (`pip install -e clients/python` or PYTHONPATH=clients/python).
"""
import argparse
import json
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from gymnasium.wrappers import vector as vw

import herd  # noqa: F401  (registers herd/<task>-v0)
from herd.local import LocalServer


def layer(n_in, n_out, std=np.sqrt(2)):
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.zeros_(lin.bias)
    return lin


class Agent(nn.Module):
    def __init__(self, n_obs, n_act, hidden=64):
        super().__init__()
        self.critic = nn.Sequential(layer(n_obs, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                    layer(hidden, 1, 1.0))
        self.actor_mean = nn.Sequential(layer(n_obs, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                        layer(hidden, n_act, 0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, n_act))

    def value(self, x):
        return self.critic(x).squeeze(-1)

    def act(self, x, action=None):
        mean = self.actor_mean(x)
        dist = torch.distributions.Normal(mean, self.actor_logstd.expand_as(mean).exp())
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(x)


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env-id", default="herd/anymal_c-stand-v0")
    ap.add_argument("--address", default=None, help="herd server(s) (default: start build/herd-server)")
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--num-steps", type=int, default=32, help="steps per env per iteration")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--gae-lambda", type=float, default=0.95)
    ap.add_argument("--minibatches", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--ent-coef", type=float, default=0.0)
    ap.add_argument("--vf-coef", type=float, default=0.5)
    ap.add_argument("--max-grad-norm", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="64 envs, 8 steps, 2 iterations")
    a = ap.parse_args()
    if a.quick:
        a.num_envs, a.num_steps, a.iterations = 64, 8, 2
    return a


def train(a, address):
    torch.manual_seed(a.seed)
    envs = gym.make_vec(a.env_id, num_envs=a.num_envs, address=address, seed=a.seed)
    envs = vw.RecordEpisodeStatistics(envs)
    envs = vw.ClipAction(envs)
    envs = vw.NormalizeObservation(envs)
    envs = vw.NormalizeReward(envs, gamma=a.gamma)
    N, T = a.num_envs, a.num_steps
    n_obs, n_act = envs.single_observation_space.shape[0], envs.single_action_space.shape[0]
    agent = Agent(n_obs, n_act)
    optim = torch.optim.Adam(agent.parameters(), lr=a.lr, eps=1e-5)
    obs = torch.zeros(T, N, n_obs)
    actions = torch.zeros(T, N, n_act)
    logps, rewards, values = torch.zeros(T, N), torch.zeros(T, N), torch.zeros(T, N)
    dones, valid = torch.zeros(T, N), torch.zeros(T, N)
    next_obs = torch.as_tensor(envs.reset(seed=a.seed)[0], dtype=torch.float32)
    next_done = torch.zeros(N)
    ended_before = torch.zeros(N, dtype=torch.bool)       # this step will only reset those worlds
    t0, steps = time.perf_counter(), 0
    try:
        for it in range(1, a.iterations + 1):
            returns_seen, lengths_seen = [], []
            for t in range(T):
                obs[t], dones[t], valid[t] = next_obs, next_done, (~ended_before).float()
                with torch.no_grad():
                    act, logp, _, val = agent.act(next_obs)
                actions[t], logps[t], values[t] = act, logp, val
                o, r, term, trunc, infos = envs.step(act.numpy())
                r = torch.as_tensor(r, dtype=torch.float32)
                next_obs = torch.as_tensor(o, dtype=torch.float32)
                timeout = torch.as_tensor(trunc & ~term)
                if timeout.any():       # NEXT_STEP: next_obs is the last observation: bootstrap from it
                    with torch.no_grad():
                        r[timeout] += a.gamma * agent.value(next_obs[timeout])
                rewards[t] = r
                ended_before = torch.as_tensor(term | trunc)
                next_done = ended_before.float()
                if "episode" in infos:
                    m = infos["_episode"]
                    returns_seen += infos["episode"]["r"][m].tolist()
                    lengths_seen += infos["episode"]["l"][m].tolist()
            steps += N * T
            with torch.no_grad():           # GAE
                adv = torch.zeros(T, N)
                last = torch.zeros(N)
                nxt_value = agent.value(next_obs)
                for t in reversed(range(T)):
                    nonterm = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                    v_next = nxt_value if t == T - 1 else values[t + 1]
                    delta = rewards[t] + a.gamma * v_next * nonterm - values[t]
                    last = delta + a.gamma * a.gae_lambda * nonterm * last
                    adv[t] = last
                ret = adv + values
            keep = valid.reshape(-1) > 0            # drop the reset-only transitions
            b_obs, b_act = obs.reshape(-1, n_obs)[keep], actions.reshape(-1, n_act)[keep]
            b_logp, b_adv, b_ret = logps.reshape(-1)[keep], adv.reshape(-1)[keep], ret.reshape(-1)[keep]
            B = b_obs.shape[0]
            mb = max(1, B // a.minibatches)
            for _ in range(a.epochs):
                perm = torch.randperm(B)
                for k in range(0, B, mb):
                    idx = perm[k:k + mb]
                    _, logp, ent, v = agent.act(b_obs[idx], b_act[idx])
                    ratio = (logp - b_logp[idx]).exp()
                    ad = b_adv[idx]
                    ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                    pg = torch.max(-ad * ratio, -ad * ratio.clamp(1 - a.clip, 1 + a.clip)).mean()
                    loss = pg + a.vf_coef * 0.5 * ((v - b_ret[idx]) ** 2).mean() - a.ent_coef * ent.mean()
                    optim.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), a.max_grad_norm)
                    optim.step()
            print(json.dumps({"example": "cleanrl_ppo", "iter": it, "env_steps": steps,
                              "steps_per_s": round(steps / (time.perf_counter() - t0)),
                              "episodes": len(returns_seen),
                              "mean_return": round(float(np.mean(returns_seen)), 4) if returns_seen else None,
                              "mean_length": round(float(np.mean(lengths_seen)), 1) if lengths_seen else None,
                              "loss": round(loss.item(), 4)}), flush=True)
    finally:
        envs.close()
    return 0


def main():
    a = parse()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # run the finally blocks: stop our server
    server = None if a.address else LocalServer()
    try:
        return train(a, a.address or server.address)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())

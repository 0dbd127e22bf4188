#!/usr/bin/python3
"""Throughput of herd through the Python client with a random policy: prints steps/s.

    /usr/bin/python3 examples/random_policy.py                         # starts build/herd-server, 4096 worlds
    /usr/bin/python3 examples/random_policy.py --address tcp://host:5555 --env anymal_c-stand
    /usr/bin/python3 examples/random_policy.py --batches 4             # 4 batches in flight (send / recv)

Actions are uniform in [-1, 1] (joint targets within +-0.5 rad of the default pose; the action space's own
bounds are the env's +-100 clip, far outside what a policy outputs).  The loop is what a trainer does:
env.step(actions) and reading obs / rewards / dones / infos.  With --batches B > 1 the worlds are split
into B groups that each keep one step in flight (EnvPool-style send / recv), so the client prepares a
group's next actions while the server simulates the others.

Needs the herd package: `pip install -e clients/python`, or PYTHONPATH=clients/python.
"""
import argparse
import json
import signal
import sys
import time

import numpy as np

import herd
from herd.local import LocalServer


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default=None, help="server(s), comma-separated (default: start one)")
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batches", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="threads of the started server (0: all cores)")
    ap.add_argument("--transport", choices=["tcp", "ipc"], default="tcp")
    ap.add_argument("--seed", type=int, default=0)
    opt = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # run the finally blocks: stop our server
    server = None
    address = opt.address
    if address is None:
        server = LocalServer(threads=opt.threads, transport=opt.transport)
        address = server.address
    try:
        rng = np.random.default_rng(opt.seed)
        with herd.make_vec(opt.env, opt.num_envs, address=address, seed=opt.seed, timeout=120,
                           episode_statistics=True) as env:
            n, ad = env.num_envs, env.act_dim
            env.reset()
            episodes, ret_sum = 0, 0.0
            t0 = time.perf_counter()
            if opt.batches <= 1:
                for _ in range(opt.steps):
                    a = rng.uniform(-1, 1, size=(n, ad)).astype(np.float32)
                    obs, rew, term, trunc, infos = env.step(a)
                    if "episode" in infos:
                        episodes += int(infos["_episode"].sum())
                        ret_sum += float(infos["episode"]["r"][infos["_episode"]].sum())
            else:
                groups = np.array_split(np.arange(n), opt.batches)
                left = {int(g[0]): opt.steps for g in groups}      # steps still to send, per group
                for g in groups:
                    env.send(rng.uniform(-1, 1, size=(len(g), ad)).astype(np.float32), g)
                    left[int(g[0])] -= 1
                active = len(groups)
                while active:
                    obs, rew, term, trunc, infos = env.recv()
                    ids = infos["env_id"]
                    if "episode" in infos:
                        episodes += int(infos["_episode"].sum())
                        ret_sum += float(infos["episode"]["r"][infos["_episode"]].sum())
                    if left[int(ids[0])] > 0:
                        env.send(rng.uniform(-1, 1, size=(len(ids), ad)).astype(np.float32), ids)
                        left[int(ids[0])] -= 1
                    else:
                        active -= 1
            dt = time.perf_counter() - t0
            rate = n * opt.steps / dt
            print(json.dumps({"example": "random_policy", "env": opt.env, "num_envs": n, "steps": opt.steps,
                              "batches": opt.batches, "servers": env.addresses, "steps_per_s": round(rate, 1),
                              "episodes_ended": episodes,
                              "mean_episode_return": round(ret_sum / episodes, 4) if episodes else None}))
            print("random policy: %s, %d worlds x %d steps in %.2f s: %.0f steps/s"
                  % (opt.env, n, opt.steps, dt, rate), file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

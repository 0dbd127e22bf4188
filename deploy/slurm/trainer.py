#!/usr/bin/env python3
"""Example trainer for deploy/slurm/herd.sbatch: spreads worlds over every herd-server of the job.

    python3 deploy/slurm/trainer.py --address tcp://node1:5555,tcp://node2:5555 --worlds 16384 --steps 500

It stands in for your training loop: random actions instead of a policy, and a throughput line every
--report steps.  The address list is the Python client's (herd.make_vec(address=[...])): worlds are split
in contiguous blocks over the servers; each server's worlds are seeded by their global index, so results
do not depend on how many servers there are.  Exit status: 0; 3 when a server fails (the message names
its endpoint); 2 on bad arguments.

Needs the Python client (pyzmq, msgpack, numpy): `pip install clients/python`, or PYTHONPATH pointing at
clients/python (herd.sbatch sets it: $HERD_PYTHONPATH, default the submit directory's clients/python).
"""
import argparse
import sys
import time

import numpy as np

import herd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--address", required=True, help="comma-separated endpoints, or a DNS name with several addresses")
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--worlds", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for any server's reply")
    ap.add_argument("--report", type=int, default=50, help="print throughput every N steps")
    a = ap.parse_args()
    if a.worlds < 1 or a.steps < 0 or a.timeout <= 0:
        ap.error("need --worlds >= 1, --steps >= 0, --timeout > 0")

    try:
        with herd.make_vec(a.env, a.worlds, address=a.address, seed=a.seed, timeout=a.timeout,
                           episode_statistics=True) as envs:
            for addr, session, first, count in envs.sessions:
                print("trainer: worlds [%d, %d) on %s (session %d)" % (first, first + count, addr, session), flush=True)
            rng = np.random.default_rng(a.seed)
            obs, _ = envs.reset()
            t0 = time.perf_counter()
            t_last, episodes, ret_sum = t0, 0, 0.0
            for k in range(1, a.steps + 1):
                actions = rng.uniform(-1, 1, size=(a.worlds, envs.act_dim)).astype(np.float32)  # your policy here
                obs, rew, term, trunc, info = envs.step(actions)
                if "episode" in info:
                    done = info["_episode"]
                    episodes += int(done.sum())
                    ret_sum += float(info["episode"]["r"][done].sum())
                if k % a.report == 0 or k == a.steps:
                    now = time.perf_counter()
                    n = a.report if k % a.report == 0 else k % a.report
                    print("trainer: step %d  %.0f world-steps/s  episodes %d  mean return %.3f"
                          % (k, n * a.worlds / (now - t_last), episodes, ret_sum / max(episodes, 1)), flush=True)
                    t_last = now
            dt = time.perf_counter() - t0
            print("trainer: done, %d steps x %d worlds over %d servers in %.1f s (%.0f world-steps/s)"
                  % (a.steps, a.worlds, len(envs.sessions), dt, a.steps * a.worlds / max(dt, 1e-9)), flush=True)
    except herd.HerdError as e:
        # e.address names the server that failed (a TIMEOUT: it died or is unreachable)
        print("trainer: server %s failed: %s" % (e.address, e), file=sys.stderr, flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Time of rsl_rl's PPO update on this machine, per thread setting: what examples/train.py's --update-threads and
OPENBLAS_NUM_THREADS choose between.

    PYTHONPATH=clients/python:examples /usr/bin/python3 bench/ppo_update.py [--repeats 5] [--threads 1,2] [--blas 1,2]

The update is rsl_rl 2.x's own PPO.update (the installed rsl_rl, else the copy in ../shared/third_party) on a
rollout of the walk task's shapes and settings (examples/herd_tasks.py: 2048 worlds x 24 steps, 48 observations,
12 actions, actor and critic [128, 64, 32] ELU, 5 epochs x 4 minibatches), filled with random observations and
rewards: the cost of an update does not depend on the values.  Each setting (torch intra-op threads x OpenBLAS
threads, set through openblas_set_num_threads where the BLAS is OpenBLAS) runs in its own process, one warm-up
update and then --repeats timed ones.  One JSON line per setting:
  {"bench": "ppo_update", "torch_threads", "blas_threads", "samples", "update_s" (median wall seconds),
   "update_cpu_s" (median process CPU seconds), "min_s", "max_s", "repeats", "ratio" (update_s over the
   1-thread, 1-BLAS-thread setting's, measured in the same run)}
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CHILD = r"""
import ctypes, json, os, sys, time
sys.path.insert(0, %(examples)r)
torch_threads, blas_threads, repeats = %(tt)d, %(bt)d, %(repeats)d
try:
    ctypes.CDLL("libblas.so.3").openblas_set_num_threads(blas_threads)
    blas = "openblas"
except (OSError, AttributeError):
    blas = "other"
import torch
import herd_tasks
herd_tasks.import_rsl_rl(2)
from rsl_rl.algorithms import PPO
from rsl_rl.modules import ActorCritic
torch.set_num_threads(torch_threads)
task = herd_tasks.TASKS["anymal_c-walk"]
cfg = task.runner_cfg(task.hidden, task.init_std, 1, 1, version=2)
alg = {k: v for k, v in cfg["algorithm"].items() if k != "class_name"}
N, T, O, A = task.num_envs, cfg["num_steps_per_env"], 48, 12
torch.manual_seed(0)
policy = ActorCritic(O, O, A, task.hidden, task.hidden, "elu", init_noise_std=task.init_std)
ppo = PPO(policy, device="cpu", **alg)
ppo.init_storage("rl", N, T, [O], [O], [A])
times = []
for r in range(repeats + 1):
    obs = torch.randn(N, O)
    for t in range(T):
        with torch.inference_mode():
            ppo.act(obs, obs)
        obs = torch.randn(N, O)
        ppo.process_env_step(0.1 * torch.randn(N), torch.zeros(N), {"time_outs": torch.zeros(N)})
    with torch.inference_mode():
        ppo.compute_returns(obs)
    t0, c0 = time.perf_counter(), time.process_time()
    ppo.update()
    if r:
        times.append((time.perf_counter() - t0, time.process_time() - c0))
print(json.dumps({"blas": blas, "samples": N * T, "times": times}))
"""


def one(tt, bt, repeats):
    code = CHILD % {"examples": os.path.join(REPO, "examples"), "tt": tt, "bt": bt, "repeats": repeats}
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(bt), OMP_NUM_THREADS=str(tt),
               PYTHONPATH=os.pathsep.join([os.path.join(REPO, "clients", "python")] +
                                          [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        sys.exit("bench/ppo_update.py: torch %d / BLAS %d threads failed:\n%s" % (tt, bt, out.stderr[-2000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="torch intra-op thread counts")
    ap.add_argument("--blas", default="1,2", help="OpenBLAS thread counts")
    opt = ap.parse_args(argv)
    settings = [(1, 1)] + [(int(t), int(b)) for t in opt.threads.split(",") for b in opt.blas.split(",")
                           if (int(t), int(b)) != (1, 1)]
    base = None
    for tt, bt in settings:
        r = one(tt, bt, opt.repeats)
        wall = [w for w, _ in r["times"]]
        med = statistics.median(wall)
        base = base or med
        print(json.dumps({"bench": "ppo_update", "torch_threads": tt, "blas_threads": bt, "blas": r["blas"],
                          "samples": r["samples"], "update_s": round(med, 3),
                          "update_cpu_s": round(statistics.median(c for _, c in r["times"]), 3),
                          "min_s": round(min(wall), 3), "max_s": round(max(wall), 3), "repeats": len(wall),
                          "ratio": round(med / base, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

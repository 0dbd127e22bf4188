#!/usr/bin/python3
"""Train a herd task with rsl_rl's OnPolicyRunner, legged_gym-style.

    PYTHONPATH=clients/python /usr/bin/python3 examples/train.py --task anymal_c-rough
    PYTHONPATH=clients/python /usr/bin/python3 examples/train.py --task anymal_c-walk --num_envs 2048 --minutes 20
    PYTHONPATH=clients/python /usr/bin/python3 examples/train.py --task anymal_c-rough --resume            # last run
    PYTHONPATH=clients/python /usr/bin/python3 examples/train.py --task anymal_c-rough --resume --load_run Nov27_16-20-00 --checkpoint 300
    PYTHONPATH=clients/python /usr/bin/python3 examples/train.py --task anymal_c-walk --quick                # CI smoke run

The trainer is rsl_rl's own OnPolicyRunner (2.x, the line Isaac Lab uses; 1.0.2, legged_gym's, with
--rsl_rl 1) over herd.adapters.rsl_rl, so checkpoints are rsl_rl's and rsl_rl loads them.  The flags are
legged_gym's (--task, --resume, --load_run, --checkpoint, --num_envs, --max_iterations, --seed,
--experiment_name, --run_name) plus --minutes (a wall-clock budget: training stops at the first iteration that
ends past it, and the last model is saved) and --config KEY=VALUE (task configuration overrides).

Runs go to logs/<experiment_name>/<date>_<run_name>/ (legged_gym's layout): model_<iter>.pt every
save_interval iterations and at the end, log.csv (one row per iteration), curve.png (the learning curve),
config.json (task, runner configuration and the task configuration the checkpoint was trained on) and
summary.json (wall time, env steps, the time split between waiting on the server and the learner).
TensorBoard event files where tensorboard is installed (rsl_rl's writer), else the CSV alone.

examples/play.py evaluates, views, records and exports (TorchScript, ONNX) a run's checkpoint.
"""
import argparse
import csv
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import herd  # noqa: E402,F401
except ImportError:  # pragma: no cover
    sys.exit("examples/train.py: the herd package is not importable: run with PYTHONPATH=clients/python")

import herd_tasks  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="anymal_c-walk", choices=sorted(herd_tasks.TASKS))
    ap.add_argument("--num_envs", type=int, default=None, help="worlds (default: the task's training default)")
    ap.add_argument("--max_iterations", type=int, default=None)
    ap.add_argument("--minutes", type=float, default=None, help="wall-clock budget of the training (minutes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--experiment_name", default=None, help="default: the task name")
    ap.add_argument("--run_name", default="")
    ap.add_argument("--logdir", default=os.path.join(REPO, "logs"), help="root of the experiments' run folders")
    ap.add_argument("--resume", action="store_true", help="continue a run (--load_run, --checkpoint)")
    ap.add_argument("--load_run", default="-1", help="run folder to resume (-1: the newest)")
    ap.add_argument("--checkpoint", type=int, default=-1, help="iteration to resume from (-1: the last saved)")
    ap.add_argument("--init_from", metavar="CHECKPOINT",
                    help="start from another task's rsl_rl checkpoint whose observation is a prefix of this task's "
                         "(e.g. an anymal_c-walk model for anymal_c-rough: the height scan's weights start at 0)")
    ap.add_argument("--rsl_rl", type=int, choices=[1, 2], default=2, help="rsl_rl major version to train with")
    ap.add_argument("--address", default=None, help="herd server(s), comma-separated (default: start one)")
    ap.add_argument("--server-threads", type=int, default=0, help="threads of the started server (0: all cores)")
    ap.add_argument("--update-threads", type=int, default=1,
                    help="torch threads for the PPO update (1: on a 2-vCPU machine a 20-minute walk run with 2 "
                         "updated more slowly; bench/ppo_update.py times the update alone for each torch x "
                         "OpenBLAS setting)")
    ap.add_argument("--config", action="append", metavar="KEY=VALUE", help="task configuration override")
    ap.add_argument("--hidden", default=None, help="actor and critic hidden sizes, e.g. 512,256,128")
    ap.add_argument("--init-std", type=float, default=None, help="initial action noise std")
    ap.add_argument("--no-desync", action="store_true", help="do not spread the episode phases at the start")
    ap.add_argument("--quick", action="store_true", help="3 iterations of 64 worlds (CI smoke test)")
    opt = ap.parse_args(argv)
    if opt.quick:
        opt.num_envs, opt.max_iterations, opt.no_desync = opt.num_envs or 64, opt.max_iterations or 3, True
    return opt


def main(argv=None):
    opt = parse_args(argv)
    torch = herd_tasks.need_torch("examples/train.py", opt.quick)
    herd_tasks.import_rsl_rl(opt.rsl_rl)
    task = herd_tasks.TASKS[opt.task]
    config = task.config(herd_tasks.parse_config(opt.config))
    torch.set_num_threads(1)            # rollouts: the server's workers use the cores; updates: --update-threads
    return herd_tasks.with_server(opt.address, opt.server_threads,
                                  lambda address, cpu: train(opt, torch, task, config, address, cpu))


def run_folder(opt, name):
    root = os.path.join(opt.logdir, name)
    if opt.resume:
        return herd_tasks.find_run(root, opt.load_run)
    stamp = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join(root, stamp + ("_" + opt.run_name if opt.run_name else ""))


def train(opt, torch, task, config, address, cpu):
    import herd_runner
    t_start = time.perf_counter()
    name = opt.experiment_name or task.name
    resume_from = None
    if opt.resume:
        resume_dir = run_folder(opt, name)
        resume_from = herd_tasks.find_checkpoint(resume_dir, opt.checkpoint)
        with open(os.path.join(resume_dir, "config.json")) as f:
            saved = json.load(f)
        config = dict(saved["task_config"], **herd_tasks.parse_config(opt.config))
    log_dir = run_folder(opt, name) if not opt.resume else os.path.dirname(resume_from)
    os.makedirs(log_dir, exist_ok=True)
    num_envs = opt.num_envs or task.num_envs
    hidden = [int(x) for x in opt.hidden.split(",")] if opt.hidden else list(task.hidden)
    train_cfg = task.runner_cfg(hidden, opt.init_std, opt.max_iterations, opt.seed, version=opt.rsl_rl)
    env = herd_tasks.make_rsl_rl_env(opt.rsl_rl, task, num_envs, address, opt.seed, config)
    if not opt.no_desync:
        herd_tasks.desync(env, opt.seed)
    recorded = herd_tasks.recorded_config(env, config)
    with open(os.path.join(log_dir, "config.json"), "w") as f:
        json.dump({"task": task.name, "rsl_rl": opt.rsl_rl, "init_from": opt.init_from, "num_envs": num_envs,
                   "hidden": hidden,
                   "task_config": recorded, "runner": train_cfg, "seed": opt.seed,
                   "command": " ".join(sys.argv)}, f, indent=1)
    print("train: %s x %d worlds on %s; obs %d, critic %s, act %d; actor/critic %s; rsl_rl %d; run %s"
          % (task.name, num_envs, address, env.num_obs, env.num_critic_obs or "= obs", env.num_actions, hidden,
             opt.rsl_rl, log_dir), flush=True)
    torch.manual_seed(opt.seed)
    runner = herd_runner.make_runner(opt.rsl_rl, env, train_cfg, log_dir, task, opt.update_threads,
                                     budget_s=None if opt.minutes is None else opt.minutes * 60.0)
    if resume_from:
        runner.load(resume_from)
        print("train: resumed from %s (iteration %d)" % (resume_from, runner.current_learning_iteration), flush=True)
        if opt.rsl_rl == 2:
            # 2.x records the index of the checkpoint's last iteration and starts a loaded runner at that index:
            # the resumed run would redo index N and overwrite model_N.pt.  1.0.2 records the count done.
            runner.current_learning_iteration += 1
    elif opt.init_from:
        policy = runner.alg.policy if hasattr(runner.alg, "policy") else runner.alg.actor_critic
        for line in herd_tasks.init_from(policy, opt.init_from):
            print("train: --init_from: " + line, flush=True)
    cpu0 = cpu.read()
    t_train0 = time.perf_counter()
    iterations = train_cfg["max_iterations"] if opt.max_iterations is None else opt.max_iterations
    runner.train(iterations)
    cpu1 = cpu.read()
    wall = time.perf_counter() - t_train0
    summary = runner.summary()
    summary.update({"task": task.name, "num_envs": num_envs, "train_wall_s": round(wall, 1),
                    "setup_s": round(t_train0 - t_start, 1), "cpu_s_learner": round(cpu1[0] - cpu0[0], 1),
                    "cpu_s_server": round(cpu1[1] - cpu0[1], 1),
                    "machine_share": round((cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / (wall * os.cpu_count()), 3),
                    "checkpoint": runner.last_checkpoint, "config": recorded, "resumed_from": resume_from,
                    "init_from": opt.init_from})
    with open(os.path.join(log_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    runner.save_curve()
    env.close()
    print("train: %d iterations, %.1f M env steps in %.1f min (%.0f steps/s; server %.0f %%, inference %.0f %%, "
          "update %.0f %%); last checkpoint %s"
          % (summary["iterations"], summary["env_steps"] / 1e6, wall / 60, summary["env_steps_per_s"],
             100 * summary["share_waiting_on_server"], 100 * summary["share_policy_inference"],
             100 * summary["share_learning_update"], runner.last_checkpoint), flush=True)
    print(json.dumps({"bench": "train", "task": task.name, "iterations": summary["iterations"],
                      "env_steps": summary["env_steps"], "train_wall_s": summary["train_wall_s"],
                      "checkpoint": os.path.relpath(runner.last_checkpoint, REPO)
                      if runner.last_checkpoint else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

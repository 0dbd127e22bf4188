#!/usr/bin/python3
"""ANYmal C on rough terrain (anymal_c-rough: legged_gym's rough task, its terrain curriculum, height scan and a
privileged critic) trained through herd with rsl_rl's OnPolicyRunner, and the committed policy's evaluation.

    PYTHONPATH=clients/python /usr/bin/python3 examples/train_rough.py --eval-only     # examples/rough_policy.pt vs examples/rough_eval.json
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_rough.py                 # train (20 + 70 min), package, evaluate
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_rough.py --from-run logs/anymal_c-rough/Nov27_16-20-00_rough2
    PYTHONPATH=clients/python /usr/bin/python3 examples/train_rough.py --quick         # CI smoke run (examples/out/)

Training is two examples/train.py runs with this machine's settings (2 cores: --num_envs 2048, --server-threads 1,
--update-threads 1): first anymal_c-walk for --walk-minutes (20) on flat ground, then anymal_c-rough for --minutes
(70) started from the walk run's last checkpoint (--init_from: rough's observation is walk's 48 values and the
height scan, whose weights start at 0, so the rough run starts from a policy that walks and learns to use the
scan).  Trained from scratch on this machine, the rough curriculum's mean level only fell in the first 80
iterations (2.45 to 0.97): a policy that cannot walk yet is moved down at every reset.  --walk-minutes 0 trains
rough alone.  Every other train.py flag is accepted and passed on to the rough run; the runs go to
logs/anymal_c-walk/ and logs/anymal_c-rough/<date>_<run>/.  Its last checkpoint is then packaged (--from-run does only this and
what follows, for a run trained earlier) as OUT/rough_policy.pt: the rsl_rl checkpoint without its optimizer
state, with the run's record (config.json: task configuration, network sizes, rsl_rl version) embedded under
infos["herd"], so that examples/play.py and rsl_rl's OnPolicyRunner.load(path, load_optimizer=False) read it
alone; and evaluated into OUT/rough_eval.json.

Evaluation (examples/play.py's): the policy mean on --episodes fresh worlds per level range (default 1,000 on
levels 0-4 and 1,000 on 5-9, held-out seeds), the curriculum frozen (curriculum=0, terrain_level_min/max),
one 20 s episode each, obs_noise 0; one JSON line ("bench": "rough_eval") per terrain type and range and one
per range with "terrain": "all" (lin_vel_error m/s, yaw_rate_error rad/s, no_fall_fraction, episodes), then
the same for the untrained actor (--untrained-episodes per range).  Target on levels 0-4: lin_vel_error <= 0.35,
no_fall_fraction >= 0.90.

examples/rough_eval.json: {"task", "policy_file", "train_wall_s", "mean_terrain_level" (the training's last
logged mean level), "training" (the run's summary), "target", "episodes", "untrained_episodes", "levels",
"lines" (every JSON line printed, trained then untrained), "eval_wall_s", "command"}.  --eval-only compares its
lines with the file's and exits 1 when a figure differs (--update rewrites the figures instead, keeping the
training's keys).
"""
import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import herd_tasks  # noqa: E402
import play  # noqa: E402

TASK = "anymal_c-rough"
# the rough training's settings on this 2-core machine (train.py's flags): the server and the learner one core each
TRAIN_DEFAULTS = {"--minutes": "70", "--max_iterations": "100000", "--server-threads": "1", "--update-threads": "1"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-only", action="store_true", help="evaluate OUT/rough_policy.pt, compare OUT/rough_eval.json")
    ap.add_argument("--update", action="store_true", help="--eval-only: rewrite OUT/rough_eval.json's figures")
    ap.add_argument("--from-run", metavar="RUN_DIR", help="package and evaluate a run's checkpoint (no training)")
    ap.add_argument("--checkpoint", type=int, default=-1, help="--from-run: iteration (-1: the last saved)")
    ap.add_argument("--policy", default=None, help="--eval-only: policy file (default OUT/rough_policy.pt)")
    ap.add_argument("--out", default=HERE, help="folder of rough_policy.pt and rough_eval.json")
    ap.add_argument("--episodes", type=int, default=1000, help="held-out episodes per level range")
    ap.add_argument("--untrained-episodes", type=int, default=None, help="per level range (default: --episodes)")
    ap.add_argument("--levels", default="0-4,5-9")
    ap.add_argument("--config", action="append", metavar="KEY=VALUE",
                    help="evaluation: task configuration override (e.g. episode_seconds=2 for a smoke test)")
    ap.add_argument("--address", default=None, help="herd server(s) for the evaluation (default: start one)")
    ap.add_argument("--server-threads", type=int, default=0, help="threads of the evaluation's server (0: all cores)")
    ap.add_argument("--walk-minutes", type=float, default=20.0,
                    help="minutes of the anymal_c-walk run the rough run starts from (0: rough from scratch)")
    ap.add_argument("--quick", action="store_true", help="train.py --quick, tiny evaluation, OUT examples/out/...")
    opt, rest = ap.parse_known_args(argv)
    if opt.quick:
        opt.episodes = min(opt.episodes, 8)
        if opt.out == HERE:
            opt.out = os.path.join(HERE, "out", "train_rough_quick")
    if opt.untrained_episodes is None:
        opt.untrained_episodes = opt.episodes
    return opt, rest


def training_record(run_dir):
    """train_wall_s (the rough run's, plus the walk run's it started from: --init_from, as its config.json
    records), mean_terrain_level (the last logged) and the runs' summaries."""
    import herd_runner
    rough = play.run_summary(run_dir)
    rows = herd_runner.read_log(os.path.join(run_dir, "log.csv"))
    levels = [float(r["terrain_level"]) for r in rows if r.get("terrain_level") not in ("", None)]
    stages = [rough]
    init = rough.get("init_from")
    if init:
        stages.insert(0, play.run_summary(os.path.dirname(init)))
    walls = [s.get("train_wall_s") for s in stages]
    return {"train_wall_s": round(sum(walls), 1) if all(w is not None for w in walls) else None,
            "mean_terrain_level": round(levels[-1], 3) if levels else None,
            "training": rough, "stages": stages}


def evaluate(opt, policy_path):
    """(lines, wall seconds) of the policy and the untrained actor."""
    loaded = play.load_policy(policy_path)
    levels = [s for s in opt.levels.split(",") if s]
    if loaded.task not in (None, TASK):
        sys.exit("train_rough: %s was trained on %s" % (policy_path, loaded.task))

    def run(address, cpu):
        t0 = time.perf_counter()
        import herd
        with herd.make_vec(TASK, 1, address=address, seed=0) as probe:
            od, ad = probe.obs_dim, probe.act_dim
            keys = {k["key"] for k in probe.herd_spec["config"]}
        config = play.eval_config(TASK, loaded, keys, herd_tasks.parse_config(opt.config))
        print("train_rough: evaluating %s on %s" % (play.path_name(policy_path), config), flush=True)
        seed = 1 + 10**9
        lines, _ = play.evaluate(loaded, TASK, address, opt.episodes, seed, config, levels)
        if opt.untrained_episodes > 0:
            base = play.untrained(od, ad, loaded.hidden, 1)
            lines += play.evaluate(base, TASK, address, opt.untrained_episodes, seed, config, levels)[0]
        return lines, round(time.perf_counter() - t0, 1)
    herd_tasks.need_torch("examples/train_rough.py", opt.quick).set_num_threads(1)
    return herd_tasks.with_server(opt.address, opt.server_threads, run)


# the keys write_eval computes from the evaluation; the rest of rough_eval.json records the training
EVAL_KEYS = ("task", "policy_file", "target", "episodes", "untrained_episodes", "levels", "lines", "eval_wall_s",
             "command")


def write_eval(opt, path, policy_path, lines, wall, record):
    doc = {"task": TASK, "policy_file": play.path_name(policy_path)}
    doc.update(record)
    doc.update({"target": play.TARGETS[TASK], "episodes": opt.episodes, "untrained_episodes": opt.untrained_episodes,
                "levels": [s for s in opt.levels.split(",") if s], "lines": lines, "eval_wall_s": wall,
                "command": "examples/train_rough.py " + " ".join(sys.argv[1:])})
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def key(line):
    return (line.get("policy"), line.get("levels"), line.get("terrain"))


def compare(lines, saved):
    """The differences between fresh lines and a saved file's (figures of the same policy / levels / terrain)."""
    old = {key(l): l for l in saved.get("lines", [])}
    diffs = []
    for line in lines:
        o = old.pop(key(line), None)
        if o is None:
            diffs.append("%s: not in the file" % (key(line),))
            continue
        for k in ("episodes", "lin_vel_error", "yaw_rate_error", "no_fall_fraction"):
            if o.get(k) != line.get(k):
                diffs.append("%s %s: file %s, now %s" % (key(line), k, o.get(k), line.get(k)))
    diffs += ["%s: in the file, not evaluated now" % (k,) for k in old]
    return diffs


def main(argv=None):
    opt, rest = parse_args(argv)
    json_path = os.path.join(opt.out, "rough_eval.json")
    policy_path = os.path.join(opt.out, "rough_policy.pt")
    if opt.eval_only:
        if rest:
            sys.exit("train_rough: --eval-only does not take %s" % " ".join(rest))
        path = opt.policy or policy_path
        if not os.path.exists(path):
            sys.exit("train_rough: no policy %s (train one, or --from-run RUN_DIR)" % path)
        lines, wall = evaluate(opt, path)
        saved = {}
        if os.path.exists(json_path):
            with open(json_path) as f:
                saved = json.load(f)
        print(json.dumps({"bench": "rough_eval_wall", "eval_wall_s": wall}), flush=True)
        if opt.update or not saved:
            # every key but the evaluation's own (the training's record: train_wall_s, mean_terrain_level,
            # training, stages, ...)
            record = {k: v for k, v in saved.items() if k not in EVAL_KEYS}
            write_eval(opt, json_path, path, lines, wall, record)
            print("train_rough: figures written to %s" % play.path_name(json_path), flush=True)
            return 0
        diffs = compare(lines, saved)
        if diffs:
            print("train_rough: the figures differ from %s:\n  %s" % (play.path_name(json_path), "\n  ".join(diffs)),
                  flush=True)
            return 1
        print("train_rough: the figures match %s" % play.path_name(json_path), flush=True)
        return 0

    if opt.from_run:
        run_dir = opt.from_run
    else:
        import train
        args = ["--task", TASK] + rest
        for k, v in TRAIN_DEFAULTS.items():
            if k not in rest and not (opt.quick and k in ("--minutes", "--max_iterations")):
                args += [k, v]
        if opt.quick:
            args += ["--quick", "--logdir", os.path.join(opt.out, "logs")]
        for c in opt.config or []:           # the training's configuration (the run records it)
            args += ["--config", c]
        if opt.address and "--address" not in rest:
            args += ["--address", opt.address]
        if not opt.quick and "--run_name" not in rest:
            args += ["--run_name", "rough"]
        t_start = datetime.datetime.now()
        if opt.walk_minutes > 0 and "--init_from" not in rest:
            walk = ["--task", "anymal_c-walk"] + [a for k, v in TRAIN_DEFAULTS.items() for a in (
                k, str(opt.walk_minutes) if k == "--minutes" else v)
                if not (opt.quick and k in ("--minutes", "--max_iterations"))]
            if opt.quick:
                walk += ["--quick", "--logdir", os.path.join(opt.out, "logs")]
            elif "--logdir" in rest:
                walk += ["--logdir", rest[rest.index("--logdir") + 1]]
            if opt.address and "--address" not in rest:
                walk += ["--address", opt.address]
            rc = train.main(walk)
            if rc:
                return rc
            wlog = rest[rest.index("--logdir") + 1] if "--logdir" in rest else (
                os.path.join(opt.out, "logs") if opt.quick else os.path.join(REPO, "logs"))
            walk_run = herd_tasks.find_run(os.path.join(wlog, "anymal_c-walk"), "-1")
            args += ["--init_from", herd_tasks.find_checkpoint(walk_run, -1)]
        rc = train.main(args)
        if rc:
            return rc
        logdir = rest[rest.index("--logdir") + 1] if "--logdir" in rest else (
            os.path.join(opt.out, "logs") if opt.quick else os.path.join(REPO, "logs"))
        run_dir = herd_tasks.find_run(os.path.join(logdir, TASK), "-1")
        print("train_rough: trained %s (started %s)" % (run_dir, t_start.strftime("%H:%M:%S")), flush=True)
    ckpt = herd_tasks.find_checkpoint(run_dir, opt.checkpoint)
    play.package_checkpoint(ckpt, policy_path)
    print("train_rough: %s -> %s" % (ckpt, play.path_name(policy_path)), flush=True)
    lines, wall = evaluate(opt, policy_path)
    write_eval(opt, json_path, policy_path, lines, wall, training_record(run_dir))
    print("train_rough: evaluation written to %s" % play.path_name(json_path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

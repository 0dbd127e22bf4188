#!/usr/bin/python3
"""The benchmark report: runs herd's benchmarks (bounded in time) and writes docs/benchmarks.md with PNG plots.

    make bench-report                                  # build, then this script with the defaults
    /usr/bin/python3 bench/report/run.py [--budget 900] [--out docs] [--build build] [--quick]
    /usr/bin/python3 bench/report/run.py --replay docs/benchmarks/results.jsonl   # rewrite the page, run nothing

What it runs (each a herd-bench subcommand or the Python client bench; JSON lines are collected):
  worlds     herd-bench env --sweep 64,...,65536 --threads 1 (one process, repeats interleaved across N)
  rough_worlds  the same on anymal_c-rough (world i on the terrain column of i mod 64 at every N: the same work)
  threads    herd-bench env at 4096 worlds, 1 and 2 threads (speedup)
  profile    herd-bench env --profile (per-stage time of a walk physics step)
  served     herd-bench server, tcp and ipc (in-process vs served), and clients/python/bench.py (Python vs C client)
  latency    herd-bench server --worlds B: step latency p50 / p99 against batch size B (one request in flight)
  mujoco     herd-bench env --vs-mujoco on anymal_c-walk and anymal_c-stand
  memory     herd-bench server --memory (herd-server RSS per world)
  rough_env  herd-bench env --env anymal_c-rough at 4096 worlds, 1 thread (rough's own env steps/s per thread)
  rough      herd-bench env --envs anymal_c-walk,anymal_c-rough at 4096 worlds, 1 thread (the same actions, one
             process, repeats interleaved): rough's env steps/s per thread and its cost per env step over walk's
  limits     herd-bench env --pair joint_limits=0,1 at 4096 worlds, 1 thread: walk's env step with joint limits over
             without (the same actions; 100 steps x 9 repeats, since the two trajectories part and each repeat's
             ratio spreads with their falls)
The budget (seconds, default 900) bounds the whole run: each benchmark gets a timeout from what is left, and a
benchmark that cannot start in time is reported as skipped.  Every figure states the machine, the commit, the
load average and the spread (min-max over repeats); medians are plotted.

Output: <out>/benchmarks.md, <out>/benchmarks/*.png, <out>/benchmarks/results.jsonl (every JSON line) and
<out>/benchmarks/log.txt (the benchmarks' human tables).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402


def commit():
    return provenance.commit("sim envs protocol server clients bench")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cmd_key(argv):
    return " ".join([os.path.basename(argv[0])] + [a for a in argv[1:] if not a.startswith("/")])


class Runner:
    def __init__(self, budget, log, replay=None):
        self.t0 = time.monotonic()
        self.budget = budget
        self.log = log
        self.lines = []
        self.skipped = []
        self.loads = []
        self.replay = replay        # recorded JSON lines (--replay): nothing is run


    def left(self):
        return self.budget - (time.monotonic() - self.t0)

    def run(self, tag, argv, need=5.0, share=1.0):
        """Runs argv (from the repository root); returns its JSON lines.  share: the fraction of the time
        left that this one may take."""
        if self.replay is not None:
            out = [d for d in self.replay if d.get("_cmd") == cmd_key(argv)]
            self.lines += out
            return out
        left = self.left()
        if left < need:
            self.skipped.append((tag, " ".join(argv), "out of time budget"))
            return []
        timeout = max(need, left * share)
        la = loadavg()
        t = time.monotonic()
        self.log.write("\n$ %s   (load %.2f, timeout %.0f s)\n" % (" ".join(argv), la, timeout))
        self.log.flush()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
        except OSError as e:
            self.skipped.append((tag, " ".join(argv), "could not run: %s" % e))
            return []
        except subprocess.TimeoutExpired as e:
            self.log.write((e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or ""))
            self.skipped.append((tag, " ".join(argv), "timed out after %.0f s" % timeout))
            return []
        self.log.write(p.stderr)
        self.log.write("(%.1f s, exit %d)\n" % (time.monotonic() - t, p.returncode))
        self.loads.append(loadavg())
        out = []
        for line in p.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                d["_tag"] = tag
                d["_load"] = la
                d["_cmd"] = cmd_key(argv)
                out.append(d)
        if not out:
            self.skipped.append((tag, " ".join(argv), "no result (exit %d)" % p.returncode))
        self.lines += out
        return out


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return (float("nan"),) * 3
    return statistics.median(xs), min(xs), max(xs)


def fmt(x, nd=0):
    if x is None or x != x:
        return "n/a"
    return ("{:,.%df}" % nd).format(x)


def pcterr(x):
    """A relative error as a percentage (None: no measurement)."""
    if x is None or x != x:
        return "n/a"
    return "%.2g %%" % (100.0 * x)


def accuracy(a):
    """An env_vs_mujoco accuracy object (impulse_err_median, ...) as "impulse median / p90, velocity median"."""
    if not a:
        return "n/a"
    return "%s / %s, velocity %s" % (pcterr(a.get("impulse_err_median")), pcterr(a.get("impulse_err_p90")),
                                     pcterr(a.get("velocity_err_median")))


def stamp(fig, ctx, note):
    fig.text(0.01, 0.005, "%s; %d CPUs; commit %s; load avg %s; %s" % (ctx["machine"]["cpu"], ctx["machine"]["cpus"],
             ctx["commit"], ctx["load"], note), fontsize=6.5, color="0.35", ha="left", va="bottom")


def save(fig, outdir, name):
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = os.path.join(outdir, "benchmarks", name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return "benchmarks/" + name


def worlds_section(md, figs, opt, ctx, env, runs, png):
    """One task's world-count sweep (`herd-bench env --sweep`): plot, table and flatness."""
    md.append("\n## Throughput per thread against world count (`%s`, 1 thread)\n" % env)
    flat = [d for d in runs if d.get("bench") == "env_flatness"]
    sweep = [d for d in runs if d.get("bench") == "env_sweep"]
    if not (sweep and flat):
        md.append("\nNot run (see the skipped runs below).\n")
        return
    fl = flat[0]
    ns = [d["worlds"] for d in sweep]
    cpu = [spread(d["cpu_env_steps_per_s_per_thread_reps"]) for d in sweep]
    wall = [spread(d["env_steps_per_s_per_thread_reps"]) for d in sweep]
    meds = [c[0] for c in cpu]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax.errorbar(ns, meds, yerr=[[c[0] - c[1] for c in cpu], [c[2] - c[0] for c in cpu]], marker="o", capsize=3,
                label="per CPU-second of the stepping thread")
    ax.errorbar(ns, [w[0] for w in wall], yerr=[[w[0] - w[1] for w in wall], [w[2] - w[0] for w in wall]],
                marker="s", capsize=3, label="per wall-clock second (loaded machine)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("worlds")
    ax.set_ylabel("env steps / s per thread")
    ax.set_ylim(bottom=0)
    ax.set_title("%s, 1 thread: env steps/s vs worlds" % env)
    ax.legend(fontsize=7.5)
    ax2.plot(ns, fl["relative_to_first"], marker="o")
    ax2.axhspan(0.9, 1.1, color="C2", alpha=0.15, label="+-10 %")
    ax2.set_xscale("log", base=2)
    ax2.set_ylim(0.7, 1.3)
    ax2.set_xlabel("worlds")
    ax2.set_ylabel("rate / rate at %d worlds (CPU time)" % ns[0])
    ax2.set_title("flatness: same-repeat ratio, median over repeats")
    ax2.legend(fontsize=8)
    stamp(fig, ctx, "median of %d repeats, bars min-max (the repeats are successive stretches of the trajectories, "
                    "so they differ in work; the ratios do not)" % sweep[0]["repeats"])
    key = png[:-4]
    figs[key] = save(fig, opt.out, png)
    md.append("![env steps/s vs worlds](%s)\n\n" % figs[key])
    md.append("| worlds | env steps/s per CPU-s (min-max) | ratio to %d worlds | env steps/s wall (min-max) | "
              "us per physics step (CPU) |\n|---:|---:|---:|---:|---:|\n" % ns[0])
    for n, c, w, rel in zip(ns, cpu, wall, fl["relative_to_first"]):
        md.append("| %s | %s (%s-%s) | %.3f | %s (%s-%s) | %.2f |\n" % (fmt(n), fmt(c[0]), fmt(c[1]), fmt(c[2]), rel,
                                                                     fmt(w[0]), fmt(w[1]), fmt(w[2]),
                                                                     1e6 / (c[0] * 4)))
    period = sweep[0].get("terrain_column_period")
    tiles = ("; on rough terrain world i also stands on the column (terrain kind) of i mod %d, which legged_gym's "
             "assignment would otherwise change with N" % period) if period else ""
    md.append("\nFlatness (CPU time): from %s to %s worlds the rate stays within **%.1f %%** (min / max of the "
              "same-repeat ratios %.3f; of the medians %.3f; goal: within 10 %%).  One process holds every N; "
              "each was reset (seeds 1000 + i %% 32, actions also periodic in 32 worlds%s, so every world of every N "
              "does exactly the same work) and warmed up %d steps, then %d repeats of 1 untimed step (to warm "
              "the caches the previous N evicted) + %d timed steps visit the N in turn, continuing the "
              "trajectories.  (So these are env steps %d-%d of the episodes, partly the "
              "landing after the drop from 0.6 m: the absolute rate differs from the profile's and the thread "
              "benchmark's later steps; the comparison across N is exact.)\n"
              % (fmt(min(ns)), fmt(max(ns)), 100 * (1 - fl["relative_min_over_max"]), fl["relative_min_over_max"],
                 fl["min_over_max"], tiles, sweep[0]["warmup"], sweep[0]["repeats"], sweep[0]["steps"],
                 sweep[0]["warmup"] + 1, sweep[0]["warmup"] + (sweep[0]["steps"] + 1) * sweep[0]["repeats"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=900, help="seconds for the whole run (default 900)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="smaller sweeps (a smoke test of the report)")
    ap.add_argument("--replay", default=None, help="results.jsonl of an earlier run: rewrite the report from it, run nothing")
    opt = ap.parse_args()
    replay = meta = None
    if opt.replay:
        with open(opt.replay) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        meta = next((d["_meta"] for d in rows if "_meta" in d), None)
        if meta is None:
            sys.exit("bench/report/run.py: %s has no _meta line" % opt.replay)
        replay = [d for d in rows if "_meta" not in d]
    hb = os.path.join(opt.build, "herd-bench")
    if not os.path.exists(hb) and replay is None:
        sys.exit("bench/report/run.py: %s is missing (make all)" % hb)
    os.makedirs(os.path.join(opt.out, "benchmarks"), exist_ok=True)
    log = open(os.devnull if replay is not None else os.path.join(opt.out, "benchmarks", "log.txt"), "w")
    started = datetime.datetime.now(datetime.timezone.utc)
    ctx = {"machine": provenance.machine(host=True), "commit": commit(), "started": started.strftime("%Y-%m-%d %H:%M UTC")}
    if meta:
        ctx = {k: meta[k] for k in ("machine", "commit", "started")}
        opt.quick = meta.get("quick", opt.quick)
    log.write("herd benchmark report: %s, commit %s, %s\n" % (ctx["machine"], ctx["commit"], ctx["started"]))
    r = Runner(opt.budget, log, replay)
    q = opt.quick

    # ---- the runs, cheapest and most important first; each gets a share of the time left
    worlds_list = [64, 256, 1024, 4096] if q else [64, 256, 1024, 4096, 16384, 65536]
    prof = r.run("profile", [hb, "env", "--profile", "--worlds", "256", "--steps", "20", "--repeats", "9"], share=0.2)
    mj_walk = r.run("mujoco", [hb, "env", "--vs-mujoco", "--env", "anymal_c-walk", "--grid", "quick" if q else "full",
                               "--steps", "30", "--repeats", "5"], need=20, share=0.25)
    mj_stand = r.run("mujoco", [hb, "env", "--vs-mujoco", "--env", "anymal_c-stand", "--grid", "quick",
                                "--steps", "30", "--repeats", "5"], need=15, share=0.2)
    mem = r.run("memory", [hb, "server", "--memory", "--memory-worlds",
                           "1,1024,4096" if q else "1,1024,4096,16384,65536"], share=0.2)
    sweep = r.run("worlds", [hb, "env", "--sweep", ",".join(str(n) for n in worlds_list), "--threads", "1",
                             "--steps", "2", "--warmup", "10", "--repeats", "7"], need=30, share=0.35)
    # rough: the sweep gives world i the column of i mod 64 at every count (terrain_column_period), so the counts
    # do the same work; 6 timed steps a repeat (2 at 64 worlds are ~3 ms, short against the switch between counts)
    sweep_rough = r.run("rough_worlds", [hb, "env", "--env", "anymal_c-rough", "--sweep",
                                         ",".join(str(n) for n in worlds_list), "--threads", "1", "--steps", "6",
                                         "--warmup", "10", "--repeats", "7"], need=60, share=0.35)
    thr = r.run("threads", [hb, "env", "--worlds", "4096", "--steps", "10", "--warmup", "15", "--once",
                            "--repeats", "11"], need=20, share=0.3)
    # herd-bench env's own schedule (50 steps x 5 repeats after 25 warm-up): a random-action trajectory's cost
    # changes along it (landings, falls, resets), so a shorter window would measure only its start
    # the task's own env bench (herd-bench env --env anymal_c-rough: each repeat resets and warms up, then 50 steps)
    rough_env = r.run("rough_env", [hb, "env", "--env", "anymal_c-rough", "--worlds", "1024" if q else "4096",
                                    "--threads", "1"], need=60, share=0.3)
    rough = r.run("rough", [hb, "env", "--envs", "anymal_c-walk,anymal_c-rough", "--worlds", "1024" if q else "4096",
                            "--threads", "1", "--steps", "50", "--warmup", "25", "--repeats", "5"], need=60, share=0.3)
    # the two trajectories part (a limit changes the motion), so a repeat's ratio carries their different falls as
    # well as the limits' own cost: long repeats, and many, for the median
    limits = r.run("limits", [hb, "env", "--pair", "joint_limits=0,1", "--worlds", "1024" if q else "4096",
                              "--threads", "1", "--steps", "30" if q else "100", "--warmup", "25",
                              "--repeats", "5" if q else "9"], need=60, share=0.4)
    served = []
    for tr in ("tcp", "ipc"):
        served += r.run("served", [hb, "server", "--worlds", "1024", "--transport", tr, "--steps", "10",
                                   "--repeats", "7", "--rtt-iters", "100"], need=20, share=0.3)
    pyc = r.run("python", ["/usr/bin/python3", "clients/python/bench.py", "--worlds", "1024", "--steps", "10",
                           "--warmup", "5", "--repeats", "3", "--build", opt.build, "--target", "0"], need=20, share=0.4)
    lat = []
    for b, steps in ((1, 300), (16, 100), (128, 30)):
        lat += r.run("latency", [hb, "server", "--worlds", str(b), "--transport", "tcp", "--steps", str(steps),
                                 "--repeats", "3", "--rtt-iters", "20"], need=10, share=0.4)
    lat += [d for d in served if d.get("transport") == "tcp"]
    elapsed = time.monotonic() - r.t0
    loads = r.loads or [loadavg()]
    ctx["load"] = "%.1f-%.1f" % (min(loads), max(loads))
    if meta:
        elapsed, ctx["load"], r.skipped = meta["elapsed"], meta["load"], [tuple(x) for x in meta["skipped"]]
        opt.budget = meta.get("budget", opt.budget)
    else:
        with open(os.path.join(opt.out, "benchmarks", "results.jsonl"), "w") as f:
            f.write(json.dumps({"_meta": dict(ctx, elapsed=elapsed, skipped=r.skipped, quick=opt.quick,
                                              budget=opt.budget)}) + "\n")
            for d in r.lines:
                f.write(json.dumps(d) + "\n")

    figs, md = {}, []
    mach = ctx["machine"]
    md.append("# herd benchmarks\n")
    md.append("Generated by `make bench-report` (bench/report/run.py) on %s in %.0f s.\n" % (ctx["started"], elapsed))
    built = "; binaries built for %s" % mach["march"] if mach.get("march", "unknown") != "unknown" else ""
    md.append("- **Machine**: %s, %d CPUs usable, Linux %s%s.\n- **Commit**: `%s`.\n"
              "- **Load average** during the run: %s (1-minute, sampled before each benchmark).\n"
              % (mach["cpu"], mach["cpus"], mach["kernel"], built, ctx["commit"], ctx["load"]))
    md.append("The machine is shared: while this report ran, other processes kept the load average near the "
              "figure above on %d CPUs, so every benchmark got only part of a core.  Two clocks are therefore "
              "reported where it matters: **CPU time** of the stepping threads (what a step costs; time slicing "
              "does not inflate it, cache sharing with other processes still does) and **wall time** (what a "
              "trainer on this loaded machine saw).  Figures are medians over repeats; ranges are min-max over the "
              "same repeats; raw JSON lines are in `benchmarks/results.jsonl`, the benchmarks' own tables in "
              "`benchmarks/log.txt`.\n" % mach["cpus"])
    if r.skipped:
        md.append("\n**Skipped** (time budget %.0f s):\n" % opt.budget)
        for tag, cmd, why in r.skipped:
            md.append("- %s: `%s`: %s\n" % (tag, cmd, why))

    # ---- headline figures (filled from the sections' results)
    head = []
    if prof:
        d = prof[0]
        head.append(("walk physics step (its actuator, %s, + sim_step; CPU time)" % d.get("actuator", "pd"),
                     "%.2f us = %.2fx the trot step (%.2f us)"
                     % (d["pd_and_sim_step_us"], d["walk_over_trot"], d["trot_us_per_physics_step"])))
    for task, runs in (("walk", sweep), ("rough", sweep_rough)):
        fl_ = [d for d in runs if d.get("bench") == "env_flatness"]
        sw_ = [d for d in runs if d.get("bench") == "env_sweep"]
        if sw_:
            head.append(("%s env steps/s per thread (CPU time), %s-%s worlds (env steps %d-%d of the episodes)"
                         % (task, fmt(sw_[0]["worlds"]), fmt(sw_[-1]["worlds"]), sw_[0]["warmup"] + 1,
                            sw_[0]["warmup"] + (sw_[0]["steps"] + 1) * sw_[0]["repeats"]),
                         "%s-%s" % (fmt(min(d["cpu_env_steps_per_s_per_thread"] for d in sw_)),
                                    fmt(max(d["cpu_env_steps_per_s_per_thread"] for d in sw_)))))
        if fl_:
            head.append(("%s flatness over world counts (same-repeat ratios)" % task, "within %.1f %%"
                         % (100 * (1 - fl_[0]["relative_min_over_max"]))))
    sc_ = [d for d in thr if d.get("bench") == "env_scaling"]
    if sc_:
        head.append(("1 -> 2 threads, walk, 4096 worlds", "%.2fx wall; per-thread CPU efficiency %.2f"
                     % (sc_[0]["speedup_1_to_2_threads"], sc_[0]["cpu_efficiency_2_threads"])))
    for d in mj_walk + mj_stand:
        fig = ("%.2fx its fastest standing configuration (%s, %s, %d it.); %.2fx its defaults"
               % (d["ratio_vs_mujoco"], d["mujoco_fastest"]["solver"], d["mujoco_fastest"]["cone"],
                  d["mujoco_fastest"]["iterations"], d["ratio_vs_mujoco_defaults"]))
        if "mujoco_fastest_accuracy" in d:
            a = d.get("mujoco_accurate")
            fig = ("%.2fx its fastest standing configuration (%s, %s, %d it.; median contact-impulse error %s against "
                   "its converged solve, herd's %s)" % (d["ratio_vs_mujoco"], d["mujoco_fastest"]["solver"],
                                                        d["mujoco_fastest"]["cone"], d["mujoco_fastest"]["iterations"],
                                                        pcterr(d["mujoco_fastest_accuracy"]["impulse_err_median"]),
                                                        pcterr(d["herd_accuracy"]["impulse_err_median"])))
            if a:
                fig += ("; **%.2fx its fastest within %s impulse error** (%s, %s, %d it.; %s)"
                        % (d["ratio_vs_mujoco_accurate"], pcterr(d["accuracy"]["bound"]), a["solver"], a["cone"],
                           a["iterations"], pcterr(a["impulse_err_median"])))
            else:
                fig += "; no standing configuration within %s impulse error" % pcterr(d["accuracy"]["bound"])
            fig += "; %.2fx its defaults" % d["ratio_vs_mujoco_defaults"]
        head.append(("herd / MuJoCo 2.2.2, %s (env steps/s per thread)" % d["env"], fig))
    for d in [d for d in rough_env if d.get("bench") == "env"]:
        head.append(("rough env steps/s per thread (CPU time), %s worlds, `herd-bench env --env anymal_c-rough` "
                     "(env steps %d-%d after each repeat's reset)" % (fmt(d["worlds"]), d["warmup"] + 1,
                                                                     d["warmup"] + d["steps"]),
                     "%s (the same run's trot step: %.2f us, wall)" % (fmt(d["cpu_env_steps_per_s_per_thread"]),
                                                                       1e6 / d["solver_bench_trot_steps_per_s"])))
    ro_ = [d for d in rough if d.get("bench") == "env_envs" and d.get("env") == "anymal_c-rough"]
    if ro_:
        head.append(("rough env steps/s per thread (CPU time), %s worlds; its env step over walk's, same run"
                     % fmt(ro_[0]["worlds"]), "%s; %.2fx" % (fmt(ro_[0]["cpu_env_steps_per_s_per_thread"]),
                                                          ro_[0]["cost_ratio_to_baseline"])))
    li_ = [d for d in limits if d.get("bench") == "env_joint_limits_pair" and d.get("joint_limits") == "1"]
    if li_:
        head.append(("walk env step with joint limits over without (CPU time, same repeats, %s worlds)"
                     % fmt(li_[0]["worlds"]), "%.3fx (goal <= 1.05x)" % li_[0]["cost_ratio_to_baseline"]))
    if mem:
        head.append(("herd-server memory per world", "%s B (%s worlds, all included)"
                     % (fmt(mem[0]["bytes_per_world"]), fmt(max(p["worlds"] for p in mem[0]["points"])))))
    for d in served:
        head.append(("served (%s) / in-process, 1024 worlds" % d["transport"], "%.2f" % d["served_fraction"]))
    for d in served[:1]:
        if "one_slice_fraction" in d:
            head.append(("served, one worker's slice stepped alone / the whole session, %d threads" % d["threads"],
                         "%.2f (other workers help; %.2f if its worker stepped it alone)"
                         % (d["one_slice_fraction"], 1.0 / d["threads"])))
    for d in pyc:
        head.append(("Python client / C client, 1024 worlds", "%.2f" % d["fraction"]))
    if head:
        md.append("\n## Headline figures\n\n| what | figure |\n|---|---|\n")
        for k, v in head:
            md.append("| %s | %s |\n" % (k, v))

    # ---- throughput vs worlds (walk, then rough)
    for env, runs, png in (("anymal_c-walk", sweep, "worlds.png"), ("anymal_c-rough", sweep_rough, "worlds_rough.png")):
        worlds_section(md, figs, opt, ctx, env, runs, png)
    # ---- threads
    md.append("\n## 1 -> 2 threads (`anymal_c-walk`, 4096 worlds)\n")
    envs_t = [d for d in thr if d.get("bench") == "env"]
    sc = [d for d in thr if d.get("bench") == "env_scaling"]
    if envs_t and sc:
        fig, ax = plt.subplots(figsize=(6, 3.8))
        labels, vals, lo, hi = [], [], [], []
        for d in envs_t:
            for kind, key, mult in (("wall", "env_steps_per_s_reps", 1), ("CPU", "cpu_env_steps_per_s_per_thread_reps",
                                                                           d["threads"])):
                m, a, b = spread([x * mult for x in d[key]])
                labels.append("%d thread%s\n%s" % (d["threads"], "s" if d["threads"] > 1 else "", kind))
                vals.append(m), lo.append(m - a), hi.append(b - m)
        ax.bar(range(len(vals)), vals, yerr=[lo, hi], capsize=4, color=["C1", "C0"] * (len(vals) // 2))
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("env steps / s (all threads)")
        ax.set_title("anymal_c-walk, 4096 worlds: 1 and 2 threads")
        stamp(fig, ctx, "median of %d repeats, bars min-max; CPU = threads x per-CPU-second rate" % envs_t[0]["repeats"])
        figs["threads"] = save(fig, opt.out, "threads.png")
        md.append("![threads](%s)\n\n" % figs["threads"])
        md.append("| threads | env steps/s wall (min-max) | env steps/s per CPU-second per thread (min-max) |\n|---:|---:|---:|\n")
        for d in envs_t:
            w, c = spread(d["env_steps_per_s_reps"]), spread(d["cpu_env_steps_per_s_per_thread_reps"])
            md.append("| %d | %s (%s-%s) | %s (%s-%s) |\n" % (d["threads"], fmt(w[0]), fmt(w[1]), fmt(w[2]), fmt(c[0]),
                                                            fmt(c[1]), fmt(c[2])))
        md.append("\nSpeedup 1 -> 2 threads in wall time: **%.2fx** (goal >= 1.9x); per-thread CPU efficiency at 2 "
                  "threads: **%.2f** (1.00 = a second thread costs nothing extra per step).  On a machine loaded like "
                  "this one the wall-time speedup measures mostly the share of the two CPUs the benchmark got; the CPU "
                  "efficiency is the part herd controls (barriers, false sharing, memory bandwidth).\n"
                  % (sc[0]["speedup_1_to_2_threads"], sc[0]["cpu_efficiency_2_threads"]))
        two = [d for d in envs_t if d["threads"] == 2 and "helped_share" in d]
        if two:
            md.append("\nAs in herd-server, each thread takes its slice of the worlds in pieces (at most 16 worlds, and at "
                      "most 1/4 of what is left of the slice) and a thread done with its own slice helps with the other's "
                      "(srv_pool.h, helping): at 2 threads **%.1f %%** of the world-steps were taken by a helping thread, "
                      "and the threads were busy **%.1f %%** of the time (the rest is the wait at the per-step barrier).\n"
                      % (100 * two[0]["helped_share"], 100 * two[0]["thread_utilization"]))
    # ---- profile
    md.append("\n## Where a walk physics step goes (`herd-bench env --profile`)\n")
    if prof:
        d = prof[0]
        st = list(d["us_per_physics_step"].keys())
        meds = [d["us_per_physics_step"][k] for k in st]
        reps = [d["us_per_physics_step_reps"][k] for k in st]
        fig, ax = plt.subplots(figsize=(7, 4))
        y = range(len(st))
        ax.barh(y, meds, xerr=[[m - min(rr) for m, rr in zip(meds, reps)], [max(rr) - m for m, rr in zip(meds, reps)]],
                capsize=3, color="C2")
        ax.set_yticks(list(y))
        ax.set_yticklabels(st)
        ax.invert_yaxis()
        ax.axvline(0, color="k", lw=0.5)
        ax.set_xlabel("us per physics step (5 ms)")
        ax.set_title("anymal_c-walk, %d worlds, 1 thread: time per stage" % d["worlds"])
        stamp(fig, ctx, "median of %d repeats, bars min-max" % d["repeats"])
        figs["profile"] = save(fig, opt.out, "profile.png")
        md.append("![profile](%s)\n\n" % figs["profile"])
        tot = sum(m for k, m in zip(st, meds) if k != "env_overhead")
        md.append("| stage | us per physics step (min-max) | share of actuator + sim_step |\n|---|---:|---:|\n")
        for k, m, rr in zip(st, meds, reps):
            md.append("| %s | %.3f (%.3f-%.3f) | %s |\n" % (k, m, min(rr), max(rr),
                                                         "%.1f %%" % (100 * m / tot) if k != "env_overhead" else "-"))
        md.append("\nPer physics step: %.2f contacts, %.2f solver sweeps, %.2f %% of solves stopped at the iteration "
                  "cap; the env step costs %.3f us of CPU per physics step, actuator + sim_step alone %.3f us.  How: the "
                  "worlds are stepped as env_step steps them, four at a time: their actuator (the task's: %s), one "
                  "sim_batch_smooth "
                  "(kinematics, velocities, CRBA, LTDL, RNEA and free velocity of the four worlds in vector lanes; "
                  "\"dynamics\" is its time shared by its worlds), then per world the stages of sim_batch_step one "
                  "call each (bit-for-bit sim_step): SMOOTH (\"load\": the world's results out of the batch), "
                  "COLLISION, CONTACTS, SOLVE and INTEGRATE, each timed with the monotonic clock, preempted steps "
                  "(> 300 us) left out; CONTACTS is split by timing the contact Jacobians (sim_jacobian_sparse) on the "
                  "same state beside it (\"delassus\" = CONTACTS minus those: contact-frame Jacobians, L^-T J^T, G, "
                  "targets); "
                  "env overhead = env_step minus actuator + physics on the same steps, in thread CPU time (a difference of two "
                  "timings: it can come out slightly negative).\n" % (d["mean_contacts"], d["mean_iterations"],
                                                      100 * d["capped_fraction"], d["env_step_us_per_physics_step"],
                                                      d["pd_and_sim_step_us"], d.get("actuator", "pd")))
        md.append("\nReference in the same run: the solver bench's trot scenario (1 ms, feet + base, one world, stepped "
                  "alone by sim_step) costs %.3f us per physics step (CPU time), so a walk physics step (actuator + "
                  "sim_step, in batches of four as env_step runs it) is **%.2fx** a trot step (the target: <= 1.5x).\n"
                  % (d["trot_us_per_physics_step"], d["walk_over_trot"]))
        lk = d.get("lockstep")
        if lk:
            md.append("\nThe solve batched over worlds, %d to a vector in lock step (each group of worlds sweeps as often "
                      "as its slowest, each sweep over its most blocks): the lane efficiency of these solves is %.2f in "
                      "the env's groups of consecutive worlds and %.2f in groups sorted by block count, so such a solve "
                      "would take at least %.2f us and %.2f us per physics step against the %.2f us above (a bound from "
                      "below: the divergence within a block's solve and the fallbacks' own iterations are left out).\n"
                      % (lk["lanes"], lk["efficiency_env_groups"], lk["efficiency_by_blocks"],
                         lk["solve_us_bound_env_groups"], lk["solve_us_bound_by_blocks"], d["us_per_physics_step"]["solve"]))
    # ---- rough vs walk
    md.append("\n## Rough terrain against flat (`herd-bench env --envs anymal_c-walk,anymal_c-rough`, 1 thread)\n")
    if rough:
        d0 = rough[0]
        md.append("\n%s worlds of each task, the same actions, %d steps x %d repeats interleaved after %d warm-up steps "
                  "(herd-bench env's defaults: the repeats continue the trajectories, so they cover env steps %d-%d), "
                  "thread CPU time.  Rough's env step includes its terrain collision, the 187-point height scan and "
                  "the heading commands; both run the ANYdrive network and joint limits.\n\n"
                  "| task | env steps/s per thread (CPU) | env step cost over walk's (same repeats) |\n|---|---|---|\n"
                  % (fmt(d0["worlds"]), d0["steps"], d0["repeats"], d0["warmup"], d0["warmup"] + 1,
                     d0["warmup"] + (d0["steps"] + 1) * d0["repeats"]))
        for d in rough:
            md.append("| %s | %s | %.2fx |\n" % (d["env"], fmt(d["cpu_env_steps_per_s_per_thread"]),
                                                d["cost_ratio_to_baseline"]))
    else:
        md.append("\nNot run (see the skipped runs below).\n")
    for d in [d for d in rough_env if d.get("bench") == "env"]:
        md.append("\nThe task's own env bench (`herd-bench env --env anymal_c-rough --worlds %s --threads 1`: each of "
                  "%d repeats resets the worlds, warms up %d steps and times env steps %d-%d, so it measures the "
                  "episodes' early stretch, not the paired run's later one): **%s env steps/s per thread** (CPU time; "
                  "repeats %s-%s).  The same run's trot step took %.2f us (wall): this VM's cores run at different "
                  "speeds from one period to the next, and the trot step shows which period the run met.\n"
                  % (fmt(d["worlds"]), d["repeats"], d["warmup"], d["warmup"] + 1, d["warmup"] + d["steps"],
                     fmt(d["cpu_env_steps_per_s_per_thread"]), fmt(min(d["cpu_env_steps_per_s_per_thread_reps"])),
                     fmt(max(d["cpu_env_steps_per_s_per_thread_reps"])), 1e6 / d["solver_bench_trot_steps_per_s"]))
    # ---- joint limits' cost
    md.append("\n## Joint limits' cost (`herd-bench env --pair joint_limits=0,1`, `anymal_c-walk`, 1 thread)\n")
    if len(limits) >= 2:
        off = [d for d in limits if d.get("joint_limits") == "0"][0]
        on = [d for d in limits if d.get("joint_limits") == "1"][0]
        a, b = off["cpu_env_steps_per_s_per_thread_reps"], on["cpu_env_steps_per_s_per_thread_reps"]
        per = [x / y for x, y in zip(a, b)]
        md.append("\n%s worlds, the same actions with joint limits off and on, %d steps x %d repeats interleaved after "
                  "%d warm-up steps, thread CPU time.  Limits change the motion, so the two trajectories part: each "
                  "repeat's ratio carries their different falls and landings as well as the limits' own rows, and "
                  "spreads accordingly; the median is the figure.\n\n"
                  "| joint limits | env steps/s per thread (CPU; min-max) | env step cost over limits off |\n"
                  "|---|---|---|\n"
                  "| off | %s (%s-%s) | 1.000x |\n| on | %s (%s-%s) | **%.3fx** (repeats %.3f-%.3f; all steps %.3fx) |\n"
                  % (fmt(on["worlds"]), on["steps"], on["repeats"], on["warmup"],
                     fmt(off["cpu_env_steps_per_s_per_thread"]), fmt(min(a)), fmt(max(a)),
                     fmt(on["cpu_env_steps_per_s_per_thread"]), fmt(min(b)), fmt(max(b)),
                     on["cost_ratio_to_baseline"], min(per), max(per),
                     sum(1 / y for y in b) / sum(1 / x for x in a)))  # total CPU time, on over off
    else:
        md.append("\nNot run (see the skipped runs below).\n")
    # ---- served
    md.append("\n## In-process vs served vs clients (`anymal_c-walk`, 1024 worlds, server threads = CPUs)\n")
    bars = []
    for d in served:
        if not bars:
            pin, free_ = d["inproc_pinned_steps_per_s_reps"], d["inproc_unpinned_steps_per_s_reps"]
            bars.append(("in-process\n(%d threads)" % d["threads"], spread([max(a, b) for a, b in zip(pin, free_)])))
        bars.append(("served %s\n(C client, pipelined)" % d["transport"], spread(d["steps_per_s_reps"])))
    for d in pyc:
        bars.append(("C client\n(bench.py, tcp)", spread(d["c_repeats"])))
        bars.append(("Python client\n(bench.py, tcp)", spread(d["python_repeats"])))
    if bars:
        fig, ax = plt.subplots(figsize=(7.5, 4))
        ax.bar(range(len(bars)), [b[1][0] for b in bars], yerr=[[b[1][0] - b[1][1] for b in bars],
                                                               [b[1][2] - b[1][0] for b in bars]], capsize=4,
               color=["C0", "C1", "C1", "C3", "C4"][:len(bars)])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], fontsize=7.5)
        ax.set_ylabel("env steps / s (wall)")
        ax.set_title("anymal_c-walk, 1024 worlds: in-process, served, clients")
        stamp(fig, ctx, "median of 3 repeats, bars min-max; wall time")
        figs["served"] = save(fig, opt.out, "served.png")
        md.append("![served](%s)\n\n| path | env steps/s (min-max) |\n|---|---:|\n" % figs["served"])
        for name, s in bars:
            md.append("| %s | %s (%s-%s) |\n" % (name.replace("\n", " "), fmt(s[0]), fmt(s[1]), fmt(s[2])))
        for d in served:
            md.append("\n%s: served = %.1f %% of in-process; 1-world round trip %.0f us (raw ZeroMQ %.0f us, env_step "
                      "alone %.0f us)." % (d["transport"], 100 * d["served_fraction"], d["rtt_1world_us"],
                                           d["raw_zmq_rtt_us_1world"], d["sim_1world_us"]))
        for d in served[:1]:
            if "one_slice_fraction" in d:
                lo_, hi_ = min(d["one_slice_fraction_reps"]), max(d["one_slice_fraction_reps"])
                md.append("\nOne slice: a client stepping only worlds 0-%d (the first worker's slice of the %d) gets "
                          "%s env steps/s, **%.2f** (%.2f-%.2f) of the whole session's served rate in the same repeats: "
                          "idle workers help with the busy worker's slice (srv_pool.h, helping); without helping it "
                          "would be about %.2f." % (d["one_slice_worlds"] - 1, d["worlds"], fmt(d["one_slice_steps_per_s"]),
                                                   d["one_slice_fraction"], lo_, hi_, 1.0 / d["threads"]))
        for d in pyc:
            md.append("\nPython client = %.1f %% of the C client (same server, same run)." % (100 * d["fraction"]))
        md.append("\nIn-process: herd-bench server's own threads stepping the env (the better of pinned and "
                  "unpinned per repeat).  Served (herd-bench server): the server on a thread of the bench process, "
                  "one C client keeping a full-batch step in flight.  bench.py: a separate herd-server process, the "
                  "C client and the Python client (herd.make_vec) in turn.  All wall time on the loaded machine.\n")
    # ---- latency
    md.append("\n## Step latency against batch size (tcp, one request in flight)\n")
    if lat:
        lat.sort(key=lambda d: d["worlds"])
        bs = [d["worlds"] for d in lat]
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.plot(bs, [d["p50_ms"] for d in lat], marker="o", label="p50")
        ax.plot(bs, [d["p99_ms"] for d in lat], marker="s", label="p99")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("worlds per step request")
        ax.set_ylabel("step latency (ms)")
        ax.set_title("anymal_c-walk over tcp: step latency vs batch size")
        ax.legend()
        stamp(fig, ctx, "percentiles over all requests of 3 repeats; wall time")
        figs["latency"] = save(fig, opt.out, "latency.png")
        md.append("![latency](%s)\n\n| batch (worlds) | requests | p50 ms | p99 ms | steps/s |\n|---:|---:|---:|---:|---:|\n"
                  % figs["latency"])
        for d in lat:
            md.append("| %s | %d | %.3f | %.3f | %s |\n" % (fmt(d["worlds"]), d["steps"] * d["repeats"], d["p50_ms"],
                                                         d["p99_ms"], fmt(d["steps_per_s"])))
        md.append("\nEach point is `herd-bench server --worlds B` with the whole session in one request; p99 on a "
                  "loaded machine is dominated by scheduling delays.\n")
    # ---- MuJoCo
    md.append("\n## herd vs MuJoCo 2.2.2 on the same env steps (`herd-bench env --vs-mujoco`)\n")
    mj = mj_walk + mj_stand
    if mj:
        fig, ax = plt.subplots(figsize=(7.5, 4))
        bars = [("herd_env_steps_per_s_reps", "herd"), ("mujoco_fastest_env_steps_per_s_reps", "MuJoCo fastest standing"),
                ("mujoco_defaults_env_steps_per_s_reps", "MuJoCo defaults")]
        if any(d.get("mujoco_accurate") for d in mj):
            bars.insert(2, ("mujoco_accurate", "MuJoCo fastest standing within 1 % impulse error"))
        width = 0.27 if len(bars) == 3 else 0.2
        for k, (key, label) in enumerate(bars):
            sp = [spread((d.get(key) or {}).get("env_steps_per_s_reps", []) if key == "mujoco_accurate" else d[key])
                  for d in mj]
            ax.bar([i + (k - (len(bars) - 1) / 2.0) * width for i in range(len(mj))], [s[0] for s in sp], width,
                   yerr=[[s[0] - s[1] for s in sp], [s[2] - s[0] for s in sp]], capsize=3, label=label)
        ax.set_xticks(range(len(mj)))
        ax.set_xticklabels(["%s\n(MuJoCo fastest: %s %s %d it.)" % (d["env"], d["mujoco_fastest"]["solver"],
                                                                     d["mujoco_fastest"]["cone"],
                                                                     d["mujoco_fastest"]["iterations"]) for d in mj],
                           fontsize=7.5)
        ax.set_ylabel("env steps / s per thread (CPU time)")
        ax.set_title("herd vs MuJoCo 2.2.2, same actions, PD 80/2, 4 x 5 ms")
        ax.legend(fontsize=8)
        stamp(fig, ctx, "median of %d repeats, bars min-max; thread CPU time" % mj[0]["repeats"])
        figs["mujoco"] = save(fig, opt.out, "mujoco.png")
        md.append("![mujoco](%s)\n\n" % figs["mujoco"])
        md.append("| task | herd env steps/s | MuJoCo fastest standing (config) | ratio | MuJoCo defaults | ratio | "
                  "defaults stand? |\n|---|---:|---:|---:|---:|---:|---|\n")
        for d in mj:
            f = d["mujoco_fastest"]
            md.append("| %s | %s | %s (%s, %s, %d iterations, noslip 0) | **%.2fx** | %s | %.2fx | %s |\n"
                      % (d["env"], fmt(d["herd_env_steps_per_s"]), fmt(d["mujoco_fastest_env_steps_per_s"]), f["solver"],
                         f["cone"], f["iterations"], d["ratio_vs_mujoco"], fmt(d["mujoco_defaults_env_steps_per_s"]),
                         d["ratio_vs_mujoco_defaults"], "yes" if d["mujoco_defaults"]["stands"] else "no (sinks)"))
        d = mj[0]
        md.append("\nper physics step (CPU): herd %.2f us, MuJoCo fastest %.2f us, MuJoCo defaults %.2f us (%s).  "
                  "Ratios in wall time: %.2fx / %.2fx.  Grid: %d configurations (solver PGS / CG / Newton x "
                  "iterations x pyramidal / elliptic, noslip off), %d stand under zero actions (%d worlds, %.0f s, "
                  "upright, no base contact, base within %.2f m of herd's).  Both engines: the same URDF, herd's "
                  "inertias, %d colliding geometries against a plane (feet spheres, shank cylinders, thigh boxes, base "
                  "box), friction %.2f, same initial states and actions, %d worlds.  herd's figure includes the "
                  "observation, reward and noise; MuJoCo's does not.\n"
                  % (d["herd_us_per_physics_step"], d["mujoco_fastest_us_per_physics_step"],
                     d["mujoco_defaults_us_per_physics_step"], d["env"], d["ratio_vs_mujoco_wall"],
                     d["ratio_vs_mujoco_defaults_wall"], d["grid"]["configs"], d["grid"]["standing"],
                     d["grid"]["stand_worlds"], d["grid"]["stand_seconds"], d["grid"]["stand_tol_m"],
                     d["colliding_geoms"], d["friction"], d["worlds"]))
        hf = [x for x in mj if x.get("herd_fastest") and x["herd_fastest"]["solver"] != "none"]
        if hf:
            md.append("\nThe same test applied to herd (its per-contact solvers capped at 1 to 10 sweeps, standing under "
                      "zero actions like its defaults), each engine at its fastest standing configuration: ")
            md.append("; ".join("%s: herd %s (%s, at most %d sweep%s) / MuJoCo %s = **%.2fx**"
                                % (x["env"], fmt(x["herd_fastest"]["env_steps_per_s"]), x["herd_fastest"]["solver"],
                                   x["herd_fastest"]["solver_max_iter"],
                                   "" if x["herd_fastest"]["solver_max_iter"] == 1 else "s",
                                   fmt(x["mujoco_fastest_env_steps_per_s"]), x["ratio_fastest_vs_fastest"]) for x in hf))
            md.append(".  The headline ratios above are herd's defaults (up to 50 sweeps to a 1e-6 violation: "
                      "Coulomb's law solved), which standing still does not require.\n")
        acc = [x for x in mj if "herd_accuracy" in x]
        if acc:
            md.append("\n### Accuracy beside every ratio\n\nEach configuration against its own engine's converged "
                      "solve, one physics step from the same saved states: the relative error of the stacked per-contact "
                      "impulses (normal and friction; median / p90 over the states) and of the velocity after the step "
                      "(median).  herd / X is herd's defaults' env steps/s over X's.\n\n"
                      "| task | configuration | env steps/s | herd / X | impulse error median / p90, velocity error |\n"
                      "|---|---|---:|---:|---|\n")
            for x in acc:
                rows = [("herd defaults (%s)" % x["accuracy"]["herd_reference"]["solver"], x["herd_env_steps_per_s"],
                         1.0, x["herd_accuracy"])]
                hf_ = x.get("herd_fastest")
                if hf_ and hf_["solver"] != "none" and "herd_fastest_accuracy" in x:
                    rows.append(("herd fastest standing (%s, at most %d sweep%s)" % (
                                     hf_["solver"], hf_["solver_max_iter"], "" if hf_["solver_max_iter"] == 1 else "s"),
                                 hf_["env_steps_per_s"], x["herd_env_steps_per_s"] / hf_["env_steps_per_s"],
                                 x["herd_fastest_accuracy"]))
                f = x["mujoco_fastest"]
                rows.append(("MuJoCo fastest standing (%s, %s, %d it.)" % (f["solver"], f["cone"], f["iterations"]),
                             x["mujoco_fastest_env_steps_per_s"], x["ratio_vs_mujoco"], x["mujoco_fastest_accuracy"]))
                a = x.get("mujoco_accurate")
                if a:
                    rows.append(("**MuJoCo fastest standing within %s** (%s, %s, %d it.)"
                                 % (pcterr(x["accuracy"]["bound"]), a["solver"], a["cone"], a["iterations"]),
                                 a["env_steps_per_s"], x["ratio_vs_mujoco_accurate"], a))
                f = x["mujoco_defaults"]
                rows.append(("MuJoCo defaults (%s, %s, %d it.)" % (f["solver"], f["cone"], f["iterations"]),
                             x["mujoco_defaults_env_steps_per_s"], x["ratio_vs_mujoco_defaults"],
                             x["mujoco_defaults_accuracy"]))
                for name, eps, ratio, ac in rows:
                    md.append("| %s | %s | %s | %.2fx | %s |\n" % (x["env"], name, fmt(eps), ratio, accuracy(ac)))
            x = acc[0]
            md.append("\nStates: %d of MuJoCo's (before each physics step of a short run of its defaults), %d of herd's "
                      "(after each env step of its defaults).  References: MuJoCo %s with %d iterations to %g and the "
                      "configuration's cone; herd %s with up to %d sweeps to %g.  Every grid configuration's accuracy is "
                      "in the JSON lines (`mujoco_grid`, `herd_grid`).\n"
                      % (x["accuracy"]["mujoco_states"], x["accuracy"]["herd_states"],
                         x["accuracy"]["mujoco_reference"]["solver"], x["accuracy"]["mujoco_reference"]["iterations"],
                         x["accuracy"]["mujoco_reference"]["tolerance"], x["accuracy"]["herd_reference"]["solver"],
                         x["accuracy"]["herd_reference"]["solver_max_iter"], x["accuracy"]["herd_reference"]["solver_tol"]))
    # ---- memory
    md.append("\n## Memory per world (herd-server VmRSS, `herd-bench server --memory`)\n")
    if mem:
        d = mem[0]
        pts = [p for p in d["points"] if p["worlds"] > 1]
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        ax.plot([p["worlds"] for p in pts], [p["bytes_per_world"] for p in pts], marker="o",
                label="(RSS - idle RSS) / worlds")
        ax.axhline(4096, color="C3", ls="--", label="goal: 4 KB")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("worlds in the session")
        ax.set_ylabel("bytes per world")
        ax.set_title("herd-server memory per world (%s)" % d["env"])
        ax.legend(fontsize=8)
        stamp(fig, ctx, "one measurement per point (RSS is deterministic to a page or so)")
        figs["memory"] = save(fig, opt.out, "memory.png")
        md.append("![memory](%s)\n\n| worlds | idle RSS kB | RSS kB | bytes per world |\n|---:|---:|---:|---:|\n"
                  % figs["memory"])
        for p in d["points"]:
            md.append("| %s | %s | %s | %s |\n" % (fmt(p["worlds"]), fmt(p["idle_rss_kb"]), fmt(p["rss_kb"]),
                                                 fmt(p["bytes_per_world"])))
        md.append("\nAt the largest session: **%s bytes per world** all included (goal <= 4096); one more world "
                  "costs %s bytes (slope between the two largest sessions).  A fresh herd-server per point, %d "
                  "threads, VmRSS after make + reset + one step of every world.  The 1-world row is the session's "
                  "fixed cost (model, request and reply buffers, per-thread scratch), spread over one world.\n"
                  % (fmt(d["bytes_per_world"]), fmt(d["bytes_per_world_slope"]), d["threads"]))
    md.append("\n---\nReproduce: `make bench-report` (about %.0f s here; `--budget` bounds it).  Single benchmarks: "
              "`build/herd-bench SUB --help`.\n" % elapsed)
    with open(os.path.join(opt.out, "benchmarks.md"), "w") as f:
        f.write("".join(md))
    log.close()
    print("bench-report: wrote %s (%d figures, %d results, %.0f s, %d skipped)"
          % (os.path.join(opt.out, "benchmarks.md"), len(figs), len(r.lines), elapsed, len(r.skipped)))


if __name__ == "__main__":
    main()

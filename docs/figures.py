#!/usr/bin/python3
"""The documentation's run-derived figures, written from the files the runs wrote.

Every figure in a tracked Markdown file that comes from a run (an evaluation, a training's wall clock, a speed, a
memory size) sits between markers, and this script writes it from the file that run committed:

    <!-- fig:walk.no_fall -->98.5 %<!-- /fig -->       one figure, inline (on one line; not inside code)
    <!-- figs:bench.table -->                         a generated block (a table), on lines of its own
    ...
    <!-- /figs -->

What sits between the markers is the script's; the words around them are the page's.  Pages generated whole
from a run output (GENERATED: docs/benchmarks.md from docs/benchmarks/results.jsonl; GENERATED_STDLIB:
docs/solvers.md from docs/solvers/results.jsonl) are written again by their generator's replay mode and compared
the same way.  `--list` prints every
figure name, its source and what it shows.  A marker whose name is unknown, whose source is missing or lacks the
key is an error (naming the file and what writes it), never a silent blank.

Usage, from anywhere (paths are the repository's):
    docs/figures.py              rewrite every marker of every tracked *.md from its source (`make docs-figures`)
    docs/figures.py --check      write nothing: one line per figure that disagrees with its source, the self-test,
                                 then "N passed, M failed" (a `make test` stage); exit 1 on any disagreement
    docs/figures.py --self-test  the self-test alone: the markers are filled, a changed number in a copy of each
                                 committed source makes the committed pages fail the check, and so do a changed
                                 figure in a page, an unknown name, a missing source and a broken marker
    docs/figures.py --list       the figures and their sources
Python's standard library only.
"""
import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# source key -> (file in the repository, what writes it)
SOURCES = {
    "walk": ("examples/walk_eval.json", "examples/train_walk.py (a training)"),
    "walk20": ("examples/walk20_eval.json", "examples/play.py --package examples/walk20_policy.pt --json "
                                            "examples/walk20_eval.json (after examples/train.py --minutes 20)"),
    "stand": ("examples/ppo_stand_eval.json", "examples/ppo_stand.py (a training)"),
    "stand_log": ("examples/ppo_stand_log.csv", "examples/ppo_stand.py (a training)"),
    "rough": ("examples/rough_eval.json", "the rough-terrain training and evaluation (examples/train_rough.py, "
                                          "examples/play.py)"),
    "bench": ("docs/benchmarks/results.jsonl", "make bench-report"),
    "contact_models": ("docs/contact-models/results.jsonl", "make contact-models-report"),
    "solvers": ("docs/solvers/results.jsonl", "make solver-report"),
}

INLINE = re.compile(r"<!-- fig:([A-Za-z0-9_.\-]+) -->(.*?)<!-- /fig -->")
BLOCK = re.compile(r"(<!-- figs:([A-Za-z0-9_.\-]+) -->\n)(.*?)(<!-- /figs -->)", re.S)
OPENERS = re.compile(r"<!-- (figs?):([A-Za-z0-9_.\-]+) -->")
CODE = re.compile(r"^(```|~~~).*?^\1[ \t]*$|`[^`\n]+`", re.S | re.M)   # fenced blocks and code spans


class FigureError(Exception):
    """A figure that cannot be written: its source is missing, unreadable or lacks a key."""


# ---- formatting --------------------------------------------------------------------------------------------------

def pct(x, nd=1):
    return "%.*f %%" % (nd, 100.0 * x)


def thousands(x):
    return "{:,}".format(int(round(x)))


def millions(x):
    return "%.1f M" % (x / 1e6)


def minutes(s):
    return "%.1f min" % (s / 60.0)


def times(x, nd=2):
    return "%.*f×" % (nd, x)


def span(lo, hi, fmt="%g"):
    a, b = fmt % lo, fmt % hi
    return a if a == b else "%s–%s" % (a, b)


# ---- sources -----------------------------------------------------------------------------------------------------

def _read_json_or_lines(text):
    """A JSON document, or JSON lines (then a list of their objects)."""
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


class Sources:
    """The run outputs under one repository root, each read once, on first use."""

    def __init__(self, root):
        self.root = root
        self.cache = {}

    def path(self, key):
        return os.path.join(self.root, SOURCES[key][0])

    def get(self, key):
        if key not in self.cache:
            rel, writer = SOURCES[key]
            path = self.path(key)
            if not os.path.exists(path):
                raise FigureError("%s is missing (written by %s)" % (rel, writer))
            try:
                with open(path, newline="") as f:
                    self.cache[key] = list(csv.DictReader(f)) if rel.endswith(".csv") \
                        else _read_json_or_lines(f.read())
            except (ValueError, csv.Error) as e:
                raise FigureError("%s does not parse: %s" % (rel, e))
        return self.cache[key]


def need(obj, *keys, src=""):
    """obj[k0][k1]..., or a FigureError naming the source and the missing key."""
    for i, k in enumerate(keys):
        if not isinstance(obj, dict) or k not in obj:
            raise FigureError("%s has no %s" % (SOURCES[src][0] if src in SOURCES else src,
                                                ".".join(str(x) for x in keys[:i + 1])))
        obj = obj[k]
    return obj


# ---- the figures -------------------------------------------------------------------------------------------------

FIGURES = {}   # name -> (source key, function(Sources) -> str, what it shows)


def figure(name, source, doc):
    def reg(fn):
        FIGURES[name] = (source, fn, doc)
        return fn
    return reg


def _walk(S, *keys):
    return need(S.get("walk"), *keys, src="walk")


def _stand(S, *keys):
    return need(S.get("stand"), *keys, src="stand")


# A training's figures (suffix, key, format, doc), as examples/train_walk.py and examples/train.py's summary.json
# both name them: the walk and walk20 sources read them from different places.
TRAINING_ROWS = (
    ("iterations", "iterations", thousands, "training iterations"),
    ("env_steps", "env_steps", millions, "env steps of the training"),
    ("train_min", "train_wall_s", minutes, "wall clock of the training, server and learner"),
    ("steps_per_s", "env_steps_per_s", thousands, "env steps/s of the training"),
    ("share_wait", "share_waiting_on_server", lambda x: pct(x, 0), "share of the training loop waiting on the server"),
    ("share_update", "share_learning_update", lambda x: pct(x, 0), "share of the training loop in the PPO update"))


def _register_walk():
    for name, keys, fmt, doc in tuple(("walk." + n, (k,), f, d) for n, k, f, d in TRAINING_ROWS) + (
            ("walk.episodes", ("eval", "episodes"), thousands, "evaluation episodes"),
            ("walk.window", ("eval", "window_s"), lambda x: "%g s" % x, "evaluation window at each episode's end")):
        FIGURES[name] = ("walk", (lambda keys, fmt: lambda S: fmt(_walk(S, *keys)))(keys, fmt), doc)
    for tag, part in (("", "eval"), (".untrained", "eval_untrained")):
        who = "trained" if part == "eval" else "untrained"
        FIGURES["walk%s.lin_vel" % tag] = ("walk", (lambda p: lambda S: "%.3f m/s" % _walk(S, p, "lin_vel_error"))(
            part), "%s policy: mean |v_xy,cmd - v_xy|" % who)
        FIGURES["walk%s.yaw" % tag] = ("walk", (lambda p: lambda S: "%.3f rad/s" % _walk(S, p, "yaw_rate_error"))(
            part), "%s policy: mean yaw-rate error" % who)
        FIGURES["walk%s.no_fall" % tag] = ("walk", (lambda p: lambda S: pct(_walk(S, p, "no_fall_fraction")))(
            part), "%s policy: episodes without base contact" % who)


_register_walk()


def _walk20(S, *keys):
    return need(S.get("walk20"), *keys, src="walk20")


def _walk20_line(S, policy):
    """The evaluation line of `policy` (trained / untrained) in examples/walk20_eval.json."""
    for line in _walk20(S, "lines"):
        if line.get("bench") == "walk_eval" and line.get("policy") == policy:
            return line
    raise FigureError("examples/walk20_eval.json has no walk_eval line of the %s policy" % policy)


def _register_walk20():
    for name, keys, fmt, doc in tuple(("walk20." + n, (k,), f, d) for n, k, f, d in TRAINING_ROWS) + (
            ("walk20.num_envs", ("num_envs",), thousands, "worlds of the training"),
            ("walk20.share_infer", ("share_policy_inference",), lambda x: pct(x, 0),
             "share of the training loop in policy inference"),
            ("walk20.machine_share", ("machine_share",), lambda x: pct(x, 0),
             "CPU time of learner and server over the machine's cores x the wall clock")):
        FIGURES[name] = ("walk20", (lambda keys, fmt: lambda S: fmt(_walk20(S, "training", *keys)))(keys, fmt), doc)
    for tag, who in (("", "trained"), (".untrained", "untrained")):
        FIGURES["walk20%s.lin_vel" % tag] = ("walk20", (lambda w: lambda S: "%.3f m/s" % need(
            _walk20_line(S, w), "lin_vel_error", src="walk20"))(who), "%s policy: mean |v_xy,cmd - v_xy|" % who)
        FIGURES["walk20%s.yaw" % tag] = ("walk20", (lambda w: lambda S: "%.3f rad/s" % need(
            _walk20_line(S, w), "yaw_rate_error", src="walk20"))(who), "%s policy: mean yaw-rate error" % who)
        FIGURES["walk20%s.no_fall" % tag] = ("walk20", (lambda w: lambda S: pct(need(
            _walk20_line(S, w), "no_fall_fraction", src="walk20")))(who), "%s policy: episodes without base contact"
            % who)
    FIGURES["walk20.episodes"] = ("walk20", lambda S: thousands(need(_walk20_line(S, "trained"), "episodes",
                                                                     src="walk20")), "evaluation episodes")


_register_walk20()


@figure("walk.eval_s", "walk", "wall clock of the two evaluations (trained and untrained)")
def _(S):
    return "%.0f s" % (_walk(S, "eval", "eval_wall_s") + _walk(S, "eval_untrained", "eval_wall_s"))


def _register_stand():
    for name, keys, fmt, doc in (
            ("stand.iterations", ("iterations",), thousands, "training iterations"),
            ("stand.env_steps", ("env_steps",), millions, "env steps of the training"),
            ("stand.train_min", ("train_wall_s",), minutes, "wall clock of the training"),
            ("stand.episodes", ("eval", "episodes"), thousands, "evaluation episodes")):
        FIGURES[name] = ("stand", (lambda keys, fmt: lambda S: fmt(_stand(S, *keys)))(keys, fmt), doc)
    for tag, part in (("", "eval"), (".noise", "eval_with_training_obs_noise"), (".nothing", "eval_do_nothing")):
        FIGURES["stand%s.success" % tag] = ("stand", (lambda p: lambda S: pct(_stand(S, p, "success_rate")))(part),
                                            "%s: episodes ending standing" % part)
        FIGURES["stand%s.fallen" % tag] = ("stand", (lambda p: lambda S: "%s (%d)" % (
            pct(_stand(S, p, "success_fallen")), _stand(S, p, "fallen_starts")))(part),
            "%s: success from fallen starts (their number)" % part)
        FIGURES["stand%s.other" % tag] = ("stand", (lambda p: lambda S: pct(_stand(S, p, "success_not_fallen")))(
            part), "%s: success from the other starts" % part)


_register_stand()


@figure("stand.standing90_min", "stand_log", "training time when the training episodes first ended standing >= 90 %")
def _(S):
    for row in S.get("stand_log"):
        if float(need(row, "train_success", src="stand_log")) >= 0.9:
            return minutes(float(need(row, "wall_s", src="stand_log")))
    raise FigureError("%s: no iteration with train_success >= 0.9" % SOURCES["stand_log"][0])


# ---- rough terrain (examples/rough_eval.json: "bench": "rough_eval" objects, one per terrain type) ----------------

def _rough_rows(data):
    found = []

    def visit(x):
        if isinstance(x, dict):
            if x.get("bench") == "rough_eval":
                found.append(x)
                return
            for v in x.values():
                visit(v)
        elif isinstance(x, list):
            for v in x:
                visit(v)
    visit(data)
    if not found:
        raise FigureError('%s has no "bench": "rough_eval" line' % SOURCES["rough"][0])
    return found


def _rough_top(S, key):
    data = S.get("rough")
    for d in (data if isinstance(data, list) else [data]):
        if isinstance(d, dict) and key in d:
            return d[key]
    raise FigureError("%s has no %s" % (SOURCES["rough"][0], key))


def _levels(v):
    if isinstance(v, dict) and "min" in v and "max" in v:
        return span(v["min"], v["max"])
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
        return span(min(v), max(v))
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return "" if v is None else str(v)


@figure("rough.table", "rough", "table: per policy, level range and terrain type, episodes, velocity and yaw-rate "
                                 "errors, no-fall share")
def _(S):
    out = ["| policy | levels | terrain | episodes | \\|v_xy,cmd − v_xy\\| | yaw-rate error | episodes without base contact |",
           "|---|---|---|---|---|---|---|"]
    for d in _rough_rows(S.get("rough")):
        name = next((d[k] for k in ("terrain", "terrain_type", "type", "name") if k in d), "all")
        out.append("| %s | %s | %s | %s | %.3f m/s | %.3f rad/s | %s |" % (
            d.get("policy", "trained"), _levels(d.get("levels")), name, thousands(need(d, "episodes", src="rough")),
            need(d, "lin_vel_error", src="rough"), need(d, "yaw_rate_error", src="rough"),
            pct(need(d, "no_fall_fraction", src="rough"))))
    return "\n".join(out) + "\n"


@figure("rough.train_min", "rough", "wall clock of the rough-terrain training")
def _(S):
    return minutes(_rough_top(S, "train_wall_s"))


@figure("rough.terrain_level", "rough", "mean terrain level the curriculum reached")
def _(S):
    return "%.2f" % _rough_top(S, "mean_terrain_level")


# ---- benchmarks (docs/benchmarks/results.jsonl, as make bench-report wrote it) ------------------------------------

def _bench(S):
    rows = S.get("bench")
    if not isinstance(rows, list):
        raise FigureError("%s is not JSON lines" % SOURCES["bench"][0])
    meta = next((d["_meta"] for d in rows if isinstance(d, dict) and "_meta" in d), None)
    if meta is None:
        raise FigureError("%s has no _meta line" % SOURCES["bench"][0])
    return meta, [d for d in rows if isinstance(d, dict) and "_meta" not in d]


def _pick(lines, bench, **match):
    return [d for d in lines if d.get("bench") == bench and all(d.get(k) == v for k, v in match.items())]


@figure("bench.started", "bench", "when the benchmark report ran")
def _(S):
    return need(_bench(S)[0], "started", src="bench")


@figure("bench.commit", "bench", "the commit the benchmark report measured (7 digits)")
def _(S):
    return str(need(_bench(S)[0], "commit", src="bench"))[:7]


@figure("bench.machine", "bench", "the machine of the benchmark report")
def _(S):
    m = need(_bench(S)[0], "machine", src="bench")
    return "%d-vCPU %s" % (need(m, "cpus", src="bench"), need(m, "cpu", src="bench"))


@figure("bench.load", "bench", "load average range during the benchmark report")
def _(S):
    return str(need(_bench(S)[0], "load", src="bench")).replace("-", "–")


@figure("bench.repeats", "bench", "range of repeats the benchmark report's medians are over")
def _(S):
    reps = [d["repeats"] for d in _bench(S)[1] if isinstance(d.get("repeats"), int) and d.get("bench") in (
        "env_profile", "env_sweep", "env", "env_vs_mujoco", "server", "python_client") and d.get("batch", 1024) == 1024]
    if not reps:
        raise FigureError("%s has no repeats" % SOURCES["bench"][0])
    return span(min(reps), max(reps))


@figure("bench.memory_kb", "bench", "herd-server memory per world at the largest session")
def _(S):
    mem = _pick(_bench(S)[1], "server_memory")
    if not mem:
        raise FigureError("%s has no server_memory line" % SOURCES["bench"][0])
    return "%.1f KB" % (mem[0]["bytes_per_world"] / 1000.0)


def _relerr(x):
    """A relative error as a percentage, two significant digits ("n/a" without a measurement)."""
    if x is None or x != x:
        return "n/a"
    return "%.2g %%" % (100.0 * x)


def _mujoco_version(v):
    """MuJoCo's mj_version() number (222) as its release name (2.2.2)."""
    if isinstance(v, int) and 100 <= v <= 999:
        return "%d.%d.%d" % (v // 100, v // 10 % 10, v % 10)
    if v is None:
        raise FigureError("%s: an env_vs_mujoco line has no mujoco_version" % SOURCES["bench"][0])
    return str(v)


@figure("bench.table", "bench", "table: the benchmark report's headline figures")
def _(S):
    meta, lines = _bench(S)
    rows = []
    for d in _pick(lines, "env_profile"):
        rows.append(("`%s` physics step (its actuator, %s, + `sim_step`) / the trot step of the same run" % (
                     d["env"], d.get("actuator", "pd")),
                     "%s (%.2f / %.2f µs)" % (times(d["walk_over_trot"]), d["pd_and_sim_step_us"],
                                              d["trot_us_per_physics_step"])))
        us = {k: v for k, v in d["us_per_physics_step"].items() if k != "env_overhead"}
        order = sorted(us, key=lambda k: -us[k])
        rows.append(("where a walk physics step goes (`herd-bench env --profile`, µs)",
                     "; ".join(("%s %.2f (%.0f %%)" if i == 0 else "%s %.2f") % (
                         (k, us[k], 100 * us[k] / d["pd_and_sim_step_us"]) if i == 0 else (k, us[k]))
                         for i, k in enumerate(order))))
        lk = d.get("lockstep")
        if lk:
            rows.append(("the solve batched over worlds, %d to a vector in lock step: lane efficiency (the env's groups; "
                         "groups by block count) and the solve time it bounds from below" % lk["lanes"],
                         "%.2f; %.2f → ≥ %.2f µs; ≥ %.2f µs (of %.2f µs)" % (
                             lk["efficiency_env_groups"], lk["efficiency_by_blocks"], lk["solve_us_bound_env_groups"],
                             lk["solve_us_bound_by_blocks"], d["us_per_physics_step"]["solve"])))
    for env in ("anymal_c-walk", "anymal_c-rough"):
        sweep, flat = _pick(lines, "env_sweep", env=env), _pick(lines, "env_flatness", env=env)
        if not sweep:
            continue
        r = [d["cpu_env_steps_per_s_per_thread"] for d in sweep]
        s0 = sweep[0]
        fig = "%s–%sk (CPU time, env steps %d–%d of the episodes)" % (
            "%.0f" % (min(r) / 1e3), "%.0f" % (max(r) / 1e3), s0["warmup"] + 1,
            s0["warmup"] + (s0["steps"] + 1) * s0["repeats"])
        if flat:
            fig += "; flat within %.1f %% (same-repeat ratios)" % (100 * (1 - flat[0]["relative_min_over_max"]))
        if "terrain_column_period" in s0:
            fig += "; columns by world index mod %d, the same work per world at every count" % s0["terrain_column_period"]
        rows.append(("`%s` env steps/s per thread, %s → %s worlds" % (
            s0["env"], thousands(sweep[0]["worlds"]), thousands(sweep[-1]["worlds"])), fig))
    for d in _pick(lines, "env", env="anymal_c-rough"):
        rows.append(("`anymal_c-rough` env steps/s per thread, %s worlds (`herd-bench env --env anymal_c-rough`)"
                     % thousands(d["worlds"]), "%s (CPU time; env steps %d–%d after each repeat's reset); the same "
                     "run's trot step %.2f µs (wall)" % (thousands(d["cpu_env_steps_per_s_per_thread"]),
                                                          d["warmup"] + 1, d["warmup"] + d["steps"],
                                                          1e6 / d["solver_bench_trot_steps_per_s"])))
    for d in _pick(lines, "env_envs", env="anymal_c-rough"):
        rows.append(("`anymal_c-rough` env steps/s per thread, %s worlds (`env --envs anymal_c-walk,anymal_c-rough`)"
                     % thousands(d["worlds"]), "%s (CPU time); its env step costs %s walk's (same repeats)" % (
                         thousands(d["cpu_env_steps_per_s_per_thread"]), times(d["cost_ratio_to_baseline"]))))
    sc = _pick(lines, "env_scaling")
    if sc:
        w = sc[0]["worlds"]
        one = _pick(lines, "env", env="anymal_c-walk", worlds=w, threads=1)
        two = _pick(lines, "env", env="anymal_c-walk", worlds=w, threads=2)
        fig = ""
        if one and two:
            fig = "%.1fk env steps/s on 1 thread, %.1fk on 2 (wall): " % (
                one[0]["env_steps_per_s"] / 1e3, two[0]["env_steps_per_s"] / 1e3)
        fig += "%s; per-thread CPU efficiency %.2f" % (times(sc[0]["speedup_1_to_2_threads"]),
                                                      sc[0]["cpu_efficiency_2_threads"])
        if two and two[0].get("helped_share", 0) > 0:
            fig += "; idle threads helping"
        rows.append(("1 → 2 threads, walk, %s worlds" % w, fig))
    for d in _pick(lines, "env_joint_limits_pair", joint_limits="1"):
        r = d["cpu_env_steps_per_s_per_thread_reps"]
        rows.append(("`%s` env step with joint limits / without, %s worlds (`env --pair joint_limits=0,1`)" % (
            d["env"], thousands(d["worlds"])), "%s (CPU time, median of %d same-repeat ratios, %d env steps each)" % (
            times(d["cost_ratio_to_baseline"], 3), len(r), d["steps"])))
    for d in _pick(lines, "env_vs_mujoco"):
        mf, md = d["mujoco_fastest"], d["mujoco_defaults"]
        fig = "%s its fastest standing configuration (%s, %s cone, %d iterations); %s its defaults%s" % (
            times(d["ratio_vs_mujoco"], 1), mf["solver"], mf["cone"], mf["iterations"],
            times(d["ratio_vs_mujoco_defaults"], 1), "" if md.get("stands", True) else " (which let the stance sink)")
        if "ratio_fastest_vs_fastest" in d:
            fig += "; each at its fastest standing configuration %s" % times(d["ratio_fastest_vs_fastest"], 1)
        if "mujoco_fastest_accuracy" in d:
            # the accuracy beside every ratio (each configuration against its own engine's converged solve), and the
            # ratio at equal accuracy first
            a, bound = d.get("mujoco_accurate"), _relerr(d["accuracy"]["bound"])
            if a:
                head = "%s its fastest standing configuration within %s median contact-impulse error (%s, %s cone, " \
                       "%d iterations: %s; herd's %s)" % (
                           times(d["ratio_vs_mujoco_accurate"], 1), bound, a["solver"], a["cone"], a["iterations"],
                           _relerr(a["impulse_err_median"]), _relerr(d["herd_accuracy"]["impulse_err_median"]))
            else:
                head = "no standing configuration within %s median contact-impulse error (herd's %s)" % (
                    bound, _relerr(d["herd_accuracy"]["impulse_err_median"]))
            fig = "%s; %s its fastest standing configuration (%s, %s cone, %d iterations: %s); %s its defaults (%s)" % (
                head, times(d["ratio_vs_mujoco"], 1), mf["solver"], mf["cone"], mf["iterations"],
                _relerr(d["mujoco_fastest_accuracy"]["impulse_err_median"]), times(d["ratio_vs_mujoco_defaults"], 1),
                _relerr(d["mujoco_defaults_accuracy"]["impulse_err_median"]))
            if "herd_fastest_accuracy" in d and "ratio_fastest_vs_fastest" in d:
                fig += "; each at its fastest standing configuration %s (herd's %s)" % (
                    times(d["ratio_fastest_vs_fastest"], 1), _relerr(d["herd_fastest_accuracy"]["impulse_err_median"]))
        rows.append(("`%s` vs MuJoCo %s, same actions (`env --vs-mujoco`)" % (
            d["env"], _mujoco_version(d.get("mujoco_version"))), fig))
    served = {d["transport"]: d for d in _pick(lines, "server", worlds=1024)}
    pyc = _pick(lines, "python_client")
    if "tcp" in served:
        fig = "%.2f" % served["tcp"]["served_fraction"]
        if "ipc" in served:
            fig += " (ipc %.2f)" % served["ipc"]["served_fraction"]
        if pyc:
            fig += "; Python client / C client %.2f" % pyc[0]["fraction"]
        rows.append(("served over tcp / in-process, 1024 worlds, one step in flight", fig))
        t = served["tcp"]
        if "one_slice_fraction" in t:
            rows.append(("one worker's slice stepped alone / the whole session, served, 1024 worlds, %d workers"
                         % t["threads"], "%.2f (%.2f if its worker stepped it alone)"
                         % (t["one_slice_fraction"], 1.0 / t["threads"])))
    mem = _pick(lines, "server_memory")
    if mem:
        rows.append(("herd-server memory per world, %s worlds, all included" % thousands(
            max(p["worlds"] for p in mem[0]["points"])), "%.1f KB" % (mem[0]["bytes_per_world"] / 1000.0)))
    if not rows:
        raise FigureError("%s has no headline benchmark line" % SOURCES["bench"][0])
    return "| what | figure |\n|---|---|\n" + "".join("| %s | %s |\n" % r for r in rows)


# ---- contact models (docs/contact-models/results.jsonl, as make contact-models-report wrote it) -----------------

def _cm(S, experiment, solver):
    rows = S.get("contact_models")
    got = [d for d in (rows if isinstance(rows, list) else [rows]) if isinstance(d, dict)
           and d.get("experiment") == experiment and d.get("solver") == solver]
    if not got:
        raise FigureError("%s has no %s line of %s" % (SOURCES["contact_models"][0], experiment, solver))
    return got


def _register_contact_models():
    for key, doc in (("within_1pct_stick", "stick-only steps"), ("within_1pct_slip", "steps with a slipping contact")):
        name = "cm.paper.fig6_" + key.rsplit("_", 1)[1]
        FIGURES[name] = ("contact_models", (lambda key: lambda S: span(
            *(lambda v: (min(v), max(v)))([100 * need(d, key, src="contact_models")
                                           for d in _cm(S, "fig6", "paper-bisection")]), fmt="%.0f") + " %")(key),
            "paper-bisection: range over the four scenarios of the share of %s within 1 %% of Coulomb" % doc)


_register_contact_models()


@figure("cm.paper.slide_short", "contact_models", "paper-bisection: how far short of mu g the sliding cube decelerates")
def _(S):
    gaps = [-need(d, "decel_gap_rel", src="contact_models") for d in _cm(S, "cube_slide", "paper-bisection")]
    return span(min(gaps) * 100, max(gaps) * 100, fmt="%.1f") + " %"


# ---- contact solvers on the tasks (docs/solvers/results.jsonl, as make solver-report wrote it) --------------------

def _solver_profile(S, env, solver):
    rows = S.get("solvers")
    got = [d for d in (rows if isinstance(rows, list) else [rows]) if isinstance(d, dict)
           and d.get("bench") == "env_profile" and d.get("env") == env and d.get("solver_name") == solver]
    if len(got) != 1:
        raise FigureError("%s has %d env_profile lines of %s on %s (want one)" % (SOURCES["solvers"][0], len(got),
                                                                                  solver, env))
    return got[0]


def _solver_share(x):
    """A share in per cent as docs/solvers.md writes it: 0 and 1 exactly as 0 % and 100 %, others never rounded to
    either."""
    if x == 0 or x == 1:
        return "%d %%" % (100 * x)
    p = 100.0 * x
    nd = 3 if p < 0.1 else 2
    while nd < 8 and float("%.*f" % (nd, p)) in (0.0, 100.0):
        nd += 1
    return "%.*f %%" % (nd, p)


def _register_solvers():
    for tag, env in (("walk", "anymal_c-walk"), ("rough", "anymal_c-rough")):
        for key, what in (("coulomb_measured_fraction", "coulomb"), ("fallback_fraction", "fallback"),
                          ("ccp_fraction", "ccp")):
            FIGURES["solvers.%s.%s" % (tag, what)] = ("solvers", (lambda env, key: lambda S: _solver_share(
                need(_solver_profile(S, env, "coulomb-stall-admm"), key, src="solvers")))(env, key),
                "coulomb-stall-admm on %s: %s of its contact solves" % (env, key))


_register_solvers()


# ---- filling and checking ----------------------------------------------------------------------------------------

def value(name, S):
    if name not in FIGURES:
        raise FigureError("unknown figure %r (docs/figures.py --list)" % name)
    try:
        return FIGURES[name][1](S)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as e:
        raise FigureError("%s: cannot compute from %s: %s: %s" % (name, SOURCES[FIGURES[name][0]][0],
                                                                   type(e).__name__, e))


def render(text, S):
    """(the text with every marker filled, [(line, name, written, computed or None, error or None)])."""
    results = []
    code = [(m.start(), m.end()) for m in CODE.finditer(text)]

    def quoted(pos):
        """A marker inside a code span or block is an example of one, not a figure."""
        return any(a <= pos < b for a, b in code)

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    def block(m):
        name, old = m.group(2), m.group(3)
        if quoted(m.start()):
            return m.group(0)
        try:
            new = value(name, S)
            if not new.endswith("\n"):
                new += "\n"
        except FigureError as e:
            results.append((line_of(m.start()), name, old, None, str(e)))
            return m.group(0)
        results.append((line_of(m.start()), name, old, new, None))
        return m.group(1) + new + m.group(4)

    out = BLOCK.sub(block, text)
    # inline markers, counted on the original text so the line numbers are the page's
    for m in INLINE.finditer(text):
        name, old = m.group(1), m.group(2)
        if quoted(m.start()):
            continue
        try:
            new = value(name, S)
            if "\n" in new:
                raise FigureError("%s is a block: use <!-- figs:%s --> on lines of their own" % (name, name))
            results.append((line_of(m.start()), name, old, new, None))
        except FigureError as e:
            results.append((line_of(m.start()), name, old, None, str(e)))
    # each inline marker must close on its line; a block must close
    inline_ok = {m.start() for m in INLINE.finditer(text)}
    block_ok = {m.start() for m in BLOCK.finditer(text)}
    for m in OPENERS.finditer(text):
        if quoted(m.start()):
            continue
        if (m.group(1) == "fig" and m.start() not in inline_ok) or (m.group(1) == "figs" and m.start() not in block_ok):
            closing = "<!-- /fig --> on the same line" if m.group(1) == "fig" else "a line <!-- /figs -->"
            results.append((line_of(m.start()), m.group(2), "", None, "marker without %s" % closing))

    code_out = [(m.start(), m.end()) for m in CODE.finditer(out)]

    def inline(m):
        if any(a <= m.start() < b for a, b in code_out):
            return m.group(0)
        try:
            new = value(m.group(1), S)
        except FigureError:
            return m.group(0)
        return m.group(0) if "\n" in new else "<!-- fig:%s -->%s<!-- /fig -->" % (m.group(1), new)

    out = INLINE.sub(inline, out)
    results.sort(key=lambda r: r[0])
    return out, results


# Pages generated whole from a committed run output: (page, generator and its arguments, the file it writes in
# OUT).  `make docs-figures` writes them again from the output (no benchmark runs); the check compares.
GENERATED = [
    ("docs/benchmarks.md", ["bench/report/run.py", "--replay", "docs/benchmarks/results.jsonl", "--out", "{out}"],
     "benchmarks.md"),
]


# Generated pages whose generator needs Python's standard library only: checked wherever python3 runs, matplotlib or
# not.  docs/solvers.md: each contact solver's model, fallbacks and cost (make solver-report).
GENERATED_STDLIB = [
    ("docs/solvers.md", ["docs/solvers/report.py", "--replay", "docs/solvers/results.jsonl", "--out", "{out}"],
     "solvers.md"),
]


def generated_entries():
    """[(page, argv, name), why it cannot be written here or ''] for every generated page."""
    why = generator_missing()
    return [(e, why) for e in GENERATED] + [(e, "") for e in GENERATED_STDLIB]


def regenerate(root, page, argv, name):
    """(the page as its generator writes it from the committed output, or None; why not)."""
    with tempfile.TemporaryDirectory(prefix="herd-figures.") as out:
        cmd = [sys.executable] + [os.path.join(root, a) if i == 0 else a.replace("{out}", out)
                                  for i, a in enumerate(argv)]
        r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        path = os.path.join(out, name)
        if r.returncode != 0 or not os.path.exists(path):
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or [""]
            return None, "%s failed (exit %d): %s" % (" ".join(argv[:3]), r.returncode, tail[0])
        with open(path, encoding="utf-8") as f:
            return f.read(), ""


def generator_missing():
    """Why the generated pages cannot be written here (their generator's imports), or ''."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "matplotlib is not installed for %s (Debian: python3-matplotlib)" % sys.executable
    return ""


def tracked_markdown(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"], capture_output=True, check=True)
        files = [f for f in out.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "node_modules")]
            files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.exists(os.path.join(root, f)))


def pages(root, files=None):
    """{relative path: text} of the Markdown files that hold a marker."""
    out = {}
    for rel in (files if files is not None else tracked_markdown(root)):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        if OPENERS.search(text):
            out[rel] = text
    return out


DISTINCT = re.compile(r"\d\.\d.*[^\d\s.,]")   # a figure with a decimal and a unit: 0.112 m/s, 98.5 %


def loose_copies(text, S):
    """[(line, name, value)]: a marked figure's value (one with a decimal and a unit, not 0.0 % or 100.0 %) written
    on the page outside any marker, where no script will update it."""
    masked = BLOCK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    masked = INLINE.sub(lambda m: " " * len(m.group(0)), masked)
    names = {m.group(1) for m in INLINE.finditer(text)}
    out = []
    for name in sorted(names):
        try:
            v = value(name, S)
        except FigureError:
            continue
        if "\n" in v or not DISTINCT.search(v) or v in ("0.0 %", "100.0 %"):
            continue
        for m in re.finditer(r"(?<![\d.])" + re.escape(v), masked):
            out.append((masked.count("\n", 0, m.start()) + 1, name, v))
    return out


def check(root, src_root=None, files=None, quiet=False):
    """(agreeing figures, [problem lines]) for the pages under root against the sources under src_root."""
    S = Sources(src_root or root)
    good, bad = 0, []
    for rel, text in pages(root, files).items():
        for line, name, v in loose_copies(text, S):
            bad.append("%s:%d: %r, the value of %s, is written outside its markers: mark it "
                       "<!-- fig:%s -->...<!-- /fig --> or leave it out" % (rel, line, v, name, name))
        for line, name, old, new, err in render(text, S)[1]:
            if err:
                bad.append("%s:%d: %s: %s" % (rel, line, name, err))
            elif old != new:
                bad.append("%s:%d: %s: the page says %r, %s gives %r (make docs-figures)"
                           % (rel, line, name, old.strip(), SOURCES[FIGURES[name][0]][0], new.strip()))
            else:
                good += 1
    if not quiet:
        for b in bad:
            print("not ok - " + b)
    return good, bad


def check_generated(root, entries=None):
    """(agreeing pages, [problem lines], [skip reasons]) for the GENERATED pages."""
    good, bad, skipped = 0, [], []
    for (page, argv, name), why in (generated_entries() if entries is None else [(e, "") for e in entries]):
        if why:
            skipped.append("%s: %s" % (page, why))
            continue
        want, err = regenerate(root, page, argv, name)
        if want is None:
            bad.append("%s: %s" % (page, err))
            continue
        with open(os.path.join(root, page), encoding="utf-8") as f:
            have = f.read()
        if have == want:
            good += 1
            continue
        a, b = have.splitlines(), want.splitlines()
        k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        bad.append("%s:%d: differs from what %s writes from %s (make docs-figures): %r, expected %r"
                   % (page, k + 1, argv[0], argv[2], a[k][:120] if k < len(a) else "(end)",
                      b[k][:120] if k < len(b) else "(end)"))
    return good, bad, skipped


def write(root):
    S = Sources(root)
    errors, changed = [], 0
    for rel, text in pages(root).items():
        out, results = render(text, S)
        for line, name, old, new, err in results:
            if err:
                errors.append("%s:%d: %s: %s" % (rel, line, name, err))
            elif old != new:
                changed += 1
                if "\n" in new:
                    print("%s:%d: %s: %d lines rewritten" % (rel, line, name, new.count("\n")))
                else:
                    print("%s:%d: %s: %r -> %r" % (rel, line, name, old, new))
        if out != text:
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(out)
    for (page, argv, name), why in generated_entries():
        if why:
            errors.append("%s: not written: %s" % (page, why))
            continue
        want, err = regenerate(root, page, argv, name)
        if want is None:
            errors.append("%s: %s" % (page, err))
            continue
        with open(os.path.join(root, page), encoding="utf-8") as f:
            have = f.read()
        if have != want:
            changed += 1
            with open(os.path.join(root, page), "w", encoding="utf-8") as f:
                f.write(want)
            print("%s: written again from %s" % (page, argv[2]))
    for e in errors:
        print("error: " + e, file=sys.stderr)
    print("docs-figures: %d figure%s rewritten%s" % (changed, "" if changed == 1 else "s",
                                                      ", %d error(s)" % len(errors) if errors else ""))
    return 1 if errors else 0


# ---- self-test ---------------------------------------------------------------------------------------------------

SAMPLE_WALK = {"trainer": "rsl_rl", "iterations": 695, "env_steps": 34160640, "train_wall_s": 3411.6,
               "env_steps_per_s": 10210, "share_waiting_on_server": 0.399, "share_learning_update": 0.557,
               "eval": {"episodes": 1000, "lin_vel_error": 0.11185, "yaw_rate_error": 0.06319,
                        "no_fall_fraction": 0.985, "window_s": 15.0, "eval_wall_s": 23.8},
               "eval_untrained": {"episodes": 1000, "lin_vel_error": 0.7638, "yaw_rate_error": 0.5072,
                                  "no_fall_fraction": 0.996, "eval_wall_s": 18.6}}
SAMPLE_PAGE = ("# sample\n\n695 iterations in <!-- fig:walk.train_min -->1 min<!-- /fig --> "
               "(<!-- fig:walk.iterations -->?<!-- /fig -->)\n\n"
               "| trained | <!-- fig:walk.lin_vel -->0<!-- /fig --> | <!-- fig:walk.no_fall -->98.8 %<!-- /fig --> |\n"
               "\n<!-- figs:rough.table -->\nold table\n<!-- /figs -->\n"
               "rough training <!-- fig:rough.train_min -->?<!-- /fig -->, level <!-- fig:rough.terrain_level -->"
               "?<!-- /fig -->\n")
SAMPLE_ROUGH = [{"bench": "rough_eval", "terrain": "slope", "episodes": 200, "lin_vel_error": 0.2, "yaw_rate_error": 0.1,
                 "no_fall_fraction": 0.97, "levels": {"min": 0, "max": 9}},
                {"bench": "rough_eval", "policy": "untrained", "terrain": "stairs up", "episodes": 200, "lin_vel_error": 0.31,
                 "yaw_rate_error": 0.12, "no_fall_fraction": 0.9, "levels": [0, 9]},
                {"train_wall_s": 1200.0, "mean_terrain_level": 4.25}]


def self_test():
    cases = []

    def case(name, ok, detail=""):
        cases.append((name, bool(ok), detail))

    def put(root, rel, obj, lines=False):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            if lines:
                f.write("".join(json.dumps(d) + "\n" for d in obj))
            elif isinstance(obj, str):
                f.write(obj)
            else:
                json.dump(obj, f)

    with tempfile.TemporaryDirectory(prefix="herd-figures.") as tmp:
        # 1. a sample page: the markers are filled from the sample sources, and then agree with them
        root = os.path.join(tmp, "sample")
        put(root, "examples/walk_eval.json", SAMPLE_WALK)
        put(root, "examples/rough_eval.json", SAMPLE_ROUGH, lines=True)
        put(root, "PAGE.md", SAMPLE_PAGE)
        out, res = render(SAMPLE_PAGE, Sources(root))
        want = ["<!-- fig:walk.train_min -->56.9 min<!-- /fig -->", "<!-- fig:walk.iterations -->695<!-- /fig -->",
                "<!-- fig:walk.lin_vel -->0.112 m/s<!-- /fig -->", "<!-- fig:walk.no_fall -->98.5 %<!-- /fig -->",
                "| trained | 0–9 | slope | 200 | 0.200 m/s | 0.100 rad/s | 97.0 % |",
                "| untrained | 0–9 | stairs up | 200 | 0.310 m/s | 0.120 rad/s | 90.0 % |",
                "<!-- fig:rough.train_min -->20.0 min<!-- /fig -->",
                "<!-- fig:rough.terrain_level -->4.25<!-- /fig -->"]
        case("fill: every marker written from the sources", all(w in out for w in want) and "old table" not in out
             and not any(r[4] for r in res), [w for w in want if w not in out] or [r[4] for r in res if r[4]])
        case("fill: the words around the markers kept", out.startswith("# sample\n\n695 iterations in ")
             and "| trained | " in out and "\nrough training " in out)
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: the stale sample page fails on each stale figure", len(b) == 7 and g == 0, b)
        put(root, "PAGE.md", out)
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: the filled page passes", g == 7 and not b, b)
        case("fill: filling twice changes nothing", render(out, Sources(root))[0] == out)
        # the rough file as one JSON object holding the lines gives the same table
        put(root, "examples/rough_eval.json", {"train_wall_s": 1200.0, "mean_terrain_level": 4.25,
                                               "eval": SAMPLE_ROUGH[:2]})
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("rough_eval.json as one object or as JSON lines", g == 7 and not b, b)
        # 2. a changed number in the source is caught, naming the figure
        w = copy.deepcopy(SAMPLE_WALK)
        w["eval"]["no_fall_fraction"] = 0.975
        put(root, "examples/walk_eval.json", w)
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: a changed source number fails, naming the figure", len(b) == 1 and "walk.no_fall" in b[0]
             and "'98.5 %'" in b[0] and "'97.5 %'" in b[0], b)
        put(root, "examples/walk_eval.json", SAMPLE_WALK)
        # 3. a changed figure in the page is caught
        put(root, "PAGE.md", out.replace("0.112 m/s", "0.109 m/s"))
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: a figure edited by hand fails", len(b) == 1 and "walk.lin_vel" in b[0], b)
        # a marked figure's value copied by hand elsewhere on the page is caught
        put(root, "PAGE.md", out + "\nas said above, 98.5 % of the episodes\n")
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: a marked figure copied by hand outside its markers fails", len(b) == 1 and
             "PAGE.md:%d: '98.5 %%', the value of walk.no_fall, is written outside" % (out.count("\n") + 2) in b[0], b)
        # 4. unknown names, broken markers and missing sources are errors, not blanks
        put(root, "PAGE.md", out + "x <!-- fig:walk.no_such -->1<!-- /fig -->\ny <!-- fig:walk.no_fall -->98 %\n")
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: an unknown figure and an unclosed marker fail", len(b) == 2 and "unknown figure" in b[0]
             and "without" in b[1], b)
        os.remove(os.path.join(root, "examples/walk_eval.json"))
        put(root, "PAGE.md", out)
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: a missing source fails, naming the file and its writer", len(b) == 4 and all(
            "examples/walk_eval.json is missing (written by examples/train_walk.py" in x for x in b), b)
        put(root, "examples/walk_eval.json", {k: v for k, v in SAMPLE_WALK.items() if k != "train_wall_s"})
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: a source without the key fails, naming it", len(b) == 1 and "has no train_wall_s" in b[0], b)
        quoted = "`<!-- fig:walk.no_fall -->1 %<!-- /fig -->` and `<!-- figs:NAME -->`\n```\n<!-- fig:x -->\n```\n"
        put(root, "examples/walk_eval.json", SAMPLE_WALK)
        put(root, "PAGE.md", out + quoted)
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("markers quoted in code are examples, left alone", g == 7 and not b
             and render(out + quoted, Sources(root))[0].endswith(quoted), b)
        put(root, "PAGE.md", "<!-- figs:rough.table -->\nunclosed\n")
        g, b = check(root, files=["PAGE.md"], quiet=True)
        case("check: an unclosed block fails", len(b) == 1 and "without a line <!-- /figs -->" in b[0], b)

        # 5. a generated page: equal to its generator's output passes, a changed number fails
        put(root, "gen.py", "import json, os, sys\nd = json.load(open(sys.argv[1]))\n"
                            "open(os.path.join(sys.argv[2], 'page.md'), 'w').write('rate %d\\n' % d['rate'])\n")
        put(root, "out.json", {"rate": 7})
        gen = [("PAGE2.md", ["gen.py", "out.json", "{out}"], "page.md")]
        put(root, "PAGE2.md", "rate 7\n")
        g1, b1, _s = check_generated(root, gen)
        put(root, "out.json", {"rate": 8})
        g2, b2, _s = check_generated(root, gen)
        case("a generated page is checked against its generator's output", g1 == 1 and not b1 and g2 == 0
             and len(b2) == 1 and "PAGE2.md:1:" in b2[0] and "'rate 8'" in b2[0], (b1, b2))

        # 6. the committed pages against copies of the committed sources, one number changed in each
        committed = pages(ROOT)
        used = {}
        for rel, text in committed.items():
            for _line, name, *_rest in render(text, Sources(ROOT))[1]:
                used.setdefault(FIGURES[name][0] if name in FIGURES else "?", set()).add(name)
        g, b = check(ROOT, quiet=True)
        case("the committed pages agree with the committed sources", not b and g > 0, b[:3])
        mutations = {
            "walk": lambda d: d["eval"].__setitem__("no_fall_fraction", d["eval"]["no_fall_fraction"] - 0.01),
            "stand": lambda d: d["eval"].__setitem__("success_rate", d["eval"]["success_rate"] - 0.01),
            "bench": lambda rows: [r.__setitem__("bytes_per_world", r["bytes_per_world"] + 500)
                                   for r in rows if r.get("bench") == "server_memory"],
            "stand_log": None,
            "contact_models": lambda rows: [r.__setitem__("within_1pct_slip", 0.5) for r in rows
                                            if r.get("experiment") == "fig6" and r.get("solver") == "paper-bisection"],
            "rough": lambda d: [r.__setitem__("no_fall_fraction", r["no_fall_fraction"] - 0.01)
                                for r in _rough_rows(d)],
            "solvers": lambda rows: [r.__setitem__(k, 0.5) for r in rows if r.get("bench") == "env_profile"
                                     for k in ("coulomb_measured_fraction", "fallback_fraction", "ccp_fraction")],
        }
        for key in sorted(used):
            if key == "?" or mutations.get(key) is None:
                continue
            mroot = os.path.join(tmp, "mut-" + key)
            for k, (rel, _w) in SOURCES.items():
                if os.path.exists(os.path.join(ROOT, rel)):
                    os.makedirs(os.path.dirname(os.path.join(mroot, rel)), exist_ok=True)
                    shutil.copy(os.path.join(ROOT, rel), os.path.join(mroot, rel))
            data = copy.deepcopy(Sources(ROOT).get(key))
            mutations[key](data)
            put(mroot, SOURCES[key][0], data, lines=SOURCES[key][0].endswith(".jsonl"))
            g, b = check(ROOT, src_root=mroot, quiet=True)
            case("the committed pages fail against %s with one number changed" % SOURCES[key][0], b, b[:1])

        _self_test_solver_page(case, tmp)

    # the accuracy beside the herd / MuJoCo ratios, when the env_vs_mujoco lines carry it
    rows = [dict(d) for d in (Sources(ROOT).get("bench") or []) if isinstance(d, dict)]
    vs = [d for d in rows if d.get("bench") == "env_vs_mujoco"]
    if vs:
        acc = lambda m: {"impulse_err_median": m, "impulse_err_p90": 3 * m, "velocity_err_median": m / 4,
                         "velocity_err_p90": m}
        vs[0].update({"accuracy": {"bound": 0.01}, "herd_accuracy": acc(2e-8), "mujoco_fastest_accuracy": acc(0.23),
                      "mujoco_defaults_accuracy": acc(0.0), "herd_fastest_accuracy": acc(0.0061),
                      "ratio_vs_mujoco_accurate": 5.04,
                      "mujoco_accurate": dict(acc(0.0086), solver="PGS", cone="pyramidal", iterations=10)})
        row = FIGURES["bench.table"][1]({"bench": rows})
        want = ["5.0× its fastest standing configuration within 1 % median contact-impulse error (PGS, pyramidal cone, "
                "10 iterations: 0.86 %; herd's 2e-06 %)", "3 iterations: 23 %)", "its defaults (0 %)", "(herd's 0.61 %)"]
        case("bench.table: the equal-accuracy ratio first, each configuration's impulse error beside its ratio",
             all(w in row for w in want), [w for w in want if w not in row])
        vs[0]["mujoco_accurate"] = vs[0]["ratio_vs_mujoco_accurate"] = None
        row = FIGURES["bench.table"][1]({"bench": rows})
        case("bench.table: no MuJoCo configuration within the bound is said so",
             "no standing configuration within 1 % median contact-impulse error (herd's 2e-06 %)" in row, row)

    for name, ok, detail in cases:
        print("%s - self-test: %s%s" % ("ok" if ok else "not ok", name, "" if ok else ": %s" % (detail,)))
    return sum(ok for _n, ok, _d in cases), sum(not ok for _n, ok, _d in cases)


def _self_test_solver_page(case, tmp):
    """docs/solvers.md against copies of its generator and data: as committed it passes, with one measured number of
    the data changed it fails."""
    (page, argv, _name), = GENERATED_STDLIB
    for variant in ("same", "changed"):
        mroot = os.path.join(tmp, "solvers-" + variant)
        for rel in (page, argv[0], argv[2], "bench/report/provenance.py"):      # the generator's own import
            os.makedirs(os.path.dirname(os.path.join(mroot, rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(mroot, rel))
        if variant == "changed":
            with open(os.path.join(mroot, argv[2])) as f:
                rows = [json.loads(line) for line in f if line.strip()]
            prof = next(d for d in rows if d.get("bench") == "env_profile")
            prof["coulomb_measured_fraction"] = 1.0 - prof["coulomb_measured_fraction"] if \
                prof["coulomb_measured_fraction"] != 0.5 else 0.25
            with open(os.path.join(mroot, argv[2]), "w") as f:
                f.write("".join(json.dumps(d) + "\n" for d in rows))
        g, b, _s = check_generated(mroot, GENERATED_STDLIB)
        if variant == "same":
            case("%s agrees with %s's replay of %s" % (page, argv[0], argv[2]), g == 1 and not b, b)
        else:
            case("%s fails against %s with one number changed" % (page, argv[2]), g == 0 and len(b) == 1
                 and b[0].startswith(page + ":"), b)


def main(argv):
    if argv[1:2] == ["--list"]:
        for name in sorted(FIGURES):
            print("%-26s %-32s %s" % (name, SOURCES[FIGURES[name][0]][0], FIGURES[name][2]))
        return 0
    if argv[1:2] == ["--self-test"]:
        p, f = self_test()
        print("%d passed, %d failed" % (p, f))
        return 1 if f else 0
    if argv[1:2] == ["--check"]:
        good, bad = check(ROOT)
        if not bad:
            print("ok - docs-figures: %d figures agree with their sources" % good)
        ggood, gbad, gskip = check_generated(ROOT)
        for b in gbad:
            print("not ok - " + b)
        for w in gskip:
            print("SKIPPED " + w)
        if ggood:
            print("ok - docs-figures: %d generated page%s as %s write%s %s" % (
                ggood, "" if ggood == 1 else "s", "its generator" if ggood == 1 else "their generators",
                "s" if ggood == 1 else "", "it" if ggood == 1 else "them"))
        p, f = self_test()
        print("%d passed, %d failed%s" % (good + ggood + p, len(bad) + len(gbad) + f,
                                          ", %d skipped" % len(gskip) if gskip else ""))
        return 1 if bad or gbad or f else 0
    if len(argv) > 1:
        sys.stderr.write(__doc__)
        return 2
    return write(ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

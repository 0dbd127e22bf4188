#!/usr/bin/python3
"""The contact-solver page: each solver's model, fallback rate, Coulomb fraction and cost, on the real tasks.

    make solver-report                                         # build herd-bench, then this script (a few minutes)
    /usr/bin/python3 docs/solvers/report.py [--build build] [--out docs] [--worlds 64] [--steps 20] [--repeats 9]
                                            [--profile-steps 100] [--profile-repeats 3] [--envs A,B]
    /usr/bin/python3 docs/solvers/report.py --replay docs/solvers/results.jsonl --out DIR   # the page, run nothing

What it runs, for each env (anymal_c-walk, anymal_c-rough):
  cost       herd-bench env --env E --solvers DEFAULT,A,B,... --threads 1: the same worlds and actions under every
             solver in one process, repeats interleaved; thread CPU time per env step, median over the repeats, and
             each solver's same-repeat ratio to the default (the first), median over the repeats
  models     herd-bench env --profile --env E --solver S (--profile-steps env steps, each pass the same ones), per
             solver: of its contact solves (physics steps with a contact problem), the share the solver flags
             Coulomb / CCP / its own model, the share handed to a fallback, and the share whose Coulomb violation is
             below the solver's tol, measured alike for every solver (coulomb_measured_fraction)
Output: <out>/solvers/results.jsonl (a _meta line, then every JSON line with the command that printed it, "_cmd") and
<out>/solvers.md, written from that file alone (--replay writes it again from a committed file: docs/figures.py
--check compares the two, so the page cannot drift from its data).

The models (the conditions at each solver's solution) are stated in MODELS below, from the solvers' code
(sim/sim_solver*.c, their rows in sim_solver_table.c) and the papers; they are text, not measurements.
Python's standard library only.
"""
import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "report"))
import provenance  # noqa: E402
DEFAULT = "coulomb-stall-admm"
ENVS = ("anymal_c-walk", "anymal_c-rough")

# name -> (the conditions at its solution, its paper, what it returns when it does not converge).  The default first,
# then the others in the solver table's order (sim/sim_solver.h, SIM_SOLVER_ROWS; tests/solver_report_test.py checks).
MODELS = [
    ("coulomb-stall-admm",
     "Coulomb's law (the NCP): Signorini (λ_n ≥ 0, v_n ≥ 0, λ_n v_n = 0), the cone ‖λ_T‖ ≤ μλ_n, sticking contacts "
     "v_T = 0, sliding contacts ‖λ_T‖ = μλ_n with v_T anti-parallel to λ_T.  Where the per-contact sweeps stall, a "
     "direct solve for the same conditions (a semismooth Newton on Alart and Curnier's equations, then modes guessed "
     "and Newton on their equations); only when that finds no solution, before and after ADMM, the CCP answer of "
     "`admm` (flagged per step)",
     "Hwangbo, Lee & Hutter 2018 (Algorithm 2's sweeps) with Coulomb's slip law (Le Lidec et al. 2023, eq. 13); "
     "Alart & Curnier 1991 (the direct solve's Newton); ADMM of Le Lidec et al. 2023, Alg. 3",
     "ADMM's last iterate (in the cones)"),
    ("paper-bisection",
     "Hwangbo et al.'s per-contact model: Signorini and the cone as Coulomb; a sticking contact v_T = 0; a slipping "
     "contact on the ellipse {v_n = 0, ‖λ_T‖ = μλ_n} at the point of least contact kinetic energy, its sliding "
     "velocity opposing λ_T + (μ²λ_n/G_nn) G_nT, not λ_T.  Not Coulomb (the two agree only when G_nT = 0), not "
     "maximum dissipation",
     "Hwangbo, Lee & Hutter 2018, Algorithms 1 and 2",
     "the last sweep, scaled by the dissipation guard"),
    ("pgs",
     "Coulomb's law (the NCP), as `coulomb-stall-admm`, at a fixed point; stops on the NCP ε_abs with De Saxcé's "
     "correction",
     "Le Lidec et al. 2023, Alg. 6",
     "the last sweep, scaled by the dissipation guard (no convergence guarantee)"),
    ("coulomb-bisection",
     "Coulomb's law (the NCP), each contact solved exactly in Algorithm 2's sweeps; a block with no Coulomb slip root "
     "takes the paper model's slip solution",
     "Hwangbo, Lee & Hutter 2018 (Algorithm 2) with Coulomb's slip law (Le Lidec et al. 2023, eq. 13)",
     "the last sweep, scaled by the dissipation guard (it can cycle)"),
    ("admm",
     "the cone complementarity problem (Anitescu's convex relaxation): λ ∈ K, v + μ‖v_T‖ e_n ∈ K*, the two "
     "orthogonal; sliding contacts may separate at v_n = μ‖v_T‖, so it is not Coulomb on them",
     "Le Lidec et al. 2023, Alg. 3 (proximal, adaptive ρ)",
     "the last iterate, in the cones (convergent for any PSD G)"),
    ("cond-vfpi",
     "Coulomb's law (the NCP) at a fixed point of the velocity iteration on the diagonal surrogate W = diag(w_m I); "
     "stops on the fixed-point residual",
     "Lee, Lee & Lee 2023 (contact nodalization and diagonalization)",
     "the last one-shot output, scaled by the dissipation guard (no convergence guarantee)"),
    ("impacts",
     "an impact law where two or more contacts arrive faster than 0.05 m/s: one inelastic impact by Routh's method "
     "with sampled impulse rates (v_n ≥ 0, impulses in the cones, no energy added, but no complementarity); "
     "otherwise `cond-vfpi`",
     "Halm & Posa (set-valued rigid-body dynamics for simultaneous frictional impacts)",
     "the accumulated impulses (impact), or as `cond-vfpi`"),
    ("pgs-hwangbo",
     "Coulomb's law (the NCP) at a fixed point of the seed paper's PGS (normal step α/G_zz, tangential α/max(G_xx, "
     "G_yy), projection on the disc); stops on the impulse change per sweep",
     "Hwangbo, Lee & Hutter 2018, eqs. 17–18",
     "the last sweep, scaled by the dissipation guard"),
]
SOLVERS = [m[0] for m in MODELS]


class ReportError(Exception):
    """results.jsonl lacks what the page needs."""


# ---- measuring ---------------------------------------------------------------------------------------------------

def _commit():
    return provenance.commit("sim envs bench")


def _bench(bench, argv, log):
    """The JSON lines herd-bench prints for argv, each with its command as _cmd."""
    cmd = [bench] + argv
    key = " ".join(["herd-bench"] + argv)
    print("solver-report: " + key, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    log.write("$ %s\n%s" % (key, r.stderr))
    if r.returncode != 0:
        raise ReportError("%s failed (exit %d): %s" % (key, r.returncode, (r.stderr.strip().splitlines() or [""])[-1]))
    out = []
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            d["_cmd"] = key
            out.append(d)
    return out


def measure(opt):
    bench = os.path.join(ROOT, opt.build, "herd-bench")
    if not os.access(bench, os.X_OK):
        raise ReportError("%s is not built (make %s/herd-bench)" % (bench, opt.build))
    os.makedirs(os.path.join(opt.out, "solvers"), exist_ok=True)
    size = ["--worlds", str(opt.worlds), "--steps", str(opt.steps), "--repeats", str(opt.repeats)]
    psize = ["--worlds", str(opt.worlds), "--steps", str(opt.profile_steps), "--repeats", str(opt.profile_repeats)]
    lines, loads = [], [os.getloadavg()[0]]
    t0 = time.time()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(os.path.join(opt.out, "solvers", "log.txt"), "w") as log:
        for env in opt.envs:
            lines += _bench(bench, ["env", "--env", env, "--solvers", ",".join(SOLVERS), "--threads", "1"] + size, log)
            loads.append(os.getloadavg()[0])
            for s in SOLVERS:
                lines += _bench(bench, ["env", "--profile", "--env", env, "--solver", s] + psize, log)
                loads.append(os.getloadavg()[0])
    meta = {"started": started, "commit": _commit(), "machine": provenance.machine(), "wall_s": round(time.time() - t0, 1),
            "load": "%.1f-%.1f" % (min(loads), max(loads)), "nice": os.nice(0),
            "command": "docs/solvers/report.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])}
    path = os.path.join(opt.out, "solvers", "results.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"_meta": meta}) + "\n")
        for d in lines:
            f.write(json.dumps(d) + "\n")
    return path


# ---- the page ----------------------------------------------------------------------------------------------------

def _pct(x):
    """A share in per cent: 0 and 1 exactly as 0 % and 100 %; any other share with the digits that keep it from
    reading as either (0.1 % and 99 % resolved to 0.001 % and 0.01 %)."""
    if x == 0 or x == 1:
        return "%d %%" % (100 * x)
    p = 100.0 * x
    nd = 3 if p < 0.1 else 2 if p > 99 else 1
    while nd < 8 and float("%.*f" % (nd, p)) in (0.0, 100.0):
        nd += 1
    return "%.*f %%" % (nd, p)


def _ratio_span(cost, base):
    """min-max over the repeats of this solver's CPU cost over the default's in the same repeat."""
    a, b = cost["cpu_env_steps_per_s_per_thread_reps"], base["cpu_env_steps_per_s_per_thread_reps"]
    r = [y / x for x, y in zip(a, b)]
    return "%.2f–%.2f" % (min(r), max(r))


def tables(rows):
    """{env: [(solver, profile line, solvers line)]} from the JSON lines, every solver of MODELS for every env."""
    meta = next((d["_meta"] for d in rows if "_meta" in d), None)
    if meta is None:
        raise ReportError("no _meta line")
    envs = []
    for d in rows:
        if d.get("bench") in ("env_profile", "env_solvers") and d.get("env") not in envs:
            envs.append(d["env"])
    if not envs:
        raise ReportError("no env_profile or env_solvers line")
    out = {}
    for env in envs:
        got = []
        for s in SOLVERS:
            prof = [d for d in rows if d.get("bench") == "env_profile" and d.get("env") == env
                    and d.get("solver_name") == s]
            cost = [d for d in rows if d.get("bench") == "env_solvers" and d.get("env") == env and d.get("solver") == s]
            if len(prof) != 1 or len(cost) != 1:
                raise ReportError("%s: %d env_profile and %d env_solvers lines of %s (want one each)"
                                  % (env, len(prof), len(cost), s))
            if cost[0].get("baseline_solver") != DEFAULT:
                raise ReportError("%s: the env_solvers lines' baseline is %s, not %s"
                                  % (env, cost[0].get("baseline_solver"), DEFAULT))
            got.append((s, prof[0], cost[0]))
        out[env] = got
    return meta, out


def page(rows):
    meta, by_env = tables(rows)
    m = meta["machine"]
    L = ["# Contact solvers: models, fallbacks and cost", "",
         "<!-- Generated by docs/solvers/report.py from docs/solvers/results.jsonl (make solver-report); "
         "docs/figures.py --check fails when the two disagree.  Edit the generator, not this page. -->", "",
         "herd has %d contact solvers behind one interface (`sim/sim_solver.h`; a task picks one with its `solver` "
         "config key).  This page states the model each one solves and measures, on the real tasks, how often its "
         "answers satisfy Coulomb's law, how often it falls back, and what a step costs." % len(MODELS), "",
         "## The models", "",
         "The conditions that hold at each solver's solution (from the code, `sim/sim_solver*.c`, and the papers; "
         "text, not measurements).", "",
         "| solver | the conditions at its solution | paper | not converged, it returns |", "|---|---|---|---|"]
    for name, model, paper, unconverged in MODELS:
        L.append("| `%s`%s | %s | %s | %s |" % (name, " (default)" if name == DEFAULT else "", model, paper,
                                                unconverged))
    L += ["", "## Measured on the tasks", "",
          "Measured on %s, %d vCPUs, commit `%s`, started %s, load average %s while it ran, at nice %s (`%s`, "
          "%.0f s).  The machine was shared with other work, so every time is the stepping thread's CPU time, "
          "not wall time, and the ratios compare solvers measured in the same process with their repeats "
          "interleaved." % (m["cpu"], m["cpus"], str(meta["commit"])[:12], meta["started"],
                            str(meta["load"]).replace("-", "–"), meta.get("nice", 0), meta["command"],
                            meta.get("wall_s", 0)), "",
          "- **Coulomb (measured)**: the share of contact solves (physics steps with a contact problem) whose answer "
          "has a Coulomb violation (`sim_contact_coulomb_error`: Signorini, cone and Coulomb's sliding law) below "
          "the solver's tolerance, computed alike for every solver whatever it claims.",
          "- **flagged Coulomb / CCP / own**: what the solver itself reports (`sim_solver_stats.answer`); the rest "
          "did not converge.",
          "- **fallback**: the share handed by a stall detector to the fallbacks (only `coulomb-stall-admm` has "
          "one: the direct Coulomb solve, then ADMM).",
          "- **capped**: physics steps with contacts whose solver stopped unconverged.",
          "- **CPU µs / env step** (`env --solvers`, `env_step` of every world, one thread): the median over the "
          "repeats, and the mean over them (all the steps' CPU time over their number: a repeat with a few very "
          "slow solves shows here, not in the median); **median / default**: the same-repeat ratio of that cost "
          "to `%s`'s, median over the repeats (**repeats**: its smallest and largest value)." % DEFAULT,
          "- **solve µs / physics step**: the contact solve's share of a physics step (`env --profile`, monotonic "
          "clock around the stage; physics steps over 300 µs, preempted or slow, are left out of this mean).", ""]
    for env, got in by_env.items():
        p0, c0 = got[0][1], got[0][2]
        n = sorted(g[1]["contact_solves"] // g[1]["repeats"] for g in got)
        w = c0["warmup"]
        L += ["### `%s`" % env, "",
              "%d worlds from the same resets, each solver stepping them with the same fixed pseudo-random actions "
              "in [-1, 1] (not a trained policy), so the later steps include fallen robots.  Cost (`env --solvers`): "
              "env steps %d–%d of the episodes, %d repeats of %d timed steps, interleaved across the solvers.  "
              "Fractions (`env --profile`): env steps %d–%d, %s contact solves per solver (each of the profile's %d "
              "passes steps the same ones; the fractions are those of one pass), %.1f contacts per physics step on "
              "average under `%s`." % (
                  c0["worlds"], w + 1, w + c0["repeats"] * (c0["steps"] + 1), c0["repeats"], c0["steps"],
                  w + 1, w + p0["steps"], "{:,}".format(n[0]) if n[0] == n[-1] else "{:,}–{:,}".format(n[0], n[-1]),
                  p0["repeats"], p0["mean_contacts"], DEFAULT), "",
              "| solver | Coulomb (measured) | flagged Coulomb | flagged CCP | flagged own model | fallback | capped "
              "| CPU µs / env step: median | mean | median / default | (repeats) | solve µs / physics step |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s, p, c in got:
            reps = c["cpu_env_steps_per_s_per_thread_reps"]
            L.append("| `%s` | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %.2f× | %s | %.2f |" % (
                s, _pct(p["coulomb_measured_fraction"]), _pct(p["coulomb_fraction"]), _pct(p["ccp_fraction"]),
                _pct(p["own_fraction"]), _pct(p["fallback_fraction"]), _pct(p["capped_fraction"]),
                1e6 / c["cpu_env_steps_per_s_per_thread"], statistics.mean(1e6 / r for r in reps),
                1.0 / c["ratio_to_baseline"], _ratio_span(c, c0), p["us_per_physics_step"]["solve"]))
        L.append("")
    L += ["## Reproducing", "",
          "`make solver-report` builds `herd-bench`, runs the measurements above (a few minutes) and writes "
          "`docs/solvers/results.jsonl` (every JSON line with the command that printed it) and this page; the "
          "benchmarks' human tables go to `docs/solvers/log.txt`.  `docs/solvers/report.py --replay "
          "docs/solvers/results.jsonl --out DIR` writes the page again from the committed file alone.", ""]
    return "\n".join(L)


def write_page(rows, out):
    text = page(rows)
    with open(os.path.join(out, "solvers.md"), "w", encoding="utf-8") as f:
        f.write(text)


def read_rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    ap.add_argument("--worlds", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--profile-steps", type=int, default=100, help="env steps of each profile pass (the fractions)")
    ap.add_argument("--profile-repeats", type=int, default=3)
    ap.add_argument("--envs", default=",".join(ENVS))
    ap.add_argument("--replay", default=None, help="results.jsonl of an earlier run: write the page from it, run nothing")
    opt = ap.parse_args(argv[1:])
    opt.envs = [e for e in opt.envs.split(",") if e]
    try:
        path = opt.replay if opt.replay else measure(opt)
        os.makedirs(opt.out, exist_ok=True)
        write_page(read_rows(path), opt.out)
    except (ReportError, OSError, ValueError, KeyError, TypeError) as e:
        print("docs/solvers/report.py: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    print("solver-report: wrote %s" % os.path.join(opt.out, "solvers.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

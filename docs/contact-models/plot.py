#!/usr/bin/python3
"""Figures and the solvers x experiments table of `herd-bench contact-models` (make contact-models-report).

usage: plot.py RESULTS.jsonl OUTDIR

Reads the JSON lines ("bench": "contact-models"; one "experiment" and one "solver" per line), writes one PNG
per figure of the comparative paper (Le Lidec et al. 2023) and of the bisection paper (Fig. 6, Table II)
into OUTDIR, and OUTDIR/table.md (the summary table, one row per solver), also copied into OUTDIR/README.md
between its table markers."""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SCENARIOS = ["trot", "hang", "drop", "random"]


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("bench") == "contact-models":
                rows.append(r)
    return rows


def solvers_of(rows):
    seen = []
    for r in rows:
        if r["solver"] not in seen:
            seen.append(r["solver"])
    return seen


def pick(rows, experiment, **kw):
    return [r for r in rows if r["experiment"] == experiment and all(r.get(k) == v for k, v in kw.items())]


def style(solvers):
    cmap = plt.get_cmap("tab10")
    return {s: cmap(i % 10) for i, s in enumerate(solvers)}


def positive(xs):
    """Values for a log axis: non-positive or missing become NaN (not drawn)."""
    return [x if (x is not None and x > 0) else math.nan for x in xs]


def save(fig, outdir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)


def slide_panel(runs, solvers, col, key, ylabel, title, err_label, norm):
    """One figure of the sliding cube: `key` against its Coulomb solution, and the error (divided by norm(run))."""
    first = next(iter(runs.values()))
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(first["t"], first[key + "_coulomb"], "k--", lw=2, label="Coulomb (analytic)")
    for s in solvers:
        if s not in runs:
            continue
        r = runs[s]
        ax[0].plot(r["t"], r[key], color=col[s], label=s)
        ax[1].plot(r["t"], [(a - b) / norm(r) for a, b in zip(r[key], r[key + "_coulomb"])], color=col[s], label=s)
    ax[0].set_xlabel("t (s)")
    ax[0].set_ylabel(ylabel)
    ax[0].set_title(title)
    ax[0].legend(fontsize=8)
    ax[1].axhline(0, color="k", lw=0.8)
    ax[1].set_xlabel("t (s)")
    ax[1].set_ylabel(err_label)
    ax[1].set_title("error against Coulomb")
    return fig


def fig_cube_slide(rows, solvers, col, outdir):
    runs = {r["solver"]: r for r in pick(rows, "cube_slide")}
    if not runs:
        return
    fig = slide_panel(runs, solvers, col, "x", "x (m)", "Cube sliding on a plane: trajectory (Fig. 9)",
                      "x - x_Coulomb (m)", lambda r: 1.0)
    save(fig, outdir, "fig09_cube_slide_trajectory.png")
    fig = slide_panel(runs, solvers, col, "ke", "kinetic energy (J)", "Cube sliding on a plane: energy (Fig. 10)",
                      "(KE - KE_Coulomb) / KE(0)", lambda r: r["ke_coulomb"][0] or 1.0)
    save(fig, outdir, "fig10_cube_slide_energy.png")


def fig_cube_push(rows, solvers, col, outdir):
    runs = {r["solver"]: r for r in pick(rows, "cube_push")}
    if not runs:
        return
    first = next(iter(runs.values()))
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    ax[0][0].plot(first["t"], first["v_coulomb"], "k--", lw=2, label="Coulomb (analytic)")
    for s in solvers:
        if s in runs:
            ax[0][0].plot(runs[s]["t"], runs[s]["v"], color=col[s], label=s)
    ax[0][0].axvline(first["t_slide_coulomb"], color="grey", lw=0.8)
    ax[0][0].set_ylabel("v_x (m/s)")
    ax[0][0].set_title("Cube pushed by a growing force (Fig. 11)")
    ax[0][0].legend(fontsize=8)
    ax[0][1].plot(first["t"], [-f for f in first["force"]], "k--", lw=1.5, label="-F (stiction)")
    for s in solvers:
        if s in runs:
            ax[0][1].plot(runs[s]["t"], runs[s]["friction_x"], color=col[s], label=s)
    ax[0][1].set_ylabel("total friction force x (N)")
    ax[0][1].legend(fontsize=8)
    for s in solvers:
        if s in runs:
            ax[1][0].plot(runs[s]["t"], runs[s]["internal_force"], color=col[s], label=s)
    ax[1][0].set_xlabel("t (s)")
    ax[1][0].set_ylabel("sum |f_T,i| - |sum f_T,i| (N)")
    ax[1][0].set_title("internal (cancelling) friction forces")
    ax[1][1].plot(first["t"], first["normal_front_statics"], "k--", lw=1.5, label="front, rigid statics")
    for s in solvers:
        if s in runs:
            ax[1][1].plot(runs[s]["t"], runs[s]["normal_front"], color=col[s], label=s + " front")
            ax[1][1].plot(runs[s]["t"], runs[s]["normal_back"], color=col[s], ls=":")
    ax[1][1].set_xlabel("t (s)")
    ax[1][1].set_ylabel("normal force of a corner pair (N)")
    ax[1][1].set_title("front (solid) and back (dotted) pairs")
    ax[1][1].legend(fontsize=7)
    save(fig, outdir, "fig11_cube_push.png")


def fig_heavy(rows, solvers, col, outdir):
    pts = pick(rows, "heavy_on_light")
    if not pts:
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for s in solvers:
        rs = sorted([r for r in pts if r["solver"] == s], key=lambda r: r["mass_ratio"])
        if not rs:
            continue
        x = [r["mass_ratio"] for r in rs]
        ax[0].loglog(x, positive([r["budget_eps_abs_rel"] for r in rs]), "o-", color=col[s])
        ax[0].loglog(x, positive([r["default_eps_abs_rel"] for r in rs]), "x:", color=col[s])
        ax[1].loglog(x, positive([r["run_penetration_between_m"] for r in rs]), "o-", color=col[s])
        ax[1].loglog(x, positive([r["run_penetration_ground_m"] for r in rs]), "x:", color=col[s])
    ax[0].set_xlabel("mass ratio heavy / light")
    ax[0].set_ylabel("eps_abs / total weight")
    ax[0].set_title("Heavy cube on a light one: first step (Fig. 12)\n(o-: 5000 iterations, x: defaults)", fontsize=10)
    ax[1].set_xlabel("mass ratio heavy / light")
    ax[1].set_ylabel("max penetration over 0.5 s (m)")
    ax[1].set_title("sinking at the solver's defaults\n(o-: between the cubes, x: into the ground)", fontsize=10)
    handles = [plt.Line2D([], [], color=col[s], marker="o", label=s) for s in solvers]
    fig.legend(handles=handles, loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.82, 1))
    fig.savefig(os.path.join(outdir, "fig12_heavy_on_light.png"), dpi=110)
    plt.close(fig)


def fig_self(rows, solvers, col, outdir):
    for exp, key, fname, title in (("dt", "dt", "fig14_self_consistency_dt.png", "Self-consistency vs time step (Fig. 14)"),
                                   ("tol", "tol", "fig15_self_consistency_tol.png",
                                    "Self-consistency vs stopping tolerance (Fig. 15)")):
        runs = pick(rows, exp)
        if not runs:
            continue
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for r in runs:
            ax.loglog(r[key], positive(r["pose_error_m"]), "o-", color=col[r["solver"]], label=r["solver"])
        ax.set_xlabel("dt (s)" if exp == "dt" else "solver tolerance (its own measure)")
        ax.set_ylabel("final pose error vs the finest run (m)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        save(fig, outdir, fname)


def fig_accuracy(rows, solvers, col, outdir):
    runs = pick(rows, "accuracy")
    if not runs:
        return
    for xkey, fname, xlabel, title in (("max_iter", "fig16_accuracy_iterations.png", "iterations (max_iter, tol 1e-10)",
                                        "eps_abs vs iterations (Fig. 16)"),
                                       ("us_per_solve", "fig17_accuracy_time.png", "time per problem (us)",
                                        "eps_abs vs time (Fig. 17)")):
        fig, axs = plt.subplots(1, 4, figsize=(16, 4), sharey=True)
        for ax, sc in zip(axs, SCENARIOS):
            for r in runs:
                if r["scenario"] != sc:
                    continue
                ls = "-" if r["start"] == "warm" else "--"
                ax.loglog(positive(r[xkey]), positive(r["eps_abs_median"]), ls, marker=".", color=col[r["solver"]],
                          label="%s %s" % (r["solver"], r["start"]))
            ax.set_title("%s: %s" % (sc, title), fontsize=9)
            ax.set_xlabel(xlabel)
        axs[0].set_ylabel("median eps_abs (N, De Saxce)")
        handles = [plt.Line2D([], [], color=col[s], label=s) for s in solvers]
        handles += [plt.Line2D([], [], color="k", ls="-", label="warm start"),
                    plt.Line2D([], [], color="k", ls="--", label="cold start")]
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        fig.savefig(os.path.join(outdir, fname), dpi=110)
        plt.close(fig)


def fig6(rows, solvers, col, outdir):
    runs = pick(rows, "fig6")
    if not runs:
        return
    fig, axs = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
    width = 0.8 / max(1, len(solvers))
    for ax, key, title in zip(axs, ("within_1pct", "within_1pct_stick", "within_1pct_slip"),
                              ("all contact steps", "stick-only steps", "steps with a slipping contact")):
        for i, s in enumerate(solvers):
            ys = []
            for sc in SCENARIOS:
                r = [x for x in runs if x["solver"] == s and x["scenario"] == sc]
                v = r[0].get(key) if r else None
                ys.append(100 * v if v is not None else 0)
            ax.bar([k + i * width for k in range(4)], ys, width, color=col[s], label=s)
        ax.axhline(99.6, color="k", ls="--", lw=0.8)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(4)])
        ax.set_xticklabels(SCENARIOS)
        ax.set_title("Fig. 6, %s" % title, fontsize=10)
    axs[0].set_ylabel("% within 1 % of tight PGS (Coulomb)")
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(solvers), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(os.path.join(outdir, "fig06_agreement.png"), dpi=110)
    plt.close(fig)


def table2(rows, solvers, col, outdir):
    runs = pick(rows, "table2")
    if not runs:
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(solvers))
    for i, s in enumerate(solvers):
        ys = []
        for sc in SCENARIOS:
            r = [x for x in runs if x["solver"] == s and x["scenario"] == sc]
            ys.append(r[0]["s_per_100k_steps"] if r else 0)
        ax.bar([k + i * width for k in range(4)], ys, width, color=col[s], label=s)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(4)])
    ax.set_xticklabels(SCENARIOS)
    ax.set_ylabel("s per 100k steps (whole step)")
    ax.set_title("Table II: each solver driving each scenario")
    ax.legend(fontsize=7)
    save(fig, outdir, "table2_time.png")


def fmt(x, spec="%.3g", scale=1.0):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return spec % (x * scale)


def summary(rows, solvers, outdir):
    lines = []
    head = ["solver", "slide decel vs μg", "slide max ΔKE/KE0", "push: slides at (Coulomb %s s)",
            "push: stick creep m/s", "push: internal N", "heavy/light 1e6: ε_abs/W (5000 it)", "1e6: sinking m",
            "dt 1 ms: pose err m", "tol 1e-6: pose err m", "warm iters to ε 1e-3 N (trot/hang/drop/random)",
            "Fig. 6 all % (trot/hang/drop/random)", "Fig. 6 stick-only %", "Fig. 6 slipping %",
            "Table II s/100k (trot/hang/drop/random)"]
    tstar = None
    for r in pick(rows, "cube_push"):
        tstar = r.get("t_slide_coulomb")
    head[3] = head[3] % fmt(tstar, "%.3f")
    table = []
    for s in solvers:
        cell = []
        r = pick(rows, "cube_slide", solver=s)
        cell.append(fmt(r[0]["decel_gap_rel"], "%+.2f %%", 100) if r else "–")
        cell.append(fmt(r[0]["energy_gap_max_rel"], "%.2f %%", 100) if r else "–")
        r = pick(rows, "cube_push", solver=s)
        cell += [fmt(r[0]["t_slide"], "%.3f s"), fmt(r[0]["stick_creep_max"], "%.1e"),
                 fmt(r[0]["internal_force_max_N"], "%.2f")] if r else ["–"] * 3
        r = [x for x in pick(rows, "heavy_on_light", solver=s) if x["mass_ratio"] >= 1e6]
        cell += [fmt(r[0]["budget_eps_abs_rel"], "%.1e"), fmt(r[0]["run_penetration_between_m"], "%.1e")] if r else ["–"] * 2
        r = pick(rows, "dt", solver=s)
        if r:
            e = dict(zip(r[0]["dt"], r[0]["pose_error_m"]))
            cell.append(fmt(e.get(0.001), "%.1e"))
        else:
            cell.append("–")
        r = pick(rows, "tol", solver=s)
        if r:
            e = dict(zip(r[0]["tol"], r[0]["pose_error_m"]))
            v = [val for k, val in e.items() if abs(k - 1e-6) < 1e-12]
            cell.append(fmt(v[0] if v else None, "%.1e"))
        else:
            cell.append("–")
        acc = []
        for sc in SCENARIOS:
            r = pick(rows, "accuracy", solver=s, scenario=sc, start="warm")
            acc.append(fmt(r[0]["iterations_to_target"], "%.0f") if r and r[0]["iterations_to_target"] is not None
                       else ">512")
        cell.append(" / ".join(acc))
        for key in ("within_1pct", "within_1pct_stick", "within_1pct_slip"):
            v = []
            for sc in SCENARIOS:
                r = pick(rows, "fig6", solver=s, scenario=sc)
                v.append(fmt(r[0][key], "%.1f", 100) if r else "–")
            cell.append(" / ".join(v))
        v = []
        for sc in SCENARIOS:
            r = pick(rows, "table2", solver=s, scenario=sc)
            v.append(fmt(r[0]["s_per_100k_steps"], "%.2f") if r else "–")
        cell.append(" / ".join(v))
        table.append(["`%s`" % s] + cell)
    split = 10  # cubes and self-consistency | ANYmal scenarios
    for cols in (range(0, split), [0] + list(range(split, len(head)))):
        lines.append("| " + " | ".join(head[c] for c in cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for row in table:
            lines.append("| " + " | ".join(row[c] for c in cols) + " |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write("<!-- generated by docs/contact-models/plot.py from results.jsonl; do not edit -->\n")
        f.write(text)
    # the written comparison carries the same tables between two markers
    readme = os.path.join(outdir, "README.md")
    begin, end = "<!-- table:begin (plot.py) -->\n", "<!-- table:end -->"
    if os.path.exists(readme):
        with open(readme) as f:
            doc = f.read()
        i, j = doc.find(begin), doc.find(end)
        if 0 <= i < j:
            with open(readme, "w") as f:
                f.write(doc[:i + len(begin)] + text + doc[j:])
    return text


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    rows = load(sys.argv[1])
    if not rows:
        sys.stderr.write("plot.py: no contact-models lines in %s\n" % sys.argv[1])
        return 1
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    solvers = solvers_of(rows)
    col = style(solvers)
    for f in (fig_cube_slide, fig_cube_push, fig_heavy, fig_self, fig_accuracy, fig6, table2):
        f(rows, solvers, col, outdir)
    print(summary(rows, solvers, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""docs/solvers/report.py's page on sample JSON lines: the figures it writes, and the errors it raises for lines that
are missing or inconsistent.  Prints one line per case and "N passed, M failed" (a `make test` stage)."""
import copy
import importlib.util
import os
import re
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
spec = importlib.util.spec_from_file_location("solver_report", os.path.join(ROOT, "docs", "solvers", "report.py"))
rep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rep)

META = {"_meta": {"started": "2026-01-02 03:04 UTC", "commit": "0123456789ab", "load": "2.5-3.5", "nice": 10,
                  "machine": {"cpu": "Sample CPU", "cpus": 2}, "wall_s": 95.0, "command": "docs/solvers/report.py"}}


def sample(env="anymal_c-walk"):
    rows = [META]
    for k, s in enumerate(rep.SOLVERS):
        rows.append({"bench": "env_solvers", "env": env, "solver": s, "baseline_solver": rep.DEFAULT, "worlds": 64,
                     "threads": 1, "steps": 10, "repeats": 3, "warmup": 25,
                     "cpu_env_steps_per_s_per_thread": 50000.0 / (1 + 0.5 * k), "ratio_to_baseline": 1 / (1 + 0.5 * k),
                     "cpu_env_steps_per_s_per_thread_reps": [50000.0 / (1 + 0.5 * k), 40000.0 / (1 + 0.5 * k) / (
                         1 + 0.1 * (k > 0)), 60000.0 / (1 + 0.5 * k)]})
        rows.append({"bench": "env_profile", "env": env, "solver_name": s, "mean_contacts": 3.25, "steps": 100,
                     "repeats": 2,
                     "contact_solves": 25600 + 2 * k, "coulomb_measured_fraction": 0.9 - 0.1 * k,
                     "coulomb_fraction": 0.997 if s == rep.DEFAULT else 0.0, "ccp_fraction": 0.0025 if k == 0 else 0,
                     "own_fraction": 0.5 if k == 1 else 0.0, "fallback_fraction": 0.034 if k == 0 else 0.0,
                     "capped_fraction": 0.0004 * k, "us_per_physics_step": {"solve": 1.5 + k}})
    return rows


def main():
    cases = []

    def case(name, ok, detail=""):
        cases.append((name, bool(ok), detail))

    text = rep.page(sample())
    lines = text.splitlines()
    # the mean column: the mean over the sample repeats of 1e6 over each repeat's rate
    want = ["| `coulomb-stall-admm` | 90.0 % | 99.70 % | 0.2 % | 0 % | 3.4 % | 0 % | 20.0 | 20.6 | 1.00× | 1.00–1.00 "
            "| 1.50 |",
            "| `paper-bisection` | 80.0 % | 0 % | 0 % | 50.0 % | 0 % | 0.040 % | 30.0 | 32.1 | 1.50× | 1.50–1.65 | 2.50 |",
            "| `pgs-hwangbo` | 20.0 % | 0 % | 0 % | 0 % | 0 % | 0.3 % | 90.0 | 96.2 | 4.50× | 4.50–4.95 | 8.50 |"]
    case("each solver's row: measured and flagged fractions, fallback, capped, CPU µs, ratio to the default, solve µs",
         all(w in lines for w in want), [w for w in want if w not in lines])
    case("the model table has every solver, the default marked", all(
        any(l.startswith("| `%s`%s |" % (s, " (default)" if s == rep.DEFAULT else "")) for l in lines)
        for s in rep.SOLVERS))
    case("the conditions of the run are stated: machine, commit, load, nice, thread CPU time",
         "Sample CPU, 2 vCPUs, commit `0123456789ab`" in text and "load average 2.5–3.5" in text
         and "at nice 10" in text and "CPU time" in text)
    case("the windows and the contact solves of one profile pass", "env steps 26–58 of the episodes, 3 repeats of 10"
         in text and "env steps 26–125, 12,800–12,807 contact solves per solver" in text, text[text.find("### "):][:700])
    case("the same lines give the same page", rep.page(sample()) == text)
    shares = [(0, "0 %"), (1, "100 %"), (0.5, "50.0 %"), (0.99994, "99.99 %"), (0.99996, "99.996 %"), (0.999996, "99.9996 %"),
              (0.0004, "0.040 %"), (2e-6, "0.0002 %"), (0.0125, "1.2 %")]
    case("shares near 0 and 1 never read as 0 % or 100 %", all(rep._pct(x) == w for x, w in shares),
         [(x, rep._pct(x)) for x, w in shares if rep._pct(x) != w])
    rows = sample()
    rows[4]["coulomb_measured_fraction"] = 0.55
    case("a changed number changes the page", "| `paper-bisection` | 55.0 % |" in rep.page(rows))
    two = sample() + sample("anymal_c-rough")[1:]
    t2 = rep.page(two)
    case("one section per env", "### `anymal_c-walk`" in t2 and "### `anymal_c-rough`" in t2)

    def raises(rows, what):
        try:
            rep.page(rows)
        except rep.ReportError as e:
            return what in str(e), str(e)
        return False, "no error"

    rows = [d for d in sample() if not (d.get("bench") == "env_profile" and d.get("solver_name") == "admm")]
    ok, msg = raises(rows, "0 env_profile and 1 env_solvers lines of admm")
    case("a solver without its profile line is an error naming it", ok, msg)
    rows = sample() + [copy.deepcopy(sample()[2])]
    ok, msg = raises(rows, "2 env_profile and 1 env_solvers lines of coulomb-stall-admm")
    case("a solver measured twice is an error", ok, msg)
    rows = sample()
    for d in rows:
        if d.get("bench") == "env_solvers":
            d["baseline_solver"] = "admm"
    ok, msg = raises(rows, "baseline is admm")
    case("ratios against another baseline are an error", ok, msg)
    ok, msg = raises(sample()[1:], "no _meta line")
    case("no _meta line is an error", ok, msg)
    with tempfile.TemporaryDirectory(prefix="herd-solver-report.") as tmp:
        src = os.path.join(tmp, "results.jsonl")
        with open(src, "w") as f:
            f.write("".join(rep.json.dumps(d) + "\n" for d in sample()))
        rc = rep.main(["report.py", "--replay", src, "--out", tmp])
        with open(os.path.join(tmp, "solvers.md"), encoding="utf-8") as f:
            case("--replay writes the page from the file", rc == 0 and f.read() == text)
        with open(src, "w") as f:
            f.write("".join(rep.json.dumps(d) + "\n" for d in sample()[1:]))
        case("--replay of a file without _meta exits 1", rep.main(["report.py", "--replay", src, "--out", tmp]) == 1)

    with open(os.path.join(ROOT, "sim", "sim_solver.h"), encoding="utf-8") as f:
        table = re.findall(r'^\s*X\(\w+, "([a-z0-9-]+)"\)', f.read(), re.M)
    case("the page's models are the solver table's rows, in its order (sim/sim_solver.h SIM_SOLVER_ROWS), the "
         "default first", table and rep.SOLVERS == [rep.DEFAULT] + [s for s in table if s != rep.DEFAULT],
         (table, rep.SOLVERS))

    for name, ok, detail in cases:
        print("%s - solver-report: %s%s" % ("ok" if ok else "not ok", name, "" if ok else ": %s" % (detail,)))
    f = sum(not ok for _n, ok, _d in cases)
    print("%d passed, %d failed" % (len(cases) - f, f))
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())

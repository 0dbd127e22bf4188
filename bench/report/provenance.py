"""Where a report's figures come from, as the generated pages state it: the machine (CPU model, the CPUs this
process may run on, the kernel) and the commit, marked when the measured code has uncommitted changes.
bench/report/run.py (docs/benchmarks.md) and docs/solvers/report.py (docs/solvers.md) both use it."""
import os
import platform
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def sh(cmd):
    """A shell command's stdout (stripped), run in the repository."""
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()


def march(build="build"):
    """The instruction set the binaries of `build` were compiled for (-march in the Makefile's flags stamp)."""
    try:
        with open(os.path.join(ROOT, build, ".flags")) as f:
            flags = f.read().split()
    except OSError:
        return "unknown"
    found = [w.split("=", 1)[1] for w in flags if w.startswith("-march=")]
    return found[-1] if found else "unknown"


def machine(host=False):
    """{"cpu", "cpus", "kernel", "march"} (and "host" when asked) of this machine and of build/'s binaries."""
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    out = {"cpu": cpu, "cpus": len(os.sched_getaffinity(0)), "kernel": platform.release(), "march": march()}
    if host:
        out["host"] = platform.node()
    return out


def commit(paths):
    """HEAD's short hash, with " (+ uncommitted changes)" when a tracked file under paths (a space-separated
    list of folders) differs from it."""
    c = sh("git rev-parse --short=12 HEAD") or "unknown"
    if sh("git status --porcelain --untracked-files=no -- %s" % paths):
        c += " (+ uncommitted changes)"
    return c

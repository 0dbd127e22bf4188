#!/usr/bin/python3
"""Python client vs C client throughput against the same herd-server, in the same run.

    /usr/bin/python3 clients/python/bench.py                      # 4096 worlds of anymal_c-walk, tcp
    /usr/bin/python3 clients/python/bench.py --transport ipc --batch 1024 --repeats 5

What it does:
  1. starts build/herd-server (--threads T, default: all cores) on a free tcp://127.0.0.1 port or an
     ipc:// path (or uses --address, a server already running);
  2. builds build/herd-bench-c-client from clients/python/bench_c_client.c (the C client library,
     clients/c/herd_client.h) when it is missing or older than its sources;
  3. writes K sets of random actions in [-1, 1] to a file that both sides read, so both do exactly the
     same physics (same seeds 1000 + i, same warm-up, same actions);
  4. alternates R times: the C client (one process: make, reset, W warm-up steps, S timed steps) and
     the Python client (herd.make_vec ... env.step(actions), infos and all), each one repeat at a time,
     so both see the same machine state;
  5. prints one JSON line (medians over repeats) and a short table on stderr:
     {"bench":"python_client", "steps_per_s", "c_client_steps_per_s", "fraction", ...}.
batch 0 (default) is one full-batch step in flight (VectorEnv.step); batch B > 0 splits the worlds into
batches of B that each keep one step in flight (send / recv, EnvPool-style) on both sides.
"""
import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import herd     # clients/python, this script's directory, is sys.path[0]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

C_SOURCES = [os.path.join(HERE, "bench_c_client.c")]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def build_c_driver(build):
    exe = os.path.join(build, "herd-bench-c-client")
    # a C client program links the client and protocol layers only
    libs = [os.path.join(build, "libherd_client.a"), os.path.join(build, "libherd_protocol.a")]
    if not all(os.path.exists(lib) for lib in libs):
        subprocess.check_call(["make", "-s", "-C", ROOT] + libs)
    deps = C_SOURCES + libs + [os.path.join(ROOT, "clients", "c", "herd_client.h")]
    if os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(d) for d in deps):
        return exe
    cmd = [os.environ.get("CC", "gcc"), "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra",
           "-I" + ROOT, "-I" + os.path.join(ROOT, "envs"),
           "-I" + os.path.join(ROOT, "protocol"), "-I" + os.path.join(ROOT, "clients", "c"),
           "-o", exe] + C_SOURCES + libs + ["-lzmq", "-lmsgpackc", "-lm"]
    subprocess.check_call(cmd)
    return exe


def start_server(server_bin, endpoint, threads):
    args = [server_bin, "--bind", endpoint, "--log-level", "warn", "--stats-interval", "0"]
    if threads:
        args += ["--threads", str(threads)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("herd-server exited: %s" % proc.stderr.read().decode(errors="replace"))
        try:
            with herd.Client(endpoint, timeout=0.5) as c:
                c.ping()
            return proc
        except herd.HerdError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("herd-server did not answer on %s" % endpoint)


def python_repeat(env, actions, steps, warmup, batch):
    """One repeat on the Python side: reset (seeds 1000 + i), warm-up, timed steps.  Returns
    (steps/s, client CPU seconds per step)."""
    n = env.num_envs
    env.reset(seed=1000)
    K = actions.shape[0]
    for k in range(warmup):
        env.step(actions[k % K])
    c0, t0 = time.process_time(), time.perf_counter()
    if batch <= 0 or batch >= n:
        for k in range(warmup, warmup + steps):
            obs, rew, term, trunc, infos = env.step(actions[k % K])
    else:
        firsts = list(range(0, n, batch))
        ids = [np.arange(f, min(f + batch, n)) for f in firsts]
        done = [0] * len(firsts)
        req_of = {}
        for b, f in enumerate(firsts):
            req_of[id(env.send(actions[warmup % K][ids[b]], ids[b]))] = b
        by_first = {f: b for b, f in enumerate(firsts)}
        active = len(firsts)
        while active:
            obs, rew, term, trunc, infos = env.recv()
            b = by_first[int(infos["env_id"][0])]
            done[b] += 1
            if done[b] == steps:
                active -= 1
                continue
            k = warmup + done[b]
            env.send(actions[k % K][ids[b]], ids[b])
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return n * steps / dt, cpu / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--worlds", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per repeat")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=0, help="0: full-batch steps; B: batches of B worlds in flight")
    ap.add_argument("--threads", type=int, default=0, help="server worker threads (0: one per core)")
    ap.add_argument("--transport", choices=["tcp", "ipc"], default="tcp")
    ap.add_argument("--address", default=None, help="use a running server instead of starting one")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--target", type=float, default=0.85)
    ap.add_argument("--nsets", type=int, default=8, help="action sets used in turn")
    opt = ap.parse_args()

    server_bin = os.path.join(opt.build, "herd-server")
    if opt.address is None and not os.path.exists(server_bin):
        subprocess.check_call(["make", "-s", "-C", ROOT, server_bin])
    c_exe = build_c_driver(opt.build)
    tmp = tempfile.mkdtemp(prefix="herd-pybench-")
    proc = None
    try:
        if opt.address:
            endpoint = opt.address
        elif opt.transport == "ipc":
            endpoint = "ipc://" + os.path.join(tmp, "herd.sock")
        else:
            endpoint = "tcp://127.0.0.1:%d" % free_port()
        if not opt.address:
            proc = start_server(server_bin, endpoint, opt.threads)
        threads = herd.Client(endpoint, timeout=10).hello()["threads"]
        env = herd.make_vec(opt.env, opt.worlds, address=endpoint, seed=1000, timeout=120.0)
        rng = np.random.default_rng(12345)
        actions = rng.uniform(-1, 1, size=(opt.nsets, opt.worlds, env.act_dim)).astype(np.float32)
        afile = os.path.join(tmp, "actions.f32")
        actions.tofile(afile)
        c_rates, py_rates, cpu = [], [], []
        for _ in range(opt.repeats):
            out = subprocess.run([c_exe, "--address", endpoint, "--env", opt.env, "--worlds", str(opt.worlds),
                                  "--steps", str(opt.steps), "--warmup", str(opt.warmup), "--actions", afile,
                                  "--nsets", str(opt.nsets), "--batch", str(opt.batch), "--repeats", "1"],
                                 check=True, capture_output=True, text=True).stdout
            c_rates.append(json.loads(out.strip().splitlines()[-1])["steps_per_s"])
            rate, cpu_per_step = python_repeat(env, actions, opt.steps, opt.warmup, opt.batch)
            py_rates.append(rate)
            cpu.append(cpu_per_step)
        env.close()
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    py, c = statistics.median(py_rates), statistics.median(c_rates)
    frac = py / c if c else 0.0
    line = {"bench": "python_client", "env": opt.env, "worlds": opt.worlds, "threads": threads,
            "batch": opt.batch, "transport": opt.transport if not opt.address else "external",
            "steps": opt.steps, "repeats": opt.repeats, "steps_per_s": round(py, 1),
            "c_client_steps_per_s": round(c, 1), "fraction": round(frac, 4), "target": opt.target,
            "pass": frac >= opt.target, "python_client_cpu_ms_per_step": round(1e3 * statistics.median(cpu), 3),
            "python_repeats": [round(x, 1) for x in py_rates], "c_repeats": [round(x, 1) for x in c_rates],
            "cpu": platform.processor() or platform.machine()}
    print(json.dumps(line), flush=True)
    print("python client bench: %s, %d worlds, server threads %d, batch %d, %s"
          % (opt.env, opt.worlds, threads, opt.batch, line["transport"]), file=sys.stderr)
    print("  C client       %10.0f steps/s" % c, file=sys.stderr)
    print("  Python client  %10.0f steps/s  = %.3f of C (target >= %.2f: %s); client CPU %.2f ms per step"
          % (py, frac, opt.target, "PASS" if frac >= opt.target else "FAIL", 1e3 * statistics.median(cpu)),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

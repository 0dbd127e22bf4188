#!/usr/bin/python3
"""Multi-server test: three herd-servers on loopback, one trainer spreading 3,000 worlds over them.

Run through tests/multiserver/run.sh (which builds the drivers and bounds the time); by hand:

    /usr/bin/python3 tests/multiserver/multiserver_test.py --server build/herd-server \
        --ping /tmp/herd-ping --c-trainer /tmp/herd-trainer [--worlds 3000] [--steps 30] [--timeout 2]

Checks, each printed as "ok - ..." or "not ok - ...", then "N passed, M failed":
  python-spread      herd.make_vec over [s1, s2, s3] (the Python client's address list) gives exactly the
                     observations, rewards, flags and autoreset infos of the same worlds on s1 alone, step
                     by step, through several episodes (episode_seconds=0.2 s: an episode is 10 steps)
  c-spread           the C trainer (tests/multiserver/herd_trainer.c) prints the same per-step hashes
                     spread over three servers as on one
  python-kill        SIGKILL of s2 while a step is in flight: the trainer gets HerdTimeoutError naming s2's
                     endpoint within the configured timeout (+ slack); s1 and s3 still answer
  c-kill             the same with the C trainer (error line on stderr naming the endpoint, exit 3)
  shutdown           the surviving servers exit 0 on SIGTERM
The servers run with one worker thread each (the machine may have only two cores).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

ap = argparse.ArgumentParser()
ap.add_argument("--server", default=os.path.join(ROOT, "build", "herd-server"))
ap.add_argument("--ping", required=True, help="herd-ping binary (deploy/herd_ping.c)")
ap.add_argument("--c-trainer", required=True, help="herd-trainer binary (tests/multiserver/herd_trainer.c)")
ap.add_argument("--worlds", type=int, default=3000)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--timeout", type=float, default=2.0, help="the trainers' reply timeout (s)")
ap.add_argument("--slack", type=float, default=15.0,
                help="allowed beyond the timeout for the error (s): a hang detector, not a speed bound (the error must "
                     "name the configured timeout, and a busy machine may deliver it seconds late)")
args = ap.parse_args()

passed = failed = 0


def result(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - %s%s" % (name, (": " + detail) if detail else ""), flush=True)
    else:
        failed += 1
        print("not ok - %s: %s" % (name, detail), flush=True)


class Server:
    """A herd-server child on tcp://127.0.0.1:<port chosen by the server>, one worker thread."""

    def __init__(self, name, logdir):
        self.name = name
        self.logpath = os.path.join(logdir, name + ".log")
        self.log = open(self.logpath, "wb")
        self.proc = subprocess.Popen([args.server, "--bind", "tcp://127.0.0.1:*", "--threads", "1",
                                      "--stats-interval", "0", "--log-level", "info"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = None
        deadline = time.monotonic() + 20
        while self.endpoint is None:
            with open(self.logpath, "rb") as f:      # the banner names the endpoint with its port
                m = re.search(rb"endpoint\s+(tcp://127\.0\.0\.1:\d+)", f.read())
            if m:
                self.endpoint = m.group(1).decode()
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("%s did not start: %s" % (name, self.tail()))
            else:
                time.sleep(0.05)
        r = subprocess.run([args.ping, self.endpoint, "--wait", "10", "--quiet"], timeout=30)
        if r.returncode != 0:
            self.kill()
            raise RuntimeError("%s does not answer ping on %s" % (name, self.endpoint))

    def tail(self):
        with open(self.logpath, "rb") as f:
            return f.read()[-2000:].decode(errors="replace")

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout=15):
        """SIGTERM, wait; returns the exit status (SIGKILL and -9 if it does not stop)."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
        return self.proc.returncode


def ping(endpoint):
    return subprocess.run([args.ping, endpoint, "--timeout", "2000", "--quiet"], timeout=10).returncode == 0


def actions(n, k, act_dim):
    import numpy as np
    return np.random.default_rng(1000 + k).uniform(-1, 1, size=(n, act_dim)).astype(np.float32)


# ------------------------------------------------------------------------------------------------------

def python_spread(eps):
    import numpy as np
    import herd
    kw = dict(seed=2024, autoreset_mode="NEXT_STEP", timeout=30.0, episode_seconds=0.2)
    n = args.worlds
    t0 = time.monotonic()
    with herd.make_vec("anymal_c-walk", n, address=eps, **kw) as spread, \
            herd.make_vec("anymal_c-walk", n, address=eps[0], **kw) as single:
        counts = [s[3] for s in spread.sessions]
        firsts = [s[2] for s in spread.sessions]
        want = [n // 3 + (k < n % 3) for k in range(3)]
        if counts != want or [s[0] for s in spread.sessions] != list(eps):
            return result("python-spread", False, "sessions %s, expected %s worlds on %s" % (spread.sessions, want, eps))
        o3, _ = spread.reset()
        o1, _ = single.reset()
        if not np.array_equal(o3, o1):
            return result("python-spread", False, "reset observations differ (first world %d)"
                          % np.argwhere((o3 != o1).any(axis=1))[0][0])
        ended = autoresets = 0
        for k in range(args.steps):
            a = actions(n, k, spread.act_dim)
            r3 = spread.step(a)
            r1 = single.step(a)
            for name, x, y in zip(("obs", "reward", "terminated", "truncated"), r3[:4], r1[:4]):
                if x.shape != y.shape:
                    return result("python-spread", False, "step %d: %s has shape %s spread, %s on one server"
                                  % (k, name, x.shape, y.shape))
                if not np.array_equal(x, y):
                    w = int(np.argwhere((x != y).reshape(n, -1).any(axis=1))[0][0])
                    where = spread.sessions[int(np.searchsorted(firsts, w, "right")) - 1][0]
                    return result("python-spread", False, "step %d: %s differs, first at world %d (served by %s)"
                                  % (k, name, w, where))
            for key in ("autoreset", "_autoreset"):
                if (key in r3[4]) != (key in r1[4]) or (key in r3[4] and not np.array_equal(r3[4][key], r1[4][key])):
                    return result("python-spread", False, "step %d: infos[%r] differs" % (k, key))
            ended += int((r3[2] | r3[3]).sum())
            autoresets += int(r3[4].get("autoreset", np.zeros(1, bool)).sum())
        if ended < n or autoresets < n:
            return result("python-spread", False, "only %d episodes ended / %d autoresets in %d steps: the test "
                          "does not cross episodes" % (ended, autoresets, args.steps))
    result("python-spread", True, "%d worlds as %s over 3 servers == 1 server, %d steps, %d episodes ended, %.1f s"
           % (n, counts, args.steps, ended, time.monotonic() - t0))


def c_spread(eps):
    def run(endpoints):
        r = subprocess.run([args.c_trainer, "--endpoints", ",".join(endpoints), "--worlds", str(args.worlds),
                            "--steps", str(args.steps), "--seed", "7", "--timeout-ms", "30000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return r.returncode, r.stdout.decode(), r.stderr.decode()
    t0 = time.monotonic()
    rc3, out3, err3 = run(eps)
    rc1, out1, err1 = run(eps[:1])
    if rc3 or rc1:
        return result("c-spread", False, "trainer failed: %s%s" % (err3, err1))
    h3 = [l for l in out3.splitlines() if l.startswith("hash")]
    h1 = [l for l in out1.splitlines() if l.startswith("hash")]
    if len(h3) != args.steps + 1 or h3 != h1:
        first = next((a for a, b in zip(h3, h1) if a != b), "count %d vs %d" % (len(h3), len(h1)))
        return result("c-spread", False, "hashes differ: 3 servers %s vs 1 server" % first)
    if len(set(h3)) != len(h3):
        return result("c-spread", False, "repeated hashes: the trainer hashes nothing that changes")
    done = [l for l in out3.splitlines() if l.startswith("done")]
    result("c-spread", True, "%d hashes equal; %s; %.1f s" % (len(h3), done[0] if done else "", time.monotonic() - t0))


def python_kill(servers):
    import herd
    import numpy as np
    eps = [s.endpoint for s in servers]
    victim = servers[1]
    n = args.worlds
    with herd.make_vec("anymal_c-walk", n, address=eps, seed=5, timeout=args.timeout) as envs:
        envs.reset()
        for k in range(3):
            envs.step(actions(n, k, envs.act_dim))
        err = None
        t_kill = None
        for k in range(3, 13):          # the kill lands while this step is in flight, or before the next
            envs.step_async(actions(n, k, envs.act_dim))
            if t_kill is None:
                victim.kill()
                t_kill = time.monotonic()
            try:
                envs.step_wait()
            except herd.HerdError as e:
                err = e
                break
        elapsed = time.monotonic() - t_kill
        if err is None:
            return result("python-kill", False, "no error in 10 steps after killing %s" % victim.endpoint)
        ok = (isinstance(err, herd.HerdTimeoutError) and err.address == victim.endpoint
              and victim.endpoint in str(err) and ("within %.3g s" % args.timeout) in str(err)
              and elapsed <= args.timeout + args.slack)
        detail = "%s after %.2f s (timeout %.1f s): %s" % (type(err).__name__, elapsed, args.timeout, err)
        if not ok:
            return result("python-kill", False, "expected HerdTimeoutError naming %s within %.1f s; got %s"
                          % (victim.endpoint, args.timeout + args.slack, detail))
    others = [s.endpoint for s in servers if s is not victim]
    if not all(ping(e) for e in others):
        return result("python-kill", False, "the other servers stopped answering after the kill")
    result("python-kill", True, detail)


def c_kill(servers):
    eps = [s.endpoint for s in servers]
    victim = servers[2]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([args.c_trainer, "--endpoints", ",".join(eps), "--worlds", str(args.worlds),
                              "--steps", "0", "--timeout-ms", str(int(args.timeout * 1000))],
                             stdout=out, stderr=err)
        try:
            deadline = time.monotonic() + 60
            while True:
                out.seek(0)
                text = out.read()
                if text.count(b"hash step") >= 3:
                    break
                if p.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    return result("c-kill", False, "trainer did not get going: %s" % err.read().decode())
                time.sleep(0.02)
            victim.kill()
            t_kill = time.monotonic()
            try:
                rc = p.wait(args.timeout + args.slack + 5)
            except subprocess.TimeoutExpired:
                return result("c-kill", False, "trainer still running %.1f s after the kill"
                              % (time.monotonic() - t_kill))
            elapsed = time.monotonic() - t_kill
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err.seek(0)
        msg = err.read().decode().strip()
    ok = rc == 3 and victim.endpoint in msg and "TIMEOUT" in msg and elapsed <= args.timeout + args.slack
    detail = "exit %d after %.2f s (timeout %.1f s): %s" % (rc, elapsed, args.timeout, msg)
    result("c-kill", ok, detail if ok else "expected exit 3 naming %s within %.1f s; got %s"
           % (victim.endpoint, args.timeout + args.slack, detail))


def on_term(signum, frame):
    raise SystemExit(124)       # run the finally blocks: no server outlives the test


def main():
    signal.signal(signal.SIGTERM, on_term)
    try:
        import numpy  # noqa: F401
        import herd   # noqa: F401
        have_py = hasattr(herd, "make_vec")
    except Exception as e:      # the Python client is optional here: the C checks still run
        print("SKIPPED python checks: cannot import the Python client (%s)" % e, flush=True)
        have_py = False

    logdir = tempfile.mkdtemp(prefix="herd-multiserver-")
    servers = []
    t0 = time.monotonic()
    try:
        servers = [Server("s%d" % (i + 1), logdir) for i in range(3)]
        eps = [s.endpoint for s in servers]
        print("servers: %s (logs in %s)" % (", ".join(eps), logdir), flush=True)
        if have_py:
            python_spread(eps)
        c_spread(eps)
        if have_py:
            python_kill(servers)                       # kills s2
            servers.append(Server("s4", logdir))       # a replacement for the C kill test
            c_kill([servers[0], servers[3], servers[2]])   # kills s3
        else:
            c_kill(servers)                            # kills s3
        survivors = [s for s in servers if s.alive()]
        codes = [s.stop() for s in survivors]
        result("shutdown", all(c == 0 for c in codes),
               "%d surviving servers exited %s on SIGTERM" % (len(survivors), codes))
    except Exception as e:
        result("multiserver", False, "%s: %s" % (type(e).__name__, e))
        for s in servers:
            print("--- %s log:\n%s" % (s.name, s.tail()))
    finally:
        for s in servers:
            s.kill()
    print("multi-server test: %.1f s" % (time.monotonic() - t0))
    if failed == 0:
        import shutil
        shutil.rmtree(logdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

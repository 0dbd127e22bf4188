#!/usr/bin/python3
"""Load and fault driver for herd-server: a mix of clients against one server on
loopback, for a given time, sampling the server's RSS and throughput.

Clients (one thread each, plain DEALER sockets, msgpack):
  trainers     step 256 worlds of anymal_c-walk, two requests in flight
  small        a 1-world session stepping one request at a time: its latencies give p50 / p99
  heavy        decimation 50, 10,000 solver sweeps, tolerance 1e-11, 128 contacts: 16-world steps
  slow reader  pipelines 30 resets of 1,024 worlds (6 MB) and reads nothing for 20 s at a time: over the
               server's 4 MiB budget (--client-max-queued-bytes), part of its replies are dropped
  quitter      makes, pipelines steps and closes its socket mid-step (linger 0), again and again (32 heavy
               worlds: within max_step_seconds, and three such steps within client_max_inflight_seconds)
Every sample (--sample seconds) prints one JSON line: time, server RSS (kB), world-steps/s (stats),
small-session latency p50 / p99 (ms) over the sample, errors seen by the clients.  At the end a summary
line; exit status 1 when a client saw an unexpected error or the RSS of the last quarter exceeds the
first sample's by more than --rss-slack MiB.

  tests/load/load.py --server build/herd-server --seconds 60        # starts its own server
  tests/load/load.py --endpoint tcp://127.0.0.1:5555 --seconds 600  # an existing one (no RSS)
"""
import argparse, json, os, subprocess, sys, threading, time

import msgpack, zmq

HEAVY = {"decimation": 50, "solver_max_iter": 10000, "solver_tol": 1e-11, "max_contacts": 128, "solver": 0}


class Client:
    def __init__(self, ctx, ep, linger=0, rcvhwm=None):
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, linger)
        if rcvhwm:      # ZeroMQ reads ahead up to RCVHWM messages whether the application reads or not
            self.sock.setsockopt(zmq.RCVHWM, rcvhwm)
            self.sock.setsockopt(zmq.RCVBUF, 4096)
        self.sock.connect(ep)
        self.next_id = 1
        self.tokens = {}                    # session -> its token (owned sessions, PROTOCOL.md section 9)

    def send(self, op, **f):
        if "session" in f and "token" not in f and f["session"] in self.tokens:
            f["token"] = self.tokens[f["session"]]
        rid = self.next_id
        self.next_id += 1
        self.sock.send(msgpack.packb(dict(v=1, id=rid, op=op, **f)))
        return rid

    def recv(self, timeout_ms=120000):
        if not self.sock.poll(timeout_ms):
            raise TimeoutError("no reply")
        return msgpack.unpackb(self.sock.recv())

    def call(self, op, **f):
        rid = self.send(op, **f)
        r = self.recv()
        while r["id"] != rid:               # a late reply to an earlier request (pipelined, or a retried ping)
            r = self.recv()
        if not r["ok"]:
            raise RuntimeError(f'{op}: {r["error"]["code"]}: {r["error"]["message"]}')
        if op == "make" and "token" in r:
            self.tokens[r["session"]] = r["token"]
        return r

    def close(self):
        self.sock.close(0)


def zeros(n, ad=12):
    return {"dtype": "float32", "shape": [n, ad], "data": bytes(n * ad * 4)}


class Load:
    def __init__(self, ep, seconds):
        self.ep, self.seconds = ep, seconds
        self.ctx = zmq.Context()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.lat, self.errors, self.counts = [], [], {}

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def error(self, who, e):
        with self.lock:
            self.errors.append(f"{who}: {e}")

    def run_guarded(self, who, fn):
        try:
            fn()
        except Exception as e:          # noqa: BLE001 - every failure is reported
            if not self.stop.is_set():
                self.error(who, repr(e))

    def trainer(self):
        c = Client(self.ctx, self.ep)
        sid = c.call("make", env="anymal_c-walk", num_worlds=256, seed=1)["session"]
        c.call("reset", session=sid)
        a = zeros(256)
        pend = [c.send("step", session=sid, actions=a) for _ in range(2)]
        while not self.stop.is_set():
            r = c.recv()
            if not r["ok"]:
                raise RuntimeError(r["error"])
            self.count("trainer_steps")
            pend.append(c.send("step", session=sid, actions=a))
        c.close()

    def small(self):
        c = Client(self.ctx, self.ep)
        sid = c.call("make", env="anymal_c-walk", num_worlds=1, seed=2)["session"]
        c.call("reset", session=sid)
        a = zeros(1)
        while not self.stop.is_set():
            t0 = time.monotonic()
            c.call("step", session=sid, actions=a)
            with self.lock:
                self.lat.append(time.monotonic() - t0)
        c.call("close", session=sid)
        c.close()

    def heavy(self):
        c = Client(self.ctx, self.ep)
        sid = c.call("make", env="anymal_c-walk", num_worlds=16, config=HEAVY)["session"]
        c.call("reset", session=sid)
        while not self.stop.is_set():
            c.call("step", session=sid, actions=zeros(16))
            self.count("heavy_steps")
        c.close()

    def slow_reader(self):
        c = Client(self.ctx, self.ep, rcvhwm=1)
        sid = c.call("make", env="anymal_c-walk", num_worlds=1024, seed=3)["session"]
        while not self.stop.is_set():
            for _ in range(30):
                c.send("reset", session=sid)
            self.stop.wait(20)
            while c.sock.poll(500):
                c.sock.recv()
                self.count("slow_reader_replies")
            self.count("slow_reader_asked", 30)
        c.close()

    def quitter(self):
        while not self.stop.is_set():
            c = Client(self.ctx, self.ep)
            sid = c.call("make", env="anymal_c-walk", num_worlds=32, config=HEAVY)["session"]
            c.call("reset", session=sid)
            for _ in range(3):
                c.send("step", session=sid, actions=zeros(32))
            self.stop.wait(0.5)
            c.close()                       # mid-step: its queued steps are cancelled; the session expires
            self.count("quits")
            self.stop.wait(2)

    def stats(self, c):
        return c.call("stats")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="herd-server binary to start (else --endpoint)")
    ap.add_argument("--endpoint", default="ipc:///tmp/herd-load-%d.sock" % os.getpid())
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--rss-slack", type=float, default=64, help="MiB the RSS may grow past the first sample")
    args = ap.parse_args()

    proc = None
    if args.server:
        proc = subprocess.Popen([args.server, "--bind", args.endpoint, "--threads", args.threads,
                                 "--session-timeout", "30", "--client-max-queued-bytes", "4M",
                                 "--log-level", "warn", "--stats-interval", "0"])
    L = Load(args.endpoint, args.seconds)
    try:
        run(args, L, proc)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
        L.ctx.destroy(linger=0)


def run(args, L, proc):
    probe = Client(L.ctx, args.endpoint)
    for _ in range(100):
        try:
            probe.send("ping")
            probe.recv(200)
            break
        except TimeoutError:
            continue
    kinds = [L.trainer] * args.trainers + [L.small, L.heavy, L.slow_reader, L.quitter]
    threads = [threading.Thread(target=L.run_guarded, args=(k.__name__, k), daemon=True) for k in kinds]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    samples = []
    while time.monotonic() - t0 < args.seconds:
        time.sleep(min(args.sample, max(0.0, args.seconds - (time.monotonic() - t0))))
        st = L.stats(probe)
        with L.lock:
            lat, L.lat = sorted(L.lat), []
            nerr = len(L.errors)
        s = {"t_s": round(time.monotonic() - t0, 1), "rss_kb": rss_kb(proc.pid) if proc else None,
             "steps_per_s": round(st["steps_per_s"], 1), "sessions": st["sessions"], "worlds": st["worlds"],
             "small_steps": len(lat),
             "small_p50_ms": round(1e3 * lat[len(lat) // 2], 2) if lat else None,
             "small_p99_ms": round(1e3 * lat[max(0, int(len(lat) * 0.99) - 1)], 2) if lat else None,
             "client_errors": nerr}
        samples.append(s)
        print(json.dumps(s), flush=True)
    L.stop.set()
    deadline = time.monotonic() + 120       # a heavy step in flight may take a while to come back
    for t in threads:
        t.join(timeout=max(0.1, deadline - time.monotonic()))
    ok = not L.errors
    rss = [s["rss_kb"] for s in samples if s["rss_kb"]]
    growth_mib = None
    if len(rss) >= 2:
        tail = rss[-max(1, len(rss) // 4):]
        growth_mib = (max(tail) - rss[0]) / 1024
        ok = ok and growth_mib <= args.rss_slack
    p99s = [s["small_p99_ms"] for s in samples if s["small_p99_ms"] is not None]
    summary = {"summary": True, "seconds": args.seconds, "ok": ok, "rss_first_kb": rss[0] if rss else None,
               "rss_max_kb": max(rss) if rss else None, "rss_growth_mib": growth_mib,
               "steps_per_s_mean": round(sum(s["steps_per_s"] for s in samples) / max(1, len(samples)), 1),
               "small_p99_ms_worst": max(p99s) if p99s else None, "counts": L.counts, "errors": L.errors[:10]}
    print(json.dumps(summary), flush=True)
    probe.close()
    if proc:
        proc.terminate()
        try:
            rc = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = -9
        if rc != 0:
            print(json.dumps({"server_exit": rc}), flush=True)
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The cost of watching: step throughput of a big session with and without a viewer polling poses.

    /usr/bin/python3 clients/python/bench_poses.py                    # 4096 worlds, 16 watched at 30 Hz
    /usr/bin/python3 clients/python/bench_poses.py --worlds 4096 --watched 16 --hz 30 --repeats 6 --seconds 3

A trainer steps all worlds of an anymal_c-walk session as fast as it can (full-batch env.step, fixed
random actions) while, in alternate periods of --seconds, a second client (its own connection and thread,
as the browser viewer has) asks for the poses and contacts of --watched worlds of the same session --hz times
a second (latest=True, as a viewer reads; --ordered: behind the steps in flight).  Periods alternate off / on --repeats times so both see the same machine state.  Prints one JSON
line (medians over repeats: steps/s off and on, their ratio, the poses round-trip time) and a short table.
Starts build/herd-server (--threads, default 2) unless --address is given.
"""
import argparse
import json
import statistics
import sys
import threading
import time

import numpy as np

import herd
from herd.client import Client
from herd.local import LocalServer


class Poller(threading.Thread):
    """Polls poses of `ids` of a session at `hz` while `on` is set; records round-trip times."""

    def __init__(self, address, session, ids, hz, latest, token=None):
        super().__init__(daemon=True)
        self.client = Client(address, timeout=30)
        if token is not None:           # sessions are owned (PROTOCOL.md section 9): the viewer holds a token
            self.client.use_token(session, token)
        self.error = None
        self.session, self.ids, self.period, self.latest = session, np.asarray(ids, np.int32), 1.0 / hz, latest
        self.on = threading.Event()
        self.stop = threading.Event()
        self.rtts = []
        self.polls = 0

    def run(self):
        try:
            self._poll()
        except Exception as e:          # noqa: BLE001 - reported by main: a benchmark without reads is void
            self.error = e
        finally:
            self.client.close()

    def _poll(self):
        nxt = time.perf_counter()
        while not self.stop.is_set():
            if not self.on.wait(0.05):
                nxt = time.perf_counter()
                continue
            t0 = time.perf_counter()
            rep = self.client.poses(self.session, world_ids=self.ids, contacts=True, latest=self.latest)
            self.rtts.append(time.perf_counter() - t0)
            self.polls += 1
            assert rep["body_pos"].shape[0] == len(self.ids)
            nxt += self.period
            time.sleep(max(0.0, nxt - time.perf_counter()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--env", default="anymal_c-walk")
    ap.add_argument("--worlds", type=int, default=4096)
    ap.add_argument("--watched", type=int, default=16)
    ap.add_argument("--hz", type=float, default=30.0)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--ordered", action="store_true",
                    help="ordered reads (wait for the step in flight) instead of latest=True (a viewer's)")
    a = ap.parse_args(argv)
    srv = None if a.address else LocalServer(threads=a.threads)
    address = a.address or srv.address
    try:
        env = herd.make_vec(a.env, a.worlds, address=address, seed=1)
        env.reset(seed=1)
        acts = [np.random.default_rng(k).uniform(-1, 1, (a.worlds, env.act_dim)).astype(np.float32) for k in range(8)]
        for k in range(20):
            env.step(acts[k % 8])
        session = env.sessions[0][1]
        poller = Poller(address, session, np.linspace(0, a.worlds - 1, a.watched).astype(int), a.hz,
                        not a.ordered, token=env._client.token(session))
        poller.start()
        rates = {False: [], True: []}
        for _ in range(a.repeats):
            for watching in (False, True):
                if watching:
                    poller.on.set()
                t0, n = time.perf_counter(), 0
                while time.perf_counter() - t0 < a.seconds:
                    env.step(acts[n % 8])
                    n += 1
                rates[watching].append(n * a.worlds / (time.perf_counter() - t0))
                poller.on.clear()
        poller.stop.set()
        poller.join()
        env.close()
        if poller.error is not None or poller.polls == 0:
            print("bench_poses: FAILED: the poses poller %s" % ("failed: %s" % poller.error if poller.error
                                                                else "read nothing"), file=sys.stderr)
            return 1
    finally:
        if srv:
            srv.stop()
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    ratios = [y / x for x, y in zip(rates[False], rates[True])]
    res = {"bench": "poses_cost", "env": a.env, "worlds": a.worlds, "watched": a.watched, "hz": a.hz,
           "threads": a.threads, "repeats": a.repeats, "seconds": a.seconds, "latest": not a.ordered,
           "steps_per_s_off": round(off), "steps_per_s_on": round(on), "ratio_on_off": round(on / off, 4),
           "ratio_median_of_pairs": round(statistics.median(ratios), 4),
           "ratio_min": round(min(ratios), 4), "ratio_max": round(max(ratios), 4),
           "polls": poller.polls, "polls_per_s": round(poller.polls / (a.repeats * a.seconds), 1),
           "poll_rtt_ms_median": round(1e3 * statistics.median(poller.rtts), 3) if poller.rtts else None,
           "poll_rtt_ms_p90": round(1e3 * float(np.percentile(poller.rtts, 90)), 3) if poller.rtts else None,
           "step_ms_median": round(1e3 * a.worlds / off, 2)}
    print(json.dumps(res))
    print("%d worlds of %s: %.0f steps/s unwatched, %.0f steps/s with %d worlds' poses polled at %g Hz "
          "(ratio %.3f, pairs %.3f .. %.3f); poses round trip %.2f ms median, %.2f ms p90, %.1f polls/s "
          "(one step of all worlds: %.1f ms)"
          % (a.worlds, a.env, off, on, a.watched, a.hz, on / off, min(ratios), max(ratios),
             res["poll_rtt_ms_median"] or 0, res["poll_rtt_ms_p90"] or 0, res["polls_per_s"], res["step_ms_median"]),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Live summary of one or more herd-servers, from the protocol's ``stats`` op.

    python3 -m herd.stats tcp://127.0.0.1:5555                 # a line every 2 s until Ctrl-C
    python3 -m herd.stats tcp://a:5555,tcp://b:5555 --once     # one line per server, then exit
    python3 -m herd.stats ADDRESS --json --once                # the raw stats replies, one JSON object a line

Each line: server, uptime, sessions, worlds, world-steps/s (the server's ~10 s window), requests/s and
errors/s (between two samples; on the first line, and so with --once, the mean since the server started),
total steps.  Exit status: 0; 3 when a server does not answer in --timeout.
"""
import argparse
import json
import sys
import time

from .client import Client
from .errors import HerdError


def _rate(st, prev, dt, key):
    """Per second: between two samples, or for the first sample the mean since the server started."""
    if prev is not None and dt > 0:
        return (st[key] - prev[key]) / dt
    up = float(st.get("uptime_s", 0.0))
    return st[key] / up if up > 0 else 0.0


def _line(addr, st, prev, dt):
    rate = lambda k: _rate(st, prev, dt, k)  # noqa: E731
    return ("%-28s up %8.0f s  sessions %3d  worlds %7d  %10.0f steps/s  %7.1f req/s  %5.1f err/s  steps %d"
            % (addr, st["uptime_s"], st["sessions"], st["worlds"], st["steps_per_s"], rate("requests"),
               rate("errors"), st["steps"]))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m herd.stats", description=__doc__.split("\n\n")[0])
    ap.add_argument("address", help="endpoint(s): tcp://HOST:PORT, comma-separated, or a DNS name with several addresses")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between samples (default 2)")
    ap.add_argument("--once", action="store_true", help="one sample, then exit")
    ap.add_argument("--count", type=int, default=0, help="stop after this many samples (0 = until Ctrl-C)")
    ap.add_argument("--json", action="store_true", help="print the raw stats replies as JSON lines")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for a reply")
    a = ap.parse_args(argv)
    if a.interval <= 0 or a.timeout <= 0:
        ap.error("--interval and --timeout must be > 0")
    count = 1 if a.once else a.count
    try:
        with Client(a.address, timeout=a.timeout) as c:
            prev, t_prev, k = [None] * len(c.addresses), None, 0
            while True:
                t = time.monotonic()
                for i, addr in enumerate(c.addresses):
                    st = c.stats(server=i)
                    if a.json:
                        print(json.dumps({"address": addr, **{k2: v for k2, v in st.items() if not k2.startswith("_")}}),
                              flush=True)
                    else:
                        print(_line(addr, st, prev[i], t - t_prev if t_prev else 0), flush=True)
                    prev[i] = st
                t_prev, k = t, k + 1
                if count and k >= count:
                    return 0
                time.sleep(a.interval)
    except HerdError as e:
        print("herd.stats: %s" % e, file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())

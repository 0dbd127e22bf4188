#!/usr/bin/python3
"""Exercises a running herd-server through every operation (hello, ping, make, reset, step, stats, model,
poses, close), the three autoreset modes, subsets, seeds, pipelining, owned sessions (a second client, the
read-only view token), ~25 malformed or invalid requests and a shutdown with a step in flight.
Used by server/tools/valgrind_check.sh; also a quick smoke test:

    /usr/bin/python3 server/tools/drive.py ENDPOINT [--term PID]
    /usr/bin/python3 server/tools/drive.py ENDPOINT --expiry [--term PID]

The sessions of the full drive sit idle while others are driven, for as long as the server takes (seconds
under valgrind on a busy machine): run it against a server that does not expire sessions
(--session-timeout 0).  --expiry drives only session expiry, against a server with a short
--session-timeout: it makes a session, leaves it idle, waits (watching the server's session count, which
does not touch the session) until the server has expired it, then checks that the session is gone.

Needs python3-zmq, python3-msgpack, python3-numpy (Debian).  Exit status 0 when every reply was as
expected.  With --term PID it sends SIGTERM to PID at the end (the full drive: while a step is in flight,
and checks the reply)."""
import itertools, os, signal, struct, sys, time

import msgpack
import numpy as np
import zmq

ep = sys.argv[1]
term_pid = int(sys.argv[sys.argv.index("--term") + 1]) if "--term" in sys.argv else None
expiry_only = "--expiry" in sys.argv
EXPIRY_DEADLINE_S = 600      # a server that has not expired an idle session by then never will

ctx = zmq.Context()
sock = ctx.socket(zmq.DEALER)
sock.setsockopt(zmq.LINGER, 0)
sock.connect(ep)
ids = itertools.count(1)
pending = {}
tokens = {}     # session -> the token its make reply gave (PROTOCOL.md section 9): sent with every request


def send(op, **kw):
    rid = next(ids)
    msg = {"v": 1, "id": rid, "op": op}
    for k, v in kw.items():
        msg[k] = v
        if k == "session" and v in tokens and "token" not in kw:
            msg["token"] = tokens[v]
    sock.send(msgpack.packb(msg))
    return rid


REPLY_TIMEOUT_MS = 300000     # a hang detector, not a speed bound: replies under valgrind take up to seconds


def recv(rid, timeout=REPLY_TIMEOUT_MS):
    while rid not in pending:
        if not sock.poll(timeout):
            sys.exit("timeout waiting for reply %d" % rid)
        r = msgpack.unpackb(sock.recv())
        pending[r["id"]] = r
    return pending.pop(rid)


def call(op, **kw):
    r = recv(send(op, **kw))
    if not r["ok"]:
        sys.exit(("%s failed: %s" % (op, r["error"]))[:400])
    return r


def expect(code, raw=None, version=1, **req):
    if raw is not None:
        sock.send(raw)
        rid = 0
    else:
        rid = next(ids)
        if "session" in req and req["session"] in tokens and "token" not in req:
            req = dict(req, token=tokens[req["session"]])
        sock.send(msgpack.packb({"v": version, "id": rid, **req}))
    r = recv(rid)
    if r["ok"] or r["error"]["code"] != code:
        sys.exit(("expected %s for %r, got %r" % (code, req.get("op") if req else raw[:40], r))[:400])


def T(a):
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.tobytes()}


def A(t):
    return np.frombuffer(t["data"], dtype=t["dtype"]).reshape(t["shape"])


if expiry_only:
    s = call("make", env="anymal_c-walk", num_worlds=2, seed=1)
    tokens[s["session"]] = s["token"]
    t0 = time.monotonic()
    while call("stats")["sessions"] > 0:       # the server-wide stats name no session: they keep none alive
        if time.monotonic() - t0 > EXPIRY_DEADLINE_S:
            sys.exit("the idle session was not expired within %d s" % EXPIRY_DEADLINE_S)
        time.sleep(0.2)
    expect("UNKNOWN_SESSION", op="stats", session=s["session"])
    expect("UNKNOWN_SESSION", op="reset", session=s["session"])
    if term_pid:
        os.kill(term_pid, signal.SIGTERM)
    print("drive --expiry: ok (expired after %.1f s)" % (time.monotonic() - t0), file=sys.stderr)
    sys.exit(0)

views = {}
hello = call("hello")
assert hello["protocol"] == 1 and len(hello["envs"]) >= 2
call("ping")
sessions = {}
for mode, n in (("next_step", 7), ("same_step", 5), ("disabled", 3)):
    s = call("make", env="anymal_c-walk", num_worlds=n, seed=3, autoreset=mode, config={"episode_seconds": 0.1})
    sessions[mode] = (s["session"], n)
    tokens[s["session"]] = s["token"]
    views[s["session"]] = s.get("view_token")
rng = np.random.default_rng(0)
for mode, (sid, n) in sessions.items():
    call("reset", session=sid)
    call("reset", session=sid, world_ids=T(np.array([n - 1, 0], np.int32)), seeds=T(np.array([5, 6], np.uint64)))
    call("reset", session=sid, seed=9)
    for k in range(12):
        a = rng.uniform(-1, 1, (n, 12)).astype(np.float32)
        if mode == "disabled":
            r = recv(send("step", session=sid, actions=T(a)))
            if not r["ok"]:
                assert r["error"]["code"] == "EPISODE_ENDED", r
                call("reset", session=sid)
            continue
        r = call("step", session=sid, actions=T(a), reward_terms=bool(k % 2))
        assert A(r["obs"]).shape == (n, 48)
        if mode == "same_step":
            assert "final_obs" in r["info"]
        sub = np.array([n - 1, 1], np.int32)
        call("step", session=sid, world_ids=T(sub), actions=T(a[:2]))
# scene and poses (ordered and latest, with contacts)
sid, n = sessions["next_step"]
model = call("model", session=sid)
assert model["scene"]["bodies"], model.keys()
r = call("poses", session=sid, world_ids=[0, n - 1], contacts=True)
assert A(r["body_pos"]).shape[:2] == (2, len(model["scene"]["bodies"])) and "count" in r["contacts"], r.keys()
call("poses", session=sid, latest=True)
# owned sessions: another client gets UNKNOWN_SESSION without the token, and the view token reads only
other = ctx.socket(zmq.DEALER)
other.setsockopt(zmq.LINGER, 0)
other.connect(ep)
view = views.get(sid)
for op, extra, code in (("step", {"actions": T(np.zeros((n, 12), np.float32))}, "UNKNOWN_SESSION"),
                        ("stats", {}, "UNKNOWN_SESSION"),
                        ("poses", {"token": view}, None),
                        ("step", {"token": view, "actions": T(np.zeros((n, 12), np.float32))}, "UNKNOWN_SESSION")):
    if op == "poses" and view is None:
        continue
    other.send(msgpack.packb({"v": 1, "id": 1, "op": op, "session": sid, **extra}))
    if not other.poll(REPLY_TIMEOUT_MS):
        sys.exit("timeout waiting for the second client's %s" % op)
    r = msgpack.unpackb(other.recv())
    if code is None:
        assert r["ok"], r
    else:
        assert not r["ok"] and r["error"]["code"] == code, r
other.close()
# pipelining on one session
rids = [send("step", session=sid, world_ids=[i], actions=T(np.zeros((1, 12), np.float32))) for i in range(n)]
for rid in reversed(rids):
    assert recv(rid)["ok"]
# errors
expect("BAD_MESSAGE", raw=b"")
expect("BAD_MESSAGE", raw=b"\xc1")
expect("BAD_MESSAGE", raw=b"\xdd\xff\xff\xff\xff\x00")
expect("BAD_MESSAGE", raw=msgpack.packb({"v": 1, "id": 0, "op": "ping"}) + b"\x00")
expect("BAD_MESSAGE", raw=b"\x91" * 100 + b"\x00")
expect("BAD_VERSION", version=2, op="ping")
expect("UNKNOWN_OP", op="jump")
expect("MISSING_FIELD", op="step", actions=T(np.zeros((n, 12), np.float32)))
expect("BAD_FIELD", op="make", env="anymal_c-walk", num_worlds=-1)
expect("BAD_FIELD", op="reset", session=sid, extra=1)
expect("UNKNOWN_ENV", op="make", env="nope", num_worlds=1)
expect("BAD_CONFIG", op="make", env="anymal_c-walk", num_worlds=1, config={"kp": -5})
expect("BAD_CONFIG", op="make", env="anymal_c-walk", num_worlds=1, config={"nope": 1})
expect("LIMIT", op="make", env="anymal_c-walk", num_worlds=10 ** 9)
expect("UNKNOWN_SESSION", op="step", session=12345, actions=T(np.zeros((1, 12), np.float32)))
expect("BAD_SHAPE", op="step", session=sid, actions=T(np.zeros((n, 11), np.float32)))
expect("BAD_DTYPE", op="step", session=sid, actions=T(np.zeros((n, 12), np.float64)))
bad = np.zeros((n, 12), np.float32)
bad[1, 2] = np.nan
expect("NON_FINITE", op="step", session=sid, actions=T(bad))
expect("BAD_WORLD_IDS", op="step", session=sid, world_ids=[0, 0], actions=T(np.zeros((2, 12), np.float32)))
expect("BAD_WORLD_IDS", op="reset", session=sid, world_ids=[n])
expect("BAD_SHAPE", op="reset", session=sid, seeds=[1, 2])
expect("BAD_SHAPE", op="step", session=sid,
       actions={"dtype": "float32", "shape": [n, 12], "data": b"\0" * 10})
expect("TOO_LARGE", op="step", session=sid, actions=T(np.zeros((400000, 12), np.float32)))
st = call("stats", session=sid)
assert st["errors"] >= 20 and st["session"]["steps"] > 0
# close two, leave one open at the shutdown
call("close", session=sessions["same_step"][0])
call("close", session=sessions["disabled"][0])
# shutdown with a step in flight
s = call("make", env="anymal_c-stand", num_worlds=64, seed=1)
tokens[s["session"]] = s["token"]
call("reset", session=s["session"])
rid = send("step", session=s["session"], actions=T(np.zeros((64, 12), np.float32)))
call("ping")
if term_pid:
    os.kill(term_pid, signal.SIGTERM)
    r = recv(rid)
    assert r["ok"], r
else:
    assert recv(rid)["ok"]
    call("close", session=s["session"])
print("drive: ok", file=sys.stderr)

"""Low-level client of herd-server: one ZeroMQ DEALER per server, pipelined requests matched by id.

    from herd.client import Client
    with Client("tcp://127.0.0.1:5555", timeout=10.0) as c:
        print(c.hello()["envs"][0]["name"])
        s = c.make("anymal_c-walk", 16, seed=1)                       # on server 0
        obs = c.reset(s["session"], seed=1)["obs"]                     # (16, 48) float32 view, no copy
        rid = c.send(0, "step", session=s["session"], actions=np.zeros((16, 12), np.float32))
        rep = c.wait(rid)                                              # {"obs": ..., "reward": ..., ...}

Every request is sent at once (``send`` returns its id); ``wait`` / ``wait_any`` collect replies, in any
order, with a deadline: a server that does not answer in ``timeout`` seconds raises ``HerdTimeoutError``
naming its address, never a hang.  Error replies raise ``ServerError`` (code, message, address).

Sessions: the token a ``make`` reply carries (PROTOCOL.md section 9) is remembered and sent with every
later request naming that session on that server (``send`` adds it), so nothing changes for callers.

Authentication (ZeroMQ CURVE): ``Client(..., server_key=..., secret_key=...)``, or the environment
variables HERD_CURVE_SERVER_KEY and HERD_CURVE_CLIENT_SECRET_KEY.  Each is a 40-character Z85 key or the
path of a key file (``herd-server --keygen`` writes them: server.pub for the server key, client.key for
the client's key pair).  A server that does not admit the key never answers: HerdTimeoutError.

Replies are decoded without copying tensor data: arrays are ``numpy.frombuffer`` views of the received
ZeroMQ frame (which they keep alive).  Not thread-safe: use one Client per thread.
"""
import ipaddress
import itertools
import os
import socket
import time
import urllib.parse

import numpy as np
import zmq

from . import _codec
from .errors import BadReplyError, HerdTimeoutError, ServerError, TransportError

__all__ = ["Client", "expand_addresses", "PROTOCOL_VERSION", "DEFAULT_ADDRESS"]

PROTOCOL_VERSION = 1
DEFAULT_ADDRESS = "tcp://127.0.0.1:5555"
_COPY_THRESHOLD = 65536      # payloads above this are handed to ZeroMQ without a copy


def config_values(config):
    """A make request's config map: numbers as floats; a string is the name of one of a key's named choices
    (PROTOCOL.md 6.1, protocol minor 1: e.g. {"solver": "admm"}), sent as is for the server to resolve."""
    out = {}
    for k, v in config.items():
        if isinstance(v, str):
            out[str(k)] = v
        elif isinstance(v, (bytes, bytearray)):
            out[str(k)] = bytes(v).decode("utf-8")
        else:
            try:
                out[str(k)] = float(v)
            except (TypeError, ValueError):
                hint = ""
                if str(k).endswith("_range"):
                    stem = str(k)[:-len("_range")]
                    hint = ("; a range is two keys, such as %s_min and %s_max (the task's keys: its spec's "
                            "\"config\", herd.list_envs())" % (stem, stem))
                raise TypeError("config key %r takes one number (or the name of one of its choices), not %s %r%s"
                                % (str(k), type(v).__name__, v, hint)) from None
    return out


def typed_config(spec, config):
    """config (a make reply's map of every key to a float) with each value typed as the spec's key says: the
    name for a key with named choices ("solver": "coulomb-stall-admm"), an int for an ``is_int`` key, a float
    otherwise.  Passing it back as overrides makes the same configuration."""
    keys = {k["key"]: k for k in spec.get("config", [])}
    out = {}
    for name, v in config.items():
        k = keys.get(name)
        if k is None or not isinstance(v, (int, float)):
            out[name] = v
        elif k.get("choices") and float(v).is_integer() and 0 <= int(v) < len(k["choices"]):
            out[name] = k["choices"][int(v)]
        elif k.get("is_int") and float(v).is_integer():
            out[name] = int(v)
        else:
            out[name] = float(v)
    return out


def config_names(spec, config):
    """{key: name} of the effective value of every key with named choices (spec["config"][i]["choices"])."""
    names = {}
    for key in spec.get("config", []):
        choices = key.get("choices")
        if choices and key["key"] in config:
            i = int(config[key["key"]])
            if 0 <= i < len(choices):
                names[key["key"]] = choices[i]
    return names


def _is_ip(host):
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def expand_addresses(address, resolve=True):
    """Normalizes an address argument to a list of ZeroMQ endpoints.

    address: one endpoint string, a comma-separated string, or a list of them.  With resolve=True, a
    ``tcp://NAME:PORT`` whose NAME resolves to several IPv4 addresses (a Kubernetes headless Service,
    a round-robin DNS name) becomes one endpoint per address, sorted, so worlds spread over all of them.
    A name resolving to one address (``localhost``) is kept as it is.  None: $HERD_ADDRESS, else
    DEFAULT_ADDRESS.
    """
    if address is None:
        address = os.environ.get("HERD_ADDRESS") or DEFAULT_ADDRESS
    if isinstance(address, str):
        items = [a.strip() for a in address.split(",") if a.strip()]
    else:
        items = [str(a).strip() for a in address]
    if not items:
        raise ValueError("no server address given")
    out = []
    for a in items:
        if "://" not in a:
            a = "tcp://" + a
        if resolve and a.startswith("tcp://"):
            u = urllib.parse.urlsplit(a)
            host, port = u.hostname, u.port
            if host and port and not _is_ip(host) and host != "*" and "*" not in host:
                try:
                    infos = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)
                except socket.gaierror:
                    infos = []       # let ZeroMQ report it (it retries, we time out naming the address)
                ips = sorted({i[4][0] for i in infos}, key=lambda s: tuple(int(x) for x in s.split(".")))
                if len(ips) > 1:
                    out.extend("tcp://%s:%d" % (ip, port) for ip in ips)
                    continue
        out.append(a)
    return out


def read_key(value, secret):
    """A CURVE key as 40 Z85 bytes: value is a Z85 key (str / bytes) or the path of a key file (czmq
    certificate format, as ``herd-server --keygen`` writes, or a file holding the bare key).  secret:
    read the secret key (else the public one)."""
    if isinstance(value, bytes):
        value = value.decode("ascii")
    value = str(value)
    if len(value) == 40 and not os.path.exists(value):
        return value.encode("ascii")
    with open(value, encoding="ascii") as f:
        lines = [ln.strip() for ln in f]
    want = "secret-key" if secret else "public-key"
    for ln in lines:
        if ln.startswith(want):
            q = ln.split('"')
            if len(q) >= 3 and len(q[1]) == 40:
                return q[1].encode("ascii")
    bare = [ln for ln in lines if len(ln) == 40 and " " not in ln]
    if bare:
        return bare[0].encode("ascii")
    if not secret:
        # a secret key file also names its public key
        for ln in lines:
            if ln.startswith("secret-key"):
                return zmq.curve_public(ln.split('"')[1].encode("ascii"))
    raise ValueError("%s holds no CURVE %s key" % (value, "secret" if secret else "public"))


class Client:
    """Connections to one or more herd servers (index 0 .. nservers-1, in the order given).

    address: endpoint(s) as in ``expand_addresses``.  timeout: seconds to wait for any reply (> 0).
    context: a zmq.Context (default: the process-wide instance).
    server_key / secret_key: CURVE (see the module's doc); None: $HERD_CURVE_SERVER_KEY /
    $HERD_CURVE_CLIENT_SECRET_KEY when set, else plain.  secret_key None with a server key: a fresh
    key pair (only useful with a server admitting any key).
    """

    def __init__(self, address=None, timeout=30.0, context=None, resolve=True, server_key=None, secret_key=None):
        if not timeout or timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        self.addresses = expand_addresses(address, resolve)
        self.timeout = float(timeout)
        self._ctx = context or zmq.Context.instance()
        self._socks = []
        self._poller = zmq.Poller()
        self._sock_index = {}
        self._ids = itertools.count(1)
        self._pending = {}       # request id -> (server, op)
        self._replies = {}       # request id -> decoded reply (arrived, not yet collected)
        self._abandoned = set()  # ids given up after a timeout: their late replies are dropped
        self._tokens = {}        # (server, session) -> the session's token (from its make reply)
        self._view_tokens = {}   # (server, session) -> its read-only view token (make reply, minor 2)
        self._closing = {}       # close request id -> (server, session): its token is dropped on success
        self._heard = set()      # servers that have replied at least once (for the timeout's hint)
        self.closed = False
        if server_key is None:
            server_key = os.environ.get("HERD_CURVE_SERVER_KEY") or None
            if secret_key is None:
                secret_key = os.environ.get("HERD_CURVE_CLIENT_SECRET_KEY") or None
        curve = None
        if server_key is not None:
            if not zmq.has("curve"):
                raise TransportError("this libzmq has no CURVE support")
            sk = read_key(secret_key, True) if secret_key is not None else zmq.curve_keypair()[1]
            curve = (read_key(server_key, False), zmq.curve_public(sk), sk)
        try:
            for i, a in enumerate(self.addresses):
                s = self._ctx.socket(zmq.DEALER)
                s.setsockopt(zmq.LINGER, 0)
                s.setsockopt(zmq.RCVHWM, 0)
                s.setsockopt(zmq.SNDHWM, 0)
                if curve:
                    s.curve_serverkey, s.curve_publickey, s.curve_secretkey = curve
                try:
                    s.connect(a)
                except zmq.ZMQError as e:
                    s.close(0)
                    raise TransportError("cannot connect to %r: %s" % (a, e), a) from None
                self._socks.append(s)
                self._poller.register(s, zmq.POLLIN)
                self._sock_index[s] = i
        except BaseException:
            self.close()
            raise

    # ---- plumbing -------------------------------------------------------------------------------

    @property
    def nservers(self):
        return len(self._socks)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the sockets (requests in flight are abandoned).  Sessions are not closed: see close_session."""
        if self.closed:
            return
        self.closed = True
        for s in self._socks:
            try:
                self._poller.unregister(s)
            except KeyError:
                pass
            s.close(0)
        self._socks = []

    def send(self, server, op, **fields):
        """Sends one request to server (index) and returns its id at once.  Fields as in PROTOCOL.md
        section 6; numpy arrays and ``_codec.Tensor`` values are sent as tensors."""
        if self.closed:
            raise TransportError("client is closed")
        rid = next(self._ids)
        msg = {"v": PROTOCOL_VERSION, "id": rid, "op": op}
        msg.update(fields)
        if "session" in fields and "token" not in fields:
            token = self._tokens.get((server, int(fields["session"])))
            if token is not None:
                msg["token"] = token
            if op == "close":
                self._closing[rid] = (server, int(fields["session"]))
        parts = _codec.pack_parts(msg)
        payload = parts[0] if len(parts) == 1 else b"".join(parts)
        self._send_payload(server, payload)
        self._pending[rid] = (server, op)
        return rid

    def send_raw(self, server, payload):
        """Sends raw bytes as a request payload (tests: malformed input).  Its reply is collected with
        ``recv_raw``; nothing is registered as pending."""
        self._send_payload(server, payload)

    def _send_payload(self, server, payload):
        sock = self._socks[server]
        try:
            sock.send(payload, zmq.NOBLOCK, copy=len(payload) < _COPY_THRESHOLD)
            return
        except zmq.Again:
            pass
        except zmq.ZMQError as e:
            raise TransportError("send to %s failed: %s" % (self.addresses[server], e), self.addresses[server])
        if not sock.poll(int(self.timeout * 1000), zmq.POLLOUT):
            raise HerdTimeoutError("cannot send to %s within %.3g s (send queue full)"
                                   % (self.addresses[server], self.timeout), self.addresses[server])
        sock.send(payload, copy=len(payload) < _COPY_THRESHOLD)

    def _drain(self, sock, server):
        """Receives every message waiting on sock; stores replies of pending requests."""
        while True:
            try:
                frame = sock.recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            while frame.more:            # envelope frames (none for a DEALER): keep the last one
                frame = sock.recv(copy=False)
            try:
                rep = _codec.unpack(frame.buffer)
            except ValueError as e:
                raise BadReplyError("undecodable reply from %s: %s" % (self.addresses[server], e),
                                    self.addresses[server]) from None
            if not isinstance(rep, dict) or not isinstance(rep.get("id"), int) or not isinstance(rep.get("ok"), bool):
                raise BadReplyError("reply from %s is not a {v, id, ok, ...} map" % self.addresses[server],
                                    self.addresses[server])
            rid = rep["id"]
            rep["_address"] = self.addresses[server]
            self._heard.add(server)
            if rid in self._pending:
                rep["_op"] = self._pending.pop(rid)[1]
                self._replies[rid] = rep
                self._note_session(rid, server, rep)
            elif rid in self._abandoned:
                self._abandoned.discard(rid)
                self._closing.pop(rid, None)
            else:
                self._replies.setdefault(("raw", server), []).append(rep)

    def _note_session(self, rid, server, rep):
        """Keeps the token of a session made, drops that of a session closed."""
        closing = self._closing.pop(rid, None)
        if not rep["ok"]:
            return
        token = rep.get("token")
        if rep["_op"] == "make" and isinstance(token, (bytes, memoryview)) and isinstance(rep.get("session"), int):
            rep["token"] = bytes(token)          # a small value: no view into the frame
            self._tokens[(server, rep["session"])] = rep["token"]
            vt = rep.get("view_token")
            if isinstance(vt, (bytes, memoryview)):
                rep["view_token"] = bytes(vt)
                self._view_tokens[(server, rep["session"])] = rep["view_token"]
        elif closing is not None:
            self._tokens.pop(closing, None)
            self._view_tokens.pop(closing, None)

    def token(self, session, server=0):
        """The token of a session this client made (bytes), or None."""
        return self._tokens.get((server, int(session)))

    def view_token(self, session, server=0):
        """The read-only view token of a session this client made (bytes; None from a server older than
        protocol minor 2): whoever holds it may read the session (model, poses, stats), never step, reset
        or close it (PROTOCOL.md section 9).  Give this, not token(), to a viewer."""
        return self._view_tokens.get((server, int(session)))

    def use_token(self, session, token, server=0):
        """Acts on a session another client made: its token (bytes, or 32 hex digits) is then sent with every
        request naming it (PROTOCOL.md section 9).  A viewer attaching to a trainer's session needs only the
        session's view token (view_token(): read-only, in plain and CURVE mode alike); the full token, or under
        CURVE the maker's key pair, gives every right."""
        if isinstance(token, str):
            token = bytes.fromhex(token)
        token = bytes(token)
        if len(token) != 16:
            raise ValueError("a session token has 16 bytes (32 hex digits), not %d" % len(token))
        self._tokens[(server, int(session))] = token

    def _poll(self, deadline, waiting, need_all=True):
        """Waits until something arrives or the deadline passes, and takes what arrived.  At the deadline, the
        replies already received are still taken (the caller may have been kept from looking, e.g. by a
        finalizer or the scheduler, while they arrived); HerdTimeoutError is raised only when the replies
        waited for (all of them, or with need_all=False any) are still missing."""
        left = deadline - time.monotonic()
        events = self._poller.poll(max(1, int(left * 1000 + 0.999)) if left > 0 else 0)
        for sock, _ in events:
            self._drain(sock, self._sock_index[sock])
        if left > 0:
            return
        have = [r in self._replies for r in waiting]
        if (all(have) if need_all else any(have)):
            return
        servers = sorted({self._pending[r][0] for r in waiting if r in self._pending})
        addrs = [self.addresses[s] for s in servers]
        ops = sorted({self._pending[r][1] for r in waiting if r in self._pending})
        for r in waiting:
            if r in self._pending:
                del self._pending[r]
                self._abandoned.add(r)
        raise HerdTimeoutError("no reply arrived from %s within %.3g s (%s)%s"
                               % (", ".join(addrs), self.timeout, "/".join(ops), self._silence_hint(servers)),
                               addrs[0] if len(addrs) == 1 else ", ".join(addrs))

    def _silence_hint(self, servers):
        """Why a server may be silent: never heard from (no server there, or CURVE keys it does not admit), or
        heard from before (busy, stopped, or the network)."""
        never = [s for s in servers if s not in self._heard]
        if never:
            return (": nothing has ever answered at %s, so no herd-server may be running at that address "
                    "(start one with `make run` or build/herd-server; with CURVE, check the keys)"
                    % ", ".join(self.addresses[s] for s in never))
        return ": it answered before, so it may be overloaded, stopped, or unreachable now"

    def wait(self, rid, timeout=None):
        """Returns the decoded reply to request rid (raising ServerError for an error reply)."""
        return self.wait_all([rid], timeout)[0]

    def wait_all(self, rids, timeout=None, check=True):
        """Returns the replies to every id of rids, in that order.  All are collected before any error
        reply is raised (the first one, as ServerError), so no reply is left behind."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        missing = [r for r in rids if r not in self._replies]
        for r in missing:
            if r not in self._pending:
                raise KeyError("request %r is not pending" % (r,))
        while any(r not in self._replies for r in rids):
            self._poll(deadline, [r for r in rids if r not in self._replies])
        reps = [self._replies.pop(r) for r in rids]
        if check:
            for r in reps:
                self.check(r)
        return reps

    def wait_any(self, rids, timeout=None):
        """Waits until one of rids has its reply; returns that id (the reply stays for wait / take)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for r in rids:
                if r in self._replies:
                    return r
            self._poll(deadline, list(rids), need_all=False)

    def done(self, rid):
        """True when the reply to rid has arrived (polls the sockets without waiting)."""
        if rid not in self._replies:
            for s, i in list(self._sock_index.items()):
                self._drain(s, i)
        return rid in self._replies

    def recv_raw(self, server, timeout=None):
        """The next reply from server that matches no pending request (for send_raw)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        key = ("raw", server)
        while not self._replies.get(key):
            left = deadline - time.monotonic()
            if self._socks[server].poll(max(1, int(left * 1000)) if left > 0 else 0):
                self._drain(self._socks[server], server)     # at the deadline too: what arrived is taken
            elif left <= 0:
                raise HerdTimeoutError("no reply arrived from %s within %.3g s%s"
                                       % (self.addresses[server], self.timeout, self._silence_hint([server])),
                                       self.addresses[server])
        return self._replies[key].pop(0)

    def server_of(self, rid):
        return self._pending[rid][0] if rid in self._pending else None

    def check(self, rep, server=None):
        """Raises ServerError if rep is an error reply; returns rep."""
        if rep["ok"]:
            return rep
        err = rep.get("error")
        if not isinstance(err, dict):
            raise BadReplyError("error reply without an error map", None)
        addr = self.addresses[server] if server is not None else rep.get("_address")
        raise ServerError(str(err.get("code", "INTERNAL")), str(err.get("message", "")), addr, rep.get("_op"))

    def call(self, server, op, timeout=None, **fields):
        """Sends one request and waits for its reply."""
        rid = self.send(server, op, **fields)
        return self.wait(rid, timeout)

    # ---- operations (PROTOCOL.md section 6) -------------------------------------------------------

    def hello(self, server=0):
        return self.call(server, "hello")

    def ping(self, server=0):
        return self.call(server, "ping")

    def stats(self, server=0, session=None):
        return self.call(server, "stats", **({} if session is None else {"session": int(session)}))

    def make(self, env, num_worlds, server=0, config=None, seed=None, autoreset=None, critic_obs=False):
        """Makes a session (PROTOCOL.md 6.2).  critic_obs=True (protocol minor 4): its reset and step replies
        carry info["critic_obs"], float32 (n, spec["critic_obs_dim"]) (BAD_FIELD for an env without one)."""
        f = {"env": env, "num_worlds": int(num_worlds)}
        if config:
            f["config"] = config_values(config)
        if seed is not None:
            f["seed"] = int(seed)
        if autoreset is not None:
            f["autoreset"] = autoreset
        if critic_obs:
            f["critic_obs"] = True
        return self.call(server, "make", **f)

    def reset(self, session, server=0, world_ids=None, seeds=None, seed=None):
        f = {"session": int(session)}
        if world_ids is not None:
            f["world_ids"] = np.asarray(world_ids, dtype=np.int32)
        if seeds is not None:
            f["seeds"] = np.asarray(seeds, dtype=np.uint64)
        if seed is not None:
            f["seed"] = int(seed)
        return self.call(server, "reset", **f)

    def step(self, session, actions, server=0, world_ids=None, reward_terms=False):
        f = {"session": int(session), "actions": actions}
        if world_ids is not None:
            f["world_ids"] = np.asarray(world_ids, dtype=np.int32)
        if reward_terms:
            f["reward_terms"] = True
        return self.call(server, "step", **f)

    def model(self, session, server=0, terrain_region=None):
        """The session's scene (PROTOCOL.md 6.8, protocol minor 1): reply["scene"] with bodies, geoms, terrain.
        terrain_region (x_min, y_min, x_max, y_max), m, world frame (minor 7): on a cell terrain (anymal_c-rough)
        the scene's terrain also holds the "region" of its samples whose cells meet that box."""
        f = {"session": int(session)}
        if terrain_region is not None:
            f["terrain_region"] = [float(v) for v in terrain_region]
        return self.call(server, "model", **f)

    def poses(self, session, server=0, world_ids=None, contacts=False, latest=False, diagnostics=False):
        """Body poses of worlds of a session without stepping them (PROTOCOL.md 6.9, minor 1): body_pos
        float32 (n, nbody, 3), body_quat (n, nbody, 4) w x y z; contacts=True adds reply["contacts"];
        latest=True reads the worlds now instead of after the session's steps in flight; diagnostics=True
        (minor 6) adds the contacts' state, friction and body, the open contacts, and reply["diagnostics"]."""
        f = {"session": int(session)}
        if world_ids is not None:
            f["world_ids"] = np.asarray(world_ids, dtype=np.int32)
        if contacts:
            f["contacts"] = True
        if diagnostics:
            f["diagnostics"] = True
        if latest:
            f["latest"] = True
        return self.call(server, "poses", **f)

    def close_session(self, session, server=0, timeout=None):
        return self.call(server, "close", timeout=timeout, session=int(session))

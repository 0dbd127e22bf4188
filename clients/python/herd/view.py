"""Live browser viewer: ``python3 -m herd.view`` serves a page (viewer/ of the repository, three.js from
viewer/node_modules) that draws up to 16 worlds of a herd session, pushed at the source's rate (>= 30 Hz)
by Server-Sent Events.

    python3 -m herd.view --local --task paper-drop              # its own herd-server and session
    python3 -m herd.view --address tcp://127.0.0.1:5555 --task anymal_c-walk --worlds 16
    python3 -m herd.view --address tcp://127.0.0.1:5555 --session 1234567 --token a740...   # a trainer's session
                                                                    # (its read-only view token)

Then open the printed URL (loopback by default: --host 0.0.0.0 exposes it; ?aa=1 or ?aa=0 after it turns
antialiasing on or off, by default on for up to 4 worlds).  From a training script, in
process (the viewer uses its own socket; the trainer's steps are not touched):

    viewer = herd.view.attach(envs)          # started; print(viewer.url)
    ...  obs, rew, term, trunc, infos = envs.step(actions); viewer.publish(rew, infos)   # optional: reward terms

Sources: EnvSource (its own session, stepped here with zero or random actions, reward terms from the step
replies) and SessionSource (somebody else's session: only the read-only ``poses`` and ``model`` ops, which
neither step nor draw random numbers).  A source gives scene(), worlds, frame() (a JSON-ready dict) and
set_paused(); the HTTP side (Viewer) knows nothing else about herd.

HTTP: GET / (the page), GET /scene ({scene, worlds, title, paused, meshes: the URL of the robot's visual
meshes or null}), GET /assets/NAME.glb (those meshes, herd.meshes), GET /events (text/event-stream, one
frame per message), POST /control ({"paused": bool}), GET /terrain?tx=I&ty=J (on a cell terrain such as
anymal_c-rough's: tile (I, J) of herd.terrain, the samples the page meshes; 404 on other terrains).

--screenshot OUT.png [--at SECONDS] writes a PNG of the fully drawn page (headless Chromium through
Selenium and chromium-driver; herd.screenshot) instead of serving until Ctrl-C.
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from .client import Client
from .errors import ServerError

__all__ = ["Viewer", "EnvSource", "SessionSource", "attach", "pick_terms", "server_address", "viewer_dir", "three_path", "frame_dict", "main"]

MAX_WORLDS = 16

_REPO_VIEWER = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "viewer"))


def viewer_dir():
    """The folder of the page (index.html, viewer.js, viewer.css): $HERD_VIEWER_DIR, else the repository's viewer/."""
    d = os.environ.get("HERD_VIEWER_DIR") or _REPO_VIEWER
    if not os.path.exists(os.path.join(d, "viewer.js")):
        raise FileNotFoundError("herd viewer page not found in %s (set HERD_VIEWER_DIR)" % d)
    return d


NPM_TIMEOUT_S = 300


def three_path(install=True):
    """three.js's single-file ES module, from the npm registry through viewer/package-lock.json.  Where it is
    missing and install is true, the first use installs it (`npm ci` in the viewer's folder, as `make
    viewer-deps` does; a line on stderr says so).  Where that cannot be done (no npm, no registry), the
    viewer is disabled: FileNotFoundError saying why and what to run; the server and the clients do not
    need it."""
    d = viewer_dir()
    p = os.path.join(d, "node_modules", "three", "build", "three.module.min.js")
    if os.path.exists(p):
        return p
    why = "three.js is not installed"
    if install:
        npm = shutil.which("npm")
        if npm is None:
            why += " and npm is not on PATH (apt-get install npm)"
        else:
            sys.stderr.write("herd.view: installing the viewer's three.js (npm ci in %s) ...\n" % d)
            sys.stderr.flush()
            try:
                r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=d,
                                   capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
                out = (r.stderr or r.stdout or "").strip().splitlines()
                detail = out[-1] if out else "exit status %d" % r.returncode
            except (OSError, subprocess.TimeoutExpired) as e:
                detail = str(e)
            if os.path.exists(p):
                return p
            why += " and `npm ci` did not install it (%s; is the npm registry reachable?)" % detail
    raise FileNotFoundError("the viewer is disabled: %s.  Run `make viewer-deps` (npm ci in %s) where the npm "
                            "registry can be reached; herd-server and the clients work without it" % (why, d))


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, bytes):
        return x.decode(errors="replace")
    raise TypeError("not JSON serialisable: %r" % type(x))


def _flat(a, decimals=5):
    return np.round(np.asarray(a, dtype=np.float64), decimals).ravel().tolist()


def frame_dict(step, poses, reward=None, terms=None, paused=False):
    """One frame as the page reads it, from a poses dict (HerdVectorEnv.poses layout) of k worlds;
    step None when unknown (an attached session whose owner does not publish); reward (k,) and terms
    {name: (k,)} optional."""
    f = {"step": None if step is None else int(step), "paused": bool(paused),
         "body_pos": _flat(poses["body_pos"]), "body_quat": _flat(poses["body_quat"]),
         "contacts": None, "reward": None, "terms": None}
    if "contact_count" in poses:
        f["contacts"] = {"count": np.asarray(poses["contact_count"]).astype(int).tolist(),
                         "pos": _flat(poses["contact_pos"]), "normal": _flat(poses["contact_normal"]),
                         "impulse": _flat(poses["contact_impulse"], 6)}
    if "contact_state" in poses:        # the contact diagnostics (protocol minor 6)
        f["contacts"].update(state=np.asarray(poses["contact_state"]).astype(int).ravel().tolist(),
                             friction=_flat(poses["contact_friction"], 6),
                             body=np.asarray(poses["contact_body"]).astype(int).ravel().tolist())
        f["diag"] = {"fallback": np.asarray(poses["fallback"]).astype(int).tolist(),
                     "limit": _flat(poses["limit_impulse"], 6)}
    if reward is not None:
        f["reward"] = _flat(reward, 6)
    if terms:
        f["terms"] = {k: _flat(v, 6) for k, v in terms.items()}
    return f


def read_poses(envs, ids, state, latest=False):
    """envs.poses(ids) with the contacts and, while the server has them (protocol minor 6), their diagnostics;
    state: a dict remembering {"diagnostics": False} after a server refused them (BAD_FIELD: an older one)."""
    if state.get("diagnostics", True):
        try:
            return envs.poses(ids, diagnostics=True, latest=latest)
        except ServerError as e:
            if e.code != "BAD_FIELD":
                raise
            state["diagnostics"] = False
    return envs.poses(ids, contacts=True, latest=latest)


def _pick(values, ids):
    """values (n,) -> values[ids] (None stays None)."""
    return None if values is None else np.asarray(values)[ids]


def pick_terms(infos, names, ids):
    """{term name: (k,)} of the worlds ids from a step's infos["reward_terms"] ((n, len(names)), in the
    order of HerdVectorEnv.reward_term_names); None without terms."""
    t = (infos or {}).get("reward_terms")
    if t is None or not names or np.size(t) == 0:
        return None
    t = np.asarray(t)[ids]
    return {name: t[:, j] for j, name in enumerate(names)}


class EnvSource:
    """Its own session of `task` with num_worlds worlds, stepped here in real time (speed x control_dt per
    step) with zero actions (policy="zero"), uniform random actions ("random") or a callable obs -> actions.
    Shows the worlds world_ids (default the first min(num_worlds, 16)); reward terms come from the steps."""

    def __init__(self, task, num_worlds=1, address=None, world_ids=None, policy="zero", seed=0, speed=1.0,
                 push_hz=50.0, **make_kwargs):
        from .vector import make_vec
        self.envs = make_vec(task, num_worlds, address=address, seed=seed, reward_terms=True, **make_kwargs)
        self.title = "%s · own session" % task
        n = self.envs.num_envs
        self.worlds = list(range(min(n, MAX_WORLDS))) if world_ids is None else [int(w) for w in world_ids][:MAX_WORLDS]
        self._ids = np.asarray(self.worlds, dtype=np.int64)
        self.paused = False
        self.policy = policy
        self._rng = np.random.default_rng(seed)
        self.control_dt = float(self.envs.herd_spec["control_dt"])
        self.period = 1.0 / push_hz
        self.steps_per_frame = max(1, int(round(speed * self.period / self.control_dt)))
        self.step = 0
        self._obs, _ = self.envs.reset()
        self._reward = None
        self._terms = None
        self._scene = self.envs.scene()
        self._support = {}          # read_poses: whether the server has the contact diagnostics
        self._tiles = self.envs.terrain_tiles()
        self._io = threading.Lock()     # the page's tile requests and advance() share the env's socket

    def scene(self):
        return self._scene

    def terrain_tile(self, tx, ty):
        """Tile (tx, ty) of a cell terrain (herd.terrain: its samples), None for any other terrain."""
        if self._tiles is None:
            return None
        with self._io:
            return self._tiles.get((tx, ty))

    def set_paused(self, paused):
        self.paused = bool(paused)

    def _actions(self):
        shape = (self.envs.num_envs, self.envs.act_dim)
        if callable(self.policy):
            return np.asarray(self.policy(self._obs), dtype=np.float32)
        if self.policy == "random":
            return self._rng.uniform(-1, 1, shape).astype(np.float32)
        return np.zeros(shape, dtype=np.float32)

    def advance(self):
        """Steps (unless paused) and returns the next frame."""
        with self._io:
            return self._advance()

    def _advance(self):
        if not self.paused:
            for _ in range(self.steps_per_frame):
                self._obs, rew, _, _, infos = self.envs.step(self._actions())
                self.step += 1
            self._reward = _pick(rew, self._ids)
            self._terms = pick_terms(infos, self.envs.reward_term_names, self._ids)
        p = read_poses(self.envs, self._ids, self._support)
        return frame_dict(self.step, p, self._reward, self._terms, self.paused)

    def close(self):
        self.envs.close()


class SessionSource:
    """Read-only view of sessions somebody else steps (poses with latest: read at once, not queued behind
    the owner's steps in flight): parts [(address, session, first world, n)] as
    HerdVectorEnv.sessions gives them (one part: a plain session).  Uses only the `model` and `poses` ops on
    its own socket.  Reward terms are shown when the owner calls publish(reward, infos).  client_options:
    more keywords of herd.Client (where sessions are owned, the viewer's credentials: it needs only the
    right to read, never to step)."""

    def __init__(self, parts, world_ids=None, title=None, timeout=10.0, reward_term_names=None, client_options=None,
                 tokens=None):
        self.parts = [(a, int(s), int(f), int(n)) for a, s, f, n in parts]
        self.num_worlds = sum(n for _, _, _, n in self.parts)
        self._client = Client([a for a, _, _, _ in self.parts], timeout=timeout, **(client_options or {}))
        for k, tok in enumerate(tokens or []):      # plain mode: the owner's session tokens (one per part)
            if tok is not None:
                self._client.use_token(self.parts[k][1], tok, server=k)
        self.reward_term_names = list(reward_term_names or [])
        self.title = title or "session %d · attached (read-only)" % self.parts[0][1]
        self.worlds = (list(range(min(self.num_worlds, MAX_WORLDS))) if world_ids is None
                       else [int(w) for w in world_ids][:MAX_WORLDS])
        for w in self.worlds:
            if not 0 <= w < self.num_worlds:
                raise ValueError("world %d is not in the session(s) (%d worlds)" % (w, self.num_worlds))
        self._scene = self._client.model(self.parts[0][1], server=0)["scene"]
        from .terrain import TileCache, is_cells
        self._tiles = None
        if is_cells(self._scene.get("terrain")):
            session = self.parts[0][1]
            self._tiles = TileCache(self._scene["terrain"], lambda terrain_region: self._client.model(
                session, server=0, terrain_region=terrain_region))
        self.paused = False
        self.step = None            # the owner's step count, once it publishes
        self._lock = threading.Lock()
        self._io = threading.Lock()  # one read at a time on the socket: the viewer's thread and a caller may both advance
        self._reward = None
        self._terms = None
        self._last = None
        self._diag = True           # the contact diagnostics, until a server refuses them (older than minor 6)

    @classmethod
    def from_session(cls, address, session, token=None, **kw):
        """One session on one server: its number of worlds from the `stats` op.  token: the session's view
        token (bytes or hex), given by its owner (client.view_token(session)); its full token works too."""
        with Client(address, timeout=kw.get("timeout", 10.0), **(kw.get("client_options") or {})) as c:
            if token is not None:
                c.use_token(session, token)
            n = int(c.stats(session=int(session))["session"]["num_worlds"])
        return cls([(address, session, 0, n)], tokens=[token], **kw)

    def scene(self):
        return self._scene

    def set_paused(self, paused):
        self.paused = bool(paused)

    def terrain_tile(self, tx, ty):
        """Tile (tx, ty) of a cell terrain (herd.terrain: its samples, read with the `model` op), None for any
        other terrain."""
        if self._tiles is None:
            return None
        with self._io:
            return self._tiles.get((tx, ty))

    def publish(self, reward=None, infos=None, step=None):
        """From the session's owner, after a step: rewards (num_worlds,) and infos (reward_terms)."""
        ids = np.asarray(self.worlds)
        with self._lock:
            self._reward = _pick(reward, ids)
            self._terms = pick_terms(infos, self.reward_term_names, ids)
            self.step = (self.step or 0) + 1 if step is None else int(step)

    def _read(self):
        if self._diag:
            try:
                return self._read_parts(True)
            except ServerError as e:
                if e.code != "BAD_FIELD":
                    raise
                self._diag = False
        return self._read_parts(False)

    def _read_parts(self, diag):
        ids = np.asarray(self.worlds)
        rids, rows = [], []
        for k, (_, sess, first, n) in enumerate(self.parts):
            sel = np.nonzero((ids >= first) & (ids < first + n))[0]
            if len(sel) == 0:
                continue
            rids.append(self._client.send(k, "poses", session=sess, contacts=True, latest=True,
                                          **({"diagnostics": True} if diag else {}),
                                          world_ids=(ids[sel] - first).astype(np.int32)))
            rows.append(sel)
        out = {}
        for rep, sel in zip(self._client.wait_all(rids), rows):
            c = rep["contacts"]
            fields = [("body_pos", rep["body_pos"]), ("body_quat", rep["body_quat"]),
                      ("contact_count", c["count"]), ("contact_pos", c["pos"]),
                      ("contact_normal", c["normal"]), ("contact_impulse", c["impulse"])]
            if diag:
                g = rep["diagnostics"]
                fields += [("contact_state", c["state"]), ("contact_friction", c["friction"]),
                           ("contact_body", c["body"]), ("fallback", g["fallback"]),
                           ("limit_impulse", g["limit_impulse"])]
            for key, a in fields:
                if key not in out:
                    out[key] = np.zeros((len(ids),) + a.shape[1:], dtype=a.dtype)
                out[key][sel] = a
        return out

    def advance(self):
        with self._io:
            if not self.paused or self._last is None:
                self._last = self._read()
            last = self._last
        with self._lock:
            return frame_dict(self.step, last, self._reward, self._terms, self.paused)

    def close(self):
        with self._io:
            self._client.close()


class Viewer:
    """Serves the page and pushes source.advance() frames every `period` seconds (one thread reads the
    source; every page connection gets the latest frame).  host: loopback by default; port 0: any free."""

    def __init__(self, source, host="127.0.0.1", port=0, period=None):
        self.source = source
        self.period = period or getattr(source, "period", 1.0 / 50.0)
        self._cond = threading.Condition()
        self._frame = None          # (serial, JSON text)
        self._serial = 0
        self._stop = threading.Event()
        self.error = None
        self._files = {"/": ("index.html", "text/html"), "/index.html": ("index.html", "text/html"),
                       "/viewer.js": ("viewer.js", "text/javascript"), "/viewer.css": ("viewer.css", "text/css")}
        self._dir = viewer_dir()
        self._three = three_path()
        from .meshes import visual_path
        self._meshes = visual_path(source.scene())
        viewer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                viewer._get(self)

            def do_POST(self):
                viewer._post(self)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        h, p = self.httpd.server_address[:2]
        self.url = "http://%s:%d/" % ("127.0.0.1" if h == "0.0.0.0" else h, p)
        self._threads = []

    # ---- HTTP ----

    def _send(self, h, code, body, ctype):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Cache-Control", "no-store")
        h.end_headers()
        h.wfile.write(body)

    def _get(self, h):
        path = h.path.split("?")[0]
        if path in self._files:
            name, ctype = self._files[path]
            with open(os.path.join(self._dir, name), "rb") as f:
                return self._send(h, 200, f.read(), ctype + "; charset=utf-8")
        if path == "/three.module.min.js":
            with open(self._three, "rb") as f:
                return self._send(h, 200, f.read(), "text/javascript; charset=utf-8")
        if self._meshes and path == "/assets/" + os.path.basename(self._meshes):
            with open(self._meshes, "rb") as f:
                return self._send(h, 200, f.read(), "model/gltf-binary")
        if path == "/scene":
            s = self.source
            meshes = "assets/" + os.path.basename(self._meshes) if self._meshes else None
            body = json.dumps({"scene": s.scene(), "worlds": s.worlds, "title": s.title, "paused": s.paused,
                               "meshes": meshes}, default=_jsonable).encode()
            return self._send(h, 200, body, "application/json")
        if path == "/events":
            return self._events(h)
        if path == "/terrain":
            return self._terrain(h)
        self._send(h, 404, b"not found", "text/plain")

    def _terrain(self, h):
        """GET /terrain?tx=I&ty=J: tile (I, J) of the source's cell terrain (herd.terrain.tile_json)."""
        from urllib.parse import parse_qs, urlsplit
        from .terrain import tile_json
        q = parse_qs(urlsplit(h.path).query)
        try:
            tx, ty = int(q["tx"][0]), int(q["ty"][0])
        except (KeyError, ValueError, IndexError):
            return self._send(h, 400, b"terrain: give integer tx and ty", "text/plain")
        fn = getattr(self.source, "terrain_tile", None)
        try:
            t = fn(tx, ty) if fn else None
        except Exception as e:          # the server's error (a closed session, ...), shown by the page
            return self._send(h, 502, str(e).encode(), "text/plain")
        if t is None:
            return self._send(h, 404, b"this source has no cell terrain", "text/plain")
        return self._send(h, 200, json.dumps(tile_json(t)).encode(), "application/json")

    def _post(self, h):
        if h.path.split("?")[0] != "/control":
            return self._send(h, 404, b"not found", "text/plain")
        try:
            n = int(h.headers.get("Content-Length", "0"))
            msg = json.loads(h.rfile.read(n) or b"{}")
            if "paused" in msg:
                self.source.set_paused(bool(msg["paused"]))
        except (ValueError, TypeError) as e:
            return self._send(h, 400, str(e).encode(), "text/plain")
        self._send(h, 200, b"{}", "application/json")

    def _events(self, h):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-store")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        seen = -1
        try:
            while not self._stop.is_set():
                with self._cond:
                    self._cond.wait_for(lambda: self._stop.is_set() or (self._frame and self._frame[0] != seen), 1.0)
                    frame = self._frame
                if frame is None or frame[0] == seen:
                    h.wfile.write(b": keepalive\n\n")
                else:
                    seen = frame[0]
                    h.wfile.write(b"data: " + frame[1] + b"\n\n")
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    # ---- the source thread ----

    def _pump(self):
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                text = json.dumps(self.source.advance(), default=_jsonable).encode()
            except Exception as e:          # shown to the user; the page keeps the last frame
                self.error = e
                print("herd.view: source failed: %s" % e, file=sys.stderr)
                self._stop.wait(1.0)
                continue
            with self._cond:
                self._serial += 1
                self._frame = (self._serial, text)
                self._cond.notify_all()
            next_t += self.period
            delay = next_t - time.monotonic()
            if delay < -1.0:
                next_t = time.monotonic()       # fell behind (slow server): do not burst
            self._stop.wait(max(0.0, delay))

    def start(self):
        for target in (self._pump, self.httpd.serve_forever):
            t = threading.Thread(target=target, daemon=True, name="herd-view")
            t.start()
            self._threads.append(t)
        return self

    def publish(self, reward=None, infos=None, step=None):
        """Reward terms for a SessionSource (see attach)."""
        self.source.publish(reward, infos, step)

    def stop(self):
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(5.0)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def attach(envs, world_ids=None, host="127.0.0.1", port=0, hz=50.0, client_options=None):
    """A started Viewer of a HerdVectorEnv's worlds (read-only, its own socket); viewer.url is the page.
    Call viewer.publish(rewards, infos) after steps to show reward terms (make the env with reward_terms=True)."""
    # the sessions' read-only view tokens (PROTOCOL.md section 9): the viewer can read the trainer's worlds,
    # never step, reset or close them; a server older than protocol minor 2 has none: the full token then
    tokens = [vt if vt is not None else envs._client.token(session, server=k)
              for vt, k, (_, session, _, _) in zip(envs.view_tokens, envs._servers, envs.sessions)]
    src = SessionSource(envs.sessions, world_ids=world_ids, title="%s · training" % envs.env_id,
                        reward_term_names=envs.reward_term_names, client_options=client_options, tokens=tokens)
    return Viewer(src, host=host, port=port, period=1.0 / hz).start()


@contextlib.contextmanager
def server_address(address=None, local=False):
    """The endpoint to use: `address`, or with local=True that of a herd-server of our own (herd.local)
    started here and stopped on exit."""
    if not local:
        yield address
        return
    from .local import LocalServer
    with LocalServer(threads=1) as srv:
        yield srv.address


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m herd.view", description="Serve a live 3-D view of herd worlds.")
    ap.add_argument("--address", help="herd-server endpoint ($HERD_ADDRESS, else tcp://127.0.0.1:5555)")
    ap.add_argument("--local", action="store_true", help="start a herd-server of our own (build/herd-server)")
    ap.add_argument("--session", type=int, help="attach read-only to this session (a trainer's) instead of making one")
    ap.add_argument("--token", help="that session's view token (32 hex digits, the owner's "
                                    "client.view_token(session): read-only), or its full token")
    ap.add_argument("--task", default="anymal_c-walk", help="task of our own session (default anymal_c-walk)")
    ap.add_argument("--worlds", type=int, default=4, help="worlds of our own session (default 4)")
    ap.add_argument("--world-ids", help="comma-separated worlds to draw (at most 16; default the first ones)")
    ap.add_argument("--policy", choices=["zero", "random"], default="zero", help="actions of our own session")
    ap.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second (own session)")
    ap.add_argument("--hz", type=float, default=50.0, help="frames pushed per second (default 50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1", help="HTTP interface (default loopback only)")
    ap.add_argument("--port", type=int, default=8765, help="HTTP port (0: any free one)")
    ap.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: until Ctrl-C)")
    ap.add_argument("--screenshot", metavar="PNG", help="write a PNG of the fully drawn page (headless Chromium) and exit")
    ap.add_argument("--at", type=float, default=0.0,
                    help="with --screenshot: once the session has run this many simulated seconds (own session), "
                         "or this many seconds after the first drawn frame (attached)")
    ap.add_argument("--size", default="960x600", help="with --screenshot: the window, WxH pixels")
    a = ap.parse_args(argv)
    ids = [int(x) for x in a.world_ids.split(",")] if a.world_ids else None
    with server_address(a.address, a.local) as address:
        if a.session is not None:
            src = SessionSource.from_session(address, a.session, token=a.token, world_ids=ids)
        else:
            src = EnvSource(a.task, a.worlds, address=address, world_ids=ids, policy=a.policy, seed=a.seed,
                            speed=a.speed, push_hz=a.hz)
        with Viewer(src, host=a.host, port=0 if a.screenshot else a.port, period=1.0 / a.hz) as viewer:
            if a.screenshot:
                from .screenshot import screenshot
                w, h = (int(x) for x in a.size.lower().split("x"))
                dt = getattr(src, "control_dt", None)
                t = screenshot(viewer.url, a.screenshot, width=w, height=h,
                               at_step=int(round(a.at / dt)) if dt and a.at > 0 else None,
                               wait=0.0 if dt else a.at)
                print("herd.view: %s (%dx%d, fully drawn %.2f s after the page was opened)"
                      % (a.screenshot, w, h, t), flush=True)
            else:
                print("herd.view: %s on %s" % (src.title, viewer.url), flush=True)
                try:
                    time.sleep(a.seconds) if a.seconds > 0 else threading.Event().wait()
                except KeyboardInterrupt:
                    pass
        src.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

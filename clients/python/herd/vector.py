"""HerdVectorEnv: Gymnasium's VectorEnv API over one or more herd servers.

See ``herd.make_vec`` for the entry point and README.md for the conventions (autoreset modes, infos,
seeding, async and subsets, several servers, errors).
"""
import enum
import os
import time
import warnings

import numpy as np

from . import spaces as _spaces
from .client import Client, config_names, config_values, typed_config
from .errors import HerdError

try:  # pragma: no cover - depends on the installation
    from gymnasium.vector import AutoresetMode as _GymAutoresetMode
except Exception:
    _GymAutoresetMode = None

try:  # pragma: no cover
    from gymnasium.vector import VectorEnv as _VectorEnvBase
    from gymnasium.utils import seeding as _gym_seeding
except Exception:
    _VectorEnvBase = object
    _gym_seeding = None

__all__ = ["AutoresetMode", "HerdVectorEnv", "make_vec"]


class _HerdAutoresetMode(enum.Enum):
    """Gymnasium's ``gymnasium.vector.AutoresetMode`` (same names and values), for when gymnasium is absent."""
    NEXT_STEP = "NextStep"
    SAME_STEP = "SameStep"
    DISABLED = "Disabled"


AutoresetMode = _GymAutoresetMode if _GymAutoresetMode is not None else _HerdAutoresetMode

_WIRE = {"NEXT_STEP": "next_step", "SAME_STEP": "same_step", "DISABLED": "disabled"}


def _autoreset(mode):
    """AutoresetMode member for mode: an AutoresetMode (gymnasium's or herd's), or a string such as
    "NEXT_STEP", "next_step", "NextStep", "same-step", "disabled"."""
    if mode is None:
        return AutoresetMode.NEXT_STEP
    if isinstance(mode, enum.Enum):
        name = mode.name
    else:
        key = str(mode).replace("-", "").replace("_", "").replace(" ", "").lower()
        name = {"nextstep": "NEXT_STEP", "samestep": "SAME_STEP", "disabled": "DISABLED"}.get(key)
    if name not in _WIRE:
        raise ValueError("autoreset_mode must be NEXT_STEP, SAME_STEP or DISABLED, not %r" % (mode,))
    return AutoresetMode[name]


def _episode_key(episode_statistics):
    """The infos key of the server's episode statistics: None (off), "episode" (True) or a given key."""
    if episode_statistics is None or episode_statistics is False:
        return None
    if episode_statistics is True:
        return "episode"
    if isinstance(episode_statistics, str) and episode_statistics and not episode_statistics.startswith("_"):
        return episode_statistics
    raise ValueError("episode_statistics must be False, True or an infos key, not %r" % (episode_statistics,))


RENDER_MODES = ["rgb_array"]


def check_render_mode(render_mode):
    """render_mode must be None or "rgb_array" (frames drawn by herd.render, a numpy CPU rasterizer)."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError("render_mode=%r is not supported: use None or \"rgb_array\"" % (render_mode,))


def _seeded_rng(seed):
    """(Generator, seed) as gymnasium.utils.seeding.np_random gives them (numpy's default_rng otherwise)."""
    if _gym_seeding is not None:
        return _gym_seeding.np_random(seed)
    return np.random.default_rng(seed), seed


class _Request:
    """A logical reset / step of the vector env, possibly split over several servers."""
    __slots__ = ("kind", "ids", "parts", "n", "t_sent", "reset_mask")

    def __init__(self, kind, ids, n):
        self.kind = kind
        self.ids = ids          # None (all worlds) or int64 array of global world indices
        self.n = n
        self.parts = []         # (server index, request id, rows: slice or index array or None)
        self.t_sent = time.perf_counter()
        self.reset_mask = None


class HerdVectorEnv(_VectorEnvBase):
    """A batch of ``num_envs`` herd worlds, spread over one or more servers, with Gymnasium's VectorEnv API.

    Attributes: num_envs, single_observation_space, observation_space, single_action_space, action_space,
    metadata ({"autoreset_mode": AutoresetMode, "render_modes": []}), herd_spec (the server's spec of
    the configured task), config (effective configuration, typed as the spec's keys say: a key with named
    choices holds the name, e.g. "solver": "coulomb-stall-admm", an integer key an int, others floats),
    config_names (the name of each such key's value, e.g. {"solver": "paper-bisection"}), reward_term_names, max_episode_steps,
    episode_statistics_key (None, or the infos key of the server's episode statistics), addresses,
    closed, render_mode (None), spec (set by gymnasium.make_vec), np_random, np_random_seed, critic_obs_dim
    (0 unless made with critic_obs=True), critic_obs_fields (the spec's critic_obs fields) and terrain_kinds (the
    names of the tile kinds of a task with a terrain curriculum, e.g. anymal_c-rough; [] for a flat task).

    With critic_obs=True (protocol minor 4) reset and step also return the critic's (privileged) observation in
    infos["critic_obs"], float32 (n, critic_obs_dim), rows as obs (a view of the message, like obs), with the
    mask infos["_critic_obs"]; after a reset with options["reset_mask"], rows of the worlds not reset are 0.

    A task with a terrain curriculum (protocol minor 6; terrain_kinds not empty) reports every world's tile after
    every reset and step: infos["terrain_level"] (int32, its level, 0 = easiest) and infos["terrain_kind"] (int32,
    an index into terrain_kinds), rows as obs (views of the message), masks infos["_terrain_level"] and
    infos["_terrain_kind"]; after an autoreset, the new episode's tile.  After a reset with options["reset_mask"]
    the rows of the worlds not reset hold their last reported tile (-1 before any), the masks the reset worlds.
    Flat tasks have neither key.

    The spaces are the session's real bounds (the spec's act / obs low and high: the clips the server
    applies; see README.md "Spaces and action scaling").

    Observations, rewards and flags returned by reset / step are numpy views of the received message
    (zero copy) when the worlds addressed live on one server; with several servers the parts are
    gathered into one array (one memcpy per part).  Views stay valid as long as you hold them; they
    are writable but writing to them changes nothing on the server.
    """

    def __init__(self, env_id, num_envs, address=None, seed=None, autoreset_mode=None, timeout=30.0,
                 reward_terms=False, config=None, resolve=True, context=None, episode_statistics=False,
                 render_mode=None, max_episode_steps=None, server_key=None, secret_key=None, render_worlds=None,
                 render_size=(320, 240), render_diagnostics=False, critic_obs=False, **config_kwargs):
        self.closed = True      # until the sessions exist
        if int(num_envs) < 1:
            raise ValueError("num_envs must be >= 1")
        check_render_mode(render_mode)
        self.num_envs = int(num_envs)
        self.env_id = env_id
        mode = _autoreset(autoreset_mode)
        self.metadata = {"autoreset_mode": mode, "render_modes": list(RENDER_MODES)}
        self.render_mode = render_mode
        self.render_worlds = [0] if render_worlds is None else [int(w) for w in render_worlds]
        self._render_default = render_worlds is None and self.num_envs > 1     # warned once at render()
        self.render_size = (int(render_size[0]), int(render_size[1]))
        self.render_diagnostics = bool(render_diagnostics)
        self._renderer = None
        self._scene = None
        self.spec = None
        self._reward_terms = bool(reward_terms)
        self.episode_statistics_key = _episode_key(episode_statistics)
        cfg = dict(config or {})
        cfg.update(config_kwargs)
        wire_config = config_values(cfg)        # a value that is not a number or a name: TypeError naming its key
        self._client = Client(address, timeout=timeout, context=context, resolve=resolve, server_key=server_key,
                              secret_key=secret_key)
        self.addresses = list(self._client.addresses)
        S = self._client.nservers
        # Contiguous blocks of worlds, the first num_envs % S servers one world more.
        counts = [self.num_envs // S + (1 if k < self.num_envs % S else 0) for k in range(S)]
        self._servers = [k for k in range(S) if counts[k] > 0]
        self._counts = np.array([counts[k] for k in self._servers], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(self._counts)[:-1]]).astype(np.int64)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little") >> 1
        self._base_seed = int(seed) % (1 << 64)
        self._seed_pending = True       # the first reset seeds world i with seed + i (explicit seeds)
        # Make every session, all requests in flight at once.
        fields = {"env": env_id, "autoreset": _WIRE[mode.name], "seed": self._base_seed}
        if wire_config:
            fields["config"] = wire_config
        if critic_obs:
            fields["critic_obs"] = True
        rids = [self._client.send(k, "make", num_worlds=int(c), **fields)
                for k, c in zip(self._servers, self._counts)]
        try:
            reps = self._client.wait_all(rids, check=False)
        except HerdError:
            # e.g. one server timed out: close the sessions the others made, then report
            self._sessions = [None] * len(rids)
            for i, rid in enumerate(rids):
                rep = self._client._replies.pop(rid, None)
                if rep is not None and rep.get("ok"):
                    self._sessions[i] = rep["session"]
            self._close_sessions()
            self._client.close()
            raise
        self._sessions = [r["session"] if r["ok"] else None for r in reps]
        bad = [r for r in reps if not r["ok"]]
        if bad:
            self._close_sessions()
            self._client.close()
            self._client.check(bad[0])
        spec = reps[0]["spec"]
        for r in reps[1:]:
            if (r["spec"]["obs_dim"], r["spec"]["act_dim"]) != (spec["obs_dim"], spec["act_dim"]):
                self._close_sessions()
                self._client.close()
                raise HerdError("BAD_REPLY", "servers disagree on the spec of %s" % env_id)
        self.closed = False
        self.herd_spec = spec
        raw = dict(reps[0].get("config", {}))
        # typed as the spec says: a key with named choices holds the name, an integer key an int
        self.config = typed_config(spec, raw)
        self.config_names = config_names(spec, raw)
        self.obs_dim = int(spec["obs_dim"])
        self.act_dim = int(spec["act_dim"])
        self.reward_term_names = list(spec.get("reward_terms", []))
        self.critic_obs_dim = int(spec.get("critic_obs_dim", 0)) if critic_obs else 0
        self.critic_obs_fields = list(spec.get("critic_obs", [])) if critic_obs else []
        self.terrain_kinds = [str(k) for k in spec.get("terrain_kinds", [])]
        self.max_episode_steps = int(spec.get("max_episode_steps", 0))
        if max_episode_steps is not None and int(max_episode_steps) != self.max_episode_steps:
            want = int(max_episode_steps) * float(spec["control_dt"])
            self.close()
            raise ValueError("max_episode_steps=%s: the server's time limit of %s is %d steps; set it with "
                             "episode_seconds=%g (steps x control_dt %g s)" % (max_episode_steps, env_id,
                                                                              self.max_episode_steps, want,
                                                                              spec["control_dt"]))
        self.single_observation_space = _spaces.make_box(*self._bounds(spec["obs"], self.obs_dim))
        self.single_action_space = _spaces.make_box(*self._bounds(spec["act"], self.act_dim))
        self.observation_space = _spaces.batch_box(self.single_observation_space, self.num_envs)
        self.action_space = _spaces.batch_box(self.single_action_space, self.num_envs)
        self._pending = []              # _Request, in send order
        self._episode_start = np.full(self.num_envs, time.perf_counter())
        self._last_obs = None           # the latest observation of every world (for reset_mask)
        self._obs_buf = None
        self._tiles = None              # the latest terrain level and kind of every world (for reset_mask)
        self._tiles_own = False         # _tiles is the env's own buffer (not arrays handed out)
        self._np_random = None
        self._np_random_seed = None

    # ---- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _bounds(fields, dim):
        low = np.full(dim, -np.inf, dtype=np.float32)
        high = np.full(dim, np.inf, dtype=np.float32)
        for f in fields:
            o, s = int(f["offset"]), int(f["size"])
            low[o:o + s] = f["low"]
            high[o:o + s] = f["high"]
        return low, high

    @property
    def unwrapped(self):
        return self

    @property
    def np_random(self):
        """A numpy Generator for client-side randomness (Gymnasium's VectorEnv.np_random): seeded from the
        env's seed, reseeded by reset(seed=int), settable.  The worlds' randomness is the server's."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = _seeded_rng(self._base_seed)
        return self._np_random

    @np_random.setter
    def np_random(self, value):
        self._np_random = value
        self._np_random_seed = -1       # unknown, as Gymnasium reports it

    @property
    def np_random_seed(self):
        """The seed of np_random (-1 when np_random was set directly)."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = _seeded_rng(self._base_seed)
        return self._np_random_seed

    @property
    def sessions(self):
        """[(address, session id, first world, number of worlds)] of the sessions behind this env."""
        return [(self.addresses[k], s, int(a), int(c))
                for k, s, a, c in zip(self._servers, self._sessions, self._starts, self._counts)]

    @property
    def view_tokens(self):
        """[hex string or None] per entry of `sessions`: each session's read-only view token (protocol
        minor 2), what `python3 -m herd.view --session ID --token HEX` needs to watch these worlds from
        another process; it lets the viewer read them, never step, reset or close them."""
        out = []
        for k, s in zip(self._servers, self._sessions):
            t = self._client.view_token(s, server=k)
            out.append(None if t is None else t.hex())
        return out

    def _check_open(self):
        if self.closed:
            raise HerdError("TRANSPORT", "the vector env is closed")

    def _world_ids(self, ids):
        """Validates a world-id selection; returns None for all worlds, else an int64 array."""
        if ids is None:
            return None
        a = np.asarray(ids)
        if a.dtype == np.bool_:
            if a.shape != (self.num_envs,):
                raise HerdError("BAD_WORLD_IDS", "a boolean world mask must have shape (%d,), not %s"
                                % (self.num_envs, a.shape))
            return np.flatnonzero(a).astype(np.int64)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.dtype.kind not in "iu":
            raise HerdError("BAD_WORLD_IDS", "world ids must be integers, not %s" % a.dtype)
        return a.astype(np.int64, copy=False)

    def _split(self, ids):
        """[(part index, local ids or None, rows)] for a selection of worlds."""
        if ids is None:
            return [(p, None, slice(int(a), int(a + c)) if len(self._servers) > 1 else None)
                    for p, (a, c) in enumerate(zip(self._starts, self._counts))]
        if len(self._servers) == 1:
            return [(0, ids, None)]
        if ids.size == 0:
            raise HerdError("BAD_WORLD_IDS", "an empty list of world ids")
        if ids.min() < 0 or ids.max() >= self.num_envs:
            bad = ids[(ids < 0) | (ids >= self.num_envs)][0]
            raise HerdError("BAD_WORLD_IDS", "world id %d is out of [0, %d)" % (bad, self.num_envs))
        if np.unique(ids).size != ids.size:
            raise HerdError("BAD_WORLD_IDS", "world ids are repeated")
        srv = np.searchsorted(self._starts, ids, side="right") - 1
        out = []
        for p in range(len(self._servers)):
            rows = np.flatnonzero(srv == p)
            if rows.size:
                out.append((p, ids[rows] - self._starts[p], rows))
        if len(out) == 1:
            out = [(out[0][0], out[0][1], None)]
        return out

    @staticmethod
    def _ids_tensor(local):
        if local is None:
            return None
        if local.size and (local.min() < -2**31 or local.max() >= 2**31):
            return local.astype(np.int64)
        return local.astype(np.int32)

    def _seeds_for(self, seed, ids):
        """Per-world seeds (uint64) for worlds ids (None = all): seed + i (Gymnasium), or a list."""
        idx = np.arange(self.num_envs, dtype=np.uint64) if ids is None else ids.astype(np.uint64)
        if isinstance(seed, (int, np.integer)):
            with np.errstate(over="ignore"):
                return np.uint64(int(seed) % (1 << 64)) + idx
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError("seed: %d seeds for %d envs" % (len(seeds), self.num_envs))
        if any(s is None for s in seeds):
            raise ValueError("seed: a list of seeds must give every env an integer seed")
        full = np.array([int(s) % (1 << 64) for s in seeds], dtype=np.uint64)
        return full if ids is None else full[ids]

    # ---- reset ------------------------------------------------------------------------------------

    def reset_async(self, seed=None, options=None):
        """Sends the reset requests (see reset) and returns at once; reset_wait() collects them."""
        self._check_open()
        mask = None if not options else options.get("reset_mask")
        ids = None
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise ValueError("options['reset_mask'] must be a bool array of shape (%d,)" % self.num_envs)
            ids = np.flatnonzero(mask).astype(np.int64)
            if ids.size == 0:
                raise ValueError("options['reset_mask'] selects no env")
        if isinstance(seed, (int, np.integer)):
            self._np_random, self._np_random_seed = _seeded_rng(int(seed))
        if seed is None and self._seed_pending:
            seed = self._base_seed
        seeds = None if seed is None else self._seeds_for(seed, ids)
        if ids is None and seed is not None:
            self._seed_pending = False
        req = _Request("reset", ids, self.num_envs if ids is None else ids.size)
        req.reset_mask = mask
        for p, local, rows in self._split(ids):
            f = {"session": self._sessions[p]}
            if local is not None:
                f["world_ids"] = self._ids_tensor(local)
            if seeds is not None:
                f["seeds"] = seeds[rows] if rows is not None else seeds
            rid = self._client.send(self._servers[p], "reset", **f)
            req.parts.append((p, rid, rows))
        self._pending.append(req)
        return req

    def reset_wait(self, timeout=None):
        """Returns (obs, infos) of the oldest pending reset."""
        req = next((r for r in self._pending if r.kind == "reset"), None)
        if req is None:
            raise RuntimeError("reset_wait: no reset in flight (call reset_async first)")
        return self._finish(req, timeout)

    def reset(self, *, seed=None, options=None):
        """Resets every world (or those of options["reset_mask"]) and returns (obs, infos).

        seed: None (the first reset uses make_vec's seed; later ones continue each world's stream), an
        int s (world i gets seed s + i, as Gymnasium does), or a list of num_envs ints.  Seeds are sent
        per world, so results do not depend on how the worlds are spread over servers.
        options: {"reset_mask": bool array (num_envs,)}: reset only those worlds (Gymnasium's DISABLED
        autoreset); the returned obs still has every world's row (the others unchanged).
        """
        return self._finish(self.reset_async(seed=seed, options=options), None)

    # ---- step -------------------------------------------------------------------------------------

    def _actions(self, actions, n):
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if a.dtype != np.float32 and a.dtype.kind == "f":
            a = a.astype(np.float32)          # float64 policies: cast (anything else goes to the server)
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        if len(self._servers) > 1:             # validate before splitting, so no server steps alone
            if a.ndim != 2 or a.shape != (n, self.act_dim):
                raise HerdError("BAD_SHAPE", "'actions' has shape %s, expected [%d, %d] (%d worlds x act_dim %d)"
                                % (list(a.shape), n, self.act_dim, n, self.act_dim))
            if a.dtype == np.float32 and not np.isfinite(a).all():
                r, c = np.argwhere(~np.isfinite(a))[0]
                raise HerdError("NON_FINITE", "actions[%d][%d] = %s is not finite" % (r, c, a[r, c]))
        return a

    def step_async(self, actions, world_ids=None):
        """Sends a step of every world (or of world_ids, rows of actions in that order) and returns at
        once.  Several steps may be in flight (on disjoint worlds they run concurrently on the server).
        Floating actions are cast to float32; other dtypes are sent as they are (BAD_DTYPE)."""
        self._check_open()
        ids = self._world_ids(world_ids)
        n = self.num_envs if ids is None else ids.size
        a = self._actions(actions, n)
        req = _Request("step", ids, n)
        for p, local, rows in self._split(ids):
            f = {"session": self._sessions[p]}
            if local is not None:
                f["world_ids"] = self._ids_tensor(local)
            f["actions"] = a[rows] if rows is not None else a
            if self._reward_terms:
                f["reward_terms"] = True
            rid = self._client.send(self._servers[p], "step", **f)
            req.parts.append((p, rid, rows))
        self._pending.append(req)
        return req

    def step_wait(self, timeout=None):
        """Returns (obs, rewards, terminations, truncations, infos) of the oldest step in flight."""
        req = next((r for r in self._pending if r.kind == "step"), None)
        if req is None:
            raise RuntimeError("step_wait: no step in flight (call step_async first)")
        return self._finish(req, timeout)

    def step(self, actions):
        """Steps every world: (obs, rewards, terminations, truncations, infos), Gymnasium's VectorEnv.step."""
        return self._finish(self.step_async(actions), None)

    # EnvPool-style names
    def send(self, actions, env_id=None):
        """EnvPool's send(actions, env_id): step_async on the worlds env_id (None = all)."""
        return self.step_async(actions, env_id)

    def recv(self, timeout=None):
        """EnvPool's recv(): the step in flight that completes first (any order), with infos["env_id"]."""
        steps = [r for r in self._pending if r.kind == "step"]
        if not steps:
            raise RuntimeError("recv: no step in flight (call send first)")
        while True:
            for r in steps:
                if all(self._client.done(rid) for _, rid, _ in r.parts):
                    res = self._finish(r, timeout)
                    if "env_id" not in res[4]:
                        res[4]["env_id"] = np.arange(self.num_envs)
                    return res
            waiting = [rid for r in steps for _, rid, _ in r.parts if not self._client.done(rid)]
            self._client.wait_any(waiting, timeout)

    # ---- replies ----------------------------------------------------------------------------------

    def _finish(self, req, timeout):
        """Collects every part of req, assembles one batch, updates the env's bookkeeping."""
        self._pending.remove(req)
        reps = self._client.wait_all([rid for _, rid, _ in req.parts], timeout)
        if len(reps) == 1 and req.parts[0][2] is None:
            data = reps[0]
        else:
            data = self._gather(req, reps)
        if req.kind == "reset":
            return self._after_reset(req, data)
        return self._after_step(req, data)

    def _gather(self, req, reps):
        """One batch from the parts of a split request (one copy per part)."""
        def cat(values, rows_list):
            first = values[0]
            out = np.empty((req.n,) + first.shape[1:], dtype=first.dtype)
            for v, rows in zip(values, rows_list):
                out[rows] = v
            return out
        rows_list = [rows for _, _, rows in req.parts]
        data = {}
        for key, v in reps[0].items():
            if isinstance(v, np.ndarray):
                data[key] = cat([r[key] for r in reps], rows_list)
            elif key == "info" and isinstance(v, dict):
                data["info"] = {k: cat([r["info"][k] for r in reps], rows_list)
                                for k, x in v.items() if isinstance(x, np.ndarray)}
        return data

    def _track_obs(self, ids, obs):
        if ids is None:
            self._last_obs = obs
        elif self._last_obs is not None:
            if self._last_obs is not self._obs_buf:
                self._obs_buf = np.array(self._last_obs)
                self._last_obs = self._obs_buf
            self._obs_buf[ids] = obs

    def _track_tiles(self, ids, level, kind):
        """Keeps every world's latest tile: the reply's arrays themselves after a full batch (no copy), an own
        buffer once a subset has been reported."""
        if ids is None:
            self._tiles, self._tiles_own = (level, kind), False
            return
        if self._tiles is None:
            self._tiles = (np.full(self.num_envs, -1, np.int32), np.full(self.num_envs, -1, np.int32))
        elif not self._tiles_own:
            self._tiles = (np.array(self._tiles[0]), np.array(self._tiles[1]))
        self._tiles_own = True
        self._tiles[0][ids] = level
        self._tiles[1][ids] = kind

    def _tile_infos(self, infos, info, req, mask=None):
        """infos["terrain_level"] / ["terrain_kind"] and their masks from a reply's info (terrain tasks only)."""
        level, kind = info.get("terrain_level"), info.get("terrain_kind")
        if level is None or kind is None:
            return
        self._track_tiles(req.ids, level, kind)
        if mask is not None:
            level, kind = np.array(self._tiles[0]), np.array(self._tiles[1])
        else:
            mask = np.ones(req.n, dtype=np.bool_)
        infos["terrain_level"], infos["_terrain_level"] = level, mask
        infos["terrain_kind"], infos["_terrain_kind"] = kind, mask

    def _after_reset(self, req, data):
        obs = data["obs"]
        now = time.perf_counter()
        if req.ids is None:
            self._episode_start[:] = now
        else:
            self._episode_start[req.ids] = now
        self._track_obs(req.ids, obs)
        critic = data.get("info", {}).get("critic_obs")
        if req.reset_mask is not None:
            full = self._last_obs
            if full is None:
                full = np.zeros((self.num_envs, self.obs_dim), np.float32)
                full[req.ids] = obs
            infos = {}
            if critic is not None:
                infos["critic_obs"] = np.zeros((self.num_envs, critic.shape[1]), np.float32)
                infos["critic_obs"][req.ids] = critic
                infos["_critic_obs"] = req.reset_mask
            self._tile_infos(infos, data.get("info", {}), req, req.reset_mask)
            return full, infos
        infos = {}
        if critic is not None:
            infos["critic_obs"] = critic
            infos["_critic_obs"] = np.ones(req.n, dtype=np.bool_)
        self._tile_infos(infos, data.get("info", {}), req)
        if req.ids is not None:
            infos["env_id"] = req.ids
        return obs, infos

    def _after_step(self, req, data):
        obs, rew, term, trunc = data["obs"], data["reward"], data["terminated"], data["truncated"]
        info = data.get("info", {})
        infos = {}
        now = time.perf_counter()
        done = info.get("episode_done")
        if done is not None and done.any():
            ids = np.flatnonzero(done) if req.ids is None else req.ids[done]
            t = np.zeros(req.n, dtype=np.float64)
            t[done] = np.round(now - self._episode_start[ids], 6)
            self._episode_start[ids] = now
            if self.episode_statistics_key is not None:
                key = self.episode_statistics_key
                infos[key] = {"r": info["episode_return"], "l": info["episode_length"], "t": t}
                infos["_" + key] = done
            if "episode_terms" in info:
                infos["episode_terms"] = info["episode_terms"]
                infos["_episode_terms"] = done
        pr = info.get("physics_reset")
        if pr is not None and pr.any():
            infos["physics_reset"] = pr
            infos["_physics_reset"] = pr
        ar = info.get("autoreset")
        if ar is not None and ar.any():
            infos["autoreset"] = ar
            infos["_autoreset"] = ar
        if "reward_terms" in info:
            infos["reward_terms"] = info["reward_terms"]
            infos["_reward_terms"] = np.ones(req.n, dtype=np.bool_)
        fmask = info.get("_final_obs")
        if fmask is not None and fmask.any():
            # as Gymnasium's SAME_STEP: final_info is the info of the ended worlds' last step
            final_info = {k: v for k, v in infos.items() if k not in ("autoreset", "_autoreset")}
            infos["final_obs"] = info["final_obs"]
            infos["_final_obs"] = fmask
            infos["final_info"] = final_info
            infos["_final_info"] = fmask
        if "critic_obs" in info:
            # the state obs describes (after an autoreset the new episode's), so not part of final_info
            infos["critic_obs"] = info["critic_obs"]
            infos["_critic_obs"] = np.ones(req.n, dtype=np.bool_)
        # the tile of the episode obs describes, so not part of final_info either
        self._tile_infos(infos, info, req)
        if req.ids is not None:
            infos["env_id"] = req.ids
        self._track_obs(req.ids, obs)
        return obs, rew, term, trunc, infos

    # ---- misc -------------------------------------------------------------------------------------

    def stats(self):
        """The server statistics of each session: a list of stats replies (PROTOCOL.md 6.6)."""
        self._check_open()
        rids = [self._client.send(k, "stats", session=s) for k, s in zip(self._servers, self._sessions)]
        return self._client.wait_all(rids)

    # ---- looking at the worlds (protocol minor 1) ---------------------------------------------------

    def scene(self):
        """The task's visual scene (the same for every world), as the server's ``model`` op gives it:
        {"bodies": [{"name", "parent"}], "geoms": [{"name", "body", "type" ("sphere" | "box" | "cylinder" |
        "capsule"), "size" (radius / half extents / radius and half length along local z), "pos", "quat"
        (w x y z: the geometry's frame in its body's frame), "rgba", "collides"}], "terrain": {"type": "plane",
        "height"} or {"type": "heightfield", "nx", "ny", "x0", "y0", "dx", "dy", "heights" (ny, nx)},
        "max_contacts"}.  Fetched once and cached (the scene of a session never changes)."""
        self._check_open()
        if self._scene is None:
            self._scene = self._client.model(self._sessions[0], server=self._servers[0])["scene"]
        return self._scene

    def terrain_tiles(self):
        """On a cell terrain (anymal_c-rough): a herd.terrain.TileCache fetching its tiles through the `model`
        op's terrain_region (protocol minor 7); None for a plane or heightfield (the scene holds those whole)."""
        from .terrain import TileCache, is_cells
        t = self.scene().get("terrain")
        if not is_cells(t):
            return None
        client, session, server = self._client, self._sessions[0], self._servers[0]
        return TileCache(t, lambda terrain_region: client.model(session, server=server, terrain_region=terrain_region))

    def poses(self, world_ids=None, contacts=False, latest=False, diagnostics=False):
        """The current pose of every body of the worlds world_ids (None: all), without stepping them.

        Returns a dict: "world_ids" (int64 (k,)), "body_pos" (float32 (k, nbody, 3), world frame, m),
        "body_quat" (float32 (k, nbody, 4), w x y z, body to world), and with contacts=True the active
        contacts of each world: "contact_count" (int32 (k,)), "contact_pos" / "contact_normal" (float32
        (k, max, 3), world frame; the first contact_count[i] rows of world i are valid), "contact_impulse"
        (float32 (k, max): normal impulse of the last physics step, N s).  Body order: scene()["bodies"].
        The read is queued behind the session's steps in flight on those worlds (it sees their result);
        with latest=True (for a viewer watching someone else's training) it is served at once instead,
        between two quanta of the workers: every world is read whole, but worlds of a step in flight may
        be read before or after it.  Either way it draws no random number and leaves every later step
        bitwise the same.

        diagnostics=True (protocol minor 6; implies contacts) lists the open contacts too and adds
        "contact_state" (uint8 (k, max): 0 open, 1 stick, 2 slip; PROTOCOL.md 6.9), "contact_friction"
        (float32 (k, max, 3): friction impulse, world frame, N s), "contact_body" (int32 (k, max): scene body
        index), "fallback" (uint8 (k,): 1 when the world's last step took a contact answer from the solver's
        fallback model) and "limit_impulse" (float32 (k, nbody): each body's joint-limit impulse, N m s,
        positive at the lower limit)."""
        self._check_open()
        ids = self._world_ids(world_ids)
        parts = self._split(ids)
        rids = []
        for p, local, rows in parts:
            loc = self._ids_tensor(local)
            rids.append(self._client.send(self._servers[p], "poses", session=self._sessions[p],
                                          **({} if loc is None else {"world_ids": loc}),
                                          **({"contacts": True} if contacts else {}),
                                          **({"diagnostics": True} if diagnostics else {}),
                                          **({"latest": True} if latest else {})))
        reps = self._client.wait_all(rids)
        k = self.num_envs if ids is None else len(ids)

        def flat(rep):
            d = {"body_pos": rep["body_pos"], "body_quat": rep["body_quat"]}
            if contacts or diagnostics:
                c = rep["contacts"]
                d.update(contact_count=c["count"], contact_pos=c["pos"], contact_normal=c["normal"],
                         contact_impulse=c["impulse"])
            if diagnostics:
                g = rep["diagnostics"]
                d.update(contact_state=c["state"], contact_friction=c["friction"], contact_body=c["body"],
                         fallback=g["fallback"], limit_impulse=g["limit_impulse"])
            return d
        flats = [flat(r) for r in reps]
        if len(flats) == 1 and parts[0][2] is None:
            out = flats[0]
        else:
            out = {}
            for key in flats[0]:
                first = flats[0][key]
                a = np.empty((k,) + first.shape[1:], dtype=first.dtype)
                for f, (_, _, rows) in zip(flats, parts):
                    a[rows] = f[key]
                out[key] = a
        out["world_ids"] = np.arange(self.num_envs, dtype=np.int64) if ids is None else ids
        return out

    def render(self, world_ids=None):
        """render_mode "rgb_array": frames drawn by herd.render, uint8 (H, W, 3), a camera following each
        world's base; None when render_mode is None.

        world_ids None: one frame per world of ``render_worlds`` (make_vec's argument; default [0], world 0
        only: with several worlds and no render_worlds given, the first call warns that it draws world 0
        alone), a list in that order.  An int: that world's frame (one array).  A list of ints: their
        frames, in that order."""
        if self.render_mode is None:
            return None
        from .render import Renderer, diagnostics_of
        if self._renderer is None:
            self._renderer = Renderer(self.scene(), width=self.render_size[0], height=self.render_size[1],
                                      tiles=self.terrain_tiles())
        one = isinstance(world_ids, (int, np.integer))
        if world_ids is None:
            ids = self.render_worlds
            if self._render_default:
                self._render_default = False
                warnings.warn("herd: render() draws world 0 alone of the %d worlds (render_worlds defaults to [0]); "
                              "pass render_worlds=[...] to make_vec, or render(world_ids=i) for world i"
                              % self.num_envs, UserWarning, stacklevel=2)
        else:
            ids = [int(world_ids)] if one else [int(w) for w in world_ids]
        for w in ids:
            if not 0 <= w < self.num_envs:
                raise HerdError("BAD_WORLD_IDS", "render: world %d is out of [0, %d)" % (w, self.num_envs))
        if self.render_diagnostics:
            p = self.poses(ids, diagnostics=True)
            frames = [self._renderer.render(p["body_pos"][i], p["body_quat"][i], diagnostics=diagnostics_of(p, i))
                      for i in range(len(ids))]
        else:
            p = self.poses(ids)
            frames = [self._renderer.render(p["body_pos"][i], p["body_quat"][i]) for i in range(len(ids))]
        return frames[0] if one else frames

    def _close_sessions(self):
        client = getattr(self, "_client", None)
        if client is None or client.closed:
            return
        rids = []
        for k, s in zip(self._servers, getattr(self, "_sessions", [])):
            if s is not None:
                try:
                    rids.append(client.send(k, "close", session=s))
                except HerdError:
                    pass
        if rids:
            try:
                client.wait_all(rids, timeout=min(client.timeout, 5.0), check=False)
            except HerdError:
                pass

    def close(self, **kwargs):
        """Closes the sessions (best effort, bounded by min(timeout, 5 s)) and the connections."""
        if getattr(self, "closed", True):
            if getattr(self, "_client", None) is not None:
                self._client.close()
            return
        self.closed = True
        self._pending = []
        self._close_sessions()
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "HerdVectorEnv(%s, num_envs=%d, servers=%s, autoreset_mode=%s)" % (
            self.env_id, self.num_envs, self.addresses, self.metadata["autoreset_mode"].name)


def make_vec(env_id, num_envs=1, address=None, seed=None, autoreset_mode=None, **kwargs):
    """Creates a HerdVectorEnv: ``num_envs`` worlds of task ``env_id`` served by herd-server(s).

    address: "tcp://host:port" / "ipc:///path", a list of them (worlds are spread over the servers in
      contiguous blocks), or a DNS name resolving to several addresses; None: $HERD_ADDRESS, else
      tcp://127.0.0.1:5555.
    seed: world i's first episode is seeded with seed + i (a random seed when None).
    autoreset_mode: AutoresetMode.NEXT_STEP (default), SAME_STEP or DISABLED (or their names).
    Client options: timeout (seconds, default 30), reward_terms (bool: per-term rewards in
      infos["reward_terms"]), critic_obs (bool, protocol minor 4: the critic's privileged observation in
      infos["critic_obs"] after reset and step, float32 (n, critic_obs_dim), for the tasks whose spec lists
      critic_obs fields), config (dict of overrides), resolve (bool), context (zmq.Context),
      episode_statistics (False: off, the default, so gymnasium's RecordEpisodeStatistics works unchanged;
      True: the server's episode return / length in infos["episode"] with the "_episode" mask, in
      RecordEpisodeStatistics's layout; a string: the same under that key),
      max_episode_steps (None, or checked against the server's time limit: set that with episode_seconds),
      render_mode (None or "rgb_array": render() then returns frames of the worlds render_worlds, default
      [0] (world 0 alone: render() warns once when there are several worlds), or render(world_ids=i) world
      i's; of size render_size (width, height), default (320, 240); render_diagnostics=True draws each
      contact's state and impulses, the joint-limit impulses and the fallback marker on them, as the viewer
      page does),
      server_key / secret_key (CURVE keys: Z85 text or key file paths; default $HERD_CURVE_SERVER_KEY /
      $HERD_CURVE_CLIENT_SECRET_KEY; see herd.client).
    Any other keyword is a configuration override of the task (e.g. target_height=0.55, obs_noise=0); a key
    with named choices takes the name (solver="admm": the spec's config key lists its "choices").
    """
    return HerdVectorEnv(env_id, num_envs, address=address, seed=seed, autoreset_mode=autoreset_mode, **kwargs)

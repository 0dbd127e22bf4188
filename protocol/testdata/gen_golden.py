#!/usr/bin/python3
"""Generates the golden vectors of the herd wire protocol (protocol/PROTOCOL.md).

    /usr/bin/python3 protocol/testdata/gen_golden.py      # rewrites protocol/testdata/*.msgpack, *.json, index.json

Needs only the Python standard library and msgpack (Debian: python3-msgpack).  This is an independent
implementation of the encoding rules (minimal MessagePack forms, floats as float 64, tensors as
{dtype, shape, data} maps whose data is a bin 32 starting at a multiple of 8 bytes), so the C tests that
compare the C codec with these bytes check the C codec against PROTOCOL.md, not against itself.

For every vector NAME:
  NAME.msgpack   the exact payload bytes
  NAME.json      the decoded content: msgpack maps -> objects (key order kept), bin -> {"$bin": "<hex>"},
                 floats always with a '.' or an exponent (ints never), non-finite floats as Infinity /
                 -Infinity / NaN (Python's json extension).  For requests the server must reject, the
                 JSON is {"expect_error": CODE, "expect_id": ID} instead.
index.json lists the vectors with their kind, op and whether the C encoder must reproduce the bytes.
"""
import json
import math
import os
import struct
import sys

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))


class Tensor:
    def __init__(self, dtype, shape, values):
        self.dtype, self.shape = dtype, list(shape)
        fmt = {"float32": "f", "float64": "d", "int32": "i", "int64": "q", "uint64": "Q", "uint8": "B",
               "bool": "B"}[dtype]
        count = 1
        for s in shape:
            count *= s
        assert len(values) == count, (dtype, shape, len(values))
        self.data = struct.pack("<%d%s" % (count, fmt), *values)


class Raw:
    """Bytes spliced in as they are (for malformed messages)."""
    def __init__(self, b):
        self.b = b


def head(kind, n):
    if kind == "map":
        return bytes([0x80 | n]) if n <= 15 else (b"\xde" + n.to_bytes(2, "big") if n <= 0xFFFF else b"\xdf" + n.to_bytes(4, "big"))
    return bytes([0x90 | n]) if n <= 15 else (b"\xdc" + n.to_bytes(2, "big") if n <= 0xFFFF else b"\xdd" + n.to_bytes(4, "big"))


def tensor_bytes(offset, t):
    """PROTOCOL.md "Alignment": pad bits pick longer forms of the keys "dtype" (+1), "shape" (+2), "data" (+4)."""
    dtype = msgpack.packb(t.dtype)
    shape = head("array", len(t.shape)) + b"".join(msgpack.packb(s) for s in t.shape)
    l0 = offset + 1 + 6 + len(dtype) + 6 + len(shape) + 5 + 5
    pad = (-l0) % 8
    out = b"\x83"
    out += b"\xd9\x05dtype" if pad & 1 else b"\xa5dtype"
    out += dtype
    out += b"\xda\x00\x05shape" if pad & 2 else b"\xa5shape"
    out += shape
    out += b"\xdb\x00\x00\x00\x04data" if pad & 4 else b"\xa4data"
    out += b"\xc6" + len(t.data).to_bytes(4, "big")
    assert (offset + len(out)) % 8 == 0
    return out + t.data


def enc(obj, out):
    if isinstance(obj, Tensor):
        out += tensor_bytes(len(out), obj)
    elif isinstance(obj, Raw):
        out += obj.b
    elif isinstance(obj, dict):
        out += head("map", len(obj))
        for k, v in obj.items():
            enc(k, out)
            enc(v, out)
    elif isinstance(obj, list):
        out += head("array", len(obj))
        for v in obj:
            enc(v, out)
    else:
        out += msgpack.packb(obj, use_bin_type=True)   # minimal ints / str / bin, float 64, nil, bool
    return out


def readable(obj):
    if isinstance(obj, Tensor):
        return {"dtype": obj.dtype, "shape": obj.shape, "data": {"$bin": obj.data.hex()}}
    if isinstance(obj, (bytes, bytearray)):
        return {"$bin": bytes(obj).hex()}
    if isinstance(obj, dict):
        return {k: readable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [readable(v) for v in obj]
    return obj


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def decoded_readable(b):
    def conv(o):
        if isinstance(o, bytes):
            return {"$bin": o.hex()}
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        if isinstance(o, list):
            return [conv(v) for v in o]
        return o
    return conv(msgpack.unpackb(b, raw=False, strict_map_key=False))


# ---- content ----------------------------------------------------------------------------------------

INF = float("inf")

TOY_SPEC = {
    "name": "toy-v0",
    "doc": "A fixed spec for the golden vectors (not a registered env)",
    "obs_dim": 3,
    "act_dim": 1,
    "obs": [
        {"name": "pos", "offset": 0, "size": 2, "low": -INF, "high": INF, "scale": 1.0, "unit": "m"},
        {"name": "vel", "offset": 2, "size": 1, "low": -10.0, "high": 10.0, "scale": 0.5, "unit": "m/s"},
    ],
    "act": [{"name": "force", "offset": 0, "size": 1, "low": -1.0, "high": 1.0, "scale": 20.0, "unit": "N"}],
    "sim_dt": 0.005,
    "decimation": 4,
    "control_dt": 0.02,
    "episode_seconds": 20.0,
    "max_episode_steps": 1000,
    "config": [
        {"key": "kp", "default": 80.0, "lo": 0.0, "hi": 1000.0, "is_int": False, "doc": "PD stiffness (N m / rad)"},
        {"key": "decimation", "default": 4.0, "lo": 1.0, "hi": 50.0, "is_int": True, "doc": "physics steps per env step"},
        # a key with named choices (minor version 1): value i means choices[i]
        {"key": "solver", "default": 0.0, "lo": 0.0, "hi": 2.0, "is_int": True, "doc": "contact solver, by name",
         "choices": ["fast", "exact", "robust"]},
    ],
    "reward_terms": ["alive", "effort"],
}


def req(id_, op, **kw):
    d = {"v": 1, "id": id_, "op": op}
    d.update(kw)
    return d


def ok(id_, **kw):
    d = {"v": 1, "id": id_, "ok": True}
    d.update(kw)
    return d


def f32(n, base, step):
    return [base + step * i for i in range(n)]


N, OD, AD, NT = 2, 3, 1, 2      # worlds, obs_dim, act_dim, reward terms of the toy replies

vectors = []   # (name, kind, op, content, canonical, description)


def add(name, kind, op, content, canonical=True, desc=""):
    vectors.append((name, kind, op, content, canonical, desc))


add("req_hello", "request", "hello", req(1, "hello"), desc="hello: versions and env specs")
add("req_ping", "request", "ping", req(2, "ping"))
add("req_make", "request", "make",
    req(3, "make", env="anymal_c-walk", num_worlds=4, config={"kp": 60.0, "decimation": 2.0}, seed=42,
        autoreset="same_step"), desc="make with config overrides (numbers), seed and autoreset mode")
add("req_make_choice", "request", "make",
    req(14, "make", env="paper-trot", num_worlds=2, config={"solver": "admm", "solver_tol": 1e-8}),
    desc="make naming a choice of a key with named choices (minor version 1): the name as a string")
add("req_make_min", "request", "make", req(4, "make", env="anymal_c-stand", num_worlds=1),
    desc="make with defaults: seed 0, autoreset next_step, default config")
add("req_reset_all", "request", "reset", req(5, "reset", session=7), desc="reset every world")
add("req_reset_subset", "request", "reset",
    req(6, "reset", session=7, world_ids=Tensor("int32", [2], [1, 3]), seeds=Tensor("uint64", [2], [100, 2**63 + 5])),
    desc="reset worlds 1 and 3 with explicit per-world seeds")
add("req_reset_seed", "request", "reset", req(7, "reset", session=7, seed=1000),
    desc="reset every world, world i seeded with 1000 + i")
add("req_reset_ids_array", "request", "reset", req(8, "reset", session=7, world_ids=[0, 2]), canonical=False,
    desc="world_ids may also be a plain msgpack array of integers (the C encoder writes a tensor)")
add("req_step_all", "request", "step",
    req(9, "step", session=7, actions=Tensor("float32", [4, 3], f32(12, -1.0, 0.25))),
    desc="step every world of a 4-world session with act_dim 3")
add("req_step_subset", "request", "step",
    req(10, "step", session=7, world_ids=Tensor("int32", [2], [2, 0]),
        actions=Tensor("float32", [2, 3], [0.5, -0.5, 1.5, 0.0, 2.0, -2.0]), reward_terms=True),
    desc="step worlds 2 and 0 (rows in that order), asking for per-term rewards")
add("req_close", "request", "close", req(11, "close", session=7))
add("req_stats", "request", "stats", req(12, "stats"), desc="server-wide statistics")
add("req_stats_session", "request", "stats", req(13, "stats", session=7), desc="server and session statistics")
add("req_big_id", "request", "ping", req(2**64 - 1, "ping"), desc="ids are full uint64")
# minor 1: the session token from the make reply, carried after "session"
TOKEN = bytes.fromhex("5e1f0a9c33d2b7486e01f4c29a7d5b10")
VIEW_TOKEN = bytes.fromhex("a74019e26b05c83d91fe27540cb368df")   # minor 2: the session's read-only token
add("req_step_token", "request", "step",
    req(14, "step", session=7, token=TOKEN, world_ids=Tensor("int32", [1], [3]),
        actions=Tensor("float32", [1, 3], [0.0, 0.5, -0.5])),
    desc="step with the session token (protocol minor 1): a bin of 16 bytes right after 'session'")
add("req_close_token", "request", "close", req(15, "close", session=7, token=TOKEN),
    desc="close with the session token")
add("req_model", "request", "model", req(18, "model", session=7), desc="the session's scene (minor 1)")
add("req_model_region", "request", "model", req(22, "model", session=7, terrain_region=[-1.5, 2.0, 6.5, 10.0]),
    desc="the scene with the samples of a cell terrain within [x_min, y_min, x_max, y_max] (minor 7)")
add("req_poses_all", "request", "poses", req(19, "poses", session=7), desc="body poses of every world (minor 1)")
add("req_poses_contacts", "request", "poses",
    req(20, "poses", session=7, world_ids=Tensor("int32", [2], [3, 1]), contacts=True),
    desc="body poses and active contacts of worlds 3 and 1, rows in that order (minor 1)")
add("req_poses_latest", "request", "poses", req(21, "poses", session=7, latest=True),
    desc="body poses of every world as they are now, not waiting for steps in flight (minor 1)")
add("req_poses_diagnostics", "request", "poses", req(22, "poses", session=7, diagnostics=True),
    desc="body poses and contacts of every world with the contact diagnostics (minor 6)")

# requests a server must reject (decoded content = the expected error)
bad = [
    ("bad_version", req(20, "ping") | {"v": 2}, "BAD_VERSION", 20),
    ("bad_unknown_op", req(21, "fly"), "UNKNOWN_OP", 21),
    ("bad_missing_id", {"v": 1, "op": "ping"}, "MISSING_FIELD", 0),
    ("bad_not_map", [1, 2, 3], "BAD_MESSAGE", 0),
    ("bad_truncated", Raw(bytes(enc(req(24, "close", session=7), bytearray()))[:-3]), "BAD_MESSAGE", 24),
    ("bad_trailing", Raw(bytes(enc(req(25, "ping"), bytearray())) + b"\xc0"), "BAD_MESSAGE", 25),
    ("bad_actions_dtype", req(26, "step", session=7, actions=Tensor("float64", [1, 3], [0.0, 0.0, 0.0])),
     "BAD_DTYPE", 26),
    ("bad_actions_shape", req(27, "step", session=7,
                              actions={"dtype": "float32", "shape": [2, 3], "data": struct.pack("<5f", *[0.0] * 5)}),
     "BAD_SHAPE", 27),
    ("bad_field_type", req(28, "make", env="anymal_c-walk", num_worlds="4"), "BAD_FIELD", 28),
    ("bad_unknown_field", req(29, "reset", session=7, worldids=[0]), "BAD_FIELD", 29),
    ("bad_config_value", req(32, "make", env="paper-trot", num_worlds=1, config={"solver": [1]}), "BAD_FIELD", 32),
    ("bad_missing_session", req(30, "step", actions=Tensor("float32", [1, 1], [0.0])), "MISSING_FIELD", 30),
    ("bad_world_ids_negative", req(31, "reset", session=7, world_ids=[0, -1]), "BAD_WORLD_IDS", 31),
    ("bad_token_length", req(32, "reset", session=7, token=TOKEN[:8]), "BAD_FIELD", 32),
    ("bad_token_type", req(33, "close", session=7, token=TOKEN.hex()), "BAD_FIELD", 33),
    ("bad_token_without_session", req(34, "stats", token=TOKEN), "BAD_FIELD", 34),
    ("bad_poses_contacts", req(35, "poses", session=7, contacts=1), "BAD_FIELD", 35),
    ("bad_poses_diagnostics", req(36, "poses", session=7, diagnostics="yes"), "BAD_FIELD", 36),
    ("bad_step_contacts", req(36, "step", session=7, actions=Tensor("float32", [1, 1], [0.0]), contacts=True),
     "BAD_FIELD", 36),
    # minor 3, one rule for the codes (section 5): the wrong MessagePack type is BAD_FIELD, also inside a
    # tensor; a value of the right type that names nothing is the field's own code, a NUL byte included
    ("bad_actions_dtype_type", req(38, "step", session=7,
                                   actions={"dtype": 5, "shape": [1, 1], "data": struct.pack("<f", 0.0)}),
     "BAD_FIELD", 38, "a tensor's dtype that is not a str: the wrong MessagePack type (minor 3)"),
    ("bad_actions_shape_type", req(39, "step", session=7,
                                   actions={"dtype": "float32", "shape": 1, "data": struct.pack("<f", 0.0)}),
     "BAD_FIELD", 39, "a tensor's shape that is not an array: the wrong MessagePack type (minor 3)"),
    ("bad_op_nul", req(40, "ping\0"), "UNKNOWN_OP", 40, "an op str with a NUL byte names no op (minor 3)"),
    ("bad_env_nul", req(41, "make", env="anymal_c-walk\0", num_worlds=1), "UNKNOWN_ENV", 41,
     "an env str with a NUL byte names no env (minor 3)"),
    # minor 4: critic_obs is a make option, a bool
    ("bad_make_critic_obs_type", req(43, "make", env="anymal_c-walk", num_worlds=1, critic_obs=1), "BAD_FIELD", 43,
     "critic_obs must be a bool (minor 4)"),
    ("bad_step_critic_obs", req(44, "step", session=7, actions=Tensor("float32", [1, 1], [0.0]), critic_obs=True),
     "BAD_FIELD", 44, "critic_obs is asked for at make, not per step (minor 4)"),
    # minor 7: model's terrain_region, four finite numbers, minimum <= maximum
    ("bad_model_region_type", req(46, "model", session=7, terrain_region="all"), "BAD_FIELD", 46,
     "terrain_region must be an array of 4 numbers (minor 7)"),
    ("bad_model_region_length", req(47, "model", session=7, terrain_region=[0.0, 0.0, 1.0]), "BAD_FIELD", 47,
     "terrain_region has 4 entries (minor 7)"),
    ("bad_model_region_order", req(48, "model", session=7, terrain_region=[2.0, 0.0, 1.0, 1.0]), "BAD_FIELD", 48,
     "terrain_region's x_min exceeds its x_max (minor 7)"),
    ("bad_model_region_nan", req(49, "model", session=7, terrain_region=[0.0, float("nan"), 1.0, 1.0]), "BAD_FIELD",
     49, "terrain_region's numbers are finite (minor 7)"),
    ("bad_poses_region", req(50, "poses", session=7, terrain_region=[0.0, 0.0, 1.0, 1.0]), "BAD_FIELD", 50,
     "terrain_region is a field of model only (minor 7)"),
    # a duplicated key fails before "id" is decoded, but the id is readable (section 4.2): the reply carries it
    ("bad_duplicate_key", Raw(b"\x84" + b"".join(bytes(enc(x, bytearray())) for x in
                                                 ("v", 1, "op", "ping", "op", "ping", "id", 37))), "BAD_MESSAGE", 37),
]
for name, content, code, id_, *why in bad:
    add(name, "bad_request", None, (content, code, id_), canonical=False,
        desc="rejected with " + code + (": " + why[0] if why else ""))

add("rep_error", "reply", None,
    {"v": 1, "id": 11, "ok": False, "error": {"code": "UNKNOWN_SESSION", "message": "unknown session 7"}},
    desc="every error reply has this form")
add("rep_ping", "reply", "ping", ok(2, pong=True, time=1700000000.25))
add("rep_hello", "reply", "hello",
    ok(1, protocol=1, protocol_minor=7, server="herd 0.1.0", threads=8, auth="none",
       limits={"max_message_bytes": 16777216, "max_worlds_per_session": 16384, "max_worlds": 65536},
       envs=[TOY_SPEC]), desc="hello reply listing one (toy) env spec")
add("rep_hello_bounds", "reply", "hello",
    ok(1, protocol=1, protocol_minor=7, server="herd 0.1.0", threads=8, auth="curve",
       limits={"max_message_bytes": 16777216, "max_worlds_per_session": 16384, "max_worlds": 65536,
               "max_memory_bytes": 12884901888, "max_sessions": 65536, "client_max_worlds": 65536,
               "client_max_sessions": 256, "client_max_inflight": 256, "client_max_queued_bytes": 1073741824,
               "drain_timeout_ms": 25000, "max_step_seconds": 1000.0, "client_max_inflight_seconds": 2000.0},
       envs=[TOY_SPEC]),
    desc="hello reply of a CURVE server with resource bounds (minor 1; max_sessions and the step-time bounds, "
         "float64 CPU seconds, minor 3): limits has the bounds of section 9")
add("rep_make", "reply", "make",
    ok(3, session=7, token=TOKEN, view_token=VIEW_TOKEN, env="toy-v0", num_worlds=4, autoreset="same_step", seed=42,
       config={"kp": 60.0, "decimation": 2.0, "solver": 2.0}, spec=TOY_SPEC))
add("rep_reset", "reply", "reset",
    ok(6, obs=Tensor("float32", [N, OD], f32(N * OD, 0.5, 0.125)), info={}))
def step_reply(id_, obs, reward, terminated, truncated, done, ret, length, terms, **more_info):
    """A step reply of N worlds: the tensors every step reply has, then the optional info entries."""
    info = {"physics_reset": Tensor("bool", [N], [0, 0]),
            "episode_done": Tensor("bool", [N], done),
            "episode_return": Tensor("float32", [N], ret),
            "episode_length": Tensor("int32", [N], length),
            "episode_terms": Tensor("float32", [N, NT], terms)}
    info.update(more_info)
    return ok(id_, obs=Tensor("float32", [N, OD], obs), reward=Tensor("float32", [N], reward),
              terminated=Tensor("bool", [N], terminated), truncated=Tensor("bool", [N], truncated), info=info)


add("rep_step", "reply", "step",
    step_reply(9, f32(N * OD, -1.0, 0.5), [0.25, -1.5], [0, 1], [0, 0], [0, 1], [0.0, 12.5], [0, 250],
               [0.0, 0.0, 15.0, -2.5], autoreset=Tensor("bool", [N], [1, 0])),
    desc="next_step autoreset: world 0 was reset by this step (its action ignored), world 1 terminated")
add("rep_step_same", "reply", "step",
    step_reply(10, f32(N * OD, 2.0, -0.25), [1.0, 0.5], [0, 0], [1, 0], [1, 0], [99.0, 0.0], [1000, 0],
               [100.0, -1.0, 0.0, 0.0],
               final_obs=Tensor("float32", [N, OD], [3.0, 3.5, 4.0, 0.0, 0.0, 0.0]),
               _final_obs=Tensor("bool", [N], [1, 0]),
               reward_terms=Tensor("float32", [N, NT], [1.0, 0.0, 0.75, -0.25])),
    desc="same_step autoreset with reward_terms: world 0 hit the time limit and was reset in this step; "
         "its last observation is in final_obs")
add("rep_close", "reply", "close", ok(11, session=7, steps=123456))

# minor 4: the critic observation.  A spec with one lists it after reward_terms: the observation's fields
# (noise-free), then privileged ones; a session made with critic_obs gets info.critic_obs in reset and step replies
CD = 5                          # critic_obs_dim of the toy spec
TOY_SPEC_CRITIC = dict(TOY_SPEC, critic_obs_dim=CD, critic_obs=TOY_SPEC["obs"] + [
    {"name": "friction", "offset": 3, "size": 1, "low": 0.5, "high": 1.25, "scale": 1.0, "unit": ""},
    {"name": "foot_contact", "offset": 4, "size": 1, "low": 0.0, "high": 1.0, "scale": 1.0, "unit": ""}])
add("req_make_critic", "request", "make", req(42, "make", env="anymal_c-walk", num_worlds=2, critic_obs=True),
    desc="make asking for the critic observation (minor 4)")
add("rep_make_critic", "reply", "make",
    ok(43, session=7, token=TOKEN, view_token=VIEW_TOKEN, env="toy-v0", num_worlds=2, autoreset="next_step", seed=0,
       config={"kp": 80.0, "decimation": 4.0, "solver": 0.0}, spec=TOY_SPEC_CRITIC, critic_obs=True),
    desc="make reply of a session made with critic_obs: its spec has critic_obs_dim and critic_obs after "
         "reward_terms, and the reply ends with critic_obs: true (minor 4)")
add("rep_reset_critic", "reply", "reset",
    ok(44, obs=Tensor("float32", [N, OD], f32(N * OD, 0.5, 0.125)),
       info={"critic_obs": Tensor("float32", [N, CD], f32(N * CD, 0.25, 0.5))}),
    desc="reset reply of a session made with critic_obs: info.critic_obs [n, critic_obs_dim] (minor 4)")
add("rep_step_critic", "reply", "step",
    step_reply(45, f32(N * OD, -1.0, 0.5), [0.25, -1.5], [0, 1], [0, 0], [0, 1], [0.0, 12.5], [0, 250],
               [0.0, 0.0, 15.0, -2.5], autoreset=Tensor("bool", [N], [1, 0]),
               critic_obs=Tensor("float32", [N, CD], f32(N * CD, -2.0, 0.75))),
    desc="next_step step reply of a session made with critic_obs: info.critic_obs last (minor 4)")

# minor 5: terrain curricula.  A task with one lists its tile kinds in its spec (terrain_kinds, after every other
# key); its reset and step replies carry each world's level and kind (an index into terrain_kinds), int32 [n], as
# the last info entries (after critic_obs)
TOY_SPEC_TERRAIN = dict(TOY_SPEC, terrain_kinds=["slope_up", "stairs_down", "obstacles"])
add("rep_make_terrain", "reply", "make",
    ok(46, session=7, token=TOKEN, view_token=VIEW_TOKEN, env="toy-v0", num_worlds=2, autoreset="next_step", seed=0,
       config={"kp": 80.0, "decimation": 4.0, "solver": 0.0}, spec=TOY_SPEC_TERRAIN),
    desc="make reply of a task with a terrain curriculum: its spec ends with terrain_kinds (minor 5)")
add("rep_reset_terrain", "reply", "reset",
    ok(47, obs=Tensor("float32", [N, OD], f32(N * OD, 0.5, 0.125)),
       info={"terrain_level": Tensor("int32", [N], [3, 0]), "terrain_kind": Tensor("int32", [N], [0, 2])}),
    desc="reset reply of a terrain task: info.terrain_level and info.terrain_kind, int32 [n] (minor 5)")
add("rep_step_terrain", "reply", "step",
    step_reply(48, f32(N * OD, -1.0, 0.5), [0.25, -1.5], [0, 1], [0, 0], [0, 1], [0.0, 12.5], [0, 250],
               [0.0, 0.0, 15.0, -2.5], autoreset=Tensor("bool", [N], [1, 0]),
               critic_obs=Tensor("float32", [N, CD], f32(N * CD, -2.0, 0.75)),
               terrain_level=Tensor("int32", [N], [4, 9]), terrain_kind=Tensor("int32", [N], [1, 2])),
    desc="next_step step reply of a terrain task made with critic_obs: info.terrain_level and info.terrain_kind "
         "after critic_obs (minor 5); world 0's level is its new episode's")

# a toy scene (minor 1): a base box with one leg (a capsule) ending in a sphere, on the plane z = 0
TOY_SCENE = {
    "bodies": [{"name": "base", "parent": -1}, {"name": "leg", "parent": 0}],
    "geoms": [
        {"name": "base/collision0", "body": 0, "type": "box", "size": [0.25, 0.125, 0.0625],
         "pos": [0.0, 0.0, 0.0], "quat": [1.0, 0.0, 0.0, 0.0], "rgba": [0.875, 0.375, 0.125, 1.0], "collides": True},
        {"name": "leg/collision0", "body": 1, "type": "capsule", "size": [0.03125, 0.125, 0.0],
         "pos": [0.0, 0.0, -0.125], "quat": [0.5, 0.5, 0.5, 0.5], "rgba": [0.25, 0.25, 0.25, 1.0], "collides": False},
        {"name": "leg/collision1", "body": 1, "type": "sphere", "size": [0.03125, 0.0, 0.0],
         "pos": [0.0, 0.0, -0.25], "quat": [1.0, 0.0, 0.0, 0.0], "rgba": [0.0625, 0.0625, 0.0625, 1.0],
         "collides": True},
    ],
    "terrain": {"type": "plane", "height": 0.0},
    "max_contacts": 2,
}
add("rep_model", "reply", "model", ok(14, session=7, env="toy-v0", scene=TOY_SCENE),
    desc="the scene of a session (minor 1): bodies, primitives in body frames, terrain")
# minor 7: a cell terrain (a 4 x 3 grid of 0.5 m cells) and the region of its samples 1..2 x 0..1 (2 x 2)
CELLS_SCENE = dict(TOY_SCENE, terrain={
    "type": "cells", "height": 0.0, "nx": 4, "ny": 3, "x0": -1.0, "y0": -0.5, "dx": 0.5, "dy": 0.5,
    "region": {"ix": 1, "iy": 0, "nx": 2, "ny": 2,
               "heights": Tensor("float32", [2, 2], [0.0, 0.125, 0.25, 0.375]),
               "smooth": Tensor("uint8", [2, 2], [0, 1, 0, 0])}})
add("rep_model_cells", "reply", "model", ok(17, session=7, env="toy-v0", scene=CELLS_SCENE),
    desc="the scene of a session on a cell terrain, asked with terrain_region: the grid and a region of it (minor 7)")
add("rep_poses_all", "reply", "poses",
    ok(15, body_pos=Tensor("float32", [N, 2, 3], f32(N * 6, 0.0, 0.25)),
       body_quat=Tensor("float32", [N, 2, 4], [1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5] * N)),
    desc="poses of 2 worlds of 2 bodies: body_pos [n, nbody, 3], body_quat [n, nbody, 4] (w x y z) (minor 1)")
add("rep_poses_contacts", "reply", "poses",
    ok(16, body_pos=Tensor("float32", [N, 2, 3], f32(N * 6, 1.0, -0.125)),
       body_quat=Tensor("float32", [N, 2, 4], [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0] * N),
       contacts={"count": Tensor("int32", [N], [1, 0]),
                 "pos": Tensor("float32", [N, 2, 3], [0.5, 0.25, 0.0] + [0.0] * 9),
                 "normal": Tensor("float32", [N, 2, 3], [0.0, 0.0, 1.0] + [0.0] * 9),
                 "impulse": Tensor("float32", [N, 2], [0.75, 0.0, 0.0, 0.0])}),
    desc="poses with contacts (max 2 per world): world 3 has one active contact, world 1 none (minor 1)")
add("rep_poses_diagnostics", "reply", "poses",
    ok(17, body_pos=Tensor("float32", [N, 2, 3], f32(N * 6, 1.0, -0.125)),
       body_quat=Tensor("float32", [N, 2, 4], [1.0, 0.0, 0.0, 0.0] * (N * 2)),
       contacts={"count": Tensor("int32", [N], [2, 1]),
                 "pos": Tensor("float32", [N, 2, 3], [0.5, 0.25, 0.0, -0.5, 0.25, 0.0, 0.5, 0.0, 0.0] + [0.0] * 3),
                 "normal": Tensor("float32", [N, 2, 3], [0.0, 0.0, 1.0] * 3 + [0.0] * 3),
                 "impulse": Tensor("float32", [N, 2], [0.75, 0.0, 0.5, 0.0]),
                 "state": Tensor("uint8", [N, 2], [1, 0, 2, 0]),
                 "friction": Tensor("float32", [N, 2, 3], [0.125, -0.25, 0.0] + [0.0] * 3 + [-0.375, 0.0, 0.0]
                                    + [0.0] * 3),
                 "body": Tensor("int32", [N, 2], [1, 1, 1, 0])},
       diagnostics={"fallback": Tensor("uint8", [N], [0, 1]),
                    "limit_impulse": Tensor("float32", [N, 2], [0.0, 0.0625, 0.0, -0.125])}),
    desc="poses with the contact diagnostics (minor 6): world 3 has a sticking and an open contact, world 1 a "
         "slipping one, its last step answered by the fallback model and a joint-limit impulse at the upper limit")
add("rep_stats", "reply", "stats",
    ok(12, uptime_s=12.5, sessions=2, worlds=4100, steps=1000000, steps_per_s=81920.0, requests=2048, errors=3,
       threads=8))
add("rep_stats_session", "reply", "stats",
    ok(13, uptime_s=12.5, sessions=2, worlds=4100, steps=1000000, steps_per_s=81920.0, requests=2048, errors=3,
       threads=8,
       session={"session": 7, "env": "anymal_c-walk", "num_worlds": 4096, "steps": 999424, "steps_per_s": 81788.5,
                "age_s": 12.0, "idle_s": 0.0, "requests": 250, "errors": 1}))

# minor 5: a session of a task with a terrain curriculum adds "terrain": the mean level of its worlds that have one,
# their count, and per kind in terrain_kinds order (a level NaN where no world is on the kind)
add("rep_stats_terrain", "reply", "stats",
    ok(15, uptime_s=12.5, sessions=1, worlds=4, steps=400, steps_per_s=40.0, requests=12, errors=0, threads=2,
       session={"session": 7, "env": "toy-v0", "num_worlds": 4, "steps": 400, "steps_per_s": 40.0,
                "age_s": 10.0, "idle_s": 0.5, "requests": 12, "errors": 0,
                "terrain": {"level": 2.5, "worlds": 4,
                            "kinds": [{"kind": "slope_up", "level": 1.5, "worlds": 2},
                                      {"kind": "stairs_down", "level": 3.5, "worlds": 2},
                                      {"kind": "obstacles", "level": float("nan"), "worlds": 0}]}}),
    desc="stats of a session of a terrain task (minor 5): session.terrain, its mean level, worlds, and per kind")


def main():
    index = []
    for name, kind, op, content, canonical, desc in vectors:
        if kind == "bad_request":
            content, code, id_ = content
            b = bytes(enc(content, bytearray()))
            doc = {"expect_error": code, "expect_id": id_}
        else:
            b = bytes(enc(content, bytearray()))
            doc = readable(content)
            back = decoded_readable(b)
            assert same(back, doc), (name, back, doc)
        with open(os.path.join(HERE, name + ".msgpack"), "wb") as f:
            f.write(b)
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        index.append({"name": name, "kind": kind, "op": op, "canonical": canonical, "bytes": len(b), "description": desc})
    with open(os.path.join(HERE, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    print("wrote %d vectors to %s" % (len(index), HERE), file=sys.stderr)


if __name__ == "__main__":
    main()

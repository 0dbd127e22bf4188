"""Error replies become exceptions carrying the server's code; dead servers time out naming the address."""
import json
import os
import time

import numpy as np
import pytest

import herd
from conftest import TESTDATA
from herd import _codec

WALK = "anymal_c-walk"
# A timeout must fire at its deadline, not never: the tests check the deadline the error names and that no
# reply came before it, and bound the wait only to tell a hang (or the 30-s default timeout) from it.  A
# wall-clock bound near the timeout itself would fail whenever the machine is busy.
HANG_S = 15.0


@pytest.fixture
def env(server):
    e = herd.make_vec(WALK, 4, address=server, seed=1)
    e.reset()
    yield e
    e.close()


def expect(code, fn, *args, **kw):
    with pytest.raises(herd.ServerError) as e:
        fn(*args, **kw)
    assert e.value.code == code, e.value
    assert isinstance(e.value, herd.HerdError)
    assert e.value.message and e.value.address
    return e.value


def test_wrong_shape(env):
    err = expect("BAD_SHAPE", env.step, np.zeros((4, 11), np.float32))
    assert "actions" in err.message and "[4, 11]" in err.message
    expect("BAD_SHAPE", env.step, np.zeros((3, 12), np.float32))
    expect("BAD_SHAPE", env.step, np.zeros(48, np.float32))
    # the env is still usable after errors
    obs, *_ = env.step(np.zeros((4, 12), np.float32))
    assert obs.shape == (4, 48)


def test_wrong_dtype(env):
    err = expect("BAD_DTYPE", env.step, np.zeros((4, 12), np.int32))
    assert "float32" in err.message
    expect("BAD_DTYPE", env.step, np.zeros((4, 12), np.int16))      # not a protocol dtype at all
    expect("BAD_DTYPE", env.step, np.zeros((4, 12), np.bool_))


def test_non_finite(env):
    a = np.zeros((4, 12), np.float32)
    a[2, 5] = np.nan
    err = expect("NON_FINITE", env.step, a)
    assert "world 2" in err.message
    a[2, 5] = np.inf
    expect("NON_FINITE", env.step, a)


def test_bad_world_ids(env):
    with pytest.raises(herd.ServerError) as e:
        env.step_async(np.zeros((1, 12), np.float32), world_ids=[4])
        env.step_wait()
    assert e.value.code == "BAD_WORLD_IDS"
    with pytest.raises(herd.ServerError) as e:
        env.step_async(np.zeros((2, 12), np.float32), world_ids=[1, 1])
        env.step_wait()
    assert e.value.code == "BAD_WORLD_IDS"


def test_unknown_env_and_bad_config(server):
    err = expect("UNKNOWN_ENV", herd.make_vec, "no-such-env", 2, address=server)
    assert "anymal_c-walk" in err.message        # the message lists the envs
    err = expect("BAD_CONFIG", herd.make_vec, "anymal_c-stand", 2, address=server, target_height=5.0)
    assert "target_height" in err.message
    expect("BAD_CONFIG", herd.make_vec, "anymal_c-stand", 2, address=server, no_such_key=1)


def test_limit(start_server):
    s = start_server(extra=["--max-worlds-per-session", "8"])
    expect("LIMIT", herd.make_vec, WALK, 9, address=s.address)


def test_unknown_session(server):
    with herd.Client(server, timeout=5) as c:
        err = expect("UNKNOWN_SESSION", c.step, 123456789, np.zeros((1, 12), np.float32))
        assert err.op == "step"


def test_server_error_does_not_leak_sessions(server):
    with herd.Client(server, timeout=5) as c:
        before = c.stats()["sessions"]
        with pytest.raises(herd.ServerError):
            herd.make_vec(WALK, 2, address=server, kp=-1)
        assert c.stats()["sessions"] == before


def test_timeout_on_dead_address(dead_address):
    t0 = time.monotonic()
    with pytest.raises(herd.HerdTimeoutError) as e:
        herd.make_vec(WALK, 4, address=dead_address, timeout=0.5)
    dt = time.monotonic() - t0
    assert 0.5 <= dt < HANG_S
    assert "within 0.5 s" in str(e.value)
    # the message says that nothing answered and that no server may be running there
    assert "no reply arrived" in e.value.message
    assert "no herd-server may be running at that address" in e.value.message
    assert e.value.code == "TIMEOUT"
    assert dead_address in str(e.value) and e.value.address == dead_address
    assert isinstance(e.value, TimeoutError)


def test_timeout_when_server_dies_mid_run(start_server):
    s = start_server()
    env = herd.make_vec(WALK, 4, address=s.address, seed=1, timeout=0.5)
    env.reset()
    env.step(np.zeros((4, 12), np.float32))
    s.proc.kill()
    s.proc.wait()
    t0 = time.monotonic()
    with pytest.raises(herd.HerdTimeoutError) as e:
        env.step(np.zeros((4, 12), np.float32))
    assert 0.5 <= time.monotonic() - t0 < HANG_S
    assert s.address in e.value.message and "within 0.5 s" in e.value.message
    assert "answered before" in e.value.message and "may be running" not in e.value.message
    t0 = time.monotonic()
    env.close()                       # bounded, does not hang
    assert time.monotonic() - t0 < HANG_S


def test_timeout_is_configurable(dead_address):
    with herd.Client(dead_address, timeout=0.2) as c:
        t0 = time.monotonic()
        with pytest.raises(herd.HerdTimeoutError) as e:
            c.ping()
        assert 0.2 <= time.monotonic() - t0 < HANG_S and "within 0.2 s" in str(e.value)
        with pytest.raises(herd.HerdTimeoutError):
            rid = c.send(0, "ping")
            c.wait(rid, timeout=0.1)


def test_bad_address():
    with pytest.raises(herd.TransportError) as e:
        herd.Client("nonsense://x")
    assert e.value.code == "TRANSPORT"


with open(os.path.join(TESTDATA, "index.json")) as f:
    BAD = [v for v in json.load(f) if v["kind"] == "bad_request"]


@pytest.mark.parametrize("vec", BAD, ids=[v["name"] for v in BAD])
def test_golden_bad_requests_against_server(server, vec):
    """Every bad_* golden vector sent raw to a real server gets the expected {code} and id."""
    with open(os.path.join(TESTDATA, vec["name"] + ".msgpack"), "rb") as f:
        payload = f.read()
    with open(os.path.join(TESTDATA, vec["name"] + ".json")) as f:
        want = json.load(f)
    with herd.Client(server, timeout=5) as c:
        c.send_raw(0, payload)
        rep = c.recv_raw(0)
        assert rep["ok"] is False
        assert rep["error"]["code"] == want["expect_error"], rep["error"]
        assert rep["id"] == want["expect_id"]


@pytest.mark.parametrize("name", ["req_hello", "req_ping", "req_stats", "req_big_id"])
def test_golden_requests_against_server(server, name):
    with open(os.path.join(TESTDATA, name + ".msgpack"), "rb") as f:
        payload = f.read()
    with herd.Client(server, timeout=5) as c:
        c.send_raw(0, payload)
        rep = c.recv_raw(0)
        assert rep["ok"] is True
        assert rep["id"] == _codec.unpack(payload)["id"]


def test_malformed_payload(server):
    with herd.Client(server, timeout=5) as c:
        c.send_raw(0, b"\xc1garbage")
        rep = c.recv_raw(0)
        assert rep["error"]["code"] == "BAD_MESSAGE" and rep["id"] == 0
        # the server keeps serving
        assert c.ping()["pong"] is True


def test_a_reply_that_arrived_is_taken_when_the_caller_looks_after_its_deadline(server):
    """A reply that arrived in time is taken even when the waiting thread looks after the deadline: a finalizer
    run by the garbage collector (HerdVectorEnv's closes its sessions over the network), or the scheduler of a
    busy machine, may hold the caller past the deadline while the reply sits in the socket; the client reads
    the socket once more before it reports a timeout."""
    with herd.Client(server, timeout=5) as c:
        rid = c.send(0, "ping")
        assert c._socks[0].poll(30000), "the reply arrives"       # in the socket, not yet read
        assert c.wait(rid, timeout=1e-9)["pong"] is True          # the deadline has passed when it looks
        rid = c.send(0, "ping")
        assert c._socks[0].poll(30000)
        assert c.wait_any([rid], timeout=1e-9) == rid
        c.send_raw(0, b"\xc1")
        assert c._socks[0].poll(30000)
        assert c.recv_raw(0, timeout=1e-9)["error"]["code"] == "BAD_MESSAGE"
        rid = c.send(0, "ping")                                   # nothing lost for later requests
        assert c.wait(rid)["pong"] is True


def test_a_config_value_of_the_wrong_type_names_its_key(server):
    with pytest.raises(TypeError) as e:
        herd.make_vec(WALK, 2, address=server, friction_range=[0.1, 50])
    msg = str(e.value)
    assert "'friction_range'" in msg and "one number" in msg and "[0.1, 50]" in msg
    assert "friction_min and friction_max" in msg
    with pytest.raises(TypeError, match="config key 'kp'"):
        herd.make_vec(WALK, 2, address=server, config={"kp": {"a": 1}})

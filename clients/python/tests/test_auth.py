"""Owned sessions and CURVE through the Python client (PROTOCOL.md sections 1 and 9).

The hijack attempt: a second client finds the first client's session (its id, id - 1,
id + 1) and steps, re-seeds, closes it: every attempt gets the reply a missing session gets.  CURVE:
an authorized key works, any other key (or none) gets no reply."""
import os
import re
import subprocess

import msgpack
import numpy as np
import pytest
import zmq

from conftest import local_server
from herd import Client, HerdTimeoutError, ServerError
from herd.client import read_key
from herd.local import find_server_binary


def _shape(message, session):
    assert str(session) in message, message
    return message.replace(str(session), "#")


def test_session_token_is_carried_and_required(server):
    with Client(server, timeout=10) as a, Client(server, timeout=10) as b:
        s = a.make("anymal_c-walk", 4, seed=1)
        sid = s["session"]
        assert isinstance(s["token"], bytes) and len(s["token"]) == 16
        assert a.token(sid) == s["token"]
        obs0 = np.array(a.reset(sid)["obs"])                        # the token goes along by itself
        s2 = a.make("anymal_c-walk", 4, seed=2)
        assert abs(s2["session"] - sid) > 1 and s2["token"] != s["token"], "random ids and tokens"

        with pytest.raises(ServerError) as missing:
            b.step(sid ^ 0x5555555555555555, np.zeros((4, 12), np.float32))
        want = _shape(missing.value.message, sid ^ 0x5555555555555555)
        wrong = bytes([s["token"][0] ^ 1]) + s["token"][1:]
        attacks = [("step", {"actions": np.zeros((4, 12), np.float32)}), ("reset", {"seed": 666}),
                   ("close", {}), ("stats", {})]
        for target in (sid, sid - 1, sid + 1):
            for op, fields in attacks:
                for token in (None, wrong):
                    extra = {} if token is None else {"token": token}
                    with pytest.raises(ServerError) as e:
                        b.call(0, op, session=target, **extra, **fields)
                    assert e.value.code == "UNKNOWN_SESSION", (op, target, e.value)
                    assert _shape(e.value.message, target) == want
        st = a.stats(session=sid)["session"]
        assert st["steps"] == 0 and st["errors"] == 0, "no attack reached the session"
        a.close_session(s2["session"])
        assert a.token(s2["session"]) is None, "the token is dropped on close"
        s3 = a.make("anymal_c-walk", 4, seed=1)
        assert np.array_equal(np.array(a.reset(s3["session"])["obs"]), obs0), "not re-seeded by the attacker"
        # the token is the capability: a reconnecting trainer that kept it may go on
        assert b.call(0, "stats", session=sid, token=s["token"])["session"]["session"] == sid
        a.close_session(sid)
        a.close_session(s3["session"])


def test_hello_reports_minor_version_and_auth(server):
    with Client(server, timeout=10) as c:
        h = c.hello()
        assert h["protocol"] == 1 and h["protocol_minor"] >= 1 and h["auth"] == "none"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    keys = os.path.join(d, "k")
    subprocess.check_call([find_server_binary(), "--keygen", keys], stdout=subprocess.DEVNULL)
    other = os.path.join(d, "other")
    subprocess.check_call([find_server_binary(), "--keygen", other], stdout=subprocess.DEVNULL)
    return keys, other


def test_curve_admits_authorized_keys_only(keys):
    k, other = keys
    srv = local_server(keys=k)
    try:
        pub, sec = os.path.join(k, "server.pub"), os.path.join(k, "client.key")
        with Client(srv.address, timeout=10, server_key=pub, secret_key=sec) as c:
            h = c.hello()
            assert h["auth"] == "curve"
            s = c.make("anymal_c-stand", 2)
            c.reset(s["session"])
            c.step(s["session"], np.zeros((2, 12), np.float32))
            # the session belongs to the key: the same key on a new connection may use it without a token
            with Client(srv.address, timeout=10, server_key=read_key(pub, False), secret_key=read_key(sec, True)) as c2:
                assert c2.call(0, "stats", session=s["session"])["session"]["steps"] == 2
            c.close_session(s["session"])
        for kw in ({"server_key": pub, "secret_key": os.path.join(other, "client.key")},   # not authorized
                   {"server_key": os.path.join(other, "server.pub"), "secret_key": sec},     # wrong server key
                   {}):                                                                      # plain
            with Client(srv.address, timeout=0.5, **kw) as x:
                with pytest.raises(HerdTimeoutError):
                    x.ping()
    finally:
        assert srv.stop() == 0


def test_curve_keys_from_the_environment(keys, monkeypatch):
    k, _ = keys
    srv = local_server(keys=k)
    try:
        monkeypatch.setenv("HERD_CURVE_SERVER_KEY", os.path.join(k, "server.pub"))
        monkeypatch.setenv("HERD_CURVE_CLIENT_SECRET_KEY", read_key(os.path.join(k, "client.key"), True).decode())
        with Client(srv.address, timeout=10) as c:
            assert c.ping()["pong"] is True
    finally:
        srv.stop()


def test_non_loopback_bind_needs_keys_or_insecure():
    r = subprocess.run([find_server_binary(), "--bind", "tcp://0.0.0.0:0"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "--insecure" in r.stderr, r.stderr

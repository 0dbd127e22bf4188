"""Worlds spread over several servers behave exactly like the same worlds on one server."""
import socket

import numpy as np
import pytest

import herd
from herd.client import expand_addresses

WALK = "anymal_c-walk"
STAND = "anymal_c-stand"


def acts(n, k):
    return np.random.default_rng(77 + k).uniform(-1, 1, size=(n, 12)).astype(np.float32)


@pytest.mark.parametrize("n", [7, 10])
def test_spread_equals_single(server, server2, n):
    kw = dict(seed=123, autoreset_mode="SAME_STEP", episode_seconds=0.16, obs_noise=1.0, episode_statistics=True)
    with herd.make_vec(STAND, n, address=server, **kw) as one, \
            herd.make_vec(STAND, n, address=[server, server2], **kw) as two:
        sess = two.sessions
        assert [s[0] for s in sess] == [server, server2]
        assert [s[3] for s in sess] == [(n + 1) // 2, n // 2]
        o1, _ = one.reset()
        o2, _ = two.reset()
        np.testing.assert_array_equal(o1, o2)
        assert o2.shape == (n, 46)
        ended = 0
        for k in range(20):     # several episodes: autoresets and the streams after them match too
            a = acts(n, k)
            r1 = one.step(a)
            r2 = two.step(a)
            for x, y in zip(r1[:4], r2[:4]):
                np.testing.assert_array_equal(x, y)
            assert set(r1[4]) == set(r2[4])
            if "final_obs" in r1[4]:
                ended += 1
                np.testing.assert_array_equal(r1[4]["final_obs"], r2[4]["final_obs"])
                np.testing.assert_array_equal(r1[4]["episode"]["r"], r2[4]["episode"]["r"])
        assert ended >= 2
        o1, _ = one.reset()        # unseeded resets continue the per-world streams identically
        o2, _ = two.reset()
        np.testing.assert_array_equal(o1, o2)


def test_spread_subsets_and_async(server, server2):
    n = 8
    with herd.make_vec(WALK, n, address=server, seed=5) as one, \
            herd.make_vec(WALK, n, address=[server, server2], seed=5) as two:
        one.reset()
        two.reset()
        ids = np.array([6, 1, 4, 3])      # rows from both servers, out of order
        a = acts(4, 0)
        one.step_async(a, world_ids=ids)
        o1, w1, *_ = one.step_wait()
        two.send(a, ids)
        o2, w2, t2, u2, info = two.recv()
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(info["env_id"], ids)
        ids = np.array([0, 2])            # only on the first server: one part, no gather
        o1, *_ = one.step_async(acts(2, 1), world_ids=ids) and one.step_wait()
        o2, *_ = two.step_async(acts(2, 1), world_ids=ids) and two.step_wait()
        np.testing.assert_array_equal(o1, o2)


def test_spread_reset_mask(server, server2):
    with herd.make_vec(WALK, 4, address=[server, server2], seed=3, autoreset_mode="DISABLED") as two, \
            herd.make_vec(WALK, 4, address=server, seed=3, autoreset_mode="DISABLED") as one:
        one.reset()
        two.reset()
        one.step(acts(4, 0))
        two.step(acts(4, 0))
        mask = np.array([False, True, True, False])
        o1, _ = one.reset(seed=9, options={"reset_mask": mask})
        o2, _ = two.reset(seed=9, options={"reset_mask": mask})
        np.testing.assert_array_equal(o1, o2)


def test_spread_validates_before_sending(server, server2):
    """With several servers, bad shapes / NaNs are refused before any server steps (no half steps)."""
    with herd.make_vec(WALK, 4, address=[server, server2], seed=3) as two:
        two.reset()
        with pytest.raises(herd.HerdError) as e:
            two.step(np.zeros((3, 12), np.float32))
        assert e.value.code == "BAD_SHAPE"
        a = np.zeros((4, 12), np.float32)
        a[3, 0] = np.nan
        with pytest.raises(herd.HerdError) as e:
            two.step(a)
        assert e.value.code == "NON_FINITE"
        with pytest.raises(herd.HerdError) as e:
            two.step_async(np.zeros((1, 12), np.float32), world_ids=[9])
        assert e.value.code == "BAD_WORLD_IDS"
        for st in two.stats():
            assert st["session"]["steps"] == 0


def test_more_servers_than_worlds(server, server2):
    with herd.make_vec(WALK, 1, address=[server, server2], seed=1) as env:
        assert len(env.sessions) == 1
        obs, _ = env.reset()
        assert obs.shape == (1, 48)


def test_dead_server_among_several(server, dead_address):
    with herd.Client(server, timeout=5) as c:
        before = c.stats()["sessions"]
        with pytest.raises(herd.HerdTimeoutError) as e:
            herd.make_vec(WALK, 4, address=[server, dead_address], timeout=0.5)
        assert e.value.address == dead_address
        assert c.stats()["sessions"] == before      # the live server's session was closed again


def test_address_forms(monkeypatch):
    assert expand_addresses("tcp://127.0.0.1:1, tcp://127.0.0.1:2") == ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"]
    assert expand_addresses("127.0.0.1:5555") == ["tcp://127.0.0.1:5555"]
    assert expand_addresses(["ipc:///tmp/a"]) == ["ipc:///tmp/a"]
    assert expand_addresses("tcp://localhost:5555") == ["tcp://localhost:5555"]

    def fake(host, port, family=0, type=0, *a):
        assert host == "herd.svc"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in ("10.0.0.9", "10.0.0.10", "10.0.0.9")]
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    assert expand_addresses("tcp://herd.svc:5555") == ["tcp://10.0.0.9:5555", "tcp://10.0.0.10:5555"]
    assert expand_addresses("tcp://herd.svc:5555", resolve=False) == ["tcp://herd.svc:5555"]


def test_dns_name_spreads_worlds(server, monkeypatch):
    """A name resolving to several addresses (a headless Service) spreads the worlds over all of them:
    two servers on 127.0.0.1 and 127.0.0.2, same port, behind one (faked) DNS name."""
    from conftest import free_port, local_server
    port = free_port()
    servers = []
    try:
        for host in ("127.0.0.1", "127.0.0.2"):
            servers.append(local_server(bind="tcp://%s:%d" % (host, port)))
    except RuntimeError as e:
        for s in servers:
            s.stop()
        pytest.skip("cannot bind two loopback addresses: %s" % e)
    real = socket.getaddrinfo

    def fake(host, p, *a, **kw):
        if host == "herd-headless.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, p)) for ip in ("127.0.0.2", "127.0.0.1")]
        return real(host, p, *a, **kw)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    try:
        with herd.make_vec(WALK, 5, address="tcp://herd-headless.test:%d" % port, seed=8) as spread, \
                herd.make_vec(WALK, 5, address=server, seed=8) as one:
            assert [s[0] for s in spread.sessions] == ["tcp://127.0.0.1:%d" % port, "tcp://127.0.0.2:%d" % port]
            np.testing.assert_array_equal(spread.reset()[0], one.reset()[0])
            for k in range(3):
                np.testing.assert_array_equal(spread.step(acts(5, k))[0], one.step(acts(5, k))[0])
    finally:
        for s in servers:
            s.stop()

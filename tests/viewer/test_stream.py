"""herd.view's HTTP side and herd.record's data without a browser: the Server-Sent Events stream carries
the real poses of the attached worlds (across two servers) at >= 30 frames/s, /scene and /control behave,
the server binds loopback by default, and a replay's inlined data decodes to what was captured."""
import base64
import http.client
import json
import re
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import herd
import herd.record
import herd.view
from herd.local import LocalServer


@pytest.fixture(scope="module")
def two_servers():
    with LocalServer(threads=1) as a, LocalServer(threads=1) as b:
        yield [a.address, b.address]


def read_events(url, seconds):
    """(arrival time, frame) of every frame the stream sends during `seconds`."""
    host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/events")
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        line = r.fp.readline()
        if line.startswith(b"data: "):
            out.append((time.monotonic(), json.loads(line[6:])))
    conn.close()
    return out


def post(url, body):
    req = urllib.request.Request(url + "control", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def test_attached_stream_carries_the_servers_poses(two_servers):
    with herd.make_vec("paper-drop", 4, address=two_servers, seed=3) as envs:
        assert len(envs.sessions) == 2            # worlds 0-1 on one server, 2-3 on the other
        envs.reset(seed=3)
        for _ in range(120):
            envs.step(np.zeros((4, envs.act_dim), np.float32))
        ids = [0, 3]
        viewer = herd.view.attach(envs, world_ids=ids, hz=50)
        try:
            assert viewer.httpd.server_address[0] == "127.0.0.1"
            with urllib.request.urlopen(viewer.url + "scene", timeout=10) as r:
                meta = json.loads(r.read())
            assert meta["worlds"] == ids and meta["paused"] is False
            assert [b["name"] for b in meta["scene"]["bodies"]] == [b["name"] for b in envs.scene()["bodies"]]
            frames = read_events(viewer.url, 2.0)
            rate = (len(frames) - 1) / (frames[-1][0] - frames[0][0])
            assert rate >= 30, "%.1f frames/s" % rate
            want = envs.poses(ids, diagnostics=True)      # what the viewer reads (protocol minor 6)
            f = frames[-1][1]
            assert np.allclose(np.reshape(f["body_pos"], want["body_pos"].shape), want["body_pos"], atol=1e-5)
            assert np.allclose(np.reshape(f["body_quat"], want["body_quat"].shape), want["body_quat"], atol=1e-5)
            assert f["contacts"]["count"] == want["contact_count"].tolist()
            assert f["contacts"]["state"] == want["contact_state"].ravel().tolist()
            assert f["contacts"]["body"] == want["contact_body"].ravel().tolist()
            assert f["diag"]["fallback"] == want["fallback"].tolist()
            assert f["step"] is None and f["terms"] is None      # nobody published
            _, rew, _, _, infos = envs.step(np.zeros((4, envs.act_dim), np.float32))
            viewer.publish(rew, infos, step=121)
            assert read_events(viewer.url, 0.3)[-1][1]["step"] == 121
            assert post(viewer.url, {"paused": True}) == 200
            # frames made before the pause may still be on their way; once one says paused, all later ones do
            flags, deadline = [], time.monotonic() + 30
            while True not in flags and time.monotonic() < deadline:
                flags += [fr["paused"] for _, fr in read_events(viewer.url, 0.3)]
            assert True in flags, "no frame says paused after the pause"
            flags = flags[flags.index(True):] + [fr["paused"] for _, fr in read_events(viewer.url, 0.3)]
            assert all(flags), flags
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(viewer.url + "nothing", timeout=10)
        finally:
            viewer.stop()
            viewer.source.close()


def test_replay_data_decodes_to_the_capture(two_servers):
    with herd.make_vec("anymal_c-walk", 3, address=two_servers[0], seed=0, reward_terms=True) as envs:
        envs.reset(seed=0)
        rec = herd.record.Recorder(envs, world_ids=[2, 0])
        rec.capture()
        rng = np.random.default_rng(0)
        for _ in range(5):
            _, rew, _, _, infos = envs.step(rng.uniform(-1, 1, (3, envs.act_dim)).astype(np.float32))
            rec.capture(rew, infos)
        d = rec.data()
        names = envs.reward_term_names
    dec = lambda s: np.frombuffer(base64.b64decode(s), "<f4")     # noqa: E731
    assert d["nframes"] == 6 and d["worlds"] == [2, 0] and d["dt"] == pytest.approx(0.02)
    assert np.array_equal(dec(d["body_pos"]).reshape(6, 2, -1, 3), np.stack(rec.body_pos))
    assert np.array_equal(dec(d["body_quat"]).reshape(6, 2, -1, 4), np.stack(rec.body_quat))
    reward = dec(d["reward"]).reshape(6, 2)
    assert np.isnan(reward[0]).all() and np.array_equal(reward[-1], rew[[2, 0]])
    assert list(d["terms"]) == names
    last = infos["reward_terms"][[2, 0]]
    assert np.array_equal(dec(d["terms"][names[1]]).reshape(6, 2)[-1], last[:, 1])
    assert callable(herd.record)          # herd.record(...) is herd.record.record(...)


def rollout(address, steps, watch):
    """Final observations of a walk rollout with random actions, with or without a viewer attached."""
    rng = np.random.default_rng(7)
    with herd.make_vec("anymal_c-walk", 8, address=address, seed=5) as envs:
        obs, _ = envs.reset(seed=5)
        viewer = herd.view.attach(envs, hz=200) if watch else None
        try:
            for _ in range(steps):
                obs, *_ = envs.step(rng.uniform(-1, 1, (8, envs.act_dim)).astype(np.float32))
                if watch:
                    time.sleep(0.002)       # let the viewer's reads interleave with the steps
            if watch:
                assert read_events(viewer.url, 0.2)
        finally:
            if viewer:
                viewer.stop()
                viewer.source.close()
        return np.array(obs)


def test_watching_a_training_changes_nothing(two_servers):
    plain = rollout(two_servers, 150, watch=False)
    watched = rollout(two_servers, 150, watch=True)
    assert plain.tobytes() == watched.tobytes()

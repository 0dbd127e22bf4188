"""Looking at worlds over a real server: the model and poses ops (protocol minor 1), rgb_array frames."""
import numpy as np
import pytest

import herd
from herd.errors import HerdError
from herd.render import quat_to_mat


def test_hello_announces_minor_1(server):
    with herd.client.Client(server) as c:
        assert c.hello()["protocol_minor"] >= 1


def test_scene_of_the_walk_task(server):
    with herd.make_vec("anymal_c-walk", 2, address=server, seed=0) as env:
        sc = env.scene()
        assert len(sc["bodies"]) == 13 and sc["bodies"][0]["parent"] == -1
        kinds = [g["type"] for g in sc["geoms"]]
        assert kinds.count("sphere") == 4 and "box" in kinds
        for g in sc["geoms"]:
            assert 0 <= g["body"] < 13 and len(g["size"]) == 3 and len(g["rgba"]) == 4
            assert abs(np.linalg.norm(g["quat"]) - 1) < 1e-6
        assert sc["terrain"] == {"type": "plane", "height": 0.0}
        assert sc["max_contacts"] > 0
        assert env.scene() is sc          # cached


def test_poses_follow_the_steps_and_change_nothing(server):
    with herd.make_vec("anymal_c-walk", 4, address=server, seed=5) as a, \
            herd.make_vec("anymal_c-walk", 4, address=server, seed=5) as b:
        a.reset(seed=5)
        b.reset(seed=5)
        rng = np.random.default_rng(0)
        p0 = a.poses()
        assert p0["body_pos"].shape == (4, 13, 3) and p0["body_quat"].shape == (4, 13, 4)
        assert p0["body_pos"].dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(p0["body_quat"], axis=2), 1, atol=1e-6)
        for t in range(30):
            act = rng.uniform(-1, 1, (4, a.act_dim)).astype(np.float32)
            a.poses([3, 0], contacts=True)         # only a is looked at
            oa = a.step(act)[0]
            ob = b.step(act)[0]
            np.testing.assert_array_equal(oa, ob)
        p1 = a.poses()
        assert not np.array_equal(p0["body_pos"], p1["body_pos"]), "the worlds moved"
        np.testing.assert_array_equal(p1["body_pos"], b.poses()["body_pos"])
        # reading twice without a step gives the same bytes
        np.testing.assert_array_equal(p1["body_quat"], a.poses()["body_quat"])
        # a subset in any order gives the rows of those worlds
        sub = a.poses([2, 0])
        np.testing.assert_array_equal(sub["body_pos"], p1["body_pos"][[2, 0]])
        np.testing.assert_array_equal(sub["world_ids"], [2, 0])


@pytest.mark.parametrize("mode", ["NEXT_STEP", "DISABLED"])
def test_poses_are_ordered_behind_a_step_in_flight(server, mode):
    with herd.make_vec("anymal_c-walk", 8, address=server, seed=1, autoreset_mode=mode) as env:
        env.reset(seed=1)
        before = env.poses()["body_pos"]
        env.step_async(np.ones((8, env.act_dim), np.float32))
        if mode == "DISABLED":                    # a second step waits for the first (PROTOCOL.md 7.3) ...
            env.step_async(np.ones((8, env.act_dim), np.float32))
        during = env.poses()["body_pos"]          # ... and the poses read waits behind both: it sees their result
        env.step_wait()
        if mode == "DISABLED":
            env.step_wait()
        after = env.poses()["body_pos"]
        np.testing.assert_array_equal(during, after)
        assert not np.array_equal(before, after)


def test_latest_poses_read_whole_worlds_without_waiting(server):
    kw = dict(address=server, seed=6, autoreset_mode="DISABLED")
    with herd.make_vec("anymal_c-walk", 512, **kw) as env, herd.make_vec("anymal_c-walk", 512, **kw) as ref:
        env.reset(seed=6)
        ref.reset(seed=6)
        rng = np.random.default_rng(1)
        for _ in range(3):
            a1, a2 = (rng.uniform(-1, 1, (512, env.act_dim)).astype(np.float32) for _ in range(2))
            states = [ref.poses()["body_pos"]]        # the reference: the same worlds stepped one at a time
            ref.step(a1)
            states.append(ref.poses()["body_pos"])
            ref.step(a2)
            states.append(ref.poses()["body_pos"])
            env.step_async(a1)
            env.step_async(a2)                        # deferred behind the first (disabled autoreset)
            now = env.poses(latest=True)["body_pos"]
            env.step_wait()
            env.step_wait()
            np.testing.assert_array_equal(env.poses()["body_pos"], states[2])
            # each world is read whole: as it was before, between or after the two steps
            whole = np.zeros(512, bool)
            for x in states:
                whole |= (now == x).all(axis=(1, 2))
            assert whole.all(), "%d worlds read in a torn state" % (~whole).sum()


def test_contacts_carry_the_weight(server):
    with herd.make_vec("anymal_c-stand", 2, address=server, seed=2) as env:
        env.reset(seed=2)
        for _ in range(150):
            env.step(np.zeros((2, env.act_dim), np.float32))
        p = env.poses(contacts=True)
        mc = env.scene()["max_contacts"]
        assert p["contact_pos"].shape == (2, mc, 3) and p["contact_impulse"].shape == (2, mc)
        spec = env.herd_spec
        for i in range(2):
            k = int(p["contact_count"][i])
            assert k >= 3
            np.testing.assert_array_equal(p["contact_normal"][i, :k], [[0, 0, 1]] * k)
            assert (np.abs(p["contact_pos"][i, :k, 2]) < 0.01).all()
            assert (p["contact_impulse"][i, :k] > 0).all() and (p["contact_impulse"][i, k:] == 0).all()
            # at rest: sum of normal impulses over one physics step = m g dt (ANYmal C: about 50 kg)
            total = float(p["contact_impulse"][i, :k].sum())
            assert 0.85 * 40 * 9.81 * spec["sim_dt"] < total < 1.15 * 60 * 9.81 * spec["sim_dt"]


def test_poses_of_worlds_on_two_servers(server, server2):
    with herd.make_vec("anymal_c-walk", 6, address=[server, server2], seed=3) as env:
        env.reset(seed=3)
        env.step(np.zeros((6, env.act_dim), np.float32))
        allp = env.poses(contacts=True)
        assert allp["body_pos"].shape == (6, 13, 3)
        ids = [5, 0, 3]
        sub = env.poses(ids, contacts=True)
        for key in ("body_pos", "body_quat", "contact_count", "contact_impulse"):
            np.testing.assert_array_equal(sub[key], allp[key][ids])


def test_bad_world_ids_are_refused(server):
    with herd.make_vec("anymal_c-walk", 2, address=server, seed=0) as env:
        with pytest.raises(HerdError, match="BAD_WORLD_IDS"):
            env.poses([0, 7])


def test_the_base_pose_matches_the_base_frame(server):
    """The rendered robot is where the poses say: the base box's corners project around the camera target."""
    with herd.make_vec("anymal_c-walk", 1, address=server, seed=4, render_mode="rgb_array",
                       render_size=(160, 120)) as env:
        env.reset(seed=4)
        frames = env.render()
        assert len(frames) == 1 and frames[0].shape == (120, 160, 3)
        p = env.poses([0])
        R = quat_to_mat(p["body_quat"][0, 0])
        assert abs(np.linalg.det(R) - 1) < 1e-5
        img = frames[0].astype(int)
        orange = (img[..., 0] > 150) & (img[..., 1] < 140) & (img[..., 2] < 90)
        assert orange.sum() > 50, "the orange base is drawn"
        ys, xs = np.nonzero(orange)
        assert abs(xs.mean() - 80) < 20 and abs(ys.mean() - 60) < 20, "around the image centre (camera follows)"


def test_a_viewer_of_another_process_needs_the_sessions_token(server):
    """Owned sessions (plain mode): reading a trainer's poses from another client takes the session's token."""
    from herd.view import SessionSource
    with herd.make_vec("paper-drop", 3, address=server, seed=1) as envs:
        envs.reset()
        (addr, session, _, _), = envs.sessions
        token = envs._client.token(session)
        assert token is not None and len(token) == 16
        with pytest.raises(HerdError) as e:
            SessionSource.from_session(addr, session)
        assert e.value.code == "UNKNOWN_SESSION"
        src = SessionSource.from_session(addr, session, token=token.hex())
        try:
            rep = src._client.poses(session, world_ids=[0, 2])
            assert rep["body_pos"].shape[0] == 2
        finally:
            src.close()
        with pytest.raises(ValueError):
            herd.Client(addr).use_token(session, b"short")


def test_a_session_source_is_read_from_several_threads_at_once(server):
    """A Viewer's thread advances its source while the caller may too (as the view-token test does): reads on
    the source's one socket take turns, so every advance gets its own reply (without that, two threads' requests
    and replies would cross on the socket and one would wait out its timeout)."""
    import threading
    from herd.view import SessionSource
    with herd.make_vec("paper-drop", 4, address=server, seed=1) as envs:
        envs.reset()
        (addr, session, _, _), = envs.sessions
        src = SessionSource.from_session(addr, session, token=envs.view_tokens[0], timeout=5.0)
        errors, frames = [], []

        def reader():
            try:
                for _ in range(40):
                    f = src.advance()
                    assert len(f["body_pos"]) == 4 * 13 * 3
                    frames.append(1)
            except Exception as e:      # noqa: BLE001 (reported below)
                errors.append(repr(e))
        try:
            threads = [threading.Thread(target=reader) for _ in range(4)]
            for t in threads:
                t.start()
            for _ in range(20):
                envs.step(np.zeros((4, envs.act_dim), np.float32))
            for t in threads:
                t.join(60)
        finally:
            src.close()
        assert not errors, errors[:3]
        assert len(frames) == 4 * 40


def test_bench_poses_reads_a_trainers_session(server):
    """clients/python/bench_poses.py (the `poses` cost figure) on a small session: its poller, a client of
    its own, reads the trainer's owned session (with the token) and the run reports its polls.  No speed is
    asserted: the figure is measured by running the script, not by the test suite."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    r = subprocess.run([sys.executable, os.path.join(root, "bench_poses.py"), "--address", server, "--worlds", "64",
                        "--watched", "4", "--hz", "50", "--repeats", "1", "--seconds", "0.5"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["bench"] == "poses_cost" and res["worlds"] == 64 and res["polls"] > 0
    assert res["steps_per_s_off"] > 0 and res["steps_per_s_on"] > 0 and res["poll_rtt_ms_median"] > 0


def test_a_view_token_reads_a_session_but_never_acts_on_it(server):
    """Protocol minor 2: the make reply's view token is a read-only right.  Another client holding only it
    may use model, poses and stats on the session; reset, step and close get UNKNOWN_SESSION and change
    nothing; herd.view.attach gives its viewer this token, not the session's full token."""
    import herd.view
    with herd.make_vec("paper-drop", 3, address=server, seed=1) as envs:
        envs.reset()
        (addr, session, _, _), = envs.sessions
        vt = envs.view_tokens[0]
        full = envs._client.token(session)
        assert isinstance(vt, str) and len(bytes.fromhex(vt)) == 16 and bytes.fromhex(vt) != full
        with herd.Client(addr) as c:
            assert c.hello()["protocol_minor"] >= 2
            c.use_token(session, vt)
            assert len(c.model(session)["scene"]["bodies"]) == 13
            mine = c.poses(session, world_ids=[1], contacts=True)
            np.testing.assert_array_equal(mine["body_pos"], envs.poses([1])["body_pos"])
            assert c.stats(session=session)["session"]["num_worlds"] == 3
            before = envs.poses()["body_pos"].copy()
            acts = np.ones((3, envs.act_dim), np.float32)
            for call in (lambda: c.reset(session), lambda: c.step(session, acts),
                         lambda: c.close_session(session)):
                with pytest.raises(HerdError) as e:
                    call()
                assert e.value.code == "UNKNOWN_SESSION"
            np.testing.assert_array_equal(envs.poses()["body_pos"], before)     # nothing moved
            # a token that is neither the full nor the view token reads nothing
            c.use_token(session, bytes(16))
            with pytest.raises(HerdError) as e:
                c.poses(session, world_ids=[0])
            assert e.value.code == "UNKNOWN_SESSION"
        viewer = herd.view.attach(envs, world_ids=[0, 2])
        try:
            held = viewer.source._client.token(session)
            assert held == bytes.fromhex(vt)
            f = viewer.source.advance()
            assert len(f["body_pos"]) == 2 * 13 * 3
        finally:
            viewer.stop()
            viewer.source.close()
        envs.step(np.zeros((3, envs.act_dim), np.float32))        # the owner's session is still open

"""The contact diagnostics of the poses op (protocol minor 6) over a real server: stick and slip states, friction
impulses, the fallback flag, the viewer's frames and the replays that keep them, and their absence from replies
that did not ask."""
import base64

import numpy as np

import herd
import herd.record
import herd.view
from herd.client import Client


def _stand(server, n=1, seed=3, **config):
    envs = herd.make_vec("anymal_c-stand", n, address=server, seed=seed, config=config or None)
    envs.reset(seed=seed)
    return envs


def test_hello_announces_minor_6(server):
    with Client(server) as c:
        assert c.hello()["protocol_minor"] >= 6


def test_a_standing_robot_sticks_and_a_pushed_one_slips(server):
    with _stand(server) as still, _stand(server, push_vel_max=3.0, push_interval_s=0.02) as pushed:
        zero = np.zeros((1, still.act_dim), np.float32)
        for _ in range(150):
            still.step(zero)
        p = still.poses(diagnostics=True)
        n = int(p["contact_count"][0])
        assert n >= 3
        loaded = p["contact_impulse"][0, :n] > 0
        assert np.all(p["contact_state"][0, :n][loaded] == 1), p["contact_state"][0, :n]
        assert np.all(p["contact_state"][0, :n][~loaded] == 0)
        names = [still.scene()["bodies"][b]["name"] for b in p["contact_body"][0, :n]]
        assert all(name.endswith("SHANK") for name in names), names
        f = p["contact_friction"][0, :n]
        assert np.all(np.abs(np.einsum("ij,ij->i", f, p["contact_normal"][0, :n])) < 1e-6)   # tangential
        assert p["fallback"].tolist() == [0] and p["limit_impulse"].shape == (1, 13)
        slips = 0
        for _ in range(50):
            pushed.step(zero)
            q = pushed.poses(diagnostics=True)
            slips += int(np.sum(q["contact_state"] == 2))
        assert slips > 20, "a robot pushed every step slips (%d slipping contacts in 50 steps)" % slips
        # without diagnostics the reply is minor 1's
        assert sorted(still.poses(contacts=True)) == ["body_pos", "body_quat", "contact_count", "contact_impulse",
                                                      "contact_normal", "contact_pos", "world_ids"]


def test_the_fallback_flag_marks_the_steps_the_fallback_answered(server):
    """coulomb-stall-admm hands some of a pushed robot's contact problems to ADMM: the steps flagged are those whose
    counter moved; pgs has no fallback and never flags one."""
    for solver, expect in (("coulomb-stall-admm", True), ("pgs", False)):
        with _stand(server, solver=solver, push_vel_max=3.0, push_interval_s=0.02) as envs:
            zero = np.zeros((1, envs.act_dim), np.float32)
            flagged = 0
            for _ in range(100):
                envs.step(zero)
                flagged += int(envs.poses(diagnostics=True)["fallback"][0])
            assert (flagged > 0) == expect, (solver, flagged)


def test_frames_and_replays_keep_the_diagnostics(server, tmp_path):
    with _stand(server, n=2) as envs:
        zero = np.zeros((2, envs.act_dim), np.float32)
        for _ in range(100):
            envs.step(zero)
        p = envs.poses([1, 0], diagnostics=True)
        f = herd.view.frame_dict(100, p)
        mc = envs.scene()["max_contacts"]
        assert f["contacts"]["state"] == p["contact_state"].ravel().tolist()
        assert len(f["contacts"]["friction"]) == 2 * mc * 3 and len(f["diag"]["limit"]) == 2 * 13
        assert f["diag"]["fallback"] == [0, 0]
        rec = herd.record.Recorder(envs, world_ids=(1, 0))
        rec.capture()
        envs.step(zero)
        rec.capture()
        d = rec.data()
        state = np.frombuffer(base64.b64decode(d["contacts"]["state"]), "<f4").reshape(2, 2, mc)
        np.testing.assert_array_equal(state[1], envs.poses([1, 0], diagnostics=True)["contact_state"])
        assert np.frombuffer(base64.b64decode(d["diag"]["limit"]), "<f4").shape == (2 * 2 * 13,)

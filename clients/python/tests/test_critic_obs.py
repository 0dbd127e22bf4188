"""The critic's (privileged) observation (protocol minor 4): make's critic_obs option through the Python client and
the vector env, infos["critic_obs"] after reset and step, zero copy, and the option refused for an env without one."""
import numpy as np
import pytest
import zmq

import herd

WALK = "anymal_c-walk"


def acts(n, k=0, ad=12):
    rng = np.random.default_rng(2000 + k)
    return rng.uniform(-1, 1, size=(n, ad)).astype(np.float32)


def fields(spec):
    return {f["name"]: f for f in spec["critic_obs"]}


def test_spec_lists_the_critic_fields(server):
    with herd.Client(server, timeout=10) as c:
        h = c.hello()
        assert h["protocol_minor"] >= 4
        specs = {s["name"]: s for s in h["envs"]}
        walk = specs[WALK]
        assert walk["critic_obs_dim"] == 56
        f = fields(walk)
        # the observation's fields first, the same, then the privileged ones
        assert walk["critic_obs"][:len(walk["obs"])] == walk["obs"]
        assert [x["name"] for x in walk["critic_obs"][len(walk["obs"]):]] == \
            ["friction", "added_mass", "foot_contact", "push_vel"]
        assert (f["friction"]["offset"], f["foot_contact"]["offset"], f["foot_contact"]["size"]) == (48, 50, 4)
        assert f["added_mass"]["unit"] == "kg" and f["push_vel"]["size"] == 2
        assert "critic_obs" not in specs["paper-trot"] and "critic_obs_dim" not in specs["paper-trot"]


def test_vector_env_critic_obs_in_reset_and_step_infos(server):
    n = 16
    with herd.make_vec(WALK, n, address=server, seed=5, critic_obs=True, obs_noise=0, friction_min=0.6,
                       friction_max=0.6, episode_seconds=0.2) as env:
        assert env.critic_obs_dim == 56 and len(env.critic_obs_fields) == 12
        f = {x["name"]: x for x in env.critic_obs_fields}
        obs, infos = env.reset()
        c = infos["critic_obs"]
        assert c.shape == (n, 56) and c.dtype == np.float32 and infos["_critic_obs"].all()
        np.testing.assert_array_equal(c[:, :48], obs)           # noise off: the proprioception is the obs
        np.testing.assert_allclose(c[:, f["friction"]["offset"]], 0.6, rtol=1e-6)   # friction_min == max
        assert (c[:, f["foot_contact"]["offset"]:f["foot_contact"]["offset"] + 4] == 0).all()
        ended = 0
        for k in range(30):
            obs, rew, term, trunc, infos = env.step(acts(n, k))
            c = infos["critic_obs"]
            assert c.shape == (n, 56)
            np.testing.assert_array_equal(c[:, :48], obs)       # after autoresets too: the state obs describes
            ended += int((term | trunc).sum())
        assert ended > 0
        contact = c[:, f["foot_contact"]["offset"]:f["foot_contact"]["offset"] + 4]
        assert set(np.unique(contact)) <= {0.0, 1.0} and contact.any()
        # a reset of some worlds: their rows, the others 0 and unmasked
        mask = np.zeros(n, bool)
        mask[[3, 7]] = True
        obs, infos = env.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(infos["_critic_obs"], mask)
        np.testing.assert_array_equal(infos["critic_obs"][mask, :48], obs[mask])
        assert (infos["critic_obs"][~mask] == 0).all()


def test_critic_obs_is_zero_copy(server):
    def root(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a
    # 64 worlds: a message large enough to be received into its own (aligned) buffer, as in test_vector.py
    with herd.make_vec(WALK, 64, address=server, seed=1, critic_obs=True) as env:
        for obs, infos in (env.reset(), (lambda r: (r[0], r[4]))(env.step(acts(64)))):
            c = infos["critic_obs"]
            assert not c.flags.owndata and c.flags.aligned and c.flags.c_contiguous
            assert isinstance(root(c), memoryview) and isinstance(root(c).obj, zmq.Frame)
            assert root(c).obj is root(obs).obj                 # one received message holds both


def test_off_by_default(server):
    with herd.make_vec(WALK, 4, address=server, seed=1) as env:
        assert env.critic_obs_dim == 0
        assert "critic_obs_dim" not in env.herd_spec      # the session's spec describes its replies
        _, infos = env.reset()
        assert "critic_obs" not in infos
        infos = env.step(acts(4))[4]
        assert "critic_obs" not in infos
    with herd.Client(server, timeout=10) as c:
        s = c.make(WALK, 2, seed=1)
        assert "critic_obs" not in s and "critic_obs" not in s["spec"]
        r = c.reset(s["session"])
        assert r["info"] == {}
        c.close_session(s["session"])


def test_client_make_keyword_and_refusal(server):
    with herd.Client(server, timeout=10) as c:
        s = c.make(WALK, 2, seed=3, critic_obs=True)
        assert s["critic_obs"] is True and s["spec"]["critic_obs_dim"] == 56
        r = c.reset(s["session"])
        assert r["info"]["critic_obs"].shape == (2, 56)
        r = c.step(s["session"], acts(1), world_ids=[1])
        assert r["info"]["critic_obs"].shape == (1, 56)
        np.testing.assert_array_equal(r["info"]["critic_obs"][:, 9:12], r["obs"][:, 9:12])   # the command: no noise
        c.close_session(s["session"])
        with pytest.raises(herd.ServerError) as e:
            c.make("paper-trot", 1, critic_obs=True)
        assert e.value.code == "BAD_FIELD"
        assert "'critic_obs'" in str(e.value) and "paper-trot" in str(e.value) and WALK in str(e.value)

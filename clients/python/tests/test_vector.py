"""HerdVectorEnv against a real herd-server: API conformance, spaces, seeding, autoreset, async, zero copy."""
import numpy as np
import pytest
import zmq

import herd
from herd import AutoresetMode
from herd.spaces import Box

STAND = "anymal_c-stand"
WALK = "anymal_c-walk"


def acts(n, k=0, ad=12):
    rng = np.random.default_rng(1000 + k)
    return rng.uniform(-1, 1, size=(n, ad)).astype(np.float32)


# ---- API conformance ---------------------------------------------------------------------------

def test_make_vec_api(server):
    with herd.make_vec(WALK, 8, address=server, seed=3) as env:
        assert env.num_envs == 8
        assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        assert env.metadata["autoreset_mode"].name == "NEXT_STEP"
        assert env.single_observation_space.shape == (48,)
        assert env.single_action_space.shape == (12,)
        assert env.observation_space.shape == (8, 48)
        assert env.action_space.shape == (8, 12)
        assert env.single_observation_space.dtype == np.float32
        assert env.action_space.dtype == np.float32
        assert env.unwrapped is env and env.render() is None and not env.closed
        assert env.herd_spec["name"] == WALK and env.max_episode_steps == 1000
        assert "target_height" not in env.config and env.config["kp"] == 80.0
        assert "tracking_lin_vel" in env.reward_term_names
        obs, infos = env.reset()
        assert isinstance(obs, np.ndarray) and obs.shape == (8, 48) and obs.dtype == np.float32
        assert isinstance(infos, dict)
        assert env.observation_space.contains(obs)
        out = env.step(acts(8))
        assert len(out) == 5
        obs, rew, term, trunc, infos = out
        assert obs.shape == (8, 48) and obs.dtype == np.float32
        assert rew.shape == (8,) and rew.dtype == np.float32
        assert term.shape == (8,) and term.dtype == np.bool_
        assert trunc.shape == (8,) and trunc.dtype == np.bool_
        assert isinstance(infos, dict)
        sess = env.sessions
        assert len(sess) == 1 and sess[0][0] == server and sess[0][3] == 8
        st = env.stats()[0]
        assert st["session"]["num_worlds"] == 8 and st["session"]["steps"] == 8
    assert env.closed
    # the session is gone on the server
    with herd.Client(server, timeout=5) as c:
        with pytest.raises(herd.ServerError) as e:
            c.stats(session=sess[0][1])
        assert e.value.code == "UNKNOWN_SESSION"
    env.close()     # idempotent


def test_config_overrides_and_float64_actions(server):
    with herd.make_vec(STAND, 2, address=server, seed=0, target_height=0.55, config={"obs_noise": 0}) as env:
        assert env.config["target_height"] == pytest.approx(0.55)
        assert env.config["obs_noise"] == 0.0
        env.reset()
        obs, rew, *_ = env.step(np.zeros((2, 12)))          # float64 -> cast to float32
        assert obs.dtype == np.float32
        obs, rew, *_ = env.step([[0.0] * 12, [0.1] * 12])    # lists too
        assert rew.shape == (2,)


def test_spaces_fallback_box():
    b = Box(low=np.array([-1.0, -np.inf], np.float32), high=np.array([1.0, np.inf], np.float32), seed=5)
    assert b.shape == (2,) and b.dtype == np.float32
    assert not b.is_bounded() and b.is_bounded("below") is False
    s = b.sample()
    assert s.shape == (2,) and s.dtype == np.float32 and -1 <= s[0] <= 1
    assert b.contains(s) and s in b
    assert not b.contains(np.array([2.0, 0.0], np.float32))
    assert not b.contains(np.zeros(3, np.float32))
    assert b == Box(b.low, b.high)
    b2 = Box(-1.0, 1.0, shape=(3, 2))
    assert b2.low.shape == (3, 2) and b2.is_bounded()
    assert "Box(" in repr(b2)
    with pytest.raises(ValueError):
        Box(1.0, -1.0, shape=(1,))


def test_spaces_from_spec(server):
    with herd.make_vec(STAND, 3, address=server) as env:
        spec = env.herd_spec
        lo = np.full(46, np.nan)
        for f in spec["obs"]:
            lo[f["offset"]:f["offset"] + f["size"]] = f["low"]
        np.testing.assert_array_equal(env.single_observation_space.low, lo.astype(np.float32))
        assert env.observation_space.low.shape == (3, 46)
        a = env.action_space.sample()
        assert a.shape == (3, 12) and env.action_space.contains(a)


@pytest.mark.parametrize("mode,name", [("NEXT_STEP", "NEXT_STEP"), ("next_step", "NEXT_STEP"),
                                       ("SameStep", "SAME_STEP"), (AutoresetMode.DISABLED, "DISABLED"),
                                       ("disabled", "DISABLED")])
def test_autoreset_mode_names(server, mode, name):
    with herd.make_vec(STAND, 1, address=server, autoreset_mode=mode) as env:
        assert env.metadata["autoreset_mode"] == AutoresetMode[name]


def test_autoreset_mode_invalid(server):
    with pytest.raises(ValueError):
        herd.make_vec(STAND, 1, address=server, autoreset_mode="sometimes")


def test_ipc_transport(ipc_server):
    with herd.make_vec(WALK, 4, address=ipc_server, seed=1) as env:
        obs, _ = env.reset()
        obs2, *_ = env.step(acts(4))
        assert obs2.shape == (4, 48)


# ---- seeding ------------------------------------------------------------------------------------

def rollout(env, steps, seed=None, k0=0):
    out = [env.reset(seed=seed)[0].copy()]
    for k in range(steps):
        o, r, te, tr, _ = env.step(acts(env.num_envs, k0 + k))
        out.append(np.concatenate([o, r[:, None], te[:, None], tr[:, None]], axis=1).copy())
    return out


def test_seeding_determinism(server):
    with herd.make_vec(WALK, 6, address=server, seed=42) as a, herd.make_vec(WALK, 6, address=server, seed=42) as b:
        ra, rb = rollout(a, 10), rollout(b, 10)
        for x, y in zip(ra, rb):
            np.testing.assert_array_equal(x, y)
        # reset(seed=...) on a used env reproduces the same trajectory
        rc = rollout(a, 10, seed=42)
        for x, y in zip(ra, rc):
            np.testing.assert_array_equal(x, y)
    with herd.make_vec(WALK, 6, address=server, seed=43) as c:
        assert not np.array_equal(rollout(c, 0)[0], ra[0])


def test_seed_plus_i_per_world(server):
    """World i of make_vec(seed=s) is world 0 of make_vec(seed=s+i) (Gymnasium's seed + i)."""
    with herd.make_vec(WALK, 4, address=server, seed=100) as env:
        obs, _ = env.reset()
        obs = obs.copy()
    for i in range(4):
        with herd.make_vec(WALK, 1, address=server, seed=100 + i) as one:
            o, _ = one.reset()
            np.testing.assert_array_equal(o[0], obs[i])
    with herd.make_vec(WALK, 4, address=server, seed=1) as env:
        o1, _ = env.reset(seed=100)
        np.testing.assert_array_equal(o1, obs)
        o2, _ = env.reset(seed=[103, 102, 101, 100])
        np.testing.assert_array_equal(o2, obs[::-1])
        with pytest.raises(ValueError):
            env.reset(seed=[1, 2])


def test_reset_without_seed_continues(server):
    with herd.make_vec(WALK, 3, address=server, seed=7) as env:
        first, _ = env.reset()
        first = first.copy()
        again, _ = env.reset()
        assert not np.array_equal(first, again)      # the next episode of each stream
        back, _ = env.reset(seed=7)
        np.testing.assert_array_equal(first, back)


# ---- autoreset ----------------------------------------------------------------------------------

def short(server, mode, n=3, seed=11):
    # 5-step episodes (episode_seconds 0.1 at 50 Hz), no noise
    return herd.make_vec(STAND, n, address=server, seed=seed, autoreset_mode=mode, episode_seconds=0.1, obs_noise=0,
                         episode_statistics=True)


def test_next_step_autoreset(server):
    with short(server, "NEXT_STEP") as env:
        env.reset()
        rets = np.zeros(3)
        for k in range(4):
            o, r, te, tr, info = env.step(acts(3, k))
            assert not tr.any() and "episode" not in info
            rets += r
        o, r, te, tr, info = env.step(acts(3, 4))
        rets += r
        assert tr.all() and not te.any()
        assert info["_episode"].all()
        np.testing.assert_array_equal(info["episode"]["l"], [5, 5, 5])
        np.testing.assert_allclose(info["episode"]["r"], rets, rtol=1e-5)
        assert (info["episode"]["t"] >= 0).all()
        assert "final_obs" not in info
        # next step: the reset step (action ignored, reward 0, flags false)
        o, r, te, tr, info = env.step(acts(3, 5))
        assert info["_autoreset"].all() and info["autoreset"].all()
        np.testing.assert_array_equal(r, 0)
        assert not te.any() and not tr.any()
        o2, r2, te2, tr2, info2 = env.step(acts(3, 6))
        assert "autoreset" not in info2


def test_same_step_matches_next_step(server):
    with short(server, "NEXT_STEP") as nx, short(server, "SAME_STEP") as ss:
        nx.reset()
        ss.reset()
        for k in range(4):
            a = acts(3, k)
            on, *_ = nx.step(a)
            os_, *_ = ss.step(a)
            np.testing.assert_array_equal(on, os_)
        a = acts(3, 4)
        on, rn, ten, trn, infn = nx.step(a)
        os_, rs, tes, trs, infs = ss.step(a)
        np.testing.assert_array_equal(rn, rs)
        np.testing.assert_array_equal(trn, trs)
        # same-step: the final obs is in infos["final_obs"], obs is already the next episode's first
        assert infs["_final_obs"].all() and infs["_final_info"].all()
        np.testing.assert_array_equal(infs["final_obs"], on)
        np.testing.assert_array_equal(infs["final_info"]["episode"]["l"], [5, 5, 5])
        np.testing.assert_array_equal(infs["episode"]["r"], infn["episode"]["r"])
        on2, rn2, *_ = nx.step(acts(3, 5))     # next-step's reset step
        np.testing.assert_array_equal(on2, os_)
        assert (rn2 == 0).all()


def test_disabled_autoreset(server):
    with short(server, AutoresetMode.DISABLED) as env:
        obs0, _ = env.reset()
        for k in range(5):
            o, r, te, tr, info = env.step(acts(3, k))
        assert tr.all()
        last = o.copy()
        with pytest.raises(herd.ServerError) as e:
            env.step(acts(3, 5))
        assert e.value.code == "EPISODE_ENDED" and "world" in e.value.message
        mask = np.array([True, False, True])
        o, info = env.reset(options={"reset_mask": mask})
        assert o.shape == (3, 46)
        np.testing.assert_array_equal(o[1], last[1])          # not reset: unchanged row
        assert not np.array_equal(o[0], last[0])
        # world 1 is still ended
        with pytest.raises(herd.ServerError):
            env.step(acts(3, 6))
        o, _ = env.reset(options={"reset_mask": ~mask})
        env.step(acts(3, 7))
        with pytest.raises(ValueError):
            env.reset(options={"reset_mask": np.zeros(3, bool)})


def test_reward_terms_info(server):
    with herd.make_vec(STAND, 2, address=server, reward_terms=True, seed=1) as env:
        env.reset()
        o, r, te, tr, info = env.step(acts(2))
        rt = info["reward_terms"]
        assert rt.shape == (2, len(env.reward_term_names)) and info["_reward_terms"].all()
        np.testing.assert_allclose(rt.sum(axis=1), r, rtol=1e-5, atol=1e-6)


# ---- async and subsets ----------------------------------------------------------------------------

def test_step_async_wait_equals_step(server):
    with herd.make_vec(WALK, 4, address=server, seed=5) as a, herd.make_vec(WALK, 4, address=server, seed=5) as b:
        a.reset()
        b.reset()
        for k in range(3):
            x = a.step(acts(4, k))
            b.step_async(acts(4, k))
            y = b.step_wait()
            for u, v in zip(x[:4], y[:4]):
                np.testing.assert_array_equal(u, v)
        with pytest.raises(RuntimeError):
            b.step_wait()


def test_subsets_equal_full_steps(server):
    """Stepping worlds in subsets (any order, several in flight) gives each world the trajectory a full
    step gives it."""
    n = 8
    with herd.make_vec(WALK, n, address=server, seed=9) as full, herd.make_vec(WALK, n, address=server, seed=9) as sub:
        full.reset()
        sub.reset()
        for k in range(4):
            a = acts(n, k)
            of, rf, tf, uf, _ = full.step(a)
            ids1 = np.array([5, 0, 2, 7])
            ids2 = np.array([1, 3, 4, 6])
            sub.step_async(a[ids1], world_ids=ids1)
            sub.step_async(a[ids2], world_ids=ids2)
            o1, r1, t1, u1, i1 = sub.step_wait()
            o2, r2, t2, u2, i2 = sub.step_wait()
            np.testing.assert_array_equal(i1["env_id"], ids1)
            np.testing.assert_array_equal(i2["env_id"], ids2)
            np.testing.assert_array_equal(o1, of[ids1])
            np.testing.assert_array_equal(o2, of[ids2])
            np.testing.assert_array_equal(r1, rf[ids1])
            np.testing.assert_array_equal(r2, rf[ids2])


def test_send_recv_envpool_style(server):
    n = 6
    with herd.make_vec(WALK, n, address=server, seed=2) as env:
        env.reset()
        groups = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])]
        for g in groups:
            env.send(acts(2), g)
        seen = []
        for _ in groups:
            obs, rew, term, trunc, info = env.recv()
            assert obs.shape == (2, 48)
            seen.append(tuple(info["env_id"]))
        assert sorted(seen) == [(0, 1), (2, 3), (4, 5)]
        env.send(acts(n))
        obs, rew, term, trunc, info = env.recv()
        np.testing.assert_array_equal(info["env_id"], np.arange(n))
        # a boolean mask selects worlds too
        mask = np.array([True, False, True, False, False, True])
        env.step_async(acts(3), world_ids=mask)
        obs, *_, info = env.step_wait()
        np.testing.assert_array_equal(info["env_id"], [0, 2, 5])


def test_reset_async(server):
    with herd.make_vec(WALK, 3, address=server, seed=4) as env:
        env.reset_async(seed=4)
        obs, info = env.reset_wait()
        obs2, _ = env.reset(seed=4)
        np.testing.assert_array_equal(obs, obs2)


# ---- zero copy ------------------------------------------------------------------------------------

def root(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def test_zero_copy_observations(server):
    with herd.make_vec(WALK, 64, address=server, seed=1) as env:
        obs, _ = env.reset()
        for arrays in (env.reset()[:1], env.step(acts(64))[:4]):
            frames = set()
            for a in arrays:
                assert not a.flags.owndata          # a view, not a converted copy
                m = root(a)
                assert isinstance(m, memoryview) and isinstance(m.obj, zmq.Frame)
                frames.add(id(m.obj))
                start = np.frombuffer(m.obj.buffer, np.uint8)
                lo, hi = start.ctypes.data, start.ctypes.data + start.size
                assert lo <= a.ctypes.data and a.ctypes.data + a.nbytes <= hi
            assert len(frames) == 1                 # obs, reward and flags view one received message
        obs, *_ = env.step(acts(64))
        assert obs.flags.c_contiguous and obs.flags.aligned


def test_zero_copy_no_per_element_work(server, monkeypatch):
    """Decoding never converts element by element: np.frombuffer is the only way tensors are made."""
    from herd import _codec
    calls = []
    real = np.frombuffer

    def spy(buf, dtype=float, count=-1, offset=0):
        calls.append(memoryview(buf).nbytes)
        return real(buf, dtype=dtype, count=count, offset=offset)
    monkeypatch.setattr(_codec.np, "frombuffer", spy)
    with herd.make_vec(WALK, 32, address=server, seed=1) as env:
        env.reset()
        calls.clear()
        env.step(acts(32))
        assert 32 * 48 * 4 in calls        # the whole obs tensor in one call


def test_render_says_which_world_and_takes_world_ids(server):
    import warnings
    with herd.make_vec("anymal_c-stand", 3, address=server, seed=4, render_mode="rgb_array",
                       render_size=(64, 48)) as env:
        env.reset()
        with pytest.warns(UserWarning, match="draws world 0 alone of the 3 worlds"):
            frames = env.render()
        assert len(frames) == 1 and frames[0].shape == (48, 64, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # once only
            again = env.render()
            w0 = env.render(world_ids=0)
            w2 = env.render(world_ids=2)
            both = env.render(world_ids=[2, 0])
        np.testing.assert_array_equal(again[0], frames[0])
        assert isinstance(w0, np.ndarray) and w0.shape == (48, 64, 3)
        np.testing.assert_array_equal(w0, frames[0])
        np.testing.assert_array_equal(both[0], w2)
        np.testing.assert_array_equal(both[1], w0)
        assert not np.array_equal(w0, w2)            # another world, in another random pose
        with pytest.raises(herd.HerdError, match="out of"):
            env.render(world_ids=3)
    with herd.make_vec("anymal_c-stand", 3, address=server, seed=4, render_mode="rgb_array",
                       render_worlds=[1], render_size=(64, 48)) as env:
        env.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # the worlds were chosen: no warning
            assert len(env.render()) == 1

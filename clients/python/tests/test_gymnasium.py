"""herd under the real Gymnasium (1.x): registration, spaces, seeding, render_mode, Gymnasium's vector wrappers,
and autoreset semantics compared with a gymnasium.vector.SyncVectorEnv of one-world HerdEnvs."""
import os
import subprocess
import sys
from contextlib import closing

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not importable (pip install gymnasium; "
                                              "tests/run-py-tests.sh adds $HERD_THIRD_PARTY)")
from gymnasium.vector import AutoresetMode  # noqa: E402
from gymnasium.wrappers import vector as vw  # noqa: E402

import herd  # noqa: E402

STAND_ID = "herd/anymal_c-stand-v0"
WALK_ID = "herd/anymal_c-walk-v0"
SHORT = dict(episode_seconds=0.1)       # 5-step episodes at 50 Hz


def acts(n, k, scale=1.0):
    return (scale * np.random.default_rng(300 + k).uniform(-1, 1, size=(n, 12))).astype(np.float32)


# ---- registration, spaces, seeding ---------------------------------------------------------------

def test_import_registers_every_task():
    for task in herd.registration.TASKS:
        spec = gym.spec("herd/%s-v0" % task)
        assert spec.vector_entry_point == "herd.registration:make_vector_env"
        assert spec.entry_point == "herd.env:HerdEnv" and spec.kwargs == {"task": task}
        assert spec.max_episode_steps is None        # the server owns the time limit: no TimeLimit


def test_make_vec_by_id(server, monkeypatch):
    with gym.make_vec(WALK_ID, num_envs=4, address=server, seed=5) as envs:
        assert isinstance(envs, herd.HerdVectorEnv) and envs.num_envs == 4
        assert envs.spec.id == WALK_ID and envs.spec.kwargs["address"] == server
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        assert isinstance(envs.single_observation_space, gym.spaces.Box)
        obs, _ = envs.reset()
        with herd.make_vec("anymal_c-walk", 4, address=server, seed=5) as direct:
            np.testing.assert_array_equal(obs, direct.reset()[0])
    # the address from the environment, and other keywords to make_vec
    monkeypatch.setenv("HERD_ADDRESS", server)
    with gym.make_vec(STAND_ID, num_envs=2, autoreset_mode=AutoresetMode.SAME_STEP, obs_noise=0) as envs:
        assert envs.addresses == [server] and envs.config["obs_noise"] == 0.0
        assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    # max_episode_steps: accepted when it is the server's, else a clear error naming episode_seconds
    with gym.make_vec(STAND_ID, num_envs=1, max_episode_steps=200) as envs:
        assert envs.max_episode_steps == 200
    with pytest.raises(ValueError, match="episode_seconds=0.2"):
        gym.make_vec(STAND_ID, num_envs=1, max_episode_steps=10)


def test_render_mode(server):
    with gym.make_vec(STAND_ID, num_envs=1, address=server, render_mode=None) as envs:
        assert envs.render_mode is None and envs.render() is None
        assert envs.metadata["render_modes"] == []
    with pytest.raises(ValueError, match="render_mode='rgb_array' is not supported"):
        gym.make_vec(STAND_ID, num_envs=1, address=server, render_mode="rgb_array")
    with pytest.raises(ValueError, match="render_mode"):
        herd.HerdEnv("anymal_c-stand", address=server, render_mode="rgb_array")


def test_np_random(server):
    with herd.make_vec("anymal_c-stand", 2, address=server, seed=1) as a, \
            herd.make_vec("anymal_c-stand", 2, address=server, seed=2) as b:
        a.reset(seed=42)
        b.reset(seed=42)
        assert a.np_random_seed == 42
        np.testing.assert_array_equal(a.np_random.random(3), b.np_random.random(3))
        a.np_random = np.random.default_rng(7)
        assert a.np_random_seed == -1
        np.testing.assert_array_equal(a.np_random.random(2), np.random.default_rng(7).random(2))
        wrapped = vw.ClipAction(a)
        wrapped.np_random = np.random.default_rng(8)       # through a wrapper too
        np.testing.assert_array_equal(a.np_random.random(2), np.random.default_rng(8).random(2))


def test_spaces_are_the_tasks_bounds(server):
    """The spaces are the session's real bounds: actions the server clips to (action_clip), observations
    the clip it applies (obs_clip) or +-inf."""
    with herd.make_vec("anymal_c-walk", 2, address=server, seed=3) as walk, \
            herd.make_vec("paper-trot", 1, address=server) as trot:
        assert walk.single_action_space == gym.spaces.Box(-100.0, 100.0, (12,), np.float32)
        assert walk.config["action_clip"] == 100.0 and walk.config["obs_clip"] == 100.0
        assert walk.herd_spec["act"][0]["scale"] == walk.config["action_scale"] == 0.5
        np.testing.assert_array_equal(walk.single_observation_space.high, 100.0)
        assert trot.single_action_space == gym.spaces.Box(-1.0, 1.0, (12,), np.float32)
        assert not trot.single_observation_space.is_bounded("both")
    kw = dict(address=server, seed=3, action_clip=1.0, obs_clip=5.0)
    with herd.make_vec("anymal_c-walk", 2, **kw) as a, herd.make_vec("anymal_c-walk", 2, **kw) as b:
        assert a.single_action_space == gym.spaces.Box(-1.0, 1.0, (12,), np.float32)
        np.testing.assert_array_equal(a.single_observation_space.high, 5.0)
        a.reset()
        b.reset()
        for k in range(3):
            x = acts(2, k, 3.0)
            oa = a.step(x)[0]
            ob = b.step(np.clip(x, -1, 1))[0]        # out of the space = clipped to it, bit for bit
            np.testing.assert_array_equal(oa, ob)
            assert a.observation_space.contains(oa)
            np.testing.assert_array_equal(oa[:, 36:48], np.clip(x, -1, 1))   # the "actions" field


def test_single_env_passes_gymnasium_env_checker(server):
    from gymnasium.utils.env_checker import check_env
    env = gym.make(STAND_ID, address=server, action_clip=1.0)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        obs, r, te, tr, info = env.step(env.action_space.sample())
        assert isinstance(r, float) and isinstance(te, bool) and isinstance(tr, bool)
    finally:
        env.close()


# ---- Gymnasium's vector wrappers on herd ---------------------------------------------------------

def test_record_episode_statistics(server):
    """RecordEpisodeStatistics works unchanged (herd's own statistics are off by default) and agrees with
    the server's statistics (episode_statistics=True) of an identical env.  (The wrapper assumes NEXT_STEP
    autoreset: under SAME_STEP it drops the first step of every later episode; herd's are right there.)"""
    kw = dict(address=server, seed=17, autoreset_mode="NEXT_STEP", **SHORT)
    env = vw.RecordEpisodeStatistics(gym.make_vec(STAND_ID, num_envs=3, **kw))
    with closing(env), gym.make_vec(STAND_ID, num_envs=3, episode_statistics=True, **kw) as ref:
        env.reset()
        ref.reset()
        ended = 0
        for k in range(13):
            o, r, te, tr, info = env.step(acts(3, k))
            ro, rr, rte, rtr, rinfo = ref.step(acts(3, k))
            np.testing.assert_array_equal(o, ro)
            assert ("episode" in info) == ("episode" in rinfo)
            if "episode" in info:
                ended += 1
                np.testing.assert_array_equal(info["_episode"], rinfo["_episode"])
                m = info["_episode"]
                np.testing.assert_array_equal(info["episode"]["l"][m], rinfo["episode"]["l"][m])
                np.testing.assert_allclose(info["episode"]["r"][m], rinfo["episode"]["r"][m], rtol=1e-5)
        assert ended >= 2 and env.episode_count >= 6
        assert len(env.return_queue) == env.episode_count
    # herd's statistics under "episode" collide with the wrapper's: that is why they are opt-in
    with pytest.raises(ValueError, match="episode"):
        with closing(vw.RecordEpisodeStatistics(gym.make_vec(STAND_ID, num_envs=1, episode_statistics=True,
                                                             **kw))) as e2:
            e2.reset()
            for k in range(6):
                e2.step(acts(1, k))


def test_normalize_clip_rescale_wrappers(server):
    kw = dict(address=server, seed=23, action_clip=0.5, **SHORT)
    raw = gym.make_vec(STAND_ID, num_envs=4, **kw)
    env = vw.NormalizeReward(vw.NormalizeObservation(vw.ClipAction(vw.RescaleAction(
        gym.make_vec(STAND_ID, num_envs=4, **kw), min_action=np.float32(-1), max_action=np.float32(1)))), gamma=0.99)
    with closing(env), raw:
        rescale = env.env.env.env
        assert isinstance(rescale, vw.RescaleAction) and isinstance(rescale.env, herd.HerdVectorEnv)
        assert rescale.action_space == gym.spaces.Box(-1.0, 1.0, (4, 12), np.float32)
        assert rescale.env.action_space == gym.spaces.Box(-0.5, 0.5, (4, 12), np.float32)
        env.reset()
        raw.reset()
        grid = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)     # exact under the affine map
        norm_obs = env.env                                           # the NormalizeObservation layer
        for k in range(8):
            a = np.random.default_rng(k).choice(grid, size=(4, 12)).astype(np.float32)
            o, r, te, tr, _ = env.step(a.copy())
            ro, rr, rte, rtr, _ = raw.step(0.5 * a)                  # RescaleAction: [-1, 1] -> [-0.5, 0.5]
            np.testing.assert_array_equal(te, rte)
            np.testing.assert_array_equal(tr, rtr)
            rms = norm_obs.obs_rms
            np.testing.assert_allclose(o, (ro - rms.mean) / np.sqrt(rms.var + norm_obs.epsilon), rtol=1e-4,
                                       atol=1e-4)
            assert r.shape == (4,) and np.isfinite(r).all()
        assert norm_obs.obs_rms.count > 8 * 4


def test_dict_info_to_list(server):
    kw = dict(address=server, seed=29, autoreset_mode="SAME_STEP", episode_statistics=True, reward_terms=True,
              **SHORT)
    with closing(vw.DictInfoToList(gym.make_vec(STAND_ID, num_envs=3, **kw))) as env:
        obs, infos = env.reset()
        assert infos == [{}, {}, {}]
        length, ended = np.zeros(3, np.int64), 0
        for k in range(6):     # the 5-step time limit ends every episode by step 5
            o, r, te, tr, infos = env.step(acts(3, k))
            length += 1
            assert isinstance(infos, list) and len(infos) == 3
            for i, info in enumerate(infos):
                assert info["reward_terms"].shape == (len(env.unwrapped.reward_term_names),)
                assert ("final_obs" in info) == bool(te[i] or tr[i])
                if te[i] or tr[i]:
                    ended += 1
                    assert info["final_obs"].shape == (46,)
                    assert info["final_info"]["episode"]["l"] == info["episode"]["l"] == length[i]
                    assert info["episode_terms"].shape == (len(env.unwrapped.reward_term_names),)
                    length[i] = 0
                else:
                    assert "episode" not in info and "final_info" not in info
        assert ended >= 3


# ---- autoreset semantics: herd's server-side autoreset vs Gymnasium's SyncVectorEnv ------------------

@pytest.mark.parametrize("vectorization,mode", [("sync", AutoresetMode.NEXT_STEP), ("sync", AutoresetMode.SAME_STEP),
                                                ("async", AutoresetMode.SAME_STEP)])
def test_autoreset_matches_gymnasium_vector_env(server, vectorization, mode):
    """One herd session of 3 worlds vs Gymnasium's SyncVectorEnv / AsyncVectorEnv over 3 one-world HerdEnvs
    (Gymnasium does the autoreset there): the same observations, rewards, flags and final observations,
    bit for bit."""
    kw = dict(address=server, **SHORT)
    herd_envs = gym.make_vec(STAND_ID, num_envs=3, autoreset_mode=mode, **kw)
    sync_envs = gym.make_vec(STAND_ID, num_envs=3, vectorization_mode=vectorization,
                             vector_kwargs={"autoreset_mode": mode}, **kw)
    with herd_envs, closing(sync_envs):
        expected = gym.vector.SyncVectorEnv if vectorization == "sync" else gym.vector.AsyncVectorEnv
        assert isinstance(sync_envs, expected)
        ho, _ = herd_envs.reset(seed=21)
        so, _ = sync_envs.reset(seed=21)
        np.testing.assert_array_equal(ho, so)
        resets = 0
        ended = np.zeros(3, bool)
        for k in range(17):     # three episodes and a bit
            a = acts(3, k)
            ho, hr, hte, htr, hinfo = herd_envs.step(a)
            so, sr, ste, str_, sinfo = sync_envs.step(a)
            np.testing.assert_array_equal(ho, so)
            np.testing.assert_array_equal(hr, sr.astype(np.float32))
            np.testing.assert_array_equal(hte, ste)
            np.testing.assert_array_equal(htr, str_)
            if mode is AutoresetMode.SAME_STEP:
                assert ("final_obs" in hinfo) == ("final_obs" in sinfo)
                if "final_obs" in hinfo:
                    np.testing.assert_array_equal(hinfo["_final_obs"], sinfo["_final_obs"])
                    for i in np.flatnonzero(hinfo["_final_obs"]):
                        np.testing.assert_array_equal(hinfo["final_obs"][i], sinfo["final_obs"][i])
                    resets += 1
                    fh, fs = hinfo["final_info"], sinfo["final_info"]
                    np.testing.assert_array_equal(fh["_episode_terms"], fs["_episode_terms"])
                    np.testing.assert_array_equal(fh["episode_terms"], fs["episode_terms"])
            else:
                # the step after an ending resets the world (reward 0, flags false), as Gymnasium does
                np.testing.assert_array_equal(hinfo.get("autoreset", np.zeros(3, bool)), ended)
                np.testing.assert_array_equal(hr[ended], 0)
                resets += int(ended.any())
                assert ("episode_terms" in hinfo) == ("episode_terms" in sinfo)
                if "episode_terms" in hinfo:
                    np.testing.assert_array_equal(hinfo["_episode_terms"], sinfo["_episode_terms"])
                    np.testing.assert_array_equal(hinfo["episode_terms"], sinfo["episode_terms"])
            ended = hte | htr
        assert resets >= 2


# ---- without gymnasium --------------------------------------------------------------------------

def test_import_without_gymnasium(server):
    """herd imports and steps when gymnasium is not importable (its fallback Box and AutoresetMode)."""
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import herd\n"
            "assert not herd.HAVE_GYMNASIUM and herd.HerdVectorEnv.__mro__[1] is object\n"
            "with herd.make_vec('anymal_c-stand', 2, address=%r, seed=1) as e:\n"
            "    e.reset(); o = e.step(e.action_space.sample())[0]\n"
            "    assert o.shape == (2, 46) and type(e.single_action_space).__module__ == 'herd.spaces'\n"
            "print('ok')\n" % server)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(herd.__file__)))
    path = os.pathsep.join([pkg_root] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=path))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

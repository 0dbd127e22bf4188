"""herd.adapters.sb3 against the real Stable-Baselines3 (2.x) and a real server."""
import warnings

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")
pytest.importorskip("stable_baselines3", reason="stable_baselines3 is not importable (pip install "
                                                "stable-baselines3, or put it on PYTHONPATH)")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize  # noqa: E402

import herd  # noqa: E402
from herd.adapters.sb3 import SB3VecEnv  # noqa: E402

STAND = "anymal_c-stand"
SHORT = dict(episode_seconds=0.1, obs_noise=0)      # 5-step episodes


def acts(n, k, bound=1.0):
    return np.random.default_rng(700 + k).uniform(-bound, bound, size=(n, 12)).astype(np.float32)


def test_vec_env_contract(server):
    venv = SB3VecEnv(STAND, 3, address=server, seed=5, **SHORT)
    with herd.make_vec(STAND, 3, address=server, seed=5, autoreset_mode="SAME_STEP", **SHORT) as ref:
        try:
            assert isinstance(venv, VecEnv) and venv.num_envs == 3
            assert venv.observation_space == ref.single_observation_space
            # Box(-1, 1): the task gets action_gain (0.5) x the action clipped to [-1, 1]
            assert venv.action_gain == 0.5 and venv.action_space.shape == (12,)
            assert np.all(venv.action_space.low == -1) and np.all(venv.action_space.high == 1)
            assert venv.render_mode is None and venv.env_is_wrapped(Monitor) == [False] * 3
            assert venv.get_attr("max_episode_steps") == [5, 5, 5]
            assert venv.env_method("stats", indices=[0])[0][0]["session"]["num_worlds"] == 3
            obs = venv.reset()
            np.testing.assert_array_equal(obs, ref.reset()[0])
            ended = 0
            for k in range(6):     # the 5-step time limit ends every episode by step 5
                a = acts(3, k, bound=1.5)                       # some outside [-1, 1]: clipped
                obs, rew, dones, infos = venv.step(a)
                o, r, te, tr, info = ref.step(np.clip(a, -1, 1) * np.float32(0.5))
                np.testing.assert_array_equal(obs, o)           # after an ending: the next episode's first
                np.testing.assert_array_equal(rew, r)
                np.testing.assert_array_equal(dones, te | tr)
                assert isinstance(infos, list) and len(infos) == 3
                for i in range(3):
                    assert infos[i]["TimeLimit.truncated"] == bool(tr[i] and not te[i])
                    assert ("terminal_observation" in infos[i]) == bool(dones[i])
                    assert "episode" not in infos[i]            # VecMonitor's job unless monitor=True
                    if dones[i]:
                        ended += 1
                        np.testing.assert_array_equal(infos[i]["terminal_observation"], info["final_obs"][i])
                        np.testing.assert_array_equal(infos[i]["episode_terms"], info["episode_terms"][i])
            assert ended >= 3
            # seed() applies at the next reset: world i gets s + i
            assert venv.seed(100) == [100, 101, 102]
            np.testing.assert_array_equal(venv.reset(), ref.reset(seed=100)[0])
        finally:
            venv.close()
    assert venv.env.closed


def test_action_gain_none_keeps_the_task_bounds(server):
    venv = SB3VecEnv(STAND, 2, address=server, seed=5, action_gain=None, **SHORT)
    with herd.make_vec(STAND, 2, address=server, seed=5, autoreset_mode="SAME_STEP", **SHORT) as ref:
        try:
            assert venv.action_space == ref.single_action_space
            venv.reset()
            ref.reset()
            a = acts(2, 0, bound=3.0)
            np.testing.assert_array_equal(venv.step(a)[0], ref.step(a)[0])
        finally:
            venv.close()
    with pytest.raises(ValueError, match="action_gain"):
        SB3VecEnv(STAND, 2, address=server, action_gain=0, **SHORT)


def test_ppo_with_defaults_walks_with_positive_reward(server):
    """SB3's PPO with every default hyperparameter, 4,096 steps of anymal_c-walk (2-s episodes): the
    episodes reach the time limit with a clearly positive return.  With the task's +-100 action bounds the
    unit-std Gaussian throws the robot around and the returns are 0 (the walk reward is clipped at 0)."""
    venv = VecMonitor(SB3VecEnv("anymal_c-walk", 2, address=server, seed=0, episode_seconds=2))
    try:
        model = PPO("MlpPolicy", venv, seed=0, device="cpu")
        model.learn(total_timesteps=4096)
        returns = np.array([ep["r"] for ep in model.ep_info_buffer])
        lengths = np.array([ep["l"] for ep in model.ep_info_buffer])
    finally:
        venv.close()
    assert returns.size >= 20
    assert returns.mean() > 0.05, returns
    assert np.mean(lengths == 100) > 0.5, lengths


def test_needs_same_step(server):
    with pytest.raises(ValueError, match="SAME_STEP"):
        SB3VecEnv(STAND, 2, address=server, autoreset_mode="NEXT_STEP")
    with herd.make_vec(STAND, 2, address=server, autoreset_mode="SAME_STEP") as e:
        with pytest.raises(ValueError, match="episode_statistics"):
            SB3VecEnv(e, monitor=True)


def test_monitor_statistics_match_vec_monitor(server):
    """monitor=True gives the server's episode statistics in Monitor's layout; VecMonitor counts the same."""
    kw = dict(address=server, seed=8, episode_seconds=0.14)       # 7-step episodes, with noise
    own = SB3VecEnv(STAND, 4, monitor=True, **kw)
    vm = VecMonitor(SB3VecEnv(STAND, 4, **kw))
    try:
        assert own.env_is_wrapped(Monitor) == [True] * 4
        own.reset()
        vm.reset()
        ended = 0
        for k in range(16):
            _, _, d1, i1 = own.step(acts(4, k))
            _, _, d2, i2 = vm.step(acts(4, k))
            np.testing.assert_array_equal(d1, d2)
            for a, b in zip(i1, i2):
                assert ("episode" in a) == ("episode" in b)
                if "episode" in a:
                    ended += 1
                    assert a["episode"]["l"] == b["episode"]["l"] <= 7
                    assert a["episode"]["r"] == pytest.approx(float(b["episode"]["r"]), rel=1e-5, abs=1e-6)
                    assert a["episode"]["t"] >= 0
        assert ended >= 8        # the time limit ends each world's episodes by steps 7 and 14
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            VecMonitor(own)
        assert any("Monitor" in str(x.message) for x in w)
    finally:
        own.close()
        vm.close()


def test_ppo_learns_with_vec_monitor_and_vec_normalize_and_round_trips(server, tmp_path):
    kw = dict(address=server, seed=11, episode_seconds=0.5)       # 25-step episodes
    venv = VecNormalize(VecMonitor(SB3VecEnv(STAND, 16, **kw)), gamma=0.99)
    try:
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=256, n_epochs=2, learning_rate=3e-4, seed=0,
                    device="cpu", policy_kwargs={"net_arch": [32, 32]})
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(total_timesteps=3 * 16 * 64)
        assert model.num_timesteps == 3 * 16 * 64
        assert len(model.ep_info_buffer) >= 16                   # VecMonitor's episodes reached SB3's logger
        assert all(1 <= ep["l"] <= 25 for ep in model.ep_info_buffer)
        assert any(not np.array_equal(b.numpy(), p.detach().numpy())
                   for b, p in zip(before, model.policy.parameters()))
        assert venv.obs_rms.count > 3 * 16 * 64
        model.save(str(tmp_path / "ppo.zip"))
        venv.save(str(tmp_path / "vecnormalize.pkl"))
        venv.training = False                                   # reset() would update the statistics
        obs = venv.reset()
        act, _ = model.predict(obs, deterministic=True)
    finally:
        venv.close()
    venv2 = VecNormalize.load(str(tmp_path / "vecnormalize.pkl"), VecMonitor(SB3VecEnv(STAND, 16, **kw)))
    try:
        venv2.training = False
        np.testing.assert_array_equal(venv2.obs_rms.mean, venv.obs_rms.mean)
        model2 = PPO.load(str(tmp_path / "ppo.zip"), env=venv2, device="cpu")
        act2, _ = model2.predict(obs, deterministic=True)
        np.testing.assert_array_equal(act, act2)
        model2.learn(total_timesteps=16 * 64, reset_num_timesteps=False)    # and it trains on
        assert model2.num_timesteps == 4 * 16 * 64
    finally:
        venv2.close()


def test_rough_infos_carry_each_worlds_tile(server):
    n = 6
    venv = SB3VecEnv("anymal_c-rough", n, address=server, seed=2, episode_seconds=0.1)
    try:
        with herd.make_vec("anymal_c-rough", n, address=server, seed=2, autoreset_mode="SAME_STEP",
                           episode_seconds=0.1) as ref:
            assert venv.get_attr("terrain_kinds")[0][3] == "stairs_up"
            venv.reset()
            ref.reset()
            for k in range(7):
                a = np.zeros((n, 12), np.float32)
                venv.step_async(a)
                _, _, dones, infos = venv.step_wait()
                info = ref.step(a)[4]
                assert [d["terrain_level"] for d in infos] == info["terrain_level"].tolist()
                assert [d["terrain_kind"] for d in infos] == info["terrain_kind"].tolist()
                assert all(type(d["terrain_level"]) is int for d in infos)
    finally:
        venv.close()
    venv = SB3VecEnv(STAND, 2, address=server, seed=2)
    try:
        venv.reset()
        venv.step_async(np.zeros((2, 12), np.float32))
        assert all("terrain_level" not in d for d in venv.step_wait()[3])
    finally:
        venv.close()

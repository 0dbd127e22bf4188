"""herd.adapters.rsl_rl against the real rsl_rl (VecEnv contract, OnPolicyRunner) and a real server.

One process imports one rsl_rl: the 1.x tests run where rsl_rl 1.x is importable, the 2.x tests where 2.x is.
tests/run-py-tests.sh runs this file twice: with rsl_rl 1.0.2 (the third-party folder beside the gymnasium
copy) and again with rsl_rl 2.3.3 first on PYTHONPATH.
"""
import copy
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")
pytest.importorskip("rsl_rl", reason="rsl_rl is not importable (put rsl_rl 1.0.2 or 2.3.3 on PYTHONPATH)")

import herd  # noqa: E402
from herd.adapters import rsl_rl_v1, rsl_rl_v2  # noqa: E402
from herd.adapters.rsl_rl import RSL_RL_MAJOR, RslRlVecEnv  # noqa: E402

v1 = pytest.mark.skipif(RSL_RL_MAJOR != 1, reason="rsl_rl %s.x is importable here, not 1.x (tests/run-py-tests.sh "
                        "runs this file with each)" % RSL_RL_MAJOR)
v2 = pytest.mark.skipif(RSL_RL_MAJOR != 2, reason="rsl_rl %s.x is importable here, not 2.x (tests/run-py-tests.sh "
                        "runs this file with each)" % RSL_RL_MAJOR)

STAND = "anymal_c-stand"
SHORT = dict(episode_seconds=0.1, obs_noise=0)      # 5-step episodes


def acts(n, k):
    return np.random.default_rng(50 + k).uniform(-1, 1, size=(n, 12)).astype(np.float32)


def test_picks_the_installed_version():
    from rsl_rl.env import VecEnv
    want = rsl_rl_v1.RslRlVecEnv if RSL_RL_MAJOR == 1 else rsl_rl_v2.RslRlVecEnv
    assert RslRlVecEnv is want and issubclass(RslRlVecEnv, VecEnv)
    other = rsl_rl_v2.RslRlVecEnv if RSL_RL_MAJOR == 1 else rsl_rl_v1.RslRlVecEnv
    assert not issubclass(other, VecEnv)          # the other contract does not claim this rsl_rl's base


def test_runner_imports_without_tensorboard():
    """Importing the adapter makes rsl_rl's runner and torch.utils.tensorboard importable; the stand-in only
    where tensorboard is missing.  A fresh interpreter, so that no earlier import decides it."""
    code = ("import herd.adapters.rsl_rl\n"
            "from rsl_rl.runners import OnPolicyRunner\n"
            "from torch.utils.tensorboard import SummaryWriter\n"
            "import torch.utils.tensorboard as t\n"
            "print(type(t).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    missing = importlib.util.find_spec("tensorboard") is None
    assert (out.stdout.strip() == "_StandInModule") == missing


@v1
def test_vec_env_contract(server):
    from rsl_rl.env import VecEnv
    with RslRlVecEnv(STAND, 6, address=server, seed=4, device="cpu", **SHORT) as env, \
            herd.make_vec(STAND, 6, address=server, seed=4, autoreset_mode="SAME_STEP", **SHORT) as ref:
        assert isinstance(env, VecEnv)
        assert (env.num_envs, env.num_obs, env.num_actions) == (6, 46, 12)
        assert env.num_privileged_obs is None and env.max_episode_length == 5
        obs, priv = env.reset()
        assert priv is None and env.get_privileged_observations() is None
        assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32 and obs.shape == (6, 46)
        assert obs.device == torch.device("cpu")
        ref_obs, _ = ref.reset()
        np.testing.assert_array_equal(obs.numpy(), ref_obs)
        ended, length = 0, np.zeros(6, np.int64)
        for k in range(6):     # the 5-step time limit ends every episode by step 5
            a = acts(6, k)
            obs, priv, rew, dones, extras = env.step(torch.from_numpy(a).double())   # any float dtype
            o, r, te, tr, info = ref.step(a)
            assert priv is None
            assert rew.dtype == torch.float32 and rew.shape == (6,) and dones.dtype == torch.bool
            np.testing.assert_array_equal(obs.numpy(), o)             # same-step: new episode's first obs
            np.testing.assert_array_equal(rew.numpy(), r)
            np.testing.assert_array_equal(dones.numpy(), te | tr)
            np.testing.assert_array_equal(extras["time_outs"].numpy(), tr & ~te)
            assert torch.equal(env.get_observations(), obs)
            d = dones.numpy()
            if d.any():
                ep = extras["episode"]
                assert sorted(ep) == sorted("rew_" + t for t in ref.reward_term_names)
                for j, t in enumerate(ref.reward_term_names):
                    np.testing.assert_array_equal(ep["rew_" + t].numpy(), info["episode_terms"][d, j])
                ended += int(d.sum())
            else:
                assert "episode" not in extras
            length = np.where(d, 0, length + 1)
            np.testing.assert_array_equal(env.episode_length_buf.numpy(), length)
        assert ended >= 6
        # a subset reset: those rows are new, the others unchanged
        before = env.get_observations().clone()
        obs, _ = env.reset(torch.tensor([1, 4]))
        assert torch.equal(obs[[0, 2, 3, 5]], before[[0, 2, 3, 5]])
        assert not torch.equal(obs[1], before[1])
        assert env.episode_length_buf[1] == 0 and env.episode_length_buf[4] == 0
        assert torch.equal(env.episode_length_buf[[0, 2, 3, 5]], torch.from_numpy(length[[0, 2, 3, 5]]))
        with pytest.warns(RuntimeWarning, match="time limits"):
            env.episode_length_buf = torch.zeros(6, dtype=torch.long)


def test_needs_same_step(server):
    with pytest.raises(ValueError, match="SAME_STEP"):
        RslRlVecEnv(STAND, 2, address=server, autoreset_mode="NEXT_STEP")
    with herd.make_vec(STAND, 2, address=server) as nx:
        with pytest.raises(ValueError, match="SAME_STEP"):
            RslRlVecEnv(nx)
    with pytest.raises(TypeError):
        RslRlVecEnv(STAND)


TRAIN_CFG = {
    "runner": {"policy_class_name": "ActorCritic", "algorithm_class_name": "PPO", "num_steps_per_env": 8,
               "save_interval": 50},
    "algorithm": {"value_loss_coef": 1.0, "use_clipped_value_loss": True, "clip_param": 0.2, "entropy_coef": 0.01,
                  "num_learning_epochs": 2, "num_mini_batches": 2, "learning_rate": 1e-3, "schedule": "adaptive",
                  "gamma": 0.99, "lam": 0.95, "desired_kl": 0.01, "max_grad_norm": 1.0},
    "policy": {"init_noise_std": 1.0, "actor_hidden_dims": [32, 32], "critic_hidden_dims": [32, 32],
               "activation": "elu"},
}


@v1
def test_on_policy_runner_two_iterations(server, tmp_path, capsys):
    from rsl_rl.runners import OnPolicyRunner
    torch.manual_seed(0)
    with RslRlVecEnv(STAND, 32, address=server, seed=9, device="cpu", **SHORT) as env:
        runner = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG), log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
        stats = env.env.stats()[0]["session"]
        # after learn() (its rollouts ran in torch.inference_mode), the policy acts on the env's observations
        obs = env.get_observations()
        assert not obs.is_inference() and not env.obs_buf.is_inference()
        policy = runner.get_inference_policy()
        actions = policy(obs)
        assert actions.shape == (32, 12)
        env.step(actions.detach())
        # the checkpoint loads into a new runner, whose policy is the trained one
        ck = tmp_path / "model_2.pt"
        fresh = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG), log_dir=str(tmp_path / "again"), device="cpu")
        fresh.load(str(ck))
        obs = env.get_observations()
        with torch.no_grad():
            torch.testing.assert_close(fresh.get_inference_policy()(obs), runner.get_inference_policy()(obs))
    out = capsys.readouterr().out
    assert "Learning iteration 1/2" in out
    assert "Mean episode rew_" in out            # extras["episode"] reached the runner's logger
    assert "Mean reward:" in out                 # the runner saw dones (its own reward buffer)
    assert (tmp_path / "model_0.pt").exists() and ck.exists()
    assert stats["steps"] == 2 * 8 * 32
    ck = torch.load(str(ck))
    assert ck["iter"] == 2 and "model_state_dict" in ck


@v1
def test_step_returns_tensors_that_later_steps_leave_alone(server):
    """The runner stores a step's observation after the next step was taken: that step must not change it."""
    with RslRlVecEnv(STAND, 4, address=server, seed=2, device="cpu", **SHORT) as env:
        env.reset()
        first = env.get_observations()
        keep = first.clone()
        o1 = env.step(torch.from_numpy(acts(4, 0)))[0]
        k1 = o1.clone()
        env.step(torch.from_numpy(acts(4, 1)))
        assert torch.equal(first, keep) and torch.equal(o1, k1)


# ---- rsl_rl 2.x ----------------------------------------------------------------------------------------

TRAIN_CFG_V2 = {
    "num_steps_per_env": 8, "save_interval": 50, "empirical_normalization": False,
    "algorithm": {"class_name": "PPO", "value_loss_coef": 1.0, "use_clipped_value_loss": True, "clip_param": 0.2,
                  "entropy_coef": 0.01, "num_learning_epochs": 2, "num_mini_batches": 2, "learning_rate": 1e-3,
                  "schedule": "adaptive", "gamma": 0.99, "lam": 0.95, "desired_kl": 0.01, "max_grad_norm": 1.0},
    "policy": {"class_name": "ActorCritic", "init_noise_std": 1.0, "actor_hidden_dims": [32, 32],
               "critic_hidden_dims": [32, 32], "activation": "elu"},
}


@v2
def test_v2_vec_env_contract(server):
    from rsl_rl.env import VecEnv
    with herd.make_vec(STAND, 6, address=server, seed=4, autoreset_mode="SAME_STEP", **SHORT) as ref, \
            RslRlVecEnv(STAND, 6, address=server, seed=4, device="cpu", **SHORT) as env:
        assert isinstance(env, VecEnv) and env.unwrapped is env
        assert (env.num_envs, env.num_obs, env.num_actions, env.max_episode_length) == (6, 46, 12, 5)
        assert env.num_privileged_obs is None and env.device == torch.device("cpu")
        assert env.cfg["obs_noise"] == 0 and env.step_dt == pytest.approx(0.02)
        ref_obs, _ = ref.reset()
        obs, extras = env.get_observations()             # reset by the constructor
        assert extras == {"observations": {}}
        assert obs.dtype == torch.float32 and obs.shape == (6, 46)
        np.testing.assert_array_equal(obs.numpy(), ref_obs)
        ended, length = 0, np.zeros(6, np.int64)
        for k in range(6):
            a = acts(6, k)
            obs, rew, dones, extras = env.step(torch.from_numpy(a).double())
            o, r, te, tr, info = ref.step(a)
            np.testing.assert_array_equal(obs.numpy(), o)
            np.testing.assert_array_equal(rew.numpy(), r)
            assert dones.dtype == torch.bool
            np.testing.assert_array_equal(dones.numpy(), te | tr)
            np.testing.assert_array_equal(extras["time_outs"].numpy(), tr & ~te)
            assert extras["observations"] == {}
            assert torch.equal(env.get_observations()[0], obs)
            d = dones.numpy()
            if d.any():
                ep = extras["episode"]
                assert sorted(ep) == sorted("rew_" + t for t in ref.reward_term_names)
                for j, t in enumerate(ref.reward_term_names):
                    np.testing.assert_array_equal(ep["rew_" + t].numpy(), info["episode_terms"][d, j])
                ended += int(d.sum())
            else:
                assert "episode" not in extras
            length = np.where(d, 0, length + 1)
            np.testing.assert_array_equal(env.episode_length_buf.numpy(), length)
        assert ended >= 6
        obs, extras = env.reset()
        assert extras == {"observations": {}} and env.episode_length_buf.sum() == 0
        with pytest.warns(RuntimeWarning, match="time limits"):
            env.episode_length_buf = torch.zeros(6, dtype=torch.long)


@v2
def test_v2_on_policy_runner_learns_saves_loads(server, tmp_path, capsys):
    from rsl_rl.runners import OnPolicyRunner
    torch.manual_seed(0)
    with RslRlVecEnv(STAND, 32, address=server, seed=9, device="cpu", **SHORT) as env:
        runner = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG_V2), log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
        stats = env.env.stats()[0]["session"]
        obs, extras = env.get_observations()
        assert not obs.is_inference() and not env.obs_buf.is_inference()
        policy = runner.get_inference_policy()
        actions = policy(obs)                    # outside inference mode, after learn()
        assert actions.shape == (32, 12)
        env.step(actions.detach())
        ck = tmp_path / "model_1.pt"             # rsl_rl 2.x numbers the last checkpoint by its last iteration
        fresh = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG_V2), log_dir=None, device="cpu")
        fresh.load(str(ck))
        obs = env.get_observations()[0]
        with torch.no_grad():
            torch.testing.assert_close(fresh.get_inference_policy()(obs), runner.get_inference_policy()(obs))
        env.step(fresh.get_inference_policy()(obs).detach())
    out = capsys.readouterr().out
    assert "Learning iteration 1/2" in out
    assert "Mean episode rew_" in out
    assert "Mean reward:" in out
    assert (tmp_path / "model_0.pt").exists() and ck.exists()
    assert stats["steps"] == 2 * 8 * 32


# ---- the terrain curriculum's levels in the runners' logs (anymal_c-rough) ----

ROUGH = "anymal_c-rough"
ROUGH_SHORT = dict(episode_seconds=0.1)             # 5-step episodes: levels move at every reset
KINDS = ["slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"]


def _level_extras(adapter_cls, level_key, kind_key, server):
    """Steps a rough adapter beside a plain vector env of the same seed: in every step where episodes ended,
    extras["episode"] holds the mean level of every world and the mean per kind, as the infos report them."""
    n = 24
    with adapter_cls(ROUGH, n, address=server, seed=8, device="cpu", **ROUGH_SHORT) as env, \
            herd.make_vec(ROUGH, n, address=server, seed=8, autoreset_mode="SAME_STEP", **ROUGH_SHORT) as ref:
        assert env.terrain_kinds == KINDS
        ref.reset()
        if adapter_cls is rsl_rl_v1.RslRlVecEnv:
            env.reset()
        logged = 0
        for k in range(12):
            a = acts(n, k)
            out = env.step(torch.from_numpy(a))
            extras = out[-1]
            info = ref.step(a)[4]
            np.testing.assert_array_equal(env.terrain_levels.numpy(), info["terrain_level"])
            np.testing.assert_array_equal(env.terrain_kind_ids.numpy(), info["terrain_kind"])
            if "episode" not in extras:
                continue
            ep = extras["episode"]
            lv, kd = info["terrain_level"].astype(np.float64), info["terrain_kind"]
            assert ep[level_key].dim() == 0
            assert float(ep[level_key]) == pytest.approx(lv.mean())
            for j, name in enumerate(KINDS):
                key = kind_key.format(name)
                if (kd == j).any():
                    assert float(ep[key]) == pytest.approx(lv[kd == j].mean())
                else:
                    assert key not in ep
            assert any(kind_key.format(name) in ep for name in KINDS)
            logged += 1
        assert logged >= 2


def test_v1_extras_carry_the_terrain_levels(server):
    _level_extras(rsl_rl_v1.RslRlVecEnv, "terrain_level", "terrain_level_{}", server)


def test_v2_extras_carry_the_terrain_levels(server):
    _level_extras(rsl_rl_v2.RslRlVecEnv, "Curriculum/terrain_levels", "Curriculum/terrain_levels/{}", server)


def test_flat_task_logs_no_levels(server):
    with rsl_rl_v1.RslRlVecEnv(STAND, 4, address=server, seed=1, device="cpu", **SHORT) as env:
        assert env.terrain_kinds == [] and env.terrain_levels is None
        env.reset()
        for k in range(6):
            extras = env.step(torch.from_numpy(acts(4, k)))[-1]
            if "episode" in extras:
                assert not any("terrain" in key for key in extras["episode"])


@v1
def test_v1_runner_prints_the_terrain_level(server, tmp_path, capsys):
    from rsl_rl.runners import OnPolicyRunner
    torch.manual_seed(0)
    with RslRlVecEnv(ROUGH, 24, address=server, seed=3, device="cpu", **ROUGH_SHORT) as env:
        runner = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG), log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
    out = capsys.readouterr().out
    assert out.count("Mean episode terrain_level:") == 2, "legged_gym's key, printed every iteration"
    assert "Mean episode terrain_level_stairs_up:" in out


@v2
def test_v2_runner_prints_the_terrain_levels(server, tmp_path, capsys):
    from rsl_rl.runners import OnPolicyRunner
    torch.manual_seed(0)
    with RslRlVecEnv(ROUGH, 24, address=server, seed=3, device="cpu", **ROUGH_SHORT) as env:
        runner = OnPolicyRunner(env, copy.deepcopy(TRAIN_CFG_V2), log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
    out = capsys.readouterr().out
    assert out.count("Curriculum/terrain_levels:") == 2, "Isaac Lab's key, printed every iteration"
    assert "Curriculum/terrain_levels/stairs_up:" in out

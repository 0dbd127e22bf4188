"""herd.adapters.rsl_rl against the real rsl_rl 1.0.2 (VecEnv contract, OnPolicyRunner) and a real server."""
import importlib.util
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")
pytest.importorskip("rsl_rl", reason="rsl_rl is not importable (put rsl_rl 1.0.2 on PYTHONPATH)")

import herd  # noqa: E402
from herd.adapters.rsl_rl import RslRlVecEnv  # noqa: E402

STAND = "anymal_c-stand"
SHORT = dict(episode_seconds=0.1, obs_noise=0)      # 5-step episodes


def acts(n, k):
    return np.random.default_rng(50 + k).uniform(-1, 1, size=(n, 12)).astype(np.float32)


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


def _no_op_tensorboard(monkeypatch):
    """rsl_rl's runner imports torch.utils.tensorboard, which needs the tensorboard package (Debian has
    none): stand in a writer that does nothing, only when tensorboard is missing."""
    if importlib.util.find_spec("tensorboard") is not None:
        return

    class _NullWriter:
        def __init__(self, *a, **k):
            pass

        def add_scalar(self, *a, **k):
            pass

        def flush(self):
            pass

        def close(self):
            pass
    m = types.ModuleType("torch.utils.tensorboard")
    m.SummaryWriter = _NullWriter
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", m)


TRAIN_CFG = {
    "runner": {"policy_class_name": "ActorCritic", "algorithm_class_name": "PPO", "num_steps_per_env": 8,
               "save_interval": 50},
    "algorithm": {"value_loss_coef": 1.0, "use_clipped_value_loss": True, "clip_param": 0.2, "entropy_coef": 0.01,
                  "num_learning_epochs": 2, "num_mini_batches": 2, "learning_rate": 1e-3, "schedule": "adaptive",
                  "gamma": 0.99, "lam": 0.95, "desired_kl": 0.01, "max_grad_norm": 1.0},
    "policy": {"init_noise_std": 1.0, "actor_hidden_dims": [32, 32], "critic_hidden_dims": [32, 32],
               "activation": "elu"},
}


def test_on_policy_runner_two_iterations(server, tmp_path, monkeypatch, capsys):
    _no_op_tensorboard(monkeypatch)
    from rsl_rl.runners import OnPolicyRunner
    torch.manual_seed(0)
    with RslRlVecEnv(STAND, 32, address=server, seed=9, device="cpu", **SHORT) as env:
        runner = OnPolicyRunner(env, TRAIN_CFG, log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
        stats = env.env.stats()[0]["session"]
    out = capsys.readouterr().out
    assert "Learning iteration 1/2" in out
    assert "Mean episode rew_" in out            # extras["episode"] reached the runner's logger
    assert "Mean reward:" in out                 # the runner saw dones (its own reward buffer)
    assert (tmp_path / "model_0.pt").exists() and (tmp_path / "model_2.pt").exists()
    assert stats["steps"] == 2 * 8 * 32
    ck = torch.load(str(tmp_path / "model_2.pt"))
    assert ck["iter"] == 2 and "model_state_dict" in ck

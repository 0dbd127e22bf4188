"""herd worlds as an rsl_rl ``VecEnv`` (rsl_rl 1.0.2, the version legged_gym uses), for its OnPolicyRunner.

    from herd.adapters.rsl_rl import RslRlVecEnv
    from rsl_rl.runners import OnPolicyRunner
    env = RslRlVecEnv("anymal_c-walk", 4096, address="tcp://127.0.0.1:5555", device="cpu", seed=0)
    runner = OnPolicyRunner(env, train_cfg, log_dir, device="cpu")
    runner.learn(num_learning_iterations=1500)
    env.close()

Constructor: ``RslRlVecEnv(env, num_envs=None, device="cpu", **make_vec_kwargs)``

* ``env``: a task name (``"anymal_c-walk"``); the adapter then makes (and owns, and closes)
  ``herd.make_vec(env, num_envs, autoreset_mode="SAME_STEP", **make_vec_kwargs)`` — make_vec_kwargs are
  make_vec's: address, seed, timeout, config overrides (``obs_noise=0``, ``episode_seconds=...``) ...
  Or an open ``herd.HerdVectorEnv`` made with ``autoreset_mode="SAME_STEP"`` (num_envs None); close()
  closes it too.
* ``device``: the torch device of every tensor the adapter returns (observations are copied there).

What rsl_rl gets (its env/vec_env.py and runners/on_policy_runner.py):

* ``num_envs``, ``num_obs``, ``num_actions``, ``num_privileged_obs = None`` (herd has no privileged
  observations: the critic sees the policy's), ``max_episode_length`` (the server's time limit in steps),
  ``device``, ``obs_buf``, ``privileged_obs_buf = None``, ``rew_buf``, ``reset_buf``, ``episode_length_buf``,
  ``extras``.
* ``step(actions)`` -> ``(obs, None, rewards, dones, extras)``: obs float32 ``[n, num_obs]``, rewards
  float32 ``[n]``, dones bool ``[n]`` (terminated or truncated).  Actions: any tensor ``[n, num_actions]``,
  sent as float32 (the server clips them to the task's bounds).  A world that ended is reset in the same
  step (as legged_gym does): ``obs`` is then its new episode's first observation.
* ``extras["time_outs"]``: bool ``[n]``, the episode hit the time limit (PPO bootstraps on it).  A world
  whose physics failed is reported truncated by the server but is not a time out (no bootstrap).
* ``extras["episode"]``, only in steps where some episode ended: ``{"rew_<term>": float32 [k]}``, the
  per-term reward sums of the k episodes that ended (legged_gym's key names; the runner logs their mean
  as "Mean episode rew_<term>").  Unlike legged_gym the sums are not divided by the episode length in
  seconds.
* ``reset(env_ids=None)`` -> ``(obs, None)``; ``get_observations()``; ``get_privileged_observations()``
  -> None.

Differences from legged_gym's envs: ``episode_length_buf`` is counted here, from the steps and dones; the
time limit belongs to the server, so assigning it (OnPolicyRunner's ``init_at_random_ep_len=True``)
cannot shift episodes: it only warns.  Spread episode phases with subset steps of the underlying env
(``adapter.env.step_async(actions, world_ids)``, then ``step_wait()``) if you need to.
"""
import warnings

import numpy as np
import torch

from ._common import same_step_env

try:  # rsl_rl is optional: the adapter keeps rsl_rl's contract without it (for look-alike trainers)
    from rsl_rl.env import VecEnv as _VecEnvBase
except ImportError:  # pragma: no cover
    _VecEnvBase = object

__all__ = ["RslRlVecEnv"]


class RslRlVecEnv(_VecEnvBase):
    """rsl_rl 1.0.2 VecEnv over herd worlds; see the module docstring for the contract."""

    def __init__(self, env, num_envs=None, device="cpu", **make_vec_kwargs):
        self.env = same_step_env("RslRlVecEnv", env, num_envs, make_vec_kwargs)
        self.device = torch.device(device)
        self.num_envs = self.env.num_envs
        self.num_obs = self.env.obs_dim
        self.num_actions = self.env.act_dim
        self.num_privileged_obs = None
        self.privileged_obs_buf = None
        self.max_episode_length = self.env.max_episode_steps
        self.reward_term_names = list(self.env.reward_term_names)
        self.obs_buf = torch.zeros(self.num_envs, self.num_obs, dtype=torch.float32, device=self.device)
        self.rew_buf = torch.zeros(self.num_envs, dtype=torch.float32, device=self.device)
        self.reset_buf = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self._episode_length = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self.extras = {}
        self.infos = {}
        self._warned_length = False

    def _tensor(self, a):
        # a copy: the arrays are views of the received message
        return torch.from_numpy(np.array(a)).to(self.device)

    @property
    def episode_length_buf(self):
        """Steps of each world's current episode (counted by the adapter)."""
        return self._episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value):
        if not self._warned_length:
            warnings.warn("herd: the server owns the episode time limits; assigning episode_length_buf "
                          "(init_at_random_ep_len) does not shift episodes", RuntimeWarning, stacklevel=2)
            self._warned_length = True

    def reset(self, env_ids=None):
        """Resets every world (env_ids None) or those of env_ids; returns (obs, None)."""
        if env_ids is None:
            obs, _ = self.env.reset()
            self._episode_length.zero_()
        else:
            ids = torch.as_tensor(env_ids).reshape(-1).cpu().numpy().astype(np.int64)
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[ids] = True
            obs, _ = self.env.reset(options={"reset_mask": mask})
            self._episode_length[torch.from_numpy(mask).to(self.device)] = 0
        self.obs_buf = self._tensor(obs)
        return self.obs_buf, None

    def step(self, actions):
        """One step of every world: (obs, None, rewards, dones, extras)."""
        a = torch.as_tensor(actions).detach().to("cpu", torch.float32).numpy()
        obs, rew, term, trunc, info = self.env.step(a)
        done = term | trunc
        time_out = trunc & ~term
        if "physics_reset" in info:
            time_out = time_out & ~info["physics_reset"]
        self.obs_buf = self._tensor(obs)
        self.rew_buf = self._tensor(rew)
        self.reset_buf = self._tensor(done)
        self._episode_length += 1
        self._episode_length[self.reset_buf] = 0
        extras = {"time_outs": self._tensor(time_out)}
        if "episode_terms" in info:
            m = info["_episode_terms"]
            sums = np.asarray(info["episode_terms"])[m]
            extras["episode"] = {"rew_" + name: self._tensor(sums[:, j])
                                 for j, name in enumerate(self.reward_term_names)}
        self.extras = extras
        self.infos = info           # the last step's infos as HerdVectorEnv gives them (e.g. reward_terms)
        return self.obs_buf, None, self.rew_buf, self.reset_buf, extras

    def get_observations(self):
        return self.obs_buf

    def get_privileged_observations(self):
        return None

    def close(self):
        self.env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

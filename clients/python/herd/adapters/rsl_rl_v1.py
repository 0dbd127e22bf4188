"""herd worlds as an rsl_rl 1.x ``VecEnv`` (rsl_rl 1.0.2, the version legged_gym uses), for its OnPolicyRunner.

    from herd.adapters.rsl_rl_v1 import RslRlVecEnv      # or herd.adapters.rsl_rl: the installed version's
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

* ``num_envs``, ``num_obs``, ``num_actions``, ``num_privileged_obs`` (None: no herd task has a critic
  observation yet, so the critic sees the policy's; a task whose spec names a
  ``critic_obs_dim`` will have its ``critic_obs`` here),
  ``max_episode_length`` (the server's time limit in steps), ``device``, ``obs_buf``, ``privileged_obs_buf``,
  ``rew_buf``, ``reset_buf``, ``episode_length_buf``, ``extras``.  The buffers are allocated once and
  updated in place (see herd.adapters._rsl_rl_core): after ``runner.learn()``,
  ``policy(env.get_observations())`` works.
* ``step(actions)`` -> ``(obs, privileged_obs, rewards, dones, extras)`` (privileged_obs None): obs float32 ``[n, num_obs]``, rewards
  float32 ``[n]``, dones bool ``[n]`` (terminated or truncated).  Actions: any tensor ``[n, num_actions]``,
  sent as float32 (the server clips them to the task's bounds).  A world that ended is reset in the same
  step (as legged_gym does): ``obs`` is then its new episode's first observation.
* ``extras["time_outs"]``: bool ``[n]``, the episode hit the time limit (PPO bootstraps on it).  A world
  whose physics failed is reported truncated by the server but is not a time out (no bootstrap).
* ``extras["episode"]``, only in steps where some episode ended: ``{"rew_<term>": float32 [k]}``, the
  per-term reward sums of the k episodes that ended (legged_gym's key names; the runner logs their mean
  as "Mean episode rew_<term>").  Unlike legged_gym the sums are not divided by the episode length in
  seconds.  A task with a terrain curriculum (``anymal_c-rough``) adds legged_gym's ``"terrain_level"`` (a
  0-dim tensor: the mean level of every world; the runner prints "Mean episode terrain_level") and
  ``"terrain_level_<kind>"`` per tile kind that has worlds.  ``terrain_levels`` / ``terrain_kind_ids`` (long
  ``[n]``, as legged_gym's ``env.terrain_levels``) hold every world's level and kind index into
  ``terrain_kinds`` after each reset and step (None for a flat task).
* ``reset(env_ids=None)`` -> ``(obs, privileged_obs)``; ``get_observations()`` (a copy of ``obs_buf``);
  ``get_privileged_observations()`` -> None (or a copy of ``privileged_obs_buf``).
* Importing this module makes ``from rsl_rl.runners import OnPolicyRunner`` work where tensorboard is not
  installed (rsl_rl 1.0.2 imports it with the runner): a stand-in ``torch.utils.tensorboard`` whose writer
  writes nothing (warned once); the console log and the checkpoints are unaffected.  Import the adapter
  before the runner.

Differences from legged_gym's envs: ``episode_length_buf`` is counted here, from the steps and dones; the
time limit belongs to the server, so assigning it (OnPolicyRunner's ``init_at_random_ep_len=True``)
cannot shift episodes: it only warns.  Spread episode phases with subset steps of the underlying env
(``adapter.env.step_async(actions, world_ids)``, then ``step_wait()``) if you need to.
"""
from ._rsl_rl_core import RslRlCore, provide_tensorboard

try:  # rsl_rl is optional: the adapter keeps rsl_rl's contract without it (for look-alike trainers)
    from rsl_rl.env import VecEnv as _VecEnvBase
    if not hasattr(_VecEnvBase, "get_privileged_observations"):     # rsl_rl 2.x: another contract
        _VecEnvBase = object
except ImportError:  # pragma: no cover
    _VecEnvBase = object

provide_tensorboard()

__all__ = ["RslRlVecEnv"]


class RslRlVecEnv(RslRlCore, _VecEnvBase):
    """rsl_rl 1.x VecEnv over herd worlds; see the module docstring for the contract."""

    def __init__(self, env, num_envs=None, device="cpu", **make_vec_kwargs):
        super().__init__(env, num_envs, device, **make_vec_kwargs)
        self.num_privileged_obs = self.num_critic_obs
        self.privileged_obs_buf = self.critic_obs_buf

    def reset(self, env_ids=None):
        """Resets every world (env_ids None) or those of env_ids; returns (obs, privileged_obs)."""
        return self._reset(env_ids)

    def step(self, actions):
        """One step of every world: (obs, privileged_obs, rewards, dones, extras)."""
        o, c, r, d, extras = self._step(actions)
        self.extras = extras
        return o, c, r, d, extras

    def get_observations(self):
        return self.obs_buf.clone()

    def get_privileged_observations(self):
        return None if self.privileged_obs_buf is None else self.privileged_obs_buf.clone()

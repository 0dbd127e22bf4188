"""herd worlds as an rsl_rl 2.x ``VecEnv`` (rsl_rl 2.3, ``rsl-rl-lib`` on PyPI, the line Isaac Lab's
ANYmal workflows use), for its OnPolicyRunner.

    from herd.adapters.rsl_rl_v2 import RslRlVecEnv      # or herd.adapters.rsl_rl: the installed version's
    from rsl_rl.runners import OnPolicyRunner
    env = RslRlVecEnv("anymal_c-walk", 4096, address="tcp://127.0.0.1:5555", device="cpu", seed=0)
    runner = OnPolicyRunner(env, train_cfg, log_dir, device="cpu")     # train_cfg: one dict, rsl_rl 2.x's
    runner.learn(num_learning_iterations=1500)
    policy = runner.get_inference_policy()
    actions = policy(env.get_observations()[0])
    env.close()

Constructor: ``RslRlVecEnv(env, num_envs=None, device="cpu", **make_vec_kwargs)``, as in herd.adapters.rsl_rl_v1
(a task name and make_vec's keywords, or an open SAME_STEP ``herd.HerdVectorEnv``).  The worlds are reset by
the constructor: rsl_rl 2.x's runner reads ``get_observations()`` without resetting first.

What rsl_rl gets (its env/vec_env.py and runners/on_policy_runner.py):

* ``num_envs``, ``num_actions``, ``max_episode_length`` (the server's time limit in steps), ``device``,
  ``episode_length_buf`` (counted by the adapter; assigning it only warns, as in the 1.x adapter), ``cfg``
  (the session's effective task configuration, a dict), ``unwrapped`` (the adapter), ``step_dt`` (seconds
  per step, for rsl_rl's RND); also ``num_obs`` and ``num_privileged_obs`` (as Isaac Lab's wrapper has them).
* ``get_observations()`` -> ``(obs, extras)``: a copy of ``obs_buf`` and ``{"observations": {...}}``;
  ``reset()`` -> the same after resetting every world.
* ``step(actions)`` -> ``(obs, rewards, dones, extras)``: obs float32 ``[n, num_obs]``, rewards float32
  ``[n]``, dones bool ``[n]`` (terminated or truncated; a world that ended is reset in the same step and
  ``obs`` is its new episode's first observation).  Actions: any tensor ``[n, num_actions]``, sent as float32.
* ``extras["observations"]``: ``{}`` for the current tasks; ``{"critic": float32 [n, k]}`` for a task whose
  spec names a ``critic_obs_dim`` (the runner then gives the critic that observation).
* ``extras["time_outs"]``: bool ``[n]``, the episode hit the time limit (PPO bootstraps on it; not a
  physics failure).
* ``extras["episode"]``, in steps where some episode ended: ``{"rew_<term>": float32 [k]}``, the per-term
  reward sums of the k episodes that ended; the runner prints their means as "Mean episode rew_<term>".
  A task with a terrain curriculum (``anymal_c-rough``) adds Isaac Lab's ``"Curriculum/terrain_levels"``
  (a 0-dim tensor: the mean level of every world) and ``"Curriculum/terrain_levels/<kind>"`` per tile kind
  that has worlds; the runner writes them under those names and prints them each iteration.
  ``terrain_levels`` / ``terrain_kind_ids`` (long ``[n]``) hold every world's level and kind index into
  ``terrain_kinds`` after each reset and step (None for a flat task).

Buffers: ``obs_buf``, ``rew_buf``, ``reset_buf`` (and ``critic_obs_buf``) are allocated once and updated in
place, so tensors the user reads after ``runner.learn()`` are normal tensors (herd.adapters._rsl_rl_core).
rsl_rl 2.x imports tensorboard's SummaryWriter when learn() starts with its default logger; importing this
module puts a stand-in there where tensorboard is missing (no event files; console log and checkpoints as
usual).  rsl_rl 2.x also imports GitPython (``python3-git``) and onnx (``python3-onnx``).
"""
from ._rsl_rl_core import RslRlCore, provide_tensorboard

try:  # rsl_rl is optional: the adapter keeps rsl_rl's contract without it (for look-alike trainers)
    from rsl_rl.env import VecEnv as _VecEnvBase
    if hasattr(_VecEnvBase, "get_privileged_observations"):     # rsl_rl 1.x: another contract
        _VecEnvBase = object
except ImportError:  # pragma: no cover
    _VecEnvBase = object

provide_tensorboard()

__all__ = ["RslRlVecEnv"]


class RslRlVecEnv(RslRlCore, _VecEnvBase):
    """rsl_rl 2.x VecEnv over herd worlds; see the module docstring for the contract."""

    # Isaac Lab's curriculum key: a key with a "/" is logged and printed under its own name by rsl_rl 2.x
    _level_key = "Curriculum/terrain_levels"
    _kind_level_key = "Curriculum/terrain_levels/{}"

    def __init__(self, env, num_envs=None, device="cpu", **make_vec_kwargs):
        super().__init__(env, num_envs, device, **make_vec_kwargs)
        self.num_privileged_obs = self.num_critic_obs
        self.cfg = dict(self.env.config)
        self.step_dt = float(self.env.herd_spec.get("control_dt", 0.0))
        self._reset(None)

    @property
    def unwrapped(self):
        return self

    def _observations(self, critic):
        return {} if critic is None else {"critic": critic}

    def get_observations(self):
        """(a copy of obs_buf, {"observations": {"critic": a copy of critic_obs_buf} or {}})."""
        c = None if self.critic_obs_buf is None else self.critic_obs_buf.clone()
        return self.obs_buf.clone(), {"observations": self._observations(c)}

    def reset(self):
        """Resets every world; returns (obs, {"observations": ...})."""
        o, c = self._reset(None)
        return o, {"observations": self._observations(c)}

    def step(self, actions):
        """One step of every world: (obs, rewards, dones, extras)."""
        o, c, r, d, extras = self._step(actions)
        extras["observations"] = self._observations(c)
        self.extras = extras
        return o, r, d, extras

"""herd worlds as a Stable-Baselines3 ``VecEnv`` (SB3 2.x), since SB3 does not take Gymnasium vector envs.

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize
    from herd.adapters.sb3 import SB3VecEnv
    venv = VecNormalize(VecMonitor(SB3VecEnv("anymal_c-stand", 256, address="tcp://127.0.0.1:5555", seed=0)))
    model = PPO("MlpPolicy", venv).learn(1_000_000)

Constructor: ``SB3VecEnv(env, num_envs=None, monitor=False, action_gain=0.5, **make_vec_kwargs)``

* ``env``: a task name; the adapter makes (owns, closes) ``herd.make_vec(env, num_envs,
  autoreset_mode="SAME_STEP", **make_vec_kwargs)`` (address, seed, timeout, config overrides ...).  Or an
  open ``herd.HerdVectorEnv`` made with ``autoreset_mode="SAME_STEP"``; close() closes it too.
* ``monitor``: False (default): episode statistics come from SB3's ``VecMonitor`` as usual.  True (needs
  ``episode_statistics=True``, the default then for a task name): the adapter writes the server's
  statistics into ``info["episode"] = {"r", "l", "t"}`` when an episode ends, as SB3's ``Monitor`` does (``t``: seconds since the adapter was made), and ``env_is_wrapped(Monitor)`` is
  True, so SB3's algorithms log them without a VecMonitor (a VecMonitor on top warns and overwrites them
  with its own identical counts).
* ``action_gain``: the action space is ``Box(-1, 1, (act_dim,))``, the bounded space SB3's defaults are
  made for (its Gaussian policies start with unit standard deviation and PPO clips their samples to the
  bounds); an action ``a`` is clipped to [-1, 1] and the task receives ``action_gain * a``.  With the
  ANYmal tasks (joint target = default pose + ``action_scale`` 0.5 rad x task action) the default gain
  0.5 moves each joint target at most 0.25 rad from the default pose.  The task's own bounds (+-100)
  are far outside what a policy uses: with them a unit-std Gaussian makes the robot fall within about 25
  steps and, as the walk reward is clipped at 0, ``ep_rew_mean`` stays 0.  ``action_gain=None``
  presents the task's own bounds and sends actions unchanged.

SB3's VecEnv conventions, as DummyVecEnv keeps them: ``reset()`` -> obs; ``step_wait()`` -> (obs, rewards,
dones, infos) with dones = terminated or truncated and infos a list of one dict per world; a world that
ended is reset in the same step, its last observation in ``infos[i]["terminal_observation"]``;
``infos[i]["TimeLimit.truncated"]`` is true when the episode hit the time limit (not for a terminal state
nor a physics failure, which the server also reports as truncated), so PPO bootstraps exactly there.
``seed(s)`` applies at the next reset (world i gets s + i).  Also per world when set: ``episode_terms``
(per-term reward sums of the ended episode), ``physics_reset``; and in every step of a task with a terrain
curriculum (``anymal_c-rough``) ``terrain_level`` and ``terrain_kind`` (ints: the world's level, its tile kind as
an index into ``get_attr("terrain_kinds")[0]``; after a reset in the step, the new episode's).

Differences from a DummyVecEnv: one server session holds every world, so ``get_attr`` / ``set_attr`` /
``env_method`` act on the one ``HerdVectorEnv`` (``env_method`` calls it once and returns its result once
per index); actions are scaled as above; ``reset`` options are ignored (herd has none); nothing renders (``get_images`` gives None).
"""
import time

import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from ..spaces import make_box
from ..vector import HerdVectorEnv
from ._common import same_step_env

__all__ = ["SB3VecEnv"]


class SB3VecEnv(VecEnv):
    """Stable-Baselines3 VecEnv over herd worlds; see the module docstring for the contract."""

    def __init__(self, env, num_envs=None, monitor=False, action_gain=0.5, **make_vec_kwargs):
        if monitor and not isinstance(env, HerdVectorEnv):
            make_vec_kwargs.setdefault("episode_statistics", True)
        self.env = same_step_env("SB3VecEnv", env, num_envs, make_vec_kwargs)
        self.monitor = bool(monitor)
        if self.monitor and self.env.episode_statistics_key is None:
            raise ValueError("SB3VecEnv(monitor=True) needs a HerdVectorEnv made with episode_statistics=True")
        self.t_start = time.time()
        self._actions = None
        self.action_gain = None if action_gain is None else float(action_gain)
        if self.action_gain is None:
            action_space = self.env.single_action_space
        else:
            if not (np.isfinite(self.action_gain) and self.action_gain > 0):
                raise ValueError("SB3VecEnv: action_gain must be a positive number (or None), not %r" % (action_gain,))
            action_space = make_box(np.full(self.env.act_dim, -1.0, np.float32),
                                    np.full(self.env.act_dim, 1.0, np.float32))
        super().__init__(self.env.num_envs, self.env.single_observation_space, action_space)

    def task_actions(self, actions):
        """The task's actions for actions of this VecEnv's space: action_gain * clip(actions, -1, 1)
        (float32), or actions unchanged with action_gain None."""
        if self.action_gain is None:
            return actions
        a = np.asarray(actions, dtype=np.float32)
        return np.clip(a, -1.0, 1.0) * np.float32(self.action_gain)

    # ---- the VecEnv API --------------------------------------------------------------------------

    def reset(self):
        seeds = None
        if any(s is not None for s in self._seeds):
            if any(s is None for s in self._seeds):
                raise ValueError("SB3VecEnv: seed every world or none (use seed(s))")
            seeds = list(self._seeds)
        obs, _ = self.env.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return np.array(obs)

    def step_async(self, actions):
        self._actions = self.task_actions(actions)

    def step_wait(self):
        obs, rew, term, trunc, info = self.env.step(self._actions)
        self._actions = None
        dones = term | trunc
        time_limit = trunc & ~term
        if "physics_reset" in info:
            time_limit = time_limit & ~info["physics_reset"]
        if "terrain_level" in info:
            # a terrain curriculum: each world's level and tile kind (an index into get_attr("terrain_kinds"))
            infos = [{"TimeLimit.truncated": t, "terrain_level": lv, "terrain_kind": kd}
                     for t, lv, kd in zip(time_limit.tolist(), info["terrain_level"].tolist(),
                                          info["terrain_kind"].tolist())]
        else:
            infos = [{"TimeLimit.truncated": bool(t)} for t in time_limit]
        ended = np.flatnonzero(dones)
        if ended.size:
            final_obs = info["final_obs"]
            t = round(time.time() - self.t_start, 6)
            stats = info[self.env.episode_statistics_key] if self.monitor else None
            for i in ended:
                d = infos[i]
                d["terminal_observation"] = np.array(final_obs[i])
                if "episode_terms" in info:
                    d["episode_terms"] = np.array(info["episode_terms"][i])
                if stats is not None:
                    d["episode"] = {"r": float(stats["r"][i]), "l": int(stats["l"][i]), "t": t}
        if "physics_reset" in info:
            for i in np.flatnonzero(info["physics_reset"]):
                infos[i]["physics_reset"] = True
        return np.array(obs), np.array(rew), dones, infos

    def close(self):
        self.env.close()

    def get_attr(self, attr_name, indices=None):
        value = getattr(self.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        setattr(self.env, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        wrapped = self.monitor and issubclass(Monitor, wrapper_class)
        return [wrapped for _ in self._get_indices(indices)]

    def get_images(self):
        return [None for _ in range(self.num_envs)]

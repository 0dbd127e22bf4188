"""What the rsl_rl 1.x and 2.x adapters share: the wrapped env, the torch buffers, one step's conversion, the
episode-length count, and the tensorboard stand-in.

Buffers.  ``obs_buf``, ``rew_buf``, ``reset_buf`` (and ``critic_obs_buf`` when the task has a critic
observation) are allocated once, outside any inference mode, and every step copies into them in place.
Rebinding them to tensors made inside the runner's ``torch.inference_mode()`` would leave inference tensors
behind, and a policy called on them after ``learn()`` would raise "Inference tensors cannot be saved for
backward".  ``step`` returns new tensors (the runner keeps the previous step's observation until it has
stored it, so the returned tensor must not change under it), and ``get_observations`` returns a copy of the
buffer for the same reason.
"""
import importlib.util
import sys
import types
import warnings

import numpy as np
import torch

from ._common import same_step_env

CRITIC_OBS_KEY = "critic_obs"     # the infos key of a task's critic (privileged) observation, when it has one


def provide_tensorboard():
    """Makes ``torch.utils.tensorboard`` importable where the tensorboard package is missing (Debian has none):
    a stand-in module whose SummaryWriter accepts every call and writes nothing, so that rsl_rl's
    ``OnPolicyRunner`` (1.0.2 imports it with the runner, 2.x when learn() starts) runs and prints its console
    log and saves its checkpoints.  Where tensorboard is installed nothing changes.  Returns True when the
    stand-in is in place."""
    name = "torch.utils.tensorboard"
    if isinstance(sys.modules.get(name), _StandInModule):
        return True
    if importlib.util.find_spec("tensorboard") is not None:
        return False
    m = _StandInModule(name, "herd's stand-in for torch.utils.tensorboard: tensorboard is not installed")
    m.SummaryWriter = _NullSummaryWriter
    sys.modules[name] = m
    return True


class _StandInModule(types.ModuleType):
    """The module provide_tensorboard() installs (its type marks it)."""


class _NullSummaryWriter:
    """torch.utils.tensorboard.SummaryWriter's calls, doing nothing; warns once that no event file is written."""
    _warned = False

    def __init__(self, log_dir=None, *args, **kwargs):
        self.log_dir = log_dir
        if not _NullSummaryWriter._warned:
            _NullSummaryWriter._warned = True
            warnings.warn("herd: tensorboard is not installed, so rsl_rl's scalars are not written to %s "
                          "(the console log and the checkpoints are); pip install tensorboard to have them"
                          % (log_dir,), RuntimeWarning, stacklevel=2)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


class RslRlCore:
    """The part of an rsl_rl VecEnv over herd worlds that does not depend on rsl_rl's version."""

    _who = "RslRlVecEnv"
    # extras["episode"] keys of the terrain curriculum's levels (the 1.x and 2.x adapters name them as legged_gym
    # and Isaac Lab do): the mean over every world, and the mean over the worlds of one tile kind
    _level_key = "terrain_level"
    _kind_level_key = "terrain_level_{}"

    def __init__(self, env, num_envs=None, device="cpu", **make_vec_kwargs):
        self.env = same_step_env(self._who, env, num_envs, make_vec_kwargs)
        self.device = torch.device(device)
        self.num_envs = self.env.num_envs
        self.num_obs = self.env.obs_dim
        self.num_actions = self.env.act_dim
        self.max_episode_length = self.env.max_episode_steps
        self.reward_term_names = list(self.env.reward_term_names)
        # A critic observation: the server's spec names its size when the task has one (none does yet).
        dim = self.env.herd_spec.get("critic_obs_dim")
        self.num_critic_obs = int(dim) if dim else None
        self.obs_buf = torch.zeros(self.num_envs, self.num_obs, dtype=torch.float32, device=self.device)
        self.critic_obs_buf = (None if self.num_critic_obs is None else
                               torch.zeros(self.num_envs, self.num_critic_obs, dtype=torch.float32,
                                           device=self.device))
        self.rew_buf = torch.zeros(self.num_envs, dtype=torch.float32, device=self.device)
        self.reset_buf = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self._episode_length = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        # a task with a terrain curriculum: each world's level (legged_gym's env.terrain_levels) and tile kind,
        # from the infos of every reset and step
        self.terrain_kinds = list(getattr(self.env, "terrain_kinds", []))
        self.terrain_levels = (torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
                               if self.terrain_kinds else None)
        self.terrain_kind_ids = (torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
                                 if self.terrain_kinds else None)
        self.extras = {}
        self.infos = {}
        self._warned_length = False

    def _tensor(self, a):
        """A new tensor on the device holding a (a copy: the arrays are views of the received message)."""
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

    def _critic(self, infos):
        """A new tensor of the critic observation in infos (None when the task has none)."""
        if self.num_critic_obs is None or CRITIC_OBS_KEY not in infos:
            return None
        return self._tensor(infos[CRITIC_OBS_KEY])

    def _track_levels(self, infos):
        """Copies the infos' terrain levels and kinds (every world's) into terrain_levels / terrain_kind_ids."""
        if self.terrain_levels is None or "terrain_level" not in infos:
            return
        self.terrain_levels.copy_(torch.from_numpy(np.asarray(infos["terrain_level"], dtype=np.int64)))
        self.terrain_kind_ids.copy_(torch.from_numpy(np.asarray(infos["terrain_kind"], dtype=np.int64)))

    def terrain_level_log(self):
        """The curriculum's figures as extras["episode"] entries: the mean level of every world (a 0-dim
        tensor) under _level_key, and per tile kind with worlds the mean of its worlds under _kind_level_key;
        {} for a task without a terrain curriculum."""
        if self.terrain_levels is None:
            return {}
        lv = self.terrain_levels.to(torch.float32)
        out = {self._level_key: lv.mean()}
        for k, name in enumerate(self.terrain_kinds):
            on = self.terrain_kind_ids == k
            if bool(on.any()):
                out[self._kind_level_key.format(name)] = lv[on].mean()
        return out

    def _reset(self, env_ids):
        """Resets every world (env_ids None) or those of env_ids; returns (obs, critic_obs or None), new tensors,
        after copying them into the buffers."""
        if env_ids is None:
            obs, infos = self.env.reset()
            self._episode_length.zero_()
        else:
            ids = torch.as_tensor(env_ids).reshape(-1).cpu().numpy().astype(np.int64)
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[ids] = True
            obs, infos = self.env.reset(options={"reset_mask": mask})
            self._episode_length[torch.from_numpy(mask).to(self.device)] = 0
        o = self._tensor(obs)
        c = self._critic(infos)
        self.obs_buf.copy_(o)
        if c is not None:
            self.critic_obs_buf.copy_(c)
        self._track_levels(infos)
        return o, c

    def _step(self, actions):
        """One step of every world: (obs, critic_obs or None, rewards, dones, extras), new tensors; the buffers
        hold copies.  extras: "time_outs", and "episode" when some episode ended."""
        a = torch.as_tensor(actions).detach().to("cpu", torch.float32).numpy()
        obs, rew, term, trunc, info = self.env.step(a)
        done = term | trunc
        time_out = trunc & ~term
        if "physics_reset" in info:
            time_out = time_out & ~info["physics_reset"]
        o, r, d = self._tensor(obs), self._tensor(rew), self._tensor(done)
        c = self._critic(info)
        self.obs_buf.copy_(o)
        self.rew_buf.copy_(r)
        self.reset_buf.copy_(d)
        if c is not None:
            self.critic_obs_buf.copy_(c)
        self._episode_length += 1
        self._episode_length[d] = 0
        self._track_levels(info)
        extras = {"time_outs": self._tensor(time_out)}
        if "episode_terms" in info:
            m = info["_episode_terms"]
            sums = np.asarray(info["episode_terms"])[m]
            extras["episode"] = {"rew_" + name: self._tensor(sums[:, j])
                                 for j, name in enumerate(self.reward_term_names)}
            # the levels where episodes ended, as legged_gym logs them at its resets (the same keys every time, so
            # the runners' per-iteration means see them in every entry)
            extras["episode"].update(self.terrain_level_log())
        self.infos = info           # the last step's infos as HerdVectorEnv gives them (e.g. reward_terms)
        return o, c, r, d, extras

    def close(self):
        self.env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

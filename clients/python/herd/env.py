"""HerdEnv: one herd world as a ``gymnasium.Env`` (a one-world session with autoreset disabled).

    env = herd.HerdEnv("anymal_c-stand", address="tcp://127.0.0.1:5555")
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

It exists so that Gymnasium's own machinery (``gymnasium.make``, ``SyncVectorEnv`` / ``AsyncVectorEnv``,
``vectorization_mode="sync"`` in ``gymnasium.make_vec``, ``gymnasium.utils.env_checker.check_env``) can drive
herd worlds one by one.  For training, use the batched ``herd.make_vec``: one session of N worlds costs one
request per step, N HerdEnvs cost N.

Seeding: ``reset(seed=s)`` gives the world the stream keyed by s, the same world as world i of
``make_vec(..., seed=s - i)`` (PROTOCOL.md section 8); ``reset()`` starts the next episode of the stream.
After an episode ends, step() raises ``ServerError`` ``EPISODE_ENDED`` until reset() (Gymnasium's contract).
"""
import numpy as np

from .vector import HerdVectorEnv, check_render_mode

try:  # pragma: no cover - depends on the installation
    import gymnasium as _gym
    _EnvBase = _gym.Env
except Exception:
    _EnvBase = object

__all__ = ["HerdEnv", "single_info"]


def single_info(infos, i=0):
    """Row i of a vector env's dict of arrays with ``_key`` masks, as one env's info dict."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if mask is not None and not mask[i]:
            continue
        if isinstance(value, dict):
            out[key] = single_info(value, i)
        elif isinstance(value, np.ndarray) and value.ndim >= 1 and len(value) > i:
            out[key] = np.array(value[i]) if value.ndim > 1 else value[i]
    return out


class HerdEnv(_EnvBase):
    """One world of task ``task`` on a herd server, as a gymnasium.Env.

    Keywords: those of ``herd.make_vec`` (address — default $HERD_ADDRESS, then tcp://127.0.0.1:5555 —,
    seed, timeout, episode_statistics, reward_terms, config overrides ...), except autoreset_mode.
    Attributes: observation_space, action_space (the task's real bounds, see README.md), herd_spec,
    config, config_names, reward_term_names, max_episode_steps, vector_env (the one-world HerdVectorEnv).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, task, render_mode=None, **make_vec_kwargs):
        check_render_mode(render_mode)
        if "autoreset_mode" in make_vec_kwargs:
            raise TypeError("HerdEnv: a single env never resets itself (autoreset_mode is for vector envs)")
        self.render_mode = render_mode
        self.vector_env = HerdVectorEnv(task, 1, autoreset_mode="DISABLED", render_mode=render_mode,
                                        **make_vec_kwargs)
        v = self.vector_env
        self.observation_space = v.single_observation_space
        self.action_space = v.single_action_space
        self.herd_spec = v.herd_spec
        self.config = v.config
        self.config_names = v.config_names
        self.reward_term_names = v.reward_term_names
        self.max_episode_steps = v.max_episode_steps
        # frames per second of a video of its steps (gymnasium's RecordVideo reads it): one frame per control step
        self.metadata = dict(type(self).metadata, render_fps=int(round(1.0 / float(v.herd_spec["control_dt"]))))

    def reset(self, *, seed=None, options=None):
        """Starts an episode: seed s keys the world's stream by s; None continues it."""
        if _EnvBase is not object:
            super().reset(seed=seed)                # seeds self.np_random, as gymnasium.Env does
        obs, infos = self.vector_env.reset(seed=seed)
        return np.array(obs[0]), single_info(infos)

    def step(self, action):
        a = np.asarray(action, dtype=np.float32).reshape(1, -1)
        obs, rew, term, trunc, infos = self.vector_env.step(a)
        return np.array(obs[0]), float(rew[0]), bool(term[0]), bool(trunc[0]), single_info(infos)

    def render(self):
        """render_mode "rgb_array": the world's frame, uint8 (H, W, 3) (herd.render); else None."""
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def close(self):
        self.vector_env.close()

    def __repr__(self):
        return "HerdEnv(%s, %s)" % (self.vector_env.env_id, self.vector_env.addresses[0])

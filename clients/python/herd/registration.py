"""Gymnasium registration: ``import herd`` registers herd's tasks when gymnasium is importable.

    import gymnasium, herd
    envs = gymnasium.make_vec("herd/anymal_c-walk-v0", num_envs=4096, address="tcp://127.0.0.1:5555")
    env = gymnasium.make("herd/anymal_c-stand-v0")                  # one world (herd.HerdEnv)
    envs = gymnasium.make_vec("herd/anymal_c-stand-v0", num_envs=4, vectorization_mode="sync")

Ids are ``herd/<task>-v0``.  ``make_vec`` (the default vectorization mode "vector_entry_point") makes one
``HerdVectorEnv`` session of num_envs worlds; "sync" / "async" make num_envs one-world ``HerdEnv``s.  Every
keyword goes to ``herd.make_vec``: address (default $HERD_ADDRESS, then tcp://127.0.0.1:5555), seed,
autoreset_mode, episode_statistics, task configuration overrides (``action_clip=1.0``, ``obs_noise=0``).
The server owns the time limit (``episode_seconds``): the ids have no max_episode_steps, so Gymnasium adds
no TimeLimit wrapper.  ``register_envs(tasks)`` registers tasks the list below does not know (a server's
``herd.list_envs(address)``).
"""
from .vector import HerdVectorEnv

__all__ = ["TASKS", "gym_id", "register_envs", "make_vector_env"]

TASKS = ("anymal_c-walk", "anymal_c-stand", "paper-trot", "paper-hang", "paper-drop", "paper-random", "anymal_c-rough")


def gym_id(task):
    """The Gymnasium id of a herd task: "herd/<task>-v0"."""
    return "herd/%s-v0" % task


def make_vector_env(num_envs=1, task=None, **kwargs):
    """Gymnasium's vector entry point of the herd ids: herd.make_vec(task, num_envs, **kwargs)."""
    return HerdVectorEnv(task, num_envs, **kwargs)


def register_envs(tasks=TASKS):
    """Registers herd/<task>-v0 for each task (those already registered are left alone); returns the ids.
    Raises ImportError when gymnasium is not installed."""
    import gymnasium
    ids = []
    for task in tasks:
        env_id = gym_id(task)
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point="herd.env:HerdEnv",
                               vector_entry_point="herd.registration:make_vector_env", kwargs={"task": task})
        ids.append(env_id)
    return ids

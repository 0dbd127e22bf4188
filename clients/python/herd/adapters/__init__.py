"""Thin adapters from herd's vector env to the interfaces of RL trainers.  They convert, nothing more.

    herd.adapters.sb3      SB3VecEnv: a stable_baselines3 VecEnv (SB3 2.x; needs stable-baselines3)
    herd.adapters.rsl_rl   RslRlVecEnv: an rsl_rl VecEnv for the installed rsl_rl (needs torch):
    herd.adapters.rsl_rl_v1    rsl_rl 1.x (1.0.2, legged_gym's)
    herd.adapters.rsl_rl_v2    rsl_rl 2.x (2.3, rsl-rl-lib, Isaac Lab's)

Each is imported on its own (``from herd.adapters.rsl_rl import RslRlVecEnv``), so that ``import herd``
never imports torch or a trainer.  Both use same-step autoreset, as those trainers expect.
"""

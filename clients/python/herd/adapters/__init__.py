"""Thin adapters from herd's vector env to the interfaces of RL trainers.  They convert, nothing more.

    herd.adapters.sb3      SB3VecEnv: a stable_baselines3 VecEnv (SB3 2.x; needs stable-baselines3)
    herd.adapters.rsl_rl   RslRlVecEnv: an rsl_rl VecEnv (rsl_rl 1.0.2, legged_gym's; needs torch)

Each is imported on its own (``from herd.adapters.rsl_rl import RslRlVecEnv``), so that ``import herd``
never imports torch or a trainer.  Both use same-step autoreset, as those trainers expect.
"""

"""herd worlds as an rsl_rl ``VecEnv``, for the rsl_rl that is installed.

    from herd.adapters.rsl_rl import RslRlVecEnv        # before rsl_rl.runners (see tensorboard below)
    from rsl_rl.runners import OnPolicyRunner

rsl_rl changed its VecEnv contract between 1.x and 2.x (``step`` returns 5 values in 1.x, 4 in 2.x; the
privileged observations moved from ``get_privileged_observations()`` to ``extras["observations"]["critic"]``),
and one import name serves both, so one Python process has only one of them.  Two modules hold the two
adapters, and this one picks:

    herd.adapters.rsl_rl_v1.RslRlVecEnv    rsl_rl 1.x (1.0.2: legged_gym's)
    herd.adapters.rsl_rl_v2.RslRlVecEnv    rsl_rl 2.x (2.3: rsl-rl-lib, Isaac Lab's)
    herd.adapters.rsl_rl.RslRlVecEnv       the one for the rsl_rl importable here (RSL_RL_MAJOR: 1 or 2)

The version is read from the imported package itself (1.x's VecEnv has ``get_privileged_observations``, 2.x's
does not), not from pip's metadata, which may describe another copy than the one on the path; an rsl_rl
whose metadata says 3 or later (TensorDict observations) is refused with ImportError.  Without rsl_rl
importable, RSL_RL_MAJOR is None and RslRlVecEnv is the 2.x adapter.

tensorboard: rsl_rl's OnPolicyRunner writes its scalars with ``torch.utils.tensorboard``, which needs the
tensorboard package (Debian has none); rsl_rl 1.0.2 imports it with ``rsl_rl.runners``.  Importing any of
these modules installs, only where tensorboard is missing, a stand-in ``torch.utils.tensorboard`` whose
SummaryWriter writes nothing (it warns once): the runner then trains, prints its console log and saves
checkpoints as usual.  Import the adapter before ``rsl_rl.runners``.
"""
from ._rsl_rl_core import provide_tensorboard


def rsl_rl_major():
    """1 or 2: the major version of the importable rsl_rl (None when rsl_rl is not importable)."""
    try:
        from rsl_rl.env import VecEnv
    except ImportError:
        return None
    if hasattr(VecEnv, "get_privileged_observations"):
        return 1
    from importlib import metadata
    for dist in ("rsl-rl-lib", "rsl_rl"):
        try:
            v = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        head = v.split(".")[0]
        if head.isdigit() and int(head) >= 3:
            raise ImportError("herd.adapters.rsl_rl: rsl_rl %s is installed; the adapters follow rsl_rl 1.x and "
                              "2.x (pip install 'rsl-rl-lib<3')" % v)
    return 2


RSL_RL_MAJOR = rsl_rl_major()

if RSL_RL_MAJOR == 1:
    from .rsl_rl_v1 import RslRlVecEnv
else:
    from .rsl_rl_v2 import RslRlVecEnv

provide_tensorboard()

__all__ = ["RslRlVecEnv", "RSL_RL_MAJOR", "rsl_rl_major", "provide_tensorboard"]

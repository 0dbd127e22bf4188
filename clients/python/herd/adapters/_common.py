"""What the adapters share: the same-step HerdVectorEnv they wrap."""
from ..vector import AutoresetMode, HerdVectorEnv


def same_step_env(who, env, num_envs, make_vec_kwargs):
    """The SAME_STEP HerdVectorEnv an adapter wraps: env itself (an open HerdVectorEnv made with
    autoreset_mode SAME_STEP), or a new one, HerdVectorEnv(env, num_envs, autoreset_mode="SAME_STEP",
    **make_vec_kwargs), for a task name.  who: the adapter's name, for the messages."""
    if isinstance(env, HerdVectorEnv):
        if num_envs is not None or make_vec_kwargs:
            raise TypeError("%s(HerdVectorEnv): num_envs and make_vec keywords belong to make_vec" % who)
    else:
        if num_envs is None:
            raise TypeError("%s(%r): num_envs is required with a task name" % (who, env))
        if make_vec_kwargs.get("autoreset_mode", "SAME_STEP") not in ("SAME_STEP", AutoresetMode.SAME_STEP):
            raise ValueError("%s needs autoreset_mode SAME_STEP (the trainer resets in the same step)" % who)
        env = HerdVectorEnv(env, num_envs, **dict(make_vec_kwargs, autoreset_mode="SAME_STEP"))
    if env.metadata["autoreset_mode"].name != "SAME_STEP":
        raise ValueError("%s needs a HerdVectorEnv with autoreset_mode SAME_STEP, not %s"
                         % (who, env.metadata["autoreset_mode"].name))
    return env

"""herd: Python client of herd-server (batched ANYmal C worlds over ZeroMQ + MessagePack).

    import herd
    with herd.make_vec("anymal_c-walk", 4096, address="tcp://127.0.0.1:5555", seed=0) as envs:
        obs, infos = envs.reset()
        for _ in range(100):
            obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())

Dependencies: pyzmq, msgpack, numpy.  Gymnasium is optional: when it is importable, herd's envs use its
spaces and AutoresetMode and subclass its VectorEnv / Env, and ``import herd`` registers the ids
``herd/<task>-v0`` (``gymnasium.make_vec("herd/anymal_c-walk-v0", num_envs=4096)``).  Trainer adapters:
herd.adapters.sb3, herd.adapters.rsl_rl.  The wire protocol is protocol/PROTOCOL.md; the low-level client is
herd.client.Client.
"""
from .client import DEFAULT_ADDRESS, PROTOCOL_VERSION, Client, expand_addresses
from .errors import BadReplyError, HerdError, HerdTimeoutError, ServerError, TransportError
from .spaces import Box, HAVE_GYMNASIUM
from .vector import AutoresetMode, HerdVectorEnv, make_vec
from .env import HerdEnv
from .registration import gym_id, register_envs

if HAVE_GYMNASIUM:
    register_envs()

__version__ = "0.1.0"

__all__ = [
    "make_vec", "HerdVectorEnv", "HerdEnv", "AutoresetMode", "register_envs", "gym_id", "Client",
    "expand_addresses", "list_envs",
    "HerdError", "ServerError", "HerdTimeoutError", "TransportError", "BadReplyError",
    "Box", "HAVE_GYMNASIUM", "DEFAULT_ADDRESS", "PROTOCOL_VERSION", "__version__",
]


def list_envs(address=None, timeout=10.0):
    """The specs of the envs a server offers (its hello reply's "envs"), as a dict name -> spec.
    address None: $HERD_ADDRESS, else DEFAULT_ADDRESS."""
    with Client(address, timeout=timeout) as c:
        return {s["name"]: s for s in c.hello()["envs"]}

"""
    Herd

Julia client of herd-server: batched ANYmal C worlds served over ZeroMQ + MessagePack
(protocol/PROTOCOL.md).

    using Herd
    env = VecEnv("anymal_c-walk", 4096; address = "tcp://127.0.0.1:5555", seed = 0)
    reset!(env)                                   # env.obs :: Matrix{Float32}(48, 4096), column i = world i
    actions = zeros(Float32, env.act_dim, env.num_worlds)
    obs, reward, terminated, truncated = step!(env, actions)
    close(env)

Single worlds as CommonRLInterface environments: `World(env, i)`, `make_env(env_id)`.
"""
module Herd

# reset! is CommonRLInterface's function (methods for VecEnv and World are added here), so that
# `using Herd, CommonRLInterface` does not make it ambiguous.
import CommonRLInterface
import CommonRLInterface: reset!

export VecEnv, reset!, step!, reset_send!, reset_recv!, step_send!, step_recv!, HerdError,
       World, make_env, worlds, BoxSpace, Client

include("codec.jl")
include("client.jl")
include("spec.jl")
include("vecenv.jl")
include("single.jl")

end # module

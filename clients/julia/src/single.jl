# single.jl — single-world views of a VecEnv implementing CommonRLInterface, and continuous spaces.

import CommonRLInterface as CRL
using Random: AbstractRNG, SamplerTrivial
import Random

"""
    BoxSpace(low, high)

A box of Float32 vectors (bounds may be ±Inf32).  `rand(space)` samples uniformly where both bounds are
finite and from a standard normal elsewhere; `x in space` checks length and bounds.
"""
struct BoxSpace
    low::Vector{Float32}
    high::Vector{Float32}
end
Base.size(s::BoxSpace) = (length(s.low),)
Base.length(s::BoxSpace) = length(s.low)
Base.eltype(::Type{BoxSpace}) = Vector{Float32}
Base.in(x::AbstractVector, s::BoxSpace) = length(x) == length(s.low) && all(s.low .<= x .<= s.high)
function Random.rand(rng::AbstractRNG, sp::SamplerTrivial{BoxSpace})
    s = sp[]
    x = Vector{Float32}(undef, length(s.low))
    for i in eachindex(x)
        lo, hi = s.low[i], s.high[i]
        x[i] = isfinite(lo) && isfinite(hi) ? lo + (hi - lo) * rand(rng, Float32) : randn(rng, Float32)
    end
    return x
end

observation_space(e::VecEnv) = BoxSpace(observation_bounds(e)...)
action_space(e::VecEnv) = BoxSpace(action_bounds(e)...)

"""
    World(env::VecEnv, i)

World `i` (1-based) of `env` as a CommonRLInterface environment:

* `reset!(w)` resets that world only (a subset reset);
* `observe(w)` is a copy of its column of `env.obs`;
* `act!(w, a)` steps that world only (a 1-world subset step) and returns its reward;
* `terminated(w)`: its episode has ended (terminated or truncated) and it was not reset since;
* `actions(w)` / `observations(w)`: `BoxSpace`s from the server's spec.

Each call is one request to the server: for throughput, step the VecEnv in batches instead.  Use a VecEnv
with `autoreset=:disabled` (as `make_env` does) so that an ended world stays ended until `reset!`.
"""
struct World <: CRL.AbstractEnv
    env::VecEnv
    i::Int
    function World(env::VecEnv, i::Integer)
        1 <= i <= env.num_worlds || throw(BoundsError(env.obs, (1, i)))
        new(env, Int(i))
    end
end

"""
    make_env(env_id; address, seed=nothing, timeout=30.0, config=Dict()) -> World

One world of `env_id` on its own session (autoreset disabled), as a CommonRLInterface environment.
Close it with `close(w)`.
"""
make_env(env_id::AbstractString; kw...) = World(VecEnv(env_id, 1; autoreset = :disabled, kw...), 1)

worlds(e::VecEnv) = [World(e, i) for i in 1:e.num_worlds]
Base.close(w::World) = close(w.env)

function CRL.reset!(w::World)
    reset!(w.env; world_ids = [w.i - 1])
    nothing
end
CRL.observe(w::World) = w.env.obs[:, w.i]
CRL.actions(w::World) = action_space(w.env)
CRL.observations(w::World) = observation_space(w.env)
CRL.terminated(w::World) = w.env.ended[w.i] || w.env.terminated[w.i] || w.env.truncated[w.i]
function CRL.act!(w::World, a::AbstractVector)
    step!(w.env, reshape(Vector{Float32}(a), :, 1); world_ids = [w.i - 1])
    return w.env.reward[w.i]
end

# RLBase, where it is loaded: `rlbase_env(w)` (package extension HerdRLBaseExt).
"""
    rlbase_env(w::World)

The world as a ReinforcementLearningBase environment (available once `ReinforcementLearningBase` is
loaded; it wraps the CommonRLInterface view with RLBase's own bridge).
"""
function rlbase_env end

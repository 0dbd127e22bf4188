# spec.jl — a task's spec (PROTOCOL.md section 6.1) as typed structs, read from the decoded `make` reply.
# A field the client needs that is missing or of the wrong type is a BAD_REPLY HerdError; keys the client
# does not know are ignored (PROTOCOL.md section 2).

"A named group of observation or action elements: `offset+1 : offset+size` (1-based) of the flat vector."
struct SpaceField
    name::String
    offset::Int
    size::Int
    low::Float64             # may be ±Inf
    high::Float64
    scale::Float64           # applied to the physical quantity
    unit::String             # unit before scaling
end

"""
A configuration key of a task: its default and allowed range `[lo, hi]`.  A key with named choices (e.g.
`"solver"`; protocol minor 1) lists them in `choices`: value `i` means `choices[i + 1]`, and `VecEnv`'s
`config` may give the name instead.  `choices` is empty for a plain number.
"""
struct ConfigKey
    key::String
    default::Float64
    lo::Float64
    hi::Float64
    is_int::Bool
    doc::String
    choices::Vector{String}
end

"""
    Spec

The server's description of a task (PROTOCOL.md section 6.1), with the session's configuration applied:
`name`, `doc`, `obs_dim`, `act_dim`, `obs` / `act` (`Vector{SpaceField}`), `sim_dt`, `decimation`,
`control_dt`, `episode_seconds`, `max_episode_steps`, `config` (`Vector{ConfigKey}`), `reward_terms`
(`Vector{String}`), and the critic's observation (protocol minor 4): `critic_obs_dim` and `critic_obs`
(`Vector{SpaceField}`), 0 and empty for a task without one, and `terrain_kinds` (`Vector{String}`, protocol
minor 5): the tile kinds of a task with a terrain curriculum (empty for a flat task).  `spec["name"]` is
`spec.name`.
"""
struct Spec
    name::String
    doc::String
    obs_dim::Int
    act_dim::Int
    obs::Vector{SpaceField}
    act::Vector{SpaceField}
    sim_dt::Float64
    decimation::Int
    control_dt::Float64
    episode_seconds::Float64
    max_episode_steps::Int
    config::Vector{ConfigKey}
    reward_terms::Vector{String}
    critic_obs_dim::Int
    critic_obs::Vector{SpaceField}
    terrain_kinds::Vector{String}
end
Base.getindex(s::Spec, k::AbstractString) = getfield(s, Symbol(k))

bad_reply(msg) = HerdError("BAD_REPLY", msg, nothing)

# Value of key k of a decoded map as a T (numbers widened, never narrowed with loss).
function spec_get(m::AbstractDict, k::String, ::Type{T}, what::String) where {T}
    v = get(m, k, nothing)
    v === nothing && throw(bad_reply("$what has no \"$k\""))
    return as_type(T, v, "$what.$k")
end
as_type(::Type{String}, v::String, _) = v
as_type(::Type{Bool}, v::Bool, _) = v
as_type(::Type{Int}, v::Integer, name) =
    (!(v isa Bool) && typemin(Int) <= v <= typemax(Int)) ? Int(v) : throw(bad_reply("$name = $v is not an Int"))
as_type(::Type{Float64}, v::Real, name) = v isa Bool ? throw(bad_reply("$name is a Bool, expected a number")) : Float64(v)
as_type(::Type{T}, v, name) where {T} = throw(bad_reply("$name is a $(typeof(v)), expected $T"))
function as_list(::Type{T}, f, v, name) where {T}
    v isa Vector{Any} || throw(bad_reply("$name is a $(typeof(v)), expected an array"))
    return T[f(x, "$name[$i]") for (i, x) in enumerate(v)]
end
function as_map(v, name)
    v isa OrderedMap || throw(bad_reply("$name is a $(typeof(v)), expected a map"))
    return v
end

function SpaceField(m, name::String)
    m = as_map(m, name)
    SpaceField(spec_get(m, "name", String, name), spec_get(m, "offset", Int, name), spec_get(m, "size", Int, name),
               spec_get(m, "low", Float64, name), spec_get(m, "high", Float64, name), spec_get(m, "scale", Float64, name),
               spec_get(m, "unit", String, name))
end

function ConfigKey(m, name::String)
    m = as_map(m, name)
    ch = get(m, "choices", nothing)      # only on keys with named choices (minor 1)
    choices = ch === nothing ? String[] :
              as_list(String, (x, n) -> as_type(String, x, n), ch, "$name.choices")
    ConfigKey(spec_get(m, "key", String, name), spec_get(m, "default", Float64, name), spec_get(m, "lo", Float64, name),
              spec_get(m, "hi", Float64, name), spec_get(m, "is_int", Bool, name), spec_get(m, "doc", String, name),
              choices)
end

"Reads a decoded spec map (the `spec` of a `make` reply, or an entry of `hello`'s `envs`)."
function Spec(m)
    m = as_map(m, "spec")
    s = Spec(spec_get(m, "name", String, "spec"), spec_get(m, "doc", String, "spec"),
             spec_get(m, "obs_dim", Int, "spec"), spec_get(m, "act_dim", Int, "spec"),
             as_list(SpaceField, SpaceField, get(m, "obs", nothing), "spec.obs"),
             as_list(SpaceField, SpaceField, get(m, "act", nothing), "spec.act"),
             spec_get(m, "sim_dt", Float64, "spec"), spec_get(m, "decimation", Int, "spec"),
             spec_get(m, "control_dt", Float64, "spec"), spec_get(m, "episode_seconds", Float64, "spec"),
             spec_get(m, "max_episode_steps", Int, "spec"),
             as_list(ConfigKey, ConfigKey, get(m, "config", nothing), "spec.config"),
             as_list(String, (x, name) -> as_type(String, x, name), get(m, "reward_terms", nothing), "spec.reward_terms"),
             # only in specs of tasks with a critic observation (minor 4)
             haskey(m, "critic_obs_dim") ? spec_get(m, "critic_obs_dim", Int, "spec") : 0,
             haskey(m, "critic_obs") ? as_list(SpaceField, SpaceField, m["critic_obs"], "spec.critic_obs") : SpaceField[],
             # only in specs of tasks with a terrain curriculum (minor 5)
             haskey(m, "terrain_kinds") ?
                 as_list(String, (x, name) -> as_type(String, x, name), m["terrain_kinds"], "spec.terrain_kinds") :
                 String[])
    (s.obs_dim >= 0 && s.act_dim >= 0 && s.critic_obs_dim >= 0) ||
        throw(bad_reply("spec has obs_dim $(s.obs_dim), act_dim $(s.act_dim), critic_obs_dim $(s.critic_obs_dim)"))
    for (dim, fields, what) in ((s.obs_dim, s.obs, "obs"), (s.act_dim, s.act, "act"), (s.critic_obs_dim, s.critic_obs, "critic_obs"))
        for f in fields
            (f.offset >= 0 && f.size >= 0 && f.offset + f.size <= dim) ||
                throw(bad_reply("spec.$what field \"$(f.name)\" [$(f.offset), +$(f.size)) is outside [0, $dim)"))
        end
    end
    return s
end

"""
    config_names(spec, config) -> Dict{String,String}

The name of the effective value of every key with named choices, e.g. `Dict("solver" => "paper-bisection")`.
"""
function config_names(spec::Spec, config::AbstractDict)
    out = Dict{String,String}()
    for k in spec.config
        isempty(k.choices) && continue
        v = get(config, k.key, nothing)
        v === nothing && continue
        i = Int(v)
        0 <= i < length(k.choices) && (out[k.key] = k.choices[i + 1])
    end
    return out
end

# A make request's config value: a name (a key with named choices) as a String, anything else a Float64.
config_value(v::AbstractString) = String(v)
config_value(v::Symbol) = String(v)
config_value(v::Real) = Float64(v)

"Reads the `config` map of a `make` reply: every key of the spec -> its effective value."
function read_config(v)
    m = as_map(v, "config")
    out = OrderedDict{String,Float64}()
    for (k, x) in m
        out[k] = as_type(Float64, x, "config.$k")
    end
    return out
end

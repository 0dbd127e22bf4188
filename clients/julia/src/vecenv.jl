# vecenv.jl — the batched API: a VecEnv holds N worlds (spread over one or more servers) and
# preallocated column-major buffers that reset! / step! fill.
#
# Layout: observations live in `env.obs::Matrix{Float32}(obs_dim, N)`, column i = world i (1-based;
# world id i-1 on the wire).  A server's [n, obs_dim] row-major reply bytes are exactly n columns of
# that matrix, so each reply tensor is copied with one memcpy straight into its place (no transpose, no
# per-element conversion).  Actions are a `Matrix{Float32}(act_dim, N)` sent the same way.

const AUTORESET_NAMES = Dict(:next_step => "next_step", :same_step => "same_step", :disabled => "disabled")

"""
    VecEnv(env_id, num_worlds; address="tcp://127.0.0.1:5555", seed=nothing, autoreset=:next_step,
           timeout=30.0, config=Dict(), reward_terms=false, critic_obs=false)

`num_worlds` worlds of task `env_id` (e.g. "anymal_c-walk") on the server(s) at `address` (one endpoint, a
comma-separated string or a vector: the worlds are spread over the servers in contiguous blocks).

* `seed`: world i (0-based) starts its first episode with seed `seed + i` (random when `nothing`); the
  seeds are sent per world, so results do not depend on how worlds are spread.
* `autoreset`: `:next_step` (default), `:same_step` (final observations in `final_obs`) or `:disabled`.
* `config`: overrides of the task's configuration keys (`Dict("target_height" => 0.55)`); a key with
  named choices takes the name (`Dict("solver" => "admm")`, see `Herd.ConfigKey`).
* `reward_terms`: also fetch per-term rewards (`env.reward_terms`, nterms × N).
* `critic_obs`: also fetch the critic's (privileged) observation after every reset and step (protocol minor 4;
  `env.critic_obs`, `critic_dim` × N, fields `env.spec.critic_obs`); an env without one refuses it (BAD_FIELD).

Buffers (filled by `reset!` / `step!`; column / entry i is world i): `obs` (obs_dim × N), `reward`,
`terminated`, `truncated`, `episode_done`, `episode_return`, `episode_length`, `physics_reset`,
`autoreset_flag` (next_step: the world was reset by this step, its action ignored), `final_obs` and
`final_mask` (same_step), and for a task with a terrain curriculum (`env.spec.terrain_kinds` not empty; protocol
minor 5) `terrain_level` and `terrain_kind` (`Vector{Int32}`, N each, -1 until the world's first reset): each
world's terrain level and its tile kind, a 0-based index into `env.spec.terrain_kinds` (after an autoreset, the
new episode's; empty vectors for a flat task).  `spec` is the server's spec (a `Herd.Spec`: `env.spec.reward_terms`,
`env.spec.obs`, ...), `config` the effective configuration (`OrderedDict{String,Float64}`; a key with
named choices holds the index: `Herd.config_names(env.spec, env.config)` gives the names).
"""
mutable struct VecEnv
    client::Client
    env_id::String
    num_worlds::Int
    obs_dim::Int
    act_dim::Int
    nterms::Int
    spec::Spec
    config::OrderedDict{String,Float64}
    autoreset::Symbol
    want_terms::Bool
    parts::Vector{Int}          # server index of each session
    sessions::Vector{UInt64}    # session ids
    starts::Vector{Int}         # first world (0-based) of each session
    counts::Vector{Int}
    base_seed::UInt64
    unseeded::Vector{Bool}      # world i was never reset: its first reset sends seed base_seed + i - 1
    obs::Matrix{Float32}
    reward::Vector{Float32}
    terminated::Vector{Bool}
    truncated::Vector{Bool}
    episode_done::Vector{Bool}
    episode_return::Vector{Float32}
    episode_length::Vector{Int32}
    episode_terms::Matrix{Float32}
    physics_reset::Vector{Bool}
    autoreset_flag::Vector{Bool}
    final_obs::Matrix{Float32}
    final_mask::Vector{Bool}
    reward_terms::Matrix{Float32}
    ended::Vector{Bool}         # the world's episode ended (or it was never reset)
    closed::Bool
    critic_dim::Int             # spec.critic_obs_dim when made with critic_obs, else 0
    critic_obs::Matrix{Float32} # critic_dim x N
    terrain_level::Vector{Int32}    # N for a task with a terrain curriculum, else empty
    terrain_kind::Vector{Int32}     # the same; 0-based indices into spec.terrain_kinds
end

"One server's share of a request in flight: the session index, the request id, the worlds it addresses
(0-based global ids, in the order of the reply's rows; `nothing` = the session's whole block)."
struct PartRequest
    part::Int
    id::UInt64
    worlds::Union{Nothing,Vector{Int}}
end

"A request in flight: the kind, the worlds it addresses (0-based; nothing = all) and its parts."
struct Pending
    kind::Symbol
    worlds::Union{Nothing,Vector{Int}}
    parts::Vector{PartRequest}
end

function VecEnv(env_id::AbstractString, num_worlds::Integer; address = DEFAULT_ADDRESS, seed = nothing,
                autoreset::Symbol = :next_step, timeout::Real = 30.0, config = Dict{String,Float64}(),
                reward_terms::Bool = false, critic_obs::Bool = false)
    num_worlds >= 1 || throw(ArgumentError("num_worlds must be >= 1"))
    haskey(AUTORESET_NAMES, autoreset) || throw(ArgumentError("autoreset must be :next_step, :same_step or :disabled"))
    c = Client(address; timeout = timeout)
    S = nservers(c)
    counts_all = [num_worlds ÷ S + (k <= num_worlds % S ? 1 : 0) for k in 1:S]
    parts = [k for k in 1:S if counts_all[k] > 0]
    counts = counts_all[parts]
    starts = cumsum([0; counts[1:end-1]])
    base = seed === nothing ? rand(UInt64) >> 1 : UInt64(mod(Int128(seed), Int128(2)^64))
    cfg = OrderedDict{String,Any}(string(k) => config_value(v) for (k, v) in config)
    ids = UInt64[]
    # closes the sessions that were made (replies rs[p] of parts[p]; nothing: no reply), best effort
    close_made(rs) = for (p, r) in enumerate(rs)
        r !== nothing && r["ok"] === true && try
            call(c, parts[p], "close", OrderedMap("session" => r["session"]); timeout = min(timeout, 5.0))
        catch
        end
    end
    try
        for (p, k) in enumerate(parts)
            f = OrderedMap("num_worlds" => counts[p], "env" => String(env_id),
                           "autoreset" => AUTORESET_NAMES[autoreset], "seed" => base)
            isempty(cfg) || (f["config"] = cfg)
            critic_obs && (f["critic_obs"] = true)
            push!(ids, send_request(c, k, "make", f))
        end
        reps = try
            wait_all(c, ids; check = false)
        catch err
            # e.g. one server timed out: close the sessions the others made, then report
            close_made(Union{Reply,Nothing}[pop!(c.replies, id, nothing) for id in ids])
            throw(err)
        end
        bad = findfirst(r -> r["ok"] !== true, reps)
        if bad !== nothing
            close_made(reps)
            check_reply(c, reps[bad])
        end
        spec, effective, sessions = try
            sids = UInt64[]
            for r in reps
                sid = r["session"]
                (sid isa Integer && !(sid isa Bool) && sid >= 0) || throw(bad_reply("make reply has session $(repr(sid))"))
                push!(sids, UInt64(sid))
            end
            Spec(reps[1]["spec"]), read_config(reps[1]["config"]), sids
        catch
            close_made(reps)
            rethrow()
        end
        od, ad = spec.obs_dim, spec.act_dim
        nt = length(spec.reward_terms)
        N = Int(num_worlds)
        cd = critic_obs ? spec.critic_obs_dim : 0
        nl = isempty(spec.terrain_kinds) ? 0 : N
        return VecEnv(c, String(env_id), N, od, ad, nt, spec, effective, autoreset, reward_terms,
                      parts, sessions, starts, counts, base, fill(true, N),
                      zeros(Float32, od, N), zeros(Float32, N), fill(false, N), fill(false, N), fill(false, N),
                      zeros(Float32, N), zeros(Int32, N), zeros(Float32, nt, N), fill(false, N), fill(false, N),
                      zeros(Float32, od, autoreset == :same_step ? N : 0), fill(false, N),
                      zeros(Float32, nt, reward_terms ? N : 0), fill(true, N), false, cd, zeros(Float32, cd, N),
                      fill(Int32(-1), nl), fill(Int32(-1), nl))
    catch
        close(c)
        rethrow()
    end
end

Base.show(io::IO, e::VecEnv) = print(io, "VecEnv(\"", e.env_id, "\", ", e.num_worlds, " worlds on ",
                                     join(e.client.addresses[e.parts], ", "), ", ", e.autoreset, ")")

addresses(e::VecEnv) = e.client.addresses[e.parts]
observation_bounds(e::VecEnv) = _bounds(e.spec.obs, e.obs_dim)
action_bounds(e::VecEnv) = _bounds(e.spec.act, e.act_dim)
function _bounds(fields::Vector{SpaceField}, dim::Int)
    lo, hi = fill(-Inf32, dim), fill(Inf32, dim)
    for f in fields
        r = f.offset+1:f.offset+f.size
        lo[r] .= Float32(f.low)
        hi[r] .= Float32(f.high)
    end
    return lo, hi
end

_check_open(e::VecEnv) = e.closed && throw(HerdError("TRANSPORT", "the VecEnv is closed", nothing))

# Splits 0-based world ids over the sessions: [(part, local ids, global ids)].
function _split(e::VecEnv, worlds::Vector{Int})
    if length(e.parts) == 1
        return [(1, worlds, worlds)]
    end
    isempty(worlds) && throw(HerdError("BAD_WORLD_IDS", "an empty list of world ids", nothing))
    for w in worlds
        0 <= w < e.num_worlds || throw(HerdError("BAD_WORLD_IDS", "world id $w is out of [0, $(e.num_worlds))", nothing))
    end
    allunique(worlds) || throw(HerdError("BAD_WORLD_IDS", "world ids are repeated", nothing))
    out = Tuple{Int,Vector{Int},Vector{Int}}[]
    for p in eachindex(e.parts)
        g = [w for w in worlds if e.starts[p] <= w < e.starts[p] + e.counts[p]]
        isempty(g) || push!(out, (p, g .- e.starts[p], g))
    end
    return out
end

_seeds(e::VecEnv, seed::Integer, worlds) = [UInt64(mod(Int128(seed) + w, Int128(2)^64)) for w in worlds]
_seeds(e::VecEnv, seed::AbstractVector, worlds) = (length(seed) == e.num_worlds ||
    throw(ArgumentError("seed: $(length(seed)) seeds for $(e.num_worlds) worlds"));
    [UInt64(seed[w+1]) for w in worlds])

"""
    reset_send!(env; seed=nothing, world_ids=nothing) -> Pending

Sends the reset of every world (or of `world_ids`, 0-based) and returns at once; `reset_recv!` collects
it.  `seed`: an integer s (world i gets s + i), a vector of N seeds, or `nothing` (the first reset uses the
VecEnv's seed; later ones continue each world's random stream).
"""
function reset_send!(e::VecEnv; seed = nothing, world_ids = nothing)
    _check_open(e)
    worlds = world_ids === nothing ? nothing : collect(Int, world_ids)
    req = Pending(:reset, worlds, PartRequest[])
    ws = worlds === nothing ? (0:e.num_worlds-1) : worlds
    valid = all(w -> 0 <= w < e.num_worlds, ws) && allunique(ws)    # else the server rejects the request
    if seed === nothing && valid && any(w -> e.unseeded[w+1], ws)
        # A world's first reset starts its stream at the VecEnv's seed (world w: seed + w) wherever the world
        # lives; worlds reset before continue their own streams, so they get no seeds.
        fresh = [w for w in ws if e.unseeded[w+1]]
        if length(fresh) == length(ws)
            _send_reset!(e, req, worlds, e.base_seed)
        else
            old = [w for w in ws if !e.unseeded[w+1]]
            _send_reset!(e, req, fresh, e.base_seed)
            _send_reset!(e, req, old, nothing)
        end
    else
        _send_reset!(e, req, worlds, seed)
    end
    if valid
        for w in ws
            e.unseeded[w+1] = false
        end
    end
    return req
end

# Sends the reset requests of `worlds` (0-based; nothing = all) with `seed` (nothing: no seeds) into req.
function _send_reset!(e::VecEnv, req::Pending, worlds::Union{Nothing,Vector{Int}}, seed)
    if worlds === nothing
        for p in eachindex(e.parts)
            f = OrderedMap("session" => e.sessions[p])
            seed === nothing || (f["seeds"] = Tensor(_seeds(e, seed, e.starts[p]:e.starts[p]+e.counts[p]-1)))
            push!(req.parts, PartRequest(p, send_request(e.client, e.parts[p], "reset", f), nothing))
        end
    else
        for (p, loc, g) in _split(e, worlds)
            f = OrderedMap("session" => e.sessions[p], "world_ids" => Tensor(Int32.(loc)))
            seed === nothing || (f["seeds"] = Tensor(_seeds(e, seed, g)))
            push!(req.parts, PartRequest(p, send_request(e.client, e.parts[p], "reset", f), g))
        end
    end
    nothing
end

"""
    reset!(env; seed=nothing, world_ids=nothing) -> env.obs

Resets every world (or `world_ids`, 0-based) and writes their first observations into `env.obs`.
"""
reset!(e::VecEnv; kw...) = reset_recv!(e, reset_send!(e; kw...))

"Collects a reset sent with reset_send!: fills the columns of its worlds in env.obs; returns env.obs."
function reset_recv!(e::VecEnv, req::Pending; timeout::Real = e.client.timeout)
    reps = wait_all(e.client, UInt64[q.id for q in req.parts]; timeout = timeout)
    for (q, r) in zip(req.parts, reps)
        p, g = q.part, q.worlds
        _copy!(e.obs, r, "obs", e.starts[p], e.counts[p], g, e.obs_dim)
        e.critic_dim > 0 && _copy_critic!(e, r, e.starts[p], e.counts[p], g)
        isempty(e.terrain_level) || _copy_terrain!(e, r, e.starts[p], e.counts[p], g)
        idx = g === nothing ? (e.starts[p]+1:e.starts[p]+e.counts[p]) : (g .+ 1)
        e.ended[idx] .= false
        e.terminated[idx] .= false
        e.truncated[idx] .= false
    end
    return e.obs
end

# Copies tensor `key` (or "info.key") of reply r into dest: rows of the reply -> columns (matrices) or
# entries (vectors) of dest.  cols === nothing: the reply covers the part's contiguous block of `count`
# worlds from `start`; else cols are the 0-based worlds of its rows.
function _copy!(dest::DenseArray, r::Reply, key::String, start::Int, count::Int, cols::Union{Nothing,Vector{Int}}, width::Int)
    t = r[key]
    t isa TensorRef || throw(HerdError("BAD_REPLY", "reply has no tensor \"$key\"", nothing))
    _copy_tensor!(dest, r, t, start, count, cols, width)
end
function _copy_info!(dest::DenseArray, r::Reply, key::String, start::Int, count::Int, cols::Union{Nothing,Vector{Int}}, width::Int)
    info = r["info"]
    info isa OrderedMap || return false
    t = get(info, key, nothing)
    t isa TensorRef || return false
    _copy_tensor!(dest, r, t, start, count, cols, width)
    return true
end
# info.critic_obs of a session made with critic_obs: required (a reply without it is not what was asked for).
_copy_critic!(e::VecEnv, r::Reply, start::Int, count::Int, cols) =
    _copy_info!(e.critic_obs, r, "critic_obs", start, count, cols, e.critic_dim) ||
    throw(HerdError("BAD_REPLY", "reply has no tensor \"info.critic_obs\"", nothing))
# info.terrain_level and info.terrain_kind of a terrain task: required (its replies always carry them).
function _copy_terrain!(e::VecEnv, r::Reply, start::Int, count::Int, cols)
    for (dest, key) in ((e.terrain_level, "terrain_level"), (e.terrain_kind, "terrain_kind"))
        _copy_info!(dest, r, key, start, count, cols, 1) ||
            throw(HerdError("BAD_REPLY", "reply has no tensor \"info.$key\"", nothing))
    end
    nothing
end
function _copy_tensor!(dest::DenseArray{T}, r::Reply, t::TensorRef, start::Int, count::Int,
                       cols::Union{Nothing,Vector{Int}}, width::Int) where {T}
    rows = cols === nothing ? count : length(cols)
    eltype(t) === T || throw(HerdError("BAD_REPLY", "tensor is $(t.dtype), expected $T", nothing))
    length(t) == rows * width ||
        throw(HerdError("BAD_REPLY", "tensor has $(length(t)) elements, expected $(rows * width) ($rows worlds x $width)", nothing))
    msg = r.msg
    if cols === nothing
        copyto_tensor!(dest, msg, t; offset = start * width)     # one memcpy for the whole block
    else
        for w in cols                                           # the server checked them; never write outside dest
            0 <= w && (w + 1) * width <= length(dest) ||
                throw(HerdError("BAD_REPLY", "world $w is outside the buffer", nothing))
        end
        GC.@preserve dest msg begin
            src = Ptr{T}(pointer(msg) + t.offset)
            for (j, w) in enumerate(cols)                     # one memcpy per world (a column)
                unsafe_copyto!(pointer(dest) + w * width * sizeof(T), src + (j - 1) * width * sizeof(T), width)   # Ptr + n: n bytes
            end
        end
    end
    nothing
end

_actions(a::AbstractMatrix{Float32}) = a isa DenseMatrix ? a : Matrix{Float32}(a)
_actions(a::AbstractMatrix{<:AbstractFloat}) = Matrix{Float32}(a)     # Float64 policies: converted
_actions(a::AbstractMatrix) = a isa DenseMatrix ? a : Matrix(a)       # other element types: the server says BAD_DTYPE
_actions(a::AbstractVector) = reshape(_actions(reshape(a, :, 1)), :, 1)

"""
    step_send!(env, actions; world_ids=nothing) -> Pending

Sends a step of every world (actions: act_dim × N), or of `world_ids` (0-based; actions act_dim × k,
column j for world world_ids[j]), and returns at once.  Several steps may be in flight; `step_recv!`
collects one.
"""
function step_send!(e::VecEnv, actions::AbstractVecOrMat; world_ids = nothing)
    _check_open(e)
    a = _actions(actions)
    worlds = world_ids === nothing ? nothing : collect(Int, world_ids)
    n = worlds === nothing ? e.num_worlds : length(worlds)
    if length(e.parts) > 1         # validate before splitting: no server steps alone
        size(a) == (e.act_dim, n) ||
            throw(HerdError("BAD_SHAPE", "actions have size $(size(a)), expected ($(e.act_dim), $n) (act_dim x worlds)", nothing))
        if eltype(a) <: AbstractFloat
            k = findfirst(!isfinite, a)
            k === nothing || throw(HerdError("NON_FINITE", "actions[$(k[1]), $(k[2])] = $(a[k]) is not finite", nothing))
        end
    end
    req = Pending(:step, worlds, PartRequest[])
    if worlds === nothing
        for p in eachindex(e.parts)
            data = length(e.parts) == 1 ? Tensor(a) :
                   Tensor(dtype_name(eltype(a)), [e.counts[p], e.act_dim], column_bytes(a, e.starts[p]+1:e.starts[p]+e.counts[p]))
            f = OrderedMap("session" => e.sessions[p], "actions" => data)
            e.want_terms && (f["reward_terms"] = true)
            push!(req.parts, PartRequest(p, send_request(e.client, e.parts[p], "step", f), nothing))
        end
    else
        pos = Dict(w => j for (j, w) in enumerate(worlds))
        for (p, loc, g) in _split(e, worlds)
            cols = length(e.parts) == 1 ? a : a[:, [pos[w] for w in g]]
            f = OrderedMap("session" => e.sessions[p], "world_ids" => Tensor(Int32.(loc)), "actions" => Tensor(cols))
            e.want_terms && (f["reward_terms"] = true)
            push!(req.parts, PartRequest(p, send_request(e.client, e.parts[p], "step", f), g))
        end
    end
    return req
end

"""
    step!(env, actions; world_ids=nothing) -> (obs, reward, terminated, truncated)

Steps every world (or `world_ids`) and fills the env's buffers (the entries of the stepped worlds).
Returns the buffers themselves (`env.obs` etc.; index them by world for subsets).
"""
step!(e::VecEnv, actions::AbstractVecOrMat; world_ids = nothing) =
    step_recv!(e, step_send!(e, actions; world_ids = world_ids))

"Collects a step sent with step_send! into the buffers; returns (obs, reward, terminated, truncated)."
function step_recv!(e::VecEnv, req::Pending; timeout::Real = e.client.timeout)
    reps = wait_all(e.client, UInt64[q.id for q in req.parts]; timeout = timeout)
    od, nt = e.obs_dim, e.nterms
    for (q, r) in zip(req.parts, reps)
        p, g = q.part, q.worlds
        s, c = e.starts[p], e.counts[p]
        _copy!(e.obs, r, "obs", s, c, g, od)
        _copy!(e.reward, r, "reward", s, c, g, 1)
        _copy!(e.terminated, r, "terminated", s, c, g, 1)
        _copy!(e.truncated, r, "truncated", s, c, g, 1)
        _copy_info!(e.episode_done, r, "episode_done", s, c, g, 1)
        _copy_info!(e.episode_return, r, "episode_return", s, c, g, 1)
        _copy_info!(e.episode_length, r, "episode_length", s, c, g, 1)
        nt > 0 && _copy_info!(e.episode_terms, r, "episode_terms", s, c, g, nt)
        _copy_info!(e.physics_reset, r, "physics_reset", s, c, g, 1)
        e.autoreset == :next_step && _copy_info!(e.autoreset_flag, r, "autoreset", s, c, g, 1)
        if e.autoreset == :same_step
            _copy_info!(e.final_obs, r, "final_obs", s, c, g, od)
            _copy_info!(e.final_mask, r, "_final_obs", s, c, g, 1)
        end
        e.want_terms && nt > 0 && _copy_info!(e.reward_terms, r, "reward_terms", s, c, g, nt)
        e.critic_dim > 0 && _copy_critic!(e, r, s, c, g)
        isempty(e.terrain_level) || _copy_terrain!(e, r, s, c, g)
        idx = g === nothing ? (s+1:s+e.counts[p]) : (g .+ 1)
        for i in idx
            e.ended[i] = (e.terminated[i] | e.truncated[i]) & (e.autoreset == :disabled)
        end
    end
    return e.obs, e.reward, e.terminated, e.truncated
end

"Server statistics of each session: one decoded `stats` reply (an `OrderedMap`) per server."
stats(e::VecEnv) = OrderedMap[call(e.client, e.parts[p], "stats", OrderedMap("session" => e.sessions[p])).body
                              for p in eachindex(e.parts)]

"Closes the sessions (best effort, bounded by min(timeout, 5 s)) and the connections."
function Base.close(e::VecEnv)
    e.closed && return nothing
    e.closed = true
    ids = UInt64[]
    for p in eachindex(e.parts)
        try
            push!(ids, send_request(e.client, e.parts[p], "close", OrderedMap("session" => e.sessions[p])))
        catch
        end
    end
    try
        isempty(ids) || wait_all(e.client, ids; timeout = min(e.client.timeout, 5.0), check = false)
    catch
    end
    close(e.client)
    nothing
end

"""
    VecEnv(f, args...; kw...)

Do-block form: `VecEnv("anymal_c-walk", 64) do env ... end` closes the env at the end.
"""
function VecEnv(f::Function, args...; kw...)
    e = VecEnv(args...; kw...)
    try
        f(e)
    finally
        close(e)
    end
end

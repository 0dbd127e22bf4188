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
           timeout=30.0, config=Dict(), reward_terms=false)

`num_worlds` worlds of task `env_id` (e.g. "anymal_c-walk") on the server(s) at `address` (one endpoint, a
comma-separated string or a vector: the worlds are spread over the servers in contiguous blocks).

* `seed`: world i (0-based) starts its first episode with seed `seed + i` (random when `nothing`); the
  seeds are sent per world, so results do not depend on how worlds are spread.
* `autoreset`: `:next_step` (default), `:same_step` (final observations in `final_obs`) or `:disabled`.
* `config`: overrides of the task's configuration keys (`Dict("target_height" => 0.55)`).
* `reward_terms`: also fetch per-term rewards (`env.reward_terms`, nterms × N).

Buffers (filled by `reset!` / `step!`; column / entry i is world i): `obs` (obs_dim × N), `reward`,
`terminated`, `truncated`, `episode_done`, `episode_return`, `episode_length`, `physics_reset`,
`autoreset_flag` (next_step: the world was reset by this step, its action ignored), `final_obs` and
`final_mask` (same_step).  `spec` is the server's spec, `config` the effective configuration.
"""
mutable struct VecEnv
    client::Client
    env_id::String
    num_worlds::Int
    obs_dim::Int
    act_dim::Int
    nterms::Int
    spec::Dict{String,Any}
    config::Dict{String,Any}
    autoreset::Symbol
    want_terms::Bool
    parts::Vector{Int}          # server index of each session
    sessions::Vector{Any}       # session ids
    starts::Vector{Int}         # first world (0-based) of each session
    counts::Vector{Int}
    base_seed::UInt64
    seed_pending::Bool
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
end

"A request in flight: the kind, the worlds it addresses (0-based; nothing = all) and its parts."
struct Pending
    kind::Symbol
    worlds::Union{Nothing,Vector{Int}}
    parts::Vector{Tuple{Int,UInt64,Union{Nothing,Vector{Int}}}}   # (part, request id, its worlds or nothing = whole part)
end

function VecEnv(env_id::AbstractString, num_worlds::Integer; address = DEFAULT_ADDRESS, seed = nothing,
                autoreset::Symbol = :next_step, timeout::Real = 30.0, config = Dict{String,Any}(),
                reward_terms::Bool = false)
    num_worlds >= 1 || throw(ArgumentError("num_worlds must be >= 1"))
    haskey(AUTORESET_NAMES, autoreset) || throw(ArgumentError("autoreset must be :next_step, :same_step or :disabled"))
    c = Client(address; timeout = timeout)
    S = nservers(c)
    counts_all = [num_worlds ÷ S + (k <= num_worlds % S ? 1 : 0) for k in 1:S]
    parts = [k for k in 1:S if counts_all[k] > 0]
    counts = counts_all[parts]
    starts = cumsum([0; counts[1:end-1]])
    base = seed === nothing ? rand(UInt64) >> 1 : UInt64(mod(Int128(seed), Int128(2)^64))
    fields = OrderedMap(["env" => String(env_id), "autoreset" => AUTORESET_NAMES[autoreset], "seed" => base])
    isempty(config) || push!(fields, "config" => OrderedMap([String(string(k)) => Float64(v) for (k, v) in config]))
    ids = UInt64[]
    try
        for (p, k) in enumerate(parts)
            f = OrderedMap(["num_worlds" => counts[p]])
            append!(f, fields)
            push!(ids, send_request(c, k, "make", f))
        end
        reps = try
            wait_all(c, ids; check = false)
        catch err
            # e.g. one server timed out: close the sessions the others made, then report
            for (p, id) in enumerate(ids)
                r = pop!(c.replies, id, nothing)
                r !== nothing && r["ok"] === true && try
                    call(c, parts[p], "close", OrderedMap(["session" => r["session"]]); timeout = min(timeout, 5.0))
                catch
                end
            end
            throw(err)
        end
        bad = findfirst(r -> r["ok"] !== true, reps)
        if bad !== nothing
            for (p, r) in enumerate(reps)      # close the sessions that were made
                r["ok"] === true && try
                    call(c, parts[p], "close", OrderedMap(["session" => r["session"]]); timeout = min(timeout, 5.0))
                catch
                end
            end
            check_reply(c, reps[bad])
        end
        spec = plain(reps[1]["spec"])
        od, ad = Int(spec["obs_dim"]), Int(spec["act_dim"])
        nt = length(spec["reward_terms"])
        N = Int(num_worlds)
        return VecEnv(c, String(env_id), N, od, ad, nt, spec, plain(reps[1]["config"]), autoreset, reward_terms,
                      parts, Any[r["session"] for r in reps], starts, counts, base, true,
                      zeros(Float32, od, N), zeros(Float32, N), fill(false, N), fill(false, N), fill(false, N),
                      zeros(Float32, N), zeros(Int32, N), zeros(Float32, nt, N), fill(false, N), fill(false, N),
                      zeros(Float32, od, autoreset == :same_step ? N : 0), fill(false, N),
                      zeros(Float32, nt, reward_terms ? N : 0), fill(true, N), false)
    catch
        close(c)
        rethrow()
    end
end

Base.show(io::IO, e::VecEnv) = print(io, "VecEnv(\"", e.env_id, "\", ", e.num_worlds, " worlds on ",
                                     join(e.client.addresses[e.parts], ", "), ", ", e.autoreset, ")")

addresses(e::VecEnv) = e.client.addresses[e.parts]
observation_bounds(e::VecEnv) = _bounds(e.spec["obs"], e.obs_dim)
action_bounds(e::VecEnv) = _bounds(e.spec["act"], e.act_dim)
function _bounds(fields, dim)
    lo, hi = fill(-Inf32, dim), fill(Inf32, dim)
    for f in fields
        r = Int(f["offset"])+1:Int(f["offset"])+Int(f["size"])
        lo[r] .= Float32(f["low"])
        hi[r] .= Float32(f["high"])
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
    if seed === nothing && e.seed_pending
        seed = e.base_seed
    end
    worlds === nothing && seed !== nothing && (e.seed_pending = false)
    req = Pending(:reset, worlds, Tuple{Int,UInt64,Union{Nothing,Vector{Int}}}[])
    if worlds === nothing
        for p in eachindex(e.parts)
            f = OrderedMap(["session" => e.sessions[p]])
            seed === nothing || push!(f, "seeds" => Tensor(_seeds(e, seed, e.starts[p]:e.starts[p]+e.counts[p]-1)))
            push!(req.parts, (p, send_request(e.client, e.parts[p], "reset", f), nothing))
        end
    else
        for (p, loc, g) in _split(e, worlds)
            f = OrderedMap(["session" => e.sessions[p], "world_ids" => Tensor(Int32.(loc))])
            seed === nothing || push!(f, "seeds" => Tensor(_seeds(e, seed, g)))
            push!(req.parts, (p, send_request(e.client, e.parts[p], "reset", f), g))
        end
    end
    return req
end

"""
    reset!(env; seed=nothing, world_ids=nothing) -> env.obs

Resets every world (or `world_ids`, 0-based) and writes their first observations into `env.obs`.
"""
reset!(e::VecEnv; kw...) = reset_recv!(e, reset_send!(e; kw...))

"Collects a reset sent with reset_send!: fills the columns of its worlds in env.obs; returns env.obs."
function reset_recv!(e::VecEnv, req::Pending; timeout::Real = e.client.timeout)
    reps = wait_all(e.client, [id for (_, id, _) in req.parts]; timeout = timeout)
    for ((p, _, g), r) in zip(req.parts, reps)
        cols = g === nothing ? nothing : g
        _copy!(e.obs, r, "obs", e.starts[p], cols, e.obs_dim)
        idx = g === nothing ? (e.starts[p]+1:e.starts[p]+e.counts[p]) : (g .+ 1)
        e.ended[idx] .= false
        e.terminated[idx] .= false
        e.truncated[idx] .= false
    end
    return e.obs
end

# Copies tensor `key` (or "info.key") of reply r into dest: rows of the reply -> columns (matrices) or
# entries (vectors) of dest.  cols === nothing: the reply covers the part's contiguous block from `start`.
function _copy!(dest::DenseArray{T}, r::Reply, key::String, start::Int, cols, width::Int) where {T}
    t = r[key]
    t isa TensorRef || throw(HerdError("BAD_REPLY", "reply has no tensor \"$key\"", nothing))
    _copy_tensor!(dest, r, t, start, cols, width)
end
function _copy_info!(dest::DenseArray{T}, r::Reply, key::String, start::Int, cols, width::Int) where {T}
    info = r["info"]
    info isa OrderedMap || return false
    t = mapget(info, key)
    t isa TensorRef || return false
    _copy_tensor!(dest, r, t, start, cols, width)
    return true
end
function _copy_tensor!(dest::DenseArray{T}, r::Reply, t::TensorRef, start::Int, cols, width::Int) where {T}
    msg = r.msg
    if cols === nothing
        copyto_tensor!(dest, msg, t; offset = start * width)     # one memcpy for the whole block
    else
        eltype(t) === T || throw(HerdError("BAD_REPLY", "tensor is $(t.dtype), expected $T", nothing))
        length(t) == length(cols) * width || throw(HerdError("BAD_REPLY", "tensor has $(length(t)) elements, expected $(length(cols) * width)", nothing))
        GC.@preserve dest msg begin
            src = Ptr{T}(pointer(msg) + t.offset)
            for (j, w) in enumerate(cols)                     # one memcpy per world (a column)
                unsafe_copyto!(pointer(dest) + w * width * sizeof(T), src + (j - 1) * width * sizeof(T), width)
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
    req = Pending(:step, worlds, Tuple{Int,UInt64,Union{Nothing,Vector{Int}}}[])
    if worlds === nothing
        for p in eachindex(e.parts)
            data = length(e.parts) == 1 ? Tensor(a) :
                   Tensor(dtype_name(eltype(a)), [e.counts[p], e.act_dim], column_bytes(a, e.starts[p]+1:e.starts[p]+e.counts[p]))
            f = OrderedMap(["session" => e.sessions[p], "actions" => data])
            e.want_terms && push!(f, "reward_terms" => true)
            push!(req.parts, (p, send_request(e.client, e.parts[p], "step", f), nothing))
        end
    else
        pos = Dict(w => j for (j, w) in enumerate(worlds))
        for (p, loc, g) in _split(e, worlds)
            cols = length(e.parts) == 1 ? a : a[:, [pos[w] for w in g]]
            f = OrderedMap(["session" => e.sessions[p], "world_ids" => Tensor(Int32.(loc)), "actions" => Tensor(cols)])
            e.want_terms && push!(f, "reward_terms" => true)
            push!(req.parts, (p, send_request(e.client, e.parts[p], "step", f), g))
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
    reps = wait_all(e.client, [id for (_, id, _) in req.parts]; timeout = timeout)
    od, nt = e.obs_dim, e.nterms
    for ((p, _, g), r) in zip(req.parts, reps)
        s = e.starts[p]
        _copy!(e.obs, r, "obs", s, g, od)
        _copy!(e.reward, r, "reward", s, g, 1)
        _copy!(e.terminated, r, "terminated", s, g, 1)
        _copy!(e.truncated, r, "truncated", s, g, 1)
        _copy_info!(e.episode_done, r, "episode_done", s, g, 1)
        _copy_info!(e.episode_return, r, "episode_return", s, g, 1)
        _copy_info!(e.episode_length, r, "episode_length", s, g, 1)
        nt > 0 && _copy_info!(e.episode_terms, r, "episode_terms", s, g, nt)
        _copy_info!(e.physics_reset, r, "physics_reset", s, g, 1)
        e.autoreset == :next_step && _copy_info!(e.autoreset_flag, r, "autoreset", s, g, 1)
        if e.autoreset == :same_step
            _copy_info!(e.final_obs, r, "final_obs", s, g, od)
            _copy_info!(e.final_mask, r, "_final_obs", s, g, 1)
        end
        e.want_terms && nt > 0 && _copy_info!(e.reward_terms, r, "reward_terms", s, g, nt)
        idx = g === nothing ? (s+1:s+e.counts[p]) : (g .+ 1)
        for i in idx
            e.ended[i] = (e.terminated[i] | e.truncated[i]) & (e.autoreset == :disabled)
        end
    end
    return e.obs, e.reward, e.terminated, e.truncated
end

"Server statistics of each session (plain Dicts)."
stats(e::VecEnv) = [plain(call(e.client, e.parts[p], "stats", OrderedMap(["session" => e.sessions[p]])).body)
                    for p in eachindex(e.parts)]

"Closes the sessions (best effort, bounded by min(timeout, 5 s)) and the connections."
function Base.close(e::VecEnv)
    e.closed && return nothing
    e.closed = true
    ids = UInt64[]
    for p in eachindex(e.parts)
        try
            push!(ids, send_request(e.client, e.parts[p], "close", OrderedMap(["session" => e.sessions[p]])))
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

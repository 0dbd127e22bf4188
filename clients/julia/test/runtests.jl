# Tests of the Julia client.
#
#   julia --project=clients/julia -e 'using Pkg; Pkg.test()'        (tests/run-jl-tests.sh does this)
#
# 1. The golden vectors of protocol/testdata (PROTOCOL.md section 11): decode every request / reply and
#    compare with its JSON, cross-check with MsgPack.jl's own decoder, re-encode every canonical request
#    byte for byte, decode replies' tensors with the zero-copy path.
# 2. Against real servers (build/herd-server or $HERD_SERVER_BIN), when the binary exists: VecEnv API,
#    seeding, subsets, autoreset modes, several servers, error codes, timeouts, CommonRLInterface views.

using Test
using Herd
import Herd: OrderedMap, BinRef, TensorRef, Tensor, decode, encode
import CommonRLInterface as CRL
import JSON
import MsgPack
import Sockets
using OrderedCollections: OrderedDict

const ROOT = normpath(joinpath(@__DIR__, "..", "..", ".."))
const TESTDATA = joinpath(ROOT, "protocol", "testdata")

# The golden JSON: objects in key order, Python's Infinity / -Infinity / NaN allowed (PROTOCOL.md 11).
read_json(path) = JSON.parsefile(path; dicttype = OrderedDict{String,Any}, allownan = true)
const INDEX = read_json(joinpath(TESTDATA, "index.json"))

load_bytes(name) = read(joinpath(TESTDATA, name * ".msgpack"))
load_json(name) = read_json(joinpath(TESTDATA, name * ".json"))

# decoded (tensors=false) -> the JSON form: bins as {"$bin": hex}
readable(x, bytes) = x
readable(b::BinRef, bytes) = OrderedMap("\$bin" => bytes2hex(bytes[b.offset+1:b.offset+b.len]))
readable(m::OrderedMap, bytes) = OrderedMap(k => readable(v, bytes) for (k, v) in m)
readable(v::Vector{Any}, bytes) = Any[readable(x, bytes) for x in v]

# JSON numbers as the decoder gives them: JSON.jl reads integers beyond Int64 (uint64 ids, seeds) as
# BigInt, and may read floats as BigFloat.
json_number(x) = x
json_number(x::Integer) = x isa Bool ? x : typemin(Int64) <= x <= typemax(Int64) ? Int64(x) : UInt64(x)
json_number(x::AbstractFloat) = Float64(x)

# JSON content -> objects to encode
function from_json(x)
    if x isa AbstractDict
        ks = collect(keys(x))
        if ks == ["\$bin"]
            return Herd.Bin(hex2bytes(x["\$bin"]))
        elseif Set(ks) == Set(["dtype", "shape", "data"]) && x["data"] isa AbstractDict
            return Tensor(x["dtype"], Int[s for s in x["shape"]], hex2bytes(x["data"]["\$bin"]))
        end
        return OrderedMap(String(k) => from_json(v) for (k, v) in x)
    elseif x isa AbstractVector
        return Any[from_json(v) for v in x]
    end
    return json_number(x)
end

# Deep equality with key order, ints vs floats distinguished, NaN == NaN.
same(a, b) = false
same(a::AbstractDict, b::AbstractDict) = length(a) == length(b) && collect(keys(a)) == collect(keys(b)) &&
                                         all(same(a[k], b[k]) for k in keys(a))
same(a::AbstractVector, b::AbstractVector) = length(a) == length(b) && all(same(x, y) for (x, y) in zip(a, b))
same(a::AbstractString, b::AbstractString) = a == b
same(a::Bool, b::Bool) = a == b
same(a::Nothing, b::Nothing) = true
same(a::Integer, b::Integer) = !(a isa Bool) && !(b isa Bool) && a == b
same(a::AbstractFloat, b::AbstractFloat) = isequal(Float64(a), Float64(b))

# MsgPack.jl's view (Dict, bins as Vector{UInt8}) against ours
stock(x, bytes) = x
stock(b::BinRef, bytes) = bytes[b.offset+1:b.offset+b.len]
stock(m::OrderedMap, bytes) = Dict{Any,Any}(k => stock(v, bytes) for (k, v) in m)
stock(v::Vector{Any}, bytes) = Any[stock(x, bytes) for x in v]
loose(a, b) = isequal(a, b) || (a isa Number && b isa Number && !(a isa Bool) && !(b isa Bool) && a == b)
loose(a::AbstractDict, b::AbstractDict) = length(a) == length(b) && all(haskey(b, k) && loose(v, b[k]) for (k, v) in a)
loose(a::AbstractVector, b::AbstractVector) = length(a) == length(b) && all(loose(x, y) for (x, y) in zip(a, b))

@testset "Herd" begin

@testset "golden vectors" begin
    good = [v for v in INDEX if v["kind"] in ("request", "reply")]
    bad = [v for v in INDEX if v["kind"] == "bad_request"]
    @test length(good) >= 20
    @test length(bad) >= 10
    for v in good
        name = v["name"]
        bytes = load_bytes(name)
        j = load_json(name)
        d = decode(bytes; tensors = false)
        @test same(readable(d, bytes), j)
        # MsgPack.jl decodes the same content (the stock-library check of PROTOCOL.md section 2)
        @test loose(stock(d, bytes), MsgPack.unpack(bytes))
        if v["canonical"] === true
            @test encode(from_json(j)) == bytes
        end
        if v["kind"] == "reply"
            t = decode(bytes)
            for (k, x) in t
                x isa OrderedMap && k == "info" || x isa TensorRef || continue
                for (k2, y) in (x isa OrderedMap ? x : [k => x])
                    y isa TensorRef || continue
                    @test y.offset % 8 == 0                      # aligned for in-place use
                    T = eltype(y)
                    dest = zeros(T, Herd.julia_size(y)...)
                    Herd.copyto_tensor!(dest, bytes, y)
                    @test reinterpret(UInt8, vec(dest)) == bytes[y.offset+1:y.offset+y.nbytes]
                    @test Herd.tensor_view(bytes, y) == dest
                end
            end
        end
    end
    for v in bad
        name = v["name"]
        j = load_json(name)
        @test Set(keys(j)) == Set(["expect_error", "expect_id"])
        if name in ("bad_truncated", "bad_trailing")
            @test_throws Herd.DecodeError decode(load_bytes(name))
        end
    end
    # a step reply read the way VecEnv reads it
    b = load_bytes("rep_step_same")
    r = decode(b)
    obs = zeros(Float32, 3, 2)
    Herd.copyto_tensor!(obs, b, r["obs"])
    @test obs[:, 1] == Float32[2.0, 1.75, 1.5]          # world 0 = column 1
    info = r["info"]
    fo = zeros(Float32, 3, 2)
    Herd.copyto_tensor!(fo, b, info["final_obs"])
    @test fo[:, 1] == Float32[3.0, 3.5, 4.0]
    mask = fill(true, 2)
    Herd.copyto_tensor!(mask, b, info["_final_obs"])
    @test mask == [true, false]
    len = zeros(Int32, 2)
    Herd.copyto_tensor!(len, b, info["episode_length"])
    @test len == Int32[1000, 0]
end

@testset "codec" begin
    # column-major actions are the row-major [n, act_dim] tensor
    a = Float32[1 2; 3 4; 5 6]                 # act_dim 3 x 2 worlds
    t = Tensor(a)
    @test t.shape == [2, 3] && t.dtype == "float32"
    bytes = encode(OrderedMap("actions" => t))
    r = decode(bytes)
    tr = r["actions"]
    @test tr.shape == [2, 3] && tr.offset % 8 == 0
    @test Herd.tensor_view(bytes, tr) == a
    @test reinterpret(Float32, bytes[tr.offset+1:tr.offset+tr.nbytes]) == Float32[1, 3, 5, 2, 4, 6]
    # every alignment of the surrounding message
    for pre in 0:7
        m = OrderedMap(repeat("k", pre + 1) => 1, "t" => Tensor(collect(Int32(1):Int32(5))))
        b = encode(m)
        tt = decode(b)["t"]
        @test tt.offset % 8 == 0
        @test Herd.tensor_view(b, tt) == Int32[1, 2, 3, 4, 5]
        @test loose(MsgPack.unpack(b)["t"]["shape"], [5])
    end
    # scalars: minimal forms, as msgpack does
    for x in (0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2^32, typemax(Int64), typemax(UInt64),
              typemin(Int64), 1.25, "", "x"^31, "y"^32, "z"^70000, true, false, nothing)
        @test encode(x) == MsgPack.pack(x)
        @test loose(decode(encode(x)), x) || (x === nothing && decode(encode(x)) === nothing)
    end
    @test_throws Herd.DecodeError decode(UInt8[0x82, 0xa1, 0x61])
    @test_throws Herd.DecodeError decode(UInt8[0xc1])
    @test_throws Herd.DecodeError decode(vcat(fill(0x91, 100), 0xc0))
    # non-minimal forms are accepted
    b = UInt8[0x83, 0xd9, 0x01, UInt8('a'), 0xca, reinterpret(UInt8, [hton(1.5f0)])...,
              0xda, 0x00, 0x01, UInt8('b'), 0xd3, reinterpret(UInt8, [hton(Int64(7))])...,
              0xa1, UInt8('c'), 0xc5, 0x00, 0x02, 0x01, 0x02]
    d = decode(b)
    @test d["a"] == 1.5 && d["b"] == 7
    @test Herd.bin_bytes(b, d["c"]) == UInt8[1, 2]
    # maps keep the key order they were built / received in (OrderedDict), so requests encode in order
    keys_in = ["op", "v", "zeta", "id", "alpha"]
    m = OrderedMap(k => i for (i, k) in enumerate(keys_in))
    mb = encode(m)
    @test collect(keys(decode(mb))) == keys_in
    @test mb == UInt8[0x85, 0xa2, b"op"..., 0x01, 0xa1, b"v"..., 0x02, 0xa4, b"zeta"..., 0x03,
                      0xa2, b"id"..., 0x04, 0xa5, b"alpha"..., 0x05]
    # replies: non-string and repeated keys are refused (PROTOCOL.md section 2)
    @test_throws Herd.DecodeError decode(UInt8[0x81, 0x01, 0x02])
    @test_throws Herd.DecodeError decode(UInt8[0x82, 0xa1, UInt8('a'), 0x01, 0xa1, UInt8('a'), 0x02])
    # a request is v, id, op, then the caller's fields: those three cannot be overridden
    c = Herd.Client("tcp://127.0.0.1:1"; timeout = 0.1)
    try
        @test_throws ArgumentError Herd.send_request(c, 1, "ping", OrderedMap("id" => 5))
    finally
        close(c)
    end
end

@testset "spec" begin
    b = load_bytes("rep_make")
    d = decode(b)
    s = Herd.Spec(d["spec"])
    @test s.name == "toy-v0" && s["name"] == "toy-v0"
    @test s.obs_dim == 3 && s.act_dim == 1 && s.decimation == 4 && s.max_episode_steps == 1000
    @test [f.name for f in s.obs] == ["pos", "vel"] && s.obs[1].low == -Inf && s.obs[2].high == 10.0
    @test s.obs[2].offset == 2 && s.obs[2].size == 1 && s.obs[2].unit == "m/s"
    @test s.act[1].scale == 20.0
    @test s.sim_dt == 0.005 && s.control_dt == 0.02 && s.episode_seconds == 20.0
    @test [k.key for k in s.config] == ["kp", "decimation", "solver"] && s.config[2].is_int && !s.config[1].is_int
    @test isempty(s.config[1].choices) && s.config[3].choices == ["fast", "exact", "robust"]
    @test s.reward_terms == ["alive", "effort"] && s.reward_terms isa Vector{String}
    lo, hi = Herd._bounds(s.obs, s.obs_dim)
    @test lo == Float32[-Inf, -Inf, -10] && hi == Float32[Inf, Inf, 10]
    cfg = Herd.read_config(d["config"])
    @test cfg isa OrderedDict{String,Float64} && collect(cfg) == ["kp" => 60.0, "decimation" => 2.0, "solver" => 2.0]
    @test Herd.config_names(s, cfg) == Dict("solver" => "robust")
    @test Herd.config_value("admm") == "admm" && Herd.config_value(:pgs) == "pgs" && Herd.config_value(2) === 2.0
    # every spec of hello's list reads too
    h = decode(load_bytes("rep_hello"))
    @test all(x -> Herd.Spec(x) isa Herd.Spec, h["envs"])
    # a spec the client cannot use is a BAD_REPLY, not a MethodError later on
    bad_code(f) = try
        f(); "none"
    catch e
        e isa HerdError ? e.code : rethrow()
    end
    broken = copy(d["spec"]); delete!(broken, "obs_dim")
    @test bad_code(() -> Herd.Spec(broken)) == "BAD_REPLY"
    broken = copy(d["spec"]); broken["act_dim"] = "one"
    @test bad_code(() -> Herd.Spec(broken)) == "BAD_REPLY"
    broken = copy(d["spec"]); broken["obs_dim"] = 2       # field "vel" [2, 3) does not fit
    @test bad_code(() -> Herd.Spec(broken)) == "BAD_REPLY"
    @test bad_code(() -> Herd.read_config(OrderedMap("kp" => "x"))) == "BAD_REPLY"
    # the critic observation (minor 4): none in the toy spec above, listed after reward_terms in rep_make_critic's
    @test s.critic_obs_dim == 0 && isempty(s.critic_obs)
    dc = decode(load_bytes("rep_make_critic"))
    @test dc["critic_obs"] === true
    sc = Herd.Spec(dc["spec"])
    @test sc.critic_obs_dim == 5 && [f.name for f in sc.critic_obs] == ["pos", "vel", "friction", "foot_contact"]
    @test sc.critic_obs[3].offset == 3 && sc.critic_obs[3].low == 0.5 && sc.critic_obs[3].high == 1.25
    broken = copy(dc["spec"]); broken["critic_obs_dim"] = 4     # field "foot_contact" [4, 5) does not fit
    @test bad_code(() -> Herd.Spec(broken)) == "BAD_REPLY"
    # the terrain kinds (minor 5): none in a flat spec, the last key of rep_make_terrain's
    @test isempty(s.terrain_kinds) && s.terrain_kinds isa Vector{String}
    st = Herd.Spec(decode(load_bytes("rep_make_terrain"))["spec"])
    @test st.terrain_kinds == ["slope_up", "stairs_down", "obstacles"]
    broken = copy(decode(load_bytes("rep_make_terrain"))["spec"]); broken["terrain_kinds"] = [1, 2]
    @test bad_code(() -> Herd.Spec(broken)) == "BAD_REPLY"
end

@testset "spaces" begin
    s = BoxSpace(Float32[-1, -Inf32], Float32[1, Inf32])
    x = rand(s)
    @test length(x) == 2 && eltype(x) == Float32 && -1 <= x[1] <= 1
    @test x in s
    @test !(Float32[2, 0] in s)
    @test !(Float32[0, 0, 0] in s)
end

# ---- against real servers --------------------------------------------------------------------------

const SERVER_BIN = get(ENV, "HERD_SERVER_BIN", joinpath(ROOT, "build", "herd-server"))

function free_port()
    port, srv = Sockets.listenany(Sockets.ip"127.0.0.1", 20000 + rand(0:20000))
    close(srv)
    return Int(port)
end

function start_server(; extra = String[])
    for attempt in 1:5
        ep = "tcp://127.0.0.1:$(free_port())"
        proc = run(pipeline(`$SERVER_BIN --bind $ep --threads 2 --log-level warn --stats-interval 0 $extra`;
                            stdout = devnull, stderr = devnull); wait = false)
        deadline = time() + 20
        while time() < deadline && process_running(proc)
            try
                c = Client(ep; timeout = 0.3)
                try
                    Herd.ping(c)
                    return ep, proc
                finally
                    close(c)
                end
            catch e
                e isa HerdError || rethrow()
                sleep(0.05)
            end
        end
        process_running(proc) && kill(proc)
    end
    error("could not start herd-server")
end

acts(n, k; ad = 12) = (x = Float32[sin(0.37 * (i + 13 * j + 101 * k)) for i in 1:ad, j in 1:n]; x)

if !isfile(SERVER_BIN)
    @info "SKIPPED: server tests ($SERVER_BIN not built; run `make` first)"
else
    ep, proc = start_server()
    ep2, proc2 = start_server()
    try
        @testset "VecEnv API" begin
            VecEnv("anymal_c-walk", 8; address = ep, seed = 3) do env
                @test env.num_worlds == 8 && env.obs_dim == 48 && env.act_dim == 12
                @test size(env.obs) == (48, 8)
                @test env.spec.name == "anymal_c-walk" && env.spec["name"] == "anymal_c-walk"
                @test env.spec isa Herd.Spec && length(env.spec.act) >= 1
                @test env.config isa OrderedDict{String,Float64} && env.config["kp"] == 80.0
                @test env.sessions isa Vector{UInt64}
                obs = reset!(env)
                @test obs === env.obs
                @test any(!iszero, obs)
                o, r, te, tr = step!(env, acts(8, 0))
                @test o === env.obs && length(r) == 8 && eltype(te) == Bool
                st = Herd.stats(env)[1]
                @test st["session"]["num_worlds"] == 8 && st["session"]["steps"] == 8
                @test Herd.action_space(env) isa BoxSpace
                # Float64 actions are converted
                step!(env, zeros(12, 8))
            end
        end

        @testset "seeding" begin
            run_(seed, steps; address = ep, n = 6) = VecEnv("anymal_c-walk", n; address = address, seed = seed) do env
                out = [copy(reset!(env))]
                for k in 1:steps
                    step!(env, acts(n, k))
                    push!(out, vcat(copy(env.obs), env.reward', Float32.(env.terminated)'))
                end
                out
            end
            a, b = run_(42, 8), run_(42, 8)
            @test all(a .== b)
            @test run_(43, 0)[1] != a[1]
            # world i of seed s is world 0 of seed s + i
            firstobs = run_(100, 0; n = 4)[1]
            for i in 0:3
                @test run_(100 + i, 0; n = 1)[1][:, 1] == firstobs[:, i+1]
            end
            # spread over two servers: identical to one server
            @test all(run_(42, 8; address = [ep, ep2]) .== a)
            @test all(run_(42, 8; address = "$ep,$ep2", n = 6) .== a)
            # a world's first reset uses the VecEnv's seed even when it is a subset reset; later resets
            # continue the world's stream (they do not restart the same episode)
            VecEnv("anymal_c-walk", 3; address = [ep, ep2], seed = 7) do e3
                first_ = run_(7, 0; n = 3)[1]
                reset!(e3; world_ids = [1])
                @test e3.obs[:, 2] == first_[:, 2]
                reset!(e3)                      # worlds 0 and 2: first reset; world 1: its second episode
                @test e3.obs[:, [1, 3]] == first_[:, [1, 3]]
                @test e3.obs[:, 2] != first_[:, 2]
                prev = copy(e3.obs)
                reset!(e3)                      # every world moves on to a new episode
                @test all(e3.obs[:, i] != prev[:, i] && e3.obs[:, i] != first_[:, i] for i in 1:3)
            end
        end

        @testset "critic observation" begin
            cfg = Dict("obs_noise" => 0.0)
            VecEnv("anymal_c-walk", 4; address = [ep, ep2], seed = 3, critic_obs = true, config = cfg) do env
                @test env.critic_dim == 56 && size(env.critic_obs) == (56, 4)
                @test env.spec.critic_obs_dim == 56 && env.spec.critic_obs[9].name == "friction"
                reset!(env)
                @test env.critic_obs[1:48, :] == env.obs        # no noise: the proprioception is the obs
                step!(env, acts(4, 1))
                @test env.critic_obs[1:48, :] == env.obs
                before = copy(env.critic_obs)
                step!(env, acts(4, 2)[:, [4, 1]]; world_ids = [3, 0])
                @test env.critic_obs[1:48, [4, 1]] == env.obs[:, [4, 1]]
                @test env.critic_obs[:, [2, 3]] == before[:, [2, 3]]     # the other worlds' columns are kept
                @test all(x -> x == 0 || x == 1, env.critic_obs[51:54, :])
            end
            VecEnv("anymal_c-walk", 2; address = ep) do env
                @test env.critic_dim == 0 && size(env.critic_obs) == (0, 2)
            end
            e = try
                VecEnv("paper-trot", 1; address = ep, critic_obs = true); nothing
            catch err
                err
            end
            @test e isa HerdError && e.code == "BAD_FIELD" && occursin("critic_obs", e.message)
        end

        @testset "terrain levels" begin
            kinds = ["slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"]
            VecEnv("anymal_c-rough", 4; address = [ep, ep2], seed = 3, critic_obs = true,
                   config = Dict("episode_seconds" => 0.1)) do env
                @test env.spec.terrain_kinds == kinds
                @test env.terrain_level == fill(Int32(-1), 4) && length(env.terrain_kind) == 4
                reset!(env)
                @test all(0 .<= env.terrain_level .<= 5) && all(0 .<= env.terrain_kind .< 6)
                @test env.terrain_level == Int32.(env.critic_obs[end, :])     # the critic's terrain_level
                first_kind = copy(env.terrain_kind)
                for k in 1:7
                    step!(env, acts(4, k))
                    @test env.terrain_level == Int32.(env.critic_obs[end, :])
                    @test env.terrain_kind == first_kind
                end
                before = copy(env.terrain_level)
                step!(env, acts(4, 9)[:, [2]]; world_ids = [1])
                @test env.terrain_level[[1, 3, 4]] == before[[1, 3, 4]]
                @test env.terrain_level[2] == Int32(env.critic_obs[end, 2])
            end
            VecEnv("anymal_c-walk", 2; address = ep) do env
                @test isempty(env.spec.terrain_kinds) && isempty(env.terrain_level)
                reset!(env)
                step!(env, acts(2, 1))
                @test isempty(env.terrain_level)
            end
        end

        @testset "subsets and pipelining" begin
            VecEnv("anymal_c-walk", 8; address = ep, seed = 9) do full
                VecEnv("anymal_c-walk", 8; address = [ep, ep2], seed = 9) do sub
                    reset!(full)
                    reset!(sub)
                    for k in 1:3
                        a = acts(8, k)
                        step!(full, a)
                        ids1, ids2 = [5, 0, 2, 7], [1, 3, 4, 6]
                        r1 = step_send!(sub, a[:, ids1 .+ 1]; world_ids = ids1)
                        r2 = step_send!(sub, a[:, ids2 .+ 1]; world_ids = ids2)
                        step_recv!(sub, r2)
                        step_recv!(sub, r1)
                        @test sub.obs == full.obs
                        @test sub.reward == full.reward
                    end
                end
            end
        end

        @testset "autoreset" begin
            cfg = Dict("episode_seconds" => 0.1, "obs_noise" => 0.0)
            VecEnv("anymal_c-stand", 3; address = ep, seed = 11, autoreset = :next_step, config = cfg) do nx
                VecEnv("anymal_c-stand", 3; address = ep, seed = 11, autoreset = :same_step, config = cfg) do ss
                    reset!(nx)
                    reset!(ss)
                    for k in 1:4
                        step!(nx, acts(3, k))
                        step!(ss, acts(3, k))
                        @test nx.obs == ss.obs
                        @test !any(nx.truncated)
                    end
                    step!(nx, acts(3, 5))
                    step!(ss, acts(3, 5))
                    @test all(nx.truncated) && all(ss.truncated)
                    @test all(nx.episode_done) && nx.episode_length == Int32[5, 5, 5]
                    @test all(ss.final_mask) && ss.final_obs == nx.obs
                    step!(nx, acts(3, 6))
                    @test all(nx.autoreset_flag) && all(iszero, nx.reward)
                    @test nx.obs == ss.obs
                end
            end
            VecEnv("anymal_c-stand", 2; address = ep, seed = 1, autoreset = :disabled, config = cfg) do d
                reset!(d)
                for k in 1:5
                    step!(d, acts(2, k))
                end
                err = try
                    step!(d, acts(2, 6)); nothing
                catch e
                    e
                end
                @test err isa HerdError && err.code == "EPISODE_ENDED"
                reset!(d; world_ids = [0, 1])
                step!(d, acts(2, 7))
            end
        end

        @testset "owned sessions" begin
            # the hijack attempt: a second client acting on the first one's session (id, id - 1, id + 1)
            a, b = Client(ep; timeout = 10), Client(ep; timeout = 10)
            try
                r = Herd.call(a, 1, "make", OrderedMap("env" => "anymal_c-walk", "num_worlds" => 2))
                sid = UInt64(r["session"])
                @test Herd.token(a, sid) isa Vector{UInt8} && length(Herd.token(a, sid)) == 16
                Herd.call(a, 1, "reset", OrderedMap("session" => sid))      # the token goes along by itself
                for target in (sid, sid - 1, sid + 1), op in ("close", "stats", "reset")
                    e = try
                        Herd.call(b, 1, op, OrderedMap("session" => target)); nothing
                    catch err
                        err
                    end
                    @test e isa HerdError && e.code == "UNKNOWN_SESSION"
                end
                st = Herd.call(a, 1, "stats", OrderedMap("session" => sid))
                @test st["session"]["requests"] >= 2
                Herd.call(a, 1, "close", OrderedMap("session" => sid))
                @test Herd.token(a, sid) === nothing
            finally
                close(a)
                close(b)
            end
        end

        @testset "CURVE" begin
            # PROTOCOL.md section 1: a server with a key pair answers the authorized client
            # keys only; the keys may be given as key files (herd-server --keygen) or as Z85 strings
            keys = joinpath(mktempdir(), "k")
            run(pipeline(Cmd([SERVER_BIN, "--keygen", keys]); stdout = devnull))
            pub, sec = joinpath(keys, "server.pub"), joinpath(keys, "client.key")
            cep = "tcp://127.0.0.1:$(free_port())"
            cproc = run(pipeline(Cmd([SERVER_BIN, "--bind", cep, "--threads", "1", "--log-level", "warn",
                                      "--stats-interval", "0",
                                      "--curve-secret-key-file", joinpath(keys, "server.key"),
                                      "--authorized-keys", joinpath(keys, "authorized_keys")]);
                                 stdout = devnull, stderr = devnull); wait = false)
            try
                up = false
                deadline = time() + 20
                while !up && time() < deadline && process_running(cproc)
                    c = Client(cep; timeout = 0.3, server_key = pub, secret_key = sec)
                    try
                        Herd.ping(c)
                        up = true
                    catch err
                        err isa HerdError || rethrow()
                        sleep(0.05)
                    finally
                        close(c)
                    end
                end
                @test up
                c = Client(cep; timeout = 10, server_key = pub, secret_key = sec)
                try
                    @test Herd.hello(c)["auth"] == "curve"
                    r = Herd.call(c, 1, "make", OrderedMap("env" => "anymal_c-stand", "num_worlds" => 2))
                    sid = UInt64(r["session"])
                    Herd.call(c, 1, "reset", OrderedMap("session" => sid))
                    @test Herd.call(c, 1, "stats", OrderedMap("session" => sid))["session"]["num_worlds"] == 2
                    Herd.call(c, 1, "close", OrderedMap("session" => sid))
                finally
                    close(c)
                end
                c2 = Client(cep; timeout = 10, server_key = Herd.read_key(pub, false),
                            secret_key = Herd.read_key(sec, true))
                try
                    @test Herd.ping(c2)["pong"] == true
                finally
                    close(c2)
                end
                # a key pair the server does not know, or plain mode, gets no reply
                _, other_sec = Herd.curve_keypair()
                for kw in ((server_key = pub, secret_key = other_sec), NamedTuple())
                    x = Client(cep; timeout = 0.5, kw...)
                    e = try
                        Herd.ping(x)
                        nothing
                    catch err
                        err
                    finally
                        close(x)
                    end
                    @test e isa HerdError && e.code == "TIMEOUT"
                end
            finally
                kill(cproc)
                wait(cproc)
            end
        end

        @testset "errors" begin
            VecEnv("anymal_c-walk", 4; address = ep, seed = 1) do env
                reset!(env)
                code(f) = try
                    f(); "none"
                catch e
                    e isa HerdError || rethrow()
                    @test e.address == ep && !isempty(e.message)
                    e.code
                end
                @test code(() -> step!(env, zeros(Float32, 11, 4))) == "BAD_SHAPE"
                @test code(() -> step!(env, zeros(Int32, 12, 4))) == "BAD_DTYPE"
                a = zeros(Float32, 12, 4)
                a[5, 3] = NaN32
                @test code(() -> step!(env, a)) == "NON_FINITE"
                @test code(() -> step!(env, zeros(Float32, 12, 1); world_ids = [4])) == "BAD_WORLD_IDS"
                step!(env, zeros(Float32, 12, 4))      # still usable
            end
            e = try
                VecEnv("no-such-env", 2; address = ep); nothing
            catch err
                err
            end
            @test e isa HerdError && e.code == "UNKNOWN_ENV"
            e = try
                VecEnv("anymal_c-stand", 2; address = ep, config = Dict("target_height" => 5.0)); nothing
            catch err
                err
            end
            @test e isa HerdError && e.code == "BAD_CONFIG"
            # golden bad requests, sent raw
            c = Client(ep; timeout = 5)
            try
                for v in INDEX
                    v["kind"] == "bad_request" || continue
                    name = v["name"]
                    j = load_json(name)
                    Herd.send_raw(c, 1, load_bytes(name))
                    r = Herd.recv_raw(c, 1)
                    @test r["ok"] === false
                    @test r["error"]["code"] == j["expect_error"]
                    @test r["id"] == j["expect_id"]
                end
            finally
                close(c)
            end
        end

        @testset "timeouts" begin
            dead = "tcp://127.0.0.1:$(free_port())"
            t0 = time()
            e = try
                VecEnv("anymal_c-walk", 2; address = dead, timeout = 0.5); nothing
            catch err
                err
            end
            @test e isa HerdError && e.code == "TIMEOUT" && e.address == dead
            @test occursin(dead, sprint(showerror, e))
            @test time() - t0 < 5
        end

        @testset "CommonRLInterface" begin
            w = make_env("anymal_c-stand"; address = ep, seed = 5, config = Dict("episode_seconds" => 0.1))
            try
                @test w isa CRL.AbstractEnv
                @test CRL.terminated(w)            # never reset
                CRL.reset!(w)
                @test !CRL.terminated(w)
                @test length(CRL.observe(w)) == 46
                sp = CRL.actions(w)
                n = 0
                while !CRL.terminated(w)
                    a = rand(sp)
                    @test a in sp
                    r = CRL.act!(w, clamp.(a, -1f0, 1f0))
                    @test r isa Float32
                    n += 1
                end
                @test n == 5
                reset!(w)
                @test !CRL.terminated(w)
                o2 = CRL.observe(w)
                CRL.reset!(w)
                @test CRL.observe(w) != o2          # each reset starts a new episode of the world's stream
            finally
                close(w)
            end
            VecEnv("anymal_c-walk", 3; address = ep, seed = 2, autoreset = :disabled) do env
                ws = worlds(env)
                CRL.reset!(ws[2])
                r = CRL.act!(ws[2], zeros(Float32, 12))
                @test r == env.reward[2]
                @test CRL.terminated(ws[1])        # world 1 never reset
            end
        end
    finally
        kill(proc)
        kill(proc2)
        wait(proc)
        wait(proc2)
    end
end

end # testset

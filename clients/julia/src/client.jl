# client.jl — connections to one or more herd servers: one ZeroMQ DEALER per server, pipelined
# requests matched by id, every wait bounded by a deadline (a dead server gives a TIMEOUT HerdError
# naming its address, never a hang).

using ZMQ
import FileWatching
import Sockets

const PROTOCOL_VERSION = 1
const DEFAULT_ADDRESS = "tcp://127.0.0.1:5555"

"""
    HerdError(code, message, address)

A failed request.  `code` is the protocol's error code (PROTOCOL.md section 5: "BAD_SHAPE",
"NON_FINITE", "UNKNOWN_SESSION", ...) or a client-side one: "TIMEOUT" (no reply in time; `address`
names the server), "TRANSPORT", "BAD_REPLY".  `message` is the server's explanation.
"""
struct HerdError <: Exception
    code::String
    message::String
    address::Union{String,Nothing}
end
function Base.showerror(io::IO, e::HerdError)
    print(io, "HerdError ", e.code, ": ", e.message)
    e.address === nothing || print(io, " (", e.address, ")")
end

"A reply: the received message (the buffer its TensorRefs point into), its decoded body, the server index."
struct Reply
    msg::Union{ZMQ.Message,Vector{UInt8}}
    body::OrderedMap
    server::Int
end
"Field `k` of the reply (`nothing` when absent: clients ignore what they do not know, PROTOCOL.md 2)."
Base.getindex(r::Reply, k::AbstractString) = get(r.body, k, nothing)
Base.haskey(r::Reply, k::AbstractString) = haskey(r.body, k)

"""
    Client(addresses; timeout=30.0, server_key=nothing, secret_key=nothing)

Connections to herd servers: `addresses` is one endpoint ("tcp://host:port", "ipc:///path"), a
comma-separated string, or a vector of endpoints.  `timeout` (seconds) bounds every wait for a reply.
Not thread-safe: use one Client per task.

Authentication (ZeroMQ CURVE, PROTOCOL.md section 1): `server_key` is the server's public key and
`secret_key` the client's secret key (its public key is derived from it), each a 40-character Z85
string or the path of a key file written by `herd-server --keygen` (server.pub, client.key).  Default:
the environment variables HERD_CURVE_SERVER_KEY and HERD_CURVE_CLIENT_SECRET_KEY when set, else plain.

Sessions: the token of each session the client makes (PROTOCOL.md section 9) is remembered and sent
with every later request naming the session.
"""
mutable struct Client
    ctx::ZMQ.Context
    addresses::Vector{String}
    socks::Vector{ZMQ.Socket}
    timeout::Float64
    next_id::UInt64
    pending::Dict{UInt64,Tuple{Int,String}}   # id -> (server, op)
    replies::Dict{UInt64,Reply}
    abandoned::Set{UInt64}
    raw::Dict{Int,Vector{Reply}}             # replies matching no pending request, per server
    closed::Bool
    tokens::Dict{Tuple{Int,UInt64},Vector{UInt8}}   # (server, session) -> token, from make replies
    closing::Dict{UInt64,Tuple{Int,UInt64}}         # close request id -> (server, session)
end

# libzmq option numbers (zmq.h) and calls ZMQ.jl does not wrap
const ZMQ_CURVE_PUBLICKEY = 48
const ZMQ_CURVE_SECRETKEY = 49
const ZMQ_CURVE_SERVERKEY = 50

"A CURVE key as 40 Z85 characters: `v` is the key or the path of a key file (czmq certificate format)."
function read_key(v::AbstractString, secret::Bool)::String
    (length(v) == 40 && !isfile(v)) && return String(v)
    lines = strip.(readlines(v))
    want = secret ? "secret-key" : "public-key"
    for l in lines
        if startswith(l, want)
            q = split(l, '"')
            (length(q) >= 3 && length(q[2]) == 40) && return String(q[2])
        end
    end
    for l in lines
        (length(l) == 40 && !occursin(' ', l)) && return String(l)
    end
    if !secret
        for l in lines
            startswith(l, "secret-key") && return curve_public(String(split(l, '"')[2]))
        end
    end
    throw(ArgumentError("$v holds no CURVE $(secret ? "secret" : "public") key"))
end

function curve_public(secret::String)::String
    out = zeros(UInt8, 41)
    rc = ccall((:zmq_curve_public, ZMQ.libzmq), Cint, (Ptr{UInt8}, Cstring), out, secret)
    rc == 0 || throw(ArgumentError("not a Z85 CURVE secret key"))
    return String(out[1:40])
end

function curve_keypair()::Tuple{String,String}
    pub, sec = zeros(UInt8, 41), zeros(UInt8, 41)
    rc = ccall((:zmq_curve_keypair, ZMQ.libzmq), Cint, (Ptr{UInt8}, Ptr{UInt8}), pub, sec)
    rc == 0 || throw(HerdError("TRANSPORT", "cannot generate a CURVE key pair (libzmq without CURVE?)", nothing))
    return String(pub[1:40]), String(sec[1:40])
end

function set_key!(s::ZMQ.Socket, opt::Integer, z85::String)
    rc = ccall((:zmq_setsockopt, ZMQ.libzmq), Cint, (Ptr{Cvoid}, Cint, Cstring, Csize_t), s, opt, z85, 40)
    rc == 0 || throw(HerdError("TRANSPORT", "cannot set a CURVE key on the socket", nothing))
end

"Normalizes an address argument to a vector of endpoints (adds tcp:// when missing)."
function expand_addresses(address)::Vector{String}
    items = address isa AbstractString ? split(address, ',') : collect(address)
    out = String[]
    for a in items
        s = strip(String(a))
        isempty(s) && continue
        occursin("://", s) || (s = "tcp://" * s)
        push!(out, s)
    end
    isempty(out) && throw(ArgumentError("no server address given"))
    return out
end

function Client(address = DEFAULT_ADDRESS; timeout::Real = 30.0, server_key = nothing, secret_key = nothing)
    timeout > 0 || throw(ArgumentError("timeout must be > 0 seconds"))
    addrs = expand_addresses(address)
    if server_key === nothing
        server_key = get(ENV, "HERD_CURVE_SERVER_KEY", "")
        isempty(server_key) && (server_key = nothing)
        secret_key === nothing && (secret_key = get(ENV, "HERD_CURVE_CLIENT_SECRET_KEY", nothing))
    end
    curve = nothing
    if server_key !== nothing
        sk = secret_key === nothing ? curve_keypair()[2] : read_key(secret_key, true)
        curve = (read_key(server_key, false), curve_public(sk), sk)
    end
    ctx = ZMQ.Context()
    socks = ZMQ.Socket[]
    c = Client(ctx, addrs, socks, Float64(timeout), UInt64(1), Dict{UInt64,Tuple{Int,String}}(),
               Dict{UInt64,Reply}(), Set{UInt64}(), Dict{Int,Vector{Reply}}(), false,
               Dict{Tuple{Int,UInt64},Vector{UInt8}}(), Dict{UInt64,Tuple{Int,UInt64}}())
    try
        for a in addrs
            s = ZMQ.Socket(ctx, ZMQ.DEALER)
            s.linger = 0
            s.sndhwm = 0
            s.rcvhwm = 0
            push!(socks, s)
            if curve !== nothing
                set_key!(s, ZMQ_CURVE_SERVERKEY, curve[1])
                set_key!(s, ZMQ_CURVE_PUBLICKEY, curve[2])
                set_key!(s, ZMQ_CURVE_SECRETKEY, curve[3])
            end
            try
                ZMQ.connect(s, a)
            catch e
                throw(HerdError("TRANSPORT", "cannot connect to \"$a\": $(sprint(showerror, e))", a))
            end
        end
    catch
        close(c)
        rethrow()
    end
    return c
end

nservers(c::Client) = length(c.socks)

"Closes the sockets and the context (requests in flight are abandoned)."
function Base.close(c::Client)
    c.closed && return
    c.closed = true
    for s in c.socks
        try
            close(s)
        catch
        end
    end
    try
        close(c.ctx)
    catch
    end
    nothing
end

"""
    send_request(c, server, op, fields::OrderedMap) -> id

Sends one request to server `server` (1-based) at once and returns its id.
"""
function send_request(c::Client, server::Int, op::String, fields::OrderedMap = OrderedMap())
    c.closed && throw(HerdError("TRANSPORT", "client is closed", nothing))
    id = c.next_id
    c.next_id += 1
    msg = OrderedMap("v" => PROTOCOL_VERSION, "id" => id, "op" => op)
    for (k, v) in fields
        haskey(msg, k) && throw(ArgumentError("request field \"$k\" is reserved"))
        msg[k] = v                       # after v, id, op, in the caller's order
        if k == "session" && !haskey(fields, "token") && v isa Integer
            tok = get(c.tokens, (server, UInt64(v)), nothing)
            tok === nothing || (msg["token"] = Bin(tok))     # the session's token rides right after it
        end
    end
    send_raw(c, server, encode(msg))
    c.pending[id] = (server, op)
    if op == "close" && get(fields, "session", nothing) isa Integer
        c.closing[id] = (server, UInt64(fields["session"]))
    end
    return id
end

"Sends raw bytes as a request payload (tests: malformed input)."
function send_raw(c::Client, server::Int, payload::Vector{UInt8})
    try
        ZMQ.send(c.socks[server], ZMQ.Message(payload))      # zero-copy: ZeroMQ reads payload in place
    catch e
        e isa HerdError && rethrow()
        throw(HerdError("TRANSPORT", "send to $(c.addresses[server]) failed: $(sprint(showerror, e))", c.addresses[server]))
    end
    nothing
end

readable(s::ZMQ.Socket) = (s.events & ZMQ.POLLIN) != 0

# Receives every message waiting on server k's socket.
function drain!(c::Client, k::Int)
    s = c.socks[k]
    while readable(s)
        msg = ZMQ.recv(s)                    # a ZMQ.Message: the received buffer, no copy
        while s.rcvmore                      # envelope frames (none for a DEALER): keep the last
            msg = ZMQ.recv(s)
        end
        body = try
            decode(msg)
        catch e
            throw(HerdError("BAD_REPLY", "undecodable reply from $(c.addresses[k]): $(sprint(showerror, e))", c.addresses[k]))
        end
        rid = body isa OrderedMap ? get(body, "id", nothing) : nothing
        (rid isa Integer && !(rid isa Bool) && rid >= 0 && get(body, "ok", nothing) isa Bool) ||
            throw(HerdError("BAD_REPLY", "reply from $(c.addresses[k]) is not a {v, id, ok, ...} map", c.addresses[k]))
        id = UInt64(rid)
        if haskey(c.pending, id)
            op = c.pending[id][2]
            delete!(c.pending, id)
            c.replies[id] = Reply(msg, body, k)
            note_session!(c, id, k, op, body, msg)
        elseif id in c.abandoned
            delete!(c.abandoned, id)
            delete!(c.closing, id)
        else
            push!(get!(() -> Reply[], c.raw, k), Reply(msg, body, k))   # e.g. a raw request's reply
        end
    end
end

# Keeps the token of a session made, drops that of a session closed.
function note_session!(c::Client, id::UInt64, k::Int, op::String, body::OrderedMap, msg)
    closing = pop!(c.closing, id, nothing)
    get(body, "ok", false) === true || return
    tok, sid = get(body, "token", nothing), get(body, "session", nothing)
    if op == "make" && tok isa BinRef && tok.len == 16 && sid isa Integer
        c.tokens[(k, UInt64(sid))] = bin_bytes(msg, tok)
    elseif closing !== nothing
        delete!(c.tokens, closing)
    end
end

"The token of a session this client made on server `server` (a 16-byte vector), or `nothing`."
token(c::Client, session::Integer, server::Int = 1) = get(c.tokens, (server, UInt64(session)), nothing)

# Waits up to `slice` seconds for server k's socket to become readable (ZeroMQ's fd is edge-triggered:
# `events` is re-read after every wake-up, and the slice is short so a missed edge costs little).
function wait_socket(c::Client, k::Int, slice::Float64)
    s = c.socks[k]
    readable(s) && return true
    slice <= 0 && return false
    try
        FileWatching.poll_fd(fd(s), min(slice, 0.1); readable = true)
    catch e
        e isa InterruptException && rethrow()
        sleep(min(slice, 0.001))
    end
    return readable(s)
end

function timeout_error(c::Client, ids)
    servers = sort!(unique([c.pending[i][1] for i in ids if haskey(c.pending, i)]))
    ops = sort!(unique([c.pending[i][2] for i in ids if haskey(c.pending, i)]))
    for i in ids
        if haskey(c.pending, i)
            delete!(c.pending, i)
            push!(c.abandoned, i)
        end
    end
    addrs = [c.addresses[k] for k in servers]
    HerdError("TIMEOUT", "no reply from $(join(addrs, ", ")) within $(c.timeout) s ($(join(ops, "/")))",
              length(addrs) == 1 ? addrs[1] : join(addrs, ", "))
end

"""
    wait_all(c, ids; timeout=c.timeout, check=true) -> Vector{Reply}

The replies to every id, in order.  All are collected before an error reply is thrown (as a HerdError
with the server's code), so nothing is left behind.  A server silent past the deadline: TIMEOUT.
"""
function wait_all(c::Client, ids::AbstractVector{UInt64}; timeout::Real = c.timeout, check::Bool = true)
    deadline = time() + timeout
    for id in ids
        haskey(c.replies, id) || haskey(c.pending, id) || throw(ArgumentError("request $id is not pending"))
    end
    for id in ids                        # replies of one server come on its own socket: wait in turn
        while !haskey(c.replies, id)
            k = c.pending[id][1]
            left = deadline - time()
            left <= 0 && throw(timeout_error(c, filter(i -> !haskey(c.replies, i), ids)))
            wait_socket(c, k, left) && drain!(c, k)
        end
    end
    reps = [pop!(c.replies, id) for id in ids]
    check && foreach(r -> check_reply(c, r), reps)
    return reps
end
wait_reply(c::Client, id::UInt64; kw...) = wait_all(c, [id]; kw...)[1]

"Waits until one of `ids` has its reply; returns that id (its reply stays for wait_all)."
function wait_any(c::Client, ids::AbstractVector{UInt64}; timeout::Real = c.timeout)
    deadline = time() + timeout
    while true
        for id in ids
            haskey(c.replies, id) && return id
        end
        servers = unique([c.pending[i][1] for i in ids if haskey(c.pending, i)])
        left = deadline - time()
        left <= 0 && throw(timeout_error(c, ids))
        slice = length(servers) > 1 ? 0.002 : left
        for k in servers
            wait_socket(c, k, slice) && drain!(c, k)
        end
    end
end

"The next reply from server k that matches no pending request (for send_raw)."
function recv_raw(c::Client, k::Int; timeout::Real = c.timeout)
    deadline = time() + timeout
    while isempty(get(c.raw, k, Reply[]))
        left = deadline - time()
        left <= 0 && throw(HerdError("TIMEOUT", "no reply from $(c.addresses[k]) within $timeout s", c.addresses[k]))
        wait_socket(c, k, left) && drain!(c, k)
    end
    return popfirst!(c.raw[k])
end

"Throws the HerdError of an error reply; returns the reply otherwise."
function check_reply(c::Client, r::Reply)
    r["ok"] === true && return r
    err = r["error"]
    err isa OrderedMap || throw(HerdError("BAD_REPLY", "error reply without an error map", c.addresses[r.server]))
    throw(HerdError(string(something(get(err, "code", nothing), "INTERNAL")),
                    string(something(get(err, "message", nothing), "")), c.addresses[r.server]))
end

"Sends one request and waits for its reply."
call(c::Client, server::Int, op::String, fields::OrderedMap = OrderedMap(); kw...) =
    wait_reply(c, send_request(c, server, op, fields); kw...)

hello(c::Client, server::Int = 1) = call(c, server, "hello")
ping(c::Client, server::Int = 1) = call(c, server, "ping")
stats(c::Client, server::Int = 1; session = nothing) =
    call(c, server, "stats", session === nothing ? OrderedMap() : OrderedMap("session" => session))

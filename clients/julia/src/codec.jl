# codec.jl — MessagePack encoding and zero-copy decoding for the herd wire protocol
# (protocol/PROTOCOL.md sections 2-3).
#
# Encoding writes the canonical form: scalars and strings through MsgPack.jl (minimal forms, Float64 as
# float 64), maps / arrays with minimal headers, and tensors as {dtype, shape, data} maps whose data is a
# bin 32 starting at a multiple of 8 bytes from the start of the payload (the key-padding rule of
# PROTOCOL.md 3.2).  Maps are written from any AbstractDict in its iteration order: requests are built as
# `OrderedDict`s (`OrderedMap`), so their keys go out in the order they were inserted.
#
# Decoding reads one MessagePack object from a byte buffer without copying `bin` payloads: a bin becomes
# a `BinRef` (offset + length into the buffer) and a {dtype, shape, data} map a `TensorRef`.  The caller
# then copies a tensor into a preallocated array with one memcpy (`copyto_tensor!`), or views it with
# `tensor_view` (a reinterpret of the bytes, no copy).  MessagePack.jl's own `unpack` would copy every
# bin into a new Vector{UInt8}, and packs Vector{Float32} element by element: neither is used for tensors.

import MsgPack
using OrderedCollections: OrderedDict

"Protocol dtype names (PROTOCOL.md 3.1) and their Julia element types."
const DTYPES = Dict{String,DataType}(
    "bool" => Bool, "uint8" => UInt8, "int32" => Int32, "int64" => Int64, "uint64" => UInt64,
    "float32" => Float32, "float64" => Float64,
)
dtype_name(::Type{Bool}) = "bool"
dtype_name(::Type{UInt8}) = "uint8"
dtype_name(::Type{Int32}) = "int32"
dtype_name(::Type{Int64}) = "int64"
dtype_name(::Type{UInt64}) = "uint64"
dtype_name(::Type{Float32}) = "float32"
dtype_name(::Type{Float64}) = "float64"
dtype_name(::Type{T}) where {T} = lowercase(string(T))   # not a protocol dtype: the server says BAD_DTYPE

"""
    RawBytes(owner, ptr, n)

`n` bytes at `ptr` inside `owner` (kept alive while encoding): tensor data taken from a contiguous block
of a larger array (e.g. the columns of one server's worlds) without a copy.
"""
struct RawBytes{O}
    owner::O
    ptr::Ptr{UInt8}
    n::Int
end
"The columns `cols` of a dense matrix as raw bytes (they are contiguous in column-major order)."
function column_bytes(a::DenseMatrix{T}, cols::UnitRange{Int}) where {T}
    isempty(cols) && return RawBytes(a, Ptr{UInt8}(C_NULL), 0)
    checkbounds(a, :, cols)
    RawBytes(a, Ptr{UInt8}(pointer(a, (first(cols) - 1) * size(a, 1) + 1)), size(a, 1) * length(cols) * sizeof(T))
end

"""
    Tensor(dtype::String, shape::Vector{Int}, data::AbstractVector{UInt8})
    Tensor(a::AbstractArray)

A tensor to encode.  `shape` is outermost-first (C order, as on the wire).  `Tensor(a)` for a Julia array
`a` of size (d1, d2, ..., dk) writes shape [dk, ..., d2, d1]: the column-major bytes of `a` are exactly the
row-major bytes of that shape, so `Tensor(actions)` with `actions::Matrix{Float32}(act_dim, n)` is the
`[n, act_dim]` tensor the server expects, without a transpose.
"""
struct Tensor{D<:Union{AbstractArray,AbstractString,RawBytes}}
    dtype::String
    shape::Vector{Int}
    data::D              # the raw bytes: an array (dense: one memcpy), a String, or a RawBytes
end
Tensor(a::AbstractArray{T}) where {T} = Tensor(dtype_name(T), reverse(collect(Int, size(a))), a)
Tensor(dtype::AbstractString, shape::AbstractVector{<:Integer}, data::Union{AbstractArray,AbstractString,RawBytes}) =
    Tensor(String(dtype), collect(Int, shape), data)

"""
A MessagePack map with string keys, in key order: what `decode` returns for every map and what requests
are built from (`OrderedMap("session" => s, "actions" => t)`; keys are encoded in insertion order).
"""
const OrderedMap = OrderedDict{String,Any}

# ---- encoding -------------------------------------------------------------------------------------

function write_head(io::IO, fix::UInt8, c16::UInt8, c32::UInt8, n::Integer)
    if n <= 15
        write(io, fix | UInt8(n))
    elseif n <= 0xFFFF
        write(io, c16, hton(UInt16(n)))
    else
        write(io, c32, hton(UInt32(n)))
    end
    nothing
end

_nbytes(d::AbstractArray) = sizeof(eltype(d)) * length(d)
_nbytes(d::AbstractString) = sizeof(d)

function encode_tensor(io::IOBuffer, t::Tensor)
    dtype = MsgPack.pack(t.dtype)
    sh = IOBuffer()
    write_head(sh, 0x90, 0xdc, 0xdd, length(t.shape))
    for s in t.shape
        MsgPack.pack(sh, s)
    end
    shape = take!(sh)
    nbytes = _nbytes(t.data)
    # data offset with the short key forms: map head 1, "dtype" 6, name, "shape" 6, shape, "data" 5, bin32 head 5
    l0 = position(io) + 1 + 6 + length(dtype) + 6 + length(shape) + 5 + 5
    pad = mod(-l0, 8)
    write(io, 0x83)
    pad & 1 != 0 ? write(io, 0xd9, 0x05, "dtype") : write(io, 0xa5, "dtype")
    write(io, dtype)
    pad & 2 != 0 ? write(io, 0xda, 0x00, 0x05, "shape") : write(io, 0xa5, "shape")
    write(io, shape)
    pad & 4 != 0 ? write(io, 0xdb, 0x00, 0x00, 0x00, 0x04, "data") : write(io, 0xa4, "data")
    write(io, 0xc6, hton(UInt32(nbytes)))
    @assert position(io) % 8 == 0
    _write_data(io, t.data, nbytes)
    nothing
end

function _write_data(io::IO, data::AbstractArray, nbytes)
    nbytes == 0 && return
    if data isa DenseArray && isbitstype(eltype(data))
        GC.@preserve data unsafe_write(io, pointer(data), nbytes)   # one memcpy, little-endian hosts
    else
        for x in data                     # strided views and the like
            write(io, htol(x))
        end
    end
end
_write_data(io::IO, data::AbstractString, nbytes) = write(io, data)
function _write_data(io::IO, r::RawBytes, nbytes)
    nbytes > 0 || return
    owner = r.owner
    GC.@preserve owner unsafe_write(io, r.ptr, nbytes)
    nothing
end
_nbytes(r::RawBytes) = r.n

"""
    encode(x) -> Vector{UInt8}
    encode(io::IOBuffer, x)

MessagePack-encodes `x`: `OrderedMap` / `AbstractDict` (maps), `Tensor`, vectors and tuples (arrays),
`Vector{UInt8}` wrapped in `Bin` (bin), strings, integers, floats, Bool, `nothing`.
"""
function encode(x)
    io = IOBuffer()
    encode(io, x)
    return take!(io)
end

"Raw bytes to encode as MessagePack bin."
struct Bin
    data::Vector{UInt8}
end

encode(io::IOBuffer, t::Tensor) = encode_tensor(io, t)
function encode(io::IOBuffer, m::AbstractDict)     # OrderedMap: insertion order; a Dict: its own order
    write_head(io, 0x80, 0xde, 0xdf, length(m))
    for (k, v) in m
        encode(io, k)
        encode(io, v)
    end
end
function encode(io::IOBuffer, v::Union{AbstractVector,Tuple})
    write_head(io, 0x90, 0xdc, 0xdd, length(v))
    for x in v
        encode(io, x)
    end
end
function encode(io::IOBuffer, b::Bin)
    n = length(b.data)
    if n <= 0xff
        write(io, 0xc4, UInt8(n))
    elseif n <= 0xffff
        write(io, 0xc5, hton(UInt16(n)))
    else
        write(io, 0xc6, hton(UInt32(n)))
    end
    write(io, b.data)
end
encode(io::IOBuffer, x::Union{AbstractString,Symbol,Integer,AbstractFloat,Bool,Nothing}) = MsgPack.pack(io, x)

# ---- decoding -------------------------------------------------------------------------------------

"A MessagePack error in received bytes."
struct DecodeError <: Exception
    msg::String
end
Base.showerror(io::IO, e::DecodeError) = print(io, "DecodeError: ", e.msg)

"A `bin` of the decoded buffer: bytes `offset+1 : offset+len` (no copy)."
struct BinRef
    offset::Int
    len::Int
end

"""
A decoded tensor: `dtype` name, `shape` (outermost first, as on the wire) and where its data lies in the
decoded buffer (byte `offset+1` on, `nbytes` bytes).
"""
struct TensorRef
    dtype::String
    shape::Vector{Int}
    offset::Int
    nbytes::Int
end
Base.eltype(t::TensorRef) = DTYPES[t.dtype]
Base.length(t::TensorRef) = prod(t.shape; init = 1)
"The Julia (column-major) size of a wire tensor: the shape reversed."
julia_size(t::TensorRef) = Tuple(reverse(t.shape))

mutable struct Reader
    p::Ptr{UInt8}
    n::Int
    pos::Int          # 0-based offset of the next byte
    tensors::Bool
end

@inline function need(r::Reader, k)
    r.pos + k <= r.n || throw(DecodeError("truncated MessagePack data at byte $(r.pos)"))
end
@inline function byte!(r::Reader)
    need(r, 1)
    b = unsafe_load(r.p, r.pos + 1)
    r.pos += 1
    return b
end
@inline function be!(r::Reader, ::Type{T}) where {T}
    need(r, sizeof(T))
    v = ntoh(unsafe_load(Ptr{T}(r.p + r.pos)))    # unaligned loads are fine on x86-64 / aarch64
    r.pos += sizeof(T)
    return v
end

function read_str!(r::Reader, n)
    need(r, n)
    s = unsafe_string(r.p + r.pos, n)
    r.pos += n
    isvalid(s) || throw(DecodeError("invalid UTF-8 string at byte $(r.pos - n)"))
    return s
end
function read_bin!(r::Reader, n)
    need(r, n)
    b = BinRef(r.pos, n)
    r.pos += n
    return b
end

const MAX_DEPTH = 64

function read_array!(r::Reader, n, depth)
    depth >= MAX_DEPTH && throw(DecodeError("MessagePack nesting deeper than $MAX_DEPTH"))
    v = Vector{Any}(undef, n)
    for i in 1:n
        v[i] = read_obj!(r, depth + 1)
    end
    return v
end

function read_map!(r::Reader, n, depth)
    depth >= MAX_DEPTH && throw(DecodeError("MessagePack nesting deeper than $MAX_DEPTH"))
    m = OrderedMap()
    sizehint!(m, n)
    for _ in 1:n
        at = r.pos
        k = read_obj!(r, depth + 1)
        k isa String || throw(DecodeError("map key at byte $at is not a string (PROTOCOL.md section 2)"))
        haskey(m, k) && throw(DecodeError("map key \"$k\" at byte $at is repeated"))
        m[k] = read_obj!(r, depth + 1)
    end
    if r.tensors && n == 3
        t = as_tensor(m)
        t === nothing || return t
    end
    return m
end

function as_tensor(m::OrderedMap)
    dt, sh, data = get(m, "dtype", nothing), get(m, "shape", nothing), get(m, "data", nothing)
    (dt isa String && sh isa Vector{Any} && data isa BinRef) || return nothing
    haskey(DTYPES, dt) || throw(DecodeError("unknown tensor dtype \"$dt\""))
    all(s -> s isa Integer && s >= 0, sh) || throw(DecodeError("bad tensor shape $sh"))
    shape = Int[s for s in sh]
    need_bytes = prod(shape; init = 1) * sizeof(DTYPES[dt])
    data.len == need_bytes ||
        throw(DecodeError("tensor data has $(data.len) bytes, shape $shape of $dt needs $need_bytes"))
    return TensorRef(dt, shape, data.offset, data.len)
end

function read_obj!(r::Reader, depth::Int = 0)
    b = byte!(r)
    b <= 0x7f && return Int64(b)
    b >= 0xe0 && return Int64(reinterpret(Int8, b))
    0xa0 <= b <= 0xbf && return read_str!(r, Int(b & 0x1f))
    0x80 <= b <= 0x8f && return read_map!(r, Int(b & 0x0f), depth)
    0x90 <= b <= 0x9f && return read_array!(r, Int(b & 0x0f), depth)
    b == 0xc0 && return nothing
    b == 0xc2 && return false
    b == 0xc3 && return true
    b == 0xcc && return Int64(be!(r, UInt8))
    b == 0xcd && return Int64(be!(r, UInt16))
    b == 0xce && return Int64(be!(r, UInt32))
    if b == 0xcf
        v = be!(r, UInt64)
        return v <= typemax(Int64) ? Int64(v) : v          # UInt64 only above typemax(Int64)
    end
    b == 0xd0 && return Int64(be!(r, Int8))
    b == 0xd1 && return Int64(be!(r, Int16))
    b == 0xd2 && return Int64(be!(r, Int32))
    b == 0xd3 && return be!(r, Int64)
    b == 0xca && return Float64(be!(r, Float32))
    b == 0xcb && return be!(r, Float64)
    b == 0xd9 && return read_str!(r, Int(be!(r, UInt8)))
    b == 0xda && return read_str!(r, Int(be!(r, UInt16)))
    b == 0xdb && return read_str!(r, Int(be!(r, UInt32)))
    b == 0xc4 && return read_bin!(r, Int(be!(r, UInt8)))
    b == 0xc5 && return read_bin!(r, Int(be!(r, UInt16)))
    b == 0xc6 && return read_bin!(r, Int(be!(r, UInt32)))
    b == 0xdc && return read_array!(r, Int(be!(r, UInt16)), depth)
    b == 0xdd && return read_array!(r, Int(be!(r, UInt32)), depth)
    b == 0xde && return read_map!(r, Int(be!(r, UInt16)), depth)
    b == 0xdf && return read_map!(r, Int(be!(r, UInt32)), depth)
    fixext = b == 0xd4 ? 1 : b == 0xd5 ? 2 : b == 0xd6 ? 4 : b == 0xd7 ? 8 : b == 0xd8 ? 16 : 0
    if fixext > 0
        need(r, 1 + fixext)
        r.pos += 1 + fixext
        return nothing          # extension types are not used by the protocol: skipped
    end
    if b == 0xc7 || b == 0xc8 || b == 0xc9
        n = b == 0xc7 ? Int(be!(r, UInt8)) : b == 0xc8 ? Int(be!(r, UInt16)) : Int(be!(r, UInt32))
        need(r, 1 + n)
        r.pos += 1 + n
        return nothing
    end
    throw(DecodeError("invalid MessagePack byte 0x$(string(b, base = 16)) at $(r.pos - 1)"))
end

"""
    decode(bytes; tensors=true)

Decodes the one MessagePack object filling `bytes` (a `Vector{UInt8}`, a `ZMQ.Message`, or any dense
byte vector with `pointer`).  Maps become `OrderedMap`s (`OrderedDict{String,Any}`, key order kept;
a non-string or repeated key is a DecodeError), arrays `Vector{Any}`, bins `BinRef`s, and with
`tensors=true` tensor maps `TensorRef`s.  Integers are Int64 (UInt64 above typemax(Int64)), floats
Float64.  Trailing bytes are an error.  `bytes` must stay alive while the refs are used.
"""
function decode(bytes::AbstractVector{UInt8}; tensors::Bool = true)
    GC.@preserve bytes begin
        r = Reader(pointer(bytes), length(bytes), 0, tensors)
        obj = read_obj!(r)
        r.pos == r.n || throw(DecodeError("$(r.n - r.pos) trailing bytes after the MessagePack object"))
        return obj
    end
end

"The bytes of a BinRef (a copy)."
bin_bytes(bytes::AbstractVector{UInt8}, b::BinRef) = GC.@preserve bytes unsafe_wrap(Vector{UInt8}, pointer(bytes) + b.offset, b.len) |> copy

"""
    copyto_tensor!(dest::AbstractArray{T}, bytes, t::TensorRef; offset=0)

Copies the data of tensor `t` (decoded from `bytes`) into `dest` starting at linear index `offset+1`:
one `memcpy`, no per-element conversion.  Checks the dtype (T must be the tensor's element type) and that
it fits.  Returns the number of elements copied.
"""
function copyto_tensor!(dest::DenseArray{T}, bytes::AbstractVector{UInt8}, t::TensorRef; offset::Int = 0) where {T}
    eltype(t) === T || throw(ArgumentError("tensor is $(t.dtype), destination is $T"))
    n = length(t)
    0 <= offset && offset + n <= length(dest) || throw(DimensionMismatch("tensor of $n elements does not fit at offset $offset of $(length(dest))"))
    GC.@preserve dest bytes unsafe_copyto!(pointer(dest) + offset * sizeof(T), Ptr{T}(pointer(bytes) + t.offset), n)
    return n
end

"""
    tensor_view(bytes::Vector{UInt8}, t::TensorRef)

A zero-copy Julia array over the tensor's bytes: `reshape(reinterpret(T, view(bytes, range)), dims)` with
`dims` the wire shape reversed, so a `[n, obs_dim]` tensor reads as an `obs_dim × n` matrix
(column i = world i).  Valid while `bytes` is.
"""
function tensor_view(bytes::Vector{UInt8}, t::TensorRef)
    T = eltype(t)
    v = reinterpret(T, view(bytes, t.offset+1:t.offset+t.nbytes))
    return reshape(v, julia_size(t)...)
end

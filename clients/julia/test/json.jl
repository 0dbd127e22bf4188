# A small JSON reader for the golden vectors' .json files (protocol/PROTOCOL.md section 11), so the tests
# need no JSON package.  Objects -> Herd.OrderedMap (key order kept), arrays -> Vector{Any}, numbers with
# '.', 'e' or 'E' -> Float64, other numbers -> Int64 (UInt64 above typemax(Int64)), true / false / null,
# and Python's extensions Infinity, -Infinity, NaN.

module MiniJSON

import ..Herd

mutable struct P
    s::String
    i::Int
end

function skipws(p::P)
    while p.i <= ncodeunits(p.s) && p.s[p.i] in (' ', '\t', '\n', '\r')
        p.i += 1
    end
end

peekc(p::P) = (skipws(p); p.i <= ncodeunits(p.s) ? p.s[p.i] : '\0')

function expect(p::P, c::Char)
    skipws(p)
    p.s[p.i] == c || error("JSON: expected '$c' at $(p.i), got '$(p.s[p.i])'")
    p.i += 1
end

function startswith_at(p::P, lit::String)
    skipws(p)
    if p.i + ncodeunits(lit) - 1 <= ncodeunits(p.s) && p.s[p.i:p.i+ncodeunits(lit)-1] == lit
        p.i += ncodeunits(lit)
        return true
    end
    return false
end

function value(p::P)
    c = peekc(p)
    c == '{' && return object(p)
    c == '[' && return array(p)
    c == '"' && return str(p)
    startswith_at(p, "true") && return true
    startswith_at(p, "false") && return false
    startswith_at(p, "null") && return nothing
    startswith_at(p, "NaN") && return NaN
    startswith_at(p, "Infinity") && return Inf
    startswith_at(p, "-Infinity") && return -Inf
    return number(p)
end

function object(p::P)
    expect(p, '{')
    m = Herd.OrderedMap()
    if peekc(p) == '}'
        p.i += 1
        return m
    end
    while true
        k = str(p)
        expect(p, ':')
        push!(m, k => value(p))
        c = peekc(p)
        p.i += 1
        c == '}' && return m
        c == ',' || error("JSON: expected ',' or '}' at $(p.i - 1)")
    end
end

function array(p::P)
    expect(p, '[')
    v = Any[]
    if peekc(p) == ']'
        p.i += 1
        return v
    end
    while true
        push!(v, value(p))
        c = peekc(p)
        p.i += 1
        c == ']' && return v
        c == ',' || error("JSON: expected ',' or ']' at $(p.i - 1)")
    end
end

function str(p::P)
    expect(p, '"')
    io = IOBuffer()
    while true
        c = p.s[p.i]
        if c == '"'
            p.i += 1
            return String(take!(io))
        elseif c == '\\'
            e = p.s[p.i+1]
            if e == 'u'
                cp = parse(UInt16, p.s[p.i+2:p.i+5]; base = 16)
                p.i += 6
                if 0xd800 <= cp <= 0xdbff          # surrogate pair
                    lo = parse(UInt16, p.s[p.i+2:p.i+5]; base = 16)
                    p.i += 6
                    write(io, Char(0x10000 + ((UInt32(cp) - 0xd800) << 10) + (UInt32(lo) - 0xdc00)))
                else
                    write(io, Char(cp))
                end
                continue
            end
            write(io, e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e)
            p.i += 2
        else
            write(io, c)
            p.i = nextind(p.s, p.i)
        end
    end
end

function number(p::P)
    skipws(p)
    j = p.i
    while j <= ncodeunits(p.s) && p.s[j] in "+-0123456789.eE"
        j += 1
    end
    tok = p.s[p.i:j-1]
    p.i = j
    isempty(tok) && error("JSON: unexpected character at $(p.i)")
    if any(c -> c in ".eE", tok)
        return parse(Float64, tok)
    end
    v = parse(Int128, tok)
    return typemin(Int64) <= v <= typemax(Int64) ? Int64(v) : UInt64(v)
end

parse_json(s::AbstractString) = (p = P(String(s), 1); v = value(p); skipws(p); v)
parsefile(path) = parse_json(read(path, String))

end

/* proto_core.c — what both codecs share: names, errors, limits, the structural pre-scan that bounds
 * what msgpack-c will allocate, value descriptions, typed checks and the tensor map parser.  See
 * proto.h, proto_internal.h and PROTOCOL.md. */
#include "proto_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* names */

static const char *const code_names[PROTO_E_COUNT] = {
    "OK", "BAD_MESSAGE", "TOO_LARGE", "BAD_VERSION", "UNKNOWN_OP", "MISSING_FIELD", "BAD_FIELD", "UNKNOWN_ENV",
    "BAD_CONFIG", "UNKNOWN_SESSION", "BAD_SHAPE", "BAD_DTYPE", "NON_FINITE", "BAD_WORLD_IDS", "LIMIT",
    "EPISODE_ENDED", "SHUTTING_DOWN", "INTERNAL", "TIMEOUT", "TRANSPORT", "BAD_REPLY",
};

const char *proto_code_name(proto_code c) { return c >= 0 && c < PROTO_E_COUNT ? code_names[c] : "?"; }

int proto_name_eq(const char *s, size_t n, const char *name) { return strlen(name) == n && memcmp(s, name, n) == 0; }

proto_code proto_code_from_name(const char *s, size_t n)
{
    for (int i = 0; i < PROTO_E_COUNT; i++)
        if (proto_name_eq(s, n, code_names[i])) return (proto_code)i;
    return PROTO_E_COUNT;
}

static const char *const op_names[PROTO_OP_COUNT] = {"hello", "make", "reset", "step", "close", "stats", "ping",
                                                          "model", "poses"};
const char *proto_op_name(proto_op op) { return op >= 0 && op < PROTO_OP_COUNT ? op_names[op] : "?"; }

static const char *const dtype_names[PROTO_DT_COUNT] = {"bool", "uint8", "int32", "int64", "uint64", "float32",
                                                        "float64"};
static const size_t dtype_sizes[PROTO_DT_COUNT] = {1, 1, 4, 8, 8, 4, 8};
const char *proto_dtype_name(proto_dtype d) { return d >= 0 && d < PROTO_DT_COUNT ? dtype_names[d] : "?"; }
size_t proto_dtype_size(proto_dtype d) { return d >= 0 && d < PROTO_DT_COUNT ? dtype_sizes[d] : 0; }
int proto_dtype_from_name(const char *s, size_t n)
{
    for (int i = 0; i < PROTO_DT_COUNT; i++)
        if (proto_name_eq(s, n, dtype_names[i])) return i;
    return -1;
}

static const char *const autoreset_names[3] = {"next_step", "same_step", "disabled"};
const char *proto_autoreset_name(env_autoreset a) { return a >= 0 && a <= 2 ? autoreset_names[a] : "?"; }
int proto_autoreset_from_name(const char *s, size_t n)
{
    for (int i = 0; i < 3; i++)
        if (proto_name_eq(s, n, autoreset_names[i])) return i;
    return -1;
}

static void vfail(proto_error *e, proto_code code, const char *fmt, va_list ap)
{
    if (!e) return;
    e->code = code;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

int proto_fail(proto_error *e, proto_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(e, code, fmt, ap);
    va_end(ap);
    return (int)code;
}

void proto_limits_default(proto_limits *l)
{
    l->max_message_bytes = 64u << 20;
    l->max_depth = 16;
    l->max_objects = 4u << 20;
    l->max_worlds = 1 << 20;
}

void proto_quote(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            o += (size_t)snprintf(out + o, cap - o, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') out[o++] = (char)c;
        else o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    out[o < cap ? o : cap - 1] = 0;
}

void proto_describe(const msgpack_object *o, char *out, size_t cap)
{
    char q[200];
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: snprintf(out, cap, "nil"); break;
    case MSGPACK_OBJECT_BOOLEAN: snprintf(out, cap, "bool %s", o->via.boolean ? "true" : "false"); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: snprintf(out, cap, "int %" PRIu64, o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: snprintf(out, cap, "int %" PRId64, o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: snprintf(out, cap, "float %g", o->via.f64); break;
    case MSGPACK_OBJECT_STR:
        proto_quote(o->via.str.ptr, o->via.str.size, q, sizeof q);
        snprintf(out, cap, "str '%s'", q);
        break;
    case MSGPACK_OBJECT_BIN: snprintf(out, cap, "bin of %u bytes", o->via.bin.size); break;
    case MSGPACK_OBJECT_ARRAY: snprintf(out, cap, "array of %u", o->via.array.size); break;
    case MSGPACK_OBJECT_MAP: snprintf(out, cap, "map of %u", o->via.map.size); break;
    default: snprintf(out, cap, "ext"); break;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* structural scan: checks that buf holds well-formed msgpack and bounds the memory msgpack-c will
 * allocate (msgpack-c allocates a container's declared element count before reading it). */

typedef struct {
    const uint8_t *p;
    size_t len, pos;
    size_t objects, max_objects;
    int max_depth;
    proto_error *err;
    int code;
} scanner;

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static int scan_fail(scanner *s, proto_code c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int scan_fail(scanner *s, proto_code c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(s->err, c, fmt, ap);
    va_end(ap);
    s->code = c;
    return -1;
}

/* Reads one header at s->pos: kind 0 scalar/raw (skipped whole), 1 array, 2 map; *count for containers. */
static int scan_header(scanner *s, int *kind, uint64_t *count)
{
    if (s->pos >= s->len) return scan_fail(s, PROTO_E_BAD_MESSAGE, "truncated message (%zu bytes)", s->len);
    const uint8_t *p = s->p + s->pos;
    size_t rem = s->len - s->pos;
    uint8_t b = p[0];
    size_t head = 1, body = 0;
    *kind = 0;
    *count = 0;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
    } else if (b >= 0x80 && b <= 0x8f) { *kind = 2; *count = b & 15; }
    else if (b >= 0x90 && b <= 0x9f) { *kind = 1; *count = b & 15; }
    else if (b >= 0xa0 && b <= 0xbf) { body = b & 31; }
    else {
        int ln = 0;     /* length-field bytes */
        switch (b) {
        case 0xc1: return scan_fail(s, PROTO_E_BAD_MESSAGE, "reserved byte 0xc1 at offset %zu", s->pos);
        case 0xc4: case 0xd9: ln = 1; break;
        case 0xc5: case 0xda: ln = 2; break;
        case 0xc6: case 0xdb: ln = 4; break;
        case 0xc7: ln = 1; body = 1; break;     /* ext: + type byte */
        case 0xc8: ln = 2; body = 1; break;
        case 0xc9: ln = 4; body = 1; break;
        case 0xca: body = 4; break;
        case 0xcb: body = 8; break;
        case 0xcc: case 0xd0: body = 1; break;
        case 0xcd: case 0xd1: body = 2; break;
        case 0xce: case 0xd2: body = 4; break;
        case 0xcf: case 0xd3: body = 8; break;
        case 0xd4: body = 2; break;
        case 0xd5: body = 3; break;
        case 0xd6: body = 5; break;
        case 0xd7: body = 9; break;
        case 0xd8: body = 17; break;
        case 0xdc: *kind = 1; ln = 2; break;
        case 0xdd: *kind = 1; ln = 4; break;
        case 0xde: *kind = 2; ln = 2; break;
        case 0xdf: *kind = 2; ln = 4; break;
        default: return scan_fail(s, PROTO_E_BAD_MESSAGE, "bad byte 0x%02x at offset %zu", b, s->pos);
        }
        if (rem < 1 + (size_t)ln) return scan_fail(s, PROTO_E_BAD_MESSAGE, "truncated message (%zu bytes)", s->len);
        uint64_t v = be(p + 1, ln);
        head = 1 + (size_t)ln;
        if (*kind) *count = v;
        else body += v;
    }
    if (head > rem || body > rem - head)
        return scan_fail(s, PROTO_E_BAD_MESSAGE, "truncated message (%zu bytes): an object at offset %zu needs %zu more",
                         s->len, s->pos, head + body - rem);
    s->pos += head + body;
    return 0;
}

static int scan_value(scanner *s, int depth)
{
    int kind = 0;
    uint64_t n = 0;
    size_t at = s->pos;
    if (scan_header(s, &kind, &n)) return -1;
    if (++s->objects > s->max_objects)
        return scan_fail(s, PROTO_E_TOO_LARGE, "more than %zu msgpack objects in one message", s->max_objects);
    if (!kind) return 0;
    if (depth >= s->max_depth)
        return scan_fail(s, PROTO_E_BAD_MESSAGE, "containers nested deeper than %d levels (offset %zu)", s->max_depth, at);
    uint64_t items = kind == 2 ? 2 * n : n;
    if (items > s->len - s->pos)    /* every item takes at least one byte */
        return scan_fail(s, PROTO_E_BAD_MESSAGE, "truncated message (%zu bytes): %s at offset %zu declares %" PRIu64
                         " entries", s->len, kind == 2 ? "a map" : "an array", at, n);
    for (uint64_t i = 0; i < items; i++)
        if (scan_value(s, depth + 1)) return -1;
    return 0;
}

int proto_peek_id(const void *buf, size_t len, uint64_t *id)
{
    /* bounded work: this runs on messages too large to decode */
    scanner s = {.p = buf, .len = len, .max_objects = 1u << 16, .max_depth = 16};
    int kind = 0;
    uint64_t n = 0;
    if (!buf || scan_header(&s, &kind, &n) || kind != 2) return 0;
    for (uint64_t i = 0; i < n && s.pos < len; i++) {
        const uint8_t *k = s.p + s.pos;
        int is_id = (k[0] == 0xa2 && s.pos + 3 <= len && k[1] == 'i' && k[2] == 'd');
        if (scan_value(&s, 1)) return 0;
        if (is_id) {
            if (s.pos >= len) return 0;
            const uint8_t *v = s.p + s.pos;
            size_t rem = len - s.pos;
            if (v[0] <= 0x7f) { *id = v[0]; return 1; }
            int nb = v[0] == 0xcc ? 1 : v[0] == 0xcd ? 2 : v[0] == 0xce ? 4 : v[0] == 0xcf ? 8 : 0;
            if (nb && rem > (size_t)nb) { *id = be(v + 1, nb); return 1; }
            return 0;
        }
        if (scan_value(&s, 1)) return 0;
    }
    return 0;
}

int proto_unpack_exact(const void *buf, size_t len, const proto_limits *lim, int need_map, msgpack_zone *z,
                       msgpack_object *root, proto_error *err)
{
    scanner s = {.p = buf, .len = len, .max_objects = lim->max_objects, .max_depth = lim->max_depth, .err = err};
    if (len == 0) return proto_fail(err, PROTO_E_BAD_MESSAGE, "empty message");
    if (scan_value(&s, 0)) return s.code;
    uint8_t b0 = ((const uint8_t *)buf)[0];
    if (need_map && !((b0 & 0xf0) == 0x80 || b0 == 0xde || b0 == 0xdf)) {
        msgpack_object first;
        size_t off = 0;
        char d[240] = "?";
        if (msgpack_unpack(buf, len, &off, z, &first) >= 0) proto_describe(&first, d, sizeof d);
        return proto_fail(err, PROTO_E_BAD_MESSAGE, "a request must be a msgpack map, got %s%s", d,
                          s.pos != len ? " followed by more bytes" : "");
    }
    if (s.pos != len)
        return proto_fail(err, PROTO_E_BAD_MESSAGE, "%zu trailing bytes after the message (one msgpack map expected)",
                          len - s.pos);
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack(buf, len, &off, z, root);
    if (r == MSGPACK_UNPACK_NOMEM_ERROR) return proto_fail(err, PROTO_E_TOO_LARGE, "out of memory decoding");
    if (r != MSGPACK_UNPACK_SUCCESS || off != len)
        return proto_fail(err, PROTO_E_BAD_MESSAGE, "not a valid msgpack message");
    return PROTO_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* typed checks and the tensor map */

int proto_is_int(const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}
int proto_is_num(const msgpack_object *o)
{
    return proto_is_int(o) || o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64;
}

int proto_bad_type(proto_error *err, proto_code code, const char *field, const char *want, const msgpack_object *o)
{
    char d[240];
    proto_describe(o, d, sizeof d);
    return proto_fail(err, code, "'%s' must be %s, got %s", field, want, d);
}

double proto_num_value(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)o->via.u64;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return (double)o->via.i64;
    return o->via.f64;
}

int proto_tensor_from_object(const msgpack_object *o, const char *what, proto_tensor *t, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_MAP)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, what, "a tensor map {dtype, shape, data}", o);
    const msgpack_object *dt = NULL, *sh = NULL, *da = NULL;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        char q[200];
        if (k->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_FIELD, what, "a map with string keys", k);
        const msgpack_object **slot = proto_name_eq(k->via.str.ptr, k->via.str.size, "dtype")   ? &dt
                                      : proto_name_eq(k->via.str.ptr, k->via.str.size, "shape") ? &sh
                                      : proto_name_eq(k->via.str.ptr, k->via.str.size, "data")  ? &da
                                                                                          : NULL;
        proto_quote(k->via.str.ptr, k->via.str.size, q, sizeof q);
        if (!slot) return proto_fail(err, PROTO_E_BAD_FIELD, "'%s': unexpected key '%s' in a tensor (dtype, shape, data)", what, q);
        if (*slot) return proto_fail(err, PROTO_E_BAD_MESSAGE, "'%s': duplicate key '%s'", what, q);
        *slot = v;
    }
    char f[96];
    if (!dt) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'dtype'", what);
    if (!sh) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'shape'", what);
    if (!da) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'data'", what);
    /* PROTOCOL.md section 5: a part of the wrong MessagePack type is BAD_FIELD; a dtype name that is not
     * one of the dtypes is BAD_DTYPE, sizes that do not fit the data BAD_SHAPE */
    snprintf(f, sizeof f, "%s.dtype", what);
    if (dt->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_FIELD, f, "a dtype name (a string)", dt);
    int d = proto_dtype_from_name(dt->via.str.ptr, dt->via.str.size);
    if (d < 0) {
        char q[200];
        proto_quote(dt->via.str.ptr, dt->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'%s' = '%s' is not one of bool, uint8, int32, int64, uint64, float32, "
                          "float64", f, q);
    }
    snprintf(f, sizeof f, "%s.shape", what);
    if (sh->type != MSGPACK_OBJECT_ARRAY) return proto_bad_type(err, PROTO_E_BAD_FIELD, f, "an array of sizes", sh);
    if (sh->via.array.size > PROTO_MAX_DIMS)
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'%s' has %u dimensions (at most %d)", f, sh->via.array.size,
                          PROTO_MAX_DIMS);
    t->dtype = (proto_dtype)d;
    t->ndim = (int)sh->via.array.size;
    uint64_t count = 1;
    int overflow = 0;
    for (int i = 0; i < t->ndim; i++) {
        const msgpack_object *e = &sh->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
            char g[120];
            snprintf(g, sizeof g, "%s[%d]", f, i);
            return proto_bad_type(err, proto_is_int(e) ? PROTO_E_BAD_SHAPE : PROTO_E_BAD_FIELD, g,
                                  "a non-negative integer", e);
        }
        t->shape[i] = e->via.u64;
        if (e->via.u64 && count > UINT64_MAX / e->via.u64) overflow = 1;
        else count *= e->via.u64;
    }
    snprintf(f, sizeof f, "%s.data", what);
    if (da->type != MSGPACK_OBJECT_BIN) return proto_bad_type(err, PROTO_E_BAD_FIELD, f, "bin (raw little-endian bytes)", da);
    size_t isz = dtype_sizes[d];
    if (overflow || count > UINT64_MAX / isz || count * isz != da->via.bin.size) {
        char shp[96] = "";
        for (int i = 0; i < t->ndim; i++)
            snprintf(shp + strlen(shp), sizeof shp - strlen(shp), "%s%" PRIu64, i ? ", " : "", t->shape[i]);
        if (overflow || count > UINT64_MAX / isz)
            return proto_fail(err, PROTO_E_BAD_SHAPE, "'%s': shape [%s] is too large", what, shp);
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'%s': shape [%s] of %s needs %" PRIu64 " bytes, data has %u", what,
                          shp, dtype_names[d], count * isz, da->via.bin.size);
    }
    t->data = (const uint8_t *)da->via.bin.ptr;
    t->nbytes = da->via.bin.size;
    return PROTO_OK;
}


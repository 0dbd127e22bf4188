/* proto.c — decoding side of the wire protocol: names, a structural pre-scan that bounds what
 * msgpack-c will allocate, request decoding and validation, checks against a session, and the
 * client's reply decoding.  See proto.h and PROTOCOL.md. */
#include "proto.h"

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

static int name_eq(const char *s, size_t n, const char *name) { return strlen(name) == n && memcmp(s, name, n) == 0; }

proto_code proto_code_from_name(const char *s, size_t n)
{
    for (int i = 0; i < PROTO_E_COUNT; i++)
        if (name_eq(s, n, code_names[i])) return (proto_code)i;
    return PROTO_E_COUNT;
}

static const char *const op_names[PROTO_OP_COUNT] = {"hello", "make", "reset", "step", "close", "stats", "ping"};
const char *proto_op_name(proto_op op) { return op >= 0 && op < PROTO_OP_COUNT ? op_names[op] : "?"; }

static const char *const dtype_names[PROTO_DT_COUNT] = {"bool", "uint8", "int32", "int64", "uint64", "float32",
                                                        "float64"};
static const size_t dtype_sizes[PROTO_DT_COUNT] = {1, 1, 4, 8, 8, 4, 8};
const char *proto_dtype_name(proto_dtype d) { return d >= 0 && d < PROTO_DT_COUNT ? dtype_names[d] : "?"; }
size_t proto_dtype_size(proto_dtype d) { return d >= 0 && d < PROTO_DT_COUNT ? dtype_sizes[d] : 0; }
int proto_dtype_from_name(const char *s, size_t n)
{
    for (int i = 0; i < PROTO_DT_COUNT; i++)
        if (name_eq(s, n, dtype_names[i])) return i;
    return -1;
}

static const char *const autoreset_names[3] = {"next_step", "same_step", "disabled"};
const char *proto_autoreset_name(env_autoreset a) { return a >= 0 && a <= 2 ? autoreset_names[a] : "?"; }
int proto_autoreset_from_name(const char *s, size_t n)
{
    for (int i = 0; i < 3; i++)
        if (name_eq(s, n, autoreset_names[i])) return i;
    return -1;
}

int proto_fail(proto_error *e, proto_code code, const char *fmt, ...)
{
    if (e) {
        e->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return (int)code;
}

void proto_limits_default(proto_limits *l)
{
    l->max_message_bytes = 64u << 20;
    l->max_depth = 16;
    l->max_objects = 4u << 20;
    l->max_worlds = 1 << 20;
}

/* Copies a (not 0-terminated) string for messages, escaping non-printable bytes, cut at 40 bytes. */
static void quote(const char *s, size_t n, char *out, size_t cap)
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
        quote(o->via.str.ptr, o->via.str.size, q, sizeof q);
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
    if (s->err) {
        s->err->code = c;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->err->message, sizeof s->err->message, fmt, ap);
        va_end(ap);
    }
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

/* Scans and unpacks one message that must fill buf exactly.  On success *root is valid until
 * msgpack_zone_destroy(z). */
static int unpack_exact(const void *buf, size_t len, const proto_limits *lim, int need_map, msgpack_zone *z,
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
/* typed field readers (request side: errors are BAD_FIELD with the field name and what was found) */

static int is_int(const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}
static int is_num(const msgpack_object *o)
{
    return is_int(o) || o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64;
}

static int bad_type(proto_error *err, proto_code code, const char *field, const char *want, const msgpack_object *o)
{
    char d[240];
    proto_describe(o, d, sizeof d);
    return proto_fail(err, code, "'%s' must be %s, got %s", field, want, d);
}

static int read_u64(const msgpack_object *o, const char *field, uint64_t *v, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return bad_type(err, PROTO_E_BAD_FIELD, field, "an unsigned integer", o);
    *v = o->via.u64;
    return PROTO_OK;
}

static int read_str(const msgpack_object *o, const char *field, char *out, size_t cap, proto_code too_long,
                    proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_FIELD, field, "a string", o);
    char q[200];
    quote(o->via.str.ptr, o->via.str.size, q, sizeof q);
    if (memchr(o->via.str.ptr, 0, o->via.str.size))
        return proto_fail(err, PROTO_E_BAD_FIELD, "'%s' contains a NUL byte: '%s'", field, q);
    if (o->via.str.size >= cap)
        return proto_fail(err, too_long, "'%s' = '%s' is too long (%u bytes, at most %zu)", field, q, o->via.str.size,
                          cap - 1);
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
    return PROTO_OK;
}

static double num_value(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)o->via.u64;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return (double)o->via.i64;
    return o->via.f64;
}

/* Tensor map {"dtype", "shape", "data"} -> view.  Structure errors are BAD_FIELD / MISSING_FIELD, an
 * unknown dtype BAD_DTYPE, a shape that does not match the data BAD_SHAPE. */
int proto_tensor_from_object(const msgpack_object *o, const char *what, proto_tensor *t, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_MAP)
        return bad_type(err, PROTO_E_BAD_FIELD, what, "a tensor map {dtype, shape, data}", o);
    const msgpack_object *dt = NULL, *sh = NULL, *da = NULL;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        char q[200];
        if (k->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_FIELD, what, "a map with string keys", k);
        const msgpack_object **slot = name_eq(k->via.str.ptr, k->via.str.size, "dtype")   ? &dt
                                      : name_eq(k->via.str.ptr, k->via.str.size, "shape") ? &sh
                                      : name_eq(k->via.str.ptr, k->via.str.size, "data")  ? &da
                                                                                          : NULL;
        quote(k->via.str.ptr, k->via.str.size, q, sizeof q);
        if (!slot) return proto_fail(err, PROTO_E_BAD_FIELD, "'%s': unexpected key '%s' in a tensor (dtype, shape, data)", what, q);
        if (*slot) return proto_fail(err, PROTO_E_BAD_MESSAGE, "'%s': duplicate key '%s'", what, q);
        *slot = v;
    }
    char f[96];
    if (!dt) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'dtype'", what);
    if (!sh) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'shape'", what);
    if (!da) return proto_fail(err, PROTO_E_MISSING_FIELD, "'%s' lacks 'data'", what);
    snprintf(f, sizeof f, "%s.dtype", what);
    if (dt->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_DTYPE, f, "a dtype name", dt);
    int d = proto_dtype_from_name(dt->via.str.ptr, dt->via.str.size);
    if (d < 0) {
        char q[200];
        quote(dt->via.str.ptr, dt->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'%s' = '%s' is not one of bool, uint8, int32, int64, uint64, float32, "
                          "float64", f, q);
    }
    snprintf(f, sizeof f, "%s.shape", what);
    if (sh->type != MSGPACK_OBJECT_ARRAY) return bad_type(err, PROTO_E_BAD_SHAPE, f, "an array of sizes", sh);
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
            return bad_type(err, PROTO_E_BAD_SHAPE, g, "a non-negative integer", e);
        }
        t->shape[i] = e->via.u64;
        if (e->via.u64 && count > UINT64_MAX / e->via.u64) overflow = 1;
        else count *= e->via.u64;
    }
    snprintf(f, sizeof f, "%s.data", what);
    if (da->type != MSGPACK_OBJECT_BIN) return bad_type(err, PROTO_E_BAD_FIELD, f, "bin (raw little-endian bytes)", da);
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

/* Little-endian element i of an integer tensor, as int64 (uint64 values above INT64_MAX -> -1). */
static int64_t tensor_int(const proto_tensor *t, size_t i)
{
    const uint8_t *p = t->data + i * dtype_sizes[t->dtype];
    switch (t->dtype) {
    case PROTO_DT_BOOL:
    case PROTO_DT_UINT8: return p[0];
    case PROTO_DT_INT32: { uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                           return (int32_t)u; }
    default: {
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--) u = u << 8 | p[k];
        if (t->dtype == PROTO_DT_UINT64 && u > (uint64_t)INT64_MAX) return -1;
        return (int64_t)u;
    }
    }
}

static uint64_t tensor_u64(const proto_tensor *t, size_t i)
{
    if (t->dtype == PROTO_DT_UINT64 || t->dtype == PROTO_DT_INT64) {
        const uint8_t *p = t->data + i * 8;
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--) u = u << 8 | p[k];
        return u;
    }
    return (uint64_t)tensor_int(t, i);
}

/* The common prologue of integer lists (world_ids, seeds): either a msgpack array (its elements are
 * checked by the caller) or an integer tensor of shape [n].  Sets *n, *is_tensor and t; the dtype list
 * in the error names the allowed dtypes in the field's own order. */
static int read_int_list(const msgpack_object *o, const char *name, const char *dtypes, const char *array_what,
                         size_t *n, int *is_tensor, proto_tensor *t, proto_error *err)
{
    *is_tensor = o->type == MSGPACK_OBJECT_MAP;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        *n = o->via.array.size;
        return PROTO_OK;
    }
    if (!*is_tensor) return bad_type(err, PROTO_E_BAD_FIELD, name, array_what, o);
    int rc = proto_tensor_from_object(o, name, t, err);
    if (rc) return rc;
    if (t->dtype != PROTO_DT_INT32 && t->dtype != PROTO_DT_INT64 && t->dtype != PROTO_DT_UINT64 &&
        t->dtype != PROTO_DT_UINT8)
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'%s' must have an integer dtype (%s), got %s", name, dtypes,
                          dtype_names[t->dtype]);
    if (t->ndim != 1) return proto_fail(err, PROTO_E_BAD_SHAPE, "'%s' must be 1-D, got %d dimensions", name, t->ndim);
    *n = (size_t)t->shape[0];
    return PROTO_OK;
}

/* world_ids: an array of integers or an integer tensor of shape [n]. */
static int read_world_ids(const msgpack_object *o, const proto_limits *lim, proto_request *r, proto_error *err)
{
    size_t n;
    proto_tensor t = {0};
    int is_tensor;
    int rc = read_int_list(o, "world_ids", "int32, int64, uint64, uint8", "an array of integers or an integer tensor", &n,
                           &is_tensor, &t, err);
    if (rc) return rc;
    if (n == 0) return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "'world_ids' is empty");
    if (n > (size_t)lim->max_worlds)
        return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "'world_ids' has %zu entries, more than the %d worlds a session "
                          "may have", n, lim->max_worlds);
    r->world_ids = malloc(n * sizeof *r->world_ids);
    if (!r->world_ids) return proto_fail(err, PROTO_E_INTERNAL, "out of memory");
    r->nids = (int)n;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (is_tensor) {
            v = tensor_int(&t, i);
        } else {
            const msgpack_object *e = &o->via.array.ptr[i];
            if (!is_int(e)) {
                char f[48];
                snprintf(f, sizeof f, "world_ids[%zu]", i);
                return bad_type(err, PROTO_E_BAD_FIELD, f, "an integer", e);
            }
            v = e->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? e->via.i64
                : e->via.u64 > INT64_MAX                     ? -1
                                                             : (int64_t)e->via.u64;
        }
        if (v < 0 || v > INT32_MAX)
            return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "world_ids[%zu] = %" PRId64 " is out of range", i, v);
        r->world_ids[i] = (int32_t)v;
    }
    return PROTO_OK;
}

static int read_seeds(const msgpack_object *o, const proto_limits *lim, proto_request *r, proto_error *err)
{
    size_t n;
    proto_tensor t = {0};
    int is_tensor;
    int rc0 = read_int_list(o, "seeds", "uint64, int64, int32, uint8",
                            "an array of non-negative integers or an integer tensor", &n, &is_tensor, &t, err);
    if (rc0) return rc0;
    if (n > (size_t)lim->max_worlds)
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'seeds' has %zu entries, more than the %d worlds a session may have",
                          n, lim->max_worlds);
    r->seeds = malloc((n ? n : 1) * sizeof *r->seeds);
    if (!r->seeds) return proto_fail(err, PROTO_E_INTERNAL, "out of memory");
    r->nseeds = (int)n;
    for (size_t i = 0; i < n; i++) {
        if (is_tensor) {
            if (t.dtype != PROTO_DT_UINT64 && tensor_int(&t, i) < 0)
                return proto_fail(err, PROTO_E_BAD_FIELD, "seeds[%zu] = %" PRId64 " is negative", i, tensor_int(&t, i));
            r->seeds[i] = tensor_u64(&t, i);
        } else {
            char f[48];
            snprintf(f, sizeof f, "seeds[%zu]", i);
            int rc = read_u64(&o->via.array.ptr[i], f, &r->seeds[i], err);
            if (rc) return rc;
        }
    }
    return PROTO_OK;
}

static int read_config(const msgpack_object *o, proto_request *r, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_MAP) return bad_type(err, PROTO_E_BAD_FIELD, "config", "a map of key -> number", o);
    if (o->via.map.size > PROTO_MAX_CONFIG)
        return proto_fail(err, PROTO_E_BAD_CONFIG, "'config' has %u entries (at most %d)", o->via.map.size,
                          PROTO_MAX_CONFIG);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_FIELD, "config key", "a string", k);
        proto_kv *kv = &r->config[i];
        int rc = read_str(k, "config key", kv->key, sizeof kv->key, PROTO_E_BAD_CONFIG, err);
        if (rc) return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(r->config[j].key, kv->key))
                return proto_fail(err, PROTO_E_BAD_MESSAGE, "duplicate config key '%s'", kv->key);
        if (!is_num(v)) {
            char f[80];
            snprintf(f, sizeof f, "config.%s", kv->key);
            return bad_type(err, PROTO_E_BAD_FIELD, f, "a number", v);
        }
        kv->value = num_value(v);
        r->nconfig = (int)i + 1;
    }
    return PROTO_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* requests */

enum { K_V, K_ID, K_OP, K_SESSION, K_ENV, K_NUM_WORLDS, K_CONFIG, K_SEED, K_SEEDS, K_AUTORESET, K_WORLD_IDS,
       K_ACTIONS, K_REWARD_TERMS, K_COUNT };
static const char *const key_names[K_COUNT] = {"v", "id", "op", "session", "env", "num_worlds", "config", "seed",
                                               "seeds", "autoreset", "world_ids", "actions", "reward_terms"};
/* Keys each op accepts besides v, id, op. */
static const unsigned op_keys[PROTO_OP_COUNT] = {
    [PROTO_OP_HELLO] = 0,
    [PROTO_OP_MAKE] = 1u << K_ENV | 1u << K_NUM_WORLDS | 1u << K_CONFIG | 1u << K_SEED | 1u << K_AUTORESET,
    [PROTO_OP_RESET] = 1u << K_SESSION | 1u << K_WORLD_IDS | 1u << K_SEEDS | 1u << K_SEED,
    [PROTO_OP_STEP] = 1u << K_SESSION | 1u << K_WORLD_IDS | 1u << K_ACTIONS | 1u << K_REWARD_TERMS,
    [PROTO_OP_CLOSE] = 1u << K_SESSION,
    [PROTO_OP_STATS] = 1u << K_SESSION,
    [PROTO_OP_PING] = 0,
};

void proto_request_init(proto_request *r)
{
    memset(r, 0, sizeof *r);
    r->nids = -1;
    r->nseeds = -1;
}

void proto_request_clear(proto_request *r)
{
    free(r->world_ids);
    free(r->seeds);
    proto_request_init(r);
}

static int decode_fields(const msgpack_object *root, const proto_limits *lim, proto_request *r, proto_error *err)
{
    if (root->type != MSGPACK_OBJECT_MAP) {
        char d[240];
        proto_describe(root, d, sizeof d);
        return proto_fail(err, PROTO_E_BAD_MESSAGE, "a request must be a msgpack map, got %s", d);
    }
    const msgpack_object *val[K_COUNT] = {0};
    const msgpack_object *unknown = NULL;
    for (uint32_t i = 0; i < root->via.map.size; i++) {
        const msgpack_object *k = &root->via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR) {
            char d[240];
            proto_describe(k, d, sizeof d);
            return proto_fail(err, PROTO_E_BAD_MESSAGE, "request keys must be strings, got %s", d);
        }
        int found = -1;
        for (int j = 0; j < K_COUNT; j++)
            if (name_eq(k->via.str.ptr, k->via.str.size, key_names[j])) found = j;
        if (found < 0) {
            if (!unknown) unknown = k;
            continue;
        }
        if (val[found]) return proto_fail(err, PROTO_E_BAD_MESSAGE, "duplicate key '%s'", key_names[found]);
        val[found] = &root->via.map.ptr[i].val;
    }
    int rc;
    /* id first, so that every later error can echo it */
    if (!val[K_ID]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'id' (the request id, an unsigned integer)");
    if ((rc = read_u64(val[K_ID], "id", &r->id, err))) return rc;
    r->has_id = 1;
    if (!val[K_V]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'v' (the protocol version, %d)", PROTO_VERSION);
    if (!is_int(val[K_V])) return bad_type(err, PROTO_E_BAD_FIELD, "v", "an integer", val[K_V]);
    if (val[K_V]->type != MSGPACK_OBJECT_POSITIVE_INTEGER || val[K_V]->via.u64 != PROTO_VERSION) {
        char d[240];
        proto_describe(val[K_V], d, sizeof d);
        return proto_fail(err, PROTO_E_BAD_VERSION, "protocol version %s is not supported (this server speaks %d)",
                          d + 4, PROTO_VERSION);
    }
    if (!val[K_OP]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'op'");
    if (val[K_OP]->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_FIELD, "op", "a string", val[K_OP]);
    int op = -1;
    for (int j = 0; j < PROTO_OP_COUNT; j++)
        if (name_eq(val[K_OP]->via.str.ptr, val[K_OP]->via.str.size, op_names[j])) op = j;
    if (op < 0) {
        char q[200];
        quote(val[K_OP]->via.str.ptr, val[K_OP]->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_UNKNOWN_OP, "unknown op '%s' (expected hello, make, reset, step, close, stats, "
                          "ping)", q);
    }
    r->op = (proto_op)op;
    if (unknown) {
        char q[200];
        quote(unknown->via.str.ptr, unknown->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_BAD_FIELD, "unexpected field '%s' in a '%s' request", q, op_names[op]);
    }
    for (int j = K_SESSION; j < K_COUNT; j++)
        if (val[j] && !(op_keys[op] >> j & 1))
            return proto_fail(err, PROTO_E_BAD_FIELD, "unexpected field '%s' in a '%s' request", key_names[j],
                              op_names[op]);

    /* session */
    if (op == PROTO_OP_RESET || op == PROTO_OP_STEP || op == PROTO_OP_CLOSE) {
        if (!val[K_SESSION]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'session' in a '%s' request", op_names[op]);
    }
    if (val[K_SESSION]) {
        if ((rc = read_u64(val[K_SESSION], "session", &r->session, err))) return rc;
        r->has_session = 1;
    }
    switch (r->op) {
    case PROTO_OP_MAKE:
        if (!val[K_ENV]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'env' (a task name) in a 'make' request");
        if ((rc = read_str(val[K_ENV], "env", r->env, sizeof r->env, PROTO_E_UNKNOWN_ENV, err))) return rc;
        if (!val[K_NUM_WORLDS]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'num_worlds' in a 'make' request");
        if (!is_int(val[K_NUM_WORLDS]))
            return bad_type(err, PROTO_E_BAD_FIELD, "num_worlds", "a positive integer", val[K_NUM_WORLDS]);
        if (val[K_NUM_WORLDS]->type == MSGPACK_OBJECT_NEGATIVE_INTEGER || val[K_NUM_WORLDS]->via.u64 == 0)
            return bad_type(err, PROTO_E_BAD_FIELD, "num_worlds", "a positive integer", val[K_NUM_WORLDS]);
        r->num_worlds = val[K_NUM_WORLDS]->via.u64 > INT64_MAX ? INT64_MAX : (int64_t)val[K_NUM_WORLDS]->via.u64;
        if (val[K_CONFIG] && (rc = read_config(val[K_CONFIG], r, err))) return rc;
        if (val[K_SEED]) {
            if ((rc = read_u64(val[K_SEED], "seed", &r->seed, err))) return rc;
            r->has_seed = 1;
        }
        r->autoreset = ENV_AUTORESET_NEXT_STEP;
        if (val[K_AUTORESET]) {
            const msgpack_object *a = val[K_AUTORESET];
            int m = a->type == MSGPACK_OBJECT_STR ? proto_autoreset_from_name(a->via.str.ptr, a->via.str.size) : -1;
            if (m < 0) return bad_type(err, PROTO_E_BAD_FIELD, "autoreset", "one of 'next_step', 'same_step', 'disabled'", a);
            r->autoreset = (env_autoreset)m;
            r->has_autoreset = 1;
        }
        break;
    case PROTO_OP_RESET:
        if (val[K_WORLD_IDS] && (rc = read_world_ids(val[K_WORLD_IDS], lim, r, err))) return rc;
        if (val[K_SEED] && val[K_SEEDS])
            return proto_fail(err, PROTO_E_BAD_FIELD, "give either 'seed' or 'seeds', not both");
        if (val[K_SEED]) {
            if ((rc = read_u64(val[K_SEED], "seed", &r->seed, err))) return rc;
            r->has_seed = 1;
        }
        if (val[K_SEEDS]) {
            if ((rc = read_seeds(val[K_SEEDS], lim, r, err))) return rc;
            if (r->nids >= 0 && r->nseeds != r->nids)
                return proto_fail(err, PROTO_E_BAD_SHAPE, "'seeds' has %d entries for %d world ids", r->nseeds, r->nids);
        }
        break;
    case PROTO_OP_STEP:
        if (val[K_WORLD_IDS] && (rc = read_world_ids(val[K_WORLD_IDS], lim, r, err))) return rc;
        if (!val[K_ACTIONS])
            return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'actions' (float32 tensor [n, act_dim]) in a 'step' "
                              "request");
        if ((rc = proto_tensor_from_object(val[K_ACTIONS], "actions", &r->actions, err))) return rc;
        r->has_actions = 1;
        if (r->actions.dtype != PROTO_DT_FLOAT32)
            return proto_fail(err, PROTO_E_BAD_DTYPE, "'actions' must be float32, got %s", dtype_names[r->actions.dtype]);
        if (r->actions.ndim != 2)
            return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' must be 2-D [n, act_dim], got %d dimensions",
                              r->actions.ndim);
        if (r->actions.shape[0] > (uint64_t)lim->max_worlds)
            return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' has %" PRIu64 " rows, more than the %d worlds a session "
                              "may have", r->actions.shape[0], lim->max_worlds);
        if (r->nids >= 0 && r->actions.shape[0] != (uint64_t)r->nids)
            return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' has %" PRIu64 " rows for %d world ids",
                              r->actions.shape[0], r->nids);
        if (val[K_REWARD_TERMS]) {
            if (val[K_REWARD_TERMS]->type != MSGPACK_OBJECT_BOOLEAN)
                return bad_type(err, PROTO_E_BAD_FIELD, "reward_terms", "a bool", val[K_REWARD_TERMS]);
            r->reward_terms = val[K_REWARD_TERMS]->via.boolean;
        }
        break;
    default: break;
    }
    return PROTO_OK;
}

int proto_decode_request(const void *buf, size_t len, const proto_limits *lim, proto_request *r, proto_error *err)
{
    proto_limits dl;
    if (!lim) {
        proto_limits_default(&dl);
        lim = &dl;
    }
    proto_request_clear(r);
    if (len > lim->max_message_bytes) {
        r->has_id = proto_peek_id(buf, len, &r->id);
        return proto_fail(err, PROTO_E_TOO_LARGE, "message of %zu bytes exceeds the limit of %zu bytes", len,
                          lim->max_message_bytes);
    }
    msgpack_zone z;
    if (!msgpack_zone_init(&z, 2048)) return proto_fail(err, PROTO_E_INTERNAL, "out of memory");
    msgpack_object root;
    int rc = unpack_exact(buf, len, lim, 1, &z, &root, err);
    if (rc == PROTO_OK) rc = decode_fields(&root, lim, r, err);
    else r->has_id = proto_peek_id(buf, len, &r->id);
    msgpack_zone_destroy(&z);
    if (rc != PROTO_OK) {
        uint64_t id = r->id;
        int has = r->has_id;
        proto_request_clear(r);
        r->id = id;
        r->has_id = has;
    }
    return rc;
}

/* ------------------------------------------------------------------------------------------------ */
/* checks against a session */

int proto_check_world_ids(const int32_t *ids, int n, int num_worlds, uint8_t *scratch, proto_error *err)
{
    if (n <= 0) return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "'world_ids' is empty");
    int bad = -1, dup = 0;
    for (int i = 0; i < n; i++) {
        int32_t w = ids[i];
        if (w < 0 || w >= num_worlds) { bad = i; break; }
        if (scratch[w >> 3] >> (w & 7) & 1) { bad = i; dup = 1; break; }
        scratch[w >> 3] |= (uint8_t)(1u << (w & 7));
    }
    for (int i = 0; i < (bad < 0 ? n : bad); i++) scratch[ids[i] >> 3] = 0;
    if (bad < 0) return PROTO_OK;
    if (dup) {
        int first = 0;
        while (ids[first] != ids[bad]) first++;
        return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "world_ids[%d] = %d repeats world_ids[%d]", bad, ids[bad], first);
    }
    return proto_fail(err, PROTO_E_BAD_WORLD_IDS, "world_ids[%d] = %d is out of range: the session has %d worlds "
                      "(0 .. %d)", bad, ids[bad], num_worlds, num_worlds - 1);
}

int proto_check_actions(const proto_tensor *t, int n, int act_dim, const int32_t *ids, proto_error *err)
{
    if (t->dtype != PROTO_DT_FLOAT32)
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'actions' must be float32, got %s", proto_dtype_name(t->dtype));
    if (t->ndim != 2 || t->shape[0] != (uint64_t)n || t->shape[1] != (uint64_t)act_dim) {
        char shp[96] = "";
        for (int i = 0; i < t->ndim; i++)
            snprintf(shp + strlen(shp), sizeof shp - strlen(shp), "%s%" PRIu64, i ? ", " : "", t->shape[i]);
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' has shape [%s], expected [%d, %d] (%d worlds x act_dim %d)",
                          shp, n, act_dim, n, act_dim);
    }
    size_t total = (size_t)n * (size_t)act_dim;
    const uint8_t *p = t->data;
    /* exponent bits all ones = inf or NaN; scan in blocks so the common case vectorizes */
    size_t i = 0;
    while (i < total) {
        size_t end = total - i > 256 ? i + 256 : total;
        uint32_t any = 0;
        for (size_t k = i; k < end; k++) {
            uint32_t u;
            memcpy(&u, p + 4 * k, 4);
            any |= ((u & 0x7f800000u) == 0x7f800000u);
        }
        if (any) {
            for (size_t k = i; k < end; k++) {
                float f;
                memcpy(&f, p + 4 * k, 4);
                if (!isfinite(f)) {
                    int row = (int)(k / (size_t)act_dim), col = (int)(k % (size_t)act_dim);
                    if (ids)
                        return proto_fail(err, PROTO_E_NON_FINITE, "actions[%d][%d] = %g (world %d) is not finite", row,
                                          col, (double)f, ids[row]);
                    return proto_fail(err, PROTO_E_NON_FINITE, "actions[%d][%d] = %g (world %d) is not finite", row, col,
                                      (double)f, row);
                }
            }
        }
        i = end;
    }
    return PROTO_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* replies (client side) */

const msgpack_object *proto_map_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && name_eq(k->via.str.ptr, k->via.str.size, key))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static const msgpack_object *need(const msgpack_object *map, const char *key, proto_error *err)
{
    const msgpack_object *o = proto_map_get(map, key);
    if (!o) proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", key);
    return o;
}

int proto_get_uint(const msgpack_object *map, const char *key, uint64_t *v, proto_error *err)
{
    const msgpack_object *o = need(map, key, err);
    if (!o) return PROTO_E_BAD_REPLY;
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return bad_type(err, PROTO_E_BAD_REPLY, key, "an unsigned integer", o);
    *v = o->via.u64;
    return PROTO_OK;
}

int proto_get_int(const msgpack_object *map, const char *key, int64_t *v, proto_error *err)
{
    const msgpack_object *o = need(map, key, err);
    if (!o) return PROTO_E_BAD_REPLY;
    if (!is_int(o) || (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 > INT64_MAX))
        return bad_type(err, PROTO_E_BAD_REPLY, key, "an integer", o);
    *v = o->via.i64;
    return PROTO_OK;
}

int proto_get_f64(const msgpack_object *map, const char *key, double *v, proto_error *err)
{
    const msgpack_object *o = need(map, key, err);
    if (!o) return PROTO_E_BAD_REPLY;
    if (!is_num(o)) return bad_type(err, PROTO_E_BAD_REPLY, key, "a number", o);
    *v = num_value(o);
    return PROTO_OK;
}

int proto_get_bool(const msgpack_object *map, const char *key, int *v, proto_error *err)
{
    const msgpack_object *o = need(map, key, err);
    if (!o) return PROTO_E_BAD_REPLY;
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return bad_type(err, PROTO_E_BAD_REPLY, key, "a bool", o);
    *v = o->via.boolean;
    return PROTO_OK;
}

/* Copies a string, truncating to cap - 1 bytes. */
static int copy_str(const msgpack_object *o, const char *key, char *out, size_t cap, proto_error *err)
{
    if (!o) return proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", key);
    if (o->type != MSGPACK_OBJECT_STR) return bad_type(err, PROTO_E_BAD_REPLY, key, "a string", o);
    size_t n = o->via.str.size < cap - 1 ? o->via.str.size : cap - 1;
    memcpy(out, o->via.str.ptr, n);
    out[n] = 0;
    return PROTO_OK;
}

int proto_get_str(const msgpack_object *map, const char *key, char *out, size_t cap, proto_error *err)
{
    return copy_str(proto_map_get(map, key), key, out, cap, err);
}

int proto_get_tensor(const msgpack_object *map, const char *key, proto_dtype dt, int ndim, const int64_t *shape,
                     proto_tensor *t, proto_error *err)
{
    const msgpack_object *o = need(map, key, err);
    if (!o) return PROTO_E_BAD_REPLY;
    proto_error e;
    if (proto_tensor_from_object(o, key, t, &e)) return proto_fail(err, PROTO_E_BAD_REPLY, "%s", e.message);
    if (t->dtype != dt)
        return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' is %s, expected %s", key, dtype_names[t->dtype], dtype_names[dt]);
    if (t->ndim != ndim) return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' has %d dimensions, expected %d", key, t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape && shape[i] >= 0 && t->shape[i] != (uint64_t)shape[i])
            return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' has size %" PRIu64 " in dimension %d, expected %" PRId64, key,
                              t->shape[i], i, shape[i]);
    return PROTO_OK;
}

int proto_decode_reply(const void *buf, size_t len, proto_reply *r, proto_error *err)
{
    memset(r, 0, sizeof *r);
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_message_bytes = (size_t)-1;
    lim.max_objects = (size_t)-1;
    if (!msgpack_zone_init(&r->zone, 8192)) return proto_fail(err, PROTO_E_INTERNAL, "out of memory");
    r->has_zone = 1;
    int rc = unpack_exact(buf, len, &lim, 0, &r->zone, &r->root, err);
    if (rc) return rc;
    if (r->root.type != MSGPACK_OBJECT_MAP) return proto_fail(err, PROTO_E_BAD_REPLY, "a reply must be a map");
    uint64_t v = 0;
    if ((rc = proto_get_uint(&r->root, "v", &v, err))) return rc;
    if (v != PROTO_VERSION)
        return proto_fail(err, PROTO_E_BAD_REPLY, "reply has protocol version %" PRIu64 ", expected %d", v, PROTO_VERSION);
    if ((rc = proto_get_uint(&r->root, "id", &r->id, err))) return rc;
    if ((rc = proto_get_bool(&r->root, "ok", &r->ok, err))) return rc;
    if (!r->ok) {
        const msgpack_object *e = need(&r->root, "error", err);
        if (!e) return PROTO_E_BAD_REPLY;
        const msgpack_object *c = proto_map_get(e, "code");
        char msg[PROTO_MSG_MAX];
        if ((rc = copy_str(proto_map_get(e, "message"), "error.message", msg, sizeof msg, err))) return rc;
        if (!c || c->type != MSGPACK_OBJECT_STR) return proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks 'error.code'");
        proto_code code = proto_code_from_name(c->via.str.ptr, c->via.str.size);
        if (code == PROTO_E_COUNT || code == PROTO_OK) {
            char q[200];
            quote(c->via.str.ptr, c->via.str.size, q, sizeof q);
            r->error.code = PROTO_E_INTERNAL;
            snprintf(r->error.message, sizeof r->error.message, "%.60s: %.250s", q, msg);
        } else {
            r->error.code = code;
            snprintf(r->error.message, sizeof r->error.message, "%s", msg);
        }
    }
    return PROTO_OK;
}

void proto_reply_clear(proto_reply *r)
{
    if (r->has_zone) msgpack_zone_destroy(&r->zone);
    memset(r, 0, sizeof *r);
}

static int decode_fields_array(const msgpack_object *a, const char *what, env_field *f, int max, int *count,
                               proto_error *err)
{
    if (!a || a->type != MSGPACK_OBJECT_ARRAY) return proto_fail(err, PROTO_E_BAD_REPLY, "spec lacks the '%s' array", what);
    if ((int)a->via.array.size > max)
        return proto_fail(err, PROTO_E_BAD_REPLY, "spec has %u %s fields (at most %d)", a->via.array.size, what, max);
    *count = (int)a->via.array.size;
    for (int i = 0; i < *count; i++) {
        const msgpack_object *m = &a->via.array.ptr[i];
        int64_t off = 0, size = 0;
        double lo = 0, hi = 0, sc = 0;
        int rc;
        if ((rc = proto_get_str(m, "name", f[i].name, sizeof f[i].name, err)) || (rc = proto_get_int(m, "offset", &off, err)) ||
            (rc = proto_get_int(m, "size", &size, err)) || (rc = proto_get_f64(m, "low", &lo, err)) ||
            (rc = proto_get_f64(m, "high", &hi, err)) || (rc = proto_get_f64(m, "scale", &sc, err)) ||
            (rc = proto_get_str(m, "unit", f[i].unit, sizeof f[i].unit, err)))
            return rc;
        f[i].offset = (int)off;
        f[i].size = (int)size;
        f[i].low = (float)lo;
        f[i].high = (float)hi;
        f[i].scale = (float)sc;
    }
    return PROTO_OK;
}

int proto_decode_spec(const msgpack_object *o, env_spec *s, proto_error *err)
{
    memset(s, 0, sizeof *s);
    if (!o || o->type != MSGPACK_OBJECT_MAP) return proto_fail(err, PROTO_E_BAD_REPLY, "a spec must be a map");
    int64_t i64;
    int rc;
    if ((rc = proto_get_str(o, "name", s->name, sizeof s->name, err))) return rc;
    if ((rc = proto_get_str(o, "doc", s->doc, sizeof s->doc, err))) return rc;
    if ((rc = proto_get_int(o, "obs_dim", &i64, err))) return rc;
    s->obs_dim = (int)i64;
    if ((rc = proto_get_int(o, "act_dim", &i64, err))) return rc;
    s->act_dim = (int)i64;
    if ((rc = decode_fields_array(proto_map_get(o, "obs"), "obs", s->obs, ENV_MAX_FIELDS, &s->nobs, err))) return rc;
    if ((rc = decode_fields_array(proto_map_get(o, "act"), "act", s->act, ENV_MAX_FIELDS, &s->nact, err))) return rc;
    if ((rc = proto_get_f64(o, "sim_dt", &s->sim_dt, err))) return rc;
    if ((rc = proto_get_int(o, "decimation", &i64, err))) return rc;
    s->decimation = (int)i64;
    if ((rc = proto_get_f64(o, "control_dt", &s->control_dt, err))) return rc;
    if ((rc = proto_get_f64(o, "episode_seconds", &s->episode_seconds, err))) return rc;
    if ((rc = proto_get_int(o, "max_episode_steps", &i64, err))) return rc;
    s->max_episode_steps = (int)i64;
    const msgpack_object *c = proto_map_get(o, "config");
    if (!c || c->type != MSGPACK_OBJECT_ARRAY) return proto_fail(err, PROTO_E_BAD_REPLY, "spec lacks the 'config' array");
    if (c->via.array.size > ENV_MAX_CONFIG)
        return proto_fail(err, PROTO_E_BAD_REPLY, "spec has %u config keys (at most %d)", c->via.array.size, ENV_MAX_CONFIG);
    s->nconfig = (int)c->via.array.size;
    for (int i = 0; i < s->nconfig; i++) {
        const msgpack_object *m = &c->via.array.ptr[i];
        env_config_key *k = &s->config[i];
        if ((rc = proto_get_str(m, "key", k->key, sizeof k->key, err)) || (rc = proto_get_f64(m, "default", &k->def, err)) ||
            (rc = proto_get_f64(m, "lo", &k->lo, err)) || (rc = proto_get_f64(m, "hi", &k->hi, err)) ||
            (rc = proto_get_bool(m, "is_int", &k->is_int, err)) || (rc = proto_get_str(m, "doc", k->doc, sizeof k->doc, err)))
            return rc;
    }
    const msgpack_object *t = proto_map_get(o, "reward_terms");
    if (!t || t->type != MSGPACK_OBJECT_ARRAY) return proto_fail(err, PROTO_E_BAD_REPLY, "spec lacks 'reward_terms'");
    if (t->via.array.size > ENV_MAX_TERMS)
        return proto_fail(err, PROTO_E_BAD_REPLY, "spec has %u reward terms (at most %d)", t->via.array.size, ENV_MAX_TERMS);
    s->nterms = (int)t->via.array.size;
    for (int i = 0; i < s->nterms; i++)
        if ((rc = copy_str(&t->via.array.ptr[i], "reward_terms[]", s->terms[i], sizeof s->terms[i], err))) return rc;
    return PROTO_OK;
}

/* proto_write.c — encoding side of the wire protocol: an aligned growable buffer, a MessagePack
 * writer, request encoding (clients) and reply encoding (server).  See proto.h and PROTOCOL.md. */
#include "proto.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* buffer */

void proto_buf_init(proto_buf *b) { memset(b, 0, sizeof *b); }

void proto_buf_free(proto_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void proto_buf_reset(proto_buf *b)
{
    b->len = 0;
    b->oom = 0;
}

int proto_buf_reserve(proto_buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (extra <= b->cap - b->len) return 0;
    size_t need = b->len + extra;
    if (need < b->len) {
        b->oom = 1;
        return -1;
    }
    /* the first allocation takes what is asked (encoders reserve their size up front); growth doubles */
    size_t cap = b->cap ? (b->cap > SIZE_MAX / 2 ? need : 2 * b->cap) : 256;
    if (cap < need) cap = need;
    if (cap > SIZE_MAX - 63) {
        b->oom = 1;
        return -1;
    }
    cap = (cap + 63) & ~(size_t)63;
    uint8_t *p = aligned_alloc(64, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    if (b->len) memcpy(p, b->data, b->len);
    free(b->data);
    b->data = p;
    b->cap = cap;
    return 0;
}

uint8_t *proto_buf_steal(proto_buf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len) *len = b->len;
    memset(b, 0, sizeof *b);
    return p;
}

static inline void put(proto_buf *b, const void *p, size_t n)
{
    if (proto_buf_reserve(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void put1(proto_buf *b, uint8_t c) { put(b, &c, 1); }

static void put_be(proto_buf *b, uint8_t tag, uint64_t v, int n)
{
    uint8_t t[9];
    t[0] = tag;
    for (int i = 0; i < n; i++) t[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    put(b, t, 1 + (size_t)n);
}

/* ------------------------------------------------------------------------------------------------ */
/* MessagePack writer */

void proto_w_nil(proto_buf *b) { put1(b, 0xc0); }
void proto_w_bool(proto_buf *b, int v) { put1(b, v ? 0xc3 : 0xc2); }

void proto_w_uint(proto_buf *b, uint64_t v)
{
    if (v <= 0x7f) put1(b, (uint8_t)v);
    else if (v <= 0xff) put_be(b, 0xcc, v, 1);
    else if (v <= 0xffff) put_be(b, 0xcd, v, 2);
    else if (v <= 0xffffffffu) put_be(b, 0xce, v, 4);
    else put_be(b, 0xcf, v, 8);
}

void proto_w_int(proto_buf *b, int64_t v)
{
    if (v >= 0) proto_w_uint(b, (uint64_t)v);
    else if (v >= -32) put1(b, (uint8_t)(int8_t)v);
    else if (v >= INT8_MIN) put_be(b, 0xd0, (uint64_t)v & 0xff, 1);
    else if (v >= INT16_MIN) put_be(b, 0xd1, (uint64_t)v & 0xffff, 2);
    else if (v >= INT32_MIN) put_be(b, 0xd2, (uint64_t)v & 0xffffffffu, 4);
    else put_be(b, 0xd3, (uint64_t)v, 8);
}

void proto_w_f64(proto_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put_be(b, 0xcb, u, 8);
}

void proto_w_strn(proto_buf *b, const char *s, size_t n)
{
    if (n <= 31) put1(b, (uint8_t)(0xa0 | n));
    else if (n <= 0xff) put_be(b, 0xd9, n, 1);
    else if (n <= 0xffff) put_be(b, 0xda, n, 2);
    else put_be(b, 0xdb, n, 4);
    put(b, s, n);
}

void proto_w_str(proto_buf *b, const char *s) { proto_w_strn(b, s, strlen(s)); }

void proto_w_bin(proto_buf *b, const void *p, size_t n)
{
    if (n <= 0xff) put_be(b, 0xc4, n, 1);
    else if (n <= 0xffff) put_be(b, 0xc5, n, 2);
    else put_be(b, 0xc6, n, 4);
    put(b, p, n);
}

void proto_w_array(proto_buf *b, uint32_t n)
{
    if (n <= 15) put1(b, (uint8_t)(0x90 | n));
    else if (n <= 0xffff) put_be(b, 0xdc, n, 2);
    else put_be(b, 0xdd, n, 4);
}

void proto_w_map(proto_buf *b, uint32_t n)
{
    if (n <= 15) put1(b, (uint8_t)(0x80 | n));
    else if (n <= 0xffff) put_be(b, 0xde, n, 2);
    else put_be(b, 0xdf, n, 4);
}

static size_t uint_len(uint64_t v) { return v <= 0x7f ? 1 : v <= 0xff ? 2 : v <= 0xffff ? 3 : v <= 0xffffffffu ? 5 : 9; }

/* The alignment rule (PROTOCOL.md, "Alignment"): with minimal keys, the tensor map takes
 *   1 (fixmap) + 6 ("dtype") + 1 + |dtype| + 6 ("shape") + |shape array| + 5 ("data") + 5 (bin 32 head)
 * bytes before its data.  pad = bytes missing to the next multiple of 8; bit 0 of pad writes "dtype"
 * as str 8 (+1 byte), bit 1 writes "shape" as str 16 (+2), bit 2 writes "data" as str 32 (+4). */
static size_t w_tensor(proto_buf *b, proto_dtype dt, int ndim, const uint64_t *shape, const void *data, int zero)
{
    const char *dn = proto_dtype_name(dt);
    size_t dlen = strlen(dn);
    uint64_t count = 1;
    size_t shape_len = 1;
    for (int i = 0; i < ndim; i++) {
        count *= shape[i];
        shape_len += uint_len(shape[i]);
    }
    size_t nbytes = (size_t)count * proto_dtype_size(dt);
    if (nbytes > 0xffffffffu) {
        b->oom = 1;
        return 0;
    }
    size_t l0 = b->len + 1 + 6 + 1 + dlen + 6 + shape_len + 5 + 5;
    unsigned pad = (unsigned)((PROTO_ALIGN - l0 % PROTO_ALIGN) % PROTO_ALIGN);
    if (proto_buf_reserve(b, l0 - b->len + pad + nbytes)) return 0;
    put1(b, 0x83);
    if (pad & 1) put(b, "\xd9\x05" "dtype", 7);
    else put(b, "\xa5" "dtype", 6);
    proto_w_strn(b, dn, dlen);
    if (pad & 2) put(b, "\xda\x00\x05" "shape", 8);
    else put(b, "\xa5" "shape", 6);
    proto_w_array(b, (uint32_t)ndim);
    for (int i = 0; i < ndim; i++) proto_w_uint(b, shape[i]);
    if (pad & 4) put(b, "\xdb\x00\x00\x00\x04" "data", 9);
    else put(b, "\xa4" "data", 5);
    put_be(b, 0xc6, nbytes, 4);
    size_t off = b->len;
    if (data) memcpy(b->data + off, data, nbytes);
    else if (zero) memset(b->data + off, 0, nbytes);
    b->len += nbytes;
    return off;
}

size_t proto_w_tensor(proto_buf *b, proto_dtype dt, int ndim, const uint64_t *shape, const void *data)
{
    return w_tensor(b, dt, ndim, shape, data, 1);
}

/* key: a tensor reserved and left unwritten (the reset / step reply regions, which the workers fill
 * entirely).  Returns the data offset. */
static size_t kv_region(proto_buf *b, const char *key, proto_dtype dt, int ndim, const uint64_t *shape)
{
    proto_w_str(b, key);
    return w_tensor(b, dt, ndim, shape, NULL, 0);
}

/* ------------------------------------------------------------------------------------------------ */
/* map entries with a string key */

static void kv_uint(proto_buf *b, const char *key, uint64_t v) { proto_w_str(b, key); proto_w_uint(b, v); }
static void kv_int(proto_buf *b, const char *key, int64_t v) { proto_w_str(b, key); proto_w_int(b, v); }
static void kv_f64(proto_buf *b, const char *key, double v) { proto_w_str(b, key); proto_w_f64(b, v); }
static void kv_str(proto_buf *b, const char *key, const char *v) { proto_w_str(b, key); proto_w_str(b, v); }
static void kv_bool(proto_buf *b, const char *key, int v) { proto_w_str(b, key); proto_w_bool(b, v); }

/* Struct members written as map entries, in table order: {key, type, offset of the member}. */
typedef enum { FT_U64, FT_I64, FT_INT, FT_F64, FT_F32, FT_BOOL, FT_CHARS, FT_STRP } field_type;
typedef struct {
    const char *key;
    field_type type;
    size_t off;
} field_desc;
#define FIELD(st, member, type, key) {key, type, offsetof(st, member)}
/* the common case: the key is the member's name */
#define MEMBER(st, member, type) FIELD(st, member, type, #member)
#define NFIELDS(t) ((int)(sizeof(t) / sizeof((t)[0])))

static void kv_members(proto_buf *b, const void *obj, const field_desc *d, int n)
{
    for (int i = 0; i < n; i++) {
        const void *p = (const char *)obj + d[i].off;
        switch (d[i].type) {
        case FT_U64: kv_uint(b, d[i].key, *(const uint64_t *)p); break;
        case FT_I64: kv_int(b, d[i].key, *(const int64_t *)p); break;
        case FT_INT: kv_int(b, d[i].key, *(const int *)p); break;
        case FT_F64: kv_f64(b, d[i].key, *(const double *)p); break;
        case FT_F32: kv_f64(b, d[i].key, *(const float *)p); break;
        case FT_BOOL: kv_bool(b, d[i].key, *(const int *)p); break;
        case FT_CHARS: kv_str(b, d[i].key, (const char *)p); break;
        case FT_STRP: kv_str(b, d[i].key, *(const char *const *)p); break;
        }
    }
}

/* A struct as a map of the members of table d. */
static void w_struct(proto_buf *b, const void *obj, const field_desc *d, int n)
{
    proto_w_map(b, (uint32_t)n);
    kv_members(b, obj, d, n);
}

static const field_desc env_field_desc[] = {
    MEMBER(env_field, name, FT_CHARS), MEMBER(env_field, offset, FT_INT), MEMBER(env_field, size, FT_INT),
    MEMBER(env_field, low, FT_F32),    MEMBER(env_field, high, FT_F32),   MEMBER(env_field, scale, FT_F32),
    MEMBER(env_field, unit, FT_CHARS),
};
static const field_desc config_key_desc[] = {
    MEMBER(env_config_key, key, FT_CHARS), FIELD(env_config_key, def, FT_F64, "default"),
    MEMBER(env_config_key, lo, FT_F64),    MEMBER(env_config_key, hi, FT_F64),
    MEMBER(env_config_key, is_int, FT_BOOL), MEMBER(env_config_key, doc, FT_CHARS),
};
/* a spec: these, then "obs" and "act", then spec_tail_desc, then "config" and "reward_terms" */
static const field_desc spec_head_desc[] = {
    MEMBER(env_spec, name, FT_CHARS), MEMBER(env_spec, doc, FT_CHARS), MEMBER(env_spec, obs_dim, FT_INT),
    MEMBER(env_spec, act_dim, FT_INT),
};
static const field_desc spec_tail_desc[] = {
    MEMBER(env_spec, sim_dt, FT_F64), MEMBER(env_spec, decimation, FT_INT), MEMBER(env_spec, control_dt, FT_F64),
    MEMBER(env_spec, episode_seconds, FT_F64), MEMBER(env_spec, max_episode_steps, FT_INT),
};
static const field_desc server_stats_desc[] = {
    MEMBER(proto_server_stats, uptime_s, FT_F64), MEMBER(proto_server_stats, sessions, FT_I64),
    MEMBER(proto_server_stats, worlds, FT_I64),   MEMBER(proto_server_stats, steps, FT_U64),
    MEMBER(proto_server_stats, steps_per_s, FT_F64), MEMBER(proto_server_stats, requests, FT_U64),
    MEMBER(proto_server_stats, errors, FT_U64),   MEMBER(proto_server_stats, threads, FT_INT),
};
static const field_desc session_stats_desc[] = {
    MEMBER(proto_session_stats, session, FT_U64), MEMBER(proto_session_stats, env, FT_STRP),
    MEMBER(proto_session_stats, num_worlds, FT_I64), MEMBER(proto_session_stats, steps, FT_U64),
    MEMBER(proto_session_stats, steps_per_s, FT_F64), MEMBER(proto_session_stats, age_s, FT_F64),
    MEMBER(proto_session_stats, idle_s, FT_F64), MEMBER(proto_session_stats, requests, FT_U64),
    MEMBER(proto_session_stats, errors, FT_U64),
};
static const field_desc hello_limits_desc[] = {
    MEMBER(proto_hello_info, max_message_bytes, FT_U64), MEMBER(proto_hello_info, max_worlds_per_session, FT_I64),
    MEMBER(proto_hello_info, max_worlds, FT_I64),
};

/* ------------------------------------------------------------------------------------------------ */
/* requests */

/* "session" and, when the request has one, "token". */
static void kv_session(proto_buf *b, const proto_request *r)
{
    kv_uint(b, "session", r->session);
    if (r->has_token) {
        proto_w_str(b, "token");
        proto_w_bin(b, r->token, PROTO_TOKEN_BYTES);
    }
}

int proto_encode_request(proto_buf *b, const proto_request *r)
{
    int writes_session = r->op == PROTO_OP_RESET || r->op == PROTO_OP_STEP || r->op == PROTO_OP_CLOSE ||
                         r->op == PROTO_OP_MODEL || r->op == PROTO_OP_POSES ||
                         (r->op == PROTO_OP_STATS && r->has_session);
    uint32_t n = 3 + (writes_session && r->has_token);
    switch (r->op) {
    case PROTO_OP_MAKE: n += 2 + (r->nconfig > 0) + !!r->has_seed + !!r->has_autoreset + !!r->critic_obs; break;
    case PROTO_OP_RESET: n += 1 + (r->world_ids != NULL) + (r->seeds != NULL || r->has_seed); break;
    case PROTO_OP_STEP: n += 2 + (r->world_ids != NULL) + !!r->reward_terms; break;
    case PROTO_OP_CLOSE: n += 1; break;
    case PROTO_OP_STATS: n += !!r->has_session; break;
    case PROTO_OP_MODEL: n += 1 + !!r->has_terrain_region; break;
    case PROTO_OP_POSES: n += 1 + (r->world_ids != NULL) + !!r->contacts + !!r->latest + !!r->diagnostics; break;
    default: break;
    }
    proto_w_map(b, n);
    kv_uint(b, "v", PROTO_VERSION);
    kv_uint(b, "id", r->id);
    kv_str(b, "op", proto_op_name(r->op));
    switch (r->op) {
    case PROTO_OP_MAKE:
        kv_str(b, "env", r->env);
        kv_int(b, "num_worlds", r->num_worlds);
        if (r->nconfig > 0) {
            proto_w_str(b, "config");
            proto_w_map(b, (uint32_t)r->nconfig);
            for (int i = 0; i < r->nconfig; i++) {
                proto_w_str(b, r->config[i].key);
                if (r->config_name[i][0])
                    proto_w_str(b, r->config_name[i]);
                else
                    proto_w_f64(b, r->config[i].value);
            }
        }
        if (r->has_seed) {
            kv_uint(b, "seed", r->seed);
        }
        if (r->has_autoreset) {
            kv_str(b, "autoreset", proto_autoreset_name(r->autoreset));
        }
        if (r->critic_obs) {
            kv_bool(b, "critic_obs", 1);
        }
        break;
    case PROTO_OP_RESET:
    case PROTO_OP_STEP:
    case PROTO_OP_POSES:
        kv_session(b, r);
        if (r->world_ids) {
            uint64_t shp = (uint64_t)r->nids;
            proto_w_str(b, "world_ids");
            /* host byte order = little-endian (x86-64, aarch64; see PROTOCOL.md) */
            proto_w_tensor(b, PROTO_DT_INT32, 1, &shp, r->world_ids);
        }
        if (r->op == PROTO_OP_POSES) {
            if (r->contacts) {
                kv_bool(b, "contacts", 1);
            }
            if (r->latest) {
                kv_bool(b, "latest", 1);
            }
            if (r->diagnostics) {
                kv_bool(b, "diagnostics", 1);
            }
        } else if (r->op == PROTO_OP_RESET) {
            if (r->seeds) {
                uint64_t shp = (uint64_t)r->nseeds;
                proto_w_str(b, "seeds");
                proto_w_tensor(b, PROTO_DT_UINT64, 1, &shp, r->seeds);
            } else if (r->has_seed) {
                kv_uint(b, "seed", r->seed);
            }
        } else {
            proto_w_str(b, "actions");
            proto_w_tensor(b, r->actions.dtype, r->actions.ndim, r->actions.shape, r->actions.data);
            if (r->reward_terms) {
                kv_bool(b, "reward_terms", 1);
            }
        }
        break;
    case PROTO_OP_CLOSE:
    case PROTO_OP_STATS:
    case PROTO_OP_MODEL:
        if (r->has_session || r->op != PROTO_OP_STATS) kv_session(b, r);
        if (r->op == PROTO_OP_MODEL && r->has_terrain_region) {
            proto_w_str(b, "terrain_region");
            proto_w_array(b, 4);
            for (int i = 0; i < 4; i++) proto_w_f64(b, r->terrain_region[i]);
        }
        break;
    default: break;
    }
    return b->oom ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* replies */

void proto_w_reply_head(proto_buf *b, uint64_t id, uint32_t nmore)
{
    proto_w_map(b, 3 + nmore);
    kv_uint(b, "v", PROTO_VERSION);
    kv_uint(b, "id", id);
    kv_bool(b, "ok", 1);
}

int proto_encode_error(proto_buf *b, uint64_t id, proto_code code, const char *message)
{
    proto_w_map(b, 4);
    kv_uint(b, "v", PROTO_VERSION);
    kv_uint(b, "id", id);
    kv_bool(b, "ok", 0);
    proto_w_str(b, "error");
    proto_w_map(b, 2);
    kv_str(b, "code", proto_code_name(code));
    kv_str(b, "message", message ? message : "");
    return b->oom ? -1 : 0;
}

static void w_fields(proto_buf *b, const env_field *f, int n)
{
    proto_w_array(b, (uint32_t)n);
    for (int i = 0; i < n; i++) w_struct(b, &f[i], env_field_desc, NFIELDS(env_field_desc));
}

/* A spec; with_critic 0 leaves its critic observation out (a session made without critic_obs). */
static void w_spec(proto_buf *b, const env_spec *s, int with_critic)
{
    /* the critic's observation only in specs that have one (minor 4): other specs encode as before */
    const int critic = with_critic && s->critic_dim > 0, terrain = s->nterrain_kinds > 0;
    proto_w_map(b, 13 + 2 * critic + terrain);
    kv_members(b, s, spec_head_desc, NFIELDS(spec_head_desc));
    proto_w_str(b, "obs");
    w_fields(b, s->obs, s->nobs);
    proto_w_str(b, "act");
    w_fields(b, s->act, s->nact);
    kv_members(b, s, spec_tail_desc, NFIELDS(spec_tail_desc));
    proto_w_str(b, "config");
    proto_w_array(b, (uint32_t)s->nconfig);
    for (int i = 0; i < s->nconfig; i++) {
        const env_config_key *c = &s->config[i];
        /* "choices" only on keys that have them (minor version 1): plain keys encode as before */
        proto_w_map(b, (uint32_t)NFIELDS(config_key_desc) + (c->nchoices > 0));
        kv_members(b, c, config_key_desc, NFIELDS(config_key_desc));
        if (c->nchoices > 0) {
            proto_w_str(b, "choices");
            proto_w_array(b, (uint32_t)c->nchoices);
            for (int k = 0; k < c->nchoices; k++) proto_w_str(b, c->choices[k]);
        }
    }
    proto_w_str(b, "reward_terms");
    proto_w_array(b, (uint32_t)s->nterms);
    for (int i = 0; i < s->nterms; i++) proto_w_str(b, s->terms[i]);
    if (critic) {
        kv_int(b, "critic_obs_dim", s->critic_dim);
        proto_w_str(b, "critic_obs");
        w_fields(b, s->critic, s->ncritic);
    }
    /* the terrain kinds only in specs of tasks with a terrain curriculum (minor 5) */
    if (terrain) {
        proto_w_str(b, "terrain_kinds");
        proto_w_array(b, (uint32_t)s->nterrain_kinds);
        for (int i = 0; i < s->nterrain_kinds; i++) proto_w_str(b, s->terrain_kinds[i]);
    }
}

void proto_w_spec(proto_buf *b, const env_spec *s) { w_spec(b, s, 1); }

int proto_encode_hello_reply(proto_buf *b, uint64_t id, const proto_hello_info *info, const env_spec *const *specs,
                             int nspecs)
{
    proto_w_reply_head(b, id, 7);
    kv_uint(b, "protocol", PROTO_VERSION);
    kv_uint(b, "protocol_minor", PROTO_VERSION_MINOR);
    kv_str(b, "server", info->server);
    kv_int(b, "threads", info->threads);
    kv_str(b, "auth", info->auth ? info->auth : "none");
    proto_w_str(b, "limits");
    proto_w_map(b, (uint32_t)(NFIELDS(hello_limits_desc) + (info->nextra > 0 ? info->nextra : 0) +
                              (info->nfextra > 0 ? info->nfextra : 0)));
    kv_members(b, info, hello_limits_desc, NFIELDS(hello_limits_desc));
    for (int i = 0; i < info->nextra; i++) kv_int(b, info->extra_names[i], info->extra_values[i]);
    for (int i = 0; i < info->nfextra; i++) kv_f64(b, info->fextra_names[i], info->fextra_values[i]);
    proto_w_str(b, "envs");
    proto_w_array(b, (uint32_t)nspecs);
    for (int i = 0; i < nspecs; i++) proto_w_spec(b, specs[i]);
    return b->oom ? -1 : 0;
}

int proto_encode_make_reply(proto_buf *b, uint64_t id, uint64_t session, const uint8_t *token,
                            const uint8_t *view_token, int64_t num_worlds, env_autoreset ar, uint64_t seed,
                            const env_spec *spec, const double *config, int critic_obs)
{
    proto_w_reply_head(b, id, 9 + !!critic_obs);
    kv_uint(b, "session", session);
    proto_w_str(b, "token");
    proto_w_bin(b, token, PROTO_TOKEN_BYTES);
    proto_w_str(b, "view_token");
    proto_w_bin(b, view_token, PROTO_TOKEN_BYTES);
    kv_str(b, "env", spec->name);
    kv_int(b, "num_worlds", num_worlds);
    kv_str(b, "autoreset", proto_autoreset_name(ar));
    kv_uint(b, "seed", seed);
    proto_w_str(b, "config");
    proto_w_map(b, (uint32_t)spec->nconfig);
    for (int i = 0; i < spec->nconfig; i++) {
        proto_w_str(b, spec->config[i].key);
        proto_w_f64(b, config[i]);
    }
    proto_w_str(b, "spec");
    w_spec(b, spec, critic_obs);
    if (critic_obs) kv_bool(b, "critic_obs", 1);
    return b->oom ? -1 : 0;
}

int proto_encode_close_reply(proto_buf *b, uint64_t id, uint64_t session, uint64_t steps)
{
    proto_w_reply_head(b, id, 2);
    kv_uint(b, "session", session);
    kv_uint(b, "steps", steps);
    return b->oom ? -1 : 0;
}

int proto_encode_ping_reply(proto_buf *b, uint64_t id, double unix_time)
{
    proto_w_reply_head(b, id, 2);
    kv_bool(b, "pong", 1);
    kv_f64(b, "time", unix_time);
    return b->oom ? -1 : 0;
}

int proto_encode_stats_reply(proto_buf *b, uint64_t id, const proto_server_stats *s, const proto_session_stats *ss)
{
    proto_w_reply_head(b, id, 8 + (ss != NULL));
    kv_members(b, s, server_stats_desc, NFIELDS(server_stats_desc));
    if (ss) {
        /* the terrain levels only for tasks with a terrain curriculum (minor 5) */
        const int nk = ss->nterrain_kinds > 0 && ss->terrain_kinds ? ss->nterrain_kinds : 0;
        proto_w_str(b, "session");
        proto_w_map(b, (uint32_t)NFIELDS(session_stats_desc) + (nk > 0));
        kv_members(b, ss, session_stats_desc, NFIELDS(session_stats_desc));
        if (nk) {
            proto_w_str(b, "terrain");
            proto_w_map(b, 3);
            kv_f64(b, "level", ss->terrain_level);
            kv_int(b, "worlds", ss->terrain_worlds);
            proto_w_str(b, "kinds");
            proto_w_array(b, (uint32_t)nk);
            for (int k = 0; k < nk; k++) {
                proto_w_map(b, 3);
                kv_str(b, "kind", ss->terrain_kinds[k]);
                kv_f64(b, "level", ss->kind_level[k]);
                kv_int(b, "worlds", ss->kind_worlds[k]);
            }
        }
    }
    return b->oom ? -1 : 0;
}

/* info's terrain_level and terrain_kind, int32 [n] each (minor 5) */
static void terrain_regions(proto_buf *b, const uint64_t *s1, proto_step_layout *lay)
{
    lay->terrain_level = kv_region(b, "terrain_level", PROTO_DT_INT32, 1, s1);
    lay->terrain_kind = kv_region(b, "terrain_kind", PROTO_DT_INT32, 1, s1);
}

int proto_encode_reset_reply(proto_buf *b, uint64_t id, int n, int obs_dim, int critic_dim, unsigned flags,
                             proto_step_layout *lay)
{
    memset(lay, 0, sizeof *lay);
    const int critic = critic_dim > 0, terrain = !!(flags & PROTO_STEP_TERRAIN);
    uint64_t s2[2] = {(uint64_t)n, (uint64_t)obs_dim}, sc[2] = {(uint64_t)n, (uint64_t)(critic ? critic_dim : 0)};
    uint64_t s1[1] = {(uint64_t)n};
    /* one allocation, no regrowth */
    proto_buf_reserve(b, 256 + (size_t)n * ((size_t)obs_dim + (size_t)sc[1] + 2 * (size_t)terrain) * 4);
    proto_w_reply_head(b, id, 2);
    lay->obs = kv_region(b, "obs", PROTO_DT_FLOAT32, 2, s2);
    proto_w_str(b, "info");
    proto_w_map(b, (uint32_t)(critic + 2 * terrain));
    if (critic) lay->critic_obs = kv_region(b, "critic_obs", PROTO_DT_FLOAT32, 2, sc);
    if (terrain) terrain_regions(b, s1, lay);
    return b->oom ? -1 : 0;
}

int proto_encode_step_reply(proto_buf *b, uint64_t id, int n, int obs_dim, int nterms, int critic_dim, unsigned flags,
                            proto_step_layout *lay)
{
    memset(lay, 0, sizeof *lay);
    const int critic = critic_dim > 0;
    uint64_t sc[2] = {(uint64_t)n, (uint64_t)(critic ? critic_dim : 0)};
    uint64_t s1[1] = {(uint64_t)n}, so[2] = {(uint64_t)n, (uint64_t)obs_dim}, st[2] = {(uint64_t)n, (uint64_t)nterms};
    /* an upper bound of the size (at most 64 bytes of keys and headers per tensor), so that the buffer is
     * allocated once and never copied while growing */
    size_t rows = (size_t)n, od = (size_t)obs_dim, nt = (size_t)nterms;
    size_t data = rows * (4 * od + 4 + 1 + 1 + 1 + 1 + 4 + 4 + 4 * nt);
    if (flags & PROTO_STEP_AUTORESET) data += rows;
    if (flags & PROTO_STEP_FINAL_OBS) data += rows * (4 * od + 1);
    if (flags & PROTO_STEP_REWARD_TERMS) data += rows * 4 * nt;
    data += rows * 4 * (size_t)sc[1];
    if (flags & PROTO_STEP_TERRAIN) data += rows * 8;
    proto_buf_reserve(b, 64 + 16 * 64 + data);
    proto_w_reply_head(b, id, 5);
    lay->obs = kv_region(b, "obs", PROTO_DT_FLOAT32, 2, so);
    lay->reward = kv_region(b, "reward", PROTO_DT_FLOAT32, 1, s1);
    lay->terminated = kv_region(b, "terminated", PROTO_DT_BOOL, 1, s1);
    lay->truncated = kv_region(b, "truncated", PROTO_DT_BOOL, 1, s1);
    proto_w_str(b, "info");
    proto_w_map(b, 5 + !!(flags & PROTO_STEP_AUTORESET) + 2 * !!(flags & PROTO_STEP_FINAL_OBS) +
                       !!(flags & PROTO_STEP_REWARD_TERMS) + critic + 2 * !!(flags & PROTO_STEP_TERRAIN));
    lay->physics_reset = kv_region(b, "physics_reset", PROTO_DT_BOOL, 1, s1);
    lay->episode_done = kv_region(b, "episode_done", PROTO_DT_BOOL, 1, s1);
    lay->episode_return = kv_region(b, "episode_return", PROTO_DT_FLOAT32, 1, s1);
    lay->episode_length = kv_region(b, "episode_length", PROTO_DT_INT32, 1, s1);
    lay->episode_terms = kv_region(b, "episode_terms", PROTO_DT_FLOAT32, 2, st);
    if (flags & PROTO_STEP_AUTORESET) {
        lay->autoreset = kv_region(b, "autoreset", PROTO_DT_BOOL, 1, s1);
    }
    if (flags & PROTO_STEP_FINAL_OBS) {
        lay->final_obs = kv_region(b, "final_obs", PROTO_DT_FLOAT32, 2, so);
        lay->final_mask = kv_region(b, "_final_obs", PROTO_DT_BOOL, 1, s1);
    }
    if (flags & PROTO_STEP_REWARD_TERMS) {
        lay->reward_terms = kv_region(b, "reward_terms", PROTO_DT_FLOAT32, 2, st);
    }
    if (critic) lay->critic_obs = kv_region(b, "critic_obs", PROTO_DT_FLOAT32, 2, sc);
    if (flags & PROTO_STEP_TERRAIN) terrain_regions(b, s1, lay);
    return b->oom ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* scenes and poses (minor 1) */

/* key: an array of n float32 values written as float 64 (exact) */
static void kv_floats(proto_buf *b, const char *key, const float *v, int n)
{
    proto_w_str(b, key);
    proto_w_array(b, (uint32_t)n);
    for (int i = 0; i < n; i++) proto_w_f64(b, v[i]);
}

/* "region" of a cell terrain: its first sample, its size, its heights (the offset added) and smooth mask. */
static void w_cells_region(proto_buf *b, const env_scene_terrain *t)
{
    const size_t w = (size_t)t->rnx, h = (size_t)t->rny, nx = (size_t)t->nx;
    const uint64_t shp[2] = {h, w};
    proto_w_str(b, "region");
    proto_w_map(b, 6);
    kv_int(b, "ix", t->rx);
    kv_int(b, "iy", t->ry);
    kv_int(b, "nx", t->rnx);
    kv_int(b, "ny", t->rny);
    proto_w_str(b, "heights");
    size_t at = proto_w_tensor(b, PROTO_DT_FLOAT32, 2, shp, NULL);
    if (!b->oom)
        for (size_t j = 0; j < h; j++) {
            const float *row = t->heights + ((size_t)t->ry + j) * nx + (size_t)t->rx;
            for (size_t i = 0; i < w; i++) {
                float v = (float)(t->height + row[i]);
                memcpy(b->data + at + 4 * (j * w + i), &v, 4);      /* little-endian hosts (PROTOCOL.md) */
            }
        }
    proto_w_str(b, "smooth");
    at = proto_w_tensor(b, PROTO_DT_UINT8, 2, shp, NULL);
    if (!b->oom && t->smooth)
        for (size_t j = 0; j < h; j++) {
            const unsigned char *row = t->smooth + ((size_t)t->ry + j) * nx + (size_t)t->rx;
            for (size_t i = 0; i < w; i++) b->data[at + j * w + i] = row[i] != 0;
        }
}

void proto_w_scene(proto_buf *b, const env_scene_t *s)
{
    proto_w_map(b, 4);
    proto_w_str(b, "bodies");
    proto_w_array(b, (uint32_t)s->nbody);
    for (int i = 0; i < s->nbody; i++) {
        proto_w_map(b, 2);
        kv_str(b, "name", s->body[i].name);
        kv_int(b, "parent", s->body[i].parent);
    }
    proto_w_str(b, "geoms");
    proto_w_array(b, (uint32_t)s->ngeom);
    for (int i = 0; i < s->ngeom; i++) {
        const env_scene_geom *g = &s->geom[i];
        proto_w_map(b, 8);
        kv_str(b, "name", g->name);
        kv_int(b, "body", g->body);
        kv_str(b, "type", env_prim_name(g->type));
        kv_floats(b, "size", g->size, 3);
        kv_floats(b, "pos", g->pos, 3);
        kv_floats(b, "quat", g->quat, 4);
        kv_floats(b, "rgba", g->rgba, 4);
        kv_bool(b, "collides", g->collides);
    }
    const env_scene_terrain *t = &s->terrain;
    proto_w_str(b, "terrain");
    if (t->type == ENV_TERRAIN_HEIGHTFIELD) {
        proto_w_map(b, 8);
        kv_str(b, "type", "heightfield");
        kv_int(b, "nx", t->nx);
        kv_int(b, "ny", t->ny);
        kv_f64(b, "x0", t->x0);
        kv_f64(b, "y0", t->y0);
        kv_f64(b, "dx", t->dx);
        kv_f64(b, "dy", t->dy);
        uint64_t shp[2] = {(uint64_t)t->ny, (uint64_t)t->nx};
        proto_w_str(b, "heights");
        proto_w_tensor(b, PROTO_DT_FLOAT32, 2, shp, t->heights);
    } else if (t->type == ENV_TERRAIN_CELLS) {
        proto_w_map(b, 8 + !!t->has_region);
        kv_str(b, "type", "cells");
        kv_f64(b, "height", t->height);
        kv_int(b, "nx", t->nx);
        kv_int(b, "ny", t->ny);
        kv_f64(b, "x0", t->x0);
        kv_f64(b, "y0", t->y0);
        kv_f64(b, "dx", t->dx);
        kv_f64(b, "dy", t->dy);
        if (t->has_region) w_cells_region(b, t);
    } else {
        proto_w_map(b, 2);
        kv_str(b, "type", "plane");
        kv_f64(b, "height", t->height);
    }
    kv_int(b, "max_contacts", s->max_contacts);
}

int proto_encode_model_reply(proto_buf *b, uint64_t id, uint64_t session, const char *env, const env_scene_t *s)
{
    proto_w_reply_head(b, id, 3);
    kv_uint(b, "session", session);
    kv_str(b, "env", env);
    proto_w_str(b, "scene");
    proto_w_scene(b, s);
    return b->oom ? -1 : 0;
}

int proto_encode_poses_reply(proto_buf *b, uint64_t id, int n, int nbody, int max_contacts, int diagnostics,
                             proto_step_layout *lay)
{
    memset(lay, 0, sizeof *lay);
    size_t rows = (size_t)n, nb = (size_t)nbody, mc = (size_t)(max_contacts > 0 ? max_contacts : 0);
    const int diag = diagnostics && mc > 0;
    proto_buf_reserve(b, 64 + 12 * 64 + rows * (28 * nb + 4 + 28 * mc) + (diag ? rows * (17 * mc + 1 + 4 * nb) : 0));
    uint64_t sp[3] = {rows, nb, 3}, sq[3] = {rows, nb, 4}, s1[1] = {rows}, c3[3] = {rows, mc, 3}, c1[2] = {rows, mc};
    uint64_t sl[2] = {rows, nb};
    proto_w_reply_head(b, id, 2 + (mc > 0) + diag);
    lay->nbody = nbody;
    lay->body_pos = kv_region(b, "body_pos", PROTO_DT_FLOAT32, 3, sp);
    lay->body_quat = kv_region(b, "body_quat", PROTO_DT_FLOAT32, 3, sq);
    if (mc > 0) {
        lay->max_contacts = (int)mc;
        proto_w_str(b, "contacts");
        proto_w_map(b, 4 + 3 * diag);
        lay->contact_count = kv_region(b, "count", PROTO_DT_INT32, 1, s1);
        lay->contact_pos = kv_region(b, "pos", PROTO_DT_FLOAT32, 3, c3);
        lay->contact_normal = kv_region(b, "normal", PROTO_DT_FLOAT32, 3, c3);
        lay->contact_impulse = kv_region(b, "impulse", PROTO_DT_FLOAT32, 2, c1);
        if (diag) {
            lay->contact_state = kv_region(b, "state", PROTO_DT_UINT8, 2, c1);
            lay->contact_friction = kv_region(b, "friction", PROTO_DT_FLOAT32, 3, c3);
            lay->contact_body = kv_region(b, "body", PROTO_DT_INT32, 2, c1);
        }
    }
    if (diag) {
        proto_w_str(b, "diagnostics");
        proto_w_map(b, 2);
        lay->diag_fallback = kv_region(b, "fallback", PROTO_DT_UINT8, 1, s1);
        lay->diag_limit = kv_region(b, "limit_impulse", PROTO_DT_FLOAT32, 2, sl);
    }
    return b->oom ? -1 : 0;
}

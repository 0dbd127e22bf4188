/* proto_request.c — the request codec's decoding side (server): the field readers, one decoder per
 * op after a shared header check, and the checks of a request against a session.  See proto.h and
 * PROTOCOL.md, "Validation order". */
#include "proto_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* field readers (errors are BAD_FIELD with the field name and what was found, unless stated) */

static int read_u64(const msgpack_object *o, const char *field, uint64_t *v, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, field, "an unsigned integer", o);
    *v = o->via.u64;
    return PROTO_OK;
}

/* A name copied into out (cap bytes, 0-terminated).  Not a str: BAD_FIELD.  A str that cannot be a name
 * (a NUL byte, or too long for out) is a bad value, reported with the field's own code `bad_name`
 * (UNKNOWN_ENV for env, BAD_CONFIG for config keys and choices), as a name that exists nowhere would be. */
static int read_str(const msgpack_object *o, const char *field, char *out, size_t cap, proto_code bad_name,
                    proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_FIELD, field, "a string", o);
    char q[200];
    proto_quote(o->via.str.ptr, o->via.str.size, q, sizeof q);
    if (memchr(o->via.str.ptr, 0, o->via.str.size))
        return proto_fail(err, bad_name, "'%s' = '%s' contains a NUL byte (no name does)", field, q);
    if (o->via.str.size >= cap)
        return proto_fail(err, bad_name, "'%s' = '%s' is too long (%u bytes, at most %zu)", field, q, o->via.str.size,
                          cap - 1);
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
    return PROTO_OK;
}

static int64_t tensor_int(const proto_tensor *t, size_t i)
{
    const uint8_t *p = t->data + i * proto_dtype_size(t->dtype);
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
    if (!*is_tensor) return proto_bad_type(err, PROTO_E_BAD_FIELD, name, array_what, o);
    int rc = proto_tensor_from_object(o, name, t, err);
    if (rc) return rc;
    if (t->dtype != PROTO_DT_INT32 && t->dtype != PROTO_DT_INT64 && t->dtype != PROTO_DT_UINT64 &&
        t->dtype != PROTO_DT_UINT8)
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'%s' must have an integer dtype (%s), got %s", name, dtypes,
                          proto_dtype_name(t->dtype));
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
            if (!proto_is_int(e)) {
                char f[48];
                snprintf(f, sizeof f, "world_ids[%zu]", i);
                return proto_bad_type(err, PROTO_E_BAD_FIELD, f, "an integer", e);
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
    if (o->type != MSGPACK_OBJECT_MAP)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, "config", "a map of key -> number or name", o);
    if (o->via.map.size > PROTO_MAX_CONFIG)
        return proto_fail(err, PROTO_E_BAD_CONFIG, "'config' has %u entries (at most %d)", o->via.map.size,
                          PROTO_MAX_CONFIG);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_FIELD, "config key", "a string", k);
        proto_kv *kv = &r->config[i];
        int rc = read_str(k, "config key", kv->key, sizeof kv->key, PROTO_E_BAD_CONFIG, err);
        if (rc) return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(r->config[j].key, kv->key))
                return proto_fail(err, PROTO_E_BAD_MESSAGE, "duplicate config key '%s'", kv->key);
        char f[80];
        snprintf(f, sizeof f, "config.%s", kv->key);
        kv->value = 0;
        r->config_name[i][0] = 0;
        if (v->type == MSGPACK_OBJECT_STR) {
            /* a named choice (minor version 1): the env resolves it (an unknown name is BAD_CONFIG there) */
            rc = read_str(v, f, r->config_name[i], sizeof r->config_name[i], PROTO_E_BAD_CONFIG, err);
            if (rc) return rc;
        } else if (!proto_is_num(v)) {
            return proto_bad_type(err, PROTO_E_BAD_FIELD, f, "a number or a name", v);
        } else {
            kv->value = proto_num_value(v);
        }
        r->nconfig = (int)i + 1;
    }
    return PROTO_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* requests */

enum { K_V, K_ID, K_OP, K_SESSION, K_ENV, K_NUM_WORLDS, K_CONFIG, K_SEED, K_SEEDS, K_AUTORESET, K_WORLD_IDS,
       K_ACTIONS, K_REWARD_TERMS, K_TOKEN, K_CONTACTS, K_LATEST, K_CRITIC_OBS, K_DIAGNOSTICS, K_TERRAIN_REGION, K_COUNT };
static const char *const key_names[K_COUNT] = {"v", "id", "op", "session", "env", "num_worlds", "config", "seed",
                                               "seeds", "autoreset", "world_ids", "actions", "reward_terms", "token",
                                               "contacts", "latest", "critic_obs", "diagnostics",
                                               "terrain_region"};
/* Keys each op accepts besides v, id, op. */
static const unsigned op_keys[PROTO_OP_COUNT] = {
    [PROTO_OP_HELLO] = 0,
    [PROTO_OP_MAKE] = 1u << K_ENV | 1u << K_NUM_WORLDS | 1u << K_CONFIG | 1u << K_SEED | 1u << K_AUTORESET |
                      1u << K_CRITIC_OBS,
    [PROTO_OP_RESET] = 1u << K_SESSION | 1u << K_TOKEN | 1u << K_WORLD_IDS | 1u << K_SEEDS | 1u << K_SEED,
    [PROTO_OP_STEP] = 1u << K_SESSION | 1u << K_TOKEN | 1u << K_WORLD_IDS | 1u << K_ACTIONS | 1u << K_REWARD_TERMS,
    [PROTO_OP_CLOSE] = 1u << K_SESSION | 1u << K_TOKEN,
    [PROTO_OP_STATS] = 1u << K_SESSION | 1u << K_TOKEN,
    [PROTO_OP_PING] = 0,
    [PROTO_OP_MODEL] = 1u << K_SESSION | 1u << K_TOKEN | 1u << K_TERRAIN_REGION,
    [PROTO_OP_POSES] = 1u << K_SESSION | 1u << K_TOKEN | 1u << K_WORLD_IDS | 1u << K_CONTACTS | 1u << K_LATEST |
                       1u << K_DIAGNOSTICS,
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

/* The values of a request map by key (NULL = absent), and its first unknown key. */
typedef struct {
    const msgpack_object *val[K_COUNT];
    const msgpack_object *unknown;
} fields;

/* Sorts the keys of the request map into f: string keys only, no duplicates. */
static int collect_fields(const msgpack_object *root, fields *f, proto_error *err)
{
    memset(f, 0, sizeof *f);
    for (uint32_t i = 0; i < root->via.map.size; i++) {
        const msgpack_object *k = &root->via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR) {
            char d[240];
            proto_describe(k, d, sizeof d);
            return proto_fail(err, PROTO_E_BAD_MESSAGE, "request keys must be strings, got %s", d);
        }
        int found = -1;
        for (int j = 0; j < K_COUNT; j++)
            if (proto_name_eq(k->via.str.ptr, k->via.str.size, key_names[j])) found = j;
        if (found < 0) {
            if (!f->unknown) f->unknown = k;
            continue;
        }
        if (f->val[found]) return proto_fail(err, PROTO_E_BAD_MESSAGE, "duplicate key '%s'", key_names[found]);
        f->val[found] = &root->via.map.ptr[i].val;
    }
    return PROTO_OK;
}

/* The header: id first (so that every later error can echo it), then v, op, and the keys the op accepts. */
static int decode_header(const fields *f, proto_request *r, proto_error *err)
{
    const msgpack_object *const *val = f->val;
    int rc;
    if (!val[K_ID]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'id' (the request id, an unsigned integer)");
    if ((rc = read_u64(val[K_ID], "id", &r->id, err))) return rc;
    r->has_id = 1;
    if (!val[K_V]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'v' (the protocol version, %d)", PROTO_VERSION);
    if (!proto_is_int(val[K_V])) return proto_bad_type(err, PROTO_E_BAD_FIELD, "v", "an integer", val[K_V]);
    if (val[K_V]->type != MSGPACK_OBJECT_POSITIVE_INTEGER || val[K_V]->via.u64 != PROTO_VERSION) {
        char d[240];
        proto_describe(val[K_V], d, sizeof d);
        return proto_fail(err, PROTO_E_BAD_VERSION, "protocol version %s is not supported (this server speaks %d)",
                          d + 4, PROTO_VERSION);
    }
    if (!val[K_OP]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'op'");
    if (val[K_OP]->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_FIELD, "op", "a string", val[K_OP]);
    /* a str that is not exactly an op name (case, a NUL byte, ...) is a value naming no op: UNKNOWN_OP */
    int op = -1;
    for (int j = 0; j < PROTO_OP_COUNT; j++)
        if (proto_name_eq(val[K_OP]->via.str.ptr, val[K_OP]->via.str.size, proto_op_name((proto_op)j))) op = j;
    char q[200];
    if (op < 0) {
        proto_quote(val[K_OP]->via.str.ptr, val[K_OP]->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_UNKNOWN_OP, "unknown op '%s' (expected hello, make, reset, step, close, stats, "
                          "ping, model, poses)", q);
    }
    r->op = (proto_op)op;
    const char *opn = proto_op_name(r->op);
    if (f->unknown) {
        proto_quote(f->unknown->via.str.ptr, f->unknown->via.str.size, q, sizeof q);
        return proto_fail(err, PROTO_E_BAD_FIELD, "unexpected field '%s' in a '%s' request", q, opn);
    }
    for (int j = K_SESSION; j < K_COUNT; j++)
        if (val[j] && !(op_keys[op] >> j & 1))
            return proto_fail(err, PROTO_E_BAD_FIELD, "unexpected field '%s' in a '%s' request", key_names[j], opn);
    return PROTO_OK;
}

/* "session": required (reset, step, close) or optional (stats); then its optional "token" (bin 16). */
static int read_session(const fields *f, int required, proto_request *r, proto_error *err)
{
    const msgpack_object *o = f->val[K_SESSION], *t = f->val[K_TOKEN];
    if (!o) {
        if (t) return proto_fail(err, PROTO_E_BAD_FIELD, "'token' without 'session' in a '%s' request",
                                 proto_op_name(r->op));
        if (!required) return PROTO_OK;
        return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'session' in a '%s' request", proto_op_name(r->op));
    }
    int rc = read_u64(o, "session", &r->session, err);
    if (rc) return rc;
    r->has_session = 1;
    if (!t) return PROTO_OK;
    if (t->type != MSGPACK_OBJECT_BIN || t->via.bin.size != PROTO_TOKEN_BYTES)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, "token", "bin of 16 bytes (the make reply's token)", t);
    memcpy(r->token, t->via.bin.ptr, PROTO_TOKEN_BYTES);
    r->has_token = 1;
    return PROTO_OK;
}

/* An optional "seed" (make, reset). */
static int read_seed(const fields *f, proto_request *r, proto_error *err)
{
    if (!f->val[K_SEED]) return PROTO_OK;
    int rc = read_u64(f->val[K_SEED], "seed", &r->seed, err);
    if (!rc) r->has_seed = 1;
    return rc;
}

/* An optional bool field. */
static int read_bool(const fields *f, int k, int *v, proto_error *err)
{
    const msgpack_object *o = f->val[k];
    if (!o) return PROTO_OK;
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return proto_bad_type(err, PROTO_E_BAD_FIELD, key_names[k], "a bool", o);
    *v = o->via.boolean;
    return PROTO_OK;
}

/* ---- one decoder per op: the fields after the header ---- */
typedef int (*op_decoder)(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err);

static int decode_no_fields(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    return PROTO_OK;            /* hello, ping: the header checks already refused any other field */
}

static int decode_make(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    const msgpack_object *const *val = f->val;
    int rc;
    if (!val[K_ENV]) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'env' (a task name) in a 'make' request");
    if ((rc = read_str(val[K_ENV], "env", r->env, sizeof r->env, PROTO_E_UNKNOWN_ENV, err))) return rc;
    const msgpack_object *nw = val[K_NUM_WORLDS];
    if (!nw) return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'num_worlds' in a 'make' request");
    if (nw->type != MSGPACK_OBJECT_POSITIVE_INTEGER || nw->via.u64 == 0)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, "num_worlds", "a positive integer", nw);
    r->num_worlds = nw->via.u64 > INT64_MAX ? INT64_MAX : (int64_t)nw->via.u64;
    if (val[K_CONFIG] && (rc = read_config(val[K_CONFIG], r, err))) return rc;
    if ((rc = read_seed(f, r, err))) return rc;
    r->autoreset = ENV_AUTORESET_NEXT_STEP;
    if (val[K_AUTORESET]) {
        const msgpack_object *a = val[K_AUTORESET];
        int m = a->type == MSGPACK_OBJECT_STR ? proto_autoreset_from_name(a->via.str.ptr, a->via.str.size) : -1;
        if (m < 0) return proto_bad_type(err, PROTO_E_BAD_FIELD, "autoreset", "one of 'next_step', 'same_step', 'disabled'", a);
        r->autoreset = (env_autoreset)m;
        r->has_autoreset = 1;
    }
    return read_bool(f, K_CRITIC_OBS, &r->critic_obs, err);
}

/* What reset and step start with: the session (required) and the worlds addressed (optional). */
static int read_rows(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    int rc = read_session(f, 1, r, err);
    if (!rc && f->val[K_WORLD_IDS]) rc = read_world_ids(f->val[K_WORLD_IDS], lim, r, err);
    return rc;
}

static int decode_reset(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    const msgpack_object *const *val = f->val;
    int rc;
    if ((rc = read_rows(f, lim, r, err))) return rc;
    if (val[K_SEED] && val[K_SEEDS]) return proto_fail(err, PROTO_E_BAD_FIELD, "give either 'seed' or 'seeds', not both");
    if ((rc = read_seed(f, r, err))) return rc;
    if (val[K_SEEDS]) {
        if ((rc = read_seeds(val[K_SEEDS], lim, r, err))) return rc;
        if (r->nids >= 0 && r->nseeds != r->nids)
            return proto_fail(err, PROTO_E_BAD_SHAPE, "'seeds' has %d entries for %d world ids", r->nseeds, r->nids);
    }
    return PROTO_OK;
}

static int decode_step(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    const msgpack_object *const *val = f->val;
    int rc;
    if ((rc = read_rows(f, lim, r, err))) return rc;
    if (!val[K_ACTIONS])
        return proto_fail(err, PROTO_E_MISSING_FIELD, "missing 'actions' (float32 tensor [n, act_dim]) in a 'step' "
                          "request");
    proto_tensor *a = &r->actions;
    if ((rc = proto_tensor_from_object(val[K_ACTIONS], "actions", a, err))) return rc;
    r->has_actions = 1;
    if (a->dtype != PROTO_DT_FLOAT32)
        return proto_fail(err, PROTO_E_BAD_DTYPE, "'actions' must be float32, got %s", proto_dtype_name(a->dtype));
    if (a->ndim != 2)
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' must be 2-D [n, act_dim], got %d dimensions", a->ndim);
    if (a->shape[0] > (uint64_t)lim->max_worlds)
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' has %" PRIu64 " rows, more than the %d worlds a session "
                          "may have", a->shape[0], lim->max_worlds);
    if (r->nids >= 0 && a->shape[0] != (uint64_t)r->nids)
        return proto_fail(err, PROTO_E_BAD_SHAPE, "'actions' has %" PRIu64 " rows for %d world ids", a->shape[0], r->nids);
    return read_bool(f, K_REWARD_TERMS, &r->reward_terms, err);
}

static int decode_poses(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    int rc = read_rows(f, lim, r, err);
    if (!rc) rc = read_bool(f, K_CONTACTS, &r->contacts, err);
    if (!rc) rc = read_bool(f, K_DIAGNOSTICS, &r->diagnostics, err);
    return rc ? rc : read_bool(f, K_LATEST, &r->latest, err);
}

/* model: the session, then an optional "terrain_region", [x_min, y_min, x_max, y_max] (m, finite, min <= max;
 * minor 7). */
static int decode_model(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    int rc = read_session(f, 1, r, err);
    const msgpack_object *o = f->val[K_TERRAIN_REGION];
    if (rc || !o) return rc;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
        return proto_bad_type(err, PROTO_E_BAD_FIELD, "terrain_region", "an array of 4 numbers [x_min, y_min, x_max, "
                              "y_max]", o);
    for (int i = 0; i < 4; i++) {
        const msgpack_object *v = &o->via.array.ptr[i];
        if (!proto_is_num(v))
            return proto_bad_type(err, PROTO_E_BAD_FIELD, "terrain_region", "an array of 4 numbers [x_min, y_min, "
                                  "x_max, y_max]", o);
        r->terrain_region[i] = proto_num_value(v);
        if (!isfinite(r->terrain_region[i]))
            return proto_fail(err, PROTO_E_BAD_FIELD, "terrain_region[%d] = %g is not finite", i, r->terrain_region[i]);
    }
    for (int i = 0; i < 2; i++)
        if (r->terrain_region[i] > r->terrain_region[i + 2])
            return proto_fail(err, PROTO_E_BAD_FIELD, "terrain_region: %s_min %g exceeds %s_max %g", i ? "y" : "x",
                              r->terrain_region[i], i ? "y" : "x", r->terrain_region[i + 2]);
    r->has_terrain_region = 1;
    return PROTO_OK;
}

/* close: the session only */
static int decode_session_only(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    return read_session(f, 1, r, err);
}

static int decode_stats(const fields *f, const proto_limits *lim, proto_request *r, proto_error *err)
{
    return read_session(f, 0, r, err);
}

static const op_decoder op_decoders[PROTO_OP_COUNT] = {
    [PROTO_OP_HELLO] = decode_no_fields, [PROTO_OP_MAKE] = decode_make,   [PROTO_OP_RESET] = decode_reset,
    [PROTO_OP_STEP] = decode_step,       [PROTO_OP_CLOSE] = decode_session_only, [PROTO_OP_STATS] = decode_stats,
    [PROTO_OP_PING] = decode_no_fields, [PROTO_OP_MODEL] = decode_model,  [PROTO_OP_POSES] = decode_poses,
};

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
    fields f;
    int rc = proto_unpack_exact(buf, len, lim, 1, &z, &root, err);
    if (rc != PROTO_OK) r->has_id = proto_peek_id(buf, len, &r->id);
    else if ((rc = collect_fields(&root, &f, err)) == PROTO_OK && (rc = decode_header(&f, r, err)) == PROTO_OK)
        rc = op_decoders[r->op](&f, lim, r, err);
    msgpack_zone_destroy(&z);
    if (rc != PROTO_OK) {
        uint64_t id = r->id, session = r->session;
        int has = r->has_id, has_session = r->has_session, has_token = r->has_token;
        uint8_t token[PROTO_TOKEN_BYTES];
        memcpy(token, r->token, sizeof token);
        proto_request_clear(r);
        r->id = id;
        r->has_id = has;
        /* kept too, so that the server counts the error against the session when the sender owns it */
        r->session = session;
        r->has_session = has_session;
        memcpy(r->token, token, sizeof token);
        r->has_token = has_token;
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


/* proto_reply.c — the reply codec's decoding side (client): a reply decoded once into a tree that
 * stays private to protocol/ (proto_value handles), lookups by key path with typed getters, tensor
 * views and spec decoding.  The encoders are in proto_write.c.  See proto.h and PROTOCOL.md. */
#include "proto_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* lookups */

static const msgpack_object *map_key(const msgpack_object *map, const char *key, size_t n)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && !memcmp(k->via.str.ptr, key, n))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

/* map[path[0..n)]: the whole rest as one key first (keys may contain dots), else split at a dot. */
static const msgpack_object *lookup(const msgpack_object *map, const char *path, size_t n)
{
    const msgpack_object *o = map_key(map, path, n);
    for (size_t d = 0; !o && d < n; d++)
        if (path[d] == '.') {
            const msgpack_object *sub = map_key(map, path, d);
            if (sub) o = lookup(sub, path + d + 1, n - d - 1);
        }
    return o;
}

static const msgpack_object *get(const msgpack_object *map, const char *path) { return lookup(map, path, strlen(path)); }

const proto_value *proto_value_get(const proto_value *map, const char *path)
{
    return pv_val(get(pv_obj(map), path));
}

int proto_value_len(const proto_value *v)
{
    const msgpack_object *o = pv_obj(v);
    return o && o->type == MSGPACK_OBJECT_ARRAY ? (int)o->via.array.size : -1;
}

const proto_value *proto_value_at(const proto_value *array, int i)
{
    const msgpack_object *o = pv_obj(array);
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || i < 0 || (uint32_t)i >= o->via.array.size) return NULL;
    return pv_val(&o->via.array.ptr[i]);
}

/* map[path], or NULL with "reply lacks '<path>'". */
static const msgpack_object *need(const msgpack_object *map, const char *path, proto_error *err)
{
    const msgpack_object *o = get(map, path);
    if (!o) proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", path);
    return o;
}

/* ------------------------------------------------------------------------------------------------ */
/* typed getters */

static int read_uint(const msgpack_object *o, const char *what, uint64_t *v, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return proto_bad_type(err, PROTO_E_BAD_REPLY, what, "an unsigned integer", o);
    *v = o->via.u64;
    return PROTO_OK;
}

static int read_int(const msgpack_object *o, const char *what, int64_t *v, proto_error *err)
{
    if (!proto_is_int(o) || (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 > INT64_MAX))
        return proto_bad_type(err, PROTO_E_BAD_REPLY, what, "an integer", o);
    *v = o->via.i64;
    return PROTO_OK;
}

static int read_f64(const msgpack_object *o, const char *what, double *v, proto_error *err)
{
    if (!proto_is_num(o)) return proto_bad_type(err, PROTO_E_BAD_REPLY, what, "a number", o);
    *v = proto_num_value(o);
    return PROTO_OK;
}

static int read_bool(const msgpack_object *o, const char *what, int *v, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return proto_bad_type(err, PROTO_E_BAD_REPLY, what, "a bool", o);
    *v = o->via.boolean;
    return PROTO_OK;
}

/* Copies a string, truncating to cap - 1 bytes. */
static int read_str(const msgpack_object *o, const char *what, char *out, size_t cap, proto_error *err)
{
    if (o->type != MSGPACK_OBJECT_STR) return proto_bad_type(err, PROTO_E_BAD_REPLY, what, "a string", o);
    size_t n = o->via.str.size < cap - 1 ? o->via.str.size : cap - 1;
    memcpy(out, o->via.str.ptr, n);
    out[n] = 0;
    return PROTO_OK;
}

/* The getters: map[path] read by `read` into v. */
#define GETTER(name, type, read)                                                                                    \
    int name(const proto_value *map, const char *path, type *v, proto_error *err)                                  \
    {                                                                                                               \
        const msgpack_object *o = need(pv_obj(map), path, err);                                                     \
        return o ? read(o, path, v, err) : PROTO_E_BAD_REPLY;                                                      \
    }
GETTER(proto_get_uint, uint64_t, read_uint)
GETTER(proto_get_int, int64_t, read_int)
GETTER(proto_get_f64, double, read_f64)
GETTER(proto_get_bool, int, read_bool)
#undef GETTER

int proto_get_str(const proto_value *map, const char *path, char *out, size_t cap, proto_error *err)
{
    const msgpack_object *o = need(pv_obj(map), path, err);
    return o ? read_str(o, path, out, cap, err) : PROTO_E_BAD_REPLY;
}

int proto_get_bin(const proto_value *map, const char *path, void *out, size_t len, proto_error *err)
{
    const msgpack_object *o = need(pv_obj(map), path, err);
    if (!o) return PROTO_E_BAD_REPLY;
    if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != len) {
        char want[48];
        snprintf(want, sizeof want, "bin of %zu bytes", len);
        return proto_bad_type(err, PROTO_E_BAD_REPLY, path, want, o);
    }
    memcpy(out, o->via.bin.ptr, len);
    return PROTO_OK;
}

int proto_value_tensor(const proto_value *v, const char *what, proto_tensor *t, proto_error *err)
{
    if (!v) return proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", what);
    proto_error e;
    if (proto_tensor_from_object(pv_obj(v), what, t, &e)) return proto_fail(err, PROTO_E_BAD_REPLY, "%s", e.message);
    return PROTO_OK;
}

int proto_get_tensor(const proto_value *map, const char *path, proto_dtype dt, int ndim, const int64_t *shape,
                     proto_tensor *t, proto_error *err)
{
    int rc = proto_value_tensor(proto_value_get(map, path), path, t, err);
    if (rc) return rc;
    if (t->dtype != dt)
        return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' is %s, expected %s", path, proto_dtype_name(t->dtype),
                          proto_dtype_name(dt));
    if (t->ndim != ndim) return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' has %d dimensions, expected %d", path, t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape && shape[i] >= 0 && t->shape[i] != (uint64_t)shape[i])
            return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' has size %" PRIu64 " in dimension %d, expected %" PRId64, path,
                              t->shape[i], i, shape[i]);
    return PROTO_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* the reply */

int proto_decode_reply(const void *buf, size_t len, proto_reply *r, proto_error *err)
{
    memset(r, 0, sizeof *r);
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_message_bytes = (size_t)-1;
    lim.max_objects = (size_t)-1;
    msgpack_zone *z = msgpack_zone_new(8192);
    msgpack_object *root = z ? msgpack_zone_malloc(z, sizeof *root) : NULL;
    if (!root) {
        if (z) msgpack_zone_free(z);
        return proto_fail(err, PROTO_E_INTERNAL, "out of memory");
    }
    r->mem = (struct proto_reply_mem *)(void *)z;
    int rc = proto_unpack_exact(buf, len, &lim, 0, z, root, err);
    if (rc) return rc;
    if (root->type != MSGPACK_OBJECT_MAP) return proto_fail(err, PROTO_E_BAD_REPLY, "a reply must be a map");
    r->root = pv_val(root);
    uint64_t v = 0;
    if ((rc = proto_get_uint(r->root, "v", &v, err))) return rc;
    if (v != PROTO_VERSION)
        return proto_fail(err, PROTO_E_BAD_REPLY, "reply has protocol version %" PRIu64 ", expected %d", v, PROTO_VERSION);
    if ((rc = proto_get_uint(r->root, "id", &r->id, err))) return rc;
    if ((rc = proto_get_bool(r->root, "ok", &r->ok, err))) return rc;
    if (r->ok) return PROTO_OK;
    const msgpack_object *e = need(root, "error", err);
    if (!e) return PROTO_E_BAD_REPLY;
    const msgpack_object *c = get(e, "code"), *m = get(e, "message");
    char msg[PROTO_MSG_MAX];
    if (!m) return proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", "error.message");
    if ((rc = read_str(m, "error.message", msg, sizeof msg, err))) return rc;
    if (!c || c->type != MSGPACK_OBJECT_STR) return proto_fail(err, PROTO_E_BAD_REPLY, "reply lacks 'error.code'");
    proto_code code = proto_code_from_name(c->via.str.ptr, c->via.str.size);
    if (code == PROTO_E_COUNT || code == PROTO_OK) {
        char q[200];
        proto_quote(c->via.str.ptr, c->via.str.size, q, sizeof q);
        r->error.code = PROTO_E_INTERNAL;
        snprintf(r->error.message, sizeof r->error.message, "%.60s: %.250s", q, msg);
    } else {
        r->error.code = code;
        snprintf(r->error.message, sizeof r->error.message, "%s", msg);
    }
    return PROTO_OK;
}

void proto_reply_clear(proto_reply *r)
{
    if (r->mem) msgpack_zone_free((msgpack_zone *)(void *)r->mem);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------------------------------ */
/* spec */

static int get_int(const proto_value *map, const char *key, int lo, int hi, int *v, proto_error *err);

/* spec[key]: an array of at most max entries; its length in *count. */
static int spec_array(const proto_value *spec, const char *key, const char *lacks, const char *noun, int max,
                      int *count, proto_error *err)
{
    *count = proto_value_len(proto_value_get(spec, key));
    if (*count < 0) return proto_fail(err, PROTO_E_BAD_REPLY, "spec lacks %s", lacks);
    if (*count > max) return proto_fail(err, PROTO_E_BAD_REPLY, "spec has %d %s (at most %d)", *count, noun, max);
    return PROTO_OK;
}

/* The obs or act fields: each within [0, dim) of the flat vector. */
static int decode_fields(const proto_value *spec, const char *key, const char *lacks, const char *noun, int dim,
                         env_field *f, int *count, proto_error *err)
{
    int rc = spec_array(spec, key, lacks, noun, ENV_MAX_FIELDS, count, err);
    if (rc) return rc;
    const proto_value *a = proto_value_get(spec, key);
    for (int i = 0; i < *count; i++) {
        const proto_value *m = proto_value_at(a, i);
        double lo = 0, hi = 0, sc = 0;
        if ((rc = proto_get_str(m, "name", f[i].name, sizeof f[i].name, err)) ||
            (rc = get_int(m, "offset", 0, dim, &f[i].offset, err)) ||
            (rc = get_int(m, "size", 0, dim - f[i].offset, &f[i].size, err)) || (rc = proto_get_f64(m, "low", &lo, err)) ||
            (rc = proto_get_f64(m, "high", &hi, err)) || (rc = proto_get_f64(m, "scale", &sc, err)) ||
            (rc = proto_get_str(m, "unit", f[i].unit, sizeof f[i].unit, err)))
            return rc;
        f[i].low = (float)lo;
        f[i].high = (float)hi;
        f[i].scale = (float)sc;
    }
    return PROTO_OK;
}

/* An int64 getter into an int, refusing values outside [lo, hi] (sizes a client allocates from). */
static int get_int(const proto_value *map, const char *key, int lo, int hi, int *v, proto_error *err)
{
    int64_t i64 = 0;
    int rc = proto_get_int(map, key, &i64, err);
    if (rc) return rc;
    if (i64 < lo || i64 > hi)
        return proto_fail(err, PROTO_E_BAD_REPLY, "'%s' = %" PRId64 " is out of range [%d, %d]", key, i64, lo, hi);
    *v = (int)i64;
    return PROTO_OK;
}

int proto_decode_spec(const proto_value *o, env_spec *s, proto_error *err)
{
    memset(s, 0, sizeof *s);
    if (!o || pv_obj(o)->type != MSGPACK_OBJECT_MAP) return proto_fail(err, PROTO_E_BAD_REPLY, "a spec must be a map");
    int rc;
    if ((rc = proto_get_str(o, "name", s->name, sizeof s->name, err)) ||
        (rc = proto_get_str(o, "doc", s->doc, sizeof s->doc, err)) || (rc = get_int(o, "obs_dim", 1, INT_MAX, &s->obs_dim, err)) ||
        (rc = get_int(o, "act_dim", 1, INT_MAX, &s->act_dim, err)) ||
        (rc = decode_fields(o, "obs", "the 'obs' array", "obs fields", s->obs_dim, s->obs, &s->nobs, err)) ||
        (rc = decode_fields(o, "act", "the 'act' array", "act fields", s->act_dim, s->act, &s->nact, err)) ||
        (rc = proto_get_f64(o, "sim_dt", &s->sim_dt, err)) || (rc = get_int(o, "decimation", 1, INT_MAX, &s->decimation, err)) ||
        (rc = proto_get_f64(o, "control_dt", &s->control_dt, err)) ||
        (rc = proto_get_f64(o, "episode_seconds", &s->episode_seconds, err)) ||
        (rc = get_int(o, "max_episode_steps", 0, INT_MAX, &s->max_episode_steps, err)))
        return rc;
    if ((rc = spec_array(o, "config", "the 'config' array", "config keys", ENV_MAX_CONFIG, &s->nconfig, err))) return rc;
    const proto_value *c = proto_value_get(o, "config");
    for (int i = 0; i < s->nconfig; i++) {
        const proto_value *m = proto_value_at(c, i);
        env_config_key *k = &s->config[i];
        if ((rc = proto_get_str(m, "key", k->key, sizeof k->key, err)) || (rc = proto_get_f64(m, "default", &k->def, err)) ||
            (rc = proto_get_f64(m, "lo", &k->lo, err)) || (rc = proto_get_f64(m, "hi", &k->hi, err)) ||
            (rc = proto_get_bool(m, "is_int", &k->is_int, err)) || (rc = proto_get_str(m, "doc", k->doc, sizeof k->doc, err)))
            return rc;
        /* named choices: optional (minor version 1; absent on plain keys and from older servers) */
        const proto_value *ch = proto_value_get(m, "choices");
        if (ch) {
            char lacks[ENV_NAME_MAX + 32], noun[ENV_NAME_MAX + 16];
            snprintf(lacks, sizeof lacks, "an array of '%s' choices", k->key);
            snprintf(noun, sizeof noun, "'%s' choices", k->key);
            if ((rc = spec_array(m, "choices", lacks, noun, ENV_MAX_CHOICES, &k->nchoices, err))) return rc;
            const msgpack_object *a = pv_obj(ch);
            for (int j = 0; j < k->nchoices; j++)
                if ((rc = read_str(&a->via.array.ptr[j], "choices[]", k->choices[j], sizeof k->choices[j], err))) return rc;
        }
    }
    if ((rc = spec_array(o, "reward_terms", "'reward_terms'", "reward terms", ENV_MAX_TERMS, &s->nterms, err))) return rc;
    const msgpack_object *t = pv_obj(proto_value_get(o, "reward_terms"));
    for (int i = 0; i < s->nterms; i++)
        if ((rc = read_str(&t->via.array.ptr[i], "reward_terms[]", s->terms[i], sizeof s->terms[i], err))) return rc;
    /* the critic's observation: optional (minor 4; absent from tasks without one and from older servers) */
    if (proto_value_get(o, "critic_obs_dim") &&
        ((rc = get_int(o, "critic_obs_dim", 1, INT_MAX, &s->critic_dim, err)) ||
         (rc = decode_fields(o, "critic_obs", "the 'critic_obs' array", "critic_obs fields", s->critic_dim, s->critic,
                             &s->ncritic, err))))
        return rc;
    /* the terrain kinds: optional (minor 5; absent from flat tasks and from older servers) */
    if (proto_value_get(o, "terrain_kinds")) {
        if ((rc = spec_array(o, "terrain_kinds", "'terrain_kinds'", "terrain kinds", ENV_MAX_TERRAIN_KINDS,
                             &s->nterrain_kinds, err)))
            return rc;
        const msgpack_object *k = pv_obj(proto_value_get(o, "terrain_kinds"));
        for (int i = 0; i < s->nterrain_kinds; i++)
            if ((rc = read_str(&k->via.array.ptr[i], "terrain_kinds[]", s->terrain_kinds[i], sizeof s->terrain_kinds[i],
                               err)))
                return rc;
    }
    return PROTO_OK;
}

/* test_proto_golden.c — the C codec against protocol/testdata (written by gen_golden.py, an independent
 * Python implementation of PROTOCOL.md):
 *   - every .msgpack decodes (msgpack-c) to exactly the content of its .json;
 *   - every request decodes through proto_decode_request (bad_* ones to the expected error code and id);
 *   - every canonical request re-encodes (proto_encode_request) to the same bytes;
 *   - every reply is reproduced byte for byte by the C reply encoders from the same values;
 *   - the protocol_minor PROTOCOL.md states (title, section 6.1, section 13) is the one a server reports. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "env.h"
#include "herd_client.h"
#include "proto.h"

#include "helpers/server_start.h"

#define TESTDATA "protocol/testdata/"

/* ---- a small JSON reader (objects keep their key order; Infinity / NaN accepted) ---------------- */

typedef enum { J_NULL, J_BOOL, J_INT, J_FLOAT, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jv {
    jtype t;
    int b;
    long long i;        /* J_INT (values above LLONG_MAX kept in u) */
    unsigned long long u;
    int is_u;
    double f;
    char *s;
    int n;
    struct jv *items;   /* J_ARR: n values; J_OBJ: 2n (key, value) */
} jv;

typedef struct { const char *p; } jp;

static void ws(jp *j) { while (isspace((unsigned char)*j->p)) j->p++; }

static char *jstr(jp *j)
{
    cr_assert(*j->p == '"');
    j->p++;
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    while (*j->p != '"') {
        char c = *j->p++;
        if (c == '\\') {
            char e = *j->p++;
            if (e == 'u') {
                unsigned v;
                sscanf(j->p, "%4x", &v);
                j->p += 4;
                cr_assert(v < 0x80, "non-ASCII \\u escape in golden JSON");
                c = (char)v;
            } else {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            }
        }
        if (n + 2 > cap) s = realloc(s, cap *= 2);
        s[n++] = c;
    }
    j->p++;
    s[n] = 0;
    return s;
}

static void jparse(jp *j, jv *v)
{
    ws(j);
    memset(v, 0, sizeof *v);
    char c = *j->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->t = obj ? J_OBJ : J_ARR;
        j->p++;
        int cap = 8;
        v->items = calloc((size_t)cap * 2, sizeof *v->items);
        ws(j);
        if (*j->p == (obj ? '}' : ']')) {
            j->p++;
            return;
        }
        for (;;) {
            if (v->n + 1 > cap) {
                cap *= 2;
                v->items = realloc(v->items, (size_t)cap * 2 * sizeof *v->items);
            }
            if (obj) {
                ws(j);
                jv *k = &v->items[2 * v->n];
                memset(k, 0, sizeof *k);
                k->t = J_STR;
                k->s = jstr(j);
                ws(j);
                cr_assert(*j->p == ':');
                j->p++;
                jparse(j, &v->items[2 * v->n + 1]);
            } else {
                jparse(j, &v->items[v->n]);
            }
            v->n++;
            ws(j);
            if (*j->p == ',') { j->p++; continue; }
            cr_assert(*j->p == (obj ? '}' : ']'), "bad JSON near '%.20s'", j->p);
            j->p++;
            return;
        }
    }
    if (c == '"') { v->t = J_STR; v->s = jstr(j); return; }
    if (!strncmp(j->p, "true", 4)) { v->t = J_BOOL; v->b = 1; j->p += 4; return; }
    if (!strncmp(j->p, "false", 5)) { v->t = J_BOOL; j->p += 5; return; }
    if (!strncmp(j->p, "null", 4)) { v->t = J_NULL; j->p += 4; return; }
    if (!strncmp(j->p, "NaN", 3)) { v->t = J_FLOAT; v->f = NAN; j->p += 3; return; }
    if (!strncmp(j->p, "Infinity", 8)) { v->t = J_FLOAT; v->f = INFINITY; j->p += 8; return; }
    if (!strncmp(j->p, "-Infinity", 9)) { v->t = J_FLOAT; v->f = -INFINITY; j->p += 9; return; }
    const char *start = j->p;
    if (*j->p == '-') j->p++;
    int is_float = 0;
    while (isdigit((unsigned char)*j->p) || strchr(".eE+-", *j->p)) {
        if (strchr(".eE", *j->p)) is_float = 1;
        j->p++;
    }
    cr_assert(j->p > start, "bad JSON near '%.20s'", start);
    if (is_float) {
        v->t = J_FLOAT;
        v->f = strtod(start, NULL);
    } else if (*start == '-') {
        v->t = J_INT;
        v->i = strtoll(start, NULL, 10);
    } else {
        v->t = J_INT;
        v->u = strtoull(start, NULL, 10);
        v->is_u = 1;
    }
}

static void jfree(jv *v)
{
    free(v->s);
    int m = v->t == J_OBJ ? 2 * v->n : v->t == J_ARR ? v->n : 0;
    for (int i = 0; i < m; i++) jfree(&v->items[i]);
    free(v->items);
}

static const jv *jget(const jv *o, const char *key)
{
    if (o->t != J_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->items[2 * i].s, key)) return &o->items[2 * i + 1];
    return NULL;
}

/* ---- files ---- */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s (tests run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

typedef struct {
    uint8_t *bytes;
    size_t len;
    char *json_text;
    jv json;
} vec;

static void load(const char *name, vec *v)
{
    char path[256];
    size_t n;
    snprintf(path, sizeof path, TESTDATA "%s.msgpack", name);
    v->bytes = slurp(path, &v->len);
    snprintf(path, sizeof path, TESTDATA "%s.json", name);
    v->json_text = (char *)slurp(path, &n);
    jp j = {v->json_text};
    jparse(&j, &v->json);
}

static void unload(vec *v)
{
    free(v->bytes);
    free(v->json_text);
    jfree(&v->json);
}

/* ---- msgpack object == JSON value ---- */

static int hexval(char c) { return isdigit((unsigned char)c) ? c - '0' : tolower((unsigned char)c) - 'a' + 10; }

static size_t unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(hexval(h[2 * i]) << 4 | hexval(h[2 * i + 1]));
    return n;
}

static void same(const msgpack_object *o, const jv *v, const char *path)
{
    char sub[512];
    if (v->t == J_OBJ && v->n == 1 && !strcmp(v->items[0].s, "$bin")) {
        cr_assert_eq(o->type, MSGPACK_OBJECT_BIN, "%s: expected bin", path);
        const char *h = v->items[1].s;
        cr_assert_eq(o->via.bin.size * 2, strlen(h), "%s: bin size", path);
        uint8_t *b = malloc(o->via.bin.size + 1);
        unhex(h, b);
        cr_assert(!memcmp(b, o->via.bin.ptr, o->via.bin.size), "%s: bin content", path);
        free(b);
        return;
    }
    switch (v->t) {
    case J_NULL: cr_assert_eq(o->type, MSGPACK_OBJECT_NIL, "%s", path); break;
    case J_BOOL:
        cr_assert_eq(o->type, MSGPACK_OBJECT_BOOLEAN, "%s: expected bool", path);
        cr_assert_eq(!!o->via.boolean, v->b, "%s", path);
        break;
    case J_INT:
        if (v->is_u) {
            cr_assert_eq(o->type, MSGPACK_OBJECT_POSITIVE_INTEGER, "%s: expected a non-negative int", path);
            cr_assert_eq(o->via.u64, (uint64_t)v->u, "%s", path);
        } else {
            cr_assert_eq(o->type, MSGPACK_OBJECT_NEGATIVE_INTEGER, "%s: expected a negative int", path);
            cr_assert_eq(o->via.i64, (int64_t)v->i, "%s", path);
        }
        break;
    case J_FLOAT:
        cr_assert(o->type == MSGPACK_OBJECT_FLOAT64, "%s: expected a float 64", path);
        if (isnan(v->f)) cr_assert(isnan(o->via.f64), "%s", path);
        else cr_assert(o->via.f64 == v->f, "%s: %.17g != %.17g", path, o->via.f64, v->f);
        break;
    case J_STR:
        cr_assert_eq(o->type, MSGPACK_OBJECT_STR, "%s: expected str", path);
        cr_assert_eq(o->via.str.size, strlen(v->s), "%s: str length", path);
        cr_assert(!memcmp(o->via.str.ptr, v->s, o->via.str.size), "%s: str", path);
        break;
    case J_ARR:
        cr_assert_eq(o->type, MSGPACK_OBJECT_ARRAY, "%s: expected array", path);
        cr_assert_eq((int)o->via.array.size, v->n, "%s: array size", path);
        for (int i = 0; i < v->n; i++) {
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            same(&o->via.array.ptr[i], &v->items[i], sub);
        }
        break;
    case J_OBJ:
        cr_assert_eq(o->type, MSGPACK_OBJECT_MAP, "%s: expected map", path);
        cr_assert_eq((int)o->via.map.size, v->n, "%s: map size", path);
        for (int i = 0; i < v->n; i++) {
            /* key order is part of the bytes; check it too */
            const msgpack_object *k = &o->via.map.ptr[i].key;
            cr_assert_eq(k->type, MSGPACK_OBJECT_STR, "%s: key type", path);
            cr_assert(k->via.str.size == strlen(v->items[2 * i].s) && !memcmp(k->via.str.ptr, v->items[2 * i].s, k->via.str.size),
                      "%s: key %d is not '%s'", path, i, v->items[2 * i].s);
            snprintf(sub, sizeof sub, "%s.%s", path, v->items[2 * i].s);
            same(&o->via.map.ptr[i].val, &v->items[2 * i + 1], sub);
        }
        break;
    }
}

/* ---- the index ---- */

typedef struct {
    char name[64], kind[16], op[16];
    int canonical;
} entry;

static int load_index(entry *e, int max)
{
    size_t n;
    char *text = (char *)slurp(TESTDATA "index.json", &n);
    jp j = {text};
    jv idx;
    jparse(&j, &idx);
    cr_assert_eq(idx.t, J_ARR);
    int k = 0;
    for (int i = 0; i < idx.n && k < max; i++, k++) {
        const jv *it = &idx.items[i];
        snprintf(e[k].name, sizeof e[k].name, "%s", jget(it, "name")->s);
        snprintf(e[k].kind, sizeof e[k].kind, "%s", jget(it, "kind")->s);
        const jv *op = jget(it, "op");
        snprintf(e[k].op, sizeof e[k].op, "%s", op->t == J_STR ? op->s : "");
        e[k].canonical = jget(it, "canonical")->b;
    }
    jfree(&idx);
    free(text);
    return k;
}

Test(golden, index_lists_every_kind)
{
    entry e[128];
    int n = load_index(e, 128);
    int req = 0, rep = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        req += !strcmp(e[i].kind, "request");
        rep += !strcmp(e[i].kind, "reply");
        bad += !strcmp(e[i].kind, "bad_request");
    }
    cr_assert_geq(req, 10);
    cr_assert_geq(rep, 8);
    cr_assert_geq(bad, 10);
}

Test(golden, bytes_decode_to_the_json)
{
    entry e[128];
    int n = load_index(e, 128);
    for (int i = 0; i < n; i++) {
        if (!strcmp(e[i].kind, "bad_request")) continue;
        vec v;
        load(e[i].name, &v);
        msgpack_zone z;
        msgpack_zone_init(&z, 4096);
        msgpack_object o;
        size_t off = 0;
        cr_assert_eq(msgpack_unpack((const char *)v.bytes, v.len, &off, &z, &o), MSGPACK_UNPACK_SUCCESS, "%s", e[i].name);
        cr_assert_eq(off, v.len, "%s", e[i].name);
        same(&o, &v.json, e[i].name);
        msgpack_zone_destroy(&z);
        unload(&v);
    }
}

Test(golden, requests_decode_and_reencode)
{
    entry e[128];
    int n = load_index(e, 128);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(e[i].kind, "request")) continue;
        vec v;
        load(e[i].name, &v);
        proto_request r;
        proto_request_init(&r);
        proto_error err = {0};
        int rc = proto_decode_request(v.bytes, v.len, NULL, &r, &err);
        cr_assert_eq(rc, PROTO_OK, "%s: %s %s", e[i].name, proto_code_name(rc), err.message);
        cr_assert_str_eq(proto_op_name(r.op), e[i].op, "%s", e[i].name);
        cr_assert_eq(r.id, jget(&v.json, "id")->u, "%s", e[i].name);
        if (e[i].canonical) {
            proto_buf b;
            proto_buf_init(&b);
            cr_assert_eq(proto_encode_request(&b, &r), 0);
            cr_assert_eq(b.len, v.len, "%s: re-encoded %zu bytes, golden %zu", e[i].name, b.len, v.len);
            cr_assert(!memcmp(b.data, v.bytes, v.len), "%s: re-encoded bytes differ", e[i].name);
            proto_buf_free(&b);
            checked++;
        }
        proto_request_clear(&r);
        unload(&v);
    }
    cr_assert_geq(checked, 10);
}

Test(golden, bad_requests_get_the_expected_error)
{
    entry e[128];
    int n = load_index(e, 128);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(e[i].kind, "bad_request")) continue;
        vec v;
        load(e[i].name, &v);
        proto_request r;
        proto_request_init(&r);
        proto_error err = {0};
        int rc = proto_decode_request(v.bytes, v.len, NULL, &r, &err);
        const char *want = jget(&v.json, "expect_error")->s;
        cr_assert_str_eq(proto_code_name(rc), want, "%s: got %s (%s)", e[i].name, proto_code_name(rc), err.message);
        cr_assert_eq(err.code, rc);
        cr_assert_gt(strlen(err.message), 5, "%s: empty message", e[i].name);
        uint64_t want_id = jget(&v.json, "expect_id")->u;
        /* the reply's id (PROTOCOL.md section 4.2): the decoded one, else the one found without decoding the
         * whole message (a duplicated key fails before "id" is decoded), else 0; as the server does */
        uint64_t id = 0;
        if (r.has_id) id = r.id;
        else if (!proto_peek_id(v.bytes, v.len, &id)) id = 0;
        cr_assert_eq(id, want_id, "%s: id", e[i].name);
        proto_request_clear(&r);
        unload(&v);
        checked++;
    }
    cr_assert_geq(checked, 10);
}

Test(golden, request_fields)
{
    vec v;
    proto_request r;
    proto_request_init(&r);
    proto_error err;

    load("req_make", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert_str_eq(r.env, "anymal_c-walk");
    cr_assert_eq(r.num_worlds, 4);
    cr_assert_eq(r.nconfig, 2);
    cr_assert_str_eq(r.config[0].key, "kp");
    cr_assert_eq(r.config[0].value, 60.0);
    cr_assert_str_eq(r.config[1].key, "decimation");
    cr_assert_eq(r.config[1].value, 2.0);
    cr_assert(r.has_seed && r.seed == 42);
    cr_assert(r.has_autoreset && r.autoreset == ENV_AUTORESET_SAME_STEP);
    unload(&v);

    /* minor version 1: a named choice is a string value, carried as a name for the env to resolve */
    load("req_make_choice", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(r.nconfig, 2);
    cr_assert_str_eq(r.config[0].key, "solver");
    cr_assert_str_eq(r.config_name[0], "admm");
    cr_assert_str_eq(r.config[1].key, "solver_tol");
    cr_assert(!r.config_name[1][0] && r.config[1].value == 1e-8);
    unload(&v);

    load("req_make_min", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(!r.has_seed && r.seed == 0 && r.nconfig == 0 && r.autoreset == ENV_AUTORESET_NEXT_STEP);
    unload(&v);

    load("req_reset_subset", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert_eq(r.session, 7);
    cr_assert_eq(r.nids, 2);
    cr_assert(r.world_ids[0] == 1 && r.world_ids[1] == 3);
    cr_assert_eq(r.nseeds, 2);
    cr_assert(r.seeds[0] == 100 && r.seeds[1] == (1ull << 63) + 5);
    unload(&v);

    load("req_reset_ids_array", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.nids == 2 && r.world_ids[0] == 0 && r.world_ids[1] == 2 && r.nseeds == -1);
    unload(&v);

    load("req_step_token", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert(r.has_session && r.session == 7 && r.has_token);
    cr_assert(r.token[0] == 0x5e && r.token[15] == 0x10);
    unload(&v);
    load("req_reset_all", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(!r.has_token, "the token is optional on the wire (the server decides)");
    unload(&v);

    load("req_reset_seed", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.has_seed && r.seed == 1000 && r.nids == -1);
    unload(&v);

    load("req_step_subset", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.nids == 2 && r.world_ids[0] == 2 && r.world_ids[1] == 0);
    cr_assert(r.has_actions && r.actions.dtype == PROTO_DT_FLOAT32 && r.actions.ndim == 2);
    cr_assert(r.actions.shape[0] == 2 && r.actions.shape[1] == 3);
    float a[6];
    memcpy(a, r.actions.data, sizeof a);
    cr_assert(a[0] == 0.5f && a[2] == 1.5f && a[5] == -2.0f);
    cr_assert_eq(((uintptr_t)(r.actions.data - v.bytes)) % PROTO_ALIGN, 0, "tensor data is 8-aligned in the message");
    cr_assert(r.reward_terms);
    unload(&v);

    load("req_big_id", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert_eq(r.id, UINT64_MAX);
    unload(&v);

    /* minor 1: poses and model */
    load("req_poses_contacts", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.op == PROTO_OP_POSES && r.session == 7 && r.contacts);
    cr_assert(r.nids == 2 && r.world_ids[0] == 3 && r.world_ids[1] == 1);
    unload(&v);
    load("req_poses_all", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.op == PROTO_OP_POSES && r.nids == -1 && !r.contacts && !r.latest);
    unload(&v);
    load("req_poses_latest", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.op == PROTO_OP_POSES && r.latest && !r.contacts && !r.diagnostics);
    unload(&v);
    load("req_poses_diagnostics", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.op == PROTO_OP_POSES && r.diagnostics && !r.contacts && !r.latest && r.nids == -1);
    unload(&v);
    load("req_model", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK);
    cr_assert(r.op == PROTO_OP_MODEL && r.has_session && r.session == 7 && !r.has_terrain_region);
    unload(&v);
    /* minor 7: model's terrain_region */
    load("req_model_region", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert(r.op == PROTO_OP_MODEL && r.has_terrain_region);
    cr_assert(r.terrain_region[0] == -1.5 && r.terrain_region[1] == 2.0 && r.terrain_region[2] == 6.5 &&
              r.terrain_region[3] == 10.0);
    unload(&v);
    proto_request_clear(&r);
}

/* ---- replies: the C encoders reproduce the golden bytes ---- */

static void toy_spec(env_spec *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "toy-v0");
    snprintf(s->doc, sizeof s->doc, "A fixed spec for the golden vectors (not a registered env)");
    s->obs_dim = 3;
    s->act_dim = 1;
    s->nobs = 2;
    s->obs[0] = (env_field){"pos", 0, 2, -INFINITY, INFINITY, 1.0f, "m"};
    s->obs[1] = (env_field){"vel", 2, 1, -10.0f, 10.0f, 0.5f, "m/s"};
    s->nact = 1;
    s->act[0] = (env_field){"force", 0, 1, -1.0f, 1.0f, 20.0f, "N"};
    s->sim_dt = 0.005;
    s->decimation = 4;
    s->control_dt = 0.02;
    s->episode_seconds = 20;
    s->max_episode_steps = 1000;
    s->nconfig = 3;
    s->config[0] = (env_config_key){"kp", 80, 0, 1000, 0, "PD stiffness (N m / rad)", 0, {""}};
    s->config[1] = (env_config_key){"decimation", 4, 1, 50, 1, "physics steps per env step", 0, {""}};
    s->config[2] = (env_config_key){"solver", 0, 0, 2, 1, "contact solver, by name", 3, {"fast", "exact", "robust"}};
    s->nterms = 2;
    snprintf(s->terms[0], sizeof s->terms[0], "alive");
    snprintf(s->terms[1], sizeof s->terms[1], "effort");
}

/* gen_golden.py's TOY_SPEC_CRITIC: the toy spec with a critic observation (minor 4) */
static void toy_spec_critic(env_spec *s)
{
    toy_spec(s);
    s->critic_dim = 5;
    s->ncritic = 4;
    s->critic[0] = s->obs[0];
    s->critic[1] = s->obs[1];
    s->critic[2] = (env_field){"friction", 3, 1, 0.5f, 1.25f, 1.0f, ""};
    s->critic[3] = (env_field){"foot_contact", 4, 1, 0.0f, 1.0f, 1.0f, ""};
}

static void field_eq(const env_field *a, const env_field *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert(a->offset == b->offset && a->size == b->size);
    cr_assert(a->low == b->low && a->high == b->high && a->scale == b->scale, "%s bounds", a->name);
    cr_assert_str_eq(a->unit, b->unit);
}

static void spec_eq(const env_spec *a, const env_spec *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_str_eq(a->doc, b->doc);
    cr_assert(a->obs_dim == b->obs_dim && a->act_dim == b->act_dim && a->nobs == b->nobs && a->nact == b->nact);
    for (int i = 0; i < a->nobs; i++) field_eq(&a->obs[i], &b->obs[i]);
    for (int i = 0; i < a->nact; i++) field_eq(&a->act[i], &b->act[i]);
    cr_assert(a->sim_dt == b->sim_dt && a->decimation == b->decimation && a->control_dt == b->control_dt);
    cr_assert(a->episode_seconds == b->episode_seconds && a->max_episode_steps == b->max_episode_steps);
    cr_assert_eq(a->nconfig, b->nconfig);
    for (int i = 0; i < a->nconfig; i++) {
        cr_assert_str_eq(a->config[i].key, b->config[i].key);
        cr_assert(a->config[i].def == b->config[i].def && a->config[i].lo == b->config[i].lo &&
                  a->config[i].hi == b->config[i].hi && a->config[i].is_int == b->config[i].is_int);
        cr_assert_str_eq(a->config[i].doc, b->config[i].doc);
        cr_assert_eq(a->config[i].nchoices, b->config[i].nchoices, "%s choices", a->config[i].key);
        for (int k = 0; k < a->config[i].nchoices; k++) cr_assert_str_eq(a->config[i].choices[k], b->config[i].choices[k]);
    }
    cr_assert_eq(a->nterms, b->nterms);
    for (int i = 0; i < a->nterms; i++) cr_assert_str_eq(a->terms[i], b->terms[i]);
    cr_assert(a->critic_dim == b->critic_dim && a->ncritic == b->ncritic, "critic_obs %d/%d fields, %d/%d floats",
              a->ncritic, b->ncritic, a->critic_dim, b->critic_dim);
    for (int i = 0; i < a->ncritic; i++) field_eq(&a->critic[i], &b->critic[i]);
    cr_assert_eq(a->nterrain_kinds, b->nterrain_kinds, "terrain kinds");
    for (int i = 0; i < a->nterrain_kinds; i++) cr_assert_str_eq(a->terrain_kinds[i], b->terrain_kinds[i]);
}

/* The toy spec with a terrain curriculum (gen_golden.py TOY_SPEC_TERRAIN). */
static void toy_spec_terrain(env_spec *s)
{
    toy_spec(s);
    static const char *const kinds[] = {"slope_up", "stairs_down", "obstacles"};
    s->nterrain_kinds = 3;
    for (int i = 0; i < 3; i++) snprintf(s->terrain_kinds[i], sizeof s->terrain_kinds[i], "%s", kinds[i]);
}

static void expect_bytes(proto_buf *b, const char *name)
{
    vec v;
    load(name, &v);
    cr_assert_eq(b->oom, 0);
    cr_assert_eq(b->len, v.len, "%s: encoded %zu bytes, golden %zu", name, b->len, v.len);
    for (size_t i = 0; i < v.len; i++)
        cr_assert_eq(b->data[i], v.bytes[i], "%s: byte %zu is 0x%02x, golden 0x%02x", name, i, b->data[i], v.bytes[i]);
    unload(&v);
}

Test(golden, small_replies_encode_to_the_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_error(&b, 11, PROTO_E_UNKNOWN_SESSION, "unknown session 7");
    expect_bytes(&b, "rep_error");
    proto_buf_reset(&b);
    proto_encode_ping_reply(&b, 2, 1700000000.25);
    expect_bytes(&b, "rep_ping");
    proto_buf_reset(&b);
    proto_encode_close_reply(&b, 11, 7, 123456);
    expect_bytes(&b, "rep_close");
    proto_buf_reset(&b);
    proto_server_stats s = {.uptime_s = 12.5, .sessions = 2, .worlds = 4100, .steps = 1000000, .steps_per_s = 81920,
                            .requests = 2048, .errors = 3, .threads = 8};
    proto_encode_stats_reply(&b, 12, &s, NULL);
    expect_bytes(&b, "rep_stats");
    proto_buf_reset(&b);
    proto_session_stats ss = {.session = 7, .env = "anymal_c-walk", .num_worlds = 4096, .steps = 999424,
                              .steps_per_s = 81788.5, .age_s = 12, .idle_s = 0, .requests = 250, .errors = 1};
    proto_encode_stats_reply(&b, 13, &s, &ss);
    expect_bytes(&b, "rep_stats_session");
    proto_buf_free(&b);
}

/* Minor 5: a terrain task's session stats add "terrain" (its levels, per kind in terrain_kinds order); the C client's
 * stats reader gets them back. */
Test(golden, terrain_stats_encode_to_the_bytes_and_decode)
{
    proto_buf b;
    proto_buf_init(&b);
    env_spec spec;
    toy_spec_terrain(&spec);
    proto_server_stats s = {.uptime_s = 12.5, .sessions = 1, .worlds = 4, .steps = 400, .steps_per_s = 40,
                            .requests = 12, .errors = 0, .threads = 2};
    proto_session_stats ss = {.session = 7, .env = "toy-v0", .num_worlds = 4, .steps = 400, .steps_per_s = 40,
                              .age_s = 10, .idle_s = 0.5, .requests = 12, .errors = 0,
                              .nterrain_kinds = 3, .terrain_kinds = spec.terrain_kinds, .terrain_level = 2.5,
                              .terrain_worlds = 4, .kind_level = {1.5, 3.5, NAN}, .kind_worlds = {2, 2, 0}};
    proto_encode_stats_reply(&b, 15, &s, &ss);
    expect_bytes(&b, "rep_stats_terrain");
    /* a flat task's: the minor-4 bytes */
    proto_buf_reset(&b);
    ss.nterrain_kinds = 0;
    proto_encode_stats_reply(&b, 15, &s, &ss);
    vec v;
    load("rep_stats_terrain", &v);
    cr_assert_lt(b.len, v.len);
    unload(&v);
    proto_buf_free(&b);

    load("rep_stats_terrain", &v);
    herd_error err;
    herd_reply *r = herd_reply_decode(v.bytes, v.len, &err);
    cr_assert_not_null(r, "%s", err.message);
    herd_stats st;
    cr_assert_eq(herd_reply_stats(r, &st, &err), 0, "%s", err.message);
    cr_assert(st.has_session && st.nterrain_kinds == 3 && st.terrain_level == 2.5 && st.terrain_worlds == 4);
    cr_assert_str_eq(st.terrain_kinds[1], "stairs_down");
    cr_assert(st.kind_level[1] == 3.5 && st.kind_worlds[1] == 2 && isnan(st.kind_level[2]) && st.kind_worlds[2] == 0);
    herd_reply_destroy(&r);
    unload(&v);
}

Test(golden, hello_and_make_replies_encode_to_the_bytes)
{
    env_spec spec;
    toy_spec(&spec);
    proto_buf b;
    proto_buf_init(&b);
    proto_hello_info info = {.server = "herd 0.1.0", .threads = 8, .max_message_bytes = 16777216,
                             .max_worlds_per_session = 16384, .max_worlds = 65536, .auth = "none"};
    const env_spec *specs[1] = {&spec};
    proto_encode_hello_reply(&b, 1, &info, specs, 1);
    expect_bytes(&b, "rep_hello");
    proto_buf_reset(&b);
    /* a server with resource bounds (PROTOCOL.md sections 6.1 and 9) adds them after the three */
    static const char *const bound_names[] = {"max_memory_bytes", "max_sessions", "client_max_worlds",
                                              "client_max_sessions", "client_max_inflight",
                                              "client_max_queued_bytes", "drain_timeout_ms"};
    static const int64_t bound_values[] = {12884901888, 65536, 65536, 256, 256, 1073741824, 25000};
    static const char *const fbound_names[] = {"max_step_seconds", "client_max_inflight_seconds"};
    static const double fbound_values[] = {1000, 2000};
    info.auth = "curve";
    info.nextra = 7;
    info.extra_names = bound_names;
    info.extra_values = bound_values;
    info.nfextra = 2;
    info.fextra_names = fbound_names;
    info.fextra_values = fbound_values;
    proto_encode_hello_reply(&b, 1, &info, specs, 1);
    expect_bytes(&b, "rep_hello_bounds");
    proto_buf_reset(&b);
    double cfg[3] = {60, 2, 2};
    static const uint8_t token[PROTO_TOKEN_BYTES] = {0x5e, 0x1f, 0x0a, 0x9c, 0x33, 0xd2, 0xb7, 0x48,
                                                     0x6e, 0x01, 0xf4, 0xc2, 0x9a, 0x7d, 0x5b, 0x10};
    static const uint8_t view_token[PROTO_TOKEN_BYTES] = {0xa7, 0x40, 0x19, 0xe2, 0x6b, 0x05, 0xc8, 0x3d,
                                                          0x91, 0xfe, 0x27, 0x54, 0x0c, 0xb3, 0x68, 0xdf};
    proto_encode_make_reply(&b, 3, 7, token, view_token, 4, ENV_AUTORESET_SAME_STEP, 42, &spec, cfg, 0);
    expect_bytes(&b, "rep_make");
    proto_buf_reset(&b);
    toy_spec_critic(&spec);
    double cfg0[3] = {80, 4, 0};
    proto_encode_make_reply(&b, 43, 7, token, view_token, 2, ENV_AUTORESET_NEXT_STEP, 0, &spec, cfg0, 1);
    expect_bytes(&b, "rep_make_critic");
    proto_buf_free(&b);
}

/* Fills a reserved region from the golden JSON's tensor at json path (map keys). */
static void fill(proto_buf *b, size_t off, const jv *t)
{
    cr_assert(off > 0);
    const char *h = jget(jget(t, "data"), "$bin")->s;
    unhex(h, b->data + off);
}

Test(golden, reset_and_step_replies_encode_to_the_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_step_layout lay;
    vec v;

    load("rep_reset", &v);
    proto_encode_reset_reply(&b, 6, 2, 3, 0, 0, &lay);
    fill(&b, lay.obs, jget(&v.json, "obs"));
    expect_bytes(&b, "rep_reset");
    unload(&v);

    const char *names[2] = {"rep_step", "rep_step_same"};
    unsigned flags[2] = {PROTO_STEP_AUTORESET, PROTO_STEP_FINAL_OBS | PROTO_STEP_REWARD_TERMS};
    uint64_t ids[2] = {9, 10};
    for (int k = 0; k < 2; k++) {
        load(names[k], &v);
        proto_buf_reset(&b);
        proto_encode_step_reply(&b, ids[k], 2, 3, 2, 0, flags[k], &lay);
        for (size_t i = 0; i < sizeof lay / sizeof(size_t); i++)
            if (((size_t *)&lay)[i]) cr_assert_eq(((size_t *)&lay)[i] % PROTO_ALIGN, 0, "region %zu aligned", i);
        const jv *info = jget(&v.json, "info");
        fill(&b, lay.obs, jget(&v.json, "obs"));
        fill(&b, lay.reward, jget(&v.json, "reward"));
        fill(&b, lay.terminated, jget(&v.json, "terminated"));
        fill(&b, lay.truncated, jget(&v.json, "truncated"));
        fill(&b, lay.physics_reset, jget(info, "physics_reset"));
        fill(&b, lay.episode_done, jget(info, "episode_done"));
        fill(&b, lay.episode_return, jget(info, "episode_return"));
        fill(&b, lay.episode_length, jget(info, "episode_length"));
        fill(&b, lay.episode_terms, jget(info, "episode_terms"));
        if (flags[k] & PROTO_STEP_AUTORESET) fill(&b, lay.autoreset, jget(info, "autoreset"));
        else cr_assert_eq(lay.autoreset, 0);
        if (flags[k] & PROTO_STEP_FINAL_OBS) {
            fill(&b, lay.final_obs, jget(info, "final_obs"));
            fill(&b, lay.final_mask, jget(info, "_final_obs"));
        }
        if (flags[k] & PROTO_STEP_REWARD_TERMS) fill(&b, lay.reward_terms, jget(info, "reward_terms"));
        expect_bytes(&b, names[k]);
        unload(&v);
    }
    proto_buf_free(&b);
}

/* Minor 4: a session made with critic_obs gets info.critic_obs, laid out after every other entry; the same
 * encoders with critic_dim 0 gave the minor-3 bytes above. */
Test(golden, critic_obs_replies_encode_to_the_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_step_layout lay;
    vec v;

    load("rep_reset_critic", &v);
    proto_encode_reset_reply(&b, 44, 2, 3, 5, 0, &lay);
    cr_assert(lay.critic_obs > 0 && lay.critic_obs % PROTO_ALIGN == 0);
    fill(&b, lay.obs, jget(&v.json, "obs"));
    fill(&b, lay.critic_obs, jget(jget(&v.json, "info"), "critic_obs"));
    expect_bytes(&b, "rep_reset_critic");
    unload(&v);

    load("rep_step_critic", &v);
    proto_buf_reset(&b);
    proto_encode_step_reply(&b, 45, 2, 3, 2, 5, PROTO_STEP_AUTORESET, &lay);
    cr_assert(lay.critic_obs > 0 && lay.critic_obs % PROTO_ALIGN == 0);
    const jv *info = jget(&v.json, "info");
    fill(&b, lay.obs, jget(&v.json, "obs"));
    fill(&b, lay.reward, jget(&v.json, "reward"));
    fill(&b, lay.terminated, jget(&v.json, "terminated"));
    fill(&b, lay.truncated, jget(&v.json, "truncated"));
    fill(&b, lay.physics_reset, jget(info, "physics_reset"));
    fill(&b, lay.episode_done, jget(info, "episode_done"));
    fill(&b, lay.episode_return, jget(info, "episode_return"));
    fill(&b, lay.episode_length, jget(info, "episode_length"));
    fill(&b, lay.episode_terms, jget(info, "episode_terms"));
    fill(&b, lay.autoreset, jget(info, "autoreset"));
    fill(&b, lay.critic_obs, jget(info, "critic_obs"));
    expect_bytes(&b, "rep_step_critic");
    unload(&v);

    /* critic_dim 0: no region, and the reply is the one without the option */
    proto_buf_reset(&b);
    proto_encode_reset_reply(&b, 6, 2, 3, 0, 0, &lay);
    cr_assert_eq(lay.critic_obs, 0);
    proto_buf_free(&b);
}

/* The critic spec decodes back to its fields; the request asking for it decodes to the option. */
Test(golden, critic_obs_spec_and_make_request_decode)
{
    vec v;
    proto_reply r = {0};
    proto_error err;
    load("rep_make_critic", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    env_spec got, want;
    toy_spec_critic(&want);
    cr_assert_eq(proto_decode_spec(proto_value_get(r.root, "spec"), &got, &err), PROTO_OK, "%s", err.message);
    spec_eq(&got, &want);
    proto_reply_clear(&r);
    unload(&v);

    load("rep_make", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(proto_decode_spec(proto_value_get(r.root, "spec"), &got, &err), PROTO_OK, "%s", err.message);
    cr_assert(got.critic_dim == 0 && got.ncritic == 0, "a spec without critic_obs has none");
    proto_reply_clear(&r);
    unload(&v);

    proto_request q;
    proto_request_init(&q);
    load("req_make_critic", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &q, &err), PROTO_OK, "%s", err.message);
    cr_assert(q.op == PROTO_OP_MAKE && q.critic_obs == 1);
    unload(&v);
    load("req_make", &v);
    cr_assert_eq(proto_decode_request(v.bytes, v.len, NULL, &q, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(q.critic_obs, 0, "off by default");
    unload(&v);
    proto_request_clear(&q);
}

/* Minor 5: a terrain task's spec ends with terrain_kinds; its reset and step replies end with info.terrain_level and
 * info.terrain_kind (after critic_obs); flat tasks' replies are the bytes above. */
Test(golden, terrain_replies_encode_to_the_bytes_and_decode)
{
    proto_buf b;
    proto_buf_init(&b);
    static const uint8_t token[PROTO_TOKEN_BYTES] = {0x5e, 0x1f, 0x0a, 0x9c, 0x33, 0xd2, 0xb7, 0x48,
                                                     0x6e, 0x01, 0xf4, 0xc2, 0x9a, 0x7d, 0x5b, 0x10};
    static const uint8_t view_token[PROTO_TOKEN_BYTES] = {0xa7, 0x40, 0x19, 0xe2, 0x6b, 0x05, 0xc8, 0x3d,
                                                          0x91, 0xfe, 0x27, 0x54, 0x0c, 0xb3, 0x68, 0xdf};
    env_spec spec, got;
    toy_spec_terrain(&spec);
    double cfg0[3] = {80, 4, 0};
    proto_encode_make_reply(&b, 46, 7, token, view_token, 2, ENV_AUTORESET_NEXT_STEP, 0, &spec, cfg0, 0);
    expect_bytes(&b, "rep_make_terrain");

    vec v;
    proto_reply r = {0};
    proto_error err;
    load("rep_make_terrain", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(proto_decode_spec(proto_value_get(r.root, "spec"), &got, &err), PROTO_OK, "%s", err.message);
    spec_eq(&got, &spec);
    proto_reply_clear(&r);
    unload(&v);
    load("rep_make", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(proto_decode_spec(proto_value_get(r.root, "spec"), &got, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(got.nterrain_kinds, 0, "a flat spec has no terrain kinds");
    proto_reply_clear(&r);
    unload(&v);

    proto_step_layout lay;
    load("rep_reset_terrain", &v);
    proto_buf_reset(&b);
    proto_encode_reset_reply(&b, 47, 2, 3, 0, PROTO_STEP_TERRAIN, &lay);
    cr_assert(lay.terrain_level > 0 && lay.terrain_level % PROTO_ALIGN == 0 && lay.terrain_kind % PROTO_ALIGN == 0);
    fill(&b, lay.obs, jget(&v.json, "obs"));
    fill(&b, lay.terrain_level, jget(jget(&v.json, "info"), "terrain_level"));
    fill(&b, lay.terrain_kind, jget(jget(&v.json, "info"), "terrain_kind"));
    expect_bytes(&b, "rep_reset_terrain");
    unload(&v);

    load("rep_step_terrain", &v);
    proto_buf_reset(&b);
    proto_encode_step_reply(&b, 48, 2, 3, 2, 5, PROTO_STEP_AUTORESET | PROTO_STEP_TERRAIN, &lay);
    const jv *info = jget(&v.json, "info");
    fill(&b, lay.obs, jget(&v.json, "obs"));
    fill(&b, lay.reward, jget(&v.json, "reward"));
    fill(&b, lay.terminated, jget(&v.json, "terminated"));
    fill(&b, lay.truncated, jget(&v.json, "truncated"));
    fill(&b, lay.physics_reset, jget(info, "physics_reset"));
    fill(&b, lay.episode_done, jget(info, "episode_done"));
    fill(&b, lay.episode_return, jget(info, "episode_return"));
    fill(&b, lay.episode_length, jget(info, "episode_length"));
    fill(&b, lay.episode_terms, jget(info, "episode_terms"));
    fill(&b, lay.autoreset, jget(info, "autoreset"));
    fill(&b, lay.critic_obs, jget(info, "critic_obs"));
    fill(&b, lay.terrain_level, jget(info, "terrain_level"));
    fill(&b, lay.terrain_kind, jget(info, "terrain_kind"));
    expect_bytes(&b, "rep_step_terrain");
    unload(&v);

    /* without the flag: no regions */
    proto_buf_reset(&b);
    proto_encode_step_reply(&b, 9, 2, 3, 2, 0, PROTO_STEP_AUTORESET, &lay);
    cr_assert(lay.terrain_level == 0 && lay.terrain_kind == 0);
    proto_buf_free(&b);
}

/* The toy scene of gen_golden.py (TOY_SCENE). */
static void toy_scene(env_scene_t *s)
{
    memset(s, 0, sizeof *s);
    s->nbody = 2;
    snprintf(s->body[0].name, sizeof s->body[0].name, "base");
    s->body[0].parent = -1;
    snprintf(s->body[1].name, sizeof s->body[1].name, "leg");
    s->body[1].parent = 0;
    s->ngeom = 3;
    env_scene_geom g0 = {.name = "base/collision0", .type = ENV_PRIM_BOX, .body = 0, .pos = {0, 0, 0},
                         .quat = {1, 0, 0, 0}, .size = {0.25f, 0.125f, 0.0625f}, .rgba = {0.875f, 0.375f, 0.125f, 1},
                         .collides = 1};
    env_scene_geom g1 = {.name = "leg/collision0", .type = ENV_PRIM_CAPSULE, .body = 1, .pos = {0, 0, -0.125f},
                         .quat = {0.5f, 0.5f, 0.5f, 0.5f}, .size = {0.03125f, 0.125f, 0}, .rgba = {0.25f, 0.25f, 0.25f, 1},
                         .collides = 0};
    env_scene_geom g2 = {.name = "leg/collision1", .type = ENV_PRIM_SPHERE, .body = 1, .pos = {0, 0, -0.25f},
                         .quat = {1, 0, 0, 0}, .size = {0.03125f, 0, 0}, .rgba = {0.0625f, 0.0625f, 0.0625f, 1},
                         .collides = 1};
    s->geom[0] = g0, s->geom[1] = g1, s->geom[2] = g2;
    s->terrain.type = ENV_TERRAIN_PLANE;
    s->max_contacts = 2;
}

/* minor 7: a cell terrain's scene with a region (gen_golden.py's CELLS_SCENE): a 4 x 3 grid whose region of
 * samples 1..2 x 0..1 holds 0, 0.125 / 0.25, 0.375 (the other samples 9), sample (2, 0) smooth. */
Test(golden, cells_scene_with_a_region_encodes_to_the_bytes)
{
    static const float heights[12] = {9, 0, 0.125f, 9, 9, 0.25f, 0.375f, 9, 9, 9, 9, 9};
    static const unsigned char smooth[12] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    env_scene_t *scene = malloc(sizeof *scene);
    toy_scene(scene);
    env_scene_terrain *t = &scene->terrain;
    t->type = ENV_TERRAIN_CELLS;
    t->nx = 4, t->ny = 3, t->x0 = -1, t->y0 = -0.5, t->dx = 0.5, t->dy = 0.5;
    t->heights = heights, t->smooth = smooth;
    char msg[PROTO_MSG_MAX];
    /* the cells meeting [-0.6, -0.6] .. [0.2, 0.1]: samples x 1..2 (centres -0.5, 0), y 0..1 (centres -0.5, 0) */
    const double box[4] = {-0.6, -0.6, 0.2, 0.1};
    cr_assert_eq(env_scene_region(scene, box, msg, sizeof msg), 0, "%s", msg);
    cr_assert(t->has_region && t->rx == 1 && t->ry == 0 && t->rnx == 2 && t->rny == 2, "region %d %d %d %d", t->rx,
              t->ry, t->rnx, t->rny);
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_model_reply(&b, 17, 7, "toy-v0", scene);
    expect_bytes(&b, "rep_model_cells");
    /* far outside the grid: clipped to its corner sample (the border cells extend to infinity) */
    const double far[4] = {100, 100, 200, 200};
    cr_assert_eq(env_scene_region(scene, far, msg, sizeof msg), 0, "%s", msg);
    cr_assert(t->rx == 3 && t->ry == 2 && t->rnx == 1 && t->rny == 1);
    /* more than ENV_SCENE_REGION_MAX_SAMPLES samples: refused, naming the count */
    t->nx = 2048, t->ny = 1024, t->heights = NULL;
    const double big[4] = {-1, -0.5, 2047 * 0.5, 1024 * 0.5};
    cr_assert_eq(env_scene_region(scene, big, msg, sizeof msg), -1);
    cr_assert(strstr(msg, "2097152 samples"), "%s", msg);
    const double bad[4] = {1, 0, 0, 1};
    cr_assert_eq(env_scene_region(scene, bad, msg, sizeof msg), -1);
    free(scene);
    proto_buf_free(&b);
}

Test(golden, model_and_poses_replies_encode_to_the_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    env_scene_t *scene = malloc(sizeof *scene);
    toy_scene(scene);
    proto_encode_model_reply(&b, 14, 7, "toy-v0", scene);
    expect_bytes(&b, "rep_model");
    free(scene);

    proto_step_layout lay;
    vec v;
    load("rep_poses_all", &v);
    proto_buf_reset(&b);
    proto_encode_poses_reply(&b, 15, 2, 2, 0, 0, &lay);
    cr_assert(lay.nbody == 2 && lay.max_contacts == 0 && lay.contact_count == 0);
    fill(&b, lay.body_pos, jget(&v.json, "body_pos"));
    fill(&b, lay.body_quat, jget(&v.json, "body_quat"));
    expect_bytes(&b, "rep_poses_all");
    unload(&v);

    load("rep_poses_contacts", &v);
    proto_buf_reset(&b);
    proto_encode_poses_reply(&b, 16, 2, 2, 2, 0, &lay);
    cr_assert_eq(lay.max_contacts, 2);
    /* each region and where the golden JSON has its tensor (the contacts in the "contacts" map) */
    const jv *c = jget(&v.json, "contacts");
    struct { size_t off; const jv *map; const char *key; } regions[6] = {
        {lay.body_pos, &v.json, "body_pos"}, {lay.body_quat, &v.json, "body_quat"}, {lay.contact_count, c, "count"},
        {lay.contact_pos, c, "pos"}, {lay.contact_normal, c, "normal"}, {lay.contact_impulse, c, "impulse"}};
    for (int i = 0; i < 6; i++) {
        cr_assert(regions[i].off > 0 && regions[i].off % PROTO_ALIGN == 0, "%s aligned", regions[i].key);
        fill(&b, regions[i].off, jget(regions[i].map, regions[i].key));
    }
    expect_bytes(&b, "rep_poses_contacts");
    unload(&v);

    /* minor 6: the contact diagnostics; without contacts they add nothing */
    load("rep_poses_diagnostics", &v);
    proto_buf_reset(&b);
    proto_encode_poses_reply(&b, 17, 2, 2, 2, 1, &lay);
    c = jget(&v.json, "contacts");
    const jv *dg = jget(&v.json, "diagnostics");
    struct { size_t off; const jv *map; const char *key; } dregions[11] = {
        {lay.body_pos, &v.json, "body_pos"}, {lay.body_quat, &v.json, "body_quat"}, {lay.contact_count, c, "count"},
        {lay.contact_pos, c, "pos"}, {lay.contact_normal, c, "normal"}, {lay.contact_impulse, c, "impulse"},
        {lay.contact_state, c, "state"}, {lay.contact_friction, c, "friction"}, {lay.contact_body, c, "body"},
        {lay.diag_fallback, dg, "fallback"}, {lay.diag_limit, dg, "limit_impulse"}};
    for (int i = 0; i < 11; i++) {
        cr_assert(dregions[i].off > 0 && dregions[i].off % PROTO_ALIGN == 0, "%s aligned", dregions[i].key);
        fill(&b, dregions[i].off, jget(dregions[i].map, dregions[i].key));
    }
    expect_bytes(&b, "rep_poses_diagnostics");
    unload(&v);
    load("rep_poses_all", &v);
    proto_buf_reset(&b);
    proto_encode_poses_reply(&b, 15, 2, 2, 0, 1, &lay);
    cr_assert(lay.contact_state == 0 && lay.diag_fallback == 0 && lay.diag_limit == 0);
    fill(&b, lay.body_pos, jget(&v.json, "body_pos"));
    fill(&b, lay.body_quat, jget(&v.json, "body_quat"));
    expect_bytes(&b, "rep_poses_all");
    unload(&v);
    proto_buf_free(&b);
}

Test(golden, model_and_poses_replies_decode_through_the_client_decoder)
{
    vec v;
    proto_reply r;
    proto_error err;
    load("rep_model", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    const proto_value *geoms = proto_value_get(r.root, "scene.geoms");
    cr_assert_eq(proto_value_len(geoms), 3);
    char type[16];
    cr_assert_eq(proto_get_str(proto_value_at(geoms, 1), "type", type, sizeof type, &err), PROTO_OK);
    cr_assert_str_eq(type, "capsule");
    int64_t body, mc;
    cr_assert_eq(proto_get_int(proto_value_at(geoms, 2), "body", &body, &err), PROTO_OK);
    cr_assert_eq(body, 1);
    cr_assert_eq(proto_get_int(r.root, "scene.max_contacts", &mc, &err), PROTO_OK);
    cr_assert_eq(mc, 2);
    const proto_value *q = proto_value_get(proto_value_at(geoms, 1), "quat");
    cr_assert_eq(proto_value_len(q), 4);
    proto_reply_clear(&r);
    unload(&v);

    load("rep_poses_contacts", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    proto_tensor t;
    int64_t s3[3] = {2, 2, 3}, s1[1] = {2};
    cr_assert_eq(proto_get_tensor(r.root, "body_pos", PROTO_DT_FLOAT32, 3, s3, &t, &err), PROTO_OK, "%s", err.message);
    float p[12];
    memcpy(p, t.data, sizeof p);
    cr_assert(p[0] == 1.0f && p[11] == 1.0f - 11 * 0.125f);
    cr_assert_eq(proto_get_tensor(r.root, "contacts.count", PROTO_DT_INT32, 1, s1, &t, &err), PROTO_OK, "%s", err.message);
    int32_t cnt[2];
    memcpy(cnt, t.data, sizeof cnt);
    cr_assert(cnt[0] == 1 && cnt[1] == 0);
    proto_reply_clear(&r);
    unload(&v);

    /* minor 6: the contact diagnostics */
    load("rep_poses_diagnostics", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    int64_t s2[2] = {2, 2};
    cr_assert_eq(proto_get_tensor(r.root, "contacts.state", PROTO_DT_UINT8, 2, s2, &t, &err), PROTO_OK, "%s", err.message);
    uint8_t state[4];
    memcpy(state, t.data, sizeof state);
    cr_assert(state[0] == 1 && state[1] == 0 && state[2] == 2 && state[3] == 0);
    cr_assert_eq(proto_get_tensor(r.root, "contacts.friction", PROTO_DT_FLOAT32, 3, s3, &t, &err), PROTO_OK, "%s",
                 err.message);
    float fr[12];
    memcpy(fr, t.data, sizeof fr);
    cr_assert(fr[0] == 0.125f && fr[1] == -0.25f && fr[6] == -0.375f);
    cr_assert_eq(proto_get_tensor(r.root, "contacts.body", PROTO_DT_INT32, 2, s2, &t, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(proto_get_tensor(r.root, "diagnostics.fallback", PROTO_DT_UINT8, 1, s1, &t, &err), PROTO_OK, "%s",
                 err.message);
    cr_assert(t.data[0] == 0 && t.data[1] == 1);
    cr_assert_eq(proto_get_tensor(r.root, "diagnostics.limit_impulse", PROTO_DT_FLOAT32, 2, s2, &t, &err), PROTO_OK,
                 "%s", err.message);
    float lim[4];
    memcpy(lim, t.data, sizeof lim);
    cr_assert(lim[1] == 0.0625f && lim[3] == -0.125f);
    proto_reply_clear(&r);
    unload(&v);
}


/* ---- replies: the client-side decoder ---- */

Test(golden, replies_decode_through_the_client_decoder)
{
    vec v;
    proto_reply r;
    proto_error err;

    load("rep_error", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK);
    cr_assert(!r.ok && r.id == 11 && r.error.code == PROTO_E_UNKNOWN_SESSION);
    cr_assert_str_eq(r.error.message, "unknown session 7");
    proto_reply_clear(&r);
    unload(&v);

    load("rep_hello", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    cr_assert(r.ok && r.id == 1);
    const proto_value *envs = proto_value_get(r.root, "envs");
    cr_assert_eq(proto_value_len(envs), 1);
    env_spec got, want;
    toy_spec(&want);
    cr_assert_eq(proto_decode_spec(proto_value_at(envs, 0), &got, &err), PROTO_OK, "%s", err.message);
    spec_eq(&got, &want);
    proto_reply_clear(&r);
    unload(&v);

    load("rep_make", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK, "%s", err.message);
    uint8_t token[PROTO_TOKEN_BYTES];
    cr_assert_eq(proto_get_bin(r.root, "token", token, sizeof token, &err), PROTO_OK, "%s", err.message);
    cr_assert(token[0] == 0x5e && token[15] == 0x10);
    cr_assert_eq(proto_get_bin(r.root, "view_token", token, sizeof token, &err), PROTO_OK, "%s", err.message);
    cr_assert(token[0] == 0xa7 && token[15] == 0xdf, "minor 2: the read-only view token");
    cr_assert_eq(proto_get_bin(r.root, "token", token, 8, &err), PROTO_E_BAD_REPLY, "the length is checked");
    cr_assert_eq(proto_get_bin(r.root, "env", token, sizeof token, &err), PROTO_E_BAD_REPLY, "a str is not a bin");
    proto_reply_clear(&r);
    unload(&v);

    load("rep_step_same", &v);
    cr_assert_eq(proto_decode_reply(v.bytes, v.len, &r, &err), PROTO_OK);
    proto_tensor t;
    int64_t shp[2] = {2, 3};
    cr_assert_eq(proto_get_tensor(r.root, "obs", PROTO_DT_FLOAT32, 2, shp, &t, &err), PROTO_OK, "%s", err.message);
    float obs[6];
    memcpy(obs, t.data, sizeof obs);
    cr_assert(obs[0] == 2.0f && obs[5] == 0.75f);
    const proto_value *info = proto_value_get(r.root, "info");
    cr_assert_eq(proto_get_tensor(info, "_final_obs", PROTO_DT_BOOL, 1, shp, &t, &err), PROTO_OK, "%s", err.message);
    const uint8_t *mask = t.data;
    cr_assert_eq(proto_get_tensor(r.root, "info._final_obs", PROTO_DT_BOOL, 1, shp, &t, &err), PROTO_OK, "%s", err.message);
    cr_assert_eq(t.data, mask, "a key path reaches the same value");
    cr_assert(t.data[0] == 1 && t.data[1] == 0);
    cr_assert_eq(proto_get_tensor(info, "final_obs", PROTO_DT_INT32, 2, shp, &t, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "'final_obs' is float32, expected int32"), "%s", err.message);
    cr_assert_eq(proto_get_tensor(r.root, "info.nothing", PROTO_DT_BOOL, 1, shp, &t, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "lacks 'info.nothing'"), "%s", err.message);
    cr_assert_null(proto_value_get(r.root, "obs.dtype.x"));
    cr_assert_eq(proto_value_len(info), -1, "a map is not an array");
    cr_assert_null(proto_value_at(info, 0));
    proto_reply_clear(&r);
    unload(&v);
}

/* ---- the documented minor version ---- */

/* The number after `prefix` at the start of a line of text (after the line's leading spaces), or -1; with
 * last, the largest such number (the last row of a table). */
static int doc_number(const char *text, const char *prefix, int last)
{
    int found = -1;
    size_t pl = strlen(prefix);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, prefix, pl) || !isdigit((unsigned char)l[pl])) continue;
        int v = atoi(l + pl);
        if (!last) return v;
        if (v > found) found = v;
    }
    return found;
}

/* PROTOCOL.md states the minor version in three places (the title, hello's table in 6.1, the versioning
 * table of 13); each must be the minor a server reports in hello, and the golden hello reply's. */
Test(golden, documented_protocol_minor_is_the_servers, .timeout = 60)
{
    size_t n;
    char *doc = (char *)slurp("protocol/PROTOCOL.md", &n);
    int title = doc_number(doc, "# The herd wire protocol, version 1 (minor ", 0);
    int hello_row = doc_number(doc, "| `protocol_minor` | uint | ", 0);
    const char *s13 = strstr(doc, "\n## 13. Versioning");
    cr_assert_not_null(s13, "PROTOCOL.md has no section 13");
    int changelog = doc_number(s13, "| ", 1);
    free(doc);

    vec v;
    load("rep_hello", &v);
    const jv *golden = jget(&v.json, "protocol_minor");
    cr_assert(golden && golden->t == J_INT && golden->is_u);

    srv_thread *t = test_server_start(1);
    const char *eps[1] = {srv_thread_endpoint(t)};
    herd_error e;
    herd_client *c = herd_client_new(eps, 1, 10000, &e);
    cr_assert_not_null(c, "%s", e.message);
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &e), 0, "%s", e.message);
    int server = h.protocol_minor;
    herd_hello_free(&h);
    herd_client_destroy(&c);
    srv_thread_stop(&t);

    cr_assert_eq(title, server, "PROTOCOL.md's title says minor %d, the server reports %d", title, server);
    cr_assert_eq(hello_row, server, "PROTOCOL.md section 6.1 says protocol_minor %d, the server reports %d", hello_row,
                 server);
    cr_assert_eq(changelog, server, "PROTOCOL.md section 13's last minor is %d, the server reports %d", changelog, server);
    cr_assert_eq(golden->u, (unsigned long long)server, "golden rep_hello has protocol_minor %llu, the server reports %d",
                 golden->u, server);
    unload(&v);
}

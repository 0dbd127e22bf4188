/* test_proto.c — the protocol codec on its own: writer forms against msgpack-c's packer, tensor
 * alignment, request round trips, a table of requests (malformed ones each answered with the right
 * code and a message naming the field, valid ones accepted), session checks, reply decoding, and a
 * mutation fuzz loop. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto.h"

/* ---- helpers ---- */

static void head(proto_buf *b, uint64_t id, const char *op, uint32_t nmore)
{
    proto_w_map(b, 3 + nmore);
    proto_w_str(b, "v");
    proto_w_uint(b, 1);
    proto_w_str(b, "id");
    proto_w_uint(b, id);
    proto_w_str(b, "op");
    proto_w_str(b, op);
}

static void w_f32_tensor(proto_buf *b, int rows, int cols, float fill)
{
    uint64_t shp[2] = {(uint64_t)rows, (uint64_t)cols};
    size_t off = proto_w_tensor(b, PROTO_DT_FLOAT32, 2, shp, NULL);
    for (int i = 0; i < rows * cols; i++) memcpy(b->data + off + 4 * (size_t)i, &fill, 4);
}

/* ---- writer ---- */

static int sbuf_write(void *data, const char *buf, size_t len)
{
    msgpack_sbuffer_write(data, buf, len);
    return 0;
}

Test(writer, minimal_forms_match_msgpack_c)
{
    const uint64_t us[] = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295ull, 4294967296ull, UINT64_MAX};
    const int64_t is[] = {-1, -32, -33, -128, -129, -32768, -32769, INT32_MIN, (int64_t)INT32_MIN - 1, INT64_MIN};
    const size_t slen[] = {0, 31, 32, 255, 256, 65535, 65536};
    const uint32_t cnt[] = {0, 15, 16, 65535, 65536};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, sbuf_write);
    proto_buf b;
    proto_buf_init(&b);
    char *s = calloc(70000, 1);
    memset(s, 'x', 69999);
    for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) { proto_w_uint(&b, us[i]); msgpack_pack_uint64(&pk, us[i]); }
    for (size_t i = 0; i < sizeof is / sizeof is[0]; i++) { proto_w_int(&b, is[i]); msgpack_pack_int64(&pk, is[i]); }
    for (size_t i = 0; i < sizeof slen / sizeof slen[0]; i++) {
        proto_w_strn(&b, s, slen[i]);
        msgpack_pack_str_with_body(&pk, s, slen[i]);
        proto_w_bin(&b, s, slen[i]);
        msgpack_pack_bin_with_body(&pk, s, slen[i]);
    }
    for (size_t i = 0; i < sizeof cnt / sizeof cnt[0]; i++) {
        proto_w_array(&b, cnt[i]);
        msgpack_pack_array(&pk, cnt[i]);
        proto_w_map(&b, cnt[i]);
        msgpack_pack_map(&pk, cnt[i]);
    }
    proto_w_f64(&b, -0.1);
    msgpack_pack_double(&pk, -0.1);
    proto_w_bool(&b, 1);
    msgpack_pack_true(&pk);
    proto_w_bool(&b, 0);
    msgpack_pack_false(&pk);
    proto_w_nil(&b);
    msgpack_pack_nil(&pk);
    cr_assert_eq(b.len, sb.size);
    cr_assert(!memcmp(b.data, sb.data, sb.size));
    cr_assert_eq((uintptr_t)b.data % 64, 0, "buffer is 64-byte aligned");
    free(s);
    proto_buf_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

Test(writer, tensor_data_is_aligned_whatever_the_prefix)
{
    for (int prefix = 0; prefix < 64; prefix++) {
        for (int nd = 1; nd <= 3; nd++) {
            proto_buf b;
            proto_buf_init(&b);
            proto_w_reply_head(&b, 1, 2);
            proto_w_str(&b, "pad");
            proto_w_bin(&b, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", (size_t)prefix);
            uint64_t shp[3] = {(uint64_t)(prefix * 37 + 1), 3, 1};
            int32_t *vals = malloc(shp[0] * 3 * 4);
            for (uint64_t i = 0; i < shp[0] * 3; i++) vals[i] = (int32_t)i;
            uint64_t sh2[3] = {shp[0], nd > 1 ? 3 : 1, 1};
            if (nd == 1) sh2[0] = shp[0] * 3;
            proto_w_str(&b, "t");
            size_t off = proto_w_tensor(&b, PROTO_DT_INT32, nd, sh2, vals);
            cr_assert_eq(off % PROTO_ALIGN, 0, "prefix %d ndim %d: offset %zu", prefix, nd, off);
            /* msgpack-c reads it back, and the reply decoder's tensor view agrees */
            msgpack_zone z;
            msgpack_zone_init(&z, 1024);
            msgpack_object o;
            size_t used = 0;
            cr_assert_eq(msgpack_unpack((const char *)b.data, b.len, &used, &z, &o), MSGPACK_UNPACK_SUCCESS);
            cr_assert_eq(used, b.len);
            proto_reply r;
            proto_tensor t;
            proto_error e;
            cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_OK, "%s", e.message);
            cr_assert_eq(proto_value_tensor(proto_value_get(r.root, "t"), "t", &t, &e), PROTO_OK, "%s", e.message);
            proto_reply_clear(&r);
            cr_assert_eq(t.data, b.data + off);
            cr_assert_eq(t.dtype, PROTO_DT_INT32);
            cr_assert(!memcmp(t.data, vals, shp[0] * 12));
            msgpack_zone_destroy(&z);
            free(vals);
            proto_buf_free(&b);
        }
    }
}

Test(writer, steal_hands_over_memory)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_str(&b, "hello");
    size_t n;
    uint8_t *p = proto_buf_steal(&b, &n);
    cr_assert(p && n == 6 && b.data == NULL && b.len == 0);
    free(p);
}

/* ---- request round trips ---- */

static void roundtrip(const proto_request *in, proto_request *out)
{
    proto_buf b;
    proto_buf_init(&b);
    cr_assert_eq(proto_encode_request(&b, in), 0);
    proto_error e;
    proto_request_init(out);
    int rc = proto_decode_request(b.data, b.len, NULL, out, &e);
    cr_assert_eq(rc, PROTO_OK, "%s: %s", proto_code_name(rc), e.message);
    /* the tensor views point into b: compare before freeing */
    if (in->has_actions) {
        cr_assert_eq(out->actions.nbytes, in->actions.nbytes);
        cr_assert(!memcmp(out->actions.data, in->actions.data, in->actions.nbytes));
        out->actions.data = NULL;
    }
    proto_buf_free(&b);
}

Test(roundtrip, every_op)
{
    proto_request in, out;
    for (int op = 0; op < PROTO_OP_COUNT; op++) {
        proto_request_init(&in);
        in.op = (proto_op)op;
        in.id = 1000 + (uint64_t)op;
        if (op == PROTO_OP_CLOSE || op == PROTO_OP_STATS || op == PROTO_OP_RESET || op == PROTO_OP_STEP) {
            in.session = 0xdeadbeefcafeull;
            in.has_session = 1;
        }
        if (op == PROTO_OP_MAKE) {
            snprintf(in.env, sizeof in.env, "x");
            in.num_worlds = 1;
        }
        float a = 1.0f;
        if (op == PROTO_OP_STEP) {
            in.has_actions = 1;
            in.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {1, 1}, (const uint8_t *)&a, 4};
        }
        roundtrip(&in, &out);
        cr_assert_eq(out.op, (proto_op)op);
        cr_assert_eq(out.id, in.id);
        cr_assert_eq(out.session, in.session);
        proto_request_clear(&out);
    }
}

Test(roundtrip, make_reset_step)
{
    proto_request in, out;
    proto_request_init(&in);
    in.op = PROTO_OP_MAKE;
    in.id = 5;
    snprintf(in.env, sizeof in.env, "anymal_c-walk");
    in.num_worlds = 4096;
    in.nconfig = 3;
    in.config[0] = (proto_kv){"kp", 55.5};
    in.config[1] = (proto_kv){"decimation", 2};
    in.config[2] = (proto_kv){"added_mass_min", -1e-3};
    in.has_seed = 1;
    in.seed = UINT64_MAX;
    in.has_autoreset = 1;
    in.autoreset = ENV_AUTORESET_DISABLED;
    roundtrip(&in, &out);
    cr_assert_str_eq(out.env, "anymal_c-walk");
    cr_assert_eq(out.num_worlds, 4096);
    cr_assert_eq(out.nconfig, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(out.config[i].key, in.config[i].key);
        cr_assert_eq(out.config[i].value, in.config[i].value);
    }
    cr_assert(out.seed == UINT64_MAX && out.autoreset == ENV_AUTORESET_DISABLED);
    proto_request_clear(&out);

    int32_t ids[5] = {4, 0, 3, 1, 1000000};
    uint64_t seeds[5] = {1, 2, 3, 4, UINT64_MAX};
    proto_request_init(&in);
    in.op = PROTO_OP_RESET;
    in.id = 6;
    in.session = 77;
    in.has_session = 1;
    in.nids = 5;
    in.world_ids = ids;
    in.nseeds = 5;
    in.seeds = seeds;
    roundtrip(&in, &out);
    cr_assert_eq(out.nids, 5);
    cr_assert(!memcmp(out.world_ids, ids, sizeof ids));
    cr_assert_eq(out.nseeds, 5);
    cr_assert(!memcmp(out.seeds, seeds, sizeof seeds));
    proto_request_clear(&out);

    float act[5 * 12];
    for (int i = 0; i < 60; i++) act[i] = (float)i * 0.37f - 3.0f;
    proto_request_init(&in);
    in.op = PROTO_OP_STEP;
    in.id = 7;
    in.session = 77;
    in.has_session = 1;
    in.nids = 5;
    in.world_ids = ids;
    in.has_actions = 1;
    in.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {5, 12}, (const uint8_t *)act, sizeof act};
    in.reward_terms = 1;
    roundtrip(&in, &out);
    cr_assert(out.has_actions && out.actions.shape[0] == 5 && out.actions.shape[1] == 12 && out.reward_terms);
    proto_request_clear(&out);

    /* step without world ids: all worlds */
    in.world_ids = NULL;
    in.nids = -1;
    in.reward_terms = 0;
    roundtrip(&in, &out);
    cr_assert(out.nids == -1 && out.world_ids == NULL && !out.reward_terms);
    proto_request_clear(&out);
}

Test(roundtrip, decoder_accepts_non_minimal_and_float32_forms)
{
    /* {"v": uint64 1, "id": uint32 9, "op": str8 "make", "env": str16 "x", "num_worlds": uint16 2,
     *  "config": {"kp": float32 1.5, "decimation": int 3}} */
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 6);
    proto_w_str(&b, "v");
    proto_buf_reserve(&b, 64);
    memcpy(b.data + b.len, "\xcf\0\0\0\0\0\0\0\x01", 9), b.len += 9;
    proto_w_str(&b, "id");
    memcpy(b.data + b.len, "\xce\0\0\0\x09", 5), b.len += 5;
    proto_w_str(&b, "op");
    memcpy(b.data + b.len, "\xd9\x04make", 6), b.len += 6;
    proto_w_str(&b, "env");
    memcpy(b.data + b.len, "\xda\0\x01x", 4), b.len += 4;
    proto_w_str(&b, "num_worlds");
    memcpy(b.data + b.len, "\xcd\0\x02", 3), b.len += 3;
    proto_w_str(&b, "config");
    proto_w_map(&b, 2);
    proto_w_str(&b, "kp");
    proto_buf_reserve(&b, 16);
    memcpy(b.data + b.len, "\xca\x3f\xc0\x00\x00", 5), b.len += 5;
    proto_w_str(&b, "decimation");
    proto_w_int(&b, 3);
    proto_request r;
    proto_request_init(&r);
    proto_error e;
    cr_assert_eq(proto_decode_request(b.data, b.len, NULL, &r, &e), PROTO_OK, "%s", e.message);
    cr_assert(r.id == 9 && r.op == PROTO_OP_MAKE && r.num_worlds == 2 && !strcmp(r.env, "x"));
    cr_assert(r.config[0].value == 1.5 && r.config[1].value == 3.0);
    proto_request_clear(&r);
    proto_buf_free(&b);
}

/* ---- requests against the decoder: one table, one row per case ---- */

typedef void (*writer)(proto_buf *);

typedef struct {
    const char *key;
    writer w;
} field;

/* A request built one of four ways: `raw` bytes; a `build` function; `op` (the map starts with v = 1,
 * id, op, then `f`); or, with none of those, a map of the fields `f` alone (header cases).  Limits
 * other than the defaults where max_objects / max_worlds are set. */
typedef struct {
    const char *name;
    const char *op;
    field f[4];
    proto_code code;
    const char *needle;         /* a fragment the error message must contain (NULL: not checked) */
    writer build;
    const char *raw;
    size_t rawlen;
    size_t max_objects;
    int max_worlds;
} req_case;
#define RAW(s) .raw = (s), .rawlen = sizeof(s) - 1

/* scalar and string values */
static void w_one(proto_buf *b) { proto_w_uint(b, 1); }
static void w_two(proto_buf *b) { proto_w_uint(b, 2); }
static void w_three(proto_buf *b) { proto_w_uint(b, 3); }
static void w_four(proto_buf *b) { proto_w_uint(b, 4); }
static void w_zero(proto_buf *b) { proto_w_uint(b, 0); }
static void w_neg(proto_buf *b) { proto_w_int(b, -7); }
static void w_minus1(proto_buf *b) { proto_w_int(b, -1); }
static void w_float(proto_buf *b) { proto_w_f64(b, 1.0); }
static void w_nil(proto_buf *b) { proto_w_nil(b); }
static void w_str_1(proto_buf *b) { proto_w_str(b, "1"); }
static void w_str_7(proto_buf *b) { proto_w_str(b, "7"); }
static void w_ping(proto_buf *b) { proto_w_str(b, "ping"); }
static void w_ping_nul(proto_buf *b) { proto_w_strn(b, "ping\0x", 6); }
static void w_ping_nul_end(proto_buf *b) { proto_w_strn(b, "ping\0", 5); }
static void w_walk(proto_buf *b) { proto_w_str(b, "anymal_c-walk"); }
static void w_long_name(proto_buf *b) { proto_w_str(b, "a_very_long_environment_name_that_no_registry_would_ever_hold"); }
static void w_nul_name(proto_buf *b) { proto_w_strn(b, "anymal_c-walk\0evil", 18); }
static void w_sometimes(proto_buf *b) { proto_w_str(b, "sometimes"); }
static void w_next_step_nul(proto_buf *b) { proto_w_strn(b, "next_step\0", 10); }
/* config */
static void w_cfg_array(proto_buf *b) { proto_w_array(b, 1); proto_w_f64(b, 1); }
static void w_cfg_boolval(proto_buf *b) { proto_w_map(b, 1); proto_w_str(b, "kp"); proto_w_bool(b, 1); }
static void w_cfg_longname(proto_buf *b) { proto_w_map(b, 1); proto_w_str(b, "solver"); w_long_name(b); }
static void w_cfg_intkey(proto_buf *b) { proto_w_map(b, 1); proto_w_uint(b, 3); proto_w_f64(b, 1); }
static void w_cfg_longkey(proto_buf *b) { proto_w_map(b, 1); w_long_name(b); proto_w_f64(b, 1); }
static void w_cfg_nulkey(proto_buf *b) { proto_w_map(b, 1); proto_w_strn(b, "kp\0", 3); proto_w_f64(b, 1); }
static void w_cfg_nulname(proto_buf *b) { proto_w_map(b, 1); proto_w_str(b, "solver"); proto_w_strn(b, "admm\0", 5); }
static void w_cfg_dup(proto_buf *b) { proto_w_map(b, 2); proto_w_str(b, "kp"); proto_w_f64(b, 1); proto_w_str(b, "kp"); proto_w_f64(b, 2); }
static void w_cfg_many(proto_buf *b)
{
    proto_w_map(b, PROTO_MAX_CONFIG + 1);
    for (int i = 0; i <= PROTO_MAX_CONFIG; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        proto_w_str(b, k);
        proto_w_f64(b, i);
    }
}
/* world ids and seeds */
static void w_empty_arr(proto_buf *b) { proto_w_array(b, 0); }
static void w_ids2(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 0); proto_w_uint(b, 1); }
static void w_ids3(proto_buf *b) { proto_w_array(b, 3); proto_w_uint(b, 0); proto_w_uint(b, 1); proto_w_uint(b, 2); }
static void w_ids_neg(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 0); proto_w_int(b, -1); }
static void w_ids_float(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 0); proto_w_f64(b, 1.5); }
static void w_ids_big(proto_buf *b) { proto_w_array(b, 1); proto_w_uint(b, 1ull << 40); }
static void w_ids_2d(proto_buf *b) { uint64_t s[2] = {1, 2}; int32_t v[2] = {0, 1}; proto_w_tensor(b, PROTO_DT_INT32, 2, s, v); }
static void w_ids_many(proto_buf *b) { uint64_t s = 2000; proto_w_tensor(b, PROTO_DT_INT32, 1, &s, NULL); }
static void w_ids_5000(proto_buf *b)
{
    proto_w_array(b, 5000);
    for (int i = 0; i < 5000; i++) proto_w_uint(b, (uint64_t)i);
}
static void w_ids_short(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "int32");
    proto_w_str(b, "shape"); proto_w_array(b, 1); proto_w_uint(b, 3);
    proto_w_str(b, "data"); proto_w_bin(b, "\0\0\0\0\1\0\0\0", 8);
}
static void w_seed5(proto_buf *b) { proto_w_uint(b, 5); }
static void w_seeds2(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 5); proto_w_uint(b, 6); }
static void w_seeds_neg(proto_buf *b) { proto_w_array(b, 1); proto_w_int(b, -5); }
static void w_seeds_i64neg(proto_buf *b) { uint64_t s = 1; int64_t v = -3; proto_w_tensor(b, PROTO_DT_INT64, 1, &s, &v); }
/* tensors: well-formed ones, and maps with one part wrong */
static void w_f32_1x2(proto_buf *b) { w_f32_tensor(b, 1, 2, 0); }
static void w_f32_1x1(proto_buf *b) { w_f32_tensor(b, 1, 1, 0); }
static void w_f32_3x4(proto_buf *b) { w_f32_tensor(b, 3, 4, 1.0f); }
static void a_ok(proto_buf *b) { w_f32_tensor(b, 2, 12, 0.5f); }
static void a_list(proto_buf *b) { proto_w_array(b, 2); proto_w_f64(b, 0); proto_w_f64(b, 1); }
static void a_f64(proto_buf *b) { uint64_t s[2] = {2, 12}; proto_w_tensor(b, PROTO_DT_FLOAT64, 2, s, NULL); }
static void a_i32(proto_buf *b) { uint64_t s[2] = {2, 12}; proto_w_tensor(b, PROTO_DT_INT32, 2, s, NULL); }
static void a_1d(proto_buf *b) { uint64_t s = 24; proto_w_tensor(b, PROTO_DT_FLOAT32, 1, &s, NULL); }
static void tensor_map(proto_buf *b, const char *dtype, int dtype_int, int nshape, const uint64_t *shape, int has_data,
                       size_t nbytes, const char *extra)
{
    proto_w_map(b, (uint32_t)((dtype || dtype_int) + (nshape >= 0) + !!has_data + (extra != NULL)));
    if (dtype) { proto_w_str(b, "dtype"); proto_w_str(b, dtype); }
    else if (dtype_int) { proto_w_str(b, "dtype"); proto_w_uint(b, 5); }
    if (nshape >= 0) {
        proto_w_str(b, "shape");
        proto_w_array(b, (uint32_t)nshape);
        for (int i = 0; i < nshape; i++) proto_w_uint(b, shape[i]);
    }
    if (has_data) {
        proto_w_str(b, "data");
        char *z = calloc(nbytes + 1, 1);
        if (has_data == 2) proto_w_strn(b, z, nbytes);
        else proto_w_bin(b, z, nbytes);
        free(z);
    }
    if (extra) { proto_w_str(b, extra); proto_w_nil(b); }
}
static const uint64_t S212[2] = {2, 12};
static void a_f16(proto_buf *b) { tensor_map(b, "float16", 0, 2, S212, 1, 48, NULL); }
static void a_dtype_int(proto_buf *b) { tensor_map(b, NULL, 1, 2, S212, 1, 96, NULL); }
static void a_nodata(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 0, 0, NULL); }
static void a_noshape(proto_buf *b) { tensor_map(b, "float32", 0, -1, NULL, 1, 96, NULL); }
static void a_nodtype(proto_buf *b) { tensor_map(b, NULL, 0, 2, S212, 1, 96, NULL); }
static void a_strdata(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 2, 96, NULL); }
static void a_5d(proto_buf *b) { uint64_t s[5] = {1, 1, 1, 2, 12}; tensor_map(b, "float32", 0, 5, s, 1, 96, NULL); }
static void a_huge(proto_buf *b) { uint64_t s[2] = {1ull << 62, 1ull << 62}; tensor_map(b, "float32", 0, 2, s, 1, 16, NULL); }
static void a_big_rows(proto_buf *b) { uint64_t s[2] = {1ull << 30, 0}; tensor_map(b, "float32", 0, 2, s, 1, 0, NULL); }
static void a_short(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 1, 95, NULL); }
static void a_extra(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 1, 96, "order"); }
/* the wrong MessagePack type for a tensor's shape (BAD_FIELD), next to wrong values of the right type */
static void a_shape_int(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "float32");
    proto_w_str(b, "shape"); proto_w_uint(b, 24);
    proto_w_str(b, "data"); proto_w_bin(b, "", 0);
}
static void a_shape_float_elem(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "float32");
    proto_w_str(b, "shape"); proto_w_array(b, 2); proto_w_f64(b, 2.0); proto_w_uint(b, 12);
    proto_w_str(b, "data"); proto_w_bin(b, "", 0);
}
static void a_dtype_nul(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_strn(b, "float32\0", 8);
    proto_w_str(b, "shape"); proto_w_array(b, 2); proto_w_uint(b, 2); proto_w_uint(b, 12);
    proto_w_str(b, "data"); proto_w_bin(b, "", 0);
}
static void w_ids_dtype_int(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_uint(b, 2);
    proto_w_str(b, "shape"); proto_w_array(b, 1); proto_w_uint(b, 1);
    proto_w_str(b, "data"); proto_w_bin(b, "\0\0\0\0", 4);
}
static void a_negshape(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "float32");
    proto_w_str(b, "shape"); proto_w_array(b, 2); proto_w_int(b, -2); proto_w_uint(b, 12);
    proto_w_str(b, "data"); proto_w_bin(b, "", 0);
}
/* whole messages */
static void m_truncated_map(proto_buf *b)
{
    head(b, 3, "close", 1);
    proto_w_str(b, "session");
    proto_w_uint(b, 7);
    b->len -= 1;
}
static void m_truncated_bin(proto_buf *b)
{
    head(b, 3, "step", 2);
    proto_w_str(b, "session");
    proto_w_uint(b, 7);
    proto_w_str(b, "actions");
    w_f32_tensor(b, 4, 12, 0.f);
    b->len -= 10;
}
static void m_trailing(proto_buf *b) { head(b, 3, "ping", 0); proto_w_nil(b); }
static void m_two_messages(proto_buf *b) { head(b, 3, "ping", 0); head(b, 4, "ping", 0); }
static void m_nested(proto_buf *b)
{
    proto_buf_reserve(b, 200);
    memset(b->data, 0x91, 199);     /* [[[[...]]]] */
    b->data[199] = 0x01;
    b->len = 200;
}
static void m_int_key(proto_buf *b) { head(b, 1, "ping", 1); proto_w_uint(b, 5); proto_w_uint(b, 5); }

static const req_case cases[] = {
    /* message level */
    {.name = "empty_message", RAW(""), .code = PROTO_E_BAD_MESSAGE, .needle = "empty"},
    {.name = "not_msgpack_reserved_byte", RAW("\xc1"), .code = PROTO_E_BAD_MESSAGE, .needle = "0xc1"},
    {.name = "not_a_map_array", RAW("\x93\x01\x02\x03"), .code = PROTO_E_BAD_MESSAGE, .needle = "map"},
    {.name = "not_a_map_int", RAW("\x05"), .code = PROTO_E_BAD_MESSAGE, .needle = "map"},
    {.name = "not_a_map_string", RAW("\xa3" "abc"), .code = PROTO_E_BAD_MESSAGE, .needle = "map"},
    {.name = "json_text", RAW("{\"v\":1}"), .code = PROTO_E_BAD_MESSAGE},
    /* array 32 declaring 4 billion entries: must not allocate them */
    {.name = "huge_array_count_in_a_small_message", RAW("\xdd\xff\xff\xff\xff\x01\x02"),
     .code = PROTO_E_BAD_MESSAGE, .needle = "declares"},
    {.name = "huge_map_count", RAW("\xdf\x7f\xff\xff\xff\xa1v\x01"), .code = PROTO_E_BAD_MESSAGE, .needle = "declares"},
    {.name = "huge_str_length", RAW("\x81\xdb\xff\xff\xff\xf0" "abc"),
     .code = PROTO_E_BAD_MESSAGE, .needle = "truncated"},
    {.name = "truncated_map", .build = m_truncated_map, .code = PROTO_E_BAD_MESSAGE, .needle = "truncated"},
    {.name = "truncated_inside_bin", .build = m_truncated_bin, .code = PROTO_E_BAD_MESSAGE, .needle = "truncated"},
    {.name = "trailing_bytes", .build = m_trailing, .code = PROTO_E_BAD_MESSAGE, .needle = "trailing"},
    {.name = "two_messages_in_one_frame", .build = m_two_messages, .code = PROTO_E_BAD_MESSAGE, .needle = "trailing"},
    {.name = "nested_too_deep", .build = m_nested, .code = PROTO_E_BAD_MESSAGE, .needle = "nested"},
    {.name = "too_many_objects", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_5000}},
     .code = PROTO_E_TOO_LARGE, .needle = "objects", .max_objects = 1000},
    {.name = "non_string_key", .build = m_int_key, .code = PROTO_E_BAD_MESSAGE, .needle = "keys must be strings"},
    {.name = "duplicate_key", .op = "ping", .f = {{"id", w_four}},
     .code = PROTO_E_BAD_MESSAGE, .needle = "duplicate key 'id'"},
    /* header fields */
    {.name = "missing_id", .op = NULL, .f = {{"v", w_one}, {"op", w_ping}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'id'"},
    {.name = "id_string", .op = NULL, .f = {{"v", w_one}, {"id", w_str_1}, {"op", w_ping}},
     .code = PROTO_E_BAD_FIELD, .needle = "'id' must be an unsigned integer, got str '1'"},
    {.name = "id_negative", .op = NULL, .f = {{"v", w_one}, {"id", w_neg}, {"op", w_ping}},
     .code = PROTO_E_BAD_FIELD, .needle = "got int -7"},
    {.name = "id_float", .op = NULL, .f = {{"v", w_one}, {"id", w_float}, {"op", w_ping}},
     .code = PROTO_E_BAD_FIELD, .needle = "got float 1"},
    {.name = "id_nil", .op = NULL, .f = {{"v", w_one}, {"id", w_nil}, {"op", w_ping}},
     .code = PROTO_E_BAD_FIELD, .needle = "got nil"},
    {.name = "missing_version", .op = NULL, .f = {{"id", w_one}, {"op", w_ping}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'v'"},
    {.name = "version_2", .op = NULL, .f = {{"v", w_two}, {"id", w_one}, {"op", w_ping}},
     .code = PROTO_E_BAD_VERSION, .needle = "version 2 is not supported"},
    {.name = "version_0", .op = NULL, .f = {{"v", w_zero}, {"id", w_one}, {"op", w_ping}},
     .code = PROTO_E_BAD_VERSION, .needle = "speaks 1"},
    {.name = "version_negative", .op = NULL, .f = {{"v", w_neg}, {"id", w_one}, {"op", w_ping}},
     .code = PROTO_E_BAD_VERSION, .needle = "-7"},
    {.name = "version_string", .op = NULL, .f = {{"v", w_str_1}, {"id", w_one}, {"op", w_ping}},
     .code = PROTO_E_BAD_FIELD, .needle = "'v'"},
    {.name = "missing_op", .op = NULL, .f = {{"v", w_one}, {"id", w_one}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'op'"},
    {.name = "op_not_a_string", .op = NULL, .f = {{"v", w_one}, {"id", w_one}, {"op", w_three}},
     .code = PROTO_E_BAD_FIELD, .needle = "'op' must be a string"},
    {.name = "unknown_op", .op = "fly", .f = {{0}}, .code = PROTO_E_UNKNOWN_OP, .needle = "'fly'"},
    {.name = "op_is_case_sensitive", .op = "Step", .f = {{0}}, .code = PROTO_E_UNKNOWN_OP, .needle = "'Step'"},
    /* a str op with a NUL byte is of the right type and names no op (section 5: UNKNOWN_OP, not BAD_FIELD) */
    {.name = "op_with_nul_byte", .op = NULL, .f = {{"v", w_one}, {"id", w_one}, {"op", w_ping_nul}},
     .code = PROTO_E_UNKNOWN_OP, .needle = "\\x00"},
    {.name = "op_ending_in_nul", .op = NULL, .f = {{"v", w_one}, {"id", w_one}, {"op", w_ping_nul_end}},
     .code = PROTO_E_UNKNOWN_OP, .needle = "unknown op 'ping\\x00'"},
    {.name = "unknown_field", .op = "reset", .f = {{"session", w_one}, {"worldids", w_empty_arr}},
     .code = PROTO_E_BAD_FIELD, .needle = "unexpected field 'worldids' in a 'reset' request"},
    {.name = "field_of_another_op", .op = "reset", .f = {{"session", w_one}, {"actions", w_f32_1x1}},
     .code = PROTO_E_BAD_FIELD, .needle = "unexpected field 'actions'"},
    {.name = "ping_with_session", .op = "ping", .f = {{"session", w_one}},
     .code = PROTO_E_BAD_FIELD, .needle = "'session'"},
    /* make */
    {.name = "make_valid", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_four}},
     .code = PROTO_OK, .needle = NULL},
    {.name = "make_missing_env", .op = "make", .f = {{"num_worlds", w_four}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'env'"},
    {.name = "make_env_int", .op = "make", .f = {{"env", w_four}, {"num_worlds", w_four}},
     .code = PROTO_E_BAD_FIELD, .needle = "'env' must be a string"},
    {.name = "make_env_too_long", .op = "make", .f = {{"env", w_long_name}, {"num_worlds", w_four}},
     .code = PROTO_E_UNKNOWN_ENV, .needle = "too long"},
    /* a str with a NUL byte is of the right type: a name that exists nowhere, with the field's own code */
    {.name = "make_env_nul", .op = "make", .f = {{"env", w_nul_name}, {"num_worlds", w_four}},
     .code = PROTO_E_UNKNOWN_ENV, .needle = "NUL"},
    {.name = "make_missing_num_worlds", .op = "make", .f = {{"env", w_walk}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'num_worlds'"},
    {.name = "make_num_worlds_zero", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_zero}},
     .code = PROTO_E_BAD_FIELD, .needle = "positive integer, got int 0"},
    {.name = "make_num_worlds_negative", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_neg}},
     .code = PROTO_E_BAD_FIELD, .needle = "got int -7"},
    {.name = "make_num_worlds_float", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_float}},
     .code = PROTO_E_BAD_FIELD, .needle = "'num_worlds'"},
    {.name = "make_num_worlds_string", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_str_1}},
     .code = PROTO_E_BAD_FIELD, .needle = "'num_worlds'"},
    {.name = "make_config_not_map", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_array}},
     .code = PROTO_E_BAD_FIELD, .needle = "'config' must be a map"},
    /* a string value is a named choice (minor version 1; the env resolves it, see test_env_config.c) */
    {.name = "make_config_value_bool", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_boolval}},
     .code = PROTO_E_BAD_FIELD, .needle = "'config.kp' must be a number or a name"},
    {.name = "make_config_name_too_long", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_longname}},
     .code = PROTO_E_BAD_CONFIG, .needle = "too long"},
    {.name = "make_config_key_int", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_intkey}},
     .code = PROTO_E_BAD_FIELD, .needle = "config key"},
    {.name = "make_config_too_many", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_many}},
     .code = PROTO_E_BAD_CONFIG, .needle = "entries"},
    {.name = "make_config_key_too_long", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_longkey}},
     .code = PROTO_E_BAD_CONFIG, .needle = "too long"},
    {.name = "make_config_key_nul", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_nulkey}},
     .code = PROTO_E_BAD_CONFIG, .needle = "NUL"},
    {.name = "make_config_name_nul", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_nulname}},
     .code = PROTO_E_BAD_CONFIG, .needle = "NUL"},
    {.name = "make_config_duplicate", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_dup}},
     .code = PROTO_E_BAD_MESSAGE, .needle = "duplicate config key 'kp'"},
    {.name = "make_seed_negative", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_four}, {"seed", w_neg}},
     .code = PROTO_E_BAD_FIELD, .needle = "'seed'"},
    {.name = "make_seed_float", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_four}, {"seed", w_float}},
     .code = PROTO_E_BAD_FIELD, .needle = "'seed'"},
    {.name = "make_autoreset_unknown", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"autoreset", w_sometimes}},
     .code = PROTO_E_BAD_FIELD, .needle = "'sometimes'"},
    {.name = "make_autoreset_nul", .op = "make",
     .f = {{"env", w_walk}, {"num_worlds", w_four}, {"autoreset", w_next_step_nul}},
     .code = PROTO_E_BAD_FIELD, .needle = "'next_step\\x00'"},
    {.name = "make_autoreset_int", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_four}, {"autoreset", w_two}},
     .code = PROTO_E_BAD_FIELD, .needle = "'autoreset'"},
    /* sessions, world ids, seeds */
    {.name = "reset_missing_session", .op = "reset", .f = {{0}}, .code = PROTO_E_MISSING_FIELD, .needle = "'session'"},
    {.name = "close_session_string", .op = "close", .f = {{"session", w_str_7}},
     .code = PROTO_E_BAD_FIELD, .needle = "'session' must be an unsigned integer"},
    {.name = "stats_session_negative", .op = "stats", .f = {{"session", w_minus1}},
     .code = PROTO_E_BAD_FIELD, .needle = "'session'"},
    {.name = "world_ids_string", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_str_1}},
     .code = PROTO_E_BAD_FIELD, .needle = "'world_ids'"},
    {.name = "world_ids_empty", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_empty_arr}},
     .code = PROTO_E_BAD_WORLD_IDS, .needle = "empty"},
    {.name = "world_ids_negative", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_neg}},
     .code = PROTO_E_BAD_WORLD_IDS, .needle = "world_ids[1] = -1"},
    {.name = "world_ids_float_element", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_float}},
     .code = PROTO_E_BAD_FIELD, .needle = "world_ids[1]"},
    {.name = "world_ids_beyond_int32", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_big}},
     .code = PROTO_E_BAD_WORLD_IDS, .needle = "out of range"},
    {.name = "world_ids_float_tensor", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_f32_1x2}},
     .code = PROTO_E_BAD_DTYPE, .needle = "integer dtype"},
    {.name = "world_ids_dtype_not_string", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_dtype_int}},
     .code = PROTO_E_BAD_FIELD, .needle = "'world_ids.dtype' must be a dtype name"},
    {.name = "world_ids_2d", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_2d}},
     .code = PROTO_E_BAD_SHAPE, .needle = "1-D"},
    {.name = "world_ids_data_short", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_short}},
     .code = PROTO_E_BAD_SHAPE, .needle = "needs 12 bytes, data has 8"},
    {.name = "world_ids_over_limit", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_many}},
     .code = PROTO_E_BAD_WORLD_IDS, .needle = "2000 entries", .max_worlds = 1000},
    {.name = "seed_and_seeds", .op = "reset", .f = {{"session", w_three}, {"seed", w_seed5}, {"seeds", w_seeds2}},
     .code = PROTO_E_BAD_FIELD, .needle = "either 'seed' or 'seeds'"},
    {.name = "seeds_length_mismatch", .op = "reset",
     .f = {{"session", w_three}, {"world_ids", w_ids3}, {"seeds", w_seeds2}},
     .code = PROTO_E_BAD_SHAPE, .needle = "2 entries for 3 world ids"},
    {.name = "seeds_negative", .op = "reset", .f = {{"session", w_three}, {"seeds", w_seeds_neg}},
     .code = PROTO_E_BAD_FIELD, .needle = "seeds[0]"},
    {.name = "seeds_float_tensor", .op = "reset", .f = {{"session", w_three}, {"seeds", w_f32_1x2}},
     .code = PROTO_E_BAD_DTYPE, .needle = "'seeds'"},
    {.name = "seeds_int64_negative", .op = "reset", .f = {{"session", w_three}, {"seeds", w_seeds_i64neg}},
     .code = PROTO_E_BAD_FIELD, .needle = "negative"},
    {.name = "reset_all", .op = "reset", .f = {{"session", w_three}}, .code = PROTO_OK, .needle = NULL},
    {.name = "reset_ids", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids3}},
     .code = PROTO_OK, .needle = NULL},
    {.name = "reset_seeds", .op = "reset", .f = {{"session", w_three}, {"seeds", w_seeds2}},
     .code = PROTO_OK, .needle = NULL}, /* length vs session: later */
    {.name = "reset_seed", .op = "reset", .f = {{"session", w_three}, {"seed", w_seed5}},
     .code = PROTO_OK, .needle = NULL},
    /* step / actions */
    {.name = "step_all", .op = "step", .f = {{"session", w_three}, {"actions", a_ok}},
     .code = PROTO_OK, .needle = NULL},
    {.name = "step_ids", .op = "step", .f = {{"session", w_three}, {"world_ids", w_ids2}, {"actions", a_ok}},
     .code = PROTO_OK, .needle = NULL},
    {.name = "step_missing_actions", .op = "step", .f = {{"session", w_three}},
     .code = PROTO_E_MISSING_FIELD, .needle = "'actions'"},
    {.name = "actions_elementwise_array", .op = "step", .f = {{"session", w_three}, {"actions", a_list}},
     .code = PROTO_E_BAD_FIELD, .needle = "tensor map"},
    {.name = "actions_float64", .op = "step", .f = {{"session", w_three}, {"actions", a_f64}},
     .code = PROTO_E_BAD_DTYPE, .needle = "float32, got float64"},
    {.name = "actions_int32", .op = "step", .f = {{"session", w_three}, {"actions", a_i32}},
     .code = PROTO_E_BAD_DTYPE, .needle = "int32"},
    {.name = "actions_unknown_dtype", .op = "step", .f = {{"session", w_three}, {"actions", a_f16}},
     .code = PROTO_E_BAD_DTYPE, .needle = "'float16' is not one of"},
    /* section 5: the wrong MessagePack type is BAD_FIELD, also inside a tensor; a wrong value BAD_DTYPE / BAD_SHAPE */
    {.name = "actions_dtype_not_string", .op = "step", .f = {{"session", w_three}, {"actions", a_dtype_int}},
     .code = PROTO_E_BAD_FIELD, .needle = "'actions.dtype' must be a dtype name (a string), got int 5"},
    {.name = "actions_dtype_nul", .op = "step", .f = {{"session", w_three}, {"actions", a_dtype_nul}},
     .code = PROTO_E_BAD_DTYPE, .needle = "'float32\\x00' is not one of"},
    {.name = "actions_shape_not_array", .op = "step", .f = {{"session", w_three}, {"actions", a_shape_int}},
     .code = PROTO_E_BAD_FIELD, .needle = "'actions.shape' must be an array of sizes, got int 24"},
    {.name = "actions_shape_float_element", .op = "step", .f = {{"session", w_three}, {"actions", a_shape_float_elem}},
     .code = PROTO_E_BAD_FIELD, .needle = "'actions.shape[0]' must be a non-negative integer, got float 2"},
    {.name = "actions_missing_data", .op = "step", .f = {{"session", w_three}, {"actions", a_nodata}},
     .code = PROTO_E_MISSING_FIELD, .needle = "lacks 'data'"},
    {.name = "actions_missing_shape", .op = "step", .f = {{"session", w_three}, {"actions", a_noshape}},
     .code = PROTO_E_MISSING_FIELD, .needle = "lacks 'shape'"},
    {.name = "actions_missing_dtype", .op = "step", .f = {{"session", w_three}, {"actions", a_nodtype}},
     .code = PROTO_E_MISSING_FIELD, .needle = "lacks 'dtype'"},
    {.name = "actions_data_as_str", .op = "step", .f = {{"session", w_three}, {"actions", a_strdata}},
     .code = PROTO_E_BAD_FIELD, .needle = "actions.data' must be bin"},
    {.name = "actions_1d", .op = "step", .f = {{"session", w_three}, {"actions", a_1d}},
     .code = PROTO_E_BAD_SHAPE, .needle = "2-D"},
    {.name = "actions_5d", .op = "step", .f = {{"session", w_three}, {"actions", a_5d}},
     .code = PROTO_E_BAD_SHAPE, .needle = "dimensions"},
    {.name = "actions_negative_shape", .op = "step", .f = {{"session", w_three}, {"actions", a_negshape}},
     .code = PROTO_E_BAD_SHAPE, .needle = "'actions.shape[0]' must be a non-negative integer, got int -2"},
    {.name = "actions_shape_overflow", .op = "step", .f = {{"session", w_three}, {"actions", a_huge}},
     .code = PROTO_E_BAD_SHAPE, .needle = "too large"},
    {.name = "actions_too_many_rows", .op = "step", .f = {{"session", w_three}, {"actions", a_big_rows}},
     .code = PROTO_E_BAD_SHAPE, .needle = "rows"},
    {.name = "actions_data_short", .op = "step", .f = {{"session", w_three}, {"actions", a_short}},
     .code = PROTO_E_BAD_SHAPE, .needle = "needs 96 bytes, data has 95"},
    {.name = "actions_rows_vs_world_ids", .op = "step",
     .f = {{"session", w_three}, {"world_ids", w_ids3}, {"actions", a_ok}},
     .code = PROTO_E_BAD_SHAPE, .needle = "2 rows for 3 world ids"},
    {.name = "actions_extra_key", .op = "step", .f = {{"session", w_three}, {"actions", a_extra}},
     .code = PROTO_E_BAD_FIELD, .needle = "unexpected key 'order'"},
    {.name = "reward_terms_int", .op = "step", .f = {{"session", w_three}, {"actions", a_ok}, {"reward_terms", w_two}},
     .code = PROTO_E_BAD_FIELD, .needle = "'reward_terms' must be a bool"},
};

/* Writes the request of case c into b (empty). */
static void build_case(const req_case *c, proto_buf *b)
{
    if (c->raw) {
        proto_buf_reserve(b, c->rawlen + 1);
        memcpy(b->data, c->raw, c->rawlen);
        b->len = c->rawlen;
        return;
    }
    if (c->build) {
        c->build(b);
        return;
    }
    uint32_t n = 0;
    while (n < sizeof c->f / sizeof c->f[0] && c->f[n].key) n++;
    if (c->op) head(b, 9, c->op, n);
    else proto_w_map(b, n);
    for (uint32_t i = 0; i < n; i++) {
        proto_w_str(b, c->f[i].key);
        c->f[i].w(b);
    }
}

Test(requests, every_case_of_the_table)
{
    int failing = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const req_case *c = &cases[i];
        proto_buf b;
        proto_buf_init(&b);
        build_case(c, &b);
        proto_limits lim;
        proto_limits_default(&lim);
        if (c->max_objects) lim.max_objects = c->max_objects;
        if (c->max_worlds) lim.max_worlds = c->max_worlds;
        proto_request r;
        proto_request_init(&r);
        proto_error e = {0};
        int rc = proto_decode_request(b.data, b.len, &lim, &r, &e);
        int bad = rc != (int)c->code;
        if (!bad && rc != PROTO_OK) bad = e.code != c->code || (c->needle && !strstr(e.message, c->needle));
        if (bad) {
            failing++;
            cr_log_error("%s: expected %s '%s', got %s '%s'", c->name, proto_code_name(c->code),
                         c->needle ? c->needle : "", proto_code_name(rc), rc ? e.message : "");
        }
        proto_request_clear(&r);
        proto_buf_free(&b);
    }
    cr_assert_eq(failing, 0, "%d of %zu cases failed (see above)", failing, sizeof cases / sizeof cases[0]);
}

Test(requests, oversized_message_keeps_its_id)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 4242, "step", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 7);
    proto_w_str(&b, "actions");
    w_f32_tensor(&b, 1000, 12, 0.f);
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_message_bytes = 4096;
    proto_request r;
    proto_request_init(&r);
    proto_error e;
    cr_assert_eq(proto_decode_request(b.data, b.len, &lim, &r, &e), PROTO_E_TOO_LARGE);
    cr_assert(strstr(e.message, "4096"));
    cr_assert(r.has_id && r.id == 4242, "the error reply can echo the id");
    proto_request_clear(&r);
    proto_buf_free(&b);
}

/* ---- checks against a session ---- */

Test(checks, world_ids)
{
    uint8_t scratch[16] = {0}, zero[16] = {0};
    proto_error e;
    int32_t ok[4] = {3, 0, 99, 7};
    cr_assert_eq(proto_check_world_ids(ok, 4, 100, scratch, &e), PROTO_OK);
    cr_assert(!memcmp(scratch, zero, sizeof zero), "scratch zeroed again");
    int32_t oor[3] = {1, 100, 2};
    cr_assert_eq(proto_check_world_ids(oor, 3, 100, scratch, &e), PROTO_E_BAD_WORLD_IDS);
    cr_assert(strstr(e.message, "world_ids[1] = 100 is out of range"), "%s", e.message);
    cr_assert(!memcmp(scratch, zero, sizeof zero));
    int32_t dup[4] = {5, 6, 7, 6};
    cr_assert_eq(proto_check_world_ids(dup, 4, 100, scratch, &e), PROTO_E_BAD_WORLD_IDS);
    cr_assert(strstr(e.message, "world_ids[3] = 6 repeats world_ids[1]"), "%s", e.message);
    cr_assert(!memcmp(scratch, zero, sizeof zero));
    cr_assert_eq(proto_check_world_ids(dup, 0, 100, scratch, &e), PROTO_E_BAD_WORLD_IDS);
}

Test(checks, actions)
{
    float a[3 * 4];
    for (int i = 0; i < 12; i++) a[i] = (float)i;
    proto_tensor t = {PROTO_DT_FLOAT32, 2, {3, 4}, (const uint8_t *)a, sizeof a};
    proto_error e;
    cr_assert_eq(proto_check_actions(&t, 3, 4, NULL, &e), PROTO_OK);
    cr_assert_eq(proto_check_actions(&t, 3, 12, NULL, &e), PROTO_E_BAD_SHAPE);
    cr_assert(strstr(e.message, "expected [3, 12]"), "%s", e.message);
    cr_assert_eq(proto_check_actions(&t, 4, 4, NULL, &e), PROTO_E_BAD_SHAPE);
    a[6] = NAN;
    int32_t ids[3] = {10, 20, 30};
    cr_assert_eq(proto_check_actions(&t, 3, 4, ids, &e), PROTO_E_NON_FINITE);
    cr_assert(strstr(e.message, "actions[1][2]") && strstr(e.message, "world 20"), "%s", e.message);
    a[6] = 0;
    a[11] = -INFINITY;
    cr_assert_eq(proto_check_actions(&t, 3, 4, NULL, &e), PROTO_E_NON_FINITE);
    cr_assert(strstr(e.message, "actions[2][3] = -inf"), "%s", e.message);
    a[11] = INFINITY;
    cr_assert_eq(proto_check_actions(&t, 3, 4, NULL, &e), PROTO_E_NON_FINITE);
    a[11] = 3.4e38f;   /* large but finite */
    cr_assert_eq(proto_check_actions(&t, 3, 4, NULL, &e), PROTO_OK);
    t.dtype = PROTO_DT_FLOAT64;
    cr_assert_eq(proto_check_actions(&t, 3, 4, NULL, &e), PROTO_E_BAD_DTYPE);
}

Test(checks, actions_unaligned_and_long)
{
    int n = 1000, ad = 12;
    uint8_t *buf = malloc((size_t)n * ad * 4 + 1);
    float v = 0.25f;
    for (int i = 0; i < n * ad; i++) memcpy(buf + 1 + 4 * i, &v, 4);
    proto_tensor t = {PROTO_DT_FLOAT32, 2, {(uint64_t)n, (uint64_t)ad}, buf + 1, (size_t)n * ad * 4};
    proto_error e;
    cr_assert_eq(proto_check_actions(&t, n, ad, NULL, &e), PROTO_OK);
    float nan = NAN;
    memcpy(buf + 1 + 4 * (777 * 12 + 5), &nan, 4);
    cr_assert_eq(proto_check_actions(&t, n, ad, NULL, &e), PROTO_E_NON_FINITE);
    cr_assert(strstr(e.message, "actions[777][5]"), "%s", e.message);
    free(buf);
}

/* ---- replies (client side) ---- */

Test(reply, decode_errors)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_reply r;
    proto_error e;
    proto_encode_error(&b, 77, PROTO_E_NON_FINITE, "actions[0][1] = nan (world 0) is not finite");
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_OK);
    cr_assert(!r.ok && r.id == 77 && r.error.code == PROTO_E_NON_FINITE);
    proto_reply_clear(&r);
    /* an error code this client does not know */
    proto_buf_reset(&b);
    proto_w_map(&b, 4);
    proto_w_str(&b, "v"); proto_w_uint(&b, 1);
    proto_w_str(&b, "id"); proto_w_uint(&b, 5);
    proto_w_str(&b, "ok"); proto_w_bool(&b, 0);
    proto_w_str(&b, "error"); proto_w_map(&b, 2);
    proto_w_str(&b, "code"); proto_w_str(&b, "NEW_CODE");
    proto_w_str(&b, "message"); proto_w_str(&b, "from the future");
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_OK);
    cr_assert(r.error.code == PROTO_E_INTERNAL && strstr(r.error.message, "NEW_CODE: from the future"));
    proto_reply_clear(&r);
    /* not a reply */
    proto_buf_reset(&b);
    head(&b, 1, "ping", 0);
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_E_BAD_REPLY);
    proto_reply_clear(&r);
    proto_buf_free(&b);
}

Test(reply, key_paths_reach_nested_and_dotted_keys)
{
    /* {v, id, ok, "a": {"c": 5, "d": [7, "x"]}, "a.b": 9} */
    proto_buf b;
    proto_buf_init(&b);
    proto_w_reply_head(&b, 3, 2);
    proto_w_str(&b, "a");
    proto_w_map(&b, 2);
    proto_w_str(&b, "c"); proto_w_uint(&b, 5);
    proto_w_str(&b, "d"); proto_w_array(&b, 2); proto_w_uint(&b, 7); proto_w_str(&b, "x");
    proto_w_str(&b, "a.b"); proto_w_uint(&b, 9);
    proto_reply r;
    proto_error e;
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_OK, "%s", e.message);
    uint64_t u = 0;
    cr_assert_eq(proto_get_uint(r.root, "a.c", &u, &e), PROTO_OK, "%s", e.message);
    cr_assert_eq(u, 5);
    cr_assert_eq(proto_get_uint(r.root, "a.b", &u, &e), PROTO_OK, "a key with a dot: %s", e.message);
    cr_assert_eq(u, 9);
    cr_assert_eq(proto_get_uint(r.root, "a.e", &u, &e), PROTO_E_BAD_REPLY);
    cr_assert(strstr(e.message, "lacks 'a.e'"), "%s", e.message);
    const proto_value *d = proto_value_get(r.root, "a.d");
    cr_assert_eq(proto_value_len(d), 2);
    cr_assert_null(proto_value_at(d, 2));
    cr_assert_null(proto_value_at(d, -1));
    char s[8];
    cr_assert_eq(proto_get_str(r.root, "a.c", s, sizeof s, &e), PROTO_E_BAD_REPLY);
    cr_assert(strstr(e.message, "'a.c' must be a string, got int 5"), "%s", e.message);
    cr_assert_null(proto_value_get(NULL, "a"));
    proto_reply_clear(&r);
    proto_buf_free(&b);
}

Test(reply, step_layout_regions_are_disjoint_and_ordered)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_step_layout lay;
    int n = 4096, od = 48, nt = 10;
    cr_assert_eq(proto_encode_step_reply(&b, 1, n, od, nt, 0, PROTO_STEP_FINAL_OBS | PROTO_STEP_REWARD_TERMS, &lay), 0);
    cr_assert(lay.obs < lay.reward && lay.reward < lay.terminated && lay.terminated < lay.truncated);
    cr_assert(lay.reward >= lay.obs + (size_t)n * od * 4);
    cr_assert(lay.final_obs && lay.final_mask && lay.reward_terms && !lay.autoreset);
    cr_assert_eq(b.len, lay.reward_terms + (size_t)n * nt * 4);
    /* fill and decode */
    memset(b.data + lay.obs, 0, (size_t)n * od * 4);
    proto_reply r;
    proto_error e;
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r, &e), PROTO_OK, "%s", e.message);
    proto_tensor t;
    int64_t shp[2] = {n, nt};
    cr_assert_eq(proto_get_tensor(r.root, "info.reward_terms", PROTO_DT_FLOAT32, 2, shp, &t, &e), PROTO_OK, "%s",
                 e.message);
    cr_assert_eq(t.data, b.data + lay.reward_terms);
    proto_reply_clear(&r);
    proto_buf_free(&b);
}

/* ---- fuzz: mutations of valid requests never crash and always give a known code ---- */

Test(fuzz, mutated_requests, .timeout = 60)
{
    static const req_case seed_cases[4] = {
        {.name = "step", .op = "step", .f = {{"session", w_three}, {"world_ids", w_ids3}, {"actions", w_f32_3x4}}},
        {.name = "make", .op = "make", .f = {{"env", w_walk}, {"num_worlds", w_four}, {"config", w_cfg_dup}}},
        {.name = "reset", .op = "reset", .f = {{"session", w_three}, {"world_ids", w_ids_2d}, {"seeds", w_seeds2}}},
        {.name = "stats", .op = "stats", .f = {{"session", w_three}}},
    };
    proto_buf seeds[4];
    for (int i = 0; i < 4; i++) {
        proto_buf_init(&seeds[i]);
        build_case(&seed_cases[i], &seeds[i]);
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    uint8_t *buf = malloc(4096);
    proto_request r;
    proto_request_init(&r);
    int codes[PROTO_E_COUNT] = {0};
    for (int it = 0; it < 200000; it++) {
        proto_buf *s = &seeds[it % 4];
        size_t n = s->len;
        memcpy(buf, s->data, n);
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int muts = 1 + (int)(x % 4);
        for (int m = 0; m < muts; m++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t pos = (size_t)(x >> 16) % n;
            switch (x % 5) {
            case 0: buf[pos] ^= (uint8_t)(1u << (x >> 40 & 7)); break;
            case 1: buf[pos] = (uint8_t)(x >> 24); break;
            case 2: n = pos; break;                                   /* truncate */
            case 3: if (n < 4000) buf[n++] = (uint8_t)(x >> 32); break;   /* append */
            default: buf[pos] = (uint8_t[]){0xdd, 0xdf, 0xc6, 0xdb, 0xcf, 0xc1, 0x00, 0xff}[x >> 50 & 7]; break;
            }
            if (n == 0) break;
        }
        proto_error e;
        int rc = proto_decode_request(buf, n, NULL, &r, &e);
        cr_assert(rc >= 0 && rc < PROTO_E_TIMEOUT, "code %d", rc);
        if (rc) cr_assert((int)e.code == rc && e.message[0]);
        codes[rc]++;
        proto_request_clear(&r);
    }
    cr_assert_gt(codes[PROTO_E_BAD_MESSAGE], 1000);
    free(buf);
    for (int i = 0; i < 4; i++) proto_buf_free(&seeds[i]);
}

Test(reply, step_reply_buffer_is_allocated_once)
{
    /* the encoder reserves an upper bound first: had the buffer regrown (doubling), its capacity would be
     * about twice the length */
    unsigned all = PROTO_STEP_FINAL_OBS | PROTO_STEP_REWARD_TERMS | PROTO_STEP_AUTORESET;
    for (unsigned flags = 0; flags <= all; flags++) {
        for (int n = 1; n < 20000; n = n * 3 + 1) {
            proto_buf b;
            proto_buf_init(&b);
            proto_step_layout lay;
            cr_assert_eq(proto_encode_step_reply(&b, UINT64_MAX, n, 48, 10, 0, flags, &lay), 0);
            cr_assert_leq(b.cap, b.len + 1024, "n %d flags %u: cap %zu for %zu bytes", n, flags, b.cap, b.len);
            proto_buf_reset(&b);
            cr_assert_eq(proto_encode_reset_reply(&b, UINT64_MAX, n, 48, 0, 0, &lay), 0);
            proto_buf_free(&b);
        }
    }
}

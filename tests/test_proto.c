/* test_proto.c — the protocol codec on its own: writer forms against msgpack-c's packer, tensor
 * alignment, request round trips, malformed requests (each answered with the right code and a
 * message naming the field), session checks, reply decoding, and a mutation fuzz loop. */
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

/* Decodes b and checks the code and that the message contains `needle` (may be NULL). */
static void expect_at(proto_buf *b, const proto_limits *lim, proto_code code, const char *needle, const char *file,
                      int line)
{
    proto_request r;
    proto_request_init(&r);
    proto_error e = {0};
    int rc = proto_decode_request(b->data, b->len, lim, &r, &e);
    cr_assert_eq(rc, (int)code, "%s:%d: expected %s, got %s (%s)", file, line, proto_code_name(code),
                 proto_code_name(rc), e.message);
    if (code != PROTO_OK) {
        cr_assert_eq(e.code, code);
        if (needle) cr_assert(strstr(e.message, needle), "%s:%d: message '%s' lacks '%s'", file, line, e.message, needle);
    }
    proto_request_clear(&r);
    proto_buf_free(b);
}
#define EXPECT(b, code, needle) expect_at(b, NULL, code, needle, __FILE__, __LINE__)
#define EXPECT_LIM(b, lim, code, needle) expect_at(b, lim, code, needle, __FILE__, __LINE__)

static void expect_raw(const void *p, size_t n, proto_code code, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_buf_reserve(&b, n + 1);
    memcpy(b.data, p, n);
    b.len = n;
    EXPECT(&b, code, needle);
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

/* ---- malformed requests: message level ---- */

Test(malformed, empty_message) { expect_raw("", 0, PROTO_E_BAD_MESSAGE, "empty"); }
Test(malformed, not_msgpack_reserved_byte) { expect_raw("\xc1", 1, PROTO_E_BAD_MESSAGE, "0xc1"); }
Test(malformed, not_a_map_array) { expect_raw("\x93\x01\x02\x03", 4, PROTO_E_BAD_MESSAGE, "map"); }
Test(malformed, not_a_map_int) { expect_raw("\x05", 1, PROTO_E_BAD_MESSAGE, "map"); }
Test(malformed, not_a_map_string) { expect_raw("\xa3" "abc", 4, PROTO_E_BAD_MESSAGE, "map"); }
Test(malformed, json_text) { expect_raw("{\"v\":1}", 7, PROTO_E_BAD_MESSAGE, NULL); }

Test(malformed, truncated_map)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "close", 1);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 7);
    b.len -= 1;
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "truncated");
}

Test(malformed, truncated_inside_bin)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "step", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 7);
    proto_w_str(&b, "actions");
    w_f32_tensor(&b, 4, 12, 0.f);
    b.len -= 10;
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "truncated");
}

Test(malformed, trailing_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "ping", 0);
    proto_w_nil(&b);
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "trailing");
}

Test(malformed, two_messages_in_one_frame)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "ping", 0);
    head(&b, 4, "ping", 0);
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "trailing");
}

Test(malformed, huge_array_count_in_a_small_message)
{
    /* array 32 declaring 4 billion entries: must not allocate them */
    expect_raw("\xdd\xff\xff\xff\xff\x01\x02", 7, PROTO_E_BAD_MESSAGE, "declares");
}

Test(malformed, huge_map_count)
{
    expect_raw("\xdf\x7f\xff\xff\xff\xa1v\x01", 8, PROTO_E_BAD_MESSAGE, "declares");
}

Test(malformed, huge_str_length)
{
    expect_raw("\x81\xdb\xff\xff\xff\xf0" "abc", 9, PROTO_E_BAD_MESSAGE, "truncated");
}

Test(malformed, nested_too_deep)
{
    uint8_t deep[200];
    memset(deep, 0x91, sizeof deep);   /* [[[[...]]]] */
    deep[199] = 0x01;
    expect_raw(deep, sizeof deep, PROTO_E_BAD_MESSAGE, "nested");
}

Test(malformed, too_many_objects)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "reset", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 7);
    proto_w_str(&b, "world_ids");
    proto_w_array(&b, 5000);
    for (int i = 0; i < 5000; i++) proto_w_uint(&b, (uint64_t)i);
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_objects = 1000;
    EXPECT_LIM(&b, &lim, PROTO_E_TOO_LARGE, "objects");
}

Test(malformed, oversized_message_keeps_its_id)
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

Test(malformed, non_string_key)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 4);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_str(&b, "ping");
    proto_w_uint(&b, 5);
    proto_w_uint(&b, 5);
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "keys must be strings");
}

Test(malformed, duplicate_key)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 3, "ping", 1);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 4);
    EXPECT(&b, PROTO_E_BAD_MESSAGE, "duplicate key 'id'");
}

/* ---- header fields ---- */

Test(malformed, missing_id)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 2);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_str(&b, "ping");
    EXPECT(&b, PROTO_E_MISSING_FIELD, "'id'");
}

static void bad_id(void (*w)(proto_buf *), const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 3);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "id");
    w(&b);
    proto_w_str(&b, "op");
    proto_w_str(&b, "ping");
    EXPECT(&b, PROTO_E_BAD_FIELD, needle);
}
static void w_str_1(proto_buf *b) { proto_w_str(b, "1"); }
static void w_neg(proto_buf *b) { proto_w_int(b, -7); }
static void w_float(proto_buf *b) { proto_w_f64(b, 1.0); }
static void w_nil(proto_buf *b) { proto_w_nil(b); }
Test(malformed, id_string) { bad_id(w_str_1, "'id' must be an unsigned integer, got str '1'"); }
Test(malformed, id_negative) { bad_id(w_neg, "got int -7"); }
Test(malformed, id_float) { bad_id(w_float, "got float 1"); }
Test(malformed, id_nil) { bad_id(w_nil, "got nil"); }

Test(malformed, missing_version)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 2);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_str(&b, "ping");
    EXPECT(&b, PROTO_E_MISSING_FIELD, "'v'");
}

static void with_version(void (*w)(proto_buf *), proto_code code, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 3);
    proto_w_str(&b, "v");
    w(&b);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_str(&b, "ping");
    EXPECT(&b, code, needle);
}
static void w_two(proto_buf *b) { proto_w_uint(b, 2); }
static void w_zero(proto_buf *b) { proto_w_uint(b, 0); }
Test(malformed, version_2) { with_version(w_two, PROTO_E_BAD_VERSION, "version 2 is not supported"); }
Test(malformed, version_0) { with_version(w_zero, PROTO_E_BAD_VERSION, "speaks 1"); }
Test(malformed, version_negative) { with_version(w_neg, PROTO_E_BAD_VERSION, "-7"); }
Test(malformed, version_string) { with_version(w_str_1, PROTO_E_BAD_FIELD, "'v'"); }

Test(malformed, missing_op)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 2);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    EXPECT(&b, PROTO_E_MISSING_FIELD, "'op'");
}

Test(malformed, op_not_a_string)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 3);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_uint(&b, 3);
    EXPECT(&b, PROTO_E_BAD_FIELD, "'op' must be a string");
}

Test(malformed, unknown_op)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "fly", 0);
    EXPECT(&b, PROTO_E_UNKNOWN_OP, "'fly'");
}

Test(malformed, op_is_case_sensitive)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "Step", 0);
    EXPECT(&b, PROTO_E_UNKNOWN_OP, "'Step'");
}

Test(malformed, op_with_nul_byte)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_w_map(&b, 3);
    proto_w_str(&b, "v");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "id");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "op");
    proto_w_strn(&b, "ping\0x", 6);
    EXPECT(&b, PROTO_E_UNKNOWN_OP, "\\x00");
}

Test(malformed, unknown_field)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "reset", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "worldids");
    proto_w_array(&b, 0);
    EXPECT(&b, PROTO_E_BAD_FIELD, "unexpected field 'worldids' in a 'reset' request");
}

Test(malformed, field_of_another_op)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "reset", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 1);
    proto_w_str(&b, "actions");
    w_f32_tensor(&b, 1, 1, 0);
    EXPECT(&b, PROTO_E_BAD_FIELD, "unexpected field 'actions'");
}

Test(malformed, ping_with_session)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "ping", 1);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 1);
    EXPECT(&b, PROTO_E_BAD_FIELD, "'session'");
}

/* ---- make ---- */

typedef struct {
    int has_env, has_nw;
    void (*env)(proto_buf *);
    void (*nw)(proto_buf *);
    const char *extra_key;
    void (*extra)(proto_buf *);
} make_args;

static void w_walk(proto_buf *b) { proto_w_str(b, "anymal_c-walk"); }
static void w_four(proto_buf *b) { proto_w_uint(b, 4); }

static void make_req(proto_buf *b, make_args a)
{
    void (*env)(proto_buf *) = a.env ? a.env : w_walk;
    void (*nw)(proto_buf *) = a.nw ? a.nw : w_four;
    head(b, 9, "make", (uint32_t)(!a.has_env + !a.has_nw + (a.extra_key != NULL)));
    if (!a.has_env) { proto_w_str(b, "env"); env(b); }
    if (!a.has_nw) { proto_w_str(b, "num_worlds"); nw(b); }
    if (a.extra_key) { proto_w_str(b, a.extra_key); a.extra(b); }
}
/* has_env / has_nw = 1 means "omit it" (zero-initialized args give a complete request) */

static void make_expect(make_args a, proto_code code, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    make_req(&b, a);
    EXPECT(&b, code, needle);
}

Test(make, valid) { make_expect((make_args){0}, PROTO_OK, NULL); }
Test(malformed, make_missing_env) { make_expect((make_args){.has_env = 1}, PROTO_E_MISSING_FIELD, "'env'"); }
Test(malformed, make_env_int) { make_expect((make_args){.env = w_four}, PROTO_E_BAD_FIELD, "'env' must be a string"); }
static void w_long_name(proto_buf *b) { proto_w_str(b, "a_very_long_environment_name_that_no_registry_would_ever_hold"); }
Test(malformed, make_env_too_long) { make_expect((make_args){.env = w_long_name}, PROTO_E_UNKNOWN_ENV, "too long"); }
static void w_nul_name(proto_buf *b) { proto_w_strn(b, "anymal_c-walk\0evil", 18); }
Test(malformed, make_env_nul) { make_expect((make_args){.env = w_nul_name}, PROTO_E_BAD_FIELD, "NUL"); }
Test(malformed, make_missing_num_worlds) { make_expect((make_args){.has_nw = 1}, PROTO_E_MISSING_FIELD, "'num_worlds'"); }
Test(malformed, make_num_worlds_zero) { make_expect((make_args){.nw = w_zero}, PROTO_E_BAD_FIELD, "positive integer, got int 0"); }
Test(malformed, make_num_worlds_negative) { make_expect((make_args){.nw = w_neg}, PROTO_E_BAD_FIELD, "got int -7"); }
Test(malformed, make_num_worlds_float) { make_expect((make_args){.nw = w_float}, PROTO_E_BAD_FIELD, "'num_worlds'"); }
Test(malformed, make_num_worlds_string) { make_expect((make_args){.nw = w_str_1}, PROTO_E_BAD_FIELD, "'num_worlds'"); }
static void w_cfg_array(proto_buf *b) { proto_w_array(b, 1); proto_w_f64(b, 1); }
Test(malformed, make_config_not_map) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_array}, PROTO_E_BAD_FIELD, "'config' must be a map"); }
static void w_cfg_strval(proto_buf *b) { proto_w_map(b, 1); proto_w_str(b, "kp"); proto_w_str(b, "80"); }
Test(malformed, make_config_value_string) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_strval}, PROTO_E_BAD_FIELD, "'config.kp' must be a number"); }
static void w_cfg_intkey(proto_buf *b) { proto_w_map(b, 1); proto_w_uint(b, 3); proto_w_f64(b, 1); }
Test(malformed, make_config_key_int) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_intkey}, PROTO_E_BAD_FIELD, "config key"); }
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
Test(malformed, make_config_too_many) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_many}, PROTO_E_BAD_CONFIG, "entries"); }
static void w_cfg_longkey(proto_buf *b) { proto_w_map(b, 1); w_long_name(b); proto_w_f64(b, 1); }
Test(malformed, make_config_key_too_long) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_longkey}, PROTO_E_BAD_CONFIG, "too long"); }
static void w_cfg_dup(proto_buf *b) { proto_w_map(b, 2); proto_w_str(b, "kp"); proto_w_f64(b, 1); proto_w_str(b, "kp"); proto_w_f64(b, 2); }
Test(malformed, make_config_duplicate) { make_expect((make_args){.extra_key = "config", .extra = w_cfg_dup}, PROTO_E_BAD_MESSAGE, "duplicate config key 'kp'"); }
Test(malformed, make_seed_negative) { make_expect((make_args){.extra_key = "seed", .extra = w_neg}, PROTO_E_BAD_FIELD, "'seed'"); }
Test(malformed, make_seed_float) { make_expect((make_args){.extra_key = "seed", .extra = w_float}, PROTO_E_BAD_FIELD, "'seed'"); }
static void w_fly(proto_buf *b) { proto_w_str(b, "sometimes"); }
Test(malformed, make_autoreset_unknown) { make_expect((make_args){.extra_key = "autoreset", .extra = w_fly}, PROTO_E_BAD_FIELD, "'sometimes'"); }
Test(malformed, make_autoreset_int) { make_expect((make_args){.extra_key = "autoreset", .extra = w_two}, PROTO_E_BAD_FIELD, "'autoreset'"); }

/* ---- sessions, world ids, seeds ---- */

static void reset_with(const char *key, void (*w)(proto_buf *), const char *key2, void (*w2)(proto_buf *),
                       proto_code code, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 11, "reset", 1 + (key != NULL) + (key2 != NULL));
    proto_w_str(&b, "session");
    proto_w_uint(&b, 3);
    if (key) { proto_w_str(&b, key); w(&b); }
    if (key2) { proto_w_str(&b, key2); w2(&b); }
    EXPECT(&b, code, needle);
}

Test(malformed, reset_missing_session)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "reset", 0);
    EXPECT(&b, PROTO_E_MISSING_FIELD, "'session'");
}

Test(malformed, close_session_string)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "close", 1);
    proto_w_str(&b, "session");
    proto_w_str(&b, "7");
    EXPECT(&b, PROTO_E_BAD_FIELD, "'session' must be an unsigned integer");
}

Test(malformed, stats_session_negative)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 1, "stats", 1);
    proto_w_str(&b, "session");
    proto_w_int(&b, -1);
    EXPECT(&b, PROTO_E_BAD_FIELD, "'session'");
}

Test(malformed, world_ids_string) { reset_with("world_ids", w_str_1, NULL, NULL, PROTO_E_BAD_FIELD, "'world_ids'"); }
static void w_empty_arr(proto_buf *b) { proto_w_array(b, 0); }
Test(malformed, world_ids_empty) { reset_with("world_ids", w_empty_arr, NULL, NULL, PROTO_E_BAD_WORLD_IDS, "empty"); }
static void w_ids_neg(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 0); proto_w_int(b, -1); }
Test(malformed, world_ids_negative) { reset_with("world_ids", w_ids_neg, NULL, NULL, PROTO_E_BAD_WORLD_IDS, "world_ids[1] = -1"); }
static void w_ids_float(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 0); proto_w_f64(b, 1.5); }
Test(malformed, world_ids_float_element) { reset_with("world_ids", w_ids_float, NULL, NULL, PROTO_E_BAD_FIELD, "world_ids[1]"); }
static void w_ids_big(proto_buf *b) { proto_w_array(b, 1); proto_w_uint(b, 1ull << 40); }
Test(malformed, world_ids_beyond_int32) { reset_with("world_ids", w_ids_big, NULL, NULL, PROTO_E_BAD_WORLD_IDS, "out of range"); }
static void w_ids_f32t(proto_buf *b) { w_f32_tensor(b, 1, 2, 0); }
Test(malformed, world_ids_float_tensor) { reset_with("world_ids", w_ids_f32t, NULL, NULL, PROTO_E_BAD_DTYPE, "integer dtype"); }
static void w_ids_2d(proto_buf *b) { uint64_t s[2] = {1, 2}; int32_t v[2] = {0, 1}; proto_w_tensor(b, PROTO_DT_INT32, 2, s, v); }
Test(malformed, world_ids_2d) { reset_with("world_ids", w_ids_2d, NULL, NULL, PROTO_E_BAD_SHAPE, "1-D"); }
static void w_ids_short(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "int32");
    proto_w_str(b, "shape"); proto_w_array(b, 1); proto_w_uint(b, 3);
    proto_w_str(b, "data"); proto_w_bin(b, "\0\0\0\0\1\0\0\0", 8);
}
Test(malformed, world_ids_data_short) { reset_with("world_ids", w_ids_short, NULL, NULL, PROTO_E_BAD_SHAPE, "needs 12 bytes, data has 8"); }
static void w_ids_many(proto_buf *b) { uint64_t s = 2000; proto_w_tensor(b, PROTO_DT_INT32, 1, &s, NULL); }
Test(malformed, world_ids_over_limit)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 11, "reset", 2);
    proto_w_str(&b, "session");
    proto_w_uint(&b, 3);
    proto_w_str(&b, "world_ids");
    w_ids_many(&b);
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_worlds = 1000;
    EXPECT_LIM(&b, &lim, PROTO_E_BAD_WORLD_IDS, "2000 entries");
}
static void w_seed5(proto_buf *b) { proto_w_uint(b, 5); }
static void w_seeds2(proto_buf *b) { proto_w_array(b, 2); proto_w_uint(b, 5); proto_w_uint(b, 6); }
Test(malformed, seed_and_seeds) { reset_with("seed", w_seed5, "seeds", w_seeds2, PROTO_E_BAD_FIELD, "either 'seed' or 'seeds'"); }
static void w_ids3(proto_buf *b) { proto_w_array(b, 3); proto_w_uint(b, 0); proto_w_uint(b, 1); proto_w_uint(b, 2); }
Test(malformed, seeds_length_mismatch) { reset_with("world_ids", w_ids3, "seeds", w_seeds2, PROTO_E_BAD_SHAPE, "2 entries for 3 world ids"); }
static void w_seeds_neg(proto_buf *b) { proto_w_array(b, 1); proto_w_int(b, -5); }
Test(malformed, seeds_negative) { reset_with("seeds", w_seeds_neg, NULL, NULL, PROTO_E_BAD_FIELD, "seeds[0]"); }
static void w_seeds_f32(proto_buf *b) { w_f32_tensor(b, 1, 2, 0); }
Test(malformed, seeds_float_tensor) { reset_with("seeds", w_seeds_f32, NULL, NULL, PROTO_E_BAD_DTYPE, "'seeds'"); }
static void w_seeds_i64neg(proto_buf *b) { uint64_t s = 1; int64_t v = -3; proto_w_tensor(b, PROTO_DT_INT64, 1, &s, &v); }
Test(malformed, seeds_int64_negative) { reset_with("seeds", w_seeds_i64neg, NULL, NULL, PROTO_E_BAD_FIELD, "negative"); }

Test(reset, valid_forms)
{
    reset_with(NULL, NULL, NULL, NULL, PROTO_OK, NULL);
    reset_with("world_ids", w_ids3, NULL, NULL, PROTO_OK, NULL);
    reset_with("seeds", w_seeds2, NULL, NULL, PROTO_OK, NULL);   /* length checked against the session later */
    reset_with("seed", w_seed5, NULL, NULL, PROTO_OK, NULL);
}

/* ---- step / actions ---- */

static void step_with(void (*actions)(proto_buf *), int nids, const char *extra_key, void (*extra)(proto_buf *),
                      proto_code code, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    head(&b, 12, "step", 1 + (actions != NULL) + (nids > 0) + (extra_key != NULL));
    proto_w_str(&b, "session");
    proto_w_uint(&b, 3);
    if (nids > 0) {
        proto_w_str(&b, "world_ids");
        proto_w_array(&b, (uint32_t)nids);
        for (int i = 0; i < nids; i++) proto_w_uint(&b, (uint64_t)i);
    }
    if (actions) { proto_w_str(&b, "actions"); actions(&b); }
    if (extra_key) { proto_w_str(&b, extra_key); extra(&b); }
    EXPECT(&b, code, needle);
}

static void a_ok(proto_buf *b) { w_f32_tensor(b, 2, 12, 0.5f); }
Test(step, valid) { step_with(a_ok, 0, NULL, NULL, PROTO_OK, NULL); step_with(a_ok, 2, NULL, NULL, PROTO_OK, NULL); }
Test(malformed, step_missing_actions) { step_with(NULL, 0, NULL, NULL, PROTO_E_MISSING_FIELD, "'actions'"); }
static void a_list(proto_buf *b) { proto_w_array(b, 2); proto_w_f64(b, 0); proto_w_f64(b, 1); }
Test(malformed, actions_elementwise_array) { step_with(a_list, 0, NULL, NULL, PROTO_E_BAD_FIELD, "tensor map"); }
static void a_f64(proto_buf *b) { uint64_t s[2] = {2, 12}; proto_w_tensor(b, PROTO_DT_FLOAT64, 2, s, NULL); }
Test(malformed, actions_float64) { step_with(a_f64, 0, NULL, NULL, PROTO_E_BAD_DTYPE, "float32, got float64"); }
static void a_i32(proto_buf *b) { uint64_t s[2] = {2, 12}; proto_w_tensor(b, PROTO_DT_INT32, 2, s, NULL); }
Test(malformed, actions_int32) { step_with(a_i32, 0, NULL, NULL, PROTO_E_BAD_DTYPE, "int32"); }
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
Test(malformed, actions_unknown_dtype) { step_with(a_f16, 0, NULL, NULL, PROTO_E_BAD_DTYPE, "'float16' is not one of"); }
static void a_dtype_int(proto_buf *b) { tensor_map(b, NULL, 1, 2, S212, 1, 96, NULL); }
Test(malformed, actions_dtype_not_string) { step_with(a_dtype_int, 0, NULL, NULL, PROTO_E_BAD_DTYPE, "actions.dtype"); }
static void a_nodata(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 0, 0, NULL); }
Test(malformed, actions_missing_data) { step_with(a_nodata, 0, NULL, NULL, PROTO_E_MISSING_FIELD, "lacks 'data'"); }
static void a_noshape(proto_buf *b) { tensor_map(b, "float32", 0, -1, NULL, 1, 96, NULL); }
Test(malformed, actions_missing_shape) { step_with(a_noshape, 0, NULL, NULL, PROTO_E_MISSING_FIELD, "lacks 'shape'"); }
static void a_nodtype(proto_buf *b) { tensor_map(b, NULL, 0, 2, S212, 1, 96, NULL); }
Test(malformed, actions_missing_dtype) { step_with(a_nodtype, 0, NULL, NULL, PROTO_E_MISSING_FIELD, "lacks 'dtype'"); }
static void a_strdata(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 2, 96, NULL); }
Test(malformed, actions_data_as_str) { step_with(a_strdata, 0, NULL, NULL, PROTO_E_BAD_FIELD, "actions.data' must be bin"); }
static void a_1d(proto_buf *b) { uint64_t s = 24; proto_w_tensor(b, PROTO_DT_FLOAT32, 1, &s, NULL); }
Test(malformed, actions_1d) { step_with(a_1d, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "2-D"); }
static void a_5d(proto_buf *b) { uint64_t s[5] = {1, 1, 1, 2, 12}; tensor_map(b, "float32", 0, 5, s, 1, 96, NULL); }
Test(malformed, actions_5d) { step_with(a_5d, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "dimensions"); }
static void a_negshape(proto_buf *b)
{
    proto_w_map(b, 3);
    proto_w_str(b, "dtype"); proto_w_str(b, "float32");
    proto_w_str(b, "shape"); proto_w_array(b, 2); proto_w_int(b, -2); proto_w_uint(b, 12);
    proto_w_str(b, "data"); proto_w_bin(b, "", 0);
}
Test(malformed, actions_negative_shape) { step_with(a_negshape, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "actions.shape[0]"); }
static void a_huge(proto_buf *b) { uint64_t s[2] = {1ull << 62, 1ull << 62}; tensor_map(b, "float32", 0, 2, s, 1, 16, NULL); }
Test(malformed, actions_shape_overflow) { step_with(a_huge, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "too large"); }
static void a_big_rows(proto_buf *b) { uint64_t s[2] = {1ull << 30, 0}; tensor_map(b, "float32", 0, 2, s, 1, 0, NULL); }
Test(malformed, actions_too_many_rows) { step_with(a_big_rows, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "rows"); }
static void a_short(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 1, 95, NULL); }
Test(malformed, actions_data_short) { step_with(a_short, 0, NULL, NULL, PROTO_E_BAD_SHAPE, "needs 96 bytes, data has 95"); }
Test(malformed, actions_rows_vs_world_ids) { step_with(a_ok, 3, NULL, NULL, PROTO_E_BAD_SHAPE, "2 rows for 3 world ids"); }
static void a_extra(proto_buf *b) { tensor_map(b, "float32", 0, 2, S212, 1, 96, "order"); }
Test(malformed, actions_extra_key) { step_with(a_extra, 0, NULL, NULL, PROTO_E_BAD_FIELD, "unexpected key 'order'"); }
Test(malformed, reward_terms_int) { step_with(a_ok, 0, "reward_terms", w_two, PROTO_E_BAD_FIELD, "'reward_terms' must be a bool"); }

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

Test(reply, step_layout_regions_are_disjoint_and_ordered)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_step_layout lay;
    int n = 4096, od = 48, nt = 10;
    cr_assert_eq(proto_encode_step_reply(&b, 1, n, od, nt, PROTO_STEP_FINAL_OBS | PROTO_STEP_REWARD_TERMS, &lay), 0);
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
    cr_assert_eq(proto_get_tensor(r.root, "info.reward_terms", PROTO_DT_FLOAT32, 2, shp, &t, &e), PROTO_OK, "%s", e.message);
    cr_assert_eq(t.data, b.data + lay.reward_terms);
    proto_reply_clear(&r);
    proto_buf_free(&b);
}

/* ---- fuzz: mutations of valid requests never crash and always give a known code ---- */

Test(fuzz, mutated_requests, .timeout = 60)
{
    proto_buf seeds[4];
    for (int i = 0; i < 4; i++) proto_buf_init(&seeds[i]);
    head(&seeds[0], 1, "step", 3);
    proto_w_str(&seeds[0], "session"); proto_w_uint(&seeds[0], 3);
    proto_w_str(&seeds[0], "world_ids"); w_ids3(&seeds[0]);
    proto_w_str(&seeds[0], "actions"); w_f32_tensor(&seeds[0], 3, 4, 1.0f);
    make_req(&seeds[1], (make_args){.extra_key = "config", .extra = w_cfg_dup});
    head(&seeds[2], 1, "reset", 3);
    proto_w_str(&seeds[2], "session"); proto_w_uint(&seeds[2], 3);
    proto_w_str(&seeds[2], "world_ids"); w_ids_2d(&seeds[2]);
    proto_w_str(&seeds[2], "seeds"); w_seeds2(&seeds[2]);
    head(&seeds[3], 1, "stats", 1);
    proto_w_str(&seeds[3], "session"); proto_w_uint(&seeds[3], 3);
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
            cr_assert_eq(proto_encode_step_reply(&b, UINT64_MAX, n, 48, 10, flags, &lay), 0);
            cr_assert_leq(b.cap, b.len + 1024, "n %d flags %u: cap %zu for %zu bytes", n, flags, b.cap, b.len);
            proto_buf_reset(&b);
            cr_assert_eq(proto_encode_reset_reply(&b, UINT64_MAX, n, 48, &lay), 0);
            proto_buf_free(&b);
        }
    }
}

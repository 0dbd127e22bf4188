/* test_fuzz.c — replays the fuzz targets (fuzz/fuzz_*.c, built without libFuzzer) on their regression
 * cases (fuzz/regressions/<target>/: every crash the fuzzers found) and on the seeds the corpus builder
 * starts from (the golden vectors, the shipped URDF), so `make test` and the sanitizer build re-check
 * them without clang.  A target aborts on a broken property, which Criterion reports as a crash.
 * Also the behaviour behind each reply-side fix, through the public API.  Runs from the repository root.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz/fuzz_targets.h"
#include "env.h"
#include "herd_client.h"
#include "herd_client_internal.h"   /* white-box: the client's table of session tokens */
#include "proto.h"
#include "sim_urdf.h"

typedef int (*target_fn)(const uint8_t *, size_t);

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n, "cannot read %s", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Runs fn on every file of dir whose name starts with prefix (NULL: all) and ends with suffix (NULL:
 * any), each with the byte `lead` in front when lead >= 0.  Returns the number of files (0 when dir is
 * missing). */
static int replay_dir(target_fn fn, const char *dir, const char *prefix, const char *suffix, int lead)
{
    DIR *d = opendir(dir);
    if (!d) return 0;           /* a target without regression cases (git keeps no empty directory) */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        size_t nl = strlen(name);
        if (name[0] == '.' || !strcmp(name, "README.md")) continue;
        if (prefix && strncmp(name, prefix, strlen(prefix))) continue;
        if (suffix && (nl < strlen(suffix) || strcmp(name + nl - strlen(suffix), suffix))) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len;
        uint8_t *b = slurp(path, &len);
        if (lead >= 0) {
            uint8_t *c = malloc(len + 1);
            cr_assert_not_null(c);
            c[0] = (uint8_t)lead;
            memcpy(c + 1, b, len);
            free(b);
            b = c;
            len++;
        }
        fn(b, len);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

/* ---- the regression cases: one directory per target ---- */

Test(regressions, request) { cr_assert_geq(replay_dir(herd_fuzz_request, "fuzz/regressions/request", NULL, NULL, -1), 1); }
Test(regressions, reply) { cr_assert_geq(replay_dir(herd_fuzz_reply, "fuzz/regressions/reply", NULL, NULL, -1), 2); }
Test(regressions, urdf) { replay_dir(herd_fuzz_urdf, "fuzz/regressions/urdf", NULL, NULL, -1); }
Test(regressions, config) { replay_dir(herd_fuzz_config, "fuzz/regressions/config", NULL, NULL, -1); }

/* ---- the seeds ---- */

Test(seeds, request_golden_vectors)
{
    cr_assert_geq(replay_dir(herd_fuzz_request, "protocol/testdata", NULL, ".msgpack", -1), 30);
}

Test(seeds, reply_golden_vectors)
{
    cr_assert_geq(replay_dir(herd_fuzz_reply, "protocol/testdata", "rep_", ".msgpack", 0), 10);
    /* mode 1: the golden make reply, then each golden rows reply */
    size_t lm;
    uint8_t *mk = slurp("protocol/testdata/rep_make.msgpack", &lm);
    const char *rows[] = {"rep_reset", "rep_step", "rep_step_same", "rep_error"};
    for (int i = 0; i < 4; i++) {
        char path[128];
        snprintf(path, sizeof path, "protocol/testdata/%s.msgpack", rows[i]);
        size_t lr;
        uint8_t *r = slurp(path, &lr);
        uint8_t *in = malloc(5 + lm + lr);
        in[0] = 1;
        for (int k = 0; k < 4; k++) in[1 + k] = (uint8_t)(lm >> (8 * k));
        memcpy(in + 5, mk, lm);
        memcpy(in + 5 + lm, r, lr);
        herd_fuzz_reply(in, 5 + lm + lr);
        free(in);
        free(r);
    }
    free(mk);
}

Test(seeds, urdf_models)
{
    for (int opt = 0; opt < 8; opt++) {
        replay_dir(herd_fuzz_urdf, "envs/models", NULL, ".urdf", opt);
        cr_assert_geq(replay_dir(herd_fuzz_urdf, "fuzz/seeds/urdf", NULL, ".urdf", opt), 2);
    }
}

Test(seeds, config_every_task_and_key)
{
    /* every task: defaults, then every key at each value mode, stepped once */
    for (int t = 0; t < 8; t++)
        for (int mode = 0; mode < 9; mode++) {
            uint8_t in[3 + 48 * 10];
            in[0] = (uint8_t)t;
            in[1] = 8;
            in[2] = (uint8_t)mode;
            for (int k = 0; k < 48; k++) {
                uint8_t *r = in + 3 + 10 * k;
                r[0] = (uint8_t)k;
                r[1] = (uint8_t)mode;
                double v = 0.25 * k;
                memcpy(r + 2, &v, 8);
            }
            herd_fuzz_config(in, mode ? sizeof in : 3);
        }
}

/* ---- the fixes, through the public API ---- */

/* A step reply of a task without reward terms carries episode_terms of shape [n, 0] (PROTOCOL.md): the
 * C client read it as 1-D and refused it (and a hostile [n] tensor overflowed a 0-sized buffer). */
Test(fixes, step_reply_of_a_task_without_reward_terms)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_step_layout lay;
    const int n = 3, od = 5;
    cr_assert_eq(proto_encode_step_reply(&b, 7, n, od, 0, 0, PROTO_STEP_AUTORESET, &lay), 0);
    herd_reply r = {0};
    cr_assert_eq(proto_decode_reply(b.data, b.len, &r.msg, NULL), PROTO_OK);
    r.ok = r.msg.ok;
    herd_session s = {.num_worlds = n, .obs_dim = od, .act_dim = 2, .nterms = 0, .autoreset = ENV_AUTORESET_NEXT_STEP};
    float obs[15], rew[3], ret[3], terms[1];
    uint8_t term[3], trunc[3], pr[3], done[3], ar[3];
    int32_t len[3];
    herd_step_out o = {.obs = obs, .reward = rew, .terminated = term, .truncated = trunc, .physics_reset = pr,
                       .episode_done = done, .episode_return = ret, .episode_length = len, .episode_terms = terms,
                       .autoreset = ar};
    herd_error err;
    cr_assert_eq(herd_reply_step(&r, &s, n, &o, &err), 0, "%s", err.message);
    proto_reply_clear(&r.msg);
    proto_buf_free(&b);
}

/* A make reply must not give the client sizes it would allocate from wrongly: num_worlds < 1 (a case the
 * reply fuzzer finds), an obs_dim that is negative or does not fit an int, a field
 * outside the observation. */
static int parse_make(int64_t num_worlds, const env_spec *spec, herd_error *err)
{
    double cfg[ENV_MAX_CONFIG];
    for (int i = 0; i < spec->nconfig; i++) cfg[i] = spec->config[i].def;
    proto_buf b;
    proto_buf_init(&b);
    const uint8_t token[PROTO_TOKEN_BYTES] = {1, 2, 3};
    const uint8_t view_token[PROTO_TOKEN_BYTES] = {4, 5, 6};
    cr_assert_eq(proto_encode_make_reply(&b, 3, 77, token, view_token, num_worlds, ENV_AUTORESET_NEXT_STEP, 5, spec, cfg, 0), 0);
    herd_reply *r = herd_reply_decode(b.data, b.len, err);
    cr_assert_not_null(r, "%s", err->message);
    herd_session s;
    int rc = herd_reply_make(r, 0, &s, err);
    if (!rc) cr_assert(s.num_worlds == num_worlds && s.has_token && s.token[2] == 3);
    herd_reply_destroy(&r);
    proto_buf_free(&b);
    return rc;
}

/* The reply fuzzer's case make-bad-view-token-keeps-no-token, through the client's own make path (hc_make_parse): a
 * make reply refused for its malformed view token leaves no token in the client's table (one was kept, once). */
Test(fixes, refused_make_reply_keeps_no_token)
{
    size_t len;
    uint8_t *b = slurp("fuzz/regressions/reply/make-bad-view-token-keeps-no-token", &len);
    cr_assert(len > 5 && (b[0] & 1), "the case is a make reply and a second reply (odd mode)");
    size_t la = (size_t)b[1] | (size_t)b[2] << 8 | (size_t)b[3] << 16 | (size_t)b[4] << 24;
    cr_assert_leq(la, len - 5);
    herd_error err;
    herd_reply *r = herd_reply_decode(b + 5, la, &err);
    cr_assert_not_null(r, "%s", err.message);
    cr_assert(r->ok && proto_value_get(r->msg.root, "token") && proto_value_get(r->msg.root, "view_token"));
    herd_client tokens = {0};
    herd_session s;
    cr_assert_eq(hc_make_parse(&tokens, r, 0, &s, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "view_token"), "%s", err.message);
    cr_assert_eq(tokens.ntokens, 0, "a refused make reply left %d tokens", tokens.ntokens);
    free(tokens.tokens);
    herd_reply_destroy(&r);
    free(b);
}

/* herd_reply_decode reads bytes as the client reads a received message: at any alignment, a reply's id, ok and
 * error; anything else (a request, a truncated reply, no bytes) is BAD_REPLY, never a crash. */
Test(client, reply_from_bytes)
{
    proto_buf b;
    proto_buf_init(&b);
    cr_assert_eq(proto_encode_error(&b, 41, PROTO_E_UNKNOWN_SESSION, "no session 9"), 0);
    unsigned char *odd = malloc(b.len + 1);
    cr_assert_not_null(odd);
    memcpy(odd + 1, b.data, b.len);     /* misaligned on purpose */
    herd_error err;
    herd_reply *r = herd_reply_decode(odd + 1, b.len, &err);
    cr_assert_not_null(r, "%s", err.message);
    cr_assert(r->id == 41 && !r->ok && r->error.code == PROTO_E_UNKNOWN_SESSION);
    cr_assert_str_eq(r->error.message, "no session 9");
    herd_reply_destroy(&r);
    cr_assert_null(r);
    r = herd_reply_decode(b.data, b.len - 1, &err);
    cr_assert_null(r);
    cr_assert_eq(err.code, PROTO_E_BAD_REPLY, "%s", err.message);
    cr_assert_null(herd_reply_decode(b.data, 0, &err));
    cr_assert_eq(err.code, PROTO_E_BAD_REPLY);
    free(odd);
    proto_buf_free(&b);
}

Test(fixes, make_reply_sizes_are_checked)
{
    herd_error err;
    const env_spec *good = env_registry_spec(0);
    cr_assert_eq(parse_make(4, good, &err), 0, "%s", err.message);
    cr_assert_eq(parse_make(-5, good, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "num_worlds"), "%s", err.message);
    cr_assert_eq(parse_make((int64_t)1 << 32, good, &err), PROTO_E_BAD_REPLY);
    env_spec bad = *good;
    bad.obs_dim = -1;
    cr_assert_eq(parse_make(4, &bad, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "obs_dim"), "%s", err.message);
    bad = *good;
    bad.act_dim = 0;
    cr_assert_eq(parse_make(4, &bad, &err), PROTO_E_BAD_REPLY);
    bad = *good;
    bad.obs[bad.nobs - 1].size += 1;    /* one element past the end of the observation */
    cr_assert_eq(parse_make(4, &bad, &err), PROTO_E_BAD_REPLY);
    cr_assert(strstr(err.message, "size"), "%s", err.message);
    bad = *good;
    bad.decimation = 0;
    cr_assert_eq(parse_make(4, &bad, &err), PROTO_E_BAD_REPLY);
}

/* The URDF loader resolves names in better than quadratic time: a 1 MB document of 20,000 links in a chain
 * loads within the test's time bound.  Also checks that duplicate names are reported at the first duplicate in
 * document order. */
static char *chain_doc(int n, const char *joint_type, int dup_at)
{
    size_t cap = (size_t)n * 160 + 64, len = 0;
    char *d = malloc(cap);
    cr_assert_not_null(d);
    len += (size_t)snprintf(d + len, cap - len, "<robot name=\"r\">\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(d + len, cap - len, "<link name=\"l%d\"/>\n", i == dup_at ? 7 : i);
    for (int i = 1; i < n; i++)
        len += (size_t)snprintf(d + len, cap - len,
                                "<joint name=\"j%d\" type=\"%s\"><parent link=\"l%d\"/><child link=\"l%d\"/></joint>\n", i,
                                joint_type, i - 1, i);
    snprintf(d + len, cap - len, "</robot>\n");
    return d;
}

/* This thread's CPU time: what loading costs, whatever else the machine runs meanwhile. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The least CPU time of three loads of a chain of n fixed links (welded into one body). */
static double chain_load_s(int n)
{
    char err[256];
    char *doc = chain_doc(n, "fixed", -1);
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = cpu_s();
        sim_model *m = sim_urdf_load_string(doc, strlen(doc), "chain.urdf", NULL, err, sizeof err);
        double dt = cpu_s() - t0;
        cr_assert_not_null(m, "%s", err);
        cr_assert_eq(m->nbody, 1, "%d links welded into one body", n);
        sim_model_destroy(&m);
        if (dt < best) best = dt;
    }
    free(doc);
    return best;
}

Test(fixes, urdf_many_links_load_in_linear_time, .timeout = 600)
{
    char err[256];
    /* the growth, not a speed: 16x the links costs about 16x the CPU time when loading is linear (n log n: 21x),
     * 256x when it is quadratic (a scan of every name per link).  The bound sits 4x from each: the larger document
     * outgrows the caches, and on a busy machine other processes share them, so the linear ratio reads above 16x */
    double small = chain_load_s(2000), big = chain_load_s(32000);
    cr_log_info("URDF chain: 2,000 links %.3f s, 32,000 links %.3f s of CPU time (ratio %.1f)", small, big, big / small);
    cr_assert_lt(big, 64.0 * small, "16x the links took %.1fx the CPU time (%.3f s vs %.3f s)", big / small, big, small);

    char *doc = chain_doc(3000, "fixed", 2500);   /* link 2500 is named l7 again */
    sim_model *m = sim_urdf_load_string(doc, strlen(doc), "chain.urdf", NULL, err, sizeof err);
    cr_assert_null(m);
    cr_assert(strstr(err, "chain.urdf:2502:") && strstr(err, "duplicate link name (first defined on line 9)"), "%s", err);
    free(doc);
}

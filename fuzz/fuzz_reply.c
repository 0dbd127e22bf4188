/* fuzz_reply.c — the reply decoder the C client uses (proto_decode_reply, the typed getters, the spec
 * decoder and the client's reply readers herd_reply_decode / herd_reply_make / herd_reply_reset /
 * herd_reply_step, herd_client.h) on arbitrary bytes: what a hostile or broken server could send.
 *
 * Input: the first byte selects the mode.
 *   even: the rest is one reply, read like the client reads hello, stats and make replies (every
 *         getter on every path the client uses, every spec it carries).
 *   odd:  the rest is [u32 little-endian length L][L bytes: a make reply][a reset or step reply]: the
 *         client's session comes from the make reply (herd_reply_make), and the second reply is copied
 *         into caller buffers of exactly the sizes herd_client.h documents for that session.
 * Properties: a session the client accepts has the sizes its buffers are computed from in range
 * (num_worlds, obs_dim, act_dim >= 1, 0 <= nterms <= ENV_MAX_TERMS); error messages are terminated.
 */
#include "fuzz_targets.h"

#include <string.h>

#include "herd_client.h"
#include "proto.h"

/* Every path the client reads (hello, make, stats, reset, step replies). */
static const char *const PATHS[] = {
    "v", "id", "ok", "error", "error.code", "error.message", "protocol", "server", "threads", "limits",
    "limits.max_message_bytes", "limits.max_worlds_per_session", "limits.max_worlds", "envs", "session", "num_worlds",
    "seed", "autoreset", "spec", "config", "uptime_s", "sessions", "worlds", "steps", "steps_per_s", "requests",
    "errors", "session.session", "session.env", "session.num_worlds", "session.steps", "session.steps_per_s",
    "session.age_s", "session.idle_s", "session.requests", "session.errors", "unix_time", "obs", "reward",
    "terminated", "truncated", "info", "info.physics_reset", "info.episode_done", "info.episode_return",
    "info.episode_length", "info.episode_terms", "info.autoreset", "info.final_obs", "info._final_obs",
    "info.reward_terms", "protocol_minor", "auth", "token", "view_token", "a.b.c.d.e.f",
};

static void check_err(const proto_error *e)
{
    fuzz_check(memchr(e->message, 0, sizeof e->message) != NULL, "error message not terminated");
}

static void check_herr(const herd_error *e)
{
    fuzz_check(memchr(e->message, 0, sizeof e->message) != NULL, "client error message not terminated");
}

/* Every getter on every path, and the spec decoder on every spec found. */
static void read_everything(const proto_value *root)
{
    proto_error e;
    char s[64];
    for (size_t i = 0; i < sizeof PATHS / sizeof *PATHS; i++) {
        const char *p = PATHS[i];
        uint64_t u;
        int64_t k;
        double d;
        int b;
        proto_tensor t;
        if (proto_get_uint(root, p, &u, &e)) check_err(&e);
        if (proto_get_int(root, p, &k, &e)) check_err(&e);
        if (proto_get_f64(root, p, &d, &e)) check_err(&e);
        if (proto_get_bool(root, p, &b, &e)) check_err(&e);
        if (proto_get_str(root, p, s, sizeof s, &e)) check_err(&e);
        if (proto_get_str(root, p, s, 1, &e)) check_err(&e);
        if (proto_value_tensor(proto_value_get(root, p), p, &t, &e) == PROTO_OK) {
            size_t n = proto_dtype_size(t.dtype);
            for (int j = 0; j < t.ndim; j++) n *= t.shape[j];
            fuzz_check(n == t.nbytes, "tensor '%s': %zu bytes for its shape, nbytes %zu", p, n, t.nbytes);
            volatile uint8_t sink = 0;
            for (size_t j = 0; j < t.nbytes; j++) sink ^= t.data[j];   /* every byte readable */
            (void)sink;
        } else {
            check_err(&e);
        }
        int64_t shp[2] = {-1, 3};
        if (proto_get_tensor(root, p, PROTO_DT_FLOAT32, 2, shp, &t, &e)) check_err(&e);
        uint8_t tok[PROTO_TOKEN_BYTES];
        if (proto_get_bin(root, p, tok, sizeof tok, &e)) check_err(&e);
    }
    env_spec spec;
    if (proto_decode_spec(proto_value_get(root, "spec"), &spec, &e)) check_err(&e);
    const proto_value *envs = proto_value_get(root, "envs");
    int n = proto_value_len(envs);
    for (int i = -1; i <= n; i++)
        if (proto_decode_spec(proto_value_at(envs, i), &spec, &e)) check_err(&e);
    fuzz_check(proto_value_at(envs, n) == NULL && proto_value_at(envs, -1) == NULL, "proto_value_at out of range");
}

/* The client's reply of len bytes (herd_reply_decode), or NULL if not decodable. */
static herd_reply *reply_new(const uint8_t *data, size_t len)
{
    herd_error he;
    herd_reply *r = herd_reply_decode(data, len, &he);
    if (!r) {
        check_herr(&he);
        fuzz_check(he.code == PROTO_E_BAD_REPLY || he.code == PROTO_E_INTERNAL, "decode error code %d", (int)he.code);
        return NULL;
    }
    fuzz_check(r->msg.root != NULL, "a decoded reply without a root");
    fuzz_check(r->id == r->msg.id && r->ok == r->msg.ok, "the reply's id and ok differ from its message's");
    if (!r->ok) {
        check_err(&r->msg.error);
        check_herr(&r->error);
        fuzz_check(r->msg.error.code > PROTO_OK && r->msg.error.code < PROTO_E_COUNT, "error code %d",
                   (int)r->msg.error.code);
        fuzz_check(r->error.code == r->msg.error.code, "error code %d, message's %d", (int)r->error.code,
                   (int)r->msg.error.code);
    }
    return r;
}

/* Reads a reset and a step reply for session s into buffers of the documented sizes (n rows). */
static void read_rows(const herd_reply *r, const herd_session *s, int n)
{
    size_t od = (size_t)s->obs_dim, nt = (size_t)s->nterms, rows = (size_t)n;
    herd_error he;
    float *obs = malloc(rows * od * sizeof(float));
    if (!obs) return;
    if (herd_reply_reset(r, s, n, obs, &he)) check_herr(&he);
    herd_step_out o = {
        .obs = obs,
        .reward = malloc(rows * sizeof(float)),
        .terminated = malloc(rows),
        .truncated = malloc(rows),
        .physics_reset = malloc(rows),
        .episode_done = malloc(rows),
        .episode_return = malloc(rows * sizeof(float)),
        .episode_length = malloc(rows * sizeof(int32_t)),
        .episode_terms = malloc(rows * nt * sizeof(float) + !nt),   /* malloc(0) may be NULL: not wanted */
        .autoreset = malloc(rows),
        .final_obs = malloc(rows * od * sizeof(float)),
        .final_mask = malloc(rows),
        .reward_terms = malloc(rows * nt * sizeof(float) + !nt),
    };
    if (o.reward && o.terminated && o.truncated && o.physics_reset && o.episode_done && o.episode_return &&
        o.episode_length && o.episode_terms && o.autoreset && o.final_obs && o.final_mask && o.reward_terms)
        if (herd_reply_step(r, s, n, &o, &he)) check_herr(&he);
    proto_tensor t;
    if (herd_reply_tensor(r, "info.final_obs", &t, &he)) check_herr(&he);
    free(obs);
    free(o.reward);
    free(o.terminated);
    free(o.truncated);
    free(o.physics_reset);
    free(o.episode_done);
    free(o.episode_return);
    free(o.episode_length);
    free(o.episode_terms);
    free(o.autoreset);
    free(o.final_obs);
    free(o.final_mask);
    free(o.reward_terms);
}

int herd_fuzz_reply(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    if (!(mode & 1)) {
        herd_reply *r = reply_new(data, size);
        if (r) read_everything(r->msg.root);
        herd_reply_destroy(&r);
        return 0;
    }
    if (size < 4) return 0;
    size_t la = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    data += 4;
    size -= 4;
    if (la > size) return 0;
    herd_reply *mk = reply_new(data, la);
    if (!mk) return 0;
    herd_session s;
    herd_error he;
    int rc = mk->ok ? herd_reply_make(mk, 0, &s, &he) : -1;
    herd_reply_destroy(&mk);
    if (rc) {
        if (rc > 0) check_herr(&he);
        return 0;
    }
    /* what the caller sizes its buffers from */
    fuzz_check(s.num_worlds >= 1, "accepted a session of %d worlds", s.num_worlds);
    fuzz_check(s.obs_dim >= 1 && s.act_dim >= 1, "accepted obs_dim %d, act_dim %d", s.obs_dim, s.act_dim);
    fuzz_check(s.nterms >= 0 && s.nterms <= ENV_MAX_TERMS, "accepted %d reward terms", s.nterms);
    fuzz_check(s.spec.nconfig >= 0 && s.spec.nconfig <= ENV_MAX_CONFIG, "accepted %d config keys", s.spec.nconfig);
    herd_reply *rows = reply_new(data + la, size - la);
    if (!rows) return 0;
    /* the whole session, one world, and as many worlds as the reply has rows (a subset); buffers beyond
     * 64 MiB are not worth the fuzzer's time */
    proto_tensor t;
    proto_error e;
    int sub = 0;
    if (proto_value_tensor(proto_value_get(rows->msg.root, "obs"), "obs", &t, &e) == PROTO_OK && t.ndim >= 1 &&
        t.shape[0] >= 1 && t.shape[0] <= (uint64_t)s.num_worlds)
        sub = (int)t.shape[0];
    const int ns[3] = {s.num_worlds, 1, sub};
    for (int k = 0; k < 3; k++)
        if (ns[k] >= 1 && (uint64_t)ns[k] * (uint64_t)(s.obs_dim + s.nterms + 8) <= (16u << 20)) read_rows(rows, &s, ns[k]);
    herd_reply_destroy(&rows);
    return 0;
}

#ifndef HERD_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return herd_fuzz_reply(data, size); }
#endif

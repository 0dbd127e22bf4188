/* test_server.c — herd-server through the C client: make/reset/step/close, subsets, the three autoreset
 * modes, results bit-for-bit equal to in-process env_step, several clients at once, error replies
 * (the server keeps serving), session expiry, SIGTERM drain, limits, fairness, memory over
 * make/close cycles.  Each test starts its own server on a thread (tcp://127.0.0.1:*), except the
 * SIGTERM test, which runs the herd-server binary. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "env.h"
#include "herd_client.h"
#include "proto.h"
#include "srv_thread.h"
#include "helpers/server_start.h"

/* ---- fixtures ---- */

static srv_thread *start_with(srv_config *c)
{
    char err[256];
    srv_thread *t = srv_thread_start(c, err, sizeof err);
    cr_assert(t, "server: %s", err);
    return t;
}

static void test_config(srv_config *c)
{
    srv_config_defaults(c);
    snprintf(c->bind, sizeof c->bind, "tcp://127.0.0.1:*");
    c->threads = 3;
    c->log_level = SRV_LOG_ERROR;
    c->stats_interval_s = 0;
}

static srv_thread *start(void)
{
    srv_config c;
    test_config(&c);
    return start_with(&c);
}

/* Names session s in request q: its id and its token (PROTOCOL.md section 9). */
static void name_session(proto_request *q, const herd_session *s)
{
    q->session = s->id;
    q->has_session = 1;
    memcpy(q->token, s->token, sizeof q->token);
    q->has_token = s->has_token;
}

static herd_client *connect_to(srv_thread *t)
{
    herd_error e;
    const char *ep = srv_thread_endpoint(t);
    herd_client *c = herd_client_new(&ep, 1, 20000, &e);
    cr_assert(c, "client: %s", e.message);
    return c;
}

#define OK(call)                                                                                                        \
    do {                                                                                                                \
        herd_error e_;                                                                                                  \
        memset(&e_, 0, sizeof e_);                                                                                      \
        int rc_ = (call);                                                                                               \
        (void)e_;                                                                                                       \
        cr_assert_eq(rc_, 0, "%s: %s", #call, proto_code_name((proto_code)rc_));                                       \
    } while (0)

static void make(herd_client *c, const char *env, int n, const env_kv *kv, int nkv, uint64_t seed, env_autoreset ar,
                 herd_session *s)
{
    herd_error e;
    int rc = herd_client_make(c, 0, env, n, kv, nkv, seed, ar, s, &e);
    cr_assert_eq(rc, 0, "make: %s %s", proto_code_name(rc), e.message);
}

/* deterministic actions in [-1.5, 1.5] */
static void actions(float *a, int n, int ad, int step, int salt)
{
    for (int i = 0; i < n * ad; i++) a[i] = (float)(1.5 * sin(0.7 * step + 0.13 * i + 0.37 * salt));
}

/* ---- output buffers and the in-process reference ---- */

typedef struct {
    herd_step_out o;
    int n, od, nt;
} outbuf;

static void ob_alloc(outbuf *b, int n, int od, int nt, env_autoreset ar, int terms)
{
    memset(b, 0, sizeof *b);
    b->n = n, b->od = od, b->nt = nt;
    b->o.obs = calloc((size_t)n * od, 4);
    b->o.reward = calloc((size_t)n, 4);
    b->o.terminated = calloc((size_t)n, 1);
    b->o.truncated = calloc((size_t)n, 1);
    b->o.physics_reset = calloc((size_t)n, 1);
    b->o.episode_done = calloc((size_t)n, 1);
    b->o.episode_return = calloc((size_t)n, 4);
    b->o.episode_length = calloc((size_t)n, 4);
    b->o.episode_terms = calloc((size_t)n * nt, 4);
    if (ar == ENV_AUTORESET_NEXT_STEP) b->o.autoreset = calloc((size_t)n, 1);
    if (ar == ENV_AUTORESET_SAME_STEP) {
        b->o.final_obs = calloc((size_t)n * od, 4);
        b->o.final_mask = calloc((size_t)n, 1);
    }
    if (terms) b->o.reward_terms = calloc((size_t)n * nt, 4);
}

static void ob_free(outbuf *b)
{
    free(b->o.obs), free(b->o.reward), free(b->o.terminated), free(b->o.truncated), free(b->o.physics_reset);
    free(b->o.episode_done), free(b->o.episode_return), free(b->o.episode_length), free(b->o.episode_terms);
    free(b->o.autoreset), free(b->o.final_obs), free(b->o.final_mask), free(b->o.reward_terms);
}

static void same_bytes(const void *a, const void *b, size_t n, const char *what, int step)
{
    if (!a && !b) return;
    cr_assert(a && b, "%s: present on one side only", what);
    if (memcmp(a, b, n)) {
        const uint8_t *x = a, *y = b;
        size_t i = 0;
        while (x[i] == y[i]) i++;
        cr_assert(0, "step %d: %s differs at byte %zu of %zu", step, what, i, n);
    }
}

static void ob_eq(const outbuf *a, const outbuf *b, int n, int step)
{
    size_t od = (size_t)a->od, nt = (size_t)a->nt;
    same_bytes(a->o.obs, b->o.obs, (size_t)n * od * 4, "obs", step);
    same_bytes(a->o.reward, b->o.reward, (size_t)n * 4, "reward", step);
    same_bytes(a->o.terminated, b->o.terminated, (size_t)n, "terminated", step);
    same_bytes(a->o.truncated, b->o.truncated, (size_t)n, "truncated", step);
    same_bytes(a->o.physics_reset, b->o.physics_reset, (size_t)n, "physics_reset", step);
    same_bytes(a->o.episode_done, b->o.episode_done, (size_t)n, "episode_done", step);
    same_bytes(a->o.episode_return, b->o.episode_return, (size_t)n * 4, "episode_return", step);
    same_bytes(a->o.episode_length, b->o.episode_length, (size_t)n * 4, "episode_length", step);
    same_bytes(a->o.episode_terms, b->o.episode_terms, (size_t)n * nt * 4, "episode_terms", step);
    same_bytes(a->o.autoreset, b->o.autoreset, (size_t)n, "autoreset", step);
    same_bytes(a->o.final_obs, b->o.final_obs, (size_t)n * od * 4, "final_obs", step);
    same_bytes(a->o.final_mask, b->o.final_mask, (size_t)n, "final_mask", step);
    same_bytes(a->o.reward_terms, b->o.reward_terms, (size_t)n * nt * 4, "reward_terms", step);
}

typedef struct {
    env_t *e;
    uint8_t *ended;     /* the next step autoresets the world (initially: never reset) */
    env_autoreset ar;
} ref_t;

static void ref_new(ref_t *r, const char *name, int n, const env_kv *kv, int nkv, uint64_t seed, env_autoreset ar)
{
    char err[256];
    r->e = env_new(name, n, kv, nkv, seed, ar, err, sizeof err);
    cr_assert(r->e, "%s", err);
    r->ended = malloc((size_t)n);
    memset(r->ended, 1, (size_t)n);
    r->ar = ar;
}

static void ref_free(ref_t *r)
{
    env_destroy(&r->e);
    free(r->ended);
}

static void ref_reset(ref_t *r, int n, const int32_t *ids, const uint64_t *seeds, float *obs)
{
    env_reset(r->e, 0, n, ids, seeds, obs);
    for (int i = 0; i < n; i++) r->ended[ids ? ids[i] : i] = 0;
}

static int ref_step(ref_t *r, int n, const int32_t *ids, const float *act, outbuf *b)
{
    for (int i = 0; i < n && b->o.autoreset; i++) b->o.autoreset[i] = r->ended[ids ? ids[i] : i];
    env_info info = {.final_obs = b->o.final_obs, .physics_reset = b->o.physics_reset, .episode_done = b->o.episode_done,
                     .episode_return = b->o.episode_return, .episode_length = b->o.episode_length,
                     .episode_terms = b->o.episode_terms, .reward_terms = b->o.reward_terms};
    int refused = env_step(r->e, 0, n, ids, act, b->o.obs, b->o.reward, b->o.terminated, b->o.truncated, &info);
    for (int i = 0; i < n; i++) {
        uint8_t e = b->o.terminated[i] | b->o.truncated[i];
        int w = ids ? ids[i] : i;
        r->ended[w] = r->ar == ENV_AUTORESET_SAME_STEP ? 0 : r->ar == ENV_AUTORESET_DISABLED ? (r->ended[w] | e) : e;
        if (b->o.final_mask) b->o.final_mask[i] = e;
    }
    return refused;
}

/* ---- basics ---- */

Test(server, ping_and_hello_list_the_registry)
{
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    double tm;
    OK(herd_client_ping(c, 0, &tm, &e_));
    cr_assert(fabs(tm - (double)time(NULL)) < 5, "server time %f", tm);
    herd_hello h;
    OK(herd_client_hello(c, 0, &h, &e_));
    cr_assert_eq(h.protocol, PROTO_VERSION);
    cr_assert(strstr(h.server, HERD_VERSION));
    cr_assert_eq(h.threads, 3);
    cr_assert_eq(h.nenvs, env_registry_count());
    for (int i = 0; i < h.nenvs; i++) {
        const env_spec *want = env_registry_spec(i);
        const env_spec *got = &h.envs[i];
        cr_assert_str_eq(got->name, want->name);
        cr_assert(got->obs_dim == want->obs_dim && got->act_dim == want->act_dim && got->nobs == want->nobs);
        cr_assert(got->nconfig == want->nconfig && got->nterms == want->nterms);
        for (int k = 0; k < want->nobs; k++) {
            cr_assert_str_eq(got->obs[k].name, want->obs[k].name);
            cr_assert(got->obs[k].offset == want->obs[k].offset && got->obs[k].size == want->obs[k].size);
            cr_assert(got->obs[k].low == want->obs[k].low && got->obs[k].scale == want->obs[k].scale);
        }
        for (int k = 0; k < want->nconfig; k++) {
            cr_assert_str_eq(got->config[k].key, want->config[k].key);
            cr_assert(got->config[k].def == want->config[k].def && got->config[k].hi == want->config[k].hi);
        }
        for (int k = 0; k < want->nterms; k++) cr_assert_str_eq(got->terms[k], want->terms[k]);
        cr_assert(got->sim_dt == want->sim_dt && got->max_episode_steps == want->max_episode_steps);
    }
    herd_hello_free(&h);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(server, make_reset_step_close_and_stats)
{
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    herd_session s;
    env_kv kv[1] = {{"kp", 60}};
    make(c, "anymal_c-stand", 10, kv, 1, 5, ENV_AUTORESET_NEXT_STEP, &s);
    cr_assert(s.id && s.num_worlds == 10 && s.obs_dim == 46 && s.act_dim == 12);
    cr_assert_str_eq(s.spec.name, "anymal_c-stand");
    int kp = -1;
    for (int i = 0; i < s.spec.nconfig; i++)
        if (!strcmp(s.spec.config[i].key, "kp")) kp = i;
    cr_assert(kp >= 0 && s.config[kp] == 60.0, "effective config echoed");
    float obs[10 * 46], act[10 * 12];
    OK(herd_client_reset(c, &s, -1, NULL, NULL, obs, &e_));
    for (int i = 0; i < 10 * 46; i++) cr_assert(isfinite(obs[i]));
    outbuf b;
    ob_alloc(&b, 10, 46, s.nterms, s.autoreset, 1);
    for (int k = 0; k < 5; k++) {
        actions(act, 10, 12, k, 0);
        OK(herd_client_step(c, &s, -1, NULL, act, 1, &b.o, &e_));
    }
    herd_stats st;
    OK(herd_client_stats(c, 0, s.id, &st, &e_));
    cr_assert_eq(st.steps, 50);
    cr_assert(st.has_session && st.session == s.id && st.session_steps == 50 && st.num_worlds == 10);
    cr_assert_str_eq(st.env, "anymal_c-stand");
    cr_assert_eq(st.sessions, 1);
    cr_assert_eq(st.worlds, 10);
    cr_assert_eq(st.threads, 3);
    OK(herd_client_close(c, &s, &e_));
    herd_error e;
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &b.o, &e), PROTO_E_UNKNOWN_SESSION);
    cr_assert(strstr(e.message, "unknown session"), "%s", e.message);
    OK(herd_client_stats(c, 0, 0, &st, &e_));
    cr_assert(st.sessions == 0 && st.worlds == 0 && !st.has_session);
    ob_free(&b);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- bit-for-bit equality with in-process stepping ---- */

/* subsets: 0 all worlds every step; 1 a random subset in random order on two steps of three; 2 (a 2-thread
 * server) the first half of the worlds, in order, every step: one worker's slice, which the other helps with */
static void run_equal(env_autoreset ar, int nworlds, int steps, int subsets, const char *env, int terms)
{
    srv_config cfg;
    test_config(&cfg);
    if (subsets == 2) cfg.threads = 2;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    env_kv kv[1] = {{"episode_seconds", 0.16}};     /* 8 steps: many autoresets */
    herd_session s;
    make(c, env, nworlds, kv, 1, 1234, ar, &s);
    ref_t r;
    ref_new(&r, env, nworlds, kv, 1, 1234, ar);
    const int od = s.obs_dim, ad = s.act_dim, nt = s.nterms;
    float *o1 = malloc((size_t)nworlds * od * 4), *o2 = malloc((size_t)nworlds * od * 4);
    float *act = malloc((size_t)nworlds * ad * 4);
    int32_t *ids = malloc((size_t)nworlds * 4);
    OK(herd_client_reset(c, &s, -1, NULL, NULL, o1, &e_));
    ref_reset(&r, nworlds, NULL, NULL, o2);
    same_bytes(o1, o2, (size_t)nworlds * od * 4, "reset obs", -1);
    outbuf a, b;
    ob_alloc(&a, nworlds, od, nt, ar, terms);
    ob_alloc(&b, nworlds, od, nt, ar, terms);
    uint64_t x = 88172645463325252ull;
    int autoresets = 0, finals = 0;
    for (int k = 0; k < steps; k++) {
        int n = nworlds;
        const int32_t *sel = NULL;
        if (subsets == 2) {
            n = nworlds / 2;
            for (int i = 0; i < n; i++) ids[i] = i;
            sel = ids;
        } else if (subsets && k % 3 != 0) {
            /* a random subset in random order */
            for (int i = 0; i < nworlds; i++) ids[i] = i;
            for (int i = nworlds - 1; i > 0; i--) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                int j = (int)(x % (uint64_t)(i + 1));
                int32_t tmp = ids[i];
                ids[i] = ids[j];
                ids[j] = tmp;
            }
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            n = 1 + (int)(x % (uint64_t)nworlds);
            sel = ids;
        }
        actions(act, n, ad, k, 1);
        herd_error e;
        int rc = herd_client_step(c, &s, n, sel, act, terms, &a.o, &e);
        cr_assert_eq(rc, 0, "step %d: %s %s", k, proto_code_name(rc), e.message);
        ref_step(&r, n, sel, act, &b);
        ob_eq(&a, &b, n, k);
        for (int i = 0; i < n; i++) {
            if (a.o.autoreset) autoresets += a.o.autoreset[i];
            if (a.o.final_mask) finals += a.o.final_mask[i];
        }
    }
    if (subsets == 2)
        cr_assert_gt(srv_server_helped_worlds(srv_thread_server(t)), 0, "the idle worker helped with the other's slice");
    if (ar == ENV_AUTORESET_NEXT_STEP) cr_assert_gt(autoresets, 0, "episodes ended and were autoreset");
    if (ar == ENV_AUTORESET_SAME_STEP) cr_assert_gt(finals, 0, "episodes ended with a final observation");
    ob_free(&a), ob_free(&b);
    free(o1), free(o2), free(act), free(ids);
    ref_free(&r);
    OK(herd_client_close(c, &s, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(equal, next_step_all_worlds, .timeout = 120) { run_equal(ENV_AUTORESET_NEXT_STEP, 37, 30, 0, "anymal_c-walk", 0); }
Test(equal, next_step_subsets, .timeout = 120) { run_equal(ENV_AUTORESET_NEXT_STEP, 29, 40, 1, "anymal_c-walk", 1); }
Test(equal, same_step_all_worlds, .timeout = 120) { run_equal(ENV_AUTORESET_SAME_STEP, 23, 30, 0, "anymal_c-stand", 1); }
Test(equal, same_step_subsets, .timeout = 120) { run_equal(ENV_AUTORESET_SAME_STEP, 31, 40, 1, "anymal_c-walk", 0); }
Test(equal, one_slice_helped_by_the_idle_worker, .timeout = 120)
{
    run_equal(ENV_AUTORESET_NEXT_STEP, 512, 24, 2, "anymal_c-walk", 1);
}
Test(equal, fewer_worlds_than_threads, .timeout = 60) { run_equal(ENV_AUTORESET_NEXT_STEP, 2, 20, 1, "anymal_c-walk", 0); }

Test(equal, reset_with_seeds, .timeout = 60)
{
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    herd_session s;
    make(c, "anymal_c-walk", 8, NULL, 0, 77, ENV_AUTORESET_NEXT_STEP, &s);
    ref_t r;
    ref_new(&r, "anymal_c-walk", 8, NULL, 0, 77, ENV_AUTORESET_NEXT_STEP);
    float o1[8 * 48], o2[8 * 48];
    int32_t ids[3] = {6, 1, 3};
    uint64_t seeds[3] = {10, 20, UINT64_MAX};
    OK(herd_client_reset(c, &s, 3, ids, seeds, o1, &e_));
    ref_reset(&r, 3, ids, seeds, o2);
    same_bytes(o1, o2, 3 * 48 * 4, "seeded reset obs", 0);
    /* a scalar seed: world w gets seed + w */
    proto_request q;
    proto_request_init(&q);
    q.op = PROTO_OP_RESET;
    q.id = herd_client_next_id(c);
    name_session(&q, &s);
    q.has_seed = 1;
    q.seed = 1000;
    OK(herd_client_send_request(c, 0, &q, &e_));
    herd_reply *rep;
    OK(herd_client_wait(c, q.id, -1, &rep, &e_));
    OK(herd_reply_reset(rep, &s, 8, o1, &e_));
    herd_reply_destroy(&rep);
    uint64_t sd[8];
    for (int i = 0; i < 8; i++) sd[i] = 1000 + (uint64_t)i;
    ref_reset(&r, 8, NULL, sd, o2);
    same_bytes(o1, o2, 8 * 48 * 4, "scalar-seed reset obs", 1);
    ref_free(&r);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- autoreset disabled ---- */

Test(server, autoreset_disabled, .timeout = 60)
{
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    env_kv kv[1] = {{"episode_seconds", 0.1}};     /* 5 steps */
    herd_session s;
    make(c, "anymal_c-walk", 6, kv, 1, 3, ENV_AUTORESET_DISABLED, &s);
    float obs[6 * 48], act[6 * 12] = {0};
    outbuf b;
    ob_alloc(&b, 6, 48, s.nterms, s.autoreset, 0);
    herd_error e;
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &b.o, &e), PROTO_E_EPISODE_ENDED, "step before reset");
    cr_assert(strstr(e.message, "world 0") && strstr(e.message, "never reset"), "%s", e.message);
    /* pipelined: reset then step without waiting -> the step waits for the reset and succeeds */
    uint64_t r1 = herd_client_reset_send(c, &s, -1, NULL, NULL, &e);
    uint64_t r2 = herd_client_step_send(c, &s, -1, NULL, act, 0, &e);
    cr_assert(r1 && r2);
    herd_reply *rep;
    OK(herd_client_wait(c, r2, -1, &rep, &e_));
    cr_assert(rep->ok, "%s", rep->error.message);
    herd_reply_destroy(&rep);
    OK(herd_client_wait(c, r1, -1, &rep, &e_));
    cr_assert(rep->ok);
    herd_reply_destroy(&rep);
    int k = 1;
    for (; k < 5; k++) OK(herd_client_step(c, &s, -1, NULL, act, 0, &b.o, &e_));
    for (int i = 0; i < 6; i++) cr_assert(b.o.truncated[i], "world %d truncated at the time limit", i);
    int32_t one[1] = {4};
    cr_assert_eq(herd_client_step(c, &s, 1, one, act, 0, &b.o, &e), PROTO_E_EPISODE_ENDED);
    cr_assert(strstr(e.message, "world 4 has ended"), "%s", e.message);
    OK(herd_client_reset(c, &s, 1, one, NULL, obs, &e_));
    OK(herd_client_step(c, &s, 1, one, act, 0, &b.o, &e_));
    cr_assert(!b.o.truncated[0] && !b.o.terminated[0]);
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &b.o, &e), PROTO_E_EPISODE_ENDED);
    cr_assert(strstr(e.message, "world 0 and others"), "%s", e.message);
    ob_free(&b);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- several clients ---- */

typedef struct {
    const char *ep;
    int n, salt;
    int failed;
    char why[600];
} client_job;

static void *client_thread(void *arg)
{
    client_job *cj = arg;
    herd_error e;
    herd_client *c = herd_client_new(&cj->ep, 1, 30000, &e);
    herd_session s;
    if (!c || herd_client_make(c, 0, "anymal_c-walk", cj->n, NULL, 0, (uint64_t)cj->salt, ENV_AUTORESET_SAME_STEP, &s, &e)) {
        cj->failed = 1;
        snprintf(cj->why, sizeof cj->why, "make: %s", e.message);
        herd_client_destroy(&c);
        return NULL;
    }
    char err[256];
    env_t *ref = env_new("anymal_c-walk", cj->n, NULL, 0, (uint64_t)cj->salt, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    int n = cj->n, od = 48;
    float *o1 = malloc((size_t)n * od * 4), *o2 = malloc((size_t)n * od * 4), *act = malloc((size_t)n * 48);
    float *r1 = malloc((size_t)n * 4), *r2 = malloc((size_t)n * 4);
    uint8_t *t1 = malloc((size_t)n), *t2 = malloc((size_t)n), *u1 = malloc((size_t)n), *u2 = malloc((size_t)n);
    if (herd_client_reset(c, &s, -1, NULL, NULL, o1, &e)) {
        cj->failed = 1;
        snprintf(cj->why, sizeof cj->why, "reset: %s", e.message);
    }
    env_reset(ref, 0, n, NULL, NULL, o2);
    for (int k = 0; k < 15 && !cj->failed; k++) {
        actions(act, n, 12, k, cj->salt);
        herd_step_out out = {.obs = o1, .reward = r1, .terminated = t1, .truncated = u1};
        if (herd_client_step(c, &s, -1, NULL, act, 0, &out, &e)) {
            cj->failed = 1;
            snprintf(cj->why, sizeof cj->why, "step: %s", e.message);
            break;
        }
        env_step(ref, 0, n, NULL, act, o2, r2, t2, u2, NULL);
        if (memcmp(o1, o2, (size_t)n * od * 4) || memcmp(r1, r2, (size_t)n * 4) || memcmp(t1, t2, (size_t)n) ||
            memcmp(u1, u2, (size_t)n)) {
            cj->failed = 1;
            snprintf(cj->why, sizeof cj->why, "client %d step %d: served results differ from in-process", cj->salt, k);
        }
    }
    herd_client_close(c, &s, &e);
    env_destroy(&ref);
    free(o1), free(o2), free(act), free(r1), free(r2), free(t1), free(t2), free(u1), free(u2);
    herd_client_destroy(&c);
    return NULL;
}

Test(server, several_clients_at_once, .timeout = 120)
{
    srv_thread *t = start();
    enum { NC = 5 };
    client_job cj[NC];
    pthread_t th[NC];
    for (int i = 0; i < NC; i++) {
        cj[i] = (client_job){.ep = srv_thread_endpoint(t), .n = 3 + 11 * i, .salt = i + 1};
        pthread_create(&th[i], NULL, client_thread, &cj[i]);
    }
    for (int i = 0; i < NC; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NC; i++) cr_assert(!cj[i].failed, "%s", cj[i].why);
    herd_client *c = connect_to(t);
    herd_stats st;
    OK(herd_client_stats(c, 0, 0, &st, &e_));
    cr_assert(st.sessions == 0 && st.steps > 0 && st.errors == 0);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- errors through a live server ---- */

static void expect_reply_code(herd_client *c, const void *bytes, size_t len, proto_code want, uint64_t want_id,
                              const char *needle)
{
    herd_error e;
    cr_assert_eq(herd_client_send_raw(c, 0, bytes, len, &e), 0);
    herd_reply *r;
    int rc = herd_client_recv(c, -1, &r, &e);
    cr_assert_eq(rc, 0, "no reply: %s", e.message);
    cr_assert(!r->ok, "expected %s, got ok", proto_code_name(want));
    cr_assert_eq(r->error.code, want, "expected %s, got %s (%s)", proto_code_name(want), proto_code_name(r->error.code),
                 r->error.message);
    cr_assert_eq(r->id, want_id);
    if (needle) cr_assert(strstr(r->error.message, needle), "'%s' lacks '%s'", r->error.message, needle);
    herd_reply_destroy(&r);
}

static void expect_request_code(herd_client *c, proto_request *q, proto_code want, const char *needle)
{
    proto_buf b;
    proto_buf_init(&b);
    q->id = herd_client_next_id(c);
    proto_encode_request(&b, q);
    expect_reply_code(c, b.data, b.len, want, q->id, needle);
    proto_buf_free(&b);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

Test(server, error_replies_and_the_server_keeps_serving, .timeout = 60)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.max_message_bytes = 64 * 1024;
    cfg.max_worlds_per_session = 100;
    cfg.max_worlds = 105;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session s;
    make(c, "anymal_c-walk", 10, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    float act[100 * 12] = {0};
    OK(herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e_));

    /* the golden vectors of rejected requests */
    const char *bad[] = {"bad_version", "bad_unknown_op", "bad_missing_id", "bad_not_map", "bad_truncated", "bad_trailing",
                         "bad_actions_dtype", "bad_actions_shape", "bad_field_type", "bad_unknown_field",
                         "bad_missing_session", "bad_world_ids_negative", "bad_actions_dtype_type",
                         "bad_actions_shape_type", "bad_op_nul", "bad_env_nul"};
    const proto_code want[] = {PROTO_E_BAD_VERSION, PROTO_E_UNKNOWN_OP, PROTO_E_MISSING_FIELD, PROTO_E_BAD_MESSAGE,
                               PROTO_E_BAD_MESSAGE, PROTO_E_BAD_MESSAGE, PROTO_E_BAD_DTYPE, PROTO_E_BAD_SHAPE,
                               PROTO_E_BAD_FIELD, PROTO_E_BAD_FIELD, PROTO_E_MISSING_FIELD, PROTO_E_BAD_WORLD_IDS,
                               PROTO_E_BAD_FIELD, PROTO_E_BAD_FIELD, PROTO_E_UNKNOWN_OP, PROTO_E_UNKNOWN_ENV};
    const uint64_t want_id[] = {20, 21, 0, 0, 24, 25, 26, 27, 28, 29, 30, 31, 38, 39, 40, 41};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[128];
        size_t len = 0;
        snprintf(path, sizeof path, "protocol/testdata/%s.msgpack", bad[i]);
        uint8_t *b = slurp(path, &len);
        cr_assert(b, "%s", path);
        expect_reply_code(c, b, len, want[i], want_id[i], NULL);
        free(b);
    }
    expect_reply_code(c, "\xc1\xc1\xc1", 3, PROTO_E_BAD_MESSAGE, 0, "0xc1");
    expect_reply_code(c, "", 0, PROTO_E_BAD_MESSAGE, 0, "empty");
    expect_reply_code(c, "\xdd\xff\xff\xff\xff", 5, PROTO_E_BAD_MESSAGE, 0, NULL);

    proto_request q;
    /* semantic errors */
    proto_request_init(&q);
    q.op = PROTO_OP_MAKE;
    snprintf(q.env, sizeof q.env, "cartpole");
    q.num_worlds = 1;
    expect_request_code(c, &q, PROTO_E_UNKNOWN_ENV, "available: anymal_c-walk");
    snprintf(q.env, sizeof q.env, "anymal_c-walk");
    q.num_worlds = 101;
    expect_request_code(c, &q, PROTO_E_LIMIT, "100 worlds per session (max_worlds_per_session)");
    q.num_worlds = 50;
    q.nconfig = 1;
    q.config[0] = (proto_kv){"kp", 1e6};
    expect_request_code(c, &q, PROTO_E_BAD_CONFIG, "kp");
    q.config[0] = (proto_kv){"warp_drive", 1};
    expect_request_code(c, &q, PROTO_E_BAD_CONFIG, "warp_drive");
    q.nconfig = 0;
    q.num_worlds = 100;      /* 10 in use + 100 > 105 */
    expect_request_code(c, &q, PROTO_E_LIMIT, "105 worlds (max_worlds; 10 in use)");

    int32_t ids[3] = {1, 2, 1};
    proto_request_init(&q);
    q.op = PROTO_OP_STEP;
    q.session = 999;
    q.has_session = 1;
    q.has_actions = 1;
    q.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {10, 12}, (const uint8_t *)act, 10 * 12 * 4};
    expect_request_code(c, &q, PROTO_E_UNKNOWN_SESSION, "unknown session 999");
    name_session(&q, &s);
    q.actions.shape[1] = 11;
    q.actions.nbytes = 10 * 11 * 4;
    expect_request_code(c, &q, PROTO_E_BAD_SHAPE, "expected [10, 12]");
    q.actions.shape[0] = 9;
    q.actions.shape[1] = 12;
    q.actions.nbytes = 9 * 12 * 4;
    expect_request_code(c, &q, PROTO_E_BAD_SHAPE, "expected [10, 12]");
    q.actions.shape[0] = 10;
    q.actions.nbytes = 10 * 12 * 4;
    act[5 * 12 + 7] = NAN;
    expect_request_code(c, &q, PROTO_E_NON_FINITE, "actions[5][7]");
    act[5 * 12 + 7] = 0;
    act[9 * 12 + 11] = -INFINITY;
    expect_request_code(c, &q, PROTO_E_NON_FINITE, "world 9");
    act[9 * 12 + 11] = 0;
    q.world_ids = ids;
    q.nids = 3;
    q.actions.shape[0] = 3;
    q.actions.nbytes = 3 * 12 * 4;
    expect_request_code(c, &q, PROTO_E_BAD_WORLD_IDS, "repeats");
    ids[2] = 10;
    expect_request_code(c, &q, PROTO_E_BAD_WORLD_IDS, "out of range");
    ids[2] = 3;
    proto_request_init(&q);
    q.op = PROTO_OP_RESET;
    name_session(&q, &s);
    uint64_t seeds[3] = {1, 2, 3};
    q.seeds = seeds;
    q.nseeds = 3;
    expect_request_code(c, &q, PROTO_E_BAD_SHAPE, "3 entries for 10 worlds");
    /* oversized (64 KiB limit): TOO_LARGE with the id */
    {
        static float big[2000 * 12];
        proto_request_init(&q);
        q.op = PROTO_OP_STEP;
        name_session(&q, &s);
        q.has_actions = 1;
        q.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {2000, 12}, (const uint8_t *)big, sizeof big};
        expect_request_code(c, &q, PROTO_E_TOO_LARGE, "65536");
    }

    /* and everything still works */
    float obs[10 * 48];
    herd_step_out out = {.obs = obs};
    OK(herd_client_step(c, &s, -1, NULL, act, 0, &out, &e_));
    herd_stats st;
    OK(herd_client_stats(c, 0, s.id, &st, &e_));
    cr_assert_eq(st.errors, sizeof bad / sizeof bad[0] + 17);   /* the golden vectors, 3 raw messages, 14 requests */
    cr_assert_eq(st.session_errors, 7);
    OK(herd_client_close(c, &s, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(server, oversized_beyond_the_hard_limit_drops_only_that_connection, .timeout = 60)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.max_message_bytes = 16 * 1024;      /* hard limit 64 KiB */
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_client_set_timeout(c, 500);
    uint8_t *junk = calloc(1, 200 * 1024);
    herd_error e;
    cr_assert_eq(herd_client_send_raw(c, 0, junk, 200 * 1024, &e), 0);
    herd_reply *r;
    cr_assert_eq(herd_client_recv(c, 500, &r, &e), PROTO_E_TIMEOUT, "no reply: the connection was dropped");
    free(junk);
    herd_client_destroy(&c);
    c = connect_to(t);
    OK(herd_client_ping(c, 0, NULL, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- limits and accounting ---- */

Test(server, worlds_are_released_on_close)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.max_worlds = 20;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session a, b;
    make(c, "anymal_c-walk", 15, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &a);
    herd_error e;
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", 6, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &b, &e), PROTO_E_LIMIT);
    OK(herd_client_close(c, &a, &e_));
    make(c, "anymal_c-walk", 20, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &b);
    OK(herd_client_close(c, &b, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* A make that runs out of memory is a LIMIT error naming it (classified by errno, not by the message
 * text), not BAD_CONFIG; the server keeps serving. */
Test(server, make_out_of_memory_is_a_limit_error, .timeout = 30)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("ASan aborts on the huge allocation instead of returning NULL");
#endif
    srv_config cfg;
    test_config(&cfg);
    cfg.max_worlds_per_session = INT32_MAX;
    cfg.max_worlds = 1L << 40;
    cfg.max_memory_bytes = (size_t)1 << 50;     /* past the memory ceiling's estimate, to the allocation itself */
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session a;
    herd_error e;
    /* 2^31 - 1 worlds: the per-world arrays alone are far beyond this machine's memory */
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", INT32_MAX, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &a, &e),
                 PROTO_E_LIMIT, "%s", e.message);
    cr_assert(strstr(e.message, "out of memory"), "%s", e.message);
    make(c, "anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &a);
    OK(herd_client_close(c, &a, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- session expiry ---- */

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* An idle session expires, a session in use does not.  The busy one is stepped back to back, so its idle clock
 * never runs longer than one round trip; the timeout is 50 times the slowest of ten round trips measured first on
 * this machine (at least 0.3 s), so a busy machine makes the test longer, not flaky, and the idle one waits three
 * timeouts. */
Test(server, idle_sessions_expire, .timeout = 300)
{
    srv_config cfg;
    test_config(&cfg);
    float act[4 * 12] = {0};
    double worst_ms = 0;
    {
        srv_thread *t = start_with(&cfg);
        herd_client *c = connect_to(t);
        herd_session p;
        make(c, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &p);
        for (int i = 0; i < 10; i++) {
            double t0 = mono_ms();
            OK(herd_client_step(c, &p, -1, NULL, act, 0, NULL, &e_));
            if (mono_ms() - t0 > worst_ms) worst_ms = mono_ms() - t0;
        }
        herd_client_destroy(&c);
        cr_assert_eq(srv_thread_stop(&t), 0);
    }
    cfg.session_timeout_s = 50e-3 * worst_ms > 0.3 ? 50e-3 * worst_ms : 0.3;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session s, keep;
    make(c, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    make(c, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &keep);
    int steps = 0;
    for (double t0 = mono_ms(); mono_ms() - t0 < 3e3 * cfg.session_timeout_s; steps++)
        OK(herd_client_step(c, &keep, -1, NULL, act, 0, NULL, &e_));
    cr_log_info("session timeout %.2f s (round trip at most %.2f ms); the busy session made %d steps", cfg.session_timeout_s,
                worst_ms, steps);
    herd_error e;
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, NULL, &e), PROTO_E_UNKNOWN_SESSION);
    OK(herd_client_step(c, &keep, -1, NULL, act, 0, NULL, &e_));
    herd_stats st;
    OK(herd_client_stats(c, 0, 0, &st, &e_));
    cr_assert_eq(st.sessions, 1);
    cr_assert_eq(st.worlds, 4);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- pipelining, fairness ---- */

Test(server, subset_replies_come_back_as_soon_as_their_worlds_are_done, .timeout = 60)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.threads = 2;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session s;
    /* big: worlds 0..B-1 (the first slice: one worker's, the other helping); small: world N-1 (the other worker's
     * slice), sent right after.  A server that answers in request order never lets the small step overtake; one
     * that answers each request when its worlds are done lets it overtake unless the small step's worker got no
     * CPU for the big step's ~20 ms, which a busy machine does now and then: up to ten tries, one overtaking
     * suffices, and every try's replies must be right */
    const int N = 4800, B = N / 2, TRIES = 10;
    make(c, "anymal_c-walk", N, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    OK(herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e_));
    float *act = calloc((size_t)N * 12, 4);
    int32_t *big = malloc((size_t)B * 4), small[1] = {N - 1};
    for (int i = 0; i < B; i++) big[i] = i;
    herd_error e;
    int tries = 0, overtook = 0;
    while (tries < TRIES && !overtook) {
        tries++;
        uint64_t ib = herd_client_step_send(c, &s, B, big, act, 0, &e);
        uint64_t is = herd_client_step_send(c, &s, 1, small, act, 0, &e);
        cr_assert(ib && is, "%s", e.message);
        herd_reply *r1, *r2;
        OK(herd_client_recv(c, -1, &r1, &e_));
        OK(herd_client_recv(c, -1, &r2, &e_));
        cr_assert((r1->id == is && r2->id == ib) || (r1->id == ib && r2->id == is), "the two replies, once each");
        cr_assert(r1->ok && r2->ok);
        overtook = r1->id == is;
        herd_reply_destroy(&r1), herd_reply_destroy(&r2);
    }
    cr_log_info("the 1-world step overtook the %d-world step at try %d", B, tries);
    cr_assert(overtook, "the 1-world step never overtook the %d-world step in %d tries", B, TRIES);
    /* many pipelined requests on disjoint subsets: all answered, ids matched */
    uint64_t ids[10];
    int32_t sub[10][60];
    for (int k = 0; k < 10; k++) {
        for (int i = 0; i < 60; i++) sub[k][i] = k * 60 + i;
        ids[k] = herd_client_step_send(c, &s, 60, sub[k], act, 0, &e);
        cr_assert(ids[k]);
    }
    for (int k = 9; k >= 0; k--) {
        herd_reply *r;
        OK(herd_client_wait(c, ids[k], -1, &r, &e_));
        float obs[60 * 48];
        OK(herd_reply_step(r, &s, 60, &(herd_step_out){.obs = obs}, &e_));
        herd_reply_destroy(&r);
    }
    free(act), free(big);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

typedef struct {
    const char *ep;
    atomic_int stop;
    atomic_int steps;
    double step_ms;
} big_job;

static void *big_client(void *arg)
{
    big_job *bj = arg;
    herd_error e;
    herd_client *c = herd_client_new(&bj->ep, 1, 60000, &e);
    herd_session s;
    /* a big step of tens of ms, many times the small steps' round trip (~2 ms: the workers' time slice) */
    const int N = 8192;
    herd_client_make(c, 0, "anymal_c-walk", N, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e);
    float *act = calloc((size_t)N * 12, 4);
    herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e);
    double t0 = mono_ms();
    while (!atomic_load(&bj->stop)) {
        herd_client_step(c, &s, -1, NULL, act, 0, NULL, &e);
        atomic_fetch_add(&bj->steps, 1);
    }
    bj->step_ms = (mono_ms() - t0) / atomic_load(&bj->steps);
    free(act);
    herd_client_destroy(&c);
    return NULL;
}

Test(server, a_big_session_does_not_starve_a_small_one, .timeout = 120)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.threads = 2;
    srv_thread *t = start_with(&cfg);
    big_job bj = {.ep = srv_thread_endpoint(t)};
    pthread_t th;
    pthread_create(&th, NULL, big_client, &bj);
    herd_client *c = connect_to(t);
    herd_session s;
    make(c, "anymal_c-walk", 1, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    float act[12] = {0};
    while (atomic_load(&bj.steps) < 1) usleep(1000);
    /* Observed in the server's counts, not in milliseconds: the world-steps it served (stats, answered at once)
     * while a small step is served.  Each window starts with a big step just received by the server (the big client
     * sends its next one as soon as it has a reply; the server counts requests on arrival), and a big step adds its
     * 8192 world-steps when it completes.  A small step that waits for the big one in flight sees it complete in
     * its window every time; one served beside it sees that only if its round trip outlasts the rest of a big step
     * (tens of ms; a busy machine stretches both).  Fails unless more than half of the windows are quiet. */
    enum { K = 40, BIG = 8192 };
    int quiet = 0;
    double lat[K];
    for (int k = 0; k < K; k++) {
        herd_stats before, after;
        int seen = atomic_load(&bj.steps);
        while (atomic_load(&bj.steps) == seen) usleep(200);     /* a big step completed ... */
        OK(herd_client_stats(c, 0, 0, &before, &e_));
        for (uint64_t mine = before.requests;;) {               /* ... and the next one has arrived */
            OK(herd_client_stats(c, 0, 0, &before, &e_));
            if (before.requests > mine + 1) break;
            mine = before.requests;
        }
        double t0 = mono_ms();
        OK(herd_client_step(c, &s, -1, NULL, act, 0, NULL, &e_));
        lat[k] = mono_ms() - t0;
        OK(herd_client_stats(c, 0, 0, &after, &e_));
        quiet += after.steps - before.steps - 1 < BIG;       /* 1: the small step itself */
    }
    atomic_store(&bj.stop, 1);
    pthread_join(th, NULL);
    for (int i = 0; i < K; i++)
        for (int j = i + 1; j < K; j++)
            if (lat[j] < lat[i]) {
                double x = lat[i];
                lat[i] = lat[j];
                lat[j] = x;
            }
    cr_log_info("big step %.1f ms (%d steps), small step median %.2f ms, max %.2f ms; %d of %d windows without a big "
                "step's completion", bj.step_ms, atomic_load(&bj.steps), lat[K / 2], lat[K - 1], quiet, K);
    cr_assert_gt(quiet, K / 2, "a big step completed in %d of the %d windows around small steps: they wait for the big "
                 "ones", K - quiet, K);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- shutdown ---- */

Test(server, stop_drains_requests_in_flight, .timeout = 60)
{
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    herd_session s;
    make(c, "anymal_c-walk", 600, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    OK(herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e_));
    float *act = calloc(600 * 12, 4);
    herd_error e;
    for (int k = 0; k < 3; k++) cr_assert(herd_client_step_send(c, &s, -1, NULL, act, 0, &e));
    OK(herd_client_ping(c, 0, NULL, &e_));     /* the steps were received */
    srv_server_stop(srv_thread_server(t));
    proto_request q;
    proto_request_init(&q);
    q.op = PROTO_OP_PING;
    q.id = herd_client_next_id(c);
    usleep(20000);
    OK(herd_client_send_request(c, 0, &q, &e_));
    int shut = 0;
    for (int k = 0; k < 4; k++) {
        herd_reply *r;
        if (herd_client_recv(c, 5000, &r, &e)) break;
        if (r->id == q.id) {
            cr_assert(!r->ok && r->error.code == PROTO_E_SHUTTING_DOWN);
            shut = 1;
        } else {
            cr_assert(r->ok, "in-flight step %" PRIu64 " answered: %s", r->id, r->error.message);
        }
        herd_reply_destroy(&r);
    }
    (void)shut;  /* the ping may arrive after the drain finished (no reply): both are fine */
    cr_assert_eq(srv_thread_stop(&t), 0);
    free(act);
    herd_client_destroy(&c);
}

/* A request handled after srv_server_stop returned is refused with SHUTTING_DOWN, even in the loop's turn in which
 * the stop came (before the loop notes it); one answered as usual there makes the sibling test above depend on
 * when the I/O thread runs.  The test makes that turn certain: the server logs to this process's stderr, here
 * a full pipe, so the I/O thread blocks on the debug line of an error reply in the middle of a turn; the stop and a
 * ping come while it is blocked; then the pipe is drained and the turn goes on with the ping. */
Test(server, a_request_after_stop_is_refused_in_the_turn_the_stop_came, .timeout = 60)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.log_level = SRV_LOG_DEBUG;
    srv_thread *t = start_with(&cfg);
    herd_client *a = connect_to(t), *b = connect_to(t);
    OK(herd_client_ping(a, 0, NULL, &e_));
    OK(herd_client_ping(b, 0, NULL, &e_));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    const int saved = dup(2);
    cr_assert_eq(dup2(p[1], 2), 2);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[1]);
    const int w = open(path, O_WRONLY | O_NONBLOCK); /* a description of its own: the server's stays blocking */
    cr_assert_geq(w, 0);
    static const char fill[4096] = {0};
    while (write(w, fill, sizeof fill) > 0) {}
    while (write(w, fill, 1) > 0) {} /* the last bytes: a write of 4096 needs that much room at once */
    close(w);
    /* stats of a session that does not exist: the error reply's debug line blocks the I/O thread */
    proto_request q;
    proto_request_init(&q);
    q.op = PROTO_OP_STATS;
    q.session = 987654321;
    q.has_session = 1;
    q.id = herd_client_next_id(a);
    herd_error e;
    cr_assert_eq(herd_client_send_request(a, 0, &q, &e), 0, "%s", e.message);
    proto_request_init(&q);
    q.op = PROTO_OP_PING;
    q.id = herd_client_next_id(a);
    cr_assert_eq(herd_client_send_request(a, 0, &q, &e), 0, "%s", e.message);
    herd_reply *r; /* neither the stats error (its line is logged before it is sent) nor the ping behind it comes */
    cr_assert_neq(herd_client_recv(a, 300, &r, &e), 0, "the server answered while its I/O thread should be blocked");
    srv_server_stop(srv_thread_server(t));
    proto_request_init(&q);
    q.op = PROTO_OP_PING;
    q.id = herd_client_next_id(b);
    const uint64_t after = q.id;
    cr_assert_eq(herd_client_send_request(b, 0, &q, &e), 0, "%s", e.message);
    usleep(200000);                                  /* the ping reaches the server's socket */
    dup2(saved, 2);
    close(saved);
    close(p[1]);
    char buf[65536];
    while (read(p[0], buf, sizeof buf) > 0) {}       /* the blocked line completes; the turn goes on */
    close(p[0]);
    cr_assert_eq(herd_client_recv(b, 10000, &r, &e), 0, "%s", e.message);
    cr_assert_eq(r->id, after);
    cr_assert(!r->ok && r->error.code == PROTO_E_SHUTTING_DOWN, "the ping sent after srv_server_stop was answered %s",
              r->ok ? "ok" : proto_code_name(r->error.code));
    herd_reply_destroy(&r);
    cr_assert_eq(srv_thread_stop(&t), 0);
    herd_client_destroy(&a);
    herd_client_destroy(&b);
}

Test(server, sigterm_drains_and_exits_0, .timeout = 60)
{
    char dir[4096], bin[4200], ep[128];
    test_build_dir(dir, sizeof dir);
    snprintf(bin, sizeof bin, "%s/herd-server", dir);
    if (access(bin, X_OK)) cr_skip_test("%s not built (make builds it)", bin);
    snprintf(ep, sizeof ep, "ipc:///tmp/herd-test-%d.sock", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", 1);
        dup2(devnull, 2);
        execl(bin, bin, "--bind", ep, "--threads", "2", "--log-level", "info", (char *)NULL);
        _exit(127);
    }
    const char *eps[1] = {ep};
    herd_error e;
    herd_client *c = herd_client_new(eps, 1, 20000, &e);
    herd_session s;
    make(c, "anymal_c-walk", 800, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s);
    OK(herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e_));
    float *act = calloc(800 * 12, 4);
    uint64_t id = herd_client_step_send(c, &s, -1, NULL, act, 0, &e);
    uint64_t id2 = herd_client_step_send(c, &s, -1, NULL, act, 0, &e);
    /* once the ping is answered, both steps were received (one connection is FIFO) */
    OK(herd_client_ping(c, 0, NULL, &e_));
    kill(pid, SIGTERM);
    herd_reply *r;
    OK(herd_client_wait(c, id, -1, &r, &e_));
    cr_assert(r->ok, "the step in flight was answered: %s %s", proto_code_name(r->error.code), r->error.message);
    herd_reply_destroy(&r);
    OK(herd_client_wait(c, id2, -1, &r, &e_));
    cr_assert(r->ok, "the second step in flight was answered: %s %s", proto_code_name(r->error.code), r->error.message);
    herd_reply_destroy(&r);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
    free(act);
    herd_client_destroy(&c);
    unlink(ep + 6);
}

/* ---- memory over make/close cycles ---- */

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

Test(server, make_close_cycles_do_not_grow_memory, .timeout = 120)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("RSS is not meaningful under AddressSanitizer (its quarantine keeps freed memory); "
                 "leaks are checked by LeakSanitizer and server/tools/valgrind_check.sh");
#endif
    srv_thread *t = start();
    herd_client *c = connect_to(t);
    float act[16 * 12] = {0};
    long base = 0;
    for (int k = 0; k < 300; k++) {
        herd_session s;
        make(c, k % 2 ? "anymal_c-walk" : "anymal_c-stand", 16, NULL, 0, (uint64_t)k, (env_autoreset)(k % 3), &s);
        OK(herd_client_reset(c, &s, -1, NULL, NULL, NULL, &e_));
        OK(herd_client_step(c, &s, -1, NULL, act, 0, NULL, &e_));
        OK(herd_client_close(c, &s, &e_));
        if (k == 49) base = rss_kb();
    }
    long end = rss_kb();
    cr_log_info("RSS after 50 cycles %ld kB, after 300 %ld kB", base, end);
    cr_assert_lt(end - base, 2048, "RSS grew by %ld kB over 250 make/close cycles", end - base);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- other socket types ---- */

Test(server, req_sockets_work_too)
{
    srv_thread *t = start();
    void *ctx = zmq_ctx_new();
    void *req = zmq_socket(ctx, ZMQ_REQ);
    cr_assert_eq(zmq_connect(req, srv_thread_endpoint(t)), 0);
    proto_buf b;
    proto_buf_init(&b);
    proto_request q;
    proto_request_init(&q);
    q.op = PROTO_OP_PING;
    q.id = 42;
    proto_encode_request(&b, &q);
    cr_assert_eq(zmq_send(req, b.data, b.len, 0), (int)b.len);
    char buf[256];
    int n = zmq_recv(req, buf, sizeof buf, 0);
    cr_assert_gt(n, 0);
    proto_reply r;
    proto_error e;
    cr_assert_eq(proto_decode_reply(buf, (size_t)n, &r, &e), PROTO_OK);
    cr_assert(r.ok && r.id == 42);
    proto_reply_clear(&r);
    proto_buf_free(&b);
    zmq_close(req);
    zmq_ctx_term(ctx);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(server, ipc_transport)
{
    srv_config cfg;
    test_config(&cfg);
    snprintf(cfg.bind, sizeof cfg.bind, "ipc:///tmp/herd-test-ipc-%d.sock", (int)getpid());
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    OK(herd_client_ping(c, 0, NULL, &e_));
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- mutated requests through a live server ---- */

Test(server, mutated_requests_never_stop_the_server, .timeout = 120)
{
    srv_config cfg;
    test_config(&cfg);
    cfg.max_worlds_per_session = 64;
    cfg.max_worlds = 256;
    srv_thread *t = start_with(&cfg);
    herd_client *c = connect_to(t);
    herd_session s;
    make(c, "anymal_c-walk", 8, NULL, 0, 1, ENV_AUTORESET_SAME_STEP, &s);
    float act[8 * 12] = {0};
    int32_t ids[3] = {5, 1, 7};
    uint64_t seeds[3] = {1, 2, 3};
    proto_buf seed[4];
    proto_request q;
    for (int i = 0; i < 4; i++) {
        proto_buf_init(&seed[i]);
        proto_request_init(&q);
        q.id = 1000 + (uint64_t)i;
        name_session(&q, &s);
        if (i == 0) {
            q.op = PROTO_OP_STEP;
            q.world_ids = ids;
            q.nids = 3;
            q.has_actions = 1;
            q.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {3, 12}, (const uint8_t *)act, 3 * 12 * 4};
        } else if (i == 1) {
            q.op = PROTO_OP_RESET;
            q.world_ids = ids;
            q.nids = 3;
            q.seeds = seeds;
            q.nseeds = 3;
        } else if (i == 2) {
            q.op = PROTO_OP_STEP;
            q.has_actions = 1;
            q.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {8, 12}, (const uint8_t *)act, sizeof act};
        } else {
            q.op = PROTO_OP_STATS;
        }
        proto_encode_request(&seed[i], &q);
    }
    uint64_t x = 0x1234567887654321ull;
    uint8_t buf[2048];
    int replies = 0;
    for (int it = 0; it < 3000; it++) {
        proto_buf *sb = &seed[it % 4];
        size_t n = sb->len;
        memcpy(buf, sb->data, n);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int muts = 1 + (int)(x % 3);
        for (int m = 0; m < muts && n > 0; m++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t pos = (size_t)(x >> 20) % n;
            switch (x % 4) {
            case 0: buf[pos] ^= (uint8_t)(1u << (x >> 40 & 7)); break;
            case 1: buf[pos] = (uint8_t)(x >> 24); break;
            case 2: n = pos; break;
            default: if (n < sizeof buf) buf[n++] = (uint8_t)(x >> 32); break;
            }
        }
        herd_error e;
        cr_assert_eq(herd_client_send_raw(c, 0, buf, n, &e), 0);
        herd_reply *r;
        /* every message gets exactly one reply (ids may be mutated too) */
        cr_assert_eq(herd_client_recv(c, 10000, &r, &e), 0, "message %d: %s", it, e.message);
        replies++;
        herd_reply_destroy(&r);
    }
    cr_assert_eq(replies, 3000);
    OK(herd_client_ping(c, 0, NULL, &e_));
    herd_stats st;
    OK(herd_client_stats(c, 0, 0, &st, &e_));
    cr_assert_gt(st.errors, 1000);
    for (int i = 0; i < 4; i++) proto_buf_free(&seed[i]);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

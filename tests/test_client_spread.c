/* test_client_spread.c — the C client over several servers: worlds spread over 3 in-process servers give
 * bit-for-bit the results of one server (explicit per-world seeds), DNS expansion of endpoints, more than
 * 16 endpoints, a dead server named in the error, actions checked before any server steps. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "herd_client.h"
#include "srv_server.h"

#include "helpers/server_start.h"


typedef struct {
    herd_step_out o;
    size_t n, od, nt;
} outbuf;

static void ob_alloc(outbuf *b, int n, int od, int nt)
{
    memset(b, 0, sizeof *b);
    b->n = (size_t)n, b->od = (size_t)od, b->nt = (size_t)nt;
    b->o.obs = calloc(b->n * b->od, 4);
    b->o.reward = calloc(b->n, 4);
    b->o.terminated = calloc(b->n, 1);
    b->o.truncated = calloc(b->n, 1);
    b->o.physics_reset = calloc(b->n, 1);
    b->o.episode_done = calloc(b->n, 1);
    b->o.episode_return = calloc(b->n, 4);
    b->o.episode_length = calloc(b->n, 4);
    b->o.episode_terms = calloc(b->n * b->nt, 4);
    b->o.autoreset = calloc(b->n, 1);
    b->o.reward_terms = calloc(b->n * b->nt, 4);
}

static void ob_free(outbuf *b)
{
    free(b->o.obs), free(b->o.reward), free(b->o.terminated), free(b->o.truncated), free(b->o.physics_reset);
    free(b->o.episode_done), free(b->o.episode_return), free(b->o.episode_length), free(b->o.episode_terms);
    free(b->o.autoreset), free(b->o.reward_terms);
}

static void same(const outbuf *a, const outbuf *b, const char *what, int step)
{
    size_t n = a->n, od = a->od, nt = a->nt;
#define SAME(f, bytes) cr_assert(!memcmp(a->o.f, b->o.f, bytes), "%s: step %d: %s differs", what, step, #f)
    SAME(obs, n * od * 4);
    SAME(reward, n * 4);
    SAME(terminated, n);
    SAME(truncated, n);
    SAME(physics_reset, n);
    SAME(episode_done, n);
    SAME(episode_return, n * 4);
    SAME(episode_length, n * 4);
    SAME(episode_terms, n * nt * 4);
    SAME(autoreset, n);
    SAME(reward_terms, n * nt * 4);
#undef SAME
}

/* deterministic actions in [-1.5, 1.5], a function of (global world, step, joint) */
static void actions(float *a, int n, int ad, int step)
{
    for (int i = 0; i < n * ad; i++) a[i] = (float)(1.5 * sin(0.7 * step + 0.13 * i));
}

Test(spread, three_servers_bit_for_bit_equal_to_one, .timeout = 120)
{
    enum { N = 301, STEPS = 20 };       /* 101 + 100 + 100 */
    const uint64_t seed = 1234;
    srv_thread *t[3] = {test_server_start(2), test_server_start(1), test_server_start(3)};
    const char *eps[3] = {srv_thread_endpoint(t[0]), srv_thread_endpoint(t[1]), srv_thread_endpoint(t[2])};
    herd_error e;
    herd_client *c3 = herd_client_new(eps, 3, 20000, &e), *c1 = herd_client_new(&eps[1], 1, 20000, &e);
    cr_assert(c3 && c1, "%s", e.message);
    cr_assert_eq(herd_client_nservers(c3), 3);
    env_kv kv[1] = {{"episode_seconds", 0.2}};     /* 10 steps: truncations and autoresets within 20 steps */
    herd_spread s3, s1;
    cr_assert_eq(herd_client_make_spread(c3, "anymal_c-walk", N, kv, 1, seed, ENV_AUTORESET_NEXT_STEP, &s3, &e), 0, "%s",
                 e.message);
    cr_assert_eq(herd_client_make_spread(c1, "anymal_c-walk", N, kv, 1, seed, ENV_AUTORESET_NEXT_STEP, &s1, &e), 0, "%s",
                 e.message);
    cr_assert_eq(s3.nparts, 3);
    cr_assert(s3.offset[0] == 0 && s3.offset[1] == 101 && s3.offset[2] == 201);
    cr_assert(s3.part[0].num_worlds == 101 && s3.part[1].num_worlds == 100 && s3.part[2].num_worlds == 100);
    for (int k = 0; k < 3; k++) cr_assert_eq(s3.part[k].server, k);
    cr_assert(s1.nparts == 1 && s1.part[0].num_worlds == N && s1.num_worlds == N);
    const int od = s3.obs_dim, ad = s3.act_dim, nt = s3.nterms;
    cr_assert(od > 0 && ad > 0 && nt > 0 && s3.autoreset == ENV_AUTORESET_NEXT_STEP);

    /* the single-server reference, a third way: one plain session reset with seeds seed + i */
    herd_session p;
    cr_assert_eq(herd_client_make(c1, 0, "anymal_c-walk", N, kv, 1, 99, ENV_AUTORESET_NEXT_STEP, &p, &e), 0, "%s",
                 e.message);
    uint64_t *seeds = malloc(N * sizeof *seeds);
    for (int i = 0; i < N; i++) seeds[i] = seed + (uint64_t)i;

    outbuf b3, b1, bp;
    ob_alloc(&b3, N, od, nt), ob_alloc(&b1, N, od, nt), ob_alloc(&bp, N, od, nt);
    cr_assert_eq(herd_client_reset_spread(c3, &s3, seed, b3.o.obs, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_reset_spread(c1, &s1, seed, b1.o.obs, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_reset(c1, &p, -1, NULL, seeds, bp.o.obs, &e), 0, "%s", e.message);
    cr_assert(!memcmp(b3.o.obs, b1.o.obs, (size_t)N * od * 4), "reset obs differ");
    cr_assert(!memcmp(b3.o.obs, bp.o.obs, (size_t)N * od * 4), "reset obs differ from explicit seeds");
    /* worlds differ from each other (the seeds are per world) */
    cr_assert(memcmp(b3.o.obs, b3.o.obs + od, (size_t)od * 4));

    float *act = malloc((size_t)N * ad * 4);
    int ended = 0;
    for (int k = 0; k < STEPS; k++) {
        actions(act, N, ad, k);
        cr_assert_eq(herd_client_step_spread(c3, &s3, act, 1, &b3.o, &e), 0, "%s", e.message);
        cr_assert_eq(herd_client_step_spread(c1, &s1, act, 1, &b1.o, &e), 0, "%s", e.message);
        cr_assert_eq(herd_client_step(c1, &p, -1, NULL, act, 1, &bp.o, &e), 0, "%s", e.message);
        same(&b3, &b1, "3 servers vs 1", k);
        same(&b3, &bp, "3 servers vs a plain session", k);
        for (int i = 0; i < N; i++) ended += b3.o.episode_done[i];
    }
    cr_assert_geq(ended, N, "episodes ended (%d), so autoresets were compared too", ended);

    /* every server holds its slice */
    herd_stats st;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(herd_client_stats(c3, k, s3.part[k].id, &st, &e), 0, "%s", e.message);
        cr_assert_eq(st.num_worlds, s3.part[k].num_worlds);
        cr_assert_eq(st.session_steps, (uint64_t)STEPS * s3.part[k].num_worlds, "world-steps");
    }
    cr_assert_eq(herd_client_close_spread(c3, &s3, &e), 0, "%s", e.message);
    cr_assert(s3.nparts == 0 && s3.part == NULL);
    cr_assert_eq(herd_client_close_spread(c1, &s1, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close(c1, &p, &e), 0, "%s", e.message);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(herd_client_stats(c3, k, 0, &st, &e), 0, "%s", e.message);
        cr_assert_eq(st.sessions, 0, "server %d: sessions closed", k);
    }
    ob_free(&b3), ob_free(&b1), ob_free(&bp);
    free(act), free(seeds);
    herd_client_destroy(&c3);
    herd_client_destroy(&c1);
    for (int k = 0; k < 3; k++) srv_thread_stop(&t[k]);
}

Test(spread, fewer_worlds_than_servers, .timeout = 60)
{
    srv_thread *t[3] = {test_server_start(1), test_server_start(1), test_server_start(1)};
    const char *eps[3] = {srv_thread_endpoint(t[0]), srv_thread_endpoint(t[1]), srv_thread_endpoint(t[2])};
    herd_error e;
    herd_client *c = herd_client_new(eps, 3, 20000, &e);
    herd_spread s;
    cr_assert_eq(herd_client_make_spread(c, "anymal_c-stand", 2, NULL, 0, 5, ENV_AUTORESET_SAME_STEP, &s, &e), 0, "%s",
                 e.message);
    cr_assert(s.nparts == 2 && s.offset[1] == 1 && s.part[0].num_worlds == 1 && s.part[1].num_worlds == 1);
    float obs[2 * 64], act[2 * 32] = {0}, fin[2 * 64];
    uint8_t mask[2];
    cr_assert_leq(s.obs_dim, 64);
    cr_assert_eq(herd_client_reset_spread(c, &s, 5, obs, &e), 0, "%s", e.message);
    herd_step_out o = {.obs = obs, .final_obs = fin, .final_mask = mask};
    cr_assert_eq(herd_client_step_spread(c, &s, act, 0, &o, &e), 0, "%s", e.message);
    /* NaN: refused before any server steps */
    act[s.act_dim + 3] = NAN;
    cr_assert_eq(herd_client_step_spread(c, &s, act, 0, &o, &e), PROTO_E_NON_FINITE);
    cr_assert(strstr(e.message, "world 1"), "%s", e.message);
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, 0, s.part[0].id, &st, &e), 0);
    cr_assert_eq(st.session_steps, 1, "world-steps: one step of one world, the NaN step not sent");
    cr_assert_eq(herd_client_close_spread(c, &s, &e), 0, "%s", e.message);
    herd_client_destroy(&c);
    for (int k = 0; k < 3; k++) srv_thread_stop(&t[k]);
}

Test(spread, a_dead_server_is_named, .timeout = 60)
{
    srv_thread *a = test_server_start(1), *b = test_server_start(1);
    char epb[256];
    snprintf(epb, sizeof epb, "%s", srv_thread_endpoint(b));
    const char *eps[2] = {srv_thread_endpoint(a), epb};
    herd_error e;
    herd_client *c = herd_client_new(eps, 2, 20000, &e);
    herd_spread s;
    cr_assert_eq(herd_client_make_spread(c, "anymal_c-walk", 10, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s",
                 e.message);
    float *obs = calloc(10 * (size_t)s.obs_dim, 4), *act = calloc(10 * (size_t)s.act_dim, 4);
    cr_assert_eq(herd_client_reset_spread(c, &s, 1, obs, &e), 0, "%s", e.message);
    srv_thread_stop(&b);
    herd_client_set_timeout(c, 300);
    double t0 = test_mono_ms();
    herd_step_out o = {.obs = obs};
    int rc = herd_client_step_spread(c, &s, act, 0, &o, &e);
    double dt = test_mono_ms() - t0;
    cr_assert_eq(rc, PROTO_E_TIMEOUT, "%s", e.message);
    cr_assert(strstr(e.message, epb) && strstr(e.message, "(step)") && strstr(e.message, "300 ms"), "%s", e.message);
    cr_assert(dt >= 250 && dt < 2000, "waited %.0f ms", dt);
    /* the live server still answers; close reports the dead one */
    cr_assert_eq(herd_client_ping(c, 0, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close_spread(c, &s, &e), PROTO_E_TIMEOUT);
    cr_assert(strstr(e.message, epb), "%s", e.message);
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, 0, 0, &st, &e), 0, "%s", e.message);
    cr_assert_eq(st.sessions, 0);
    free(obs), free(act);
    herd_client_destroy(&c);
    srv_thread_stop(&a);
}

/* Only the poll sizing is tested: 19 dead endpoints and a live one at index 19 (beyond the old 16). */
Test(spread, more_than_16_endpoints, .timeout = 60)
{
    srv_thread *t = test_server_start(1);
    enum { M = 20 };
    const char *eps[M];
    for (int i = 0; i < M - 1; i++) eps[i] = "tcp://127.0.0.1:9";   /* discard port: nothing listens */
    eps[M - 1] = srv_thread_endpoint(t);
    herd_error e;
    herd_client *c = herd_client_new(eps, M, 5000, &e);
    cr_assert(c, "%s", e.message);
    cr_assert_eq(herd_client_nservers(c), M);
    cr_assert_str_eq(herd_client_endpoint(c, M - 1), eps[M - 1]);
    cr_assert_eq(herd_client_ping(c, M - 1, NULL, &e), 0, "%s", e.message);
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, M - 1, &h, &e), 0, "%s", e.message);
    herd_hello_free(&h);
    /* a spread over them: a TIMEOUT naming a dead endpoint, and the live server's session is closed */
    herd_client_set_timeout(c, 300);
    herd_spread s;
    double t0 = test_mono_ms();
    int rc = herd_client_make_spread(c, "anymal_c-walk", 40, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e);
    cr_assert_eq(rc, PROTO_E_TIMEOUT, "%s", e.message);
    cr_assert(strstr(e.message, "tcp://127.0.0.1:9 ") && strstr(e.message, "(make)"), "%s", e.message);
    /* one timeout for all servers: a timeout per dead server would take at least 19 x 300 ms; the bound is that,
     * not a guess at this machine's speed */
    const double waited = test_mono_ms() - t0;
    cr_assert(waited >= 300 && waited < (M - 1) * 300.0, "waited %.0f ms: one timeout for all servers", waited);
    cr_assert(s.nparts == 0 && s.part == NULL);
    herd_client_set_timeout(c, 5000);
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, M - 1, 0, &st, &e), 0, "%s", e.message);
    cr_assert_eq(st.sessions, 0, "the session made on the live server was closed");
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

Test(spread, dns_names_are_expanded, .timeout = 60)
{
    /* literal IPs, wildcards, ipc:// and names that do not parse as tcp://NAME:PORT are kept */
    const char *keep[] = {"tcp://127.0.0.1:5555", "ipc:///tmp/herd.sock", "tcp://*:5555", "tcp://[::1]:5555",
                          "inproc://x", "tcp://localhost:*"};
    char **out;
    int n;
    herd_error e;
    cr_assert_eq(herd_expand_endpoints(keep, 6, &out, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 6);
    for (int i = 0; i < 6; i++) cr_assert_str_eq(out[i], keep[i]);
    herd_endpoints_free(out, n);

    /* localhost: IPv4 first (the server binds 127.0.0.1 only, even where localhost is also ::1) */
    srv_thread *t = test_server_start(1);
    const char *ep = srv_thread_endpoint(t);
    const char *port = strrchr(ep, ':') + 1;
    char name[128], ip[128];
    snprintf(name, sizeof name, "tcp://localhost:%s", port);
    snprintf(ip, sizeof ip, "tcp://127.0.0.1:%s", port);
    const char *in[1] = {name};
    cr_assert_eq(herd_expand_endpoints(in, 1, &out, &n, &e), 0, "%s", e.message);
    cr_assert_geq(n, 1);
    for (int i = 0; i < n; i++)
        cr_assert(!strcmp(out[i], name) || !strncmp(out[i], "tcp://127.", 10), "localhost expanded to %s", out[i]);
    herd_endpoints_free(out, n);

    herd_client *c = herd_client_new(in, 1, 5000, &e);
    cr_assert(c, "%s", e.message);
    cr_assert_geq(herd_client_nservers(c), 1);
    herd_spread s;
    cr_assert_eq(herd_client_make_spread(c, "anymal_c-walk", 8, NULL, 0, 3, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s",
                 e.message);
    float obs[8 * 64], act[8 * 32] = {0};
    cr_assert_leq(s.obs_dim, 64);
    cr_assert_eq(herd_client_reset_spread(c, &s, 3, obs, &e), 0, "%s", e.message);
    herd_step_out o = {.obs = obs};
    cr_assert_eq(herd_client_step_spread(c, &s, act, 0, &o, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close_spread(c, &s, &e), 0, "%s", e.message);
    herd_client_destroy(&c);

    /* a name and its address given together: two endpoints (no deduplication across the list) */
    const char *both[2] = {name, ip};
    c = herd_client_new(both, 2, 5000, &e);
    cr_assert(c, "%s", e.message);
    cr_assert_geq(herd_client_nservers(c), 2);
    cr_assert_eq(herd_client_ping(c, herd_client_nservers(c) - 1, NULL, &e), 0, "%s", e.message);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

/* The terrain curriculum's state reported through every layer: env_terrain_tiles against the worlds' own tiles, the
 * spec's terrain_kinds, info.terrain_level / info.terrain_kind in the server's reset and step replies (the C client's
 * views and copies), flat tasks without them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "env_curriculum.h"
#include "env_terrain.h"
#include "herd_client.h"
#include "srv_server.h"

#include "helpers/server_start.h"

#define ROUGH "anymal_c-rough"

static env_t *mk(const char *name, int n, const env_kv *kv, int nkv, uint64_t seed, env_autoreset mode)
{
    char err[512];
    env_t *e = env_new(name, n, kv, nkv, seed, mode, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

/* world i's level as its critic observation states it (its last entry) */
static int critic_level(const env_t *e, int i)
{
    static float c[1024];
    int32_t id = i;
    env_critic_obs(e, 0, 1, &id, c);
    return (int)c[env_get_spec(e)->critic_dim - 1];
}

/* deterministic pseudo-random actions in [-1, 1] */
static void actions(float *a, int n, int step)
{
    for (int i = 0; i < n; i++) {
        unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u);
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        a[i] = (float)((x % 2001) / 1000.0 - 1.0);
    }
}

Test(levels, spec_names_the_tile_kinds)
{
    const env_spec *rough = env_registry_spec(env_registry_find(ROUGH));
    cr_assert_eq(rough->nterrain_kinds, ENV_TILE_COUNT);
    for (int k = 0; k < ENV_TILE_COUNT; k++) cr_assert_str_eq(rough->terrain_kinds[k], env_tile_name(k));
    cr_assert_str_eq(rough->terrain_kinds[0], "slope_up");
    cr_assert_str_eq(rough->terrain_kinds[5], "obstacles");
    for (int i = 0; i < env_registry_count(); i++)
        if (strcmp(env_registry_spec(i)->name, ROUGH))
            cr_assert_eq(env_registry_spec(i)->nterrain_kinds, 0, "%s is flat", env_registry_spec(i)->name);
}

/* Every world's level is its critic's terrain_level, its kind its column's tile kind; -1 before the first reset;
 * the mean and per-kind means of env_terrain_levels are those of the tiles reported; a subset in any order. */
Test(levels, tiles_are_the_worlds, .timeout = 120)
{
    enum { N = 60 };
    env_kv kv[] = {{"episode_seconds", 0.2}};
    env_t *e = mk(ROUGH, N, kv, 1, 5, ENV_AUTORESET_NEXT_STEP);
    int32_t level[N], kind[N];
    cr_assert_eq(env_terrain_tiles(e, 0, N, NULL, level, kind), 0);
    for (int i = 0; i < N; i++) cr_assert(level[i] == -1 && kind[i] == -1, "world %d never reset", i);
    static float obs[N * 235], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    char err[256];
    env_terrain_config tc = env_terrain_config_default();
    env_terrain *t = env_terrain_new(&tc, 5, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    int moved = 0, before[N];
    for (int step = 0; step < 30; step++) {
        cr_assert_eq(env_terrain_tiles(e, 0, N, NULL, level, kind), 0);
        double sum = 0, ks[ENV_TERRAIN_KINDS] = {0};
        int kn[ENV_TERRAIN_KINDS] = {0};
        for (int i = 0; i < N; i++) {
            cr_assert_eq(level[i], critic_level(e, i), "step %d world %d", step, i);
            env_terrain_tile tile;
            cr_assert_eq(env_terrain_tile_at(t, level[i], env_curriculum_column(i, N, ENV_TERRAIN_COLS), &tile), 0);
            cr_assert_eq(kind[i], tile.kind, "world %d: its column's kind", i);
            sum += level[i], ks[kind[i]] += level[i], kn[kind[i]]++;
            if (step && level[i] != before[i]) moved++;
            before[i] = level[i];
        }
        double mean, by[ENV_TERRAIN_KINDS];
        int cnt[ENV_TERRAIN_KINDS];
        cr_assert_eq(env_terrain_levels(e, &mean, by, cnt), N);
        cr_assert_float_eq(mean, sum / N, 1e-12);
        for (int k = 0; k < ENV_TERRAIN_KINDS; k++) {
            cr_assert_eq(cnt[k], kn[k]);
            if (kn[k]) cr_assert_float_eq(by[k], ks[k] / kn[k], 1e-12);
        }
        actions(act, N * 12, step);
        env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
    }
    cr_assert_gt(moved, 0, "0.2 s episodes end and move levels at their resets");
    int32_t ids[4] = {57, 3, 30, 11}, sl[4], sk[4];
    cr_assert_eq(env_terrain_tiles(e, 0, 4, ids, sl, sk), 0);
    cr_assert_eq(env_terrain_tiles(e, 0, N, NULL, level, kind), 0);
    for (int i = 0; i < 4; i++) cr_assert(sl[i] == level[ids[i]] && sk[i] == kind[ids[i]]);
    env_terrain_destroy(&t);
    env_destroy(&e);

    env_t *w = mk("anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP);
    level[0] = 77;
    cr_assert_eq(env_terrain_tiles(w, 0, 2, NULL, level, kind), -1, "walk has no terrain");
    cr_assert_eq(level[0], 77, "nothing written");
    env_destroy(&w);
}

/* The server's reset and step replies of a rough session carry info.terrain_level and info.terrain_kind, the env's
 * in-process tiles (2 workers against one call), also for a subset; the C client reads them as views and copies. */
Test(levels_server, reset_and_step_replies_carry_the_tiles, .timeout = 180)
{
    srv_thread *t = test_server_start(2);
    const char *ep = srv_thread_endpoint(t);
    herd_error err;
    herd_client *c = herd_client_new(&ep, 1, 20000, &err);
    cr_assert_not_null(c, "%s", err.message);
    enum { N = 40 };
    env_kv kv[] = {{"episode_seconds", 1.0}};
    herd_make_opts o = {.config = kv, .nconfig = 1, .seed = 77, .autoreset = ENV_AUTORESET_NEXT_STEP};
    herd_session s;
    cr_assert_eq(herd_client_make_opts(c, 0, ROUGH, N, &o, &s, &err), 0, "%s", err.message);
    cr_assert_eq(s.spec.nterrain_kinds, ENV_TILE_COUNT, "the make reply's spec lists the kinds");
    for (int k = 0; k < ENV_TILE_COUNT; k++) cr_assert_str_eq(s.spec.terrain_kinds[k], env_tile_name(k));
    env_t *e = mk(ROUGH, N, kv, 1, 77, ENV_AUTORESET_NEXT_STEP);
    static float obs[N * 235], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    int32_t level[N], kind[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    env_terrain_tiles(e, 0, N, NULL, level, kind);

    uint64_t id = herd_client_reset_send(c, &s, -1, NULL, NULL, &err);
    herd_reply *r;
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0, "%s", err.message);
    const int32_t *rl = NULL, *rk = NULL;
    cr_assert_eq(herd_reply_terrain(r, &s, N, &rl, &rk, &err), 0, "%s", err.message);
    cr_assert_eq((uintptr_t)rl % 8, 0, "a view into the reply, aligned");
    cr_assert_eq(memcmp(rl, level, sizeof level), 0, "reset: the server's levels are the env's");
    cr_assert_eq(memcmp(rk, kind, sizeof kind), 0, "reset: the server's kinds are the env's");
    cr_assert_neq(herd_reply_terrain(r, &s, N + 1, &rl, &rk, &err), 0, "the shape is checked");
    herd_reply_destroy(&r);

    int32_t gl[N], gk[N];
    static float gobs[N * 235];
    int changed = 0;
    for (int k = 0; k < 56; k++) {
        actions(act, N * 12, k);
        env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
        int32_t prev[N];
        memcpy(prev, level, sizeof prev);
        env_terrain_tiles(e, 0, N, NULL, level, kind);
        for (int i = 0; i < N; i++) changed += prev[i] != level[i];
        herd_step_out out = {.obs = gobs, .terrain_level = gl, .terrain_kind = gk};
        cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &out, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(gobs, obs, sizeof gobs), 0, "step %d: the same worlds", k);
        cr_assert_eq(memcmp(gl, level, sizeof gl), 0, "step %d: the server's levels are the env's", k);
        cr_assert_eq(memcmp(gk, kind, sizeof gk), 0, "step %d: the server's kinds are the env's", k);
    }
    cr_assert_gt(changed, 0, "levels moved at the autoresets");
    /* a subset: rows in the order of the ids */
    int32_t ids[3] = {33, 0, 17};
    float sub_act[3 * 12] = {0};
    id = herd_client_step_send(c, &s, 3, ids, sub_act, 0, &err);
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0, "%s", err.message);
    cr_assert_eq(herd_reply_terrain(r, &s, 3, &rl, &rk, &err), 0, "%s", err.message);
    env_step(e, 0, 3, ids, sub_act, obs, rew, term, trunc, NULL);
    int32_t sl[3], sk[3];
    env_terrain_tiles(e, 0, 3, ids, sl, sk);
    cr_assert(!memcmp(rl, sl, sizeof sl) && !memcmp(rk, sk, sizeof sk), "subset rows follow the ids");
    cr_assert(rk[0] == kind[33] && rk[1] == kind[0] && rk[2] == kind[17]);
    herd_reply_destroy(&r);
    env_destroy(&e);
    herd_client_close(c, &s, &err);

    /* a flat task: no terrain in its spec or its replies */
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &err), 0);
    cr_assert_eq(s.spec.nterrain_kinds, 0);
    id = herd_client_reset_send(c, &s, -1, NULL, NULL, &err);
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0);
    cr_assert_null(proto_value_get(r->msg.root, "info.terrain_level"));
    cr_assert_eq(herd_reply_terrain(r, &s, 2, &rl, &rk, &err), PROTO_E_BAD_REPLY);
    herd_reply_destroy(&r);
    float wact[2 * 12] = {0};
    id = herd_client_step_send(c, &s, -1, NULL, wact, 0, &err);
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0);
    cr_assert(r->ok);
    cr_assert_null(proto_value_get(r->msg.root, "info.terrain_level"));
    cr_assert_null(proto_value_get(r->msg.root, "info.terrain_kind"));
    herd_reply_destroy(&r);
    herd_client_close(c, &s, &err);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

/* The value of the exposition line that starts with `series` (name and labels) and a space; NAN when absent. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *l = text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, series, n) && l[n] == ' ') return strtod(l + n + 1, NULL);
    cr_assert_fail("no metric %s", series);
    return NAN;
}

/* The stats of a rough session and the server's Prometheus series: its mean and per-kind levels and counts equal the
 * levels the replies reported; two sessions aggregate in the metrics; a closed session leaves them. */
Test(levels_server, stats_and_metrics_report_the_levels, .timeout = 180)
{
    srv_config cfg;
    test_server_config(&cfg, 2);
    snprintf(cfg.metrics, sizeof cfg.metrics, "127.0.0.1:0");
    srv_thread *t = test_server_start_with(&cfg);
    const int port = srv_server_metrics_port(srv_thread_server(t));
    cr_assert_gt(port, 0);
    const char *ep = srv_thread_endpoint(t);
    herd_error err;
    herd_client *c = herd_client_new(&ep, 1, 20000, &err);
    cr_assert_not_null(c, "%s", err.message);

    /* before any rough session: the kinds are listed, with no worlds */
    char *m = test_http_get(port, "/metrics");
    cr_assert_not_null(m);
    cr_assert(strstr(m, "# TYPE herd_terrain_level gauge\n"), "the terrain series are exposed");
    cr_assert(strstr(m, "herd_terrain_level{kind=\"stairs_up\"} NaN\n"));
    cr_assert_eq(metric(m, "herd_terrain_worlds{kind=\"obstacles\"}"), 0);
    free(m);

    enum { NA = 40, NB = 20 };
    env_kv kv[] = {{"episode_seconds", 1.0}};
    herd_make_opts o = {.config = kv, .nconfig = 1, .seed = 3, .autoreset = ENV_AUTORESET_NEXT_STEP};
    herd_session a, b;
    cr_assert_eq(herd_client_make_opts(c, 0, ROUGH, NA, &o, &a, &err), 0, "%s", err.message);
    o.seed = 4;
    cr_assert_eq(herd_client_make_opts(c, 0, ROUGH, NB, &o, &b, &err), 0, "%s", err.message);
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, 0, a.id, &st, &err), 0, "%s", err.message);
    cr_assert(st.nterrain_kinds == ENV_TILE_COUNT && st.terrain_worlds == 0 && isnan(st.terrain_level),
              "no world reset yet: %d kinds, %lld worlds", st.nterrain_kinds, (long long)st.terrain_worlds);

    static float obs[NA * 235], act[NA * 12];
    int32_t la[NA], ka[NA], lb[NB], kb[NB];
    cr_assert_eq(herd_client_reset(c, &b, -1, NULL, NULL, NULL, &err), 0);
    herd_step_out ob = {.terrain_level = lb, .terrain_kind = kb};
    float actb[NB * 12] = {0};
    cr_assert_eq(herd_client_step(c, &b, -1, NULL, actb, 0, &ob, &err), 0, "%s", err.message);
    cr_assert_eq(herd_client_reset(c, &a, -1, NULL, NULL, obs, &err), 0);
    for (int k = 0; k < 56; k++) {
        actions(act, NA * 12, k);
        herd_step_out out = {.terrain_level = la, .terrain_kind = ka};
        cr_assert_eq(herd_client_step(c, &a, -1, NULL, act, 0, &out, &err), 0, "%s", err.message);
    }
    /* session a: its stats are the levels its last reply reported */
    double sum = 0, ks[ENV_TILE_COUNT] = {0};
    int kn[ENV_TILE_COUNT] = {0};
    for (int i = 0; i < NA; i++) sum += la[i], ks[ka[i]] += la[i], kn[ka[i]]++;
    cr_assert_eq(herd_client_stats(c, 0, a.id, &st, &err), 0, "%s", err.message);
    cr_assert_eq(st.terrain_worlds, NA);
    cr_assert_float_eq(st.terrain_level, sum / NA, 1e-12);
    for (int k = 0; k < ENV_TILE_COUNT; k++) {
        cr_assert_str_eq(st.terrain_kinds[k], env_tile_name(k));
        cr_assert_eq(st.kind_worlds[k], kn[k], "kind %d", k);
        if (kn[k]) cr_assert_float_eq(st.kind_level[k], ks[k] / kn[k], 1e-12, "kind %d", k);
        else cr_assert(isnan(st.kind_level[k]));
    }
    /* the metrics: both sessions */
    double all = sum, aks[ENV_TILE_COUNT];
    int akn[ENV_TILE_COUNT];
    memcpy(aks, ks, sizeof aks);
    memcpy(akn, kn, sizeof akn);
    for (int i = 0; i < NB; i++) all += lb[i], aks[kb[i]] += lb[i], akn[kb[i]]++;
    m = test_http_get(port, "/metrics");
    cr_assert_not_null(m);
    cr_assert_float_eq(metric(m, "herd_terrain_level_mean"), all / (NA + NB), 1e-12);
    for (int k = 0; k < ENV_TILE_COUNT; k++) {
        char series[96];
        snprintf(series, sizeof series, "herd_terrain_worlds{kind=\"%s\"}", env_tile_name(k));
        cr_assert_eq(metric(m, series), akn[k], "%s", series);
        snprintf(series, sizeof series, "herd_terrain_level{kind=\"%s\"}", env_tile_name(k));
        if (akn[k]) cr_assert_float_eq(metric(m, series), aks[k] / akn[k], 1e-12, "%s", series);
    }
    free(m);
    /* a closed session leaves the series: b's alone remain */
    cr_assert_eq(herd_client_close(c, &a, &err), 0);
    m = test_http_get(port, "/metrics");
    double bsum = 0;
    for (int i = 0; i < NB; i++) bsum += lb[i];
    cr_assert_float_eq(metric(m, "herd_terrain_level_mean"), bsum / NB, 1e-12);
    double wsum = 0;
    for (int k = 0; k < ENV_TILE_COUNT; k++) {
        char series[96];
        snprintf(series, sizeof series, "herd_terrain_worlds{kind=\"%s\"}", env_tile_name(k));
        wsum += metric(m, series);
    }
    cr_assert_eq(wsum, NB);
    free(m);
    /* a flat session's stats have no terrain */
    herd_session w;
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &w, &err), 0);
    cr_assert_eq(herd_client_stats(c, 0, w.id, &st, &err), 0, "%s", err.message);
    cr_assert(st.has_session && st.nterrain_kinds == 0);
    herd_client_close(c, &w, &err);
    herd_client_close(c, &b, &err);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

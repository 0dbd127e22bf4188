/* anymal_c-rough: the spec, the terrain field shared by an env's worlds, spawning on the column's tiles, the level
 * curriculum at resets, the height scan in the observation, the base-contact termination and the level range. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "env_curriculum.h"
#include "env_internal.h"
#include "env_terrain.h"
#include "sim_model.h"

#define ROUGH "anymal_c-rough"

static env_t *mk(int n, const env_kv *kv, int nkv, uint64_t seed)
{
    char err[512];
    env_t *e = env_new(ROUGH, n, kv, nkv, seed, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

static const env_field *obs_field(const env_spec *s, const char *name)
{
    for (int i = 0; i < s->nobs; i++)
        if (!strcmp(s->obs[i].name, name)) return &s->obs[i];
    cr_assert_fail("no observation field '%s'", name);
    return NULL;
}

static int has_key(const env_spec *s, const char *key)
{
    for (int i = 0; i < s->nconfig; i++)
        if (!strcmp(s->config[i].key, key)) return 1;
    return 0;
}

/* The field of env e (the same generator and seed as the task's). */
static env_terrain *field_of(uint64_t seed)
{
    char err[256];
    env_terrain_config c = env_terrain_config_default();
    env_terrain *t = env_terrain_new(&c, seed, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    return t;
}

static double yaw_of(const sim_data *d)
{
    const double *q = d->q + 3;
    return atan2(2 * (q[0] * q[3] + q[1] * q[2]), 1 - 2 * (q[2] * q[2] + q[3] * q[3]));
}

static int level_of(const env_t *e, int i)
{
    float c[400];
    int32_t id = i;
    env_critic_obs(e, 0, 1, &id, c);
    const env_spec *s = env_get_spec(e);
    return (int)c[s->critic_dim - 1];
}

Test(rough, spec)
{
    int t = env_registry_find(ROUGH);
    cr_assert_geq(t, 0);
    const env_spec *s = env_registry_spec(t);
    cr_assert_eq(s->obs_dim, 235);
    cr_assert_eq(s->act_dim, 12);
    const env_field *h = obs_field(s, "height_scan");
    cr_assert(h->offset == 48 && h->size == 187 && h->scale == 5.0f);
    /* walk's 48 first, field for field */
    const env_spec *w = env_registry_spec(env_registry_find("anymal_c-walk"));
    cr_assert_eq(s->nobs, w->nobs + 1);
    for (int i = 0; i < w->nobs; i++)
        cr_assert(!strcmp(s->obs[i].name, w->obs[i].name) && s->obs[i].offset == w->obs[i].offset &&
                  s->obs[i].size == w->obs[i].size && s->obs[i].scale == w->obs[i].scale);
    cr_assert_eq(s->critic_dim, 235 + 8 + 1);
    cr_assert_str_eq(s->critic[s->ncritic - 1].name, "terrain_level");
    cr_assert_eq(s->critic[s->ncritic - 1].offset, 243);
    cr_assert_eq(s->max_episode_steps, 1000);
    const char *keys[] = {"curriculum", "terrain_level_min", "terrain_level_max", "cmd_resample_s", "actuator", "joint_limits"};
    for (int k = 0; k < 6; k++) cr_assert(has_key(s, keys[k]), "%s", keys[k]);
    cr_assert_eq(env_config_choice(ROUGH, "actuator", "lstm", &(double){0}, (char[64]){0}, 64), 0);
    /* bad range: structured error */
    char err[256];
    env_kv bad[] = {{"terrain_level_min", 6}, {"terrain_level_max", 3}};
    cr_assert_null(env_new(ROUGH, 1, bad, 2, 1, ENV_AUTORESET_DISABLED, err, sizeof err));
    cr_assert(strstr(err, "terrain_level_min"), "%s", err);
}

/* The model's terrain is the cell terrain of the session seed's field, and it counts in the fixed bytes. */
Test(rough, the_field_is_the_seeds, .timeout = 120)
{
    env_t *e = mk(2, NULL, 0, 77);
    env_terrain *t = field_of(77);
    const sim_model *m = env_model(e);
    int nx, ny;
    const int16_t *hs = env_terrain_heights(t, &nx, &ny);
    cr_assert_eq(m->terrain.type, SIM_TERRAIN_CELLS);
    cr_assert(m->terrain.nx == nx && m->terrain.ny == ny);
    double vs = env_terrain_config_of(t)->vertical_scale;
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)nx * ny; i++) bad += m->terrain.heights[i] != (float)(hs[i] * vs);
    cr_assert_eq(bad, 0);
    env_cost c;
    env_get_cost(e, &c);
    cr_assert_geq(c.fixed_bytes, env_terrain_bytes(t) + (size_t)nx * ny * 5);
    /* another seed, another field */
    env_t *e2 = mk(1, NULL, 0, 78);
    bad = 0;
    for (size_t i = 0; i < (size_t)nx * ny; i++) bad += env_model(e2)->terrain.heights[i] != m->terrain.heights[i];
    cr_assert_gt(bad, 0);
    env_destroy(&e2);
    env_terrain_destroy(&t);
    env_destroy(&e);
}

/* Worlds spawn on their column's tile (within 1 m of its origin, 0.6 m above it) at a level in [0, 5], yaw 0, and
 * the height-scan part of the observation is env_heightscan_obs of the base pose (noise off). */
Test(rough, spawn_and_height_scan, .timeout = 120)
{
    enum { N = 40 };
    env_kv kv[] = {{"obs_noise", 0}};
    env_t *e = mk(N, kv, 1, 5);
    env_terrain *t = field_of(5);
    static float obs[N * 235];
    env_reset(e, 0, N, NULL, NULL, obs);
    int seen[10] = {0};
    for (int i = 0; i < N; i++) {
        const sim_data *d = env_world_state(e, i);
        int lvl = level_of(e, i), col = env_curriculum_column(i, N, ENV_TERRAIN_COLS);
        cr_assert(lvl >= 0 && lvl <= 5, "world %d level %d", i, lvl);
        seen[lvl]++;
        double o[3];
        cr_assert_eq(env_terrain_origin(t, lvl, col, o), 0);
        cr_assert(fabs(d->q[0] - o[0]) <= 1 && fabs(d->q[1] - o[1]) <= 1, "world %d off its tile", i);
        cr_assert_float_eq(d->q[2], o[2] + 0.6, 1e-12);
        cr_assert_float_eq(yaw_of(d), 0, 1e-12);
        double h[ENV_HEIGHTSCAN_POINTS];
        float want[ENV_HEIGHTSCAN_POINTS];
        env_heightscan(t, d->q, yaw_of(d), h);
        env_heightscan_obs(h, d->q[2], 5.0, want);
        cr_assert_eq(memcmp(obs + (size_t)i * 235 + 48, want, sizeof want), 0, "world %d scan", i);
    }
    int levels = 0;
    for (int k = 0; k < 6; k++) levels += seen[k] > 0;
    cr_assert_geq(levels, 3, "first levels are drawn, not fixed");
    /* after steps, on uneven ground, the scan still follows the pose */
    static float act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    for (int k = 0; k < 10; k++) env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
    for (int i = 0; i < N; i++) {
        const sim_data *d = env_world_state(e, i);
        double h[ENV_HEIGHTSCAN_POINTS];
        float want[ENV_HEIGHTSCAN_POINTS];
        env_heightscan(t, d->q, yaw_of(d), h);
        env_heightscan_obs(h, d->q[2], 5.0, want);
        cr_assert_eq(memcmp(obs + (size_t)i * 235 + 48, want, sizeof want), 0, "world %d scan after steps", i);
    }
    double mean, by[ENV_TERRAIN_KINDS];
    int cnt[ENV_TERRAIN_KINDS], tot = 0;
    cr_assert_eq(env_terrain_levels(e, &mean, by, cnt), N);
    for (int k = 0; k < ENV_TERRAIN_KINDS; k++) tot += cnt[k];
    cr_assert_eq(tot, N);
    cr_assert(mean >= 0 && mean <= 5);
    env_destroy(&e);
    env_terrain_destroy(&t);
    env_t *w = env_new("anymal_c-walk", 1, NULL, 0, 1, ENV_AUTORESET_DISABLED, (char[64]){0}, 64);
    cr_assert_eq(env_terrain_levels(w, &mean, NULL, NULL), -1, "walk has no terrain");
    env_destroy(&w);
}

/* terrain_column_period P: world i stands on the column of i mod P among P worlds, whatever the env's world count,
 * so with seeds periodic in P the worlds of a 3P-world env start exactly as those of a P-world env; by default
 * (legged_gym's blocks over all the worlds) they do not. */
Test(rough, column_period_makes_the_tiles_independent_of_the_count, .timeout = 120)
{
    enum { P = 20, N = 3 * P };
    env_terrain *t = field_of(4);
    uint64_t seeds[N];
    for (int i = 0; i < N; i++) seeds[i] = 100 + (uint64_t)(i % P);
    static float obs[N * 235];
    for (int period = 0; period <= P; period += P) {
        env_kv kv[] = {{"obs_noise", 0}, {"terrain_column_period", period}};
        env_t *small = mk(P, kv, 2, 4), *big = mk(N, kv, 2, 4);
        env_reset(small, 0, P, NULL, seeds, obs);
        env_reset(big, 0, N, NULL, seeds, obs);
        int differ = 0;
        for (int i = 0; i < N; i++) {
            const sim_data *a = env_world_state(big, i), *b = env_world_state(small, i % P);
            const int col = period ? env_curriculum_column(i % P, P, ENV_TERRAIN_COLS)
                                   : env_curriculum_column(i, N, ENV_TERRAIN_COLS);
            double o[3];
            cr_assert_eq(env_terrain_origin(t, level_of(big, i), col, o), 0);
            cr_assert(fabs(a->q[0] - o[0]) <= 1 && fabs(a->q[1] - o[1]) <= 1, "period %d: world %d off its tile",
                      period, i);
            differ += memcmp(a->q, b->q, sizeof(double) * 7) != 0;
        }
        if (period) cr_assert_eq(differ, 0, "with the period, world i starts as world i mod %d of %d worlds", P, P);
        else cr_assert_gt(differ, N / 2, "legged_gym's blocks depend on the world count (%d of %d differ)", differ, N);
        env_destroy(&small);
        env_destroy(&big);
    }
    env_terrain_destroy(&t);
}

/* Moves world i's base to dist metres (along x) from its tile origin, leaving the rest of its state. */
static void put_base(env_t *e, const env_terrain *t, int i, double dist)
{
    double o[3];
    int col = env_curriculum_column(i, e->nworlds, ENV_TERRAIN_COLS);
    cr_assert_eq(env_terrain_origin(t, level_of(e, i), col, o), 0);
    e->worlds[i].d->q[0] = o[0] + dist;
    e->worlds[i].d->q[1] = o[1];
}

/* A world that ends more than 4 m from its tile origin moves up at its next reset; one that stays at its origin
 * while commanded to move (|v_cmd_xy| > 0.2, read from the observation) moves down (unless at level 0); the state
 * is driven directly. */
Test(rough, curriculum_moves_levels, .timeout = 120)
{
    enum { N = 40 };
    env_kv kv[] = {{"obs_noise", 0}};
    env_t *e = mk(N, kv, 1, 9);
    env_terrain *t = field_of(9);
    static float obs[N * 235];
    env_reset(e, 0, N, NULL, NULL, obs);
    int before[N], ups = 0, downs = 0;
    double cmd[N];
    for (int i = 0; i < N; i++) {
        before[i] = level_of(e, i);
        cmd[i] = hypot(obs[i * 235 + 9], obs[i * 235 + 10]) / 2.0;    /* command_lin_vel, scale 2 */
        put_base(e, t, i, i % 2 == 0 ? 4.5 : 0.0);
    }
    env_reset(e, 0, N, NULL, NULL, obs);
    for (int i = 0; i < N; i++) {
        int now = level_of(e, i);
        if (i % 2 == 0) {
            cr_assert_eq(now, before[i] + 1, "world %d walked 4.5 m: up from %d, got %d", i, before[i], now);
            ups++;
        } else if (cmd[i] > 0.2 && before[i] > 0) {
            cr_assert_eq(now, before[i] - 1, "world %d stayed under %.2f m/s: down from %d, got %d", i, cmd[i], before[i], now);
            downs++;
        } else {
            cr_assert_eq(now, before[i] > 0 && cmd[i] > 0.2 ? before[i] - 1 : before[i], "world %d", i);
        }
        /* it spawned on its new tile */
        double o[3];
        env_terrain_origin(t, now, env_curriculum_column(i, N, ENV_TERRAIN_COLS), o);
        const sim_data *d = env_world_state(e, i);
        cr_assert(fabs(d->q[0] - o[0]) <= 1 && fabs(d->q[1] - o[1]) <= 1 && fabs(d->q[2] - o[2] - 0.6) < 1e-12);
    }
    cr_assert(ups >= 10 && downs >= 5, "ups %d downs %d", ups, downs);
    env_terrain_destroy(&t);
    env_destroy(&e);
}

/* The level range keeps every level in [min, max], with the curriculum on (clamped moves) or off (frozen). */
Test(rough, level_range_and_freeze, .timeout = 120)
{
    enum { N = 24 };
    for (int cur = 0; cur <= 1; cur++) {
        env_kv kv[] = {{"curriculum", cur}, {"terrain_level_min", 2}, {"terrain_level_max", 4}};
        env_t *e = mk(N, kv, 3, 3);
        env_terrain *t = field_of(3);
        static float obs[N * 235];
        env_reset(e, 0, N, NULL, NULL, obs);
        int first[N], moved = 0;
        for (int i = 0; i < N; i++) first[i] = level_of(e, i);
        for (int r = 0; r < 6; r++) {
            for (int i = 0; i < N; i++) put_base(e, t, i, (i + r) % 3 == 0 ? 0.0 : 6.0);
            env_reset(e, 0, N, NULL, NULL, obs);
            for (int i = 0; i < N; i++) {
                int l = level_of(e, i);
                cr_assert(l >= 2 && l <= 4, "curriculum %d world %d level %d", cur, i, l);
                if (!cur) cr_assert_eq(l, first[i], "frozen");
                moved += l != first[i];
            }
        }
        if (cur) cr_assert_gt(moved, 0, "the curriculum moves levels within the range");
        env_terrain_destroy(&t);
        env_destroy(&e);
    }
}

/* A base pressed into the ground terminates the episode. */
Test(rough, base_contact_terminates, .timeout = 120)
{
    enum { N = 8 };
    env_kv kv[] = {{"terrain_level_max", 0}, {"init_noise", 0}};
    env_t *e = mk(N, kv, 2, 4);
    static float obs[N * 235], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    /* level 0: every tile flat within 5 cm; the base 5 cm above its origin */
    for (int i = 0; i < N; i++) e->worlds[i].d->q[2] -= 0.55;
    env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
    for (int i = 0; i < N; i++) cr_assert_eq(term[i], 1, "world %d", i);
    env_destroy(&e);
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A world whose physics ran away (here: the base at 1e4 m/s, beyond ENV_ANYMAL_RUNAWAY_VEL) is failed and reset without being
 * stepped: its collision look-ahead (speed x dt, 50 m) would span a million cells of the field per geometry point
 * and take seconds.  The other worlds of the call step as usual. */
Test(rough, runaway_world_is_not_stepped, .timeout = 120)
{
    enum { N = 2 };
    env_t *e = mk(N, NULL, 0, 5), *ref = mk(N, NULL, 0, 5);
    static float obs[N * 235], oref[N * 235], act[N * 12], rew[N], rref[N];
    uint8_t term[N], trunc[N], tr2[N], tu2[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    env_reset(ref, 0, N, NULL, NULL, oref);
    e->worlds[0].d->u[0] = 1e4;
    uint8_t reset[N] = {0};
    env_info info = {.physics_reset = reset};
    const double t0 = thread_cpu_s();
    env_step(e, 0, N, NULL, act, obs, rew, term, trunc, &info);
    const double sec = thread_cpu_s() - t0;
    cr_assert_eq(reset[0], 1);
    cr_assert_eq(trunc[0], 1);
    cr_assert_lt(sec, 0.2, "one env step of 2 worlds took %.3f s of CPU", sec);
    env_step(ref, 0, N, NULL, act, oref, rref, tr2, tu2, NULL);
    cr_assert_eq(memcmp(obs + 235, oref + 235, 235 * sizeof(float)), 0, "world 1 steps as without world 0's runaway");
    cr_assert_eq(reset[1], 0);
    env_destroy(&e);
    env_destroy(&ref);
}

/* A full contact list keeps the base's contacts: with 4 slots and the legs and feet far deeper in the ground than
 * the base (5 cm in), the base contact still terminates every world. */
Test(rough, full_contact_list_keeps_the_base, .timeout = 120)
{
    enum { N = 8 };
    env_kv kv[] = {{"terrain_level_max", 0}, {"init_noise", 0}, {"max_contacts", 4}};
    env_t *e = mk(N, kv, 3, 4);
    static float obs[N * 235], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    for (int i = 0; i < N; i++) e->worlds[i].d->q[2] -= 0.55;
    env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
    for (int i = 0; i < N; i++) cr_assert_eq(term[i], 1, "world %d", i);
    env_destroy(&e);
}

/* Steps are bitwise the same whether the worlds are stepped in one call or in two (the split the threads make). */
Test(rough, batch_split_is_bitwise_identical, .timeout = 120)
{
    enum { N = 12, STEPS = 30 };
    env_t *a = mk(N, NULL, 0, 21), *b = mk(N, NULL, 0, 21);
    static float oa[N * 235], ob[N * 235], act[N * 12], ra[N], rb[N];
    uint8_t ta[N], tb[N], ua[N], ub[N];
    env_reset(a, 0, N, NULL, NULL, oa);
    env_reset(b, 0, 5, NULL, NULL, ob);
    env_reset(b, 5, N - 5, NULL, NULL, ob + 5 * 235);
    cr_assert_eq(memcmp(oa, ob, sizeof oa), 0);
    for (int k = 0; k < STEPS; k++) {
        for (int i = 0; i < N * 12; i++) act[i] = (float)sin(0.37 * i + 0.11 * k);
        env_step(a, 0, N, NULL, act, oa, ra, ta, ua, NULL);
        env_step(b, 0, 7, NULL, act, ob, rb, tb, ub, NULL);
        env_step(b, 7, N - 7, NULL, act + 7 * 12, ob + 7 * 235, rb + 7, tb + 7, ub + 7, NULL);
        cr_assert_eq(memcmp(oa, ob, sizeof oa), 0, "step %d", k);
        cr_assert_eq(memcmp(ra, rb, sizeof ra), 0, "step %d", k);
    }
    env_destroy(&a);
    env_destroy(&b);
}

/* obs_scales isaaclab: the same state observed without legged_gym's scales (lin vel x2, ang vel x0.25, commands,
 * dof_vel x0.05, heights x5), and the spec says scale 1. */
Test(rough, isaaclab_scales, .timeout = 120)
{
    enum { N = 4 };
    env_kv lg_kv[] = {{"obs_noise", 0}}, il_kv[] = {{"obs_noise", 0}, {"obs_scales", 1}};
    env_t *lg = mk(N, lg_kv, 1, 8), *il = mk(N, il_kv, 2, 8);
    static float a[N * 235], b[N * 235];
    env_reset(lg, 0, N, NULL, NULL, a);
    env_reset(il, 0, N, NULL, NULL, b);
    const env_spec *s = env_get_spec(il);
    for (int f = 0; f < s->nobs; f++) cr_assert_eq(s->obs[f].scale, 1.0f, "%s", s->obs[f].name);
    cr_assert_eq(env_get_spec(lg)->obs[s->nobs - 1].scale, 5.0f);
    static const struct { int off, n; double scale; } want[] = {{0, 3, 2.0}, {3, 3, 0.25}, {6, 3, 1.0}, {9, 2, 2.0},
                                                               {11, 1, 0.25}, {12, 12, 1.0}, {24, 12, 0.05}, {48, 187, 5.0}};
    int differ = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 8; k++)
            for (int j = want[k].off; j < want[k].off + want[k].n; j++) {
                float x = a[i * 235 + j], y = b[i * 235 + j];
                cr_assert(fabs(x - want[k].scale * y) <= 1e-5 * (1 + fabs(x)), "world %d obs %d: %g vs %g x %g", i, j, x, y, want[k].scale);
                differ += want[k].scale != 1.0 && y != 0 && x != y;
            }
    cr_assert_gt(differ, 0);
    env_destroy(&lg);
    env_destroy(&il);
}

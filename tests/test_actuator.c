/* envs/env_actuator.c through the ANYmal tasks: the actuator models (pd, lstm, dc), the network's per-world state,
 * the DC-motor clip, the target delay, the per-world gain and strength draws, determinism over threads and batch
 * splits, configuration errors, the spec's `actuator` key and the memory a world reports. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "env_actuator.h"
#include "env_actuator_net.h"
#include "env_anymal_model.h"
#include "herd_client.h"
#include "sim_model.h"

#include "helpers/server_start.h"

enum { NJ = ENV_ANYMAL_NJ };

static env_t *mk(int n, const env_kv *kv, int nkv, uint64_t seed)
{
    char err[512];
    env_t *e = env_new("anymal_c-walk", n, kv, nkv, seed, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

/* deterministic pseudo-random actions in [-amp, amp], independent of the env */
static void actions(float *a, int n, float amp, int step)
{
    for (int i = 0; i < n; i++) {
        unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u + 5u);
        x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        a[i] = amp * (float)((x % 2001) / 1000.0 - 1.0);
    }
}

static env_anymal_joints joints_of(const env_t *e)
{
    env_anymal_joints j;
    char err[256];
    cr_assert_eq(env_anymal_joints_init(&j, env_model(e), err, sizeof err), 0, "%s", err);
    return j;
}

/* The env's joint target for action a of joint q: action_scale (0.5) times the action (float32) plus the default
 * pose, as the task computes it. */
static double target_of(const env_anymal_joints *j, float a, int q) { return 0.5 * (double)a + j->q_default[q]; }

/* ---------------------------------------------------------------- the network path */

/* lstm and dc: every physics step's torques (decimation 1, so each env step is one physics step and d->tau after it
 * is what that step used) equal env_actuator_net_step on the same inputs, run here with this test's own state per
 * world, times the motor strength (a fixed one: its range's ends equal); a reset of world 1 alone zeroes its state
 * and no other world's. */
static void network_path_in(int model, double strength, int precision)
{
    enum { N = 3, STEPS = 40, RESET_AT = 20 };
    env_kv kv[] = {{"actuator", model}, {"decimation", 1}, {"obs_noise", 0}, {"push_interval_s", 0},
                   {"motor_strength_min", strength}, {"motor_strength_max", strength}, {"net_precision", precision}};
    env_t *e = mk(N, kv, 7, 11);
    int (*step)(const env_actuator_net *, int, const double *, const double *, env_actuator_state *, double *, char *,
                size_t) = precision == ENV_ACTUATOR_NET_FLOAT32 ? env_actuator_net_step_f32 : env_actuator_net_step;
    const env_anymal_joints j = joints_of(e);
    char err[256];
    env_actuator_net *net = env_actuator_net_new(NULL, err, sizeof err);
    cr_assert_not_null(net, "%s", err);
    env_actuator_state st[N * NJ];
    env_actuator_state_zero(st, N * NJ);
    float obs[N * 48], act[N * NJ], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    for (int s = 0; s < STEPS; s++) {
        if (s == RESET_AT) {
            int32_t one = 1;
            env_reset(e, 0, 1, &one, NULL, obs);
            env_actuator_state_zero(&st[NJ], NJ);
        }
        actions(act, N * NJ, 0.4f, s);
        double err_[N * NJ], vel[N * NJ], tau[N * NJ];
        for (int i = 0; i < N; i++) {
            const sim_data *d = env_world_state(e, i);
            for (int q = 0; q < NJ; q++) {
                err_[i * NJ + q] = target_of(&j, act[i * NJ + q], q) - d->q[j.qadr[q]];
                vel[i * NJ + q] = d->u[j.dof[q]];
            }
        }
        cr_assert_eq(step(net, N * NJ, err_, vel, st, tau, err, sizeof err), 0, "%s", err);
        env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
        for (int i = 0; i < N; i++) {
            cr_assert(!term[i] && !trunc[i], "world %d ended at step %d", i, s);
            const sim_data *d = env_world_state(e, i);
            for (int q = 0; q < NJ; q++) {
                double want = strength * tau[i * NJ + q];
                if (model == ENV_ACTUATOR_DC) want = env_actuator_dc_clip(want, vel[i * NJ + q], 120, 80, 7.5);
                cr_assert(d->tau[j.dof[q]] == want, "%s (%s), step %d, world %d, joint %d: %.17g != %.17g",
                          model == ENV_ACTUATOR_DC ? "dc" : "lstm",
                          precision == ENV_ACTUATOR_NET_FLOAT32 ? "float32" : "float64", s, i, q, d->tau[j.dof[q]], want);
            }
        }
    }
    env_actuator_net_destroy(&net);
    env_destroy(&e);
}

/* both precisions: float32 (the default) against env_actuator_net_step_f32, float64 against env_actuator_net_step */
static void network_path(int model, double strength)
{
    network_path_in(model, strength, ENV_ACTUATOR_NET_FLOAT32);
    network_path_in(model, strength, ENV_ACTUATOR_NET_FLOAT64);
}

Test(actuator, lstm_path_equals_the_network_and_resets_one_world, .timeout = 60) { network_path(ENV_ACTUATOR_LSTM, 1); }
Test(actuator, dc_path_equals_the_clipped_network, .timeout = 60) { network_path(ENV_ACTUATOR_DC, 1); }
/* the motor strength scales the network's torque (before the DC clip) */
Test(actuator, strength_scales_the_network, .timeout = 60)
{
    network_path(ENV_ACTUATOR_LSTM, 0.75);
    network_path(ENV_ACTUATOR_DC, 3.0);     /* often beyond the clip: the strength acts before it */
}

/* ---------------------------------------------------------------- the DC-motor clip */

/* Isaac Lab's torque-speed box, written out here: the upper limit falls from the saturation torque at rest to 0 at
 * the velocity limit and is capped by the effort limit; the lower limit mirrors it. */
static double dc_ref(double tau, double v, double sat, double lim, double vmax)
{
    double hi = fmin(fmax(sat * (1 - v / vmax), 0), lim), lo = fmax(fmin(sat * (-1 - v / vmax), 0), -lim);
    return fmin(fmax(tau, lo), hi);
}

Test(actuator, dc_clip_in_all_four_quadrants)
{
    /* sat 120, limit 80, 7.5 rad/s: the corner where 120 (1 - v / 7.5) = 80 is v = 2.5 rad/s */
    const struct { double tau, v, want; } pts[] = {
        {100, 0, 80},      {-100, 0, -80},     /* at rest: the effort limit both ways */
        {100, 5, 40},      {30, 5, 30},        /* I (tau > 0, v > 0, motoring): 120 (1 - 5 / 7.5) = 40 */
        {100, -5, 80},     {-100, -5, -40},    /* II (tau > 0, v < 0, braking): 80; III (motoring backwards): -40 */
        {-100, 5, -80},    {-30, -5, -30},     /* IV (tau < 0, v > 0, braking): -80; III inside */
        {50, 10, 0},       {-50, -10, 0},      /* beyond the no-load speed: no torque along the motion */
        {-500, 10, -80},   {500, -10, 80},     /* ... but full braking against it */
        {79, 2.5, 79},     {81, 2.5, 80},      /* the corner */
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        double got = env_actuator_dc_clip(pts[i].tau, pts[i].v, 120, 80, 7.5);
        cr_assert(fabs(got - pts[i].want) < 1e-12, "point %zu (tau %g, v %g): %.17g, want %g", i, pts[i].tau, pts[i].v,
                  got, pts[i].want);
    }
    /* a grid over all four quadrants and other motor constants, against the closed form */
    const double motors[][3] = {{120, 80, 7.5}, {30, 30, 20}, {10, 25, 3}};
    for (int m = 0; m < 3; m++)
        for (double v = -30; v <= 30; v += 0.37)
            for (double tau = -150; tau <= 150; tau += 3.1) {
                double got = env_actuator_dc_clip(tau, v, motors[m][0], motors[m][1], motors[m][2]);
                double want = dc_ref(tau, v, motors[m][0], motors[m][1], motors[m][2]);
                cr_assert(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), "motor %d, tau %g, v %g: %.17g != %.17g", m,
                          tau, v, got, want);
            }
}

/* ---------------------------------------------------------------- the delay */

/* Runs worlds of walk with decimation `dec`, the given actuator and delay keys, for `steps` env steps of actions
 * act_of(s); records q and u (every world, after every env step) into out. */
typedef struct {
    int n, steps, dec;
    double *q, *u;      /* [step][world][nq or nv] */
    int nq, nv;
} traj;

static float step_action(int s, int i, int q)
{
    /* a step at env step 3 on every joint, and a small pseudo-random part */
    unsigned x = (unsigned)((i * NJ + q) * 2654435761u) ^ (unsigned)(s * 40503u + 3u);
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    return (s >= 3 ? 0.4f : 0.0f) + 0.1f * (float)((x % 2001) / 1000.0 - 1.0);
}

/* A: decimation dec, delay in [dmin, dmax]; its actions step_action(s) per env step.  shift >= 0: instead
 * decimation 1 without delay, physics step p taking A's action of env step floor((p - shift) / dec) (0, the
 * reset targets, before A's first). */
static traj run_delay(int model, int n, int steps, int dec, int dmin, int dmax, int shift)
{
    const int mine = shift < 0;
    env_kv kv[] = {{"actuator", model}, {"obs_noise", 0}, {"push_interval_s", 0}, {"decimation", mine ? dec : 1},
                   {"delay_min", mine ? dmin : 0}, {"delay_max", mine ? dmax : 0}};
    env_t *e = mk(n, kv, 6, 21);
    traj t = {.n = n, .steps = steps, .dec = dec, .nq = env_model(e)->nq, .nv = env_model(e)->nv};
    t.q = malloc(sizeof(double) * (size_t)steps * n * t.nq);
    t.u = malloc(sizeof(double) * (size_t)steps * n * t.nv);
    float *obs = malloc(sizeof(float) * 48 * n), *act = malloc(sizeof(float) * NJ * n), *rew = malloc(sizeof(float) * n);
    uint8_t *term = malloc(n), *trunc = malloc(n);
    env_reset(e, 0, n, NULL, NULL, obs);
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < (mine ? 1 : dec); k++) {
            const int p = s * dec + k, src = mine ? s : (p - shift >= 0 ? (p - shift) / dec : -1);
            for (int i = 0; i < n; i++)
                for (int q = 0; q < NJ; q++) act[i * NJ + q] = src >= 0 ? step_action(src, i, q) : 0.0f;
            env_step(e, 0, n, NULL, act, obs, rew, term, trunc, NULL);
            for (int i = 0; i < n; i++) cr_assert(!term[i] && !trunc[i], "world %d ended", i);
        }
        for (int i = 0; i < n; i++) {
            memcpy(t.q + ((size_t)s * n + i) * t.nq, env_world_state(e, i)->q, sizeof(double) * t.nq);
            memcpy(t.u + ((size_t)s * n + i) * t.nv, env_world_state(e, i)->u, sizeof(double) * t.nv);
        }
    }
    free(obs), free(act), free(rew), free(term), free(trunc);
    env_destroy(&e);
    return t;
}

static int same_world(const traj *a, const traj *b, int i)
{
    for (int s = 0; s < a->steps; s++)
        if (memcmp(a->q + ((size_t)s * a->n + i) * a->nq, b->q + ((size_t)s * b->n + i) * b->nq, sizeof(double) * a->nq) ||
            memcmp(a->u + ((size_t)s * a->n + i) * a->nv, b->u + ((size_t)s * b->n + i) * b->nv, sizeof(double) * a->nv))
            return 0;
    return 1;
}

static void free_traj(traj *t) { free(t->q), free(t->u); }

/* A delay of k physics steps (delay_min = delay_max = k) gives, bit for bit, the motion of an undelayed world
 * whose targets are those of k physics steps earlier: with decimation 1, and with decimation 4 where k is not a
 * multiple of it (the targets change inside an env step); PD and the network. */
Test(actuator, fixed_delay_shifts_the_targets_by_k_physics_steps, .timeout = 120)
{
    const struct { int dec, k; } cases[] = {{1, 3}, {4, 5}, {4, 2}, {3, 7}};
    for (int model = 0; model < 2; model++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const int dec = cases[c].dec, k = cases[c].k, steps = 80 / dec;
            traj a = run_delay(model, 2, steps, dec, k, k, -1);
            traj b = run_delay(model, 2, steps, dec, 0, 0, k);
            traj off = run_delay(model, 2, steps, dec, 0, 0, k - 1);   /* one physics step less: must differ */
            for (int i = 0; i < 2; i++) {
                cr_assert(same_world(&a, &b, i), "model %d, decimation %d, delay %d: world %d is not the shifted motion",
                          model, dec, k, i);
                cr_assert(!same_world(&a, &off, i), "model %d, decimation %d, delay %d: world %d matches a shift of %d",
                          model, dec, k, i, k - 1);
            }
            free_traj(&a), free_traj(&b), free_traj(&off);
        }
}

/* A range: every world's motion is the shift of exactly one k in [delay_min, delay_max], drawn per world (several
 * values among the worlds), and again the same with the same seed. */
Test(actuator, delay_range_draws_one_k_per_world, .timeout = 120)
{
    enum { N = 8, DMIN = 1, DMAX = 6, DEC = 4, STEPS = 20 };
    traj a = run_delay(ENV_ACTUATOR_PD, N, STEPS, DEC, DMIN, DMAX, -1);
    traj again = run_delay(ENV_ACTUATOR_PD, N, STEPS, DEC, DMIN, DMAX, -1);
    traj b[DMAX + 2];
    for (int k = DMIN - 1; k <= DMAX + 1; k++) b[k] = run_delay(ENV_ACTUATOR_PD, N, STEPS, DEC, 0, 0, k);
    int seen[DMAX + 2] = {0}, distinct = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(same_world(&a, &again, i), "world %d: a second env with the same seed differs", i);
        int match = -1, count = 0;
        for (int k = DMIN - 1; k <= DMAX + 1; k++)
            if (same_world(&a, &b[k], i)) match = k, count++;
        cr_assert_eq(count, 1, "world %d matches %d shifts", i, count);
        cr_assert(match >= DMIN && match <= DMAX, "world %d: delay %d outside [%d, %d]", i, match, DMIN, DMAX);
        distinct += !seen[match]++;
    }
    cr_assert_geq(distinct, 3, "only %d distinct delays over %d worlds", distinct, N);
    free_traj(&a), free_traj(&again);
    for (int k = DMIN - 1; k <= DMAX + 1; k++) free_traj(&b[k]);
}

/* ---------------------------------------------------------------- gain and strength draws */

/* PD, decimation 1: the factor of the drawn quantity, read back from each step's torques (the joint with the
 * largest position error or velocity, unclipped): kp' = kp r, kd' = kd r or tau = r pd(kp, kd). */
typedef enum { DRAW_KP, DRAW_KD, DRAW_STRENGTH } draw_kind;

static double factor_of(draw_kind kind, const env_anymal_joints *j, const sim_data *d0, const double *q0,
                        const double *u0, const float *act)
{
    int best = -1;
    double score = 0;
    for (int q = 0; q < NJ; q++) {
        double e_ = fabs(target_of(j, act[q], q) - q0[j->qadr[q]]), v = fabs(u0[j->dof[q]]);
        double x = kind == DRAW_KD ? v : e_;
        if (fabs(d0->tau[j->dof[q]]) < 79 && x > score) score = x, best = q;
    }
    cr_assert_geq(best, 0);
    const double err = target_of(j, act[best], best) - q0[j->qadr[best]], v = u0[j->dof[best]];
    const double tau = d0->tau[j->dof[best]];
    switch (kind) {
    case DRAW_KP: return (tau + 2.0 * v) / (80.0 * err);
    case DRAW_KD: return (80.0 * err - tau) / (2.0 * v);
    default: return tau / (80.0 * err - 2.0 * v);
    }
}

static void gain_draws(draw_kind kind, const char *kmin, const char *kmax, double lo, double hi)
{
    enum { N = 8, STEPS = 12 };
    env_kv kv[] = {{"actuator", ENV_ACTUATOR_PD}, {"decimation", 1}, {"obs_noise", 0}, {kmin, lo}, {kmax, hi}};
    env_t *e = mk(N, kv, 5, 5), *twin = mk(N, kv, 5, 5);
    const env_anymal_joints j = joints_of(e);
    const int nq = env_model(e)->nq, nv = env_model(e)->nv;
    float obs[N * 48], act[N * NJ], rew[N];
    uint8_t term[N], trunc[N];
    double r0[N], rmin = INFINITY, rmax = -INFINITY;
    for (int episode = 0; episode < 2; episode++) {
        env_reset(e, 0, N, NULL, NULL, obs);
        env_reset(twin, 0, N, NULL, NULL, obs);
        double r[N] = {0};
        for (int s = 0; s < STEPS; s++) {
            double q0[N][64], u0[N][64];
            for (int i = 0; i < N; i++) {
                memcpy(q0[i], env_world_state(e, i)->q, sizeof(double) * nq);
                memcpy(u0[i], env_world_state(e, i)->u, sizeof(double) * nv);
            }
            actions(act, N * NJ, 0.3f, s + 7 * episode);
            env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
            env_step(twin, 0, N, NULL, act, obs, rew, term, trunc, NULL);
            for (int i = 0; i < N; i++) {
                const sim_data *d = env_world_state(e, i);
                cr_assert_eq(memcmp(d->tau, env_world_state(twin, i)->tau, sizeof(double) * nv), 0,
                             "%s: world %d is not reproducible", kmin, i);
                if (s < 2) continue;    /* kd: the velocities of the first steps are small */
                double x = factor_of(kind, &j, d, q0[i], u0[i], act + i * NJ);
                cr_assert(x >= lo - 1e-6 && x <= hi + 1e-6, "%s: world %d draws %g outside [%g, %g]", kmin, i, x, lo, hi);
                if (s == 2) r[i] = x;
                cr_assert(fabs(x - r[i]) < 1e-6 * fmax(1, fabs(r[i])), "%s: world %d's factor moved within the episode "
                          "(%g, then %g)", kmin, i, r[i], x);
            }
        }
        for (int i = 0; i < N; i++) {
            rmin = fmin(rmin, r[i]), rmax = fmax(rmax, r[i]);
            if (episode == 0) r0[i] = r[i];
            else cr_assert(fabs(r[i] - r0[i]) > 1e-9, "%s: world %d kept its draw over a reset", kmin, i);
        }
    }
    cr_assert_gt(rmax - rmin, 0.3 * (hi - lo), "%s: draws span only [%g, %g]", kmin, rmin, rmax);
    env_destroy(&e), env_destroy(&twin);
}

Test(actuator, kp_scale_draws, .timeout = 60) { gain_draws(DRAW_KP, "kp_scale_min", "kp_scale_max", 0.6, 1.4); }
Test(actuator, kd_scale_draws, .timeout = 60) { gain_draws(DRAW_KD, "kd_scale_min", "kd_scale_max", 0.5, 2.0); }
Test(actuator, motor_strength_draws, .timeout = 60) { gain_draws(DRAW_STRENGTH, "motor_strength_min", "motor_strength_max", 0.7, 1.2); }

/* ---------------------------------------------------------------- determinism */

typedef struct {
    env_t *e;
    int first, n;
    const float *act;
    float *obs, *rew;
    uint8_t *term, *trunc;
    int per_world;      /* one env_step call per world */
} slice;

static void *run_slice(void *p)
{
    slice *s = p;
    for (int i = s->first; i < s->first + s->n; i += s->per_world ? 1 : s->n)
        env_step(s->e, i, s->per_world ? 1 : s->n, NULL, s->act + (size_t)i * NJ, s->obs + (size_t)i * 48, s->rew + i,
                 s->term + i, s->trunc + i, NULL);
    return NULL;
}

/* Every output and physics state of `steps` steps, threads slices at cuts (per_world: one call per world). */
static unsigned char *run_split(const env_kv *kv, int nkv, int n, int threads, const int *cuts, int per_world,
                                int steps, size_t *len)
{
    char err[512];
    env_t *e = env_new("anymal_c-walk", n, kv, nkv, 77, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    const int nq = env_model(e)->nq, nv = env_model(e)->nv;
    float *obs = malloc(sizeof(float) * 48 * n), *act = malloc(sizeof(float) * NJ * n), *rew = malloc(sizeof(float) * n);
    uint8_t *term = malloc(n), *trunc = malloc(n);
    const size_t per = (size_t)n * (48 * 4 + 4 + 2 + sizeof(double) * (nq + 2 * nv));
    *len = per * steps;
    unsigned char *out = malloc(*len), *p = out;
    env_reset(e, 0, n, NULL, NULL, obs);
    for (int s = 0; s < steps; s++) {
        actions(act, n * NJ, 1.0f, s);
        pthread_t th[8];
        slice sl[8];
        for (int t = 0; t < threads; t++) {
            sl[t] = (slice){e, cuts[t], cuts[t + 1] - cuts[t], act, obs, rew, term, trunc, per_world};
            pthread_create(&th[t], NULL, run_slice, &sl[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
        memcpy(p, obs, sizeof(float) * 48 * n), p += sizeof(float) * 48 * n;
        memcpy(p, rew, sizeof(float) * n), p += sizeof(float) * n;
        memcpy(p, term, n), p += n;
        memcpy(p, trunc, n), p += n;
        for (int i = 0; i < n; i++) {
            const sim_data *d = env_world_state(e, i);
            memcpy(p, d->q, sizeof(double) * nq), p += sizeof(double) * nq;
            memcpy(p, d->u, sizeof(double) * nv), p += sizeof(double) * nv;
            memcpy(p, d->tau, sizeof(double) * nv), p += sizeof(double) * nv;
        }
    }
    free(obs), free(act), free(rew), free(term), free(trunc);
    env_destroy(&e);
    return out;
}

Test(actuator, bitwise_identical_over_threads_and_batch_splits, .timeout = 180)
{
    enum { N = 22, STEPS = 40 };
    /* short episodes: resets (and so state zeroing and fresh draws) inside the run */
    const env_kv lstm[] = {{"actuator", ENV_ACTUATOR_LSTM}, {"delay_min", 0}, {"delay_max", 9},
                           {"motor_strength_min", 0.8}, {"motor_strength_max", 1.1}, {"episode_seconds", 0.3}};
    const env_kv pd[] = {{"actuator", ENV_ACTUATOR_PD}, {"delay_min", 2}, {"delay_max", 5}, {"kp_scale_min", 0.8},
                         {"kp_scale_max", 1.2}, {"kd_scale_min", 0.5}, {"kd_scale_max", 1.5}, {"episode_seconds", 0.3}};
    const env_kv dc[] = {{"actuator", ENV_ACTUATOR_DC}, {"delay_min", 1}, {"delay_max", 3}, {"episode_seconds", 0.3}};
    const struct { const env_kv *kv; int n; const char *name; } cfgs[] = {{lstm, 6, "lstm"}, {pd, 8, "pd"}, {dc, 4, "dc"}};
    const int one[] = {0, N}, two[] = {0, 11, N}, odd[] = {0, 5, 6, 17, N};
    for (int c = 0; c < 3; c++) {
        size_t la, lb, lc, ld;
        unsigned char *a = run_split(cfgs[c].kv, cfgs[c].n, N, 1, one, 0, STEPS, &la);
        unsigned char *b = run_split(cfgs[c].kv, cfgs[c].n, N, 2, two, 0, STEPS, &lb);
        unsigned char *o = run_split(cfgs[c].kv, cfgs[c].n, N, 4, odd, 0, STEPS, &lc);
        unsigned char *w = run_split(cfgs[c].kv, cfgs[c].n, N, 1, one, 1, STEPS, &ld);
        cr_assert(la == lb && la == lc && la == ld);
        cr_assert_eq(memcmp(a, b, la), 0, "%s: 1 vs 2 threads differ", cfgs[c].name);
        cr_assert_eq(memcmp(a, o, la), 0, "%s: an odd batch split differs", cfgs[c].name);
        cr_assert_eq(memcmp(a, w, la), 0, "%s: one world per call differs", cfgs[c].name);
        free(a), free(b), free(o), free(w);
    }
}

/* ---------------------------------------------------------------- configuration */

static void refused(const env_kv *kv, int nkv, const char *needle, const char *needle2)
{
    char err[512] = "";
    env_t *e = env_new("anymal_c-walk", 2, kv, nkv, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_null(e, "accepted %s = %g", kv[0].key, kv[0].value);
    cr_assert(strstr(err, needle) && (!needle2 || strstr(err, needle2)), "message names neither '%s' nor '%s': %s",
              needle, needle2 ? needle2 : "", err);
}

Test(actuator, bad_values_are_refused_by_name)
{
    char err[512];
    double v = -1;
    cr_assert_eq(env_config_choice("anymal_c-walk", "actuator", "servo", &v, err, sizeof err), -1);
    cr_assert(strstr(err, "actuator") && strstr(err, "'servo'") && strstr(err, "pd, lstm, dc"), "%s", err);
    cr_assert_eq(env_config_choice("anymal_c-stand", "actuator", "dc", &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v, ENV_ACTUATOR_DC);
    refused((env_kv[]){{"actuator", 3}}, 1, "'actuator'", "pd, lstm, dc");
    refused((env_kv[]){{"actuator", 0.5}}, 1, "'actuator'", NULL);
    refused((env_kv[]){{"delay_min", 3}, {"delay_max", 1}}, 2, "'delay_min'", "'delay_max'");
    refused((env_kv[]){{"delay_min", -1}}, 1, "'delay_min'", NULL);
    refused((env_kv[]){{"delay_max", ENV_ACTUATOR_DELAY_MAX + 1}}, 1, "'delay_max'", NULL);
    refused((env_kv[]){{"delay_max", 2.5}}, 1, "'delay_max'", "integers");
    refused((env_kv[]){{"kp_scale_min", 1.5}, {"kp_scale_max", 1.2}}, 2, "'kp_scale_min'", "'kp_scale_max'");
    refused((env_kv[]){{"kd_scale_min", -0.1}}, 1, "'kd_scale_min'", NULL);
    refused((env_kv[]){{"motor_strength_min", 1.1}}, 1, "'motor_strength_min'", "'motor_strength_max'");
    refused((env_kv[]){{"dc_velocity_limit", 0}}, 1, "'dc_velocity_limit'", NULL);
}

static const env_config_key *key_of(const env_spec *s, const char *key)
{
    for (int i = 0; i < s->nconfig; i++)
        if (!strcmp(s->config[i].key, key)) return &s->config[i];
    return NULL;
}

static void check_actuator_key(const env_spec *s, int def)
{
    const env_config_key *k = key_of(s, "actuator");
    cr_assert_not_null(k, "%s has no actuator key", s->name);
    cr_assert_eq(k->nchoices, 3, "%s", s->name);
    cr_assert_str_eq(k->choices[0], "pd");
    cr_assert_str_eq(k->choices[1], "lstm");
    cr_assert_str_eq(k->choices[2], "dc");
    cr_assert(k->is_int && k->lo == 0 && k->hi == 2, "%s: range", s->name);
    cr_assert_eq(k->def, def, "%s: default %g", s->name, k->def);
    const char *keys[] = {"delay_min", "delay_max", "kp_scale_min", "kp_scale_max", "kd_scale_min", "kd_scale_max",
                          "motor_strength_min", "motor_strength_max", "dc_saturation", "dc_effort_limit",
                          "dc_velocity_limit"};
    const double defs[] = {0, 0, 1, 1, 1, 1, 1, 1, 120, 80, 7.5};
    for (int i = 0; i < 11; i++) {
        cr_assert_not_null(key_of(s, keys[i]), "%s lacks %s", s->name, keys[i]);
        cr_assert_eq(key_of(s, keys[i])->def, defs[i], "%s: %s", s->name, keys[i]);
    }
}

/* The spec, in the registry and in a server's hello: `actuator` with its three names; walk runs the network by
 * default and draws yaw-rate commands in +-1.5 rad/s, stand stays PD. */
Test(actuator, spec_lists_the_actuator_choices, .timeout = 60)
{
    const env_spec *walk = env_registry_spec(env_registry_find("anymal_c-walk"));
    const env_spec *stand = env_registry_spec(env_registry_find("anymal_c-stand"));
    check_actuator_key(walk, ENV_ACTUATOR_LSTM);
    check_actuator_key(stand, ENV_ACTUATOR_PD);
    cr_assert_eq(key_of(walk, "cmd_yaw_max")->def, 1.5);

    srv_thread *t = test_server_start(1);
    const char *eps[1] = {srv_thread_endpoint(t)};
    herd_error e;
    herd_client *c = herd_client_new(eps, 1, 10000, &e);
    cr_assert_not_null(c, "%s", e.message);
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &e), 0, "%s", e.message);
    int found = 0;
    for (int i = 0; i < h.nenvs; i++) {
        if (!strcmp(h.envs[i].name, "anymal_c-walk")) check_actuator_key(&h.envs[i], ENV_ACTUATOR_LSTM), found++;
        if (!strcmp(h.envs[i].name, "anymal_c-stand")) check_actuator_key(&h.envs[i], ENV_ACTUATOR_PD), found++;
    }
    cr_assert_eq(found, 2);
    herd_hello_free(&h);
    /* by name over the wire */
    herd_session s;
    herd_choice dc[] = {{"actuator", "dc"}};
    cr_assert_eq(herd_client_make_choices(c, 0, "anymal_c-stand", 1, NULL, 0, dc, 1, 1, ENV_AUTORESET_NEXT_STEP, &s, &e), 0,
                 "%s", e.message);
    cr_assert_eq(s.config[key_of(&s.spec, "actuator") - s.spec.config], ENV_ACTUATOR_DC);
    cr_assert_eq(herd_client_close(c, &s, &e), 0, "%s", e.message);
    herd_choice bad[] = {{"actuator", "servo"}};
    cr_assert_eq(herd_client_make_choices(c, 0, "anymal_c-walk", 1, NULL, 0, bad, 1, 1, ENV_AUTORESET_NEXT_STEP, &s, &e),
                 PROTO_E_BAD_CONFIG);
    cr_assert(strstr(e.message, "unknown actuator 'servo'") && strstr(e.message, "pd, lstm, dc"), "%s", e.message);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* A world's reported memory holds its actuator state: the network's (h, c) per joint for lstm and dc, the target
 * ring (ceil(delay_max / decimation) + 1 env steps of 12 targets) with a delay; and the env's, the network. */
Test(actuator, world_memory_counts_the_actuator_state)
{
    env_kv pd[] = {{"actuator", ENV_ACTUATOR_PD}}, lstm[] = {{"actuator", ENV_ACTUATOR_LSTM}},
           delayed[] = {{"actuator", ENV_ACTUATOR_PD}, {"delay_max", 9}},
           lstm64[] = {{"actuator", ENV_ACTUATOR_LSTM}, {"net_precision", ENV_ACTUATOR_NET_FLOAT64}};
    env_t *a = mk(1, pd, 1, 0), *b = mk(1, lstm, 1, 0), *c = mk(1, delayed, 2, 0), *b64 = mk(1, lstm64, 2, 0);
    const size_t wa = env_world_bytes(a), wb = env_world_bytes(b), wc = env_world_bytes(c), wb64 = env_world_bytes(b64);
    const size_t f32 = sizeof(float) * ENV_ACTUATOR_NET_STATE * NJ;     /* float32: (h, c) of 12 joints as floats */
    cr_assert_geq(wb - wa, f32, "lstm adds %zu bytes", wb - wa);
    cr_assert_lt(wb - wa, f32 + 256, "lstm adds %zu bytes", wb - wa);
    cr_assert_geq(wb64 - wa, sizeof(env_actuator_state) * NJ, "lstm in float64 adds %zu bytes", wb64 - wa);
    cr_assert_lt(wb64 - wa, sizeof(env_actuator_state) * NJ + 256, "lstm in float64 adds %zu bytes", wb64 - wa);
    env_destroy(&b64);
    cr_assert_geq(wc - wa, sizeof(double) * NJ * (9 / 4 + 1 + 1), "a 9-step delay adds %zu bytes", wc - wa);
    env_cost cost, cost_pd;
    env_get_cost(b, &cost);
    env_get_cost(a, &cost_pd);
    cr_assert_eq(cost.world_bytes, wb);
    /* the env's own memory counts the network's weights (a server's memory bound charges it per session) */
    cr_assert_geq(cost.fixed_bytes - cost_pd.fixed_bytes, sizeof(double) * ENV_ACTUATOR_NET_NPARAMS, "%zu",
                  cost.fixed_bytes - cost_pd.fixed_bytes);
    cr_log_info("world bytes: pd %zu, lstm %zu, pd with a 9-step delay %zu", wa, wb, wc);
    env_destroy(&a), env_destroy(&b), env_destroy(&c);
}

/* env_actuator.c — the ANYmal tasks' joint actuators (env_actuator.h). */
#include "env_actuator.h"

#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { NJ = ENV_ANYMAL_NJ };

/* One world's actuator state: this header (64 bytes), then the network's state (NJ joints, lstm and dc), then the
 * target ring (ring x NJ doubles). */
typedef struct {
    double kp, kd, strength;    /* drawn at reset */
    int delay;                  /* physics steps, drawn at reset */
    int64_t step;               /* env steps commanded since the reset */
} world_head;
#define HEAD_BYTES 64
_Static_assert(sizeof(world_head) <= HEAD_BYTES, "actuator world header fits its 64 bytes");

static int uses_net(const env_actuator *a) { return a->model == ENV_ACTUATOR_LSTM || a->model == ENV_ACTUATOR_DC; }
static int uses_f32(const env_actuator *a) { return a->precision == ENV_ACTUATOR_NET_FLOAT32; }
/* A world's float32 network state: value k (h then c, [layer][unit], as env_actuator_state) of joint q at [k][q]. */
typedef float net_state_f32[ENV_ACTUATOR_NET_STATE][NJ];
static size_t net_bytes(const env_actuator *a)
{
    return !uses_net(a) ? 0 : uses_f32(a) ? sizeof(net_state_f32) : sizeof(env_actuator_state) * NJ;
}
static world_head *head(void *w) { return w; }
static env_actuator_state *net_state(void *w) { return (env_actuator_state *)((unsigned char *)w + HEAD_BYTES); }
static float (*net_state_f(void *w))[NJ] { return (float (*)[NJ])((unsigned char *)w + HEAD_BYTES); }
static double *ring(const env_actuator *a, void *w) { return (double *)((unsigned char *)w + HEAD_BYTES + net_bytes(a)); }

int env_actuator_setup(env_actuator *a, const char *task, char *err, size_t errlen)
{
    a->net = NULL;
    if (a->model < 0 || a->model >= ENV_ACTUATOR_NMODELS) {
        snprintf(err, errlen, "%s: unknown actuator %d", task, a->model);
        return -1;
    }
    if (a->delay_min < 0 || a->delay_max > ENV_ACTUATOR_DELAY_MAX || a->delay_min > a->delay_max) {
        snprintf(err, errlen, "%s: configuration 'delay_min' = %d must not exceed 'delay_max' = %d (both in [0, %d] physics steps)",
                 task, a->delay_min, a->delay_max, ENV_ACTUATOR_DELAY_MAX);
        return -1;
    }
    const struct { const char *name; const double *r; } ranges[] = {
        {"kp_scale", a->kp_scale}, {"kd_scale", a->kd_scale}, {"motor_strength", a->strength}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (!(ranges[i].r[0] >= 0 && ranges[i].r[0] <= ranges[i].r[1])) {
            snprintf(err, errlen, "%s: configuration '%s_min' = %g must not exceed '%s_max' = %g", task, ranges[i].name,
                     ranges[i].r[0], ranges[i].name, ranges[i].r[1]);
            return -1;
        }
    if (a->precision < 0 || a->precision >= ENV_ACTUATOR_NET_NPRECISIONS) {
        snprintf(err, errlen, "%s: configuration 'net_precision' = %d is not a precision (0 float32, 1 float64)", task,
                 a->precision);
        return -1;
    }
    if (a->decimation < 1) {
        snprintf(err, errlen, "%s: decimation %d", task, a->decimation);
        return -1;
    }
    if (uses_net(a) && !(a->net = env_actuator_net_new(NULL, err, errlen))) return -1;
    a->ring = a->delay_max > 0 ? (a->delay_max + a->decimation - 1) / a->decimation + 1 : 0;
    size_t bytes = HEAD_BYTES + net_bytes(a) + sizeof(double) * NJ * (size_t)a->ring;
    a->bytes = (bytes + 63) / 64 * 64;
    return 0;
}

void env_actuator_free(env_actuator *a)
{
    if (a) env_actuator_net_destroy(&a->net);
}

size_t env_actuator_world_bytes(const env_actuator *a) { return a->bytes; }
/* env_actuator_net.h keeps its struct to itself: the block's usable size (glibc) is what it takes from the heap. */
size_t env_actuator_fixed_bytes(const env_actuator *a) { return a->net ? malloc_usable_size(a->net) : 0; }

/* A draw in [r[0], r[1]], or r[0] without a draw when the ends are equal. */
static double draw(env_rng *rng, const double r[2]) { return r[0] == r[1] ? r[0] : env_rng_range(rng, r[0], r[1]); }

void env_actuator_reset(const env_actuator *a, void *w, const double *targets, env_rng *rng)
{
    world_head *h = head(w);
    h->step = 0;
    h->delay = a->delay_min;
    if (a->delay_max > a->delay_min) {
        /* uniform over the delay_max - delay_min + 1 integers */
        int span = a->delay_max - a->delay_min + 1, k = (int)(env_rng_uniform(rng) * span);
        h->delay += k < span ? k : span - 1;
    }
    h->kp = a->kp * draw(rng, a->kp_scale);
    h->kd = a->kd * draw(rng, a->kd_scale);
    h->strength = draw(rng, a->strength);
    if (uses_net(a) && uses_f32(a)) memset(net_state_f(w), 0, sizeof(net_state_f32));
    else if (uses_net(a)) env_actuator_state_zero(net_state(w), NJ);
    double *r = ring(a, w);
    for (int s = 0; s < a->ring; s++) memcpy(r + (size_t)s * NJ, targets, sizeof(double) * NJ);
}

void env_actuator_command(const env_actuator *a, void *w, const double *targets)
{
    world_head *h = head(w);
    if (a->ring) memcpy(ring(a, w) + (size_t)(h->step % a->ring) * NJ, targets, sizeof(double) * NJ);
    h->step++;
}

void env_actuator_take(const env_actuator *a, void *const *w, int n, env_actuator_batch *b)
{
    if (!uses_net(a)) return;
    if (!uses_f32(a)) {
        for (int i = 0; i < n; i++) memcpy(b->s[i], net_state(w[i]), sizeof b->s[i]);
        return;
    }
    for (int i = 0; i < n; i++) {
        float (*f)[NJ] = net_state_f(w[i]);
        for (int q = 0; q < NJ; q++) {
            const int g = i * NJ + q;
            env_actuator_lanes *l = &b->lanes[g / 8];
            for (int k = 0; k < ENV_ACTUATOR_NET_STATE; k++) l->v[k][g % 8] = f[k][q];
        }
    }
}

void env_actuator_put(const env_actuator *a, void *const *w, int n, const env_actuator_batch *b)
{
    if (!uses_net(a)) return;
    if (!uses_f32(a)) {
        for (int i = 0; i < n; i++) memcpy(net_state(w[i]), b->s[i], sizeof b->s[i]);
        return;
    }
    for (int i = 0; i < n; i++) {
        float (*f)[NJ] = net_state_f(w[i]);
        for (int q = 0; q < NJ; q++) {
            const int g = i * NJ + q;
            const env_actuator_lanes *l = &b->lanes[g / 8];
            for (int k = 0; k < ENV_ACTUATOR_NET_STATE; k++) f[k][q] = l->v[k][g % 8];
        }
    }
}

/* The targets world w's actuator sees at physics step k of its current env step (the one last commanded):
 * those of physics step p - delay, p = (step - 1) decimation + k, from the ring; the current ones without delay. */
static const double *delayed(const env_actuator *a, void *w, const double *current, int k)
{
    const world_head *h = head(w);
    if (!a->ring || h->delay == 0) return current;
    /* p' = p - delay >= -delay_max >= -(ring - 1) decimation, so p' + ring decimation > 0 and its quotient by
     * decimation is floor(p' / decimation) + ring: the env step whose targets hold at p', modulo the ring */
    const int64_t p = (h->step - 1) * a->decimation + k - h->delay;
    const int64_t slot = (p + (int64_t)a->ring * a->decimation) / a->decimation % a->ring;
    return ring(a, w) + (size_t)slot * NJ;
}

void env_actuator_torques(const env_actuator *a, const env_anymal_joints *j, int n, void *const *w,
                          const double *const *targets, sim_data *const *d, const int *live, int k,
                          env_actuator_batch *b, double *tau_sq)
{
    if (a->model == ENV_ACTUATOR_PD) {
        for (int i = 0; i < n; i++) {
            if (!live[i]) continue;
            const world_head *h = head(w[i]);
            const double *tgt = delayed(a, w[i], targets[i], k);
            const double kp = h->kp, kd = h->kd, s = h->strength, lim = a->torque_limit;
            sim_data *di = d[i];
            double acc = tau_sq[i];
#pragma GCC unroll 12
            for (int q = 0; q < NJ; q++) {
                double t = s * fma(kp, tgt[q] - di->q[j->qadr[q]], -(kd * di->u[j->dof[q]]));
                if (t > lim) t = lim;
                if (t < -lim) t = -lim;
                di->tau[j->dof[q]] = t;
                acc = fma(t, t, acc);
            }
            tau_sq[i] = acc;
        }
        return;
    }
    double err[ENV_ACTUATOR_BATCH * NJ] = {0}, vel[ENV_ACTUATOR_BATCH * NJ] = {0}, tau[ENV_ACTUATOR_BATCH * NJ];
    for (int i = 0; i < n; i++) {
        const double *tgt = live[i] ? delayed(a, w[i], targets[i], k) : NULL;
        for (int q = 0; q < NJ; q++) {
            err[i * NJ + q] = live[i] ? tgt[q] - d[i]->q[j->qadr[q]] : 0;
            vel[i * NJ + q] = live[i] ? d[i]->u[j->dof[q]] : 0;
        }
    }
    /* n * NJ joints, state and outputs of the caller's arrays: the call cannot fail */
    if (uses_f32(a)) env_actuator_net_step_lanes_f32(a->net, n * NJ, err, vel, b->lanes, tau, NULL, 0);
    else env_actuator_net_step(a->net, n * NJ, err, vel, &b->s[0][0], tau, NULL, 0);
    for (int i = 0; i < n; i++) {
        if (!live[i]) continue;
        const double s = head(w[i])->strength;
        double acc = tau_sq[i];
        for (int q = 0; q < NJ; q++) {
            double t = s * tau[i * NJ + q];
            if (a->model == ENV_ACTUATOR_DC)
                t = env_actuator_dc_clip(t, vel[i * NJ + q], a->dc_saturation, a->dc_effort_limit, a->dc_velocity_limit);
            d[i]->tau[j->dof[q]] = t;
            acc = fma(t, t, acc);
        }
        tau_sq[i] = acc;
    }
}

double env_actuator_dc_clip(double tau, double qdot, double saturation, double effort_limit, double velocity_limit)
{
    const double r = qdot / velocity_limit;
    double hi = saturation * (1.0 - r), lo = saturation * (-1.0 - r);
    hi = hi < 0 ? 0 : hi > effort_limit ? effort_limit : hi;
    lo = lo > 0 ? 0 : lo < -effort_limit ? -effort_limit : lo;
    return tau > hi ? hi : tau < lo ? lo : tau;
}

/* herd-bench actuator — the LSTM actuator network's cost per joint and physics step (env_actuator_net.h).
 *
 *   herd-bench actuator [--worlds 4096] [--steps 4] [--repeats 15] [--core 0]
 *
 * worlds x 12 joints, each with its own state, stepped `steps` physics steps per repeat on one pinned thread,
 * timed in thread CPU time; medians over the repeats.  Five ways, interleaved within each repeat:
 *   batch      one env_actuator_net_step call for all joints per physics step;
 *   per_world  one call of 12 joints per world (as a world's step would call it);
 *   f32        per-world calls of env_actuator_net_step_f32 (single precision: its largest torque difference from
 *              the baseline is reported too);
 *   lanes_f32  one env_actuator_net_step_lanes_f32 call for all joints (the float step on its own state layout;
 *              the same bits as f32);
 *   baseline   the textbook form measured in the same run: the weights row-major as PyTorch stores them, libm's
 *              exp and tanh, one joint at a time (the same arithmetic up to rounding: its largest torque
 *              difference from the module is reported).
 * Inputs: pseudo-random position errors in [-0.5, 0.5] rad and velocities in [-10, 10] rad/s, new every step,
 * after 20 untimed steps from zero states. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env_actuator_net.h"

#define NJ 12
#define H ENV_ACTUATOR_NET_HIDDEN
#define G ENV_ACTUATOR_NET_GATES

/* The baseline's weights, in the file's (PyTorch's) layout. */
typedef struct {
    const double *in_scale, *out_scale, *wih[ENV_ACTUATOR_NET_LAYERS], *whh[ENV_ACTUATOR_NET_LAYERS],
        *bih[ENV_ACTUATOR_NET_LAYERS], *bhh[ENV_ACTUATOR_NET_LAYERS], *lw, *lb;
} textbook;

static textbook textbook_of(const double *p)
{
    textbook t;
    t.in_scale = p, p += ENV_ACTUATOR_NET_INPUTS;
    t.out_scale = p++;
    for (int l = 0; l < ENV_ACTUATOR_NET_LAYERS; l++) {
        int in = l ? H : ENV_ACTUATOR_NET_INPUTS;
        t.wih[l] = p, p += G * in;
        t.whh[l] = p, p += G * H;
        t.bih[l] = p, p += G;
        t.bhh[l] = p, p += G;
    }
    t.lw = p, p += H;
    t.lb = p;
    return t;
}

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static double textbook_step(const textbook *t, double e, double v, env_actuator_state *s)
{
    double x[H] = {e * t->in_scale[0], v * t->in_scale[1]};
    for (int l = 0; l < ENV_ACTUATOR_NET_LAYERS; l++) {
        int in = l ? H : ENV_ACTUATOR_NET_INPUTS;
        double g[G];
        for (int r = 0; r < G; r++) {
            double a = t->bih[l][r], b = t->bhh[l][r];
            for (int k = 0; k < in; k++) a += t->wih[l][r * in + k] * x[k];
            for (int k = 0; k < H; k++) b += t->whh[l][r * H + k] * s->h[l][k];
            g[r] = a + b;
        }
        for (int k = 0; k < H; k++) {
            double i = sig(g[k]), f = sig(g[H + k]), gg = tanh(g[2 * H + k]), o = sig(g[3 * H + k]);
            s->c[l][k] = f * s->c[l][k] + i * gg;
            s->h[l][k] = o * tanh(s->c[l][k]);
            x[k] = s->h[l][k];
        }
    }
    double y = t->lb[0];
    for (int k = 0; k < H; k++) y += t->lw[k] * x[k];
    return t->out_scale[0] * y;
}

static void inputs(double *e, double *v, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        double a = (double)(*rng >> 11) / 9007199254740992.0;
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        double b = (double)(*rng >> 11) / 9007199254740992.0;
        e[i] = a - 0.5, v[i] = 20 * b - 10;
    }
}

int bench_actuator(int argc, char **argv)
{
    const int W = atoi(bench_arg(argc, argv, "--worlds", "4096")), S = atoi(bench_arg(argc, argv, "--steps", "4"));
    const int R = atoi(bench_arg(argc, argv, "--repeats", "15")), core = atoi(bench_arg(argc, argv, "--core", "0"));
    if (W < 1 || S < 1 || R < 1) {
        fprintf(stderr, "herd-bench actuator: need --worlds, --steps, --repeats >= 1\n");
        return 2;
    }
    char err[256];
    env_actuator_net *net = env_actuator_net_new(NULL, err, sizeof err);
    if (!net) {
        fprintf(stderr, "herd-bench actuator: %s\n", err);
        return 1;
    }
    bench_pin(core);
    const size_t n = (size_t)W * NJ;
    double p[ENV_ACTUATOR_NET_NPARAMS];
    env_actuator_net_params(net, p);
    const textbook tb = textbook_of(p);
    env_actuator_state *sa = malloc(sizeof *sa * n), *sb = malloc(sizeof *sb * n), *sc = malloc(sizeof *sc * n);
    env_actuator_state *sf = malloc(sizeof *sf * n);
    env_actuator_lanes *sl = aligned_alloc(32, sizeof *sl * (size_t)ENV_ACTUATOR_LANES(n));
    double *tf = malloc(sizeof(double) * n), *xf = malloc(sizeof(double) * R);
    double *tl = malloc(sizeof(double) * n), *xl = malloc(sizeof(double) * R);
    double *e = malloc(sizeof(double) * n * S), *v = malloc(sizeof(double) * n * S);
    double *ta = malloc(sizeof(double) * n), *tb_ = malloc(sizeof(double) * n), *tc = malloc(sizeof(double) * n);
    double *xa = malloc(sizeof(double) * R), *xb = malloc(sizeof(double) * R), *xc = malloc(sizeof(double) * R);
    if (!sa || !sb || !sc || !sf || !e || !v || !ta || !tb_ || !tc || !tf || !xa || !xb || !xc || !xf || !sl || !tl || !xl) {
        fprintf(stderr, "herd-bench actuator: out of memory\n");
        return 1;
    }
    env_actuator_state_zero(sa, (int)n), env_actuator_state_zero(sb, (int)n), env_actuator_state_zero(sc, (int)n);
    env_actuator_state_zero(sf, (int)n);
    env_actuator_lanes_zero(sl, 0, (int)n);
    uint64_t rng = 7;
    double diff = 0, diff_f = 0, tmax = 0;
    for (int w = 0; w < 20; w++) {
        inputs(e, v, n, &rng);
        env_actuator_net_step(net, (int)n, e, v, sa, ta, NULL, 0);
        env_actuator_net_step(net, (int)n, e, v, sb, tb_, NULL, 0);
        env_actuator_net_step_f32(net, (int)n, e, v, sf, tf, NULL, 0);
        env_actuator_net_step_lanes_f32(net, (int)n, e, v, sl, tl, NULL, 0);
        for (size_t j = 0; j < n; j++) tc[j] = textbook_step(&tb, e[j], v[j], &sc[j]);
    }
    for (int r = 0; r < R; r++) {
        inputs(e, v, n * S, &rng);
        uint64_t t0 = bench_thread_cpu_ns();
        for (int s = 0; s < S; s++) env_actuator_net_step(net, (int)n, e + n * s, v + n * s, sa, ta, NULL, 0);
        uint64_t t1 = bench_thread_cpu_ns();
        for (int s = 0; s < S; s++)
            for (int w = 0; w < W; w++) {
                size_t o = n * s + (size_t)w * NJ;
                env_actuator_net_step(net, NJ, e + o, v + o, sb + (size_t)w * NJ, tb_ + (size_t)w * NJ, NULL, 0);
            }
        uint64_t t2 = bench_thread_cpu_ns();
        for (int s = 0; s < S; s++)
            for (size_t j = 0; j < n; j++) tc[j] = textbook_step(&tb, e[n * s + j], v[n * s + j], &sc[j]);
        uint64_t t3 = bench_thread_cpu_ns();
        for (int s = 0; s < S; s++)
            for (int w = 0; w < W; w++) {
                size_t o = n * s + (size_t)w * NJ;
                env_actuator_net_step_f32(net, NJ, e + o, v + o, sf + (size_t)w * NJ, tf + (size_t)w * NJ, NULL, 0);
            }
        uint64_t t4 = bench_thread_cpu_ns();
        for (int s = 0; s < S; s++) env_actuator_net_step_lanes_f32(net, (int)n, e + n * s, v + n * s, sl, tl, NULL, 0);
        uint64_t t5 = bench_thread_cpu_ns();
        const double js = (double)n * S;
        xa[r] = (double)(t1 - t0) / js, xb[r] = (double)(t2 - t1) / js, xc[r] = (double)(t3 - t2) / js;
        xf[r] = (double)(t4 - t3) / js, xl[r] = (double)(t5 - t4) / js;
        for (size_t j = 0; j < n; j++) {
            if (ta[j] != tb_[j]) diff = INFINITY;   /* batch and per-world calls must agree bit for bit */
            if (tf[j] != tl[j]) diff_f = INFINITY;  /* and the two float steps */
            diff = fmax(diff, fabs(ta[j] - tc[j]));
            diff_f = fabs(tf[j] - tc[j]) > diff_f || tf[j] != tf[j] ? fabs(tf[j] - tc[j]) : diff_f;
            tmax = fmax(tmax, fabs(ta[j]));
        }
    }
    const double a = bench_median(xa, R), b = bench_median(xb, R), c = bench_median(xc, R), f = bench_median(xf, R);
    const double fl = bench_median(xl, R);
    printf("{\"bench\":\"actuator\",\"worlds\":%d,\"joints\":%d,\"steps\":%d,\"repeats\":%d,"
           "\"batch_ns_per_joint_step\":%.2f,\"per_world_ns_per_joint_step\":%.2f,"
           "\"baseline_libm_ns_per_joint_step\":%.2f,\"speedup_vs_baseline\":%.3f,\"world_step_us\":%.3f,"
           "\"f32_ns_per_joint_step\":%.2f,\"f32_world_step_us\":%.3f,\"f32_max_diff_vs_baseline_nm\":%.3g,"
           "\"lanes_f32_ns_per_joint_step\":%.2f,\"lanes_f32_world_step_us\":%.3f,"
           "\"max_torque_nm\":%.3f,\"max_diff_vs_baseline_nm\":%.3g,\"cpu\":\"%s\"}\n",
           W, NJ, S, R, a, b, c, c / a, 1e-3 * a * NJ, f, 1e-3 * f * NJ, diff_f, fl, 1e-3 * fl * NJ, tmax, diff,
           bench_cpu());
    fprintf(stderr, "actuator net, %d worlds x %d joints, %d steps x %d repeats (thread CPU time, medians):\n"
                    "  batch call      %8.1f ns per joint-step  (%.2f us per world step)\n"
                    "  per-world calls %8.1f ns per joint-step\n"
                    "  baseline (libm) %8.1f ns per joint-step  (%.2fx the batch)\n"
                    "  float, per world %8.1f ns per joint-step  (%.2f us per world step; %.3g N·m from the baseline)\n"
                    "  float lanes call %8.1f ns per joint-step  (%.2f us per world step)\n"
                    "  torques up to %.1f N·m; largest difference from the baseline %.3g N·m\n",
            W, NJ, S, R, a, 1e-3 * a * NJ, b, c, c / a, f, 1e-3 * f * NJ, diff_f, fl, 1e-3 * fl * NJ, tmax, diff);
    free(sa), free(sb), free(sc), free(e), free(v), free(ta), free(tb_), free(tc), free(xa), free(xb), free(xc);
    free(sf), free(tf), free(xf), free(sl), free(tl), free(xl);
    env_actuator_net_destroy(&net);
    return isfinite(diff) && diff < 1e-9 && diff_f < 1e-3 ? 0 : 1;
}

/* envs/env_actuator_net.c: the ANYdrive LSTM actuator network against legged_gym's TorchScript module run in
 * double precision on recorded sequences (tests/testdata/actuator_net_ref.txt, written by
 * tests/testdata/actuator_net_ref.py with PyTorch; this test needs no PyTorch), its state per joint and across
 * resets, the gate order, its exp, its data file's parser and its argument checks. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_actuator_net.h"

#define REF_FILE "tests/testdata/actuator_net_ref.txt"
#define REF_FILE_F32 "tests/testdata/actuator_net_ref_f32.txt"    /* the float32 module's torques, same inputs */
#define DATA_FILE "envs/models/anydrive_v3_lstm.txt"
#define TOL 1e-9            /* N·m: the C network vs the TorchScript module in double precision */
#define MAXJ 16
#define MAXR 32

/* The recorded sequences: inputs, reference torques, resets (before step t, zero joint j). */
typedef struct {
    int J, T, R;
    int reset_t[MAXR], reset_j[MAXR];
    double *e, *v, *tau;    /* [t * J + j] */
} ref_seq;

static ref_seq load_ref_file(const char *path)
{
    ref_seq s = {0};
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (tests run from the repository root)", path);
    char line[512];
    int header = 0, rows = 0, resets = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int t, j, ver;
        char w[32];
        double e, v, tau;
        if (sscanf(line, "actuator-net-ref %d", &ver) == 1) {
            cr_assert_eq(ver, 1);
        } else if (sscanf(line, "joints %d steps %d resets %d", &s.J, &s.T, &s.R) == 3) {
            cr_assert(s.J > 0 && s.J <= MAXJ && s.T > 0 && s.R >= 0 && s.R <= MAXR);
            s.e = calloc((size_t)s.J * s.T, sizeof(double));
            s.v = calloc((size_t)s.J * s.T, sizeof(double));
            s.tau = calloc((size_t)s.J * s.T, sizeof(double));
            header = 1;
        } else if (sscanf(line, "reset %d %d", &t, &j) == 2) {
            cr_assert(header && resets < s.R && t >= 0 && t < s.T && j >= 0 && j < s.J);
            s.reset_t[resets] = t, s.reset_j[resets] = j, resets++;
        } else if (sscanf(line, "%d %d %lf %lf %lf", &t, &j, &e, &v, &tau) == 5) {
            cr_assert(header && t >= 0 && t < s.T && j >= 0 && j < s.J);
            s.e[t * s.J + j] = e, s.v[t * s.J + j] = v, s.tau[t * s.J + j] = tau;
            rows++;
        } else {
            cr_assert(sscanf(line, "%31s", w) != 1, "%s: unexpected line '%s'", path, line);
        }
    }
    fclose(f);
    cr_assert(header);
    cr_assert_eq(resets, s.R);
    cr_assert_eq(rows, s.J * s.T, "%s: %d rows, expected %d", path, rows, s.J * s.T);
    return s;
}

static ref_seq load_ref(void) { return load_ref_file(REF_FILE); }

static void free_ref(ref_seq *s) { free(s->e), free(s->v), free(s->tau); }

static env_actuator_net *embedded(void)
{
    char err[256];
    env_actuator_net *n = env_actuator_net_new(NULL, err, sizeof err);
    cr_assert_not_null(n, "%s", err);
    return n;
}

typedef int (*step_fn)(const env_actuator_net *, int, const double *, const double *, env_actuator_state *, double *,
                       char *, size_t);

/* Runs the sequences through net with step (all joints in one call per step, the resets applied) into tau; returns
 * the largest |tau - reference|. */
static double run_with(step_fn step, const env_actuator_net *net, const ref_seq *s, double *tau)
{
    env_actuator_state st[MAXJ];
    env_actuator_state_zero(st, s->J);
    double worst = 0;
    char err[128];
    for (int t = 0; t < s->T; t++) {
        for (int k = 0; k < s->R; k++)
            if (s->reset_t[k] == t) env_actuator_state_zero(&st[s->reset_j[k]], 1);
        cr_assert_eq(step(net, s->J, s->e + t * s->J, s->v + t * s->J, st, tau + t * s->J, err, sizeof err), 0, "%s",
                     err);
        for (int j = 0; j < s->J; j++) {
            double d = fabs(tau[t * s->J + j] - s->tau[t * s->J + j]);
            worst = d > worst || d != d ? d : worst;
        }
    }
    return worst;
}

static double run(const env_actuator_net *net, const ref_seq *s, double *tau)
{
    return run_with(env_actuator_net_step, net, s, tau);
}

/* The largest |tau - reference| of each reset joint from its reset on, checked against tol. */
static void check_after_resets(const ref_seq *s, const double *tau, double tol)
{
    cr_assert(s->R >= 2, "the recording should hold resets");
    for (int k = 0; k < s->R; k++) {
        const int j = s->reset_j[k];
        double after = 0;
        for (int t = s->reset_t[k]; t < s->T; t++) {
            const double d = fabs(tau[t * s->J + j] - s->tau[t * s->J + j]);
            after = d > after || d != d ? d : after;
        }
        cr_assert(after <= tol, "joint %d after its reset at step %d: %.3g N·m from the reference", j, s->reset_t[k],
                  after);
    }
}

Test(actuator_net, matches_torchscript_in_double_precision)
{
    ref_seq s = load_ref();
    env_actuator_net *net = embedded();
    double *tau = malloc(sizeof(double) * s.J * s.T);
    double worst = run(net, &s, tau), big = 0;
    for (int i = 0; i < s.J * s.T; i++) big = fmax(big, fabs(s.tau[i]));
    cr_log_info("actuator net vs TorchScript (double): %d joints x %d steps, %d resets, torques up to %.1f N·m, "
                "largest difference %.3g N·m", s.J, s.T, s.R, big, worst);
    cr_assert(worst <= TOL, "largest difference %.3g N·m > %g", worst, TOL);
    cr_assert(big > 50, "the sequences should reach the network's saturation (%.1f N·m)", big);
    check_after_resets(&s, tau, TOL);
    free(tau), free_ref(&s);
    env_actuator_net_destroy(&net);
    cr_assert_null(net);
}

/* env_actuator_net_step_f32 against the TorchScript module run in float32 on the same sequences (its own recording),
 * within the header's tolerance, after every reset too. */
Test(actuator_net, f32_matches_torchscript_in_single_precision)
{
    ref_seq s = load_ref_file(REF_FILE_F32), d = load_ref();
    env_actuator_net *net = embedded();
    double *tau = malloc(sizeof(double) * s.J * s.T);
    cr_assert(s.J == d.J && s.T == d.T && memcmp(s.e, d.e, sizeof(double) * s.J * s.T) == 0, "other inputs");
    const double worst = run_with(env_actuator_net_step_f32, net, &s, tau);
    double vs_double = 0, f32_vs_double = 0;
    for (int i = 0; i < s.J * s.T; i++)
        vs_double = fmax(vs_double, fabs(tau[i] - d.tau[i])), f32_vs_double = fmax(f32_vs_double, fabs(s.tau[i] - d.tau[i]));
    cr_log_info("actuator net in float vs TorchScript (float32): largest difference %.3g N·m (vs the double module "
                "%.3g N·m, where TorchScript's float32 module is %.3g N·m from it)", worst, vs_double, f32_vs_double);
    cr_assert(worst <= ENV_ACTUATOR_NET_F32_TOL, "largest difference %.3g N·m > %g", worst, ENV_ACTUATOR_NET_F32_TOL);
    cr_assert(f32_vs_double > 1e-6, "the float32 recording should differ from the double one (%.3g N·m)", f32_vs_double);
    check_after_resets(&s, tau, ENV_ACTUATOR_NET_F32_TOL);
    free(tau), free_ref(&s), free_ref(&d);
    env_actuator_net_destroy(&net);
}

/* The recording's joint 6 gets joint 0's inputs: equal torques (bit for bit: same arithmetic) while their states
 * are equal, different ones after joint 6 alone is reset at 200 (different histories, same input), equal
 * references throughout that stretch confirm the resets are applied to the right joints. */
Test(actuator_net, state_is_per_joint_and_reset_per_joint)
{
    ref_seq s = load_ref();
    cr_assert(s.J > 6);
    env_actuator_net *net = embedded();
    double *tau = malloc(sizeof(double) * s.J * s.T);
    run(net, &s, tau);
    int first_reset6 = s.T;
    for (int k = 0; k < s.R; k++)
        if (s.reset_j[k] == 6 && s.reset_t[k] < first_reset6) first_reset6 = s.reset_t[k];
    cr_assert(first_reset6 > 10 && first_reset6 < s.T - 10);
    for (int t = 0; t < first_reset6; t++) {
        cr_assert_eq(s.e[t * s.J + 6], s.e[t * s.J + 0]);
        cr_assert_eq(tau[t * s.J + 6], tau[t * s.J + 0], "step %d", t);
    }
    /* after joint 6's reset: same inputs, different states, so different torques (in the reference too) */
    double gap = 0, gap_ref = 0;
    for (int t = first_reset6; t < first_reset6 + 5; t++) {
        gap = fmax(gap, fabs(tau[t * s.J + 6] - tau[t * s.J + 0]));
        gap_ref = fmax(gap_ref, fabs(s.tau[t * s.J + 6] - s.tau[t * s.J + 0]));
    }
    cr_assert(gap > 1e-3 && gap_ref > 1e-3, "joint 6 after its reset: %.3g (reference %.3g) N·m from joint 0", gap, gap_ref);

    /* one joint at a time, in reverse order, gives the batch's bits: nothing mixes joints */
    env_actuator_state st[MAXJ];
    env_actuator_state_zero(st, s.J);
    for (int t = 0; t < s.T; t++) {
        for (int k = 0; k < s.R; k++)
            if (s.reset_t[k] == t) env_actuator_state_zero(&st[s.reset_j[k]], 1);
        for (int j = s.J - 1; j >= 0; j--) {
            double y;
            cr_assert_eq(env_actuator_net_step(net, 1, &s.e[t * s.J + j], &s.v[t * s.J + j], &st[j], &y, NULL, 0), 0);
            cr_assert_eq(y, tau[t * s.J + j], "step %d joint %d", t, j);
        }
    }
    free(tau), free_ref(&s);
    env_actuator_net_destroy(&net);
}

/* A joint's torques and state are the same bits whatever the batch it is stepped in: the same 240 joints stepped
 * in calls of 1, 3, 5, 12, 48 and 240 joints (the vector lanes' remainders included), through saturating and
 * ordinary inputs and a reset of some joints half-way; for each of the two steps. */
static void batch_bits(step_fn step, const char *name)
{
    enum { N = 240, STEPS = 30 };
    static const int sizes[] = {240, 1, 3, 5, 12, 48};
    const int ns = sizeof sizes / sizeof sizes[0];
    env_actuator_net *net = embedded();
    static env_actuator_state st[6][N];
    static double e[STEPS][N], v[STEPS][N], tau[6][STEPS][N];
    memset(tau, 0, sizeof tau);
    uint64_t rng = 12345;
    for (int t = 0; t < STEPS; t++)
        for (int j = 0; j < N; j++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const double a = (double)(rng >> 11) / 9007199254740992.0 - 0.5;
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const double b = (double)(rng >> 11) / 9007199254740992.0 - 0.5;
            const double scale = j % 7 == 3 ? 40.0 : 1.0;       /* every 7th joint saturates */
            e[t][j] = scale * a, v[t][j] = 20.0 * scale * b;
        }
    for (int c = 0; c < ns; c++) {
        env_actuator_state_zero(st[c], N);
        for (int t = 0; t < STEPS; t++) {
            if (t == STEPS / 2)
                for (int j = 0; j < N; j += 11) env_actuator_state_zero(&st[c][j], 1);
            for (int j = 0; j < N; j += sizes[c]) {
                const int m = N - j < sizes[c] ? N - j : sizes[c];
                cr_assert_eq(step(net, m, &e[t][j], &v[t][j], &st[c][j], &tau[c][t][j], NULL, 0), 0);
            }
        }
    }
    for (int c = 1; c < ns; c++) {
        for (int t = 0; t < STEPS; t++)
            for (int j = 0; j < N; j++)
                cr_assert(memcmp(&tau[c][t][j], &tau[0][t][j], sizeof(double)) == 0,
                          "%s, calls of %d joints: step %d joint %d: %a N·m, in one call %a", name, sizes[c], t, j,
                          tau[c][t][j], tau[0][t][j]);
        cr_assert_eq(memcmp(st[c], st[0], sizeof st[0]), 0, "%s, calls of %d joints: other states", name,
                     sizes[c]);
    }
    double big = 0;
    for (int j = 0; j < N; j++) big = fmax(big, fabs(tau[0][STEPS - 1][j]));
    cr_assert(big > 50 && isfinite(big), "%s: the inputs should saturate some joints (%.1f N·m)", name, big);
    env_actuator_net_destroy(&net);
}

Test(actuator_net, batch_size_does_not_change_the_bits) { batch_bits(env_actuator_net_step, "double"); }
Test(actuator_net, batch_size_does_not_change_the_bits_f32) { batch_bits(env_actuator_net_step_f32, "float"); }

/* The float step on lanes gives env_actuator_net_step_f32's bits (torques and state) whatever the grouping: the 240
 * joints of batch_bits as one array of blocks, as 20 worlds of 12 joints (two blocks each), as 5 of 48 and as 240
 * single joints, with the same half-way resets (env_actuator_lanes_zero). */
Test(actuator_net, lanes_give_the_f32_bits)
{
    enum { N = 240, STEPS = 30 };
    static const int sizes[] = {240, 12, 48, 1, 5};
    env_actuator_net *net = embedded();
    static env_actuator_state ref[N];
    static env_actuator_lanes lanes[N];          /* at most one block per joint */
    static double e[STEPS][N], v[STEPS][N], tref[STEPS][N], t[STEPS][N];
    uint64_t rng = 777;
    for (int k = 0; k < STEPS; k++)
        for (int j = 0; j < N; j++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const double a = (double)(rng >> 11) / 9007199254740992.0 - 0.5;
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const double b = (double)(rng >> 11) / 9007199254740992.0 - 0.5;
            e[k][j] = (j % 7 == 3 ? 40.0 : 1.0) * a, v[k][j] = 20.0 * b;
        }
    env_actuator_state_zero(ref, N);
    for (int k = 0; k < STEPS; k++) {
        if (k == STEPS / 2)
            for (int j = 0; j < N; j += 11) env_actuator_state_zero(&ref[j], 1);
        cr_assert_eq(env_actuator_net_step_f32(net, N, e[k], v[k], ref, tref[k], NULL, 0), 0);
    }
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int m = sizes[c], groups = (N + m - 1) / m, per = ENV_ACTUATOR_LANES(m);
        cr_assert(groups * per <= N);
        memset(lanes, 0xff, sizeof lanes);   /* garbage in the spare lanes must not matter */
        for (int g = 0; g < groups; g++) env_actuator_lanes_zero(lanes + g * per, 0, m);
        for (int k = 0; k < STEPS; k++) {
            if (k == STEPS / 2)
                for (int j = 0; j < N; j += 11) env_actuator_lanes_zero(lanes + (j / m) * per, j % m, 1);
            for (int g = 0; g < groups; g++) {
                const int j0 = g * m, cnt = N - j0 < m ? N - j0 : m;
                cr_assert_eq(env_actuator_net_step_lanes_f32(net, cnt, &e[k][j0], &v[k][j0], lanes + g * per,
                                                             &t[k][j0], NULL, 0), 0);
            }
        }
        cr_assert_eq(memcmp(t, tref, sizeof t), 0, "groups of %d joints: other torques", m);
        for (int j = 0; j < N; j++)
            for (int i = 0; i < ENV_ACTUATOR_NET_STATE; i++) {
                const double want = ((const double *)&ref[j])[i];
                const float got = lanes[(j / m) * per + (j % m) / 8].v[i][(j % m) % 8];
                cr_assert(memcmp(&(double){got}, &want, sizeof want) == 0, "groups of %d: joint %d state %d: %a, not %a",
                          m, j, i, (double)got, want);
            }
    }
    char err[128];
    cr_assert_eq(env_actuator_net_step_lanes_f32(net, -1, NULL, NULL, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "-1 joints"), "%s", err);
    cr_assert_eq(env_actuator_net_step_lanes_f32(net, 3, e[0], v[0], NULL, t[0], err, sizeof err), -1);
    cr_assert(strstr(err, "the state"), "%s", err);
    env_actuator_lanes_zero(NULL, 0, 3);   /* nothing to do */
    env_actuator_net_destroy(&net);
}

/* Zeroing one joint's state leaves the others' bits alone, and the zeroed joint then behaves as a fresh one. */
Test(actuator_net, zeroing_one_joint_leaves_the_others)
{
    env_actuator_net *net = embedded();
    env_actuator_state st[3], fresh;
    env_actuator_state_zero(st, 3);
    double e[3], v[3], tau[3];
    for (int t = 0; t < 40; t++) {
        for (int j = 0; j < 3; j++) e[j] = 0.2 * sin(0.3 * t + j), v[j] = 3.0 * cos(0.2 * t - j);
        cr_assert_eq(env_actuator_net_step(net, 3, e, v, st, tau, NULL, 0), 0);
    }
    env_actuator_state keep[3];
    memcpy(keep, st, sizeof st);
    env_actuator_state_zero(&st[1], 1);
    cr_assert_eq(memcmp(&st[0], &keep[0], sizeof st[0]), 0);
    cr_assert_eq(memcmp(&st[2], &keep[2], sizeof st[2]), 0);
    env_actuator_state_zero(&fresh, 1);
    cr_assert_eq(memcmp(&st[1], &fresh, sizeof fresh), 0);
    double y;
    cr_assert_eq(env_actuator_net_step(net, 3, e, v, st, tau, NULL, 0), 0);
    cr_assert_eq(env_actuator_net_step(net, 1, &e[1], &v[1], &fresh, &y, NULL, 0), 0);
    cr_assert_eq(y, tau[1]);
    env_actuator_net_destroy(&net);
}

/* Reading the LSTM's rows in any other gate order than PyTorch's (i, f, g, o) misses the reference by far more
 * than the tolerance: the comparison above would catch such a mistake.  Each of the 23 other orders is the
 * network whose four 8-row blocks are permuted in every weight and bias. */
Test(actuator_net, another_gate_order_fails_the_reference)
{
    ref_seq s = load_ref();
    env_actuator_net *net = embedded();
    double *p = malloc(sizeof(double) * ENV_ACTUATOR_NET_NPARAMS), *q = malloc(sizeof(double) * ENV_ACTUATOR_NET_NPARAMS);
    double *tau = malloc(sizeof(double) * s.J * s.T);
    env_actuator_net_params(net, p);
    /* offsets and row widths of the gate-row tensors, in the file's order */
    int off[4 * ENV_ACTUATOR_NET_LAYERS], width[4 * ENV_ACTUATOR_NET_LAYERS], nt = 0, o = ENV_ACTUATOR_NET_INPUTS + 1;
    for (int l = 0; l < ENV_ACTUATOR_NET_LAYERS; l++) {
        int in = l ? ENV_ACTUATOR_NET_HIDDEN : ENV_ACTUATOR_NET_INPUTS;
        int w[4] = {in, ENV_ACTUATOR_NET_HIDDEN, 1, 1};
        for (int k = 0; k < 4; k++) off[nt] = o, width[nt] = w[k], o += ENV_ACTUATOR_NET_GATES * w[k], nt++;
    }
    cr_assert_eq(o + ENV_ACTUATOR_NET_HIDDEN + 1, ENV_ACTUATOR_NET_NPARAMS);
    const int H = ENV_ACTUATOR_NET_HIDDEN;
    int perms = 0;
    double least = INFINITY;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int d = 0; d < 4; d++) {
                    int perm[4] = {a, b, c, d}, seen = 0;
                    for (int k = 0; k < 4; k++) seen |= 1 << perm[k];
                    if (seen != 15) continue;
                    memcpy(q, p, sizeof(double) * ENV_ACTUATOR_NET_NPARAMS);
                    for (int t = 0; t < nt; t++)   /* block k of the new network is block perm[k] of the original */
                        for (int k = 0; k < 4; k++)
                            memcpy(q + off[t] + k * H * width[t], p + off[t] + perm[k] * H * width[t],
                                   sizeof(double) * H * width[t]);
                    char err[128];
                    env_actuator_net *m = env_actuator_net_from_params(q, ENV_ACTUATOR_NET_NPARAMS, err, sizeof err);
                    cr_assert_not_null(m, "%s", err);
                    double worst = run(m, &s, tau);
                    env_actuator_net_destroy(&m);
                    if (a == 0 && b == 1 && c == 2 && d == 3) {
                        cr_assert(worst <= TOL, "identity order: %.3g", worst);
                        continue;
                    }
                    perms++;
                    cr_assert(worst > 1e-2, "gate order %d%d%d%d misses the reference by only %.3g N·m", a, b, c, d, worst);
                    least = fmin(least, worst);
                }
    cr_assert_eq(perms, 23);
    cr_log_info("the 23 wrong gate orders miss the reference by at least %.3g N·m", least);
    free(p), free(q), free(tau), free_ref(&s);
    env_actuator_net_destroy(&net);
}

/* The torques are bounded by |out_scale| (|b| + sum |w|) since |h| < 1, stay finite under any finite input (huge
 * errors saturate the gates), and a NaN input gives a NaN torque that a reset clears. */
static void saturation(step_fn step)
{
    env_actuator_net *net = embedded();
    double p[ENV_ACTUATOR_NET_NPARAMS];
    env_actuator_net_params(net, p);
    const double *lin = p + ENV_ACTUATOR_NET_NPARAMS - ENV_ACTUATOR_NET_HIDDEN - 1;
    double bound = fabs(lin[ENV_ACTUATOR_NET_HIDDEN]);
    for (int k = 0; k < ENV_ACTUATOR_NET_HIDDEN; k++) bound += fabs(lin[k]);
    bound *= fabs(p[ENV_ACTUATOR_NET_INPUTS]);
    const double big[] = {1e300, -1e300, 1e6, -1e6, 50, -50, 0, INFINITY, -INFINITY};
    const int nb = sizeof big / sizeof big[0];
    env_actuator_state st[81];
    double e[81], v[81], tau[81];
    env_actuator_state_zero(st, nb * nb);
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < nb; j++) e[i * nb + j] = big[i], v[i * nb + j] = big[j];
    for (int t = 0; t < 20; t++) {
        cr_assert_eq(step(net, nb * nb, e, v, st, tau, NULL, 0), 0);
        for (int k = 0; k < nb * nb; k++) {
            /* an infinite input times a zero weight would be NaN in PyTorch too; every other input is finite */
            if (isinf(e[k]) || isinf(v[k])) continue;
            cr_assert(isfinite(tau[k]) && fabs(tau[k]) < bound, "input (%g, %g): %g N·m (bound %g)", e[k], v[k],
                      tau[k], bound);
        }
    }
    env_actuator_state one;
    env_actuator_state_zero(&one, 1);
    double x = NAN, zero = 0, y;
    cr_assert_eq(step(net, 1, &x, &zero, &one, &y, NULL, 0), 0);
    cr_assert(isnan(y));
    cr_assert_eq(step(net, 1, &zero, &zero, &one, &y, NULL, 0), 0);
    cr_assert(isnan(y), "the NaN stays in the state until a reset");
    env_actuator_state_zero(&one, 1);
    cr_assert_eq(step(net, 1, &zero, &zero, &one, &y, NULL, 0), 0);
    cr_assert(isfinite(y));
    env_actuator_net_destroy(&net);
}

Test(actuator_net, saturation_is_finite_and_nan_propagates) { saturation(env_actuator_net_step); }
Test(actuator_net, saturation_is_finite_and_nan_propagates_f32) { saturation(env_actuator_net_step_f32); }

/* The module's exp against libm's: within 2 ulp over the range it serves, exact at 0, clamped beyond +-708. */
Test(actuator_net, exp_is_within_two_ulp_of_libm)
{
    double worst = 0, at = 0;
    uint64_t rng = 42;
    for (int i = 0; i < 2000000; i++) {
        double x;
        if (i < 1000000) {
            x = -708.0 + 1416.0 * i / 999999.0;
        } else {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            x = ((double)(rng >> 11) / 9007199254740992.0 * 2 - 1) * (i & 1 ? 40.0 : 1e-3);
        }
        double a = env_actuator_net_exp(x), b = exp(x);
        double ulp = nextafter(b, INFINITY) - b, d = fabs(a - b) / ulp;
        if (d > worst) worst = d, at = x;
    }
    cr_log_info("actuator net exp vs libm: at most %.2f ulp (at x = %.17g)", worst, at);
    cr_assert(worst <= 2.0, "%.2f ulp at x = %.17g", worst, at);
    cr_assert_eq(env_actuator_net_exp(0.0), 1.0);
    cr_assert(isnan(env_actuator_net_exp(NAN)));
    cr_assert_eq(env_actuator_net_exp(1e6), env_actuator_net_exp(708.0));
    cr_assert_eq(env_actuator_net_exp(-INFINITY), env_actuator_net_exp(-708.0));
    cr_assert(isfinite(env_actuator_net_exp(INFINITY)) && env_actuator_net_exp(-708.0) > 0);
}

/* The embedded network is the committed data file, and its parameters are float32 values (the archive's). */
Test(actuator_net, embedded_is_the_data_file)
{
    char err[256];
    env_actuator_net *a = embedded(), *b = env_actuator_net_new(DATA_FILE, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    double p[ENV_ACTUATOR_NET_NPARAMS], q[ENV_ACTUATOR_NET_NPARAMS];
    env_actuator_net_params(a, p), env_actuator_net_params(b, q);
    cr_assert_eq(memcmp(p, q, sizeof p), 0);
    for (int i = 0; i < ENV_ACTUATOR_NET_NPARAMS; i++) cr_assert_eq((double)(float)p[i], p[i], "parameter %d", i);
    cr_assert_eq(p[0], 2.0);
    cr_assert_eq(p[1], 0.25);
    cr_assert_eq(p[2], 20.0);
    env_actuator_net_destroy(&a), env_actuator_net_destroy(&b);
    env_actuator_net_destroy(&b);   /* a NULL is fine */
    env_actuator_net_destroy(NULL);
    cr_assert_null(env_actuator_net_new("tests/testdata/no_such_actuator_net.txt", err, sizeof err));
    cr_assert(strstr(err, "no_such_actuator_net.txt"), "%s", err);
}

/* The data file's text with `find` (first occurrence) replaced by `repl`. */
static char *edited(const char *text, const char *find, const char *repl)
{
    const char *at = strstr(text, find);
    cr_assert_not_null(at, "'%s' not in the data file", find);
    size_t n = strlen(text), a = (size_t)(at - text), f = strlen(find), r = strlen(repl);
    char *s = malloc(n - f + r + 1);
    memcpy(s, text, a), memcpy(s + a, repl, r), memcpy(s + a + r, at + f, n - a - f + 1);
    return s;
}

Test(actuator_net, parser_rejects_bad_files)
{
    FILE *f = fopen(DATA_FILE, "rb");
    cr_assert_not_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char err[256];
    env_actuator_net *ok = env_actuator_net_parse(text, n, "ok", err, sizeof err);
    cr_assert_not_null(ok, "%s", err);
    env_actuator_net_destroy(&ok);
    const char *first_w = strstr(text, "lstm.weight_ih_l0 32 2\n") + strlen("lstm.weight_ih_l0 32 2\n");
    char first[32] = {0};
    sscanf(first_w, "%31s", first);
    struct { const char *find, *repl, *msg; } cases[] = {
        {"herd-actuator-lstm 1", "herd-actuator-mlp 1", "expected 'herd-actuator-lstm'"},
        {"herd-actuator-lstm 1", "herd-actuator-lstm 2", "version 2"},
        {"hidden_size 8", "hidden_size 16", "hidden_size 16"},
        {"num_layers 2", "num_layers 3", "num_layers 3"},
        {"lstm.weight_hh_l0 32 8", "lstm.weight_hh_l0 8 32", "lstm.weight_hh_l0 rows 8"},
        {"lstm.bias_ih_l1 1 32", "lstm.bias_hh_l1 1 32", "expected 'lstm.bias_ih_l1'"},
        {first, "nan", "'nan' is not a finite number"},
        {first, "inf", "'inf' is not a finite number"},
        {first, "1e999", "'1e999' is not a finite number"},
        {first, "0x1p-3x", "'0x1p-3x' is not a finite number"},
        {first, "1.0,", "'1.0,' is not a finite number"},
        {"linear.bias 1 1\n", "linear.bias 1 1\n0x1p-4 0x1p-4\n", "unexpected '0x1p-4' after the last tensor"},
        {first, "0x1.00000000000000000000000000000000000000000000000000000000000000000p-3", "too long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = edited(text, cases[i].find, cases[i].repl);
        err[0] = 0;
        env_actuator_net *m = env_actuator_net_parse(s, strlen(s), "bad.txt", err, sizeof err);
        cr_assert_null(m, "case %zu (%s) was accepted", i, cases[i].repl);
        cr_assert(strstr(err, cases[i].msg) && strstr(err, "bad.txt:"), "case %zu: '%s' lacks '%s'", i, err,
                  cases[i].msg);
        free(s);
    }
    /* truncated anywhere inside the tensors (or inside a number): an error, never a crash */
    const char *tensors = strstr(text, "in_scale");
    for (size_t cut = (size_t)(tensors - text); cut < n - 20; cut += 97) {
        env_actuator_net *m = env_actuator_net_parse(text, cut, "cut.txt", err, sizeof err);
        cr_assert_null(m, "cut at %zu accepted", cut);
        cr_assert(strstr(err, "end of data") || strstr(err, "expected") || strstr(err, "not a finite number"),
                  "cut at %zu: %s", cut, err);
    }
    cr_assert_null(env_actuator_net_parse(NULL, 0, NULL, err, sizeof err));
    cr_assert_null(env_actuator_net_parse("", 0, NULL, NULL, 0));   /* no error buffer is fine */
    /* from_params: the count and finiteness */
    double p[ENV_ACTUATOR_NET_NPARAMS] = {0};
    cr_assert_null(env_actuator_net_from_params(p, ENV_ACTUATOR_NET_NPARAMS - 1, err, sizeof err));
    cr_assert(strstr(err, "parameters given"), "%s", err);
    p[100] = NAN;
    cr_assert_null(env_actuator_net_from_params(p, ENV_ACTUATOR_NET_NPARAMS, err, sizeof err));
    cr_assert(strstr(err, "parameter 100 is not finite"), "%s", err);
    p[100] = 0;
    env_actuator_net *z = env_actuator_net_from_params(p, ENV_ACTUATOR_NET_NPARAMS, err, sizeof err);
    cr_assert_not_null(z, "%s", err);
    env_actuator_net_destroy(&z);
}

static void bad_arguments(step_fn step)
{
    env_actuator_net *net = embedded();
    env_actuator_state st[2];
    env_actuator_state_zero(st, 2);
    st[0].h[0][0] = 0.5;
    env_actuator_state keep[2];
    memcpy(keep, st, sizeof st);
    double e[2] = {0.1, 0.2}, v[2] = {1, 2}, tau[2] = {7, 7};
    char err[128];
    cr_assert_eq(step(net, -1, e, v, st, tau, err, sizeof err), -1);
    cr_assert(strstr(err, "-1 joints"), "%s", err);
    cr_assert_eq(step(NULL, 2, e, v, st, tau, err, sizeof err), -1);
    cr_assert(strstr(err, "network"), "%s", err);
    cr_assert_eq(step(net, 2, NULL, v, st, tau, err, sizeof err), -1);
    cr_assert_eq(step(net, 2, e, NULL, st, tau, err, sizeof err), -1);
    cr_assert_eq(step(net, 2, e, v, NULL, tau, err, sizeof err), -1);
    cr_assert_eq(step(net, 2, e, v, st, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "tau"), "%s", err);
    cr_assert_eq(step(net, 0, NULL, NULL, NULL, NULL, err, sizeof err), 0);
    cr_assert_eq(memcmp(st, keep, sizeof st), 0);
    cr_assert(tau[0] == 7 && tau[1] == 7);
    env_actuator_state_zero(NULL, 3);   /* nothing to do */
    env_actuator_net_destroy(&net);
}

Test(actuator_net, step_rejects_bad_arguments_and_leaves_the_state) { bad_arguments(env_actuator_net_step); }
Test(actuator_net, step_f32_rejects_bad_arguments_and_leaves_the_state) { bad_arguments(env_actuator_net_step_f32); }

/* bench_contact1.c — the single-contact slip solve (Algorithm 1 of Hwangbo et al. 2018: the paper's model, not
 * Coulomb) in isolation, and the Coulomb per-contact solve on the same machinery (sim_contact_single_coulomb).
 *
 *   herd-bench contact1 [--source scenarios|synthetic] [--samples N] [--repeats R] [--seed S] [--core C]
 *                       [--coupling RHO]
 *
 * --source scenarios (default): like the paper, the slip problems met in the four experiments (trot, hang,
 * drop, random at dt 1 ms; see c1_harvest).  --source synthetic: pre-generates N slip problems with foot-like magnitudes: a 3x3 SPD Delassus block with diagonal
 * U(0.05, 0.5) 1/kg and off-diagonals rho sqrt(G_ii G_jj), |rho| <= RHO = 0.5 (--coupling); c_n = -U(0.01, 1) m/s; a tangential
 * velocity of U(0.05, 2) m/s in a random direction; mu = U(0.3, 1.2); only problems that sim_contact_single
 * classifies as SLIP are kept.  Each repeat solves all N once (precision 1e-6 N·s, the paper's), timed with
 * the monotonic clock; we report the median over repeats.  The headline is Algorithm 1 as published
 * (contact_refine = 0); the solver's default, which adds one regula-falsi step in the final bracket, is
 * reported alongside.  The baseline, timed in the same run, is a direct
 * transcription of Algorithm 1 (angles, atan2, sin/cos and eqs. 13-16 at every step); its answers must agree
 * with sim_contact_single's within the precision.  The paper reports 0.58 µs per solve (Xeon E5-1620, 3.6 GHz).
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env_scenario.h"
#include "sim_solver.h"
#include "sim_step.h"
#include "sim_urdf.h"

typedef struct {
    double G[9], c[3], mu;
} c1_problem;

static uint64_t c1_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double c1_uniform(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * ((c1_next(s) >> 11) * 0x1.0p-53); }

/* One slip problem (rejection-sampled). */
static void c1_make(uint64_t *s, double coupling, c1_problem *p)
{
    for (;;) {
        double d[3], rho[3];
        for (int a = 0; a < 3; a++) d[a] = c1_uniform(s, 0.05, 0.5), rho[a] = c1_uniform(s, -coupling, coupling);
        double *G = p->G;
        G[0] = d[0], G[4] = d[1], G[8] = d[2];
        G[1] = G[3] = rho[0] * sqrt(d[0] * d[1]);
        G[2] = G[6] = rho[1] * sqrt(d[0] * d[2]);
        G[5] = G[7] = rho[2] * sqrt(d[1] * d[2]);
        double det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                     G[2] * (G[3] * G[7] - G[4] * G[6]);
        if (!(det > 1e-6 * d[0] * d[1] * d[2])) continue;
        double speed = c1_uniform(s, 0.05, 2.0), ang = c1_uniform(s, 0, 2 * M_PI);
        p->c[0] = speed * cos(ang), p->c[1] = speed * sin(ang), p->c[2] = -c1_uniform(s, 0.01, 1.0);
        p->mu = c1_uniform(s, 0.3, 1.2);
        double l[3];
        if (sim_contact_single(p->G, p->c, p->mu, l, NULL, NULL) == SIM_CONTACT_SLIP) return;
    }
}

/* ---- the baseline: Algorithm 1 written out with angles (eqs. 13-16), no algebraic shortcuts ---------- */

static void c1_point(const double *G, const double *c, double mu, double th, double *r, double lam[3])
{
    double ct = cos(th), st = sin(th);
    *r = -c[2] / (G[8] / mu + G[6] * ct + G[7] * st);       /* eq. 14 */
    lam[0] = *r * ct, lam[1] = *r * st;
    lam[2] = (-c[2] - G[6] * lam[0] - G[7] * lam[1]) / G[8]; /* eq. 13 */
}

/* dE/dlambda . eta with the hybrid form (eqs. 15-16): (Gbar lambda_T + cbar) . (grad h1 x grad h2) */
static double c1_grad(const double *G, const double *c, double mu, const double lam[3])
{
    double v[3], h2[3] = {2 * lam[0], 2 * lam[1], -2 * mu * mu * lam[2]}, eta[3];
    const double *h1 = G + 6;
    eta[0] = h1[1] * h2[2] - h1[2] * h2[1];
    eta[1] = h1[2] * h2[0] - h1[0] * h2[2];
    eta[2] = h1[0] * h2[1] - h1[1] * h2[0];
    for (int a = 0; a < 3; a++) {
        double gx = G[3 * a] - G[3 * a + 2] * G[6] / G[8], gy = G[3 * a + 1] - G[3 * a + 2] * G[7] / G[8];
        v[a] = gx * lam[0] + gy * lam[1] + c[a] - G[3 * a + 2] * c[2] / G[8];
    }
    return v[0] * eta[0] + v[1] * eta[1] + v[2] * eta[2];
}

static int c1_naive(const double *G, const double *c, double mu, double out[3], const sim_solver_params *p)
{
    /* lambda^{v=0} = -G^-1 c by Cramer's rule */
    double det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                 G[2] * (G[3] * G[7] - G[4] * G[6]);
    double l0[3];
    for (int a = 0; a < 3; a++) {
        double M[9];
        memcpy(M, G, sizeof M);
        for (int b = 0; b < 3; b++) M[3 * b + a] = -c[b];
        l0[a] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                 M[2] * (M[3] * M[7] - M[4] * M[6])) / det;
    }
    int steps = 0;
    double th = atan2(l0[1], l0[0]), r, lam[3], thp, lamp[3];
    c1_point(G, c, mu, th, &r, lam);
    double D0 = c1_grad(G, c, mu, lam);
    double alpha = D0 > 0 ? -p->beta1 : p->beta1;
    thp = th;
    memcpy(lamp, lam, sizeof lam);
    for (;;) { /* initial stepping */
        steps++;
        double th_old = th, lam_old[3], r_new, lam_new[3];
        memcpy(lam_old, lam, sizeof lam);
        c1_point(G, c, mu, th + alpha, &r_new, lam_new);
        double los = 2 * lam_new[0] * (l0[0] - lam_new[0]) + 2 * lam_new[1] * (l0[1] - lam_new[1]) -
                     2 * mu * mu * lam_new[2] * (l0[2] - lam_new[2]);
        if (los < 0 || r_new < 0) {
            alpha *= p->beta2;
            continue;
        }
        thp = th_old, memcpy(lamp, lam_old, sizeof lam);
        th += alpha, memcpy(lam, lam_new, sizeof lam);
        if (c1_grad(G, c, mu, lam) * D0 > 0) alpha *= p->beta3;
        else break;
    }
    for (;;) { /* bisection */
        steps++;
        double thm = 0.5 * (th + thp), rm, lm[3];
        c1_point(G, c, mu, thm, &rm, lm);
        if (c1_grad(G, c, mu, lm) * D0 > 0) thp = thm, memcpy(lamp, lm, sizeof lm);
        else th = thm, memcpy(lam, lm, sizeof lm);
        double dx = lamp[0] - lam[0], dy = lamp[1] - lam[1], dz = lamp[2] - lam[2];
        if (sqrt(dx * dx + dy * dy + dz * dz) < p->contact_tol || steps > 200) break;
    }
    memcpy(out, lam, sizeof lam);
    return steps;
}

/* ---------------------------------------------------------------------------------------------------- */

/* Harvests single-contact slip problems as the paper did: from the four experiments (trot, hang, drop,
 * random; dt 1 ms), each contact's own problem at the solved step, c_i = c_free,i + sum_{j != i} G_ij
 * lambda_j with its block G_ii, kept when it is a slip.  Returns how many were found (<= n). */
static int c1_harvest(c1_problem *P, int n)
{
    const int kinds[4] = {ENV_SCN_TROT, ENV_SCN_HANG, ENV_SCN_DROP, ENV_SCN_RANDOM};
    int got = 0;
    char err[512];
    for (int k = 0; k < 4 && got < n; k++) {
        sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
        if (!m || env_scenario_configure_model(m, kinds[k], err, sizeof err)) {
            fprintf(stderr, "contact1: %s\n", err);
            sim_model_destroy(&m);
            return got;
        }
        sim_data *d = sim_data_new(m);
        env_scenario st;
        env_scenario_init(&st, m, d, kinds[k], 11, err, sizeof err);
        int want = (n - got) / (4 - k);
        int mine = 0;
        for (long step = 0; step < 200000 && mine < want; step++) {
            env_scenario_control(&st, m, d, 1e-3);
            sim_step(m, d, 1e-3);
            int nc = d->ncon, n3 = 3 * nc;
            for (int i = 0; i < nc && mine < want; i++) {
                c1_problem *p = &P[got];
                for (int a = 0; a < 3; a++) {
                    double ci = d->cfree[3 * i + a];
                    for (int j = 0; j < n3; j++)
                        if (j / 3 != i) ci += d->G[(3 * i + a) * n3 + j] * d->lambda[j];
                    p->c[a] = ci;
                    for (int b = 0; b < 3; b++) p->G[3 * a + b] = d->G[(3 * i + a) * n3 + 3 * i + b];
                }
                p->mu = d->mu[i];
                double l[3];
                if (sim_contact_single(p->G, p->c, p->mu, l, NULL, NULL) == SIM_CONTACT_SLIP) {
                    got++;
                    mine++;
                }
            }
        }
        sim_data_destroy(&d);
        sim_model_destroy(&m);
    }
    return got;
}

int bench_contact1(int argc, char **argv)
{
    const int n = atoi(bench_arg(argc, argv, "--samples", "4096"));
    const int repeats = atoi(bench_arg(argc, argv, "--repeats", "15"));
    uint64_t seed = strtoull(bench_arg(argc, argv, "--seed", "1"), NULL, 10);
    const int core = atoi(bench_arg(argc, argv, "--core", "0"));
    const double coupling = atof(bench_arg(argc, argv, "--coupling", "0.5"));
    if (n < 1 || repeats < 1 || repeats > 1000 || !(coupling >= 0 && coupling < 1)) {
        fprintf(stderr, "contact1: need --samples >= 1, 1 <= --repeats <= 1000 and 0 <= --coupling < 1\n");
        return 2;
    }
    c1_problem *P = malloc(sizeof *P * (size_t)n);
    double *L = malloc(sizeof(double) * 3 * (size_t)n);
    double *t_opt = malloc(sizeof(double) * (size_t)repeats), *t_naive = malloc(sizeof(double) * (size_t)repeats);
    double *t_ref = malloc(sizeof(double) * (size_t)repeats), *t_coul = malloc(sizeof(double) * (size_t)repeats);
    if (!P || !L || !t_opt || !t_naive || !t_ref || !t_coul) {
        free(P), free(L), free(t_opt), free(t_naive), free(t_ref), free(t_coul);
        fprintf(stderr, "contact1: out of memory\n");
        return 1;
    }
    const char *source = bench_arg(argc, argv, "--source", "scenarios");
    int scen = strcmp(source, "synthetic") != 0;
    if (scen) {
        int got = c1_harvest(P, n);
        if (got < n) {
            fprintf(stderr, "contact1: harvested only %d slip problems from the scenarios\n", got);
            if (got == 0) return 1;
        }
        for (int i = got; i < n; i++) P[i] = P[i % got];
    } else {
        for (int i = 0; i < n; i++) c1_make(&seed, coupling, &P[i]);
    }
    bench_pin(core);
    sim_solver_params prm;
    sim_solver_default_params(&prm);

    /* headline: Algorithm 1 as published (contact_refine = 0); also timed: the solver's default, which adds
       one regula-falsi step inside the final bracket */
    sim_solver_params prm_ref = prm;
    prm.contact_refine = 0;
    prm_ref.contact_refine = 1;
    long steps = 0, steps_naive = 0, steps_coul = 0, no_root = 0;
    double sink = 0, max_diff = 0;
    for (int w = 0; w < 2; w++) /* warm-up */
        for (int i = 0; i < n; i++) sim_contact_single(P[i].G, P[i].c, P[i].mu, L + 3 * i, &prm, NULL);
    for (int rep = 0; rep < repeats; rep++) {
        long s = 0;
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < n; i++) {
            int st;
            sim_contact_single(P[i].G, P[i].c, P[i].mu, L + 3 * i, &prm, &st);
            s += st;
        }
        uint64_t t1 = bench_now_ns();
        t_opt[rep] = (double)(t1 - t0) / n;
        steps = s;
        /* the default (refined) solve */
        t0 = bench_now_ns();
        for (int i = 0; i < n; i++) {
            double l[3];
            sim_contact_single(P[i].G, P[i].c, P[i].mu, l, &prm_ref, NULL);
            sink += l[1];
        }
        t1 = bench_now_ns();
        t_ref[rep] = (double)(t1 - t0) / n;
        /* the baseline, interleaved so that all see the same machine state */
        s = 0;
        t0 = bench_now_ns();
        for (int i = 0; i < n; i++) {
            double l[3];
            s += c1_naive(P[i].G, P[i].c, P[i].mu, l, &prm);
            sink += l[0];
            if (rep == 0) {
                double d = fmax(fabs(l[0] - L[3 * i]), fmax(fabs(l[1] - L[3 * i + 1]), fabs(l[2] - L[3 * i + 2])));
                if (d > max_diff) max_diff = d;
            }
        }
        t1 = bench_now_ns();
        t_naive[rep] = (double)(t1 - t0) / n;
        steps_naive = s;
        /* the Coulomb per-contact solve (same stepping and bisection, Coulomb's root instead of dE/dtheta's) */
        s = 0;
        long nr_sum = 0;
        t0 = bench_now_ns();
        for (int i = 0; i < n; i++) {
            double l[3];
            int st, nr;
            sim_contact_single_coulomb(P[i].G, P[i].c, P[i].mu, l, &prm, &st, &nr);
            s += st;
            nr_sum += nr;
            sink += l[2];
        }
        t1 = bench_now_ns();
        t_coul[rep] = (double)(t1 - t0) / n;
        steps_coul = s;
        no_root = nr_sum;
    }
    double best = t_opt[0];
    for (int r = 1; r < repeats; r++) best = fmin(best, t_opt[r]);
    const double med = bench_median(t_opt, repeats), med_naive = bench_median(t_naive, repeats);
    const double med_ref = bench_median(t_ref, repeats);
    const double mean_steps = (double)steps / n, mean_steps_naive = (double)steps_naive / n;
    const int agree = max_diff <= 2 * prm.contact_tol;

    const double med_coul = bench_median(t_coul, repeats);
    printf("{\"bench\":\"contact1\",\"solver\":\"paper-bisection\",\"source\":\"%s\",\"ns_per_solve_median\":%.1f,\"ns_per_solve_min\":%.1f,"
           "\"us_per_solve\":%.4f,\"mean_steps\":%.2f,\"repeats\":%d,\"samples\":%d,\"precision_Ns\":%g,"
           "\"coupling\":%.2f,\"refined_ns_per_solve_median\":%.1f,"
           "\"baseline\":\"algorithm1_angles\",\"baseline_ns_per_solve_median\":%.1f,\"baseline_mean_steps\":%.2f,"
           "\"speedup_vs_baseline\":%.2f,\"max_abs_diff_vs_baseline_Ns\":%.3g,\"target_us\":0.3,\"paper_us\":0.58,"
           "\"cpu\":\"%s\"}\n",
           scen ? "scenarios" : "synthetic", med, best, med / 1000.0, mean_steps, repeats, n, prm.contact_tol, coupling, med_ref, med_naive,
           mean_steps_naive,
           med_naive / med, max_diff, bench_cpu());
    printf("{\"bench\":\"contact1\",\"solver\":\"coulomb-bisection\",\"source\":\"%s\",\"ns_per_solve_median\":%.1f,"
           "\"us_per_solve\":%.4f,\"mean_steps\":%.2f,\"no_root\":%ld,\"no_root_fraction\":%.4f,\"repeats\":%d,"
           "\"samples\":%d,\"precision_Ns\":%g,\"ratio_to_paper_model\":%.3f,\"target_us\":0.3,\"cpu\":\"%s\"}\n",
           scen ? "scenarios" : "synthetic", med_coul, med_coul / 1000.0, (double)steps_coul / n, no_root,
           (double)no_root / n, repeats, n, prm.contact_tol, med_coul / med, bench_cpu());
    fflush(stdout);
    fprintf(stderr, "contact1: single-contact slip solve, %d problems x %d repeats (cpu: %s)\n", n, repeats, bench_cpu());
    fprintf(stderr, "  %-34s %10s %10s %8s\n", "", "ns/solve", "us/solve", "steps");
    fprintf(stderr, "  %-34s %10.1f %10.3f %8.2f\n", "sim_contact_single, Algorithm 1", med, med / 1000.0, mean_steps);
    fprintf(stderr, "  %-34s %10.1f %10.3f %8.2f\n", "  + regula-falsi refinement (default)", med_ref, med_ref / 1000.0,
            mean_steps);
    fprintf(stderr, "  %-34s %10.1f %10.3f %8.2f\n", "sim_contact_single_coulomb", med_coul, med_coul / 1000.0,
            (double)steps_coul / n);
    fprintf(stderr, "  %-34s %10.1f %10.3f %8.2f\n", "Algorithm 1 with angles (baseline)", med_naive, med_naive / 1000.0,
            mean_steps_naive);
    fprintf(stderr, "  %-34s %10.1f %10.3f\n", "paper (Xeon E5-1620 3.6 GHz)", 580.0, 0.58);
    fprintf(stderr, "  speedup vs baseline %.2fx; max |dlambda| vs baseline %.2g N s (%s); target 0.3 us: %s (paper "
            "model), %s (Coulomb; %ld of %d blocks without a Coulomb slip root)\n",
            med_naive / med, max_diff, agree ? "within precision" : "DISAGREE", med <= 300 ? "met" : "not met",
            med_coul <= 300 ? "met" : "not met", no_root, n);
    if (sink == 12345.678) fprintf(stderr, " ");
    free(P), free(L), free(t_opt), free(t_naive), free(t_ref), free(t_coul);
    return agree ? 0 : 1;
}

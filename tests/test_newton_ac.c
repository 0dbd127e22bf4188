/* The semismooth Newton on Alart and Curnier's equations (sim/sim_solver_ac.c: sim_solver_coulomb_newton_ac), the
 * first step of coulomb-stall-admm's direct Coulomb solve.  References written for the tests, sharing no code with
 * sim/: closed-form answers of one contact with an isotropic Delassus matrix, and tests/helpers/coulomb_ref.c (brute
 * force over every block's mode in long double, and its own measure of Coulomb's conditions) on random problems and
 * on the contact problems harvested where the walk and rough tasks' sweeps stall (tests/testdata/walk_stalls.txt,
 * rough_stalls.txt; see test_coulomb_direct.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers/coulomb_ref.h"
#include "helpers/stall_fixtures.h"
#include "sim_metrics.h"
#include "sim_solver.h"

#define MAXN STALL_MAXN
typedef stall_problem problem;

static int load_file(const char *path, problem *ps, int cap) { return stall_fixtures_load(path, ps, cap); }

static const double TOL = 1e-6;

/* One contact, G = I / m: the answer in closed form (the test below checks the Newton's against it).  Approaching (c_n < 0) it stops (lambda_n = -m c_n); it sticks
 * (lambda_T = -m c_T) when m |c_T| <= mu lambda_n, else it slides on with v_T = c_T (1 - mu lambda_n / (m |c_T|)),
 * lambda_T = -mu lambda_n c_T / |c_T|; separating (c_n >= 0) it is left alone. */
static void one_contact_answer(double m, const double c[3], double mu, double l[3])
{
    if (c[2] >= 0) {
        l[0] = l[1] = l[2] = 0;
        return;
    }
    l[2] = -m * c[2];
    const double ct = hypot(c[0], c[1]);
    if (m * ct <= mu * l[2]) l[0] = -m * c[0], l[1] = -m * c[1];
    else l[0] = -mu * l[2] * c[0] / ct, l[1] = -mu * l[2] * c[1] / ct;
}

Test(newton_ac, one_contact_matches_the_closed_form)
{
    int seen[3] = {0, 0, 0}; /* open, stick, slip */
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (int k = 0; k < 300; k++) {
        double r[6];
        for (int a = 0; a < 6; a++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            r[a] = (double)(x >> 11) / 9007199254740992.0;
        }
        const double m = 0.5 + 40 * r[0], mu = 0.1 + r[1];
        const double c[3] = {2 * r[2] - 1, 2 * r[3] - 1, 1.6 * r[4] - 1.2};
        double G[9] = {1 / m, 0, 0, 0, 1 / m, 0, 0, 0, 1 / m}, want[3], l[3] = {0, 0, 0}, v[3];
        /* the start: zero, or a wrong guess of the other modes */
        if (k % 3 == 1) l[2] = 1, l[0] = -0.5;
        if (k % 3 == 2) l[2] = m, l[1] = mu * m;
        one_contact_answer(m, c, mu, want);
        const int found = sim_solver_coulomb_newton_ac(1, G, c, &mu, TOL, 30, l, v, NULL);
        cr_assert(found, "case %d (m %g, mu %g, c %g %g %g): no Coulomb solution", k, m, mu, c[0], c[1], c[2]);
        /* the answer's violation is below TOL in velocity (m/s) as well as impulse (N·s) units, so an impulse may
           be off by up to m TOL */
        for (int a = 0; a < 3; a++)
            cr_assert_leq(fabs(l[a] - want[a]), m * TOL, "case %d (m %g): lambda[%d] %.12g, closed form %.12g", k, m, a,
                          l[a], want[a]);
        seen[c[2] >= 0 ? 0 : hypot(want[0], want[1]) < mu * want[2] * (1 - 1e-9) ? 1 : 2]++;
    }
    cr_log_info("one contact: %d open, %d sticking, %d slipping, each as the closed form", seen[0], seen[1], seen[2]);
    for (int s = 0; s < 3; s++) cr_assert_geq(seen[s], 30, "mode %d too rare to test", s);
}

/* Random problems of 1 to 4 blocks (G = S^T S + a ridge over an 18-dof tree, every block approaching and pushed
 * sideways, some blocks joint limits or bounded rows): from a zero start, every answer it flags is a Coulomb solution
 * by the reference's measure, and it finds one on nearly every problem on which the reference's brute force does. */
Test(newton_ac, random_problems_against_brute_force, .timeout = 120)
{
    enum { NV = 18 };
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int ref_solved = 0, found_too = 0, found = 0, total = 0;
    for (int k = 0; k < 400; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const int n = 1 + (int)(x % 4), N = 3 * n;
        double S[NV * 3 * MAXN], G[9 * MAXN * MAXN], c[3 * MAXN], mu[MAXN], l[3 * MAXN], v[3 * MAXN], lr[3 * MAXN];
        for (int a = 0; a < NV * N; a++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            S[a] = (double)(x >> 11) / 4503599627370496.0 - 1.0;
        }
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const int kind = (int)(x % 10); /* 0: a joint limit (zero tangent rows), 1: a bounded row, else friction */
            if (kind == 0)
                for (int a = 0; a < NV; a++) S[a * N + 3 * i] = S[a * N + 3 * i + 1] = 0;
            mu[i] = kind == 0 ? 0 : kind == 1 ? -0.2 - 0.3 * (double)(x % 7) / 7 : 0.2 + 0.8 * (double)(x % 97) / 97;
            c[3 * i] = 0.4 * ((double)(x >> 20 & 255) / 255 - 0.5);
            c[3 * i + 1] = 0.4 * ((double)(x >> 28 & 255) / 255 - 0.5);
            c[3 * i + 2] = -0.2 - 0.6 * (double)(x >> 36 & 255) / 255;
            if (kind == 1) c[3 * i] = c[3 * i + 1] = 0;
        }
        for (int a = 0; a < N; a++)
            for (int b = 0; b < N; b++) {
                double s = 0;
                for (int q = 0; q < NV; q++) s += S[q * N + a] * S[q * N + b];
                G[a * N + b] = s + (a == b && (S[a] != 0 || a % 3 == 2) ? 1e-3 : 0);
            }
        memset(l, 0, sizeof l);
        const int ok = sim_solver_coulomb_newton_ac(n, G, c, mu, TOL, 30, l, v, NULL);
        const int ref = coulomb_ref_solve(n, G, c, mu, 1e-9, lr);
        total++;
        if (ok) {
            found++;
            const double viol = coulomb_ref_violation(n, G, c, mu, l);
            cr_assert_leq(viol, TOL, "problem %d (n %d): flagged Coulomb, the reference measures %g", k, n, viol);
        }
        if (ref == 1) ref_solved++, found_too += ok;
    }
    cr_log_info("%d random problems: the reference solves %d, the Newton %d (%d of the reference's)", total, ref_solved,
                found, found_too);
    cr_assert_geq(ref_solved, total / 2);
    cr_assert_geq(found_too, ref_solved * 95 / 100);
}

/* The harvested stalls (walk and rough), each from its warm start and from the CCP answer ADMM gives (the starts
 * coulomb-stall-admm uses besides the stalled iterate): every answer flagged is Coulomb by the reference's measure,
 * and from one start or the other it solves most of them, the rough ones too, which the mode-set search with the cone
 * formulation could not (test_coulomb_direct.c). */
Test(newton_ac, harvested_stalls, .timeout = 120)
{
    static problem ps[96];
    int nw = load_file("tests/testdata/walk_stalls.txt", ps, 64);
    const int np = nw + load_file("tests/testdata/rough_stalls.txt", ps + nw, 96 - nw);
    int solved[2] = {0, 0}, rough = 0;
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        double l[3 * MAXN], v[3 * MAXN];
        memcpy(l, q->warm, sizeof l);
        int ok = sim_solver_coulomb_newton_ac(q->n, q->G, q->c, q->mu, TOL, 30, l, v, NULL);
        if (!ok) {
            sim_solver_params p;
            sim_solver_default_params(&p);
            sim_solver_stats st;
            memcpy(l, q->warm, sizeof l);
            sim_solve_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
            ok = sim_solver_coulomb_newton_ac(q->n, q->G, q->c, q->mu, TOL, 30, l, v, NULL);
        }
        if (ok) {
            const double viol = coulomb_ref_violation(q->n, q->G, q->c, q->mu, l);
            cr_assert_leq(viol, TOL, "fixture %d: flagged Coulomb, the reference measures %g", k, viol);
            double vv[3 * MAXN];
            sim_contact_velocity(q->n, q->G, q->c, l, vv);
            cr_assert_eq(memcmp(v, vv, sizeof(double) * 3 * (size_t)q->n), 0, "fixture %d: v is not G lambda + c", k);
        }
        solved[k >= nw] += ok;
        rough += k >= nw;
    }
    cr_log_info("harvested stalls: the Newton solves %d of %d walk, %d of %d rough", solved[0], nw, solved[1], rough);
    cr_assert_geq(solved[0], nw * 9 / 10);
    cr_assert_geq(solved[1], rough * 3 / 4);
}

/* In the default solver the Newton answers the harvested stalls before ADMM: most end Coulomb with no ADMM iteration
 * (st.direct, st.fallback_iterations = 0), and the Newton's part of the direct iterations stays within the cap. */
Test(newton_ac, default_solver_answers_before_admm, .timeout = 120)
{
    static problem ps[96];
    int nw = load_file("tests/testdata/walk_stalls.txt", ps, 64);
    const int np = nw + load_file("tests/testdata/rough_stalls.txt", ps + nw, 96 - nw);
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.max_iter = 50;    /* the walk and rough tasks' solver_max_iter */
    p.limit_rounds = 0; /* as when the fixtures were harvested */
    int before = 0, coulomb = 0;
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        double l[3 * MAXN];
        memcpy(l, q->warm, sizeof l);
        sim_solver_stats st;
        sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
        cr_assert_eq(st.fallback, 1, "fixture %d no longer stalls", k);
        cr_assert_leq(st.direct_iterations, sim_solver_direct_cap(SIM_SOLVER_COULOMB_STALL_ADMM, &p));
        if (st.answer == SIM_ANSWER_COULOMB) {
            coulomb++;
            cr_assert_leq(coulomb_ref_violation(q->n, q->G, q->c, q->mu, l), TOL, "fixture %d", k);
        }
        before += st.direct && st.fallback_iterations == 0;
    }
    cr_log_info("%d harvested stalls: %d Coulomb, %d answered before ADMM", np, coulomb, before);
    cr_assert_eq(coulomb, np);
    cr_assert_geq(before, np * 9 / 10);
}

/* Out of range: no blocks, or more than the direct solve takes, returns 0 without touching lambda; max_iter 0 only
 * checks the start. */
Test(newton_ac, bounds)
{
    double G[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, c[3] = {0, 0, -1}, mu = 0.5, l[3] = {7, 7, 7}, v[3];
    cr_assert_eq(sim_solver_coulomb_newton_ac(0, G, c, &mu, TOL, 30, l, v, NULL), 0);
    cr_assert_eq(sim_solver_coulomb_newton_ac(SIM_SOLVER_DIRECT_MAX_CONTACTS + 1, G, c, &mu, TOL, 30, l, v, NULL), 0);
    cr_assert_eq(l[0], 7);
    int it = 0;
    cr_assert_eq(sim_solver_coulomb_newton_ac(1, G, c, &mu, TOL, 0, l, v, &it), 0);
    cr_assert_eq(it, 0);
    l[0] = 0, l[1] = 0, l[2] = 1; /* the answer */
    cr_assert_eq(sim_solver_coulomb_newton_ac(1, G, c, &mu, TOL, 0, l, v, &it), 1);
    l[2] = 0;
    cr_assert_eq(sim_solver_coulomb_newton_ac(1, G, c, &mu, TOL, 30, l, v, &it), 1);
    cr_assert_gt(it, 0);
    cr_assert_float_eq(l[2], 1.0, 1e-12);
}

/* test_solver.c — the contact solvers (sim_solver.h): exact single-contact model against a dense
 * brute-force search, mode classification, limits of mu, degenerate blocks, multi-contact bisection vs
 * PGS on random quadruped-like problems, warm starts, dissipation, and the metrics on hand-made cases. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim_metrics.h"
#include "sim_solver.h"
#include "helpers/rigid_contact.h"

/* ---------------------------------------------------------------------------------------------- */
/* Helpers: a deterministic RNG, small dense linear algebra, the energy.                            */

typedef struct { uint64_t s; } rng_t;

static uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double urand(rng_t *r, double lo, double hi) { return lo + (hi - lo) * ((rng_next(r) >> 11) * 0x1.0p-53); }
static double nrand(rng_t *r)
{
    double u1 = urand(r, 1e-300, 1.0), u2 = urand(r, 0.0, 1.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* In-place Cholesky of an n x n SPD matrix (lower factor in A). Returns 0 on success. */
static int chol(double *A, int n)
{
    for (int j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int k = 0; k < j; k++) s -= A[j * n + k] * A[j * n + k];
        if (!(s > 0)) return -1;
        A[j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (int k = 0; k < j; k++) t -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = t / A[j * n + j];
        }
    }
    return 0;
}
/* Solves L L^T x = b in place (L from chol). */
static void chol_solve(const double *L, int n, double *x)
{
    for (int i = 0; i < n; i++) {
        double s = x[i];
        for (int k = 0; k < i; k++) s -= L[i * n + k] * x[k];
        x[i] = s / L[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = x[i];
        for (int k = i + 1; k < n; k++) s -= L[k * n + i] * x[k];
        x[i] = s / L[i * n + i];
    }
}

/* G = J M^-1 J^T for J (m x nv) and the Cholesky factor L of M. */
static void delassus(const double *J, int m, const double *L, int nv, double *G)
{
    double X[64 * 64];
    for (int r = 0; r < m; r++) {
        double *x = X + r * nv;
        memcpy(x, J + r * nv, sizeof(double) * (size_t)nv);
        chol_solve(L, nv, x);
    }
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) {
            double s = 0;
            for (int k = 0; k < nv; k++) s += J[a * nv + k] * X[b * nv + k];
            G[a * m + b] = s;
        }
    for (int a = 0; a < m; a++) /* exact symmetry */
        for (int b = 0; b < a; b++) G[a * m + b] = G[b * m + a] = 0.5 * (G[a * m + b] + G[b * m + a]);
}

/* A random SPD 3x3 Delassus block J M^-1 J^T (J 3x6, M 6x6 SPD), scaled to a diagonal ~ 0.05-0.5. */
static void rand_block(rng_t *r, double G[9])
{
    double M[36], J[18];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) M[i * 6 + j] = 0;
    double B[36];
    for (int i = 0; i < 36; i++) B[i] = nrand(r);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double s = i == j ? 0.5 : 0.0;
            for (int k = 0; k < 6; k++) s += B[i * 6 + k] * B[j * 6 + k];
            M[i * 6 + j] = s;
        }
    for (int i = 0; i < 18; i++) J[i] = nrand(r);
    cr_assert_eq(chol(M, 6), 0);
    delassus(J, 3, M, 6, G);
    double sc = urand(r, 0.05, 0.5) / (G[0] + G[4] + G[8]) * 3.0;
    for (int i = 0; i < 9; i++) G[i] *= sc;
}

static void matvec3(const double G[9], const double x[3], double y[3])
{
    for (int a = 0; a < 3; a++) y[a] = G[3 * a] * x[0] + G[3 * a + 1] * x[1] + G[3 * a + 2] * x[2];
}

/* E(lambda) up to a constant: 1/2 l^T G l + c^T l  (= 1/2 (G l + c)^T G^-1 (G l + c) - 1/2 c^T G^-1 c). */
static double energy(int N, const double *G, const double *c, const double *l)
{
    double e = 0;
    for (int a = 0; a < N; a++) {
        double s = 0;
        for (int b = 0; b < N; b++) s += G[a * N + b] * l[b];
        e += l[a] * (0.5 * s + c[a]);
    }
    return e;
}

static double norm3(const double x[3]) { return sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]); }

/* Zero-velocity impulse -G^-1 c by Cholesky (independent of the solver's adjugate). */
static void stick_impulse(const double G[9], const double c[3], double l0[3])
{
    double L[9];
    memcpy(L, G, sizeof L);
    cr_assert_eq(chol(L, 3), 0);
    for (int a = 0; a < 3; a++) l0[a] = -c[a];
    chol_solve(L, 3, l0);
}

/* Point of the slip ellipse at angle th, or 0 if r <= 0 there. */
static int ellipse_point(const double G[9], const double c[3], double mu, double ct, double st, double l[3])
{
    double d = G[8] / mu + G[6] * ct + G[7] * st;
    if (!(d > 0)) return 0;
    double r = -c[2] / d;
    l[0] = r * ct, l[1] = r * st, l[2] = r / mu;
    return 1;
}

#define NGRID 100000
static double grid_c[NGRID], grid_s[NGRID];
static void grid_init(void)
{
    if (grid_c[0] == 1.0) return;
    for (int k = 0; k < NGRID; k++) sincos(2 * M_PI * k / NGRID, &grid_s[k], &grid_c[k]);
}

/* dE/dtheta on the ellipse from the full 3D gradient: (G lambda + c) . dlambda/dtheta, with dlambda/dtheta
 * differentiated directly from lambda(theta) = (r cos, r sin, r / mu), r = -c_n / d(theta).  Independent of the
 * solver's hybrid (eta, Gbar, cbar) form.  Returns NAN where r <= 0. */
static double dE_dtheta(const double G[9], const double c[3], double mu, double th)
{
    double ct = cos(th), st = sin(th);
    double d = G[8] / mu + G[6] * ct + G[7] * st;
    if (!(d > 0)) return NAN;
    double r = -c[2] / d, dd = -G[6] * st + G[7] * ct, dr = -r * dd / d;
    double l[3] = {r * ct, r * st, r / mu}, dl[3] = {dr * ct - r * st, dr * st + r * ct, dr / mu}, v[3];
    matvec3(G, l, v);
    return (v[0] + c[0]) * dl[0] + (v[1] + c[1]) * dl[1] + (v[2] + c[2]) * dl[2];
}

/* Brute force: global minimum of E on the slip ellipse by a 1e5-sample grid, then the zero of dE/dtheta
 * between the neighbours of the best sample (bisection to machine precision; the energy itself is too flat
 * near the minimum to locate it better than ~1e-8 rad).  Returns the minimum sampled energy in *emin_grid. */
static void brute_slip(const double G[9], const double c[3], double mu, double out[3], double *emin_grid)
{
    grid_init();
    double best = INFINITY, l[3];
    int kb = -1;
    for (int k = 0; k < NGRID; k++) {
        if (!ellipse_point(G, c, mu, grid_c[k], grid_s[k], l)) continue;
        double e = energy(3, G, c, l);
        if (e < best) best = e, kb = k;
    }
    cr_assert(kb >= 0);
    *emin_grid = best;
    double h = 2 * M_PI / NGRID;
    double a = 2 * M_PI * kb / NGRID - h, b = a + 2 * h;
    double fa = dE_dtheta(G, c, mu, a), fb = dE_dtheta(G, c, mu, b);
    if (fa < 0 && fb > 0) {
        for (int it = 0; it < 200 && b - a > 1e-17; it++) {
            double m = 0.5 * (a + b), fm = dE_dtheta(G, c, mu, m);
            if (fm < 0) a = m;
            else b = m;
        }
    } else { /* not bracketed (flat energy): golden section on E */
        const double g = (sqrt(5.0) - 1) / 2;
        for (int it = 0; it < 200; it++) {
            double x1 = b - g * (b - a), x2 = a + g * (b - a), l1[3], l2[3];
            int ok1 = ellipse_point(G, c, mu, cos(x1), sin(x1), l1);
            int ok2 = ellipse_point(G, c, mu, cos(x2), sin(x2), l2);
            double e1 = ok1 ? energy(3, G, c, l1) : INFINITY, e2 = ok2 ? energy(3, G, c, l2) : INFINITY;
            if (e1 < e2) b = x2;
            else a = x1;
        }
    }
    double t = 0.5 * (a + b);
    cr_assert(ellipse_point(G, c, mu, cos(t), sin(t), out));
}

/* ---------------------------------------------------------------------------------------------- */
/* Single contact.                                                                                  */

Test(solver_single, slip_matches_bruteforce_1000_cases)
{
    rng_t r = {42};
    int nslip = 0, ntried = 0;
    double worst = 0, worst_rel = 0;
    long steps_total = 0;
    while (nslip < 1000) {
        ntried++;
        double G[9], c[3], l[3], l0[3];
        rand_block(&r, G);
        double mu = urand(&r, 0.1, 1.5);
        c[2] = -urand(&r, 0.01, 1.0);
        c[0] = nrand(&r) * urand(&r, 0.0, 2.0);
        c[1] = nrand(&r) * urand(&r, 0.0, 2.0);
        stick_impulse(G, c, l0);
        int expect_stick = l0[2] >= 0 && hypot(l0[0], l0[1]) <= mu * l0[2];
        int steps;
        int mode = sim_contact_single(G, c, mu, l, NULL, &steps);
        if (expect_stick) {
            cr_assert_eq(mode, SIM_CONTACT_STICK);
            continue;
        }
        cr_assert_eq(mode, SIM_CONTACT_SLIP, "case %d: mode %d", ntried, mode);
        nslip++;
        steps_total += steps;
        double lb[3], emin;
        brute_slip(G, c, mu, lb, &emin);
        double dl[3] = {l[0] - lb[0], l[1] - lb[1], l[2] - lb[2]};
        double err = norm3(dl);
        if (err > worst) worst = err;
        if (err / norm3(lb) > worst_rel) worst_rel = err / norm3(lb);
        cr_assert(err <= 1e-6, "slip case %d: |lambda - brute| = %.3g (lambda %.6g %.6g %.6g, brute %.6g %.6g %.6g)",
                  nslip, err, l[0], l[1], l[2], lb[0], lb[1], lb[2]);
        /* optimality: no sampled feasible point has a lower energy */
        double e = energy(3, G, c, l), scale = fabs(emin) + 1e-12;
        cr_assert(e <= emin + 1e-9 * scale, "E(lambda) %.12g > sampled min %.12g", e, emin);
        /* on the ellipse: v_n = 0 and |lambda_T| = mu lambda_n */
        double v[3];
        matvec3(G, l, v);
        for (int a = 0; a < 3; a++) v[a] += c[a];
        cr_assert(fabs(v[2]) <= 1e-12 * (1 + fabs(c[2])), "v_n = %g", v[2]);
        cr_assert(fabs(hypot(l[0], l[1]) - mu * l[2]) <= 1e-12 * norm3(l));
        cr_assert(l[2] > 0);
        /* in the line of sight of lambda0: grad h2(lambda) . (lambda0 - lambda) >= 0 */
        double los = 2 * l[0] * (l0[0] - l[0]) + 2 * l[1] * (l0[1] - l[1]) - 2 * mu * mu * l[2] * (l0[2] - l[2]);
        cr_assert(los >= -1e-9 * norm3(l) * norm3(l0));
        /* dissipative: E(lambda) <= E(0) */
        cr_assert(e <= 0);
        /* the model's KKT (exact violation) vanishes up to the bisection precision */
        double me = sim_contact_model_error(1, G, c, &mu, l);
        cr_assert(me < 1e-5, "model error %g", me);
    }
    cr_log_info("slip: %d of %d random cases, worst |dlambda| %.3g N s (rel %.3g), mean steps %.2f", nslip, ntried,
                worst, worst_rel, (double)steps_total / nslip);
}

Test(solver_single, stick_gives_zero_velocity)
{
    rng_t r = {7};
    for (int t = 0; t < 2000; t++) {
        double G[9], c[3], l[3], v[3];
        rand_block(&r, G);
        double mu = urand(&r, 0.3, 1.2);
        c[2] = -urand(&r, 0.01, 1.0);
        /* small tangential velocity relative to the normal one, in the direction of a stick */
        double l0[3] = {urand(&r, -0.2, 0.2) * mu, urand(&r, -0.2, 0.2) * mu, 1.0};
        /* c = -G l0 * s makes lambda0 = s l0, which is inside the cone */
        matvec3(G, l0, v);
        double s = -c[2] / v[2];
        for (int a = 0; a < 3; a++) c[a] = -s * v[a];
        int mode = sim_contact_single(G, c, mu, l, NULL, NULL);
        cr_assert_eq(mode, SIM_CONTACT_STICK);
        matvec3(G, l, v);
        for (int a = 0; a < 3; a++) v[a] += c[a];
        cr_assert(norm3(v) <= 1e-12 * (norm3(c) + 1), "|v| = %g", norm3(v));
        cr_assert(hypot(l[0], l[1]) <= mu * l[2] * (1 + 1e-12));
        cr_assert(sim_contact_model_error(1, G, c, &mu, l) < 1e-12);
    }
}

Test(solver_single, open_gives_zero_impulse)
{
    rng_t r = {9};
    for (int t = 0; t < 1000; t++) {
        double G[9], c[3], l[3] = {1, 2, 3};
        rand_block(&r, G);
        c[0] = nrand(&r), c[1] = nrand(&r), c[2] = urand(&r, 1e-9, 2.0);
        int steps = -1;
        int mode = sim_contact_single(G, c, 0.8, l, NULL, &steps);
        cr_assert_eq(mode, SIM_CONTACT_OPEN);
        cr_assert(l[0] == 0 && l[1] == 0 && l[2] == 0);
        cr_assert_eq(steps, 0);
        double mu = 0.8;
        cr_assert(sim_contact_model_error(1, G, c, &mu, l) == 0);
    }
}

Test(solver_single, classification_hand_cases)
{
    /* G = g I: lambda0 = -c / g; the slip solution is the radial projection (the paper's special case) */
    const double g = 0.2, mu = 0.8;
    double G[9] = {g, 0, 0, 0, g, 0, 0, 0, g}, l[3];
    double c_open[3] = {0.5, -0.3, 0.1};
    cr_assert_eq(sim_contact_single(G, c_open, mu, l, NULL, NULL), SIM_CONTACT_OPEN);
    double c_stick[3] = {0.01, 0.0, -1.0};
    cr_assert_eq(sim_contact_single(G, c_stick, mu, l, NULL, NULL), SIM_CONTACT_STICK);
    cr_assert_float_eq(l[0], -0.05, 1e-15);
    cr_assert_float_eq(l[2], 5.0, 1e-14);
    double c_slip[3] = {2.0, 0.0, -0.1};
    cr_assert_eq(sim_contact_single(G, c_slip, mu, l, NULL, NULL), SIM_CONTACT_SLIP);
    /* v_n = 0 -> lambda_n = 0.1 / 0.2 = 0.5, lambda_T = -mu lambda_n along -c_T */
    cr_assert_float_eq(l[2], 0.5, 1e-14);
    cr_assert_float_eq(l[0], -0.4, 1e-14);
    cr_assert_float_eq(l[1], 0.0, 1e-14);
    /* a slip at 45 degrees with coupling: compare to the brute force */
    double G2[9] = {0.3, 0.05, 0.1, 0.05, 0.25, -0.08, 0.1, -0.08, 0.2};
    double c2[3] = {1.0, 1.0, -0.3}, lb[3], emin;
    cr_assert_eq(sim_contact_single(G2, c2, 0.5, l, NULL, NULL), SIM_CONTACT_SLIP);
    brute_slip(G2, c2, 0.5, lb, &emin);
    cr_assert(fabs(l[0] - lb[0]) < 1e-6 && fabs(l[1] - lb[1]) < 1e-6 && fabs(l[2] - lb[2]) < 1e-6);
    /* c_n exactly 0 with a sliding tangential velocity: the ellipse is the apex, lambda = 0 */
    double c3[3] = {1.0, 0.0, 0.0};
    cr_assert_eq(sim_contact_single(G, c3, mu, l, NULL, NULL), SIM_CONTACT_OPEN);
    cr_assert(l[0] == 0 && l[1] == 0 && l[2] == 0);
}

Test(solver_single, frictionless_and_huge_mu)
{
    rng_t r = {11};
    int nstick_huge = 0;
    for (int t = 0; t < 2000; t++) {
        double G[9], c[3], l[3], v[3];
        rand_block(&r, G);
        c[0] = nrand(&r), c[1] = nrand(&r), c[2] = -urand(&r, 0.01, 1.0);
        /* mu = 0: normal impulse only, v_n = 0 is NOT required (no friction but the normal row couples);
           the model gives lambda_n = -c_n / G_nn, lambda_T = 0 */
        int mode = sim_contact_single(G, c, 0.0, l, NULL, NULL);
        cr_assert_eq(mode, SIM_CONTACT_SLIP);
        cr_assert(l[0] == 0 && l[1] == 0);
        cr_assert_float_eq(l[2], -c[2] / G[8], 1e-12 * fabs(c[2] / G[8]));
        matvec3(G, l, v);
        cr_assert(fabs(v[2] + c[2]) < 1e-12);
        /* mu = 1e6: sticks whenever lambda0 has a positive normal part; always finite */
        double l0[3];
        stick_impulse(G, c, l0);
        int steps;
        mode = sim_contact_single(G, c, 1e6, l, NULL, &steps);
        cr_assert(isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
        if (l0[2] > 0 && hypot(l0[0], l0[1]) <= 1e6 * l0[2]) {
            cr_assert_eq(mode, SIM_CONTACT_STICK);
            nstick_huge++;
            matvec3(G, l, v);
            for (int a = 0; a < 3; a++) v[a] += c[a];
            cr_assert(norm3(v) < 1e-12 * (1 + norm3(c)));
        } else {
            cr_assert_eq(mode, SIM_CONTACT_SLIP);
            cr_assert(l[2] >= 0 && hypot(l[0], l[1]) <= 1e6 * l[2] * (1 + 1e-9));
            matvec3(G, l, v);
            cr_assert(fabs(v[2] + c[2]) < 1e-9 * (1 + fabs(c[2])));
            cr_assert(energy(3, G, c, l) <= 0);
        }
        /* mu = 1e300 and mu = INFINITY are clamped: finite */
        sim_contact_single(G, c, 1e300, l, NULL, NULL);
        cr_assert(isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
        sim_contact_single(G, c, INFINITY, l, NULL, NULL);
        cr_assert(isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
    }
    cr_assert(nstick_huge > 1000, "only %d of 2000 stuck with mu = 1e6", nstick_huge);
}

Test(solver_single, degenerate_blocks_and_bad_input)
{
    double l[3];
    double c[3] = {0.3, -0.2, -0.5};
    double Z[9] = {0};
    cr_assert_eq(sim_contact_single(Z, c, 0.8, l, NULL, NULL), SIM_CONTACT_OPEN);
    cr_assert(l[0] == 0 && l[1] == 0 && l[2] == 0);
    /* rank 1: only the normal direction responds */
    double R1[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0.2};
    int mode = sim_contact_single(R1, c, 0.8, l, NULL, NULL);
    cr_assert(mode >= 0);
    cr_assert(isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
    cr_assert(hypot(l[0], l[1]) <= 0.8 * l[2] * (1 + 1e-9) + 1e-300);
    /* rank 2 (a point locked in x): finite, in the cone */
    double R2[9] = {0, 0, 0, 0, 0.3, 0.1, 0, 0.1, 0.2};
    mode = sim_contact_single(R2, c, 0.8, l, NULL, NULL);
    cr_assert(mode >= 0);
    cr_assert(isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
    cr_assert(hypot(l[0], l[1]) <= 0.8 * l[2] * (1 + 1e-9));
    /* nearly singular */
    double NS[9] = {0.2, 0.2 - 1e-13, 0, 0.2 - 1e-13, 0.2, 0, 0, 0, 0.2};
    mode = sim_contact_single(NS, c, 0.8, l, NULL, NULL);
    cr_assert(mode >= 0 && isfinite(l[0]) && isfinite(l[1]) && isfinite(l[2]));
    /* bad input */
    double Gn[9] = {0.2, 0, 0, 0, 0.2, 0, 0, 0, NAN};
    cr_assert_eq(sim_contact_single(Gn, c, 0.8, l, NULL, NULL), SIM_SOLVER_EINVAL);
    cr_assert(l[0] == 0 && l[1] == 0 && l[2] == 0);
    double G[9] = {0.2, 0, 0, 0, 0.2, 0, 0, 0, 0.2};
    cr_assert_eq(sim_contact_single(G, c, -INFINITY, l, NULL, NULL), SIM_SOLVER_EINVAL); /* mu < 0 finite: a box row */
    cr_assert_eq(sim_contact_single(G, c, NAN, l, NULL, NULL), SIM_SOLVER_EINVAL);
    double ci[3] = {INFINITY, 0, -1};
    cr_assert_eq(sim_contact_single(G, ci, 0.5, l, NULL, NULL), SIM_SOLVER_EINVAL);
    cr_assert_eq(sim_contact_single(NULL, c, 0.5, l, NULL, NULL), SIM_SOLVER_EINVAL);
}

Test(solver_single, tighter_precision_converges_further)
{
    /* the impulse interval criterion: a tighter contact_tol gives a closer result and more steps */
    rng_t r = {5};
    sim_solver_params p;
    sim_solver_default_params(&p);
    int n = 0;
    long s6 = 0, s12 = 0;
    while (n < 200) {
        double G[9], c[3], l6[3], l12[3], lb[3], emin;
        rand_block(&r, G);
        c[0] = nrand(&r) * 2, c[1] = nrand(&r) * 2, c[2] = -urand(&r, 0.05, 1.0);
        int st6, st12;
        p.contact_tol = 1e-6;
        if (sim_contact_single(G, c, 0.6, l6, &p, &st6) != SIM_CONTACT_SLIP) continue;
        p.contact_tol = 1e-12;
        sim_contact_single(G, c, 0.6, l12, &p, &st12);
        brute_slip(G, c, 0.6, lb, &emin);
        double d[3] = {l12[0] - lb[0], l12[1] - lb[1], l12[2] - lb[2]};
        cr_assert(norm3(d) < 1e-9, "|d| %g", norm3(d));
        s6 += st6, s12 += st12;
        n++;
    }
    cr_assert(s12 > s6);
}

Test(solver_single, published_algorithm1_without_refinement)
{
    /* contact_refine = 0 returns Algorithm 1's bracket end: within contact_tol of the minimizer, same steps */
    rng_t r = {21};
    sim_solver_params p0, p1;
    sim_solver_default_params(&p0);
    sim_solver_default_params(&p1);
    p0.contact_refine = 0;
    int n = 0;
    while (n < 300) {
        double G[9], c[3], l0[3], l1[3], lb[3], emin;
        rand_block(&r, G);
        double mu = urand(&r, 0.2, 1.2);
        c[0] = nrand(&r), c[1] = nrand(&r), c[2] = -urand(&r, 0.01, 1.0);
        int s0, s1;
        if (sim_contact_single(G, c, mu, l0, &p0, &s0) != SIM_CONTACT_SLIP) continue;
        cr_assert_eq(sim_contact_single(G, c, mu, l1, &p1, &s1), SIM_CONTACT_SLIP);
        cr_assert_eq(s0, s1);
        brute_slip(G, c, mu, lb, &emin);
        double d0[3] = {l0[0] - lb[0], l0[1] - lb[1], l0[2] - lb[2]}, d1[3] = {l1[0] - lb[0], l1[1] - lb[1], l1[2] - lb[2]};
        cr_assert(norm3(d0) < p0.contact_tol, "published: |d| %g", norm3(d0));
        cr_assert(norm3(d1) <= norm3(d0) + 1e-12, "refined %g vs published %g", norm3(d1), norm3(d0));
        /* both on the ellipse */
        double v[3];
        matvec3(G, l0, v);
        cr_assert(fabs(v[2] + c[2]) < 1e-12 * (1 + fabs(c[2])));
        cr_assert(fabs(hypot(l0[0], l0[1]) - mu * l0[2]) <= 1e-12 * norm3(l0));
        n++;
    }
}

Test(solver_single, pgs_single_contact_solves_coulomb)
{
    /* PGS solves Coulomb's law (the NCP of Le Lidec et al.): its residual eps_abs vanishes, while the
       bisection's model satisfies its own KKT conditions (model_error) */
    rng_t r = {31};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-13;
    p.max_iter = 100000;
    int pgs_ok = 0;
    for (int t = 0; t < 300; t++) {
        double G[9], c[3], mu = urand(&r, 0.2, 1.2), lp[3] = {0}, lb[3] = {0};
        rand_block(&r, G);
        c[0] = nrand(&r), c[1] = nrand(&r), c[2] = -urand(&r, 0.01, 1.0);
        sim_solver_stats st;
        sim_contact_metrics_t m;
        /* PGS has no convergence guarantee: with |G_nT| > G_nn it can cycle even on one contact */
        if (sim_solve_pgs_hwangbo(1, G, c, &mu, lp, &p, &st) == SIM_SOLVER_OK) {
            pgs_ok++;
            sim_contact_metrics(1, G, c, &mu, lp, 1.0, &m);
            cr_assert(m.eps_abs < 1e-9, "PGS NCP residual %g", m.eps_abs);
        }
        cr_assert_eq(sim_solve_bisection(1, G, c, &mu, lb, NULL, &st), SIM_SOLVER_OK);
        cr_assert_eq(st.iterations, 1); /* one contact: the first sweep is exact */
        sim_contact_metrics(1, G, c, &mu, lb, 1.0, &m);
        cr_assert(m.model_error < 1e-9, "bisection model error %g", m.model_error);
        if (st.n_slip) cr_assert(st.bisection_steps > 0);
    }
    cr_assert(pgs_ok >= 290, "PGS converged on %d of 300 single contacts", pgs_ok);
}

/* ---------------------------------------------------------------------------------------------- */
/* Multi-contact problems from a random 18-dof quadruped: a 30 kg base (6 dofs) and 4 legs of 3 revolute   */
/* joints (HAA about x, HFE and KFE about y) carrying a 3 kg knee mass and a 0.6 kg foot mass, in a random  */
/* pose.  M is the exact mass matrix of that lumped-mass model (base inertia + sum m J^T J + rotor inertia),*/
/* so the Delassus blocks have a physical structure (feet nearly diagonal-dominant, as the paper notes).    */

#define NV 18
typedef struct {
    int n;
    double G[24 * 24], c[24], mu[8];
    double M[NV * NV], L[NV * NV], J[24 * NV], uf[NV];
} problem;

static void cross3(const double a[3], const double b[3], double o[3])
{
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

/* Jacobian (3 x NV) of a point p (world, base at the origin) moved by the base and by joints (axis, origin). */
static void point_jacobian(const double p[3], int nj, const int *col, const double (*axis)[3],
                           const double (*orig)[3], double *J)
{
    memset(J, 0, sizeof(double) * 3 * NV);
    for (int a = 0; a < 3; a++) J[a * NV + a] = 1.0; /* base translation */
    /* base rotation (world-frame angular velocity w): v = w x p -> columns 3..5 = -[p]x */
    J[0 * NV + 4] = p[2], J[0 * NV + 5] = -p[1];
    J[1 * NV + 3] = -p[2], J[1 * NV + 5] = p[0];
    J[2 * NV + 3] = p[1], J[2 * NV + 4] = -p[0];
    for (int j = 0; j < nj; j++) {
        double r[3] = {p[0] - orig[j][0], p[1] - orig[j][1], p[2] - orig[j][2]}, v[3];
        cross3(axis[j], r, v);
        for (int a = 0; a < 3; a++) J[a * NV + col[j]] = v[a];
    }
}

static void add_point_mass(double *M, const double *J, double m)
{
    for (int i = 0; i < NV; i++)
        for (int j = 0; j < NV; j++) {
            double s = 0;
            for (int a = 0; a < 3; a++) s += J[a * NV + i] * J[a * NV + j];
            M[i * NV + j] += m * s;
        }
}

/* n = 4: the feet; n = 8: the feet and four base-box corners (as in the paper's Drop / Random tasks). */
static void make_problem(rng_t *r, int n, problem *P)
{
    P->n = n;
    memset(P->M, 0, sizeof P->M);
    memset(P->J, 0, sizeof P->J);
    const double mb = 30, Ib[3] = {0.6, 1.5, 1.7};
    for (int a = 0; a < 3; a++) P->M[a * NV + a] = mb, P->M[(3 + a) * NV + 3 + a] = Ib[a];
    for (int k = 6; k < NV; k++) P->M[k * NV + k] = 0.01; /* rotor inertia */
    const double sx[4] = {1, 1, -1, -1}, sy[4] = {1, -1, 1, -1};
    double foot[4][3], Jp[3 * NV];
    for (int l = 0; l < 4; l++) {
        double hip[3] = {0.3 * sx[l], 0.2 * sy[l], 0.0};
        double qa = urand(r, -0.3, 0.3), qh = urand(r, -0.8, 0.8), qk = urand(r, 0.6, 1.6) * (sx[l] > 0 ? -1 : 1);
        /* thigh and shank of 0.3 m in the leg plane rotated by HAA about x */
        double th = qh, tk = qh + qk;
        double knee_l[3] = {0.3 * sin(th), 0.0, -0.3 * cos(th)};
        double foot_l[3] = {knee_l[0] + 0.3 * sin(tk), 0.0, knee_l[2] - 0.3 * cos(tk)};
        double ca = cos(qa), sa = sin(qa);
        double knee[3] = {hip[0] + knee_l[0], hip[1] - sa * knee_l[2], hip[2] + ca * knee_l[2]};
        double ft[3] = {hip[0] + foot_l[0], hip[1] - sa * foot_l[2], hip[2] + ca * foot_l[2]};
        const double ax_haa[3] = {1, 0, 0}, ax_y[3] = {0, ca, sa};
        const double axis[3][3] = {{ax_haa[0], ax_haa[1], ax_haa[2]}, {ax_y[0], ax_y[1], ax_y[2]}, {ax_y[0], ax_y[1], ax_y[2]}};
        const double orig[3][3] = {{hip[0], hip[1], hip[2]}, {hip[0], hip[1], hip[2]}, {knee[0], knee[1], knee[2]}};
        const int col[3] = {6 + 3 * l, 7 + 3 * l, 8 + 3 * l};
        point_jacobian(knee, 2, col, axis, orig, Jp);
        add_point_mass(P->M, Jp, 3.0);
        point_jacobian(ft, 3, col, axis, orig, Jp);
        add_point_mass(P->M, Jp, 0.6);
        if (l < n) memcpy(P->J + 3 * l * NV, Jp, sizeof Jp);
        memcpy(foot[l], ft, sizeof ft);
    }
    (void)foot;
    for (int i = 4; i < n; i++) { /* base-box corners */
        double p[3] = {sx[i - 4] * 0.29, sy[i - 4] * 0.07, -0.09};
        point_jacobian(p, 0, NULL, NULL, NULL, Jp);
        memcpy(P->J + 3 * i * NV, Jp, sizeof Jp);
    }
    memcpy(P->L, P->M, sizeof P->M);
    cr_assert_eq(chol(P->L, NV), 0);
    /* a free velocity: the robot moving down and sideways, random joint rates */
    for (int k = 0; k < NV; k++) P->uf[k] = nrand(r) * (k < 3 ? 0.3 : k < 6 ? 0.5 : 1.0);
    P->uf[2] -= urand(r, 0.1, 1.0);
    for (int a = 0; a < 3 * n; a++) {
        double s = 0;
        for (int k = 0; k < NV; k++) s += P->J[a * NV + k] * P->uf[k];
        P->c[a] = s;
    }
    delassus(P->J, 3 * n, P->L, NV, P->G);
    for (int i = 0; i < n; i++) P->mu[i] = urand(r, 0.4, 1.0);
}

/* change of kinetic energy of the robot caused by lambda: c^T l + 1/2 l^T G l */
static double dke(const problem *P, const double *l) { return energy(3 * P->n, P->G, P->c, l); }

static double rel_diff(int N, const double *a, const double *b)
{
    double d = 0, s = 0;
    for (int i = 0; i < N; i++) d += (a[i] - b[i]) * (a[i] - b[i]), s += b[i] * b[i];
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* The free velocity of a regime: STANCE = falling mostly vertically (0.05-0.5 m/s) with small horizontal and
 * joint rates (feet still slip, by the coupling of the Delassus blocks); IMPACT = everything random. */
enum { STANCE, IMPACT };
static void set_free_velocity(rng_t *r, int regime, problem *P)
{
    if (regime == STANCE) {
        double vz = urand(r, 0.05, 0.5);
        for (int k = 0; k < NV; k++) P->uf[k] = nrand(r) * 0.05 * vz * (k < 6 ? 1 : 2);
        P->uf[2] = -vz;
    }
    for (int a = 0; a < 3 * P->n; a++) {
        double s = 0;
        for (int k = 0; k < NV; k++) s += P->J[a * NV + k] * P->uf[k];
        P->c[a] = s;
    }
}

/* |u+(la) - u+(lb)|_M / |u_free|_M: the difference of the post-step generalized velocities */
static double velocity_diff(const problem *P, const double *la, const double *lb)
{
    const int N = 3 * P->n;
    double du[NV];
    for (int k = 0; k < NV; k++) {
        double s = 0;
        for (int a = 0; a < N; a++) s += P->J[a * NV + k] * (la[a] - lb[a]);
        du[k] = s;
    }
    chol_solve(P->L, NV, du);
    double num = 0, den = 0;
    for (int a = 0; a < NV; a++)
        for (int b = 0; b < NV; b++) num += du[a] * P->M[a * NV + b] * du[b], den += P->uf[a] * P->M[a * NV + b] * P->uf[b];
    return sqrt(num / den);
}

static void multi_contact_suite(int n, int regime, int ncase, unsigned seed)
{
    rng_t r = {seed};
    sim_solver_params p, pp;
    sim_solver_default_params(&p);
    sim_solver_default_params(&pp);
    pp.tol = 1e-12;
    pp.max_iter = 200000;
    int conv = 0, imp1 = 0, imp5 = 0, vel1 = 0, vel10 = 0, noslip = 0, noslip_same = 0;
    long iters = 0;
    double worst_dke = -INFINITY;
    for (int t = 0; t < ncase; t++) {
        problem P;
        make_problem(&r, n, &P);
        set_free_velocity(&r, regime, &P);
        const int N = 3 * n;
        double lb[24] = {0}, lp[24] = {0};
        sim_solver_stats sb, sp;
        int rc = sim_solve_bisection(n, P.G, P.c, P.mu, lb, &p, &sb);
        cr_assert(rc == SIM_SOLVER_OK || rc == SIM_SOLVER_MAXITER);
        cr_assert_eq(sb.n_open + sb.n_stick + sb.n_slip, n);
        iters += sb.iterations;
        if (rc == SIM_SOLVER_OK) {
            conv++;
        } else { /* slow (redundant contacts, impacts): more sweeps, warm-started from where it stopped */
            sim_solver_params q = p;
            q.max_iter = 3000;
            rc = sim_solve_bisection(n, P.G, P.c, P.mu, lb, &q, &sb);
            cr_assert_eq(rc, SIM_SOLVER_OK, "case %d: error %g after 3000 more sweeps", t, sb.error);
        }
        cr_assert(sb.error < p.tol);
        /* the solver's incremental velocities agree with a fresh evaluation */
        double e = sim_contact_model_error(n, P.G, P.c, P.mu, lb);
        cr_assert(e < 1.01 * p.tol, "recomputed error %g vs %g", e, sb.error);
        for (int i = 0; i < n; i++) { /* feasibility */
            cr_assert(lb[3 * i + 2] >= 0);
            cr_assert(hypot(lb[3 * i], lb[3 * i + 1]) <= P.mu[i] * lb[3 * i + 2] * (1 + 1e-9) + 1e-15);
        }
        /* dissipation: the impulses never add kinetic energy, 1/2 u+^T M u+ - 1/2 uf^T M uf = c.l + 1/2 l.G l */
        double d = dke(&P, lb);
        if (d > worst_dke) worst_dke = d;
        cr_assert(d <= 1e-9, "case %d: kinetic energy grows by %g J", t, d);
        /* tight PGS (Coulomb's law) */
        rc = sim_solve_pgs_hwangbo(n, P.G, P.c, P.mu, lp, &pp, &sp);
        cr_assert(rc == SIM_SOLVER_OK, "PGS did not converge to 1e-12 (error %g)", sp.error);
        cr_assert(dke(&P, lp) <= 1e-9);
        double rd = rel_diff(N, lb, lp), vd = velocity_diff(&P, lb, lp);
        imp1 += rd < 0.01;
        imp5 += rd < 0.05;
        vel1 += vd < 0.01;
        vel10 += vd < 0.10;
        if (sb.n_slip == 0 && sp.n_slip == 0) { /* then both solve the same problem */
            noslip++;
            noslip_same += vd < 1e-4;
        }
    }
    cr_log_info("n=%d %s: %d/%d converged within max_iter (mean %.1f sweeps); vs PGS: impulses within 1%% %d, 5%% %d; "
                "velocities within 1%% %d, 10%% %d; no-slip agreeing %d of %d; max dKE %.3g J",
                n, regime == STANCE ? "stance" : "impact", conv, ncase, (double)iters / ncase, imp1, imp5, vel1,
                vel10, noslip_same, noslip, worst_dke);
    cr_assert(conv >= ncase * 95 / 100, "only %d of %d converged within the default %d sweeps", conv, ncase, p.max_iter);
    cr_assert(noslip_same >= noslip * 95 / 100, "without slip both solve the same problem: %d of %d", noslip_same, noslip);
    if (regime == STANCE) {
        /* the models differ only for slipping contacts (comparative paper eq. 24): close, not equal */
        cr_assert(vel1 >= ncase * 95 / 100, "velocities within 1%%: %d of %d", vel1, ncase);
        if (n == 4) { /* with 8 contacts on 18 dofs the impulses are not unique */
            cr_assert(imp1 >= ncase * 75 / 100, "impulses within 1%%: %d of %d", imp1, ncase);
            cr_assert(imp5 >= ncase * 95 / 100, "impulses within 5%%: %d of %d", imp5, ncase);
        }
    } else {
        cr_assert(vel10 >= ncase * 90 / 100, "velocities within 10%%: %d of %d", vel10, ncase);
    }
}

Test(solver_multi, four_contacts_stance, .timeout = 120) { multi_contact_suite(4, STANCE, 300, 1234); }
Test(solver_multi, eight_contacts_stance, .timeout = 120) { multi_contact_suite(8, STANCE, 200, 4321); }
Test(solver_multi, four_contacts_impact, .timeout = 120) { multi_contact_suite(4, IMPACT, 300, 99); }
Test(solver_multi, eight_contacts_impact, .timeout = 120) { multi_contact_suite(8, IMPACT, 200, 98); }

Test(solver_multi, warm_start_same_solution_fewer_sweeps)
{
    rng_t r = {77};
    sim_solver_params p;
    sim_solver_default_params(&p);
    long it_cold = 0, it_warm = 0;
    int agree = 0, ncase = 200;
    for (int t = 0; t < ncase; t++) {
        problem P;
        make_problem(&r, 4, &P);
        double l[12] = {0};
        sim_solver_stats s0, s1, s2;
        sim_solve_bisection(4, P.G, P.c, P.mu, l, &p, &s0);
        /* re-solving from the solution: converged after the first sweep, impulses unchanged */
        double lw[12];
        memcpy(lw, l, sizeof l);
        if (s0.converged) {
            sim_solve_bisection(4, P.G, P.c, P.mu, lw, &p, &s1);
            cr_assert(s1.converged);
            cr_assert(s1.iterations <= 2, "warm start from the solution took %d sweeps", s1.iterations);
            cr_assert(rel_diff(12, lw, l) < 1e-4);
        }
        /* the next "time step": the free velocity moves a little */
        for (int a = 0; a < 12; a++) P.c[a] += 0.01 * nrand(&r) * (fabs(P.c[a]) + 0.01);
        double lc[12] = {0};
        memcpy(lw, l, sizeof l);
        sim_solve_bisection(4, P.G, P.c, P.mu, lc, &p, &s1);
        sim_solve_bisection(4, P.G, P.c, P.mu, lw, &p, &s2);
        it_cold += s1.iterations;
        it_warm += s2.iterations;
        double scale = 0;
        for (int a = 0; a < 12; a++) scale = fmax(scale, fabs(lc[a]));
        double d = 0;
        for (int a = 0; a < 12; a++) d = fmax(d, fabs(lc[a] - lw[a]));
        agree += s1.converged && s2.converged && d <= 1e-4 * scale + 1e-5;
    }
    cr_log_info("warm start: mean sweeps cold %.2f, warm %.2f; agreeing %d of %d", (double)it_cold / ncase,
                (double)it_warm / ncase, agree, ncase);
    cr_assert(it_warm < it_cold, "warm %ld sweeps vs cold %ld", it_warm, it_cold);
    cr_assert(agree >= ncase * 95 / 100, "warm and cold agree in %d of %d", agree, ncase);
}

Test(solver_multi, metrics_of_bisection_solution)
{
    rng_t r = {99};
    sim_solver_params p;
    sim_solver_default_params(&p);
    int checked = 0, n = 0;
    for (int t = 0; t < 300; t++) {
        problem P;
        make_problem(&r, 4, &P);
        set_free_velocity(&r, STANCE, &P);
        if (t % 2) /* half of them with a high friction: no slip, where the model and the NCP coincide */
            for (int i = 0; i < 4; i++) P.mu[i] = 3.0;
        double l[12] = {0};
        sim_solver_stats st;
        if (sim_solve_bisection(4, P.G, P.c, P.mu, l, &p, &st) != SIM_SOLVER_OK) continue;
        n++;
        sim_contact_metrics_t m;
        sim_contact_metrics(4, P.G, P.c, P.mu, l, 1e-3, &m);
        cr_assert(isfinite(m.eps_abs));
        cr_assert(m.eps_abs == fmax(m.eps_p, fmax(m.eps_d, m.eps_c)));
        cr_assert(m.model_error < p.tol);
        cr_assert(m.signorini < p.tol, "signorini %g", m.signorini);
        /* the impulses are in the cone up to rounding: eps_p (N) ~ 0 */
        cr_assert(m.eps_p < 1e-9, "eps_p %g N", m.eps_p);
        if (st.n_slip == 0) {
            /* without slip the NCP residual is at the tolerance level (impulses and velocities, dt = 1) */
            sim_contact_metrics(4, P.G, P.c, P.mu, l, 1.0, &m);
            cr_assert(m.eps_abs < 1e-5, "no-slip eps_abs %g (p %g d %g c %g)", m.eps_abs, m.eps_p, m.eps_d, m.eps_c);
            checked++;
        }
    }
    cr_assert(n > 250);
    cr_assert(checked > 50, "only %d no-slip cases", checked);
}

/* A contact problem met by the ANYmal C model (5 contacts, rank 11): contact 3 has |G_nT| > G_nn / mu, its
 * best response jumps between opening and a large slip impulse, and the per-contact iteration cycles with
 * any relaxation.  Without the dissipation guard, the last iterate would add kinetic energy to the robot. */
static const double cyc_G[15 * 15] = {
1.18922, -2.05041, 1.06063, -0.00920125, 0.0070633, -0.00307421, 6.07276e-05, 0.00129226, 0.00318517, 0.00293728, -0.000266129, -0.00086138, -3.42473e-05, 0.00152469, 0.00331332,
        -2.05041, 4.83052, -2.37118, -0.0057849, 0.00741822, -0.00802189, 0.00060816, 0.00363198, 0.00804693, 0.00569303, 2.21472e-05, -0.00302854, 0.000626159, 0.0042028, 0.00839768,
        1.06063, -2.37118, 1.68603, -0.0149113, 0.0174186, -0.0167032, 0.000956843, 0.00598417, 0.0130266, 0.0131485, -0.00149692, -0.00814312, 0.00102809, 0.00706658, 0.0136971,
        -0.00920125, -0.0057849, -0.0149113, 6.37503, 2.40886, -0.11823, -0.00199443, -0.0108407, -0.0280394, -0.00918341, -0.00407117, -0.00473858, -0.00160351, -0.0121424, -0.0287773,
        0.0070633, 0.00741822, 0.0174186, 2.40886, 1.42636, -0.546344, 0.00661613, 0.0252169, 0.0668928, 0.013712, 0.0127595, 0.0174001, 0.00638346, 0.0278413, 0.0684602,
        -0.00307421, -0.00802189, -0.0167032, -0.11823, -0.546344, 1.31368, -0.0123287, -0.0430791, -0.114907, -0.0160204, -0.0247993, -0.0350345, -0.0122754, -0.0472386, -0.117436,
        6.07276e-05, 0.00060816, 0.000956843, -0.00199443, 0.00661613, -0.0123287, 6.28589, -0.0179746, -0.952617, 0.879768, 1.37586, -0.388844, 6.4978, -0.097066, -0.970471,
        0.00129226, 0.00363198, 0.00598417, -0.0108407, 0.0252169, -0.0430791, -0.0179746, 0.768218, 0.867643, -0.121136, 0.586881, -0.0754377, -0.0201147, 0.817686, 0.89751,
        0.00318517, 0.00804693, 0.0130266, -0.0280394, 0.0668928, -0.114907, -0.952617, 0.867643, 1.96153, -0.399955, 0.322865, 0.0585149, -0.986286, 0.974364, 2.0218,
        0.00293728, 0.00569303, 0.0131485, -0.00918341, 0.013712, -0.0160204, 0.879768, -0.121136, -0.399955, 0.194152, 0.116115, -0.0510161, 0.908989, -0.146123, -0.411005,
        -0.000266129, 2.21472e-05, -0.00149692, -0.00407117, 0.0127595, -0.0247993, 1.37586, 0.586881, 0.322865, 0.116115, 0.780295, -0.148444, 1.42111, 0.600716, 0.337791,
        -0.00086138, -0.00302854, -0.00814312, -0.00473858, 0.0174001, -0.0350345, -0.388844, -0.0754377, 0.0585149, -0.0510161, -0.148444, 0.0879402, -0.402181, -0.07383, 0.057583,
        -3.42473e-05, 0.000626159, 0.00102809, -0.00160351, 0.00638346, -0.0122754, 6.4978, -0.0201147, -0.986286, 0.908989, 1.42111, -0.402181, 6.71691, -0.101952, -1.00478,
        0.00152469, 0.0042028, 0.00706658, -0.0121424, 0.0278413, -0.0472386, -0.097066, 0.817686, 0.974364, -0.146123, 0.600716, -0.07383, -0.101952, 0.873258, 1.00756,
        0.00331332, 0.00839768, 0.0136971, -0.0287773, 0.0684602, -0.117436, -0.970471, 0.89751, 2.0218, -0.411005, 0.337791, 0.057583, -1.00478, 1.00756, 2.084,
};
static const double cyc_c[15] = {-0.5503, 0.110518, -0.0285715, -0.0548477, 0.142792, -0.00783564, 0.00632579, -0.100333, -0.0562354, -0.6499, -0.393644, -0.0305277, 0.00798762, 0.00587889, 0.00878714};
static const double cyc_mu[5] = {0.8, 0.8, 0.8, 0.8, 0.8};

Test(solver_multi, non_converged_solve_never_adds_energy)
{
    double l[15] = {0};
    sim_solver_stats st;
    int rc = sim_solve_bisection(5, cyc_G, cyc_c, cyc_mu, l, NULL, &st);
    cr_assert(rc == SIM_SOLVER_OK || rc == SIM_SOLVER_MAXITER);
    cr_log_info("cycling problem: rc %d, error %g after %d sweeps, guard scale %g", rc, st.error, st.iterations,
                st.guard_scale);
    cr_assert(energy(15, cyc_G, cyc_c, l) <= 1e-12, "the step adds %g J", energy(15, cyc_G, cyc_c, l));
    for (int i = 0; i < 5; i++)
        cr_assert(l[3 * i + 2] >= 0 && hypot(l[3 * i], l[3 * i + 1]) <= cyc_mu[i] * l[3 * i + 2] * (1 + 1e-12));
    /* the recorded error is the one of the returned impulses */
    cr_assert_float_eq(st.error, sim_contact_model_error(5, cyc_G, cyc_c, cyc_mu, l), 1e-9 * (1 + st.error));
    /* PGS (Coulomb's law) converges on it; its solution is dissipative */
    double lp[15] = {0};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-10;
    p.max_iter = 100000;
    cr_assert_eq(sim_solve_pgs_hwangbo(5, cyc_G, cyc_c, cyc_mu, lp, &p, &st), SIM_SOLVER_OK);
    cr_assert(st.guard_scale == 1.0);
    cr_assert(energy(15, cyc_G, cyc_c, lp) <= 1e-12);
}

Test(solver_multi, pgs_and_bisection_single_contact_stick_agree)
{
    double G[9] = {0.3, 0.05, 0.1, 0.05, 0.25, -0.08, 0.1, -0.08, 0.2};
    double c[3] = {0.05, -0.02, -0.5}, mu = 1.0, lb[3] = {0}, lp[3] = {0}, ls[3];
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-13;
    p.max_iter = 100000;
    sim_solver_stats st;
    cr_assert_eq(sim_contact_single(G, c, mu, ls, NULL, NULL), SIM_CONTACT_STICK);
    cr_assert_eq(sim_solve_bisection(1, G, c, &mu, lb, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.iterations, 1);
    cr_assert_eq(st.n_stick, 1);
    cr_assert_eq(sim_solve_pgs_hwangbo(1, G, c, &mu, lp, &p, &st), SIM_SOLVER_OK);
    for (int a = 0; a < 3; a++) {
        cr_assert_float_eq(lb[a], ls[a], 1e-15);
        cr_assert_float_eq(lp[a], ls[a], 1e-10);
    }
}

/* sim_contact_problem_valid: a non-finite number anywhere (each position of G, c, lambda and mu in turn, so every
 * lane and the tail of the blocked test) makes the problem invalid; large finite entries whose plain sum overflows
 * do not. */
Test(solver_multi, problem_valid_checks_every_number)
{
    enum { n = 5, N = 3 * n };
    double G[N * N], c[N], l[N], mu[n];
    for (int i = 0; i < N * N; i++) G[i] = 1e308;
    for (int i = 0; i < N; i++) c[i] = -1e308, l[i] = 1e308;
    for (int i = 0; i < n; i++) mu[i] = 0.5;
    cr_assert(sim_contact_problem_valid(n, G, c, mu, l), "finite entries summing past DBL_MAX are valid");
    const double bad[3] = {INFINITY, -INFINITY, NAN};
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < N * N; i++) {
            const double keep = G[i];
            G[i] = bad[b];
            cr_assert(!sim_contact_problem_valid(n, G, c, mu, l), "G[%d] = %g", i, bad[b]);
            G[i] = keep;
        }
        for (int i = 0; i < N; i++) {
            double kc = c[i], kl = l[i];
            c[i] = bad[b];
            cr_assert(!sim_contact_problem_valid(n, G, c, mu, l), "c[%d] = %g", i, bad[b]);
            c[i] = kc, l[i] = bad[b];
            cr_assert(!sim_contact_problem_valid(n, G, c, mu, l), "lambda[%d] = %g", i, bad[b]);
            l[i] = kl;
        }
        for (int i = 0; i < n; i++) {
            mu[i] = bad[b];
            cr_assert(!sim_contact_problem_valid(n, G, c, mu, l), "mu[%d] = %g", i, bad[b]);
            mu[i] = 0.5;
        }
    }
    cr_assert(sim_contact_problem_valid(n, G, c, mu, l));
}

Test(solver_multi, bad_input_leaves_lambda)
{
    double G[9] = {0.2, 0, 0, 0, 0.2, 0, 0, 0, 0.2}, c[3] = {0, 0, -1}, mu = 0.5, l[3] = {1, 2, 3};
    sim_solver_stats st;
    cr_assert_eq(sim_solve_bisection(-1, G, c, &mu, l, NULL, &st), SIM_SOLVER_EINVAL);
    cr_assert_eq(sim_solve_bisection(SIM_SOLVER_MAX_CONTACTS + 1, G, c, &mu, l, NULL, &st), SIM_SOLVER_EINVAL);
    cr_assert_eq(sim_solve_pgs_hwangbo(1, NULL, c, &mu, l, NULL, &st), SIM_SOLVER_EINVAL);
    double bad = -INFINITY; /* a finite mu < 0 is a bounded row (test_solver_rows) */
    cr_assert_eq(sim_solve_bisection(1, G, c, &bad, l, NULL, &st), SIM_SOLVER_EINVAL);
    double ln[3] = {NAN, 0, 0};
    cr_assert_eq(sim_solve_pgs_hwangbo(1, G, c, &mu, ln, NULL, &st), SIM_SOLVER_EINVAL);
    cr_assert(l[0] == 1 && l[1] == 2 && l[2] == 3);
    cr_assert_eq(sim_solve_bisection(0, NULL, NULL, NULL, NULL, NULL, &st), SIM_SOLVER_OK);
    cr_assert(st.converged);
    cr_assert(strlen(sim_solver_strerror(SIM_SOLVER_EINVAL)) > 0);
    /* NULL params -> defaults; NULL stats accepted */
    cr_assert_eq(sim_solve_bisection(1, G, c, &mu, l, NULL, NULL), SIM_SOLVER_OK);
    cr_assert_float_eq(l[2], 5.0, 1e-12);
}

Test(solver_multi, open_contacts_relax_to_zero)
{
    /* two contacts, the second separating: its warm-started impulse decays to zero, not just below tol */
    double G[36] = {0.3, 0, 0.05, 0.02, 0, 0.01,  0, 0.3, 0, 0, 0.02, 0,  0.05, 0, 0.25, 0.01, 0, 0.05,
                    0.02, 0, 0.01, 0.3, 0, 0.05,  0, 0.02, 0, 0, 0.3, 0,  0.01, 0, 0.05, 0.05, 0, 0.25};
    double c[6] = {0.1, 0, -0.5, 0.2, 0.1, 0.8}, mu[2] = {0.8, 0.8};
    double l[6] = {0, 0, 0, 0.1, 0.05, 0.5};
    sim_solver_stats st;
    cr_assert_eq(sim_solve_bisection(2, G, c, mu, l, NULL, &st), SIM_SOLVER_OK);
    cr_assert(fabs(l[3]) + fabs(l[4]) + fabs(l[5]) < 1e-6);
    cr_assert_eq(st.n_open, 1);
    cr_assert(l[2] > 0);
}

/* ---------------------------------------------------------------------------------------------- */
/* Metrics on hand-computed cases.                                                                  */

Test(solver_metrics, cone_projection)
{
    double x[3], p[3];
    /* inside: unchanged, distance 0 */
    x[0] = 0.3, x[1] = 0.4, x[2] = 1.0;
    cr_assert(sim_cone_project(x, 0.6, p) == 0.0);
    cr_assert(p[0] == 0.3 && p[1] == 0.4 && p[2] == 1.0);
    /* (1, 0, 0) onto mu = 1: (0.5, 0, 0.5), distance 1/sqrt(2) */
    x[0] = 1, x[1] = 0, x[2] = 0;
    cr_assert_float_eq(sim_cone_project(x, 1.0, p), 1 / sqrt(2.0), 1e-15);
    cr_assert_float_eq(p[0], 0.5, 1e-15);
    cr_assert_float_eq(p[2], 0.5, 1e-15);
    /* polar cone: to the apex */
    x[0] = 0.1, x[1] = 0, x[2] = -1;
    cr_assert_float_eq(sim_cone_project(x, 0.5, p), hypot(0.1, 1.0), 1e-15);
    cr_assert(p[0] == 0 && p[1] == 0 && p[2] == 0);
    /* mu = 0: the ray x_T = 0 */
    x[0] = 3, x[1] = 4, x[2] = 2;
    cr_assert_float_eq(sim_cone_project(x, 0.0, p), 5.0, 1e-15);
    cr_assert(p[0] == 0 && p[1] == 0 && p[2] == 2);
    /* mu = inf: the half-space x_n >= 0 */
    x[0] = 1, x[1] = 0, x[2] = -2;
    cr_assert_float_eq(sim_cone_project(x, INFINITY, p), 2.0, 1e-15);
    cr_assert(p[0] == 1 && p[2] == 0);
    /* random points: the projection is in the cone, idempotent, and the residual is normal to the cone */
    rng_t r = {3};
    for (int t = 0; t < 10000; t++) {
        double mu = urand(&r, 0.05, 3.0), q[3];
        for (int a = 0; a < 3; a++) x[a] = nrand(&r);
        double d = sim_cone_project(x, mu, p);
        cr_assert(hypot(p[0], p[1]) <= mu * p[2] * (1 + 1e-12) + 1e-15);
        cr_assert(sim_cone_project(p, mu, q) < 1e-12);
        double res[3] = {x[0] - p[0], x[1] - p[1], x[2] - p[2]};
        cr_assert_float_eq(norm3(res), d, 1e-12);
        /* Moreau: residual in the polar cone and orthogonal to the projection */
        cr_assert(fabs(res[0] * p[0] + res[1] * p[1] + res[2] * p[2]) < 1e-12);
        cr_assert(mu * hypot(res[0], res[1]) <= -res[2] * (1 + 1e-9) + 1e-12);
    }
}

Test(solver_metrics, hand_cases)
{
    /* one contact, G = I (so v = lambda + c), mu = 0.5, dt = 1 */
    double G[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, mu = 0.5;
    sim_contact_metrics_t m;
    /* inside the cone, sticking (v = 0): everything 0 */
    double c1[3] = {-0.1, 0.0, -1.0}, l1[3] = {0.1, 0.0, 1.0};
    sim_contact_metrics(1, G, c1, &mu, l1, 1.0, &m);
    cr_assert(m.eps_p == 0 && m.eps_d == 0 && m.eps_c == 0 && m.eps_abs == 0 && m.signorini == 0);
    cr_assert(m.model_error == 0);
    /* open contact, lambda = 0, separating: complementarity 0, dual feasible if |v_T| small */
    double c2[3] = {0.1, 0.0, 1.0}, l0[3] = {0, 0, 0};
    sim_contact_metrics(1, G, c2, &mu, l0, 1.0, &m);
    cr_assert(m.eps_c == 0 && m.eps_p == 0 && m.signorini == 0);
    /* v = (0.1, 0, 1), Gamma = 0.05: w = (0.1, 0, 1.05), mu |w_T| = 0.05 <= 1.05: in K* */
    cr_assert(m.eps_d == 0);
    /* a lambda outside the cone, (3, 4, 0) with mu = 1: distance 5 / sqrt(2); with dt = 0.5 the force is doubled */
    double mu1 = 1.0, l3[3] = {3, 4, 0}, c3[3] = {-3, -4, 0};
    sim_contact_metrics(1, G, c3, &mu1, l3, 1.0, &m);
    cr_assert_float_eq(m.eps_p, 5 / sqrt(2.0), 1e-14);
    sim_contact_metrics(1, G, c3, &mu1, l3, 0.5, &m);
    cr_assert_float_eq(m.eps_p, 10 / sqrt(2.0), 1e-14);
    /* penetrating with no impulse: v = (0, 0, -1): dual distance 1 (in the polar of K*), signorini 1 */
    double c4[3] = {0, 0, -1};
    sim_contact_metrics(1, G, c4, &mu, l0, 1.0, &m);
    cr_assert_float_eq(m.eps_d, 1.0, 1e-15);
    cr_assert_float_eq(m.signorini, 1.0, 1e-15);
    cr_assert(m.eps_c == 0);
    /* pushing while separating: lambda_n = 1, v_n = 0.3 -> signorini 0.3, complementarity 0.3 */
    double c5[3] = {0, 0, -0.7}, l5[3] = {0, 0, 1};
    sim_contact_metrics(1, G, c5, &mu, l5, 1.0, &m);
    cr_assert_float_eq(m.signorini, 0.3, 1e-15);
    cr_assert_float_eq(m.eps_c, 0.3, 1e-15);
    /* Coulomb slip: lambda = (-0.5, 0, 1) on the boundary, v = (2, 0, 0): Gamma = 1, w = (2, 0, 1) on the
       boundary of K* (0.5 * 2 = 1) and <lambda, w> = -1 + 1 = 0: an exact NCP solution */
    double c6[3] = {2.5, 0, -1}, l6[3] = {-0.5, 0, 1};
    sim_contact_metrics(1, G, c6, &mu, l6, 1.0, &m);
    cr_assert(m.eps_p < 1e-15 && m.eps_d < 1e-15 && m.eps_c < 1e-15);
    /* and with G = I the max-dissipation model agrees (s is along lambda_T): model error 0 */
    cr_assert(m.model_error < 1e-15);
    /* the same impulse with the velocity pointing along the friction (accelerating): large errors */
    double c7[3] = {-1.5, 0, -1};
    sim_contact_metrics(1, G, c7, &mu, l6, 1.0, &m);
    cr_assert(m.eps_c > 0.9);
    cr_assert(m.model_error > 0.4);
    /* bad input -> NaN */
    sim_contact_metrics(-1, G, c7, &mu, l6, 1.0, &m);
    cr_assert(isnan(m.eps_abs));
}

/* ------------------------------------------------------------------------------------------------ */
/* The solver table (sim_solver_find / sim_solver_at / sim_solve). */

Test(solver_table, names_are_unique_indices_stable_and_dispatch_matches)
{
    int n = sim_solver_count();
    cr_assert(n >= 8);
    for (int i = 0; i < n; i++) {
        const sim_solver_desc *d = sim_solver_at(i);
        cr_assert_not_null(d);
        cr_assert_not_null(d->name);
        cr_assert_not_null(d->model_doc);
        cr_assert_eq(sim_solver_index(d->name), i, "%s", d->name);
        cr_assert_eq(sim_solver_find(d->name), d->solve ? d : NULL, "%s", d->name);
    }
    cr_assert_null(sim_solver_at(-1));
    cr_assert_null(sim_solver_at(n));
    cr_assert_null(sim_solver_find("bisection"));
    cr_assert_null(sim_solver_find(NULL));
    cr_assert_eq(sim_solver_index("paper-bisection"), SIM_SOLVER_PAPER_BISECTION);
    cr_assert_eq(sim_solver_index("pgs"), SIM_SOLVER_PGS);
    cr_assert_eq(sim_solver_index("cond-vfpi"), SIM_SOLVER_COND_VFPI);
    cr_assert_eq(sim_solver_index("impacts"), SIM_SOLVER_IMPACTS);
    /* the table's row gives bit-identical results to the direct call */
    double G[9] = {2, 0.3, 0.5, 0.3, 1.5, 0.2, 0.5, 0.2, 3}, c[3] = {0.4, -0.1, -1}, mu = 0.5;
    double l1[3] = {0}, l2[3] = {0};
    sim_solver_stats s1, s2;
    int r1 = sim_solve_bisection(1, G, c, &mu, l1, NULL, &s1);
    int r2 = sim_solve(SIM_SOLVER_PAPER_BISECTION, 1, G, c, &mu, l2, NULL, &s2);
    cr_assert_eq(r1, r2);
    cr_assert(memcmp(l1, l2, sizeof l1) == 0);
    /* out of range: EINVAL, lambda untouched */
    double l3[3] = {7, 8, 9};
    cr_assert_eq(sim_solve(n, 1, G, c, &mu, l3, NULL, &s2), SIM_SOLVER_EINVAL);
    cr_assert_eq(sim_solve(-1, 1, G, c, &mu, l3, NULL, NULL), SIM_SOLVER_EINVAL);
    cr_assert(l3[0] == 7 && l3[1] == 8 && l3[2] == 9);
}

/* ------------------------------------------------------------------------------------------------ */
/* Coulomb per contact (sim_contact_single_coulomb, coulomb-bisection).                              */

/* The Coulomb slip roots of one block by brute force in long double: on a 6000-point grid of the ellipse
 * {v_n = 0, |lambda_T| = mu lambda_n}, the sign changes of u x v_T between neighbours where r > 0, each refined
 * by 100 bisection steps and kept if v_T opposes u there (u . v_T < 0).  Writes up to 8 roots, returns their
 * count. */
static long double ld_cross_dot(const double G[9], const double c[3], double mu, long double th, long double *dot,
                                long double l[3])
{
    const long double ct = cosl(th), st = sinl(th);
    const long double d = (long double)G[8] / mu + G[6] * ct + G[7] * st;
    if (!(d > 0)) {
        *dot = 1;
        return NAN;
    }
    const long double r = -(long double)c[2] / d;
    l[0] = r * ct, l[1] = r * st, l[2] = r / mu;
    const long double vx = G[0] * l[0] + G[1] * l[1] + G[2] * l[2] + c[0];
    const long double vy = G[3] * l[0] + G[4] * l[1] + G[5] * l[2] + c[1];
    *dot = ct * vx + st * vy;
    return ct * vy - st * vx;
}

static int brute_coulomb_roots(const double G[9], const double c[3], double mu, double roots[8][3])
{
    enum { M = 6000 };
    int nr = 0;
    long double l[3], dot0, dot1;
    long double th0 = 0, f0 = ld_cross_dot(G, c, mu, th0, &dot0, l);
    for (int k = 1; k <= M && nr < 8; k++) {
        const long double th1 = 2 * (long double)M_PI * k / M;
        const long double f1 = ld_cross_dot(G, c, mu, th1, &dot1, l);
        if (!isnan(f0) && !isnan(f1) && (f0 > 0) != (f1 > 0)) {
            long double a = th0, b = th1, fa = f0, dm;
            for (int it = 0; it < 100; it++) {
                const long double m = 0.5L * (a + b), fm = ld_cross_dot(G, c, mu, m, &dm, l);
                if ((fm > 0) == (fa > 0)) a = m, fa = fm;
                else b = m;
            }
            ld_cross_dot(G, c, mu, 0.5L * (a + b), &dm, l);
            if (dm < 0) { /* v_T opposes u at the root itself (it may not at the grid points next to it) */
                for (int q = 0; q < 3; q++) roots[nr][q] = (double)l[q];
                nr++;
            }
        }
        th0 = th1, f0 = f1, dot0 = dot1;
    }
    return nr;
}

Test(solver_coulomb, single_slip_matches_bruteforce_roots, .timeout = 300)
{
    rng_t r = {2024};
    int nslip = 0, with_root = 0, no_root_ok = 0, mismatch = 0;
    long steps = 0;
    double worst = 0;
    /* 600 ordinary blocks (mu 0.1-1.5), then 600 with a strong normal-tangential coupling (mu 1.5-6: kappa =
       mu |G_nT| / G_nn often > 1), where some blocks have no Coulomb slip root */
    while (nslip < 1200) {
        double G[9], c[3], l[3], l0[3], lp[3];
        rand_block(&r, G);
        const double mu = nslip < 600 ? urand(&r, 0.1, 1.5) : urand(&r, 1.5, 6.0);
        c[2] = -urand(&r, 0.01, 1.0);
        c[0] = nrand(&r) * urand(&r, 0.0, 2.0);
        c[1] = nrand(&r) * urand(&r, 0.0, 2.0);
        stick_impulse(G, c, l0);
        int st, no_root = -1;
        const int mode = sim_contact_single_coulomb(G, c, mu, l, NULL, &st, &no_root);
        if (l0[2] >= 0 && hypot(l0[0], l0[1]) <= mu * l0[2]) {
            cr_assert_eq(mode, SIM_CONTACT_STICK);
            continue;
        }
        cr_assert_eq(mode, SIM_CONTACT_SLIP);
        nslip++;
        steps += st;
        double roots[8][3];
        const int nr = brute_coulomb_roots(G, c, mu, roots);
        if (nr == 0) {
            /* no Coulomb slip root: the documented rule, the paper model's slip solution */
            if (!no_root) { mismatch++; continue; }
            sim_contact_single(G, c, mu, lp, NULL, NULL);
            cr_assert(memcmp(l, lp, sizeof l) == 0, "no-root rule: not the paper model's solution");
            no_root_ok++;
            continue;
        }
        if (no_root) { mismatch++; continue; }
        with_root++;
        double best = INFINITY;
        for (int k = 0; k < nr; k++) {
            const double dl[3] = {l[0] - roots[k][0], l[1] - roots[k][1], l[2] - roots[k][2]};
            best = fmin(best, norm3(dl));
        }
        worst = fmax(worst, best);
        cr_assert(best <= 1e-6 * (1 + norm3(l)), "case %d: |lambda - nearest root| = %.3g (%d roots)", nslip, best, nr);
        /* Coulomb's law at the result: v_n = 0, on the cone, v_T anti-parallel to lambda_T */
        double v[3];
        matvec3(G, l, v);
        for (int a = 0; a < 3; a++) v[a] += c[a];
        cr_assert(fabs(v[2]) <= 1e-12 * (1 + fabs(c[2])));
        cr_assert(fabs(hypot(l[0], l[1]) - mu * l[2]) <= 1e-12 * norm3(l));
        cr_assert(v[0] * l[0] + v[1] * l[1] <= 0);
        const double sn = fabs(v[0] * l[1] - v[1] * l[0]) / (hypot(v[0], v[1]) * hypot(l[0], l[1]) + 1e-300);
        cr_assert(sn < 1e-5 || hypot(v[0], v[1]) < 1e-6, "slip not anti-parallel: sin %g", sn);
        cr_assert(sim_contact_coulomb_error(1, G, c, &mu, l) < 1e-5);
    }
    cr_log_info("coulomb single: %d slip cases, %d with a root (worst %.3g N s), %d without (rule applied), %d "
                "classification mismatches, mean steps %.1f", nslip, with_root, worst, no_root_ok, mismatch,
                (double)steps / nslip);
    /* a root that the brute force's 6000-point grid resolves but that is tangent (double root) may be missed by
       one side or the other: allow a handful */
    cr_assert(mismatch <= nslip / 200, "%d root / no-root mismatches", mismatch);
}

/* Blocks with a strong coupling (kappa 1.4-2.4) and a near-singular G whose only Coulomb slip root lies next to
 * the edge of the arc where v_T opposes u (a large impulse with a slow slip): a coarse search that requires
 * u . v_T < 0 at both neighbours of a sign change misses it; the solver must find it. */
Test(solver_coulomb, root_next_to_the_valid_arc_edge)
{
    static const double Gs[3][9] = {
        {0.8852770926554889, -0.15736316819134402, 0.1733568479356355, -0.15736316819134402, 0.05627492755970439,
         -0.012318616535108178, 0.1733568479356355, -0.012318616535108178, 0.05844797978480666},
        {0.10011193564590277, 0.14236465553308725, 0.14828668830955585, 0.14236465553308725, 0.3259034766062392,
         0.35295829436988185, 0.14828668830955585, 0.35295829436988185, 0.573984587747858},
        {0.6395870360993501, -0.27655497141082985, 0.32286733619762914, -0.27655497141082985, 0.16148987866481324,
         -0.10319122780431099, 0.32286733619762914, -0.10319122780431099, 0.19892308523583668}};
    static const double cs[3][3] = {{0.6081895428595032, 0.10391598301994917, -0.7443843917585372},
                                    {0.30116285711637286, 1.7560831291801253, -0.7321674267355351},
                                    {0.2985885128559835, -0.4123412961444053, -0.9723816084721654}};
    static const double mus[3] = {0.8173739625366809, 2.1555129306677907, 1.2009993041458784};
    for (int k = 0; k < 3; k++) {
        double roots[8][3], l[3];
        const int nroot = brute_coulomb_roots(Gs[k], cs[k], mus[k], roots);
        cr_assert_geq(nroot, 1, "block %d", k);
        int nr = -1;
        cr_assert_eq(sim_contact_single_coulomb(Gs[k], cs[k], mus[k], l, NULL, NULL, &nr), SIM_CONTACT_SLIP);
        cr_assert_eq(nr, 0, "block %d: no root reported", k);
        double best = INFINITY;
        for (int q = 0; q < nroot; q++) {
            const double dl[3] = {l[0] - roots[q][0], l[1] - roots[q][1], l[2] - roots[q][2]};
            best = fmin(best, norm3(dl));
        }
        cr_assert(best <= 1e-6 * (1 + norm3(l)), "block %d: %g from the nearest root", k, best);
        cr_assert(sim_contact_coulomb_error(1, Gs[k], cs[k], &mus[k], l) < 1e-5);
    }
}

/* With G_nT = 0 and an isotropic tangential block both models reduce to Coulomb: lambda_T opposite c_T. */
Test(solver_coulomb, decoupled_isotropic_block_analytic)
{
    const double g = 0.4, gn = 0.3, mu = 0.6;
    const double G[9] = {g, 0, 0, 0, g, 0, 0, 0, gn};
    for (int k = 0; k < 16; k++) {
        const double th = 2 * M_PI * k / 16, c[3] = {1.5 * cos(th), 1.5 * sin(th), -0.7};
        double l[3], lp[3];
        int nr = -1;
        cr_assert_eq(sim_contact_single_coulomb(G, c, mu, l, NULL, NULL, &nr), SIM_CONTACT_SLIP);
        cr_assert_eq(nr, 0);
        sim_contact_single(G, c, mu, lp, NULL, NULL);
        const double ln = 0.7 / gn; /* v_n = 0 */
        cr_assert_float_eq(l[2], ln, 1e-9);
        cr_assert_float_eq(l[0], -mu * ln * cos(th), 1e-9);
        cr_assert_float_eq(l[1], -mu * ln * sin(th), 1e-9);
        for (int a = 0; a < 3; a++) cr_assert_float_eq(l[a], lp[a], 1e-9);
    }
}

/* A box sliding on its face (4 corner contacts), solved at the velocity level step after step: the centre
 * decelerates at mu g.  The paper model falls short (each corner's friction tilts inward by mu G_ny / G_nn). */
static double box_deceleration(int solver, double mu, double *spin)
{
    const double m = 2.0, hx = 0.1, hy = 0.1, hz = 0.05, g = 9.81, dt = 1e-3;
    const double I[3] = {m * (4 * hy * hy + 4 * hz * hz) / 12, m * (4 * hx * hx + 4 * hz * hz) / 12,
                         m * (4 * hx * hx + 4 * hy * hy) / 12};
    double J[12 * 6] = {0}, G[144], u[6] = {1.5, 0.4, 0, 0, 0, 0};
    const double sx[4] = {1, 1, -1, -1}, sy[4] = {1, -1, 1, -1};
    for (int k = 0; k < 4; k++) {
        const double rr[3] = {sx[k] * hx, sy[k] * hy, -hz};
        for (int a = 0; a < 3; a++) {
            double e[3] = {0, 0, 0}, rxe[3];
            e[a] = 1;
            cross3(rr, e, rxe);
            double *row = J + (3 * k + a) * 6;
            for (int q = 0; q < 3; q++) row[q] = e[q], row[3 + q] = rxe[q];
        }
    }
    const double minv[6] = {1 / m, 1 / m, 1 / m, 1 / I[0], 1 / I[1], 1 / I[2]};
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 12; b++) {
            double s = 0;
            for (int q = 0; q < 6; q++) s += J[a * 6 + q] * minv[q] * J[b * 6 + q];
            G[a * 12 + b] = s;
        }
    const double mus[4] = {mu, mu, mu, mu};
    double lam[12] = {0};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-10;
    p.max_iter = 1000;
    const double v0 = hypot(u[0], u[1]);
    const int steps = 100;
    *spin = 0;
    for (int s = 0; s < steps; s++) {
        double uf[6], c[12];
        memcpy(uf, u, sizeof uf);
        uf[2] -= g * dt;
        for (int a = 0; a < 12; a++) {
            double t = 0;
            for (int q = 0; q < 6; q++) t += J[a * 6 + q] * uf[q];
            c[a] = t;
        }
        sim_solver_stats st;
        sim_solve(solver, 4, G, c, mus, lam, &p, &st);
        for (int q = 0; q < 6; q++) {
            double t = 0;
            for (int a = 0; a < 12; a++) t += J[a * 6 + q] * lam[a];
            u[q] = uf[q] + minv[q] * t;
        }
        *spin = fmax(*spin, fabs(u[5]));
    }
    return (v0 - hypot(u[0], u[1])) / (steps * dt);
}

Test(solver_coulomb, sliding_box_decelerates_at_mu_g)
{
    const double g = 9.81, mus[2] = {0.5, 0.8};
    for (int k = 0; k < 2; k++) {
        double spin, spin_p, spin_a;
        const double a = box_deceleration(SIM_SOLVER_COULOMB_BISECTION, mus[k], &spin);
        const double ap = box_deceleration(SIM_SOLVER_PAPER_BISECTION, mus[k], &spin_p);
        const double aa = box_deceleration(SIM_SOLVER_COULOMB_STALL_ADMM, mus[k], &spin_a);
        const double e = a / (mus[k] * g) - 1, ep = ap / (mus[k] * g) - 1, ea = aa / (mus[k] * g) - 1;
        cr_log_info("sliding box mu %.1f: coulomb-bisection %+.4f %%, coulomb-stall-admm %+.4f %%, paper-bisection "
                    "%+.4f %% of mu g", mus[k], 100 * e, 100 * ea, 100 * ep);
        cr_assert_lt(fabs(e), 1e-3, "coulomb-bisection: %g of mu g", e);
        cr_assert_lt(fabs(ea), 1e-3, "coulomb-stall-admm: %g of mu g", ea);
        cr_assert_lt(ep, -2e-3, "the paper model was expected to fall short of mu g (got %g)", ep);
        cr_assert_lt(spin, 1e-6);
    }
}

/* Multi-contact: coulomb-bisection against a tight solve of the Coulomb NCP by a different method (the projected
 * Gauss-Seidel of Hwangbo et al., tol 1e-12). */
static void coulomb_multi_suite(int n, int regime, int ncase, unsigned seed)
{
    rng_t r = {seed};
    sim_solver_params p, pp;
    sim_solver_default_params(&p);
    sim_solver_default_params(&pp);
    pp.tol = 1e-12;
    pp.max_iter = 200000;
    int conv = 0, vel1 = 0, noroot = 0;
    long iters = 0;
    for (int t = 0; t < ncase; t++) {
        problem P;
        make_problem(&r, n, &P);
        set_free_velocity(&r, regime, &P);
        double lb[24] = {0}, lp[24] = {0};
        sim_solver_stats sb, sp;
        int rc = sim_solve_coulomb_bisection(n, P.G, P.c, P.mu, lb, &p, &sb);
        cr_assert(rc == SIM_SOLVER_OK || rc == SIM_SOLVER_MAXITER);
        iters += sb.iterations;
        noroot += sb.no_root > 0;
        conv += rc == SIM_SOLVER_OK;
        cr_assert(dke(&P, lb) <= 1e-9);
        if (rc == SIM_SOLVER_OK) {
            cr_assert(sim_contact_coulomb_error(n, P.G, P.c, P.mu, lb) < 1.01 * p.tol);
            sim_contact_metrics_t mt;
            sim_contact_metrics(n, P.G, P.c, P.mu, lb, 1.0, &mt);
            cr_assert(mt.eps_abs < 1e-5, "converged Coulomb solution with NCP eps_abs %g", mt.eps_abs);
        }
        rc = sim_solve_pgs_hwangbo(n, P.G, P.c, P.mu, lp, &pp, &sp);
        cr_assert(rc == SIM_SOLVER_OK);
        vel1 += velocity_diff(&P, lb, lp) < 0.01;
    }
    cr_log_info("coulomb-bisection n=%d %s: %d/%d converged (mean %.1f sweeps), %d with a no-root block; velocities "
                "within 1%% of tight PGS: %d", n, regime == STANCE ? "stance" : "impact", conv, ncase,
                (double)iters / ncase, noroot, vel1);
    cr_assert(conv >= ncase * 95 / 100, "converged %d of %d", conv, ncase);
    cr_assert(vel1 >= ncase * (regime == STANCE ? 98 : 90) / 100, "velocities within 1%%: %d of %d", vel1, ncase);
}

Test(solver_coulomb, four_contacts_stance_vs_tight_pgs, .timeout = 120) { coulomb_multi_suite(4, STANCE, 300, 5); }
Test(solver_coulomb, four_contacts_impact_vs_tight_pgs, .timeout = 120) { coulomb_multi_suite(4, IMPACT, 300, 6); }

/* ------------------------------------------------------------------------------------------------ */
/* NCP-PGS, ADMM, the stall detector.                                                                 */

/* A reference CCP solution by a different method: block projected gradient (per contact, step 1 / tr G_ii <=
 * 1 / lambda_max(G_ii), projection on the cone; a convergent block coordinate descent of the convex QP). */
static void ccp_reference(int n, const double *G, const double *c, const double *mu, double *l, int sweeps)
{
    const int N = 3 * n;
    memset(l, 0, sizeof(double) * (size_t)N);
    double v[24 * 3];
    for (int s = 0; s < sweeps; s++)
        for (int i = 0; i < n; i++) {
            const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
            const double step = 1.0 / (Gi[0] + Gi[N + 1] + Gi[2 * N + 2]);
            for (int a = 0; a < 3; a++) {
                double t = c[3 * i + a];
                for (int b = 0; b < N; b++) t += G[(3 * i + a) * N + b] * l[b];
                v[a] = l[3 * i + a] - step * t;
            }
            sim_cone_project(v, mu[i], l + 3 * i);
        }
}

Test(solver_admm, matches_reference_ccp_solution, .timeout = 120)
{
    rng_t r = {31};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-10;
    p.admm_max_iter = 5000;
    long its = 0;
    for (int t = 0; t < 100; t++) {
        problem P;
        make_problem(&r, 4, &P);
        set_free_velocity(&r, t % 2 ? STANCE : IMPACT, &P);
        double la[12] = {0}, lr[12];
        sim_solver_stats st;
        cr_assert_eq(sim_solve_admm(4, P.G, P.c, P.mu, la, &p, &st), SIM_SOLVER_OK, "case %d: eps %g", t, st.error);
        its += st.iterations;
        ccp_reference(4, P.G, P.c, P.mu, lr, 20000);
        for (int i = 0; i < 4; i++) /* lambda is z: exactly in the cones */
            cr_assert(hypot(la[3 * i], la[3 * i + 1]) <= P.mu[i] * la[3 * i + 2] * (1 + 1e-12) && la[3 * i + 2] >= 0);
        const double vd = velocity_diff(&P, la, lr);
        cr_assert(vd < 1e-6, "case %d: velocities differ by %g", t, vd);
        cr_assert(dke(&P, la) <= 1e-9);
    }
    cr_log_info("admm vs CCP reference: 100 problems, mean %.1f iterations to eps_abs 1e-10", its / 100.0);
}

/* Two cubes stacked on the ground (8 contacts, 12 dofs: hyperstatic), the upper one mass_ratio times heavier. */
static void heavy_on_light(double mass_ratio, double *G, double *c, double *mu)
{
    double J[24 * 12], minv[12];
    rc_heavy_on_light(mass_ratio, J, minv, G, c, mu);
}

static double ncp_eps_abs(int n, const double *G, const double *c, const double *mu, const double *l)
{
    sim_contact_metrics_t mt;
    sim_contact_metrics(n, G, c, mu, l, 1.0, &mt);
    return mt.eps_abs;
}

Test(solver_admm, heavy_on_light_1e6_admm_converges_per_contact_does_not, .timeout = 120)
{
    static double G[24 * 24];
    double c[24], mu[8];
    heavy_on_light(1e6, G, c, mu);
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.admm_max_iter = 2000;
    const int per_contact[3] = {SIM_SOLVER_PAPER_BISECTION, SIM_SOLVER_COULOMB_BISECTION, SIM_SOLVER_PGS};
    for (int k = 0; k < 3; k++) {
        double l[24] = {0};
        sim_solver_stats st;
        const int rc = sim_solve(per_contact[k], 8, G, c, mu, l, &p, &st);
        const double e = ncp_eps_abs(8, G, c, mu, l);
        cr_log_info("heavy-on-light 1e6, %s: rc %d after %d sweeps, NCP eps_abs %.3g", sim_solver_at(per_contact[k])->name,
                    rc, st.iterations, e);
        cr_assert_eq(rc, SIM_SOLVER_MAXITER);
        cr_assert_gt(e, 1e-6);
    }
    double l[24] = {0};
    sim_solver_stats st;
    cr_assert_eq(sim_solve_admm(8, G, c, mu, l, &p, &st), SIM_SOLVER_OK, "admm: eps %g", st.error);
    const double e = ncp_eps_abs(8, G, c, mu, l);
    cr_log_info("heavy-on-light 1e6, admm: %d iterations, NCP eps_abs %.3g, rho %.3g", st.iterations, e, st.rho);
    cr_assert_leq(e, 1e-6);
    double ls[24] = {0};
    cr_assert_eq(sim_solve_coulomb_stall_admm(8, G, c, mu, ls, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.fallback, 1);
    cr_assert_leq(ncp_eps_abs(8, G, c, mu, ls), 1e-6);
    cr_log_info("heavy-on-light 1e6, coulomb-stall-admm: %d sweeps + %d ADMM iterations", st.iterations -
                st.fallback_iterations, st.fallback_iterations);
}

Test(solver_admm, stall_detector_quiet_on_easy_problems)
{
    rng_t r = {8};
    sim_solver_params p;
    sim_solver_default_params(&p);
    int same = 0, fb = 0;
    for (int t = 0; t < 200; t++) {
        problem P;
        make_problem(&r, 4, &P);
        set_free_velocity(&r, STANCE, &P);
        double la[12] = {0}, lb[12] = {0};
        sim_solver_stats sa, sb;
        const int ra = sim_solve_coulomb_stall_admm(4, P.G, P.c, P.mu, la, &p, &sa);
        const int rb = sim_solve_coulomb_bisection(4, P.G, P.c, P.mu, lb, &p, &sb);
        cr_assert_eq(ra, SIM_SOLVER_OK);
        fb += sa.fallback;
        if (!sa.fallback) { /* no fallback: coulomb-bisection (up to the rounding of separately compiled sweeps) */
            cr_assert_eq(rb, SIM_SOLVER_OK);
            cr_assert(rel_diff(12, la, lb) < 1e-9);
            same++;
        }
    }
    cr_log_info("stall detector on 200 stance problems: %d fallbacks", fb);
    cr_assert(same >= 190, "fell back on %d of 200 easy problems", 200 - same);
}

Test(solver_pgs, ncp_pgs_converges_to_coulomb_on_stance)
{
    rng_t r = {12};
    sim_solver_params p, pp;
    sim_solver_default_params(&p);
    p.max_iter = 5000;
    sim_solver_default_params(&pp);
    pp.tol = 1e-12;
    pp.max_iter = 200000;
    int conv = 0, vel = 0;
    for (int t = 0; t < 100; t++) {
        problem P;
        make_problem(&r, 4, &P);
        set_free_velocity(&r, STANCE, &P);
        double l[12] = {0}, lr[12] = {0};
        sim_solver_stats st;
        const int rc = sim_solve_pgs(4, P.G, P.c, P.mu, l, &p, &st);
        if (rc != SIM_SOLVER_OK) continue;
        conv++;
        cr_assert(ncp_eps_abs(4, P.G, P.c, P.mu, l) < p.tol * 1.0001);
        cr_assert_eq(sim_solve_pgs_hwangbo(4, P.G, P.c, P.mu, lr, &pp, NULL), SIM_SOLVER_OK);
        vel += velocity_diff(&P, l, lr) < 0.01;
    }
    cr_log_info("NCP-PGS (Alg. 6): %d of 100 stance problems converged to eps_abs 1e-6; %d agree with tight PGS",
                conv, vel);
    cr_assert_geq(conv, 90);
    cr_assert_geq(vel, conv * 98 / 100);
}

/* A strongly coupled contact harvested from the hang scenario (a foot sliding at ~2.4 m/s, kappa = mu |G_nT| / G_nn
 * = 2.96, closing at 3.8 mm/s): Hwangbo's PGS (the Fig. 6 reference of herd-bench contact-models) cycles on it
 * without converging and ends with no impulse while the contact still penetrates, which is no Coulomb solution.
 * COND / V-FPI and coulomb-bisection both reach the Coulomb NCP (residual at rounding level, checked with
 * sim_contact_coulomb_error and De Saxce's eps_abs) and agree within 1e-6: why the bench takes the NCP solver with
 * the smallest residual where the PGS reference does not converge. */
Test(solver_coulomb, strongly_coupled_contact_defeats_the_pgs_reference)
{
    const double G[9] = {0x1.11019c15a3657p+2, 0x1.75a313f2d78b4p+1, 0x1.895c221a8fc87p-1,
                         0x1.75a313f2d78b4p+1, 0x1.286ffc93ecbcdp+1, 0x1.42110d2191f44p-1,
                         0x1.895c221a8fc87p-1, 0x1.42110d2191f44p-1, 0x1.12d1db3731ed9p-2};
    const double c[3] = {-0x1.317264428876cp+0, -0x1.fa16bdc5ee623p+0, -0x1.efea5d425c8cp-9};
    const double mu[1] = {0x1.999999999999ap-1};
    cr_assert_gt(mu[0] * hypot(G[6], G[7]) / G[8], 2.5);
    sim_solver_params tight;
    sim_solver_default_params(&tight);
    tight.tol = 1e-13;
    tight.max_iter = tight.admm_max_iter = 20000;
    double lp[3] = {0}, lc[3] = {0}, lb[3] = {0}, v[3];
    sim_solver_stats sp, sc, sb;
    sim_solve(SIM_SOLVER_PGS_HWANGBO, 1, G, c, mu, lp, &tight, &sp);
    sim_contact_velocity(1, G, c, lp, v);
    const double ep = sim_contact_eps_abs(1, v, mu, lp, 1);
    cr_log_info("pgs-hwangbo: converged %d after %d sweeps, lambda (%g %g %g), v_n %g, eps_abs %g", sp.converged,
                sp.iterations, lp[0], lp[1], lp[2], v[2], ep);
    cr_assert(!sp.converged && ep > 1e-3, "the PGS reference converges here (eps_abs %g)", ep);
    sim_solve(SIM_SOLVER_COND_VFPI, 1, G, c, mu, lc, &tight, &sc);
    sim_contact_velocity(1, G, c, lc, v);
    const double ec = sim_contact_eps_abs(1, v, mu, lc, 1);
    cr_assert(sc.converged && ec < 1e-10, "cond-vfpi: converged %d, eps_abs %g", sc.converged, ec);
    cr_assert_lt(sim_contact_coulomb_error(1, G, c, mu, lc), 1e-10);
    cr_assert(lc[2] > 0 && fabs(hypot(lc[0], lc[1]) - mu[0] * lc[2]) < 1e-9 * lc[2], "a slipping contact");
    tight.tol = 1e-10; /* above the per-contact rounding floor */
    cr_assert_eq(sim_solve(SIM_SOLVER_COULOMB_BISECTION, 1, G, c, mu, lb, &tight, &sb), SIM_SOLVER_OK);
    for (int k = 0; k < 3; k++) cr_assert_float_eq(lb[k], lc[k], 1e-6 * lc[2], "component %d: %g vs %g", k, lb[k], lc[k]);
}

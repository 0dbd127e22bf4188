/* test_solver_cond.c — COND / V-FPI (sim_solver_cond.h): single contacts against a dense brute-force Coulomb
 * reference (stick and slip), the sliding box against mu g, the Coulomb NCP (strict) and CCP (proximal)
 * conditions on random multi-contact problems, Chebyshev acceleration, the normal cap, the energy guard, bad
 * input and the solver-table row. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers/rigid_contact.h"
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_cond.h"

/* ---------------------------------------------------------------------------------------------- */
/* Brute-force single-contact Coulomb reference                                                     */

static void mat3_vec(const double G[9], const double x[3], double y[3])
{
    for (int a = 0; a < 3; a++) y[a] = G[3 * a] * x[0] + G[3 * a + 1] * x[1] + G[3 * a + 2] * x[2];
}

/* -G^-1 c by Cramer's rule. */
static void zero_velocity_impulse(const double G[9], const double c[3], double l[3])
{
    const double det = G[0] * (G[4] * G[8] - G[5] * G[7]) - G[1] * (G[3] * G[8] - G[5] * G[6]) +
                       G[2] * (G[3] * G[7] - G[4] * G[6]);
    for (int k = 0; k < 3; k++) {
        double A[9];
        memcpy(A, G, sizeof A);
        for (int a = 0; a < 3; a++) A[3 * a + k] = -c[a];
        l[k] = (A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                A[2] * (A[3] * A[7] - A[4] * A[6])) / det;
    }
}

/* On the slip set {v_n = 0, |lambda_T| = mu lambda_n} at angle th: lambda, and F = u x v_T (zero when v_T is
 * parallel to u) and along = u . v_T (must be < 0: opposite).  Returns 0 where lambda_n <= 0. */
static int slip_point(const double G[9], const double c[3], double mu, double th, double l[3], double *F,
                      double *along)
{
    const double ux = cos(th), uy = sin(th);
    const double d = G[8] / mu + G[6] * ux + G[7] * uy;
    if (!(d > 0)) return 0;
    const double r = -c[2] / d;
    l[0] = r * ux, l[1] = r * uy, l[2] = r / mu;
    double v[3];
    mat3_vec(G, l, v);
    const double vx = v[0] + c[0], vy = v[1] + c[1];
    *F = ux * vy - uy * vx;
    *along = ux * vx + uy * vy;
    return 1;
}

#define NSCAN 20000
/* Every Coulomb solution of a closing single contact (c_n < 0): stick if -G^-1 c is in the cone, and every
 * slip angle where v_T is anti-parallel to lambda_T, found on a 20000-point scan and bisected.  Returns the
 * number of solutions (first one in out). */
static int coulomb_reference(const double G[9], const double c[3], double mu, double out[3])
{
    int count = 0;
    double l0[3];
    zero_velocity_impulse(G, c, l0);
    if (l0[2] > 0 && hypot(l0[0], l0[1]) <= mu * l0[2]) {
        memcpy(out, l0, sizeof l0);
        count++;
    }
    double lp[3], Fp = 0, Ap = 0;
    int okp = 0;
    for (int k = 0; k <= NSCAN; k++) {
        const double th = 2 * M_PI * k / NSCAN;
        double l[3], F, A;
        const int ok = slip_point(G, c, mu, th, l, &F, &A);
        if (ok && okp && A < 0 && Ap < 0 && ((F > 0) != (Fp > 0))) {
            double a = 2 * M_PI * (k - 1) / NSCAN, b = th, fa = Fp;
            for (int it = 0; it < 100; it++) {
                const double m = 0.5 * (a + b);
                double lm[3], fm, am;
                if (!slip_point(G, c, mu, m, lm, &fm, &am)) break;
                if ((fm > 0) == (fa > 0)) a = m, fa = fm;
                else b = m;
            }
            double ls[3], fs, as;
            slip_point(G, c, mu, 0.5 * (a + b), ls, &fs, &as);
            if (as < 0) {
                if (count == 0) memcpy(out, ls, sizeof ls);
                count++;
            }
        }
        okp = ok, Fp = F, Ap = A;
        (void)lp;
    }
    return count;
}

/* A random single-contact block: a rigid body (random mass and inertia) touched at a random point through a
 * random contact frame, as in a real Delassus block. */
static void random_block(rc_rng *r, double G[9])
{
    rc_body b = {rc_uniform(r, 0.5, 20), {rc_uniform(r, 0.01, 1), rc_uniform(r, 0.01, 1), rc_uniform(r, 0.01, 1)}};
    double p[1][3] = {{rc_normal(r) * 0.3, rc_normal(r) * 0.3, rc_normal(r) * 0.3}};
    double R[1][9], J[18];
    rc_random_frame(r, R[0]);
    rc_body_contacts(&b, 1, (const double (*)[3])p, (const double (*)[9])R, J, G);
}

static double dist3(const double a[3], const double b[3])
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

static sim_cond_params tight(void)
{
    sim_cond_params p;
    sim_cond_default_params(&p);
    p.tol = 1e-13;
    p.max_iter = 20000;
    return p;
}

Test(cond_single, stick_and_slip_match_bruteforce_coulomb, .timeout = 120)
{
    rc_rng r = {7};
    const sim_cond_params p = tight();
    int unique = 0, nstick = 0, nslip = 0, cases = 600;
    for (int t = 0; t < cases; t++) {
        double G[9], c[3], ref[3], l[3] = {0, 0, 0};
        random_block(&r, G);
        const double mu = rc_uniform(&r, 0.2, 1.2);
        const double scale = G[8];
        c[0] = rc_normal(&r) * scale, c[1] = rc_normal(&r) * scale, c[2] = -rc_uniform(&r, 0.1, 1.0) * scale;
        if (coulomb_reference(G, c, mu, ref) != 1) continue; /* several Coulomb solutions: no single answer */
        unique++;
        sim_cond_stats st;
        int rc = sim_cond_solve(1, G, c, &mu, l, &p, &st);
        cr_assert_eq(rc, SIM_SOLVER_OK, "case %d: not converged (error %g after %d)", t, st.error, st.iterations);
        const double tol = 1e-7 * (1 + fabs(ref[2]));
        cr_assert(dist3(l, ref) < tol, "case %d: COND (%g %g %g) vs reference (%g %g %g), mode %d/%d/%d", t, l[0], l[1],
                  l[2], ref[0], ref[1], ref[2], st.n_open, st.n_stick, st.n_slip);
        nstick += st.n_stick;
        nslip += st.n_slip;
    }
    /* the test must exercise both branches, on most cases */
    cr_assert(unique > cases * 3 / 4, "only %d of %d cases had a unique Coulomb solution", unique, cases);
    cr_assert(nstick > 50 && nslip > 50, "stick %d slip %d", nstick, nslip);
}

Test(cond_single, open_and_frictionless)
{
    const double G[9] = {1.0, 0.1, 0.2, 0.1, 0.8, -0.1, 0.2, -0.1, 1.5};
    double c[3] = {0.3, -0.2, 0.4}, l[3] = {1, 1, 1}, mu = 0.7;
    sim_cond_stats st;
    cr_assert_eq(sim_cond_solve(1, G, c, &mu, l, NULL, &st), SIM_SOLVER_OK);
    cr_assert(fabs(l[0]) + fabs(l[1]) + fabs(l[2]) < 1e-12, "separating contact must carry no impulse");
    cr_assert_eq(st.n_open, 1);
    /* frictionless: lambda_n = -c_n / G_nn, lambda_T = 0 */
    double c2[3] = {0.3, -0.2, -0.9}, l2[3] = {0, 0, 0}, mu0 = 0;
    sim_cond_params p = tight();
    cr_assert_eq(sim_cond_solve(1, G, c2, &mu0, l2, &p, &st), SIM_SOLVER_OK);
    cr_assert(fabs(l2[2] - 0.9 / 1.5) < 1e-10 && fabs(l2[0]) + fabs(l2[1]) < 1e-14);
}

/* ---------------------------------------------------------------------------------------------- */
/* The sliding box: four corners, G of rank 6, deceleration mu g                                     */

static void sliding_box(double mu, int proximal, double *decel, double *vz_max, double *wmax)
{
    const double hx = 0.2, hy = 0.15, hz = 0.1, m = 2.0, g = 9.81, dt = 1e-3, v0 = 2.0;
    rc_body b = {m, {m / 3 * (hy * hy + hz * hz), m / 3 * (hx * hx + hz * hz), m / 3 * (hx * hx + hy * hy)}};
    const double r[4][3] = {{hx, hy, -hz}, {hx, -hy, -hz}, {-hx, hy, -hz}, {-hx, -hy, -hz}};
    double J[12 * 6], G[144], c[12], lam[12] = {0}, mus[4] = {mu, mu, mu, mu};
    rc_body_contacts(&b, 4, r, NULL, J, G);
    sim_cond_params p = tight();
    p.tol = 1e-12;
    p.projection = proximal ? SIM_COND_PROXIMAL : SIM_COND_STRICT;
    double u[6] = {v0, 0, 0, 0, 0, 0};
    const int steps = 100;
    *vz_max = *wmax = 0;
    for (int k = 0; k < steps; k++) {
        u[2] -= g * dt; /* free velocity: gravity */
        rc_contact_velocity(4, J, u, c);
        sim_cond_stats st;
        cr_assert_eq(sim_cond_solve(4, G, c, mus, lam, &p, &st), SIM_SOLVER_OK, "step %d: error %g after %d", k,
                     st.error, st.iterations);
        rc_body_apply(&b, 4, J, lam, u);
        *vz_max = fmax(*vz_max, fabs(u[2]));
        *wmax = fmax(*wmax, fmax(fabs(u[3]), fmax(fabs(u[4]), fabs(u[5]))));
    }
    *decel = (v0 - u[0]) / (steps * dt);
}

Test(cond_multi, sliding_box_decelerates_at_mu_g, .timeout = 60)
{
    const double mus[2] = {0.5, 0.8};
    for (int i = 0; i < 2; i++) {
        double a, vz, w;
        sliding_box(mus[i], 0, &a, &vz, &w);
        const double want = mus[i] * 9.81;
        cr_assert(fabs(a - want) < 1e-3 * want, "mu %g: deceleration %.6f, mu g %.6f (%.3f %%)", mus[i], a, want,
                  100 * (a - want) / want);
        cr_assert(vz < 1e-8 && w < 1e-8, "mu %g: the box must slide flat (vz %g, omega %g)", mus[i], vz, w);
    }
}

Test(cond_multi, sliding_box_proximal_glides)
{
    /* the CCP relaxation makes a sliding contact separate at v_n = mu |v_T| instead of v_n = 0 */
    double a, vz, w;
    sliding_box(0.5, 1, &a, &vz, &w);
    cr_assert(vz > 1e-3, "the CCP model should lift the sliding box (|vz| max %g)", vz);
}

/* ---------------------------------------------------------------------------------------------- */
/* Random multi-contact problems: the conditions of each model at the returned solution              */

/* Coulomb NCP violation of one contact (strict model), scaled: Signorini, cone and the sliding law. */
static double coulomb_violation(const double l[3], const double v[3], double mu)
{
    const double lt = hypot(l[0], l[1]), vt = hypot(v[0], v[1]);
    double e = fmax(0, -l[2]) + fmax(0, -v[2]) + fabs(l[2] * v[2]) + fmax(0, lt - mu * l[2]);
    if (l[2] > 0 && vt > 0) { /* sliding: on the cone boundary and v_T = -k lambda_T */
        e += fabs(mu * l[2] - lt) * vt;
        if (lt > 0) e += vt * lt + (l[0] * v[0] + l[1] * v[1]); /* |v||l| + v.l = 0 iff anti-parallel */
        else e += vt;
    }
    return e;
}

/* CCP (Anitescu) violation: cone, the normal relaxed to v_n = mu |v_T|, sliding law. */
static double ccp_violation(const double l[3], const double v[3], double mu)
{
    const double lt = hypot(l[0], l[1]), vt = hypot(v[0], v[1]);
    const double vn = v[2] - mu * vt;
    double e = fmax(0, -l[2]) + fmax(0, -vn) + fabs(l[2] * vn) + fmax(0, lt - mu * l[2]);
    if (l[2] > 0 && vt > 0 && lt > 0) e += fabs(mu * l[2] - lt) * vt + vt * lt + (l[0] * v[0] + l[1] * v[1]);
    return e;
}

Test(cond_multi, random_problems_satisfy_each_model, .timeout = 120)
{
    rc_rng r = {2024};
    for (int proximal = 0; proximal < 2; proximal++) {
        int converged = 0, cases = 150;
        for (int t = 0; t < cases; t++) {
            const int n = 2 + (int)(rc_next(&r) % 5), nv = 3 * n + 6;
            double G[18 * 18], c[18], l[18] = {0}, v[18], mu[6];
            rc_random_problem(&r, n, nv, G, c);
            for (int i = 0; i < n; i++) mu[i] = rc_uniform(&r, 0.3, 1.0);
            sim_cond_params p = tight();
            p.tol = 1e-11;
            p.projection = proximal ? SIM_COND_PROXIMAL : SIM_COND_STRICT;
            sim_cond_stats st;
            if (sim_cond_solve(n, G, c, mu, l, &p, &st) != SIM_SOLVER_OK) continue;
            converged++;
            sim_contact_velocity(n, G, c, l, v);
            for (int i = 0; i < n; i++) {
                const double e = proximal ? ccp_violation(l + 3 * i, v + 3 * i, mu[i])
                                          : coulomb_violation(l + 3 * i, v + 3 * i, mu[i]);
                cr_assert(e < 1e-8, "%s case %d contact %d: violation %g", proximal ? "CCP" : "Coulomb", t, i, e);
            }
            if (!proximal) { /* and the repository's De Saxce metric agrees */
                sim_contact_metrics_t mt;
                sim_contact_metrics(n, G, c, mu, l, 1.0, &mt);
                cr_assert(mt.eps_abs < 1e-8, "case %d: eps_abs %g", t, mt.eps_abs);
            }
        }
        /* CCP always converges; the Coulomb NCP usually does on these problems */
        cr_assert(converged >= (proximal ? cases : cases * 8 / 10), "%s: %d of %d converged",
                  proximal ? "CCP" : "Coulomb", converged, cases);
    }
}

Test(cond_multi, chebyshev_same_solution_fewer_iterations, .timeout = 60)
{
    rc_rng r = {31};
    long it_plain = 0, it_cheb = 0;
    for (int t = 0; t < 60; t++) {
        const int n = 4;
        double G[144], c[12], l1[12] = {0}, l2[12] = {0}, v1[12], v2[12], mu[4] = {0.6, 0.6, 0.6, 0.6};
        rc_random_problem(&r, n, 18, G, c);
        sim_cond_params p = tight();
        p.tol = 1e-11;
        p.projection = SIM_COND_PROXIMAL; /* unique velocities: comparable */
        sim_cond_stats s1, s2;
        p.chebyshev = 0;
        cr_assert_eq(sim_cond_solve(n, G, c, mu, l1, &p, &s1), SIM_SOLVER_OK);
        p.chebyshev = 1;
        cr_assert_eq(sim_cond_solve(n, G, c, mu, l2, &p, &s2), SIM_SOLVER_OK);
        sim_contact_velocity(n, G, c, l1, v1);
        sim_contact_velocity(n, G, c, l2, v2);
        for (int a = 0; a < 3 * n; a++) cr_assert(fabs(v1[a] - v2[a]) < 1e-8, "case %d: velocities differ", t);
        it_plain += s1.iterations;
        it_cheb += s2.iterations;
    }
    cr_assert(it_cheb < it_plain, "Chebyshev %ld iterations vs plain %ld", it_cheb, it_plain);
}

Test(cond_multi, warm_start_from_solution_stops_at_once)
{
    rc_rng r = {5};
    double G[144], c[12], l[12] = {0}, mu[4] = {0.8, 0.8, 0.8, 0.8};
    rc_random_problem(&r, 4, 18, G, c);
    sim_cond_params p = tight();
    p.tol = 1e-10;
    sim_cond_stats st;
    cr_assert_eq(sim_cond_solve(4, G, c, mu, l, &p, &st), SIM_SOLVER_OK);
    cr_assert(st.iterations > 1);
    cr_assert_eq(sim_cond_solve(4, G, c, mu, l, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.iterations, 0);
}

Test(cond_multi, normal_cap_bounds_the_impulse)
{
    /* one frictionless and one frictional contact on a body: with caps the normal impulses stop at the cap and
       the capped contact keeps closing (v_n < 0), the other reaches v_n = 0 */
    rc_body b = {1.0, {0.1, 0.1, 0.1}};
    const double rr[2][3] = {{0.2, 0, -0.1}, {-0.2, 0, -0.1}};
    double J[36], G[36], c[6], l[6] = {0}, v[6], mu[2] = {0.0, 0.5}, cap[2] = {0.05, 10.0};
    rc_body_contacts(&b, 2, rr, NULL, J, G);
    const double u[6] = {0.3, 0, -1.0, 0, 0, 0};
    rc_contact_velocity(2, J, u, c);
    sim_cond_params p = tight();
    sim_cond_stats st;
    cr_assert_eq(sim_cond_solve_capped(2, G, c, mu, cap, l, &p, &st, v), SIM_SOLVER_OK);
    cr_assert(fabs(l[2] - 0.05) < 1e-12, "capped normal %g", l[2]);
    cr_assert(v[2] < -1e-3, "the capped contact still closes (v_n %g)", v[2]);
    cr_assert(fabs(v[5]) < 1e-9 && l[5] > 0.05, "the other contact stops (v_n %g, lambda_n %g)", v[5], l[5]);
    cr_assert(hypot(l[3], l[4]) <= 0.5 * l[5] * (1 + 1e-12));
    double bad[2] = {-1, 1};
    cr_assert_eq(sim_cond_solve_capped(2, G, c, mu, bad, l, &p, &st, v), SIM_SOLVER_EINVAL);
}

Test(cond_multi, not_converged_never_adds_energy)
{
    rc_rng r = {77};
    for (int t = 0; t < 200; t++) {
        double G[144], c[12], l[12], mu[4] = {1.0, 1.0, 1.0, 1.0};
        rc_random_problem(&r, 4, 14, G, c);
        for (int a = 0; a < 12; a++) l[a] = rc_normal(&r) * 2; /* a bad warm start */
        sim_cond_params p;
        sim_cond_default_params(&p);
        p.max_iter = 1;
        sim_cond_stats st;
        sim_cond_solve(4, G, c, mu, l, &p, &st);
        cr_assert(rc_energy_change(4, G, c, l) <= 1e-12, "case %d adds energy", t);
        for (int i = 0; i < 4; i++) /* and the result is in the cones */
            cr_assert(l[3 * i + 2] >= 0 && hypot(l[3 * i], l[3 * i + 1]) <= mu[i] * l[3 * i + 2] * (1 + 1e-12));
    }
}

Test(cond_multi, bad_input_leaves_lambda)
{
    double G[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, c[3] = {0, 0, NAN}, l[3] = {7, 8, 9}, mu = 0.5;
    cr_assert_eq(sim_cond_solve(1, G, c, &mu, l, NULL, NULL), SIM_SOLVER_EINVAL);
    cr_assert(l[0] == 7 && l[1] == 8 && l[2] == 9);
    c[2] = -1;
    double neg = -INFINITY; /* a finite mu < 0 is a bounded row (test_solver_rows) */
    cr_assert_eq(sim_cond_solve(1, G, c, &neg, l, NULL, NULL), SIM_SOLVER_EINVAL);
    cr_assert_eq(sim_cond_solve(SIM_SOLVER_MAX_CONTACTS + 1, G, c, &mu, l, NULL, NULL), SIM_SOLVER_EINVAL);
    sim_cond_params p;
    sim_cond_default_params(&p);
    p.w_scale = 0;
    cr_assert_eq(sim_cond_solve(1, G, c, &mu, l, &p, NULL), SIM_SOLVER_EINVAL);
    sim_cond_stats st;
    cr_assert_eq(sim_cond_solve(0, NULL, NULL, NULL, NULL, NULL, &st), SIM_SOLVER_OK);
    cr_assert(st.converged);
}

Test(cond_table, row_dispatches_to_cond)
{
    const sim_solver_desc *d = sim_solver_find("cond-vfpi");
    cr_assert_not_null(d);
    cr_assert_eq(d->solve, sim_solve_cond);
    cr_assert_eq(sim_solver_index("cond-vfpi"), SIM_SOLVER_COND_VFPI);
    rc_rng r = {9};
    double G[144], c[12], l1[12] = {0}, l2[12] = {0}, mu[4] = {0.7, 0.7, 0.7, 0.7};
    rc_random_problem(&r, 4, 18, G, c);
    sim_solver_params sp;
    sim_solver_default_params(&sp);
    sp.max_iter = 5000;
    sp.tol = 1e-10;
    sim_solver_stats st;
    cr_assert_eq(sim_solve(SIM_SOLVER_COND_VFPI, 4, G, c, mu, l1, &sp, &st), SIM_SOLVER_OK);
    sim_cond_params p;
    sim_cond_default_params(&p);
    p.max_iter = 5000;
    p.tol = 1e-10;
    cr_assert_eq(sim_cond_solve(4, G, c, mu, l2, &p, NULL), SIM_SOLVER_OK);
    cr_assert_eq(memcmp(l1, l2, sizeof l1), 0);
    cr_assert(st.converged && st.error < 1e-10 && st.n_open + st.n_stick + st.n_slip == 4);
}

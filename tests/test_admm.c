/* test_admm.c — ADMM's factorization of G + rho I through the kinematic tree (sim_solve_admm_tree,
 * sim_solver_tree_shifted_solve): the tree solve against a dense brute-force reference built from the model
 * (M from the composite-rigid-body algorithm, J from the contact Jacobians, G = J M^-1 J^T by dense Cholesky),
 * ADMM through the tree against ADMM dense and an independent CCP solver, the heavy-on-light stack at a mass
 * ratio of 1e6 through a chain tree, and the contact step with either factorization. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_metrics.h"
#include "sim_model.h"
#include "sim_solver.h"
#include "sim_step.h"
#include "sim_urdf.h"
#include "helpers/rigid_contact.h"

#define NMAX 32 /* contacts at most in these tests (SIM_SOLVER_ADMM_MAX_CONTACTS) */

typedef struct { uint64_t s; } rng_t;

static double urand(rng_t *r, double lo, double hi)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((z >> 11) * 0x1.0p-53);
}

/* Dense Cholesky A = L L^T in place (lower triangle), textbook order; 0 or -1 if not positive definite. */
static int chol(double *A, int n)
{
    for (int j = 0; j < n; j++) {
        long double s = A[j * n + j];
        for (int k = 0; k < j; k++) s -= (long double)A[j * n + k] * A[j * n + k];
        if (!(s > 0)) return -1;
        A[j * n + j] = (double)sqrtl(s);
        for (int i = j + 1; i < n; i++) {
            long double t = A[i * n + j];
            for (int k = 0; k < j; k++) t -= (long double)A[i * n + k] * A[j * n + k];
            A[i * n + j] = (double)(t / A[j * n + j]);
        }
    }
    return 0;
}

static void chol_solve(const double *L, int n, double *x)
{
    for (int i = 0; i < n; i++) {
        long double s = x[i];
        for (int k = 0; k < i; k++) s -= (long double)L[i * n + k] * x[k];
        x[i] = (double)(s / L[i * n + i]);
    }
    for (int i = n - 1; i >= 0; i--) {
        long double s = x[i];
        for (int k = i + 1; k < n; k++) s -= (long double)L[k * n + i] * x[k];
        x[i] = (double)(s / L[i * n + i]);
    }
}

static sim_model *anymal(void)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    m->opt.joint_limits = 0; /* contact problems only (test_joint_limits solves limits with every solver) */
    return m;
}

/* A random ANYmal state close to the ground (random tilt, joint angles and velocities) and its contact problem
 * (the step through its CONTACTS stage with a 0.3 m margin: feet, shanks, thighs and base corners within reach of
 * the ground all become contacts).  Returns the contact count. */
static int random_state(const sim_model *m, sim_data *d, rng_t *r)
{
    sim_data_reset(m, d);
    sim_step_forget_contacts(d);
    d->q[2] = urand(r, 0.15, 0.5);
    double ax = urand(r, -0.6, 0.6), ay = urand(r, -0.6, 0.6), az = urand(r, -3, 3);
    const double th = sqrt(ax * ax + ay * ay + az * az);
    d->q[3] = cos(th / 2);
    d->q[4] = sin(th / 2) * ax / th, d->q[5] = sin(th / 2) * ay / th, d->q[6] = sin(th / 2) * az / th;
    for (int k = 7; k < m->nq; k++) d->q[k] = urand(r, -1.5, 1.5);
    for (int k = 0; k < m->nv; k++) d->u[k] = urand(r, -1, 1);
    sim_step_stages(m, d, 5e-3, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
    return d->ncon + d->nlim + d->nfric; /* the blocks of d->G */
}

/* The structure sim_step hands to the solvers. */
static sim_solver_tree step_tree(const sim_model *m, const sim_data *d)
{
    return (sim_solver_tree){m->nv, m->dof_parent, d->Bc, d->con_path, d->con_npath, m->nv};
}

/* Brute force: G = J M^-1 J^T from the dense mass matrix and the contact Jacobians (N = 3 ncon rows). */
static void dense_delassus(const sim_model *m, sim_data *d, int n, double *G)
{
    const int nv = m->nv, N = 3 * n;
    static double L[64 * 64], X[3 * NMAX * 64];
    sim_full_m(m, d);      /* the dense M from the packed one (the step fills only the packed) */
    memcpy(L, d->M, sizeof(double) * (size_t)nv * nv);
    cr_assert_eq(chol(L, nv), 0);
    for (int a = 0; a < N; a++) {
        double *x = X + (size_t)a * nv;
        memcpy(x, sim_step_contact_jacobian(m, d, 0) + (size_t)a * nv, sizeof(double) * (size_t)nv);
        chol_solve(L, nv, x);
    }
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            const double *Ja = sim_step_contact_jacobian(m, d, 0) + (size_t)a * nv;
            long double s = 0;
            for (int k = 0; k < nv; k++) s += (long double)Ja[k] * X[(size_t)b * nv + k];
            G[a * N + b] = (double)s;
        }
}

/* How the contacts sit on the tree: legs with two or more contacts (same root path shared below the base) and
 * legs with at least one. */
static void leg_counts(const sim_model *m, const sim_data *d, int *legs_touching, int *legs_multi)
{
    int per[SIM_MAX_DOF] = {0};
    for (int i = 0; i < d->ncon; i++) {
        const int np = d->con_npath[i];
        if (np > 6) per[d->con_path[i * m->nv + np - 7]]++; /* the leg's first dof (after the 6 base dofs) */
    }
    *legs_touching = *legs_multi = 0;
    for (int k = 0; k < m->nv; k++) *legs_touching += per[k] > 0, *legs_multi += per[k] > 1;
}

Test(admm_tree, shifted_solve_matches_dense_reference_on_anymal, .timeout = 120)
{
    sim_model *m = anymal();
    m->opt.margin = 0.3;
    sim_data *d = sim_data_new(m);
    rng_t r = {7};
    static double G[3 * NMAX * 3 * NMAX], A[3 * NMAX * 3 * NMAX];
    int cases = 0, multi = 0, spread = 0, nmax = 0;
    double worst = 0;
    for (int t = 0; t < 200 && cases < 60; t++) {
        const int n = random_state(m, d, &r);
        if (n < 2 || n > NMAX) continue;
        int legs, legs_multi;
        leg_counts(m, d, &legs, &legs_multi);
        multi += legs_multi > 0, spread += legs > 1;
        nmax = n > nmax ? n : nmax;
        cases++;
        const int N = 3 * n;
        dense_delassus(m, d, n, G);
        double tr = 0;
        for (int a = 0; a < N; a++) tr += G[a * N + a];
        const sim_solver_tree tree = step_tree(m, d);
        const double scales[3] = {1e-2, 1, 1e2};
        for (int k = 0; k < 3; k++) {
            const double rho = scales[k] * tr / N;
            double b[3 * NMAX], x[3 * NMAX], xr[3 * NMAX];
            for (int a = 0; a < N; a++) b[a] = urand(&r, -1, 1);
            memcpy(A, G, sizeof(double) * (size_t)N * N);
            for (int a = 0; a < N; a++) A[a * N + a] += rho;
            cr_assert_eq(chol(A, N), 0);
            memcpy(xr, b, sizeof b);
            chol_solve(A, N, xr);
            memcpy(x, b, sizeof b);
            cr_assert_eq(sim_solver_tree_shifted_solve(&tree, n, rho, x), 0);
            double e = 0, s = 0;
            for (int a = 0; a < N; a++) e += (x[a] - xr[a]) * (x[a] - xr[a]), s += xr[a] * xr[a];
            const double rel = sqrt(e / s);
            worst = fmax(worst, rel);
            cr_assert_lt(rel, 1e-12, "case %d, %d contacts, rho %g x mean diag: relative error %g", t, n, scales[k], rel);
        }
    }
    cr_log_info("tree shifted solve vs dense J M^-1 J^T: %d states (up to %d contacts; %d with two or more contacts "
                "on one leg, %d with contacts on two or more legs), worst relative error %.2e", cases, nmax, multi,
                spread, worst);
    cr_assert_geq(cases, 40);
    cr_assert_geq(multi, 10);
    cr_assert_geq(spread, 10);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

Test(admm_tree, rejects_a_path_that_is_not_a_root_path)
{
    const int parent[4] = {-1, 0, 1, 0};
    const double S[3 * 4] = {1, 1, 1, 0, 1, 2, 1, 0, 2, 1, 1, 0};
    int path[4] = {2, 1, 0, 0};
    const int npath[1] = {3};
    sim_solver_tree t = {4, parent, S, path, npath, 4};
    double x[3] = {1, 2, 3};
    cr_assert_eq(sim_solver_tree_shifted_solve(&t, 1, 1.0, x), 0);
    path[1] = 3; /* 3 is not 2's parent */
    cr_assert_eq(sim_solver_tree_shifted_solve(&t, 1, 1.0, x), SIM_SOLVER_EINVAL);
    path[1] = 1;
    const int npath_short[1] = {2}; /* stops before the root */
    t.npath = npath_short;
    cr_assert_eq(sim_solver_tree_shifted_solve(&t, 1, 1.0, x), SIM_SOLVER_EINVAL);
}

/* A reference CCP solution by another method: block projected gradient (see test_solver.c), long. */
static void ccp_reference(int n, const double *G, const double *c, const double *mu, double *l, int sweeps)
{
    const int N = 3 * n;
    memset(l, 0, sizeof(double) * (size_t)N);
    double v[3];
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

/* max |G (l1 - l2)|: the contact velocities are unique at a CCP solution even when the impulses are not. */
static double velocity_gap(int n, const double *G, const double *l1, const double *l2)
{
    const int N = 3 * n;
    double w = 0;
    for (int a = 0; a < N; a++) {
        double s = 0;
        for (int b = 0; b < N; b++) s += G[a * N + b] * (l1[b] - l2[b]);
        w = fmax(w, fabs(s));
    }
    return w;
}

Test(admm_tree, same_solution_as_dense_admm_and_a_ccp_reference, .timeout = 240)
{
    sim_model *m = anymal();
    m->opt.margin = 0.05;
    sim_data *d = sim_data_new(m);
    rng_t r = {11};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-10;
    p.admm_max_iter = 20000;
    int cases = 0, it_dense = 0, it_tree = 0, compared = 0;
    double worst_dense = 0, worst_ref = 0;
    for (int t = 0; t < 400 && cases < 40; t++) {
        const int n = random_state(m, d, &r);
        if (n < 2 || n > 12) continue;
        cases++;
        const int N = 3 * n;
        const sim_solver_tree tree = step_tree(m, d);
        double lt[3 * NMAX] = {0}, ld[3 * NMAX] = {0}, lr[3 * NMAX];
        sim_solver_stats st, sd;
        p.admm_factor = SIM_ADMM_FACTOR_TREE;
        cr_assert_eq(sim_solve_admm_tree(n, d->G, d->cfree, d->mu, lt, &p, &st, &tree), SIM_SOLVER_OK,
                     "case %d (%d contacts): eps %g", t, n, st.error);
        cr_assert_eq(st.admm_tree, 1);
        p.admm_factor = SIM_ADMM_FACTOR_DENSE;
        cr_assert_eq(sim_solve_admm_tree(n, d->G, d->cfree, d->mu, ld, &p, &sd, &tree), SIM_SOLVER_OK);
        cr_assert_eq(sd.admm_tree, 0);
        it_tree += st.iterations, it_dense += sd.iterations;
        ccp_reference(n, d->G, d->cfree, d->mu, lr, 20000);
        double lscale = 0;
        for (int a = 0; a < N; a++) lscale = fmax(lscale, fabs(lr[a]));
        const double gd = velocity_gap(n, d->G, lt, ld), gr = velocity_gap(n, d->G, lt, lr);
        worst_dense = fmax(worst_dense, gd);
        cr_assert_lt(gd, 1e-8, "case %d: tree and dense ADMM velocities differ by %g m/s", t, gd);
        /* the reference (first-order, block by block) is slow on the worst-conditioned states: compared where it
           converged */
        double vr[3 * NMAX];
        sim_contact_velocity(n, d->G, d->cfree, lr, vr);
        if (sim_contact_eps_abs(n, vr, d->mu, lr, 0) < 1e-9) {
            compared++;
            worst_ref = fmax(worst_ref, gr);
            cr_assert_lt(gr, 1e-7, "case %d: tree ADMM and the CCP reference differ by %g m/s", t, gr);
        }
        for (int i = 0; i < n; i++) /* z: in the cones */
            cr_assert(hypot(lt[3 * i], lt[3 * i + 1]) <= d->mu[i] * lt[3 * i + 2] * (1 + 1e-12) && lt[3 * i + 2] >= 0);
    }
    cr_log_info("admm tree vs dense: %d ANYmal problems, max velocity gap %.2e m/s (vs the CCP reference on the %d it "
                "solved to 1e-9: %.2e), iterations %d tree / %d dense", cases, worst_dense, compared, worst_ref, it_tree,
                it_dense);
    cr_assert_geq(cases, 30);
    cr_assert_geq(compared, cases / 2);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* Two cubes stacked on the ground, the upper mass_ratio times heavier, as a chain tree: dofs 0..5 the light
 * cube, 6..11 the heavy one (every light dof an ancestor of every heavy dof, so a light-heavy contact's columns lie
 * on one root path).  M is diagonal, so S = M^-1/2 J^T; G = S^T S. */
static void heavy_on_light_tree(double mass_ratio, double *G, double *c, double *mu, double *S, int *path,
                                int *npath, int *parent)
{
    double J[24 * 12], minv[12];
    rc_heavy_on_light(mass_ratio, J, minv, G, c, mu);
    for (int k = 0; k < 12; k++) parent[k] = k - 1;
    for (int k = 0; k < 8; k++) {
        npath[k] = k >= 4 ? 12 : 6;
        for (int t = 0; t < npath[k]; t++) path[k * 12 + t] = npath[k] - 1 - t;
        for (int a = 0; a < 3; a++)
            for (int t = 0; t < npath[k]; t++) {
                const int q = path[k * 12 + t];
                S[(3 * k + a) * 12 + t] = J[(3 * k + a) * 12 + q] * sqrt(minv[q]);
            }
    }
}

Test(admm_tree, heavy_on_light_1e6_converges_through_the_tree, .timeout = 120)
{
    static double G[24 * 24], S[24 * 12];
    double c[24], mu[8];
    int path[8 * 12], npath[8], parent[12];
    heavy_on_light_tree(1e6, G, c, mu, S, path, npath, parent);
    const sim_solver_tree tree = {12, parent, S, path, npath, 12};
    /* the tree solve itself against the dense Cholesky of G + rho I, across G's scales (1e-3 .. 1e3 tr / N
       relative to the light cube, 1e3 .. 1e9 below it for the heavy one) */
    double tr = 0;
    for (int a = 0; a < 24; a++) tr += G[a * 24 + a];
    rng_t r = {3};
    for (int k = -6; k <= 2; k++) {
        static double A[24 * 24];
        const double rho = pow(10.0, k) * tr / 24;
        double b[24], x[24], xr[24];
        for (int a = 0; a < 24; a++) b[a] = urand(&r, -1, 1);
        memcpy(A, G, sizeof A);
        for (int a = 0; a < 24; a++) A[a * 24 + a] += rho;
        cr_assert_eq(chol(A, 24), 0);
        memcpy(xr, b, sizeof b), memcpy(x, b, sizeof b);
        chol_solve(A, 24, xr);
        cr_assert_eq(sim_solver_tree_shifted_solve(&tree, 8, rho, x), 0);
        double e = 0, s = 0;
        for (int a = 0; a < 24; a++) e += (x[a] - xr[a]) * (x[a] - xr[a]), s += xr[a] * xr[a];
        /* G + rho I's condition number is ~tr / rho: the dense reference itself is only that accurate */
        cr_assert_lt(sqrt(e / s), 1e-15 * (1 + tr / rho) * 100, "rho %g tr/N: relative error %g", pow(10.0, k),
                     sqrt(e / s));
    }
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.admm_max_iter = 2000;
    p.admm_factor = SIM_ADMM_FACTOR_TREE;
    double l[24] = {0};
    sim_solver_stats st;
    cr_assert_eq(sim_solve_admm_tree(8, G, c, mu, l, &p, &st, &tree), SIM_SOLVER_OK, "admm: eps %g", st.error);
    cr_assert_eq(st.admm_tree, 1);
    sim_contact_metrics_t mt;
    sim_contact_metrics(8, G, c, mu, l, 1.0, &mt);
    cr_log_info("heavy-on-light 1e6, admm through the tree: %d iterations, %d factorizations, NCP eps_abs %.3g, rho %.3g",
                st.iterations, st.admm_factors, mt.eps_abs, st.rho);
    cr_assert_leq(mt.eps_abs, 1e-6);
    /* the default chain: the sweeps stall; the direct solve answers, or ADMM through the tree does */
    double ls[24] = {0};
    cr_assert_eq(sim_solve_coulomb_stall_admm_tree(8, G, c, mu, ls, &p, &st, &tree), SIM_SOLVER_OK);
    cr_assert_eq(st.fallback, 1);
    cr_assert(st.direct == 1 || st.admm_tree == 1, "direct %d, admm_tree %d", st.direct, st.admm_tree);
    sim_contact_metrics(8, G, c, mu, ls, 1.0, &mt);
    cr_assert_leq(mt.eps_abs, 1e-6);
    /* without the direct solve the stalled problem goes to ADMM, which factors through the tree */
    p.direct_rounds = 0;
    memset(ls, 0, sizeof ls);
    cr_assert_eq(sim_solve_coulomb_stall_admm_tree(8, G, c, mu, ls, &p, &st, &tree), SIM_SOLVER_OK);
    cr_assert(st.fallback == 1 && st.direct == 0 && st.admm_tree == 1, "fallback %d, direct %d, admm_tree %d",
              st.fallback, st.direct, st.admm_tree);
    sim_contact_metrics(8, G, c, mu, ls, 1.0, &mt);
    cr_assert_leq(mt.eps_abs, 1e-6);
}

/* The state a step reads (q, u, time, the warm-start cache). */
typedef struct {
    double q[80], u[80], time, prev_lambda[3 * 64];
    int nprev, prev_key[2 * 64];
} saved_state;

static void save_state(const sim_model *m, const sim_data *d, saved_state *s)
{
    memcpy(s->q, d->q, sizeof(double) * (size_t)m->nq), memcpy(s->u, d->u, sizeof(double) * (size_t)m->nv);
    s->time = d->time, s->nprev = d->nprev;
    memcpy(s->prev_key, d->prev_key, sizeof(int) * 2 * (size_t)d->nprev);
    memcpy(s->prev_lambda, d->prev_lambda, sizeof(double) * 3 * (size_t)d->nprev);
}

static void load_state(const sim_model *m, sim_data *d, const saved_state *s)
{
    memcpy(d->q, s->q, sizeof(double) * (size_t)m->nq), memcpy(d->u, s->u, sizeof(double) * (size_t)m->nv);
    d->time = s->time, d->nprev = s->nprev;
    memcpy(d->prev_key, s->prev_key, sizeof(int) * 2 * (size_t)s->nprev);
    memcpy(d->prev_lambda, s->prev_lambda, sizeof(double) * 3 * (size_t)s->nprev);
}

/* The contact step with ADMM: from the same state, both factorizations give the same velocities (to the
 * solver's tolerance), along an ANYmal dropped on the ground and pushed around by PD-free joint torques. */
Test(admm_tree, step_same_with_either_factorization, .timeout = 120)
{
    sim_model *m = anymal();
    m->opt.solver = SIM_SOLVER_ADMM;
    /* both runs converged, to a tolerance every one of these problems can reach: on one of them (step 278, contact
     * velocities ~100 m/s) eps_abs stops near 1e-8 whatever the factorization or the acceleration (its rounding
     * floor), so a tighter tol would be reached only by chance */
    m->opt.sp.tol = 2e-8;
    m->opt.sp.admm_max_iter = 5000;
    sim_data *d = sim_data_new(m);
    d->q[2] = 0.6;
    for (int k = 7; k < m->nq; k++) d->q[k] = 0.3 * sin(k);
    double gap = 0, vscale = 0;
    int contact_steps = 0, tree_steps = 0, differs = 0;
    static saved_state s0;
    double u_dense[80];
    for (int i = 0; i < 300; i++) {
        for (int k = 6; k < m->nv; k++) d->tau[k] = 20 * sin(0.05 * i + k);
        save_state(m, d, &s0);
        m->opt.sp.admm_factor = SIM_ADMM_FACTOR_TREE;
        cr_assert_eq(sim_step(m, d, 2e-3), 0);
        cr_assert(d->stats.converged, "step %d, tree: eps %g", i, d->stats.error);
        double u_tree[80];
        memcpy(u_tree, d->u, sizeof(double) * (size_t)m->nv);
        load_state(m, d, &s0);
        m->opt.sp.admm_factor = SIM_ADMM_FACTOR_DENSE;
        cr_assert_eq(sim_step(m, d, 2e-3), 0);
        cr_assert(d->stats.converged, "step %d, dense: eps %g", i, d->stats.error);
        memcpy(u_dense, d->u, sizeof(double) * (size_t)m->nv);
        if (d->ncon > 0) contact_steps++, tree_steps += d->ncon >= 2;
        for (int k = 0; k < m->nv; k++) gap = fmax(gap, fabs(u_dense[k] - u_tree[k])), vscale = fmax(vscale, fabs(u_dense[k]));
        differs += memcmp(u_dense, u_tree, sizeof(double) * (size_t)m->nv) != 0;
    }
    /* the step did hand its tree to ADMM: the two factorizations round differently */
    cr_assert_gt(differs, 10, "only %d steps differ: is the tree used at all?", differs);
    cr_log_info("ANYmal with admm: %d contact steps (%d with two or more contacts, %d not bitwise equal), max "
                "|u_dense - u_tree| %.2e (max |u| %.2f)", contact_steps, tree_steps, differs, gap, vscale);
    cr_assert_gt(contact_steps, 100);
    cr_assert_lt(gap, 1e-7 * vscale, "the two factorizations agree to 1e-7 of the largest velocity (tol 2e-8)");
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* SIM_ADMM_FACTOR_AUTO (the default) as documented: dense for up to 12 contacts (the explicit inverse of the
 * 3n x 3n system is the cheaper there), the tree for more (the robot lying on the ground: 13 or more contacts). */
Test(admm_tree, auto_choice_follows_the_contact_count, .timeout = 120)
{
    sim_model *m = anymal();
    m->opt.margin = 0.3;
    sim_data *d = sim_data_new(m);
    rng_t r = {5};
    sim_solver_params p;
    sim_solver_default_params(&p);
    cr_assert_eq(p.admm_factor, SIM_ADMM_FACTOR_AUTO);
    int few = 0, many = 0;
    for (int t = 0; t < 2000 && (few < 5 || many < 5); t++) {
        m->opt.margin = t % 2 ? 0.3 : 0.0;
        const int n = random_state(m, d, &r);
        if (n < 1 || n > NMAX || (n > 2 && n < 13)) continue;
        const sim_solver_tree tree = step_tree(m, d);
        double l[3 * NMAX] = {0};
        sim_solver_stats st;
        sim_solve_admm_tree(n, d->G, d->cfree, d->mu, l, &p, &st, &tree);
        cr_assert_eq(st.admm_tree, n >= 13, "%d contacts: admm_tree %d", n, st.admm_tree);
        few += n <= 2, many += n >= 13;
        sim_solve_admm(n, d->G, d->cfree, d->mu, l, &p, &st); /* no tree: dense */
        cr_assert_eq(st.admm_tree, 0);
    }
    cr_assert_geq(few, 5);
    cr_assert_geq(many, 5);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* A singular G (more contact rows than dofs, as the walk task's 5 - 8 foot contacts on 18 dofs): G = J J^T with J
 * 3n x nd, nd < 3n.  ADMM's initial rho floors lambda_min at 1e-4 lambda_max (sim_solver_admm.c: ADMM_RHO_FLOOR),
 * so rho starts within a factor 100 of lambda_max instead of ~1e-5 of it.  With admm_max_iter = 1 the run stops
 * after one iteration and at most one adaptation (a factor <= 10), so st.rho is the initial rho within 10x:
 * >= 1e-3 lambda_max >= 1e-3 tr(G) / N.  Without the floor it is ~1e-6 of that.  The full run converges (eps_abs
 * below tol, checked independently with sim_contact_eps_abs) and agrees with the CCP reference. */
Test(admm, initial_rho_on_a_singular_delassus_is_near_its_scale)
{
    enum { n = 6, N = 3 * n, nd = 12 };
    rng_t r = {2024};
    double J[N * nd], G[N * N], c[N], mu[n], l[N], lref[N], v[N];
    for (int a = 0; a < N * nd; a++) J[a] = urand(&r, -1, 1);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            double s = 0;
            for (int k = 0; k < nd; k++) s += J[a * nd + k] * J[b * nd + k];
            G[a * N + b] = s;
        }
    double tr = 0;
    for (int a = 0; a < N; a++) tr += G[a * N + a];
    for (int i = 0; i < n; i++) {
        mu[i] = urand(&r, 0.3, 1.0);
        c[3 * i] = urand(&r, -0.5, 0.5), c[3 * i + 1] = urand(&r, -0.5, 0.5), c[3 * i + 2] = urand(&r, -1.0, -0.1);
    }
    sim_solver_params p;
    sim_solver_default_params(&p);
    sim_solver_stats st;
    p.admm_max_iter = 1;
    memset(l, 0, sizeof l);
    sim_solve_admm(n, G, c, mu, l, &p, &st);
    cr_assert_geq(st.rho, 1e-3 * tr / N, "initial rho %g against tr/N %g", st.rho, tr / N);
    p.admm_max_iter = 2000;
    memset(l, 0, sizeof l);
    cr_assert_eq(sim_solve_admm(n, G, c, mu, l, &p, &st), SIM_SOLVER_OK);
    sim_contact_velocity(n, G, c, l, v);
    cr_assert_lt(sim_contact_eps_abs(n, v, mu, l, 0), p.tol);
    ccp_reference(n, G, c, mu, lref, 200000);
    cr_assert_lt(velocity_gap(n, G, l, lref), 1e-4, "velocity gap %g", velocity_gap(n, G, l, lref));
}

/* Anderson acceleration of ADMM (sim_solver_admm.c, ADMM_AA): 40 random singular problems shaped like the walk
 * task's fallbacks (G = J J^T, 6 contacts on 12 dofs, closing contacts, mu 0.3 - 1).  Every run converges
 * (eps_abs < tol recomputed here), returns impulses in the cones (to rounding) (the accelerated points, which may leave
 * them, are never returned), and agrees with the CCP reference; the iterations over the 40 runs stay below 2/3 of
 * what un-accelerated ADMM needs on them (admm_max_iter raised to 5000 so that it converges; build with
 * -DADMM_AA=0 to see the un-accelerated count, which is about twice the accelerated one). */
Test(admm, anderson_acceleration_converges_in_the_cones_in_fewer_iterations, .timeout = 120)
{
    enum { n = 6, N = 3 * n, nd = 12, RUNS = 40 };
    rng_t r = {77};
    long iters = 0;
    for (int run = 0; run < RUNS; run++) {
        double J[N * nd], G[N * N], c[N], mu[n], l[N], lref[N], v[N];
        for (int a = 0; a < N * nd; a++) J[a] = urand(&r, -1, 1);
        for (int a = 0; a < N; a++)
            for (int b = 0; b < N; b++) {
                double s = 0;
                for (int k = 0; k < nd; k++) s += J[a * nd + k] * J[b * nd + k];
                G[a * N + b] = s;
            }
        for (int i = 0; i < n; i++) {
            mu[i] = urand(&r, 0.3, 1.0);
            c[3 * i] = urand(&r, -0.5, 0.5), c[3 * i + 1] = urand(&r, -0.5, 0.5), c[3 * i + 2] = urand(&r, -1.0, -0.1);
        }
        sim_solver_params p;
        sim_solver_default_params(&p);
        p.admm_max_iter = 5000;
        sim_solver_stats st;
        memset(l, 0, sizeof l);
        cr_assert_eq(sim_solve_admm(n, G, c, mu, l, &p, &st), SIM_SOLVER_OK, "run %d: %d iterations", run, st.iterations);
        iters += st.iterations;
        /* rho changes at most 12 times (then frozen): with the lambda_min estimate and the first factor, 14 */
        cr_assert_leq(st.admm_factors, 14, "run %d: %d factorizations", run, st.admm_factors);
        sim_contact_velocity(n, G, c, l, v);
        cr_assert_lt(sim_contact_eps_abs(n, v, mu, l, 0), p.tol, "run %d", run);
        for (int i = 0; i < n; i++) {
            double proj[3];
            const double *li = l + 3 * i, d = sim_cone_project(li, mu[i], proj);
            cr_assert_leq(d, 1e-12 * (1 + sqrt(li[0] * li[0] + li[1] * li[1] + li[2] * li[2])),
                          "run %d contact %d outside its cone by %g", run, i, d);
        }
        ccp_reference(n, G, c, mu, lref, 100000);
        cr_assert_lt(velocity_gap(n, G, l, lref), 1e-4, "run %d: velocity gap %g", run, velocity_gap(n, G, l, lref));
    }
    fprintf(stderr, "anderson: %ld ADMM iterations over %d runs\n", iters, RUNS);
    cr_assert_lt(iters, 3200, "%ld iterations over %d runs", iters, RUNS);
}

/* A contact problem harvested from the anymal_c-walk env (1024 worlds, random actions; G, free velocity, mu and the
 * step's warm start in tests/testdata/admm_rho_flip_walk.txt, 4 contacts) on which coulomb-stall-admm's sweeps
 * stall and ADMM's residual balance flips at every test: without a limit rho goes up and down at every test and
 * ADMM runs to admm_max_iter (500) unconverged.  With rho frozen after 12 changes (sim_solver_admm.c: ADMM_MAX_RHO_CHANGES) it
 * converges, to eps_abs < tol (recomputed here) with at most 14 factorizations. */
Test(admm, walk_problem_whose_rho_flips_converges_below_the_cap)
{
    FILE *f = fopen("tests/testdata/admm_rho_flip_walk.txt", "r");
    cr_assert_not_null(f);
    int n = 0;
    cr_assert_eq(fscanf(f, "%d", &n), 1);
    cr_assert(n >= 1 && n <= 8);
    const int N = 3 * n;
    double G[24 * 24], c[24], mu[8], l[24], v[24];
    for (int a = 0; a < N * N; a++) cr_assert_eq(fscanf(f, "%lf", &G[a]), 1);
    for (int a = 0; a < N; a++) cr_assert_eq(fscanf(f, "%lf", &c[a]), 1);
    for (int a = 0; a < n; a++) cr_assert_eq(fscanf(f, "%lf", &mu[a]), 1);
    for (int a = 0; a < N; a++) cr_assert_eq(fscanf(f, "%lf", &l[a]), 1);
    fclose(f);
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.max_iter = 50; /* the walk task's solver_max_iter */
    p.direct_rounds = 0; /* ADMM alone after the stall (with the direct solve it ends Coulomb: below) */
    double warm[24];
    memcpy(warm, l, sizeof(double) * (size_t)N);
    sim_solver_stats st;
    const int rc = sim_solve_coulomb_stall_admm(n, G, c, mu, l, &p, &st);
    cr_assert_eq(st.fallback, 1, "the sweeps no longer stall on this problem: it tests nothing");
    cr_assert_eq(rc, SIM_SOLVER_OK, "ADMM: %d iterations, %d factorizations, error %g", st.fallback_iterations,
                 st.admm_factors, st.error);
    cr_assert_lt(st.fallback_iterations, p.admm_max_iter);
    cr_assert_leq(st.admm_factors, 14);
    sim_contact_velocity(n, G, c, l, v);
    cr_assert_lt(sim_contact_eps_abs(n, v, mu, l, 0), p.tol);
    /* the step says which model its answer satisfies, from the answer itself */
    const double ce = sim_contact_coulomb_error(n, G, c, mu, l);
    cr_assert_eq(st.answer, ce < p.tol ? SIM_ANSWER_COULOMB : SIM_ANSWER_CCP, "answer %d, Coulomb error %g", st.answer, ce);
    /* the default (the direct Coulomb solve before ADMM) answers it with a Coulomb solution, without ADMM */
    sim_solver_default_params(&p);
    p.max_iter = 50;
    memcpy(l, warm, sizeof(double) * (size_t)N);
    cr_assert_eq(sim_solve_coulomb_stall_admm(n, G, c, mu, l, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.fallback, 1);
    cr_assert_eq(st.direct, 1);
    cr_assert_eq(st.answer, SIM_ANSWER_COULOMB);
    cr_assert_lt(sim_contact_coulomb_error(n, G, c, mu, l), p.tol);
}

/* sim_solver_stats.answer names the model the returned impulses satisfy: Coulomb for converged Coulomb sweeps, the
 * CCP for admm's answer when it is not also a Coulomb solution, the solver's own model for paper-bisection, none when
 * a solve stops unconverged.  One contact pushed sideways against a coupled block slides: the CCP lets it separate
 * (v_n = mu |v_T| > 0 with an impulse), Coulomb does not. */
Test(admm, answer_names_the_model_satisfied)
{
    const double G[9] = {1.0, 0.0, 0.3, 0.0, 1.0, 0.0, 0.3, 0.0, 1.0};
    const double c[3] = {-2.0, 0.0, -1.0}, mu[1] = {0.5};
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.admm_max_iter = 5000;
    sim_solver_stats st;
    double l[3] = {0};
    cr_assert_eq(sim_solve_coulomb_bisection(1, G, c, mu, l, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.answer, SIM_ANSWER_COULOMB);
    cr_assert_lt(sim_contact_coulomb_error(1, G, c, mu, l), p.tol);
    double la[3] = {0}, v[3];
    cr_assert_eq(sim_solve_admm(1, G, c, mu, la, &p, &st), SIM_SOLVER_OK);
    sim_contact_velocity(1, G, c, la, v);
    cr_assert_gt(v[2], 1e-3, "the CCP answer should separate while sliding (v_n %g)", v[2]);
    cr_assert_geq(sim_contact_coulomb_error(1, G, c, mu, la), p.tol);
    cr_assert_eq(st.answer, SIM_ANSWER_CCP);
    double lp[3] = {0};
    cr_assert_eq(sim_solve_bisection(1, G, c, mu, lp, &p, &st), SIM_SOLVER_OK);
    cr_assert_eq(st.answer, SIM_ANSWER_OWN);
    double lu[3] = {0};
    p.max_iter = 1, p.tol = 1e-30;
    sim_solve_pgs(1, G, c, mu, lu, &p, &st);
    cr_assert_eq(st.converged, 0);
    cr_assert_eq(st.answer, SIM_ANSWER_NONE);
}

/* Two free cubes (side 0.2 m, light 1 kg below, heavy 1e6 kg on top) resting on the ground, 8 corner contacts,
 * the first step's problem at dt 1 ms (the Fig. 12 stack of `herd-bench contact-models`, built here from its
 * definition: G = J W J^T with W the bodies' inverse masses and inertias).  A long run to an unreachable
 * tolerance must not drift away from the solution it reached: Anderson-accelerated for all of its 5,000
 * iterations, ADMM ended at eps_abs ~24 N s / dt (2.5e-6 of the weight) instead of ~1e-9 of it. */
Test(admm, long_tight_run_on_the_heavy_on_light_stack_does_not_drift, .timeout = 60)
{
    const double side = 0.2, h = side / 2, m[2] = {1.0, 1e6}, dt = 1e-3, g = 9.81;
    double J[24][12] = {{0}}, w[12], G[24 * 24], c[24], mu[8], uf[12] = {0};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 3; k++) w[6 * b + k] = 1 / m[b], w[6 * b + 3 + k] = 6 / (m[b] * side * side);
    for (int i = 0; i < 8; i++) {
        const double sx = (i & 1) ? h : -h, sy = (i & 2) ? h : -h;
        mu[i] = 0.5;
        for (int body = 0; body < 2; body++) {
            const int upper = i < 4 ? 0 : 1;       /* contacts 0-3: ground-light; 4-7: light-heavy */
            double sign, r[3] = {sx, sy, 0};
            if (body == upper) sign = 1, r[2] = -h;
            else if (i >= 4 && body == 0) sign = -1, r[2] = h;
            else continue;
            for (int a = 0; a < 3; a++) {
                const double e[3] = {a == 0, a == 1, a == 2};
                const double rxe[3] = {r[1] * e[2] - r[2] * e[1], r[2] * e[0] - r[0] * e[2], r[0] * e[1] - r[1] * e[0]};
                for (int k = 0; k < 3; k++) J[3 * i + a][6 * body + k] = sign * e[k], J[3 * i + a][6 * body + 3 + k] = sign * rxe[k];
            }
        }
    }
    uf[2] = uf[8] = -g * dt;
    for (int i = 0; i < 24; i++) {
        double ci = 0;
        for (int j = 0; j < 24; j++) {
            double t = 0;
            for (int k = 0; k < 12; k++) t += J[i][k] * w[k] * J[j][k];
            G[24 * i + j] = t;
        }
        for (int k = 0; k < 12; k++) ci += J[i][k] * uf[k];
        c[i] = ci;
    }
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 1e-300;
    p.admm_max_iter = 5000;
    double l[24] = {0};
    sim_solver_stats st;
    sim_solve_admm(8, G, c, mu, l, &p, &st);
    sim_contact_metrics_t mt;
    sim_contact_metrics(8, G, c, mu, l, dt, &mt);
    const double weight = (m[0] + m[1]) * g;
    cr_log_info("heavy-on-light 1e6 stack, 5000 ADMM iterations: eps_abs %.3g N (%.2g of the weight)", mt.eps_abs,
                mt.eps_abs / weight);
    cr_assert_eq(st.iterations, 5000);
    cr_assert_lt(mt.eps_abs / weight, 1e-8, "eps_abs %g N = %g of the weight", mt.eps_abs, mt.eps_abs / weight);
}

/* sim_solver_admm.c — the global and projected solvers of Le Lidec et al. 2023 ("Contact models in robotics: a
 * comparative analysis"): NCP projected Gauss-Seidel with De Saxcé's criterion (their Alg. 6), the CCP by ADMM
 * (their Alg. 3, proximal, adaptive rho), and the robust default that hands a stalled Coulomb per-contact
 * iteration to ADMM.  See sim_solver.h for the models; the shared plumbing is in sim_solver_internal.h. */
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* NCP-PGS (Alg. 6).                                                                                  */

static int ncp_pgs_sweeps(int n, const double *G, const double *c, const double *mu, double *lambda,
                          const sim_solver_params *p, sim_solver_stats *st, double *v)
{
    const int N = 3 * n;
    double rn[SIM_SOLVER_MAX_CONTACTS], rt[SIM_SOLVER_MAX_CONTACTS];
    for (int i = 0; i < n; i++) {
        const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
        const double gnn = Gi[2 * N + 2], gt = fmin(Gi[0], Gi[N + 1]);
        rn[i] = gnn > 0 ? 1.0 / gnn : 0.0; /* line 3 */
        rt[i] = gt > 0 ? 1.0 / gt : 0.0;   /* line 5 */
    }
    double err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    int it = 0;
    while (!(err < p->tol) && it < p->max_iter) {
        it++;
        for (int i = 0; i < n; i++) {
            double *l = lambda + 3 * i;
            const double *vi = v + 3 * i;
            const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
            const double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
            const double ln = fmax(0.0, l[2] - rn[i] * vi[2]); /* lines 3-4 */
            const double dn = ln - l[2];
            /* lines 5-6 with the tangential velocity updated by this normal change (Gauss-Seidel) */
            const double vx = vi[0] + Gi[2] * dn, vy = vi[1] + Gi[N + 2] * dn;
            double tx = l[0] - rt[i] * vx, ty = l[1] - rt[i] * vy;
            const double tn = sqrt(tx * tx + ty * ty), lim = m * ln;
            if (tn > lim) { /* the horizontal projection onto the disc of radius mu lambda_n */
                const double s = tn > 0 ? lim / tn : 0.0;
                tx *= s, ty *= s;
            }
            const double delta[3] = {tx - l[0], ty - l[1], dn};
            l[0] = tx, l[1] = ty, l[2] = ln;
            if (delta[0] != 0 || delta[1] != 0 || delta[2] != 0) sim_solver_add_column_block(N, G, i, delta, v);
        }
        err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    }
    if (!(err < p->tol)) {
        st->guard_scale = sim_solver_dissipation_guard(N, G, c, lambda, v);
        if (st->guard_scale != 1.0) err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    }
    sim_solver_count_modes(n, mu, lambda, st);
    return sim_solver_end(st, it, err, p->tol);
}

int sim_solve_pgs(int n, const double *G, const double *c, const double *mu, double *lambda,
                  const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(ncp_pgs_sweeps, n, G, c, mu, lambda, p, st);
}

#ifndef ADMM_RELAX
#define ADMM_RELAX 1.6       /* over-relaxation factor in ]0, 2[ */
#endif
#ifndef ADMM_ADAPT_EVERY
#define ADMM_ADAPT_EVERY 5   /* stopping test and rho reconsidered every this many iterations */
#endif

/* ------------------------------------------------------------------------------------------------ */
/* ADMM (Alg. 3) on the CCP: min 1/2 l.G l + c.l over the cones.                                      */

/* In-place Cholesky A = L L^T of an N x N SPD matrix (lower triangle, row-major).  Returns the smallest pivot
 * L_jj^2, or 0 if A is not numerically positive definite. */
static double chol_dense(double *A, int N)
{
    double pmin = INFINITY;
    for (int j = 0; j < N; j++) {
        double *Aj = A + (size_t)j * N;
        double s = Aj[j];
        for (int k = 0; k < j; k++) s -= Aj[k] * Aj[k];
        if (!(s > 0)) return 0.0;
        pmin = fmin(pmin, s);
        const double d = sqrt(s), id = 1.0 / d;
        Aj[j] = d;
        for (int i = j + 1; i < N; i++) {
            double *Ai = A + (size_t)i * N;
            double t = Ai[j];
            for (int k = 0; k < j; k++) t -= Ai[k] * Aj[k];
            Ai[j] = t * id;
        }
    }
    return pmin;
}

/* x := (L L^T)^-1 x. */
static void chol_solve(const double *L, int N, double *x)
{
    for (int i = 0; i < N; i++) {
        const double *Li = L + (size_t)i * N;
        double s = x[i];
        for (int k = 0; k < i; k++) s -= Li[k] * x[k];
        x[i] = s / Li[i];
    }
    for (int i = N - 1; i >= 0; i--) {
        double s = x[i];
        for (int k = i + 1; k < N; k++) s -= L[(size_t)k * N + i] * x[k];
        x[i] = s / L[(size_t)i * N + i];
    }
}

/* L := chol(G + rho I).  Returns 0, or -1 if not positive definite (rho too small for a singular G). */
static int factor_shifted(const double *G, int N, double rho, double *L)
{
    memcpy(L, G, sizeof(double) * (size_t)N * N);
    for (int i = 0; i < N; i++) L[(size_t)i * N + i] += rho;
    return chol_dense(L, N) > 0 ? 0 : -1;
}

/* Projection of each contact's x onto K_mu (dual = 0) or K*_mu = K_{1/mu} (dual = 1). */
static void project_cones(int n, const double *mu, const double *x, double *out, int dual)
{
    for (int i = 0; i < n; i++) {
        double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
        if (dual) m = m > 0 ? 1.0 / m : INFINITY;
        sim_cone_project(x + 3 * i, m, out + 3 * i);
    }
}

/* ADMM from lambda (projected onto the cones) with v = G lambda + c; on return lambda = z (in the cones) and
 * v = G lambda + c.  Returns the iterations done; *err = the CCP eps_abs of the result. */
static int admm_iterate(int n, const double *G, const double *c, const double *mu, double *lambda,
                        const sim_solver_params *p, sim_solver_stats *st, double *v, double *err)
{
    const int N = 3 * n;
    double L[3 * SIM_SOLVER_ADMM_MAX_CONTACTS * 3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
    double z[3 * SIM_SOLVER_ADMM_MAX_CONTACTS], gam[3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
    double x[3 * SIM_SOLVER_ADMM_MAX_CONTACTS], zp[3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
    /* spectral estimates: lambda_max by a few power steps, lambda_min bounded by the smallest Cholesky pivot of
       G + 1e-12 tr I (every pivot is >= the smallest eigenvalue) */
    double tr = 0;
    for (int i = 0; i < N; i++) tr += G[(size_t)i * N + i];
    if (!(tr > 0)) { /* G = 0: no impulse changes any velocity */
        memset(lambda, 0, sizeof(double) * (size_t)N);
        memcpy(v, c, sizeof(double) * (size_t)N);
        *err = sim_contact_eps_abs(n, v, mu, lambda, 0);
        return 0;
    }
    double lmax = 0;
    for (int i = 0; i < N; i++) x[i] = 1.0;
    for (int k = 0; k < 8; k++) {
        double nn = 0;
        for (int r = 0; r < N; r++) {
            const double *row = G + (size_t)r * N;
            double s = 0;
            for (int q = 0; q < N; q++) s += row[q] * x[q];
            zp[r] = s;
            nn += s * s;
        }
        nn = sqrt(nn);
        if (!(nn > 0)) break;
        lmax = nn / sqrt((double)N); /* |G x| / |x|, |x| = sqrt(N) */
        for (int r = 0; r < N; r++) x[r] = zp[r] / nn * sqrt((double)N);
    }
    lmax = fmax(lmax, tr / N);
    memcpy(L, G, sizeof(double) * (size_t)N * N);
    for (int i = 0; i < N; i++) L[(size_t)i * N + i] += 1e-12 * tr;
    double lmin = chol_dense(L, N);
    lmin = fmax(lmin, 1e-12 * lmax);
    const double kappa = lmax / lmin;
    double fac = pow(kappa, 0.05); /* the spectral rule of Le Lidec et al. (Sec. III-E) */
    fac = fmin(fmax(fac, 1.5), 10.0);
    double rho = p->admm_rho > 0 ? p->admm_rho : sqrt(lmax * lmin);
    while (factor_shifted(G, N, rho, L) != 0) rho *= 10; /* only a rho far below G's scale can fail */

    /* warm start: z = proj_K(lambda), gamma = -proj_K*(G z + c) (the dual of the CCP at a solution) */
    project_cones(n, mu, lambda, z, 0);
    sim_contact_velocity(n, G, c, z, x);
    project_cones(n, mu, x, gam, 1);
    for (int r = 0; r < N; r++) gam[r] = -gam[r];
    sim_contact_velocity(n, G, c, z, v);
    double e = sim_contact_eps_abs(n, v, mu, z, 0);
    int it = 0;
    const int max_it = p->admm_max_iter;
    while (!(e < p->tol) && it < max_it) {
        it++;
        for (int r = 0; r < N; r++) x[r] = -(c[r] - rho * z[r] + gam[r]); /* line 3 */
        chol_solve(L, N, x);
        memcpy(zp, z, sizeof(double) * (size_t)N);
        /* over-relaxation (Le Lidec et al. eq. 25, Boyd et al. 3.4.3): x <- a x + (1 - a) z, a = ADMM_RELAX */
        for (int r = 0; r < N; r++) x[r] = ADMM_RELAX * x[r] + (1.0 - ADMM_RELAX) * zp[r];
        for (int r = 0; r < N; r++) lambda[r] = x[r] + gam[r] / rho;
        project_cones(n, mu, lambda, z, 0); /* line 4 */
        double rp = 0, rd = 0;
        for (int r = 0; r < N; r++) {
            gam[r] += rho * (x[r] - z[r]); /* line 5 */
            rp = fmax(rp, fabs(x[r] - z[r]));
            rd = fmax(rd, rho * fabs(z[r] - zp[r]));
        }
        /* every ADMM_ADAPT_EVERY iterations (and at the last): the stopping test (a product by G) and the
           adaptation of rho (primal residual dominating -> stiffer; dual dominating -> softer) */
        if (it % ADMM_ADAPT_EVERY && it < max_it) continue;
        sim_contact_velocity(n, G, c, z, v);
        e = sim_contact_eps_abs(n, v, mu, z, 0);
        double nr = rho;
        if (rp > p->admm_ratio * rd) nr = rho * fac;
        else if (rd > p->admm_ratio * rp) nr = rho / fac;
        if (nr != rho && factor_shifted(G, N, nr, L) == 0) rho = nr;
        else if (nr != rho) factor_shifted(G, N, rho, L);
    }
    memcpy(lambda, z, sizeof(double) * (size_t)N);
    st->rho = rho;
    *err = e;
    return it;
}

static int admm_sweeps(int n, const double *G, const double *c, const double *mu, double *lambda,
                       const sim_solver_params *p, sim_solver_stats *st, double *v)
{
    if (n > SIM_SOLVER_ADMM_MAX_CONTACTS) return SIM_SOLVER_EINVAL;
    double err;
    const int it = admm_iterate(n, G, c, mu, lambda, p, st, v, &err);
    sim_solver_count_modes(n, mu, lambda, st);
    return sim_solver_end(st, it, err, p->tol);
}

int sim_solve_admm(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(admm_sweeps, n, G, c, mu, lambda, p, st);
}

/* ------------------------------------------------------------------------------------------------ */
/* The robust default: Coulomb per-contact sweeps, handed to ADMM when they stall.                   */

static int stall_admm_sweeps(int n, const double *G, const double *c, const double *mu, double *lambda,
                             const sim_solver_params *p, sim_solver_stats *st, double *v)
{
    const int r = sim_solver_coulomb_sweeps_stall(n, G, c, mu, lambda, p, st, v);
    if (r != SIM_SOLVER_STALLED) return r;
    if (n > SIM_SOLVER_ADMM_MAX_CONTACTS) { /* too large for the dense factor: finish as coulomb-bisection */
        sim_solver_params q = *p;
        q.stall_window = 0;
        const int sweeps = st->iterations;
        const int r2 = sim_solver_coulomb_sweeps_stall(n, G, c, mu, lambda, &q, st, v);
        st->iterations += sweeps;
        return r2;
    }
    const int sweeps = st->iterations;
    double err;
    const int it = admm_iterate(n, G, c, mu, lambda, p, st, v, &err);
    st->fallback = 1;
    st->fallback_iterations = it;
    return sim_solver_end(st, sweeps + it, err, p->tol);
}

int sim_solve_coulomb_stall_admm(int n, const double *G, const double *c, const double *mu, double *lambda,
                                 const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(stall_admm_sweeps, n, G, c, mu, lambda, p, st);
}

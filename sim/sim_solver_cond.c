/* sim_solver_cond.c — COND / V-FPI (Lee, Lee & Lee 2023) on a contact-space problem.  See sim_solver_cond.h
 * for the model and how the paper's nodalization, diagonalization and velocity fixed point map onto (G, c). */
#include "sim_solver_cond.h"

#include "sim_metrics.h"
#include "sim_solver_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define SLIP_REL 1e-9 /* |lambda_T| >= mu lambda_n (1 - SLIP_REL) counts as slipping in the stats */
#define RESTART_GROWTH 1.5 /* the accelerated residual may grow this much before a restart */

void sim_cond_default_params(sim_cond_params *p)
{
    p->max_iter = 1000;
    p->tol = 1e-8;
    p->projection = SIM_COND_STRICT;
    p->w_scale = 0.6;
    p->chebyshev = 1;
    p->cheb_start = 5;
    p->cheb_relax = 1.0;
}

/* ProjectFC (eq. 26) of x = lambda* for one contact; writes out (may alias x). */
static void project_fc(const double x[3], double mu, double cap, int proximal, double out[3])
{
    if (proximal) {
        sim_cone_project_point(x, mu, out); /* (the distance is not needed) */
        return;
    }
    double ln = x[2] > 0 ? x[2] : 0.0; /* strict: the normal first ... */
    if (ln > cap) ln = cap;
    const double tx = x[0], ty = x[1], tn = sqrt(tx * tx + ty * ty), lim = mu * ln;
    const double s = tn > lim ? (tn > 0 ? lim / tn : 0.0) : 1.0; /* ... then the disc of its cross-section */
    out[0] = s * tx;
    out[1] = s * ty;
    out[2] = ln;
}

/* One application of the one-shot map to every contact (Alg. 2 on Gamma = W): y_m = ProjectFC(lambda_m -
 * v_m / w_m).  Returns the residual sum_m |y_m - lambda_m| (N·s).  Contacts with w_m = 0 get y_m = 0.  A bounded
 * row (mu < 0) is projected on {0} x {0} x [-b - a, b - a], a = acc_n,m (0 without acc), under either operator
 * (the Euclidean projection on a box is the componentwise clamp). */
static double one_shot(int n, const double *lambda, const double *v, const double *w, const double *mu,
                       const double *cap, const double *acc, int proximal, double *y)
{
    double res = 0;
    for (int m = 0; m < n; m++) {
        const double *l = lambda + 3 * m, *vm = v + 3 * m;
        double *ym = y + 3 * m;
        if (w[m] > 0 && sim_block_is_box(mu[m])) {
            const double b = sim_block_box_bound(mu[m]), a = acc ? acc[3 * m + 2] : 0.0;
            const double xn = l[2] - vm[2] / w[m], lo = -b - a, hi = b - a;
            ym[0] = ym[1] = 0;
            ym[2] = xn > hi ? hi : xn < lo ? lo : xn;
        } else if (w[m] > 0) {
            const double iw = 1.0 / w[m];
            const double x[3] = {l[0] - vm[0] * iw, l[1] - vm[1] * iw, l[2] - vm[2] * iw};
            double mm = mu[m] > SIM_MU_MAX ? SIM_MU_MAX : mu[m];
            project_fc(x, mm, cap ? cap[m] : INFINITY, proximal, ym);
        } else {
            ym[0] = ym[1] = ym[2] = 0;
        }
        const double d0 = ym[0] - l[0], d1 = ym[1] - l[1], d2 = ym[2] - l[2];
        res += sqrt(d0 * d0 + d1 * d1 + d2 * d2);
    }
    return res;
}

/* The surrogate W: w_m = w_scale max over the contact's rows r of sum_j |G_rj| (Gershgorin: W >= G). */
static void surrogate_w(int n, const double *G, double w_scale, double *w)
{
    const int N = 3 * n;
    for (int m = 0; m < n; m++) {
        double best = 0;
        for (int r = 3 * m; r < 3 * m + 3; r++) {
            const double *row = G + (size_t)r * N;
            double s = 0;
            for (int j = 0; j < N; j++) s += fabs(row[j]);
            if (s > best) best = s;
        }
        w[m] = isfinite(best) ? w_scale * best : 0.0;
    }
}

static void count_modes(int n, const double *lambda, const double *mu, sim_cond_stats *st)
{
    st->n_open = st->n_stick = st->n_slip = 0;
    for (int m = 0; m < n; m++) {
        const double *l = lambda + 3 * m;
        const double lt = sqrt(l[0] * l[0] + l[1] * l[1]);
        const double mm = mu[m] > SIM_MU_MAX ? SIM_MU_MAX : mu[m];
        if (sim_block_is_box(mm)) { /* a bounded row: slip at a bound, else stick */
            if (fabs(l[2]) >= sim_block_box_bound(mm) * (1.0 - SLIP_REL)) st->n_slip++;
            else st->n_stick++;
        } else if (!(l[2] > 0)) st->n_open++;
        else if (lt >= mm * l[2] * (1.0 - SLIP_REL)) st->n_slip++;
        else st->n_stick++;
    }
}

/* The V-FPI (Algs. 1-3) on a validated problem, n > 0.  v: scratch 3n, G lambda + c on return. */
static int cond_core(int n, const double *G, const double *c, const double *mu, const double *cap,
                     const double *acc, double *lambda, const sim_cond_params *p, sim_cond_stats *st, double *v,
                     int guard)
{
    const int N = 3 * n;
    const int proximal = p->projection == SIM_COND_PROXIMAL;
    double w[SIM_SOLVER_MAX_CONTACTS];
    double y[3 * SIM_SOLVER_MAX_CONTACTS], prev[3 * SIM_SOLVER_MAX_CONTACTS];
    surrogate_w(n, G, p->w_scale, w);
    sim_contact_velocity(n, G, c, lambda, v);
    memcpy(prev, lambda, sizeof(double) * (size_t)N);

    double res_prev = INFINITY, nu = 1.0, rho = 1.0;
    int l_start = p->cheb_start, it = 0;
    double res = one_shot(n, lambda, v, w, mu, cap, acc, proximal, y);
    while (it < p->max_iter && !(res < p->tol)) {
        it++;
        /* Alg. 3 line 7: the Chebyshev weight (1 before l_s, then the recurrence with the estimate rho) */
        const int accel = p->chebyshev && it >= l_start;
        if (!accel) nu = 1.0;
        else if (it == l_start) nu = 2.0 / (2.0 - rho * rho);
        else nu = 4.0 / (4.0 - rho * rho * nu);
        const double u = accel ? p->cheb_relax : 1.0;
        for (int r = 0; r < N; r++) { /* eq. 38 with under-relaxation; nu = u = 1 is plain V-FPI */
            const double nl = nu * (u * (y[r] - lambda[r]) + lambda[r] - prev[r]) + prev[r];
            prev[r] = lambda[r];
            lambda[r] = nl;
        }
        sim_contact_velocity(n, G, c, lambda, v); /* the velocity on the dynamics, v = G lambda + c */
        const double rnew = one_shot(n, lambda, v, w, mu, cap, acc, proximal, y);
        if (accel && rnew > RESTART_GROWTH * res) {
            /* the extrapolation overshot: restart from the last one-shot output (in the cones) */
            st->restarts++;
            memcpy(lambda, y, sizeof(double) * (size_t)N);
            memcpy(prev, y, sizeof(double) * (size_t)N);
            sim_contact_velocity(n, G, c, lambda, v);
            res = one_shot(n, lambda, v, w, mu, cap, acc, proximal, y);
            l_start = it + 1 + p->cheb_start;
            res_prev = INFINITY;
            rho = 1.0;
            continue;
        }
        /* eq. 39: rho from the ratio of successive residuals, at most 1 */
        if (res > 0 && isfinite(res_prev)) rho = fmin(rnew / res, 1.0);
        res_prev = res;
        res = rnew;
    }
    /* return the one-shot output (always inside the cones) and its own residual */
    memcpy(lambda, y, sizeof(double) * (size_t)N);
    sim_contact_velocity(n, G, c, lambda, v);
    res = one_shot(n, lambda, v, w, mu, cap, acc, proximal, y);
    st->iterations = it;
    st->error = res;
    st->converged = res < p->tol;
    if (!st->converged && guard) {
        st->guard_scale = sim_solver_dissipation_guard(N, G, c, lambda, v);
        if (st->guard_scale != 1.0) st->error = one_shot(n, lambda, v, w, mu, cap, acc, proximal, y);
    }
    count_modes(n, lambda, mu, st);
    return st->converged ? SIM_SOLVER_OK : SIM_SOLVER_MAXITER;
}

static int cond_entry(int n, const double *G, const double *c, const double *mu, const double *cap,
                      const double *acc, double *lambda, const sim_cond_params *p, sim_cond_stats *st,
                      double *v_out, int guard)
{
    sim_cond_params def;
    sim_cond_stats st_local;
    if (!st) st = &st_local;
    memset(st, 0, sizeof *st);
    st->guard_scale = 1.0;
    if (!p) {
        sim_cond_default_params(&def);
        p = &def;
    }
    if (!sim_contact_problem_valid(n, G, c, mu, lambda)) return SIM_SOLVER_EINVAL;
    if (!(p->w_scale > 0) || !(p->cheb_relax > 0) || p->cheb_relax > 1 || !(p->tol >= 0) || p->max_iter < 0)
        return SIM_SOLVER_EINVAL;
    for (int m = 0; cap && m < n; m++)
        if (!(cap[m] >= 0)) return SIM_SOLVER_EINVAL;
    if (acc && !sim_all_finite(acc, 3 * n)) return SIM_SOLVER_EINVAL;
    if (n == 0) {
        st->converged = 1;
        return SIM_SOLVER_OK;
    }
    sim_solver_clear_empty_tangents(n, G, mu, lambda);
    double vs[3 * SIM_SOLVER_MAX_CONTACTS];
    int rc = cond_core(n, G, c, mu, cap, acc, lambda, p, st, vs, guard);
    if (v_out) memcpy(v_out, vs, sizeof(double) * (size_t)(3 * n));
    return rc;
}

int sim_cond_solve(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_cond_params *p, sim_cond_stats *st)
{
    return cond_entry(n, G, c, mu, NULL, NULL, lambda, p, st, NULL, 1);
}

int sim_cond_solve_capped(int n, const double *G, const double *c, const double *mu, const double *cap,
                          double *lambda, const sim_cond_params *p, sim_cond_stats *st, double *v)
{
    return cond_entry(n, G, c, mu, cap, NULL, lambda, p, st, v, 0);
}

int sim_cond_solve_increment(int n, const double *G, const double *c, const double *mu, const double *cap,
                             const double *acc, double *lambda, const sim_cond_params *p, sim_cond_stats *st,
                             double *v)
{
    return cond_entry(n, G, c, mu, cap, acc, lambda, p, st, v, 0);
}

int sim_solve_cond(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st)
{
    sim_cond_params cp;
    sim_cond_stats cs;
    sim_cond_default_params(&cp);
    if (p) {
        cp.max_iter = p->max_iter;
        cp.tol = p->tol;
    }
    int rc = sim_cond_solve(n, G, c, mu, lambda, &cp, &cs);
    if (st) {
        memset(st, 0, sizeof *st);
        st->iterations = cs.iterations;
        st->error = cs.error;
        st->converged = cs.converged;
        st->n_open = cs.n_open, st->n_stick = cs.n_stick, st->n_slip = cs.n_slip;
        st->guard_scale = cs.guard_scale;
    }
    return rc;
}

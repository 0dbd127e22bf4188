/* sim_impacts.c — set-valued simultaneous impacts (Halm & Posa): Routh's method over several contacts with
 * sampled relative impulse rates, discretized in bounded normal increments.  See sim_impacts.h. */
#include "sim_impacts.h"

#include "sim_metrics.h"
#include "sim_solver_internal.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

void sim_impacts_default_params(sim_impacts_params *p)
{
    p->v_impact = 0.05;
    p->min_impacts = 2;
    p->step_frac = 0.1;
    p->max_increments = 2000;
    p->v_tol = 1e-7;
    sim_cond_default_params(&p->inner);
    p->inner.tol = 1e-9;
    p->inner.max_iter = 2000;
    p->base = sim_solve_cond;
    p->base_params = NULL;
}

/* splitmix64's finalizer: a bijective mix of 64 bits. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t sim_impacts_key(uint64_t seed, uint64_t world, uint64_t episode, uint64_t step)
{
    const uint64_t g = 0x9E3779B97F4A7C15ull;
    uint64_t h = mix64(seed + g);
    h = mix64(h ^ (world + g));
    h = mix64(h ^ (episode + 2 * g));
    return mix64(h ^ (step + 3 * g));
}

/* The i-th uniform number of stream `seed`, in (0, 1]. */
static double stream_uniform(uint64_t seed, uint64_t i)
{
    const uint64_t z = mix64(mix64(seed) + (i + 1) * 0x9E3779B97F4A7C15ull);
    return (double)((z >> 11) + 1) * 0x1.0p-53;
}

/* c.lambda + 1/2 lambda.G lambda with v = G lambda + c given. */
static double energy_change(int N, const double *c, const double *lambda, const double *v)
{
    double e = 0;
    for (int r = 0; r < N; r++) e += lambda[r] * (c[r] + 0.5 * (v[r] - c[r]));
    return e;
}

/* 1 if contact m (a unilateral block: a contact or a joint limit) closes faster than v_tol; a bounded bilateral row
 * never collides (its velocity has no sign condition). */
static int closing(const double *v, const double *mu, int m, double v_tol)
{
    return !sim_block_is_box(mu[m]) && v[3 * m + 2] < -v_tol;
}

static int colliding(int n, const double *v, const double *mu, double v_tol)
{
    for (int m = 0; m < n; m++)
        if (closing(v, mu, m, v_tol)) return 1;
    return 0;
}

/* The increments of one impact (problem validated, n >= 1, h > 0).  lambda out. */
static int resolve_impact(int n, const double *G, const double *c, const double *mu, double *lambda,
                          const sim_impacts_params *p, uint64_t seed, double h, sim_impacts_stats *st)
{
    const int N = 3 * n;
    double v[3 * SIM_SOLVER_MAX_CONTACTS], vn[3 * SIM_SOLVER_MAX_CONTACTS], dl[3 * SIM_SOLVER_MAX_CONTACTS];
    double cap[SIM_SOLVER_MAX_CONTACTS];
    double pmax = 0;
    for (int m = 0; m < n; m++) { /* 1. the relative rates, held for the whole impact */
        st->rates[m] = stream_uniform(seed, (uint64_t)m);
        pmax = fmax(pmax, st->rates[m]);
    }
    for (int m = 0; m < n; m++) st->rates[m] /= pmax;
    memset(lambda, 0, sizeof(double) * (size_t)N);
    memset(dl, 0, sizeof(double) * (size_t)N);
    memcpy(v, c, sizeof(double) * (size_t)N);
    int k = 0;
    while (colliding(n, v, mu, p->v_tol) && k < p->max_increments) {
        k++;
        /* the bounds h p_m, with the rates renormalized over the contacts still colliding (the fastest of them
           gets h): a slow contact left alone does not stretch the impact over 1 / p_m increments */
        double pc = 0;
        for (int m = 0; m < n; m++)
            if (closing(v, mu, m, p->v_tol)) pc = fmax(pc, st->rates[m]);
        for (int m = 0; m < n; m++) cap[m] = h * st->rates[m] / pc;
        /* 2. the increment problem at the current velocity, warm-started from the previous increment (with
           the rates held, consecutive increments are alike) */
        sim_cond_stats cs;
        int rc = sim_cond_solve_increment(n, G, v, mu, cap, lambda, dl, &p->inner, &cs, vn);
        st->inner_iterations += cs.iterations;
        if (rc != SIM_SOLVER_OK) st->inner_failures++;
        /* an inexact increment could add energy (dl.v' - 1/2 dl.G dl > 0): scale it down to the dissipative
           minimizer, the same guard the solvers apply, with v as the increment's free velocity */
        sim_solver_dissipation_guard(N, G, v, dl, vn);
        for (int r = 0; r < N; r++) lambda[r] += dl[r];
        memcpy(v, vn, sizeof(double) * (size_t)N);
    }
    st->increments = k;
    st->converged = !colliding(n, v, mu, p->v_tol);
    st->energy_change = energy_change(N, c, lambda, v);
    return st->converged ? SIM_SOLVER_OK : SIM_SOLVER_MAXITER;
}

int sim_impacts_solve(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                      double *lambda, const sim_impacts_params *p, uint64_t seed, sim_impacts_stats *st)
{
    sim_impacts_params def;
    sim_impacts_stats st_local;
    if (!st) st = &st_local;
    memset(st, 0, sizeof *st);
    if (!p) {
        sim_impacts_default_params(&def);
        p = &def;
    }
    if (!sim_contact_problem_valid(n, G, c, mu, lambda)) return SIM_SOLVER_EINVAL;
    if (!(p->v_impact >= 0) || !(p->step_frac > 0) || !(p->v_tol >= 0) || p->max_increments < 0 || !p->base)
        return SIM_SOLVER_EINVAL;
    const int N = 3 * n;
    for (int r = 0; v_pre && r < N; r++)
        if (!isfinite(v_pre[r])) return SIM_SOLVER_EINVAL;
    const double *vi = v_pre ? v_pre : c;
    double h = 0;
    for (int m = 0; m < n; m++) {
        const double cn = c[3 * m + 2], gnn = G[(size_t)(3 * m + 2) * N + 3 * m + 2];
        /* arriving fast (v_pre), and with more than v_impact of closing velocity left for this step to remove (c:
           a contact the step's motion does not reach, or only grazes, is no impact) */
        if (sim_block_is_box(mu[m]) || !(vi[3 * m + 2] < -p->v_impact) || !(cn < -p->v_impact)) continue;
        st->n_impacting++;
        if (gnn > 0 && cn < 0) h = fmax(h, -cn / gnn);
    }
    if (st->n_impacting < (p->min_impacts > 1 ? p->min_impacts : 1) || !(h > 0)) {
        int rc = p->base(n, G, c, mu, lambda, p->base_params, &st->base_stats);
        st->converged = st->base_stats.converged;
        if (rc != SIM_SOLVER_EINVAL) {
            double v[3 * SIM_SOLVER_MAX_CONTACTS];
            sim_contact_velocity(n, G, c, lambda, v);
            st->energy_change = energy_change(N, c, lambda, v);
        }
        return rc;
    }
    st->impact = 1;
    return resolve_impact(n, G, c, mu, lambda, p, seed, p->step_frac * h, st);
}

long sim_impacts_iteration_cap(const sim_impacts_params *ip, const sim_solver_params *p)
{
    const long base = p ? p->max_iter : 0;
    const long impact = (long)(ip->max_increments > 0 ? ip->max_increments : 0) *
                        (ip->inner.max_iter > 0 ? ip->inner.max_iter : 0);
    return base > impact ? base : impact;
}

long sim_solve_impacts_iteration_cap(const sim_solver_params *p)
{
    sim_impacts_params ip;
    sim_impacts_default_params(&ip);
    return sim_impacts_iteration_cap(&ip, p);
}

/* The solver-table entries: the stream from p->seed and the problem, the base solver with p. */
static int solve_impacts_row(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                             double *lambda, const sim_solver_params *p, sim_solver_stats *st)
{
    sim_impacts_params ip;
    sim_impacts_stats is;
    sim_impacts_default_params(&ip);
    ip.base_params = p;
    /* the stream: the caller's seed mixed with the bits of the problem's free velocity, so that every step of
       every world draws its own rates from the one shared parameter block (m->opt.sp is per model), while a
       given (seed, problem) always gives the same bits */
    uint64_t seed = mix64(p ? (uint64_t)p->seed : 0);
    for (int r = 0; c && r < 3 * n && n <= SIM_SOLVER_MAX_CONTACTS; r++) {
        uint64_t w;
        memcpy(&w, &c[r], sizeof w);
        seed = mix64(seed ^ w);
    }
    int rc = sim_impacts_solve(n, G, c, v_pre, mu, lambda, &ip, seed, &is);
    if (st) {
        if (!is.impact) {
            *st = is.base_stats;
        } else {
            memset(st, 0, sizeof *st);
            st->iterations = is.inner_iterations < INT_MAX ? (int)is.inner_iterations : INT_MAX;
            st->converged = is.converged;
            st->guard_scale = 1.0;
            st->impact = 1;
            sim_solver_count_modes(n, mu, lambda, st);
        }
    }
    return rc;
}

int sim_solve_impacts(int n, const double *G, const double *c, const double *mu, double *lambda,
                      const sim_solver_params *p, sim_solver_stats *st)
{
    return solve_impacts_row(n, G, c, NULL, mu, lambda, p, st);
}

int sim_solve_impacts_pre(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                          double *lambda, const sim_solver_params *p, sim_solver_stats *st)
{
    return solve_impacts_row(n, G, c, v_pre, mu, lambda, p, st);
}

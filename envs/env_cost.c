/* env_cost.c — a step's time estimated from an env's configuration and its solver's caps (env.h): the time one
 * contact-solver iteration takes on this machine, per solver, is measured on synthetic contact problems (thread
 * CPU time), and a world-step at the caps is decimation x (the physics step besides the solve + each solver's
 * iteration cap x its iteration time at the most contacts a world can have, and the direct Coulomb solve's
 * Newton cap x the time of one of its iterations at the largest problem it takes). */
#include "env.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_solver.h"

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Degrees of freedom of the synthetic problems' tree (a quadruped's 18) and the two sizes measured. */
#define PROBE_NV 18
#define PROBE_N1 8
#define PROBE_N2 32     /* SIM_SOLVER_ADMM_MAX_CONTACTS: the dense ADMM's largest */
#define PROBE_N2_SLOW 12 /* for a row whose solve at PROBE_N1 takes over PROBE_SLOW_S ("impacts": its probe
                          * problems are impacts, tens of increments each an inner solve), so that the probe stays
                          * short */
#define PROBE_SLOW_S 2e-4
#define PROBE_ITERS 40
#define PROBE_MIN_S 0.002

/* A reproducible contact problem of n contacts: G = S^T S + a small ridge (S: PROBE_NV x 3n, entries in
 * [-1, 1)), every contact approaching (c_n < 0) and pushed sideways, so that sticking and slipping mix and
 * the sweeps keep working (tol 0: no solver stops before its cap). */
/* The probes' arrays, allocated once per measurement (nothing is kept between calls). */
typedef struct {
    double S[PROBE_NV * 3 * PROBE_N2];
    double G[9 * PROBE_N2 * PROBE_N2], c[3 * PROBE_N2], mu[PROBE_N2], lambda[3 * PROBE_N2];
} probe_scratch;

static void probe_problem(int n, double *S, double *G, double *c, double *mu)
{
    uint64_t x = 0x243F6A8885A308D3ull;
    for (int i = 0; i < PROBE_NV * 3 * n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        S[i] = (double)(x >> 11) / 4503599627370496.0 - 1.0;
    }
    int m = 3 * n;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int k = 0; k < PROBE_NV; k++) s += S[k * m + i] * S[k * m + j];
            G[i * m + j] = s + (i == j ? 1e-3 : 0);
        }
    for (int i = 0; i < n; i++) {
        c[3 * i] = 0.3 * ((i % 3) - 1);
        c[3 * i + 1] = 0.2 * ((i % 5) - 2);
        c[3 * i + 2] = -0.5 - 0.01 * i;
        mu[i] = 0.6;
    }
}

/* Thread CPU seconds per iteration of row `solver` on the n-contact problem (0 if it cannot run it); *solve_s:
 * one solve's. */
static double probe_iteration_s(probe_scratch *w, int solver, int n, double *solve_s)
{
    double *G = w->G, *c = w->c, *mu = w->mu, *lambda = w->lambda;
    probe_problem(n, w->S, G, c, mu);
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 0;
    p.max_iter = PROBE_ITERS;
    p.admm_max_iter = PROBE_ITERS;
    p.direct_rounds = 0;    /* the sweeps' cost per iteration: with tol 0 they always stall, and the direct solve a
                             * stall starts would be timed as part of every iteration */
    double t = 0;
    long iters = 0;
    int rep = 0;
    for (; rep < 1000 && t < PROBE_MIN_S; rep++) {
        sim_solver_stats st;
        memset(lambda, 0, sizeof w->lambda);
        double t0 = thread_cpu_s();
        int rc = sim_solve(solver, n, G, c, mu, lambda, &p, &st);
        t += thread_cpu_s() - t0;
        if (rc < 0) return 0;
        iters += st.iterations > 0 ? st.iterations : 1;
    }
    *solve_s = rep > 0 ? t / rep : 0;
    return iters > 0 ? t / (double)iters : 0;
}

/* Thread CPU seconds per Newton iteration of the direct Coulomb solve on the probe problem of
 * SIM_SOLVER_DIRECT_MAX_CONTACTS contacts, the costlier of its two kinds: the mode-set search's (with tol 0 no mode set
 * is accepted and with abandon 0 every Newton run goes to its end, so each call spends its whole iteration budget, or
 * stops when no mode is left to change; the division is by the iterations done) and the semismooth Newton's. */
static double probe_direct_s(probe_scratch *w)
{
    const int n = SIM_SOLVER_DIRECT_MAX_CONTACTS;
    probe_problem(n, w->S, w->G, w->c, w->mu);
    sim_solver_params p;
    sim_solver_default_params(&p);
    double v[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], l[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
    /* every block pressed and on its cone's edge: the first mode set has every block slipping, the largest and
       costliest system */
    for (int i = 0; i < n; i++) w->lambda[3 * i] = w->mu[i], w->lambda[3 * i + 1] = 0, w->lambda[3 * i + 2] = 1;
    const double *guess[1] = {w->lambda};
    double t = 0;
    long iters = 0;
    for (int rep = 0; rep < 1000 && t < PROBE_MIN_S; rep++) {
        int it = 0;
        double t0 = thread_cpu_s();
        sim_solver_coulomb_direct(n, w->G, w->c, w->mu, guess, 1, 0, 0, p.direct_rounds, p.direct_max_iter,
                                  (1u << p.direct_forms) - 1, l, v, &it);
        t += thread_cpu_s() - t0;
        iters += it > 0 ? it : 1;
    }
    const double mode_set = iters > 0 ? t / (double)iters : 0;
    /* the semismooth Newton's iterations (a dense LU of the whole 3n x 3n system each) from the same start, at tol 0
       (no iterate accepted): the estimate takes the costlier of the two kinds for every direct iteration */
    t = 0, iters = 0;
    for (int rep = 0; rep < 1000 && t < PROBE_MIN_S; rep++) {
        int it = 0;
        memcpy(l, w->lambda, sizeof(double) * 3 * (size_t)n);
        double t0 = thread_cpu_s();
        sim_solver_coulomb_newton_ac(n, w->G, w->c, w->mu, 0, p.direct_newton_iter, l, v, &it);
        t += thread_cpu_s() - t0;
        iters += it > 0 ? it : 1;
    }
    const double newton = iters > 0 ? t / (double)iters : 0;
    return newton > mode_set ? newton : mode_set;
}

void env_time_solvers(env_solver_timing *out)
{
    memset(out, 0, sizeof *out);
    probe_scratch *w = malloc(sizeof *w);
    if (!w) return;             /* all zero: no time known */
    for (int s = 0; s < sim_solver_count() && s < ENV_SOLVER_ROWS; s++) {
        const sim_solver_desc *d = sim_solver_at(s);
        if (!d || !d->solve) continue;
        /* t(n) = a n + b n^2 through the two sizes: a sweep visits every contact, and each visit reads its
         * contact's row of G (n blocks) */
        double solve1, solve2;
        double t1 = probe_iteration_s(w, s, PROBE_N1, &solve1);
        const double n1 = PROBE_N1, n2 = solve1 > PROBE_SLOW_S ? PROBE_N2_SLOW : PROBE_N2;
        double t2 = probe_iteration_s(w, s, (int)n2, &solve2);
        double b = (t2 / n2 - t1 / n1) / (n2 - n1), a = t1 / n1 - b * n1;
        if (b < 0) b = 0, a = t1 / n1 > t2 / n2 ? t1 / n1 : t2 / n2;
        if (a < 0) a = 0, b = t1 / (n1 * n1) > t2 / (n2 * n2) ? t1 / (n1 * n1) : t2 / (n2 * n2);
        out->per_contact[s] = a;
        out->per_contact2[s] = b;
    }
    out->direct_iteration = probe_direct_s(w);
    free(w);
}

double env_solver_iteration_s(const env_solver_timing *t, int solver, int ncontacts)
{
    if (solver < 0 || solver >= ENV_SOLVER_ROWS) return 0;
    double n = ncontacts > 0 ? ncontacts : 1;
    return t->per_contact[solver] * n + t->per_contact2[solver] * n * n;
}

double env_direct_iteration_s(const env_solver_timing *t, int ncontacts)
{
    const double nmax = SIM_SOLVER_DIRECT_MAX_CONTACTS;
    if (ncontacts > SIM_SOLVER_DIRECT_MAX_CONTACTS) return 0;
    const double r = (ncontacts > 0 ? ncontacts : 1) / nmax;
    return t->direct_iteration * r * r;
}

double env_world_step_s(const env_cost *c, const env_solver_timing *t, double physics_step_s)
{
    double solve = (double)c->solver_cap * env_solver_iteration_s(t, c->solver, c->max_contacts);
    if (c->fallback >= 0) solve += (double)c->fallback_cap * env_solver_iteration_s(t, c->fallback, c->max_contacts);
    if (c->direct_cap > 0) {
        const int nd = c->max_contacts < SIM_SOLVER_DIRECT_MAX_CONTACTS ? c->max_contacts : SIM_SOLVER_DIRECT_MAX_CONTACTS;
        solve += (double)c->direct_cap * env_direct_iteration_s(t, nd);
    }
    return (double)(c->decimation > 0 ? c->decimation : 1) * (physics_step_s + solve);
}

double env_physics_step_s(env_t *e, int steps)
{
    const env_spec *sp = env_get_spec(e);
    float obs[ENV_PROBE_DIM], act[ENV_PROBE_DIM] = {0}, r;
    uint8_t te, tr;
    if (sp->obs_dim > ENV_PROBE_DIM || sp->act_dim > ENV_PROBE_DIM) return 0;
    env_reset(e, 0, 1, NULL, NULL, obs);
    double t0 = thread_cpu_s();
    for (int k = 0; k < steps; k++) env_step(e, 0, 1, NULL, act, obs, &r, &te, &tr, NULL);
    double t = thread_cpu_s() - t0;
    env_cost c;
    env_get_cost(e, &c);
    return t / (double)(steps > 0 ? steps : 1) / (double)(c.decimation > 0 ? c.decimation : 1);
}

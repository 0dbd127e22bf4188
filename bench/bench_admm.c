/* herd-bench admm — ADMM's two factorizations of G + rho I (sim_solver.h: SIM_ADMM_FACTOR_DENSE, the dense
 * Cholesky of the 3n x 3n matrix; SIM_ADMM_FACTOR_TREE, rho I + S S^T factored along the kinematic tree) on the
 * same problems, interleaved, medians over repeats:
 *   walk_fallback  the walk task's contact problems (random PD targets, dt 5 ms, <= 50 sweeps, <= 16 contacts, as
 *                  `herd-bench solver --walk`) on which coulomb-stall-admm's stall detector hands over to ADMM:
 *                  the whole coulomb-stall-admm solve from the step's warm start (the sweeps are the same in both
 *                  modes), per problem
 *   walk_by_n      "admm" alone, from the warm start, on every 5th contact problem of the same run, by contact count
 *   anymal_by_n    "admm" cold on random ANYmal states near the ground (up to 16 contacts: feet, shanks, thighs,
 *                  base corners), by contact count
 *   heavy_on_light two free cubes as a 12-dof chain tree (ground-light and light-heavy contacts), mass ratio
 *                  1 .. 1e6, "admm" cold
 *
 *   herd-bench admm [--steps N] [--repeats R] [--mode all|dense|tree|auto]
 * all (default): dense, tree and auto (SIM_ADMM_FACTOR_AUTO, the default); ratios are to dense.  --mode
 * dense|tree|auto times one mode only (for callgrind: each experiment's solves run inside its own function
 * bench_admm_solve_<experiment>, e.g. valgrind --tool=callgrind build/herd-bench admm --mode tree --repeats 1, then
 * callgrind_annotate --inclusive=yes: instructions / calls = per solve). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_metrics.h"
#include "sim_step.h"
#include "sim_urdf.h"
#include "tests/helpers/rigid_contact.h"

#define MAXC 16
#define MAXV 24

typedef struct {
    int n, nv;
    double G[3 * MAXC * 3 * MAXC], c[3 * MAXC], mu[MAXC], lambda0[3 * MAXC];
    double S[3 * MAXC * MAXV];
    int path[MAXC * MAXV], npath[MAXC], parent[MAXV];
} problem;

static sim_solver_tree problem_tree(const problem *P)
{
    return (sim_solver_tree){P->nv, P->parent, P->S, P->path, P->npath, P->nv};
}

/* One solve, through one noinline function per experiment, so that callgrind's inclusive cost of each
 * (callgrind_annotate --inclusive=yes) is that experiment's instructions and its call count the solves. */
typedef int (*solve_fn)(int solver, const problem *P, const sim_solver_params *p, double *lambda, sim_solver_stats *st);
#define SOLVE_FN(name)                                                                                              \
    __attribute__((noinline)) int name(int solver, const problem *P, const sim_solver_params *p, double *lambda,   \
                                       sim_solver_stats *st)                                                        \
    {                                                                                                               \
        const sim_solver_tree t = problem_tree(P);                                                                  \
        memcpy(lambda, P->lambda0, sizeof(double) * 3 * (size_t)P->n);                                              \
        return sim_solve_tree(solver, P->n, P->G, P->c, P->mu, lambda, p, st, &t);                                  \
    }
int bench_admm_solve_walk_fallback(int, const problem *, const sim_solver_params *, double *, sim_solver_stats *);
int bench_admm_solve_walk_by_n(int, const problem *, const sim_solver_params *, double *, sim_solver_stats *);
int bench_admm_solve_walk_fallback_admm(int, const problem *, const sim_solver_params *, double *, sim_solver_stats *);
int bench_admm_solve_anymal_by_n(int, const problem *, const sim_solver_params *, double *, sim_solver_stats *);
int bench_admm_solve_heavy_on_light(int, const problem *, const sim_solver_params *, double *, sim_solver_stats *);
SOLVE_FN(bench_admm_solve_walk_fallback)
SOLVE_FN(bench_admm_solve_walk_by_n)
SOLVE_FN(bench_admm_solve_walk_fallback_admm)
SOLVE_FN(bench_admm_solve_anymal_by_n)
SOLVE_FN(bench_admm_solve_heavy_on_light)

static void snapshot(const sim_model *m, const sim_data *d, problem *P)
{
    const int n = d->ncon, N = 3 * n, nv = m->nv;
    P->n = n, P->nv = nv;
    memcpy(P->G, d->G, sizeof(double) * (size_t)N * N);
    memcpy(P->c, d->cfree, sizeof(double) * (size_t)N);
    memcpy(P->mu, d->mu, sizeof(double) * (size_t)n);
    memcpy(P->lambda0, d->lambda, sizeof(double) * (size_t)N);
    memcpy(P->S, d->Bc, sizeof(double) * (size_t)N * nv);
    memcpy(P->path, d->con_path, sizeof(int) * (size_t)n * nv);
    memcpy(P->npath, d->con_npath, sizeof(int) * (size_t)n);
    memcpy(P->parent, m->dof_parent, sizeof(int) * (size_t)nv);
}

/* Harvests the walk physics' problems: the fallback ones and every 5th contact problem. */
static int harvest(long steps, problem **fb, int *nfb, problem **all, int *nall)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    if (!m || env_scenario_configure_model(m, ENV_SCN_RANDOM, err, sizeof err)) {
        fprintf(stderr, "herd-bench admm: %s\n", err);
        return -1;
    }
    m->opt.solver = SIM_SOLVER_COULOMB_STALL_ADMM;
    m->opt.sp.max_iter = 50;
    m->opt.sp.admm_factor = SIM_ADMM_FACTOR_DENSE; /* the harvest does not depend on the mode under test */
    m->opt.max_contacts = MAXC;
    sim_data *d = sim_data_new(m);
    env_scenario s;
    if (env_scenario_init(&s, m, d, ENV_SCN_RANDOM, 42, err, sizeof err)) { fprintf(stderr, "%s\n", err); return -1; }
    const double dt = 0.005;
    int cap_fb = 4096, cap_all = 8192;
    *fb = malloc(sizeof(problem) * (size_t)cap_fb), *all = malloc(sizeof(problem) * (size_t)cap_all);
    *nfb = *nall = 0;
    static problem P;
    long k = 0;
    for (long i = 0; i < steps; i++) {
        env_scenario_control(&s, m, d, dt);
        sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
        if (d->ncon > 0) {
            snapshot(m, d, &P);
            sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
            if (d->stats.fallback && *nfb < cap_fb) (*fb)[(*nfb)++] = P;
            if (k++ % 5 == 0 && *nall < cap_all) (*all)[(*nall)++] = P;
        }
        sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
    }
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return 0;
}

/* Median over repeats of the mean ns per solve of solver on probs[idx[..]], for each mode in modes (interleaved
 * per repeat); also the mean iterations and factorizations and the worst final error. */
typedef struct { double ns, iters, factors, err_max, unconv; } mode_result;

static void time_modes(solve_fn solve, int solver, const problem *probs, const int *idx, int np, const int *modes, int nmodes,
                       int repeats, mode_result *out)
{
    double *t = malloc(sizeof(double) * (size_t)repeats * nmodes);
    sim_solver_params p;
    for (int q = 0; q < nmodes; q++) memset(&out[q], 0, sizeof out[q]);
    double lam[3 * MAXC];
    for (int r = 0; r < repeats; r++)
        for (int q = 0; q < nmodes; q++) {
            sim_solver_default_params(&p);
            p.max_iter = 50;
            p.admm_factor = modes[q];
            long it = 0, fac = 0, unc = 0;
            double em = 0;
            const uint64_t a = bench_thread_cpu_ns();
            for (int j = 0; j < np; j++) {
                sim_solver_stats st;
                solve(solver, &probs[idx ? idx[j] : j], &p, lam, &st);
                it += st.iterations, fac += st.admm_factors, unc += !st.converged;
                em = fmax(em, st.error);
            }
            t[q * repeats + r] = (double)(bench_thread_cpu_ns() - a) / (np ? np : 1);
            out[q].iters = np ? (double)it / np : 0, out[q].factors = np ? (double)fac / np : 0;
            out[q].err_max = em, out[q].unconv = np ? (double)unc / np : 0;
        }
    for (int q = 0; q < nmodes; q++) out[q].ns = bench_median(t + q * repeats, repeats);
    free(t);
}

static const char *mode_name(int m) { return m == SIM_ADMM_FACTOR_DENSE ? "dense" : m == SIM_ADMM_FACTOR_TREE ? "tree" : "auto"; }

static void report(const char *exp, const char *extra, const int *modes, int nmodes, const mode_result *r, int np)
{
    for (int q = 0; q < nmodes; q++) {
        printf("{\"bench\":\"admm\",\"experiment\":\"%s\",%s\"solver\":\"admm\",\"factor\":\"%s\",\"problems\":%d,"
               "\"us_per_solve\":%.3f,\"iterations\":%.2f,\"factorizations\":%.2f,\"unconverged_frac\":%.4f,"
               "\"error_max\":%.3g,\"ratio_to_dense\":%.3f,\"cpu\":\"%s\"}\n",
               exp, extra, mode_name(modes[q]), np, r[q].ns / 1e3, r[q].iters, r[q].factors, r[q].unconv, r[q].err_max,
               r[q].ns / r[0].ns, bench_cpu());
        fprintf(stderr, "%-15s %-14s %-6s %5d problems  %8.2f us/solve  %7.1f it  %5.2f factors  ratio %.3f\n", exp,
                extra, mode_name(modes[q]), np, r[q].ns / 1e3, r[q].iters, r[q].factors, r[q].ns / r[0].ns);
    }
}

/* Heavy-on-light as a chain tree (the problem of tests/helpers/rigid_contact.h, as tests/test_admm.c uses it): dofs
 * 0..5 the light cube, 6..11 the heavy one. */
static void heavy_on_light(double ratio, problem *P)
{
    double J[24 * 12], minv[12];
    memset(P, 0, sizeof *P);
    P->n = 8, P->nv = 12;
    rc_heavy_on_light(ratio, J, minv, P->G, P->c, P->mu);
    for (int k = 0; k < 12; k++) P->parent[k] = k - 1;
    for (int k = 0; k < 8; k++) {
        P->npath[k] = k >= 4 ? 12 : 6;
        for (int t = 0; t < P->npath[k]; t++) P->path[k * 12 + t] = P->npath[k] - 1 - t;
        for (int a = 0; a < 3; a++)
            for (int t = 0; t < P->npath[k]; t++) {
                const int q = P->path[k * 12 + t];
                P->S[(3 * k + a) * 12 + t] = J[(3 * k + a) * 12 + q] * sqrt(minv[q]);
            }
    }
}

int bench_admm(int argc, char **argv)
{
    const long steps = atol(bench_arg(argc, argv, "--steps", "20000"));
    const int repeats = atoi(bench_arg(argc, argv, "--repeats", "7"));
    const char *mode = bench_arg(argc, argv, "--mode", "both");
    int modes[3] = {SIM_ADMM_FACTOR_DENSE, SIM_ADMM_FACTOR_TREE, SIM_ADMM_FACTOR_AUTO}, nmodes = 3;
    if (!strcmp(mode, "dense")) nmodes = 1;
    else if (!strcmp(mode, "tree")) modes[0] = SIM_ADMM_FACTOR_TREE, nmodes = 1;
    else if (!strcmp(mode, "auto")) modes[0] = SIM_ADMM_FACTOR_AUTO, nmodes = 1;
    problem *fb, *all;
    int nfb, nall;
    if (harvest(steps, &fb, &nfb, &all, &nall)) return 1;
    fprintf(stderr, "walk physics, %ld steps: %d fallback problems, %d sampled contact problems\n", steps, nfb, nall);
    mode_result r[3];
    time_modes(bench_admm_solve_walk_fallback, SIM_SOLVER_COULOMB_STALL_ADMM, fb, NULL, nfb, modes, nmodes, repeats, r);
    report("walk_fallback", "", modes, nmodes, r, nfb);
    /* admm alone, by contact count */
    int *idx = malloc(sizeof(int) * (size_t)(nall + nfb));
    for (int n = 1; n <= MAXC; n++) {
        int np = 0;
        for (int j = 0; j < nall; j++)
            if (all[j].n == n) idx[np++] = j;
        if (np < 20) continue;
        time_modes(bench_admm_solve_walk_by_n, SIM_SOLVER_ADMM, all, idx, np, modes, nmodes, repeats, r);
        char extra[64];
        snprintf(extra, sizeof extra, "\"contacts\":%d,", n);
        report("walk_by_n", extra, modes, nmodes, r, np);
    }
    for (int j = 0; j < nfb; j++) idx[j] = j;
    time_modes(bench_admm_solve_walk_fallback_admm, SIM_SOLVER_ADMM, fb, idx, nfb, modes, nmodes, repeats, r);
    report("walk_fallback_admm", "", modes, nmodes, r, nfb);
    free(idx);
    /* ANYmal lying on or tumbling near the ground (random tilt, joint angles and velocities; feet, shanks,
       thighs and base corners within 5 cm of the ground are contacts): the larger contact counts */
    {
        char err[512];
        sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
        if (!m) { fprintf(stderr, "%s\n", err); return 1; }
        m->opt.margin = 0.05;
        m->opt.max_contacts = MAXC;
        sim_data *d = sim_data_new(m);
        const int per = 40;
        problem *rs = malloc(sizeof(problem) * MAXC * per);
        int cnt[MAXC + 1] = {0};
        uint64_t z = 12345;
        for (int t = 0; t < 200000; t++) {
            sim_data_reset(m, d);
            sim_step_forget_contacts(d);
#define U01() ((z = z * 6364136223846793005ull + 1442695040888963407ull), (double)(z >> 11) * 0x1.0p-53)
            d->q[2] = 0.1 + 0.4 * U01();
            const double ax = 1.2 * U01() - 0.6, ay = 1.2 * U01() - 0.6, az = 6 * U01() - 3;
            const double th = sqrt(ax * ax + ay * ay + az * az);
            d->q[3] = cos(th / 2), d->q[4] = sin(th / 2) * ax / th, d->q[5] = sin(th / 2) * ay / th;
            d->q[6] = sin(th / 2) * az / th;
            for (int k = 7; k < m->nq; k++) d->q[k] = 3 * U01() - 1.5;
            for (int k = 0; k < m->nv; k++) d->u[k] = 2 * U01() - 1;
#undef U01
            sim_step_stages(m, d, 0.005, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
            const int n = d->ncon;
            if (n < 1 || n > MAXC || cnt[n] >= per) continue;
            snapshot(m, d, &rs[(n - 1) * per + cnt[n]++]);
        }
        for (int n = 1; n <= MAXC; n++) {
            if (cnt[n] < 10) continue;
            time_modes(bench_admm_solve_anymal_by_n, SIM_SOLVER_ADMM, rs + (n - 1) * per, NULL, cnt[n], modes, nmodes, repeats, r);
            char extra[64];
            snprintf(extra, sizeof extra, "\"contacts\":%d,", n);
            report("anymal_by_n", extra, modes, nmodes, r, cnt[n]);
        }
        free(rs);
        sim_data_destroy(&d);
        sim_model_destroy(&m);
    }
    static problem H;
    for (int e = 0; e <= 6; e += 2) {
        heavy_on_light(pow(10.0, e), &H);
        time_modes(bench_admm_solve_heavy_on_light, SIM_SOLVER_ADMM, &H, NULL, 1, modes, nmodes, repeats * 20, r);
        char extra[64];
        snprintf(extra, sizeof extra, "\"mass_ratio\":1e%d,", e);
        report("heavy_on_light", extra, modes, nmodes, r, 1);
    }
    free(fb), free(all);
    return 0;
}

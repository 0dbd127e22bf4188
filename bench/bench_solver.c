/* herd-bench solver — the paper's four experiments (Hwangbo et al. 2018, Sec. V) on ANYmal C.
 *
 *   herd-bench solver --scenario trot|hang|drop|random|stand --solver NAME [--steps N]   (NAME: sim_solver.h's table)
 *                     [--repeats R] [--dt S] [--no-warmstart]
 *   herd-bench solver --compare [--steps N]     Table II, Fig. 6 (paper model and Coulomb, split stick / slip),
 *                                               warm-start savings, box-slide gap
 *   herd-bench solver --walk [--steps N]        every solver at the walk task's physics (stall detector figures):
 *                                               the random-PD scenario's problems ("problems":"random_pd_scenario"),
 *                                               and the fallback / CCP-answer shares counted in the real anymal_c-walk
 *                                               env ("env_*" fields)
 *   herd-bench solver --tol-floor [--steps N] [--scenario S] [--dt S] [--max-iter K]
 *                                               the smallest termination tolerance each solver reaches on the walk
 *                                               task's contact problems (random, 5 ms; or scenario S at --dt), with a
 *                                               budget of K (1000) sweeps: the floor behind solver_tol's range
 *   herd-bench solver --vs-mujoco [--steps N]   standing PD scenario vs MuJoCo 2.2 in this process
 *
 * One JSON object per line on stdout; a table on stderr.  Timings are medians over repeats of the
 * per-repeat mean; every repeat restarts the scenario from the same seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env.h"
#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

#define MODEL_PATH "envs/models/anymal_c.urdf"

typedef struct {
    double us_per_step, us_solver;
    double mean_iter, p99_iter, eps_abs_p99, pen_max, mean_contacts;
    long resets, steps;
} run_result;

static double g_erp = 0;   /* --erp: position correction for every run (off by default, as the model) */

static sim_model *load(int kind, int solver, int warm)
{
    char err[512];
    sim_model *m = sim_urdf_load_file(MODEL_PATH, NULL, err, sizeof err);
    if (!m) { fprintf(stderr, "herd-bench: %s\n", err); return NULL; }
    if (env_scenario_configure_model(m, kind, err, sizeof err)) { fprintf(stderr, "herd-bench: %s\n", err); sim_model_destroy(&m); return NULL; }
    m->opt.solver = solver;
    m->opt.warmstart = warm;
    m->opt.erp = g_erp;
    return m;
}

/* Runs one scenario; timing pass (the solver timed alone by calling sim_step's phases) and a statistics
 * pass share the run. */
static int run(int kind, int solver, int warm, long steps, int repeats, double dt, run_result *r)
{
    sim_model *m = load(kind, solver, warm);
    if (!m) return -1;
    sim_data *d = sim_data_new(m);
    env_scenario s;
    char err[256];
    if (env_scenario_init(&s, m, d, kind, 42, err, sizeof err)) { fprintf(stderr, "%s\n", err); return -1; }
    double *rep_step = calloc((size_t)repeats, sizeof(double)), *rep_solver = calloc((size_t)repeats, sizeof(double));
    double *iters = malloc(sizeof(double) * (size_t)steps), *eps = malloc(sizeof(double) * (size_t)steps);
    memset(r, 0, sizeof *r);
    /* timing repeats: whole step, no metrics */
    for (int rep = 0; rep < repeats; rep++) {
        env_scenario_init(&s, m, d, kind, 42, err, sizeof err);
        uint64_t t0 = bench_now_ns(), tc = 0;
        for (long i = 0; i < steps; i++) {
            uint64_t a = bench_now_ns();
            env_scenario_control(&s, m, d, dt);
            tc += bench_now_ns() - a;
            sim_step(m, d, dt);
        }
        uint64_t t1 = bench_now_ns();
        rep_step[rep] = (double)(t1 - t0 - tc) / 1e3 / (double)steps;
        /* solver-only pass */
        env_scenario_init(&s, m, d, kind, 42, err, sizeof err);
        double ns = 0;
        for (long i = 0; i < steps; i++) {
            env_scenario_control(&s, m, d, dt);
            sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
            if (d->ncon > 0) {
                uint64_t a = bench_now_ns();
                sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
                ns += (double)(bench_now_ns() - a);
            }
            sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
        }
        rep_solver[rep] = ns / 1e3 / (double)steps;
    }
    /* statistics pass */
    env_scenario_init(&s, m, d, kind, 42, err, sizeof err);
    long ncontact_steps = 0;
    double contacts = 0;
    for (long i = 0; i < steps; i++) {
        env_scenario_control(&s, m, d, dt);
        sim_step(m, d, dt);
        contacts += d->stats.nactive;
        if (d->stats.penetration > r->pen_max) r->pen_max = d->stats.penetration;
        if (d->ncon > 0) {
            sim_contact_metrics_t mt;
            sim_step_metrics(m, d, dt, &mt);
            iters[ncontact_steps] = d->stats.iterations;
            eps[ncontact_steps] = isfinite(mt.eps_abs) ? mt.eps_abs : 0;
            ncontact_steps++;
        }
    }
    r->steps = steps;
    r->resets = s.resets;
    r->mean_contacts = contacts / (double)steps;
    double sum = 0;
    for (long i = 0; i < ncontact_steps; i++) sum += iters[i];
    r->mean_iter = ncontact_steps ? sum / (double)ncontact_steps : 0;
    r->p99_iter = ncontact_steps ? bench_percentile(iters, (int)ncontact_steps, 99) : 0;
    r->eps_abs_p99 = ncontact_steps ? bench_percentile(eps, (int)ncontact_steps, 99) : 0;
    r->us_per_step = bench_median(rep_step, repeats);
    r->us_solver = bench_median(rep_solver, repeats);
    free(rep_step); free(rep_solver); free(iters); free(eps);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return 0;
}

static const char *solver_name(int s) { return sim_solver_at(s) ? sim_solver_at(s)->name : "?"; }

/* A solver index from a table name ("bisection" is accepted as a short name for "paper-bisection"); -1 if unknown. */
static int solver_from_name(const char *so)
{
    if (!strcmp(so, "bisection")) return SIM_SOLVER_PAPER_BISECTION;
    const sim_solver_desc *d = sim_solver_find(so);
    return d ? sim_solver_index(so) : -1;
}

static void list_solvers(void)
{
    for (int i = 0; i < sim_solver_count(); i++)
        if (sim_solver_at(i)->solve) fprintf(stderr, " %s", sim_solver_at(i)->name);
    fprintf(stderr, "\n");
}

static void print_run(int kind, int solver, int warm, double dt, const run_result *r)
{
    printf("{\"bench\":\"solver\",\"scenario\":\"%s\",\"solver\":\"%s\",\"warmstart\":%s,\"erp\":%g,\"dt\":%g,\"steps\":%ld,"
           "\"us_per_step\":%.4f,\"us_solver\":%.4f,\"mean_iterations\":%.3f,\"p99_iterations\":%.1f,"
           "\"eps_abs_p99\":%.4g,\"penetration_max_m\":%.4g,\"mean_active_contacts\":%.3f,\"resets\":%ld,"
           "\"cpu\":\"%s\"}\n",
           env_scenario_name(kind), solver_name(solver), warm ? "true" : "false", g_erp, dt, r->steps, r->us_per_step, r->us_solver,
           r->mean_iter, r->p99_iter, r->eps_abs_p99, r->pen_max, r->mean_contacts, r->resets, bench_cpu());
    fflush(stdout);
    fprintf(stderr, "%-7s %-9s %s  %8.3f us/step  %7.3f us solver  iters mean %6.2f p99 %6.0f  eps_abs p99 %.2e  pen max %.2e m\n",
            env_scenario_name(kind), solver_name(solver), warm ? "warm" : "cold", r->us_per_step, r->us_solver, r->mean_iter,
            r->p99_iter, r->eps_abs_p99, r->pen_max);
}

/* Fig. 6: along a run of `solver`, the share of contact steps whose impulses differ from a tightly converged
 * PGS solution (Hwangbo et al.'s eqs. 17-18, a Coulomb NCP solver) of the same problem by less than 1 %
 * (|lambda - lambda_pgs| / |lambda_pgs|), every 10th step; split into steps where the tight solution has no
 * slipping contact (*share_stick, over *n_stick samples) and those with one (*share_slip, *n_slip). */
static double agreement(int kind, int solver, long steps, double dt, long *samples, double *share_stick, long *n_stick,
                        double *share_slip, long *n_slip)
{
    sim_model *m = load(kind, solver, 1);
    if (!m) return NAN;
    sim_data *d = sim_data_new(m);
    env_scenario s;
    char err[256];
    env_scenario_init(&s, m, d, kind, 42, err, sizeof err);
    sim_solver_params tight = m->opt.sp;
    tight.tol = 1e-20;
    tight.max_iter = 20000;
    long n = 0, ok = 0, ns = 0, oks = 0, nl = 0, okl = 0;
    double lam[3 * SIM_SOLVER_MAX_CONTACTS];
    for (long i = 0; i < steps; i++) {
        env_scenario_control(&s, m, d, dt);
        sim_step(m, d, dt);
        if (d->stats.nactive == 0 || i % 10) continue;
        int nc = d->ncon;
        memset(lam, 0, sizeof(double) * 3 * (size_t)nc);
        sim_solver_stats st;
        sim_solve_pgs_hwangbo(nc, d->G, d->cfree, d->mu, lam, &tight, &st);
        double num = 0, den = 0;
        for (int k = 0; k < 3 * nc; k++) {
            num += (d->lambda[k] - lam[k]) * (d->lambda[k] - lam[k]);
            den += lam[k] * lam[k];
        }
        if (den <= 0) continue;
        const int good = sqrt(num / den) < 0.01;
        n++, ok += good;
        if (st.n_slip > 0) nl++, okl += good;
        else ns++, oks += good;
    }
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    *samples = n, *n_stick = ns, *n_slip = nl;
    *share_stick = ns ? (double)oks / (double)ns : NAN;
    *share_slip = nl ? (double)okl / (double)nl : NAN;
    return n ? (double)ok / (double)n : NAN;
}

/* A box sliding on its four corners vs Coulomb's analytical deceleration mu g and energy. */
static void box_slide(int solver)
{
    sim_model *m = sim_model_new();
    const double hx = 0.1, hy = 0.1, hz = 0.05, mass = 2.0, mu = 0.5, v0 = 1.5, g = 9.81, dt = 1e-3;
    m->nbody = 1;
    sim_body *b = &m->body[0];
    strcpy(b->name, "box");
    b->parent = -1; b->joint_type = SIM_JOINT_FREE;
    b->rot[0] = b->rot[4] = b->rot[8] = 1;
    b->mass = mass;
    b->inertia[0] = mass * (4 * hy * hy + 4 * hz * hz) / 12;
    b->inertia[4] = mass * (4 * hx * hx + 4 * hz * hz) / 12;
    b->inertia[8] = mass * (4 * hx * hx + 4 * hy * hy) / 12;
    m->ngeom = 1;
    sim_geom *ge = &m->geom[0];
    strcpy(ge->name, "box");
    ge->type = SIM_GEOM_BOX; ge->body = 0; ge->friction = mu;
    ge->rot[0] = ge->rot[4] = ge->rot[8] = 1;
    ge->size[0] = hx; ge->size[1] = hy; ge->size[2] = hz;
    char err[128];
    if (sim_model_finalize(m, err, sizeof err)) { fprintf(stderr, "%s\n", err); return; }
    m->opt.solver = solver;
    sim_data *d = sim_data_new(m);
    d->q[2] = hz;
    for (int i = 0; i < 20; i++) sim_step(m, d, dt); /* settle */
    d->u[0] = v0;
    double t_stop_ideal = v0 / (mu * g);
    int n = 0;
    double e_gap_max = 0;
    while (n < (int)(2 * t_stop_ideal / dt) && d->u[0] > 1e-9) {
        sim_step(m, d, dt);
        n++;
        double t = n * dt, ve = v0 - mu * g * t;
        if (ve < 0) ve = 0;
        double e_sim = 0.5 * mass * d->u[0] * d->u[0], e_ideal = 0.5 * mass * ve * ve;
        double gap = (e_sim - e_ideal) / (0.5 * mass * v0 * v0);
        if (fabs(gap) > fabs(e_gap_max)) e_gap_max = gap;
    }
    double t_stop = n * dt, decel = v0 / t_stop;
    printf("{\"bench\":\"box_slide\",\"solver\":\"%s\",\"mu\":%g,\"v0\":%g,\"dt\":%g,\"decel\":%.5f,"
           "\"decel_coulomb\":%.5f,\"decel_gap_rel\":%.5f,\"t_stop_s\":%.4f,\"t_stop_coulomb_s\":%.4f,"
           "\"distance_m\":%.5f,\"distance_coulomb_m\":%.5f,\"energy_gap_max_rel\":%.5f}\n",
           solver_name(solver), mu, v0, dt, decel, mu * g, (decel - mu * g) / (mu * g), t_stop, t_stop_ideal, d->q[0],
           v0 * v0 / (2 * mu * g), e_gap_max);
    fprintf(stderr, "box slide (%s): deceleration %.4f vs mu g %.4f (%+.2f %%), stop %.3f s vs %.3f s, max energy gap %+.2f %% of KE0\n",
            solver_name(solver), decel, mu * g, 100 * (decel - mu * g) / (mu * g), t_stop, t_stop_ideal, 100 * e_gap_max);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* The walk task's contact problems for every solver, from two sources.  First the random-PD scenario (not the
 * env: PD targets of std 1 rad around the nominal pose, redrawn every 50 ms, at the walk task's physics: dt 5 ms, at
 * most 50 sweeps, 16 contacts per world): counts the physics steps whose solve ran to the iteration cap unconverged,
 * those the stall detector handed to ADMM and those answered by the CCP, and times the solver; its fields are the
 * unprefixed ones ("problems":"random_pd_scenario").  Then the anymal_c-walk env itself (256 worlds, one thread,
 * random actions) with the config key solver set to each index: env steps per second, and from the env's own
 * counters (env_counters) the share of its physics steps handed to ADMM and answered by the CCP ("env_*" fields;
 * the scenario's problems stall several times less often than the env's).
 * With --paired A,B only the env throughput of solvers A and B, interleaved over --repeats runs: their ratio. */
/* anymal_c-walk env steps per second, one thread, 256 worlds, random actions, with the config key solver = sv:
 * the median over `repeats` runs of 20 env steps. */
typedef struct {
    double sps;              /* env steps per second */
    double physics_steps;    /* physics steps counted (worlds x env steps x decimation) */
    double fallbacks, ccp;   /* of those, handed to ADMM / answered by the CCP (env_counters) */
} walk_env_result;

static walk_env_result walk_env_sps(int sv, int repeats)
{
    walk_env_result out = {NAN, 0, 0, 0};
    char err[256];
    env_kv kv = {"solver", (double)sv};
    env_t *e = env_new("anymal_c-walk", 256, &kv, 1, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!e) {
        fprintf(stderr, "walk env with solver %d: %s\n", sv, err);
        return out;
    }
    const env_spec *sp = env_get_spec(e);
    const int nw = 256, envsteps = 20;
    float *act = malloc(sizeof(float) * (size_t)nw * sp->act_dim), *obs = malloc(sizeof(float) * (size_t)nw * sp->obs_dim);
    float *rew = malloc(sizeof(float) * nw);
    double *sps = malloc(sizeof(double) * (size_t)repeats);
    uint8_t term[256], trunc[256];
    uint64_t r = 88172645463325252ull;
    env_reset(e, 0, nw, NULL, NULL, obs);
    env_counters cnt = {0};
    env_info info = {.counters = &cnt};
    for (int rep = 0; rep < repeats; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int k = 0; k < envsteps; k++) {
            for (size_t q = 0; q < (size_t)nw * sp->act_dim; q++) {
                r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                act[q] = (float)((r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
            }
            env_step(e, 0, nw, NULL, act, obs, rew, term, trunc, &info);
        }
        sps[rep] = (double)nw * envsteps / ((double)(bench_now_ns() - t0) * 1e-9);
    }
    out.sps = bench_median(sps, repeats);
    out.physics_steps = (double)cnt.world_steps * sp->decimation;
    out.fallbacks = (double)cnt.solver_fallbacks, out.ccp = (double)cnt.solver_ccp_answers;
    free(act), free(obs), free(rew), free(sps);
    env_destroy(&e);
    return out;
}

static int walk(long steps, int repeats)
{
    const double dt = 0.005;
    for (int sv = 0; sv < sim_solver_count(); sv++) {
        if (!sim_solver_at(sv)->solve) continue;
        sim_model *m = load(ENV_SCN_RANDOM, sv, 1);
        if (!m) return 1;
        m->opt.sp.max_iter = 50;
        m->opt.max_contacts = 16;
        sim_data *d = sim_data_new(m);
        env_scenario s;
        char err[256];
        if (env_scenario_init(&s, m, d, ENV_SCN_RANDOM, 42, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        long ncs = 0, cap = 0, unconv = 0, fb = 0, iters = 0, fb_iters = 0, ccp = 0, coulomb = 0;
        double ns = 0, eps_max = 0, ns_fb = 0;
        for (long i = 0; i < steps; i++) {
            env_scenario_control(&s, m, d, dt);
            sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
            if (d->ncon > 0) {
                uint64_t a = bench_now_ns();
                sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
                const double dns = (double)(bench_now_ns() - a);
                ns += dns;
                if (d->stats.fallback) ns_fb += dns, fb_iters += d->stats.iterations;
                ncs++;
                iters += d->stats.iterations;
                cap += d->stats.iterations >= m->opt.sp.max_iter && !d->stats.converged && !d->stats.fallback;
                unconv += !d->stats.converged;
                fb += d->stats.fallback;
                ccp += d->stats.answer == SIM_ANSWER_CCP;
                coulomb += d->stats.answer == SIM_ANSWER_COULOMB;
                sim_contact_metrics_t mt;
                sim_step_metrics(m, d, dt, &mt);
                if (isfinite(mt.eps_abs)) eps_max = fmax(eps_max, mt.eps_abs);
            }
            sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
        }
        sim_data_destroy(&d);
        sim_model_destroy(&m);
        const walk_env_result we = walk_env_sps(sv, repeats);
        const double env_fb = we.physics_steps > 0 ? we.fallbacks / we.physics_steps : 0;
        const double env_ccp = we.physics_steps > 0 ? we.ccp / we.physics_steps : 0;
        printf("{\"bench\":\"solver_walk\",\"solver\":\"%s\",\"problems\":\"random_pd_scenario\",\"dt\":%g,"
               "\"max_iter\":50,\"physics_steps\":%ld,"
               "\"contact_steps\":%ld,\"mean_iterations\":%.3f,\"at_cap_frac\":%.5f,\"unconverged_frac\":%.5f,"
               "\"fallback_frac\":%.5f,\"ccp_answer_frac\":%.5f,\"coulomb_answer_frac\":%.5f,"
               "\"us_solver_per_contact_step\":%.3f,\"fallback_share_of_solver_time\":%.4f,"
               "\"us_per_fallback\":%.2f,\"iterations_per_fallback\":%.1f,\"eps_abs_max\":%.3g,"
               "\"walk_env_steps_per_s_1thread\":%.0f,\"env_physics_steps\":%.0f,\"env_fallback_frac\":%.5f,"
               "\"env_ccp_answer_frac\":%.5f,\"cpu\":\"%s\"}\n",
               solver_name(sv), dt, steps, ncs, ncs ? (double)iters / ncs : 0, ncs ? (double)cap / ncs : 0,
               ncs ? (double)unconv / ncs : 0, ncs ? (double)fb / ncs : 0, ncs ? (double)ccp / ncs : 0,
               ncs ? (double)coulomb / ncs : 0, ncs ? ns / 1e3 / ncs : 0,
               ns > 0 ? ns_fb / ns : 0, fb ? ns_fb / 1e3 / fb : 0, fb ? (double)fb_iters / fb : 0, eps_max, we.sps,
               we.physics_steps, env_fb, env_ccp, bench_cpu());
        fflush(stdout);
        fprintf(stderr, "walk %-19s scenario: sweeps %6.2f  at cap %6.2f %%  unconverged %6.2f %%  fallback %6.2f %%  "
                "CCP answers %6.2f %%  solver %7.3f us | env: %8.0f steps/s  fallback %6.3f %%  CCP answers %6.3f %%\n",
                solver_name(sv), ncs ? (double)iters / ncs : 0, ncs ? 100.0 * cap / ncs : 0,
                ncs ? 100.0 * unconv / ncs : 0, ncs ? 100.0 * fb / ncs : 0, ncs ? 100.0 * ccp / ncs : 0,
                ncs ? ns / 1e3 / ncs : 0, we.sps, 100 * env_fb, 100 * env_ccp);
    }
    return 0;
}

/* The tolerance floor: the walk task's contact problems (as walk(): random PD targets, dt 5 ms, <= 16 contacts, the
 * default RL solver's trajectory, every 10th contact step), each solved by every solver from its warm start with a
 * generous budget (1000 sweeps / iterations, the solver's own error measure) at tolerances 1e-6 .. 1e-14.  Per
 * (solver, tol): the share of problems that converge (error < tol), the median final error, and for
 * coulomb-stall-admm the share handed to ADMM.  A tolerance a solver cannot reach in double precision shows as a
 * collapse of the converged share (and, for the stall detector, as every problem going to ADMM). */
static int tol_floor(long steps, int kind, double dt, int max_iter)
{
    enum { NTOL = 9 };
    static const double tols[NTOL] = {1e-6, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15};
    sim_model *m = load(kind, SIM_SOLVER_COULOMB_STALL_ADMM, 1);
    if (!m) return 1;
    m->opt.sp.max_iter = 50;
    if (kind == ENV_SCN_RANDOM) m->opt.max_contacts = 16;
    sim_data *d = sim_data_new(m);
    env_scenario sc;
    char err[256];
    if (env_scenario_init(&sc, m, d, kind, 42, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    const int cap = (int)(steps / 10) + 1;
    int np = 0, *pn = calloc((size_t)cap, sizeof(int));
    double **pb = calloc((size_t)cap, sizeof(double *));
    long ncs = 0;
    for (long i = 0; i < steps; i++) {
        env_scenario_control(&sc, m, d, dt);
        sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
        const int nc = d->ncon;
        if (nc > 0 && ncs++ % 10 == 0 && np < cap) { /* G, c, mu, warm start */
            const size_t N = 3 * (size_t)nc;
            double *b = malloc(sizeof(double) * (N * N + 2 * N + (size_t)nc));
            memcpy(b, d->G, sizeof(double) * N * N);
            memcpy(b + N * N, d->cfree, sizeof(double) * N);
            memcpy(b + N * N + N, d->lambda, sizeof(double) * N);
            memcpy(b + N * N + 2 * N, d->mu, sizeof(double) * (size_t)nc);
            pn[np] = nc, pb[np++] = b;
        }
        sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
        sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
    }
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    double *errs = malloc(sizeof(double) * (size_t)(np + 1));
    fprintf(stderr, "tol floor: %d %s problems (dt %g s, budget %d); converged share (median final error) at tol", np,
            env_scenario_name(kind), dt, max_iter);
    for (int t = 0; t < NTOL; t++) fprintf(stderr, " %.0e", tols[t]);
    fprintf(stderr, "\n");
    for (int sv = 0; sv < sim_solver_count(); sv++) {
        if (!sim_solver_at(sv)->solve || sv == SIM_SOLVER_IMPACTS) continue; /* impacts: cond-vfpi on these problems */
        fprintf(stderr, "  %-19s", solver_name(sv));
        for (int t = 0; t < NTOL; t++) {
            sim_solver_params p;
            sim_solver_default_params(&p);
            p.max_iter = p.admm_max_iter = max_iter;
            p.tol = tols[t];
            long conv = 0, fb = 0;
            for (int k = 0; k < np; k++) {
                const int n = pn[k];
                const size_t N = 3 * (size_t)n;
                double lam[3 * SIM_SOLVER_MAX_CONTACTS];
                memcpy(lam, pb[k] + N * N + N, sizeof(double) * N);
                sim_solver_stats st;
                sim_solve(sv, n, pb[k], pb[k] + N * N, pb[k] + N * N + 2 * N, lam, &p, &st);
                conv += st.converged;
                fb += st.fallback;
                errs[k] = st.error;
            }
            const double med = bench_median(errs, np);
            printf("{\"bench\":\"solver_tol_floor\",\"scenario\":\"%s\",\"solver\":\"%s\",\"dt\":%g,\"max_iter\":%d,"
                   "\"problems\":%d,\"tol\":%g,\"converged_frac\":%.5f,\"fallback_frac\":%.5f,\"median_error\":%.3g}\n",
                   env_scenario_name(kind), solver_name(sv), dt, max_iter, np, tols[t], np ? (double)conv / np : 0, np ? (double)fb / np : 0, med);
            fprintf(stderr, " %5.1f%%(%.0e)", np ? 100.0 * conv / np : 0, med);
            if (sv == SIM_SOLVER_COULOMB_STALL_ADMM) fprintf(stderr, "[fb %.1f%%]", np ? 100.0 * fb / np : 0);
        }
        fprintf(stderr, "\n");
    }
    for (int k = 0; k < np; k++) free(pb[k]);
    free(pb), free(pn), free(errs);
    return 0;
}

int bench_solver(int argc, char **argv)
{
    bench_pin(0);
    long steps = atol(bench_arg(argc, argv, "--steps", "20000"));
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "5"));
    double dt = atof(bench_arg(argc, argv, "--dt", "0.001"));
    g_erp = atof(bench_arg(argc, argv, "--erp", "0"));
    if (steps <= 0 || repeats <= 0 || !(dt > 0)) { fprintf(stderr, "herd-bench solver: bad --steps/--repeats/--dt\n"); return 2; }
    if (bench_flag(argc, argv, "--vs-mujoco")) {
        if (!bench_solver_vs_mujoco) { fprintf(stderr, "herd-bench solver: built without MuJoCo\n"); return 2; }
        return bench_solver_vs_mujoco(argc, argv);
    }
    const char *paired = bench_arg(argc, argv, "--paired", NULL);
    if (paired) {
        char a[64] = {0};
        const char *comma = strchr(paired, ',');
        if (!comma || comma - paired >= 63) { fprintf(stderr, "herd-bench solver: --paired A,B\n"); return 2; }
        memcpy(a, paired, (size_t)(comma - paired));
        const int sa = solver_from_name(a), sb = solver_from_name(comma + 1);
        if (sa < 0 || sb < 0) { fprintf(stderr, "herd-bench solver: unknown solver in --paired\n"); return 2; }
        double *ra = malloc(sizeof(double) * (size_t)repeats), *rb = malloc(sizeof(double) * (size_t)repeats);
        for (int rep = 0; rep < repeats; rep++) ra[rep] = walk_env_sps(sa, 1).sps, rb[rep] = walk_env_sps(sb, 1).sps;
        double ratio[1000];
        for (int rep = 0; rep < repeats && rep < 1000; rep++) ratio[rep] = rb[rep] / ra[rep];
        const double ma = bench_median(ra, repeats), mb = bench_median(rb, repeats);
        const double mr = bench_median(ratio, repeats < 1000 ? repeats : 1000);
        printf("{\"bench\":\"solver_walk_paired\",\"baseline\":\"%s\",\"solver\":\"%s\",\"repeats\":%d,"
               "\"baseline_env_steps_per_s\":%.0f,\"env_steps_per_s\":%.0f,\"ratio_median\":%.4f,\"cpu\":\"%s\"}\n",
               solver_name(sa), solver_name(sb), repeats, ma, mb, mr, bench_cpu());
        fprintf(stderr, "walk env: %s %.0f vs %s %.0f steps/s; paired ratio median %.3f\n", solver_name(sb), mb,
                solver_name(sa), ma, mr);
        free(ra), free(rb);
        return 0;
    }
    if (bench_flag(argc, argv, "--walk")) return walk(steps, repeats);
    if (bench_flag(argc, argv, "--tol-floor")) {
        const char *scn = bench_arg(argc, argv, "--scenario", "random");
        const int kind = env_scenario_kind_from_name(scn);
        const int mi = atoi(bench_arg(argc, argv, "--max-iter", "1000"));
        if (kind < 0 || mi <= 0) { fprintf(stderr, "herd-bench solver: bad --scenario / --max-iter\n"); return 2; }
        /* default: the walk task's physics step (5 ms) on the random scenario, else the --dt given */
        const double fdt = bench_arg(argc, argv, "--dt", NULL) ? dt : (kind == ENV_SCN_RANDOM ? 0.005 : dt);
        return tol_floor(steps, kind, fdt, mi);
    }
    if (bench_flag(argc, argv, "--compare") || argc == 1) {
        const int kinds[4] = {ENV_SCN_TROT, ENV_SCN_HANG, ENV_SCN_DROP, ENV_SCN_RANDOM};
        double t100k[4][2];
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < 2; s++) {
                run_result r;
                if (run(kinds[k], s == 0 ? SIM_SOLVER_PAPER_BISECTION : SIM_SOLVER_PGS_HWANGBO, 1, steps, repeats, dt, &r)) return 1;
                print_run(kinds[k], s == 0 ? SIM_SOLVER_PAPER_BISECTION : SIM_SOLVER_PGS_HWANGBO, 1, dt, &r);
                t100k[k][s] = r.us_per_step * 1e5 / 1e6;
            }
        /* warm-start savings */
        for (int k = 0; k < 4; k++) {
            run_result w, c;
            run(kinds[k], SIM_SOLVER_PAPER_BISECTION, 1, steps, 1, dt, &w);
            run(kinds[k], SIM_SOLVER_PAPER_BISECTION, 0, steps, 1, dt, &c);
            printf("{\"bench\":\"warmstart\",\"scenario\":\"%s\",\"solver\":\"bisection\",\"mean_iterations_warm\":%.3f,"
                   "\"mean_iterations_cold\":%.3f,\"iterations_saved_frac\":%.4f,\"us_solver_warm\":%.4f,\"us_solver_cold\":%.4f}\n",
                   env_scenario_name(kinds[k]), w.mean_iter, c.mean_iter, c.mean_iter > 0 ? 1 - w.mean_iter / c.mean_iter : 0,
                   w.us_solver, c.us_solver);
            fprintf(stderr, "warm start %-7s: %.2f vs %.2f sweeps cold (%.0f %% saved), solver %.3f vs %.3f us\n",
                    env_scenario_name(kinds[k]), w.mean_iter, c.mean_iter, c.mean_iter > 0 ? 100 * (1 - w.mean_iter / c.mean_iter) : 0,
                    w.us_solver, c.us_solver);
        }
        fprintf(stderr, "\nTable II (s per 100k steps)   trot    hang    drop    random\n");
        fprintf(stderr, "  bisection (herd)           %6.3f  %6.3f  %6.3f  %6.3f\n", t100k[0][0], t100k[1][0], t100k[2][0], t100k[3][0]);
        fprintf(stderr, "  PGS, eqs. 17-18 (herd)     %6.3f  %6.3f  %6.3f  %6.3f\n", t100k[0][1], t100k[1][1], t100k[2][1], t100k[3][1]);
        fprintf(stderr, "  bisection (paper)           1.98    2.57    2.62    1.90\n  PGS (paper)                 1.81    5.92    4.35    2.88\n");
        printf("{\"bench\":\"solver_table2\",\"unit\":\"s_per_100k_steps\",\"bisection\":{\"trot\":%.4f,\"hang\":%.4f,\"drop\":%.4f,\"random\":%.4f},"
               "\"pgs\":{\"trot\":%.4f,\"hang\":%.4f,\"drop\":%.4f,\"random\":%.4f},"
               "\"paper_bisection\":{\"trot\":1.98,\"hang\":2.57,\"drop\":2.62,\"random\":1.90},"
               "\"paper_pgs\":{\"trot\":1.81,\"hang\":5.92,\"drop\":4.35,\"random\":2.88}}\n",
               t100k[0][0], t100k[1][0], t100k[2][0], t100k[3][0], t100k[0][1], t100k[1][1], t100k[2][1], t100k[3][1]);
        const int fig6_solvers[2] = {SIM_SOLVER_PAPER_BISECTION, SIM_SOLVER_COULOMB_BISECTION};
        for (int q = 0; q < 2; q++)
            for (int k = 0; k < 4; k++) {
                long samples = 0, nst = 0, nsl = 0;
                double sst = NAN, ssl = NAN;
                double share = agreement(kinds[k], fig6_solvers[q], steps, dt, &samples, &sst, &nst, &ssl, &nsl);
                printf("{\"bench\":\"solver_agreement\",\"experiment\":\"fig6\",\"scenario\":\"%s\",\"solver\":\"%s\","
                       "\"samples\":%ld,\"within_1pct\":%.4f,\"stick_only_samples\":%ld,\"stick_only_within_1pct\":%.4f,"
                       "\"slipping_samples\":%ld,\"slipping_within_1pct\":%.4f,\"paper_share\":0.996}\n",
                       env_scenario_name(kinds[k]), solver_name(fig6_solvers[q]), samples, share, nst, sst, nsl, ssl);
                fprintf(stderr, "Fig. 6 %-18s %-7s: %6.2f %% of %ld samples within 1 %% of tight PGS (stick-only %.2f %% of %ld, "
                        "slipping %.2f %% of %ld)\n", solver_name(fig6_solvers[q]), env_scenario_name(kinds[k]), 100 * share,
                        samples, 100 * sst, nst, 100 * ssl, nsl);
            }
        box_slide(SIM_SOLVER_PAPER_BISECTION);
        box_slide(SIM_SOLVER_COULOMB_BISECTION);
        return 0;
    }
    const char *sc = bench_arg(argc, argv, "--scenario", "trot");
    const char *so = bench_arg(argc, argv, "--solver", "paper-bisection");
    int kind = env_scenario_kind_from_name(sc);
    if (kind < 0) { fprintf(stderr, "herd-bench solver: unknown scenario '%s' (trot, hang, drop, random, stand)\n", sc); return 2; }
    int solver = solver_from_name(so);
    if (solver < 0) {
        fprintf(stderr, "herd-bench solver: unknown solver '%s'; known:", so);
        list_solvers();
        return 2;
    }
    int warm = !bench_flag(argc, argv, "--no-warmstart");
    run_result r;
    if (run(kind, solver, warm, steps, repeats, dt, &r)) return 1;
    print_run(kind, solver, warm, dt, &r);
    return 0;
}

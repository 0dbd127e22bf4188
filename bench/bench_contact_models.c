/* bench_contact_models.c — the experiments of Le Lidec et al. (2023, "Contact models in robotics: a
 * comparative analysis") and of the bisection paper (Hwangbo, Lee & Hutter 2018, Fig. 6 and Table II),
 * run for every contact solver in the solver table, so that a solver added there appears here untouched.
 *
 *   herd-bench contact-models [--quick] [--only LIST] [--solvers LIST] [--steps N] [--repeats R] [--accuracy EPS]
 *
 * LIST is comma-separated.  Experiments (--only), each printing JSON lines with "bench":"contact-models",
 * "experiment" and "solver":
 *   cube_slide     a cube (8 corners, 4 touching) launched along x on a plane, mu 0.5: trajectory and
 *                  kinetic energy against Coulomb's analytic solution (their Figs. 9-10)
 *   cube_push      a cube at rest pushed at its centre of mass by a force growing linearly to 1.5 mu m g:
 *                  stiction then sliding against the analytic velocity, per-corner forces and the internal
 *                  (mutually cancelling) friction forces (Fig. 11)
 *   heavy_on_light a heavy cube on a light one on the ground, mass ratio 1 .. 1e6, 8 corner contacts,
 *                  simulated 0.5 s by a two-body integrator written here (sim_model has one free root):
 *                  first-step metrics (eps_p, eps_d, eps_c, eps_abs with De Saxce's Gamma) at the solver's
 *                  defaults and at a large budget (5000 iterations, tol 1e-10), sinking over the run (Fig. 12); a run is cut after
 *                  CM_RUN_BUDGET_S of wall clock ("run_truncated")
 *   dt             self-consistency against the time step: a cube sliding and spinning, final pose error
 *                  against the same solver at dt/2^k (Fig. 14)
 *   tol            self-consistency against the stopping tolerance, against the same solver at tol 1e-10
 *                  (CM_SWEEP_TOL, above the per-contact solvers' rounding floor) (Fig. 15); every run capped at
 *                  5000 iterations per step
 *   accuracy       contact problems harvested from the four ANYmal scenarios: eps_abs and time after at most
 *                  K iterations (tol 1e-10), cold (lambda = 0) and warm (the step's warm start) (Figs 16-17);
 *                  budgets not reached within CM_RUN_BUDGET_S of wall clock print as null
 *   fig6           the same problems: share whose impulses are within 1 % of a tightly converged PGS
 *                  (the Coulomb NCP), split into stick-only and slipping steps (bisection paper, Fig. 6)
 *   table2         each solver driving each scenario: time per step (bisection paper, Table II)
 *
 * Metrics are on forces (N) as in the comparative paper: sim_contact_metrics with the step's dt.  Timings
 * are medians over --repeats.  The human table goes to stderr. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env_anymal_model.h"
#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_metrics.h"
#include "sim_step.h"

#define CM_G 9.81
#define CM_MAXC SIM_SOLVER_MAX_CONTACTS
/* The tightest tolerance used (each solver's own measure; Figs. 15-17): small enough that the budget, not the
 * tolerance, ends almost every run, yet above the per-contact solvers' rounding floor, so a converged problem stops
 * instead of looking stalled (`herd-bench solver --tol-floor` shows where, on the walk problems, the exact violation
 * stops and coulomb-stall-admm starts handing problems to ADMM for rounding's sake). */
#define CM_SWEEP_TOL 1e-10
#define CM_RUN_BUDGET_S 10.0 /* wall-clock cap of one heavy-on-light run, and of one accuracy sweep (s) */

/* ---- the solver table (sim_solver.h): every built row, in table order -------------------------------- */

static int cm_nsolvers(void) { return sim_solver_count(); }
static int cm_built(int s) { return sim_solver_at(s) && sim_solver_at(s)->solve; }
static const char *cm_name(int s) { return sim_solver_at(s)->name; }
/* v_pre: the pre-step contact velocity J u (the problems here all have it), for the solvers that read it. */
static int cm_solve(int s, int n, const double *G, const double *c, const double *v_pre, const double *mu,
                    double *lambda, const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solve_pre(s, n, G, c, v_pre, mu, lambda, p, st);
}
static void cm_use(sim_model *m, int s) { m->opt.solver = s; }
/* An iteration budget for every solver: sweeps, iterations, and ADMM's own cap. */
static void cm_budget(sim_solver_params *p, int k)
{
    p->max_iter = k;
    p->admm_max_iter = k;
}
/* The solver the scenarios' reference trajectories are run with (the model's default). */
static int cm_default_solver(void)
{
    sim_model *m = sim_model_new();
    int k = m->opt.solver;
    sim_model_destroy(&m);
    return k;
}
/* The tight reference of Fig. 6: Hwangbo's PGS, whose fixed points are Coulomb NCP solutions. */
static int cm_reference_solver(void)
{
    int k = sim_solver_index("pgs-hwangbo");
    return k >= 0 && cm_built(k) ? k : sim_solver_index("pgs");
}

/* ---- options and output ----------------------------------------------------------------------------- */

typedef struct {
    int quick;
    const char *only, *solvers;
    long steps;
    int repeats;
} cm_opts;

/* 1 if name is in the comma-separated list (NULL list: everything). */
static int cm_listed(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void cm_head(const char *experiment, int s)
{
    printf("{\"bench\":\"contact-models\",\"experiment\":\"%s\",\"solver\":\"%s\"", experiment, cm_name(s));
}

static void cm_array(const char *key, const double *x, int n)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++) {
        if (i) putchar(',');
        if (isfinite(x[i])) printf("%.6g", x[i]);
        else printf("null");
    }
    printf("]");
}

/* Several series of ns samples: keys[k] -> cols[k], nk of them. */
static void cm_series(int nk, const char *const *keys, double *const *cols, int ns)
{
    for (int k = 0; k < nk; k++) cm_array(keys[k], cols[k], ns);
}

static void cm_end(void)
{
    printf("}\n");
    fflush(stdout);
}

/* A JSON string value (quotes, backslashes and control characters escaped). */
static void cm_str(const char *key, const char *v)
{
    printf(",\"%s\":\"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if ((unsigned char)*p < 0x20) printf("\\u%04x", (unsigned char)*p);
        else putchar(*p);
    }
    putchar('"');
}

/* JSON has no NaN / inf: they print as null. */
static void cm_num(const char *key, double x)
{
    if (isfinite(x)) printf(",\"%s\":%.6g", key, x);
    else printf(",\"%s\":null", key);
}

/* ---- the cube ----------------------------------------------------------------------------------------- */

/* A free cube of side a and mass m carrying one box geometry (8 corner features) with friction mu, its
 * faces aligned with the world, resting on the plane z = 0. */
static sim_model *cm_cube(double a, double mass, double mu)
{
    sim_model *m = sim_model_new();
    m->nbody = 1;
    sim_body *b = &m->body[0];
    snprintf(b->name, sizeof b->name, "cube");
    b->parent = -1;
    b->joint_type = SIM_JOINT_FREE;
    b->rot[0] = b->rot[4] = b->rot[8] = 1;
    b->mass = mass;
    b->inertia[0] = b->inertia[4] = b->inertia[8] = mass * a * a / 6;
    m->ngeom = 1;
    sim_geom *g = &m->geom[0];
    snprintf(g->name, sizeof g->name, "cube");
    g->type = SIM_GEOM_BOX;
    g->body = 0;
    g->rot[0] = g->rot[4] = g->rot[8] = 1;
    g->size[0] = g->size[1] = g->size[2] = a / 2;
    g->friction = mu;
    char err[128];
    if (sim_model_finalize(m, err, sizeof err)) {
        fprintf(stderr, "herd-bench contact-models: %s\n", err);
        sim_model_destroy(&m);
    }
    return m;
}

/* Places the cube on the ground and lets it settle (the contacts acquire their warm starts). */
static void cm_cube_settle(const sim_model *m, sim_data *d, double dt)
{
    sim_data_reset(m, d);
    sim_step_forget_contacts(d);
    d->q[2] = m->geom[0].size[2];
    for (int i = 0; i < 50; i++) sim_step(m, d, dt);
    d->time = 0;
}

static double cm_ke(const sim_model *m, const sim_data *d)
{
    const double mass = m->body[0].mass, I = m->body[0].inertia[0];
    double v2 = d->u[0] * d->u[0] + d->u[1] * d->u[1] + d->u[2] * d->u[2];
    double w2 = d->u[3] * d->u[3] + d->u[4] * d->u[4] + d->u[5] * d->u[5];
    return 0.5 * mass * v2 + 0.5 * I * w2;
}

/* Figs. 9-10: a cube launched at v0 along x decelerates at mu g and stops at v0^2 / (2 mu g). */
static void cm_cube_slide(int s, const cm_opts *o)
{
    const double a = 0.2, mass = 1.0, mu = 0.5, v0 = 2.0, dt = 1e-3;
    sim_model *m = cm_cube(a, mass, mu);
    cm_use(m, s);
    sim_data *d = sim_data_new(m);
    cm_cube_settle(m, d, dt);
    d->u[0] = v0;
    const double t_stop = v0 / (mu * CM_G), x0 = d->q[0], ke0 = cm_ke(m, d);
    const int nsteps = (int)((t_stop + 0.1) / dt), every = 10;
    enum { NMAX = 600 };
    double t[NMAX], x[NMAX], xr[NMAX], ke[NMAX], ker[NMAX], vy[NMAX];
    int ns = 0;
    double ke_gap = 0, decel_half = NAN, lateral = 0, yaw = 0;
    long iters = 0, maxit = 0;
    for (int i = 1; i <= nsteps; i++) {
        sim_step(m, d, dt);
        iters += d->stats.iterations;
        maxit += !d->stats.converged;
        double ti = i * dt, ve = fmax(0, v0 - mu * CM_G * ti);
        double tt = fmin(ti, t_stop), xe = v0 * tt - 0.5 * mu * CM_G * tt * tt;
        double ke_e = 0.5 * mass * ve * ve, k = cm_ke(m, d);
        ke_gap = fmax(ke_gap, fabs(k - ke_e) / ke0);
        if (i == (int)(0.5 * t_stop / dt)) decel_half = (v0 - d->u[0]) / ti;
        lateral = fmax(lateral, fabs(d->q[1]));
        yaw = fmax(yaw, fabs(d->u[5]));
        if (i % every == 0 && ns < NMAX) {
            t[ns] = ti, x[ns] = d->q[0] - x0, xr[ns] = xe, ke[ns] = k, ker[ns] = ke_e, vy[ns] = d->u[0];
            ns++;
        }
    }
    double dist = d->q[0] - x0, dist_e = v0 * v0 / (2 * mu * CM_G);
    cm_head("cube_slide", s);
    printf(",\"mu\":%g,\"v0\":%g,\"dt\":%g,\"mass\":%g,\"side\":%g", mu, v0, dt, mass, a);
    cm_num("decel", decel_half);
    cm_num("decel_coulomb", mu * CM_G);
    cm_num("decel_gap_rel", (decel_half - mu * CM_G) / (mu * CM_G));
    cm_num("distance_m", dist);
    cm_num("distance_coulomb_m", dist_e);
    cm_num("distance_gap_rel", (dist - dist_e) / dist_e);
    cm_num("energy_gap_max_rel", ke_gap);
    cm_num("lateral_drift_m", lateral);
    cm_num("yaw_rate_max", yaw);
    cm_num("mean_iterations", (double)iters / nsteps);
    cm_num("nonconverged_steps", (double)maxit);
    static const char *const keys[] = {"t", "x", "x_coulomb", "v", "ke", "ke_coulomb"};
    double *const cols[] = {t, x, xr, vy, ke, ker};
    cm_series(6, keys, cols, ns);
    cm_end();
    fprintf(stderr, "cube_slide     %-18s decel %+.3f %% of mu g, distance %+.3f %%, max |KE gap| %.3f %% of KE0\n",
            cm_name(s), 100 * (decel_half - mu * CM_G) / (mu * CM_G), 100 * (dist - dist_e) / dist_e, 100 * ke_gap);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    (void)o;
}

/* Fig. 11: a force F = rate t along x at the centre of mass.  Coulomb: stuck until F = mu m g (t* = mu m g /
 * rate), then v = rate (t - t*)^2 / (2 m).  While stuck, rigid statics fixes the sums over the front and the
 * back corner pairs (moments about the centre, lever a/2 for both friction and normal forces):
 * N_front = (m g + F) / 2, N_back = (m g - F) / 2; how each pair splits left/right is indeterminate.  The
 * internal force is the friction that cancels between corners: sum |f_T,i| - |sum f_T,i|. */
static void cm_cube_push(int s, const cm_opts *o)
{
    const double a = 0.2, mass = 1.0, mu = 0.5, dt = 1e-3, T = 1.5, rate = 1.5 * mu * mass * CM_G / T;
    const double tstar = mu * mass * CM_G / rate;
    sim_model *m = cm_cube(a, mass, mu);
    cm_use(m, s);
    sim_data *d = sim_data_new(m);
    cm_cube_settle(m, d, dt);
    const int nsteps = (int)(T / dt + 0.5), every = 10;
    enum { NMAX = 200 };
    double t[NMAX], F[NMAX], v[NMAX], vr[NMAX], ff[NMAX], fint[NMAX], nfront[NMAX], nback[NMAX], nfr[NMAX];
    int ns = 0;
    double creep = 0, vgap = 0, int_max = 0, t_slide = NAN, nf_gap = 0;
    for (int i = 1; i <= nsteps; i++) {
        double ti = i * dt, Fi = rate * ti;
        d->tau[0] = Fi;
        sim_step(m, d, dt);
        double fx = 0, fy = 0, fabs_sum = 0, nf = 0, nb = 0;
        for (int k = 0; k < d->ncon; k++) {
            const double *l = d->lambda + 3 * k;
            /* contact frame rows t1, t2, n; the plane's t1 = x, t2 = y */
            double tx = l[0] * d->con[k].frame[0] + l[1] * d->con[k].frame[3];
            double ty = l[0] * d->con[k].frame[1] + l[1] * d->con[k].frame[4];
            fx += tx / dt, fy += ty / dt;
            fabs_sum += sqrt(tx * tx + ty * ty) / dt;
            if (d->con[k].pos[0] > d->q[0]) nf += l[2] / dt;
            else nb += l[2] / dt;
        }
        double internal = fabs_sum - sqrt(fx * fx + fy * fy);
        double ve = ti > tstar ? rate * (ti - tstar) * (ti - tstar) / (2 * mass) : 0;
        /* statics (stuck): friction = -F, N_f - N_b = F (a/2) / (a/2) = F */
        double nf_e = 0.5 * mass * CM_G + 0.5 * fmin(Fi, mu * mass * CM_G);
        if (ti < tstar - dt) {
            creep = fmax(creep, fabs(d->u[0]));
            nf_gap = fmax(nf_gap, fabs(nf - nf_e));
        } else {
            vgap = fmax(vgap, fabs(d->u[0] - ve));
        }
        if (!isfinite(t_slide) && d->u[0] > 1e-4) t_slide = ti;
        int_max = fmax(int_max, internal);
        if (i % every == 0 && ns < NMAX) {
            t[ns] = ti, F[ns] = Fi, v[ns] = d->u[0], vr[ns] = ve, ff[ns] = fx, fint[ns] = internal;
            nfront[ns] = nf, nback[ns] = nb, nfr[ns] = nf_e;
            ns++;
        }
    }
    cm_head("cube_push", s);
    printf(",\"mu\":%g,\"dt\":%g,\"mass\":%g,\"side\":%g,\"force_rate\":%g", mu, dt, mass, a, rate);
    cm_num("t_slide_coulomb", tstar);
    cm_num("t_slide", t_slide);
    cm_num("stick_creep_max", creep);
    cm_num("slide_v_gap_max", vgap);
    cm_num("v_end", d->u[0]);
    cm_num("v_end_coulomb", rate * (T - tstar) * (T - tstar) / (2 * mass));
    cm_num("internal_force_max_N", int_max);
    cm_num("front_normal_gap_max_N", nf_gap);
    static const char *const keys[] = {"t", "force", "v", "v_coulomb", "friction_x", "internal_force", "normal_front",
                                       "normal_back", "normal_front_statics"};
    double *const cols[] = {t, F, v, vr, ff, fint, nfront, nback, nfr};
    cm_series(9, keys, cols, ns);
    cm_end();
    fprintf(stderr, "cube_push      %-18s slides at %.3f s (Coulomb %.3f), creep %.2e m/s, |v - v_C| %.2e m/s, internal %.3g N\n",
            cm_name(s), t_slide, tstar, creep, vgap, int_max);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    (void)o;
}

/* ---- heavy on light: two free cubes and 8 corner contacts, integrated here -------------------------- */

typedef struct {
    double side, m[2], I[2];  /* body 0: light (bottom), 1: heavy (top) */
    double z[2];              /* heights of the centres */
    double u[12];             /* (v, omega) of each body, world frame */
    double G[24 * 24], c[24], vpre[24], mu[8], lambda[24];
} cm_stack;

/* Contact i: 0..3 ground-light at the light cube's bottom corners, 4..7 light-heavy at the heavy cube's
 * bottom corners.  Frame rows x, y, z.  J row (body b) for direction e at lever r: (e, r x e), with sign +
 * for the upper body and - for the lower. */
static void cm_stack_jac(const cm_stack *st, double J[24][12])
{
    const double h = st->side / 2;
    memset(J, 0, sizeof(double) * 24 * 12);
    for (int i = 0; i < 8; i++) {
        double sx = (i & 1) ? h : -h, sy = (i & 2) ? h : -h;
        int upper = i < 4 ? 0 : 1;
        for (int body = 0; body < 2; body++) {
            double sign;
            double r[3] = {sx, sy, 0};
            if (body == upper) sign = 1, r[2] = -h;
            else if (i >= 4 && body == 0) sign = -1, r[2] = h;
            else continue;
            for (int a = 0; a < 3; a++) {
                double e[3] = {a == 0, a == 1, a == 2};
                double *row = J[3 * i + a] + 6 * body;
                double rxe[3] = {r[1] * e[2] - r[2] * e[1], r[2] * e[0] - r[0] * e[2], r[0] * e[1] - r[1] * e[0]};
                for (int k = 0; k < 3; k++) row[k] = sign * e[k], row[3 + k] = sign * rxe[k];
            }
        }
    }
}

static void cm_stack_init(cm_stack *st, double ratio, double mu)
{
    memset(st, 0, sizeof *st);
    st->side = 0.2;
    st->m[0] = 1.0;
    st->m[1] = ratio;
    for (int b = 0; b < 2; b++) st->I[b] = st->m[b] * st->side * st->side / 6;
    st->z[0] = st->side / 2;
    st->z[1] = 1.5 * st->side;
    for (int i = 0; i < 8; i++) st->mu[i] = mu;
}

/* Builds G and c for the next step (free velocity under gravity; gap-aware normal targets as in sim_step). */
static void cm_stack_problem(cm_stack *st, double dt, double J[24][12], double ufree[12])
{
    cm_stack_jac(st, J);
    memcpy(ufree, st->u, sizeof(double) * 12);
    ufree[2] -= CM_G * dt;
    ufree[8] -= CM_G * dt;
    double w[12];
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 3; k++) w[6 * b + k] = 1 / st->m[b], w[6 * b + 3 + k] = 1 / st->I[b];
    for (int i = 0; i < 24; i++) {
        for (int j = 0; j < 24; j++) {
            double g = 0;
            for (int k = 0; k < 12; k++) g += J[i][k] * w[k] * J[j][k];
            st->G[24 * i + j] = g;
        }
        double c = 0, vp = 0;
        for (int k = 0; k < 12; k++) c += J[i][k] * ufree[k], vp += J[i][k] * st->u[k];
        st->c[i] = c;
        st->vpre[i] = vp;
    }
    const double h = st->side / 2;
    double gap[2] = {st->z[0] - h, st->z[1] - st->z[0] - 2 * h};
    for (int i = 0; i < 8; i++) {
        double gp = gap[i < 4 ? 0 : 1];
        if (gp > 0) st->c[3 * i + 2] += gp / dt;
    }
}

static void cm_stack_advance(cm_stack *st, double dt, double J[24][12], const double ufree[12])
{
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 6; k++) {
            int q = 6 * b + k;
            double f = 0;
            for (int i = 0; i < 24; i++) f += J[i][q] * st->lambda[i];
            st->u[q] = ufree[q] + f / (k < 3 ? st->m[b] : st->I[b]);
        }
    st->z[0] += dt * st->u[2];
    st->z[1] += dt * st->u[8];
}

/* Fig. 12: mass ratios 10^0 .. 10^6. */
static void cm_heavy_on_light(int s, const cm_opts *o)
{
    const double dt = 1e-3, mu = 0.5;
    const int nsteps = o->quick ? 200 : 500;
    sim_solver_params def;
    sim_solver_default_params(&def);
    for (int e = 0; e <= 6; e++) {
        double ratio = pow(10, e);
        cm_stack st;
        cm_stack_init(&st, ratio, mu);
        double J[24][12], uf[12];
        /* first step: defaults, then a large budget */
        cm_stack_problem(&st, dt, J, uf);
        sim_contact_metrics_t m1, m2;
        sim_solver_stats s1, s2;
        memset(st.lambda, 0, sizeof st.lambda);
        cm_solve(s, 8, st.G, st.c, st.vpre, st.mu, st.lambda, &def, &s1);
        sim_contact_metrics(8, st.G, st.c, st.mu, st.lambda, dt, &m1);
        sim_solver_params big = def;
        cm_budget(&big, 5000);
        big.tol = CM_SWEEP_TOL;
        double lam2[24] = {0};
        uint64_t t0 = bench_now_ns();
        cm_solve(s, 8, st.G, st.c, st.vpre, st.mu, lam2, &big, &s2);
        double us_big = (double)(bench_now_ns() - t0) / 1e3;
        sim_contact_metrics(8, st.G, st.c, st.mu, lam2, dt, &m2);
        /* the run, warm-started, at the solver's defaults */
        double pen[2] = {0, 0};
        long iters = 0, nonconv = 0;
        int done = 0;
        memset(st.lambda, 0, sizeof st.lambda);
        const uint64_t run_t0 = bench_now_ns();
        for (int i = 0; i < nsteps; i++) {
            /* a wall-clock budget per run: a solver may spend seconds per step on this problem */
            if (bench_now_ns() - run_t0 > (uint64_t)(CM_RUN_BUDGET_S * 1e9)) break;
            done++;
            cm_stack_problem(&st, dt, J, uf);
            sim_solver_stats ss;
            cm_solve(s, 8, st.G, st.c, st.vpre, st.mu, st.lambda, &def, &ss);
            iters += ss.iterations;
            nonconv += !ss.converged;
            cm_stack_advance(&st, dt, J, uf);
            const double h = st.side / 2;
            pen[0] = fmax(pen[0], -(st.z[0] - h));
            pen[1] = fmax(pen[1], -(st.z[1] - st.z[0] - 2 * h));
        }
        const double weight = (st.m[0] + st.m[1]) * CM_G;
        cm_head("heavy_on_light", s);
        printf(",\"mass_ratio\":%g,\"dt\":%g,\"mu\":%g", ratio, dt, mu);
        printf(",\"default_iterations\":%d,\"default_converged\":%d", s1.iterations, s1.converged);
        cm_num("default_eps_abs", m1.eps_abs);
        cm_num("default_eps_abs_rel", m1.eps_abs / weight);
        cm_num("default_eps_c", m1.eps_c);
        cm_num("default_signorini", m1.signorini);
        printf(",\"budget_max_iter\":%d,\"budget_iterations\":%d,\"budget_converged\":%d", big.max_iter, s2.iterations,
               s2.converged);
        cm_num("budget_eps_p", m2.eps_p);
        cm_num("budget_eps_d", m2.eps_d);
        cm_num("budget_eps_c", m2.eps_c);
        cm_num("budget_eps_abs", m2.eps_abs);
        cm_num("budget_eps_abs_rel", m2.eps_abs / weight);
        cm_num("budget_us", us_big);
        cm_num("run_seconds", done * dt);
        printf(",\"run_truncated\":%s", done < nsteps ? "true" : "false");
        cm_num("run_penetration_ground_m", pen[0]);
        cm_num("run_penetration_between_m", pen[1]);
        cm_num("run_mean_iterations", done ? (double)iters / done : NAN);
        cm_num("run_nonconverged_frac", done ? (double)nonconv / done : NAN);
        cm_end();
        fprintf(stderr, "heavy_on_light %-18s ratio 1e%d: eps_abs %.2e (default, %d it) %.2e (%d it), sinking %.2e / %.2e m%s\n",
                cm_name(s), e, m1.eps_abs, s1.iterations, m2.eps_abs, s2.iterations, pen[0], pen[1],
                done < nsteps ? " (run cut by the time budget)" : "");
    }
}

/* ---- self-consistency (Figs. 14-15): a cube sliding and spinning ------------------------------------- */

typedef struct {
    double x, y, yaw;
} cm_pose;

static cm_pose cm_spin_run(int s, double dt, double T, double tol, int max_iter, long *iters)
{
    sim_model *m = cm_cube(0.2, 1.0, 0.5);
    cm_use(m, s);
    if (tol > 0) m->opt.sp.tol = tol;
    if (max_iter > 0) cm_budget(&m->opt.sp, max_iter);
    sim_data *d = sim_data_new(m);
    d->q[2] = m->geom[0].size[2];
    d->u[0] = 1.0, d->u[1] = 0.4, d->u[5] = 6.0;
    int n = (int)(T / dt + 0.5);
    long it = 0;
    for (int i = 0; i < n; i++) {
        sim_step(m, d, dt);
        it += d->stats.iterations;
    }
    cm_pose p = {d->q[0], d->q[1], 2 * atan2(d->q[6], d->q[3])};
    if (iters) *iters = it;
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return p;
}

static double cm_pose_err(cm_pose a, cm_pose b)
{
    /* position error plus the yaw error times the cube's half diagonal (a corner's displacement), m */
    double dy = remainder(a.yaw - b.yaw, 2 * M_PI);
    return hypot(a.x - b.x, a.y - b.y) + fabs(dy) * 0.1 * sqrt(2);
}

static void cm_self_dt(int s, const cm_opts *o)
{
    const double T = 0.512;
    const int nd = o->quick ? 5 : 7;
    double dts[8], err[8];
    double dtref = 8e-3 / pow(2, nd);
    cm_pose ref = cm_spin_run(s, dtref, T, 0, 0, NULL);
    for (int k = 0; k < nd; k++) {
        dts[k] = 8e-3 / pow(2, k);
        err[k] = cm_pose_err(cm_spin_run(s, dts[k], T, 0, 0, NULL), ref);
    }
    cm_head("dt", s);
    printf(",\"T\":%g,\"dt_ref\":%g", T, dtref);
    cm_array("dt", dts, nd);
    cm_array("pose_error_m", err, nd);
    cm_end();
    fprintf(stderr, "dt             %-18s pose error at dt 8 ms %.2e m, 1 ms %.2e m (vs dt %.2g)\n", cm_name(s), err[0],
            err[nd > 3 ? 3 : nd - 1], dtref);
}

static void cm_self_tol(int s, const cm_opts *o)
{
    const double T = 0.512, dt = 1e-3;
    const int nt = o->quick ? 6 : 8;
    double tols[10], err[10], it[10];
    long iref;
    cm_pose ref = cm_spin_run(s, dt, T, CM_SWEEP_TOL, 5000, &iref);
    for (int k = 0; k < nt; k++) {
        long ik;
        tols[k] = pow(10, -1 - k);
        err[k] = cm_pose_err(cm_spin_run(s, dt, T, tols[k], 5000, &ik), ref);
        it[k] = (double)ik / (T / dt);
    }
    cm_head("tol", s);
    printf(",\"T\":%g,\"dt\":%g,\"tol_ref\":%g", T, dt, CM_SWEEP_TOL);
    cm_num("mean_iterations_ref", (double)iref / (T / dt));
    cm_array("tol", tols, nt);
    cm_array("pose_error_m", err, nt);
    cm_array("mean_iterations", it, nt);
    cm_end();
    fprintf(stderr, "tol            %-18s pose error at tol 1e-2 %.2e m, 1e-6 %.2e m (vs %g)\n", cm_name(s), err[1],
            err[nt > 5 ? 5 : nt - 1], CM_SWEEP_TOL);
}

/* ---- the ANYmal scenarios: harvested problems (Figs. 6, 16-17) -------------------------------------- */

typedef struct {
    int n;
    double *G, *c, *vpre, *mu, *warm, *ref; /* vpre: pre-step J u; ref: tight PGS (Coulomb NCP) from cold */
    int slipping;                    /* the reference has a slipping closed contact */
    int ref_converged;               /* the reference reached its tolerance */
    int ref_alternative;             /* 0: the reference is pgs-hwangbo's; 1: cond-vfpi's, 2: pgs's (cm_reference) */
} cm_problem;

typedef struct {
    int kind;
    int np;
    cm_problem *p;
} cm_set;

static const int cm_kinds[4] = {ENV_SCN_TROT, ENV_SCN_HANG, ENV_SCN_DROP, ENV_SCN_RANDOM};

static sim_model *cm_anymal(int kind)
{
    char err[512];
    sim_model *m = env_anymal_load(err, sizeof err);
    if (!m) { fprintf(stderr, "herd-bench contact-models: %s\n", err); return NULL; }
    if (env_scenario_configure_model(m, kind, err, sizeof err)) {
        fprintf(stderr, "herd-bench contact-models: %s\n", err);
        sim_model_destroy(&m);
    }
    return m;
}

/* Tight reference: Hwangbo's PGS to a sweep change below 1e-13 (or 20000 sweeps), from cold.  Where it does not
 * converge (strongly coupled contacts, kappa = mu |G_nT| / G_nn >~ 2.5 on hang: its projected steps cycle and leave
 * a contact penetrating, v_n ~ -0.01 m/s with lambda = 0, which is no Coulomb solution), the other tight Coulomb
 * NCP solvers independent of the per-contact bisection are tried, COND / V-FPI and NCP-PGS, and the candidate
 * with the smallest NCP residual (eps_abs with De Saxce's Gamma, impulses) is kept; ref_converged is its flag. */
static void cm_reference(cm_problem *p)
{
    sim_solver_params tight;
    sim_solver_default_params(&tight);
    tight.tol = 1e-13;
    cm_budget(&tight, 20000);
    sim_solver_stats st;
    memset(p->ref, 0, sizeof(double) * 3 * (size_t)p->n);
    sim_solve(cm_reference_solver(), p->n, p->G, p->c, p->mu, p->ref, &tight, &st);
    p->ref_converged = st.converged;
    p->ref_alternative = 0;
    double v[3 * CM_MAXC];
    if (!st.converged) {
        sim_contact_velocity(p->n, p->G, p->c, p->ref, v);
        double best = sim_contact_eps_abs(p->n, v, p->mu, p->ref, 1);
        const int alt[2] = {sim_solver_index("cond-vfpi"), sim_solver_index("pgs")};
        for (int a = 0; a < 2; a++) {
            if (alt[a] < 0 || !cm_built(alt[a])) continue;
            double lam[3 * CM_MAXC] = {0};
            sim_solver_stats sa;
            sim_solve(alt[a], p->n, p->G, p->c, p->mu, lam, &tight, &sa);
            sim_contact_velocity(p->n, p->G, p->c, lam, v);
            const double e = sim_contact_eps_abs(p->n, v, p->mu, lam, 1);
            if (e < best) {
                best = e;
                memcpy(p->ref, lam, sizeof(double) * 3 * (size_t)p->n);
                p->ref_converged = sa.converged;
                p->ref_alternative = 1 + a;
            }
        }
    }
    sim_contact_velocity(p->n, p->G, p->c, p->ref, v);
    p->slipping = 0;
    for (int i = 0; i < p->n; i++)
        if (p->ref[3 * i + 2] > 1e-9 && hypot(v[3 * i], v[3 * i + 1]) > 1e-5) p->slipping = 1;
}

/* Runs the scenario with the default solver for steps steps at 1 ms and keeps every stride-th step that has
 * an active contact. */
static int cm_harvest(int kind, long steps, int stride, cm_set *set)
{
    memset(set, 0, sizeof *set);
    set->kind = kind;
    sim_model *m = cm_anymal(kind);
    if (!m) return -1;
    cm_use(m, cm_default_solver());
    sim_data *d = sim_data_new(m);
    env_scenario sc;
    char err[256];
    if (env_scenario_init(&sc, m, d, kind, 42, err, sizeof err)) {
        fprintf(stderr, "herd-bench contact-models: %s\n", err);
        sim_data_destroy(&d);
        sim_model_destroy(&m);
        return -1;
    }
    const double dt = 1e-3;
    int cap = (int)(steps / stride) + 1;
    set->p = calloc((size_t)cap, sizeof(cm_problem));
    long contact_steps = 0;
    for (long i = 0; i < steps; i++) {
        env_scenario_control(&sc, m, d, dt);
        sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
        int nc = d->ncon;
        int keep = nc > 0 && nc <= CM_MAXC && (contact_steps++ % stride) == 0 && set->np < cap;
        cm_problem *p = keep ? &set->p[set->np] : NULL;
        if (p) {
            size_t N = 3 * (size_t)nc;
            p->n = nc;
            p->G = malloc(sizeof(double) * (N * N + 5 * N + (size_t)nc));
            p->c = p->G + N * N;
            p->vpre = p->c + N;
            p->warm = p->vpre + N;
            p->ref = p->warm + N;
            p->mu = p->ref + N + N;
            memcpy(p->G, d->G, sizeof(double) * N * N);
            memcpy(p->c, d->cfree, sizeof(double) * N);
            memcpy(p->vpre, sim_step_pre_velocity(m, d), sizeof(double) * N);
            memcpy(p->warm, d->lambda, sizeof(double) * N);
            memcpy(p->mu, d->mu, sizeof(double) * (size_t)nc);
        }
        sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
        sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
        if (p) {
            /* keep only problems with an active contact (as Fig. 6 does) */
            int active = 0;
            for (int k = 0; k < nc; k++) active |= d->lambda[3 * k + 2] > 0;
            if (active) {
                cm_reference(p);
                set->np++;
            } else {
                free(p->G);
            }
        }
    }
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return 0;
}

static void cm_set_free(cm_set *set)
{
    for (int i = 0; i < set->np; i++) free(set->p[i].G);
    free(set->p);
    memset(set, 0, sizeof *set);
}

static double cm_rel_diff(int n, const double *a, const double *b)
{
    double num = 0, den = 0;
    for (int k = 0; k < 3 * n; k++) num += (a[k] - b[k]) * (a[k] - b[k]), den += b[k] * b[k];
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

/* Fig. 6, split into stick-only and slipping problems. */
static void cm_fig6(int s, const cm_set *set)
{
    sim_solver_params p;
    sim_solver_default_params(&p);
    long n[2] = {0, 0}, ok[2] = {0, 0}, ref_unconverged = 0, ref_alternative = 0, impacts = 0;
    double lam[3 * CM_MAXC];
    double *rd = malloc(sizeof(double) * (size_t)(set->np + 1));
    for (int i = 0; i < set->np; i++) {
        const cm_problem *pr = &set->p[i];
        memcpy(lam, pr->warm, sizeof(double) * 3 * (size_t)pr->n);
        sim_solver_stats st;
        cm_solve(s, pr->n, pr->G, pr->c, pr->vpre, pr->mu, lam, &p, &st);
        impacts += st.impact;
        double r = cm_rel_diff(pr->n, lam, pr->ref);
        rd[i] = r;
        ref_unconverged += !pr->ref_converged;
        ref_alternative += pr->ref_alternative != 0;
        n[pr->slipping]++;
        ok[pr->slipping] += r < 0.01;
    }
    long all = n[0] + n[1], okall = ok[0] + ok[1];
    double med = bench_median(rd, set->np);
    cm_head("fig6", s);
    printf(",\"scenario\":\"%s\",\"samples\":%ld,\"samples_stick\":%ld,\"samples_slip\":%ld", env_scenario_name(set->kind),
           all, n[0], n[1]);
    cm_num("within_1pct", all ? (double)okall / all : NAN);
    cm_num("within_1pct_stick", n[0] ? (double)ok[0] / n[0] : NAN);
    cm_num("within_1pct_slip", n[1] ? (double)ok[1] / n[1] : NAN);
    cm_num("median_rel_diff", med);
    cm_num("impact_frac", all ? (double)impacts / all : NAN); /* steps resolved as set-valued impacts ("impacts") */
    printf(",\"reference_unconverged\":%ld,\"reference_alternative\":%ld,\"paper_share\":0.996", ref_unconverged,
           ref_alternative);
    cm_end();
    fprintf(stderr, "fig6 %-7s     %-18s within 1 %%: %6.2f %% (stick-only %6.2f %% of %ld, slipping %6.2f %% of %ld)\n",
            env_scenario_name(set->kind), cm_name(s), all ? 100.0 * okall / all : NAN, n[0] ? 100.0 * ok[0] / n[0] : NAN,
            n[0], n[1] ? 100.0 * ok[1] / n[1] : NAN, n[1]);
    free(rd);
}

/* Figs. 16-17: eps_abs (N, forces) and time after at most K iterations (tol CM_SWEEP_TOL), cold and warm. */
#define CM_NBUDGET 10
static void cm_accuracy(int s, const cm_set *set, int repeats, double target)
{
    static const int budgets[CM_NBUDGET] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    const double dt = 1e-3;
    double *eps = malloc(sizeof(double) * (size_t)(set->np + 1)), *own = malloc(sizeof(double) * (size_t)(set->np + 1));
    double *rep = malloc(sizeof(double) * (size_t)repeats);
    double lam[3 * CM_MAXC];
    for (int warm = 0; warm < 2; warm++) {
        double med[CM_NBUDGET], p90[CM_NBUDGET], us[CM_NBUDGET], it[CM_NBUDGET], omed[CM_NBUDGET];
        const uint64_t sweep_t0 = bench_now_ns();
        for (int b = 0; b < CM_NBUDGET; b++) {
            if (bench_now_ns() - sweep_t0 > (uint64_t)(CM_RUN_BUDGET_S * 1e9)) { /* the larger budgets: not run */
                med[b] = p90[b] = us[b] = it[b] = omed[b] = NAN;
                continue;
            }
            sim_solver_params p;
            sim_solver_default_params(&p);
            cm_budget(&p, budgets[b]);
            p.tol = CM_SWEEP_TOL;
            long itsum = 0;
            for (int r = 0; r < repeats; r++) {
                uint64_t ns = 0;
                itsum = 0;
                for (int i = 0; i < set->np; i++) {
                    const cm_problem *pr = &set->p[i];
                    if (warm) memcpy(lam, pr->warm, sizeof(double) * 3 * (size_t)pr->n);
                    else memset(lam, 0, sizeof(double) * 3 * (size_t)pr->n);
                    sim_solver_stats st;
                    uint64_t t0 = bench_now_ns();
                    cm_solve(s, pr->n, pr->G, pr->c, pr->vpre, pr->mu, lam, &p, &st);
                    ns += bench_now_ns() - t0;
                    itsum += st.iterations;
                    if (r == 0) {
                        sim_contact_metrics_t mt;
                        sim_contact_metrics(pr->n, pr->G, pr->c, pr->mu, lam, dt, &mt);
                        eps[i] = mt.eps_abs;
                        own[i] = st.error;
                    }
                }
                rep[r] = (double)ns / 1e3 / (set->np ? set->np : 1);
            }
            us[b] = bench_median(rep, repeats);
            it[b] = set->np ? (double)itsum / set->np : 0;
            p90[b] = bench_percentile(eps, set->np, 90);
            med[b] = bench_percentile(eps, set->np, 50);
            omed[b] = bench_percentile(own, set->np, 50);
        }
        double k_target = NAN, us_target = NAN;
        for (int b = 0; b < CM_NBUDGET; b++)
            if (med[b] <= target) { k_target = budgets[b]; us_target = us[b]; break; }
        double kk[CM_NBUDGET];
        for (int b = 0; b < CM_NBUDGET; b++) kk[b] = budgets[b];
        cm_head("accuracy", s);
        printf(",\"scenario\":\"%s\",\"start\":\"%s\",\"samples\":%d,\"dt\":%g", env_scenario_name(set->kind),
               warm ? "warm" : "cold", set->np, dt);
        cm_array("max_iter", kk, CM_NBUDGET);
        cm_array("iterations", it, CM_NBUDGET);
        cm_array("eps_abs_median", med, CM_NBUDGET);
        cm_array("eps_abs_p90", p90, CM_NBUDGET);
        cm_array("us_per_solve", us, CM_NBUDGET);
        cm_array("own_error_median", omed, CM_NBUDGET); /* the solver's own termination measure */
        cm_num("target_eps_abs", target);
        cm_num("iterations_to_target", k_target);
        cm_num("us_to_target", us_target);
        cm_end();
        fprintf(stderr, "accuracy %-7s %-18s %s: median eps_abs %.2e @1 %.2e @16 %.2e @512; to %.0e N: %s%.0f it, %.2f us\n",
                env_scenario_name(set->kind), cm_name(s), warm ? "warm" : "cold", med[0], med[4], med[9], target,
                isfinite(k_target) ? "" : "never ", isfinite(k_target) ? k_target : 512.0, us_target);
    }
    free(eps);
    free(own);
    free(rep);
}

/* Table II: each solver drives each scenario (its own trajectory); whole step and solver alone, us. */
static void cm_table2(int s, int kind, long steps, int repeats)
{
    sim_model *m = cm_anymal(kind);
    if (!m) return;
    cm_use(m, s);
    sim_data *d = sim_data_new(m);
    env_scenario sc;
    char err[256];
    const double dt = 1e-3;
    if (env_scenario_init(&sc, m, d, kind, 42, err, sizeof err)) {
        fprintf(stderr, "herd-bench contact-models: %s\n", err);
        sim_data_destroy(&d);
        sim_model_destroy(&m);
        return;
    }
    double *rs = malloc(sizeof(double) * (size_t)repeats), *rv = malloc(sizeof(double) * (size_t)repeats);
    long iters = 0, nonconv = 0, csteps = 0, resets = 0, impacts = 0;
    double dx = 0;
    for (int r = 0; r < repeats; r++) {
        env_scenario_init(&sc, m, d, kind, 42, err, sizeof err);
        uint64_t tsolve = 0, tctl = 0, t0 = bench_now_ns();
        iters = nonconv = csteps = impacts = 0;
        dx = 0;
        for (long i = 0; i < steps; i++) {
            uint64_t a = bench_now_ns();
            env_scenario_control(&sc, m, d, dt); /* may reset the world: the distance counts within episodes */
            tctl += bench_now_ns() - a;
            double x_before = d->q[0];
            sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
            int nc = d->ncon;
            uint64_t c0 = bench_now_ns();
            sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
            tsolve += bench_now_ns() - c0;
            sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE);
            dx += d->q[0] - x_before;
            if (nc > 0) {
                csteps++;
                iters += d->stats.iterations;
                nonconv += !d->stats.converged;
                impacts += d->stats.impact;
            }
        }
        uint64_t t1 = bench_now_ns();
        rs[r] = (double)(t1 - t0 - tctl) / 1e3 / steps;
        rv[r] = (double)tsolve / 1e3 / steps;
        resets = sc.resets;
    }
    double us_step = bench_median(rs, repeats), us_solver = bench_median(rv, repeats);
    double speed = dx / (steps * dt);
    cm_head("table2", s);
    printf(",\"scenario\":\"%s\",\"steps\":%ld,\"dt\":%g", env_scenario_name(kind), steps, dt);
    cm_num("us_per_step", us_step);
    cm_num("us_solver", us_solver);
    cm_num("s_per_100k_steps", us_step * 0.1);
    cm_num("mean_iterations", csteps ? (double)iters / csteps : 0);
    cm_num("nonconverged_frac", csteps ? (double)nonconv / csteps : 0);
    cm_num("impact_frac", csteps ? (double)impacts / csteps : 0); /* contact steps resolved as impacts */
    cm_num("mean_forward_speed", speed);
    printf(",\"resets\":%ld,\"cpu\":\"%s\"", resets, bench_cpu());
    cm_end();
    fprintf(stderr, "table2 %-7s   %-18s %7.3f us/step (solver %6.3f us), %5.2f it, %.2f %% capped, %.2f %% impacts, "
                    "%ld resets, %.2f m/s\n",
            env_scenario_name(kind), cm_name(s), us_step, us_solver, csteps ? (double)iters / csteps : 0,
            csteps ? 100.0 * nonconv / csteps : 0, csteps ? 100.0 * impacts / csteps : 0, resets, speed);
    free(rs);
    free(rv);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* ---- driver ------------------------------------------------------------------------------------------- */

int bench_contact_models(int argc, char **argv)
{
    if (bench_flag(argc, argv, "--help") || bench_flag(argc, argv, "-h")) {
        printf("usage: herd-bench contact-models [--quick] [--only LIST] [--solvers LIST] [--steps N] [--repeats R]\n"
               "                                 [--accuracy EPS]\n"
               "  experiments (--only, comma-separated): cube_slide cube_push heavy_on_light dt tol accuracy fig6 table2\n"
               "  solvers (--solvers): the built rows of sim_solver.h's table:");
        for (int s = 0; s < cm_nsolvers(); s++)
            if (cm_built(s)) printf(" %s", cm_name(s));
        printf("\n  --steps: ANYmal scenario steps at 1 ms (10000; --quick 4000); --accuracy: Figs. 16-17 target (1e-3 N)\n");
        return 0;
    }
    bench_pin(0);
    cm_opts o;
    o.quick = bench_flag(argc, argv, "--quick");
    o.only = bench_arg(argc, argv, "--only", NULL);
    o.solvers = bench_arg(argc, argv, "--solvers", NULL);
    o.steps = atol(bench_arg(argc, argv, "--steps", o.quick ? "4000" : "10000"));
    o.repeats = atoi(bench_arg(argc, argv, "--repeats", o.quick ? "1" : "3"));
    double target = atof(bench_arg(argc, argv, "--accuracy", "1e-3"));
    if (o.steps <= 0 || o.repeats <= 0 || !(target > 0)) {
        fprintf(stderr, "herd-bench contact-models: bad --steps / --repeats / --accuracy\n");
        return 2;
    }
    int use[64], nuse = 0;
    for (int s = 0; s < cm_nsolvers() && nuse < 64; s++)
        if (cm_built(s) && cm_listed(o.solvers, cm_name(s))) use[nuse++] = s;
    if (!nuse) {
        fprintf(stderr, "herd-bench contact-models: no solver matches --solvers %s; known:", o.solvers);
        for (int s = 0; s < cm_nsolvers(); s++)
            if (cm_built(s)) fprintf(stderr, " %s", cm_name(s));
        fprintf(stderr, "\n");
        return 2;
    }
    /* what each solver solves, from its table row (sim_solver.h) */
    for (int k = 0; k < nuse; k++) {
        cm_head("model", use[k]);
        cm_str("model_doc", sim_solver_at(use[k])->model_doc);
        cm_end();
        fprintf(stderr, "%-18s %s\n", cm_name(use[k]), sim_solver_at(use[k])->model_doc);
    }
    fprintf(stderr, "\n");
    static const char *const exps[] = {"cube_slide", "cube_push", "heavy_on_light", "dt", "tol", "accuracy", "fig6", "table2"};
    if (o.only)
        for (const char *p = o.only; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int known = 0;
            for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++)
                known |= strlen(exps[k]) == len && !strncmp(exps[k], p, len);
            if (!known) {
                fprintf(stderr, "herd-bench contact-models: unknown experiment '%.*s' (cube_slide, cube_push, "
                                "heavy_on_light, dt, tol, accuracy, fig6, table2)\n", (int)len, p);
                return 2;
            }
            if (!e) break;
            p = e + 1;
        }
    for (int k = 0; k < nuse; k++) {
        if (cm_listed(o.only, "cube_slide")) cm_cube_slide(use[k], &o);
        if (cm_listed(o.only, "cube_push")) cm_cube_push(use[k], &o);
        if (cm_listed(o.only, "heavy_on_light")) cm_heavy_on_light(use[k], &o);
        if (cm_listed(o.only, "dt")) cm_self_dt(use[k], &o);
        if (cm_listed(o.only, "tol")) cm_self_tol(use[k], &o);
    }
    if (cm_listed(o.only, "accuracy") || cm_listed(o.only, "fig6")) {
        for (int q = 0; q < 4; q++) {
            cm_set set;
            if (cm_harvest(cm_kinds[q], o.steps, o.quick ? 20 : 10, &set)) return 1;
            int nslip = 0, nclosing = 0, narriving = 0;
            for (int i = 0; i < set.np; i++) {
                int closing = 0, arriving = 0;
                for (int k = 0; k < set.p[i].n; k++) {
                    const double cn = set.p[i].c[3 * k + 2];
                    closing += cn < -0.05;
                    arriving += set.p[i].vpre[3 * k + 2] < -0.05 && cn < -0.05; /* the impacts solver's test */
                }
                nslip += set.p[i].slipping;
                nclosing += closing >= 2;
                narriving += arriving >= 2;
            }
            cm_head("harvest", cm_default_solver());
            printf(",\"scenario\":\"%s\",\"steps\":%ld,\"problems\":%d,\"slipping\":%d,\"two_closing_faster_than_5cm_s\":%d"
                   ",\"two_closing_and_arriving_faster_than_5cm_s\":%d",
                   env_scenario_name(cm_kinds[q]), o.steps, set.np, nslip, nclosing, narriving);
            cm_end();
            fprintf(stderr, "harvest %-7s: %d problems along the %s trajectory, %d with a slipping contact, %d with two "
                            "contacts closing faster than 0.05 m/s (free velocity c), %d with two that also arrive that fast (pre-step J u)\n",
                    env_scenario_name(cm_kinds[q]), set.np, cm_name(cm_default_solver()), nslip, nclosing, narriving);
            for (int k = 0; k < nuse; k++) {
                if (cm_listed(o.only, "fig6")) cm_fig6(use[k], &set);
                if (cm_listed(o.only, "accuracy")) {
                    /* the accuracy sweep on a subset: every 4th problem */
                    cm_set sub = set;
                    cm_problem *pp = malloc(sizeof(cm_problem) * (size_t)(set.np / 4 + 1));
                    sub.np = 0;
                    for (int i = 0; i < set.np; i += 4) pp[sub.np++] = set.p[i];
                    sub.p = pp;
                    cm_accuracy(use[k], &sub, o.repeats, target);
                    free(pp);
                }
            }
            cm_set_free(&set);
        }
    }
    if (cm_listed(o.only, "table2"))
        for (int q = 0; q < 4; q++)
            for (int k = 0; k < nuse; k++) cm_table2(use[k], cm_kinds[q], o.steps, o.repeats);
    return 0;
}

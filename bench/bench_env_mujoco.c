/* herd-bench env --vs-mujoco — an ANYmal task's env steps in herd and in MuJoCo 2.2, same process, same work.
 *
 *   herd-bench env --vs-mujoco [--env anymal_c-walk] [--worlds 32] [--steps 50] [--repeats 5] [--warmup 25]
 *                              [--stand-seconds 5] [--grid full|quick]
 *
 * The workload is herd-bench env's: W worlds reset with seeds 1000 + i % 32, 25 untimed warm-up env steps,
 * then S timed env steps with the same 8 sets of pseudo-random actions in [-1, 1] in turn.
 *   herd    the task itself through env_step (PD, 4 x 5 ms physics, observation, reward, noise, autoreset),
 *           on one thread, with the randomization that MuJoCo cannot follow per world switched off by
 *           overrides: friction_min = friction_max = the model's friction, added mass 0, no pushes.
 *   MuJoCo  mj_peer_new_with_floor (mj_peer.h): the same URDF through MuJoCo's importer, herd's inertias and
 *           joint damping, a plane floor with which exactly herd's 13 colliding geometries collide (feet
 *           spheres, shank cylinders, thigh boxes, base box: MuJoCo has a collider for each against a plane),
 *           herd's friction, joint limits off as in herd, timestep = the task's sim_dt.  One mjData per world,
 *           started from herd's state after the same reset (the task's randomized initial pose and velocity).
 *           Per env step: target = action_scale clip(a) + default pose, then decimation x (the same clipped PD
 *           law from MuJoCo's own state into qfrc_applied, mj_step); a world ends, and restarts from its initial
 *           state, when the task would end it (walk: a base contact force over 1 N after the last substep;
 *           both: the episode's time limit) or its state becomes non-finite.  No observation or reward is
 *           computed on this side: herd's figure includes them (a few % of its step), MuJoCo's does not.
 * MuJoCo's configuration: its defaults (as compiled: Newton, 100 iterations, tolerance 1e-8, pyramidal cone,
 * no noslip), and the fastest configuration of a grid (solver PGS / CG / Newton x iterations x pyramidal /
 * elliptic cone; noslip off; --grid quick: fewer iterations) that still keeps the robot standing under a
 * zero-action policy: from the initial states of the first 8 worlds whose herd run stands (upright, base over
 * 0.35 m after --stand-seconds of zero actions), MuJoCo must end upright (z axis within 18 degrees of
 * vertical), with no base contact, finite, without warnings and with the base within 8 cm of herd's height
 * (MuJoCo's soft contacts let a stance settle lower than herd's hard ones: on walk its converged elliptic
 * solution ends ~5 cm below herd, pyramidal ones ~11 cm, the feet creeping outward).
 * The grid is screened with one short timing each; herd, the screen's 3 fastest standing configurations and the
 * defaults are then timed in turn, R repeats each, and the finalist with the best median is "MuJoCo's fastest".
 * herd's own grid is judged the same way, for a symmetric figure: the per-contact solvers (coulomb-stall-admm,
 * coulomb-bisection, paper-bisection) capped at 1, 2, 3, 5 or 10 sweeps (--grid quick: 1, 3), each standing like
 * the task's defaults under zero actions (not ended, upright, base within 8 cm of the defaults' height), the 3
 * fastest timed beside the rest: "herd_fastest" and ratio_fastest_vs_fastest.  The headline ratios (ratio_vs_mujoco,
 * ratio_vs_mujoco_defaults) stay herd's defaults (50 sweeps, 1e-6) against MuJoCo's fastest and defaults: a capped
 * solve leaves Coulomb's law unconverged, which standing still does not show.
 * Accuracy (bench_accuracy.h): every configuration of both grids, and both engines' defaults, against its own engine's
 * converged solve on the same saved states: MuJoCo's are the states before each physics step of env steps 5 .. 12 of
 * the first 8 worlds run with its defaults (Newton, converged at the compiled tolerance: the warm start is a converged
 * previous step's), its reference Newton with 1000 iterations to 1e-10 and the configuration's cone; herd's are the
 * states of the first 32 worlds after env steps 5 .. 12 of its defaults (with the last physics step's torques), its
 * reference the task's solver to 1e-10 with up to 10000 sweeps.  Per configuration: median and p90 over the states of
 * the relative error of the stacked per-contact impulses and of the velocity after the step ("mujoco_grid",
 * "herd_grid", "..._accuracy").  The accurate headline, ratio_vs_mujoco_accurate: herd's defaults against the fastest
 * (median of the repeats) of the 3 fastest (screen) standing MuJoCo configurations whose median impulse error is at
 * most 1 % ("mujoco_accurate"; null when none is).
 * Clocks: the stepping thread's CPU time (the ratios: robust to a loaded machine's time slicing) and wall time
 * (..._wall figures).  Prints one JSON line ("bench": "env_vs_mujoco") and a table; medians over repeats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_env_work.h"
#include "mj_peer.h"
#include "bench_accuracy.h"     /* after MuJoCo's header: its MuJoCo part */
#include "env.h"
#include "env_anymal_model.h"
#include "sim_model.h"
#include "sim_solver.h"

#define EVM_MODEL_PATH "envs/models/anymal_c.urdf"
#define EVM_STAND_WORLDS 8
#define EVM_STAND_TOL 0.08      /* m: MuJoCo's base height vs herd's after the zero-action run */
#define EVM_UPRIGHT 0.95        /* world z of the base z axis */
#define EVM_FINALISTS 3         /* fastest standing configurations of a grid's screen timed in the repeats */
#define EVM_ACC_WORLDS 8        /* accuracy: states of the first worlds ... */
#define EVM_ACC_SKIP 4          /* ... after this many env steps ... */
#define EVM_ACC_STEPS 8         /* ... over this many (MuJoCo: every physics step; herd: every env step) */
#define EVM_ACC_BOUND 0.01      /* the headline's MuJoCo configuration: median impulse error at most this */
#define EVM_REF_ITER 1000       /* MuJoCo's converged reference: Newton, this many iterations, ... */
#define EVM_REF_TOL 1e-10       /* ... this tolerance (herd's: its default solver to this tolerance, ...) */
#define EVM_HREF_ITER 10000     /* ... at most this many sweeps) */

typedef struct {
    int solver, iterations, cone;
} evm_cfg;

typedef struct {
    mj_peer *p;
    mjData **d;                 /* one per world */
    int nw, ad, dec, max_steps, walk;
    int qadr[ENV_ANYMAL_NJ], dof[ENV_ANYMAL_NJ];
    double q_default[ENV_ANYMAL_NJ], kp, kd, tau_max, scale, clip;
    int base_geom;              /* MuJoCo geom id of the base box, -1 if none */
    double *q0, *u0;            /* nw x nq / nv: herd's state after reset, herd order */
    int *steps;                 /* env steps in the current episode */
    long resets, failures;
    double *snap;               /* when set: the state before each mj_step is saved here (bench_mj_save_state), up
                                   to snap_cap states */
    int nsnap, snap_cap;
} evm_mj;

/* MuJoCo's warnings (an unstable grid configuration) go to stderr, once each, not into the JSON on stdout. */
static void evm_warning(const char *msg)
{
    static char last[256];
    if (strncmp(msg, last, sizeof last - 1)) fprintf(stderr, "  MuJoCo: %s\n", msg);
    snprintf(last, sizeof last, "%s", msg);
}

static const char *evm_solver(int s) { return s == mjSOL_PGS ? "PGS" : s == mjSOL_CG ? "CG" : s == mjSOL_NEWTON ? "Newton" : "?"; }
static const char *evm_cone(int c) { return c == mjCONE_PYRAMIDAL ? "pyramidal" : c == mjCONE_ELLIPTIC ? "elliptic" : "?"; }

static void evm_apply(evm_mj *w, const evm_cfg *c)
{
    w->p->m->opt.solver = c->solver;
    w->p->m->opt.iterations = c->iterations;
    w->p->m->opt.cone = c->cone;
    w->p->m->opt.noslip_iterations = 0;
}

static void evm_restart(evm_mj *w, int i)
{
    mjData *d = w->d[i];
    mj_resetData(w->p->m, d);
    for (int k = 0; k < w->p->nq; k++) d->qpos[w->p->qadr[k]] = w->q0[(size_t)i * w->p->nq + k];
    for (int k = 0; k < w->p->nv; k++) d->qvel[w->p->dofadr[k]] = w->u0[(size_t)i * w->p->nv + k];
    w->steps[i] = 0;
}

static int evm_warnings(const mjData *d)
{
    int n = 0;
    for (int k = 0; k < mjNWARNING; k++) n += d->warning[k].number;
    return n;
}

/* 1 if a base contact carries more than 1 N (the walk task's termination). */
static int evm_base_contact(const evm_mj *w, const mjData *d)
{
    if (w->base_geom < 0) return 0;
    for (int c = 0; c < d->ncon; c++) {
        if (d->contact[c].geom1 != w->base_geom && d->contact[c].geom2 != w->base_geom) continue;
        double f[6];
        mj_contactForce(w->p->m, d, c, f);
        if (sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) > 1.0) return 1;
    }
    return 0;
}

/* One env step of MuJoCo world i with action a (act_dim floats; NULL = zero action).  Returns 1 if the
 * world ended (and was restarted when restart is set). */
static int evm_env_step(evm_mj *w, int i, const float *a, int restart)
{
    const mjModel *m = w->p->m;
    mjData *d = w->d[i];
    double target[ENV_ANYMAL_NJ];
    for (int j = 0; j < ENV_ANYMAL_NJ; j++) {
        double x = a ? a[j] : 0.0;
        target[j] = w->scale * (x > w->clip ? w->clip : x < -w->clip ? -w->clip : x) + w->q_default[j];
    }
    for (int k = 0; k < w->dec; k++) {
        for (int j = 0; j < ENV_ANYMAL_NJ; j++) {
            double t = w->kp * (target[j] - d->qpos[w->qadr[j]]) - w->kd * d->qvel[w->dof[j]];
            d->qfrc_applied[w->dof[j]] = t > w->tau_max ? w->tau_max : t < -w->tau_max ? -w->tau_max : t;
        }
        if (w->snap && w->nsnap < w->snap_cap) bench_mj_save_state(m, d, w->snap + (size_t)w->nsnap++ * bench_mj_state_size(m));
        mj_step(m, d);
    }
    int bad = !isfinite(d->qpos[w->p->qadr[2]]) || evm_warnings(d) > 0;
    int ended = bad || (w->walk && evm_base_contact(w, d)) || ++w->steps[i] >= w->max_steps;
    if (ended && restart) {
        w->resets++;
        w->failures += bad;
        evm_restart(w, i);
    }
    return ended;
}

typedef struct {
    double cpu_s, wall_s;
} evm_time;

/* MuJoCo: every world from its initial state, `warmup` untimed env steps, then `steps` timed ones. */
static evm_time evm_time_mujoco(evm_mj *w, const float *act, int warmup, int steps)
{
    size_t na = (size_t)w->nw * w->ad;
    for (int i = 0; i < w->nw; i++) evm_restart(w, i);
    for (int s = 0; s < warmup; s++)
        for (int i = 0; i < w->nw; i++) evm_env_step(w, i, act + (size_t)(s & 7) * na + (size_t)i * w->ad, 1);
    uint64_t c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < w->nw; i++) evm_env_step(w, i, act + (size_t)(s & 7) * na + (size_t)i * w->ad, 1);
    return (evm_time){(double)(bench_thread_cpu_ns() - c0) * 1e-9, (double)(bench_now_ns() - t0) * 1e-9};
}

typedef struct {
    float *act, *obs, *rew;
    uint8_t *term, *trunc;
} evm_bufs;

/* herd: the same reset, warm-up and timed steps through env_step on this thread. */
static evm_time evm_time_herd(env_t *e, evm_bufs *b, int warmup, int steps)
{
    int n = env_num_worlds(e);
    size_t na = (size_t)n * env_get_spec(e)->act_dim;
    bench_env_prepare(e, warmup, b->act, b->obs, b->rew, b->term, b->trunc);
    uint64_t c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
    for (int s = 0; s < steps; s++)
        env_step(e, 0, n, NULL, b->act + (size_t)(s & 7) * na, b->obs, b->rew, b->term, b->trunc, NULL);
    return (evm_time){(double)(bench_thread_cpu_ns() - c0) * 1e-9, (double)(bench_now_ns() - t0) * 1e-9};
}

static double evm_upright(const double *q) { return 1 - 2 * (q[1] * q[1] + q[2] * q[2]); }

typedef struct {
    int n, world[EVM_STAND_WORLDS];
    double z[EVM_STAND_WORLDS];     /* herd's base height at the end of the zero-action run */
} evm_stand_ref;

/* herd under zero actions for `steps` env steps from the same resets: which worlds stand, and how high. */
static void evm_stand_herd(env_t *e, evm_bufs *b, int steps, evm_stand_ref *ref)
{
    int n = env_num_worlds(e);
    const env_spec *sp = env_get_spec(e);
    float *zero = calloc((size_t)n * sp->act_dim, sizeof(float));
    bench_env_prepare(e, 0, b->act, b->obs, b->rew, b->term, b->trunc);
    uint8_t *ended = calloc((size_t)n, 1);
    for (int s = 0; s < steps; s++) {
        env_step(e, 0, n, NULL, zero, b->obs, b->rew, b->term, b->trunc, NULL);
        for (int i = 0; i < n; i++) ended[i] |= b->term[i] | b->trunc[i];
    }
    ref->n = 0;
    for (int i = 0; i < n && i < 32 && ref->n < EVM_STAND_WORLDS; i++) {
        const sim_data *d = env_world_state(e, i);
        if (!ended[i] && d->q[2] > 0.35 && evm_upright(d->q + 3) > EVM_UPRIGHT) {
            ref->world[ref->n] = i;
            ref->z[ref->n++] = d->q[2];
        }
    }
    free(zero);
    free(ended);
}

/* Whether MuJoCo in its current configuration stands like herd on the reference worlds; the worst base-height
 * difference goes to *dz. */
static int evm_stands(evm_mj *w, const evm_stand_ref *ref, int steps, double *dz)
{
    int ok = 1;
    *dz = 0;
    for (int r = 0; r < ref->n; r++) {
        int i = ref->world[r];
        evm_restart(w, i);
        int ended = 0;
        for (int s = 0; s < steps && !ended; s++) ended = evm_env_step(w, i, NULL, 0);
        const mjData *d = w->d[i];
        double q[4], z = d->qpos[w->p->qadr[2]];
        for (int k = 0; k < 4; k++) q[k] = d->qpos[w->p->qadr[3 + k]];
        double diff = isfinite(z) ? fabs(z - ref->z[r]) : INFINITY;
        *dz = fmax(*dz, diff);
        if (ended || !(evm_upright(q) > EVM_UPRIGHT) || !(diff <= EVM_STAND_TOL)) ok = 0;
        evm_restart(w, i);
    }
    return ok;
}

/* The task with the randomization MuJoCo cannot follow switched off; hc (may be NULL): a contact-solver configuration
 * of herd's grid (solver, solver_max_iter, solver_tol) instead of the task's defaults. */
typedef struct {
    int solver, max_iter;
    double tol;
} evm_herd_cfg;

static env_t *evm_env(const char *name, int worlds, double mu, const evm_herd_cfg *hc, char *err, size_t errlen)
{
    env_kv kv[8] = {{"friction_min", mu}, {"friction_max", mu}, {"added_mass_min", 0}, {"added_mass_max", 0},
                    {"push_interval_s", 0}};
    int n = 5;
    if (hc) {
        kv[n++] = (env_kv){"solver", hc->solver};
        kv[n++] = (env_kv){"solver_max_iter", hc->max_iter};
        kv[n++] = (env_kv){"solver_tol", hc->tol};
    }
    return env_new(name, worlds, kv, n, 7, ENV_AUTORESET_SAME_STEP, err, errlen);
}

/* Whether herd in configuration hc stands like herd with the task's defaults on the reference worlds (the same
 * test as MuJoCo's: not ended, upright, base within EVM_STAND_TOL of the defaults' height); worst |dz| to *dz. */
static int evm_herd_stands(env_t *e, evm_bufs *b, int steps, const evm_stand_ref *ref, double *dz)
{
    int n = env_num_worlds(e);
    const env_spec *sp = env_get_spec(e);
    float *zero = calloc((size_t)n * sp->act_dim, sizeof(float));
    uint8_t *ended = calloc((size_t)n, 1);
    bench_env_prepare(e, 0, b->act, b->obs, b->rew, b->term, b->trunc);
    for (int s = 0; s < steps; s++) {
        env_step(e, 0, n, NULL, zero, b->obs, b->rew, b->term, b->trunc, NULL);
        for (int i = 0; i < n; i++) ended[i] |= b->term[i] | b->trunc[i];
    }
    int ok = 1;
    *dz = 0;
    for (int r = 0; r < ref->n; r++) {
        const sim_data *d = env_world_state(e, ref->world[r]);
        double diff = isfinite(d->q[2]) ? fabs(d->q[2] - ref->z[r]) : INFINITY;
        *dz = fmax(*dz, diff);
        if (ended[ref->world[r]] || !(evm_upright(d->q + 3) > EVM_UPRIGHT) || !(diff <= EVM_STAND_TOL)) ok = 0;
    }
    free(zero);
    free(ended);
    return ok;
}

/* The states the accuracy is measured on, MuJoCo's: the first EVM_ACC_WORLDS worlds in configuration c from their
 * initial states under the timed actions, the state before every physics step of env steps EVM_ACC_SKIP + 1 ..
 * EVM_ACC_SKIP + EVM_ACC_STEPS (a world that ends restarts).  Returns the count (at most cap) or -1. */
static int evm_mj_states(evm_mj *w, const evm_cfg *c, const float *act, double *snap, int cap)
{
    size_t na = (size_t)w->nw * w->ad;
    int nw = w->nw < EVM_ACC_WORLDS ? w->nw : EVM_ACC_WORLDS;
    evm_apply(w, c);
    for (int i = 0; i < nw; i++) evm_restart(w, i);
    w->nsnap = 0;
    w->snap_cap = cap;
    for (int s = 0; s < EVM_ACC_SKIP + EVM_ACC_STEPS; s++) {
        w->snap = s >= EVM_ACC_SKIP ? snap : NULL;
        for (int i = 0; i < nw; i++) evm_env_step(w, i, act + (size_t)(s & 7) * na + (size_t)i * w->ad, 1);
    }
    w->snap = NULL;
    for (int i = 0; i < nw; i++) evm_restart(w, i);
    return w->nsnap;
}

/* herd's states: the first 4 EVM_ACC_WORLDS worlds of env e (at most `cap` states) after each of env steps
 * EVM_ACC_SKIP + 1 .. EVM_ACC_SKIP + EVM_ACC_STEPS of the timed actions, with the last physics step's applied force
 * (herd's states are env steps, MuJoCo's physics steps: 4 x the worlds for as many states).  Returns the count or -1. */
static int evm_herd_states(env_t *e, evm_bufs *b, sim_data **snap, int cap)
{
    int n = env_num_worlds(e), k = 0;
    size_t na = (size_t)n * env_get_spec(e)->act_dim;
    const sim_model *m = env_model(e);
    bench_env_prepare(e, EVM_ACC_SKIP, b->act, b->obs, b->rew, b->term, b->trunc);
    for (int s = 0; s < EVM_ACC_STEPS; s++) {
        env_step(e, 0, n, NULL, b->act + (size_t)((EVM_ACC_SKIP + s) & 7) * na, b->obs, b->rew, b->term, b->trunc, NULL);
        for (int i = 0; i < n && i < EVM_ACC_WORLDS * 4 && k < cap; i++) {
            if (!(snap[k] = sim_data_new_shared(m))) return -1;   /* the state only: it is copied, never stepped */
            sim_data_copy_state(m, snap[k++], env_world_state(e, i));
        }
    }
    return k;
}

/* ,"key":{"impulse_err_median":..,...} (null for a figure without data: no contact in the states) */
static void evm_print_num(const char *key, double x, int first)
{
    if (isfinite(x)) printf("%s\"%s\":%.4g", first ? "" : ",", key, x);
    else printf("%s\"%s\":null", first ? "" : ",", key);
}
static void evm_print_acc_fields(const bench_accuracy *a, int first)
{
    evm_print_num("impulse_err_median", a->impulse_median, first);
    evm_print_num("impulse_err_p90", a->impulse_p90, 0);
    evm_print_num("velocity_err_median", a->velocity_median, 0);
    evm_print_num("velocity_err_p90", a->velocity_p90, 0);
}
static void evm_print_acc(const char *key, const bench_accuracy *a)
{
    printf(",\"%s\":{", key);
    evm_print_acc_fields(a, 1);
    printf(",\"states\":%d,\"contact_states\":%d}", a->states, a->contact_states);
}

int bench_env_vs_mujoco(int argc, char **argv)
{
    const char *name = bench_arg(argc, argv, "--env", "anymal_c-walk");
    int worlds = atoi(bench_arg(argc, argv, "--worlds", "32"));
    int steps = atoi(bench_arg(argc, argv, "--steps", "50"));
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "5"));
    int warmup = atoi(bench_arg(argc, argv, "--warmup", "25"));
    double stand_s = atof(bench_arg(argc, argv, "--stand-seconds", "5"));
    const char *grid = bench_arg(argc, argv, "--grid", "full");
    if (worlds < 1 || steps < 1 || repeats < 1 || repeats > 64 || warmup < 0 || !(stand_s > 0) ||
        (strcmp(grid, "full") && strcmp(grid, "quick"))) {
        fprintf(stderr, "herd-bench env --vs-mujoco: need --worlds >= 1, --steps >= 1, 1 <= --repeats <= 64, "
                        "--warmup >= 0, --stand-seconds > 0, --grid full|quick\n");
        return 2;
    }
    char err[512] = "";
    int rc = 1;
    enum { EVM_HERD_MAX = 15 };
    env_t *henv[EVM_HERD_MAX] = {NULL}, *hfin_env[EVM_FINALISTS] = {NULL}; /* herd's grid (below) */
    mju_user_warning = evm_warning;
    evm_mj w;
    memset(&w, 0, sizeof w);
    evm_bufs b = {0};
    env_t *e = NULL;
    /* the model's friction (the foot spheres' pair coefficient), to pin the randomized one to it */
    env_t *probe = env_new(name, 1, NULL, 0, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!probe) { fprintf(stderr, "herd-bench env --vs-mujoco: %s\n", err); return 2; }
    double mu = NAN;
    const sim_model *pm = env_model(probe);
    for (int g = 0; g < pm->ngeom; g++)
        if (env_anymal_geom_kind(pm, g, NULL) == ENV_GEOM_FOOT) mu = pm->geom[g].friction;
    env_destroy(&probe);
    if (!isfinite(mu)) { fprintf(stderr, "herd-bench env --vs-mujoco: %s is not an ANYmal task\n", name); return 2; }
    e = evm_env(name, worlds, mu, NULL, err, sizeof err);
    if (!e) { fprintf(stderr, "herd-bench env --vs-mujoco: %s\n", err); return 2; }
    /* the accuracy's saved states (bench_accuracy.h) and herd's converged reference model */
    enum { EVM_MJ_SNAP = EVM_ACC_WORLDS * EVM_ACC_STEPS * 16, EVM_H_SNAP = EVM_ACC_WORLDS * 4 * EVM_ACC_STEPS };
    double *msnap = NULL;          /* allocated once MuJoCo's model exists */
    sim_data **hsnap = calloc(EVM_H_SNAP, sizeof(sim_data *));
    sim_model *href = malloc(sizeof(sim_model));
    int nmsnap = 0, nhsnap = 0;
    if (!hsnap || !href) {
        fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n");
        free(hsnap), free(href);
        env_destroy(&e);
        return 1;
    }
    const sim_model *hm = env_model(e);
    const env_spec *sp = env_get_spec(e);
    env_anymal_joints jm;
    if (env_anymal_joints_init(&jm, hm, err, sizeof err)) { fprintf(stderr, "herd-bench: %s\n", err); goto done; }
    size_t na = (size_t)worlds * sp->act_dim;
    b.act = bench_env_actions(na * 8);
    b.obs = malloc(sizeof(float) * (size_t)worlds * sp->obs_dim);
    b.rew = malloc(sizeof(float) * (size_t)worlds);
    b.term = malloc((size_t)worlds);
    b.trunc = malloc((size_t)worlds);

    /* ---- MuJoCo's worlds, from herd's states after the same reset */
    w.p = mj_peer_new_with_floor(EVM_MODEL_PATH, hm, MJ_PEER_FLOOR_PLANE, err, sizeof err);
    if (!w.p) { fprintf(stderr, "herd-bench: MuJoCo peer: %s\n", err); goto done; }
    double inertia_err = mj_peer_adopt_inertia(w.p, hm);
    mj_peer_copy_damping(w.p, hm);
    w.p->m->opt.timestep = sp->sim_dt;
    w.nw = worlds;
    w.ad = sp->act_dim;
    w.dec = sp->decimation;
    w.max_steps = sp->max_episode_steps;
    w.walk = strstr(name, "walk") != NULL;
    w.kp = env_config(e, "kp");
    w.kd = env_config(e, "kd");
    w.tau_max = env_config(e, "torque_limit");
    w.scale = env_config(e, "action_scale");
    w.clip = env_config(e, "action_clip");
    w.base_geom = -1;
    int ncollide = 0;
    for (int g = 0; g < hm->ngeom; g++) {
        ncollide += !hm->geom[g].nocollide;
        if (env_anymal_geom_kind(hm, g, NULL) == ENV_GEOM_BASE && !hm->geom[g].nocollide) w.base_geom = w.p->geom[g];
    }
    for (int j = 0; j < ENV_ANYMAL_NJ; j++) {
        w.qadr[j] = w.p->qadr[jm.qadr[j]];
        w.dof[j] = w.p->dofadr[jm.dof[j]];
        w.q_default[j] = jm.q_default[j];
    }
    w.d = calloc((size_t)worlds, sizeof(mjData *));
    w.q0 = malloc(sizeof(double) * (size_t)worlds * hm->nq);
    w.u0 = malloc(sizeof(double) * (size_t)worlds * hm->nv);
    w.steps = calloc((size_t)worlds, sizeof(int));
    bench_env_prepare(e, 0, b.act, b.obs, b.rew, b.term, b.trunc);     /* the reset only */
    for (int i = 0; i < worlds; i++) {
        w.d[i] = mj_makeData(w.p->m);
        if (!w.d[i]) { fprintf(stderr, "herd-bench: mj_makeData failed\n"); goto done; }
        memcpy(w.q0 + (size_t)i * hm->nq, env_world_state(e, i)->q, sizeof(double) * (size_t)hm->nq);
        memcpy(w.u0 + (size_t)i * hm->nv, env_world_state(e, i)->u, sizeof(double) * (size_t)hm->nv);
    }
    evm_cfg defaults = {w.p->m->opt.solver, w.p->m->opt.iterations, w.p->m->opt.cone};
    double tolerance = w.p->m->opt.tolerance;

    /* ---- the states the accuracy is measured on: MuJoCo's along its defaults' run, herd's along its own */
    int msnap_cap = EVM_ACC_WORLDS * EVM_ACC_STEPS * w.dec < EVM_MJ_SNAP ? EVM_ACC_WORLDS * EVM_ACC_STEPS * w.dec : EVM_MJ_SNAP;
    if (!(msnap = malloc(sizeof(double) * (size_t)msnap_cap * bench_mj_state_size(w.p->m)))) {
        fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n");
        goto done;
    }
    nmsnap = evm_mj_states(&w, &defaults, b.act, msnap, msnap_cap);
    nhsnap = evm_herd_states(e, &b, hsnap, EVM_H_SNAP);
    if (nhsnap < 0) { fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n"); goto done; }
    *href = *hm;
    href->opt.sp.tol = EVM_REF_TOL;
    href->opt.sp.max_iter = EVM_HREF_ITER;
    /* one configuration of MuJoCo's (c, its tolerance) against its converged solve with the same cone */
#define EVM_MJ_ACC(c, out)                                                                                        \
    do {                                                                                                          \
        bench_mj_cfg cc_ = {(c).solver, (c).iterations, (c).cone, tolerance};                                   \
        bench_mj_cfg rc_ = {mjSOL_NEWTON, EVM_REF_ITER, (c).cone, EVM_REF_TOL};                                  \
        if (bench_mj_accuracy(w.p->m, msnap, nmsnap, &cc_, &rc_, (out))) {                                      \
            fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n");                                      \
            goto done;                                                                                            \
        }                                                                                                         \
    } while (0)
    bench_accuracy def_acc, hdef_acc;
    EVM_MJ_ACC(defaults, &def_acc);
    if (bench_herd_accuracy(hm, href, sp->sim_dt, (const sim_data *const *)hsnap, nhsnap, &hdef_acc)) {
        fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n");
        goto done;
    }

    /* ---- which configurations stand under zero actions (as herd does) */
    int stand_steps = (int)lround(stand_s / sp->control_dt);
    if (stand_steps >= sp->max_episode_steps) stand_steps = sp->max_episode_steps - 1;
    evm_stand_ref ref;
    evm_stand_herd(e, &b, stand_steps, &ref);
    if (ref.n == 0) { fprintf(stderr, "herd-bench env --vs-mujoco: no world of %s stands in herd under zero actions\n", name); goto done; }
    static const int iters_full[] = {1, 2, 3, 5, 10, 20, 50, 100}, iters_quick[] = {1, 3, 10, 100};
    const int *iters = strcmp(grid, "quick") ? iters_full : iters_quick;
    int niters = strcmp(grid, "quick") ? 8 : 4;
    static const int solvers[3] = {mjSOL_PGS, mjSOL_CG, mjSOL_NEWTON}, cones[2] = {mjCONE_PYRAMIDAL, mjCONE_ELLIPTIC};
    evm_cfg best = defaults, fin[EVM_FINALISTS], gcfg[48];
    bench_accuracy gacc[48], fin_acc[EVM_FINALISTS], best_acc = def_acc;
    double gscreen[48];
    int gstands[48];
    double fin_cpu[EVM_FINALISTS], def_dz = 0;
    int nfin = 0;
    int nstand = 0, ntried = 0;
    int screen_steps = steps < 10 ? steps : 10;     /* after as many warm-up steps */
    evm_apply(&w, &defaults);
    int def_stands = evm_stands(&w, &ref, stand_steps, &def_dz);
    fprintf(stderr, "env vs MuJoCo %d.%d.%d: %s, %d worlds, %d colliding geometries; zero-action stand test: %d worlds, %.1f s\n",
            mj_version() / 100, mj_version() / 10 % 10, mj_version() % 10, name, worlds, ncollide, ref.n,
            stand_steps * sp->control_dt);
    fprintf(stderr, "  %-7s %-10s %5s  %6s  %9s  %s\n", "solver", "cone", "iter", "stands", "screen us",
            "impulse err median / p90, velocity err median (vs its converged solve)");
    for (int si = 0; si < 3; si++)
        for (int ci = 0; ci < 2; ci++)
            for (int k = 0; k < niters; k++) {
                evm_cfg c = {solvers[si], iters[k], cones[ci]};
                evm_apply(&w, &c);
                double dz;
                int ok = evm_stands(&w, &ref, stand_steps, &dz);
                double us = NAN;
                EVM_MJ_ACC(c, &gacc[ntried]);
                if (ok) {
                    nstand++;
                    evm_time t = evm_time_mujoco(&w, b.act, screen_steps, screen_steps);
                    us = 1e6 * t.cpu_s / ((double)worlds * screen_steps);
                    /* keep the EVM_FINALISTS fastest, sorted */
                    int at = nfin < EVM_FINALISTS ? nfin++ : EVM_FINALISTS;
                    while (at > 0 && fin_cpu[at - 1] > t.cpu_s) {
                        if (at < EVM_FINALISTS) fin[at] = fin[at - 1], fin_cpu[at] = fin_cpu[at - 1];
                        at--;
                    }
                    if (at < EVM_FINALISTS) fin[at] = c, fin_acc[at] = gacc[ntried], fin_cpu[at] = t.cpu_s;
                }
                gcfg[ntried] = c, gscreen[ntried] = us, gstands[ntried] = ok;
                fprintf(stderr, "  %-7s %-10s %5d  %6s  %9.1f  %.2g / %.2g, %.2g   (max |dz| %.3f m)\n", evm_solver(c.solver),
                        evm_cone(c.cone), c.iterations, ok ? "yes" : "no", us, gacc[ntried].impulse_median,
                        gacc[ntried].impulse_p90, gacc[ntried].velocity_median, dz);
                ntried++;
            }
    if (!nstand) fprintf(stderr, "  no configuration of the grid stands: the defaults are the 'fastest'\n");

    /* ---- herd's own grid, judged the same way: per-contact solvers x sweep caps (the task's tolerance), standing
     * under zero actions like the task's defaults; its fastest is timed beside the defaults (a symmetric
     * comparison: each engine at its fastest standing configuration; the headline ratio stays the defaults') */
    static const int hsolvers[3] = {SIM_SOLVER_COULOMB_STALL_ADMM, SIM_SOLVER_COULOMB_BISECTION, SIM_SOLVER_PAPER_BISECTION};
    static const int hiters_full[] = {1, 2, 3, 5, 10}, hiters_quick[] = {1, 3};
    const int *hiters = strcmp(grid, "quick") ? hiters_full : hiters_quick;
    const int nhiters = strcmp(grid, "quick") ? 5 : 2;
    evm_herd_cfg hcfg[EVM_HERD_MAX], hfin[EVM_FINALISTS], hgcfg[EVM_HERD_MAX];
    bench_accuracy hacc[EVM_HERD_MAX], hfin_acc[EVM_FINALISTS], hgacc[EVM_HERD_MAX];
    double hgscreen[EVM_HERD_MAX];
    int hgstands[EVM_HERD_MAX];
    double hcpu[EVM_HERD_MAX];
    int nhfin = 0, nhstand = 0, nhtried = 0;
    const double htol = env_config(e, "solver_tol");
    fprintf(stderr, "  herd    %-20s %5s  %6s  %9s\n", "solver", "sweeps", "stands", "screen us");
    for (int si = 0; si < 3; si++)
        for (int k = 0; k < nhiters; k++) {
            evm_herd_cfg c = {hsolvers[si], hiters[k], htol};
            env_t *he = evm_env(name, worlds, mu, &c, err, sizeof err);
            if (!he) { fprintf(stderr, "herd-bench env --vs-mujoco: %s\n", err); goto done; }
            double dz;
            int ok = evm_herd_stands(he, &b, stand_steps, &ref, &dz);
            bench_accuracy *ha = &hgacc[nhtried];
            if (bench_herd_accuracy(env_model(he), href, sp->sim_dt, (const sim_data *const *)hsnap, nhsnap, ha)) {
                fprintf(stderr, "herd-bench env --vs-mujoco: out of memory\n");
                env_destroy(&he);
                goto done;
            }
            double us = NAN;
            if (ok) {
                evm_time t = evm_time_herd(he, &b, screen_steps, screen_steps);
                us = 1e6 * t.cpu_s / ((double)worlds * screen_steps);
                hcfg[nhstand] = c, hacc[nhstand] = *ha, henv[nhstand] = he, hcpu[nhstand++] = t.cpu_s;
            } else {
                env_destroy(&he);
            }
            hgcfg[nhtried] = c, hgscreen[nhtried] = us, hgstands[nhtried] = ok;
            fprintf(stderr, "  herd    %-20s %5d  %6s  %9.1f  %.2g / %.2g, %.2g   (max |dz| %.3f m)\n",
                    sim_solver_at(c.solver)->name, c.max_iter, ok ? "yes" : "no", us, ha->impulse_median, ha->impulse_p90,
                    ha->velocity_median, dz);
            nhtried++;
        }
    /* its EVM_FINALISTS fastest by the screen go on to the timed repeats */
    while (nhfin < EVM_FINALISTS && nhfin < nhstand) {
        int f = -1;
        for (int k = 0; k < nhstand; k++)
            if (henv[k] && (f < 0 || hcpu[k] < hcpu[f])) f = k;
        hfin[nhfin] = hcfg[f], hfin_acc[nhfin] = hacc[f], hfin_env[nhfin++] = henv[f], henv[f] = NULL;
    }
    for (int k = 0; k < nhstand; k++) env_destroy(&henv[k]);

    /* ---- MuJoCo's accurate finalists: the EVM_FINALISTS fastest by the screen of the standing configurations whose
     * median impulse error is within EVM_ACC_BOUND of its converged solve */
    evm_cfg afin[EVM_FINALISTS];
    bench_accuracy afin_acc[EVM_FINALISTS];
    int nafin = 0, naccurate = 0, gleft[48];
    for (int k = 0; k < ntried; k++) {
        gleft[k] = gstands[k];
        naccurate += gstands[k] && gacc[k].impulse_median <= EVM_ACC_BOUND;
    }
    {
        double gmed[48];
        for (int k = 0; k < ntried; k++) gmed[k] = gacc[k].impulse_median;
        for (int f; nafin < EVM_FINALISTS && (f = bench_pick_accurate(ntried, gscreen, gmed, gleft, EVM_ACC_BOUND)) >= 0;) {
            afin[nafin] = gcfg[f], afin_acc[nafin++] = gacc[f];
            gleft[f] = 0;
        }
    }

    /* ---- timed repeats: herd, the screen's finalists (its EVM_FINALISTS fastest standing configurations: one
     * short screen is too noisy to choose alone) and MuJoCo's defaults, in turn; the fastest finalist by median
     * is "MuJoCo's fastest" */
    double hc[64], hw[64], fc[64], fw[64], dc[64], dw[64], xc[EVM_FINALISTS][64], xw[EVM_FINALISTS][64];
    long fres = 0, ffail = 0, dres = 0, dfail = 0, xres[EVM_FINALISTS] = {0}, xfail[EVM_FINALISTS] = {0};
    double yc[EVM_FINALISTS][64], yw[EVM_FINALISTS][64], zc[EVM_FINALISTS][64], zw[EVM_FINALISTS][64];
    for (int r = 0; r < repeats; r++) {
        evm_time t = evm_time_herd(e, &b, warmup, steps);
        hc[r] = t.cpu_s, hw[r] = t.wall_s;
        for (int k = 0; k < nhfin; k++) {
            t = evm_time_herd(hfin_env[k], &b, warmup, steps);
            yc[k][r] = t.cpu_s, yw[k][r] = t.wall_s;
        }
        for (int k = 0; k < (nfin ? nfin : 1); k++) {
            evm_apply(&w, nfin ? &fin[k] : &defaults);
            w.resets = w.failures = 0;
            t = evm_time_mujoco(&w, b.act, warmup, steps);
            xc[k][r] = t.cpu_s, xw[k][r] = t.wall_s, xres[k] += w.resets, xfail[k] += w.failures;
        }
        for (int k = 0; k < nafin; k++) {
            evm_apply(&w, &afin[k]);
            t = evm_time_mujoco(&w, b.act, warmup, steps);
            zc[k][r] = t.cpu_s, zw[k][r] = t.wall_s;
        }
        evm_apply(&w, &defaults);
        w.resets = w.failures = 0;
        t = evm_time_mujoco(&w, b.act, warmup, steps);
        dc[r] = t.cpu_s, dw[r] = t.wall_s, dres += w.resets, dfail += w.failures;
    }
    int kb = 0;
    double kb_sec = INFINITY;
    for (int k = 0; k < (nfin ? nfin : 1); k++) {
        double tmp[64];
        memcpy(tmp, xc[k], sizeof(double) * (size_t)repeats);
        double m = bench_median(tmp, repeats);
        if (m < kb_sec) kb_sec = m, kb = k;
    }
    if (nfin) best = fin[kb], best_acc = fin_acc[kb];
    /* the headline's MuJoCo configuration: the fastest accurate finalist by median */
    int ka = -1;
    double acc_eps = NAN, acc_eps_wall = NAN;
    {
        double amed[EVM_FINALISTS], aerr[EVM_FINALISTS];
        int all[EVM_FINALISTS];
        for (int k = 0; k < nafin; k++) {
            double tmp[64];
            memcpy(tmp, zc[k], sizeof(double) * (size_t)repeats);
            amed[k] = bench_median(tmp, repeats), aerr[k] = afin_acc[k].impulse_median, all[k] = 1;
        }
        ka = bench_pick_accurate(nafin, amed, aerr, all, EVM_ACC_BOUND);
        if (ka >= 0) {
            double tmp[64];
            for (int r = 0; r < repeats; r++) tmp[r] = (double)worlds * steps / zc[ka][r];
            acc_eps = bench_median(tmp, repeats);
            for (int r = 0; r < repeats; r++) tmp[r] = (double)worlds * steps / zw[ka][r];
            acc_eps_wall = bench_median(tmp, repeats);
        }
    }
    memcpy(fc, xc[kb], sizeof(double) * (size_t)repeats);
    memcpy(fw, xw[kb], sizeof(double) * (size_t)repeats);
    fres = xres[kb], ffail = xfail[kb];
    int hb = -1;
    double hb_sec = INFINITY, hbest_eps = NAN, hbest_eps_wall = NAN;
    for (int k = 0; k < nhfin; k++) {
        double tmp[64];
        memcpy(tmp, yc[k], sizeof(double) * (size_t)repeats);
        double m = bench_median(tmp, repeats);
        if (m < hb_sec) hb_sec = m, hb = k;
    }
    if (hb >= 0) {
        double tmp[64];
        for (int r = 0; r < repeats; r++) tmp[r] = (double)worlds * steps / yc[hb][r];
        hbest_eps = bench_median(tmp, repeats);
        for (int r = 0; r < repeats; r++) tmp[r] = (double)worlds * steps / yw[hb][r];
        hbest_eps_wall = bench_median(tmp, repeats);
    }
    fprintf(stderr, "  finalists (median us per env step):");
    for (int k = 0; k < nfin; k++) {
        double tmp[64];
        memcpy(tmp, xc[k], sizeof(double) * (size_t)repeats);
        fprintf(stderr, " %s/%s/%d %.1f", evm_solver(fin[k].solver), evm_cone(fin[k].cone), fin[k].iterations,
                1e6 * bench_median(tmp, repeats) / ((double)worlds * steps));
    }
    fprintf(stderr, "\n");
    double work = (double)worlds * steps;
    double eps[6], *reps[6] = {hc, hw, fc, fw, dc, dw};
    for (int k = 0; k < 6; k++) {
        double tmp[64];
        for (int r = 0; r < repeats; r++) tmp[r] = work / reps[k][r];
        eps[k] = bench_median(tmp, repeats);
    }
    printf("{\"bench\":\"env_vs_mujoco\",\"env\":\"%s\",\"worlds\":%d,\"threads\":1,\"steps\":%d,\"repeats\":%d,\"warmup\":%d,"
           "\"clock\":\"thread_cpu\",\"herd_env_steps_per_s\":%.1f,\"mujoco_fastest_env_steps_per_s\":%.1f,"
           "\"mujoco_defaults_env_steps_per_s\":%.1f,\"ratio_vs_mujoco\":%.4f,\"ratio_vs_mujoco_defaults\":%.4f,"
           "\"herd_env_steps_per_s_wall\":%.1f,\"mujoco_fastest_env_steps_per_s_wall\":%.1f,"
           "\"mujoco_defaults_env_steps_per_s_wall\":%.1f,\"ratio_vs_mujoco_wall\":%.4f,\"ratio_vs_mujoco_defaults_wall\":%.4f,"
           "\"herd_us_per_physics_step\":%.4f,\"mujoco_fastest_us_per_physics_step\":%.4f,\"mujoco_defaults_us_per_physics_step\":%.4f",
           name, worlds, steps, repeats, warmup, eps[0], eps[2], eps[4], eps[0] / eps[2], eps[0] / eps[4], eps[1], eps[3],
           eps[5], eps[1] / eps[3], eps[1] / eps[5], 1e6 / (eps[0] * w.dec), 1e6 / (eps[2] * w.dec), 1e6 / (eps[4] * w.dec));
    const char *rn[3] = {"herd_env_steps_per_s_reps", "mujoco_fastest_env_steps_per_s_reps", "mujoco_defaults_env_steps_per_s_reps"};
    for (int k = 0; k < 3; k++) {
        printf(",\"%s\":[", rn[k]);
        for (int r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", work / reps[2 * k][r]);
        printf("]");
    }
    printf(",\"mujoco_fastest\":{\"solver\":\"%s\",\"iterations\":%d,\"cone\":\"%s\",\"noslip_iterations\":0,\"tolerance\":%g,"
           "\"stands\":%s,\"episode_restarts\":%ld,\"failures\":%ld},"
           "\"mujoco_defaults\":{\"solver\":\"%s\",\"iterations\":%d,\"cone\":\"%s\",\"noslip_iterations\":0,\"tolerance\":%g,"
           "\"stands\":%s,\"stand_max_dz_m\":%.4f,\"episode_restarts\":%ld,\"failures\":%ld},"
           "\"grid\":{\"kind\":\"%s\",\"configs\":%d,\"standing\":%d,\"stand_seconds\":%.2f,\"stand_worlds\":%d,\"stand_tol_m\":%g},"
           "\"herd_solver\":%g,\"sim_dt\":%g,\"decimation\":%d,\"kp\":%g,\"kd\":%g,\"torque_limit\":%g,\"action_scale\":%g,"
           "\"friction\":%g,\"colliding_geoms\":%d,\"mujoco_version\":%d,\"mujoco_floor\":\"plane\",\"inertia_adopted_err\":%.3g,"
           "\"herd_includes_obs_reward\":true,\"herd_fastest\":{\"solver\":\"%s\",\"solver_max_iter\":%d,\"solver_tol\":%g,"
           "\"env_steps_per_s\":%.1f,\"env_steps_per_s_wall\":%.1f,\"us_per_physics_step\":%.4f,\"grid_configs\":%d,"
           "\"grid_standing\":%d},\"ratio_fastest_vs_fastest\":%.4f,\"cpu\":\"%s\"",
           evm_solver(best.solver), best.iterations, evm_cone(best.cone), tolerance, nstand ? "true" : "false", fres / repeats,
           ffail, evm_solver(defaults.solver), defaults.iterations, evm_cone(defaults.cone), tolerance,
           def_stands ? "true" : "false", def_dz, dres / repeats, dfail, grid, ntried, nstand, stand_steps * sp->control_dt,
           ref.n, EVM_STAND_TOL, env_config(e, "solver"), sp->sim_dt, w.dec, w.kp, w.kd, w.tau_max, w.scale, mu, ncollide,
           mj_version(), inertia_err, hb >= 0 ? sim_solver_at(hfin[hb].solver)->name : "none",
           hb >= 0 ? hfin[hb].max_iter : 0, hb >= 0 ? hfin[hb].tol : 0.0, hbest_eps, hbest_eps_wall,
           1e6 / (hbest_eps * w.dec), nhtried, nhstand, hbest_eps / eps[2], bench_cpu());
    /* accuracy: each timed configuration against its own engine's converged solve on the same states */
    printf(",\"accuracy\":{\"bound\":%g,\"mujoco_states\":%d,\"herd_states\":%d,\"accurate_standing\":%d,"
           "\"mujoco_reference\":{\"solver\":\"Newton\",\"iterations\":%d,\"tolerance\":%g,\"cone\":\"the configuration's\"},"
           "\"herd_reference\":{\"solver\":\"%s\",\"solver_max_iter\":%d,\"solver_tol\":%g},"
           "\"impulse_error\":\"relative norm of the step's stacked per-contact impulses (normal and friction, contact frames)\","
           "\"velocity_error\":\"relative norm of the generalized velocity after the step\"}",
           EVM_ACC_BOUND, nmsnap, nhsnap, naccurate, EVM_REF_ITER, EVM_REF_TOL, sim_solver_at(href->opt.solver)->name,
           EVM_HREF_ITER, EVM_REF_TOL);
    evm_print_acc("herd_accuracy", &hdef_acc);
    evm_print_acc("mujoco_fastest_accuracy", &best_acc);
    evm_print_acc("mujoco_defaults_accuracy", &def_acc);
    if (hb >= 0) evm_print_acc("herd_fastest_accuracy", &hfin_acc[hb]);
    if (ka >= 0) {
        printf(",\"mujoco_accurate\":{\"solver\":\"%s\",\"iterations\":%d,\"cone\":\"%s\",\"noslip_iterations\":0,"
               "\"tolerance\":%g,\"stands\":true,\"env_steps_per_s\":%.1f,\"env_steps_per_s_wall\":%.1f,"
               "\"us_per_physics_step\":%.4f,",
               evm_solver(afin[ka].solver), afin[ka].iterations, evm_cone(afin[ka].cone), tolerance, acc_eps, acc_eps_wall,
               1e6 / (acc_eps * w.dec));
        evm_print_acc_fields(&afin_acc[ka], 1);
        printf(",\"env_steps_per_s_reps\":[");
        for (int r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", work / zc[ka][r]);
        printf("]},\"ratio_vs_mujoco_accurate\":%.4f,\"ratio_vs_mujoco_accurate_wall\":%.4f", eps[0] / acc_eps,
               eps[1] / acc_eps_wall);
    } else {
        printf(",\"mujoco_accurate\":null,\"ratio_vs_mujoco_accurate\":null,\"ratio_vs_mujoco_accurate_wall\":null");
    }
    printf(",\"mujoco_grid\":[");
    for (int k = 0; k < ntried; k++) {
        printf("%s{\"solver\":\"%s\",\"cone\":\"%s\",\"iterations\":%d,\"stands\":%s,", k ? "," : "",
               evm_solver(gcfg[k].solver), evm_cone(gcfg[k].cone), gcfg[k].iterations, gstands[k] ? "true" : "false");
        evm_print_num("screen_us_per_env_step", gscreen[k], 1);
        evm_print_acc_fields(&gacc[k], 0);
        printf("}");
    }
    printf("],\"herd_grid\":[");
    for (int k = 0; k < nhtried; k++) {
        printf("%s{\"solver\":\"%s\",\"solver_max_iter\":%d,\"stands\":%s,", k ? "," : "",
               sim_solver_at(hgcfg[k].solver)->name, hgcfg[k].max_iter, hgstands[k] ? "true" : "false");
        evm_print_num("screen_us_per_env_step", hgscreen[k], 1);
        evm_print_acc_fields(&hgacc[k], 0);
        printf("}");
    }
    printf("]}\n");
    fflush(stdout);
    fprintf(stderr, "  timed: %d worlds x %d env steps after %d warm-up, median of %d, per thread (CPU time | wall)\n", worlds,
            steps, warmup, repeats);
    fprintf(stderr, "    herd                                %9.0f | %9.0f env steps/s  (%.2f us per physics step)\n", eps[0],
            eps[1], 1e6 / (eps[0] * w.dec));
    fprintf(stderr, "    MuJoCo fastest (%s, %s, %d it.)  %9.0f | %9.0f              (%.2f us)\n", evm_solver(best.solver),
            evm_cone(best.cone), best.iterations, eps[2], eps[3], 1e6 / (eps[2] * w.dec));
    fprintf(stderr, "    MuJoCo defaults (%s, %s, %d it.) %9.0f | %9.0f              (%.2f us)%s\n", evm_solver(defaults.solver),
            evm_cone(defaults.cone), defaults.iterations, eps[4], eps[5], 1e6 / (eps[4] * w.dec),
            def_stands ? "" : "  (does NOT stand)");
    if (hb >= 0)
        fprintf(stderr, "    herd fastest (%s, at most %d sweep%s)  %9.0f | %9.0f              (%.2f us)\n",
                sim_solver_at(hfin[hb].solver)->name, hfin[hb].max_iter, hfin[hb].max_iter == 1 ? "" : "s", hbest_eps,
                hbest_eps_wall, 1e6 / (hbest_eps * w.dec));
    if (ka >= 0)
        fprintf(stderr, "    MuJoCo accurate (%s, %s, %d it.) %9.0f | %9.0f              (%.2f us)\n", evm_solver(afin[ka].solver),
                evm_cone(afin[ka].cone), afin[ka].iterations, acc_eps, acc_eps_wall, 1e6 / (acc_eps * w.dec));
    fprintf(stderr, "  herd / MuJoCo fastest: %.2fx; herd / MuJoCo defaults: %.2fx; herd fastest / MuJoCo fastest: %.2fx\n",
            eps[0] / eps[2], eps[0] / eps[4], hbest_eps / eps[2]);
    fprintf(stderr, "  accuracy vs each engine's converged solve (impulse err median / p90, velocity err median):\n"
                    "    herd defaults %.2g / %.2g, %.2g; MuJoCo fastest %.2g / %.2g, %.2g; MuJoCo defaults %.2g / %.2g, %.2g\n",
            hdef_acc.impulse_median, hdef_acc.impulse_p90, hdef_acc.velocity_median, best_acc.impulse_median,
            best_acc.impulse_p90, best_acc.velocity_median, def_acc.impulse_median, def_acc.impulse_p90,
            def_acc.velocity_median);
    if (ka >= 0)
        fprintf(stderr, "  herd / MuJoCo's fastest standing configuration with median impulse error <= %g %%: %.2fx "
                        "(its error %.2g / %.2g, %.2g)\n", 100 * EVM_ACC_BOUND, eps[0] / acc_eps, afin_acc[ka].impulse_median,
                afin_acc[ka].impulse_p90, afin_acc[ka].velocity_median);
    else
        fprintf(stderr, "  no standing MuJoCo configuration of the grid has a median impulse error <= %g %%\n", 100 * EVM_ACC_BOUND);
    rc = 0;
done:
#undef EVM_MJ_ACC
    for (int k = 0; k < EVM_H_SNAP; k++) sim_data_destroy(&hsnap[k]);
    free(msnap);
    free(hsnap);
    free(href);
    for (int k = 0; k < EVM_FINALISTS; k++) env_destroy(&hfin_env[k]);
    for (int k = 0; k < EVM_HERD_MAX; k++) env_destroy(&henv[k]);
    if (w.d)
        for (int i = 0; i < worlds; i++)
            if (w.d[i]) mj_deleteData(w.d[i]);
    free(w.d);
    free(w.q0);
    free(w.u0);
    free(w.steps);
    mj_peer_destroy(&w.p);
    free(b.act); free(b.obs); free(b.rew); free(b.term); free(b.trunc);
    env_destroy(&e);
    return rc;
}

/* herd-bench solver --vs-mujoco — the standing PD scenario in herd and in MuJoCo 2.2, same process.
 *
 *   herd-bench solver --vs-mujoco [--steps N] [--repeats R] [--dt S] [--tol M] [--mj-floor plane|box]
 *                     [--mj-noslip N] [--mj-cone pyramidal|elliptic] [--mj-impratio X] [--no-mj-defaults-ref]
 *
 * Both engines simulate envs/models/anymal_c.urdf dropped from 0.6 m with PD (Kp 80, Kd 2, clip 80 N·m)
 * holding HFE ±0.4 / KFE ∓0.8 (scenario "stand", env_scenario.h), at the same dt (1 ms by default):
 *   herd    env_scenario_configure_model(ENV_SCN_STAND) (feet spheres + base box collide with the plane z = 0),
 *           env_scenario_init, then per step env_scenario_control + sim_step (bisection solver, warm starts: defaults).
 *   MuJoCo  mj_peer_new_with_floor (mj_peer.h): the same URDF compiled by MuJoCo's own importer, a free
 *           root joint, herd's inertias adopted (mj_peer_adopt_inertia), a floor (a plane by default)
 *           with which exactly herd's colliding geoms collide (nothing else, no self-collision), herd's
 *           sliding friction (0.8), joint limits off as in herd, opt.timestep = dt; MuJoCo's defaults
 *           otherwise (pyramidal cone, Newton, 100 iterations, tolerance 1e-8, Euler, impratio 1,
 *           solref/solimp, condim 3, margin 0) EXCEPT noslip_iterations = 10 (--mj-noslip):
 *           with all defaults MuJoCo's soft friction lets the feet creep outward under the stance's
 *           static tangential load (|f_t|/f_n ~ 0.48 < mu = 0.8 in herd, which does not slip), and the
 *           robot sinks from 0.51 m to ~0.21 m over 20 s; MuJoCo's noslip post-solver (its documented
 *           remedy for this) removes the creep and the robot stands within ~3 mm of herd.  The
 *           all-defaults configuration is still run and timed as a reference ("mujoco_all_defaults").
 *           Per step the same PD law is evaluated from MuJoCo's own state and written into
 *           qfrc_applied (through the peer's dof maps), then mj_step.
 * Timing: each repeat restarts every engine from the initial state (herd: env_scenario_init; MuJoCo:
 * mj_resetData + herd's initial state) and times its whole loop of `steps` (PD + step), the engines
 * in turn; the PD law (12 clipped PD terms) is inside the timed loop of both, costing some tens of ns
 * against microseconds per step.  Reported: medians over the repeats of the per-repeat mean.  A
 * separate, untimed pass records base heights (after 2 s and at the end), contacts, iterations (MuJoCo:
 * solver_iter, main + noslip) and penetration, and checks that both stand: finite, no MuJoCo warning,
 * upright, base heights after 2 s and at the end within --tol (0.03 m) of each other; otherwise
 * "both_stand" is false and the exit code 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mj_peer.h"
#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

#define MJV_MODEL_PATH "envs/models/anymal_c.urdf"
#define MJV_NOSLIP_DEFAULT "10"

typedef struct {
    int qadr[12], dof[12];   /* MuJoCo qpos / dof indices of the 12 joints (scenario order) */
    double target[12], kp, kd, tau_max;
} mjv_pd;

static inline void mjv_control(const mjv_pd *c, mjData *d)
{
    for (int i = 0; i < 12; i++) {
        double t = c->kp * (c->target[i] - d->qpos[c->qadr[i]]) - c->kd * d->qvel[c->dof[i]];
        if (t > c->tau_max) t = c->tau_max;
        if (t < -c->tau_max) t = -c->tau_max;
        d->qfrc_applied[c->dof[i]] = t;
    }
}

/* World z component of the base z axis, from a [w x y z] quaternion. */
static double mjv_upright(const double *quat) { return 1 - 2 * (quat[1] * quat[1] + quat[2] * quat[2]); }

static void mjv_reset_mujoco(const mj_peer *p, const double *q0, const double *u0)
{
    mj_resetData(p->m, p->d);
    mj_peer_set_state(p, q0, u0);
}

typedef struct {
    double z_2s, z_end, up_end, z_min;
    double mean_contacts, mean_iter, pen_max, pen_end;
    long nonfinite;
} mjv_trace;

typedef struct {
    int cone;                /* mjtCone */
    double impratio;
    int noslip_iterations;
} mjv_cfg;

static void mjv_cfg_apply(mj_peer *p, const mjv_cfg *c)
{
    p->m->opt.cone = c->cone;
    p->m->opt.impratio = c->impratio;
    p->m->opt.noslip_iterations = c->noslip_iterations;
}

static int mjv_warnings(const mjData *d)
{
    int n = 0;
    for (int w = 0; w < mjNWARNING; w++) n += d->warning[w].number;
    return n;
}

/* The base height at 2 s is taken after step i2s (t = (i2s + 1) dt = 2 s); NAN if the run is shorter. */
static long mjv_i2s(double dt) { return lround(2.0 / dt) - 1; }

static void mjv_trace_herd(const sim_model *hm, sim_data *hd, env_scenario *s, long steps, double dt, mjv_trace *t)
{
    char err[256];
    long i2s = mjv_i2s(dt);
    memset(t, 0, sizeof *t);
    t->z_2s = NAN;
    t->z_min = INFINITY;
    env_scenario_init(s, hm, hd, ENV_SCN_STAND, 42, err, sizeof err);
    for (long i = 0; i < steps; i++) {
        env_scenario_control(s, hm, hd, dt);
        if (sim_step(hm, hd, dt)) t->nonfinite++;
        t->mean_contacts += hd->stats.nactive;
        t->mean_iter += hd->stats.iterations;
        t->pen_max = fmax(t->pen_max, hd->stats.penetration);
        t->z_min = fmin(t->z_min, hd->q[2]);
        if (i == i2s) t->z_2s = hd->q[2];
    }
    t->pen_end = hd->stats.penetration;
    t->z_end = hd->q[2];
    t->up_end = mjv_upright(hd->q + 3);
    t->mean_contacts /= (double)steps;
    t->mean_iter /= (double)steps;
}

static void mjv_trace_mujoco(const mj_peer *p, const mjv_pd *pd, const double *q0, const double *u0, long steps, double dt,
                             mjv_trace *t)
{
    long i2s = mjv_i2s(dt);
    memset(t, 0, sizeof *t);
    t->z_2s = NAN;
    t->z_min = INFINITY;
    mjv_reset_mujoco(p, q0, u0);
    for (long i = 0; i < steps; i++) {
        mjv_control(pd, p->d);
        mj_step(p->m, p->d);
        double zq = p->d->qpos[p->qadr[2]];
        if (!isfinite(zq)) t->nonfinite++;
        t->mean_contacts += p->d->ncon;
        t->mean_iter += p->d->solver_iter;
        double pen = 0;
        for (int c = 0; c < p->d->ncon; c++) pen = fmax(pen, -p->d->contact[c].dist);
        t->pen_max = fmax(t->pen_max, pen);
        t->pen_end = pen;
        t->z_min = fmin(t->z_min, zq);
        if (i == i2s) t->z_2s = zq;
    }
    t->z_end = p->d->qpos[p->qadr[2]];
    double quat[4];
    for (int k = 0; k < 4; k++) quat[k] = p->d->qpos[p->qadr[3 + k]];
    t->up_end = mjv_upright(quat);
    t->mean_contacts /= (double)steps;
    t->mean_iter /= (double)steps;
}

static double mjv_time_herd(const sim_model *hm, sim_data *hd, env_scenario *s, long steps, double dt)
{
    char err[256];
    env_scenario_init(s, hm, hd, ENV_SCN_STAND, 42, err, sizeof err);
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < steps; i++) {
        env_scenario_control(s, hm, hd, dt);
        sim_step(hm, hd, dt);
    }
    uint64_t t1 = bench_now_ns();
    return (double)(t1 - t0) / 1e3 / (double)steps;
}

static double mjv_time_mujoco(const mj_peer *p, const mjv_pd *pd, const double *q0, const double *u0, long steps)
{
    mjv_reset_mujoco(p, q0, u0);
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < steps; i++) {
        mjv_control(pd, p->d);
        mj_step(p->m, p->d);
    }
    uint64_t t1 = bench_now_ns();
    return (double)(t1 - t0) / 1e3 / (double)steps;
}

static const char *mjv_cone(int c) { return c == mjCONE_PYRAMIDAL ? "pyramidal" : c == mjCONE_ELLIPTIC ? "elliptic" : "?"; }
static const char *mjv_solver(int s) { return s == mjSOL_PGS ? "PGS" : s == mjSOL_CG ? "CG" : s == mjSOL_NEWTON ? "Newton" : "?"; }
static const char *mjv_integrator(int s)
{
    return s == mjINT_EULER ? "Euler" : s == mjINT_RK4 ? "RK4" : s == mjINT_IMPLICIT ? "implicit" : "?";
}

int bench_solver_vs_mujoco(int argc, char **argv)
{
    long steps = atol(bench_arg(argc, argv, "--steps", "20000"));
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "5"));
    double dt = atof(bench_arg(argc, argv, "--dt", "0.001"));
    double tol = atof(bench_arg(argc, argv, "--tol", "0.03"));
    const char *floor_name = bench_arg(argc, argv, "--mj-floor", "plane");
    int floor_kind = !strcmp(floor_name, "plane") ? MJ_PEER_FLOOR_PLANE : !strcmp(floor_name, "box") ? MJ_PEER_FLOOR_BOX : -1;
    const char *cone_name = bench_arg(argc, argv, "--mj-cone", "pyramidal");
    mjv_cfg defaults = {mjCONE_PYRAMIDAL, 1.0, 0};   /* overwritten below by the compiled model's own options */
    mjv_cfg cfg = {!strcmp(cone_name, "pyramidal") ? mjCONE_PYRAMIDAL : !strcmp(cone_name, "elliptic") ? mjCONE_ELLIPTIC : -1,
                   atof(bench_arg(argc, argv, "--mj-impratio", "1")),
                   atoi(bench_arg(argc, argv, "--mj-noslip", MJV_NOSLIP_DEFAULT))};
    int ref = !bench_flag(argc, argv, "--no-mj-defaults-ref");
    if (steps <= 0 || repeats <= 0 || !(dt > 0) || !(tol > 0) || floor_kind < 0 || cfg.cone < 0 || !(cfg.impratio > 0) ||
        cfg.noslip_iterations < 0) {
        fprintf(stderr, "herd-bench solver --vs-mujoco: bad --steps/--repeats/--dt/--tol/--mj-floor (plane, box)/"
                        "--mj-cone (pyramidal, elliptic)/--mj-impratio/--mj-noslip\n");
        return 2;
    }
    char err[512] = "";
    int rc = 1;
    sim_model *hm = sim_urdf_load_file(MJV_MODEL_PATH, NULL, err, sizeof err);
    if (!hm) { fprintf(stderr, "herd-bench: %s\n", err); return 1; }
    sim_data *hd = NULL;
    mj_peer *p = NULL;
    double *rep_h = NULL, *rep_m = NULL, *rep_d = NULL;
    if (env_scenario_configure_model(hm, ENV_SCN_STAND, err, sizeof err)) { fprintf(stderr, "herd-bench: %s\n", err); goto done; }
    hm->opt.erp = 0;                                   /* as herd-bench solver's default */
    hd = sim_data_new(hm);
    if (!hd) { fprintf(stderr, "herd-bench: out of memory\n"); goto done; }
    env_scenario s;
    if (env_scenario_init(&s, hm, hd, ENV_SCN_STAND, 42, err, sizeof err)) { fprintf(stderr, "herd-bench: %s\n", err); goto done; }

    /* MuJoCo: same model after env_scenario_configure_model (its nocollide flags choose the colliding geoms). */
    p = mj_peer_new_with_floor(MJV_MODEL_PATH, hm, floor_kind, err, sizeof err);
    if (!p) { fprintf(stderr, "herd-bench: MuJoCo peer: %s\n", err); goto done; }
    double inertia_err = mj_peer_adopt_inertia(p, hm);
    mj_peer_copy_damping(p, hm);
    p->m->opt.timestep = dt;                           /* mj_step's step (herd gets dt per call) */
    defaults.cone = p->m->opt.cone;
    defaults.impratio = p->m->opt.impratio;
    defaults.noslip_iterations = p->m->opt.noslip_iterations;
    mjv_pd pd;
    for (int i = 0; i < 12; i++) {
        pd.qadr[i] = p->qadr[s.joints.qadr[i]];
        pd.dof[i] = p->dofadr[s.joints.dof[i]];
        pd.target[i] = s.target[i];
    }
    pd.kp = s.kp;
    pd.kd = s.kd;
    pd.tau_max = s.tau_max;
    double q0[SIM_MAX_DOF + 1], u0[SIM_MAX_DOF];
    memcpy(q0, hd->q, sizeof(double) * (size_t)hm->nq);
    memcpy(u0, hd->u, sizeof(double) * (size_t)hm->nv);
    int ncollide = 0;
    double mu = 0;
    for (int g = 0; g < hm->ngeom; g++)
        if (!hm->geom[g].nocollide) { ncollide++; mu = hm->geom[g].friction; }

    /* ---- untimed validation pass: both engines from the same initial state */
    mjv_trace th, tm, td;
    mjv_trace_herd(hm, hd, &s, steps, dt, &th);
    mjv_cfg_apply(p, &cfg);
    mjv_trace_mujoco(p, &pd, q0, u0, steps, dt, &tm);
    int mj_warnings = mjv_warnings(p->d);
    if (ref) {
        mjv_cfg_apply(p, &defaults);
        mjv_trace_mujoco(p, &pd, q0, u0, steps, dt, &td);
        mjv_cfg_apply(p, &cfg);
    }
    int ok = th.nonfinite == 0 && tm.nonfinite == 0 && mj_warnings == 0 && isfinite(th.z_end) && isfinite(tm.z_end) &&
             th.up_end > 0.95 && tm.up_end > 0.95 && fabs(th.z_end - tm.z_end) <= tol &&
             (!isfinite(th.z_2s) || fabs(th.z_2s - tm.z_2s) <= tol) && th.z_end > 0.3 && tm.z_end > 0.3;
    int ref_ok = ref && td.nonfinite == 0 && isfinite(td.z_end) && td.up_end > 0.95 && fabs(th.z_end - td.z_end) <= tol &&
                 (!isfinite(th.z_2s) || fabs(th.z_2s - td.z_2s) <= tol);

    /* ---- timed repeats, each from the initial state, engines in turn */
    rep_h = calloc((size_t)repeats, sizeof(double));
    rep_m = calloc((size_t)repeats, sizeof(double));
    rep_d = calloc((size_t)repeats, sizeof(double));
    if (!rep_h || !rep_m || !rep_d) { fprintf(stderr, "herd-bench: out of memory\n"); goto done; }
    for (int rep = 0; rep < repeats; rep++) {
        rep_h[rep] = mjv_time_herd(hm, hd, &s, steps, dt);
        if (!isfinite(hd->q[2])) ok = 0;
        rep_m[rep] = mjv_time_mujoco(p, &pd, q0, u0, steps);
        if (!isfinite(p->d->qpos[p->qadr[2]])) ok = 0;
        if (ref) {
            mjv_cfg_apply(p, &defaults);
            rep_d[rep] = mjv_time_mujoco(p, &pd, q0, u0, steps);
            mjv_cfg_apply(p, &cfg);
        }
    }
    double us_h = bench_median(rep_h, repeats), us_m = bench_median(rep_m, repeats);
    double us_d = ref ? bench_median(rep_d, repeats) : NAN;
    double sps_h = 1e6 / us_h, sps_m = 1e6 / us_m;
    const mjOption *o = &p->m->opt;
    const mjModel *mm = p->m;
    int fl = p->floor;

    printf("{\"bench\":\"solver_vs_mujoco\",\"scenario\":\"stand\",\"dt\":%g,\"steps\":%ld,\"repeats\":%d,"
           "\"herd_steps_per_s\":%.1f,\"mujoco_steps_per_s\":%.1f,\"ratio_vs_mujoco\":%.4f,"
           "\"herd_us_per_step\":%.4f,\"mujoco_us_per_step\":%.4f,\"pd_in_timing\":true,"
           "\"herd_base_z_2s\":%.5f,\"mujoco_base_z_2s\":%.5f,\"herd_base_z_final\":%.5f,\"mujoco_base_z_final\":%.5f,"
           "\"herd_upright_final\":%.6f,\"mujoco_upright_final\":%.6f,\"both_stand\":%s,\"stand_tol_m\":%g,"
           "\"herd_mean_active_contacts\":%.3f,\"mujoco_mean_contacts\":%.3f,"
           "\"herd_mean_iterations\":%.3f,\"mujoco_mean_iterations\":%.3f,"
           "\"herd_penetration_final_m\":%.4g,\"mujoco_penetration_final_m\":%.4g,"
           "\"herd_penetration_max_m\":%.4g,\"mujoco_penetration_max_m\":%.4g,"
           "\"herd_solver\":\"%s\",\"herd_warmstart\":%s,\"colliding_geoms\":%d,\"friction\":%g,"
           "\"mujoco\":{\"version\":%d,\"floor\":\"%s\",\"integrator\":\"%s\",\"cone\":\"%s\",\"solver\":\"%s\","
           "\"iterations\":%d,\"tolerance\":%g,\"noslip_iterations\":%d,\"noslip_tolerance\":%g,\"impratio\":%g,"
           "\"jacobian\":%d,\"condim\":%d,\"solref\":[%g,%g],\"solimp\":[%g,%g,%g],\"margin\":%g,\"friction\":[%g,%g,%g],"
           "\"contacts\":true,\"joint_limits\":false,\"inertia_adopted_err\":%.3g,\"warnings\":%d}",
           dt, steps, repeats, sps_h, sps_m, sps_h / sps_m, us_h, us_m, th.z_2s, tm.z_2s, th.z_end, tm.z_end, th.up_end,
           tm.up_end, ok ? "true" : "false", tol, th.mean_contacts, tm.mean_contacts, th.mean_iter, tm.mean_iter,
           th.pen_end, tm.pen_end, th.pen_max, tm.pen_max,
           hm->opt.solver == SIM_SOLVER_PGS ? "pgs" : "bisection", hm->opt.warmstart ? "true" : "false", ncollide, mu,
           mj_version(), floor_name, mjv_integrator(o->integrator), mjv_cone(o->cone), mjv_solver(o->solver), o->iterations,
           o->tolerance, o->noslip_iterations, o->noslip_tolerance, o->impratio, o->jacobian, mm->geom_condim[fl],
           mm->geom_solref[mjNREF * fl], mm->geom_solref[mjNREF * fl + 1], mm->geom_solimp[mjNIMP * fl],
           mm->geom_solimp[mjNIMP * fl + 1], mm->geom_solimp[mjNIMP * fl + 2], mm->geom_margin[fl],
           mm->geom_friction[3 * fl], mm->geom_friction[3 * fl + 1], mm->geom_friction[3 * fl + 2], inertia_err, mj_warnings);
    if (ref)
        printf(",\"mujoco_all_defaults\":{\"cone\":\"%s\",\"impratio\":%g,\"noslip_iterations\":%d,\"us_per_step\":%.4f,"
               "\"steps_per_s\":%.1f,\"ratio_vs_mujoco\":%.4f,\"base_z_2s\":%.5f,\"base_z_final\":%.5f,\"stands\":%s}",
               mjv_cone(defaults.cone), defaults.impratio, defaults.noslip_iterations, us_d, 1e6 / us_d, sps_h * us_d / 1e6,
               td.z_2s, td.z_end, ref_ok ? "true" : "false");
    printf(",\"cpu\":\"%s\"}\n", bench_cpu());
    fflush(stdout);

    fprintf(stderr, "stand, dt %g s, %ld steps, median of %d   herd (bisection)  MuJoCo %d.%d.%d", dt, steps, repeats,
            mj_version() / 100, mj_version() / 10 % 10, mj_version() % 10);
    if (ref) fprintf(stderr, "   MuJoCo all defaults");
    fprintf(stderr, "\n  settings                                           %s %s imp %g noslip %d", mjv_solver(o->solver),
            mjv_cone(o->cone), o->impratio, o->noslip_iterations);
    if (ref) fprintf(stderr, "   %s noslip %d", mjv_cone(defaults.cone), defaults.noslip_iterations);
    fprintf(stderr, "\n  us / step (PD + step)              %10.3f     %10.3f", us_h, us_m);
    if (ref) fprintf(stderr, "          %10.3f", us_d);
    fprintf(stderr, "\n  steps / s                          %10.0f     %10.0f", sps_h, sps_m);
    if (ref) fprintf(stderr, "          %10.0f", 1e6 / us_d);
    fprintf(stderr, "\n  base z at 2 s / end [m]       %7.4f / %7.4f  %7.4f / %7.4f", th.z_2s, th.z_end, tm.z_2s, tm.z_end);
    if (ref) fprintf(stderr, "     %7.4f / %7.4f", td.z_2s, td.z_end);
    fprintf(stderr, "\n  contacts / iterations (mean)     %5.2f / %6.2f    %5.2f / %6.2f", th.mean_contacts, th.mean_iter,
            tm.mean_contacts, tm.mean_iter);
    if (ref) fprintf(stderr, "       %5.2f / %6.2f", td.mean_contacts, td.mean_iter);
    fprintf(stderr, "\n  penetration end / max [mm]       %5.2f / %6.2f    %5.2f / %6.2f", 1e3 * th.pen_end, 1e3 * th.pen_max,
            1e3 * tm.pen_end, 1e3 * tm.pen_max);
    if (ref) fprintf(stderr, "       %5.2f / %6.2f", 1e3 * td.pen_end, 1e3 * td.pen_max);
    fprintf(stderr, "\n  herd / MuJoCo steps per second: %.2f; both stand (|dz| <= %g m, upright): %s\n", sps_h / sps_m, tol,
            ok ? "yes" : "NO");
    rc = ok ? 0 : 1;
done:
    free(rep_h);
    free(rep_m);
    free(rep_d);
    mj_peer_destroy(&p);
    sim_data_destroy(&hd);
    sim_model_destroy(&hm);
    return rc;
}

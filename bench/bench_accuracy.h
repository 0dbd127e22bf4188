/* bench_accuracy.h — how far one contact-solver configuration's step is from a converged solve of the same engine,
 * on the same saved states (herd-bench env --vs-mujoco).
 *
 * For each state: one physics step with the configuration and one with the engine's converged reference, both from
 * an exact copy of the state (herd: sim_data_copy_state, which keeps the warm-start cache; MuJoCo:
 * bench_mj_save_state, which keeps qacc_warmstart), then
 *   impulse error   |f - f_ref| / |f_ref| over the stacked per-contact vectors (normal and both friction
 *                   components, contact frames) of the step's contacts: herd's impulses d->lambda, MuJoCo's
 *                   mj_contactForce (its force x dt is the impulse, so the relative error is the same); states without
 *                   a contact, or whose reference carries no impulse, are left out;
 *   velocity error  |u - u_ref| / |u_ref| of the generalized velocity after the step (herd's u, MuJoCo's qvel).
 * Medians and 90th percentiles over the states. */
#ifndef HERD_BENCH_ACCURACY_H
#define HERD_BENCH_ACCURACY_H

#include "sim_model.h"

typedef struct {
    int states;                     /* states compared */
    int contact_states;             /* of those, the ones that enter the impulse error */
    double impulse_median, impulse_p90;
    double velocity_median, velocity_p90;
} bench_accuracy;

/* |a - ref| / |ref| of n-vectors; 0 when both are zero, INFINITY when only ref is. */
double bench_rel_err(const double *a, const double *ref, int n);

/* Fills the statistics of acc from the per-state errors (imp: ni values, vel: nv values; both reordered). */
void bench_accuracy_stats(bench_accuracy *acc, double *imp, int ni, double *vel, int nv, int states);

/* The fastest of n configurations (sec[k]: its time, smaller is faster) among those with eligible[k] set and
 * impulse_median[k] <= bound; -1 if none.  Ties go to the lower index. */
int bench_pick_accurate(int n, const double *sec, const double *impulse_median, const int *eligible, double bound);

/* herd: one sim_step of dt seconds of model cfg and one of model ref (the same robot and terrain, other step options)
 * from each of the n states (worlds of either model, with their applied force tau), compared as above.  Returns 0,
 * or -1 if out of memory. */
int bench_herd_accuracy(const sim_model *cfg, const sim_model *ref, double dt, const sim_data *const *states, int n,
                        bench_accuracy *out);

/* MuJoCo (for files that include <mujoco/mujoco.h> first; bench_accuracy_mj.c, linked where MuJoCo is): a solver
 * configuration of model m, noslip off. */
#ifdef mjVERSION_HEADER
typedef struct {
    int solver, iterations, cone;   /* mjtSolver, opt.iterations, mjtCone */
    double tolerance;
} bench_mj_cfg;

/* A saved MuJoCo state: what mj_step reads of a model without actuators, mocap bodies or xfrc_applied (qpos, qvel,
 * qacc_warmstart, qfrc_applied and time), bench_mj_state_size(m) doubles; a few hundred bytes where a whole mjData
 * (mj_copyData) takes megabytes. */
int bench_mj_state_size(const mjModel *m);
void bench_mj_save_state(const mjModel *m, const mjData *d, double *state);
/* d = a fresh mjData (mj_resetData) with the saved state: it steps on exactly as the saved one. */
void bench_mj_load_state(const mjModel *m, mjData *d, const double *state);

/* One mj_step with cfg and one with ref from each of the n saved states (states + k bench_mj_state_size(m)),
 * compared as above.  m->opt is restored before returning.  Returns 0, or -1 if out of memory. */
int bench_mj_accuracy(mjModel *m, const double *states, int n, const bench_mj_cfg *cfg, const bench_mj_cfg *ref,
                      bench_accuracy *out);
#endif

#endif

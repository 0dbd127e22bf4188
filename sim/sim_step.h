/* sim_step.h — one time step of a world with contacts:
 *   smooth dynamics -> free velocity -> collision -> contact Jacobians and Delassus blocks
 *   (through the LTDL factor, never with M^-1) -> warm-started per-contact solver -> velocity
 *   update -> semi-implicit position update.
 *
 * Velocity-level time stepping (Hwangbo et al. 2018, Sec. II):
 *   M (u+ - u) = dt (tau + passive - h) + J^T lambda,  lambda = contact impulses (N·s).
 * The Signorini condition is imposed on the normal velocity.  By default it is gap-aware: a contact
 * whose gap g > 0 may close it within the step but not pass it (v_n+ >= -g/dt), so contacts can be
 * picked up slightly before touching without ever pulling; impacts are inelastic.  An optional erp
 * pushes out an existing penetration p at v_n+ >= erp p / dt (off by default).
 */
#ifndef HERD_SIM_STEP_H
#define HERD_SIM_STEP_H

#include "sim_collision.h"
#include "sim_metrics.h"
#include "sim_model.h"

#include "sim_solver.h"

/* Steps world d by dt seconds using d->tau (generalized force: N·m for hinges, N for slides and the
 * base's linear dofs) as the applied force.  Allocation-free.  Returns 0, or -1 if the state became
 * non-finite (the caller resets the world).  Exactly sim_step_prepare, sim_step_solve, sim_step_finish. */
int sim_step(const sim_model *m, sim_data *d, double dt);

/* The three phases of sim_step, public so that a benchmark or tool can time or inspect them (calling the
 * three in order is bit-for-bit sim_step):
 *   prepare: sim_smooth, free velocity d->ufree, collision (d->con, d->ncon), contact Jacobians d->Jc,
 *            Delassus matrix d->G, free contact velocities with targets d->cfree (m/s), friction d->mu and
 *            the warm starts in d->lambda (N·s; contact frames).  Resets d->stats.  Returns d->ncon.
 *   solve:   the model's contact solver on (d->G, d->cfree, d->mu) -> d->lambda; fills the solver stats.  A
 *            solver that reads the pre-step contact velocity (sim_solver_uses_pre_velocity: "impacts") also gets
 *            v_pre = J u (sim_step_pre_velocity, before finish overwrites u); for the others nothing is computed.
 *   finish:  u = ufree + M^-1 J^T lambda, the warm-start cache, the position update; returns as sim_step. */
int sim_step_prepare(const sim_model *m, sim_data *d, double dt);
/* sim_step / sim_step_prepare for a caller that has just run sim_kinematics on this very state (neither d->q nor
 * d->root_added_mass changed since; the model never does): kinematics_current = 1 skips that stage, bit-for-bit
 * the same result; 0 is sim_step / sim_step_prepare.  A controller that needs the kinematics anyway (the trot
 * scenario's) saves computing them twice per step. */
int sim_step_kin(const sim_model *m, sim_data *d, double dt, int kinematics_current);
int sim_step_prepare_kin(const sim_model *m, sim_data *d, double dt, int kinematics_current);
void sim_step_solve(const sim_model *m, sim_data *d);
/* The rest of sim_step for a world whose smooth stages are current (sim_smooth and sim_free_velocity ran on this
 * very state, or sim_batch_load copied them in): sim_step_prepare_contacts, sim_step_solve, sim_step_finish.
 * Bit-for-bit sim_step then; returns as sim_step. */
int sim_step_from_smooth(const sim_model *m, sim_data *d, double dt);
/* prepare without its smooth stages (for a world whose smooth stages are current, as above): collision, contact
 * Jacobians, Delassus matrix, free contact velocities with targets, friction and warm starts.  Returns d->ncon. */
int sim_step_prepare_contacts(const sim_model *m, sim_data *d, double dt);
/* sim_step_prepare_contacts after its collision, for a caller that found this step's contacts itself, as sim_collide
 * finds them (sim_batch_collide): d->con[0 .. nc) (nc <= d->ncon_max).  Returns nc. */
int sim_step_prepare_found(const sim_model *m, sim_data *d, double dt, int nc);
int sim_step_finish(const sim_model *m, sim_data *d, double dt);

/* The pre-step contact velocities v_pre = J u of this step's contacts (3 ncon, m/s, contact frames; u the
 * velocity at the start of the step, without this step's forces or impulses), written to d->vpre and returned.
 * Valid between sim_step_prepare and sim_step_finish (finish overwrites u). */
const double *sim_step_pre_velocity(const sim_model *m, sim_data *d);

/* Contact-physics metrics of the last step's contact problem (sim_metrics.h; forces in N, dt in s). */
void sim_step_metrics(const sim_model *m, const sim_data *d, double dt, sim_contact_metrics_t *out);

/* Forgets the warm-start cache (after a reset or a teleport). */
void sim_step_forget_contacts(sim_data *d);

/* Jacobian of contact k of the last step (3 x nv, rows t1, t2, n) — valid until the next step. */
const double *sim_step_contact_jacobian(const sim_model *m, const sim_data *d, int k);

#endif

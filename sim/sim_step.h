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
 *
 * Joints (sim_model.h's sim_body) add blocks to the same contact problem, after the geometry contacts (d->con,
 * d->ncon keep meaning those; the solvers' block kinds are rows.md's, sim_solver.h):
 *   - position limits (opt.joint_limits, sim_model_joint_limited): one frictionless, gap-aware block per joint whose
 *     nearer side is within reach this step (gap g = q - lower, or upper - q, below margin plus the distance the
 *     joint may travel toward it in dt), row n = +e_dof (lower) or -e_dof (upper), empty tangent rows:
 *     v_n+ >= -g/dt (erp as for contacts when g < 0), lambda >= 0, complementary; impulses in N·m·s (N·s);
 *   - Coulomb joint friction ("frictionloss", body.friction > 0): a bounded bilateral block per joint, row n =
 *     e_dof, |lambda| <= friction dt, opposing the joint's velocity;
 *   both warm-started by (dof, side).  Their Delassus entries come from the same LTDL sweep as the contacts'.
 * Joint damping is implicit: the step factors M + dt diag(damping) (MuJoCo's Euler integrator does the same for
 * the smooth forces), and the contact problem is posed with that matrix; armature is on M's diagonal (sim_crba).
 */
#ifndef HERD_SIM_STEP_H
#define HERD_SIM_STEP_H

#include "sim_collision.h"
#include "sim_metrics.h"
#include "sim_model.h"

#include "sim_solver.h"

/* The stages of a physics step, in the order they run; each reads what the stages before it wrote.
 *   KINEMATICS  sim_kinematics: body poses, frames and motion subspaces of q (and d->root_added_mass)
 *   SMOOTH      sim_smooth_dynamics with sim_factor_damped, and sim_free_velocity: velocities, M and the LTDL factor
 *               of M + dt diag(damping), bias forces, and the free velocity d->ufree (tau in N·m / N, dt in s)
 *   COLLISION   the contacts d->con[0 .. d->ncon) (sim_collide)
 *   CONTACTS    the joint blocks (d->nlim limits, d->nfric friction rows after the d->ncon contacts), the blocks'
 *               Jacobians d->Jc, Delassus matrix d->G, free velocities with targets d->cfree (m/s), d->mu and the
 *               warm starts in d->lambda (N·s; contact frames); resets d->stats
 *   SOLVE       the model's contact solver on (d->G, d->cfree, d->mu) -> d->lambda, and the solver stats
 *   INTEGRATE   u = ufree + M^-1 J^T lambda, the warm-start cache, the position update: the step is done
 * SIM_STAGE_NONE is "nothing of this step computed yet". */
typedef enum sim_stage {
    SIM_STAGE_NONE = 0,
    SIM_STAGE_KINEMATICS,
    SIM_STAGE_SMOOTH,
    SIM_STAGE_COLLISION,
    SIM_STAGE_CONTACTS,
    SIM_STAGE_SOLVE,
    SIM_STAGE_INTEGRATE,
} sim_stage;

/* Runs the stages of one step of world d after `done` through `last` (done < last <= SIM_STAGE_INTEGRATE),
 * using d->tau as the applied force.  `done` is the last stage already current for this very state: NONE for a
 * whole step; KINEMATICS after sim_kinematics on it (neither d->q nor d->root_added_mass changed since); COLLISION
 * for a caller that found this step's contacts itself as sim_collide finds them (d->con[0 .. d->ncon), as
 * sim_batch_step does).  A step run in several calls, or with stages the caller made current, is bit for bit the
 * step run in one call.  Allocation-free.  Returns -1 if `last` is INTEGRATE and the state became non-finite (the
 * caller resets the world), else 0. */
int sim_step_stages(const sim_model *m, sim_data *d, double dt, sim_stage done, sim_stage last);

/* One whole step of world d by dt seconds: sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE). */
int sim_step(const sim_model *m, sim_data *d, double dt);

/* The pre-step velocities v_pre = J u of this step's blocks (3 (ncon + nlim + nfric), m/s, contact frames; u the
 * velocity at the start of the step, without this step's forces or impulses), written to d->vpre and returned.
 * Valid between the CONTACTS and INTEGRATE stages (INTEGRATE overwrites u).  The SOLVE stage computes them itself
 * for a solver that reads them (sim_solver_uses_pre_velocity: "impacts"). */
const double *sim_step_pre_velocity(const sim_model *m, sim_data *d);

/* Contact-physics metrics of the last step's contact problem (sim_metrics.h; forces in N, dt in s). */
void sim_step_metrics(const sim_model *m, const sim_data *d, double dt, sim_contact_metrics_t *out);

/* Forgets the warm-start cache (after a reset or a teleport). */
void sim_step_forget_contacts(sim_data *d);

/* Jacobian of block k of the last step (3 x nv, rows t1, t2, n; a joint block's row n is +-e_dof) — valid until
 * the next step. */
const double *sim_step_contact_jacobian(const sim_model *m, const sim_data *d, int k);

#endif

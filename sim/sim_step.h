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
#include "sim_model.h"
#include "sim_solver.h"

/* Steps world d by dt seconds using d->tau as the applied generalized force.  Allocation-free.
 * Returns 0, or -1 if the state became non-finite (the caller resets the world). */
int sim_step(const sim_model *m, sim_data *d, double dt);

/* Contact-physics metrics of the last step's contact problem (comparative paper, Sec. III). */
void sim_step_metrics(const sim_model *m, const sim_data *d, double dt, sim_contact_metrics_t *out);

/* Forgets the warm-start cache (after a reset or a teleport). */
void sim_step_forget_contacts(sim_data *d);

/* Jacobian of contact k of the last step (3 x nv, rows t1, t2, n) — valid until the next step. */
const double *sim_step_contact_jacobian(const sim_model *m, const sim_data *d, int k);

#endif

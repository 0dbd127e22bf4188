/* sim_dynamics.h — Featherstone's algorithms on a sim_model / sim_data pair, double precision.
 *
 * All spatial quantities are expressed in world axes about a reference point d->ref equal to the
 * root origin at the time of the kinematics call (as a fixed point of space), which keeps every
 * recursion free of coordinate transforms.  Call order for one step:
 *   sim_kinematics -> sim_velocity -> sim_crba -> sim_factor -> sim_rnea (any order after velocity)
 * sim_smooth() does all five.  None of these allocate.  The tree recursions (kinematics to RNEA, the LTDL solves,
 * the free velocity) are in sim_tree.c, written once (sim_tree_impl.h) for one world and for a batch of worlds
 * stepped together (sim_batch.h), which gives each world the same numbers bit for bit.
 *
 * Units: SI (m, kg, s, rad; forces N, torques N·m; generalized forces per dof are N for linear dofs and
 * N·m for angular ones).  Frames as in sim_model.h: q, u in generalized coordinates (floating base:
 * v_world, omega_body); positions and Jacobians in the world frame.  Ownership: results go into d's
 * arrays; vectors passed in (x, X, y, out, jp, jr, cols) are owned by the caller and sized as stated
 * (nv unless said otherwise).
 */
#ifndef HERD_SIM_DYNAMICS_H
#define HERD_SIM_DYNAMICS_H

#include "sim_model.h"

/* Forward kinematics from d->q: xpos, xrot, xcom, cinert, cdof. */
void sim_kinematics(const sim_model *m, sim_data *d);
/* Body spatial velocities cvel and cdof_dot from d->u (needs kinematics). */
void sim_velocity(const sim_model *m, sim_data *d);
/* Composite-rigid-body algorithm: the joint-space mass matrix (joint armature included), packed along the tree in
 * d->Mp (needs kinematics).  The dense d->M is filled only by sim_full_m (the step never needs it). */
void sim_crba(const sim_model *m, sim_data *d);
/* d->M (nv x nv, row-major) from the packed d->Mp of the last sim_crba / sim_smooth; entries of dofs that are not
 * tree-coupled stay 0. */
void sim_full_m(const sim_model *m, sim_data *d);
/* LTDL factorization M = L^T D L into d->LD, exploiting the tree (Featherstone RBDA 6.3); rows are
 * packed along each dof's ancestors (sim_model.dof_adr), so the inner loops are contiguous. */
void sim_factor(const sim_model *m, sim_data *d);
/* The LTDL factor of M + dt diag(damping) into d->LD (joint dofs' damping; the free velocity with this factor
 * integrates damping implicitly, as MuJoCo's Euler integrator); dt = 0 is sim_factor.  sim_step factors this way. */
void sim_factor_damped(const sim_model *m, sim_data *d, double dt);
/* Recursive Newton-Euler: d->h = C(q,u) u + g(q), the generalized bias force (needs velocity). */
void sim_rnea(const sim_model *m, sim_data *d);
/* All of the above. */
void sim_smooth(const sim_model *m, sim_data *d);
/* sim_smooth without sim_kinematics (velocities, CRBA, LTDL, RNEA), for kinematics already current. */
void sim_smooth_dynamics(const sim_model *m, sim_data *d);

/* x := M^-1 x in place using the LTDL factor (no inverse is formed).  n = m->nv. */
void sim_solve_m(const sim_model *m, const sim_data *d, double *x);
/* x := L^-1 x, the last stage of sim_solve_m, with the unit lower factor L = d->LD (packed as sim_factor leaves
 * it). */
void sim_ltdl_forward(const sim_model *m, const double *L, double *x);
/* X := M^-1 X for k column vectors stored contiguously (X[j*nv + i]). */
void sim_solve_m_multi(const sim_model *m, const sim_data *d, double *X, int k);
/* y := M x using the packed mass matrix d->Mp. */
void sim_mul_m(const sim_model *m, const sim_data *d, const double *x, double *y);

/* The free velocity d->ufree = u + dt M^-1 (tau + passive - h): the velocity a step of dt seconds reaches without
 * contact impulses (needs sim_smooth; with sim_factor_damped(dt) instead of sim_factor, damping is implicit). */
void sim_free_velocity(const sim_model *m, sim_data *d, double dt);

/* Generalized force of joint damping: out[i] = -damping * u[i] for joint dofs, 0 for the base. */
void sim_passive(const sim_model *m, const sim_data *d, double *out);
/* Forward dynamics without contacts: d->udot = M^-1 (tau + passive - h).  Needs sim_smooth. */
void sim_forward(const sim_model *m, sim_data *d);

/* World position (m) of a point given in body b's frame (m); needs kinematics. */
void sim_point_world(const sim_model *m, const sim_data *d, int b, const double local[3], double out[3]);
/* Translational Jacobian (3 x nv, row-major) of a point given in WORLD coordinates that moves with
 * body b: v_point = J u.  If jr is not NULL it also receives the rotational Jacobian (3 x nv). */
void sim_jacobian(const sim_model *m, const sim_data *d, int b, const double pworld[3], double *jp, double *jr);
/* Same, but only the columns on the path root..b are written: cols[k] lists them (returns count).
 * Entries in other columns are left untouched (callers zero them once). */
int sim_jacobian_sparse(const sim_model *m, const sim_data *d, int b, const double pworld[3],
                        double *jp, int *cols);
/* sim_jacobian_sparse that also returns the point's world velocity v = J d->u (m/s), summed along the path
 * (body -> root) in the same pass. */
int sim_jacobian_sparse_vel(const sim_model *m, const sim_data *d, int b, const double pworld[3],
                            double *jp, int *cols, double v[3]);

/* Semi-implicit Euler: u += dt * d->udot, then q += dt * u with the quaternion updated by the body
 * angular velocity on the manifold (q <- q ⊗ exp(dt w / 2)) and renormalized.  time += dt. */
void sim_integrate(const sim_model *m, sim_data *d, double dt);
/* Position update only (q from u), used after a contact solve has set u. */
void sim_integrate_pos(const sim_model *m, sim_data *d, double dt);

/* Energies: kinetic 1/2 u^T M u (needs crba) and potential -sum m g.c (needs kinematics). */
double sim_energy_kinetic(const sim_model *m, const sim_data *d);
double sim_energy_potential(const sim_model *m, const sim_data *d);
/* Spatial momentum about the world origin, world axes [angular; linear] (needs velocity). */
void sim_momentum(const sim_model *m, const sim_data *d, double out[6]);

#endif

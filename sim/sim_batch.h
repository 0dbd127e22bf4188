/* sim_batch.h — several worlds of one model stepped together: the stages of a step that do the same work for every
 * world (forward kinematics, velocities, CRBA, the LTDL factorization, RNEA and the free velocity, about a quarter
 * of an ANYmal walk step) run once for up to SIM_BATCH_LANES worlds, one world per lane of a vector of doubles;
 * the contact stages, whose work depends on each world's contacts, then run world by world as in sim_step.
 *
 * Bit for bit sim_step: a lane computes exactly the operations the one-world code computes (both are
 * sim_tree_impl.h; see there why), so sim_batch_step leaves a world exactly as sim_step would, whatever the batch
 * it was stepped in, its lane, or the other worlds of the batch (tests/test_batch.c).  Batching is a matter of
 * speed only: results do not depend on how worlds are grouped.
 *
 * Use, per physics step of a group of n <= SIM_BATCH_LANES worlds d[0..n-1] of model m:
 *     sim_batch_smooth(m, b, d, n, dt);                              reads each world's q, u, tau, root_added_mass
 *     for (i = 0; i < n; i++)
 *         rc[i] = sim_batch_step(m, b, i, d[i], dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);   = sim_step(m, d[i], dt)
 * Between the two calls a world's state must not change.  sim_batch_step writes the world's scratch (which may be
 * one scratch shared by the worlds in turn, as sim_data_bind_scratch allows) and steps it.
 *
 * Ownership: the batch lives in memory the caller provides (sim_batch_size bytes, 64-byte aligned, e.g. on a
 * worker's stack); it holds no pointer to a world after the call that used it, and needs no destructor.
 * Allocation-free.  A batch serves one model (the one it was initialized for) and one thread at a time.
 */
#ifndef HERD_SIM_BATCH_H
#define HERD_SIM_BATCH_H

#include <stddef.h>

#include "sim_model.h"
#include "sim_step.h"

/* Worlds per batch: the lanes of the vectors the batch computes in (four doubles: one AVX2 register). */
#define SIM_BATCH_LANES 4

typedef struct sim_batch sim_batch;

/* Bytes of memory a batch for model m needs (it grows with the model's dofs, geometries and contact candidates). */
size_t sim_batch_size(const sim_model *m);

/* A batch for model m in mem (64-byte aligned, sim_batch_size(m) bytes); returns mem as a sim_batch. */
sim_batch *sim_batch_init(const sim_model *m, void *mem);

/* The smooth stages of a step for worlds d[0..n-1] (1 <= n <= SIM_BATCH_LANES), dt in s: sim_kinematics,
 * sim_velocity, sim_crba, sim_factor_damped, sim_rnea and sim_free_velocity of each world, into the batch (the
 * worlds are only read); on flat ground (no height field) also every geometry's contact candidates (sim_collide's
 * points, gaps and approach speeds). */
void sim_batch_smooth(const sim_model *m, sim_batch *b, sim_data *const *d, int n, double dt);

/* World `lane` of the last sim_batch_smooth (d must be that world, unchanged since): the stages of its step after
 * `done` through `last` (sim_step_stages' stages and arguments; done < last).  The stages through COLLISION come
 * from the batch: KINEMATICS and SMOOTH copy what the rest of the step reads into d's scratch (ref, cdof, LD and
 * ufree; where the ground is not flat also xpos, xrot and cvel, which sim_collide then reads), COLLISION finds the
 * world's contacts into d->con, d->ncon (from the batch's candidates on flat ground, else by sim_collide); the
 * later stages are sim_step_stages(m, d, dt, SIM_STAGE_COLLISION, last).  Bit for bit sim_step_stages on d alone;
 * returns what it returns.  After a whole step d's scratch holds what sim_step leaves there, except the arrays the
 * rest of the step does not read (xcom, cinert, cdof_dot, Mp, h and the CRBA / RNEA internals; on flat ground also
 * xpos, xrot and cvel), which are not written. */
int sim_batch_step(const sim_model *m, const sim_batch *b, int lane, sim_data *d, double dt, sim_stage done,
                   sim_stage last);

#endif

/* sim_limits.h — the contact problem's bounds and block kinds, shared by the solvers (sim_solver.h), the metrics
 * (sim_metrics.h) and whoever builds a problem (sim_step.c).  Data-only: constants and one-line predicates. */
#ifndef HERD_SIM_LIMITS_H
#define HERD_SIM_LIMITS_H

/* Largest n accepted by the multi-contact functions (their scratch lives on the stack: ~20 kB). */
#define SIM_SOLVER_MAX_CONTACTS 128

/* Friction coefficients below SIM_MU_FRICTIONLESS make a frictionless contact; above SIM_MU_MAX they act
 * as SIM_MU_MAX (keeps mu^2 finite). */
#define SIM_MU_FRICTIONLESS 1e-9
#define SIM_MU_MAX 1e12

/* A block's kind is told by its mu (sim_solver.h): mu >= 0 a contact (a joint limit is the contact with mu = 0 and
 * empty tangent rows), mu < 0 a bounded bilateral row with |lambda_n| <= b, b = -mu (N·s): Coulomb joint friction.
 * SIM_BLOCK_BOX(b) is the mu that encodes the bound b > 0. */
#define SIM_BLOCK_BOX(b) (-(b))
/* 1 if mu encodes a bounded bilateral row, else 0. */
static inline int sim_block_is_box(double mu) { return mu < 0; }
/* The bound b (N·s) of a bounded bilateral row's mu. */
static inline double sim_block_box_bound(double mu) { return -mu; }

#endif

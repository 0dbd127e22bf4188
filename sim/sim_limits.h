/* sim_limits.h — the contact problem's bounds, shared by the solvers (sim_solver.h) and the metrics
 * (sim_metrics.h).  Data-only: constants. */
#ifndef HERD_SIM_LIMITS_H
#define HERD_SIM_LIMITS_H

/* Largest n accepted by the multi-contact functions (their scratch lives on the stack: ~20 kB). */
#define SIM_SOLVER_MAX_CONTACTS 128

/* Friction coefficients below SIM_MU_FRICTIONLESS make a frictionless contact; above SIM_MU_MAX they act
 * as SIM_MU_MAX (keeps mu^2 finite). */
#define SIM_MU_FRICTIONLESS 1e-9
#define SIM_MU_MAX 1e12

#endif

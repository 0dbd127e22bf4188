/* sim_solver_internal.h — what the solver sources (sim_solver*.c) share; not part of the public API. */
#ifndef HERD_SIM_SOLVER_INTERNAL_H
#define HERD_SIM_SOLVER_INTERNAL_H

#include "sim_solver.h"

/* A solver's iterations on a valid problem with n > 0: v = G lambda + c (3n) on entry, *st reset, p not NULL. */
typedef int (*sim_solver_sweeps_fn)(int n, const double *G, const double *c, const double *mu, double *lambda,
                                    const sim_solver_params *p, sim_solver_stats *st, double *v);

/* Resets *st, substitutes the defaults for a NULL p, validates (SIM_SOLVER_EINVAL), returns SIM_SOLVER_OK for n = 0,
 * else computes v and returns sweeps(...). */
int sim_solver_run(sim_solver_sweeps_fn sweeps, int n, const double *G, const double *c, const double *mu,
                   double *lambda, const sim_solver_params *p, sim_solver_stats *st);

/* sim_solver_run for a solver that takes the structure of G (passed through to sweeps as is). */
typedef int (*sim_solver_sweeps_tree_fn)(int n, const double *G, const double *c, const double *mu, double *lambda,
                                         const sim_solver_params *p, sim_solver_stats *st, double *v,
                                         const sim_solver_tree *tree);
int sim_solver_run_tree(sim_solver_sweeps_tree_fn sweeps, int n, const double *G, const double *c, const double *mu,
                        double *lambda, const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree);

/* v += G[:, 3i..3i+2] delta (N = 3n, G symmetric); v must not overlap G (restrict in the definition). */
void sim_solver_add_column_block(int N, const double *G, int i, const double delta[3], double *v);

/* If the kinetic-energy change c.lambda + 1/2 lambda.G lambda is positive, scales lambda (and v = G lambda + c) by
 * the s in [0, 1] minimizing it; returns s (1: untouched). */
double sim_solver_dissipation_guard(int N, const double *G, const double *c, double *lambda, double *v);

/* Sets st->n_open / n_stick / n_slip from lambda alone (open: lambda_n <= 0; slip: on the cone's boundary;
 * a bounded row: slip at a bound, else stick). */
void sim_solver_count_modes(int n, const double *mu, const double *lambda, sim_solver_stats *st);

/* Sets lambda_T = 0 on the blocks that use row n only: bounded bilateral rows (mu < 0) and joint limits (mu below
 * SIM_MU_FRICTIONLESS with G_xx = G_yy = 0, so empty tangent rows); their G columns are zero, so v is unchanged.
 * The solvers call it on entry, so that a warm start cannot leave a tangential impulse there. */
void sim_solver_clear_empty_tangents(int n, const double *G, const double *mu, double *lambda);

/* The closing shared by the solvers: fills iterations, error, converged; SIM_SOLVER_OK or SIM_SOLVER_MAXITER. */
int sim_solver_end(sim_solver_stats *st, int iterations, double err, double tol);

/* Internal return code of sim_solver_coulomb_sweeps_stall: the stall detector fired (lambda is the last iterate,
 * v = G lambda + c, st->iterations the sweeps done). */
#define SIM_SOLVER_STALLED 2

/* Algorithm 2 with Coulomb per-contact solves (sweeps_fn form).  With p->stall_window > 0 it returns
 * SIM_SOLVER_STALLED as soon as the error is not below p->stall_drop times its value p->stall_window sweeps
 * earlier, or when max_iter sweeps end unconverged; with stall_window = 0 it is coulomb-bisection. */
int sim_solver_coulomb_sweeps_stall(int n, const double *G, const double *c, const double *mu, double *lambda,
                                    const sim_solver_params *p, sim_solver_stats *st, double *v);

/* In-place Cholesky A = L L^T of an N x N SPD matrix (row-major; sim_solver_admm.c): the strict lower triangle holds L,
 * the strict upper its mirror, the diagonal the reciprocals 1 / L_jj.  Returns the smallest pivot L_jj^2, or 0 if A
 * is not numerically positive definite. */
double sim_chol_dense(double *A, int N);
/* x := (L L^T)^-1 x with L as sim_chol_dense leaves it. */
void sim_chol_solve(const double *L, int N, double *x);

/* LU factorization with partial pivoting of A (k x k row-major, in place: U on and above the diagonal, the
 * multipliers below), tiny pivots raised to SIM_LU_PIVOT_FLOOR times amax, the largest |entry| of A (found here when
 * amax < 0; a caller that wrote A may have it): a singular system (a redundant set of contacts) gets one of its many
 * solutions.  perm[r]: the row of A that became row r.  Returns 0, or -1 if A is zero (sim_solver_direct.c). */
#define SIM_LU_PIVOT_FLOOR 1e-13
int sim_lu_factor(int k, double *A, int *perm, double amax);
/* x = A^-1 b with sim_lu_factor's A and perm (b and x of length k, distinct). */
void sim_lu_solve(int k, const double *A, const int *perm, const double *b, double *x);

#endif

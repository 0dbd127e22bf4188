/* sim_solver_cond.h — COND: contact nodalization and diagonalization with a velocity fixed-point iteration
 * (V-FPI), after Lee, Lee & Lee 2023, "Large-dimensional multibody dynamics simulation using contact
 * nodalization and diagonalization" (Sec. III, Algs. 1-3).  Pure: no model, no allocation, no state.
 *
 * The contact problem (G, c, mu, lambda) is the one of sim_solver.h: n contacts with frames (t_x, t_y, n),
 * G the 3n x 3n Delassus matrix (1/kg), c the free contact velocity (m/s), lambda the impulses (N·s, in:
 * warm start, out: solution), v = G lambda + c.
 *
 * How the paper's method maps onto a problem given in contact space.
 *   Nodalization: in contact coordinates every contact already is a node whose Jacobian is its own frame
 *   (J_c = I), which is the limit k_v -> infinity of the paper's virtual nodes (its Prop. 2), so no virtual
 *   node and no perturbation k_v^-1 J J^T lambda is introduced.
 *   Diagonalization: the surrogate dynamics matrix W (eq. 22) is block-scalar, W = diag(w_m I_3), so the
 *   surrogate Delassus Gamma = J W J^T = W is diagonal (Prop. 3) and every contact is solved in one shot,
 *   independently of the others (Alg. 2): lambda*_m = -(eta_m) / w_m, lambda_m = ProjectFC(lambda*_m).
 *   w_m is the largest Gershgorin row sum of the contact's three rows of G (sum_j |G_rj|), times w_scale
 *   (0.6): the Gershgorin bound D >= G, and W = 0.6 D > G / 2 keeps the proximal variant a convergent
 *   proximal-gradient method (the paper uses the same absolute-sum diagonal for its SPD projection).
 *   On the four ANYmal scenarios 0.6 takes fewer iterations than 1.0.
 *   V-FPI: the paper iterates on the generalized velocity with the dynamics residual A v - b (A = G^-1 here).
 *   A Delassus matrix is often singular (four corners of a box: rank 6 of 12), where no velocity iteration
 *   in A = G^-1 can contract, so each iteration re-evaluates the velocity on the dynamics, v = G lambda + c
 *   (the consistent form of eqs. 20 and 24 with A v - b = lambda):
 *       eta = v - W lambda,   lambda <- ProjectFC(-W^-1 eta) per contact,   v <- G lambda + c.
 *   Its fixed points are the paper's (Remark 1: at convergence the dynamics hold exactly), and the
 *   iteration costs one 3n x 3n matrix-vector product plus n one-shot projections (parallel over contacts:
 *   Jacobi, not Gauss-Seidel).  Chebyshev acceleration (Alg. 3, eqs. 38-39) with under-relaxation is on by
 *   default; it is restarted whenever the residual grows.
 *
 * The model solved (conditions at a converged solution), by projection operator (eq. 26):
 *   STRICT (default): lambda_n = max(lambda*_n, 0), lambda_T = projection of lambda*_T on the disc
 *     |lambda_T| <= mu lambda_n.  A fixed point satisfies Signorini (lambda_n >= 0, v_n >= 0, lambda_n v_n = 0),
 *     the cone |lambda_T| <= mu lambda_n, and Coulomb's sliding law exactly: v_T = 0 (stick) or v_T = -k lambda_T,
 *     k >= 0, with |lambda_T| = mu lambda_n (slip).  This is the Coulomb NCP (the paper's SCC, eq. 11), the
 *     same model as the NCP-PGS solver, not the bisection paper's ellipse model.  No convergence guarantee
 *     (the paper's Sec. IV-A); multiple Coulomb solutions exist for some strongly coupled G.
 *   PROXIMAL: lambda = Euclidean projection of lambda* on the cone.  A fixed point is the CCP (Anitescu's
 *     convex relaxation, the paper's Prop. 5 and eq. 36): the cone and the sliding law hold, but Signorini is
 *     relaxed to v_n = mu |v_T| on a slipping contact (the contact separates while it slides: "gliding"), so
 *     it departs from Coulomb on every slipping contact.  It always converges (proximal gradient on a convex
 *     problem with W >= G/2) and its solution is unique in v.
 * The other block kinds of sim_solver.h.  A joint limit (mu = 0, empty tangent rows) is a frictionless contact:
 *   both operators give lambda_T = 0, lambda_n = max(0, lambda*_n), so a fixed point is Signorini on row n; its w_m
 *   is its normal row's Gershgorin sum (the empty rows sum to 0), never 0 while G_nn > 0.  A bounded bilateral row
 *   (mu < 0, b = -mu) is projected on the box, lambda_T = 0, lambda_n = clamp(lambda*_n, -b, b), the Euclidean
 *   projection, so under either operator a fixed point is the box condition (|lambda_n| < b => v_n = 0, lambda_n =
 *   b => v_n <= 0, lambda_n = -b => v_n >= 0): exactly what the per-contact sweeps and ADMM's projection on [-b, b]
 *   give.  Surrogate and residual are unchanged.  The tangential impulses of both kinds are zeroed on entry.
 * Error (st->error and the stopping test): the fixed-point residual of the unaccelerated map at the final
 *   iterate, sum_m |ProjectFC(lambda_m - v_m / w_m) - lambda_m| (N·s); it is zero exactly at a solution of
 *   the model above.  Stops when it is below tol or after max_iter iterations.
 * Without convergence lambda is the last one-shot output (always in the cones); if the impulses would then
 *   add kinetic energy (c.lambda + 1/2 lambda.G lambda > 0) they are scaled by the s in [0, 1] minimizing
 *   that change (st->guard_scale), as the other solvers do.
 */
#ifndef HERD_SIM_SOLVER_COND_H
#define HERD_SIM_SOLVER_COND_H

#include "sim_solver.h"

enum { SIM_COND_STRICT = 0, SIM_COND_PROXIMAL = 1 };

typedef struct sim_cond_params {
    int max_iter;        /* V-FPI iterations (1000) */
    double tol;          /* fixed-point residual threshold, N·s (1e-8) */
    int projection;      /* SIM_COND_STRICT (Coulomb NCP) or SIM_COND_PROXIMAL (CCP) */
    double w_scale;      /* W = w_scale x the Gershgorin bound (0.6; > 0.5 keeps PROXIMAL convergent: W - G/2 > 0) */
    int chebyshev;       /* 1: Chebyshev acceleration (Alg. 3), 0: plain V-FPI (1) */
    int cheb_start;      /* l_s: iterations before the acceleration starts (5) */
    double cheb_relax;   /* under-relaxation u in (0, 1] of the accelerated step (1.0: none) */
} sim_cond_params;

typedef struct sim_cond_stats {
    int iterations;      /* V-FPI iterations done */
    double error;        /* final fixed-point residual (N·s) */
    int converged;       /* error < tol */
    int n_open, n_stick, n_slip; /* modes of the returned impulses */
    int restarts;        /* Chebyshev restarts (the residual grew) */
    double guard_scale;  /* 1, or the dissipation guard's factor */
} sim_cond_stats;

/* Fills p with the defaults listed in sim_cond_params. */
void sim_cond_default_params(sim_cond_params *p);

/* COND / V-FPI on the problem (see above).  lambda: warm start in, solution out.  p may be NULL (defaults),
 * st NULL.  Returns SIM_SOLVER_OK (converged), SIM_SOLVER_MAXITER or SIM_SOLVER_EINVAL (bad input, lambda
 * untouched).  Allocation-free (stack scratch ~10 kB); n <= SIM_SOLVER_MAX_CONTACTS. */
int sim_cond_solve(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_cond_params *p, sim_cond_stats *st);

/* The same with an upper bound on each normal impulse: 0 <= lambda_n,m <= cap[m] (N·s; INFINITY for none),
 * the box-constrained Signorini condition (lambda_n = cap allows v_n < 0).  STRICT only reads the cap (the
 * projection clamps lambda_n to [0, cap] before the disc); used by the impact model (sim_impacts.h) for its
 * bounded normal increments.  The guard is not applied (the caller owns the energy accounting).  v, if not
 * NULL, receives G lambda + c (3n). */
int sim_cond_solve_capped(int n, const double *G, const double *c, const double *mu, const double *cap,
                          double *lambda, const sim_cond_params *p, sim_cond_stats *st, double *v);

/* sim_cond_solve_capped for an increment of an impact (sim_impacts.h): a bounded bilateral row m (mu < 0) keeps its
 * total acc_n,m + lambda_n,m in [-b, b], b = -mu[m] (acc: the impulses already received, 3n, N·s; only the normal
 * entries of the bounded rows are read; NULL acts as 0), so each increment's box is [-b - acc_n, b - acc_n]; cap
 * applies to the contacts only.  EINVAL also for a non-finite acc. */
int sim_cond_solve_increment(int n, const double *G, const double *c, const double *mu, const double *cap,
                             const double *acc, double *lambda, const sim_cond_params *p, sim_cond_stats *st,
                             double *v);

/* The solver-table entry ("cond-vfpi"): sim_solve signature; reads max_iter and tol from the shared
 * sim_solver_params (tol there is the same fixed-point residual, N·s), the rest are the defaults above. */
int sim_solve_cond(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st);

#endif

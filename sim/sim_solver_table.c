/* sim_solver_table.c — the table of multi-contact solvers (sim_solver.h): one row per contact model, selected by
 * name or index.  Rows are never reordered (the integer config key "solver" is an index); new solvers are
 * appended.  A row whose solve is NULL is reserved for a solver not built yet. */
#include "sim_solver.h"

#include "sim_impacts.h"
#include "sim_solver_cond.h"

#include <string.h>

/* The rows' names, from SIM_SOLVER_ROWS (the rows below take theirs from here). */
static const char NAME[SIM_SOLVER_NROWS][SIM_SOLVER_NAME_MAX] = {SIM_SOLVER_ROWS(SIM_SOLVER_ROW_NAME)};

static const sim_solver_desc TABLE[SIM_SOLVER_NROWS] = {
    [SIM_SOLVER_PAPER_BISECTION] = {
        NAME[SIM_SOLVER_PAPER_BISECTION],
        "Hwangbo, Lee & Hutter 2018: per-contact Gauss-Seidel (Algorithm 2) with each contact solved exactly for the "
        "paper's model (Algorithm 1): stick if the zero-velocity impulse is in the cone, else the point of the "
        "ellipse {v_n = 0, |lambda_T| = mu lambda_n} minimizing the contact kinetic energy.  Not Coulomb: a slipping "
        "contact's velocity opposes the ellipse normal lambda_T + (mu^2 lambda_n / G_nn) G_nT, not lambda_T (they agree "
        "only when G_nT = 0), and the model does not maximize dissipation.  Not converged after max_iter sweeps: the "
        "last iterate, scaled by the dissipation guard.  Joint limits: the contacts are swept with an active set of "
        "closed limits eliminated (the Schur complement of their block: v = 0 on them exactly), the set corrected "
        "from the limits' impulses and velocities for up to limit_rounds rounds, else the limits swept as 1-D blocks "
        "(max(0, .)); bounded joint-friction rows are exact 1-D blocks of the sweep (the clamp to [-b, b]).",
        sim_solve_bisection, NULL},
    [SIM_SOLVER_PGS] = {
        NAME[SIM_SOLVER_PGS],
        "Projected Gauss-Seidel on the Coulomb NCP (Le Lidec et al. 2023, Alg. 6), stopping on the NCP eps_abs with "
        "De Saxce's correction.  At convergence Signorini, the cone and Coulomb's sliding law hold.  No convergence "
        "guarantee; not converged: the last iterate, scaled by the dissipation guard.  Joint limits: the normal "
        "step alone; bounded rows: the normal step clamped to [-b, b].",
        sim_solve_pgs, NULL},
    [SIM_SOLVER_COULOMB_BISECTION] = {
        NAME[SIM_SOLVER_COULOMB_BISECTION],
        "Algorithm 2's per-contact sweeps with each contact solved exactly for Coulomb's law on the paper's ellipse "
        "(sliding velocity anti-parallel to lambda_T).  A block with no Coulomb slip root takes the paper model's slip "
        "solution (counted).  Can cycle on ill-conditioned problems; not converged: the last iterate, scaled by the "
        "dissipation guard.  Joint limits and bounded rows: as paper-bisection.",
        sim_solve_coulomb_bisection, NULL},
    [SIM_SOLVER_ADMM] = {
        NAME[SIM_SOLVER_ADMM],
        "ADMM on the cone complementarity problem (Anitescu's convex relaxation; Le Lidec et al. 2023, Alg. 3), "
        "proximal with adaptive rho; G + rho I factored densely or, when cheaper, through the kinematic tree (Woodbury on "
        "rho I + S S^T, M's LTDL sparsity).  Differs from Coulomb on sliding contacts (they may "
        "separate at v_n = mu |v_T|).  Convergent for any PSD G; not converged: the last z, in the cones.  "
        "Joint limits project on R+, bounded rows on [-b, b] (the problem stays convex).",
        sim_solve_admm, NULL},
    [SIM_SOLVER_COULOMB_STALL_ADMM] = {
        NAME[SIM_SOLVER_COULOMB_STALL_ADMM],
        "coulomb-bisection with a stall detector that hands a non-converging problem to a direct Coulomb solve (each "
        "block's mode guessed from the stalled iterate and the warm start, the mode set's equations solved by Newton's "
        "method, violated modes switched, with each of three ways of writing a sliding block's friction law; accepted "
        "only below tol), then to admm, whose CCP answer is returned only "
        "when a direct solve from its modes finds no Coulomb solution either (the step's answer is then flagged CCP).  "
        "Joint limits and bounded rows: as coulomb-bisection, 1-D blocks of the direct solve, then as admm.",
        sim_solve_coulomb_stall_admm, NULL},
    [SIM_SOLVER_COND_VFPI] = {
        NAME[SIM_SOLVER_COND_VFPI],
        "COND / V-FPI (Lee, Lee & Lee 2023): velocity fixed-point iteration on the surrogate W = diag(w_m I) (Gershgorin "
        "bound of G, so every contact is solved in one shot and in parallel: Jacobi), strict projection, Chebyshev "
        "acceleration; stops on the fixed-point residual (N s).  A fixed point is the Coulomb NCP (Signorini, cone, "
        "sliding velocity opposite to lambda_T), as PGS.  No convergence guarantee: after max_iter iterations the last "
        "one-shot output (in the cones), scaled by the dissipation guard.  Joint limits are frictionless "
        "contacts, bounded rows are projected on [-b, b].",
        sim_solve_cond, NULL},
    [SIM_SOLVER_IMPACTS] = {
        NAME[SIM_SOLVER_IMPACTS],
        "Set-valued simultaneous impacts (Halm & Posa), a domain-randomization option: when two or more contacts arrive "
        "faster than 0.05 m/s (pre-step velocity J u, which sim_step passes) and the step must remove more than that "
        "(free velocity; a caller without J u: this test alone), the step is one inelastic impact resolved by Routh's method with relative "
        "impulse rates drawn from a hash of p->seed and the problem (bounded normal increments, exact Coulomb cones), "
        "else cond-vfpi.  Every outcome has v_n >= 0, impulses in the cones and no kinetic energy added, but "
        "complementarity does not hold (a contact may leave the impact separating with impulse, or sliding).  Not "
        "terminated within its increment cap: the accumulated (dissipative) impulses.  Joint limits are frictionless "
        "contacts (they can impact); bounded rows never impact and keep their total impulse in [-b, b] increment by "
        "increment.",
        sim_solve_impacts, sim_solve_impacts_pre},
    [SIM_SOLVER_PGS_HWANGBO] = {
        NAME[SIM_SOLVER_PGS_HWANGBO],
        "Projected Gauss-Seidel as in Hwangbo et al. 2018, eqs. 17-18 (step alpha / G_zz normal, alpha / max(G_xx, "
        "G_yy) tangential, then projection on the disc mu lambda_n); a fixed point is a Coulomb NCP solution; stops on "
        "the impulse change per sweep.  Not converged: the last iterate, scaled by the dissipation guard.  "
        "Joint limits: the normal step alone; bounded rows: the normal step clamped to [-b, b].",
        sim_solve_pgs_hwangbo, NULL},
};

#define NROWS ((int)(sizeof TABLE / sizeof TABLE[0]))

int sim_solver_count(void) { return NROWS; }

const sim_solver_desc *sim_solver_at(int i) { return i >= 0 && i < NROWS ? &TABLE[i] : NULL; }

int sim_solver_index(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < NROWS; i++)
        if (TABLE[i].name && !strcmp(TABLE[i].name, name)) return i;
    return -1;
}

const sim_solver_desc *sim_solver_find(const char *name)
{
    const sim_solver_desc *d = sim_solver_at(sim_solver_index(name));
    return d && d->solve ? d : NULL;
}

int sim_solve_tree(int solver, int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree)
{
    /* the rows that use the structure (kept out of the table's rows so that they stay three fields) */
    switch (solver) {
    case SIM_SOLVER_ADMM: return sim_solve_admm_tree(n, G, c, mu, lambda, p, st, tree);
    case SIM_SOLVER_COULOMB_STALL_ADMM: return sim_solve_coulomb_stall_admm_tree(n, G, c, mu, lambda, p, st, tree);
    default: return sim_solve(solver, n, G, c, mu, lambda, p, st);
    }
}

int sim_solve(int solver, int n, const double *G, const double *c, const double *mu, double *lambda,
              const sim_solver_params *p, sim_solver_stats *st)
{
    const sim_solver_desc *d = sim_solver_at(solver);
    if (!d || !d->solve) {
        if (st) memset(st, 0, sizeof *st), st->guard_scale = 1.0;
        return SIM_SOLVER_EINVAL;
    }
    const int r = d->solve(n, G, c, mu, lambda, p, st);
    /* the rows that do not set it (cond-vfpi, impacts) stop on their own measures */
    if (st && st->answer == SIM_ANSWER_NONE && st->converged && r == SIM_SOLVER_OK) st->answer = SIM_ANSWER_OWN;
    return r;
}

long sim_solver_iteration_cap(int solver, const sim_solver_params *p)
{
    const sim_solver_desc *d = sim_solver_at(solver);
    if (!d || !d->solve) return 0;
    switch (solver) {
    case SIM_SOLVER_ADMM: return p->admm_max_iter;
    case SIM_SOLVER_COULOMB_STALL_ADMM: return (long)p->max_iter + p->admm_max_iter;
    case SIM_SOLVER_IMPACTS: return sim_solve_impacts_iteration_cap(p);
    default: return p->max_iter;
    }
}

long sim_solver_direct_cap(int solver, const sim_solver_params *p)
{
    if (solver != SIM_SOLVER_COULOMB_STALL_ADMM || p->direct_rounds <= 0) return 0;
    const int forms = p->direct_forms < 1 ? 1 : p->direct_forms > SIM_SOLVER_DIRECT_FORMS ? SIM_SOLVER_DIRECT_FORMS : p->direct_forms;
    return 3L * (p->direct_newton_iter > 0 ? p->direct_newton_iter : 0) +
           2L * forms * (p->direct_max_iter > 0 ? p->direct_max_iter : 0);
}

int sim_solver_fallback(int solver) { return solver == SIM_SOLVER_COULOMB_STALL_ADMM ? SIM_SOLVER_ADMM : -1; }

int sim_solver_uses_pre_velocity(int solver)
{
    const sim_solver_desc *d = sim_solver_at(solver);
    return d && d->solve && d->solve_pre;
}

int sim_solve_pre(int solver, int n, const double *G, const double *c, const double *v_pre, const double *mu,
                  double *lambda, const sim_solver_params *p, sim_solver_stats *st)
{
    const sim_solver_desc *d = sim_solver_at(solver);
    if (v_pre && d && d->solve && d->solve_pre) {
        const int r = d->solve_pre(n, G, c, v_pre, mu, lambda, p, st);
        if (st && st->answer == SIM_ANSWER_NONE && st->converged && r == SIM_SOLVER_OK) st->answer = SIM_ANSWER_OWN;
        return r;
    }
    return sim_solve(solver, n, G, c, mu, lambda, p, st);
}

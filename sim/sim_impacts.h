/* sim_impacts.h — set-valued simultaneous impacts (after Halm & Posa, "Set-valued rigid-body dynamics for
 * simultaneous, inelastic, frictional impacts", Secs. 3 and 5): a domain-randomization option that, when several
 * contacts close in one step, samples one post-impact velocity from the set of outcomes that arbitrary relative
 * impulse-accrual rates produce, instead of the single deterministic pick of a simultaneous solver.  Off by
 * default: a session opts in by choosing the solver "impacts".  Pure: no model, no allocation, no state; the
 * randomness is a counter-based hash of a caller-given 64-bit seed, so a run is reproducible bit for bit.
 *
 * The contact problem (G, c, mu, lambda) is the one of sim_solver.h (frames (t_x, t_y, n), G Delassus in 1/kg,
 * c free contact velocity in m/s, lambda impulses in N·s, v = G lambda + c).
 *
 * The model.  A contact m is impacting when it arrives faster than v_impact, v_pre_n,m < -v_impact (v_pre = J u at
 * the start of the step, before this step's forces), and the step has more than v_impact of closing velocity to
 * remove, c_n,m < -v_impact (c holds the gap target: a contact inside the collision margin that the step's motion
 * does not reach, or only grazes, is no impact; a body landing within a step may so count as impacting in the
 * step that brings it to the ground and in the next, which stops it).  Without v_pre the test is c_n < -v_impact
 * alone, and c also holds what the step's forces add, e.g. stance-leg actuation pushing a foot into the ground:
 * a resting contact then counts as an impact once those forces exceed the mass times v_impact / dt.
 * On the ANYmal scenarios the test on c alone fires on most contact steps of a robot standing under PD; with v_pre
 * only the landings and the rare fast touchdowns count (`herd-bench contact-models --only fig6,table2 --solvers
 * impacts` reports the shares, docs/contact-models/).  sim_step passes v_pre.
 * An impact costs tens of increments, each a capped COND solve, so it is one to two orders of magnitude dearer
 * than the deterministic solve, and an impact-heavy run is much slower.  With fewer than min_impacts impacting contacts
 * the problem goes to the deterministic base solver unchanged (default: COND / V-FPI with the strict operator,
 * i.e. the Coulomb NCP, sim_solver_cond.h), so a single impact gives exactly the deterministic result.
 * Otherwise the whole step is resolved as one inelastic impact by Routh's method extended to several contacts
 * (the paper's DI, eq. 39, discretized as in its eq. 72 and Algorithm 1), starting from lambda = 0:
 *   1. sample relative rates p_m in (0, 1] (uniform, one per contact, scaled so that max p = 1), held for the
 *      whole impact: they stand for the unknown ordering of the impulses (p = (1, tiny) is "contact 1 first",
 *      equal rates the simultaneous limit);
 *   2. repeat: solve the increment problem for dlambda with the velocity v (start: c):
 *        0 <= dlambda_n,m <= h p_m (the rates renormalized each increment so that the largest rate among the
 *        contacts still colliding is 1: the DI allows any rate profile, and a slow contact left alone then
 *        does not stretch the impact over 1 / p_m increments), and v'_n,m >= 0 if dlambda_n,m < h p_m, v'_n,m <= 0 if dlambda_n,m > 0,
 *        |dlambda_T,m| <= mu_m dlambda_n,m with Coulomb's sliding law at v' (v'_T = 0 or opposite dlambda_T),
 *      where v' = v + G dlambda (implicit, as eq. 72; exact Coulomb cones instead of the paper's linearized
 *      ones), solved by sim_cond_solve_capped warm-started from the previous increment; an increment that
 *      inexact arithmetic would make add energy is scaled down until it does not; then lambda += dlambda, v = v';
 *      until every contact is non-colliding, v_n >= -v_tol (or max_increments).
 *   h = step_frac times the largest -c_n,m / G_nn,m over the impacting contacts (the impulse that would stop
 *   that contact alone), so an impact takes about 1 / step_frac increments, or more where coupled contacts need
 *   more impulse.
 * Conditions that hold for every outcome (exactly for exact increments, up to the inner solver's tolerance):
 *   no penetration velocity (v_n >= -v_tol for all contacts), each lambda_m in its friction cone (a sum of
 *   in-cone increments), and no kinetic energy added: every increment changes c.lambda + 1/2 lambda.G lambda by
 *   dlambda.v' - 1/2 dlambda.G dlambda <= 0 (dlambda_n v'_n <= 0 and dlambda_T.v'_T <= 0 by the conditions).
 * Where it departs from the other models: it is an impact law, not a time-stepping contact law.  At the end a
 * contact may separate (v_n > 0) while having received impulse (complementarity lambda_n v_n = 0 does not hold:
 * this is the point, e.g. a block landing flat may rock onto either corner), and friction acts only while
 * normal impulse accrues (Routh), so a contact can leave the impact still sliding.  Outcomes are a random
 * variable whose support is the set-valued law's; its spread is the randomization.
 * Without termination within max_increments the accumulated lambda is kept (it is dissipative and in the
 * cones), st->converged = 0 and SIM_SOLVER_MAXITER is returned.
 * Joint limits and bounded rows (sim_solver.h).  A joint limit is a frictionless contact throughout: it can be
 * impacting (a joint reaching its stop faster than v_impact), its increments are capped like a contact's, and the
 * impact goes on while it closes.  A bounded row (joint Coulomb friction) has no sign condition, so it is
 * never impacting nor colliding; during an impact it acts as friction does in Routh's method, increment by
 * increment: each increment is a box row with the total kept in [-b, b] (dlambda_n in [-b - lambda_n, b - lambda_n],
 * dlambda_n = its upper end => v'_n <= 0, its lower end => v'_n >= 0, else v'_n = 0: sim_cond_solve_increment), so
 * dlambda_n v'_n <= 0 and the energy argument above holds, and the outcome has |lambda_n| <= b.  Outside impacts
 * both go to the base solver (cond-vfpi: sim_solver_cond.h).
 */
#ifndef HERD_SIM_IMPACTS_H
#define HERD_SIM_IMPACTS_H

#include <stdint.h>

#include "sim_solver.h"
#include "sim_solver_cond.h"

/* A deterministic solver with the sim_solver.h signature. */
typedef int (*sim_impacts_base_fn)(int n, const double *G, const double *c, const double *mu, double *lambda,
                                   const sim_solver_params *p, sim_solver_stats *st);

typedef struct sim_impacts_params {
    double v_impact;        /* closing speed above which a contact is impacting, m/s (0.05) */
    int min_impacts;        /* impacting contacts needed for the set-valued law (2; 1 applies it to any impact) */
    double step_frac;       /* normal increment bound h, as a fraction of the largest stopping impulse (0.1) */
    int max_increments;     /* cap on the increments of one impact (2000) */
    double v_tol;           /* termination: every v_n >= -v_tol, m/s (1e-7) */
    sim_cond_params inner;  /* the increment solver (defaults, tol 1e-9 N·s, max_iter 2000) */
    sim_impacts_base_fn base;          /* deterministic solver for the other steps (sim_solve_cond) */
    const sim_solver_params *base_params; /* its parameters (NULL: its defaults) */
} sim_impacts_params;

typedef struct sim_impacts_stats {
    int impact;             /* 1 if the set-valued law resolved the step, 0 if the base solver did */
    int n_impacting;        /* impacting contacts (above: on v_pre and c, or on c alone) */
    int increments;         /* increments taken (0 when the base solver ran) */
    long inner_iterations;  /* V-FPI iterations summed over the increments */
    int inner_failures;     /* increments whose inner solve did not reach its tolerance */
    int converged;          /* terminated (impact) or the base solver converged */
    double energy_change;   /* c.lambda + 1/2 lambda.G lambda, the kinetic energy the impulses add (J; <= 0) */
    double rates[SIM_SOLVER_MAX_CONTACTS]; /* the sampled p_m (impact only) */
    sim_solver_stats base_stats; /* the base solver's stats (base only) */
} sim_impacts_stats;

/* Fills p with the defaults listed in sim_impacts_params. */
void sim_impacts_default_params(sim_impacts_params *p);

/* The stream key of one contact problem: a hash of (seed, world index, episode, step) for callers that keep
 * one stream per world (DESIGN.md), so that results do not depend on thread count or batch split. */
uint64_t sim_impacts_key(uint64_t seed, uint64_t world, uint64_t episode, uint64_t step);

/* Resolves the problem as above with the random stream `seed` (same seed, same bits).  v_pre: the pre-step
 * contact velocities (3n, m/s, contact frames) used only to detect impacts, or NULL to use c.  lambda: warm
 * start for the base solver, output the impulses (an impact starts from 0).  p may be NULL (defaults), st
 * NULL.  Returns SIM_SOLVER_OK, SIM_SOLVER_MAXITER or SIM_SOLVER_EINVAL (bad input, lambda untouched).
 * Allocation-free (stack scratch ~20 kB); n <= SIM_SOLVER_MAX_CONTACTS. */
int sim_impacts_solve(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                      double *lambda, const sim_impacts_params *p, uint64_t seed, sim_impacts_stats *st);

/* The V-FPI iterations one sim_impacts_solve with p and base parameters bp (the base solver's max_iter, as
 * cond-vfpi's) may take at most: the base solve's max_iter, or an impact's max_increments x inner.max_iter
 * (the two paths are exclusive), whichever is larger. */
long sim_impacts_iteration_cap(const sim_impacts_params *p, const sim_solver_params *bp);
/* The same for the table row (its impact parameters are the defaults): sim_solver_iteration_cap's "impacts". */
long sim_solve_impacts_iteration_cap(const sim_solver_params *p);

/* The solver-table entries ("impacts"): the sim_solver.h signatures.  The stream is a hash of p->seed and the bits
 * of c (the shared parameters are per model, so p->seed alone would give every step of every world the same
 * rates; with c mixed in each problem draws its own, reproducibly: same seed and problem, same bits).  p goes
 * to the base solver (cond-vfpi) unchanged; st->impact says whether the set-valued law resolved the step, and
 * st->iterations counts V-FPI iterations either way (an impact's: summed over its increments; at most
 * sim_solve_impacts_iteration_cap(p)).
 * sim_solve_impacts_pre (the row's solve_pre, what sim_step calls) detects impacts on v_pre = J u;
 * sim_solve_impacts (solve, for callers with only the problem) on c. */
int sim_solve_impacts(int n, const double *G, const double *c, const double *mu, double *lambda,
                      const sim_solver_params *p, sim_solver_stats *st);
int sim_solve_impacts_pre(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                          double *lambda, const sim_solver_params *p, sim_solver_stats *st);

#endif

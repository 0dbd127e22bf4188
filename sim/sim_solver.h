/* sim_solver.h — contact solvers on an already-assembled contact problem (pure: no model, no allocation).
 * The caller owns every array; the solvers keep no state between calls.  The error of a candidate
 * solution and the comparison metrics are in sim_metrics.h.
 *
 * The problem (Hwangbo, Lee & Hutter 2018, "Per-contact iteration method for solving contact dynamics",
 * Sec. II-IV).  n contacts, each with a frame whose rows are (t_x, t_y, n): contact z = normal, LAST.
 *   G       3n x 3n, row-major, symmetric positive semi-definite Delassus matrix, block G_ij = J_i M^-1 J_j^T
 *           (1/kg for translational contacts).  Only its symmetry is assumed, never its rank.
 *   c       3n free contact velocity: the contact velocities if every impulse were zero (m/s).
 *   mu      n per-block kinds: Coulomb friction coefficients, mu >= 0 (values above 1e12 act as 1e12), or a
 *           bounded bilateral row's bound encoded as mu < 0 (below).
 *   lambda  3n contact impulses (N·s), on input the warm start (zero it for a cold start), on output
 *           the solution.  The post-impulse contact velocity is v = G lambda + c (m/s).
 *
 * Block kinds (every solver of the table accepts all three, in any order; sim_limits.h names the encoding):
 *   contact          mu >= 0: the cone of coefficient mu and Signorini on row n, as described below.
 *   joint limit      mu = 0 with empty tangent rows: G's rows and columns 3i, 3i+1 zero, c_3i = c_3i+1 = 0.  A
 *                    frictionless contact: lambda_T = 0; lambda_n >= 0, v_n >= 0, lambda_n v_n = 0.  Its row n is the
 *                    joint's direction in joint-velocity space (sim_step).
 *   bounded row      mu < 0 (SIM_BLOCK_BOX(b): mu = -b, b > 0, N·s): a bilateral row with Coulomb joint friction.
 *                    Only row n is used (the tangent rows and columns must be zero, c_T = 0); lambda_T = 0 and
 *                    |lambda_n| <= b;  lambda_n = b => v_n <= 0,  lambda_n = -b => v_n >= 0,  |lambda_n| < b => v_n = 0
 *                    (the minimizer of 1/2 l.G l + c.l over the box: the friction opposes the joint's velocity).
 * Every solver sets lambda_T = 0 on entry on the blocks that use row n only (a bounded row, or mu < 1e-9 with
 * G_xx = G_yy = 0), divides by no empty tangent diagonal, and treats them as the 1-D problem on row n: the
 * per-contact sweeps solve lambda_n = max(0, -c_n / G_nn) (limit) or clamp(-c_n / G_nn, -b, b) (bounded row), c_n
 * the row's free velocity with the others fixed, and the projected methods project on R+ or [-b, b]; each solver's
 * comment below says where.  A contact with mu = 0 and non-empty tangent rows is a frictionless contact as ever.
 *
 * The per-contact model (the paper's eq. 8, after Preclik): a contact whose velocity would open
 * (c_n > 0, others fixed) gets lambda = 0; otherwise lambda minimizes the contact-point kinetic energy
 *     E(lambda) = 1/2 (G lambda + c)^T G^-1 (G lambda + c)
 * over the friction cone K = { |lambda_T| <= mu lambda_n } intersected with the plane v_n = 0.  Either
 * the zero-velocity impulse -G^-1 c lies in K (STICK), or the minimizer lies on the ellipse
 * { v_n = 0, |lambda_T| = mu lambda_n } (SLIP), found by Algorithm 1 (bisection on the polar angle).
 * This "paper model" is NOT Coulomb's law and does NOT maximize dissipation (so it is not called a
 * "maximum-dissipation model"): on a slipping contact the sliding velocity opposes the ellipse normal
 * s = lambda_T + (mu^2 lambda_n / G_nn) G_nT, not lambda_T as Coulomb requires (Le Lidec et al. 2023, eq. 24).
 * The two agree only when G_nT = 0; with kappa = mu |G_nT| / G_nn they differ by more than 1 % on most
 * slipping contacts once kappa > 0.1, and a sliding box decelerates short of mu g (each corner's friction
 * tilts inward by mu G_ny / G_nn).
 *
 * The Coulomb per-contact model ("coulomb-bisection", sim_contact_single_coulomb): the same stick / open
 * tests and the same ellipse, but the slip solution is the point of the ellipse whose sliding velocity is
 * anti-parallel to lambda_T (Coulomb's law, the disjunctive form of Le Lidec et al. eq. 13), found as a root
 * of F(u) = -c_n u x (Gbar u) + d (u x cbar) with u . v_T < 0: Algorithm 1's stepping from lambda0's direction,
 * with each step aimed 25 % past Newton's root estimate, then a safeguarded Newton in the bracket (bisection when
 * a Newton step leaves it) to contact_tol, whose last step leaves an error of order contact_tol^2 (a few steps
 * per solve where the paper's bisection takes tens; contact_refine does not apply).  With a
 * strong coupling (large kappa) a block can have no such root; it then takes the paper model's slip solution
 * (dissipative, on the ellipse) and the solve is counted in sim_solver_stats.no_root.
 *
 * The exact violation used by sim_solve_bisection's termination (sim_contact_model_error, sim_metrics.h): with
 * v = G lambda + c, lambda_T / v_T the tangential parts, the sum over contacts of
 *   cone       max(0, |lambda_T| - mu lambda_n) + max(0, -lambda_n)                                  [N·s]
 *   Signorini  max(0, -v_n) + max(0, min(lambda_n, v_n))                                            [m/s | N·s]
 *              (a penetrating velocity; for a contact both pushing and separating, the smaller of the two)
 *   friction   if the contact is closed (v_n <= lambda_n), the smaller of the violations of its two modes:
 *                stick  |v_T|                                                                      [m/s]
 *                slip   (mu lambda_n - |lambda_T|)^+  +  min(|v_T|, |lambda_T|) * m                [N·s | m/s]
 *              where m = sin(angle between v_T and -s), or 1 if v_T . s >= 0, and
 *              s = lambda_T + (mu^2 lambda_n / G_nn) G_nT (G_nT = (G_nx, G_ny) of the contact's own block):
 *              the KKT conditions of the model make the slip velocity v_T = -k s, k >= 0 (Le Lidec et al.
 *              2023, eq. 24); the weight min(|v_T|, |lambda_T|) keeps the term linear in the errors of both
 *              a slow slip and a small impulse.  Skipped when mu = 0.
 *              if the contact is open (v_n > lambda_n): |lambda_T| (an open contact carries no impulse).
 * A joint limit reads only the cone and Signorini terms (it is frictionless); a bounded row measures
 *   box        max(0, |lambda_n| - b) + |lambda_T|                                                    [N·s]
 *   modes      the smallest of: interior |v_n|;  at +b (b - lambda_n)^+ + max(0, v_n);
 *              at -b (lambda_n + b)^+ + max(0, -v_n)                                                  [m/s | N·s]
 *              (so |v_n| strictly inside, max(0, v_n) at +b, max(0, -v_n) at -b; sim_metrics.h).
 * Every term is zero exactly at a solution of the model; units are mixed (N·s and m/s), so the default
 * tol 1e-6 reads "1 µN·s or 1 µm/s", as in the paper.
 */
#ifndef HERD_SIM_SOLVER_H
#define HERD_SIM_SOLVER_H

#include "sim_limits.h" /* SIM_SOLVER_MAX_CONTACTS, SIM_MU_FRICTIONLESS, SIM_MU_MAX */
/* Largest n accepted by ADMM (its dense factor of G + rho I lives on the stack: 8 (3n)^2 bytes, 74 kB). */
#define SIM_SOLVER_ADMM_MAX_CONTACTS 32
/* Largest nv of a sim_solver_tree (its packed factor lives on the stack: ~12 nv^2 bytes). */
#define SIM_SOLVER_TREE_MAX_DOF 72

/* The structure behind G, for the solvers that can exploit it (ADMM: sim_solve_admm_tree).  G = S^T S where S
 * (nv x 3n) has, for each contact i, three columns supported on one root path of a kinematic tree (or forest) of
 * nv dofs: with M = L^T D L the tree's LTDL factorization and J the contact Jacobian, S = D^-1/2 L^-T J^T (what
 * sim_step builds), but any S with that support will do.  Contact i's path (stored at path + i * stride, npath[i]
 * entries) is a dof followed by all its ancestors nearest first (path[t + 1] = parent[path[t]], the last one a
 * root); its column a (0, 1, 2: t_x, t_y, n) has the value S[(3 i + a) * stride + t] at dof path[t].  Contacts
 * between two moving bodies fit by ordering the dofs as a chain (every dof an ancestor of the next).  G must be
 * S^T S (the solvers use both).  Read only; owned by the caller. */
typedef struct sim_solver_tree {
    int nv;                 /* dofs, <= SIM_SOLVER_TREE_MAX_DOF */
    const int *parent;      /* nv: parent dof, -1 for a root; parent[k] < k */
    const double *S;        /* 3 n rows of stride doubles */
    const int *path;        /* n paths of stride ints */
    const int *npath;       /* n: path lengths (<= nv) */
    int stride;             /* >= max npath (sim_step: nv) */
} sim_solver_tree;

/* x := (S^T S + rho I)^-1 x (3n entries) for the contacts' S of tree, as ADMM's tree factorization does it (see
 * sim_solve_admm_tree): a factor of rho I + S S^T along the tree, then Woodbury.  rho > 0.  Returns 0, or
 * SIM_SOLVER_EINVAL (x untouched) for an unusable tree (sim_solver_tree's rules), n out of [1,
 * SIM_SOLVER_ADMM_MAX_CONTACTS] or a non-positive pivot. */
int sim_solver_tree_shifted_solve(const sim_solver_tree *tree, int n, double rho, double *x);

/* sim_solver_params.admm_factor. */
enum {
    SIM_ADMM_FACTOR_AUTO = 0,  /* the tree when one is given and it is the cheaper (see sim_solve_admm_tree), else dense */
    SIM_ADMM_FACTOR_DENSE = 1, /* always the dense Cholesky of G + rho I */
    SIM_ADMM_FACTOR_TREE = 2   /* the tree whenever one is given */
};


/* Modes returned by sim_contact_single and counted in sim_solver_stats. */
enum { SIM_CONTACT_OPEN = 0, SIM_CONTACT_STICK = 1, SIM_CONTACT_SLIP = 2 };

/* Which model a solve's answer satisfies (sim_solver_stats.answer, sim_step_stats.answer). */
enum {
    SIM_ANSWER_NONE = 0,    /* none within tol: not converged (or no solve ran) */
    SIM_ANSWER_COULOMB = 1, /* Coulomb's law within tol: the Coulomb violation (sim_contact_coulomb_error, or the NCP
                               eps_abs with De Saxce's correction for "pgs") below p->tol; an empty problem too */
    SIM_ANSWER_CCP = 2,     /* the cone complementarity problem within tol (ADMM's eps_abs) but not Coulomb: the
                               answer of "admm", or of a fallback to it whose result is not also a Coulomb solution */
    SIM_ANSWER_OWN = 3      /* the solver's own model within its own measure, which is neither (paper-bisection,
                               cond-vfpi, impacts, pgs-hwangbo) */
};

/* Return codes of the solvers. */
enum {
    SIM_SOLVER_OK = 0,          /* converged: error < tol */
    SIM_SOLVER_MAXITER = 1,     /* max_iter sweeps done, error >= tol (lambda is the last iterate) */
    SIM_SOLVER_EINVAL = -1      /* bad input (n out of range, NULL, non-finite numbers);
                                   lambda is left untouched by the multi-contact solvers and zeroed by
                                   sim_contact_single */
};

typedef struct sim_solver_params {
    int max_iter;           /* sweeps over all contacts (150, RaiSim's shipped default) */
    double tol;             /* termination threshold on the error (1e-6, mixed N·s / m/s, see above) */
    double alpha;           /* initial SOR relaxation (1.0) */
    double gamma;           /* relaxation decay per sweep: alpha <- alpha_min + gamma (alpha - alpha_min) (0.99) */
    double alpha_min;       /* relaxation floor (0.7) */
    double beta1;           /* Algorithm 1: initial angular step alpha, rad (1e-2); a step of alpha is taken as the
                               rotation by 2 atan(alpha / 2) (= alpha - alpha^3 / 12 + ...) */
    double beta2;           /* shrink factor when a step leaves the line of sight or r <= 0 (0.5) */
    double beta3;           /* growth factor while the gradient keeps its sign (1.3) */
    double contact_tol;     /* single-contact precision: stop bisecting when |lambda^p - lambda| < it (1e-6 N·s) */
    int contact_max_steps;  /* safety cap on Algorithm 1's stepping + bisection steps (200) */
    int contact_refine;     /* 1: after the bisection, one regula-falsi step inside the final bracket (~1e-12
                               N·s from the exact minimizer instead of contact_tol); needed for the
                               multi-contact error to reach tol = contact_tol.  0: Algorithm 1 as published (1) */
    double pgs_alpha;       /* "pgs-hwangbo" step factor alpha in r_z = alpha / G_zz, r_T = alpha / max(G_xx, G_yy) (0.6) */
    /* ADMM ("admm", and the fallback of "coulomb-stall-admm"); its iterations are capped by max_iter and it stops
       when eps_abs (CCP form, sim_metrics.h, dt = 1) < tol */
    double admm_rho;        /* initial proximal parameter rho (1/kg-scaled: 0 = automatic, 1e-2 x mean diag G) */
    double admm_ratio;      /* adapt rho when one residual exceeds the other by this ratio (5) */
    int admm_max_iter;      /* ADMM iterations at most (500) */
    int admm_factor;        /* how ADMM solves with G + rho I: SIM_ADMM_FACTOR_AUTO (0, default), _DENSE, _TREE */
    /* the stall detector of "coulomb-stall-admm" */
    int stall_window;       /* hand the problem to ADMM when the error has not dropped below stall_drop times its
                               best value of stall_window sweeps earlier (8) */
    double stall_drop;      /* (0.5) */
    int direct_rounds;      /* "coulomb-stall-admm": mode corrections per start of its direct Coulomb solve (8); 0 turns
                               the direct solve off, its semismooth Newton included (the stalled problem goes to ADMM
                               alone) */
    int direct_newton_iter; /* its semismooth Newton iterations per start (sim_solver_coulomb_newton_ac; 30); 0 leaves
                               the mode-set search alone */
    int direct_max_iter;    /* its Newton iterations at most, per attempt (before ADMM, and after it) and slip
                               formulation (100) */
    int direct_forms;       /* the slip formulations it tries, 1 to SIM_SOLVER_DIRECT_FORMS: 1 is the cone form
                               alone (SIM_SOLVER_DIRECT_FORMS) */
    double direct_abandon;  /* a mode set whose Newton run has nearly solved its system while the iterate's Coulomb
                               violation is above direct_abandon x tol is given up there, unpolished (1e4); 0 runs
                               every Newton solve to its end */
    int limit_rounds;       /* per-contact sweeps: active-set rounds of the joint-limit elimination (4; see
                               sim_solver.c); 0 sweeps the limit rows as blocks of their own */
    unsigned long long seed; /* per-world stream for randomized models ("impacts"); 0 by default */
} sim_solver_params;

typedef struct sim_solver_stats {
    int iterations;         /* sweeps done */
    double error;           /* final error (bisection: exact violation above; PGS: its own measure) */
    int converged;          /* 1 if error < tol */
    int n_open, n_stick, n_slip; /* modes of the contacts in the last sweep (a bounded row: slip at a bound, else
                                    stick) */
    long bisection_steps;   /* Algorithm 1 steps (stepping + bisection) summed over all slip solves */
    double guard_scale;     /* 1, or the factor applied by the dissipation guard to a non-converged result */
    int fallback;           /* 1 if a stall detector handed the problem over to ADMM ("coulomb-stall-admm") */
    int fallback_iterations;/* iterations done by that fallback (included in iterations) */
    long no_root;           /* per-contact solves that had no Coulomb slip root and took the documented rule
                               ("coulomb-bisection") */
    double rho;             /* ADMM's final proximal parameter (0 for other solvers) */
    int impact;             /* "impacts": 1 if the step was resolved as a set-valued impact (0 for other solvers) */
    int admm_tree;          /* 1 if ADMM solved with G + rho I through the tree (sim_solver_tree), 0 if densely */
    int admm_factors;       /* factorizations of G + rho I (or of rho I + S S^T) ADMM did, the lambda_min estimate's
                               included */
    int answer;             /* SIM_ANSWER_*: the model the returned lambda satisfies within p->tol */
    int direct;             /* 1 if the answer came from the direct Coulomb solve ("coulomb-stall-admm") */
    int direct_iterations;  /* Newton iterations of that direct solve (successful or not) */
} sim_solver_stats;

/* ------------------------------------------------------------------------------------------------ */
/* Which solver.  The figures behind these statements are generated, not kept here: accuracy, cost and robustness
 * of every solver on the paper's and the comparative paper's experiments by `make contact-models-report`
 * (docs/contact-models/), env throughput by `make bench-report` (docs/benchmarks.md); the single-solve cost by
 * `herd-bench contact1`, the walk task's robustness by `herd-bench solver --walk`, paired env throughput by
 * `herd-bench solver --paired A,B` and `herd-bench env --solvers A,B,...`.
 *
 *   - Accuracy.  On Fig. 6 of Hwangbo et al. (impulses within 1 % of a tight Coulomb NCP solve) paper-bisection
 *     agrees on stick-only steps but rarely on slipping ones, coulomb-bisection on both.  A box sliding on its four
 *     corners decelerates short of mu g under paper-bisection, at mu g (to the stopping-time quantization) under
 *     coulomb-bisection.
 *   - Cost of one slip solve: the same order for the paper model and Coulomb; every scenario slip block has a
 *     Coulomb slip root in practice (sim_solver_stats.no_root counts the exceptions).
 *   - Robustness.  At the walk task's physics (dt 5 ms, <= 50 sweeps, <= 16 contacts) a small fraction of the
 *     per-contact solvers' steps, and a large share of pgs's and pgs-hwangbo's, run to the sweep cap unconverged;
 *     coulomb-stall-admm's stall detector hands the cycling problems to ADMM before the cap, and ADMM (proximal,
 *     convergent for any PSD G) rarely reaches its own cap.  On two stacked cubes with a 1e6 mass ratio the
 *     per-contact methods stall far from a solution while ADMM converges in a few iterations.
 *   - Throughput: coulomb-stall-admm runs the walk env at close to paper-bisection's rate; its extra cost is almost
 *     all in the ADMM fallback.
 *
 * Default.  The RL tasks (anymal_c-walk, anymal_c-stand: config key solver = SIM_SOLVER_COULOMB_STALL_ADMM) use
 * coulomb-stall-admm: it solves Coulomb's law (Fig. 6, the sliding box at mu g) at the paper model's per-contact
 * cost, and no problem cycles to the sweep cap; the price is a little env throughput, spent in the ADMM fallback.
 * The fallback factors G + rho I through the kinematic tree (sim_solve_admm_tree) when that is cheaper, i.e. from
 * several contacts on ANYmal (`herd-bench admm` compares the two); the walk task's fallback problems mostly have
 * few contacts, where the dense Cholesky of the small 3n x 3n matrix is faster, so they stay dense.
 * The paper-* tasks and sim_model's default keep paper-bisection (they reproduce the paper). */

/* ------------------------------------------------------------------------------------------------ */
/* The solver table: every multi-contact solver behind one signature, selected by name (or by its index,
 * which is what sim_model's opt.solver holds).  Each row's model_doc says which model it solves. */

typedef int (*sim_solver_fn)(int n, const double *G, const double *c, const double *mu, double *lambda,
                             const sim_solver_params *p, sim_solver_stats *st);

/* The same with the pre-step contact velocity v_pre = J u (3n, m/s, contact frames; u the generalized velocity at
 * the start of the step, before its forces are integrated), for models that need more than the problem (G, c):
 * c = J u_free also holds what the step's forces add, v_pre only the motion the contacts arrive with. */
typedef int (*sim_solver_pre_fn)(int n, const double *G, const double *c, const double *v_pre, const double *mu,
                                 double *lambda, const sim_solver_params *p, sim_solver_stats *st);

typedef struct sim_solver_desc {
    const char *name;       /* stable identifier: config values, bench and scenario options */
    const char *model_doc;  /* one paragraph: the model solved, where it departs from Coulomb, non-convergence */
    sim_solver_fn solve;    /* NULL for a reserved row not built yet */
    sim_solver_pre_fn solve_pre; /* non-NULL for a model that reads v_pre ("impacts"); callers that can compute
                                    v_pre call it (sim_solve_pre), the others call solve (the model's fallback) */
} sim_solver_desc;

/* The table's rows in index order, X(ID, name): SIM_SOLVER_<ID> is the row's index and name its stable identifier
 * (sim_solver_desc.name, and what the envs' "solver" key lists).  Indices are what the integer config key
 * "solver" holds, so rows are never reordered; a new solver is appended. */
#define SIM_SOLVER_ROWS(X)                                                                                  \
    X(PAPER_BISECTION, "paper-bisection")                                                                   \
    X(PGS, "pgs")                                                                                           \
    X(COULOMB_BISECTION, "coulomb-bisection")                                                               \
    X(ADMM, "admm")                                                                                         \
    X(COULOMB_STALL_ADMM, "coulomb-stall-admm")                                                             \
    X(COND_VFPI, "cond-vfpi")                                                                               \
    X(IMPACTS, "impacts")                                                                                   \
    X(PGS_HWANGBO, "pgs-hwangbo")
#define SIM_SOLVER_NAME_MAX 24 /* bytes of a row's name, its terminating NUL included */
#define SIM_SOLVER_ROW_INDEX(id, name) SIM_SOLVER_##id,
#define SIM_SOLVER_ROW_NAME(id, name) name,
enum { SIM_SOLVER_ROWS(SIM_SOLVER_ROW_INDEX) SIM_SOLVER_NROWS };

/* Number of rows in the table (reserved rows included). */
int sim_solver_count(void);

/* Row i (0 <= i < sim_solver_count()), or NULL out of range.  A row's solve may be NULL (reserved). */
const sim_solver_desc *sim_solver_at(int i);

/* The row named name (exact match), or NULL if unknown or reserved (solve == NULL). */
const sim_solver_desc *sim_solver_find(const char *name);

/* Index of the row named name (reserved rows included), or -1. */
int sim_solver_index(const char *name);

/* Solves with row `solver` of the table: SIM_SOLVER_EINVAL (st reset) for an index out of range or a reserved
 * row, else what that solver returns. */
int sim_solve(int solver, int n, const double *G, const double *c, const double *mu, double *lambda,
              const sim_solver_params *p, sim_solver_stats *st);

/* The iterations one solve with row `solver` and parameters p may take at most: its own cap (max_iter sweeps;
 * "admm": admm_max_iter; "impacts": the larger of max_iter and an impact's increments x inner V-FPI iterations at
 * their caps, sim_solve_impacts_iteration_cap) plus, for a solver that hands stalled problems to ADMM
 * ("coulomb-stall-admm"), the fallback's admm_max_iter.  The work bound of a caller that must not trust
 * convergence.  0 for an index out of range or a reserved row. */
long sim_solver_iteration_cap(int solver, const sim_solver_params *p);
/* Largest n sim_solver_coulomb_direct takes (its Jacobian lives on the stack: 8 (3n)^2 bytes, 18 kB). */
#define SIM_SOLVER_DIRECT_MAX_CONTACTS 16

/* The slip formulations the direct solve tries in turn (sim_solver_direct.c: cone, unit, scaled). */
#define SIM_SOLVER_DIRECT_FORMS 3

/* A direct solve of the Coulomb NCP (sim_solver_direct.c) with the slip formulations of the mask forms (bit f:
 * formulation f, in the order cone, unit, scaled; other bits ignored): for each of the nguess candidate impulses (3n
 * each), the
 * modes they show (open, stick, slip; a limit open or closed; a bounded row inside or at a bound) define a square
 * system, solved by Newton's method; the blocks whose solution breaks their mode's inequalities change mode, at most
 * max_rounds times per candidate; then the best mode set found with one block's mode changed, each block and mode in
 * turn.  That search runs with each of those ways of writing a slipping block's friction law, one after the other
 * (beyond the cone form only on problems of at most 9 blocks), each with at most budget Newton iterations.  abandon > 0: a
 * Newton run stops once its residual |F|^2 is below 1e-12 of its start while the iterate's exact Coulomb violation is
 * above abandon (that mode set is not the answer; 0: every run goes to its end).  Returns 1 with lambda and
 * v = G lambda + c (3n) set as soon as a solution's exact Coulomb violation (sim_contact_error_sum_model, Coulomb's law)
 * is below tol, else 0 (lambda and v untouched).  *iterations (if not NULL) is increased by the Newton iterations
 * done (at most forms x budget).  n out of [1, SIM_SOLVER_DIRECT_MAX_CONTACTS]: 0.  Deterministic: no transcendental
 * function, a fixed order of operations. */
int sim_solver_coulomb_direct(int n, const double *G, const double *c, const double *mu, const double *const *guesses,
                              int nguess, double tol, double abandon, int max_rounds, int budget, unsigned forms, double *lambda,
                              double *v, int *iterations);

/* The Coulomb NCP of n blocks (1 to SIM_SOLVER_DIRECT_MAX_CONTACTS) solved whole by a semismooth Newton method on
 * Alart and Curnier's equations (sim_solver_ac.c), from lambda, at most max_iter iterations.  Returns 1 with lambda,
 * v = G lambda + c the first iterate whose exact Coulomb violation (sim_contact_error_sum_model, Coulomb's law) is
 * below tol, else 0 with lambda, v the last iterate; adds the iterations done to *iterations (if not NULL).
 * Deterministic: no transcendental function, a fixed order of operations. */
int sim_solver_coulomb_newton_ac(int n, const double *G, const double *c, const double *mu, double tol, int max_iter,
                                 double *lambda, double *v, int *iterations);

/* The Newton iterations of the direct Coulomb solve one solve with row `solver` and parameters p may take at most
 * besides sim_solver_iteration_cap: "coulomb-stall-admm" with direct_rounds > 0 runs it on a stalled problem of at
 * most SIM_SOLVER_DIRECT_MAX_CONTACTS contacts: the semismooth Newton from three starts (3 x direct_newton_iter),
 * and the mode-set search with a budget of direct_max_iter iterations per slip formulation and attempt: the cone
 * form before ADMM and after it, each other formulation twice after it (2 x direct_forms x direct_max_iter); 0 for
 * every other row. */
long sim_solver_direct_cap(int solver, const sim_solver_params *p);
/* The row that row `solver` hands stalled problems to (SIM_SOLVER_ADMM for "coulomb-stall-admm"), or -1. */
int sim_solver_fallback(int solver);

/* 1 if row `solver` reads the pre-step contact velocity (its solve_pre is set), else 0: a caller computes v_pre
 * only then, so that the other solvers cost exactly what they cost without it. */
int sim_solver_uses_pre_velocity(int solver);

/* sim_solve with the pre-step contact velocity v_pre (3n, m/s; see sim_solver_pre_fn): a row with solve_pre gets
 * it, the others ignore it (v_pre may be NULL: every row then runs its plain solve). */
int sim_solve_pre(int solver, int n, const double *G, const double *c, const double *v_pre, const double *mu,
                  double *lambda, const sim_solver_params *p, sim_solver_stats *st);

/* As sim_solve, with the structure of G for the rows that use it ("admm", "coulomb-stall-admm": their *_tree
 * functions); the other rows ignore tree, so passing it costs them nothing. */
int sim_solve_tree(int solver, int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree);

/* Fills p with the paper's defaults listed in sim_solver_params. */
void sim_solver_default_params(sim_solver_params *p);

/* One line describing a return code. */
const char *sim_solver_strerror(int code);

/* Exact single-contact solution of the model above (Algorithm 1 for slip).  G: 3x3 row-major Delassus
 * block (1/kg, symmetric; the upper triangle is read), c: free contact velocity (m/s), contact frame
 * (t_x, t_y, n).  Writes lambda (N·s) and returns SIM_CONTACT_OPEN / STICK / SLIP, or SIM_SOLVER_EINVAL
 * (lambda = 0).  If steps is not NULL it receives the Algorithm 1 steps taken (stepping + bisection; 0
 * unless SLIP).  p may be NULL (defaults).  A slip result lies on the ellipse (v_n = 0, |lambda_T| =
 * mu lambda_n) within contact_tol of the exact minimizer (~1e-12 N·s with contact_refine).
 * Special cases: c_n > 0 is OPEN (lambda = 0); c_n = 0 with lambda0 outside the cone is OPEN too (the
 * ellipse shrinks to the apex); mu < 1e-9 is frictionless (lambda = (0, 0, -c_n / G_nn), SLIP when
 * closed; with G_xx = G_yy = 0, a joint limit, G_nn is used unregularized); a near-singular G (det <= 1e-12 tr^3)
 * gets 1e-10 tr added to its diagonal; G = 0 gives OPEN.  mu < 0 is a bounded row: lambda = (0, 0, clamp(-c_n / G_nn,
 * -b, b)), SLIP at a bound, else STICK (G_nn <= 0: -b sign(c_n)). */
int sim_contact_single(const double G[9], const double c[3], double mu, double lambda[3],
                       const sim_solver_params *p, int *steps);

/* Algorithm 2: nonlinear block SOR over contacts with exact per-contact solves (relaxation alpha, decayed
 * once per sweep towards alpha_min), warm-started from lambda; the contact velocities are kept up to date
 * incrementally (G_ij times each impulse change).  Stops when the exact violation (above) is below p->tol or
 * after p->max_iter sweeps; then the contacts found opening in the last sweep are released exactly
 * (lambda_i = 0; line 4's relaxation alone only shrinks them geometrically).  If it did not converge (the
 * per-contact iteration can cycle, e.g. when a contact's |G_nT| > G_nn / mu makes its best response jump
 * between open and a large slip impulse), a dissipation guard scales lambda by the s in [0, 1] minimizing
 * the step's kinetic-energy change c.lambda + 1/2 lambda.G lambda when that change is positive, so that a
 * non-converged step never adds energy (st->guard_scale).  Joint limits (p->limit_rounds > 0, the default, and
 * at most 12 limits beside at most 24 other blocks): the other blocks are swept on the Schur complement of an active
 * set of closed limits (v = 0 on them exactly; G' = G_CC - G_CA G_AA^-1 G_AC), the set started from the limits the
 * warm start pushes or leaves closing and corrected after each solve (limits that pull released, open limits that
 * close added) for up to p->limit_rounds solves; at the answer every limit is closed with lambda >= 0 or open with
 * v >= 0.  If the set does not settle the limits are swept as 1-D blocks from the current iterate, as with
 * limit_rounds 0: their exact solve (sim_contact_single's rules above) relaxed like any contact's, a limit found
 * opening released as a contact.  Bounded rows are 1-D blocks of the sweep, and one found at a bound in the last
 * sweep is set exactly to it.  st->iterations counts every sweep of every round.  Returns SIM_SOLVER_OK,
 * SIM_SOLVER_MAXITER or SIM_SOLVER_EINVAL.  p may be NULL (defaults), st NULL.  Allocation-free (stack scratch
 * ~80 kB); n <= SIM_SOLVER_MAX_CONTACTS. */
int sim_solve_bisection(int n, const double *G, const double *c, const double *mu, double *lambda,
                        const sim_solver_params *p, sim_solver_stats *st);

/* Exact single-contact Coulomb solve: as sim_contact_single (same stick / open / frictionless cases, same
 * arguments), but a slip result has its sliding velocity anti-parallel to lambda_T (within contact_tol on the
 * ellipse).  *no_root (if not NULL) is set to 1 when the block has no Coulomb slip root and the paper model's
 * slip solution was returned instead (else 0). */
int sim_contact_single_coulomb(const double G[9], const double c[3], double mu, double lambda[3],
                               const sim_solver_params *p, int *steps, int *no_root);

/* "coulomb-bisection": Algorithm 2 (the same sweeps, relaxation, release of opening contacts and dissipation
 * guard as sim_solve_bisection) with each contact solved for Coulomb's law (sim_contact_single_coulomb).  It stops
 * when the exact violation with Coulomb's sliding law (sim_contact_coulomb_error: s = lambda_T) is below p->tol.
 * At convergence: Signorini, the cone, and Coulomb's sliding law hold at every contact (the Coulomb NCP), except
 * where a block had no slip root (st->no_root; then the violation stays above tol).  Like every per-contact
 * Gauss-Seidel method it can cycle on ill-conditioned problems (heavy-on-light stacks); not converged: the last
 * iterate, scaled by the dissipation guard.  Joint limits and bounded rows: as in sim_solve_bisection (their 1-D
 * solves are the same in both models; the Coulomb violation measures them as the model violation does). */
int sim_solve_coulomb_bisection(int n, const double *G, const double *c, const double *mu, double *lambda,
                                const sim_solver_params *p, sim_solver_stats *st);

/* "pgs": projected Gauss-Seidel on the Coulomb NCP as in Le Lidec et al. 2023, Alg. 6: per contact
 *   lambda_n <- max(0, lambda_n - v_n / G_nn),  lambda_T <- proj_{|.| <= mu lambda_n}(lambda_T - v_T / min(G_xx, G_yy))
 * (v updated after each change), stopping when the NCP eps_abs with De Saxcé's correction (sim_contact_eps_abs,
 * dt = 1: N·s and m/s) is below p->tol.  At convergence: the Coulomb NCP.  No convergence guarantee (the
 * horizontal projection is not a proximal step of a convex problem); not converged after max_iter sweeps: the
 * last iterate, scaled by the dissipation guard.  A joint limit is the 1-D block of the normal step (its tangential
 * step divides by nothing: 1 / min(G_xx, G_yy) is taken as 0 when that is 0, and the disc of radius 0 keeps
 * lambda_T = 0); a bounded row takes the same normal step clamped to [-b, b], and eps_abs measures it as
 * sim_metrics.h says. */
int sim_solve_pgs(int n, const double *G, const double *c, const double *mu, double *lambda,
                  const sim_solver_params *p, sim_solver_stats *st);

/* "admm": the cone complementarity problem (CCP, Anitescu's convex relaxation: min 1/2 l.G l + c.l over the
 * friction cones) by ADMM, Le Lidec et al. 2023 Alg. 3: lambda = -(G + rho I)^-1 (c - rho z + gamma),
 * z = proj_K(lambda + gamma / rho), gamma += rho (lambda - z); rho adapted by the spectral rule (times or over
 * kappa^0.05, kappa estimated from a power iteration and the smallest Cholesky pivot, clamped to [1.5, 10]) when
 * one residual exceeds the other by p->admm_ratio, at most 12 times (then rho stays); the initial rho is
 * sqrt(lambda_max max(lambda_min, 1e-4 lambda_max)) (the floor matters for a singular G: more contact rows than
 * dofs); between rho changes, in the first 1,000 iterations, the iteration is Anderson-accelerated (memory 4, on
 * (z, gamma / rho); the accelerated points are never tested or returned).  Past 1,000 iterations plain ADMM
 * finishes: accelerated for 5,000 iterations, tight runs on the heavy-on-light stack at mass ratios 1e5 - 1e6
 * drifted to eps_abs ~20 - 80 (`herd-bench contact-models --only heavy_on_light`, 5,000-iteration column); with
 * the limit they end at 1.5e-2 - 1.7e-2 (1e6), 1.5e-9 - 1.7e-9 of the weight.  G + rho I is factored at each change of rho, here densely
 * (3n x 3n: up to 12 contacts its explicit inverse by Gauss-Jordan elimination while cond(G + rho I) <= ~1e3, else
 * the Cholesky factor; sim_solve_admm_tree can go through the kinematic tree instead).  Warm-started from lambda (projected on the cones).  Stops when the CCP eps_abs (sim_metrics.h,
 * no De Saxcé term, dt = 1) < p->tol or after p->admm_max_iter iterations; lambda is z, always in the cones.
 * The model differs from Coulomb on sliding contacts: the CCP lets a sliding contact separate at
 * v_n = mu |v_T| (Anitescu's relaxation); sticking and open contacts are exact.  Convergent for any PSD G
 * (proximal), hence robust on ill-conditioned problems.  Joint limits and bounded rows: the cone of mu = 0 is the
 * ray R+ e_n (the projection of a limit block is (0, 0, max(0, x_n))), a bounded row's set is {0} x {0} x [-b, b]
 * (projection: the clamp), and the problem stays convex, so ADMM solves them exactly (sticking and open limits,
 * the box condition) and they converge with the rest; the warm start's dual of a bounded row is -v (its set's
 * normal cone is not sign-restricted).  n <= SIM_SOLVER_ADMM_MAX_CONTACTS, else EINVAL. */
int sim_solve_admm(int n, const double *G, const double *c, const double *mu, double *lambda,
                   const sim_solver_params *p, sim_solver_stats *st);

/* "admm" with the structure of G (tree may be NULL: then as sim_solve_admm).  Solving with G + rho I the
 * Featherstone way: by Woodbury, with G = S^T S,
 *     (G + rho I)^-1 = (1/rho) (I - S^T (rho I + S S^T)^-1 S),
 * and rho I + S S^T (nv x nv) has exactly the tree's sparsity (a contact's columns live on one root path, whose
 * dofs are mutually ancestors), so it is factored in place by the packed LTDL of M's factorization (no fill-in),
 * each time rho changes, and each solve costs two sweeps along the contact paths and one tree solve.  With
 * S = D^-1/2 L^-T J^T this is rho M + J^T J = L^T D^1/2 (rho I + S S^T) D^1/2 L: the Schur complement of the
 * augmented system [M J^T; J -rho I] with the contacts eliminated first as leaves of the tree (the kind of
 * tree-sparse factorization Le Lidec et al. point to, their ref. [54]), built on M's LTDL factor.  Only the dofs on
 * the contacts' paths enter (off them the system is rho I and S x is zero).  The lambda_min estimate of the
 * spectral rule comes from inverse iteration on G + 1e-12 tr(G) I with that factor instead of the smallest pivot
 * of a dense Cholesky (so rho's path, and the result within tol, differ slightly from the dense run's).
 * Accuracy: Woodbury subtracts S^T (...) S x from x, so its relative error grows like eps lambda_max(G) / rho, as
 * the dense Cholesky's does (its condition number is (lambda_max + rho) / rho).  p->admm_factor chooses:
 * SIM_ADMM_FACTOR_AUTO (default) stays dense up to 12 contacts (the explicit inverse is the cheaper there;
 * `herd-bench admm` compares the two), and past that takes the tree when its estimated per-iteration cost
 * 6 sum(path lengths) + 2 (packed factor size) is below ~3/4 of the dense Cholesky's 2 (3n)^2 (ANYmal: always),
 * _DENSE and _TREE force one;
 * st->admm_tree says which ran.
 * A tree that breaks sim_solver_tree's rules, or n > SIM_SOLVER_ADMM_MAX_CONTACTS, falls back to dense.  Limit and
 * bounded rows enter the tree like contacts: their S columns live on their joint's root path, the tangent columns
 * zero (zero columns add nothing to S S^T and give x_T = (x_T - 0) / rho, so their zero stays). */
int sim_solve_admm_tree(int n, const double *G, const double *c, const double *mu, double *lambda,
                        const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree);

/* "coulomb-stall-admm": coulomb-bisection with a stall detector: when the Coulomb violation is not below
 * p->stall_drop times its value p->stall_window sweeps earlier (or max_iter sweeps end unconverged), the
 * problem goes to the fallbacks (st->fallback = 1).  First a direct Coulomb solve (up to
 * SIM_SOLVER_DIRECT_MAX_CONTACTS = 16 blocks, p->direct_rounds > 0): the semismooth Newton method on the whole
 * problem (sim_solver_coulomb_newton_ac, p->direct_newton_iter iterations) from the stalled iterate, then from the
 * warm start; when neither reaches a Coulomb solution, the mode-set search: each block's mode (open, stick, slip; a limit
 * open or closed; a bounded row inside or at a bound) guessed from the stalled iterate, then from the warm start, the
 * square system of those modes solved by Newton's method, the blocks that break their mode's inequalities switched
 * (active-set rounds), then single-block changes of the best mode set, with the cone formulation of a slipping
 * block's friction law, at most p->direct_max_iter Newton iterations; an answer is taken only when its exact Coulomb
 * violation is below p->tol (st->direct = 1, st->direct_iterations).  Else ADMM (sim_solve_admm, warm-started from the
 * last iterate; st->fallback_iterations), and when its CCP answer is not also a Coulomb solution, the direct solve
 * again: the semismooth Newton from the CCP answer, the mode-set search from the CCP answer's modes with the cone
 * form, then with each of the other p->direct_forms formulations in
 * turn (of SIM_SOLVER_DIRECT_FORMS) from the stalled iterate and the warm start, then from the CCP answer (at most
 * p->direct_max_iter Newton iterations per formulation and attempt); the CCP answer is returned only when all fail
 * (st->answer = SIM_ANSWER_CCP).  So: Coulomb when the sweeps converge or a Coulomb
 * solution is found near them, the CCP as the last resort.  st->error is the final solver's own measure.  Joint
 * limits and bounded rows: as coulomb-bisection in the sweeps, 1-D blocks in the direct solve, as ADMM in ADMM. */
int sim_solve_coulomb_stall_admm(int n, const double *G, const double *c, const double *mu, double *lambda,
                                 const sim_solver_params *p, sim_solver_stats *st);
/* The same, its ADMM fallback solving with G + rho I as sim_solve_admm_tree. */
int sim_solve_coulomb_stall_admm_tree(int n, const double *G, const double *c, const double *mu, double *lambda,
                                      const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree);

/* "pgs-hwangbo": projected Gauss-Seidel as in Hwangbo et al. 2018 (their eqs. 17-18): per contact
 *   lambda_n <- max(0, lambda_n - r_z v_n),  then  lambda_T <- proj_{|.| <= mu lambda_n}(lambda_T - r_T v_T)
 * with r_z = pgs_alpha / G_ii(zz), r_T = pgs_alpha / max(G_ii(xx), G_ii(yy)), v the current velocity.
 * Error per sweep (the paper's PGS measure): sum_i |lambda_i^new - lambda_i^old| (N·s) plus
 * sum_i max(0, -v_n,i) (m/s) after the sweep.  Same arguments, return codes and dissipation guard as
 * sim_solve_bisection.  A joint limit is the 1-D block of the normal step (r_T = 0 when max(G_xx, G_yy) = 0); a
 * bounded row takes lambda_n <- clamp(lambda_n - r_z v_n, -b, b), and in the error its complementarity violation
 * (sim_metrics.h) takes the place of max(0, -v_n). */
int sim_solve_pgs_hwangbo(int n, const double *G, const double *c, const double *mu, double *lambda,
                          const sim_solver_params *p, sim_solver_stats *st);

#endif

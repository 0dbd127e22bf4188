/* test_solver_rows.c — the two block kinds besides contacts (sim_solver.h): joint limits (mu = 0, empty tangent
 * rows: Signorini on row n) and bounded bilateral rows (mu < 0: |lambda_n| <= b, joint Coulomb friction), in every
 * solver of the table (admm and coulomb-stall-admm both dense and through the tree, the stall detector also forced
 * to hand over to ADMM).  Limit rows alone against a brute-force LCP (every active set), box rows alone against a
 * brute-force box QP (every row at +b, -b or free), both mixed with real ANYmal contacts (mu 0.8) checked against
 * each solver's documented conditions, empty tangent rows and zero blocks without NaN, no energy added by any
 * answer, the error measures zero exactly at a solution of each kind, and "impacts"' iteration cap. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim_impacts.h"
#include "sim_metrics.h"
#include "sim_model.h"
#include "sim_solver.h"
#include "sim_solver_cond.h"
#include "sim_step.h"
#include "sim_urdf.h"

#define NB 32   /* blocks at most (SIM_SOLVER_ADMM_MAX_CONTACTS) */
#define NV 18   /* dofs of the tree (ANYmal's) */

typedef struct { uint64_t s; } rng_t;

static double urand(rng_t *r, double lo, double hi)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

/* ANYmal's tree: six base dofs in a chain, then four legs of three. */
static const int PARENT[NV] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 5, 9, 10, 5, 12, 13, 5, 15, 16};

/* A problem with its structure: G = S^T S, S compact along each block's root path (stride NV). */
typedef struct {
    int n;
    double G[9 * NB * NB], c[3 * NB], mu[NB];
    double S[3 * NB * NV];
    int path[NB * NV], npath[NB];
} problem;

enum { CONTACT = 0, LIMIT = 1, BOX = 2 };

static int kind_of(const problem *P, int i)
{
    return sim_block_is_box(P->mu[i]) ? BOX : P->mu[i] == 0 && P->G[(size_t)(3 * i) * 3 * P->n + 3 * i] == 0 ? LIMIT
                                                                                                              : CONTACT;
}

/* Appends a block on dof's root path: random S columns of size `scale` (the tangent ones zero unless a contact),
 * free velocity c (tangents zero unless a contact). */
static void add_block(problem *P, rng_t *r, int dof, double mu, double scale, const double c[3])
{
    const int i = P->n++;
    int np = 0;
    for (int j = dof; j >= 0; j = PARENT[j]) P->path[i * NV + np++] = j;
    P->npath[i] = np;
    const int contact = mu > 0;
    for (int a = 0; a < 3; a++)
        for (int t = 0; t < NV; t++)
            P->S[(3 * i + a) * NV + t] = t < np && (a == 2 || contact) ? urand(r, -scale, scale) : 0.0;
    P->mu[i] = mu;
    for (int a = 0; a < 3; a++) P->c[3 * i + a] = a == 2 || contact ? c[a] : 0.0;
}

/* G = S^T S from the compact columns. */
static void assemble(problem *P)
{
    const int N = 3 * P->n;
    double D[3 * NB][NV];
    memset(D, 0, sizeof D);
    for (int i = 0; i < P->n; i++)
        for (int a = 0; a < 3; a++)
            for (int t = 0; t < P->npath[i]; t++) D[3 * i + a][P->path[i * NV + t]] = P->S[(3 * i + a) * NV + t];
    for (int x = 0; x < N; x++)
        for (int y = 0; y < N; y++) {
            double s = 0;
            for (int k = 0; k < NV; k++) s += D[x][k] * D[y][k];
            P->G[x * N + y] = s;
        }
}

/* ------------------------------------------------------------------------------------------------ */
/* The solvers: every row of the table, the ADMM ones dense and through the tree.                     */

typedef struct {
    const char *name;
    int row, factor, forced_stall;
} variant;

static const variant VARIANTS[] = {
    {"paper-bisection", SIM_SOLVER_PAPER_BISECTION, 0, 0},
    {"pgs", SIM_SOLVER_PGS, 0, 0},
    {"coulomb-bisection", SIM_SOLVER_COULOMB_BISECTION, 0, 0},
    {"admm dense", SIM_SOLVER_ADMM, SIM_ADMM_FACTOR_DENSE, 0},
    {"admm tree", SIM_SOLVER_ADMM, SIM_ADMM_FACTOR_TREE, 0},
    {"coulomb-stall-admm dense", SIM_SOLVER_COULOMB_STALL_ADMM, SIM_ADMM_FACTOR_DENSE, 0},
    {"coulomb-stall-admm tree", SIM_SOLVER_COULOMB_STALL_ADMM, SIM_ADMM_FACTOR_TREE, 0},
    {"coulomb-stall-admm forced dense", SIM_SOLVER_COULOMB_STALL_ADMM, SIM_ADMM_FACTOR_DENSE, 1},
    {"coulomb-stall-admm forced tree", SIM_SOLVER_COULOMB_STALL_ADMM, SIM_ADMM_FACTOR_TREE, 1},
    {"coulomb-stall-admm forced direct", SIM_SOLVER_COULOMB_STALL_ADMM, 0, 2},
    {"cond-vfpi", SIM_SOLVER_COND_VFPI, 0, 0},
    {"impacts", SIM_SOLVER_IMPACTS, 0, 0},
    {"pgs-hwangbo", SIM_SOLVER_PGS_HWANGBO, 0, 0},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

/* Solves P with variant v from lambda (in: warm start) at tolerance tol. */
static int solve(const variant *v, const problem *P, double *l, double tol, sim_solver_stats *st)
{
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = tol;
    p.max_iter = 20000;
    p.admm_max_iter = 20000;
    p.admm_factor = v->factor;
    /* forced stall: no sweep ever drops enough; 1: ADMM finishes (the direct solve off), 2: the direct solve does */
    if (v->forced_stall) p.stall_window = 1, p.stall_drop = 1e-300, p.direct_rounds = v->forced_stall == 2 ? 8 : 0;
    const sim_solver_tree t = {NV, PARENT, P->S, P->path, P->npath, NV};
    const int rc = sim_solve_tree(v->row, P->n, P->G, P->c, P->mu, l, &p, st, &t);
    if (v->factor && (v->row == SIM_SOLVER_ADMM || (st->fallback && st->admm_factors > 0)))
        cr_assert_eq(st->admm_tree, v->factor == SIM_ADMM_FACTOR_TREE, "%s: factored the other way", v->name);
    if (v->forced_stall) /* (a problem solved by the first sweep never stalls) */
        cr_assert(st->fallback || st->iterations <= 1, "%s: the stall detector did not hand over (%d sweeps)",
                  v->name, st->iterations);
    /* the rows' problems have Coulomb solutions: found directly up to the direct solve's 16 blocks */
    if (v->forced_stall == 2 && st->fallback && P->n <= 16)
        cr_assert_eq(st->direct, 1, "%s: the direct solve found no Coulomb solution (n %d, tol %g, answer %d, error %g)",
                     v->name, P->n, tol, st->answer, st->error);
    return rc;
}

static double energy_change(const problem *P, const double *l)
{
    const int N = 3 * P->n;
    double e = 0;
    for (int x = 0; x < N; x++) {
        double gl = 0;
        for (int y = 0; y < N; y++) gl += P->G[x * N + y] * l[y];
        e += l[x] * (P->c[x] + 0.5 * gl);
    }
    return e;
}

static void assert_finite_dissipative(const variant *v, const problem *P, const double *l, const char *what)
{
    for (int r = 0; r < 3 * P->n; r++) cr_assert(isfinite(l[r]), "%s %s: lambda[%d] = %g", v->name, what, r, l[r]);
    const double e = energy_change(P, l);
    cr_assert(e <= 1e-12, "%s %s: the impulses add %g J", v->name, what, e);
}

/* ------------------------------------------------------------------------------------------------ */
/* Brute-force references on the normal rows alone (A = the n x n normal part of G, q = c_n).         */

/* x = A_FF^-1 y on the rows with free[i] (Gaussian elimination with partial pivoting); 0, or -1 if singular. */
static int solve_free(int n, const double *A, const int *free_, double *y)
{
    int idx[NB], m = 0;
    for (int i = 0; i < n; i++)
        if (free_[i]) idx[m++] = i;
    double M[NB][NB + 1];
    for (int a = 0; a < m; a++) {
        for (int b = 0; b < m; b++) M[a][b] = A[idx[a] * n + idx[b]];
        M[a][m] = y[idx[a]];
    }
    for (int k = 0; k < m; k++) {
        int pv = k;
        for (int a = k + 1; a < m; a++)
            if (fabs(M[a][k]) > fabs(M[pv][k])) pv = a;
        if (!(fabs(M[pv][k]) > 1e-14)) return -1;
        for (int b = 0; b <= m; b++) {
            const double t = M[k][b];
            M[k][b] = M[pv][b], M[pv][b] = t;
        }
        for (int a = 0; a < m; a++) {
            if (a == k) continue;
            const double f = M[a][k] / M[k][k];
            for (int b = k; b <= m; b++) M[a][b] -= f * M[k][b];
        }
    }
    for (int a = 0; a < m; a++) y[idx[a]] = M[a][m] / M[a][a];
    return 0;
}

static void normal_part(const problem *P, double *A, double *q)
{
    const int n = P->n, N = 3 * n;
    for (int i = 0; i < n; i++) {
        q[i] = P->c[3 * i + 2];
        for (int j = 0; j < n; j++) A[i * n + j] = P->G[(3 * i + 2) * N + 3 * j + 2];
    }
}

/* The LCP 0 <= x _|_ A x + q >= 0 by enumerating the active sets; returns how many sets satisfy every condition
 * (1 for an SPD A) and the solution in x. */
static int lcp_brute(const problem *P, double *x)
{
    const int n = P->n;
    double A[NB * NB], q[NB];
    normal_part(P, A, q);
    int found = 0;
    for (int set = 0; set < 1 << n; set++) {
        int act[NB];
        double y[NB];
        for (int i = 0; i < n; i++) act[i] = set >> i & 1, y[i] = act[i] ? -q[i] : 0.0;
        if (solve_free(n, A, act, y) != 0) continue;
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            double w = q[i];
            for (int j = 0; j < n; j++) w += A[i * n + j] * y[j];
            ok = act[i] ? y[i] >= 0 : w >= 0;
        }
        if (ok) {
            found++;
            memcpy(x, y, sizeof(double) * (size_t)n);
        }
    }
    return found;
}

/* min 1/2 x.A x + q.x over |x_i| <= b_i by enumerating, per row, +b, -b or free; returns how many patterns
 * satisfy every condition (1 for an SPD A), the minimizer in x and, per row, the pattern (1: +b, -1: -b, 0). */
static int boxqp_brute(const problem *P, double *x, int *at)
{
    const int n = P->n;
    double A[NB * NB], q[NB];
    normal_part(P, A, q);
    int pow3 = 1;
    for (int i = 0; i < n; i++) pow3 *= 3;
    int found = 0;
    for (int code = 0; code < pow3; code++) {
        int pat[NB], fr[NB], k = code;
        double y[NB];
        for (int i = 0; i < n; i++, k /= 3) {
            const double b = sim_block_box_bound(P->mu[i]);
            pat[i] = k % 3 == 0 ? 0 : k % 3 == 1 ? 1 : -1;
            fr[i] = pat[i] == 0;
            y[i] = pat[i] * b;
        }
        double rhs[NB];
        for (int i = 0; i < n; i++) {
            rhs[i] = -q[i];
            for (int j = 0; j < n; j++)
                if (!fr[j]) rhs[i] -= A[i * n + j] * y[j];
        }
        if (solve_free(n, A, fr, rhs) != 0) continue;
        for (int i = 0; i < n; i++)
            if (fr[i]) y[i] = rhs[i];
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            const double b = sim_block_box_bound(P->mu[i]);
            double w = q[i];
            for (int j = 0; j < n; j++) w += A[i * n + j] * y[j];
            ok = pat[i] == 0 ? fabs(y[i]) <= b : pat[i] > 0 ? w <= 0 : w >= 0;
        }
        if (ok) {
            found++;
            memcpy(x, y, sizeof(double) * (size_t)n);
            memcpy(at, pat, sizeof(int) * (size_t)n);
        }
    }
    return found;
}

/* ------------------------------------------------------------------------------------------------ */
/* (1) Limit rows alone: every solver against the brute-force LCP.                                    */

/* Three to five coupled limit rows on random dofs, closing or opening slowly (|c_n| < 0.05 m/s: below "impacts"'
 * impact threshold, so that its deterministic path answers). */
static void limit_problem(problem *P, rng_t *r, int n)
{
    P->n = 0;
    for (int i = 0; i < n; i++) {
        const double c[3] = {0, 0, urand(r, -0.045, 0.03)};
        add_block(P, r, (int)urand(r, 0, NV - 0.01), 0.0, 1.0, c);
    }
    assemble(P);
}

Test(rows, limit_rows_alone_match_the_brute_force_lcp, .timeout = 120)
{
    rng_t r = {11};
    int active = 0, inactive = 0;
    for (int trial = 0; trial < 24; trial++) {
        problem P;
        limit_problem(&P, &r, 3 + trial % 3);
        double ref[NB];
        cr_assert_eq(lcp_brute(&P, ref), 1, "trial %d: the LCP of an SPD matrix has one solution", trial);
        for (int i = 0; i < P.n; i++) active += ref[i] > 0, inactive += ref[i] == 0;
        for (int k = 0; k < NVARIANTS; k++) {
            const variant *v = &VARIANTS[k];
            double l[3 * NB];
            for (int x = 0; x < 3 * P.n; x++) l[x] = x % 3 == 2 ? 0.0 : 1.0; /* tangential warm start: cleared */
            sim_solver_stats st;
            const int rc = solve(v, &P, l, 1e-12, &st);
            cr_assert_eq(rc, SIM_SOLVER_OK, "%s trial %d: rc %d (error %g after %d)", v->name, trial, rc, st.error,
                         st.iterations);
            assert_finite_dissipative(v, &P, l, "limits");
            for (int i = 0; i < P.n; i++) {
                cr_assert(l[3 * i] == 0 && l[3 * i + 1] == 0, "%s trial %d: tangential impulse on a limit", v->name,
                          trial);
                cr_assert(fabs(l[3 * i + 2] - ref[i]) <= 1e-8 + 1e-6 * fabs(ref[i]),
                          "%s trial %d row %d: lambda_n %.12g, reference %.12g", v->name, trial, i, l[3 * i + 2],
                          ref[i]);
            }
        }
    }
    cr_assert(active > 10 && inactive > 10, "both active and inactive limits (%d, %d)", active, inactive);
}

/* ------------------------------------------------------------------------------------------------ */
/* (3) Box rows alone: every solver against the brute-force box QP.                                   */

static void box_problem(problem *P, rng_t *r, int n)
{
    P->n = 0;
    for (int i = 0; i < n; i++) {
        const double c[3] = {0, 0, urand(r, -0.045, 0.045)};
        add_block(P, r, (int)urand(r, 0, NV - 0.01), SIM_BLOCK_BOX(urand(r, 0.0005, 0.012)), 1.0, c);
    }
    assemble(P);
}

Test(rows, box_rows_alone_match_the_brute_force_box_qp, .timeout = 120)
{
    rng_t r = {23};
    int upper = 0, lower = 0, inner_neg = 0, inner_pos = 0;
    for (int trial = 0; trial < 24; trial++) {
        problem P;
        box_problem(&P, &r, 3 + trial % 2);
        double ref[NB];
        int at[NB];
        cr_assert_eq(boxqp_brute(&P, ref, at), 1, "trial %d: the box QP of an SPD matrix has one minimizer", trial);
        for (int i = 0; i < P.n; i++)
            upper += at[i] > 0, lower += at[i] < 0, inner_neg += at[i] == 0 && ref[i] < 0,
                inner_pos += at[i] == 0 && ref[i] > 0;
        for (int k = 0; k < NVARIANTS; k++) {
            const variant *v = &VARIANTS[k];
            double l[3 * NB];
            for (int x = 0; x < 3 * P.n; x++) l[x] = x % 3 == 2 ? 0.0 : -2.0;
            sim_solver_stats st;
            const int rc = solve(v, &P, l, 1e-12, &st);
            cr_assert_eq(rc, SIM_SOLVER_OK, "%s trial %d: rc %d (error %g after %d)", v->name, trial, rc, st.error,
                         st.iterations);
            assert_finite_dissipative(v, &P, l, "boxes");
            for (int i = 0; i < P.n; i++) {
                const double b = sim_block_box_bound(P.mu[i]);
                cr_assert(l[3 * i] == 0 && l[3 * i + 1] == 0, "%s: tangential impulse on a box row", v->name);
                cr_assert(fabs(l[3 * i + 2]) <= b, "%s trial %d row %d: |lambda_n| %.12g over its bound %g", v->name,
                          trial, i, l[3 * i + 2], b);
                cr_assert(fabs(l[3 * i + 2] - ref[i]) <= 1e-8 + 1e-6 * fabs(ref[i]),
                          "%s trial %d row %d: lambda_n %.12g, reference %.12g (b %g)", v->name, trial, i,
                          l[3 * i + 2], ref[i], b);
                if (at[i]) /* a row at its bound is returned exactly at it */
                    cr_assert(l[3 * i + 2] == at[i] * b, "%s trial %d row %d: lambda_n %.17g, bound %.17g", v->name,
                              trial, i, l[3 * i + 2], at[i] * b);
            }
        }
    }
    cr_assert(upper > 5 && lower > 5 && inner_neg > 3 && inner_pos > 3,
              "rows at +b, at -b and free of both signs (%d, %d, %d, %d)", upper, lower, inner_neg, inner_pos);
}

/* ------------------------------------------------------------------------------------------------ */
/* (2) Limits and boxes mixed with real contacts: ANYmal's contact problem plus limit and box rows.    */

static sim_model *anymal(void)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    return m;
}

/* A random ANYmal state near the ground, its contacts (at most 16, mu 0.8, as sim_step builds S and c), and then
 * four limit and four box rows on random joints (S columns on the joint's root path, of the contacts' size). */
static void mixed_problem(const sim_model *m, sim_data *d, rng_t *r, problem *P)
{
    cr_assert_eq(m->nv, NV);
    for (int k = 0; k < NV; k++) cr_assert_eq(m->dof_parent[k], PARENT[k]);
    do {
        sim_data_reset(m, d);
        sim_step_forget_contacts(d);
        d->q[2] = urand(r, 0.2, 0.5);
        const double ax = urand(r, -0.4, 0.4), ay = urand(r, -0.4, 0.4), az = urand(r, -3, 3);
        const double th = sqrt(ax * ax + ay * ay + az * az);
        d->q[3] = cos(th / 2);
        d->q[4] = sin(th / 2) * ax / th, d->q[5] = sin(th / 2) * ay / th, d->q[6] = sin(th / 2) * az / th;
        for (int k = 7; k < m->nq; k++) d->q[k] = urand(r, -1.2, 1.2);
        for (int k = 0; k < m->nv; k++) d->u[k] = urand(r, -0.5, 0.5);
        sim_step_stages(m, d, 5e-3, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
    } while (d->ncon < 3);
    P->n = 0;
    double smax = 0;
    for (int i = 0; i < d->ncon && P->n < 16; i++) {
        const int k = P->n++;
        P->npath[k] = d->con_npath[i];
        memcpy(P->path + k * NV, d->con_path + i * m->nv, sizeof(int) * NV);
        for (int a = 0; a < 3; a++) {
            memcpy(P->S + (3 * k + a) * NV, d->Bc + (size_t)(3 * i + a) * m->nv, sizeof(double) * NV);
            for (int t = 0; t < NV; t++) smax = fmax(smax, fabs(P->S[(3 * k + a) * NV + t]));
        }
        for (int a = 0; a < 3; a++) P->c[3 * k + a] = d->cfree[3 * i + a];
        P->mu[k] = 0.8;
    }
    for (int j = 0; j < 8; j++) {
        const double c[3] = {0, 0, urand(r, -0.5, 0.5)};
        const int dof = 6 + (int)urand(r, 0, 11.99);
        add_block(P, r, dof, j < 4 ? 0.0 : SIM_BLOCK_BOX(urand(r, 0.02, 1.0)), 0.5 * smax, c);
    }
    assemble(P);
}

/* The conditions every deterministic answer satisfies at convergence (eps: N·s | m/s): limits Signorini on row n,
 * boxes their box condition, contacts inside the cone with lambda_n >= 0 and v_n >= 0, no tangential impulse on
 * the limit and box rows. */
static void assert_row_conditions(const variant *v, const problem *P, const double *l, double eps, const char *what)
{
    double vel[3 * NB];
    sim_contact_velocity(P->n, P->G, P->c, l, vel);
    for (int i = 0; i < P->n; i++) {
        const double *li = l + 3 * i, *vi = vel + 3 * i;
        switch (kind_of(P, i)) {
        case LIMIT:
            cr_assert(li[0] == 0 && li[1] == 0, "%s %s: limit %d has a tangential impulse", v->name, what, i);
            cr_assert(li[2] >= -eps && vi[2] >= -eps && fabs(fmin(li[2], vi[2])) <= eps,
                      "%s %s: limit %d lambda_n %g v_n %g", v->name, what, i, li[2], vi[2]);
            break;
        case BOX: {
            const double b = sim_block_box_bound(P->mu[i]);
            cr_assert(li[0] == 0 && li[1] == 0, "%s %s: box %d has a tangential impulse", v->name, what, i);
            cr_assert(fabs(li[2]) <= b * (1 + 1e-12), "%s %s: box %d |lambda_n| %g > b %g", v->name, what, i, li[2], b);
            const int up = li[2] >= b - eps, lo = li[2] <= -b + eps;
            cr_assert((up && vi[2] <= eps) || (lo && vi[2] >= -eps) || fabs(vi[2]) <= eps,
                      "%s %s: box %d lambda_n %g (b %g) with v_n %g", v->name, what, i, li[2], b, vi[2]);
            break;
        }
        default:
            cr_assert(li[2] >= -eps && vi[2] >= -eps, "%s %s: contact %d lambda_n %g v_n %g", v->name, what, i, li[2],
                      vi[2]);
            cr_assert(hypot(li[0], li[1]) <= P->mu[i] * li[2] + eps, "%s %s: contact %d outside its cone", v->name,
                      what, i);
        }
    }
}

Test(rows, limits_and_boxes_mixed_with_anymal_contacts, .timeout = 600)
{
    sim_model *m = anymal();
    m->opt.margin = 0.3;
    sim_data *d = sim_data_new(m);
    cr_assert_not_null(d);
    rng_t r = {5};
    int converged[NVARIANTS] = {0}, at_bound = 0, interior = 0, limit_active = 0;
    const double tol = 1e-9, eps = 1e-6;
    for (int trial = 0; trial < 8; trial++) {
        problem P;
        mixed_problem(m, d, &r, &P);
        for (int k = 0; k < NVARIANTS; k++) {
            const variant *v = &VARIANTS[k];
            double l[3 * NB] = {0};
            sim_solver_stats st;
            const int rc = solve(v, &P, l, tol, &st);
            cr_assert(rc == SIM_SOLVER_OK || rc == SIM_SOLVER_MAXITER, "%s: rc %d", v->name, rc);
            assert_finite_dissipative(v, &P, l, "mixed");
            if (rc != SIM_SOLVER_OK) continue;
            converged[k]++;
            char what[32];
            snprintf(what, sizeof what, "trial %d", trial);
            if (v->row == SIM_SOLVER_IMPACTS && st.impact) {
                /* an impact: no closing velocity, cones and boxes, no complementarity (sim_impacts.h) */
                double vel[3 * NB];
                sim_contact_velocity(P.n, P.G, P.c, l, vel);
                for (int i = 0; i < P.n; i++) {
                    const int kd = kind_of(&P, i);
                    if (kd == BOX) cr_assert(fabs(l[3 * i + 2]) <= sim_block_box_bound(P.mu[i]) * (1 + 1e-12));
                    else cr_assert(vel[3 * i + 2] >= -1e-6 && l[3 * i + 2] >= 0, "impacts %s row %d", what, i);
                }
                continue;
            }
            assert_row_conditions(v, &P, l, eps, what);
            /* each solver's own model: the paper's, the CCP, or the Coulomb NCP */
            double vel[3 * NB];
            sim_contact_velocity(P.n, P.G, P.c, l, vel);
            const int ccp = v->row == SIM_SOLVER_ADMM || st.fallback;
            const double e = v->row == SIM_SOLVER_PAPER_BISECTION ? sim_contact_model_error(P.n, P.G, P.c, P.mu, l)
                             : ccp ? sim_contact_eps_abs(P.n, vel, P.mu, l, 0)
                                   : sim_contact_coulomb_error(P.n, P.G, P.c, P.mu, l);
            cr_assert(e < 1e-5, "%s %s: its model's error %g at convergence", v->name, what, e);
            if (k == 0)
                for (int i = 0; i < P.n; i++) {
                    const int kd = kind_of(&P, i);
                    if (kd == BOX) {
                        const int atb = fabs(l[3 * i + 2]) == sim_block_box_bound(P.mu[i]);
                        at_bound += atb, interior += !atb;
                    }
                    limit_active += kd == LIMIT && l[3 * i + 2] > 0;
                }
        }
    }
    for (int k = 0; k < NVARIANTS; k++)
        cr_assert(converged[k] >= 2, "%s converged on %d of 8 problems only", VARIANTS[k].name, converged[k]);
    for (int k = 3; k <= 8; k++) /* the ADMM family is convergent on every problem */
        cr_assert_eq(converged[k], 8, "%s converged on %d of 8", VARIANTS[k].name, converged[k]);
    cr_assert(at_bound > 2 && interior > 2 && limit_active > 2, "box rows at and inside their bound (%d, %d), "
              "active limits (%d)", at_bound, interior, limit_active);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* ------------------------------------------------------------------------------------------------ */
/* (4) Empty tangent rows and empty blocks: no NaN, no tangential impulse.                           */

Test(rows, empty_tangent_rows_and_zero_blocks_give_no_nan)
{
    /* one limit (G = diag(0, 0, 2)), one box (G_nn = 0.5, b = 0.1) and one box whose block is all zero; a warm
       start with tangential impulses on all three */
    problem P = {0};
    P.n = 3;
    const int N = 9;
    P.G[2 * N + 2] = 2.0;
    P.G[5 * N + 5] = 0.5;
    P.G[2 * N + 5] = P.G[5 * N + 2] = 0.3;
    P.c[2] = -1.0, P.c[5] = 0.4, P.c[8] = -0.2;
    P.mu[0] = 0.0, P.mu[1] = SIM_BLOCK_BOX(0.1), P.mu[2] = SIM_BLOCK_BOX(0.05);
    for (int k = 0; k < NVARIANTS; k++) {
        const variant *v = &VARIANTS[k];
        if (v->factor == SIM_ADMM_FACTOR_TREE) continue; /* this G has no tree behind it */
        double l[9] = {3, -4, 0, 1, 1, 0, -2, 5, 0};
        sim_solver_stats st;
        sim_solver_params p;
        sim_solver_default_params(&p);
        p.tol = 1e-12, p.max_iter = 5000, p.admm_max_iter = 5000;
        p.admm_factor = v->factor;
        if (v->forced_stall) p.stall_window = 1, p.stall_drop = 1e-300, p.direct_rounds = v->forced_stall == 2 ? 8 : 0;
        const int rc = sim_solve(v->row, 3, P.G, P.c, P.mu, l, &p, &st);
        cr_assert(rc == SIM_SOLVER_OK || rc == SIM_SOLVER_MAXITER, "%s: rc %d", v->name, rc);
        assert_finite_dissipative(v, &P, l, "empty rows");
        for (int i = 0; i < 3; i++) cr_assert(l[3 * i] == 0 && l[3 * i + 1] == 0, "%s: block %d tangents", v->name, i);
        cr_assert(fabs(l[5]) <= 0.1 && fabs(l[8]) <= 0.05, "%s: a box over its bound", v->name);
        /* the limit and the first box: lambda = (0.5 + ..., clamp): check the conditions exactly as measured */
        double vel[9];
        sim_contact_velocity(3, P.G, P.c, l, vel);
        cr_assert(l[2] >= 0 && vel[2] >= -1e-6 && fabs(fmin(l[2], vel[2])) <= 1e-6, "%s: limit", v->name);
        cr_assert(sim_box_error(l[5], vel[5], 0.1) <= 1e-6, "%s: box %g v %g", v->name, l[5], vel[5]);
    }
    /* the single-contact solve: a limit and a box block alone */
    const double Gl[9] = {0, 0, 0, 0, 0, 0, 0, 0, 2}, cl[3] = {0, 0, -1};
    double l1[3];
    cr_assert_eq(sim_contact_single(Gl, cl, 0.0, l1, NULL, NULL), SIM_CONTACT_SLIP);
    cr_assert(l1[0] == 0 && l1[1] == 0 && l1[2] == 0.5);
    cr_assert_eq(sim_contact_single(Gl, cl, SIM_BLOCK_BOX(0.2), l1, NULL, NULL), SIM_CONTACT_SLIP);
    cr_assert(l1[2] == 0.2);
    const double cb[3] = {0, 0, 0.2};
    cr_assert_eq(sim_contact_single(Gl, cb, SIM_BLOCK_BOX(0.2), l1, NULL, NULL), SIM_CONTACT_STICK);
    cr_assert(l1[2] == -0.1);
    cr_assert_eq(sim_contact_single(Gl, cb, -INFINITY, l1, NULL, NULL), SIM_SOLVER_EINVAL);
}

/* ------------------------------------------------------------------------------------------------ */
/* The error measures: zero exactly at a solution of each kind, positive off it.                     */

Test(rows, error_measures_vanish_exactly_at_solutions_of_each_kind)
{
    /* one block: G = diag(0, 0, 2), so v_n = 2 lambda_n + c_n is exact in binary */
    const double G[9] = {0, 0, 0, 0, 0, 0, 0, 0, 2};
    struct {
        double mu, cn, ln;
        int solution;
    } cases[] = {
        {0.0, -1.0, 0.5, 1},              /* limit, closed: v_n = 0 */
        {0.0, 1.0, 0.0, 1},               /* limit, open */
        {0.0, -1.0, 0.25, 0},             /* limit, penetrating */
        {0.0, 1.0, 0.25, 0},              /* limit, pushing while open */
        {0.0, 1.0, -0.5, 0},              /* limit, pulling (v_n = 0): outside the ray R+ e_n */
        {SIM_BLOCK_BOX(1.0), -1.0, 0.5, 1},   /* box, interior, v_n = 0 */
        {SIM_BLOCK_BOX(0.25), -1.0, 0.25, 1}, /* box at +b, v_n = -0.5 <= 0 */
        {SIM_BLOCK_BOX(0.25), 1.0, -0.25, 1}, /* box at -b, v_n = 0.5 >= 0 */
        {SIM_BLOCK_BOX(0.25), -1.0, -0.25, 0}, /* at -b with v_n < 0 */
        {SIM_BLOCK_BOX(1.0), -1.0, 0.25, 0},  /* interior with v_n = -0.5 */
        {SIM_BLOCK_BOX(0.25), -1.0, 0.5, 0},  /* over its bound (v_n = 0) */
        {SIM_BLOCK_BOX(0.25), 0.0, 0.0, 1},   /* interior at rest */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const double c[3] = {0, 0, cases[k].cn}, l[3] = {0, 0, cases[k].ln}, mu = cases[k].mu;
        sim_contact_metrics_t mt;
        sim_contact_metrics(1, G, c, &mu, l, 1.0, &mt);
        const double e[5] = {sim_contact_model_error(1, G, c, &mu, l), sim_contact_coulomb_error(1, G, c, &mu, l),
                             mt.eps_abs, mt.model_error, 0};
        double v[3];
        sim_contact_velocity(1, G, c, l, v);
        const double ncp = sim_contact_eps_abs(1, v, &mu, l, 1), ccp = sim_contact_eps_abs(1, v, &mu, l, 0);
        for (int q = 0; q < 4; q++) {
            if (cases[k].solution) cr_assert(e[q] == 0, "case %zu measure %d: %g at a solution", k, q, e[q]);
            else cr_assert(e[q] > 0, "case %zu measure %d: 0 off a solution", k, q);
        }
        if (cases[k].solution) cr_assert(ncp == 0 && ccp == 0 && mt.signorini == 0, "case %zu: eps_abs", k);
        else cr_assert(ncp > 0 && ccp > 0, "case %zu: eps_abs 0 off a solution", k);
    }
    /* a tangential impulse on a limit or a box row is a violation */
    const double c[3] = {0, 0, -1.0}, lt[3] = {1e-3, 0, 0.5};
    const double mus[2] = {0.0, SIM_BLOCK_BOX(1.0)};
    for (int q = 0; q < 2; q++) cr_assert(sim_contact_model_error(1, G, c, &mus[q], lt) > 0);
    /* validity: finite negative mu is a box row, non-finite is not a problem */
    const double l0[3] = {0};
    const double bad = -INFINITY;
    cr_assert(sim_contact_problem_valid(1, G, c, &mus[1], l0));
    cr_assert(!sim_contact_problem_valid(1, G, c, &bad, l0));
    cr_assert(isnan(sim_contact_model_error(1, G, c, &bad, l0)));
}

/* ------------------------------------------------------------------------------------------------ */
/* "impacts" with limits and boxes on its impact path, and its iteration cap.                          */

/* Two contacts and a limit closing fast (an impact) with two box rows: the outcome keeps every box, leaves nothing
 * closing and adds no energy; its V-FPI iterations stay within sim_solver_iteration_cap, which exceeds max_iter. */
Test(rows, impacts_keeps_boxes_and_its_iterations_within_the_cap, .timeout = 120)
{
    rng_t r = {77};
    int impacts = 0;
    for (int trial = 0; trial < 6; trial++) {
        problem P;
        P.n = 0;
        for (int i = 0; i < 2; i++) {
            const double c[3] = {urand(&r, -0.3, 0.3), urand(&r, -0.3, 0.3), urand(&r, -1.5, -0.5)};
            add_block(&P, &r, 6 + 3 * i + 2, 0.8, 0.7, c);
        }
        const double cl[3] = {0, 0, -1.0}, cb1[3] = {0, 0, 0.6}, cb2[3] = {0, 0, -0.6};
        add_block(&P, &r, 13, 0.0, 0.7, cl);
        add_block(&P, &r, 10, SIM_BLOCK_BOX(0.05), 0.7, cb1);
        add_block(&P, &r, 16, SIM_BLOCK_BOX(0.02), 0.7, cb2);
        assemble(&P);
        sim_solver_params p;
        sim_solver_default_params(&p);
        p.max_iter = 5; /* the base solver's cap: an impact's increments go far past it */
        p.seed = (unsigned long long)trial;
        double l[3 * NB] = {0};
        sim_solver_stats st;
        const int rc = sim_solve(SIM_SOLVER_IMPACTS, P.n, P.G, P.c, P.mu, l, &p, &st);
        cr_assert_eq(rc, SIM_SOLVER_OK);
        cr_assert(st.impact, "trial %d: two contacts and a limit closing at 0.5 - 1.5 m/s are an impact", trial);
        impacts++;
        const long cap = sim_solver_iteration_cap(SIM_SOLVER_IMPACTS, &p);
        cr_assert(st.iterations > p.max_iter && st.iterations <= cap, "trial %d: %d V-FPI iterations, cap %ld",
                  trial, st.iterations, cap);
        const variant v = {"impacts", SIM_SOLVER_IMPACTS, 0, 0};
        assert_finite_dissipative(&v, &P, l, "impact");
        double vel[3 * NB];
        sim_contact_velocity(P.n, P.G, P.c, l, vel);
        for (int i = 0; i < P.n; i++) {
            if (kind_of(&P, i) == BOX) {
                cr_assert(fabs(l[3 * i + 2]) <= sim_block_box_bound(P.mu[i]) * (1 + 1e-12), "box %d: %g", i,
                          l[3 * i + 2]);
                cr_assert(l[3 * i] == 0 && l[3 * i + 1] == 0);
            } else {
                cr_assert(vel[3 * i + 2] >= -1e-7 && l[3 * i + 2] >= 0, "row %d: v_n %g lambda_n %g", i, vel[3 * i + 2],
                          l[3 * i + 2]);
            }
        }
    }
    cr_assert(impacts == 6);
    /* the increment solve: a bounded row's box shifted by what it already received (acc), a contact capped */
    {
        double Gm[36] = {0}; /* two blocks: a contact, then a bounded row */
        Gm[0] = Gm[7] = Gm[14] = 1.0;          /* contact block */
        Gm[35] = 2.0;                          /* the box row's G_nn */
        Gm[2 * 6 + 5] = Gm[5 * 6 + 2] = 0.5;   /* coupled normals */
        const double c[6] = {0.1, 0, -1.0, 0, 0, -1.0}, mu[2] = {0.8, SIM_BLOCK_BOX(0.3)}, cap[2] = {0.2, 0};
        const double acc[6] = {0, 0, 0, 0, 0, 0.25};
        double l[6] = {0}, v[6];
        sim_cond_params cp;
        sim_cond_default_params(&cp);
        cp.tol = 1e-12, cp.max_iter = 5000;
        cr_assert_eq(sim_cond_solve_increment(2, Gm, c, mu, cap, acc, l, &cp, NULL, v), SIM_SOLVER_OK);
        cr_assert(l[2] == 0.2, "the contact at its cap: %g", l[2]);
        cr_assert(l[5] == 0.3 - 0.25, "the box row's increment at b - acc: %.17g", l[5]); /* v_n = -0.8 < 0 there */
        const double bad[6] = {0, 0, 0, 0, 0, NAN};
        cr_assert_eq(sim_cond_solve_increment(2, Gm, c, mu, cap, bad, l, &cp, NULL, v), SIM_SOLVER_EINVAL);
    }
    /* the cap itself: an impact's increments times its inner iterations, or max_iter when larger */
    sim_impacts_params ip;
    sim_impacts_default_params(&ip);
    sim_solver_params p;
    sim_solver_default_params(&p);
    cr_assert_eq(sim_solver_iteration_cap(SIM_SOLVER_IMPACTS, &p), (long)ip.max_increments * ip.inner.max_iter);
    p.max_iter = 2000000000;
    cr_assert_eq(sim_solver_iteration_cap(SIM_SOLVER_IMPACTS, &p), 2000000000L > (long)ip.max_increments *
                 ip.inner.max_iter ? 2000000000L : (long)ip.max_increments * ip.inner.max_iter);
}

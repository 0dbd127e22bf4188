/* sim_solver_admm.c — the global and projected solvers of Le Lidec et al. 2023 ("Contact models in robotics: a
 * comparative analysis"): NCP projected Gauss-Seidel with De Saxcé's criterion (their Alg. 6), the CCP by ADMM
 * (their Alg. 3, proximal, adaptive rho), and the robust default that hands a stalled Coulomb per-contact
 * iteration to ADMM.  See sim_solver.h for the models; the shared plumbing is in sim_solver_internal.h. */
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* NCP-PGS (Alg. 6).                                                                                  */

static int ncp_pgs_sweeps(int n, const double *G, const double *c, const double *mu, double *lambda,
                          const sim_solver_params *p, sim_solver_stats *st, double *v)
{
    const int N = 3 * n;
    double rn[SIM_SOLVER_MAX_CONTACTS], rt[SIM_SOLVER_MAX_CONTACTS];
    for (int i = 0; i < n; i++) {
        const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
        const double gnn = Gi[2 * N + 2], gt = fmin(Gi[0], Gi[N + 1]);
        rn[i] = gnn > 0 ? 1.0 / gnn : 0.0; /* line 3 */
        rt[i] = gt > 0 ? 1.0 / gt : 0.0;   /* line 5 */
    }
    double err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    int it = 0;
    while (!(err < p->tol) && it < p->max_iter) {
        it++;
        for (int i = 0; i < n; i++) {
            double *l = lambda + 3 * i;
            const double *vi = v + 3 * i;
            const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
            const double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
            if (sim_block_is_box(m)) { /* a bounded row: line 3's step, projected on [-b, b] */
                const double b = sim_block_box_bound(m);
                double bn = l[2] - rn[i] * vi[2];
                bn = bn > b ? b : bn < -b ? -b : bn;
                const double delta[3] = {0, 0, bn - l[2]};
                l[2] = bn;
                if (delta[2] != 0) sim_solver_add_column_block(N, G, i, delta, v);
                continue;
            }
            const double ln = fmax(0.0, l[2] - rn[i] * vi[2]); /* lines 3-4 */
            const double dn = ln - l[2];
            /* lines 5-6 with the tangential velocity updated by this normal change (Gauss-Seidel) */
            const double vx = vi[0] + Gi[2] * dn, vy = vi[1] + Gi[N + 2] * dn;
            double tx = l[0] - rt[i] * vx, ty = l[1] - rt[i] * vy;
            const double tn = sqrt(tx * tx + ty * ty), lim = m * ln;
            if (tn > lim) { /* the horizontal projection onto the disc of radius mu lambda_n */
                const double s = tn > 0 ? lim / tn : 0.0;
                tx *= s, ty *= s;
            }
            const double delta[3] = {tx - l[0], ty - l[1], dn};
            l[0] = tx, l[1] = ty, l[2] = ln;
            if (delta[0] != 0 || delta[1] != 0 || delta[2] != 0) sim_solver_add_column_block(N, G, i, delta, v);
        }
        err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    }
    if (!(err < p->tol)) {
        st->guard_scale = sim_solver_dissipation_guard(N, G, c, lambda, v);
        if (st->guard_scale != 1.0) err = sim_contact_eps_abs(n, v, mu, lambda, 1);
    }
    sim_solver_count_modes(n, mu, lambda, st);
    const int r = sim_solver_end(st, it, err, p->tol);
    st->answer = st->converged ? SIM_ANSWER_COULOMB : SIM_ANSWER_NONE; /* eps_abs with De Saxce's term: the NCP */
    return r;
}

int sim_solve_pgs(int n, const double *G, const double *c, const double *mu, double *lambda,
                  const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(ncp_pgs_sweeps, n, G, c, mu, lambda, p, st);
}

#ifndef ADMM_RELAX
#define ADMM_RELAX 1.6       /* over-relaxation factor in ]0, 2[ */
#endif
#ifndef ADMM_AA
#define ADMM_AA 4            /* Anderson acceleration memory (0: plain ADMM) */
#endif
#ifndef ADMM_AA_ITERS
#define ADMM_AA_ITERS 1000    /* acceleration only in the first iterations: past them, plain ADMM (whose convergence
                                for a fixed rho is guaranteed) finishes; accelerated throughout, tight runs on
                                heavy-on-light stacks drift instead of converging */
#endif
#ifndef ADMM_MAX_RHO_CHANGES
#define ADMM_MAX_RHO_CHANGES 12 /* rho is frozen after this many changes: on a few of the walk task's fallback
                                   problems it flips up and down at every test and, each change restarting the
                                   Anderson history, runs to admm_max_iter (test_admm: admm_rho_flip_walk) */
#endif
#ifndef ADMM_RHO_FLOOR
#define ADMM_RHO_FLOOR 1e-4  /* lambda_min floor (times lambda_max) in the initial rho */
#endif
#ifndef ADMM_ADAPT_EVERY
#define ADMM_ADAPT_EVERY 5   /* stopping test and rho reconsidered every this many iterations */
#endif

/* ------------------------------------------------------------------------------------------------ */
/* ADMM (Alg. 3) on the CCP: min 1/2 l.G l + c.l over the cones.                                      */

/* a . b over L entries as four interleaved partial sums.  One running sum is a chain of L dependent adds (the build
 * does not reassociate), and these products sit on ADMM's critical path: the Cholesky factor's inner products, the
 * power iteration's rows, and Anderson acceleration's Gram matrix and right-hand side, every iteration. */
static inline double dot4(const double *a, const double *b, int L)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int r = 0;
    for (; r + 4 <= L; r += 4) {
        s0 += a[r] * b[r];
        s1 += a[r + 1] * b[r + 1];
        s2 += a[r + 2] * b[r + 2];
        s3 += a[r + 3] * b[r + 3];
    }
    for (; r < L; r++) s0 += a[r] * b[r];
    return (s0 + s1) + (s2 + s3);
}

/* In-place Cholesky A = L L^T of an N x N SPD matrix (row-major).  On return the strict lower triangle holds L,
 * the strict upper triangle its mirror (row j of the upper part = column j of L) and the diagonal the
 * reciprocals 1 / L_jj (what chol_solve multiplies by).  Returns the smallest pivot L_jj^2, or 0 if A is not
 * numerically positive definite. */
double sim_chol_dense(double *A, int N)
{
    double pmin = INFINITY;
    for (int j = 0; j < N; j++) {
        double *Aj = A + (size_t)j * N;
        const double s = Aj[j] - dot4(Aj, Aj, j);
        if (!(s > 0)) return 0.0;
        pmin = fmin(pmin, s);
        const double id = 1.0 / sqrt(s);
        Aj[j] = id;
        for (int i = j + 1; i < N; i++) {
            double *Ai = A + (size_t)i * N;
            Ai[j] = (Ai[j] - dot4(Ai, Aj, j)) * id;
        }
    }
    for (int i = 1; i < N; i++)
        for (int j = 0; j < i; j++) A[(size_t)j * N + i] = A[(size_t)i * N + j];
    return pmin;
}

/* x := (L L^T)^-1 x with L as chol_dense leaves it.  Both sweeps run by columns: once x_j is final, it is
 * subtracted from every remaining entry (forward: column j of L = row j of the mirrored upper part; backward:
 * column i of L^T = row i of L), so each sweep reads contiguous rows and its updates are independent of each
 * other (they vectorise; no chain of dependent sums or divisions per row). */
void sim_chol_solve(const double *L, int N, double *x)
{
    for (int j = 0; j < N; j++) {
        const double *Uj = L + (size_t)j * N;
        const double xj = x[j] * Uj[j];
        x[j] = xj;
        for (int i = j + 1; i < N; i++) x[i] -= Uj[i] * xj;
    }
    for (int i = N - 1; i >= 0; i--) {
        const double *Li = L + (size_t)i * N;
        const double xi = x[i] * Li[i];
        x[i] = xi;
        for (int k = 0; k < i; k++) x[k] -= Li[k] * xi;
    }
}

/* L := chol(G + rho I) (as chol_dense stores it).  Returns 0, or -1 if not positive definite (rho too small
 * for a singular G). */
static int factor_shifted(const double *G, int N, double rho, double *L)
{
    memcpy(L, G, sizeof(double) * (size_t)N * N);
    for (int i = 0; i < N; i++) L[(size_t)i * N + i] += rho;
    return sim_chol_dense(L, N) > 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------------ */
/* (G + rho I)^-1 the Featherstone way (sim_solve_admm_tree): G = S^T S, so by Woodbury
 *     (G + rho I)^-1 = (1/rho) (I - S^T (rho I + S S^T)^-1 S),
 * and P = S S^T = sum over contacts of the outer products of their three columns, each supported on one root path
 * (a dof and its ancestors), only couples dofs that are ancestors of one another: P + rho I has the tree's
 * sparsity and its LTDL factorization along the parent array (as M's: Featherstone RBDA 6.3) makes no fill-in.
 * Packed as M's factor is (sim_model.h: row k = [A_kk, A_k,anc(k)...], ancestors nearest first), so that a
 * contact path's entries past t are exactly row path[t]'s ancestors and P's rows are summed contiguously. */

#define TREE_NM (SIM_SOLVER_TREE_MAX_DOF * (SIM_SOLVER_TREE_MAX_DOF + 1) / 2)

/* The factorization works on the dofs of the contacts' paths only (an ancestor-closed subtree, renumbered in
 * increasing order: a foot's 9 of ANYmal's 18 dofs): off it P vanishes and the system is rho I, which S x never
 * reaches. */
typedef struct admm_tree {
    const sim_solver_tree *t;
    int n, nv, nM;                           /* contacts; dofs on their paths; packed size */
    int adr[SIM_SOLVER_TREE_MAX_DOF];        /* start of (local) row k */
    int nanc[SIM_SOLVER_TREE_MAX_DOF];       /* its strict ancestors */
    int anc[TREE_NM];                        /* anc[adr[k] + 1 + u]: its u-th ancestor (local), nearest first */
    int lpath[SIM_SOLVER_ADMM_MAX_CONTACTS * SIM_SOLVER_TREE_MAX_DOF]; /* contact paths in local numbering */
    int loff[SIM_SOLVER_ADMM_MAX_CONTACTS];  /* contact i's local path at lpath + loff[i] */
    int spath;                               /* sum of the path lengths */
    double P[TREE_NM];                       /* S S^T, packed */
    double A[TREE_NM];                       /* LTDL of P + rho I, packed */
} admm_tree;

/* Index tables (local numbering, ancestors, local paths).  Returns 0, or -1 if the tree is not usable (too many dofs or contacts, a parent
 * not before its child, a path that is not a dof followed by its ancestors up to a root). */
static int tree_index(admm_tree *at, const sim_solver_tree *t, int n)
{
    const int nv = t->nv;
    if (nv <= 0 || nv > SIM_SOLVER_TREE_MAX_DOF || n > SIM_SOLVER_ADMM_MAX_CONTACTS || !t->parent || !t->S ||
        !t->path || !t->npath || t->stride < 1)
        return -1;
    int loc[SIM_SOLVER_TREE_MAX_DOF];
    for (int k = 0; k < nv; k++) {
        loc[k] = -1;
        if (t->parent[k] >= k || t->parent[k] < -1) return -1;
    }
    for (int i = 0; i < n; i++) {
        const int np = t->npath[i];
        const int *path = t->path + (size_t)i * t->stride;
        if (np < 1 || np > t->stride || np > nv || path[0] < 0 || path[0] >= nv || t->parent[path[np - 1]] != -1)
            return -1;
        for (int q = 0; q + 1 < np; q++)
            if (path[q + 1] != t->parent[path[q]]) return -1;
        for (int q = 0; q < np; q++) loc[path[q]] = 0;
    }
    /* local numbering of the dofs on some path (increasing, so parents stay before children) */
    int nl = 0, nM = 0;
    for (int k = 0; k < nv; k++) {
        if (loc[k] < 0) continue;
        const int pk = t->parent[k] < 0 ? -1 : loc[t->parent[k]];
        loc[k] = nl;
        at->nanc[nl] = pk < 0 ? 0 : at->nanc[pk] + 1;
        at->adr[nl] = nM;
        int *a = at->anc + nM + 1;
        if (pk >= 0) { /* nearest first: the parent, then the parent's ancestors */
            a[0] = pk;
            memcpy(a + 1, at->anc + at->adr[pk] + 1, sizeof(int) * (size_t)at->nanc[pk]);
        }
        nM += 1 + at->nanc[nl];
        nl++;
    }
    at->t = t, at->n = n, at->nv = nl, at->nM = nM;
    int off = 0;
    for (int i = 0; i < n; i++) {
        const int np = t->npath[i];
        const int *path = t->path + (size_t)i * t->stride;
        int *lp = at->lpath + off;
        at->loff[i] = off;
        off += np;
        for (int q = 0; q < np; q++) lp[q] = loc[path[q]];
    }
    at->spath = off;
    return 0;
}

/* P = S S^T (after tree_index). */
static void tree_assemble(admm_tree *at)
{
    const sim_solver_tree *t = at->t;
    memset(at->P, 0, sizeof(double) * (size_t)at->nM);
    for (int i = 0; i < at->n; i++) {
        const int np = t->npath[i];
        const int *lp = at->lpath + at->loff[i];
        const double *s0 = t->S + (size_t)(3 * i) * t->stride, *s1 = s0 + t->stride, *s2 = s1 + t->stride;
        for (int q = 0; q < np; q++) {
            double *row = at->P + at->adr[lp[q]] - q; /* row[u] pairs path[q] with path[u], u >= q */
            const double a0 = s0[q], a1 = s1[q], a2 = s2[q];
            for (int u = q; u < np; u++) row[u] += a0 * s0[u] + a1 * s1[u] + a2 * s2[u];
        }
    }
}

/* A := LTDL factor of P + rho I (in place, along the parent array).  Returns 0, or -1 if a pivot is not
 * positive (rho too small against rounding). */
static int tree_factor(admm_tree *at, double rho)
{
    double *A = at->A;
    memcpy(A, at->P, sizeof(double) * (size_t)at->nM);
    for (int k = 0; k < at->nv; k++) A[at->adr[k]] += rho;
    for (int k = at->nv - 1; k >= 0; k--) {
        double *Lk = A + at->adr[k];
        const int na = at->nanc[k];
        const int *anc = at->anc + at->adr[k] + 1;
        if (!(Lk[0] > 0)) return -1;
        const double inv = 1.0 / Lk[0];
        for (int t = 0; t < na; t++) {
            /* row anc[t] is [D, L to anc[t+1..]]: its ancestors are the tail of row k's */
            double *Li = A + at->adr[anc[t]];
            const double *tail = Lk + 1 + t;
            const double a = tail[0] * inv;
            for (int u = 0; u < na - t; u++) Li[u] -= a * tail[u];
            Lk[1 + t] = a;
        }
    }
    return 0;
}

/* x := (G + rho I)^-1 x = (x - S^T (rho I + S S^T)^-1 S x) / rho with A the factor of rho I + S S^T. */
static void tree_solve(const admm_tree *at, double rho, double *x)
{
    const sim_solver_tree *t = at->t;
    const int nv = at->nv;
    const double *A = at->A;
    double y[SIM_SOLVER_TREE_MAX_DOF];
    memset(y, 0, sizeof(double) * (size_t)nv);
    for (int i = 0; i < at->n; i++) { /* y = S x */
        const int *lp = at->lpath + at->loff[i];
        const double *s0 = t->S + (size_t)(3 * i) * t->stride, *s1 = s0 + t->stride, *s2 = s1 + t->stride;
        const double x0 = x[3 * i], x1 = x[3 * i + 1], x2 = x[3 * i + 2];
        for (int q = 0; q < t->npath[i]; q++) y[lp[q]] += s0[q] * x0 + s1[q] * x1 + s2[q] * x2;
    }
    for (int k = nv - 1; k >= 0; k--) { /* y := (L^T D L)^-1 y */
        const double yk = y[k];
        const int *anc = at->anc + at->adr[k] + 1;
        const double *Lk = A + at->adr[k] + 1;
        for (int u = 0; u < at->nanc[k]; u++) y[anc[u]] -= Lk[u] * yk;
    }
    for (int k = 0; k < nv; k++) {
        double yk = y[k] / A[at->adr[k]];
        const int *anc = at->anc + at->adr[k] + 1;
        const double *Lk = A + at->adr[k] + 1;
        for (int u = 0; u < at->nanc[k]; u++) yk -= Lk[u] * y[anc[u]];
        y[k] = yk;
    }
    const double ir = 1.0 / rho;
    for (int i = 0; i < at->n; i++) { /* x := (x - S^T y) / rho */
        const int *lp = at->lpath + at->loff[i];
        const double *s0 = t->S + (size_t)(3 * i) * t->stride, *s1 = s0 + t->stride, *s2 = s1 + t->stride;
        double r0 = 0, r1 = 0, r2 = 0;
        for (int q = 0; q < t->npath[i]; q++) {
            const double yq = y[lp[q]];
            r0 += s0[q] * yq, r1 += s1[q] * yq, r2 += s2[q] * yq;
        }
        x[3 * i] = (x[3 * i] - r0) * ir;
        x[3 * i + 1] = (x[3 * i + 1] - r1) * ir;
        x[3 * i + 2] = (x[3 * i + 2] - r2) * ir;
    }
}

int sim_solver_tree_shifted_solve(const sim_solver_tree *tree, int n, double rho, double *x)
{
    admm_tree at;
    if (!tree || !x || n < 1 || n > SIM_SOLVER_ADMM_MAX_CONTACTS || !(rho > 0) || tree_index(&at, tree, n) != 0)
        return SIM_SOLVER_EINVAL;
    tree_assemble(&at);
    if (tree_factor(&at, rho) != 0) return SIM_SOLVER_EINVAL;
    tree_solve(&at, rho, x);
    return 0;
}

/* Small dense systems (N <= INV_N, up to 12 contacts) are solved with the explicit inverse (G + rho I)^-1: a product
 * by it is independent vector multiply-adds, where the two triangular sweeps of chol_solve are 2N dependent steps
 * (with about ten iterations per factorization on the walk task's fallback problems, those sweeps would dominate the
 * fallback's time).  The inverse comes from Gauss-Jordan elimination on whole rows, padded to INV_N entries as
 * 4-wide vectors: N^3 multiply-adds, but vectorised and without the short dependent inner products of chol_dense,
 * so it costs less than the Cholesky factor alone.  No pivoting is needed: G + rho I is symmetric positive
 * definite, and then the pivots are those of its LDL^T factorization (the squares of the Cholesky pivots), all
 * positive; a pivot that is not means the matrix is not numerically positive definite, as for chol_dense.
 * It is used only while G + rho I is well conditioned (INV_RHO_MIN below). */
enum { INV_N = 36, INV_V = INV_N / 4 };
_Static_assert(INV_V == 9, "inv_apply has one case per vector count up to INV_V");
typedef double inv_v4 __attribute__((vector_size(32)));

/* A := (G + shift I)^-1 (N <= INV_N; row i = A[i], padded with zeros).  Returns the smallest pivot, or 0 if one was
 * not positive (A is then unusable).  pivots_only: only the elimination below each pivot (the pivots are the same,
 * A is not the inverse), for the lambda_min estimate. */
static double gj_inverse(const double *G, int N, double shift, inv_v4 (*A)[INV_V], const int pivots_only)
{
    const int V = (N + 3) / 4;
    for (int i = 0; i < N; i++) { /* row i of G + shift I, zero-padded, built in registers */
        const double *Gi = G + (size_t)i * N;
        for (int v = 0; v < V; v++) {
            inv_v4 a;
            for (int j = 0; j < 4; j++) {
                const int q = 4 * v + j;
                a[j] = q < N ? (q == i ? Gi[q] + shift : Gi[q]) : 0.0;
            }
            A[i][v] = a;
        }
    }
    double pmin = INFINITY;
    for (int k = 0; k < N; k++) {
        const double piv = A[k][k / 4][k % 4];
        if (!(piv > 0)) return 0.0;
        pmin = piv < pmin ? piv : pmin;
        const double ip = 1.0 / piv;
        /* the pivot row scaled, its entry k set to 1 + ip: subtracting f times it from a row whose entry k is f
           leaves -f ip there, that entry's value in the inverse, with no separate (scalar) store into the row */
        inv_v4 r[INV_V];
        for (int v = 0; v < V; v++) r[v] = A[k][v] * ip;
        r[k / 4][k % 4] = 1.0 + ip;
        for (int i = pivots_only ? k + 1 : 0; i < N; i++) {
            if (i == k) continue;
            const double f = A[i][k / 4][k % 4];
            for (int v = 0; v < V; v++) A[i][v] -= f * r[v];
        }
        r[k / 4][k % 4] = ip;
        for (int v = 0; v < V; v++) A[k][v] = r[v];
    }
    return pmin;
}

/* x := A x for a symmetric A from gj_inverse (row q is column q), with V = ceil(N / 4) accumulators in registers. */
static inline __attribute__((always_inline)) void inv_apply_v(const inv_v4 (*A)[INV_V], int N, double *x, const int V)
{
    inv_v4 y[INV_V];
    for (int v = 0; v < V; v++) y[v] = (inv_v4){0, 0, 0, 0};
    for (int q = 0; q < N; q++) {
        const double xq = x[q];
        for (int v = 0; v < V; v++) y[v] += xq * A[q][v];
    }
    for (int q = 0; q < N; q++) x[q] = y[q / 4][q % 4];
}

static void inv_apply(const inv_v4 (*A)[INV_V], int N, double *x)
{
    switch ((N + 3) / 4) {
    case 1: inv_apply_v(A, N, x, 1); break;
    case 2: inv_apply_v(A, N, x, 2); break;
    case 3: inv_apply_v(A, N, x, 3); break;
    case 4: inv_apply_v(A, N, x, 4); break;
    case 5: inv_apply_v(A, N, x, 5); break;
    case 6: inv_apply_v(A, N, x, 6); break;
    case 7: inv_apply_v(A, N, x, 7); break;
    case 8: inv_apply_v(A, N, x, 8); break;
    default: inv_apply_v(A, N, x, INV_V); break; /* 9: N <= INV_N; only the ceil(N / 4) vectors gj_inverse wrote */
    }
}

/* The shifted system of one ADMM run: dense (the inverse of G + rho I when N <= INV_N and it is well conditioned,
 * else L = chol(G + rho I)) or through the tree (at). */
typedef struct admm_shift {
    const double *G;
    int N;
    double *L;          /* room for the dense Cholesky factor (used when the inverse is not), or NULL (tree) */
    admm_tree *at;      /* tree, or NULL */
    int factors;        /* factorizations done */
    inv_v4 (*inv)[INV_V]; /* room for the dense inverse (N <= INV_N), or NULL */
    double lmax;        /* lambda_max(G) (estimated) */
    int use_inv;        /* the current factorization is the inverse (else L) */
} admm_shift;

/* The inverse is used while cond(G + rho I) <= (lambda_max + rho) / rho stays below ~1 / INV_RHO_MIN; past that
 * (rho small against G's scale, as on a 1e6 heavy-on-light stack) the Cholesky factor is kept: with a smaller
 * bound the products by the inverse, not ADMM, limit the accuracy reached on that stack (test_admm's long run on
 * it checks the bound).  The walk task's fallback problems start at rho ~1e-2 lambda_max (the floor of the
 * initial rho), so their factorizations use the inverse. */
#define INV_RHO_MIN 1e-3

static int shift_factor(admm_shift *sh, double rho)
{
    sh->factors++;
    if (sh->at) return tree_factor(sh->at, rho);
    sh->use_inv = sh->inv && rho >= INV_RHO_MIN * sh->lmax;
    if (sh->use_inv) return gj_inverse(sh->G, sh->N, rho, sh->inv, 0) > 0 ? 0 : -1;
    return factor_shifted(sh->G, sh->N, rho, sh->L);
}

static void shift_solve(const admm_shift *sh, double rho, double *x)
{
    if (sh->at) tree_solve(sh->at, rho, x);
    else if (sh->use_inv) inv_apply((const inv_v4 (*)[INV_V])sh->inv, sh->N, x);
    else sim_chol_solve(sh->L, sh->N, x);
}

/* Projection of each contact's x onto K_mu (dual = 0) or K*_mu = K_{1/mu} (dual = 1).  A bounded row (mu < 0):
 * onto {0} x {0} x [-b, b], and its dual is the whole line of row n (a bilateral row's velocity has no sign), so
 * the dual projection keeps x_n (a joint limit, mu = 0, is the cone K_0 = R+ on row n, its dual the half-space). */
static void project_cones(int n, const double *mu, const double *x, double *out, int dual)
{
    for (int i = 0; i < n; i++) {
        if (sim_block_is_box(mu[i])) {
            const double b = sim_block_box_bound(mu[i]), xn = x[3 * i + 2];
            out[3 * i] = out[3 * i + 1] = 0;
            out[3 * i + 2] = dual ? xn : xn > b ? b : xn < -b ? -b : xn;
            continue;
        }
        double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
        if (dual) m = m > 0 ? 1.0 / m : INFINITY;
        sim_cone_project_point(x + 3 * i, m, out + 3 * i);
    }
}

/* SIM_ADMM_FACTOR_AUTO's choice.  Up to INV_N rows (12 contacts) dense, with the explicit inverse: measured with
 * `herd-bench admm` (both modes on the same problems, interleaved), on ANYmal the tree is no faster than the
 * inverse's product up to that size.  Past INV_N the dense solve is the Cholesky factor's two sweeps, ~2 N^2
 * dependent multiply-adds per iteration, against the tree solve's ~6 sum(np) + 2 nM (indirect, along the paths
 * and the packed factor); the factorizations (one per rho change, ~15 iterations apart) add less.  The rule
 * below, tree when 3 N^2 >= 12 sum(np) + 4 nM, puts the switch at 6-7 contacts on ANYmal, so past INV_N it
 * always picks the tree there. */
static int tree_cheaper(int N, int spath, int nM) { return 3 * N * N >= 12 * spath + 4 * nM; }

/* Whether a run factors through tree (at indexed and assembled, 1) or densely (0). */
static int admm_pick_tree(const sim_solver_params *p, const sim_solver_tree *tree, int n, admm_tree *at)
{
    const int N = 3 * n;
    if (!tree || p->admm_factor == SIM_ADMM_FACTOR_DENSE || n > SIM_SOLVER_ADMM_MAX_CONTACTS) return 0;
    const int automatic = p->admm_factor != SIM_ADMM_FACTOR_TREE;
    if (automatic) { /* a first cut before any indexing: nM >= 0 */
        if (!tree->npath || N <= INV_N) return 0; /* the dense inverse is cheaper than the tree there */
        int sp = 0;
        for (int i = 0; i < n; i++) sp += tree->npath[i];
        if (!tree_cheaper(N, sp, 0)) return 0;
    }
    if (tree_index(at, tree, n) != 0) return 0;
    if (automatic && !tree_cheaper(N, at->spath, at->nM)) return 0;
    tree_assemble(at);
    return 1;
}

#if ADMM_AA
/* Anderson acceleration (type II, memory AA_M) of a fixed-point map u -> T(u) on vectors of length L: the caller
 * writes g = T(u) and f = T(u) - u into aa.f / aa.g; aa_push records the differences to the previous pair (a ring of
 * AA_M columns, their Gram matrix updated by one row) and aa_extrapolate overwrites g with the accelerated point
 * g - dG y, y = argmin |f - dF y| (normal equations, Tikhonov 1e-10 of their trace).  Returns 1 if it did. */
enum { AA_M = ADMM_AA, AA_L = 6 * SIM_SOLVER_ADMM_MAX_CONTACTS };
typedef struct {
    double dF[AA_M][AA_L], dG[AA_M][AA_L], gram[AA_M][AA_M];
    double f[AA_L], g[AA_L], fprev[AA_L], gprev[AA_L];
    int nh, next, have_prev;
} anderson;

static int aa_push(anderson *aa, int L)
{
    double *f = aa->f, *g = aa->g, *fp = aa->fprev, *gq = aa->gprev;
    if (aa->have_prev) {
        const int s = aa->next;
        double *df = aa->dF[s], *dg = aa->dG[s];
        for (int r = 0; r < L; r++) { /* the differences, and the pair kept for the next (one pass, no copy call) */
            df[r] = f[r] - fp[r], dg[r] = g[r] - gq[r];
            fp[r] = f[r], gq[r] = g[r];
        }
        aa->next = (s + 1) % AA_M;
        if (aa->nh < AA_M) aa->nh++;
        for (int q = 0; q < aa->nh; q++) aa->gram[s][q] = aa->gram[q][s] = dot4(df, aa->dF[q], L);
    } else {
        memcpy(fp, f, sizeof(double) * (size_t)L);
        memcpy(gq, g, sizeof(double) * (size_t)L);
    }
    aa->have_prev = 1;
    return aa->nh > 0;
}

static int aa_extrapolate(anderson *aa, int L)
{
    const int m = aa->nh;
    double A[AA_M][AA_M], b[AA_M], y[AA_M], tr = 0;
    for (int a = 0; a < m; a++) {
        b[a] = dot4(aa->dF[a], aa->f, L);
        for (int q = 0; q < m; q++) A[a][q] = aa->gram[a][q];
        tr += A[a][a];
    }
    if (!(tr > 0)) return 0;
    for (int a = 0; a < m; a++) A[a][a] += 1e-10 * tr;
    double ipiv[AA_M]; /* one division per pivot, multiplications after it */
    for (int a = 0; a < m; a++) { /* Cholesky-free elimination: A is SPD after the shift */
        ipiv[a] = 1.0 / A[a][a];
        for (int q = a + 1; q < m; q++) {
            const double t = A[q][a] * ipiv[a];
            for (int k = a; k < m; k++) A[q][k] -= t * A[a][k];
            b[q] -= t * b[a];
        }
    }
    for (int a = m - 1; a >= 0; a--) {
        double t = b[a];
        for (int k = a + 1; k < m; k++) t -= A[a][k] * y[k];
        y[a] = t * ipiv[a];
        if (!isfinite(y[a])) return 0;
    }
    for (int a = 0; a < m; a++) {
        const double ya = y[a], *dg = aa->dG[a];
        for (int r = 0; r < L; r++) aa->g[r] -= dg[r] * ya;
    }
    return 1;
}
#endif

/* ADMM from lambda (projected onto the cones) with v = G lambda + c; on return lambda = z (in the cones) and
 * v = G lambda + c.  Returns the iterations done; *err = the CCP eps_abs of the result. */
static int admm_iterate(int n, const double *G, const double *c, const double *mu, double *lambda,
                        const sim_solver_params *p, sim_solver_stats *st, double *v, double *err,
                        const sim_solver_tree *tree)
{
    const int N = 3 * n;
    union { /* one run uses one of the two factorizations: they share the stack */
        double L[3 * SIM_SOLVER_ADMM_MAX_CONTACTS * 3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
        admm_tree at;
    } f;
    double *L = f.L;
    inv_v4 Ainv[INV_N][INV_V];
    admm_shift sh = {G, N, L, NULL, 0, N <= INV_N ? Ainv : NULL, 0, 0};
    if (admm_pick_tree(p, tree, n, &f.at)) sh.at = &f.at, sh.L = NULL, sh.inv = NULL;
    st->admm_tree = sh.at != NULL;
    double z[3 * SIM_SOLVER_ADMM_MAX_CONTACTS], gam[3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
    double x[3 * SIM_SOLVER_ADMM_MAX_CONTACTS], zp[3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
    /* spectral estimates: lambda_max by a few power steps, lambda_min bounded by the smallest Cholesky pivot of
       G + 1e-12 tr I (every pivot is >= the smallest eigenvalue) */
    double tr = 0;
    for (int i = 0; i < N; i++) tr += G[(size_t)i * N + i];
    if (!(tr > 0)) { /* G = 0: no impulse changes any velocity (a bounded row minimizes c_n l alone: -b sign c_n) */
        memset(lambda, 0, sizeof(double) * (size_t)N);
        for (int i = 0; i < n; i++)
            if (sim_block_is_box(mu[i])) {
                const double b = sim_block_box_bound(mu[i]), cn = c[3 * i + 2];
                lambda[3 * i + 2] = cn > 0 ? -b : cn < 0 ? b : 0.0;
            }
        memcpy(v, c, sizeof(double) * (size_t)N);
        *err = sim_contact_eps_abs(n, v, mu, lambda, 0);
        return 0;
    }
    double lmax = 0;
    for (int i = 0; i < N; i++) x[i] = 1.0;
    for (int k = 0; k < 8; k++) {
        double nn = 0;
        for (int r = 0; r < N; r++) {
            const double s = dot4(G + (size_t)r * N, x, N);
            zp[r] = s;
            nn += s * s;
        }
        nn = sqrt(nn);
        if (!(nn > 0)) break;
        lmax = nn / sqrt((double)N); /* |G x| / |x|, |x| = sqrt(N) */
        for (int r = 0; r < N; r++) x[r] = zp[r] / nn * sqrt((double)N);
    }
    lmax = fmax(lmax, tr / N);
    sh.lmax = lmax;
    double lmin = 0;
    if (sh.inv) { /* Gauss-Jordan's pivots are chol_dense's */
        lmin = gj_inverse(G, N, 1e-12 * tr, sh.inv, 1);
        sh.factors++;
    } else if (!sh.at) {
        memcpy(L, G, sizeof(double) * (size_t)N * N);
        for (int i = 0; i < N; i++) L[(size_t)i * N + i] += 1e-12 * tr;
        lmin = sim_chol_dense(L, N);
        sh.factors++;
    } else if (shift_factor(&sh, 1e-12 * tr) == 0) {
        /* inverse iteration with (G + delta I)^-1, delta = 1e-12 tr: |(G + delta I)^-1 x| / |x| tends to
           1 / lambda_min(G + delta I) from below, so (like the dense pivot) this bounds lambda_min from above */
        const double delta = 1e-12 * tr;
        double inv = 0;
        for (int i = 0; i < N; i++) x[i] = 1.0;
        for (int k = 0; k < 8; k++) {
            memcpy(zp, x, sizeof(double) * (size_t)N);
            shift_solve(&sh, delta, zp);
            double nn = 0;
            for (int r = 0; r < N; r++) nn += zp[r] * zp[r];
            nn = sqrt(nn);
            if (!(nn > 0) || !isfinite(nn)) break;
            inv = nn / sqrt((double)N);
            for (int r = 0; r < N; r++) x[r] = zp[r] / nn * sqrt((double)N);
        }
        lmin = inv > 0 ? 1.0 / inv : 0;
    }
    lmin = fmax(lmin, 1e-12 * lmax);
    const double kappa = lmax / lmin;
    double fac = pow(kappa, 0.05); /* the spectral rule of Le Lidec et al. (Sec. III-E) */
    fac = fmin(fmax(fac, 1.5), 10.0);
    /* initial rho: the geometric mean of the extreme eigenvalues, with lambda_min floored at ADMM_RHO_FLOOR
       lambda_max.  A G with more contact rows than dofs (the walk task's 5 - 8 foot contacts on 18 dofs) is
       singular, lambda_min ~1e-10 lambda_max, and the plain rule starts rho ~1e-5 of where the adaptation ends
       (~0.1 - 1 lambda_max), and would spend many adaptations climbing there.  The floor caps that climb at a few
       adaptations (`herd-bench admm`, walk_fallback, reports iterations and factorizations per problem). */
    double rho = p->admm_rho > 0 ? p->admm_rho : sqrt(lmax * fmax(lmin, ADMM_RHO_FLOOR * lmax));
    while (shift_factor(&sh, rho) != 0) rho *= 10; /* only a rho far below G's scale can fail */

    /* warm start: z = proj_K(lambda), gamma = -proj_K*(G z + c) (the dual of the CCP at a solution) */
    project_cones(n, mu, lambda, z, 0);
    sim_contact_velocity(n, G, c, z, x);
    project_cones(n, mu, x, gam, 1);
    for (int r = 0; r < N; r++) gam[r] = -gam[r];
    sim_contact_velocity(n, G, c, z, v);
    double e = sim_contact_eps_abs(n, v, mu, z, 0);
    int it = 0, rho_changes = 0;
    const int max_it = p->admm_max_iter;
#if ADMM_AA
    anderson aa;
    aa.nh = aa.have_prev = aa.next = 0;
    double gp[3 * SIM_SOLVER_ADMM_MAX_CONTACTS];
#endif
    while (!(e < p->tol) && it < max_it) {
        it++;
#if ADMM_AA
        for (int r = 0; r < N; r++) gp[r] = gam[r];
#endif
        for (int r = 0; r < N; r++) {
            x[r] = -(c[r] - rho * z[r] + gam[r]); /* line 3 */
            zp[r] = z[r];
        }
        shift_solve(&sh, rho, x);
        /* over-relaxation (Le Lidec et al. eq. 25, Boyd et al. 3.4.3): x <- a x + (1 - a) z, a = ADMM_RELAX */
        for (int r = 0; r < N; r++) x[r] = ADMM_RELAX * x[r] + (1.0 - ADMM_RELAX) * zp[r];
        for (int r = 0; r < N; r++) lambda[r] = x[r] + gam[r] / rho;
        project_cones(n, mu, lambda, z, 0); /* line 4 */
        double rp = 0, rd = 0;
        for (int r = 0; r < N; r++) {
            gam[r] += rho * (x[r] - z[r]); /* line 5 */
            /* max by comparison (as fmax here: both start at +0, a NaN term is ignored) without a libm call */
            const double ap = fabs(x[r] - z[r]), ad = rho * fabs(z[r] - zp[r]);
            rp = ap > rp ? ap : rp;
            rd = ad > rd ? ad : rd;
        }
#if ADMM_AA
        /* Anderson acceleration of the map (z, gamma / rho) -> its ADMM update, between rho changes (a new rho is a
           new map: the history restarts).  Not on the test iterations, so that the z tested (and returned) is
           always an ADMM update, in the cones.  It cuts the iterations of the walk task's fallback problems
           roughly in half, so that they stay below admm_max_iter. */
        {
            const double ir = 1.0 / rho;
            double *af = aa.f, *ag = aa.g;
            for (int r = 0; r < N; r++) {
                ag[r] = z[r], ag[N + r] = gam[r] * ir;
                af[r] = z[r] - zp[r], af[N + r] = (gam[r] - gp[r]) * ir;
            }
            if (it <= ADMM_AA_ITERS && aa_push(&aa, 2 * N) && it % ADMM_ADAPT_EVERY && it < max_it &&
                aa_extrapolate(&aa, 2 * N)) {
                for (int r = 0; r < N; r++) z[r] = ag[r], gam[r] = ag[N + r] * rho;
            }
        }
#endif
        /* every ADMM_ADAPT_EVERY iterations (and at the last): the stopping test (a product by G) and the
           adaptation of rho (primal residual dominating -> stiffer; dual dominating -> softer) */
        if (it % ADMM_ADAPT_EVERY && it < max_it) continue;
        sim_contact_velocity(n, G, c, z, v);
        e = sim_contact_eps_abs(n, v, mu, z, 0);
        double nr = rho;
#if ADMM_AA
        const double rho_before = rho;
#endif
        if (rho_changes >= ADMM_MAX_RHO_CHANGES) {} /* frozen: ADMM converges for any fixed rho > 0 */
        else if (rp > p->admm_ratio * rd) nr = rho * fac;
        else if (rd > p->admm_ratio * rp) nr = rho / fac;
        rho_changes += nr != rho;
        if (nr != rho && shift_factor(&sh, nr) == 0) rho = nr;
        else if (nr != rho) shift_factor(&sh, rho);
#if ADMM_AA
        if (rho != rho_before) aa.nh = aa.have_prev = aa.next = 0; /* a new map: the history does not apply */
#endif
    }
    memcpy(lambda, z, sizeof(double) * (size_t)N);
    st->rho = rho;
    st->admm_factors = sh.factors;
    *err = e;
    return it;
}

static int admm_sweeps_tree(int n, const double *G, const double *c, const double *mu, double *lambda,
                            const sim_solver_params *p, sim_solver_stats *st, double *v, const sim_solver_tree *tree)
{
    if (n > SIM_SOLVER_ADMM_MAX_CONTACTS) return SIM_SOLVER_EINVAL;
    double err;
    const int it = admm_iterate(n, G, c, mu, lambda, p, st, v, &err, tree);
    sim_solver_count_modes(n, mu, lambda, st);
    const int r = sim_solver_end(st, it, err, p->tol);
    st->answer = st->converged ? SIM_ANSWER_CCP : SIM_ANSWER_NONE;
    return r;
}

/* The two entry points of a solver that can use G's structure: name_tree (sim_solver_run_tree with tree, which
 * may be NULL) and name, the dense form (tree = NULL). */
#define TREE_SOLVER_ENTRY_POINTS(name, sweeps)                                                                  \
    int name##_tree(int n, const double *G, const double *c, const double *mu, double *lambda,                 \
                    const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree)             \
    {                                                                                                           \
        return sim_solver_run_tree(sweeps, n, G, c, mu, lambda, p, st, tree);                                   \
    }                                                                                                           \
    int name(int n, const double *G, const double *c, const double *mu, double *lambda,                        \
             const sim_solver_params *p, sim_solver_stats *st)                                                  \
    {                                                                                                           \
        return name##_tree(n, G, c, mu, lambda, p, st, NULL);                                                   \
    }

/* sim_solve_admm_tree and sim_solve_admm */
TREE_SOLVER_ENTRY_POINTS(sim_solve_admm, admm_sweeps_tree)

/* ------------------------------------------------------------------------------------------------ */
/* The robust default: Coulomb per-contact sweeps, handed to ADMM when they stall.                   */

/* The model an answer of ADMM satisfies: Coulomb when its Coulomb violation is below tol as well (no contact
 * separating while it slides, e.g. every contact sticking or open), else the CCP when ADMM converged. */
static int answer_of_ccp(int n, const double *G, const double *c, const double *mu, const double *lambda, double tol,
                         int converged)
{
    if (sim_contact_coulomb_error(n, G, c, mu, lambda) < tol) return SIM_ANSWER_COULOMB;
    return converged ? SIM_ANSWER_CCP : SIM_ANSWER_NONE;
}

static int stall_admm_sweeps_tree(int n, const double *G, const double *c, const double *mu, double *lambda,
                                  const sim_solver_params *p, sim_solver_stats *st, double *v,
                                  const sim_solver_tree *tree)
{
    double warm[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], stalled[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
    const int direct = n <= SIM_SOLVER_DIRECT_MAX_CONTACTS && p->direct_rounds > 0;
    if (direct) memcpy(warm, lambda, sizeof(double) * 3 * (size_t)n);
    const int r = sim_solver_coulomb_sweeps_stall(n, G, c, mu, lambda, p, st, v);
    if (r != SIM_SOLVER_STALLED) return r;
    /* the slip formulations of the direct solve: the cone form (bit 0), and the others p->direct_forms adds */
    const int nforms = p->direct_forms < 1 || p->direct_forms > SIM_SOLVER_DIRECT_FORMS ? SIM_SOLVER_DIRECT_FORMS
                                                                                         : p->direct_forms;
    const unsigned cone = 1u, others = ((1u << nforms) - 1) & ~cone;
    if (direct) { /* the direct Coulomb solve: the semismooth Newton from the stalled iterate, then from the warm
                     start; then the mode-set search with the cone form, from the modes of the same two */
        memcpy(stalled, lambda, sizeof(double) * 3 * (size_t)n);
        const double *guess[2] = {lambda, warm};
        double l[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], vd[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
        int dit = 0, found = 0;
        for (int g = 0; g < 2 && !found && p->direct_newton_iter > 0; g++) {
            memcpy(l, guess[g], sizeof(double) * 3 * (size_t)n);
            found = sim_solver_coulomb_newton_ac(n, G, c, mu, p->tol, p->direct_newton_iter, l, vd, &dit);
        }
        if (!found)
            found = sim_solver_coulomb_direct(n, G, c, mu, guess, 2, p->tol, p->direct_abandon * p->tol,
                                              p->direct_rounds, p->direct_max_iter, cone, l, vd, &dit);
        st->direct_iterations = dit;
        st->fallback = 1;
        if (found) {
            memcpy(lambda, l, sizeof(double) * 3 * (size_t)n);
            memcpy(v, vd, sizeof(double) * 3 * (size_t)n);
            st->direct = 1;
            sim_solver_count_modes(n, mu, lambda, st);
            const int rd = sim_solver_end(st, st->iterations, sim_contact_error_sum_model(n, G, v, mu, lambda, 1), p->tol);
            st->answer = SIM_ANSWER_COULOMB;
            return rd;
        }
    }
    if (n > SIM_SOLVER_ADMM_MAX_CONTACTS) { /* too large for the dense factor: finish as coulomb-bisection */
        sim_solver_params q = *p;
        q.stall_window = 0;
        const int sweeps = st->iterations;
        const int r2 = sim_solver_coulomb_sweeps_stall(n, G, c, mu, lambda, &q, st, v);
        st->iterations += sweeps;
        return r2;
    }
    const int sweeps = st->iterations;
    double err;
    const int it = admm_iterate(n, G, c, mu, lambda, p, st, v, &err, tree);
    st->fallback = 1;
    st->fallback_iterations = it;
    int r3 = sim_solver_end(st, sweeps + it, err, p->tol);
    st->answer = answer_of_ccp(n, G, c, mu, lambda, p->tol, st->converged);
    if (direct && st->answer != SIM_ANSWER_COULOMB) {
        /* the semismooth Newton from the CCP answer; the modes of the CCP answer with the cone form; then the other
           formulations, from the stalled iterate and the warm start, and last from the CCP answer */
        const double *ccp[1] = {lambda}, *iterates[2] = {stalled, warm};
        const double abandon = p->direct_abandon * p->tol;
        double l[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], vd[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
        int dit = 0;
        if (p->direct_newton_iter > 0) memcpy(l, lambda, sizeof(double) * 3 * (size_t)n);
        if ((p->direct_newton_iter > 0 &&
             sim_solver_coulomb_newton_ac(n, G, c, mu, p->tol, p->direct_newton_iter, l, vd, &dit)) ||
            sim_solver_coulomb_direct(n, G, c, mu, ccp, 1, p->tol, abandon, p->direct_rounds, p->direct_max_iter, cone,
                                      l, vd, &dit) ||
            (others && sim_solver_coulomb_direct(n, G, c, mu, iterates, 2, p->tol, abandon, p->direct_rounds,
                                                 p->direct_max_iter, others, l, vd, &dit)) ||
            (others && sim_solver_coulomb_direct(n, G, c, mu, ccp, 1, p->tol, abandon, p->direct_rounds,
                                                 p->direct_max_iter, others, l, vd, &dit))) {
            memcpy(lambda, l, sizeof(double) * 3 * (size_t)n);
            memcpy(v, vd, sizeof(double) * 3 * (size_t)n);
            st->direct = 1;
            sim_solver_count_modes(n, mu, lambda, st);
            r3 = sim_solver_end(st, st->iterations, sim_contact_error_sum_model(n, G, v, mu, lambda, 1), p->tol);
            st->answer = SIM_ANSWER_COULOMB;
        }
        st->direct_iterations += dit;
    }
    return r3;
}

/* sim_solve_coulomb_stall_admm_tree and sim_solve_coulomb_stall_admm */
TREE_SOLVER_ENTRY_POINTS(sim_solve_coulomb_stall_admm, stall_admm_sweeps_tree)

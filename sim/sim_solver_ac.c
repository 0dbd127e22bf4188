/* sim_solver_ac.c — the Coulomb NCP solved whole by a semismooth Newton method on Alart and Curnier's augmented
 * Lagrangian equations (P. Alart, A. Curnier, "A mixed formulation for frictional contact problems prone to Newton
 * like solution methods", Comput. Methods Appl. Mech. Engrg. 92 (1991)); sim_solver_internal.h:
 * sim_solver_coulomb_newton_ac.
 *
 * With v = G lambda + c and a weight r_i > 0 per block, Coulomb's law at block i is the fixed point
 *     lambda_n = P_n(sigma_n),  lambda_T = P_T(sigma_T; mu P_n(sigma_n)),    sigma = lambda - r_i v,
 * where P_n(s) = max(0, s) and P_T(s; rho) is the projection of s on the disc of radius rho:
 *   - sigma_n > 0 gives lambda_n = sigma_n, so v_n = 0 and lambda_n >= 0; sigma_n <= 0 gives lambda_n = 0 and
 *     v_n = -sigma_n / r >= 0: the normal complementarity;
 *   - inside the disc lambda_T = sigma_T, so v_T = 0 (stick); outside it lambda_T = mu lambda_n sigma_T / |sigma_T|
 *     on the cone's boundary and r v_T = lambda_T - sigma_T is a negative multiple of lambda_T: the slip opposes the
 *     friction (slip).
 * A frictionless contact or a joint limit has lambda_T = 0 in place of the disc; a bounded row (mu < 0) has
 * lambda_n = clamp(sigma_n, -b, b), lambda_T = 0.  F(lambda) = lambda - P(sigma) is zero exactly at a Coulomb
 * solution, every mode at once: unlike the mode-set search of sim_solver_direct.c no mode is guessed, each Newton
 * step takes the modes its iterate's sigma implies.  F is piecewise smooth (semismooth); its generalized Jacobian is
 *     J = I - D (I - R G),    D = dP / dsigma (3 x 3 per block),  R = diag(r_i),
 * solved densely by LU with partial pivoting (sim_lu_factor) on the rows that are not the identity's.  The step is damped by backtracking on |F|^2; when no step length
 * reduces it (at a kink of F a Newton direction need not descend), the full step is taken anyway a few times per run
 * (a non-monotone step), then the run stops.  An iterate is the answer only when its exact Coulomb violation
 * (sim_contact_error_sum_model with Coulomb's law) is below tol, so what F's modes say never has to be trusted.
 *
 * r_i is AC_R_SCALE / (the largest diagonal entry of block i of G): 1 / G_ii makes r v an impulse of the block's own
 * scale; the factor, above 1, weighs the velocities more than the impulses in choosing each block's mode, which
 * (measured on contact problems harvested where the walk and rough tasks' sweeps stall, `herd-bench env --profile
 * --harvest FILE`) makes Newton converge from many more of those starts than r = 1 / G_ii does. */
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_internal.h"

#include <math.h>
#include <string.h>

#define AC_MAX_N (3 * SIM_SOLVER_DIRECT_MAX_CONTACTS)
#define AC_R_SCALE 300.0      /* see the top of the file */
#define AC_LINE_SEARCH_MAX 12 /* step halvings per iteration */
#define AC_NONMONOTONE 3      /* full steps taken per run when no halving reduces |F|^2 */

/* F = lambda - P(lambda - r v) at every block; with D, also dP / dsigma (row-major 3 x 3 per block). */
static void ac_residual(int n, const double *mu, const double *r, const double *lambda, const double *v, double *F,
                        double *D)
{
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        double *f = F + 3 * i, *d = D ? D + 9 * i : NULL;
        if (d) memset(d, 0, 9 * sizeof(double));
        const double sn = l[2] - r[i] * vi[2];
        if (sim_block_is_box(mu[i])) {
            const double b = sim_block_box_bound(mu[i]);
            f[0] = l[0], f[1] = l[1];
            f[2] = l[2] - (sn > b ? b : sn < -b ? -b : sn);
            if (d && sn > -b && sn < b) d[8] = 1;
            continue;
        }
        const double pn = sn > 0 ? sn : 0;
        f[2] = l[2] - pn;
        if (d && sn > 0) d[8] = 1;
        if (mu[i] < SIM_MU_FRICTIONLESS) {
            f[0] = l[0], f[1] = l[1];
            continue;
        }
        const double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
        const double sx = l[0] - r[i] * vi[0], sy = l[1] - r[i] * vi[1], rho = m * pn;
        const double st = sqrt(sx * sx + sy * sy);
        if (st <= rho) { /* inside the disc: P_T = sigma_T */
            f[0] = l[0] - sx, f[1] = l[1] - sy;
            if (d) d[0] = d[4] = 1;
        } else { /* on its boundary: rho u, u = sigma_T / |sigma_T| */
            const double ux = sx / st, uy = sy / st;
            f[0] = l[0] - rho * ux, f[1] = l[1] - rho * uy;
            if (d) {
                const double a = rho / st;
                d[0] = a * (1 - ux * ux), d[1] = d[3] = -a * ux * uy, d[4] = a * (1 - uy * uy);
                if (sn > 0) d[2] = m * ux, d[5] = m * uy; /* rho = mu sigma_n */
            }
        }
    }
}

static double ac_sumsq(int m, const double *F)
{
    double s = 0;
    for (int a = 0; a < m; a++) s += F[a] * F[a];
    return s;
}

int sim_solver_coulomb_newton_ac(int n, const double *G, const double *c, const double *mu, double tol, int max_iter,
                                 double *lambda, double *v, int *iterations)
{
    if (n <= 0 || n > SIM_SOLVER_DIRECT_MAX_CONTACTS) return 0;
    const int N = 3 * n;
    double r[SIM_SOLVER_DIRECT_MAX_CONTACTS];
    for (int i = 0; i < n; i++) {
        const double *g = G + (size_t)3 * i * N + 3 * i;
        double dmax = g[0] > g[N + 1] ? g[0] : g[N + 1];
        dmax = g[2 * N + 2] > dmax ? g[2 * N + 2] : dmax;
        r[i] = dmax > 0 ? AC_R_SCALE / dmax : 1.0;
    }
    double J[AC_MAX_N * AC_MAX_N], Jrow[AC_MAX_N], F[AC_MAX_N], D[3 * AC_MAX_N], dx[AC_MAX_N], mF[AC_MAX_N], Gd[AC_MAX_N],
        lt[AC_MAX_N], vt[AC_MAX_N], Ft[AC_MAX_N];
    int perm[AC_MAX_N], nonmonotone = AC_NONMONOTONE, it = 0, found = 0;
    sim_contact_velocity(n, G, c, lambda, v);
    for (;; it++) {
        if (sim_contact_error_sum_model(n, G, v, mu, lambda, 1) < tol) {
            found = 1;
            break;
        }
        if (it == max_iter) break;
        ac_residual(n, mu, r, lambda, v, F, D);
        const double f2 = ac_sumsq(N, F);
        /* J = I - D + D R G, block row i: r_i D_i G[3i..3i+2, :] plus (I - D_i) on the diagonal block.  A row whose
           D row is zero (an open block's, a frictionless block's or a bounded row's tangent rows, a bounded row at its
           bound) is the identity's: its step is -F there, known before the solve.  So only the other rows (the
           unknowns K) are factored, with the known steps moved to the right-hand side:
               J[K, K] dx[K] = -F[K] - J[K, E] dx[E],   dx[E] = -F[E] */
        int K[AC_MAX_N], nk = 0;
        for (int a = 0; a < N; a++) {
            const double *d = D + 9 * (a / 3) + 3 * (a % 3);
            if (d[0] != 0 || d[1] != 0 || d[2] != 0) K[nk++] = a;
            else dx[a] = -F[a];
        }
        for (int q = 0; q < nk; q++) {
            const int row = K[q], i = row / 3, a = row % 3;
            const double *d = D + 9 * i + 3 * a, *g = G + (size_t)3 * i * N;
            const double d0 = r[i] * d[0], d1 = r[i] * d[1], d2 = r[i] * d[2];
            double rhs = -F[row];
            for (int k = 0; k < N; k++) Jrow[k] = d0 * g[k] + d1 * g[N + k] + d2 * g[2 * N + k];
            for (int b = 0; b < 3; b++) Jrow[3 * i + b] += (a == b) - d[b];
            double *out = J + (size_t)q * nk;
            for (int p = 0, e = 0; e < N; e++) {
                if (p < nk && K[p] == e) out[p++] = Jrow[e];
                else rhs -= Jrow[e] * dx[e];
            }
            mF[q] = rhs;
        }
        if (nk > 0) {
            double xk[AC_MAX_N];
            if (sim_lu_factor(nk, J, perm, -1)) break;
            sim_lu_solve(nk, J, perm, mF, xk);
            for (int q = 0; q < nk; q++) dx[K[q]] = xk[q];
        }
        if (!sim_all_finite(dx, N)) break;
        for (int k = 0; k < N; k++) Gd[k] = 0;
        for (int a = 0; a < N; a++) {
            if (dx[a] == 0) continue;
            const double *g = G + (size_t)a * N, x = dx[a]; /* G symmetric: column a = row a */
            for (int k = 0; k < N; k++) Gd[k] += g[k] * x;
        }
        double t = 1.0;
        int ok = 0;
        for (int ls = 0; ls < AC_LINE_SEARCH_MAX; ls++, t *= 0.5) {
            for (int a = 0; a < N; a++) lt[a] = lambda[a] + t * dx[a], vt[a] = v[a] + t * Gd[a];
            ac_residual(n, mu, r, lt, vt, Ft, NULL);
            if (ac_sumsq(N, Ft) <= (1.0 - 1e-4 * t) * f2) {
                ok = 1;
                break;
            }
        }
        if (!ok) {
            if (nonmonotone-- <= 0) break;
            for (int a = 0; a < N; a++) lt[a] = lambda[a] + dx[a];
        }
        memcpy(lambda, lt, sizeof(double) * (size_t)N);
        sim_contact_velocity(n, G, c, lambda, v); /* exact, not the sum of the steps */
    }
    if (iterations) *iterations += it;
    return found;
}

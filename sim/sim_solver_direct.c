/* sim_solver_direct.c — a direct solve of the Coulomb NCP by guessing every block's mode and solving the square
 * system that mode set defines (sim_solver_internal.h: sim_solver_coulomb_direct).
 *
 * Given a mode per block, Coulomb's law is a system of equations:
 *   open          lambda = 0                                                 (no unknowns)
 *   stick         v = G lambda + c = 0                                       (unknowns lambda, 3 equations)
 *   slip          v_n = 0,  lambda_T = -mu lambda_n v_T / |v_T|               (unknowns lambda, 3 equations)
 *   normal        lambda_T = 0, v_n = 0   (a frictionless contact or a joint limit, closed; unknown lambda_n)
 *   box, inside   lambda_T = 0, v_n = 0   (a bounded row strictly inside its bound; unknown lambda_n)
 *   box, at +-b   lambda = (0, 0, +-b)    (no unknowns)
 * Only the slip equations are nonlinear.  Their friction law is written three ways, each without angles (no
 * transcendental call, so the answer is the same bit for bit wherever IEEE arithmetic and sqrt are):
 *   cone     |lambda_T| - mu lambda_n = 0,  lambda_T x v_T = 0   smooth in lambda_T; a second root (lambda_T along
 *                                                            v_T) and no direction at all as v_T -> 0
 *   unit     lambda_T + mu lambda_n v_T / |v_T| = 0          only the anti-parallel root; singular at v_T = 0
 *   scaled   |v_T| lambda_T + mu lambda_n v_T = 0             smooth; degenerate (any lambda_T) at v_T = 0
 * They have the same solutions where the block slides (v_T != 0) but not the same Newton basins: on contact problems
 * harvested from the walk and rough tasks each formulation solves mode sets the others miss from the same start.
 * So the whole search below runs with each formulation the caller asks for in turn (cone, unit, scaled), each with its
 * own budget of iterations; the cone form first, so that a problem it solves gets the same answer whether or not the
 * others exist (coulomb-stall-admm asks for the cone form alone before ADMM, and for the others after it).
 * The other two run only on problems of at most FORMS_MAX_BLOCKS blocks: on larger ones (fallen robots) they rarely
 * succeed where the cone form failed, and there their failing iterations are the costliest.  Every system is solved by
 * Newton's method with a backtracking line search on |F|^2; each step by block elimination (newton(): the linear
 * equations' constant block is factored once per mode set, the slipping blocks' friction rows go through its Schur
 * complement), with partial pivoting (a pivot below 1e-13 of the largest entry is raised to that floor: a redundant
 * stick set has many solutions and any one will do; sim_lu_factor).
 * The solution of a mode set is a Coulomb solution when its inequalities hold: an open block separates (v_n >= 0), a
 * sticking one is in its cone, a slipping one pushes (lambda_n >= 0) and slides against its friction
 * (lambda_T . v_T <= 0), a closed normal block pushes, a bounded row inside is inside and one at a bound is driven
 * against it.  The blocks that break theirs change mode (open -> stick, stick -> slip or open, slip -> stick or
 * open, ...; the primal-dual active-set rule) and the system is solved again, up to a bound of rounds; the answer is
 * accepted only when the exact Coulomb violation (sim_contact_error_sum_model with Coulomb's law) is below tol, so
 * what the mode logic decides never has to be trusted. */
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_internal.h"

#include <math.h>
#include <string.h>

enum { M_OPEN, M_STICK, M_SLIP, M_NORMAL, M_BOX_IN, M_BOX_HI, M_BOX_LO };

#define DIRECT_MAX_UNKNOWNS (3 * SIM_SOLVER_DIRECT_MAX_CONTACTS)
#define DIRECT_MAX_FRICTION (2 * SIM_SOLVER_DIRECT_MAX_CONTACTS) /* slipping blocks' friction equations */
#define NEWTON_MAX 30        /* Newton iterations per mode set */
#define NEWTON_SLOW 12       /* ... of which the first ones must reduce |F|^2 by 1e20 */
#define LINE_SEARCH_MAX 6    /* step halvings per Newton iteration (a mode set without a solution needs many) */
#define ABANDON_F2 1e-12     /* |F|^2 below this fraction of its start: the system is nearly solved */

/* The kind of block i: 0 a contact with friction, 1 a frictionless contact or joint limit, 2 a bounded row. */
static int block_kind(double mu) { return sim_block_is_box(mu) ? 2 : mu < SIM_MU_FRICTIONLESS ? 1 : 0; }

static double mu_of(double mu) { return mu > SIM_MU_MAX ? SIM_MU_MAX : mu; }

/* The unknowns of block i in mode md: a mask of its rows (bit a: lambda_a is free). */
static int free_rows(int md)
{
    switch (md) {
    case M_STICK:
    case M_SLIP: return 7;
    case M_NORMAL:
    case M_BOX_IN: return 4;
    default: return 0;
    }
}

/* Sets the fixed entries of lambda for the modes (open: 0; a bound: +-b; normal: lambda_T = 0). */
static void fix_entries(int n, const double *mu, const unsigned char *mode, double *lambda)
{
    for (int i = 0; i < n; i++) {
        double *l = lambda + 3 * i;
        switch (mode[i]) {
        case M_OPEN: l[0] = l[1] = l[2] = 0; break;
        case M_NORMAL:
        case M_BOX_IN: l[0] = l[1] = 0; break;
        case M_BOX_HI: l[0] = l[1] = 0, l[2] = sim_block_box_bound(mu[i]); break;
        case M_BOX_LO: l[0] = l[1] = 0, l[2] = -sim_block_box_bound(mu[i]); break;
        default: break;
        }
    }
}

/* The slip formulations (see the top of the file), in the order they are tried. */
enum { F_CONE, F_UNIT, F_SCALED, F_COUNT };
#define FORMS_MAX_BLOCKS 9 /* the forms after the first only up to this many blocks */

/* The residual F of the mode set's equations at lambda (v = G lambda + c), in the order of the unknowns; slip blocks
 * in formulation form. */
static int residual(int n, const double *mu, const unsigned char *mode, int form, const double *lambda,
                    const double *v, double *F)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        switch (mode[i]) {
        case M_STICK: F[k++] = vi[0], F[k++] = vi[1], F[k++] = vi[2]; break;
        case M_SLIP: {
            const double m = mu_of(mu[i]), w = sqrt(vi[0] * vi[0] + vi[1] * vi[1]);
            F[k++] = vi[2];
            if (form == F_CONE) {
                F[k++] = sqrt(l[0] * l[0] + l[1] * l[1]) - m * l[2];
                F[k++] = l[0] * vi[1] - l[1] * vi[0];
            } else if (form == F_SCALED) {
                F[k++] = w * l[0] + m * l[2] * vi[0];
                F[k++] = w * l[1] + m * l[2] * vi[1];
            } else { /* F_UNIT; at v_T = 0 the direction term is taken as 0 */
                const double iw = w > 0 ? 1 / w : 0;
                F[k++] = l[0] + m * l[2] * vi[0] * iw;
                F[k++] = l[1] + m * l[2] * vi[1] * iw;
            }
            break;
        }
        case M_NORMAL:
        case M_BOX_IN: F[k++] = vi[2]; break;
        default: break;
        }
    }
    return k;
}

/* sim_lu_factor and sim_lu_solve (sim_solver_internal.h), shared with the semismooth Newton (sim_solver_ac.c). */
int sim_lu_factor(int k, double *A, int *perm, double amax)
{
    if (amax < 0)
        for (int a = 0; a < k * k; a++) amax = fabs(A[a]) > amax ? fabs(A[a]) : amax;
    if (!(amax > 0)) return -1;
    const double floor_ = SIM_LU_PIVOT_FLOOR * amax;
    for (int r = 0; r < k; r++) perm[r] = r;
    for (int q = 0; q < k; q++) {
        int p = q;
        double best = fabs(A[q * k + q]);
        for (int r = q + 1; r < k; r++)
            if (fabs(A[r * k + q]) > best) p = r, best = fabs(A[r * k + q]);
        if (p != q) {
            for (int j = 0; j < k; j++) {
                const double t = A[q * k + j];
                A[q * k + j] = A[p * k + j], A[p * k + j] = t;
            }
            const int t = perm[q];
            perm[q] = perm[p], perm[p] = t;
        }
        double piv = A[q * k + q];
        if (fabs(piv) < floor_) piv = A[q * k + q] = piv < 0 ? -floor_ : floor_;
        const double *restrict aq = A + q * k;
        for (int r = q + 1; r < k; r++) {
            double *restrict ar = A + r * k;
            const double f = ar[q] / piv;
            ar[q] = f;
            if (f == 0) continue;
            for (int j = q + 1; j < k; j++) ar[j] -= f * aq[j];
        }
    }
    return 0;
}

void sim_lu_solve(int k, const double *A, const int *perm, const double *b, double *x)
{
    for (int r = 0; r < k; r++) {
        double s = b[perm[r]];
        for (int j = 0; j < r; j++) s -= A[r * k + j] * x[j];
        x[r] = s;
    }
    for (int r = k - 1; r >= 0; r--) {
        double s = x[r];
        for (int j = r + 1; j < k; j++) s -= A[r * k + j] * x[j];
        x[r] = s / A[r * k + r];
    }
}

static double sumsq(int m, const double *F)
{
    double s = 0;
    for (int a = 0; a < m; a++) s += F[a] * F[a];
    return s;
}

/* The derivatives of a slipping block's two friction equations (residual's rows 2 and 3 of the block, formulation
 * form) with respect to one unknown: g = dv_i/dx (3 entries of G's column), own: the unknown is this block's
 * entry cr.  mi: its friction coefficient, tn: |lambda_T| (the cone form's), w = |v_T| and iw = 1 / w (0 at w = 0;
 * the other forms'). */
static void slip_jac(int form, double mi, double tn, double w, double iw, const double *l, const double *vi,
                     const double *g, int own, int cr, double out[2])
{
    if (form == F_CONE) {
        double dn = 0;
        if (own) dn = cr == 2 ? -mi : tn > 0 ? l[cr] / tn : 0;
        double dc = l[0] * g[1] - l[1] * g[0];
        if (own && cr == 0) dc += vi[1];
        if (own && cr == 1) dc -= vi[0];
        out[0] = dn, out[1] = dc;
        return;
    }
    double d0, d1;
    if (form == F_SCALED) { /* d(|v_T| l_a + mu l_n v_a) */
        const double dw = (vi[0] * g[0] + vi[1] * g[1]) * iw;
        d0 = dw * l[0] + mi * l[2] * g[0], d1 = dw * l[1] + mi * l[2] * g[1];
        if (own && cr == 0) d0 += w;
        if (own && cr == 1) d1 += w;
        if (own && cr == 2) d0 += mi * vi[0], d1 += mi * vi[1];
    } else { /* d(l_a + mu l_n u_a), u = v_T / |v_T|, du = (g_T - u (u . g_T)) / |v_T| */
        const double u0 = vi[0] * iw, u1 = vi[1] * iw, ug = u0 * g[0] + u1 * g[1];
        d0 = mi * l[2] * (g[0] - u0 * ug) * iw, d1 = mi * l[2] * (g[1] - u1 * ug) * iw;
        if (own && cr == 0) d0 += 1;
        if (own && cr == 1) d1 += 1;
        if (own && cr == 2) d0 += mi * u0, d1 += mi * u1;
    }
    out[0] = d0, out[1] = d1;
}

/* Newton on the mode set's equations from lambda (its fixed entries already set); v = G lambda + c kept up to
 * date.  Returns the iterations done (lambda, v: the last iterate).  With abandon > 0 it stops early, as a mode set
 * that is not the answer, once |F|^2 is below ABANDON_F2 of its start while the iterate's exact Coulomb violation is
 * above abandon (the caller's is many times tol): the solution the run would converge to lies next to that iterate,
 * so it would be rejected too, and the iterations that would polish it are saved for other mode sets.
 *
 * The Newton step by block elimination.  Every equation but a slipping block's two friction ones is linear with a
 * constant Jacobian: a sticking block's v = 0, a slipping block's v_n = 0, a closed normal block's v_n = 0; their
 * rows of the Jacobian are the rows of G of the same (block, component) pairs as the unknowns they are paired with
 * (E: every unknown but a slipping block's lambda_T), so that block, A = G[E, E], is a principal submatrix of G,
 * factored once per call; B = G[E, T] with T the slipping blocks' lambda_T.  Each iteration builds only the
 * friction rows (N_E, N_T), and solves
 *     [A B; N_E N_T] [x_E; x_T] = -[F_E; F_T]
 * as (N_T - N_E A^-1 B) x_T = -F_T + N_E A^-1 F_E (2 unknowns per slipping block) and x_E = -A^-1 F_E - A^-1 B x_T. */
static int newton(int n, const double *G, const double *c, const double *mu, const unsigned char *mode, int form,
                  double *lambda, double *v, int max_it, double abandon)
{
    const int N = 3 * n;
    /* unknown j: row col_row[j] of block col_blk[j], lambda's entry (and G's row) gx[j] */
    int col_blk[DIRECT_MAX_UNKNOWNS], col_row[DIRECT_MAX_UNKNOWNS], gx[DIRECT_MAX_UNKNOWNS], m = 0;
    for (int i = 0; i < n; i++) {
        const int f = free_rows(mode[i]);
        for (int a = 0; a < 3; a++)
            if (f >> a & 1) col_blk[m] = i, col_row[m] = a, gx[m++] = 3 * i + a;
    }
    sim_contact_velocity(n, G, c, lambda, v);
    if (m == 0) return 0;
    /* E and T as positions in the unknowns' order; the linear equations are at E's positions (a slipping block's
       v_n at its lambda_n's), the friction ones at T's */
    int E[DIRECT_MAX_UNKNOWNS], T[DIRECT_MAX_UNKNOWNS], ne = 0, nt = 0, eg[DIRECT_MAX_UNKNOWNS];
    int pos[DIRECT_MAX_UNKNOWNS]; /* unknown j is T[pos[j]], or E[~pos[j]] when pos[j] < 0 */
    for (int j = 0; j < m; j++) {
        if (mode[col_blk[j]] == M_SLIP && col_row[j] < 2) pos[j] = nt, T[nt++] = j;
        else pos[j] = ~ne, E[ne] = j, eg[ne++] = gx[j];
    }
    /* a slipping block's v_n row is its first equation, at its lambda_x's position: E holds lambda_n's position,
       so the linear equations' positions in F are read per block below (fe) */
    int fe[DIRECT_MAX_UNKNOWNS], ft[DIRECT_MAX_UNKNOWNS], k_e = 0, k_t = 0;
    for (int j = 0, r = 0; j < m; ) {
        const int i = col_blk[j];
        if (mode[i] == M_SLIP) { fe[k_e++] = r, ft[k_t++] = r + 1, ft[k_t++] = r + 2; j += 3, r += 3; }
        else { fe[k_e++] = r; j++, r++; }
    }
    double A[DIRECT_MAX_UNKNOWNS * DIRECT_MAX_UNKNOWNS], W[DIRECT_MAX_UNKNOWNS * DIRECT_MAX_UNKNOWNS];
    int perm[DIRECT_MAX_UNKNOWNS];
    for (int a = 0; a < ne; a++)
        for (int b = 0; b < ne; b++) A[a * ne + b] = G[(size_t)eg[a] * N + eg[b]];
    if (sim_lu_factor(ne, A, perm, -1)) return 0;
    /* W = A^-1 B, column by column (B's column t: G's column of T's unknown t, at E's rows) */
    for (int t = 0; t < nt; t++) {
        double bcol[DIRECT_MAX_UNKNOWNS], wcol[DIRECT_MAX_UNKNOWNS];
        const int x = gx[T[t]];
        for (int a = 0; a < ne; a++) bcol[a] = G[(size_t)x * N + eg[a]];
        sim_lu_solve(ne, A, perm, bcol, wcol);
        for (int a = 0; a < ne; a++) W[t * ne + a] = wcol[a]; /* stored by columns: W[t * ne + a] */
    }
    double F[DIRECT_MAX_UNKNOWNS], dx[DIRECT_MAX_UNKNOWNS], lt[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS],
        vt[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], Ft[DIRECT_MAX_UNKNOWNS], Gd[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
    int slips = 0;
    for (int i = 0; i < n; i++) slips += mode[i] == M_SLIP;
    residual(n, mu, mode, form, lambda, v, F);
    double f2 = sumsq(m, F);
    int it = 0;
    const double f2_start = f2;
    while (it < max_it && f2 > 0) {
        /* a mode set without a solution makes Newton crawl: past NEWTON_SLOW iterations, |F| must have dropped */
        if (it == NEWTON_SLOW && f2 > 1e-20 * f2_start) break;
        it++;
        double fE[DIRECT_MAX_UNKNOWNS], y[DIRECT_MAX_UNKNOWNS];
        for (int a = 0; a < ne; a++) fE[a] = F[fe[a]];
        sim_lu_solve(ne, A, perm, fE, y); /* y = A^-1 F_E */
        if (nt) {
            /* the friction rows of the Jacobian, row pair q of slipping block i: their columns at E's unknowns (N_E)
               and at T's (N_T) */
            double NE[DIRECT_MAX_FRICTION * DIRECT_MAX_UNKNOWNS], NT[DIRECT_MAX_FRICTION * DIRECT_MAX_FRICTION],
                S[DIRECT_MAX_UNKNOWNS * DIRECT_MAX_UNKNOWNS], rhs[DIRECT_MAX_UNKNOWNS];
            int q = 0;
            for (int i = 0; i < n; i++) {
                if (mode[i] != M_SLIP) continue;
                const double *l = lambda + 3 * i, *vi = v + 3 * i, mi = mu_of(mu[i]);
                const double tn = sqrt(l[0] * l[0] + l[1] * l[1]);
                double w = 0, iw = 0;
                if (form != F_CONE) w = sqrt(vi[0] * vi[0] + vi[1] * vi[1]), iw = w > 0 ? 1 / w : 0;
                for (int j = 0; j < m; j++) {
                    double d[2];
                    slip_jac(form, mi, tn, w, iw, l, vi, G + (size_t)gx[j] * N + 3 * i, col_blk[j] == i, col_row[j], d);
                    const int in_e = pos[j] < 0, stride = in_e ? ne : nt;
                    double *to = in_e ? NE + q * ne + ~pos[j] : NT + q * nt + pos[j];
                    to[0] = d[0], to[stride] = d[1];
                }
                q += 2;
            }
            /* S = N_T - N_E W; rhs = -F_T + N_E y */
            double smax = 0;
            for (int r = 0; r < nt; r++) {
                const double *ner = NE + r * ne;
                double acc = -F[ft[r]];
                for (int a = 0; a < ne; a++) acc += ner[a] * y[a];
                rhs[r] = acc;
                for (int t = 0; t < nt; t++) {
                    const double *wt = W + t * ne;
                    double sv = NT[r * nt + t];
                    for (int a = 0; a < ne; a++) sv -= ner[a] * wt[a];
                    S[r * nt + t] = sv;
                    smax = fabs(sv) > smax ? fabs(sv) : smax;
                }
            }
            /* smax = 0 (S zero) makes lu_factor fail: smax < 0 would ask it to search */
            int sperm[DIRECT_MAX_UNKNOWNS];
            double z[DIRECT_MAX_UNKNOWNS];
            if (sim_lu_factor(nt, S, sperm, smax)) break;
            sim_lu_solve(nt, S, sperm, rhs, z);
            memcpy(rhs, z, sizeof(double) * (size_t)nt);
            for (int t = 0; t < nt; t++) dx[T[t]] = rhs[t];
            for (int a = 0; a < ne; a++) {
                double s_ = -y[a];
                for (int t = 0; t < nt; t++) s_ -= W[t * ne + a] * rhs[t];
                dx[E[a]] = s_;
            }
        } else {
            for (int a = 0; a < ne; a++) dx[E[a]] = -y[a];
        }
        /* backtracking on |F|^2; the trial velocities are v + t G dx (G dx once per iteration) */
        for (int k = 0; k < N; k++) Gd[k] = 0;
        for (int a = 0; a < m; a++) {
            const double *g = G + (size_t)gx[a] * N, d = dx[a];
            for (int k = 0; k < N; k++) Gd[k] += g[k] * d;
        }
        double t = 1.0, ft2 = f2;
        int ok = 0;
        for (int ls = 0; ls < LINE_SEARCH_MAX; ls++, t *= 0.5) {
            memcpy(lt, lambda, sizeof(double) * (size_t)N);
            for (int a = 0; a < m; a++) lt[gx[a]] += t * dx[a];
            for (int k = 0; k < N; k++) vt[k] = v[k] + t * Gd[k];
            residual(n, mu, mode, form, lt, vt, Ft);
            ft2 = sumsq(m, Ft);
            if (ft2 <= (1.0 - 1e-4 * t) * f2) {
                ok = 1;
                break;
            }
        }
        if (!ok) break;
        memcpy(lambda, lt, sizeof(double) * (size_t)N);
        memcpy(v, vt, sizeof(double) * (size_t)N);
        memcpy(F, Ft, sizeof(double) * (size_t)m);
        /* the step is below 1e-14 of lambda: Newton has converged */
        double sx = 0, sl = 0;
        for (int a = 0; a < m; a++) {
            const double s2 = fabs(t * dx[a]), la = fabs(lambda[gx[a]]);
            sx = s2 > sx ? s2 : sx;
            sl = la > sl ? la : sl;
        }
        const double f2_before = f2;
        f2 = ft2;
        if (sx <= 1e-14 * (sl + 1e-12)) break;
        /* without a slip block the system is linear: a full step that removed the residual solved it */
        if (!slips && t == 1.0 && f2 <= 1e-20 * f2_before) break;
        if (abandon > 0 && f2 <= ABANDON_F2 * f2_start && sim_contact_error_sum_model(n, G, v, mu, lambda, 1) > abandon)
            break;
    }
    sim_contact_velocity(n, G, c, lambda, v); /* exact, not the sum of the steps */
    return it;
}

/* The modes read from a candidate lambda (v = G lambda + c). */
static void modes_of(int n, const double *mu, const double *lambda, const double *v, unsigned char *mode)
{
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        switch (block_kind(mu[i])) {
        case 2: {
            const double b = sim_block_box_bound(mu[i]);
            mode[i] = l[2] >= b * (1 - 1e-9) ? M_BOX_HI : l[2] <= -b * (1 - 1e-9) ? M_BOX_LO : M_BOX_IN;
            break;
        }
        case 1: mode[i] = l[2] > 0 && vi[2] <= l[2] ? M_NORMAL : M_OPEN; break;
        default: {
            const double tn = sqrt(l[0] * l[0] + l[1] * l[1]), m = mu_of(mu[i]);
            if (!(l[2] > 0) || vi[2] > l[2]) mode[i] = M_OPEN;
            else mode[i] = tn >= m * l[2] * (1 - 1e-6) ? M_SLIP : M_STICK;
        }
        }
    }
}

/* The active-set correction: the blocks whose solution breaks their mode's inequalities change mode.  Returns the
 * number changed. */
static int correct_modes(int n, const double *mu, const double *lambda, const double *v, double eps,
                         unsigned char *mode, int only_worst)
{
    unsigned char next[SIM_SOLVER_DIRECT_MAX_CONTACTS];
    double worst = 0;
    int at = -1, changed = 0;
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        const int kind = block_kind(mu[i]);
        unsigned char md = mode[i];
        double by = 0; /* how far the inequality is broken */
        switch (mode[i]) {
        case M_OPEN:
            if (vi[2] < -eps) md = kind == 0 ? M_STICK : M_NORMAL, by = -vi[2];
            break;
        case M_STICK: {
            const double tn = sqrt(l[0] * l[0] + l[1] * l[1]);
            if (l[2] < -eps) md = M_OPEN, by = -l[2];
            else if (tn > mu_of(mu[i]) * l[2] + eps) md = M_SLIP, by = tn - mu_of(mu[i]) * l[2];
            break;
        }
        case M_SLIP: {
            const double along = l[0] * vi[0] + l[1] * vi[1];
            const double tn = sqrt(l[0] * l[0] + l[1] * l[1]);
            if (l[2] < -eps) md = M_OPEN, by = -l[2];
            else if (along > eps * tn) md = M_STICK, by = tn > 0 ? along / tn : 0; /* sliding along its friction */
            break;
        }
        case M_NORMAL:
            if (l[2] < -eps) md = M_OPEN, by = -l[2];
            break;
        case M_BOX_IN: {
            const double b = sim_block_box_bound(mu[i]);
            if (l[2] > b + eps) md = M_BOX_HI, by = l[2] - b;
            else if (l[2] < -b - eps) md = M_BOX_LO, by = -b - l[2];
            break;
        }
        case M_BOX_HI:
            if (vi[2] > eps) md = M_BOX_IN, by = vi[2];
            break;
        case M_BOX_LO:
            if (vi[2] < -eps) md = M_BOX_IN, by = -vi[2];
            break;
        default: break;
        }
        next[i] = md;
        if (md != mode[i]) {
            changed++;
            if (at < 0 || by > worst) worst = by, at = i;
        }
    }
    if (!changed) return 0;
    if (only_worst) mode[at] = next[at];
    else memcpy(mode, next, (size_t)n);
    return changed;
}

#define SEEN_MAX 32 /* mode sets remembered per start */

static int seen_before(unsigned char (*seen)[SIM_SOLVER_DIRECT_MAX_CONTACTS], int nseen, const unsigned char *mode, int n)
{
    for (int s = 0; s < nseen; s++)
        if (!memcmp(seen[s], mode, (size_t)n)) return 1;
    return 0;
}

/* Solves the mode set from l (its entries for the free rows: the start); returns the exact Coulomb violation. */
static double solve_mode_set(int n, const double *G, const double *c, const double *mu, const unsigned char *mode,
                             int form, double tol, double abandon, double *l, double *vl, int *its, int budget)
{
    fix_entries(n, mu, mode, l);
    sim_contact_velocity(n, G, c, l, vl);
    /* a slip block needs a tangential impulse to start from: a small one against its sliding (or along x) */
    for (int i = 0; i < n; i++) {
        double *li = l + 3 * i;
        if (mode[i] != M_SLIP && mode[i] != M_STICK) continue;
        if (!(li[2] > 0)) li[2] = 1e-3 * tol + fabs(li[2]);
        if (mode[i] == M_SLIP && li[0] == 0 && li[1] == 0) {
            const double *vi = vl + 3 * i, vn = sqrt(vi[0] * vi[0] + vi[1] * vi[1]);
            const double r = mu_of(mu[i]) * li[2];
            if (vn > 0) li[0] = -r * vi[0] / vn, li[1] = -r * vi[1] / vn;
            else li[0] = r;
        }
    }
    *its += newton(n, G, c, mu, mode, form, l, vl, budget - *its < NEWTON_MAX ? budget - *its : NEWTON_MAX,
                   abandon);
    return sim_contact_error_sum_model(n, G, vl, mu, l, 1);
}

/* The modes block i may take besides md (its kind's others), at most two. */
static int other_modes(double mu, unsigned char md, unsigned char out[2])
{
    static const unsigned char contact[3] = {M_OPEN, M_STICK, M_SLIP}, limit[2] = {M_OPEN, M_NORMAL},
                               box[3] = {M_BOX_IN, M_BOX_HI, M_BOX_LO};
    const int kind = block_kind(mu);
    const unsigned char *all = kind == 0 ? contact : kind == 1 ? limit : box;
    const int na = kind == 1 ? 2 : 3;
    int k = 0;
    for (int a = 0; a < na; a++)
        if (all[a] != md) out[k++] = all[a];
    return k;
}

/* The search with one slip formulation: from each guess's modes, active-set rounds; then the single-block neighbours
 * of the best mode set found.  1 with lambda, v set when a mode set's solution has a Coulomb violation below tol. */
static int search(int n, const double *G, const double *c, const double *mu, const double *const *guesses, int nguess,
                  int form, double tol, double abandon, int max_rounds, int budget, double *lambda, double *v,
                  int *iterations)
{
    const int N = 3 * n;
    double l[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS], vl[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
    unsigned char mode[SIM_SOLVER_DIRECT_MAX_CONTACTS], trial[SIM_SOLVER_DIRECT_MAX_CONTACTS];
    unsigned char seen[SEEN_MAX][SIM_SOLVER_DIRECT_MAX_CONTACTS];
    const double eps = 1e-3 * tol / n;
    int its = 0;
    double best_err = INFINITY, best_l[3 * SIM_SOLVER_DIRECT_MAX_CONTACTS];
    unsigned char best_mode[SIM_SOLVER_DIRECT_MAX_CONTACTS];
    for (int g = 0; g < nguess; g++) {
        memcpy(l, guesses[g], sizeof(double) * (size_t)N);
        sim_contact_velocity(n, G, c, l, vl);
        modes_of(n, mu, l, vl, mode);
        int nseen = 0;
        for (int round = 0; round < max_rounds && its < budget; round++) {
            if (nseen < SEEN_MAX) memcpy(seen[nseen++], mode, (size_t)n);
            const double err = solve_mode_set(n, G, c, mu, mode, form, tol, abandon, l, vl, &its, budget);
            if (err < tol) {
                memcpy(lambda, l, sizeof(double) * (size_t)N);
                memcpy(v, vl, sizeof(double) * (size_t)N);
                *iterations += its;
                return 1;
            }
            if (err < best_err) {
                best_err = err;
                memcpy(best_mode, mode, (size_t)n);
                memcpy(best_l, l, sizeof(double) * (size_t)N);
            }
            /* every violated block changes mode (the active-set step); when that leads back to a mode set already
               solved (a cycle), only the most violated one does; when that too, this start is done */
            memcpy(trial, mode, (size_t)n);
            if (!correct_modes(n, mu, l, vl, eps, trial, 0)) break; /* no mode to change */
            if (seen_before(seen, nseen, trial, n)) {
                memcpy(trial, mode, (size_t)n);
                correct_modes(n, mu, l, vl, eps, trial, 1);
                if (seen_before(seen, nseen, trial, n)) break;
            }
            memcpy(mode, trial, (size_t)n);
        }
    }
    /* the neighbours of the best mode set found: each block in turn takes each of its other modes */
    for (int i = 0; i < n && best_err < INFINITY && its < budget; i++) {
        unsigned char alt[2];
        const int na = other_modes(mu[i], best_mode[i], alt);
        for (int a = 0; a < na && its < budget; a++) {
            memcpy(mode, best_mode, (size_t)n);
            mode[i] = alt[a];
            memcpy(l, best_l, sizeof(double) * (size_t)N);
            if (solve_mode_set(n, G, c, mu, mode, form, tol, abandon, l, vl, &its, budget) < tol) {
                memcpy(lambda, l, sizeof(double) * (size_t)N);
                memcpy(v, vl, sizeof(double) * (size_t)N);
                *iterations += its;
                return 1;
            }
        }
    }
    *iterations += its;
    return 0;
}

int sim_solver_coulomb_direct(int n, const double *G, const double *c, const double *mu, const double *const *guesses,
                              int nguess, double tol, double abandon, int max_rounds, int budget, unsigned forms,
                              double *lambda, double *v, int *iterations)
{
    if (n <= 0 || n > SIM_SOLVER_DIRECT_MAX_CONTACTS) return 0;
    forms &= (1u << F_COUNT) - 1;
    if (n > FORMS_MAX_BLOCKS) forms &= 1u << F_CONE;
    int its = 0, found = 0;
    for (int form = 0; form < F_COUNT && !found; form++)
        if (forms >> form & 1)
            found = search(n, G, c, mu, guesses, nguess, form, tol, abandon, max_rounds, budget, lambda, v, &its);
    if (iterations) *iterations += its;
    return found;
}

/* sim_solver.c — per-contact bisection (Algorithms 1 and 2 of Hwangbo, Lee & Hutter 2018), projected
 * Gauss-Seidel (their eqs. 17-18).  See sim_solver.h; the error and metrics are in sim_metrics.c.
 *
 * Notation in this file: a contact block G (3x3, frame (t_x, t_y, n)), a = (G_nx, G_ny) its normal row's
 * tangential part, c the free velocity of the contact (others fixed), lambda0 = -G^-1 c the zero-velocity
 * impulse.  On the slip ellipse { G_n . lambda + c_n = 0, |lambda_T| = mu lambda_n } the tangential impulse
 * is r u with u = (cos th, sin th) and (eqs. 13-14)
 *     d(u) = G_nn / mu + a . u,   r = -c_n / d,   lambda = (r u, r / mu).
 * The sign of dE/dth is the sign of D = v_T . eta_T (eq. 15), v_T = Gbar_T r u + cbar_T (eq. 16), with
 * eta = grad h1 x grad h2 / (2 r) = (-mu a_y - G_nn u_y, mu a_x + G_nn u_x, .), and since dlambda_T/dth =
 * r / (mu d) eta_T exactly, sign(D) = sign(dE/dth).  We evaluate S = d D = (-c_n Gbar_T u + d cbar_T) . eta_T,
 * which has the same sign (d > 0 on the feasible arc) and needs no division.
 *
 * The angle itself is never formed: the current direction is kept as a unit vector u.  A stepping step of
 * angle alpha is the rational rotation by 2 atan(alpha / 2) (no sin/cos call); a bisection midpoint is
 * (u^p + u) / (2 cos(x)), x = half the bracket angle, which halves every step whatever half is kept, so
 * 1 / (2 cos x) is a short series in x (no sqrt, no atan2, no sin/cos in the loops).  These are exactly the
 * midpoints of bisecting theta.  The ends are replaced without branches (which half keeps the minimum is a
 * coin flip), and two bisection steps are evaluated per round (midpoint and both quarter points); the
 * decisions, terminations and step counts are those of one step at a time.
 * The point: tens of steps per solve, each free of transcendental calls (`herd-bench contact1` times it).
 */
#include "sim_solver.h"

#include "sim_metrics.h"
#include "sim_solver_internal.h"
#include "sim_spatial.h"

#include <math.h>
#include <stddef.h>

#define REG_DET 1e-12          /* a block with det <= REG_DET tr^3 is near-singular ... */
#define REG_EPS 1e-10          /* ... and gets REG_EPS tr added to its diagonal */
#define STEP_TMAX 0.75         /* largest tan(step / 2) of the initial stepping: steps < 1.29 rad */

void sim_solver_default_params(sim_solver_params *p)
{
    p->max_iter = 150;
    p->tol = 1e-6;
    p->alpha = 1.0;
    p->gamma = 0.99;
    p->alpha_min = 0.7;
    p->beta1 = 1e-2;
    p->beta2 = 0.5;
    p->beta3 = 1.3;
    p->contact_tol = 1e-6;
    p->contact_max_steps = 200;
    p->contact_refine = 1;
    p->pgs_alpha = 0.6;
    p->admm_rho = 0;
    p->admm_ratio = 5;
    p->admm_max_iter = 500;
    p->admm_factor = SIM_ADMM_FACTOR_AUTO;
    p->stall_window = 8;
    p->stall_drop = 0.5;
    p->direct_rounds = 8;
    p->direct_newton_iter = 30;
    p->direct_max_iter = 100;
    p->direct_forms = SIM_SOLVER_DIRECT_FORMS;
    p->direct_abandon = 1e4;
    p->limit_rounds = 4;
    p->seed = 0;
}

const char *sim_solver_strerror(int code)
{
    switch (code) {
    case SIM_SOLVER_OK: return "converged";
    case SIM_SOLVER_MAXITER: return "not converged within max_iter sweeps";
    case SIM_SOLVER_EINVAL:
        return "invalid contact problem (n out of range, NULL pointer or non-finite numbers)";
    default: return "unknown solver code";
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* One contact: the parts that depend on G and mu only (computed once per multi-contact solve).       */

/* PREP_BOX: a bounded bilateral row (mu < 0), row n only, bound in mu */
enum { PREP_NORMAL = 0, PREP_FRICTIONLESS = 1, PREP_NULL = 2, PREP_BOX = 3 };

typedef struct {
    double gxx, gxy, gxn, gyy, gyn, gnn; /* the (possibly regularized) block */
    double axx, axy, axn, ayy, ayn, ann; /* its adjugate (det G times the inverse) */
    double det;
    double K, inv_mu;                    /* G_nn / mu and 1 / mu (slip only) */
    double mu;                           /* clamped to [0, SIM_MU_MAX]; PREP_BOX: the bound b */
    int kind;
} contact_prep;

/* Block G with leading dimension ld (row stride).  Reads the upper triangle. */
static void prep_init(contact_prep *k, const double *G, int ld, double mu)
{
    double g00 = G[0], g01 = G[1], g02 = G[2], g11 = G[ld + 1], g12 = G[ld + 2], g22 = G[2 * ld + 2];
    if (sim_block_is_box(mu)) { /* only row n is used, unregularized (G_nn <= 0 is handled by the solve) */
        k->kind = PREP_BOX;
        k->mu = sim_block_box_bound(mu);
        k->gnn = g22;
        return;
    }
    double tr = g00 + g11 + g22;
    k->mu = mu > SIM_MU_MAX ? SIM_MU_MAX : mu;
    k->kind = k->mu < SIM_MU_FRICTIONLESS ? PREP_FRICTIONLESS : PREP_NORMAL;
    if (!(tr > 0)) { /* G = 0 (or not PSD): no impulse changes this contact's velocity */
        k->kind = PREP_NULL;
        return;
    }
    if (k->kind == PREP_FRICTIONLESS && g00 == 0 && g11 == 0) {
        /* empty tangent rows (a joint limit): the 1-D problem on row n with G_nn itself; the regularization below
           is for a 3x3 block, and would shift this G_nn by REG_EPS */
        k->gnn = g22;
        if (!(g22 > 0)) k->kind = PREP_NULL;
        return;
    }
    double det = 0, c00 = 0, c01 = 0, c02 = 0, c11 = 0, c12 = 0, c22 = 0;
    for (int pass = 0; pass < 2; pass++) {
        c00 = sim_fma(g11, g22, -(g12 * g12));
        c01 = sim_fma(g02, g12, -(g01 * g22));
        c02 = sim_fma(g01, g12, -(g02 * g11));
        c11 = sim_fma(g00, g22, -(g02 * g02));
        c12 = sim_fma(g01, g02, -(g00 * g12));
        c22 = sim_fma(g00, g11, -(g01 * g01));
        det = sim_fma(g02, c02, sim_fma(g01, c01, g00 * c00));
        if (det > REG_DET * tr * tr * tr) break;
        double eps = REG_EPS * tr;
        g00 += eps;
        g11 += eps;
        g22 += eps;
    }
    if (!(det > 0) || !(g22 > 0)) { /* indefinite even after regularization: not a Delassus block */
        k->kind = PREP_NULL;
        return;
    }
    k->gxx = g00, k->gxy = g01, k->gxn = g02, k->gyy = g11, k->gyn = g12, k->gnn = g22;
    k->axx = c00, k->axy = c01, k->axn = c02, k->ayy = c11, k->ayn = c12, k->ann = c22;
    k->det = det;
    k->inv_mu = k->kind == PREP_NORMAL ? 1.0 / k->mu : 0.0;
    k->K = g22 * k->inv_mu;
}

/* Two doubles (GCC/Clang vector extension; plain SSE2 on x86-64), for branch-free selects: m ? a : b per
 * lane, m all-ones or zero.  With SSE4.1 (x86-64-v2) one blendvpd, which stays in the floating-point domain. */
typedef double v2d __attribute__((vector_size(16)));
typedef long long v2l __attribute__((vector_size(16)));
#if defined(__SSE4_1__)
#include <smmintrin.h>
static inline v2d v2_select(v2l m, v2d a, v2d b) { return (v2d)_mm_blendv_pd((__m128d)b, (__m128d)a, (__m128d)m); }
#else
static inline v2d v2_select(v2l m, v2d a, v2d b) { return (v2d)((m & (v2l)a) | (~m & (v2l)b)); }
#endif

/* atan(t) for 0 <= t: series for t <= 0.1 (error < 1e-16), else libm. */
static inline double atan_small(double t)
{
    if (t > 0.1) return atan(t);
    double t2 = t * t;
    return t * (1 + t2 * (-1.0 / 3 + t2 * (1.0 / 5 + t2 * (-1.0 / 7 + t2 * (1.0 / 9 + t2 * (-1.0 / 11 + t2 * (1.0 / 13)))))));
}

/* 1 / (2 cos x) for 0 <= x < pi/2: the secant series to x^12 for x <= 0.1 (relative error < 3e-17), else
 * the cosine series at x / 8, three doublings cos 2y = 2 cos^2 y - 1 and a division.  No libm call: a call
 * in the hot loop would force every live register to the stack. */
static inline double half_sec(double x)
{
    const double x2 = x * x;
    if (x <= 0.1)
        return 0.5 + x2 * (1.0 / 4 + x2 * (5.0 / 48 + x2 * (61.0 / 1440 + x2 * (277.0 / 16128 +
               x2 * (50521.0 / 7257600 + x2 * (540553.0 / 191600640))))));
    const double y2 = x2 * (1.0 / 64);
    double cy = 1 + y2 * (-0.5 + y2 * (1.0 / 24 + y2 * (-1.0 / 720 + y2 * (1.0 / 40320 + y2 * (-1.0 / 3628800)))));
    for (int k = 0; k < 3; k++) cy = 2 * cy * cy - 1;
    return 0.5 / cy;
}

/* Line 33's test |lambda^p - lambda| < tol for the ends u^p, u with D = (d^p, d), lambda = (-c_n / d) (u, 1 / mu),
 * multiplied through by (d^p d / c_n)^2 to avoid divisions:
 *     |d u^p - d^p u|^2 + (d - d^p)^2 / mu^2 < (tol / c_n)^2 (d^p d)^2. */
static inline int slip_close(v2d U, v2d UP, v2d D, double imu, double tol2)
{
    const v2d E = UP * D[1] - U * D[0];
    const double ez = (D[1] - D[0]) * imu, dd = D[0] * D[1];
    return E[0] * E[0] + E[1] * E[1] + ez * ez < tol2 * dd * dd;
}

/* The slip solution for a closing contact (c_n < 0) whose lambda0 lies outside the cone, for either model;
 * l0 = lambda0 times any positive factor (only its direction and the sign of the line-of-sight test matter).
 * Both models put lambda on the ellipse {v_n = 0, |lambda_T| = mu lambda_n} and look for the direction u of
 * lambda_T as the sign change of a quadratic form in u (no reliance on |u| = 1) evaluated times G_nn, which
 * only needs the adjugate of G (no division):
 *
 * paper (coulomb = 0), Algorithm 1: the sign test S = d D of the file comment (the sign of dE/dtheta),
 *   w = P u + K cbar_T with P = -c_n Gbar_T + cbar_T a^T,  eta_T = e0 + G_nn J u  (e0 = mu (-a_y, a_x), J u = (-u_y, u_x))
 *   S = q0 + g . u + u^T Q u,  q0 = K cbar_T . e0,  g = P^T e0 + K G_nn (cbar_y, -cbar_x),
 *   u^T Q u = G_nn (P_10 u_x^2 + (P_11 - P_00) u_x u_y - P_01 u_y^2)
 * which costs 5 multiply-adds on the critical path instead of the 9 of the hybrid form, and needs no d.
 *
 * Coulomb (coulomb = 1): the sliding velocity must be anti-parallel to lambda_T.  With B = G_nn Gbar_T (the
 * adjugate block [[adj_yy, -adj_xy], [-adj_xy, adj_xx]]) and cb = G_nn cbar_T, G_nn d v_T = -c_n B u + d cb, so
 *   F(u) = G_nn d (u x v_T) = -c_n u x (B u) + (K + a . u)(u x cb)      (u x w = u_x w_y - u_y w_x)
 *   V(u) = G_nn d (u . v_T) = -c_n u . (B u) + (K + a . u)(u . cb)
 * are quadratic forms in u; a Coulomb slip direction is a root of F with V < 0 (v_T = -k u, k > 0) and d > 0.
 * The search follows Algorithm 1: stepping from lambda0's direction against the sign of F (F > 0: v_T lies
 * counter-clockwise of u, so -v_T clockwise, and theta decreases), V >= 0 or d <= 0 taking the place of the
 * line-of-sight test; but each step is aimed 25 % past Newton's root estimate -F / F' (Algorithm 1's growing
 * step where that estimate lies behind), and the bracket is then closed by a safeguarded Newton iteration in
 * s = tan(half the angle from theta^p) (a step leaving the bracket is replaced by its midpoint) until a step
 * moves lambda by less than contact_tol; that step's point is kept (error ~ contact_tol^2).  About 4 steps per
 * solve instead of ~22 for stepping + bisection.  When the stepping does not bracket a root (it turned by more
 * than pi, or shrank to nothing against V >= 0), 32 directions around the circle are scanned and the valid
 * bracket nearest lambda0's direction is closed the same way.  Returns -1 when no direction has a root (no
 * Coulomb slip solution for this block; the caller applies its rule), else the steps taken. */
#define SCAN_N 32

/* Coulomb stepping: the next step t (tan of half the turn, sign = the search direction) from the form's value
 * S > 0 and slope dS (per radian) at the current point.  Where Newton's root estimate -S / dS lies ahead, the
 * step goes 25 % past it (so that the next point usually brackets the root tightly), at least tmin / 2 and at
 * most STEP_TMAX; elsewhere the step grows as Algorithm 1's (t beta3, from at least tmin / 2). */
static inline double newton_step(double t, double dS, double S, double tmin, double grow)
{
    const double sg = t > 0 ? 1.0 : -1.0, ahead = -S / dS * sg; /* > 0: the estimate lies ahead */
    double a = ahead > 0 ? 0.625 * ahead : fabs(t) * grow;
    if (!(a >= 0.5 * tmin)) a = 0.5 * tmin;
    if (a > STEP_TMAX) a = STEP_TMAX;
    return sg * a;
}
static inline __attribute__((always_inline)) int slip_search(const contact_prep *k, const double c[3],
                                                             const double l0[3], double lam[3],
                                                             const sim_solver_params *p, const int coulomb)
{
    const double mu = k->mu, gnn = k->gnn, ax = k->gxn, ay = k->gyn;
    const double K = k->K;
    const double mcn = -c[2]; /* > 0 */
    /* the form times G_nn > 0 (same sign, no division): G_nn cbar_T = G_nn c_T - G_Tn c_n and
       G_nn Gbar_T = [[adj_yy, -adj_xy], [-adj_xy, adj_xx]] */
    const double cbx = gnn * c[0] - ax * c[2], cby = gnn * c[1] - ay * c[2];
    double q0, gx, gy, Qxx, Qxy, Qyy;
    double hx = 0, hy = 0, Rxx = 0, Rxy = 0, Ryy = 0; /* V (Coulomb only) */
    if (!coulomb) {
        const double e0x = -mu * ay, e0y = mu * ax;
        const double P00 = mcn * k->ayy + cbx * ax, P01 = -mcn * k->axy + cbx * ay;
        const double P10 = -mcn * k->axy + cby * ax, P11 = mcn * k->axx + cby * ay;
        q0 = K * (cbx * e0x + cby * e0y);
        gx = P00 * e0x + P10 * e0y + K * gnn * cby;
        gy = P01 * e0x + P11 * e0y - K * gnn * cbx;
        Qxx = gnn * P10, Qxy = gnn * (P11 - P00), Qyy = -gnn * P01;
    } else {
        const double b00 = k->ayy, b01 = -k->axy, b11 = k->axx;
        q0 = 0;
        gx = K * cby, gy = -K * cbx;
        Qxx = mcn * b01 + ax * cby, Qxy = mcn * (b11 - b00) + ay * cby - ax * cbx, Qyy = -mcn * b01 - ay * cbx;
        hx = K * cbx, hy = K * cby;
        Rxx = mcn * b00 + ax * cbx, Rxy = 2 * mcn * b01 + ax * cby + ay * cbx, Ryy = mcn * b11 + ay * cby;
    }
#define SLIP_S(ux_, uy_) ((q0 + (uy_) * (gy + Qyy * (uy_))) + (ux_) * (gx + Qxx * (ux_) + Qxy * (uy_)))
#define SLIP_V(ux_, uy_) ((ux_) * (hx + Rxx * (ux_) + Rxy * (uy_)) + (uy_) * (hy + Ryy * (uy_)))
/* dS / dtheta at the unit vector u (du / dtheta = (-u_y, u_x)) */
#define SLIP_DTH(ux_, uy_) (-(uy_) * (gx + 2 * Qxx * (ux_) + Qxy * (uy_)) + (ux_) * (gy + 2 * Qyy * (uy_) + Qxy * (ux_)))
    const int max_steps = p->contact_max_steps;
    int steps = 0;

    /* line 2: theta0 = angle of lambda0_T, kept as the unit vector u */
    double ux = 1, uy = 0;
    double t2 = l0[0] * l0[0] + l0[1] * l0[1];
    if (t2 > 0) {
        double it = 1.0 / sqrt(t2);
        ux = l0[0] * it;
        uy = l0[1] * it;
    }
    const double u0x = ux, u0y = uy;
    double d = K + ax * ux + ay * uy; /* r = -c_n / d (eq. 14) */
    int scan = 0;
    if (coulomb) {
        scan = !(d > 0) || !(SLIP_V(ux, uy) < 0);
    } else if (!(d > 0)) { /* cannot happen in exact arithmetic (lambda0's ray crosses the ellipse): use the
                              centre lambda^{T=0}, which is feasible and dissipative */
        lam[0] = lam[1] = 0;
        lam[2] = mcn / gnn;
        return 0;
    }
    const double S0 = scan ? 0.0 : SLIP_S(ux, uy); /* line 5: D0 (times d > 0) */
    double upx = ux, upy = uy, dp = d; /* theta^p */
    double x = 0;                      /* half the bracket angle */
    int bracketed = 0;
    /* Coulomb: the bracket for the Newton phase, as a rotation of u^p by 2 atan(s), s in [0, sb], of sign sg,
       with the form's values Sup > 0 at u^p and Sb <= 0 at u */
    double sb = 0, sg = 1, Sup = 0, Sb = 0;
    if (S0 != 0) {
        /* flip the form so that S > 0 means "same sign as D0" */
        if (S0 < 0) q0 = -q0, gx = -gx, gy = -gy, Qxx = -Qxx, Qxy = -Qxy, Qyy = -Qyy;
        /* lines 6-23: initial stepping against the gradient until its sign changes.  A step of angle
           alpha is the rotation by 2 atan(t), t = alpha / 2 (cos = (1 - t^2) / (1 + t^2), sin = 2 t / (1 + t^2):
           rational and exactly norm-preserving; the angle equals alpha up to alpha^3 / 12) */
        double t = S0 > 0 ? -0.5 * p->beta1 : 0.5 * p->beta1;
        double turned = 0; /* Coulomb: sum of |t| over the steps taken (> the turn / 2.6) */
        double Sprev = fabs(S0);
        if (coulomb) t = newton_step(t, SLIP_DTH(ux, uy), Sprev, p->beta1, 1.0);
        while (steps < max_steps) {
            steps++;
            const double t2_ = t * t, den = 1.0 / (1.0 + t2_);
            const double cs = (1.0 - t2_) * den, sa = 2.0 * t * den;
            double nx = cs * ux - sa * uy, ny = sa * ux + cs * uy;
            double dn = K + ax * nx + ay * ny;
            /* line 13, line of sight: grad h2(lambda) . (lambda0 - lambda) = 2 r (u . lambda0_T - mu lambda0_n)
               must not be negative (lambda0 outside the cone's tangent plane at lambda); and r > 0.
               Coulomb: the slip must oppose u (V < 0), and r > 0 */
            int bad;
            if (coulomb) bad = !(dn > 0) || !(SLIP_V(nx, ny) < 0);
            else bad = !(dn > 0) || nx * l0[0] + ny * l0[1] - mu * l0[2] < 0;
            if (bad) {
                t *= p->beta2; /* line 14: shrink, back to the old angle (u unchanged) */
                if (coulomb && fabs(t) < 1e-9) break;
                continue;
            }
            double S = SLIP_S(nx, ny);
            upx = ux, upy = uy, dp = d;
            ux = nx, uy = ny, d = dn;
            if (S > 0) {
                if (coulomb && (turned += fabs(t)) > 1.25) break; /* turned by more than ~pi */
                if (coulomb) {
                    t = newton_step(t, SLIP_DTH(ux, uy), S, p->beta1, p->beta3);
                } else {
                    t *= p->beta3; /* line 18: same sign, grow the step */
                    t = t > STEP_TMAX ? STEP_TMAX : t < -STEP_TMAX ? -STEP_TMAX : t;
                }
                Sprev = S;
            } else {
                bracketed = 1; /* zero crossing between theta^p and theta */
                if (coulomb) sb = fabs(t), sg = t > 0 ? 1 : -1, Sup = Sprev, Sb = S;
                else x = atan_small(fabs(t));
                break;
            }
        }
        if (coulomb && !bracketed) scan = 1;
    } else if (coulomb && !scan) {
        bracketed = 0; /* F(u0) = 0 exactly with V < 0: u0 is the root */
    }
    if (scan) {
        /* Coulomb: SCAN_N directions from theta0 (rotations by 2 pi / SCAN_N); bracket the sign change of F between
           two valid neighbours nearest theta0 (k = 0, -1, 1, -2, ...) */
        double sx[SCAN_N], sy[SCAN_N], sf[SCAN_N], sd[SCAN_N];
        int ok[SCAN_N];
        const double cr = 0.98078528040323044913, sr = 0.19509032201612826785; /* cos, sin (pi / 16) */
        double wx = u0x, wy = u0y;
        if (S0 < 0) q0 = -q0, gx = -gx, gy = -gy, Qxx = -Qxx, Qxy = -Qxy, Qyy = -Qyy; /* back to F */
        for (int j = 0; j < SCAN_N; j++) {
            sx[j] = wx, sy[j] = wy;
            sd[j] = K + ax * wx + ay * wy;
            sf[j] = SLIP_S(wx, wy);
            ok[j] = sd[j] > 0 && SLIP_V(wx, wy) < 0;
            const double nx = cr * wx - sr * wy;
            wy = sr * wx + cr * wy, wx = nx;
        }
        steps += SCAN_N;
        int found = -1;
        for (int m = 0; m < SCAN_N && found < 0; m++) {
            const int j = (m & 1) ? SCAN_N - 1 - (m >> 1) : (m >> 1), j1 = (j + 1) % SCAN_N;
            if (ok[j] && ok[j1] && (sf[j] > 0) != (sf[j1] > 0)) found = j;
        }
        if (found < 0) {
#undef SLIP_V
            return -1;
        }
        const int a = found, b = (found + 1) % SCAN_N;
        const int pa = sf[a] > 0; /* the end with F > 0 becomes theta^p */
        upx = pa ? sx[a] : sx[b], upy = pa ? sy[a] : sy[b], dp = pa ? sd[a] : sd[b];
        ux = pa ? sx[b] : sx[a], uy = pa ? sy[b] : sy[a], d = pa ? sd[b] : sd[a];
        x = 0.09817477042468103871; /* pi / 32 */
        sb = 0.09849140335716425, sg = pa ? 1 : -1; /* tan(pi / 32); the scan turns counter-clockwise */
        Sup = pa ? sf[a] : sf[b], Sb = pa ? sf[b] : sf[a];
        bracketed = 1;
    }
    /* lines 24-33: bisection between theta^p (S > 0) and theta (S <= 0).  The midpoint direction is
       (u^p + u) / (2 cos(x)), x = half the interval width, halved every step.  Termination
       |lambda^p - lambda| < tol, multiplied through by (d^p d / c_n)^2 to avoid divisions:
       |d u^p - d^p u|^2 + (d - d^p)^2 / mu^2 < (tol / c_n)^2 (d^p d)^2.
       The ends (directions U^p, U and D = (d^p, d)) are 2-vectors replaced without branches: which half
       keeps the minimum is a coin flip that a branch predictor cannot learn. */
    if (bracketed && coulomb) {
        /* Coulomb: safeguarded Newton on S in the bracket's parameter s (the point is u^p rotated by 2 atan(s),
           exactly unit, s in [lo, hi]): a Newton step that leaves the bracket is replaced by its midpoint.  Stops
           once the step (Newton) or half the bracket (bisection) moves lambda by less than contact_tol, and keeps
           that last point: after a Newton step below contact_tol the error is of the order of its square. */
        const double tol = p->contact_tol, imu = k->inv_mu, aa = fabs(ax) + fabs(ay);
        double lo = 0, hi = sb;
        double s = Sup - Sb > 0 ? sb * (Sup / (Sup - Sb)) : 0.5 * sb; /* regula falsi start */
        if (!(s > lo && s < hi)) s = 0.5 * (lo + hi);
        while (steps < max_steps) {
            steps++;
            const double s2 = s * s, den = 1.0 / (1.0 + s2);
            const double cs = (1.0 - s2) * den, sa = sg * 2.0 * s * den;
            const double px = cs * upx - sa * upy, py = sa * upx + cs * upy;
            const double dd = K + ax * px + ay * py;
            double sn, move = INFINITY;
            if (!(dd > 0)) { /* beyond the asymptote: on u's side, as in the bisection */
                hi = s;
                sn = 0.5 * (lo + hi);
            } else {
                const double S = SLIP_S(px, py);
                ux = px, uy = py, d = dd;
                if (S > 0) lo = s;
                else hi = s;
                const double dS = SLIP_DTH(px, py) * (sg * 2.0 * den); /* dS / ds */
                sn = s - S / dS;
                if (sn > lo && sn < hi) move = fabs(sn - s);
                else sn = 0.5 * (lo + hi), move = 0.5 * (hi - lo);
                /* |d lambda / d theta| <= r (1 + |a| / d) (1 + 1 / mu), d theta <= 2 ds */
                if (2.0 * move * (mcn / dd) * (1.0 + aa / dd) * (1.0 + imu) < tol) {
                    const double n2 = sn * sn, nd = 1.0 / (1.0 + n2);
                    const double ncs = (1.0 - n2) * nd, nsa = sg * 2.0 * sn * nd;
                    const double qx = ncs * upx - nsa * upy, qy = nsa * upx + ncs * upy;
                    const double qd = K + ax * qx + ay * qy;
                    if (qd > 0) ux = qx, uy = qy, d = qd;
                    break;
                }
            }
            if (!(hi - lo > 0)) break;
            s = sn;
        }
        if (!(d > 0)) ux = upx, uy = upy, d = dp;
    } else if (bracketed) {
        const double tol2 = (p->contact_tol / mcn) * (p->contact_tol / mcn);
        const double imu = k->inv_mu;
        const v2d zero = {0, 0}, neg = {-1, -1};
        const v2l flip = {0, -1};
        v2d U = {ux, uy}, UP = {upx, upy}, D = {dp, d};
        /* Two bisection steps per round: the midpoint M and both quarter points (Q1 in [theta^p, M],
           Q2 in [M, theta]) are evaluated together, then the two decisions are taken in order.  The
           midpoints, tests, terminations and step counts are exactly those of one step at a time, but
           the second decision does not wait for a new point (a shorter dependent latency per step). */
        while (steps < max_steps) {
            const double h1 = half_sec(x), h2 = half_sec(0.5 * x);
            x *= 0.25;
            const v2d M = (UP + U) * h1; /* line 25 */
            const v2d Q1 = (UP + M) * h2, Q2 = (M + U) * h2;
            const double mx = M[0], my = M[1];
            const double dm = K + ax * mx + ay * my;
            const double Sm = dm > 0 ? SLIP_S(mx, my) : -1.0; /* beyond the asymptote: theta^p side */
            const v2d QX = {Q1[0], Q2[0]}, QY = {Q1[1], Q2[1]};
            const v2d DQ = K + ax * QX + ay * QY;
            const v2d SQ = v2_select(DQ > zero, q0 + QY * (gy + Qyy * QY) + QX * (gx + Qxx * QX + Qxy * QY), neg);
            /* first step: lines 28-33 at M */
            steps++;
            const v2l s1 = (v2d){Sm, Sm} > zero;
            UP = v2_select(s1, M, UP);
            U = v2_select(s1, U, M);
            D = v2_select(s1 ^ flip, (v2d){dm, dm}, D);
            if (slip_close(U, UP, D, imu, tol2) || steps >= max_steps) break;
            /* second step at the quarter point of the kept half */
            steps++;
            const v2d Qk = v2_select(s1, Q2, Q1);
            const v2d Sk = v2_select(s1, (v2d){SQ[1], SQ[1]}, (v2d){SQ[0], SQ[0]});
            const v2d Dk = v2_select(s1, (v2d){DQ[1], DQ[1]}, (v2d){DQ[0], DQ[0]});
            const v2l s2 = Sk > zero;
            UP = v2_select(s2, Qk, UP);
            U = v2_select(s2, U, Qk);
            D = v2_select(s2 ^ flip, Dk, D);
            if (slip_close(U, UP, D, imu, tol2)) break;
        }
        ux = U[0], uy = U[1], d = D[1];
        upx = UP[0], upy = UP[1], dp = D[0];
        /* optional refinement (p->contact_refine): one regula-falsi step inside the final bracket, the zero
           of the linear interpolation of S between its ends.  It never leaves the bracket, so the result
           stays within the impulse interval, and is usually ~1e-12 N s from the exact minimizer. */
        const double Sp = p->contact_refine ? SLIP_S(upx, upy) : 0.0;
        const double Su = p->contact_refine && d > 0 ? SLIP_S(ux, uy) : -1.0;
        if (p->contact_refine && d > 0 && Sp > 0 && Su <= 0 && Sp - Su > 0) {
            const double tf = Sp / (Sp - Su);
            const double ex = ux - upx, ey = uy - upy;
            double wx = upx + tf * ex, wy = upy + tf * ey;
            /* |w|^2 = 1 - q exactly for unit ends, q = tf (1 - tf) |u - u^p|^2 (tiny once bisected) */
            const double q = tf * (1.0 - tf) * (ex * ex + ey * ey);
            const double iw = q < 1e-8 ? 1.0 + 0.5 * q : 1.0 / sqrt(1.0 - q); /* error < q^2 < 1e-16 */
            wx *= iw, wy *= iw;
            const double dw = K + ax * wx + ay * wy;
            if (dw > 0) ux = wx, uy = wy, d = dw;
        } else if (!(d > 0)) {
            ux = upx, uy = upy, d = dp; /* safety net for the asymptote rule above */
        }
    }
#undef SLIP_S
#undef SLIP_DTH
    const double r = mcn / d;
    lam[0] = r * ux;
    lam[1] = r * uy;
    lam[2] = r * k->inv_mu;
    return steps;
}

/* The slip search of each model as its own function (coulomb a constant, so each is specialized). */
#define SLIP_SEARCH_MODEL(name, coulomb)                                                                        \
    static int name(const contact_prep *k, const double c[3], const double l0[3], double lam[3],    \
                                const sim_solver_params *p)                                                     \
    {                                                                                                           \
        return slip_search(k, c, l0, lam, p, coulomb);                                                          \
    }
SLIP_SEARCH_MODEL(contact_slip, 0)
SLIP_SEARCH_MODEL(contact_slip_coulomb, 1)
#undef SLIP_SEARCH_MODEL

/* The exact single-contact model with a prepared block; c is the contact's free velocity.  coulomb = 0: the
 * paper's model; 1: Coulomb's law, where a slipping block without a Coulomb slip root takes the paper model's
 * slip solution (the rule of sim_solver.h) and sets *no_root. */
static inline __attribute__((always_inline)) int contact_solve_model(const contact_prep *k, const double c[3],
                                                                     double lam[3], const sim_solver_params *p,
                                                                     int *steps, const int coulomb, int *no_root)
{
    *steps = 0;
    const double cn = c[2];
    if (k->kind == PREP_BOX) { /* the minimizer of 1/2 G_nn l^2 + c_n l over [-b, b] */
        const double b = k->mu;
        double ln = k->gnn > 0 ? -cn / k->gnn : cn > 0 ? -b : cn < 0 ? b : 0.0;
        ln = ln > b ? b : ln < -b ? -b : ln;
        lam[0] = lam[1] = 0;
        lam[2] = ln;
        return ln == b || ln == -b ? SIM_CONTACT_SLIP : SIM_CONTACT_STICK;
    }
    if (cn > 0 || k->kind == PREP_NULL) {
        lam[0] = lam[1] = lam[2] = 0;
        return SIM_CONTACT_OPEN;
    }
    if (k->kind == PREP_FRICTIONLESS) {
        lam[0] = lam[1] = 0;
        lam[2] = -cn / k->gnn;
        return lam[2] > 0 ? SIM_CONTACT_SLIP : SIM_CONTACT_OPEN;
    }
    /* the zero-velocity impulse lambda0 = -G^-1 c = w / det G, w = -adj(G) c: only its direction matters
       for the cone test and for Algorithm 1, so the division waits for a sticking contact */
    double w[3];
    w[0] = -sim_fma(k->axn, cn, sim_fma(k->axy, c[1], k->axx * c[0]));
    w[1] = -sim_fma(k->ayn, cn, sim_fma(k->ayy, c[1], k->axy * c[0]));
    w[2] = -sim_fma(k->ann, cn, sim_fma(k->ayn, c[1], k->axn * c[0]));
    const double mu = k->mu;
    if (w[2] >= 0 && w[0] * w[0] + w[1] * w[1] <= mu * mu * w[2] * w[2]) {
        const double id = 1.0 / k->det;
        lam[0] = w[0] * id, lam[1] = w[1] * id, lam[2] = w[2] * id;
        return SIM_CONTACT_STICK;
    }
    if (!(cn < 0)) { /* c_n = 0: the slip ellipse shrinks to the apex */
        lam[0] = lam[1] = lam[2] = 0;
        return SIM_CONTACT_OPEN;
    }
    if (coulomb) {
        const int st = contact_slip_coulomb(k, c, w, lam, p);
        if (st >= 0) {
            *steps = st;
            return SIM_CONTACT_SLIP;
        }
        *no_root = 1;
        *steps = SCAN_N + contact_slip(k, c, w, lam, p);
        return SIM_CONTACT_SLIP;
    }
    *steps = contact_slip(k, c, w, lam, p);
    return SIM_CONTACT_SLIP;
}

static int contact_solve(const contact_prep *k, const double c[3], double lam[3], const sim_solver_params *p,
                         int *steps)
{
    return contact_solve_model(k, c, lam, p, steps, 0, NULL);
}

static int contact_single(const double G[9], const double c[3], double mu, double lambda[3],
                          const sim_solver_params *p, int *steps, const int coulomb, int *no_root)
{
    int nr_local;
    if (!no_root) no_root = &nr_local;
    *no_root = 0;
    sim_solver_params def;
    int st_local;
    if (!steps) steps = &st_local;
    *steps = 0;
    if (!lambda) return SIM_SOLVER_EINVAL;
    lambda[0] = lambda[1] = lambda[2] = 0;
    if (!G || !c) return SIM_SOLVER_EINVAL;
    double s = G[0] + G[1] + G[2] + G[3] + G[4] + G[5] + G[6] + G[7] + G[8] + c[0] + c[1] + c[2];
    if (!isfinite(s) || !isfinite(mu)) return SIM_SOLVER_EINVAL;
    if (!p) {
        sim_solver_default_params(&def);
        p = &def;
    }
    contact_prep k;
    prep_init(&k, G, 3, mu);
    return coulomb ? contact_solve_model(&k, c, lambda, p, steps, 1, no_root) : contact_solve(&k, c, lambda, p, steps);
}

int sim_contact_single(const double G[9], const double c[3], double mu, double lambda[3],
                       const sim_solver_params *p, int *steps)
{
    return contact_single(G, c, mu, lambda, p, steps, 0, NULL);
}

int sim_contact_single_coulomb(const double G[9], const double c[3], double mu, double lambda[3],
                               const sim_solver_params *p, int *steps, int *no_root)
{
    return contact_single(G, c, mu, lambda, p, steps, 1, no_root);
}


/* v += G[:, 3i..3i+2] delta, using the symmetry of G (rows 3i..3i+2 are contiguous). */
void sim_solver_add_column_block(int N, const double *restrict G, int i, const double delta[3], double *restrict v)
{
    const double *r0 = G + (size_t)(3 * i) * N, *r1 = r0 + N, *r2 = r1 + N;
    const double d0 = delta[0], d1 = delta[1], d2 = delta[2];
    for (int k = 0; k < N; k++) v[k] += sim_fma(d2, r2[k], sim_fma(d1, r1[k], d0 * r0[k]));
}

/* The opening shared by the multi-contact solvers: resets *st, substitutes the defaults (in *def) for a NULL
 * *p, validates the problem.  Returns SIM_SOLVER_EINVAL, SIM_SOLVER_OK when there is nothing to solve
 * (n = 0: converged), or 1 to go on. */
static int solve_begin(int n, const double *G, const double *c, const double *mu, const double *lambda,
                       const sim_solver_params **p, sim_solver_params *def, sim_solver_stats *st)
{
    *st = (sim_solver_stats){.guard_scale = 1.0}; /* every other field 0 */
    if (!*p) {
        sim_solver_default_params(def);
        *p = def;
    }
    if (!sim_contact_problem_valid(n, G, c, mu, lambda)) return SIM_SOLVER_EINVAL;
    if (n == 0) {
        st->converged = 1;
        st->answer = SIM_ANSWER_COULOMB;
        return SIM_SOLVER_OK;
    }
    return 1;
}

void sim_solver_count_modes(int n, const double *mu, const double *lambda, sim_solver_stats *st)
{
    int no = 0, ns = 0, nl = 0;
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i;
        double lt = sqrt(l[0] * l[0] + l[1] * l[1]);
        double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
        if (sim_block_is_box(m)) { /* a bounded bilateral row: slip at a bound, else stick */
            if (fabs(l[2]) >= sim_block_box_bound(m) * (1.0 - 1e-9)) nl++;
            else ns++;
        } else if (!(l[2] > 0)) no++;
        else if (lt >= m * l[2] * (1.0 - 1e-9)) nl++;
        else ns++;
    }
    st->n_open = no, st->n_stick = ns, st->n_slip = nl;
}

void sim_solver_clear_empty_tangents(int n, const double *G, const double *mu, double *lambda)
{
    const int N = 3 * n;
    for (int i = 0; i < n; i++) {
        const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
        if (sim_block_is_box(mu[i]) || (mu[i] < SIM_MU_FRICTIONLESS && Gi[0] == 0 && Gi[N + 1] == 0))
            lambda[3 * i] = lambda[3 * i + 1] = 0;
    }
}

/* The closing shared by the multi-contact solvers. */
int sim_solver_end(sim_solver_stats *st, int iterations, double err, double tol)
{
    st->iterations = iterations;
    st->error = err;
    st->converged = err < tol;
    return st->converged ? SIM_SOLVER_OK : SIM_SOLVER_MAXITER;
}

/* A step that ends without convergence must still not add energy: if E(lambda) = c.lambda + 1/2 lambda.G lambda
 * (the change of kinetic energy the impulses cause) is positive, scale lambda by the s in [0, 1] that minimizes
 * E(s lambda) = s c.lambda + s^2/2 lambda.G lambda (E(s) <= 0; s lambda stays in the cones).  Updates v.
 * Returns s (1: untouched). */
double sim_solver_dissipation_guard(int N, const double *G, const double *c, double *lambda, double *v)
{
    double a = 0, b = 0;
    for (int r = 0; r < N; r++) {
        a += c[r] * lambda[r];
        b += (v[r] - c[r]) * lambda[r]; /* v - c = G lambda */
    }
    if (!(a + 0.5 * b > 0)) return 1.0;
    double s = (a < 0 && b > 0) ? -a / b : 0.0; /* < 1 here, since E(1) > 0 */
    for (int r = 0; r < N; r++) {
        lambda[r] *= s;
        v[r] = c[r] + s * (v[r] - c[r]);
    }
    return s;
}

/* Algorithm 2 on a valid problem with n > 0; v = G lambda + c on entry.  Specialized per model (coulomb and stall
 * constants) by the functions below, which stay out of line so that solve() stays small. */
static inline __attribute__((always_inline)) int sweeps_model(int n, const double *G, const double *c,
                                                              const double *mu, double *lambda,
                                                              const sim_solver_params *p, sim_solver_stats *st,
                                                              double *v, const int coulomb, const int stall)
{
    enum { HIST = 64 };
    double hist[HIST];
    const int window = stall ? (p->stall_window < HIST ? p->stall_window : HIST) : 0;
    const int N = 3 * n;
    contact_prep prep[SIM_SOLVER_MAX_CONTACTS];
    for (int i = 0; i < n; i++) prep_init(&prep[i], G + (size_t)(3 * i) * N + 3 * i, N, mu[i]);

    unsigned char mode_of[SIM_SOLVER_MAX_CONTACTS] = {0};
    signed char box_at[SIM_SOLVER_MAX_CONTACTS]; /* a bounded row's last bound (+1 / -1; read when at one) */
    double alpha = p->alpha;
    double err = INFINITY;
    int it = 0;
sweep:
    while (it < p->max_iter) {
        it++;
        int no = 0, ns = 0, nl = 0;
        for (int i = 0; i < n; i++) {
            const contact_prep *k = &prep[i];
            double *l = lambda + 3 * i;
            const double *vi = v + 3 * i;
            /* the contact's free velocity with every other impulse fixed: c_i = v_i - G_ii lambda_i */
            const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
            double ci[3];
            for (int a = 0; a < 3; a++) {
                const double *row = Gi + (size_t)a * N;
                ci[a] = vi[a] - sim_fma(row[2], l[2], sim_fma(row[1], l[1], row[0] * l[0]));
            }
            double ls[3];
            int steps, no_root = 0;
            int mode = contact_solve_model(k, ci, ls, p, &steps, coulomb, &no_root);
            st->no_root += no_root;
            mode_of[i] = (unsigned char)mode;
            if (k->kind == PREP_BOX) box_at[i] = ls[2] > 0 ? 1 : -1;
            st->bisection_steps += steps;
            no += mode == SIM_CONTACT_OPEN;
            ns += mode == SIM_CONTACT_STICK;
            nl += mode == SIM_CONTACT_SLIP;
            /* lines 4, 6, 9: lambda_i <- alpha lambda* + (1 - alpha) lambda_i (lambda* = 0 when opening) */
            double delta[3];
            for (int a = 0; a < 3; a++) {
                double nv = sim_fma(alpha, ls[a], (1.0 - alpha) * l[a]);
                delta[a] = nv - l[a];
                l[a] = nv;
            }
            if (delta[0] != 0 || delta[1] != 0 || delta[2] != 0) sim_solver_add_column_block(N, G, i, delta, v);
        }
        st->n_open = no, st->n_stick = ns, st->n_slip = nl;
        alpha = p->alpha_min + p->gamma * (alpha - p->alpha_min); /* line 12, once per sweep */
        err = sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb);
        if (err < p->tol) break;
        if (window > 0) { /* the stall detector */
            if ((it > window && !(err < p->stall_drop * hist[(it - window) % HIST])) || it == p->max_iter) {
                st->iterations = it;
                st->error = err;
                return SIM_SOLVER_STALLED;
            }
            hist[it % HIST] = err;
        }
    }
    /* Line 4 only relaxes an opening contact's impulse towards 0 ((1 - alpha)^k never reaches it): release
       the contacts found opening in the last sweep exactly, as the per-contact model prescribes; likewise a
       bounded row found at a bound is set to it. */
    int released = 0;
    for (int i = 0; i < n && it > 0; i++) {
        double *l = lambda + 3 * i;
        if (mode_of[i] == SIM_CONTACT_SLIP && prep[i].kind == PREP_BOX) {
            const double bnd = box_at[i] * prep[i].mu;
            if (l[2] == bnd) continue;
            double delta[3] = {0, 0, bnd - l[2]};
            l[2] = bnd;
            sim_solver_add_column_block(N, G, i, delta, v);
            released = 1;
            continue;
        }
        if (mode_of[i] != SIM_CONTACT_OPEN || (l[0] == 0 && l[1] == 0 && l[2] == 0)) continue;
        double delta[3] = {-l[0], -l[1], -l[2]};
        l[0] = l[1] = l[2] = 0;
        sim_solver_add_column_block(N, G, i, delta, v);
        released = 1;
    }
    if (released || it == 0) err = sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb);
    /* releasing them moved the others' velocities: past the tolerance again, the sweeps go on (they met it
       before the release, so this only continues a converging problem; the cap and the stall detector bound it) */
    if (released && !(err < p->tol) && it < p->max_iter) goto sweep;
    if (!(err < p->tol)) {
        st->guard_scale = sim_solver_dissipation_guard(N, G, c, lambda, v);
        if (st->guard_scale != 1.0) err = sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb);
    }
    const int r = sim_solver_end(st, it, err, p->tol);
    st->answer = st->converged ? (coulomb ? SIM_ANSWER_COULOMB : SIM_ANSWER_OWN) : SIM_ANSWER_NONE;
    return r;
}

static __attribute__((noinline)) int bisection_blocks(int n, const double *G, const double *c, const double *mu,
                                                      double *lambda, const sim_solver_params *p,
                                                      sim_solver_stats *st, double *v)
{
    return sweeps_model(n, G, c, mu, lambda, p, st, v, 0, 0);
}

static __attribute__((noinline)) int coulomb_blocks(int n, const double *G, const double *c, const double *mu,
                                                    double *lambda, const sim_solver_params *p,
                                                    sim_solver_stats *st, double *v)
{
    return sweeps_model(n, G, c, mu, lambda, p, st, v, 1, 0);
}

static __attribute__((noinline)) int coulomb_stall_blocks(int n, const double *G, const double *c, const double *mu,
                                                          double *lambda, const sim_solver_params *p,
                                                          sim_solver_stats *st, double *v)
{
    return sweeps_model(n, G, c, mu, lambda, p, st, v, 1, 1);
}

/* ------------------------------------------------------------------------------------------------ */
/* Joint limits eliminated from the sweeps.                                                          */
/*
 * A joint-limit row (a frictionless block with empty tangent rows) is stiffly coupled to its leg's contacts: the
 * limit impulse and the foot's impulse act through the same links, and per-block Gauss-Seidel converges slowly on
 * such pairs, each block undoing the other's impulse.  The sweeps therefore solve the contacts with the limits of an
 * active set A held closed exactly (v_A = 0), i.e. on the Schur complement of G_AA:
 *     G' = G_CC - G_CA G_AA^-1 G_AC,   c' = c_C - G_CA G_AA^-1 c_A,   lambda_A = -G_AA^-1 (c_A + G_AC lambda_C),
 * C the other blocks (contacts, bounded rows).  The contacts' velocities on the reduced problem are exactly their
 * velocities in the whole one, so the reduced solution meets the contacts' conditions of the whole problem; the
 * limits' conditions (lambda_A >= 0; v_r >= 0 for the limits not in A) are checked afterwards, and A is corrected
 * (limits pulling released, violated limits closed) for at most limit_rounds rounds, each warm-started from the last.
 * A starts from the limits the warm start pushes or that it leaves closing.  When the rounds do not settle (or A's
 * block is singular, or the problem is too large for G' on the stack) the limits are swept as blocks of their own
 * from the current iterate, as without the elimination.  At the answer the conditions of every block hold to the
 * same tolerance, whichever way it was reached. */
#define ELIM_MAX_BLOCKS 24 /* the other blocks of a problem reduced this way (G' lives on the stack) */
#define ELIM_MAX_LIMITS 12

static inline int block_is_limit(int N, const double *G, int i, double mu)
{
    const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
    return !sim_block_is_box(mu) && mu < SIM_MU_FRICTIONLESS && Gi[0] == 0 && Gi[N + 1] == 0 && Gi[2 * N + 2] > 0;
}

/* One round on the active set act[0..k-1] (limit blocks): the reduced problem on the nc blocks cb[], solved by
 * `blocks` from lambda's current values, then lambda_A; the cb blocks' rows of v are set (their velocities in the
 * reduced problem are those of the whole one), the limits' rows are not.  Returns the reduced solve's code, or -1
 * when G_AA is not positive definite. */
static int limits_round(sim_solver_sweeps_fn blocks, int n, const double *G, const double *c, const double *mu,
                        double *lambda, double *v, const sim_solver_params *p, sim_solver_stats *st, const int *cb,
                        int nc, const int *act, int k)
{
    const int N = 3 * n, M = 3 * nc;
    double L[ELIM_MAX_LIMITS * ELIM_MAX_LIMITS], W[ELIM_MAX_LIMITS * 3 * ELIM_MAX_BLOCKS], wc[ELIM_MAX_LIMITS];
    double Gr[9 * ELIM_MAX_BLOCKS * ELIM_MAX_BLOCKS], cr[3 * ELIM_MAX_BLOCKS], mur[ELIM_MAX_BLOCKS];
    double lr[3 * ELIM_MAX_BLOCKS], vr[3 * ELIM_MAX_BLOCKS];
    int row[3 * ELIM_MAX_BLOCKS];
    for (int b = 0; b < nc; b++) {
        for (int a = 0; a < 3; a++) row[3 * b + a] = 3 * cb[b] + a;
        mur[b] = mu[cb[b]];
    }
    double dmax = 0;
    for (int x = 0; x < k; x++) {
        for (int y = 0; y < k; y++) L[x * k + y] = G[(size_t)(3 * act[x] + 2) * N + 3 * act[y] + 2];
        dmax = fmax(dmax, L[x * k + x]);
    }
    if (k > 0 && !(sim_chol_dense(L, k) > 1e-14 * dmax)) return -1; /* dependent limit rows */
    /* W = G_AA^-1 G_AC (column by column of G_AC), wc = G_AA^-1 c_A */
    for (int x = 0; x < k; x++) wc[x] = c[3 * act[x] + 2];
    if (k > 0) sim_chol_solve(L, k, wc);
    for (int q = 0; q < M; q++) {
        double col[ELIM_MAX_LIMITS];
        for (int x = 0; x < k; x++) col[x] = G[(size_t)(3 * act[x] + 2) * N + row[q]];
        if (k > 0) sim_chol_solve(L, k, col);
        for (int x = 0; x < k; x++) W[x * M + q] = col[x];
    }
    for (int a = 0; a < M; a++) {
        const double *Ga = G + (size_t)row[a] * N;
        double ga[ELIM_MAX_LIMITS]; /* G[row a, A] */
        for (int x = 0; x < k; x++) ga[x] = Ga[3 * act[x] + 2];
        double ca = c[row[a]];
        for (int x = 0; x < k; x++) ca -= ga[x] * wc[x];
        cr[a] = ca;
        lr[a] = lambda[row[a]];
        for (int b = a; b < M; b++) { /* the upper triangle, mirrored: G' symmetric to the last bit */
            double g = Ga[row[b]];
            for (int x = 0; x < k; x++) g -= ga[x] * W[x * M + b];
            Gr[a * M + b] = Gr[b * M + a] = g;
        }
    }
    sim_contact_velocity(nc, Gr, cr, lr, vr);
    const int r = blocks(nc, Gr, cr, mur, lr, p, st, vr);
    for (int a = 0; a < M; a++) lambda[row[a]] = lr[a], v[row[a]] = vr[a];
    for (int x = 0; x < k; x++) {
        double s = wc[x];
        for (int a = 0; a < M; a++) s += W[x * M + a] * lr[a];
        lambda[3 * act[x] + 2] = -s;
    }
    return r;
}

/* The sweeps of `blocks` with the joint limits eliminated (above); v = G lambda + c on entry and on return. */
static int sweeps_limits(sim_solver_sweeps_fn blocks, int n, const double *G, const double *c, const double *mu,
                         double *lambda, const sim_solver_params *p, sim_solver_stats *st, double *v, int coulomb)
{
    const int N = 3 * n;
    int cb[ELIM_MAX_BLOCKS], lim[ELIM_MAX_LIMITS], act[ELIM_MAX_LIMITS];
    int nc = 0, nl = 0, k = 0;
    for (int i = 0; i < n; i++) {
        if (block_is_limit(N, G, i, mu[i])) {
            if (nl == ELIM_MAX_LIMITS) return blocks(n, G, c, mu, lambda, p, st, v);
            lim[nl++] = i;
        } else {
            if (nc == ELIM_MAX_BLOCKS) return blocks(n, G, c, mu, lambda, p, st, v);
            cb[nc++] = i;
        }
    }
    if (nl == 0 || nc == 0 || p->limit_rounds <= 0) return blocks(n, G, c, mu, lambda, p, st, v);
    for (int x = 0; x < nl; x++)
        if (lambda[3 * lim[x] + 2] > 0 || v[3 * lim[x] + 2] < 0) act[k++] = lim[x];
    int sweeps = 0, r = SIM_SOLVER_MAXITER;
    for (int round = 0; round < p->limit_rounds; round++) {
        for (int x = 0; x < nl; x++) lambda[3 * lim[x] + 2] = 0;
        r = limits_round(blocks, n, G, c, mu, lambda, v, p, st, cb, nc, act, k);
        if (r < 0) break;
        sweeps += st->iterations;
        for (int x = 0; x < nl; x++) { /* the limits' velocities (v_A = 0 up to rounding) */
            const int rr = 3 * lim[x] + 2;
            const double *Gr = G + (size_t)rr * N;
            double s = c[rr];
            for (int a = 0; a < N; a++) s = sim_fma(Gr[a], lambda[a], s);
            v[rr] = s;
        }
        if (r == SIM_SOLVER_STALLED) { /* the whole problem goes to the fallbacks, from this iterate */
            st->iterations = sweeps;
            return r;
        }
        /* the active set's corrections: release the limits that pull, close the open ones that are violated */
        int nk = 0, changed = 0;
        for (int x = 0; x < nl; x++) {
            const int i = lim[x];
            int in = 0;
            for (int y = 0; y < k; y++) in |= act[y] == i;
            const int keep = in ? lambda[3 * i + 2] >= 0 : v[3 * i + 2] < 0 && !(sim_contact_error_model(
                G + (size_t)(3 * i) * N + 3 * i, N, v + 3 * i, lambda + 3 * i, mu[i], coulomb) < 0.5 * p->tol);
            if (keep) act[nk++] = i;
            changed |= keep != in;
        }
        if (!changed) {
            const double err = sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb);
            if (!(err < p->tol) && r == SIM_SOLVER_OK) break; /* rounding left a block above tol: sweep it all */
            sim_solver_count_modes(n, mu, lambda, st);
            if (!(err < p->tol)) { /* the reduced sweeps ended unconverged (their guard applied there) */
                const double s = sim_solver_dissipation_guard(N, G, c, lambda, v);
                if (s != 1.0) st->guard_scale = s;
            }
            const int re = sim_solver_end(st, sweeps, sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb), p->tol);
            st->answer = st->converged ? (coulomb ? SIM_ANSWER_COULOMB : SIM_ANSWER_OWN) : SIM_ANSWER_NONE;
            return re;
        }
        k = nk;
    }
    /* not settled: every block swept on its own, from the current iterate */
    sim_contact_velocity(n, G, c, lambda, v);
    r = blocks(n, G, c, mu, lambda, p, st, v);
    st->iterations += sweeps;
    return r;
}

static __attribute__((noinline)) int bisection_sweeps(int n, const double *G, const double *c, const double *mu,
                                                      double *lambda, const sim_solver_params *p,
                                                      sim_solver_stats *st, double *v)
{
    return sweeps_limits(bisection_blocks, n, G, c, mu, lambda, p, st, v, 0);
}

/* Algorithm 2 with Coulomb per-contact solves; out of line (see sweeps_model). */
static __attribute__((noinline)) int coulomb_sweeps(int n, const double *G, const double *c, const double *mu,
                                                    double *lambda, const sim_solver_params *p,
                                                    sim_solver_stats *st, double *v)
{
    return sweeps_limits(coulomb_blocks, n, G, c, mu, lambda, p, st, v, 1);
}

int sim_solver_coulomb_sweeps_stall(int n, const double *G, const double *c, const double *mu, double *lambda,
                                    const sim_solver_params *p, sim_solver_stats *st, double *v)
{
    return sweeps_limits(coulomb_stall_blocks, n, G, c, mu, lambda, p, st, v, 1);
}

/* PGS on a valid problem with n > 0; v = G lambda + c on entry.  Out of line (see sweeps_model). */
static __attribute__((noinline)) int pgs_sweeps(int n, const double *G, const double *c, const double *mu,
                                                double *lambda, const sim_solver_params *p, sim_solver_stats *st,
                                                double *v)
{
    const int N = 3 * n;
    double rz[SIM_SOLVER_MAX_CONTACTS], rt[SIM_SOLVER_MAX_CONTACTS];
    for (int i = 0; i < n; i++) {
        const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
        double gzz = Gi[2 * N + 2], gt = fmax(Gi[0], Gi[N + 1]);
        rz[i] = gzz > 0 ? p->pgs_alpha / gzz : 0.0; /* eq. 18 */
        rt[i] = gt > 0 ? p->pgs_alpha / gt : 0.0;
    }

    double err = INFINITY;
    int it = 0;
    while (it < p->max_iter) {
        it++;
        err = 0;
        for (int i = 0; i < n; i++) {
            double *l = lambda + 3 * i;
            const double *vi = v + 3 * i;
            const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
            double m = mu[i] > SIM_MU_MAX ? SIM_MU_MAX : mu[i];
            if (sim_block_is_box(m)) { /* a bounded row: the same step on row n, prox = clamp to [-b, b] */
                const double b = sim_block_box_bound(m);
                double ln = l[2] - rz[i] * vi[2];
                ln = ln > b ? b : ln < -b ? -b : ln;
                const double delta[3] = {0, 0, ln - l[2]};
                l[2] = ln;
                if (delta[2] != 0) {
                    sim_solver_add_column_block(N, G, i, delta, v);
                    err += fabs(delta[2]);
                }
                continue;
            }
            /* eq. 17, normal: prox_z = max(0, .) */
            double ln = fmax(0.0, l[2] - rz[i] * vi[2]);
            double dn = ln - l[2];
            /* tangential, with the tangential velocity updated by this normal change (Gauss-Seidel) */
            double vx = vi[0] + Gi[2] * dn, vy = vi[1] + Gi[N + 2] * dn;
            double tx = l[0] - rt[i] * vx, ty = l[1] - rt[i] * vy;
            double tn = sqrt(tx * tx + ty * ty), lim = m * ln;
            if (tn > lim) { /* prox_T: Euclidean projection onto the disc of radius mu lambda_n */
                double s = tn > 0 ? lim / tn : 0.0;
                tx *= s;
                ty *= s;
            }
            double delta[3] = {tx - l[0], ty - l[1], dn};
            l[0] = tx, l[1] = ty, l[2] = ln;
            if (delta[0] != 0 || delta[1] != 0 || delta[2] != 0) {
                sim_solver_add_column_block(N, G, i, delta, v);
                err += sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]);
            }
        }
        for (int i = 0; i < n; i++) /* a bounded row: its complementarity violation instead of penetration */
            err += sim_block_is_box(mu[i]) ? sim_box_complementarity(lambda[3 * i + 2], v[3 * i + 2], -mu[i])
                                           : fmax(0.0, -v[3 * i + 2]);
        if (err < p->tol) break;
    }
    if (!(err < p->tol)) st->guard_scale = sim_solver_dissipation_guard(N, G, c, lambda, v);
    sim_solver_count_modes(n, mu, lambda, st);
    const int r = sim_solver_end(st, it, err, p->tol);
    st->answer = st->converged ? SIM_ANSWER_OWN : SIM_ANSWER_NONE; /* its own measure: the impulse change */
    return r;
}

/* The entry shared by the multi-contact solvers (sim_solver_internal.h): defaults, validation, the initial
 * contact velocity, then the solver's iterations: sweeps_tree(..., tree) when it is given, else sweeps(...). */
static inline int solver_run(sim_solver_sweeps_fn sweeps, sim_solver_sweeps_tree_fn sweeps_tree, int n,
                             const double *G, const double *c, const double *mu, double *lambda,
                             const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree)
{
    sim_solver_params def;
    sim_solver_stats st_local;
    if (!st) st = &st_local;
    int go = solve_begin(n, G, c, mu, lambda, &p, &def, st);
    if (go != 1) return go;
    sim_solver_clear_empty_tangents(n, G, mu, lambda);
    double v[3 * SIM_SOLVER_MAX_CONTACTS];
    sim_contact_velocity(n, G, c, lambda, v);
    return sweeps_tree ? sweeps_tree(n, G, c, mu, lambda, p, st, v, tree) : sweeps(n, G, c, mu, lambda, p, st, v);
}

int sim_solver_run(sim_solver_sweeps_fn sweeps, int n, const double *G, const double *c, const double *mu,
                   double *lambda, const sim_solver_params *p, sim_solver_stats *st)
{
    return solver_run(sweeps, NULL, n, G, c, mu, lambda, p, st, NULL);
}

int sim_solver_run_tree(sim_solver_sweeps_tree_fn sweeps, int n, const double *G, const double *c, const double *mu,
                        double *lambda, const sim_solver_params *p, sim_solver_stats *st, const sim_solver_tree *tree)
{
    return solver_run(NULL, sweeps, n, G, c, mu, lambda, p, st, tree);
}

int sim_solve_bisection(int n, const double *G, const double *c, const double *mu, double *lambda,
                        const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(bisection_sweeps, n, G, c, mu, lambda, p, st);
}

int sim_solve_coulomb_bisection(int n, const double *G, const double *c, const double *mu, double *lambda,
                                const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(coulomb_sweeps, n, G, c, mu, lambda, p, st);
}

int sim_solve_pgs_hwangbo(int n, const double *G, const double *c, const double *mu, double *lambda,
                          const sim_solver_params *p, sim_solver_stats *st)
{
    return sim_solver_run(pgs_sweeps, n, G, c, mu, lambda, p, st);
}

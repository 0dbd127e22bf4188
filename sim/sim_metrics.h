/* sim_metrics.h — how good a candidate solution of a contact problem is (pure: no model, no allocation).
 *
 * The contact problem (G, c, mu, lambda) is the one defined in sim_solver.h: n contacts, frames (t_x, t_y, n)
 * with the normal last, G the 3n x 3n Delassus matrix (1/kg), c the free contact velocity (m/s), mu the
 * friction coefficients, lambda the impulses (N·s), and v = G lambda + c the resulting contact velocity.
 * All arrays are owned by the caller and only read.
 *
 * The block kinds of sim_solver.h and how every measure here reads them:
 *   contact (mu >= 0): as stated with each measure.  A joint limit (mu = 0, empty tangent rows) is a frictionless
 *     contact, so every measure reduces on it to Signorini on row n (plus |lambda_T|, which must be 0).
 *   bounded bilateral row (mu < 0, b = -mu): the box violation max(0, |lambda_n| - b) plus the complementarity
 *     violation, the smallest of the violations of its three modes (as the friction term takes the smaller of
 *     stick and slip):  interior |v_n|;  at +b (b - lambda_n)^+ + max(0, v_n);  at -b (lambda_n + b)^+ + max(0, -v_n)
 *     (so |v_n| strictly inside, max(0, v_n) at lambda_n = b, max(0, -v_n) at lambda_n = -b, and continuous in
 *     lambda_n: an iterate converging to a bound from inside is measured by its distance to it), plus |lambda_T|.
 *     Zero exactly at the minimizer of 1/2 l.G l + c.l over the box, in N·s | m/s like the rest (sim_box_error).
 */
#ifndef HERD_SIM_METRICS_H
#define HERD_SIM_METRICS_H

#include "sim_limits.h"

#include <math.h>
#include <stddef.h>

/* Contact-physics metrics (Le Lidec et al. 2023, "Contact models in robotics: a comparative analysis",
 * Sec. III), with v = G lambda + c and, per contact, the De Saxcé correction Gamma(v) = (0, 0, mu |v_T|).
 * Following that paper they are evaluated on forces: f = lambda / dt (N) and w = (v + Gamma(v)) / dt
 * (m/s^2), i.e. the problem rescaled by 1/dt.  Pass dt = 1 to get them on impulses and velocities.
 *   eps_p = max_i dist(f_i, K_mu)          primal feasibility (Euclidean distance to the cone), N
 *   eps_d = max_i dist(w_i, K*_mu)         dual feasibility, K* = K_{1/mu} = { |x_T| <= x_n / mu }, m/s^2
 *   eps_c = max_i |<f_i, w_i>|             complementarity, N·m/s^2
 *   eps_abs = max(eps_p, eps_d, eps_c)
 *   signorini = max_i ( lambda_n > 0 ? |v_n| : max(0, -v_n) )   normal-velocity violation, m/s (not scaled)
 *   model_error = sim_contact_model_error (the bisection solver's exact violation, N·s + m/s, not scaled)
 */
typedef struct sim_contact_metrics_t {
    double eps_p, eps_d, eps_c, eps_abs;
    double signorini;
    double model_error;
} sim_contact_metrics_t;

/* 1 if the problem is well formed: 0 <= n <= SIM_SOLVER_MAX_CONTACTS, no NULL array when n > 0, every number
 * finite (mu of either sign: mu < 0 is a bounded bilateral row); else 0. */
int sim_contact_problem_valid(int n, const double *G, const double *c, const double *mu, const double *lambda);
/* 1 if x[0..len) are all finite (no NaN or infinity), else 0; len >= 0. */
int sim_all_finite(const double *x, int len);

/* v = G lambda + c (3n, m/s). */
void sim_contact_velocity(int n, const double *G, const double *c, const double *lambda, double *v);

/* max(0, x) and fmin(a, b) as fmax / fmin compute them, NaN rules included (fmax(0, NaN) = 0; fmin returns the
 * other argument when one is NaN), but inline: gcc calls libm for fmax / fmin unless math is finite-only, and the
 * calls sit in the solvers' every-sweep termination test. */
static inline double sim_max0_(double x) { return x > 0.0 ? x : 0.0; }
static inline double sim_fmin_(double a, double b) { return (b < a || a != a) ? b : a; }

/* The complementarity violation of a bounded bilateral row (above, the smallest of its three modes'): lambda_n ln
 * (N·s), its velocity vn (m/s), bound b >= 0 (N·s). */
static inline double sim_box_complementarity(double ln, double vn, double b)
{
    const double up = sim_max0_(b - ln) + sim_max0_(vn), lo = sim_max0_(ln + b) + sim_max0_(-vn);
    return sim_fmin_(fabs(vn), sim_fmin_(up, lo));
}
/* Its box violation plus its complementarity violation: zero exactly when |ln| <= b and (vn = 0, or ln = b and
 * vn <= 0, or ln = -b and vn >= 0). */
static inline double sim_box_error(double ln, double vn, double b)
{
    return sim_max0_(fabs(ln) - b) + sim_box_complementarity(ln, vn, b);
}

/* The exact violation of sim_solver.h for one contact: Gi = its 3x3 diagonal block of G with leading
 * dimension ld (G + 3i (3n) + 3i), v its contact velocity (m/s), l its impulse (N·s), mu its kind (a bounded
 * bilateral row when mu < 0: sim_box_error plus |lambda_T|).  Inline
 * (with the sum below) because the bisection solver's termination test runs it every sweep. */
static inline double sim_contact_error_model(const double *Gi, int ld, const double v[3], const double l[3],
                                             double mu, int coulomb);
static inline double sim_contact_error(const double *Gi, int ld, const double v[3], const double l[3], double mu)
{
    return sim_contact_error_model(Gi, ld, v, l, mu, 0);
}

/* The same for either model: coulomb = 0 the paper's model (s = the ellipse normal), 1 Coulomb's law (s = lambda_T:
 * the slip must oppose the friction impulse itself). */
static inline double sim_contact_error_model(const double *Gi, int ld, const double v[3], const double l[3],
                                             double mu, int coulomb)
{
    if (sim_block_is_box(mu))
        return sim_box_error(l[2], v[2], sim_block_box_bound(mu)) + sqrt(l[0] * l[0] + l[1] * l[1]);
    if (mu > SIM_MU_MAX) mu = SIM_MU_MAX;
    const double lt = sqrt(l[0] * l[0] + l[1] * l[1]);
    const double ln = l[2], vn = v[2];
    double e = sim_max0_(lt - mu * ln) + sim_max0_(-ln);
    e += sim_max0_(-vn) + sim_max0_(sim_fmin_(ln, vn));
    if (vn <= ln) {
        if (mu >= SIM_MU_FRICTIONLESS) {
            const double vt = sqrt(v[0] * v[0] + v[1] * v[1]);
            const double gap = sim_max0_(mu * ln - lt);
            if (gap >= vt) { /* min(vt, gap + mis) = vt, as mis >= 0: a sticking contact's usual case, without the
                                misdirection's root and division (the same value as below) */
                e += vt;
                return e;
            }
            const double gnn = Gi[2 * ld + 2];
            const double w = coulomb ? 0.0 : gnn > 0 ? mu * mu * ln / gnn : 0.0;
            const double sx = l[0] + w * Gi[2 * ld], sy = l[1] + w * Gi[2 * ld + 1];
            const double sn = sqrt(sx * sx + sy * sy);
            /* misdirection of the slip: sin(angle between v_T and -s), 1 if v_T does not point against s,
               weighted by min(|v_T|, |lambda_T|) so that it is linear in the errors of both */
            double mis = 1.0;
            if (sn > 0 && vt > 0) {
                double along = -(v[0] * sx + v[1] * sy); /* |v_T| |s| cos */
                if (along > 0) mis = fabs(v[0] * sy - v[1] * sx) / (vt * sn);
            }
            mis *= sim_fmin_(vt, lt);
            e += sim_fmin_(vt, gap + mis);
        }
    } else {
        e += lt;
    }
    return e;
}

/* The exact violation of sim_solver.h summed over the n contacts, given the contact velocity
 * v = G lambda + c already computed; no validation.  The one place the violation is summed (the solvers'
 * termination test and sim_contact_model_error / sim_contact_metrics). */
static inline double sim_contact_error_sum_model(int n, const double *G, const double *v, const double *mu,
                                                 const double *lambda, int coulomb)
{
    const int N = 3 * n;
    double e = 0;
    for (int i = 0; i < n; i++)
        e += sim_contact_error_model(G + (size_t)(3 * i) * N + 3 * i, N, v + 3 * i, lambda + 3 * i, mu[i], coulomb);
    return e;
}
static inline double sim_contact_error_sum(int n, const double *G, const double *v, const double *mu,
                                           const double *lambda)
{
    return sim_contact_error_sum_model(n, G, v, mu, lambda, 0);
}

/* The exact violation defined in sim_solver.h (sum over contacts), for any lambda; NaN for an invalid problem. */
double sim_contact_model_error(int n, const double *G, const double *c, const double *mu, const double *lambda);

/* The same violation with Coulomb's sliding law (s = lambda_T): zero exactly at a Coulomb NCP solution. */
double sim_contact_coulomb_error(int n, const double *G, const double *c, const double *mu, const double *lambda);

/* Metrics of a candidate solution lambda (see sim_contact_metrics_t); dt in seconds (dt <= 0 acts as 1).
 * n out of range or NULL arguments give all metrics = NaN. */
void sim_contact_metrics(int n, const double *G, const double *c, const double *mu, const double *lambda,
                         double dt, sim_contact_metrics_t *out);

/* eps_abs of lambda given its contact velocity v = G lambda + c (no validation; dt = 1: impulses and velocities):
 * desaxce = 1 the NCP criterion above (Coulomb), 0 the CCP criterion (Gamma left out, Le Lidec et al. Sec. III-C).
 * A bounded bilateral row (mu < 0) enters eps_p with its box violation max(0, |f_n| - b / dt) + |f_T| and eps_d
 * with its complementarity violation (sim_box_complementarity of f_n, w_n and b / dt); eps_c and the
 * signorini metric leave it out (its complementarity is already in eps_d; it has no unilateral condition). */
double sim_contact_eps_abs(int n, const double *v, const double *mu, const double *lambda, int desaxce);

/* Euclidean projection of x = (x_T, x_n) onto the second-order cone { |x_T| <= mu x_n } (closed form).
 * mu = INFINITY is the half-space x_n >= 0. Returns the distance |x - out|.  out may alias x. */
double sim_cone_project(const double x[3], double mu, double out[3]);

/* The projection of sim_cone_project without the distance, inline (ADMM projects every contact every iteration);
 * the same expressions, so the same result.  The cone is { a |x_T| <= b x_n } with (a, b) = (1, mu) for mu <= 1,
 * else (1 / mu, 1) (no 1/0 or inf * 0); inside (a |x_T| <= b x_n and x_n >= 0), x stays; in the polar cone, the
 * apex; else
 * k (b e_T, a), k = (b t + a s) / (a^2 + b^2), t = |x_T|, s = x_n.  out may alias x. */
static inline void sim_cone_project_point(const double x[3], double mu, double out[3])
{
    const double a = mu <= 1 ? 1.0 : 1.0 / mu, b = mu <= 1 ? mu : 1.0;
    const double x0 = x[0], x1 = x[1], s = x[2];
    const double t = sqrt(x0 * x0 + x1 * x1);
    if (a * t <= b * s && s >= 0) { /* (s >= 0 follows from the first test unless b = 0: mu = 0's ray R+ e_n) */
        out[0] = x0, out[1] = x1, out[2] = s;
        return;
    }
    if (b * t <= -a * s) {
        out[0] = out[1] = out[2] = 0.0;
        return;
    }
    const double k = (b * t + a * s) / (a * a + b * b);
    const double ex = t > 0 ? x0 / t : 0.0, ey = t > 0 ? x1 / t : 0.0;
    out[0] = k * b * ex;
    out[1] = k * b * ey;
    out[2] = k * a;
}

#endif

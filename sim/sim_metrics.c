/* sim_metrics.c — the exact violation of the per-contact model and the contact metrics of Le Lidec et al.
 * 2023 (cone projections).  See sim_metrics.h. */
#include "sim_metrics.h"
#include "sim_spatial.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* x * 0 is 0 for a finite x and NaN for an infinite or NaN one, and a sum with a NaN term is NaN: four independent
 * sums (no dependent add chain over G's N^2 entries, which this test runs before every solve), and unlike a plain
 * sum of the entries no finite array is refused by an overflow. */
int sim_all_finite(const double *x, int len)
{
    const sim_v4d_ zero = {0, 0, 0, 0};
    sim_v4d_ s = zero;
    int i = 0;
    for (; i + 4 <= len; i += 4) {
        sim_v4d_ xi;
        memcpy(&xi, x + i, sizeof xi);
        s = sim_fma4(xi, zero, s);
    }
    double t = (s[0] + s[1]) + (s[2] + s[3]);
    for (; i < len; i++) t = sim_fma(x[i], 0.0, t);
    return t == 0.0;
}

int sim_contact_problem_valid(int n, const double *G, const double *c, const double *mu, const double *lambda)
{
    if (n < 0 || n > SIM_SOLVER_MAX_CONTACTS) return 0;
    if (n == 0) return 1;
    if (!G || !c || !mu || !lambda) return 0;
    const int N = 3 * n;
    for (int i = 0; i < n; i++)
        if (!isfinite(mu[i])) return 0;
    return sim_all_finite(G, N * N) && sim_all_finite(c, N) && sim_all_finite(lambda, N);
}

void sim_contact_velocity(int n, const double *G, const double *c, const double *lambda, double *v)
{
    const int N = 3 * n;
    for (int r = 0; r < N; r++) {
        const double *row = G + (size_t)r * N;
        double s = c[r];
        for (int k = 0; k < N; k++) s += row[k] * lambda[k];
        v[r] = s;
    }
}

/* The cone { a |x_T| <= b x_n } (a, b >= 0, not both 0) in the half-plane (t = |x_T|, s = x_n):
 * returns the projection's coordinates along (b e_T, a) as the factor k (projection = k (b e_T, a)),
 * and the distance. */
static double cone_ab(double t, double s, double a, double b, double *k)
{
    if (a * t <= b * s && s >= 0) { /* inside (s >= 0 follows unless b = 0: the ray of mu = 0) */
        *k = NAN;
        return 0.0;
    }
    if (b * t <= -a * s) { /* in the polar cone: projects to the apex */
        *k = 0.0;
        return sqrt(t * t + s * s);
    }
    double nn = a * a + b * b;
    *k = (b * t + a * s) / nn;
    return (a * t - b * s) / sqrt(nn);
}

/* (a, b) of K_mu = { |x_T| <= mu x_n } without forming 1/0 or inf*0. */
static void cone_primal(double mu, double *a, double *b)
{
    if (mu <= 1) *a = 1, *b = mu;
    else *a = 1.0 / mu, *b = 1; /* mu = inf: the half-space x_n >= 0 */
}

/* (a, b) of the dual K*_mu = K_{1/mu} = { mu |x_T| <= x_n }. */
static void cone_dual(double mu, double *a, double *b)
{
    if (mu <= 1) *a = mu, *b = 1;
    else *a = 1, *b = 1.0 / mu;
}

/* eps_p, eps_d, eps_c (maxima over contacts) of lambda with velocity v, both rescaled by h; desaxce = 1 adds
 * De Saxce's Gamma(v) = (0, 0, mu |v_T|) to the velocity (NCP), 0 leaves it out (CCP). */
static void eps_terms(int n, const double *v, const double *mu, const double *lambda, double h, int desaxce,
                      double *ep, double *ed, double *ec)
{
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        double m = mu[i], a, b, k;
        if (sim_block_is_box(m)) { /* a bounded bilateral row: its box, and its mode-wise complementarity */
            const double bh = sim_block_box_bound(m) * h, fn = l[2] * h, wn = vi[2] * h;
            *ep = fmax(*ep, sim_max0_(fabs(fn) - bh) + sqrt(l[0] * l[0] + l[1] * l[1]) * h);
            *ed = fmax(*ed, sim_box_complementarity(fn, wn, bh));
            continue;
        }
        /* forces and De Saxcé-corrected velocities, rescaled by 1/dt */
        double f[3] = {l[0] * h, l[1] * h, l[2] * h};
        double vt = desaxce ? sqrt(vi[0] * vi[0] + vi[1] * vi[1]) : 0.0;
        double w[3] = {vi[0] * h, vi[1] * h, (vi[2] + (m > SIM_MU_MAX ? SIM_MU_MAX : m) * vt) * h};
        cone_primal(m, &a, &b);
        *ep = fmax(*ep, cone_ab(sqrt(f[0] * f[0] + f[1] * f[1]), f[2], a, b, &k));
        cone_dual(m, &a, &b);
        *ed = fmax(*ed, cone_ab(sqrt(w[0] * w[0] + w[1] * w[1]), w[2], a, b, &k));
        *ec = fmax(*ec, fabs(f[0] * w[0] + f[1] * w[1] + f[2] * w[2]));
    }
}

double sim_contact_eps_abs(int n, const double *v, const double *mu, const double *lambda, int desaxce)
{
    double ep = 0, ed = 0, ec = 0;
    eps_terms(n, v, mu, lambda, 1.0, desaxce, &ep, &ed, &ec);
    return fmax(ep, fmax(ed, ec));
}

double sim_cone_project(const double x[3], double mu, double out[3])
{
    double a, b, k;
    cone_primal(mu, &a, &b);
    const double dist = cone_ab(sqrt(x[0] * x[0] + x[1] * x[1]), x[2], a, b, &k);
    sim_cone_project_point(x, mu, out); /* (after the distance: out may alias x) */
    return dist;
}

static double model_error(int n, const double *G, const double *c, const double *mu, const double *lambda,
                          int coulomb)
{
    if (!sim_contact_problem_valid(n, G, c, mu, lambda)) return NAN;
    double v[3 * SIM_SOLVER_MAX_CONTACTS];
    sim_contact_velocity(n, G, c, lambda, v);
    return sim_contact_error_sum_model(n, G, v, mu, lambda, coulomb);
}

double sim_contact_model_error(int n, const double *G, const double *c, const double *mu, const double *lambda)
{
    return model_error(n, G, c, mu, lambda, 0);
}

double sim_contact_coulomb_error(int n, const double *G, const double *c, const double *mu, const double *lambda)
{
    return model_error(n, G, c, mu, lambda, 1);
}

void sim_contact_metrics(int n, const double *G, const double *c, const double *mu, const double *lambda,
                         double dt, sim_contact_metrics_t *out)
{
    if (!out) return;
    if (!sim_contact_problem_valid(n, G, c, mu, lambda)) {
        out->eps_p = out->eps_d = out->eps_c = out->eps_abs = out->signorini = out->model_error = NAN;
        return;
    }
    const double h = dt > 0 ? 1.0 / dt : 1.0;
    double v[3 * SIM_SOLVER_MAX_CONTACTS] = {0}; /* written for 3n rows below (gcc cannot prove n bounded) */
    sim_contact_velocity(n, G, c, lambda, v);
    double ep = 0, ed = 0, ec = 0, sig = 0;
    eps_terms(n, v, mu, lambda, h, 1, &ep, &ed, &ec);
    for (int i = 0; i < n; i++) {
        const double *l = lambda + 3 * i, *vi = v + 3 * i;
        if (!sim_block_is_box(mu[i])) sig = fmax(sig, l[2] > 0 ? fabs(vi[2]) : fmax(0.0, -vi[2]));
    }
    out->eps_p = ep;
    out->eps_d = ed;
    out->eps_c = ec;
    out->eps_abs = fmax(ep, fmax(ed, ec));
    out->signorini = sig;
    out->model_error = sim_contact_error_sum(n, G, v, mu, lambda);
}

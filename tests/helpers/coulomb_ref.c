/* coulomb_ref.c — see coulomb_ref.h.  Deliberately simple and slow: long double, finite differences, every mode
 * set in turn. */
#include "coulomb_ref.h"

#include <math.h>
#include <string.h>

typedef long double ld;

enum { R_OPEN, R_STICK, R_SLIP, R_CLOSED, R_BOX_IN, R_BOX_HI, R_BOX_LO };

#define RN (3 * COULOMB_REF_MAX)
#define VN (3 * COULOMB_REF_VIOLATION_MAX)

static int is_box(double mu) { return mu < 0; }
static int is_frictionless(double mu) { return mu >= 0 && mu < 1e-9; }

static void velocity(int n, const double *G, const double *c, const ld *l, ld *v)
{
    const int N = 3 * n;
    for (int r = 0; r < N; r++) {
        ld s = c[r];
        for (int k = 0; k < N; k++) s += (ld)G[r * N + k] * l[k];
        v[r] = s;
    }
}

/* x -> lambda for a mode set; returns the number of unknowns. */
static int unpack(int n, const double *mu, const int *mode, const ld *x, ld *l)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        ld *li = l + 3 * i;
        li[0] = li[1] = li[2] = 0;
        switch (mode[i]) {
        case R_STICK: li[0] = x[k], li[1] = x[k + 1], li[2] = x[k + 2], k += 3; break;
        case R_SLIP:
            li[2] = x[k];
            li[0] = (ld)mu[i] * x[k] * cosl(x[k + 1]);
            li[1] = (ld)mu[i] * x[k] * sinl(x[k + 1]);
            k += 2;
            break;
        case R_CLOSED:
        case R_BOX_IN: li[2] = x[k++]; break;
        case R_BOX_HI: li[2] = -(ld)mu[i]; break;
        case R_BOX_LO: li[2] = (ld)mu[i]; break;
        default: break;
        }
    }
    return k;
}

static void equations(int n, const double *G, const double *c, const double *mu, const int *mode, const ld *x, ld *F)
{
    ld l[RN], v[RN];
    unpack(n, mu, mode, x, l);
    velocity(n, G, c, l, v);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const ld *vi = v + 3 * i;
        switch (mode[i]) {
        case R_STICK: F[k++] = vi[0], F[k++] = vi[1], F[k++] = vi[2]; break;
        case R_SLIP: {
            const int j = k; /* x[j + 1] is the angle: v_T parallel to (cos, sin) */
            F[k++] = vi[2];
            F[k++] = vi[0] * sinl(x[j + 1]) - vi[1] * cosl(x[j + 1]);
            break;
        }
        case R_CLOSED:
        case R_BOX_IN: F[k++] = vi[2]; break;
        default: break;
        }
    }
}

static int lsolve(int m, ld *A, ld *b)
{
    for (int k = 0; k < m; k++) {
        int p = k;
        for (int r = k + 1; r < m; r++)
            if (fabsl(A[r * m + k]) > fabsl(A[p * m + k])) p = r;
        if (!(fabsl(A[p * m + k]) > 0)) return -1;
        if (p != k) {
            for (int j = 0; j < m; j++) {
                ld t = A[k * m + j];
                A[k * m + j] = A[p * m + j], A[p * m + j] = t;
            }
            ld t = b[k];
            b[k] = b[p], b[p] = t;
        }
        for (int r = k + 1; r < m; r++) {
            ld f = A[r * m + k] / A[k * m + k];
            for (int j = k; j < m; j++) A[r * m + j] -= f * A[k * m + j];
            b[r] -= f * b[k];
        }
    }
    for (int k = m - 1; k >= 0; k--) {
        ld s = b[k];
        for (int j = k + 1; j < m; j++) s -= A[k * m + j] * b[j];
        b[k] = s / A[k * m + k];
    }
    return 0;
}

static ld norm2(int m, const ld *F)
{
    ld s = 0;
    for (int a = 0; a < m; a++) s += F[a] * F[a];
    return s;
}

/* Levenberg-Marquardt (tiny damping) with a central-difference Jacobian and backtracking. */
static void solve_modes(int n, const double *G, const double *c, const double *mu, const int *mode, ld *x, int m)
{
    ld F[RN], Ft[RN], J[RN * RN], A[RN * RN], dx[RN], xt[RN], Fp[RN], Fm[RN];
    equations(n, G, c, mu, mode, x, F);
    ld f2 = norm2(m, F);
    for (int it = 0; it < 80 && f2 > 1e-40L; it++) {
        for (int j = 0; j < m; j++) {
            const ld h = 1e-7L * (1 + fabsl(x[j]));
            memcpy(xt, x, sizeof(ld) * (size_t)m);
            xt[j] = x[j] + h;
            equations(n, G, c, mu, mode, xt, Fp);
            xt[j] = x[j] - h;
            equations(n, G, c, mu, mode, xt, Fm);
            for (int r = 0; r < m; r++) J[r * m + j] = (Fp[r] - Fm[r]) / (2 * h);
        }
        ld tr = 0;
        for (int a = 0; a < m; a++) {
            ld s = 0;
            for (int r = 0; r < m; r++) s -= J[r * m + a] * F[r];
            dx[a] = s;
            for (int b = 0; b < m; b++) {
                ld t = 0;
                for (int r = 0; r < m; r++) t += J[r * m + a] * J[r * m + b];
                A[a * m + b] = t;
            }
            tr += A[a * m + a];
        }
        for (int a = 0; a < m; a++) A[a * m + a] += 1e-22L * tr / m;
        if (lsolve(m, A, dx)) return;
        ld t = 1;
        int ok = 0;
        for (int ls = 0; ls < 30; ls++, t *= 0.5L) {
            for (int a = 0; a < m; a++) xt[a] = x[a] + t * dx[a];
            equations(n, G, c, mu, mode, xt, Ft);
            const ld ft2 = norm2(m, Ft);
            if (ft2 < f2) {
                ok = 1;
                memcpy(x, xt, sizeof(ld) * (size_t)m);
                memcpy(F, Ft, sizeof(ld) * (size_t)m);
                f2 = ft2;
                break;
            }
        }
        if (!ok) return;
    }
}

static ld vmax(ld a, ld b) { return a > b ? a : b; }
static ld vmin(ld a, ld b) { return a < b ? a : b; }

static ld violation_ld(int n, const double *G, const double *c, const double *mu, const ld *l)
{
    ld v[VN], worst = 0;
    velocity(n, G, c, l, v);
    for (int i = 0; i < n; i++) {
        const ld *li = l + 3 * i, *vi = v + 3 * i;
        const ld lt = sqrtl(li[0] * li[0] + li[1] * li[1]);
        ld e = 0;
        if (is_box(mu[i])) {
            const ld b = -(ld)mu[i];
            e = vmax(lt, vmax(0, fabsl(li[2]) - b));
            const ld inside = fabsl(vi[2]), up = vmax(0, b - li[2]) + vmax(0, vi[2]), lo = vmax(0, li[2] + b) + vmax(0, -vi[2]);
            e = vmax(e, vmin(inside, vmin(up, lo)));
        } else {
            const ld m = mu[i] > 1e12 ? 1e12L : (ld)mu[i];
            e = vmax(vmax(0, -li[2]), vmax(0, lt - m * li[2]));
            e = vmax(e, vmax(0, -vi[2]));
            e = vmax(e, vmin(vmax(0, li[2]), vmax(0, vi[2])));
            if (li[2] > 0 && vi[2] <= li[2]) { /* closed: the friction law */
                const ld vt = sqrtl(vi[0] * vi[0] + vi[1] * vi[1]);
                if (is_frictionless(mu[i])) {
                    e = vmax(e, lt);
                } else {
                    ld mis = 1; /* sin of the angle between v_T and -lambda_T; 1 unless v_T points against it */
                    if (lt > 0 && vt > 0) {
                        const ld along = -(vi[0] * li[0] + vi[1] * li[1]);
                        if (along > 0) mis = fabsl(vi[0] * li[1] - vi[1] * li[0]) / (vt * lt);
                    }
                    const ld slip = vmax(0, m * li[2] - lt) + vmin(vt, lt) * mis;
                    e = vmax(e, vmin(vt, slip));
                }
            }
        }
        worst = vmax(worst, e);
    }
    return worst;
}

double coulomb_ref_violation(int n, const double *G, const double *c, const double *mu, const double *lambda)
{
    if (n < 0 || n > COULOMB_REF_VIOLATION_MAX) return -1;
    ld l[VN];
    for (int a = 0; a < 3 * n; a++) l[a] = lambda[a];
    return (double)violation_ld(n, G, c, mu, l);
}

int coulomb_ref_solve(int n, const double *G, const double *c, const double *mu, double tol, double *lambda)
{
    if (n < 1 || n > COULOMB_REF_MAX) return -1;
    const int N = 3 * n;
    int nm[COULOMB_REF_MAX], mode[COULOMB_REF_MAX], digit[COULOMB_REF_MAX] = {0};
    static const int contact_modes[] = {R_OPEN, R_STICK, R_SLIP}, limit_modes[] = {R_OPEN, R_CLOSED},
                     box_modes[] = {R_BOX_IN, R_BOX_HI, R_BOX_LO};
    for (int i = 0; i < n; i++) nm[i] = is_box(mu[i]) ? 3 : is_frictionless(mu[i]) ? 2 : 3;
    static const ld shifts[] = {0, 1.5707963267948966L, -1.5707963267948966L, 3.1415926535897932L};
    for (;;) {
        int slips = 0;
        for (int i = 0; i < n; i++) {
            mode[i] = is_box(mu[i]) ? box_modes[digit[i]] : is_frictionless(mu[i]) ? limit_modes[digit[i]] : contact_modes[digit[i]];
            slips += mode[i] == R_SLIP;
        }
        /* the slip directions start from the stick solution of the same closed set (where sticking would need more
           friction than the cone has, sliding goes that way), then from against the free velocity, turned by the
           shifts */
        ld stick_l[RN];
        if (slips) {
            int sm[COULOMB_REF_MAX];
            ld xs[RN];
            int k = 0;
            for (int i = 0; i < n; i++) {
                sm[i] = mode[i] == R_SLIP ? R_STICK : mode[i];
                if (sm[i] == R_STICK) xs[k++] = 0, xs[k++] = 0, xs[k++] = 0;
                else if (sm[i] == R_CLOSED || sm[i] == R_BOX_IN) xs[k++] = 0;
            }
            solve_modes(n, G, c, mu, sm, xs, k);
            unpack(n, mu, sm, xs, stick_l);
        }
        for (int s = 0; s < (slips ? 5 : 1); s++) {
            ld x[RN], l[RN];
            int k = 0;
            for (int i = 0; i < n; i++) {
                const double *Gi = G + (size_t)(3 * i) * N + 3 * i;
                const ld gnn = Gi[2 * N + 2] > 0 ? Gi[2 * N + 2] : 1;
                const ld ln0 = vmax(-(ld)c[3 * i + 2] / gnn, 1e-3L);
                switch (mode[i]) {
                case R_STICK: x[k++] = 0, x[k++] = 0, x[k++] = ln0; break;
                case R_SLIP:
                    if (s == 0) {
                        const ld *ls = stick_l + 3 * i;
                        x[k++] = ls[2] > 0 ? ls[2] : ln0, x[k++] = atan2l(ls[1], ls[0]);
                    } else {
                        x[k++] = ln0, x[k++] = atan2l(-(ld)c[3 * i + 1], -(ld)c[3 * i]) + shifts[s - 1];
                    }
                    break;
                case R_CLOSED:
                case R_BOX_IN: x[k++] = 0; break;
                default: break;
                }
            }
            solve_modes(n, G, c, mu, mode, x, k);
            unpack(n, mu, mode, x, l);
            if (violation_ld(n, G, c, mu, l) <= tol) {
                for (int a = 0; a < N; a++) lambda[a] = (double)l[a];
                return 1;
            }
        }
        int i = 0;
        while (i < n && ++digit[i] == nm[i]) digit[i++] = 0;
        if (i == n) return 0;
    }
}

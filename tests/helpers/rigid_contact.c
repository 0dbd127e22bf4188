/* rigid_contact.c — see rigid_contact.h. */
#include "rigid_contact.h"

#include <math.h>
#include <string.h>

uint64_t rc_next(rc_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rc_uniform(rc_rng *r, double lo, double hi) { return lo + (hi - lo) * ((rc_next(r) >> 11) * 0x1.0p-53); }

double rc_normal(rc_rng *r)
{
    double u1 = rc_uniform(r, 1e-300, 1.0), u2 = rc_uniform(r, 0.0, 1.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void rc_body_contacts(const rc_body *b, int n, const double (*r)[3], const double (*R)[9], double *J, double *G)
{
    const int N = 3 * n;
    for (int i = 0; i < n; i++) {
        /* world-axes rows of the point velocity v - [r]x omega */
        const double *p = r[i];
        const double W[3][6] = {{1, 0, 0, 0, p[2], -p[1]}, {0, 1, 0, -p[2], 0, p[0]}, {0, 0, 1, p[1], -p[0], 0}};
        static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        const double *F = R ? R[i] : I3;
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 6; k++)
                J[(3 * i + a) * 6 + k] = F[3 * a] * W[0][k] + F[3 * a + 1] * W[1][k] + F[3 * a + 2] * W[2][k];
    }
    const double minv[6] = {1 / b->m, 1 / b->m, 1 / b->m, 1 / b->inertia[0], 1 / b->inertia[1], 1 / b->inertia[2]};
    for (int a = 0; a < N; a++)
        for (int c = 0; c < N; c++) {
            double s = 0;
            for (int k = 0; k < 6; k++) s += J[a * 6 + k] * minv[k] * J[c * 6 + k];
            G[a * N + c] = s;
        }
}

void rc_contact_velocity(int n, const double *J, const double u[6], double *c)
{
    for (int a = 0; a < 3 * n; a++) {
        double s = 0;
        for (int k = 0; k < 6; k++) s += J[a * 6 + k] * u[k];
        c[a] = s;
    }
}

void rc_body_apply(const rc_body *b, int n, const double *J, const double *lambda, double u[6])
{
    const double minv[6] = {1 / b->m, 1 / b->m, 1 / b->m, 1 / b->inertia[0], 1 / b->inertia[1], 1 / b->inertia[2]};
    for (int k = 0; k < 6; k++) {
        double s = 0;
        for (int a = 0; a < 3 * n; a++) s += J[a * 6 + k] * lambda[a];
        u[k] += minv[k] * s;
    }
}

double rc_body_kinetic(const rc_body *b, const double u[6])
{
    return 0.5 * (b->m * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) + b->inertia[0] * u[3] * u[3] +
                  b->inertia[1] * u[4] * u[4] + b->inertia[2] * u[5] * u[5]);
}

void rc_random_frame(rc_rng *r, double R[9])
{
    double q[4], s = 0;
    for (int k = 0; k < 4; k++) q[k] = rc_normal(r), s += q[k] * q[k];
    s = 1 / sqrt(s);
    const double w = q[0] * s, x = q[1] * s, y = q[2] * s, z = q[3] * s;
    const double M[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                         2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                         2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
    memcpy(R, M, sizeof M);
}

void rc_random_problem(rc_rng *r, int n, int nv, double *G, double *c)
{
    const int N = 3 * n;
    double J[144 * 48], B[48 * 48], L[48 * 48], X[48];
    for (int i = 0; i < nv * nv; i++) B[i] = rc_normal(r);
    for (int i = 0; i < nv; i++) /* M = B B^T + nv I, then its Cholesky factor L */
        for (int j = 0; j < nv; j++) {
            double s = i == j ? nv : 0.0;
            for (int k = 0; k < nv; k++) s += B[i * nv + k] * B[j * nv + k];
            L[i * nv + j] = s;
        }
    for (int j = 0; j < nv; j++) {
        double s = L[j * nv + j];
        for (int k = 0; k < j; k++) s -= L[j * nv + k] * L[j * nv + k];
        L[j * nv + j] = sqrt(s);
        for (int i = j + 1; i < nv; i++) {
            double t = L[i * nv + j];
            for (int k = 0; k < j; k++) t -= L[i * nv + k] * L[j * nv + k];
            L[i * nv + j] = t / L[j * nv + j];
        }
    }
    for (int i = 0; i < N * nv; i++) J[i] = rc_normal(r);
    /* G = (L^-1 J^T)^T (L^-1 J^T): rows of Y = L^-1 J^T stored per contact row */
    double Y[144 * 48];
    for (int a = 0; a < N; a++) {
        for (int i = 0; i < nv; i++) {
            double s = J[a * nv + i];
            for (int k = 0; k < i; k++) s -= L[i * nv + k] * X[k];
            X[i] = s / L[i * nv + i];
        }
        memcpy(Y + a * nv, X, sizeof(double) * (size_t)nv);
    }
    double tr = 0;
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            double s = 0;
            for (int k = 0; k < nv; k++) s += Y[a * nv + k] * Y[b * nv + k];
            G[a * N + b] = s;
            if (a == b) tr += s;
        }
    const double sc = N / tr;
    for (int a = 0; a < N * N; a++) G[a] *= sc;
    for (int i = 0; i < n; i++) {
        c[3 * i] = rc_normal(r) * 0.5;
        c[3 * i + 1] = rc_normal(r) * 0.5;
        c[3 * i + 2] = -rc_uniform(r, 0.05, 1.0);
    }
}

double rc_energy_change(int n, const double *G, const double *c, const double *lambda)
{
    const int N = 3 * n;
    double e = 0;
    for (int a = 0; a < N; a++) {
        double s = 0;
        for (int b = 0; b < N; b++) s += G[a * N + b] * lambda[b];
        e += lambda[a] * (c[a] + 0.5 * s);
    }
    return e;
}

void rc_heavy_on_light(double mass_ratio, double *J, double *minv, double *G, double *c, double *mu)
{
    const double h = 0.05, ml = 1e-3, mh = ml * mass_ratio, g = 9.81, dt = 1e-3;
    for (int q = 0; q < 3; q++) {
        minv[q] = 1 / ml, minv[3 + q] = 6 / (ml * 4 * h * h);
        minv[6 + q] = 1 / mh, minv[9 + q] = 6 / (mh * 4 * h * h);
    }
    double uf[12] = {0};
    uf[2] = uf[8] = -g * dt;
    memset(J, 0, sizeof(double) * 24 * 12);
    const double sx[4] = {1, 1, -1, -1}, sy[4] = {1, -1, 1, -1};
    for (int k = 0; k < 8; k++) {
        const int top = k >= 4;
        for (int a = 0; a < 3; a++) {
            double e[3] = {0, 0, 0};
            e[a] = 1;
            double *row = J + (3 * k + a) * 12;
            const double rl[3] = {sx[k % 4] * h, sy[k % 4] * h, top ? h : -h};
            const double rxe[3] = {rl[1] * e[2] - rl[2] * e[1], rl[2] * e[0] - rl[0] * e[2], rl[0] * e[1] - rl[1] * e[0]};
            for (int q = 0; q < 3; q++) row[q] = (top ? -1 : 1) * e[q], row[3 + q] = (top ? -1 : 1) * rxe[q];
            if (top) {
                const double rh[3] = {sx[k % 4] * h, sy[k % 4] * h, -h};
                const double hxe[3] = {rh[1] * e[2] - rh[2] * e[1], rh[2] * e[0] - rh[0] * e[2], rh[0] * e[1] - rh[1] * e[0]};
                for (int q = 0; q < 3; q++) row[6 + q] = e[q], row[9 + q] = hxe[q];
            }
        }
    }
    for (int a = 0; a < 24; a++) {
        double s = 0;
        for (int q = 0; q < 12; q++) s += J[a * 12 + q] * uf[q];
        c[a] = s;
        for (int b = 0; b < 24; b++) {
            double t = 0;
            for (int q = 0; q < 12; q++) t += J[a * 12 + q] * minv[q] * J[b * 12 + q];
            G[a * 24 + b] = t;
        }
    }
    for (int k = 0; k < 8; k++) mu[k] = 0.5;
}

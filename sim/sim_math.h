/* sim_math.h — small inline 3-vector, 3x3 and spatial-vector helpers (row-major, double). */
#ifndef HERD_SIM_MATH_H
#define HERD_SIM_MATH_H

#include <math.h>
#include <string.h>

static inline void v3_copy(double *r, const double *a) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; }
static inline void v3_add(double *r, const double *a, const double *b)
{ r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; r[2] = a[2] + b[2]; }
static inline void v3_sub(double *r, const double *a, const double *b)
{ r[0] = a[0] - b[0]; r[1] = a[1] - b[1]; r[2] = a[2] - b[2]; }
static inline void v3_scale(double *r, const double *a, double s) { r[0] = a[0] * s; r[1] = a[1] * s; r[2] = a[2] * s; }
static inline void v3_addscl(double *r, const double *a, double s) { r[0] += a[0] * s; r[1] += a[1] * s; r[2] += a[2] * s; }
static inline double v3_dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline double v3_norm(const double *a) { return sqrt(v3_dot(a, a)); }
/* r = a x b (r must not alias a or b) */
static inline void v3_cross(double *r, const double *a, const double *b)
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}
/* r += a x b */
static inline void v3_cross_add(double *r, const double *a, const double *b)
{
    r[0] += a[1] * b[2] - a[2] * b[1];
    r[1] += a[2] * b[0] - a[0] * b[2];
    r[2] += a[0] * b[1] - a[1] * b[0];
}
/* r = R a */
static inline void m3_mulv(double *r, const double *R, const double *a)
{
    r[0] = R[0] * a[0] + R[1] * a[1] + R[2] * a[2];
    r[1] = R[3] * a[0] + R[4] * a[1] + R[5] * a[2];
    r[2] = R[6] * a[0] + R[7] * a[1] + R[8] * a[2];
}
/* r = R^T a */
static inline void m3_tmulv(double *r, const double *R, const double *a)
{
    r[0] = R[0] * a[0] + R[3] * a[1] + R[6] * a[2];
    r[1] = R[1] * a[0] + R[4] * a[1] + R[7] * a[2];
    r[2] = R[2] * a[0] + R[5] * a[1] + R[8] * a[2];
}
/* r = A B (r must not alias) */
static inline void m3_mul(double *r, const double *A, const double *B)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}
static inline void m3_identity(double *R)
{
    R[0] = 1; R[1] = 0; R[2] = 0; R[3] = 0; R[4] = 1; R[5] = 0; R[6] = 0; R[7] = 0; R[8] = 1;
}
/* Rotation of angle theta about the unit axis a (Rodrigues). */
static inline void m3_axis_angle(double *R, const double *a, double s, double c)
{
    double t = 1 - c;
    R[0] = c + t * a[0] * a[0];        R[1] = t * a[0] * a[1] - s * a[2]; R[2] = t * a[0] * a[2] + s * a[1];
    R[3] = t * a[0] * a[1] + s * a[2]; R[4] = c + t * a[1] * a[1];        R[5] = t * a[1] * a[2] - s * a[0];
    R[6] = t * a[0] * a[2] - s * a[1]; R[7] = t * a[1] * a[2] + s * a[0]; R[8] = c + t * a[2] * a[2];
}
/* Unit quaternion (w x y z) to rotation matrix. */
static inline void quat_to_mat(double *R, const double *q)
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - w * z);     R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);     R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);     R[7] = 2 * (y * z + w * x);     R[8] = 1 - 2 * (x * x + y * y);
}
/* r = a ⊗ b (Hamilton product, w x y z); r must not alias. */
static inline void quat_mul(double *r, const double *a, const double *b)
{
    r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* sin and cos of x together, to about 1 ulp for |x| < 1e5 (joint angles), faster than libm's generic
 * reduction: x = n pi/2 + r with a two-part Cody-Waite split of pi/2, then minimax polynomials on
 * |r| <= pi/4 (the classic degree-13 / degree-14 coefficient sets).  Falls back to libm beyond 1e5. */
static inline void sim_sincos(double x, double *sp, double *cp)
{
    if (!(fabs(x) < 1e5)) {
        sincos(x, sp, cp);
        return;
    }
    const double two_over_pi = 6.36619772367581382433e-01;
    const double pio2_hi = 1.57079632673412561417e+00, pio2_lo = 6.07710050650619224932e-11;
    double n = nearbyint(x * two_over_pi);
    double r = (x - n * pio2_hi) - n * pio2_lo;
    double z = r * r;
    double sr = r + r * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +
                z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +
                z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
    double cr = 1.0 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +
                z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +
                z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
    switch ((long)n & 3) {
    case 0: *sp = sr; *cp = cr; break;
    case 1: *sp = cr; *cp = -sr; break;
    case 2: *sp = -sr; *cp = -cr; break;
    default: *sp = -cr; *cp = sr; break;
    }
}

/* Spatial helpers; motion and force vectors are [angular; linear]. */
static inline double sv_dot(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}
/* r = v x m  (motion cross motion) */
static inline void sv_cross_motion(double *r, const double *v, const double *m)
{
    v3_cross(r, v, m);
    v3_cross(r + 3, v, m + 3);
    v3_cross_add(r + 3, v + 3, m);
}
/* r += v x* f  (motion cross force) */
static inline void sv_cross_force_add(double *r, const double *v, const double *f)
{
    v3_cross_add(r, v, f);
    v3_cross_add(r, v + 3, f + 3);
    v3_cross_add(r + 3, v, f + 3);
}
/* f = I v for a spatial inertia I = (m, h[3], Ixx Iyy Izz Ixy Ixz Iyz) about the common point:
 * f_ang = I w + h x v_lin,  f_lin = m v_lin - h x w. */
static inline void sinert_mul(double *f, const double *I, const double *v)
{
    const double *h = I + 1, *J = I + 4;
    f[0] = J[0] * v[0] + J[3] * v[1] + J[4] * v[2] + h[1] * v[5] - h[2] * v[4];
    f[1] = J[3] * v[0] + J[1] * v[1] + J[5] * v[2] + h[2] * v[3] - h[0] * v[5];
    f[2] = J[4] * v[0] + J[5] * v[1] + J[2] * v[2] + h[0] * v[4] - h[1] * v[3];
    f[3] = I[0] * v[3] - (h[1] * v[2] - h[2] * v[1]);
    f[4] = I[0] * v[4] - (h[2] * v[0] - h[0] * v[2]);
    f[5] = I[0] * v[5] - (h[0] * v[1] - h[1] * v[0]);
}

#endif

/* sim_spatial.h — sim's PRIVATE inline helpers: spatial (6D) algebra and a fast sincos.
 * Included only by the .c files of sim/; not part of the public API (use sim_math.h outside sim/).
 *
 * Spatial vectors are double[6] = [angular; linear] (Featherstone's Plucker order), expressed in world
 * axes about a common reference point (sim_data.ref): motion vectors (velocity: rad/s; m/s) and force
 * vectors (moment: N·m; force: N).  A spatial inertia is double[10] = (m, h[3], Ixx Iyy Izz Ixy Ixz Iyz)
 * about that reference point: m in kg, h = m (com - ref) in kg·m, I in kg·m².
 */
#ifndef HERD_SIM_SPATIAL_H
#define HERD_SIM_SPATIAL_H

#include "sim_math.h"

#include <math.h>
#include <string.h>

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

/* Short fixed-length vector updates written with GCC's vector extension (unaligned loads/stores through memcpy;
 * no vector-typed arguments or results, so the ABI does not depend on the target's vector width), so that they
 * compile to a few packed operations instead of a loop with alias checks.  Elementwise the same arithmetic as the
 * scalar loops. */
typedef double sim_v4d_ __attribute__((vector_size(32)));
typedef double sim_v2d_ __attribute__((vector_size(16)));
/* a[0..5] += b[0..5] */
static inline void sv6_add(double *a, const double *b)
{
    sim_v4d_ x, bx;
    sim_v2d_ y, by;
    memcpy(&x, a, sizeof x), memcpy(&bx, b, sizeof bx);
    memcpy(&y, a + 4, sizeof y), memcpy(&by, b + 4, sizeof by);
    x += bx, y += by;
    memcpy(a, &x, sizeof x), memcpy(a + 4, &y, sizeof y);
}
/* r[0..5] = a[0..5] + b[0..5] s */
static inline void sv6_addscl(double *r, const double *a, const double *b, double s)
{
    sim_v4d_ x, bx;
    sim_v2d_ y, by;
    memcpy(&x, a, sizeof x), memcpy(&bx, b, sizeof bx);
    memcpy(&y, a + 4, sizeof y), memcpy(&by, b + 4, sizeof by);
    x = x + bx * s, y = y + by * s;
    memcpy(r, &x, sizeof x), memcpy(r + 4, &y, sizeof y);
}
/* a[0..9] += b[0..9] (spatial inertias) */
static inline void si10_add(double *a, const double *b)
{
    sim_v4d_ x, bx, y, by;
    sim_v2d_ z, bz;
    memcpy(&x, a, sizeof x), memcpy(&bx, b, sizeof bx);
    memcpy(&y, a + 4, sizeof y), memcpy(&by, b + 4, sizeof by);
    memcpy(&z, a + 8, sizeof z), memcpy(&bz, b + 8, sizeof bz);
    x += bx, y += by, z += bz;
    memcpy(a, &x, sizeof x), memcpy(a + 4, &y, sizeof y), memcpy(a + 8, &z, sizeof z);
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
/* The six rows of f = I v, written once for sinert_mul (doubles) and sinert_mul2 (2-lane vectors, so the same
 * expression per lane). */
#define SINERT_MUL_ROWS(f, I, v)                                                                                \
    do {                                                                                                        \
        const double *h_ = (I) + 1, *J_ = (I) + 4;                                                              \
        (f)[0] = J_[0] * (v)[0] + J_[3] * (v)[1] + J_[4] * (v)[2] + h_[1] * (v)[5] - h_[2] * (v)[4];            \
        (f)[1] = J_[3] * (v)[0] + J_[1] * (v)[1] + J_[5] * (v)[2] + h_[2] * (v)[3] - h_[0] * (v)[5];            \
        (f)[2] = J_[4] * (v)[0] + J_[5] * (v)[1] + J_[2] * (v)[2] + h_[0] * (v)[4] - h_[1] * (v)[3];            \
        (f)[3] = (I)[0] * (v)[3] - (h_[1] * (v)[2] - h_[2] * (v)[1]);                                           \
        (f)[4] = (I)[0] * (v)[4] - (h_[2] * (v)[0] - h_[0] * (v)[2]);                                           \
        (f)[5] = (I)[0] * (v)[5] - (h_[0] * (v)[1] - h_[1] * (v)[0]);                                           \
    } while (0)
/* f = I v for a spatial inertia I = (m, h[3], Ixx Iyy Izz Ixy Ixz Iyz) about the common point:
 * f_ang = I w + h x v_lin,  f_lin = m v_lin - h x w. */
static inline void sinert_mul(double *f, const double *I, const double *v) { SINERT_MUL_ROWS(f, I, v); }
/* r = A B for 3 x 3 row-major matrices (r must not alias A or B), a row at a time as one 4-lane vector: the same
 * expression per element as m3_mul, so bit-identical to it. */
static inline void m3_mul_v(double *restrict r, const double *A, const double *B)
{
    /* lane 3 is unused (filled with a copy rather than zero: gcc then avoids a vmovq form valgrind cannot decode) */
    const sim_v4d_ b0 = {B[0], B[1], B[2], B[2]}, b1 = {B[3], B[4], B[5], B[5]}, b2 = {B[6], B[7], B[8], B[8]};
    for (int i = 0; i < 3; i++) {
        const sim_v4d_ x = A[3 * i] * b0 + A[3 * i + 1] * b1 + A[3 * i + 2] * b2;
        r[3 * i] = x[0], r[3 * i + 1] = x[1], r[3 * i + 2] = x[2];
    }
}

/* sinert_mul of two vectors at once (f = I a, g = I b), as the two lanes of 2-wide vectors: the same expression
 * per lane as sinert_mul, so bit-identical to two calls. */
static inline void sinert_mul2(double *f, double *g, const double *I, const double *a, const double *b)
{
    sim_v2d_ v[6];
    for (int j = 0; j < 6; j++) v[j] = (sim_v2d_){a[j], b[j]};
    sim_v2d_ r[6];
    SINERT_MUL_ROWS(r, I, v);
    for (int k = 0; k < 6; k++) f[k] = r[k][0], g[k] = r[k][1];
}

#endif

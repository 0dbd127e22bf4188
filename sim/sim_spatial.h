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
#if defined(__FMA__) && defined(__AVX__)
#include <immintrin.h>
#endif

/* a b + c rounded once, on every target: one instruction where the target has FMA (x86-64-v3, AArch64), else
 * libm's fma, which rounds the same way.  sim/ is compiled without contraction (Makefile), so the multiply-adds
 * written with sim_fma are the only fused ones and the results do not depend on the CPU. */
static inline double sim_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }

/* The core of sim_sincos for |x| < 1e5, written once for doubles and for vectors of doubles (sim_batch.c): with
 * FMA(a, b, c) = a b + c and ROUND to nearest, n = ROUND(x 2/pi) and r = x - n pi/2 (a two-part Cody-Waite
 * split of pi/2), then the minimax polynomials sin ~ sr and cos ~ cr on |r| <= pi/4 (the classic degree-13 /
 * degree-14 coefficient sets), in Horner form. */
#define SIM_SINCOS_CORE(FMA, ROUND, x, n, sr, cr)                                                               \
    do {                                                                                                      \
        (n) = ROUND((x) * 6.36619772367581382433e-01);                                                        \
        const __typeof__(x) r_ = FMA(-(n), 6.07710050650619224932e-11, FMA(-(n), 1.57079632673412561417e+00, (x))); \
        const __typeof__(x) z_ = r_ * r_;                                                                     \
        __typeof__(x) ps_ = FMA(z_, 1.58969099521155010221e-10, -2.50507602534068634195e-08);                 \
        ps_ = FMA(z_, ps_, 2.75573137070700676789e-06);                                                       \
        ps_ = FMA(z_, ps_, -1.98412698298579493134e-04);                                                      \
        ps_ = FMA(z_, ps_, 8.33333333332248946124e-03);                                                       \
        ps_ = FMA(z_, ps_, -1.66666666666666324348e-01);                                                      \
        (sr) = FMA(r_ * z_, ps_, r_);                                                                         \
        __typeof__(x) pc_ = FMA(z_, -1.13596475577881948265e-11, 2.08757232129817482790e-09);                 \
        pc_ = FMA(z_, pc_, -2.75573143513906633035e-07);                                                      \
        pc_ = FMA(z_, pc_, 2.48015872894767294178e-05);                                                       \
        pc_ = FMA(z_, pc_, -1.38888888888741095749e-03);                                                      \
        pc_ = FMA(z_, pc_, 4.16666666666666019037e-02);                                                       \
        (cr) = FMA(z_ * z_, pc_, FMA(-0.5, z_, 1.0));                                                         \
    } while (0)

/* sin and cos of x together, to about 1 ulp for |x| < 1e5 (joint angles), faster than libm's generic
 * reduction (SIM_SINCOS_CORE, then the quadrant n mod 4 swaps and negates).  Falls back to libm beyond 1e5. */
static inline void sim_sincos(double x, double *sp, double *cp)
{
    if (!(fabs(x) < 1e5)) {
        sincos(x, sp, cp);
        return;
    }
    double n, sr, cr;
    SIM_SINCOS_CORE(sim_fma, nearbyint, x, n, sr, cr);
    switch ((long)n & 3) {
    case 0: *sp = sr; *cp = cr; break;
    case 1: *sp = cr; *cp = -sr; break;
    case 2: *sp = -sr; *cp = -cr; break;
    default: *sp = -cr; *cp = sr; break;
    }
}

/* Short fixed-length vectors (GCC's vector extension) for packed arithmetic inside one world. */
typedef double sim_v4d_ __attribute__((vector_size(32)));
typedef double sim_v2d_ __attribute__((vector_size(16)));

/* a b + c and c - a b on every element of vectors of four doubles, each element rounded once (sim_fma per element:
 * one vector instruction with FMA), and a vector with every element x. */
static inline sim_v4d_ sim_fma4(sim_v4d_ a, sim_v4d_ b, sim_v4d_ c)
{
#if defined(__FMA__) && defined(__AVX__)
    return (sim_v4d_)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
    sim_v4d_ r;
    for (int l = 0; l < 4; l++) r[l] = sim_fma(a[l], b[l], c[l]);
    return r;
#endif
}
static inline sim_v4d_ sim_fnma4(sim_v4d_ a, sim_v4d_ b, sim_v4d_ c)
{
#if defined(__FMA__) && defined(__AVX__)
    return (sim_v4d_)_mm256_fnmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
    sim_v4d_ r;
    for (int l = 0; l < 4; l++) r[l] = sim_fma(-a[l], b[l], c[l]);
    return r;
#endif
}
static inline sim_v4d_ sim_splat4(double x) { return (sim_v4d_){x, x, x, x}; }

/* The velocity of a point of the body that moves with spatial velocity (or Jacobian column) s, at offset r from the
 * reference point: s_lin + s_ang x r, each element as two multiply-adds. */
static inline void sim_point_vel(double out[3], const double *s, const double r[3])
{
    out[0] = sim_fma(-s[2], r[1], sim_fma(s[1], r[2], s[3]));
    out[1] = sim_fma(-s[0], r[2], sim_fma(s[2], r[0], s[4]));
    out[2] = sim_fma(-s[1], r[0], sim_fma(s[0], r[1], s[5]));
}

/* f = I v for a spatial inertia I = (m, h[3], Ixx Iyy Izz Ixy Ixz Iyz) about the common point and a motion vector
 * v = [w; v_lin]:  f_ang = J w + h x v_lin,  f_lin = m v_lin - h x w.  Written once over the number type: FMA(a, b,
 * c) = a b + c for it (elements of I may be of another type that converts, as doubles do to vectors). */
#define SIM_INERT_MUL(FMA, f, I, v)                                                                             \
    do {                                                                                                      \
        (f)[0] = FMA((I)[8], (v)[2], FMA((I)[7], (v)[1], (I)[4] * (v)[0])) + FMA((I)[2], (v)[5], -((I)[3] * (v)[4])); \
        (f)[1] = FMA((I)[9], (v)[2], FMA((I)[5], (v)[1], (I)[7] * (v)[0])) + FMA((I)[3], (v)[3], -((I)[1] * (v)[5])); \
        (f)[2] = FMA((I)[6], (v)[2], FMA((I)[9], (v)[1], (I)[8] * (v)[0])) + FMA((I)[1], (v)[4], -((I)[2] * (v)[3])); \
        (f)[3] = FMA((I)[0], (v)[3], -FMA((I)[2], (v)[2], -((I)[3] * (v)[1])));                                \
        (f)[4] = FMA((I)[0], (v)[4], -FMA((I)[3], (v)[0], -((I)[1] * (v)[2])));                                \
        (f)[5] = FMA((I)[0], (v)[5], -FMA((I)[1], (v)[1], -((I)[2] * (v)[0])));                                \
    } while (0)
/* sinert_mul: f = I v on doubles (SIM_INERT_MUL with sim_fma) */
static inline void sinert_mul(double *f, const double *I, const double *v) { SIM_INERT_MUL(sim_fma, f, I, v); }

#endif

/* sim_math.h — public inline helpers for 3-vectors, 3x3 matrices and quaternions (double, SI units).
 *
 * Conventions (every function below):
 *   - a 3-vector is double[3] (x, y, z); a 3x3 matrix is double[9], ROW-major: R[3 * row + col].
 *   - a rotation matrix R maps body coordinates to world coordinates (v_world = R v_body); its columns are
 *     the body axes expressed in the world frame.  R^T maps world to body.
 *   - a quaternion is double[4] in the order (w, x, y, z), Hamilton convention, unit norm for rotations;
 *     q and R describe the same body-to-world rotation (quat_to_mat).
 *   - angles are radians; the helpers are unit-agnostic otherwise (the caller's units go through).
 *   - outputs are written through the first argument; unless a comment says "must not alias", the
 *     output may alias an input.
 * This header is part of sim's public API (envs/ uses it); sim's internal spatial algebra lives in the
 * private sim_spatial.h.
 */
#ifndef HERD_SIM_MATH_H
#define HERD_SIM_MATH_H

#include <math.h>

/* r = a */
static inline void v3_copy(double *r, const double *a) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; }
/* r = a + b */
static inline void v3_add(double *r, const double *a, const double *b)
{ r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; r[2] = a[2] + b[2]; }
/* r = a - b */
static inline void v3_sub(double *r, const double *a, const double *b)
{ r[0] = a[0] - b[0]; r[1] = a[1] - b[1]; r[2] = a[2] - b[2]; }
/* r = s a */
static inline void v3_scale(double *r, const double *a, double s) { r[0] = a[0] * s; r[1] = a[1] * s; r[2] = a[2] * s; }
/* r += s a */
static inline void v3_addscl(double *r, const double *a, double s) { r[0] += a[0] * s; r[1] += a[1] * s; r[2] += a[2] * s; }
/* a . b */
static inline double v3_dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
/* |a| (Euclidean) */
static inline double v3_norm(const double *a) { return sqrt(v3_dot(a, a)); }
/* r = a x b (right-handed cross product); r must not alias a or b */
static inline void v3_cross(double *r, const double *a, const double *b)
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}
/* r += a x b; r must not alias a or b */
static inline void v3_cross_add(double *r, const double *a, const double *b)
{
    r[0] += a[1] * b[2] - a[2] * b[1];
    r[1] += a[2] * b[0] - a[0] * b[2];
    r[2] += a[0] * b[1] - a[1] * b[0];
}
/* r = R a (e.g. body -> world for a rotation R); r must not alias a */
static inline void m3_mulv(double *r, const double *R, const double *a)
{
    r[0] = R[0] * a[0] + R[1] * a[1] + R[2] * a[2];
    r[1] = R[3] * a[0] + R[4] * a[1] + R[5] * a[2];
    r[2] = R[6] * a[0] + R[7] * a[1] + R[8] * a[2];
}
/* r = R^T a (e.g. world -> body for a rotation R); r must not alias a */
static inline void m3_tmulv(double *r, const double *R, const double *a)
{
    r[0] = R[0] * a[0] + R[3] * a[1] + R[6] * a[2];
    r[1] = R[1] * a[0] + R[4] * a[1] + R[7] * a[2];
    r[2] = R[2] * a[0] + R[5] * a[1] + R[8] * a[2];
}
/* r = A B (composition: apply B, then A); r must not alias A or B */
static inline void m3_mul(double *r, const double *A, const double *B)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}
/* r = A^T; r must not alias A */
static inline void m3_transpose(double *r, const double *A)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r[3 * i + j] = A[3 * j + i];
}
/* R = I */
static inline void m3_identity(double *R)
{
    R[0] = 1; R[1] = 0; R[2] = 0; R[3] = 0; R[4] = 1; R[5] = 0; R[6] = 0; R[7] = 0; R[8] = 1;
}
/* R = rotation by the angle theta about the unit axis a, given s = sin(theta), c = cos(theta) (Rodrigues;
 * right-handed: positive theta turns counter-clockwise looking down -a). */
static inline void m3_axis_angle(double *R, const double *a, double s, double c)
{
    double t = 1 - c;
    R[0] = c + t * a[0] * a[0];        R[1] = t * a[0] * a[1] - s * a[2]; R[2] = t * a[0] * a[2] + s * a[1];
    R[3] = t * a[0] * a[1] + s * a[2]; R[4] = c + t * a[1] * a[1];        R[5] = t * a[1] * a[2] - s * a[0];
    R[6] = t * a[0] * a[2] - s * a[1]; R[7] = t * a[1] * a[2] + s * a[0]; R[8] = c + t * a[2] * a[2];
}
/* R = the rotation matrix of the unit quaternion q = (w, x, y, z) (body -> world when q is a body
 * orientation).  q is not normalized here. */
static inline void quat_to_mat(double *R, const double *q)
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - w * z);     R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);     R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);     R[7] = 2 * (y * z + w * x);     R[8] = 1 - 2 * (x * x + y * y);
}
/* r = a (x) b (Hamilton product, (w, x, y, z)): the rotation b followed by a, each element a chain of fused
 * multiply-adds; r must not alias a or b. */
static inline void quat_mul(double *r, const double *a, const double *b)
{
    r[0] = fma(-a[3], b[3], fma(-a[2], b[2], fma(-a[1], b[1], a[0] * b[0])));
    r[1] = fma(-a[3], b[2], fma(a[2], b[3], fma(a[1], b[0], a[0] * b[1])));
    r[2] = fma(a[3], b[1], fma(a[2], b[0], fma(-a[1], b[3], a[0] * b[2])));
    r[3] = fma(a[3], b[0], fma(-a[2], b[1], fma(a[1], b[2], a[0] * b[3])));
}

#endif

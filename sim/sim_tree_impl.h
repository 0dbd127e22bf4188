/* sim_tree_impl.h — PRIVATE to sim/: the recursions over the kinematic tree that every step runs (forward
 * kinematics, velocities, CRBA, the LTDL factorization and its solves, RNEA, the free velocity), written once over
 * a number type T and included twice:
 *   sim_tree.c   T = double, D = sim_data: one world (the functions of sim_dynamics.h);
 *   sim_batch.c  T = sim_lanes, a vector of SIM_BATCH_LANES doubles, D = sim_batch: one world per lane.
 * No include guard: each includer instantiates it once.  This file holds the contract below and the small algebra
 * on T; each algorithm is in its own file, sim_tree_<algorithm>_impl.h, included at its end.
 *
 * Why a lane computes exactly what the scalar code computes for the same world:
 *   - every operation is elementwise; nothing reads across lanes;
 *   - a data-dependent choice (a quaternion that needs renormalizing, the quadrant of a sine, a joint angle beyond
 *     the fast sincos's range) is a select between values that both instantiations compute identically (TSEL), or
 *     a per-lane call of the scalar function;
 *   - multiply-adds are spelled out (TFMA: rounded once, as sim_fma, the same in both), and sim/ is compiled with
 *     -ffp-contract=off (Makefile), so the compiler fuses nothing on its own and every other product and sum is
 *     rounded on its own, in the order written.
 * tests/test_batch.c checks it bit for bit on random states and along trajectories with contacts.
 *
 * The includer defines, before including:
 *   T, TM            the number type and the type of a comparison of two T (int, or a lane mask)
 *   D                the data type: fields with sim_data's names (q, u, tau, ref, xpos, ..., cfrc) indexed the same
 *                    way, holding T; root_added_mass (T or double)
 *   TN(name)         the instantiation's name for function `name`
 *   TSPLAT(x)        a T with every lane x (a double)
 *   TSEL(m, a, b)    m ? a : b, elementwise
 *   TABS(x), TSQRT(x), TFMA(a, b, c) = a b + c (as sim_fma, sim_spatial.h), TSINCOS(x, s, c) (sim_sincos
 *                    elementwise)
 * and may provide faster versions of two helpers for its T (the same expression per element, so the same numbers):
 *   TREE_HOOK_M3_MUL_C with TN(m3_mul_c), TREE_HOOK_INERT_MUL2 with TN(inert_mul2).
 *
 * Conventions are sim_dynamics.h's (world axes about d->ref, packed tree matrices at sim_model.dof_adr, the
 * floating base's six dofs first).
 */

/* ---------------------------------------------------------------- small algebra on T */

#ifndef TREE_HOOK_M3_MUL_C
/* r = A B for 3 x 3 row-major matrices; A in T, B a model constant */
static inline void TN(m3_mul_c)(T *restrict r, const T *A, const double *B)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = TFMA(A[3 * i + 2], B[6 + j], TFMA(A[3 * i + 1], B[3 + j], A[3 * i] * B[j]));
}
#endif
/* r = R a for a model-constant vector a */
static inline void TN(m3_mulv_c)(T *restrict r, const T *R, const double *a)
{
    for (int i = 0; i < 3; i++) r[i] = TFMA(R[3 * i + 2], a[2], TFMA(R[3 * i + 1], a[1], R[3 * i] * a[0]));
}
/* a x b */
static inline void TN(cross)(T *restrict r, const T *a, const T *b)
{
    r[0] = TFMA(a[1], b[2], -(a[2] * b[1]));
    r[1] = TFMA(a[2], b[0], -(a[0] * b[2]));
    r[2] = TFMA(a[0], b[1], -(a[1] * b[0]));
}
/* r += a x b */
static inline void TN(cross_add)(T *restrict r, const T *a, const T *b)
{
    r[0] = r[0] + TFMA(a[1], b[2], -(a[2] * b[1]));
    r[1] = r[1] + TFMA(a[2], b[0], -(a[0] * b[2]));
    r[2] = r[2] + TFMA(a[0], b[1], -(a[1] * b[0]));
}
/* a . b over six entries (spatial vectors) */
static inline T TN(dot6)(const T *a, const T *b)
{
    T s = a[0] * b[0];
    for (int k = 1; k < 6; k++) s = TFMA(a[k], b[k], s);
    return s;
}
/* r = a + b s (six entries; r may alias a) */
static inline void TN(addscl6)(T *r, const T *a, const T *b, T s)
{
    for (int k = 0; k < 6; k++) r[k] = TFMA(b[k], s, a[k]);
}
/* r = v x m (motion cross motion), spatial [angular; linear] */
static inline void TN(cross_motion)(T *restrict r, const T *v, const T *m)
{
    TN(cross)(r, v, m);
    TN(cross)(r + 3, v, m + 3);
    TN(cross_add)(r + 3, v + 3, m);
}
/* f = I v for a spatial inertia (SIM_INERT_MUL, sim_spatial.h) */
static inline void TN(inert_mul)(T *restrict f, const T *I, const T *v) { SIM_INERT_MUL(TFMA, f, I, v); }
#ifndef TREE_HOOK_INERT_MUL2
/* f = I a and g = I b */
static inline void TN(inert_mul2)(T *restrict f, T *restrict g, const T *I, const T *a, const T *b)
{
    TN(inert_mul)(f, I, a);
    TN(inert_mul)(g, I, b);
}
#endif

/* ---------------------------------------------------------------- the algorithms, one file each, in the order
 * they run (the later ones use the earlier ones' helpers) */

#include "sim_tree_kinematics_impl.h"
#include "sim_tree_velocity_impl.h"
#include "sim_tree_crba_impl.h"
#include "sim_tree_ltdl_impl.h"
#include "sim_tree_rnea_impl.h"
#include "sim_tree_free_velocity_impl.h"

/* sim_tree.c — the tree recursions of sim_dynamics.h for one world: sim_tree_impl.h with T = double on sim_data's
 * arrays.  Compiled with -ffp-contract=off (Makefile): the multiply-adds that are fused are the ones the template
 * spells out, so a lane of sim_batch.c computes bit for bit the same numbers. */
#include "sim_dynamics.h"

#include "sim_spatial.h"

#include <math.h>

#define T double
#define TM int
#define D sim_data
#define TN(name) tree1_##name
#define TSPLAT(x) ((double)(x))
#define TSEL(m, a, b) ((m) ? (a) : (b))
#define TABS(x) fabs(x)
#define TSQRT(x) sqrt(x)
#define TSINCOS(x, s, c) sim_sincos((x), &(s), &(c))
#define TFMA(a, b, c) sim_fma((a), (b), (c))

/* Packed helpers for one world: the template's expression per element, on 2- and 4-lane vectors of one world's
 * numbers (GCC turns the per-lane sim_fma loop into vector multiply-adds). */
static inline sim_v2d_ v2_fma(sim_v2d_ a, sim_v2d_ b, sim_v2d_ c)
{
    sim_v2d_ r;
    for (int l = 0; l < 2; l++) r[l] = sim_fma(a[l], b[l], c[l]);
    return r;
}
static inline sim_v2d_ v2_splat(double x) { return (sim_v2d_){x, x}; }
static inline sim_v2d_ v2_same(sim_v2d_ x) { return x; }
#define V2(x) _Generic((x), sim_v2d_: v2_same, default: v2_splat)(x)
#define V2FMA(a, b, c) v2_fma(V2(a), V2(b), V2(c))

#if defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
/* r = A B, B a model constant: a row at a time as one 4-lane vector (lane 3 a copy, never stored), each A[i][k]
 * broadcast from memory (a vector load of A would stall on the scalar stores that just wrote it) */
#define TREE_HOOK_M3_MUL_C
static inline void tree1_m3_mul_c(double *restrict r, const double *A, const double *B)
{
    const __m256d b0 = _mm256_setr_pd(B[0], B[1], B[2], B[2]), b1 = _mm256_setr_pd(B[3], B[4], B[5], B[5]),
                  b2 = _mm256_setr_pd(B[6], B[7], B[8], B[8]);
    for (int i = 0; i < 3; i++) {
        const __m256d x = _mm256_fmadd_pd(_mm256_broadcast_sd(A + 3 * i + 2), b2,
                                          _mm256_fmadd_pd(_mm256_broadcast_sd(A + 3 * i + 1), b1,
                                                          _mm256_mul_pd(_mm256_broadcast_sd(A + 3 * i), b0)));
        const sim_v4d_ v = (sim_v4d_)x;
        r[3 * i] = v[0], r[3 * i + 1] = v[1], r[3 * i + 2] = v[2];
    }
}
#endif
/* f = I a, g = I b as the two lanes of 2-wide vectors */
#define TREE_HOOK_INERT_MUL2
static inline void tree1_inert_mul2(double *restrict f, double *restrict g, const double *I, const double *a,
                                    const double *b)
{
    sim_v2d_ v[6], r[6];
    for (int j = 0; j < 6; j++) v[j] = (sim_v2d_){a[j], b[j]};
    SIM_INERT_MUL(V2FMA, r, I, v);
    for (int k = 0; k < 6; k++) f[k] = r[k][0], g[k] = r[k][1];
}
#include "sim_tree_impl.h"

void sim_kinematics(const sim_model *m, sim_data *d) { tree1_kinematics(m, d); }
void sim_velocity(const sim_model *m, sim_data *d) { tree1_velocity(m, d); }
void sim_crba(const sim_model *m, sim_data *d) { tree1_crba(m, d); }
void sim_factor(const sim_model *m, sim_data *d) { tree1_factor(m, d, 0); }
void sim_factor_damped(const sim_model *m, sim_data *d, double dt) { tree1_factor(m, d, dt); }
void sim_rnea(const sim_model *m, sim_data *d) { tree1_rnea(m, d); }
void sim_solve_m(const sim_model *m, const sim_data *d, double *x) { tree1_solve_m(m, d->LD, x); }
void sim_ltdl_forward(const sim_model *m, const double *L, double *x) { tree1_ltdl_forward(m, L, x); }
void sim_free_velocity(const sim_model *m, sim_data *d, double dt) { tree1_free_velocity(m, d, dt, d->ufree); }

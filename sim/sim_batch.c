/* sim_batch.c — the smooth stages of several worlds at once (sim_batch.h): sim_tree_impl.h with T = sim_lanes, a
 * vector of SIM_BATCH_LANES doubles (GCC's vector extension), one world per lane.  Compiled with -ffp-contract=off
 * (Makefile), as sim_tree.c: each lane computes the one-world code's numbers bit for bit. */
#include "sim_batch.h"

#include "sim_collision_internal.h"
#include "sim_dynamics.h"
#include "sim_spatial.h"
#include "sim_step.h"

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if defined(__AVX__) && SIM_BATCH_LANES == 4
#include <immintrin.h>
#define LANES_AVX 1
#else
#define LANES_AVX 0
#endif

enum { W = SIM_BATCH_LANES };
typedef double sim_lanes __attribute__((vector_size(8 * SIM_BATCH_LANES)));
typedef long long sim_lmask __attribute__((vector_size(8 * SIM_BATCH_LANES)));

/* ---- elementwise operations; each is the scalar operation on every lane ---- */

static inline sim_lanes lanes_splat(double x)
{
    sim_lanes r;
    for (int l = 0; l < W; l++) r[l] = x;
    return r;
}
static inline sim_lanes lanes_same(sim_lanes x) { return x; }
/* a double or a sim_lanes, as sim_lanes (a double on every lane) */
#define LANES(x) _Generic((x), sim_lanes: lanes_same, default: lanes_splat)(x)

static inline sim_lanes lanes_sel(sim_lmask m, sim_lanes a, sim_lanes b)
{
    return (sim_lanes)((m & (sim_lmask)a) | (~m & (sim_lmask)b));
}
static inline sim_lanes lanes_abs(sim_lanes x) { return (sim_lanes)((sim_lmask)x & ~(sim_lmask)lanes_splat(-0.0)); }
static inline sim_lanes lanes_sqrt(sim_lanes x)
{
#if LANES_AVX
    return (sim_lanes)_mm256_sqrt_pd((__m256d)x);
#else
    for (int l = 0; l < W; l++) x[l] = sqrt(x[l]);
    return x;
#endif
}
/* a b + c rounded once, on every lane (as sim_fma) */
static inline sim_lanes lanes_fma(sim_lanes a, sim_lanes b, sim_lanes c)
{
#if LANES_AVX && defined(__FMA__)
    return (sim_lanes)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
    sim_lanes r;
    for (int l = 0; l < W; l++) r[l] = sim_fma(a[l], b[l], c[l]);
    return r;
#endif
}
/* nearbyint on every lane (round to nearest, ties to even: the default rounding mode) */
static inline sim_lanes lanes_round(sim_lanes x)
{
#if LANES_AVX
    return (sim_lanes)_mm256_round_pd((__m256d)x, _MM_FROUND_CUR_DIRECTION);
#else
    for (int l = 0; l < W; l++) x[l] = nearbyint(x[l]);
    return x;
#endif
}

/* sim_sincos on every lane: SIM_SINCOS_CORE with the lanes' FMA and rounding, then the quadrant's swap and signs
 * as selects (exact); a lane beyond the fast range (|x| >= 1e5, or NaN) takes sim_sincos's libm path. */
#define LANES_FMA_ANY(a, b, c) lanes_fma(LANES(a), LANES(b), LANES(c))
static inline void lanes_sincos(sim_lanes x, sim_lanes *sp, sim_lanes *cp)
{
    sim_lanes n, sr, cr;
    SIM_SINCOS_CORE(LANES_FMA_ANY, lanes_round, x, n, sr, cr);
    /* (long)n & 3 from the low mantissa bits of n + 1.5 2^52 (n is an integer of magnitude < 2^51 here) */
    const sim_lmask quad = (sim_lmask)(n + 6755399441055744.0) & 3;
    const sim_lmask odd = (quad & 1) != 0, neg = (quad & 2) != 0;
    const sim_lanes s1 = lanes_sel(odd, cr, sr), c1 = lanes_sel(odd, -sr, cr);
    sim_lanes s = lanes_sel(neg, -s1, s1), c = lanes_sel(neg, -c1, c1);
    const sim_lmask slow = ~(lanes_abs(x) < 1e5);
    for (int l = 0; l < W; l++)
        if (slow[l]) {
            double a, b;
            sim_sincos(x[l], &a, &b);
            s[l] = a, c[l] = b;
        }
    *sp = s, *cp = c;
}

/* ---- the batch ---- */

/* A geometry's contact candidates on flat ground for every lane (sim_collide_impl.h) */
typedef struct {
    SIM_COLLIDE_CAND_FIELDS(sim_lanes, sim_lmask)
} lanes_cand;

struct sim_batch {
    sim_lanes root_added_mass;
    sim_lanes ref[3];
    /* per-lane arrays with sim_data's names and layout (element k of lane l: x[k][l]) */
    sim_lanes *q, *u, *tau, *xpos, *xrot, *xcom, *cinert, *cdof, *cvel, *cdof_dot, *Mp, *LD, *h, *crb, *cacc, *cfrc;
    sim_lanes *ufree;
    /* flat ground: each geometry's candidates, and per lane the points worth offering (bit k: point k is valid, its
       geometry passed and its gap is below the reject bound) */
    int flat;
    double dt;
    lanes_cand *cand;
    unsigned char (*near)[SIM_BATCH_LANES];
};

#define T sim_lanes
#define TM sim_lmask
#define D struct sim_batch
#define TN(name) treeW_##name
#define TSPLAT(x) lanes_splat(x)
#define TSEL(m, a, b) lanes_sel((m), (a), (b))
#define TABS(x) lanes_abs(x)
#define TSQRT(x) lanes_sqrt(x)
#define TFMA(a, b, c) LANES_FMA_ANY(a, b, c)
#define TSINCOS(x, s, c) lanes_sincos((x), &(s), &(c))
#include "sim_tree_impl.h"
#define TCAND lanes_cand
#include "sim_collide_impl.h"

/* Lays the arrays out after the header (mem may be NULL: sizes only); returns the bytes used. */
static size_t layout(const sim_model *m, struct sim_batch *b, unsigned char *mem)
{
    const size_t nv = (size_t)m->nv, nb = (size_t)m->nbody, nq = (size_t)m->nq, nM = (size_t)m->nM;
    size_t off = (sizeof(struct sim_batch) + 63) / 64 * 64;
    /* each lane array: its field and its length, a multiple of one of the model's sizes */
    enum { DIM_Q, DIM_V, DIM_BODY, DIM_M };
    static const struct { size_t field; unsigned char dim, mult; } arrays[] = {
        {offsetof(struct sim_batch, q), DIM_Q, 1},         {offsetof(struct sim_batch, u), DIM_V, 1},
        {offsetof(struct sim_batch, tau), DIM_V, 1},       {offsetof(struct sim_batch, xpos), DIM_BODY, 3},
        {offsetof(struct sim_batch, xrot), DIM_BODY, 9},   {offsetof(struct sim_batch, xcom), DIM_BODY, 3},
        {offsetof(struct sim_batch, cinert), DIM_BODY, 10}, {offsetof(struct sim_batch, cdof), DIM_V, 6},
        {offsetof(struct sim_batch, cvel), DIM_BODY, 6},   {offsetof(struct sim_batch, cdof_dot), DIM_V, 6},
        {offsetof(struct sim_batch, Mp), DIM_M, 1},        {offsetof(struct sim_batch, LD), DIM_M, 1},
        {offsetof(struct sim_batch, h), DIM_V, 1},         {offsetof(struct sim_batch, crb), DIM_BODY, 10},
        {offsetof(struct sim_batch, cacc), DIM_BODY, 6},   {offsetof(struct sim_batch, cfrc), DIM_BODY, 6},
        {offsetof(struct sim_batch, ufree), DIM_V, 1},
    };
    const size_t dims[] = {[DIM_Q] = nq, [DIM_V] = nv, [DIM_BODY] = nb, [DIM_M] = nM};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        if (mem) *(sim_lanes **)((unsigned char *)b + arrays[i].field) = (sim_lanes *)(mem + off);
        off += dims[arrays[i].dim] * arrays[i].mult * sizeof(sim_lanes);
    }
    const size_t ng = (size_t)m->ngeom;
    if (mem) b->cand = (lanes_cand *)(mem + off);
    off += ng * sizeof(lanes_cand);
    if (mem) b->near = (unsigned char (*)[SIM_BATCH_LANES])(mem + off);
    off += ng * SIM_BATCH_LANES;
    return (off + 63) / 64 * 64;
}

size_t sim_batch_size(const sim_model *m) { return layout(m, NULL, NULL); }

sim_batch *sim_batch_init(const sim_model *m, void *mem)
{
    struct sim_batch *b = mem;
    memset(b, 0, sizeof *b);
    layout(m, b, mem);
    b->flat = sim_collide_flat(m);
    return b;
}

/* The state of world d into lane l. */
static void gather(const sim_model *m, struct sim_batch *b, int l, const sim_data *d)
{
    for (int k = 0; k < m->nq; k++) b->q[k][l] = d->q[k];
    for (int k = 0; k < m->nv; k++) b->u[k][l] = d->u[k], b->tau[k][l] = d->tau[k];
    b->root_added_mass[l] = d->root_added_mass;
}

void sim_batch_smooth(const sim_model *m, sim_batch *b, sim_data *const *d, int n, double dt)
{
    /* lanes past n repeat the first world (computed and never read) */
    for (int l = 0; l < W; l++) gather(m, b, l, d[l < n ? l : 0]);
    treeW_kinematics(m, b);
    treeW_velocity(m, b);
    treeW_crba(m, b);
    treeW_factor(m, b, dt);
    treeW_rnea(m, b);
    treeW_free_velocity(m, b, dt, b->ufree);
    b->dt = dt;
    if (!b->flat) return;
    /* flat ground: every geometry's candidates, and per lane the points to offer (sim_collide's own tests up to the
       look-ahead of each point, which sim_collide_offer_point applies) */
    const double grav = fabs(m->gravity[2]);
    const sim_lmask all = lanes_splat(0.0) == lanes_splat(0.0);
    for (int g = 0; g < m->ngeom; g++) {
        if (m->geom[g].nocollide) continue;
        lanes_cand *c = &b->cand[g];
        treeW_geom_bound(m, b, g, m->opt.margin, dt, grav, m->terrain.height, c);
        sim_lmask bits = all ^ all;
        int any = 0;
        for (int l = 0; l < n; l++) any |= c->pass[l] != 0;
        if (any) treeW_geom_points(m, b, g, m->terrain.height, c);
        else c->pass = bits; /* no lane's bounding sphere reaches the ground (lanes past n ignored) */
        for (int k = 0; k < sim_geom_cand_count(&m->geom[g]); k++)
            bits |= (c->pass & c->valid[k] & ((c->gap[k] >= c->reject) ^ all)) & (1LL << k);
        for (int l = 0; l < W; l++) b->near[g][l] = (unsigned char)bits[l];
    }
}

static int batch_collide(const sim_model *m, const sim_batch *b, int lane, sim_data *d)
{
    if (!b->flat) return sim_collide(m, d, m->opt.margin, b->dt, d->con, d->ncon_max);
    const double grav = fabs(m->gravity[2]);
    int n = 0;
    for (int g = 0; g < m->ngeom; g++) {
        unsigned bits = m->geom[g].nocollide ? 0 : b->near[g][lane];
        const lanes_cand *c = &b->cand[g];
        for (int k = 0; bits; k++, bits >>= 1) {
            if (!(bits & 1)) continue;
            const double p[3] = {c->px[k][lane], c->py[k][lane], c->pz[k][lane]};
            n = sim_collide_offer_point(m, g, k, p, c->gap[k][lane], c->approach[k][lane], m->opt.margin, b->dt, grav,
                                        d->con, n, d->ncon_max);
        }
    }
    return n;
}

/* out[k] = lane l of x[k], k < count */
static inline void take(double *restrict out, const sim_lanes *restrict x, int count, int l)
{
    const double *p = (const double *)x + l;
    for (int k = 0; k < count; k++) out[k] = p[(size_t)k * W];
}

static void batch_load(const sim_model *m, const sim_batch *b, int lane, sim_data *d)
{
    const int nv = m->nv, nb = m->nbody;
    take(d->ref, b->ref, 3, lane);
    take(d->cdof, b->cdof, 6 * nv, lane);
    take(d->LD, b->LD, m->nM, lane);
    take(d->ufree, b->ufree, nv, lane);
    if (b->flat) return; /* the batch found the contact candidates: the body poses and velocities stay in it */
    take(d->xpos, b->xpos, 3 * nb, lane);
    take(d->xrot, b->xrot, 9 * nb, lane);
    take(d->cvel, b->cvel, 6 * nb, lane);
}

int sim_batch_step(const sim_model *m, const sim_batch *b, int lane, sim_data *d, double dt, sim_stage done,
                   sim_stage last)
{
    if (done < SIM_STAGE_SMOOTH && last >= SIM_STAGE_KINEMATICS) batch_load(m, b, lane, d);
    if (done < SIM_STAGE_COLLISION && last >= SIM_STAGE_COLLISION) d->ncon = batch_collide(m, b, lane, d);
    if (last <= SIM_STAGE_COLLISION) return 0;
    return sim_step_stages(m, d, dt, done > SIM_STAGE_COLLISION ? done : SIM_STAGE_COLLISION, last);
}

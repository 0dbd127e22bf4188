/* sim_step.c — the contact step, as a sequence of stages (the way MuJoCo's mj_forward reads), run by one function,
 * sim_step_stages (sim_step.h lists the stages):
 *   KINEMATICS, SMOOTH:  sim_dynamics.h's tree recursions and the free velocity
 *   COLLISION:           sim_collide
 *   CONTACTS:            the joint blocks within reach (limits, friction) -> contact and joint-row Jacobians (+ the
 *                        compact rows S = D^-1/2 L^-T J^T) -> Delassus matrix G = S^T S -> free velocities, targets
 *                        and warm starts
 *   SOLVE:               the per-contact solver chosen by the model
 *   INTEGRATE:           apply the impulses -> remember the contacts and joint blocks (warm starts) -> integrate
 *                        positions
 *
 * Scratch (d->scratch, 12 nv): [0, 4nv) the three B rows as 4-lane vectors (one per dof), [6nv, 7nv) D^-1,
 * [7nv, 8nv) D^-1/2 (kept from the Jacobian stage to the impulse stage), [8nv, 9nv) the velocity change y.
 */
#include "sim_step.h"

#include "sim_dynamics.h"
#include "sim_math.h"
#include "sim_spatial.h"

#include <stdint.h>
#include <string.h>

_Static_assert(SIM_MAX_DOF <= SIM_SOLVER_TREE_MAX_DOF, "a model's dof tree must fit sim_solver_tree");

#define SCRATCH_B4(d, nv) ((d)->scratch)
#define SCRATCH_INVD(d, nv) ((d)->scratch + 6 * (nv))
#define SCRATCH_SQRTD(d, nv) ((d)->scratch + 7 * (nv))
#define SCRATCH_Y(d, nv) ((d)->scratch + 8 * (nv))

/* Finds the warm start of contact (geom, feature) in the previous step's cache. */
static const double *warm_start(const sim_data *d, int geom, int feature)
{
    for (int j = 0; j < d->nprev; j++)
        if (d->prev_key[2 * j] == geom && d->prev_key[2 * j + 1] == feature) return d->prev_lambda + 3 * j;
    return NULL;
}

void sim_step_forget_contacts(sim_data *d) { d->nprev = d->njprev = 0; }

const double *sim_step_contact_jacobian(const sim_model *m, const sim_data *d, int k)
{
    return d->Jc + (size_t)3 * k * m->nv;
}

static int finite_state(const sim_model *m, const sim_data *d)
{
    return sim_all_finite(d->q, m->nq) && sim_all_finite(d->u, m->nv);
}

/* ---- stages ---------------------------------------------------------------------------------------- */

/* D^-1 and D^-1/2 of the factor's pivots (scratch), kept from the Jacobian stage to the impulse stage. */
static inline void stage_pivots(const sim_model *m, sim_data *d)
{
    const int nv = m->nv;
    double *invD = SCRATCH_INVD(d, nv), *sD = SCRATCH_SQRTD(d, nv);
    /* the pivots gathered first, so that the divisions and square roots run as vector instructions (correctly
       rounded either way: the same numbers as one element at a time) */
    for (int k = 0; k < nv; k++) invD[k] = d->LD[m->dof_adr[k]];
    for (int k = 0; k < nv; k++) invD[k] = 1.0 / invD[k];
    for (int k = 0; k < nv; k++) sD[k] = sqrt(invD[k]);
}

/* B = L^-T J^T for the three rows of block i held in B4 along its root path (decreasing dof order: a valid L^T
 * sweep), then the compact rows S = D^-1/2 B into d->Bc.  For a floating base a joint dof's row ends with the base
 * dofs 5, ..., 0 (sim_factor's layout): a fixed-size loop, same terms in the same order. */
static inline void sweep_rows(const sim_model *m, sim_data *d, int i, double *B4, const int *path, int np)
{
    const int nv = m->nv;
    const double *sD = SCRATCH_SQRTD(d, nv);
    const int nb = m->floating ? 6 : 0;
    const int npj = nb ? np - 6 : np; /* a floating base's path ends with the base dofs 5, ..., 0 */
    for (int t = 0; t < npj; t++) {
        int k = path[t];
        const int *anc = m->dof_anc[k];
        const double *Lk = d->LD + m->dof_adr[k] + 1;
        sim_v4d_ xk;
        memcpy(&xk, B4 + 4 * k, sizeof xk);
        const int nj = m->dof_nanc[k] - nb;
        for (int u = 0; u < nj; u++) {
            double *Bj = B4 + 4 * anc[u];
            sim_v4d_ bj;
            memcpy(&bj, Bj, sizeof bj);
            bj = sim_fnma4(sim_splat4(Lk[u]), xk, bj);
            memcpy(Bj, &bj, sizeof bj);
        }
        if (nb) {
            const double *bt = Lk + nj;
#pragma GCC unroll 6
            for (int u = 0; u < 6; u++) {
                double *Bj = B4 + 4 * (5 - u);
                sim_v4d_ bj;
                memcpy(&bj, Bj, sizeof bj);
                bj = sim_fnma4(sim_splat4(bt[u]), xk, bj);
                memcpy(Bj, &bj, sizeof bj);
            }
        }
    }
    if (nb) { /* the base chain (packed 6 x 6 triangle), fully unrolled, the six rows in registers */
        sim_v4d_ bb[6];
        memcpy(bb, B4, sizeof bb);
#pragma GCC unroll 6
        for (int k = 5; k >= 0; k--) {
            const double *Lk = d->LD + k * (k + 1) / 2 + 1;
#pragma GCC unroll 6
            for (int u = 0; u < k; u++) bb[k - 1 - u] = sim_fnma4(sim_splat4(Lk[u]), bb[k], bb[k - 1 - u]);
        }
        memcpy(B4, bb, sizeof bb);
    }
    double *S = d->Bc + (size_t)(3 * i) * nv;
    for (int t = 0; t < np; t++) {
        int k = path[t];
        sim_v4d_ bk;
        memcpy(&bk, B4 + 4 * k, sizeof bk);
        bk *= sD[k];
        S[t] = bk[0], S[nv + t] = bk[1], S[2 * nv + t] = bk[2];
    }
}

/* Per contact: J in the contact frame (d->Jc), B = L^-T J^T (three rows at once; the support stays the root
 * path), and the compact rows S = D^-1/2 B laid out along the path (body -> root), stored in d->Bc, so that
 * G = J M^-1 J^T = B^T D^-1 B = S^T S.  Also records the deepest penetration.
 *
 * The three rows run as the lanes of one 4-wide vector per dof (B4[k] = (B0[k], B1[k], B2[k], 0) in scratch), so
 * the rotation into the contact frame, the free velocity J ufree and the L^-T sweep are one vector operation per
 * term instead of three scalar ones.  Each lane computes the same expression as the scalar row code (the world
 * Jacobian of sim_jacobian_sparse, then f_a . (x, y, z), then the sweep in the same order), so the results are
 * bit-identical to it. */
static inline void stage_contact_jacobians(const sim_model *m, sim_data *d, int nc)
{
    const int nv = m->nv;
    double *B4 = SCRATCH_B4(d, nv);
    sim_step_stats *st = &d->stats;
    for (int i = 0; i < nc; i++) {
        const sim_contact *c = &d->con[i];
        if (-c->gap > st->penetration) st->penetration = -c->gap;
        int *path = d->con_path + i * nv;
        double *J0 = d->Jc + (size_t)(3 * i) * nv, *J1 = J0 + nv, *J2 = J1 + nv;
        const double *f = c->frame, *uf = d->ufree;
        const sim_v4d_ F0 = {f[0], f[3], f[6], 0}, F1 = {f[1], f[4], f[7], 0}, F2 = {f[2], f[5], f[8], 0};
        double r[3];
        v3_sub(r, c->pos, d->ref);
        memset(J0, 0, sizeof(double) * 3 * (size_t)nv);
        sim_v4d_ cf = {0, 0, 0, 0}; /* the free contact velocity J ufree, summed along the path */
        int np = 0;
        const int last = c->body > 0 ? m->body[c->body].dof : (m->floating ? 5 : -1);
        for (int k = last; k >= 0; k = m->dof_parent[k]) {
            const double *s = d->cdof + 6 * k;
            /* the world Jacobian of the point (v_point = v_lin + w x r, as sim_jacobian_sparse) */
            double w[3];
            sim_point_vel(w, s, r);
            const sim_v4d_ j = sim_fma4(F2, sim_splat4(w[2]), sim_fma4(F1, sim_splat4(w[1]), F0 * w[0]));
            memcpy(B4 + 4 * k, &j, sizeof j);
            J0[k] = j[0], J1[k] = j[1], J2[k] = j[2];
            cf = sim_fma4(j, sim_splat4(uf[k]), cf);
            path[np++] = k;
        }
        d->con_npath[i] = np;
        d->cfree[3 * i] = cf[0], d->cfree[3 * i + 1] = cf[1], d->cfree[3 * i + 2] = cf[2];
        sweep_rows(m, d, i, B4, path, np);
    }
}

/* ---- joint blocks: limits and friction ------------------------------------------------------------------ */

/* One joint's limit test (find_joint_blocks), on its position qk, limits lo / hi and start / free speeds u / uf:
 * returns 1 when the nearer side is within reach, with *up = 1 when that is the upper side; *viol = max(*viol, -gap). */
static inline int limit_near(double qk, double lo, double hi, double u, double uf, double margin, double dt, int *up,
                             double *viol)
{
    const double gl = qk - lo, gu = hi - qk;
    const int upper = gu < gl;
    const double g = upper ? gu : gl;
    *viol = -g > *viol ? -g : *viol;
    /* the speed toward the nearer side, at the start and free */
    const double a0 = upper ? u : -u, a1 = upper ? uf : -uf;
    const double approach = a0 > a1 ? a0 : a1;
    *up = upper;
    return g < margin + dt * (approach > 0 ? approach : 0);
}

typedef long long sim_v4l_ __attribute__((vector_size(32)));
static inline sim_v4d_ blend4(sim_v4l_ m, sim_v4d_ a, sim_v4d_ b)
{
    return (sim_v4d_)((m & (sim_v4l_)a) | (~m & (sim_v4l_)b));
}
static inline sim_v4d_ load4(const double *p)
{
    sim_v4d_ v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline uint64_t sign_bits4(sim_v4l_ m)
{
#ifdef __AVX__
    return (uint64_t)_mm256_movemask_pd((__m256d)m);
#else
    return (uint64_t)(m[0] < 0) | (uint64_t)(m[1] < 0) << 1 | (uint64_t)(m[2] < 0) << 2 | (uint64_t)(m[3] < 0) << 3;
#endif
}

/* limit_near on n joints held as runs (lo, hi, q, u, uf: element j is joint j), four at a time: bit j of the result
 * for joint j within reach, of *up for its upper side.  The same tests as limit_near on every element, and the same
 * largest violation (each lane keeps its own running maximum, merged at the end: the maximum of the same values). */
static inline uint64_t limits_near_run(int n, const double *lo, const double *hi, const double *q, const double *u,
                                       const double *uf, double margin, double dt, uint64_t *up, double *viol)
{
    uint64_t near = 0, upm = 0;
    double v = *viol;
    int j = 0;
    if (n >= 4) {
        const sim_v4d_ zero = sim_splat4(0), mg = sim_splat4(margin), dt4 = sim_splat4(dt);
        sim_v4d_ acc = sim_splat4(v);
        for (; j + 4 <= n; j += 4) {
            const sim_v4d_ Q = load4(q + j), gl = Q - load4(lo + j), gu = load4(hi + j) - Q;
            const sim_v4l_ upper = (sim_v4l_)(gu < gl);
            const sim_v4d_ g = blend4(upper, gu, gl), ng = -g;
            acc = blend4((sim_v4l_)(ng > acc), ng, acc);
            const sim_v4d_ U = load4(u + j), F = load4(uf + j);
            const sim_v4d_ a0 = blend4(upper, U, -U), a1 = blend4(upper, F, -F);
            const sim_v4d_ ap = blend4((sim_v4l_)(a0 > a1), a0, a1);
            const sim_v4l_ in = (sim_v4l_)(g < mg + dt4 * blend4((sim_v4l_)(ap > zero), ap, zero));
            near |= sign_bits4(in) << j;
            upm |= sign_bits4(upper) << j;
        }
        for (int l = 0; l < 4; l++) v = acc[l] > v ? acc[l] : v;
    }
    for (; j < n; j++) {
        int upper;
        near |= (uint64_t)limit_near(q[j], lo[j], hi[j], u[j], uf[j], margin, dt, &upper, &v) << j;
        upm |= (uint64_t)upper << j;
    }
    *viol = v;
    *up = upm;
    return near;
}

_Static_assert(SIM_MAX_BODIES <= 65, "a world's limited joints must fit a 64-bit mask");

/* The joint blocks of this step, after the nc contacts: first a limit block per limited joint whose nearer side is
 * within reach (gap < margin + the distance the joint may travel toward it this step at the larger of its start
 * and free speeds), then a friction block per joint with friction > 0 (the joints of d->jdof, listed when the
 * world was created).  d->jblk[j] = 3 dof + side (0 lower, 1 upper, 2 friction).  Also records the largest
 * violation at the start of the step.  At most nblk_max - nc blocks (the capacity the world was created with).
 * Limited joints with consecutive dofs (all of a robot's legs, usually) are tested four at a time on the model's
 * limit arrays and the state's runs; each 1-dof joint's q index is its dof + 1 with a floating root, else its dof. */
static inline void find_joint_blocks(const sim_model *m, sim_data *d, int nc, double dt)
{
    /* everything read through locals: the stores to jblk could otherwise alias any of it */
    const int cap = d->nblk_max - nc, nl = m->opt.joint_limits ? d->njlim : 0, nf = d->njfric;
    const double margin = m->opt.margin;
    const int *restrict jdof = d->jdof;
    const double *restrict q = d->q, *restrict u = d->u, *restrict uf = d->ufree;
    const double *restrict lo = m->dof_lower, *restrict hi = m->dof_upper;
    int *restrict jblk = d->jblk;
    double viol = d->stats.limit_violation;
    int n = 0;
    /* n <= j: bounding j by cap keeps every store below cap (a world has room for all its joint blocks, so the
       bound never cuts the scan short in practice) */
    const int nlc = nl < cap ? nl : cap;
    if (nlc > 0 && jdof[nlc - 1] - jdof[0] == nlc - 1) { /* jdof increases: consecutive dofs */
        const int k0 = jdof[0], qa = k0 + m->floating;
        uint64_t up, near = limits_near_run(nlc, lo + k0, hi + k0, q + qa, u + k0, uf + k0, margin, dt, &up, &viol);
        for (; near; near &= near - 1) {
            const int j = __builtin_ctzll(near);
            jblk[n++] = 3 * (k0 + j) + (int)(up >> j & 1);
        }
    } else {
        for (int j = 0; j < nlc; j++) {
            const int k = jdof[j];
            int upper;
            if (limit_near(q[k + m->floating], lo[k], hi[k], u[k], uf[k], margin, dt, &upper, &viol))
                jblk[n++] = 3 * k + upper;
        }
    }
    d->stats.limit_violation = viol;
    d->nlim = n;
    for (int j = 0; j < nf && n < cap; j++) {
        const int k = jdof[d->njlim + j];
        if (m->body[m->dof_body[k]].friction > 0) jblk[n++] = 3 * k + 2;
    }
    d->nfric = n - d->nlim;
}

/* Jacobians (the unit row +-e_dof as row n, empty tangent rows), compact rows, free velocities with the gap-aware /
 * erp target (limits), bounds (friction: -mu = friction dt, N·s) and warm starts of the joint blocks. */
static inline void stage_joint_rows(const sim_model *m, sim_data *d, int nc, double dt)
{
    const int nv = m->nv, nj = d->nlim + d->nfric;
    const sim_step_opt *o = &m->opt;
    double *B4 = SCRATCH_B4(d, nv);
    for (int j = 0; j < nj; j++) {
        const int i = nc + j, k = d->jblk[j] / 3, side = d->jblk[j] % 3;
        const sim_body *bb = &m->body[m->dof_body[k]];
        const double sgn = side == 1 ? -1.0 : 1.0;
        int *path = d->con_path + i * nv;
        double *J0 = d->Jc + (size_t)(3 * i) * nv;
        memset(J0, 0, sizeof(double) * 3 * (size_t)nv);
        J0[2 * nv + k] = sgn;
        int np = 0;
        for (int a = k; a >= 0; a = m->dof_parent[a]) {
            memset(B4 + 4 * a, 0, sizeof(double) * 4);
            path[np++] = a;
        }
        B4[4 * k + 2] = sgn;
        d->con_npath[i] = np;
        sweep_rows(m, d, i, B4, path, np);
        double *cf = d->cfree + 3 * i, *lam = d->lambda + 3 * i;
        cf[0] = cf[1] = 0;
        cf[2] = sgn * d->ufree[k];
        if (side < 2) {
            const double q = d->q[bb->qadr], g = side ? m->dof_upper[k] - q : q - m->dof_lower[k];
            if (g > 0 && o->gap_target) cf[2] += g / dt;
            else if (g < 0 && o->erp > 0) cf[2] += o->erp * g / dt;
            d->mu[i] = 0;
        } else {
            d->mu[i] = SIM_BLOCK_BOX(bb->friction * dt);
        }
        lam[0] = lam[1] = 0;
        lam[2] = o->warmstart && d->njprev ? d->prev_jlambda[d->jblk[j]] : 0;
    }
}

/* G_ij = S_i . S_j over the shared tail of the two root paths (their common ancestors); G is symmetric.
 * Root paths are ancestor-closed, so the shared tail of path j starts at its first dof that lies on path i
 * (found with a per-i mark, not by comparing the paths from their ends).  The nine sums of a block run in one
 * pass over the tail, as three 4-lane accumulators (one per column of the block, lane a = row a of contact i);
 * each sum still adds its terms in path order, so G is bit-identical to nine separate dot products. */
static inline void stage_delassus(const sim_model *m, sim_data *d, int nc)
{
    const int nv = m->nv, n3 = 3 * nc;
    double *G = d->G;
    unsigned char mark[SIM_MAX_DOF];
    sim_v4d_ xi[SIM_MAX_DOF]; /* contact i's three rows interleaved: xi[t] = (S0[t], S1[t], S2[t], 0) */
    for (int i = 0; i < nc; i++) {
        const int *pi = d->con_path + i * nv;
        const int npi = d->con_npath[i];
        const double *Si = d->Bc + (size_t)(3 * i) * nv;
        memset(mark, 0, (size_t)nv);
        for (int t = 0; t < npi; t++) {
            mark[pi[t]] = 1;
            xi[t] = (sim_v4d_){Si[t], Si[nv + t], Si[2 * nv + t], 0};
        }
        for (int j = i; j < nc; j++) {
            const int *pj = d->con_path + j * nv;
            const int npj = d->con_npath[j];
            int first = 0;
            while (first < npj && !mark[pj[first]]) first++;
            const int ncom = npj - first;
            const double *Sj = d->Bc + (size_t)(3 * j) * nv;
            const sim_v4d_ *x = xi + (npi - ncom);
            const double *y0 = Sj + (npj - ncom), *y1 = y0 + nv, *y2 = y1 + nv;
            /* column b of the block: lane a accumulates S_i,a . S_j,b */
            sim_v4d_ s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0;
            for (int t = 0; t < ncom; t++) {
                s0 = sim_fma4(x[t], sim_splat4(y0[t]), s0);
                s1 = sim_fma4(x[t], sim_splat4(y1[t]), s1);
                s2 = sim_fma4(x[t], sim_splat4(y2[t]), s2);
            }
            const sim_v4d_ col[3] = {s0, s1, s2};
            for (int a = 0; a < 3; a++) {
                double *Gr = G + (size_t)(3 * i + a) * n3 + 3 * j;
                for (int bb = 0; bb < 3; bb++) {
                    Gr[bb] = col[bb][a];
                    G[(size_t)(3 * j + bb) * n3 + 3 * i + a] = col[bb][a];
                }
            }
        }
    }
}

/* The free contact velocities (J ufree, from the Jacobian stage) get the gap-aware / erp normal targets; then
 * the friction coefficients and the solver's starting impulses (warm start from the cache, else zero). */
static inline void stage_targets(const sim_model *m, sim_data *d, int nc, double dt)
{
    const sim_step_opt *o = &m->opt;
    for (int i = 0; i < nc; i++) {
        const sim_contact *c = &d->con[i];
        /* d->cfree[3i..3i+2] = J ufree: computed with the Jacobian (stage_contact_jacobians) */
        double shift = 0;
        if (c->gap > 0 && o->gap_target) shift = c->gap / dt;
        else if (c->gap < 0 && o->erp > 0) shift = o->erp * c->gap / dt;
        d->cfree[3 * i + 2] += shift;
        d->mu[i] = c->mu * d->friction_scale;
        const double *w = o->warmstart ? warm_start(d, c->geom, c->feature) : NULL;
        double *lam = d->lambda + 3 * i;
        if (w) { lam[0] = w[0]; lam[1] = w[1]; lam[2] = w[2]; }
        else { lam[0] = lam[1] = lam[2] = 0; }
    }
}

/* v_pre = J u with the start-of-step velocity u (only for solvers that read it). */
static inline void stage_pre_velocity(const sim_model *m, sim_data *d, int nc)
{
    const int nv = m->nv;
    const double *u = d->u;
    for (int i = 0; i < nc; i++) {
        const int *pi = d->con_path + i * nv;
        for (int a = 0; a < 3; a++) {
            const double *J = d->Jc + (size_t)(3 * i + a) * nv;
            double s = 0;
            for (int t = 0; t < d->con_npath[i]; t++) s += J[pi[t]] * u[pi[t]];
            d->vpre[3 * i + a] = s;
        }
    }
}

/* u = ufree + M^-1 J^T lambda = ufree + L^-1 D^-1 B lambda = ufree + L^-1 D^-1/2 (S lambda) over the nb blocks. */
static inline void stage_apply_impulses(const sim_model *m, sim_data *d, int nb)
{
    const int nv = m->nv;
    const double *uf = d->ufree, *sD = SCRATCH_SQRTD(d, nv);
    double *y = SCRATCH_Y(d, nv);
    memset(y, 0, sizeof(double) * (size_t)nv);
    for (int i = 0; i < nb; i++) {
        const double *lam = d->lambda + 3 * i;
        const int *pi = d->con_path + i * nv;
        const double *S = d->Bc + (size_t)(3 * i) * nv;
        for (int t = 0; t < d->con_npath[i]; t++)
            y[pi[t]] = sim_fma(S[2 * nv + t], lam[2], sim_fma(S[nv + t], lam[1], sim_fma(S[t], lam[0], y[pi[t]])));
    }
    for (int k = 0; k < nv; k++) y[k] *= sD[k];
    sim_ltdl_forward(m, d->LD, y);
    for (int k = 0; k < nv; k++) d->u[k] = uf[k] + y[k];
}

/* The step's counts of active contacts and limits, and the limit impulse. */
static inline void count_active(sim_data *d)
{
    const int nc = d->ncon;
    sim_step_stats *st = &d->stats;
    for (int i = 0; i < nc; i++) st->nactive += d->lambda[3 * i + 2] > 0;
    for (int i = nc; i < nc + d->nlim; i++) {
        st->nlim_active += d->lambda[3 * i + 2] > 0;
        st->limit_impulse += d->lambda[3 * i + 2];
    }
}

/* The warm-start caches for the next step: this step's contact keys and impulses, and the joint blocks' impulses
 * by (dof, side). */
static inline void stage_remember_contacts(const sim_model *m, sim_data *d, int nc)
{
    const int nj = d->nlim + d->nfric;
    if (d->njprev) memset(d->prev_jlambda, 0, sizeof(double) * 3 * (size_t)m->nv);
    for (int j = 0; j < nj; j++) d->prev_jlambda[d->jblk[j]] = d->lambda[3 * (nc + j) + 2];
    d->njprev = nj;
    d->nprev = nc;
    for (int i = 0; i < nc; i++) {
        d->prev_key[2 * i] = d->con[i].geom;
        d->prev_key[2 * i + 1] = d->con[i].feature;
        memcpy(d->prev_lambda + 3 * i, d->lambda + 3 * i, sizeof(double) * 3);
    }
}

/* ---- the step ---------------------------------------------------------------------------------------- */

static void stage_contacts(const sim_model *m, sim_data *d, double dt)
{
    const int nc = d->ncon;
    d->stats = (sim_step_stats){.ncon = nc, .converged = 1}; /* the later stages fill the rest when there are blocks */
    d->nlim = d->nfric = 0;
    if (d->nblk_max > d->ncon_max) find_joint_blocks(m, d, nc, dt);
    d->stats.nlim = d->nlim;
    d->stats.nfriction = d->nfric;
    const int nb = nc + d->nlim + d->nfric;
    if (nb > 0) {
        stage_pivots(m, d);
        stage_contact_jacobians(m, d, nc);
        stage_joint_rows(m, d, nc, dt);
        stage_delassus(m, d, nb);
        stage_targets(m, d, nc, dt);
    }
}

static void stage_solve(const sim_model *m, sim_data *d)
{
    const sim_step_opt *o = &m->opt;
    const int nc = d->ncon + d->nlim + d->nfric;
    if (nc <= 0) return;
    sim_solver_stats ss;
    /* an index without a solver (out of range, or a reserved row) acts as the default, never as "no contact" */
    const sim_solver_desc *sd = sim_solver_at(o->solver);
    const int solver = sd && sd->solve ? o->solver : SIM_SOLVER_PAPER_BISECTION;
    if (sim_solver_uses_pre_velocity(solver)) {
        stage_pre_velocity(m, d, nc);
        sim_solve_pre(solver, nc, d->G, d->cfree, d->vpre, d->mu, d->lambda, &o->sp, &ss);
    } else {
        /* G's structure (G = S^T S, S = d->Bc along the contact paths) for the solvers that factor G + rho I
           through the tree (ADMM); the others ignore it */
        const sim_solver_tree tree = {m->nv, m->dof_parent, d->Bc, d->con_path, d->con_npath, m->nv};
        sim_solve_tree(solver, nc, d->G, d->cfree, d->mu, d->lambda, &o->sp, &ss, &tree);
    }
    d->stats.iterations = ss.iterations;
    d->stats.error = ss.error;
    d->stats.converged = ss.converged;
    d->stats.fallback = ss.fallback;
    d->stats.impact = ss.impact;
    d->stats.answer = ss.answer;
}

static int stage_integrate(const sim_model *m, sim_data *d, double dt)
{
    const int nb = d->ncon + d->nlim + d->nfric;
    if (nb > 0) {
        stage_apply_impulses(m, d, nb);
        count_active(d);
    } else {
        memcpy(d->u, d->ufree, sizeof(double) * (size_t)m->nv);
    }
    stage_remember_contacts(m, d, d->ncon);
    sim_integrate_pos(m, d, dt);
    return finite_state(m, d) ? 0 : -1;
}

int sim_step_stages(const sim_model *m, sim_data *d, double dt, sim_stage done, sim_stage last)
{
    int rc = 0;
    for (int s = (int)done + 1; s <= (int)last; s++) {
        switch ((sim_stage)s) {
        case SIM_STAGE_NONE: break;
        case SIM_STAGE_KINEMATICS: sim_kinematics(m, d); break;
        case SIM_STAGE_SMOOTH: /* sim_smooth_dynamics with the implicit-damping factor */
            sim_velocity(m, d);
            sim_crba(m, d);
            sim_factor_damped(m, d, dt);
            sim_rnea(m, d);
            sim_free_velocity(m, d, dt);
            break;
        case SIM_STAGE_COLLISION: d->ncon = sim_collide(m, d, m->opt.margin, dt, d->con, d->ncon_max); break;
        case SIM_STAGE_CONTACTS: stage_contacts(m, d, dt); break;
        case SIM_STAGE_SOLVE: stage_solve(m, d); break;
        case SIM_STAGE_INTEGRATE: rc = stage_integrate(m, d, dt); break;
        }
    }
    return rc;
}

int sim_step(const sim_model *m, sim_data *d, double dt)
{
    return sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);
}

const double *sim_step_pre_velocity(const sim_model *m, sim_data *d)
{
    const int nb = d->ncon + d->nlim + d->nfric;
    if (nb > 0) stage_pre_velocity(m, d, nb);
    return d->vpre;
}

void sim_step_metrics(const sim_model *m, const sim_data *d, double dt, sim_contact_metrics_t *out)
{
    (void)m;
    sim_contact_metrics(d->ncon + d->nlim + d->nfric, d->G, d->cfree, d->mu, d->lambda, dt, out);
}

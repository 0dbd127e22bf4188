/* sim_tree_impl.h — PRIVATE to sim/: the recursions over the kinematic tree that every step runs (forward
 * kinematics, velocities, CRBA, the LTDL factorization and its solves, RNEA, the free velocity), written once over
 * a number type T and included twice:
 *   sim_tree.c   T = double, D = sim_data: one world (the functions of sim_dynamics.h);
 *   sim_batch.c  T = sim_lanes, a vector of SIM_BATCH_LANES doubles, D = sim_batch: one world per lane.
 * No include guard: each includer instantiates it once.
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

/* ---------------------------------------------------------------- kinematics */

static void TN(kinematics)(const sim_model *m, D *d)
{
    T *R0 = d->xrot, *p0 = d->xpos;
    if (m->floating) {
        const T *qq = d->q + 3;
        const T n2 = TFMA(qq[3], qq[3], TFMA(qq[2], qq[2], TFMA(qq[1], qq[1], qq[0] * qq[0])));
        /* renormalize a quaternion that drifted by more than 1e-12 (times exactly 1 otherwise) */
        const TM drift = (n2 > 0) & (TABS(n2 - 1) > 1e-12);
        const T s = TSEL(drift, 1 / TSQRT(n2), TSPLAT(1.0));
        const T w = qq[0] * s, x = qq[1] * s, y = qq[2] * s, z = qq[3] * s;
        R0[0] = 1 - 2 * TFMA(y, y, z * z); R0[1] = 2 * TFMA(x, y, -(w * z)); R0[2] = 2 * TFMA(x, z, w * y);
        R0[3] = 2 * TFMA(x, y, w * z);     R0[4] = 1 - 2 * TFMA(x, x, z * z); R0[5] = 2 * TFMA(y, z, -(w * x));
        R0[6] = 2 * TFMA(x, z, -(w * y));  R0[7] = 2 * TFMA(y, z, w * x);  R0[8] = 1 - 2 * TFMA(x, x, y * y);
        for (int k = 0; k < 3; k++) p0[k] = d->q[k];
    } else {
        const sim_body *b0 = &m->body[0];
        for (int k = 0; k < 9; k++) R0[k] = TSPLAT(b0->rot[k]);
        for (int k = 0; k < 3; k++) p0[k] = TSPLAT(b0->pos[k]);
    }
    for (int k = 0; k < 3; k++) d->ref[k] = p0[k];

    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const T *Rp = d->xrot + 9 * b->parent, *pp = d->xpos + 3 * b->parent;
        T *R = d->xrot + 9 * i, *p = d->xpos + 3 * i;
        T Rbuf[9], t[3];
        const T *Rj = Rp; /* joint frame orientation at q = 0 */
        if (!b->rot_identity) {
            TN(m3_mul_c)(Rbuf, Rp, b->rot);
            Rj = Rbuf;
        }
        TN(m3_mulv_c)(t, Rp, b->pos);
        for (int k = 0; k < 3; k++) p[k] = pp[k] + t[k];
        const T qi = d->q[b->qadr];
        if (b->joint_type == SIM_JOINT_PRISMATIC) {
            T a[3];
            for (int k = 0; k < 9; k++) R[k] = Rj[k];
            TN(m3_mulv_c)(a, Rj, b->axis);
            for (int k = 0; k < 3; k++) p[k] = TFMA(a[k], qi, p[k]);
            continue;
        }
        T sn, cs;
        TSINCOS(qi, sn, cs);
        const int k = b->axis_kind;
        if (k < 3) {
            /* R = Rj Rot(axis, q): for a principal axis only the columns c1 = k + 1 and c2 = k + 2 (mod 3) turn;
               one case per axis, so that the indices are constants */
#define TREE_ROT_COLS(k_, c1_, c2_)                                                                          \
            for (int r = 0; r < 3; r++) {                                                                    \
                const T x1 = Rj[3 * r + (c1_)], x2 = Rj[3 * r + (c2_)];                                      \
                R[3 * r + (k_)] = Rj[3 * r + (k_)];                                                          \
                R[3 * r + (c1_)] = TFMA(cs, x1, sn * x2);                                                    \
                R[3 * r + (c2_)] = TFMA(cs, x2, -(sn * x1));                                                 \
            }
            if (k == 0) { TREE_ROT_COLS(0, 1, 2) }
            else if (k == 1) { TREE_ROT_COLS(1, 2, 0) }
            else { TREE_ROT_COLS(2, 0, 1) }
#undef TREE_ROT_COLS
        } else {
            /* Rodrigues: Ra = c 1 + (1 - c) a a^T + s [a]x, then R = Rj Ra */
            const double *a = b->axis;
            const T c1 = 1 - cs;
            T Ra[9];
            Ra[0] = TFMA(c1 * a[0], TSPLAT(a[0]), cs);
            Ra[1] = TFMA(c1 * a[0], TSPLAT(a[1]), -(sn * a[2]));
            Ra[2] = TFMA(c1 * a[0], TSPLAT(a[2]), sn * a[1]);
            Ra[3] = TFMA(c1 * a[0], TSPLAT(a[1]), sn * a[2]);
            Ra[4] = TFMA(c1 * a[1], TSPLAT(a[1]), cs);
            Ra[5] = TFMA(c1 * a[1], TSPLAT(a[2]), -(sn * a[0]));
            Ra[6] = TFMA(c1 * a[0], TSPLAT(a[2]), -(sn * a[1]));
            Ra[7] = TFMA(c1 * a[1], TSPLAT(a[2]), sn * a[0]);
            Ra[8] = TFMA(c1 * a[2], TSPLAT(a[2]), cs);
            for (int r = 0; r < 3; r++)
                for (int j = 0; j < 3; j++)
                    R[3 * r + j] = TFMA(Rj[3 * r + 2], Ra[6 + j], TFMA(Rj[3 * r + 1], Ra[3 + j], Rj[3 * r] * Ra[j]));
        }
    }

    for (int i = 0; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const T *R = d->xrot + 9 * i;
        T *c = d->xcom + 3 * i, *I = d->cinert + 10 * i;
        T t[3], r[3];
        TN(m3_mulv_c)(t, R, b->com);
        for (int k = 0; k < 3; k++) {
            c[k] = d->xpos[3 * i + k] + t[k];
            r[k] = c[k] - d->ref[k];
        }
        const T mass = i == 0 ? b->mass + d->root_added_mass : TSPLAT(b->mass);
        /* I_ref = R Ic R^T + m (|r|^2 1 - r r^T)  (an added point mass at the COM leaves Ic unchanged) */
        T C[9];
        TN(m3_mul_c)(C, R, b->inertia);
#define ROWDOT(a_, b_) TFMA(C[3 * (a_) + 2], R[3 * (b_) + 2], TFMA(C[3 * (a_) + 1], R[3 * (b_) + 1], C[3 * (a_)] * R[3 * (b_)]))
        const T xx = ROWDOT(0, 0), yy = ROWDOT(1, 1), zz = ROWDOT(2, 2);
        const T xy = ROWDOT(0, 1), xz = ROWDOT(0, 2), yz = ROWDOT(1, 2);
#undef ROWDOT
        I[0] = mass;
        I[1] = mass * r[0]; I[2] = mass * r[1]; I[3] = mass * r[2];
        I[4] = TFMA(mass, TFMA(r[1], r[1], r[2] * r[2]), xx);
        I[5] = TFMA(mass, TFMA(r[0], r[0], r[2] * r[2]), yy);
        I[6] = TFMA(mass, TFMA(r[0], r[0], r[1] * r[1]), zz);
        I[7] = TFMA(-mass, r[0] * r[1], xy);
        I[8] = TFMA(-mass, r[0] * r[2], xz);
        I[9] = TFMA(-mass, r[1] * r[2], yz);
    }

    /* motion subspaces */
    if (m->floating) {
        for (int k = 0; k < 36; k++) d->cdof[k] = TSPLAT(0.0);
        for (int k = 0; k < 3; k++) {
            d->cdof[6 * k + 3 + k] = TSPLAT(1.0); /* world translation */
            T *s = d->cdof + 6 * (3 + k);         /* rotation about base axis k */
            s[0] = R0[k]; s[1] = R0[3 + k]; s[2] = R0[6 + k];
        }
    }
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        T *s = d->cdof + 6 * b->dof;
        const T *R = d->xrot + 9 * i;
        T a[3];
        if (b->axis_kind < 3) {
            a[0] = R[b->axis_kind]; a[1] = R[3 + b->axis_kind]; a[2] = R[6 + b->axis_kind];
        } else {
            TN(m3_mulv_c)(a, R, b->axis);
        }
        if (b->joint_type == SIM_JOINT_PRISMATIC) {
            s[0] = s[1] = s[2] = TSPLAT(0.0);
            for (int k = 0; k < 3; k++) s[3 + k] = a[k];
        } else {
            T r[3];
            for (int k = 0; k < 3; k++) s[k] = a[k], r[k] = d->xpos[3 * i + k] - d->ref[k];
            TN(cross)(s + 3, r, a);
        }
    }
}

/* ---------------------------------------------------------------- velocities */

static void TN(velocity)(const sim_model *m, D *d)
{
    T *v0 = d->cvel;
    for (int j = 0; j < 6; j++) v0[j] = TSPLAT(0.0);
    if (m->floating) {
        for (int k = 0; k < 6; k++) TN(addscl6)(v0, v0, d->cdof + 6 * k, d->u[k]); /* v0 += s_k u_k */
        for (int k = 0; k < 18; k++) d->cdof_dot[k] = TSPLAT(0.0);
        for (int k = 3; k < 6; k++) TN(cross_motion)(d->cdof_dot + 6 * k, v0, d->cdof + 6 * k);
    }
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const T *s = d->cdof + 6 * b->dof;
        T *v = d->cvel + 6 * i;
        TN(addscl6)(v, d->cvel + 6 * b->parent, s, d->u[b->dof]);
        TN(cross_motion)(d->cdof_dot + 6 * b->dof, v, s);
    }
}

/* ---------------------------------------------------------------- CRBA */

static void TN(crba)(const sim_model *m, D *d)
{
    const int nv = m->nv;
    for (int k = 0; k < 10 * m->nbody; k++) d->crb[k] = d->cinert[k];
    for (int i = m->nbody - 1; i > 0; i--) {
        T *p = d->crb + 10 * m->body[i].parent;
        const T *c = d->crb + 10 * i;
        for (int k = 0; k < 10; k++) p[k] = p[k] + c[k];
    }
    /* joint dofs: F = Ic s_k, then M_kj = s_j . F down the ancestors; the floating base's columns are [0; e_j]
     * (translation) and [R e_j; 0] (rotation), so those six dots are cheap */
    const int nb = m->floating ? 6 : 0;
    const T *R0 = d->xrot;
    for (int k = nv - 1; k >= nb; k--) {
        T F[6];
        TN(inert_mul)(F, d->crb + 10 * m->dof_body[k], d->cdof + 6 * k);
        T *row = d->Mp + m->dof_adr[k];
        row[0] = TN(dot6)(F, d->cdof + 6 * k);
        const int *anc = m->dof_anc[k];
        const int na = m->dof_nanc[k] - nb; /* joint ancestors come first (nearest first) */
        for (int t = 0; t < na; t++) row[1 + t] = TN(dot6)(F, d->cdof + 6 * anc[t]);
        if (nb) {
            /* ancestors na .. na+5 are dofs 5, 4, ..., 0: translations F_lin, rotations (R e_c) . F_ang */
            T *bt = row + 1 + na;
            for (int c = 0; c < 3; c++) {
                bt[5 - c] = F[3 + c];
                bt[2 - c] = TFMA(R0[6 + c], F[2], TFMA(R0[3 + c], F[1], R0[c] * F[0]));
            }
        }
    }
    if (nb) {
        /* base block from the total composite inertia (m, h, J) about the base origin:
         * M_tt = m 1, M_rt(j, k) = (R e_j) . (h x e_k), M_rr = R^T J R */
        const T *I = d->crb, *h = I + 1, *J = I + 4;
        const T Jm[9] = {J[0], J[3], J[4], J[3], J[1], J[5], J[4], J[5], J[2]};
        T JR[9], B[36];
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 3; j++) JR[3 * r + j] = TFMA(Jm[3 * r + 2], R0[6 + j], TFMA(Jm[3 * r + 1], R0[3 + j], Jm[3 * r] * R0[j]));
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) {
                B[j * 6 + k] = j == k ? I[0] : TSPLAT(0.0);
                B[(3 + j) * 6 + 3 + k] = TFMA(R0[6 + j], JR[6 + k], TFMA(R0[3 + j], JR[3 + k], R0[j] * JR[k]));
            }
        for (int j = 0; j < 3; j++) {
            /* (R e_j) . (h x e_k): h x e_0 = (0, h2, -h1), h x e_1 = (-h2, 0, h0), h x e_2 = (h1, -h0, 0) */
            const T r0 = R0[j], r1 = R0[3 + j], r2 = R0[6 + j];
            const T v0 = TFMA(r1, h[2], -(r2 * h[1])), v1 = TFMA(r2, h[0], -(r0 * h[2])), v2 = TFMA(r0, h[1], -(r1 * h[0]));
            B[(3 + j) * 6 + 0] = B[0 * 6 + 3 + j] = v0;
            B[(3 + j) * 6 + 1] = B[1 * 6 + 3 + j] = v1;
            B[(3 + j) * 6 + 2] = B[2 * 6 + 3 + j] = v2;
        }
        for (int k = 0; k < 6; k++) {
            T *row = d->Mp + m->dof_adr[k];
            for (int j = 0; j <= k; j++) row[j == k ? 0 : k - j] = B[k * 6 + j];
        }
    }
}

/* ---------------------------------------------------------------- LTDL */

/* Row i of the packed base block (floating base: dofs 0..5 form a chain, packed first). */
#define TREE_BASE_ADR(i) ((i) * ((i) + 1) / 2)

/* M = L^T D L in place of the packed M (Featherstone RBDA 6.3): rows from the leaves up, each row's ancestors
 * being the tail of its own row.  For a floating base every joint row ends with the six base dofs (bt[c] belongs to
 * base dof 5 - c), and its rank-1 update of the base block touches nothing else: the base block is updated in a
 * padded dense copy B, row i holding base dof i's packed row L_i[0..i] in columns 5 - i .. 5 (column c <-> base
 * dof 5 - c), so that each update is a whole-row operation B[i] -= a_i bt (the columns left of 5 - i collect
 * values never read); written back once, then the base chain (a dense 6 x 6) is factored. */
static void TN(factor)(const sim_model *m, D *d)
{
    T *L = d->LD;
    for (int k = 0; k < m->nM; k++) L[k] = d->Mp[k];
    const int nb = m->floating ? 6 : 0;
    T B[6][6];
    if (nb)
        for (int i = 0; i < 6; i++)
            for (int c = 0; c < 6; c++) B[i][c] = c >= 5 - i ? L[TREE_BASE_ADR(i) + c - (5 - i)] : TSPLAT(0.0);
    for (int k = m->nv - 1; k >= nb; k--) {
        const int *anc = m->dof_anc[k];
        const int na = m->dof_nanc[k], nj = na - nb;
        T *Lk = L + m->dof_adr[k];
        const T inv = 1 / Lk[0];
        for (int t = 0; t < nj; t++) {
            /* row i = anc[t] is [D_i, L_i,anc[t+1..]]: its ancestors are the tail of row k's */
            T *restrict Li = L + m->dof_adr[anc[t]];
            const T *restrict tail = Lk + 1 + t;
            const T a = tail[0] * inv;
            for (int u = 0; u < na - t; u++) Li[u] = TFMA(-a, tail[u], Li[u]);
            Lk[1 + t] = a;
        }
        if (nb) {
            T *bt = Lk + 1 + nj, a[6];
            for (int c = 0; c < 6; c++) a[c] = bt[c] * inv; /* a[c] belongs to base dof 5 - c */
            for (int i = 0; i < 6; i++)
                for (int c = 0; c < 6; c++) B[i][c] = TFMA(-a[5 - i], bt[c], B[i][c]);
            for (int c = 0; c < 6; c++) bt[c] = a[c];
        }
    }
    if (nb) {
        for (int i = 0; i < 6; i++)
            for (int u = 0; u <= i; u++) L[TREE_BASE_ADR(i) + u] = B[i][5 - i + u];
        for (int k = 5; k >= 0; k--) { /* the base chain */
            T *Lk = L + TREE_BASE_ADR(k);
            const T inv = 1 / Lk[0];
            for (int t = 0; t < k; t++) {
                T *Li = L + TREE_BASE_ADR(k - 1 - t);
                const T *tail = Lk + 1 + t;
                const T a = tail[0] * inv;
                for (int u = 0; u < k - t; u++) Li[u] = TFMA(-a, tail[u], Li[u]);
                Lk[1 + t] = a;
            }
        }
    }
}

/* x := L^-T x (the first stage of an LTDL solve) */
static inline void TN(ltdl_backward)(const sim_model *m, const T *L, T *x)
{
    const int nv = m->nv, nb = m->floating ? 6 : 0;
    for (int k = nv - 1; k >= nb; k--) {
        const T xk = x[k];
        const int *anc = m->dof_anc[k];
        const int nj = m->dof_nanc[k] - nb;
        const T *Lk = L + m->dof_adr[k] + 1;
        for (int t = 0; t < nj; t++) x[anc[t]] = TFMA(-Lk[t], xk, x[anc[t]]);
        if (nb) {
            const T *bt = Lk + nj;
            for (int j = 0; j < 6; j++) x[5 - j] = TFMA(-bt[j], xk, x[5 - j]);
        }
    }
    if (nb) {
        for (int k = 5; k >= 0; k--) {
            const T xk = x[k];
            const T *Lk = L + TREE_BASE_ADR(k) + 1;
            for (int t = 0; t < k; t++) x[k - 1 - t] = TFMA(-Lk[t], xk, x[k - 1 - t]);
        }
    }
}

/* x := L^-1 x (the last stage) */
static inline void TN(ltdl_forward)(const sim_model *m, const T *L, T *x)
{
    const int nv = m->nv, nb = m->floating ? 6 : 0;
    if (nb) {
        for (int k = 0; k < 6; k++) {
            T xk = x[k];
            const T *Lk = L + TREE_BASE_ADR(k) + 1;
            for (int t = 0; t < k; t++) xk = TFMA(-Lk[t], x[k - 1 - t], xk);
            x[k] = xk;
        }
    }
    for (int k = nb; k < nv; k++) {
        T xk = x[k];
        const int *anc = m->dof_anc[k];
        const int nj = m->dof_nanc[k] - nb;
        const T *Lk = L + m->dof_adr[k] + 1;
        for (int t = 0; t < nj; t++) xk = TFMA(-Lk[t], x[anc[t]], xk);
        if (nb) {
            const T *bt = Lk + nj;
            for (int j = 0; j < 6; j++) xk = TFMA(-bt[j], x[5 - j], xk);
        }
        x[k] = xk;
    }
}

/* x := M^-1 x with the factor L (no inverse is formed) */
static inline void TN(solve_m)(const sim_model *m, const T *L, T *x)
{
    TN(ltdl_backward)(m, L, x);
    for (int k = 0; k < m->nv; k++) x[k] = x[k] / L[m->dof_adr[k]];
    TN(ltdl_forward)(m, L, x);
}
#undef TREE_BASE_ADR

/* ---------------------------------------------------------------- RNEA */

static void TN(rnea)(const sim_model *m, D *d)
{
    T *a0 = d->cacc;
    a0[0] = a0[1] = a0[2] = TSPLAT(0.0);
    for (int k = 0; k < 3; k++) a0[3 + k] = TSPLAT(-m->gravity[k]);
    if (m->floating)
        for (int k = 3; k < 6; k++) TN(addscl6)(a0, a0, d->cdof_dot + 6 * k, d->u[k]);
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        TN(addscl6)(d->cacc + 6 * i, d->cacc + 6 * b->parent, d->cdof_dot + 6 * b->dof, d->u[b->dof]);
    }
    for (int i = 0; i < m->nbody; i++) {
        const T *I = d->cinert + 10 * i, *v = d->cvel + 6 * i;
        T *f = d->cfrc + 6 * i, Iv[6];
        TN(inert_mul2)(f, Iv, I, d->cacc + 6 * i, v);
        /* f += v x* (I v) */
        TN(cross_add)(f, v, Iv);
        TN(cross_add)(f, v + 3, Iv + 3);
        TN(cross_add)(f + 3, v, Iv + 3);
    }
    for (int i = m->nbody - 1; i > 0; i--) {
        T *p = d->cfrc + 6 * m->body[i].parent;
        const T *c = d->cfrc + 6 * i;
        for (int k = 0; k < 6; k++) p[k] = p[k] + c[k];
    }
    for (int k = 0; k < m->nv; k++) d->h[k] = TN(dot6)(d->cdof + 6 * k, d->cfrc + 6 * m->dof_body[k]);
}

/* ---------------------------------------------------------------- free velocity */

/* uf = u + dt M^-1 (tau + passive - h), passive = -damping u on joint dofs (needs the factor and RNEA) */
static void TN(free_velocity)(const sim_model *m, D *d, double dt, T *uf)
{
    const int nv = m->nv, k0 = m->floating ? 6 : 0;
    for (int k = 0; k < k0; k++) uf[k] = TSPLAT(0.0);
    for (int k = k0; k < nv; k++) uf[k] = -m->body[m->dof_body[k]].damping * d->u[k];
    for (int k = 0; k < nv; k++) uf[k] = dt * (uf[k] + d->tau[k] - d->h[k]);
    TN(solve_m)(m, d->LD, uf);
    for (int k = 0; k < nv; k++) uf[k] = uf[k] + d->u[k];
}

/* sim_dynamics.c — forward kinematics, CRBA, RNEA, LTDL factorization and solves, Jacobians and
 * semi-implicit Euler integration (Featherstone, "Rigid Body Dynamics Algorithms", 2008).
 *
 * Every spatial quantity lives in world axes about one reference point d->ref (the root origin at
 * kinematics time, treated as a fixed point of space).  In that single frame, composite inertias
 * are plain sums, motion subspaces are cdof vectors, and the time derivative of a dof's motion
 * vector is v_body x cdof: no per-body coordinate transforms are needed in CRBA or RNEA.
 *
 * The floating base uses MuJoCo's free-joint coordinates: u[0:3] is the world-frame velocity of the
 * base origin (pure translations along world axes: cdof = [0; e_k], constant), u[3:6] the base
 * angular velocity in the base frame (cdof = [R e_k; 0] about the base origin = ref).
 */
#include "sim_dynamics.h"

#include "sim_spatial.h"

#include <string.h>

/* ---------------------------------------------------------------- kinematics */

void sim_kinematics(const sim_model *m, sim_data *d)
{
    const sim_body *b0 = &m->body[0];
    double *R0 = d->xrot, *p0 = d->xpos;
    if (m->floating) {
        const double *qq = d->q + 3;
        double n2 = qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3];
        double quat[4] = {qq[0], qq[1], qq[2], qq[3]};
        if (n2 > 0 && fabs(n2 - 1) > 1e-12) {
            double s = 1 / sqrt(n2);
            for (int k = 0; k < 4; k++) quat[k] *= s;
        }
        quat_to_mat(R0, quat);
        v3_copy(p0, d->q);
    } else {
        memcpy(R0, b0->rot, sizeof(double) * 9);
        v3_copy(p0, b0->pos);
    }
    v3_copy(d->ref, p0);

    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const double *Rp = d->xrot + 9 * b->parent, *pp = d->xpos + 3 * b->parent;
        double *R = d->xrot + 9 * i, *p = d->xpos + 3 * i;
        double Rbuf[9], t[3];
        const double *Rj = Rp;                 /* joint frame orientation at q = 0 */
        if (!b->rot_identity) {
            m3_mul_v(Rbuf, Rp, b->rot);
            Rj = Rbuf;
        }
        m3_mulv(t, Rp, b->pos);
        v3_add(p, pp, t);
        double qi = d->q[b->qadr];
        if (b->joint_type == SIM_JOINT_PRISMATIC) {
            memcpy(R, Rj, sizeof(double) * 9);
            double a[3];
            m3_mulv(a, Rj, b->axis);
            v3_addscl(p, a, qi);
            continue;
        }
        double sn, cs;
        sim_sincos(qi, &sn, &cs);
        /* R = Rj * Rot(axis, q); for a principal axis only two columns change */
        int k = b->axis_kind;
        if (k < 3) {
            /* columns c1 = (k + 1) % 3, c2 = (k + 2) % 3 turn; one case per axis so the indices are constants */
#define ROT_COLS(k_, c1_, c2_)                                      \
            for (int r = 0; r < 3; r++) {                           \
                const double x1 = Rj[3 * r + c1_], x2 = Rj[3 * r + c2_]; \
                R[3 * r + k_] = Rj[3 * r + k_];                     \
                R[3 * r + c1_] = cs * x1 + sn * x2;                 \
                R[3 * r + c2_] = cs * x2 - sn * x1;                 \
            }
            if (k == 0) { ROT_COLS(0, 1, 2) }
            else if (k == 1) { ROT_COLS(1, 2, 0) }
            else { ROT_COLS(2, 0, 1) }
#undef ROT_COLS
        } else {
            double Ra[9];
            m3_axis_angle(Ra, b->axis, sn, cs);
            m3_mul(R, Rj, Ra);
        }
    }

    for (int i = 0; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const double *R = d->xrot + 9 * i;
        double *c = d->xcom + 3 * i, *I = d->cinert + 10 * i;
        double t[3];
        m3_mulv(t, R, b->com);
        v3_add(c, d->xpos + 3 * i, t);
        double r[3];
        v3_sub(r, c, d->ref);
        double mass = i == 0 ? b->mass + d->root_added_mass : b->mass;
        /* I_ref = R Ic R^T + m (|r|^2 1 - r r^T)  (an added point mass at the COM leaves Ic unchanged) */
        double RI[9];
        m3_mul_v(RI, R, b->inertia);
        const double *C = RI;
        double xx = C[0] * R[0] + C[1] * R[1] + C[2] * R[2];
        double yy = C[3] * R[3] + C[4] * R[4] + C[5] * R[5];
        double zz = C[6] * R[6] + C[7] * R[7] + C[8] * R[8];
        double xy = C[0] * R[3] + C[1] * R[4] + C[2] * R[5];
        double xz = C[0] * R[6] + C[1] * R[7] + C[2] * R[8];
        double yz = C[3] * R[6] + C[4] * R[7] + C[5] * R[8];
        I[0] = mass;
        I[1] = mass * r[0]; I[2] = mass * r[1]; I[3] = mass * r[2];
        I[4] = xx + mass * (r[1] * r[1] + r[2] * r[2]);
        I[5] = yy + mass * (r[0] * r[0] + r[2] * r[2]);
        I[6] = zz + mass * (r[0] * r[0] + r[1] * r[1]);
        I[7] = xy - mass * r[0] * r[1];
        I[8] = xz - mass * r[0] * r[2];
        I[9] = yz - mass * r[1] * r[2];
    }

    /* motion subspaces */
    if (m->floating) {
        for (int k = 0; k < 6; k++) memset(d->cdof + 6 * k, 0, sizeof(double) * 6);
        for (int k = 0; k < 3; k++) {
            d->cdof[6 * k + 3 + k] = 1.0;                 /* world translation */
            double *s = d->cdof + 6 * (3 + k);            /* rotation about base axis k */
            s[0] = R0[k]; s[1] = R0[3 + k]; s[2] = R0[6 + k];
        }
    }
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        double *s = d->cdof + 6 * b->dof;
        double a[3];
        const double *R = d->xrot + 9 * i;
        if (b->axis_kind < 3) {
            a[0] = R[b->axis_kind]; a[1] = R[3 + b->axis_kind]; a[2] = R[6 + b->axis_kind];
        } else {
            m3_mulv(a, R, b->axis);
        }
        if (b->joint_type == SIM_JOINT_PRISMATIC) {
            s[0] = s[1] = s[2] = 0;
            v3_copy(s + 3, a);
        } else {
            double r[3];
            v3_copy(s, a);
            v3_sub(r, d->xpos + 3 * i, d->ref);
            v3_cross(s + 3, r, a);
        }
    }
}

/* ---------------------------------------------------------------- velocities */

void sim_velocity(const sim_model *m, sim_data *d)
{
    double *v0 = d->cvel;
    memset(v0, 0, sizeof(double) * 6);
    if (m->floating) {
        for (int k = 0; k < 6; k++) sv6_addscl(v0, v0, d->cdof + 6 * k, d->u[k]); /* v0 += s_k u_k */
        for (int k = 0; k < 3; k++) memset(d->cdof_dot + 6 * k, 0, sizeof(double) * 6);
        for (int k = 3; k < 6; k++) sv_cross_motion(d->cdof_dot + 6 * k, v0, d->cdof + 6 * k);
    }
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        const double *s = d->cdof + 6 * b->dof;
        double *v = d->cvel + 6 * i;
        sv6_addscl(v, d->cvel + 6 * b->parent, s, d->u[b->dof]);
        sv_cross_motion(d->cdof_dot + 6 * b->dof, v, s);
    }
}

/* ---------------------------------------------------------------- CRBA */

void sim_crba(const sim_model *m, sim_data *d)
{
    const int nv = m->nv;
    memcpy(d->crb, d->cinert, sizeof(double) * 10 * (size_t)m->nbody);
    for (int i = m->nbody - 1; i > 0; i--) {
        si10_add(d->crb + 10 * m->body[i].parent, d->crb + 10 * i);
    }
    /* joint dofs: F = Ic s_k, then M_kj = s_j . F down the ancestors; the floating base's columns
     * are [0; e_j] (translation) and [R e_j; 0] (rotation), so those six dots are cheap */
    const int nb = m->floating ? 6 : 0;
    const double *R0 = d->xrot;
    for (int k = nv - 1; k >= nb; k--) {
        double F[6];
        sinert_mul(F, d->crb + 10 * m->dof_body[k], d->cdof + 6 * k);
        double *row = d->Mp + m->dof_adr[k];
        double v = sv_dot(F, d->cdof + 6 * k);
        row[0] = v;
        const int *anc = m->dof_anc[k];
        const int na = m->dof_nanc[k] - nb;   /* joint ancestors come first (nearest first) */
        for (int t = 0; t < na; t++) {
            int j = anc[t];
            v = sv_dot(F, d->cdof + 6 * j);
            row[1 + t] = v;
        }
        if (nb) {
            /* ancestors na .. na+5 are dofs 5, 4, ..., 0 */
            double base[6];
            base[0] = F[3]; base[1] = F[4]; base[2] = F[5];
            for (int c = 0; c < 3; c++) base[3 + c] = R0[c] * F[0] + R0[3 + c] * F[1] + R0[6 + c] * F[2];
            for (int j = 5; j >= 0; j--) row[1 + na + (5 - j)] = base[j];
        }
    }
    if (nb) {
        /* base block from the total composite inertia (m, h, J) about the base origin:
         * M_tt = m I, M_rt(j,k) = r_j . (h x e_k), M_rr = R^T J R */
        const double *I = d->crb, *h = I + 1, *J = I + 4;
        double Jm[9] = {J[0], J[3], J[4], J[3], J[1], J[5], J[4], J[5], J[2]}, JR[9], B[36];
        m3_mul_v(JR, Jm, R0);
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) {
                B[j * 6 + k] = j == k ? I[0] : 0;
                double rr = 0;
                for (int c = 0; c < 3; c++) rr += R0[3 * c + j] * JR[3 * c + k];
                B[(3 + j) * 6 + 3 + k] = rr;
            }
        for (int j = 0; j < 3; j++) {
            const double r[3] = {R0[j], R0[3 + j], R0[6 + j]};
            for (int k = 0; k < 3; k++) {
                double e[3] = {0, 0, 0}, hx[3];
                e[k] = 1;
                v3_cross(hx, h, e);
                double v = v3_dot(r, hx);
                B[(3 + j) * 6 + k] = v;
                B[k * 6 + 3 + j] = v;
            }
        }
        for (int k = 0; k < 6; k++) {
            double *row = d->Mp + m->dof_adr[k];
            for (int j = 0; j <= k; j++) row[j == k ? 0 : k - j] = B[k * 6 + j];
        }
    }
}

/* ---------------------------------------------------------------- LTDL */

/* Row i of the packed base block (floating base: dofs 0..5 form a chain, packed first). */
#define BASE_ADR(i) ((i) * ((i) + 1) / 2)

/* LTDL of the packed 6-dof base chain in place (rows k = 5..0, row k at BASE_ADR(k)); constant trip counts, so
 * the compiler unrolls it completely.  Same operations in the same order as the generic tree loop. */
static inline void base_chain_factor(double *L)
{
#pragma GCC unroll 6
    for (int k = 5; k >= 0; k--) {
        double *Lk = L + BASE_ADR(k);
        const double inv = 1.0 / Lk[0];
#pragma GCC unroll 6
        for (int t = 0; t < k; t++) {
            double *Li = L + BASE_ADR(k - 1 - t);
            const double *tail = Lk + 1 + t;
            const double a = tail[0] * inv;
#pragma GCC unroll 6
            for (int u = 0; u < k - t; u++) Li[u] -= a * tail[u];
            Lk[1 + t] = a;
        }
    }
}

void sim_factor(const sim_model *m, sim_data *d)
{
    double *L = d->LD;
    memcpy(L, d->Mp, sizeof(double) * (size_t)m->nM);
    const int nb = m->floating ? 6 : 0;
    /* Floating base: every joint dof's row ends with the six base dofs (bt[c] belongs to base dof 5 - c), and its
     * rank-1 update of the packed base triangle touches nothing else.  So the base block is updated in a padded
     * dense copy: row i holds base dof i's packed row Li[0..i] in columns 5 - i .. 5 (column c <-> base dof 5 - c),
     * so that the update Li[u] -= a_i bt[5 - i + u] is row_i -= a_i bt, a whole-vector operation (four + two lanes,
     * the rows kept in registers across the joint rows); written back once.  Each element gets the same fused
     * updates in the same order as the packed loop: bit-identical. */
    sim_v4d_ B4[6];
    sim_v2d_ B2[6];
    memset(B4, 0, sizeof B4), memset(B2, 0, sizeof B2); /* (a fixed base leaves them unused) */
    if (nb) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            double row[6] = {0, 0, 0, 0, 0, 0};
            memcpy(row + 5 - i, L + BASE_ADR(i), sizeof(double) * (size_t)(i + 1));
            memcpy(&B4[i], row, sizeof B4[i]), memcpy(&B2[i], row + 4, sizeof B2[i]);
        }
    }
    for (int k = m->nv - 1; k >= nb; k--) {
        const int *anc = m->dof_anc[k];
        const int na = m->dof_nanc[k], nj = na - nb;
        double *Lk = L + m->dof_adr[k];
        double inv = 1.0 / Lk[0];
        for (int t = 0; t < nj; t++) {
            /* row i = anc[t] is [D_i, L_i,anc[t+1..]]: its ancestors are the tail of row k's */
            double *restrict Li = L + m->dof_adr[anc[t]];
            const double *restrict tail = Lk + 1 + t;
            double a = tail[0] * inv;
            for (int u = 0; u < na - t; u++) Li[u] -= a * tail[u];
            Lk[1 + t] = a;
        }
        if (nb) {
            /* the base part of row k */
            double *bt = Lk + 1 + nj;
            sim_v4d_ b4;
            sim_v2d_ b2;
            memcpy(&b4, bt, sizeof b4), memcpy(&b2, bt + 4, sizeof b2);
            const sim_v4d_ a4 = b4 * inv;
            const sim_v2d_ a2 = b2 * inv;
            const double a[6] = {a2[1], a2[0], a4[3], a4[2], a4[1], a4[0]}; /* a[i] belongs to base dof i */
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) {
                if (i >= 2) B4[i] -= a[i] * b4;
                B2[i] -= a[i] * b2;
            }
            memcpy(bt, &a4, sizeof a4), memcpy(bt + 4, &a2, sizeof a2);
        }
    }
    if (nb) {
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            double row[6];
            memcpy(row, &B4[i], sizeof B4[i]), memcpy(row + 4, &B2[i], sizeof B2[i]);
            memcpy(L + BASE_ADR(i), row + 5 - i, sizeof(double) * (size_t)(i + 1));
        }
        base_chain_factor(L); /* the base chain itself: a dense 6 x 6, fully unrolled */
    }
}

/* x := L^-T x (the first stage of an LTDL solve).  For a floating base, a joint dof's row ends with the six base
 * dofs 5, 4, ..., 0 (the layout sim_factor uses): that part runs as a fixed-size loop with no index loads; the
 * terms are added in the same order as the generic loop, so the result is bit-identical to it. */
static inline void ltdl_backward(const sim_model *m, const double *L, double *x)
{
    const int nv = m->nv, nb = m->floating ? 6 : 0;
    for (int k = nv - 1; k >= nb; k--) {
        const double xk = x[k];
        const int *anc = m->dof_anc[k];
        const int nj = m->dof_nanc[k] - nb;
        const double *Lk = L + m->dof_adr[k] + 1;
        for (int t = 0; t < nj; t++) x[anc[t]] -= Lk[t] * xk;
        if (nb) {
            const double *bt = Lk + nj;
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++) x[5 - j] -= bt[j] * xk;
        }
    }
    if (nb) {
#pragma GCC unroll 6
        for (int k = 5; k >= 0; k--) {
            const double xk = x[k];
            const double *Lk = L + BASE_ADR(k) + 1;
#pragma GCC unroll 6
            for (int t = 0; t < k; t++) x[k - 1 - t] -= Lk[t] * xk;
        }
    }
}

void sim_ltdl_forward(const sim_model *m, const double *L, double *x)
{
    const int nv = m->nv, nb = m->floating ? 6 : 0;
    if (nb) {
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++) {
            double xk = x[k];
            const double *Lk = L + BASE_ADR(k) + 1;
#pragma GCC unroll 6
            for (int t = 0; t < k; t++) xk -= Lk[t] * x[k - 1 - t];
            x[k] = xk;
        }
    }
    for (int k = nb; k < nv; k++) {
        double xk = x[k];
        const int *anc = m->dof_anc[k];
        const int nj = m->dof_nanc[k] - nb;
        const double *Lk = L + m->dof_adr[k] + 1;
        for (int t = 0; t < nj; t++) xk -= Lk[t] * x[anc[t]];
        if (nb) {
            const double *bt = Lk + nj;
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++) xk -= bt[j] * x[5 - j];
        }
        x[k] = xk;
    }
}

void sim_solve_m(const sim_model *m, const sim_data *d, double *x)
{
    const int nv = m->nv;
    const double *L = d->LD;
    ltdl_backward(m, L, x);
    for (int k = 0; k < nv; k++) x[k] /= L[m->dof_adr[k]];
    sim_ltdl_forward(m, L, x);
}

void sim_solve_m_multi(const sim_model *m, const sim_data *d, double *X, int k)
{
    for (int j = 0; j < k; j++) sim_solve_m(m, d, X + (size_t)j * m->nv);
}

void sim_full_m(const sim_model *m, sim_data *d)
{
    const int nv = m->nv;
    for (int k = 0; k < nv; k++) {
        const double *row = d->Mp + m->dof_adr[k];
        d->M[k * nv + k] = row[0];
        for (int t = 0; t < m->dof_nanc[k]; t++) {
            const int j = m->dof_anc[k][t];
            d->M[k * nv + j] = d->M[j * nv + k] = row[1 + t];
        }
    }
}

void sim_mul_m(const sim_model *m, const sim_data *d, const double *x, double *y)
{
    const int nv = m->nv;
    for (int k = 0; k < nv; k++) y[k] = d->Mp[m->dof_adr[k]] * x[k];
    for (int k = 0; k < nv; k++) {
        const double *row = d->Mp + m->dof_adr[k] + 1;
        for (int t = 0; t < m->dof_nanc[k]; t++) { /* ancestors nearest first */
            const int i = m->dof_anc[k][t];
            const double mki = row[t];
            y[k] += mki * x[i];
            y[i] += mki * x[k];
        }
    }
}

/* ---------------------------------------------------------------- RNEA */

void sim_rnea(const sim_model *m, sim_data *d)
{
    double *a0 = d->cacc;
    a0[0] = a0[1] = a0[2] = 0;
    a0[3] = -m->gravity[0]; a0[4] = -m->gravity[1]; a0[5] = -m->gravity[2];
    if (m->floating)
        for (int k = 3; k < 6; k++) sv6_addscl(a0, a0, d->cdof_dot + 6 * k, d->u[k]);
    for (int i = 1; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        sv6_addscl(d->cacc + 6 * i, d->cacc + 6 * b->parent, d->cdof_dot + 6 * b->dof, d->u[b->dof]);
    }
    for (int i = 0; i < m->nbody; i++) {
        const double *I = d->cinert + 10 * i, *v = d->cvel + 6 * i;
        double *f = d->cfrc + 6 * i, Iv[6];
        sinert_mul2(f, Iv, I, d->cacc + 6 * i, v);
        sv_cross_force_add(f, v, Iv);
    }
    for (int i = m->nbody - 1; i > 0; i--) {
        sv6_add(d->cfrc + 6 * m->body[i].parent, d->cfrc + 6 * i);
    }
    for (int k = 0; k < m->nv; k++) d->h[k] = sv_dot(d->cdof + 6 * k, d->cfrc + 6 * m->dof_body[k]);
}

void sim_smooth_dynamics(const sim_model *m, sim_data *d)
{
    sim_velocity(m, d);
    sim_crba(m, d);
    sim_factor(m, d);
    sim_rnea(m, d);
}

void sim_smooth(const sim_model *m, sim_data *d)
{
    sim_kinematics(m, d);
    sim_smooth_dynamics(m, d);
}

void sim_passive(const sim_model *m, const sim_data *d, double *out)
{
    int k0 = m->floating ? 6 : 0;
    for (int k = 0; k < k0; k++) out[k] = 0;
    for (int k = k0; k < m->nv; k++) out[k] = -m->body[m->dof_body[k]].damping * d->u[k];
}

void sim_forward(const sim_model *m, sim_data *d)
{
    sim_passive(m, d, d->udot);
    for (int k = 0; k < m->nv; k++) d->udot[k] += d->tau[k] - d->h[k];
    sim_solve_m(m, d, d->udot);
}

/* ---------------------------------------------------------------- points and Jacobians */

void sim_point_world(const sim_model *m, const sim_data *d, int b, const double local[3], double out[3])
{
    (void)m;
    double t[3];
    m3_mulv(t, d->xrot + 9 * b, local);
    v3_add(out, d->xpos + 3 * b, t);
}

/* Last dof on the path from the root to body b (-1 if none). */
static int body_last_dof(const sim_model *m, int b)
{
    if (b > 0) return m->body[b].dof;
    return m->floating ? 5 : -1;
}

int sim_jacobian_sparse(const sim_model *m, const sim_data *d, int b, const double pworld[3],
                        double *jp, int *cols)
{
    const int nv = m->nv;
    double r[3];
    v3_sub(r, pworld, d->ref);
    int n = 0;
    for (int k = body_last_dof(m, b); k >= 0; k = m->dof_parent[k]) {
        const double *s = d->cdof + 6 * k;
        /* v_point = v_lin + w x r */
        jp[0 * nv + k] = s[3] + s[1] * r[2] - s[2] * r[1];
        jp[1 * nv + k] = s[4] + s[2] * r[0] - s[0] * r[2];
        jp[2 * nv + k] = s[5] + s[0] * r[1] - s[1] * r[0];
        if (cols) cols[n] = k;
        n++;
    }
    return n;
}

int sim_jacobian_sparse_vel(const sim_model *m, const sim_data *d, int b, const double pworld[3],
                            double *jp, int *cols, double v[3])
{
    const int nv = m->nv;
    double r[3];
    v3_sub(r, pworld, d->ref);
    double v0 = 0, v1 = 0, v2 = 0;
    int n = 0;
    for (int k = body_last_dof(m, b); k >= 0; k = m->dof_parent[k]) {
        const double *s = d->cdof + 6 * k, uk = d->u[k];
        const double j0 = s[3] + s[1] * r[2] - s[2] * r[1];
        const double j1 = s[4] + s[2] * r[0] - s[0] * r[2];
        const double j2 = s[5] + s[0] * r[1] - s[1] * r[0];
        jp[k] = j0, jp[nv + k] = j1, jp[2 * nv + k] = j2;
        v0 += j0 * uk, v1 += j1 * uk, v2 += j2 * uk;
        cols[n++] = k;
    }
    v[0] = v0, v[1] = v1, v[2] = v2;
    return n;
}

void sim_jacobian(const sim_model *m, const sim_data *d, int b, const double pworld[3], double *jp, double *jr)
{
    const int nv = m->nv;
    memset(jp, 0, sizeof(double) * 3 * (size_t)nv);
    sim_jacobian_sparse(m, d, b, pworld, jp, NULL);
    if (jr) {
        memset(jr, 0, sizeof(double) * 3 * (size_t)nv);
        for (int k = body_last_dof(m, b); k >= 0; k = m->dof_parent[k])
            for (int j = 0; j < 3; j++) jr[j * nv + k] = d->cdof[6 * k + j];
    }
}

/* ---------------------------------------------------------------- integration */

void sim_integrate_pos(const sim_model *m, sim_data *d, double dt)
{
    int k0 = 0;
    if (m->floating) {
        for (int k = 0; k < 3; k++) d->q[k] += dt * d->u[k];
        const double *w = d->u + 3;
        double wn = v3_norm(w), half = 0.5 * dt * wn;
        double dq[4] = {1, 0, 0, 0};
        if (wn > 1e-300) {
            double s, c;
            sincos(half, &s, &c);
            double f = s / wn;
            dq[0] = c; dq[1] = w[0] * f; dq[2] = w[1] * f; dq[3] = w[2] * f;
        }
        double qn[4];
        quat_mul(qn, d->q + 3, dq);          /* body-frame angular velocity: right multiplication */
        double n = 1 / sqrt(qn[0] * qn[0] + qn[1] * qn[1] + qn[2] * qn[2] + qn[3] * qn[3]);
        for (int k = 0; k < 4; k++) d->q[3 + k] = qn[k] * n;
        k0 = 6;
    }
    for (int k = k0; k < m->nv; k++) d->q[m->body[m->dof_body[k]].qadr] += dt * d->u[k];
    d->time += dt;
}

void sim_integrate(const sim_model *m, sim_data *d, double dt)
{
    for (int k = 0; k < m->nv; k++) d->u[k] += dt * d->udot[k];
    sim_integrate_pos(m, d, dt);
}

/* ---------------------------------------------------------------- energy and momentum */

double sim_energy_kinetic(const sim_model *m, const sim_data *d)
{
    double *y = d->scratch;
    sim_mul_m(m, d, d->u, y);
    double e = 0;
    for (int k = 0; k < m->nv; k++) e += d->u[k] * y[k];
    return 0.5 * e;
}

double sim_energy_potential(const sim_model *m, const sim_data *d)
{
    double e = 0;
    for (int i = 0; i < m->nbody; i++) e -= d->cinert[10 * i] * v3_dot(m->gravity, d->xcom + 3 * i);
    return e;
}

void sim_momentum(const sim_model *m, const sim_data *d, double out[6])
{
    memset(out, 0, sizeof(double) * 6);
    for (int i = 0; i < m->nbody; i++) {
        double f[6];
        sinert_mul(f, d->cinert + 10 * i, d->cvel + 6 * i);
        for (int j = 0; j < 6; j++) out[j] += f[j];
    }
    /* shift the moment from ref to the world origin: n_O = n_ref + ref x f */
    v3_cross_add(out, d->ref, out + 3);
}

/* sim_tree_kinematics_impl.h — PRIVATE to sim/: forward kinematics: body poses (xpos, xrot), the reference point,
 * centres of mass, motion subspaces cdof and spatial inertias about the reference point, written over the number type
 * T of sim_tree_impl.h (its macros and small algebra), which includes this file; no include guard. */

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

/* sim_tree_crba_impl.h — PRIVATE to sim/: the composite-rigid-body algorithm: the joint-space mass matrix M (with
 * each joint's armature on its diagonal), packed along the tree, written over the number type T of sim_tree_impl.h
 * (its macros and small algebra), which includes this file; no include guard. */

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
        const double arm = m->body[m->dof_body[k]].armature; /* rotor inertia on the diagonal (MuJoCo's armature) */
        if (arm > 0) row[0] = row[0] + TSPLAT(arm);
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

/* sim_tree_ltdl_impl.h — PRIVATE to sim/: the LTDL factorization M = L^T D L in place, and the solves with its
 * factors, written over the number type T of sim_tree_impl.h (its macros and small algebra), which includes this file;
 * no include guard. */

/* Row i of the packed base block (floating base: dofs 0..5 form a chain, packed first). */
#define TREE_BASE_ADR(i) ((i) * ((i) + 1) / 2)

/* M = L^T D L (of M + dt diag(damping) when dt > 0) in place of the packed M (Featherstone RBDA 6.3): rows from
 * the leaves up, each row's ancestors being the tail of its own row.  For a floating base every joint row ends with
 * the six base dofs (bt[c] belongs to base dof 5 - c), and its rank-1 update of the base block touches nothing
 * else: the base block is updated in a padded dense copy B, row i holding base dof i's packed row L_i[0..i] in
 * columns 5 - i .. 5 (column c <-> base dof 5 - c), so that each update is a whole-row operation B[i] -= a_i bt
 * (the columns left of 5 - i collect values never read); written back once, then the base chain (a dense 6 x 6)
 * is factored. */
static void TN(factor)(const sim_model *m, D *d, double dt)
{
    T *L = d->LD;
    for (int k = 0; k < m->nM; k++) L[k] = d->Mp[k];
    const int nb = m->floating ? 6 : 0;
    /* dt > 0: the factor of M + dt diag(damping), the implicit-damping matrix of the velocity update */
    if (dt > 0)
        for (int k = nb; k < m->nv; k++) {
            const double c = m->body[m->dof_body[k]].damping;
            if (c > 0) L[m->dof_adr[k]] = L[m->dof_adr[k]] + TSPLAT(dt * c);
        }
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

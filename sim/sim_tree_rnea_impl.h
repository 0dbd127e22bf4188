/* sim_tree_rnea_impl.h — PRIVATE to sim/: the recursive Newton-Euler bias forces h (Coriolis, centrifugal, gravity),
 * written over the number type T of sim_tree_impl.h (its macros and small algebra), which includes this file; no
 * include guard. */

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

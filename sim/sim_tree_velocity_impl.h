/* sim_tree_velocity_impl.h — PRIVATE to sim/: body velocities cvel and the motion subspaces' rates cdof_dot, written
 * over the number type T of sim_tree_impl.h (its macros and small algebra), which includes this file; no include
 * guard. */

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

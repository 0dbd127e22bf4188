/* sim_tree_free_velocity_impl.h — PRIVATE to sim/: the free velocity ufree = u + dt M^-1 (tau + passive - h) (needs
 * the factor and RNEA), written over the number type T of sim_tree_impl.h (its macros and small algebra), which
 * includes this file; no include guard. */

/* uf = u + dt M^-1 (tau + passive - h), passive = -damping u on joint dofs (needs the factor and RNEA).  With the
 * factor of M + dt diag(damping) (factor's dt > 0) this is the implicit-damping update of MuJoCo's Euler integrator:
 * (M + dt diag(damping)) (uf - u) = dt (tau - damping u - h). */
static void TN(free_velocity)(const sim_model *m, D *d, double dt, T *uf)
{
    const int nv = m->nv, k0 = m->floating ? 6 : 0;
    for (int k = 0; k < k0; k++) uf[k] = TSPLAT(0.0);
    for (int k = k0; k < nv; k++) uf[k] = -m->body[m->dof_body[k]].damping * d->u[k];
    for (int k = 0; k < nv; k++) uf[k] = dt * (uf[k] + d->tau[k] - d->h[k]);
    TN(solve_m)(m, d->LD, uf);
    for (int k = 0; k < nv; k++) uf[k] = uf[k] + d->u[k];
}

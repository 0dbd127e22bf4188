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

/* The tree recursions (sim_kinematics, sim_velocity, sim_crba, sim_factor, the LTDL solves, sim_rnea) are in
 * sim_tree.c, written once for one world and for a batch of worlds (sim_tree_impl.h). */

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
    const double *R = d->xrot + 9 * b, *x = d->xpos + 3 * b;
    const double t0 = sim_fma(R[2], local[2], sim_fma(R[1], local[1], R[0] * local[0]));
    const double t1 = sim_fma(R[5], local[2], sim_fma(R[4], local[1], R[3] * local[0]));
    const double t2 = sim_fma(R[8], local[2], sim_fma(R[7], local[1], R[6] * local[0]));
    out[0] = x[0] + t0, out[1] = x[1] + t1, out[2] = x[2] + t2;
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
        double j[3]; /* v_point = v_lin + w x r */
        sim_point_vel(j, s, r);
        jp[0 * nv + k] = j[0];
        jp[1 * nv + k] = j[1];
        jp[2 * nv + k] = j[2];
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
        double j[3];
        sim_point_vel(j, s, r);
        jp[k] = j[0], jp[nv + k] = j[1], jp[2 * nv + k] = j[2];
        v0 = sim_fma(j[0], uk, v0), v1 = sim_fma(j[1], uk, v1), v2 = sim_fma(j[2], uk, v2);
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

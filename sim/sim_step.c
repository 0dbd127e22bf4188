/* sim_step.c — the contact step.  See sim_step.h. */
#include "sim_step.h"

#include "sim_dynamics.h"
#include "sim_math.h"

#include <time.h>

/* B = L^-T J^T for one Jacobian row: the first stage of an LTDL solve.  Starting from a vector whose
 * support is a root-to-body path, the result keeps that support, so only path entries are touched. */
static void ltdl_backward(const sim_model *m, const sim_data *d, double *x, const int *path, int npath)
{
    /* path[] lists dofs from the body up to the root (decreasing index) */
    for (int t = 0; t < npath; t++) {
        int k = path[t];
        double xk = x[k];
        if (xk == 0) continue;
        const int *anc = m->dof_anc[k];
        const double *Lk = d->LD + m->dof_adr[k] + 1;
        for (int u = 0; u < m->dof_nanc[k]; u++) x[anc[u]] -= Lk[u] * xk;
    }
}

/* x := L^-1 x (the last stage of an LTDL solve), dense. */
static void ltdl_forward(const sim_model *m, const sim_data *d, double *x)
{
    for (int k = 0; k < m->nv; k++) {
        double xk = x[k];
        const int *anc = m->dof_anc[k];
        const double *Lk = d->LD + m->dof_adr[k] + 1;
        for (int u = 0; u < m->dof_nanc[k]; u++) xk -= Lk[u] * x[anc[u]];
        x[k] = xk;
    }
}

/* Finds the warm start of contact (geom, feature) in the previous step's cache. */
static const double *warm_start(const sim_data *d, int geom, int feature)
{
    for (int j = 0; j < d->nprev; j++)
        if (d->prev_key[2 * j] == geom && d->prev_key[2 * j + 1] == feature) return d->prev_lambda + 3 * j;
    return NULL;
}

void sim_step_forget_contacts(sim_data *d) { d->nprev = 0; }

const double *sim_step_contact_jacobian(const sim_model *m, const sim_data *d, int k)
{
    return d->Jc + (size_t)3 * k * m->nv;
}

static int finite_state(const sim_model *m, const sim_data *d)
{
    double s = 0;
    for (int k = 0; k < m->nq; k++) s += d->q[k];
    for (int k = 0; k < m->nv; k++) s += d->u[k];
    return isfinite(s);
}

int sim_step(const sim_model *m, sim_data *d, double dt)
{
    const int nv = m->nv;
    const sim_step_opt *o = &m->opt;
    sim_step_stats *st = &d->stats;
    sim_smooth(m, d);

    /* free velocity: u + dt M^-1 (tau + passive - h) */
    double *uf = d->ufree;
    sim_passive(m, d, uf);
    for (int k = 0; k < nv; k++) uf[k] = dt * (uf[k] + d->tau[k] - d->h[k]);
    sim_solve_m(m, d, uf);
    for (int k = 0; k < nv; k++) uf[k] += d->u[k];

    int nc = sim_collide(m, d, o->margin, dt, d->con, d->ncon_max);
    d->ncon = nc;
    st->ncon = nc;
    st->nactive = 0;
    st->iterations = 0;
    st->error = 0;
    st->converged = 1;
    st->penetration = 0;
    st->ns_solver = 0;

    if (nc > 0) {
        const int n3 = 3 * nc;
        /* Jacobians in contact frames and B = L^-T J^T, row by row */
        double *Jw = d->scratch; /* 3 x nv world Jacobian of the point */
        int path[SIM_MAX_DOF];
        for (int i = 0; i < nc; i++) {
            const sim_contact *c = &d->con[i];
            if (-c->gap > st->penetration) st->penetration = -c->gap;
            int np = sim_jacobian_sparse(m, d, c->body, c->pos, Jw, path);
            d->con_npath[i] = np;
            memcpy(d->con_path + i * nv, path, sizeof(int) * (size_t)np);
            for (int a = 0; a < 3; a++) {
                double *J = d->Jc + (size_t)(3 * i + a) * nv, *B = d->Bc + (size_t)(3 * i + a) * nv;
                const double *f = c->frame + 3 * a;
                memset(J, 0, sizeof(double) * (size_t)nv);
                for (int t = 0; t < np; t++) {
                    int k = path[t];
                    J[k] = f[0] * Jw[k] + f[1] * Jw[nv + k] + f[2] * Jw[2 * nv + k];
                }
                memcpy(B, J, sizeof(double) * (size_t)nv);
                ltdl_backward(m, d, B, path, np);
            }
        }
        /* Delassus G = B^T D^-1 B over the shared support (the common ancestors' dofs) */
        double *invD = d->scratch + 3 * nv;
        for (int k = 0; k < nv; k++) invD[k] = 1.0 / d->LD[m->dof_adr[k]];
        double *G = d->G;
        for (int i = 0; i < nc; i++) {
            const int *pi = d->con_path + i * nv;
            int npi = d->con_npath[i];
            for (int j = i; j < nc; j++) {
                /* the support of B_j is path j; the intersection lies in path i */
                for (int a = 0; a < 3; a++) {
                    const double *Ba = d->Bc + (size_t)(3 * i + a) * nv;
                    for (int b = (j == i ? a : 0); b < 3; b++) {
                        const double *Bb = d->Bc + (size_t)(3 * j + b) * nv;
                        double s = 0;
                        for (int t = 0; t < npi; t++) {
                            int k = pi[t];
                            s += Ba[k] * Bb[k] * invD[k];
                        }
                        G[(3 * i + a) * n3 + 3 * j + b] = s;
                        G[(3 * j + b) * n3 + 3 * i + a] = s;
                    }
                }
            }
        }
        /* free contact velocities, with the gap-aware / erp targets */
        for (int i = 0; i < nc; i++) {
            const sim_contact *c = &d->con[i];
            for (int a = 0; a < 3; a++) {
                const double *J = d->Jc + (size_t)(3 * i + a) * nv;
                double s = 0;
                for (int t = 0; t < d->con_npath[i]; t++) {
                    int k = d->con_path[i * nv + t];
                    s += J[k] * uf[k];
                }
                d->cfree[3 * i + a] = s;
            }
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
        sim_solver_stats ss;
        struct timespec t0, t1;
        if (o->profile) clock_gettime(CLOCK_MONOTONIC, &t0);
        if (o->solver == SIM_SOLVER_PGS)
            sim_solve_pgs(nc, G, d->cfree, d->mu, d->lambda, &o->sp, &ss);
        else
            sim_solve_bisection(nc, G, d->cfree, d->mu, d->lambda, &o->sp, &ss);
        if (o->profile) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            st->ns_solver = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        }
        st->iterations = ss.iterations;
        st->error = ss.error;
        st->converged = ss.converged;

        /* u+ = u_free + M^-1 J^T lambda = u_free + L^-1 D^-1 (B lambda) */
        double *y = d->scratch + 2 * nv;
        memset(y, 0, sizeof(double) * (size_t)nv);
        for (int i = 0; i < nc; i++) {
            const double *lam = d->lambda + 3 * i;
            if (lam[2] > 0) st->nactive++;
            for (int a = 0; a < 3; a++) {
                if (lam[a] == 0) continue;
                const double *B = d->Bc + (size_t)(3 * i + a) * nv;
                for (int t = 0; t < d->con_npath[i]; t++) {
                    int k = d->con_path[i * nv + t];
                    y[k] += B[k] * lam[a];
                }
            }
        }
        for (int k = 0; k < nv; k++) y[k] *= invD[k];
        ltdl_forward(m, d, y);
        for (int k = 0; k < nv; k++) d->u[k] = uf[k] + y[k];
    } else {
        memcpy(d->u, uf, sizeof(double) * (size_t)nv);
    }

    /* warm-start cache for the next step */
    d->nprev = nc;
    for (int i = 0; i < nc; i++) {
        d->prev_key[2 * i] = d->con[i].geom;
        d->prev_key[2 * i + 1] = d->con[i].feature;
        memcpy(d->prev_lambda + 3 * i, d->lambda + 3 * i, sizeof(double) * 3);
    }

    sim_integrate_pos(m, d, dt);
    return finite_state(m, d) ? 0 : -1;
}

void sim_step_metrics(const sim_model *m, const sim_data *d, double dt, sim_contact_metrics_t *out)
{
    (void)m;
    sim_contact_metrics(d->ncon, d->G, d->cfree, d->mu, d->lambda, dt, out);
}

/* sim_step.c — the contact step.  See sim_step.h. */
#include "sim_step.h"

#include "sim_dynamics.h"
#include "sim_math.h"

#include <time.h>

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
        /* Scratch: world Jacobian of the point (3 nv), B rows (3 nv), D^-1 and D^-1/2 (nv each), y (nv). */
        double *Jw = d->scratch, *Bt = d->scratch + 3 * nv, *invD = d->scratch + 6 * nv;
        double *sD = d->scratch + 7 * nv;
        for (int k = 0; k < nv; k++) {
            invD[k] = 1.0 / d->LD[m->dof_adr[k]];
            sD[k] = sqrt(invD[k]);
        }
        /* Per contact: J in the contact frame, B = L^-T J^T (three rows at once; the support stays the
         * root path), and the compact rows S = D^-1/2 B laid out along the path (body -> root), stored
         * in Bc.  Then G = J M^-1 J^T = B^T D^-1 B = S^T S. */
        int path[SIM_MAX_DOF];
        for (int i = 0; i < nc; i++) {
            const sim_contact *c = &d->con[i];
            if (-c->gap > st->penetration) st->penetration = -c->gap;
            int np = sim_jacobian_sparse(m, d, c->body, c->pos, Jw, path);
            d->con_npath[i] = np;
            memcpy(d->con_path + i * nv, path, sizeof(int) * (size_t)np);
            double *J0 = d->Jc + (size_t)(3 * i) * nv, *J1 = J0 + nv, *J2 = J1 + nv;
            double *B0 = Bt, *B1 = Bt + nv, *B2 = Bt + 2 * nv;
            const double *f = c->frame;
            memset(J0, 0, sizeof(double) * 3 * (size_t)nv);
            for (int t = 0; t < np; t++) {
                int k = path[t];
                double x = Jw[k], y = Jw[nv + k], z = Jw[2 * nv + k];
                B0[k] = J0[k] = f[0] * x + f[1] * y + f[2] * z;
                B1[k] = J1[k] = f[3] * x + f[4] * y + f[5] * z;
                B2[k] = J2[k] = f[6] * x + f[7] * y + f[8] * z;
            }
            for (int t = 0; t < np; t++) {   /* path is in decreasing dof order: a valid L^T sweep */
                int k = path[t];
                const int *anc = m->dof_anc[k];
                const double *Lk = d->LD + m->dof_adr[k] + 1;
                double x0 = B0[k], x1 = B1[k], x2 = B2[k];
                for (int u = 0; u < m->dof_nanc[k]; u++) {
                    int j = anc[u];
                    B0[j] -= Lk[u] * x0;
                    B1[j] -= Lk[u] * x1;
                    B2[j] -= Lk[u] * x2;
                }
            }
            double *S = d->Bc + (size_t)(3 * i) * nv;
            for (int t = 0; t < np; t++) {
                int k = path[t];
                S[t] = B0[k] * sD[k];
                S[nv + t] = B1[k] * sD[k];
                S[2 * nv + t] = B2[k] * sD[k];
            }
        }
        /* G_ij = S_i . S_j over the shared tail of the two root paths (their common ancestors) */
        double *G = d->G;
        for (int i = 0; i < nc; i++) {
            const int *pi = d->con_path + i * nv;
            const int npi = d->con_npath[i];
            const double *Si = d->Bc + (size_t)(3 * i) * nv;
            for (int j = i; j < nc; j++) {
                const int *pj = d->con_path + j * nv;
                const int npj = d->con_npath[j];
                int ci = npi - 1, cj = npj - 1;
                while (ci >= 0 && cj >= 0 && pi[ci] == pj[cj]) { ci--; cj--; }
                const int ncom = npi - 1 - ci;
                const double *Sj = d->Bc + (size_t)(3 * j) * nv;
                for (int a = 0; a < 3; a++) {
                    const double *x = Si + (size_t)a * nv + (npi - ncom);
                    for (int bb = (j == i ? a : 0); bb < 3; bb++) {
                        const double *yv = Sj + (size_t)bb * nv + (npj - ncom);
                        double sum = 0;
                        for (int t = 0; t < ncom; t++) sum += x[t] * yv[t];
                        G[(3 * i + a) * n3 + 3 * j + bb] = sum;
                        G[(3 * j + bb) * n3 + 3 * i + a] = sum;
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

        /* u+ = u_free + M^-1 J^T lambda = u_free + L^-1 D^-1 B lambda = u_free + L^-1 D^-1/2 (S lambda) */
        double *y = d->scratch + 8 * nv;
        memset(y, 0, sizeof(double) * (size_t)nv);
        for (int i = 0; i < nc; i++) {
            const double *lam = d->lambda + 3 * i;
            if (lam[2] > 0) st->nactive++;
            const int *pi = d->con_path + i * nv;
            const double *S = d->Bc + (size_t)(3 * i) * nv;
            for (int t = 0; t < d->con_npath[i]; t++)
                y[pi[t]] += S[t] * lam[0] + S[nv + t] * lam[1] + S[2 * nv + t] * lam[2];
        }
        for (int k = 0; k < nv; k++) y[k] *= sD[k];
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

/* bench_accuracy_mj.c — a MuJoCo solver configuration's step against MuJoCo's converged step (bench_accuracy.h). */
#include <mujoco/mujoco.h>

#include "bench_accuracy.h"

#include <math.h>
#include <stdlib.h>

static void bam_apply(mjModel *m, const bench_mj_cfg *c)
{
    m->opt.solver = c->solver;
    m->opt.iterations = c->iterations;
    m->opt.cone = c->cone;
    m->opt.tolerance = c->tolerance;
    m->opt.noslip_iterations = 0;
}

/* The stacked contact-frame forces of d's contacts (normal, two friction components each) into f (3 ncon). */
static void bam_forces(const mjModel *m, const mjData *d, double *f)
{
    for (int c = 0; c < d->ncon; c++) {
        double f6[6];
        mj_contactForce(m, d, c, f6);
        for (int k = 0; k < 3; k++) f[3 * c + k] = f6[k];
    }
}

int bench_mj_state_size(const mjModel *m) { return m->nq + 3 * m->nv + 1; }

void bench_mj_save_state(const mjModel *m, const mjData *d, double *state)
{
    double *x = state;
    for (int k = 0; k < m->nq; k++) *x++ = d->qpos[k];
    for (int k = 0; k < m->nv; k++) *x++ = d->qvel[k];
    for (int k = 0; k < m->nv; k++) *x++ = d->qacc_warmstart[k];
    for (int k = 0; k < m->nv; k++) *x++ = d->qfrc_applied[k];
    *x = d->time;
}

void bench_mj_load_state(const mjModel *m, mjData *d, const double *state)
{
    const double *x = state;
    mj_resetData(m, d);
    for (int k = 0; k < m->nq; k++) d->qpos[k] = *x++;
    for (int k = 0; k < m->nv; k++) d->qvel[k] = *x++;
    for (int k = 0; k < m->nv; k++) d->qacc_warmstart[k] = *x++;
    for (int k = 0; k < m->nv; k++) d->qfrc_applied[k] = *x++;
    d->time = *x;
}

int bench_mj_accuracy(mjModel *m, const double *states, int n, const bench_mj_cfg *cfg, const bench_mj_cfg *ref,
                      bench_accuracy *out)
{
    const mjOption saved = m->opt;
    mjData *a = mj_makeData(m), *b = mj_makeData(m);
    size_t nf = 3 * 64;             /* grown to the largest contact count met */
    double *fa = malloc(sizeof(double) * nf), *fb = malloc(sizeof(double) * nf);
    double *imp = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)), *vel = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int rc = -1;
    if (!a || !b || !fa || !fb || !imp || !vel) goto done;
    int ni = 0, nvel = 0;
    for (int s = 0; s < n; s++) {
        const double *st = states + (size_t)s * bench_mj_state_size(m);
        bench_mj_load_state(m, a, st);
        bam_apply(m, cfg);
        mj_step(m, a);
        bench_mj_load_state(m, b, st);
        bam_apply(m, ref);
        mj_step(m, b);
        vel[nvel++] = bench_rel_err(a->qvel, b->qvel, m->nv);
        /* the same state finds the same contacts in the same order */
        if (a->ncon != b->ncon || b->ncon == 0) continue;
        if (3 * (size_t)b->ncon > nf) {
            nf = 3 * (size_t)b->ncon;
            double *ga = realloc(fa, sizeof(double) * nf), *gb = ga ? realloc(fb, sizeof(double) * nf) : NULL;
            if (ga) fa = ga;
            if (gb) fb = gb;
            if (!ga || !gb) goto done;
        }
        bam_forces(m, a, fa);
        bam_forces(m, b, fb);
        double fref = 0;
        for (int k = 0; k < 3 * b->ncon; k++) fref += fabs(fb[k]);
        if (fref > 0) imp[ni++] = bench_rel_err(fa, fb, 3 * b->ncon);
    }
    bench_accuracy_stats(out, imp, ni, vel, nvel, n);
    rc = 0;
done:
    m->opt = saved;
    if (a) mj_deleteData(a);
    if (b) mj_deleteData(b);
    free(fa);
    free(fb);
    free(imp);
    free(vel);
    return rc;
}

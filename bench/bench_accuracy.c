/* bench_accuracy.c — a configuration's step against a converged step of the same engine (bench_accuracy.h). */
#include "bench_accuracy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim_step.h"

double bench_rel_err(const double *a, const double *ref, int n)
{
    double num = 0, den = 0;
    for (int k = 0; k < n; k++) {
        num += (a[k] - ref[k]) * (a[k] - ref[k]);
        den += ref[k] * ref[k];
    }
    if (den > 0) return sqrt(num / den);
    return num > 0 ? INFINITY : 0.0;
}

void bench_accuracy_stats(bench_accuracy *acc, double *imp, int ni, double *vel, int nv, int states)
{
    acc->states = states;
    acc->contact_states = ni;
    acc->impulse_median = bench_percentile(imp, ni, 50);
    acc->impulse_p90 = bench_percentile(imp, ni, 90);
    acc->velocity_median = bench_percentile(vel, nv, 50);
    acc->velocity_p90 = bench_percentile(vel, nv, 90);
}

int bench_pick_accurate(int n, const double *sec, const double *impulse_median, const int *eligible, double bound)
{
    int best = -1;
    for (int k = 0; k < n; k++)
        if (eligible[k] && impulse_median[k] <= bound && (best < 0 || sec[k] < sec[best])) best = k;
    return best;
}

int bench_herd_accuracy(const sim_model *cfg, const sim_model *ref, double dt, const sim_data *const *states, int n,
                        bench_accuracy *out)
{
    sim_data *a = sim_data_new(cfg), *b = sim_data_new(ref);
    double *imp = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)), *vel = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int rc = -1;
    if (!a || !b || !imp || !vel) goto done;
    int ni = 0, nvel = 0;
    for (int s = 0; s < n; s++) {
        sim_data_copy_state(cfg, a, states[s]);
        sim_data_copy_state(ref, b, states[s]);
        if (sim_step(cfg, a, dt) || sim_step(ref, b, dt)) {   /* a non-finite step: as far off as can be */
            vel[nvel++] = INFINITY;
            continue;
        }
        vel[nvel++] = bench_rel_err(a->u, b->u, cfg->nv);
        /* the same state finds the same contacts in the same order */
        double fref = 0;
        for (int k = 0; k < 3 * b->ncon; k++) fref += fabs(b->lambda[k]);
        if (a->ncon == b->ncon && fref > 0) imp[ni++] = bench_rel_err(a->lambda, b->lambda, 3 * b->ncon);
    }
    bench_accuracy_stats(out, imp, ni, vel, nvel, n);
    rc = 0;
done:
    sim_data_destroy(&a);
    sim_data_destroy(&b);
    free(imp);
    free(vel);
    return rc;
}

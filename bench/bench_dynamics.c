/* bench_dynamics.c — "herd-bench dynamics": the smooth-dynamics update of ANYmal C, herd vs MuJoCo.
 *
 * One update = set (q, u) from a pre-generated random state, then
 *   herd:   sim_kinematics, sim_velocity, sim_crba, sim_rnea, sim_factor
 *   MuJoCo: mj_kinematics, mj_comPos, mj_crb, mj_factorM, mj_comVel, mj_rne(m, d, 0, qfrc_bias)
 * on the same model (peers/mj_peer.c builds it from the same URDF) and the same 256 states, cycled.
 * Both run on one pinned core, interleaved within each repeat; the figures are medians over repeats.
 * MuJoCo's kinematics stages also place geoms and compute subtree COMs, which herd's do not.
 *
 * Per-stage times: for each stage, the state is set and the whole pipeline run (untimed), then the
 * stage alone is timed over a batch of STAGE_BATCH calls on that state (every stage is idempotent);
 * iters calls per stage and repeat.  They are hot-cache figures and need not add up exactly to the
 * whole update.
 *
 * Batched: the same states four at a time through sim_batch_smooth (sim_batch.h: one world per vector lane), which
 * computes these stages and also each world's free velocity and, on flat ground, its contact candidates; reported
 * per world ("us_per_update_batched"), beside the one-world update.
 *
 * Options: --repeats N (21)  --iters N updates per repeat (20000)  --model PATH (envs/models/anymal_c.urdf)
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mj_peer.h"
#include "sim_batch.h"
#include "sim_dynamics.h"
#include "sim_urdf.h"

#define NSTATES 256
#define STAGE_BATCH 8

enum { ST_KIN, ST_VEL, ST_CRBA, ST_RNEA, ST_FACTOR, NSTAGE };
static const char *const stage_name[NSTAGE] = {"kinematics", "velocity", "crba", "rnea", "factor"};
static const char *const mj_stage_name[NSTAGE] = {"kinematics+comPos", "comVel", "crb", "rne", "factorM"};

typedef struct {
    const sim_model *hm;
    sim_data *hd;
    sim_data *bd[SIM_BATCH_LANES];  /* the batch's worlds */
    sim_batch *batch;
    mj_peer *peer;
    int nq, nv;
    double *hq, *hu;   /* NSTATES x nq / nv, herd order */
    double *mq, *mu;   /* the same states in MuJoCo's order */
} bench_ctx;

typedef struct { uint64_t s; } bench_rng;

static double rng_u(bench_rng *r, double lo, double hi)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

/* Random states as in tests/test_vs_mujoco.c: uniform orientation, joints within limits (or +-pi),
 * base velocities U(-2,2), joint rates U(-10,10). */
static void make_states(bench_ctx *c)
{
    const sim_model *m = c->hm;
    bench_rng r = {0xbe4c5eedull};
    for (int s = 0; s < NSTATES; s++) {
        double *q = c->hq + (size_t)s * c->nq, *u = c->hu + (size_t)s * c->nv;
        if (m->floating) {
            q[0] = rng_u(&r, -2, 2);
            q[1] = rng_u(&r, -2, 2);
            q[2] = rng_u(&r, 0, 1);
            double u1 = rng_u(&r, 0, 1), u2 = rng_u(&r, 0, 2 * M_PI), u3 = rng_u(&r, 0, 2 * M_PI);
            double a = sqrt(1 - u1), b = sqrt(u1);
            q[3] = b * cos(u3); q[4] = a * sin(u2); q[5] = a * cos(u2); q[6] = b * sin(u3);
            for (int k = 0; k < 6; k++) u[k] = rng_u(&r, -2, 2);
        }
        for (int i = 1; i < m->nbody; i++) {
            const sim_body *b = &m->body[i];
            double lo = isfinite(b->lower) ? b->lower : -M_PI, hi = isfinite(b->upper) ? b->upper : M_PI;
            q[b->qadr] = rng_u(&r, lo, hi);
            u[b->dof] = rng_u(&r, -10, 10);
        }
        double *mq = c->mq + (size_t)s * c->nq, *mu = c->mu + (size_t)s * c->nv;
        for (int k = 0; k < c->nq; k++) mq[c->peer->qadr[k]] = q[k];
        for (int k = 0; k < c->nv; k++) mu[c->peer->dofadr[k]] = u[k];
    }
}

/* ---- the updates ---- */

static inline void herd_set(bench_ctx *c, int s)
{
    memcpy(c->hd->q, c->hq + (size_t)s * c->nq, sizeof(double) * (size_t)c->nq);
    memcpy(c->hd->u, c->hu + (size_t)s * c->nv, sizeof(double) * (size_t)c->nv);
}

static inline void herd_update(bench_ctx *c)
{
    sim_kinematics(c->hm, c->hd);
    sim_velocity(c->hm, c->hd);
    sim_crba(c->hm, c->hd);
    sim_rnea(c->hm, c->hd);
    sim_factor(c->hm, c->hd);
}

static inline void mj_set(bench_ctx *c, int s)
{
    memcpy(c->peer->d->qpos, c->mq + (size_t)s * c->nq, sizeof(double) * (size_t)c->nq);
    memcpy(c->peer->d->qvel, c->mu + (size_t)s * c->nv, sizeof(double) * (size_t)c->nv);
}

static inline void mj_update(bench_ctx *c)
{
    const mjModel *m = c->peer->m;
    mjData *d = c->peer->d;
    mj_kinematics(m, d);
    mj_comPos(m, d);
    mj_crb(m, d);
    mj_factorM(m, d);
    mj_comVel(m, d);
    mj_rne(m, d, 0, d->qfrc_bias);
}

static void herd_stage(bench_ctx *c, int st)
{
    switch (st) {
    case ST_KIN: sim_kinematics(c->hm, c->hd); break;
    case ST_VEL: sim_velocity(c->hm, c->hd); break;
    case ST_CRBA: sim_crba(c->hm, c->hd); break;
    case ST_RNEA: sim_rnea(c->hm, c->hd); break;
    default: sim_factor(c->hm, c->hd); break;
    }
}

static void mj_stage(bench_ctx *c, int st)
{
    const mjModel *m = c->peer->m;
    mjData *d = c->peer->d;
    switch (st) {
    case ST_KIN: mj_kinematics(m, d); mj_comPos(m, d); break;
    case ST_VEL: mj_comVel(m, d); break;
    case ST_CRBA: mj_crb(m, d); break;
    case ST_RNEA: mj_rne(m, d, 0, d->qfrc_bias); break;
    default: mj_factorM(m, d); break;
    }
}

/* Mean ns per whole update over iters updates. */
static double time_herd(bench_ctx *c, long iters)
{
    uint64_t t0 = bench_now_ns();
    for (long it = 0; it < iters; it++) {
        herd_set(c, (int)(it & (NSTATES - 1)));
        herd_update(c);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double time_mj(bench_ctx *c, long iters)
{
    uint64_t t0 = bench_now_ns();
    for (long it = 0; it < iters; it++) {
        mj_set(c, (int)(it & (NSTATES - 1)));
        mj_update(c);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

/* Mean ns per world of sim_batch_smooth over iters updates (SIM_BATCH_LANES worlds a call). */
static double time_batch(bench_ctx *c, long iters)
{
    uint64_t t0 = bench_now_ns();
    long it = 0;
    for (; it < iters; it += SIM_BATCH_LANES) {
        for (int l = 0; l < SIM_BATCH_LANES; l++) {
            const int s = (int)((it + l) & (NSTATES - 1));
            memcpy(c->bd[l]->q, c->hq + (size_t)s * c->nq, sizeof(double) * (size_t)c->nq);
            memcpy(c->bd[l]->u, c->hu + (size_t)s * c->nv, sizeof(double) * (size_t)c->nv);
        }
        sim_batch_smooth(c->hm, c->batch, c->bd, SIM_BATCH_LANES, 0.005);
    }
    return (double)(bench_now_ns() - t0) / (double)it;
}

/* Mean ns per call of one stage (see the header comment). */
static double time_stage(bench_ctx *c, int mj, int st, long iters)
{
    uint64_t total = 0;
    long calls = 0;
    for (long it = 0; calls < iters; it++) {
        int s = (int)(it & (NSTATES - 1));
        if (mj) { mj_set(c, s); mj_update(c); } else { herd_set(c, s); herd_update(c); }
        uint64_t t0 = bench_now_ns();
        if (mj)
            for (int b = 0; b < STAGE_BATCH; b++) mj_stage(c, st);
        else
            for (int b = 0; b < STAGE_BATCH; b++) herd_stage(c, st);
        total += bench_now_ns() - t0;
        calls += STAGE_BATCH;
    }
    return (double)total / (double)calls;
}

static const char *robot_name(const char *path, char *buf, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, n, "%s", b);
    char *dot = strrchr(buf, '.');
    if (dot) *dot = 0;
    return buf;
}

int bench_dynamics(int argc, char **argv)
{
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "21"));
    long iters = atol(bench_arg(argc, argv, "--iters", "20000"));
    const char *path = bench_arg(argc, argv, "--model", "envs/models/anymal_c.urdf");
    if (repeats < 1 || iters < STAGE_BATCH) {
        fprintf(stderr, "herd-bench dynamics: --repeats must be >= 1 and --iters >= %d\n", STAGE_BATCH);
        return 2;
    }
    bench_pin(0);

    char err[512] = "", robot[SIM_NAME_MAX];
    sim_model *hm = sim_urdf_load_file(path, NULL, err, sizeof err);
    if (!hm) {
        fprintf(stderr, "herd-bench dynamics: %s\n", err);
        return 1;
    }
    bench_ctx c = {.hm = hm, .nq = hm->nq, .nv = hm->nv};
    c.hd = sim_data_new(hm);
    c.peer = mj_peer_new(path, hm, err, sizeof err);
    void *batch_mem = aligned_alloc(64, sim_batch_size(hm));
    c.batch = batch_mem ? sim_batch_init(hm, batch_mem) : NULL;
    int bd_ok = c.batch != NULL;
    for (int l = 0; l < SIM_BATCH_LANES; l++) bd_ok &= (c.bd[l] = sim_data_new(hm)) != NULL;
    if (!c.hd || !c.peer || !bd_ok) {
        for (int l = 0; l < SIM_BATCH_LANES; l++) sim_data_destroy(&c.bd[l]);
        free(batch_mem);
        fprintf(stderr, "herd-bench dynamics: %s\n", c.hd && bd_ok ? err : "out of memory");
        mj_peer_destroy(&c.peer);
        sim_data_destroy(&c.hd);
        sim_model_destroy(&hm);
        return 1;
    }
    c.hq = malloc(sizeof(double) * NSTATES * (size_t)c.nq);
    c.hu = malloc(sizeof(double) * NSTATES * (size_t)c.nv);
    c.mq = malloc(sizeof(double) * NSTATES * (size_t)c.nq);
    c.mu = malloc(sizeof(double) * NSTATES * (size_t)c.nv);
    double *t = malloc(sizeof(double) * (size_t)repeats * (3 + 2 * NSTAGE));
    if (!c.hq || !c.hu || !c.mq || !c.mu || !t) {
        fprintf(stderr, "herd-bench dynamics: out of memory\n");
        free(c.hq); free(c.hu); free(c.mq); free(c.mu); free(t);
        for (int l = 0; l < SIM_BATCH_LANES; l++) sim_data_destroy(&c.bd[l]);
        free(batch_mem);
        mj_peer_destroy(&c.peer);
        sim_data_destroy(&c.hd);
        sim_model_destroy(&hm);
        return 1;
    }
    make_states(&c);

    /* warm-up */
    time_herd(&c, iters / 4 + 1);
    time_mj(&c, iters / 4 + 1);
    time_batch(&c, iters / 4 + 1);

    /* t[col * repeats + rep]: col 0 herd update, 1 MuJoCo update, 2.. herd stages, 2+NSTAGE.. MuJoCo stages,
       2+2 NSTAGE the batched update per world */
    for (int rep = 0; rep < repeats; rep++) {
        t[0 * repeats + rep] = time_herd(&c, iters);
        t[1 * repeats + rep] = time_mj(&c, iters);
        for (int st = 0; st < NSTAGE; st++) {
            t[(2 + st) * repeats + rep] = time_stage(&c, 0, st, iters);
            t[(2 + NSTAGE + st) * repeats + rep] = time_stage(&c, 1, st, iters);
        }
        t[(2 + 2 * NSTAGE) * repeats + rep] = time_batch(&c, iters);
    }
    double med[3 + 2 * NSTAGE];
    for (int col = 0; col < 3 + 2 * NSTAGE; col++) med[col] = bench_median(t + (size_t)col * repeats, repeats);
    const double us_batch = med[2 + 2 * NSTAGE] / 1000;
    double us_herd = med[0] / 1000, us_mj = med[1] / 1000;
    double p10 = bench_percentile(t, repeats, 10) / 1000, p90 = bench_percentile(t, repeats, 90) / 1000;
    const double *hs = med + 2, *ms = med + 2 + NSTAGE;
    robot_name(path, robot, sizeof robot);

    printf("{\"bench\":\"dynamics\",\"robot\":\"%s\",\"nv\":%d,\"nbody\":%d,\"states\":%d,\"iters\":%ld,\"repeats\":%d,"
           "\"us_per_update\":%.4f,\"us_per_update_p10\":%.4f,\"us_per_update_p90\":%.4f,"
           "\"ns_kinematics\":%.1f,\"ns_velocity\":%.1f,\"ns_crba\":%.1f,\"ns_rnea\":%.1f,\"ns_factor\":%.1f,"
           "\"us_mujoco\":%.4f,\"ns_mj_kinematics\":%.1f,\"ns_mj_velocity\":%.1f,\"ns_mj_crb\":%.1f,"
           "\"ns_mj_rne\":%.1f,\"ns_mj_factor\":%.1f,\"ratio_vs_mujoco\":%.3f,\"us_per_update_batched\":%.4f,\"batch_lanes\":%d,"
           "\"batched_also\":\"free velocity, contact candidates\",\"mujoco_version\":%d,\"cpu\":\"%s\"}\n",
           robot, hm->nv, hm->nbody, NSTATES, iters, repeats, us_herd, p10, p90,
           hs[ST_KIN], hs[ST_VEL], hs[ST_CRBA], hs[ST_RNEA], hs[ST_FACTOR],
           us_mj, ms[ST_KIN], ms[ST_VEL], ms[ST_CRBA], ms[ST_RNEA], ms[ST_FACTOR], us_mj / us_herd, us_batch,
           SIM_BATCH_LANES, mj_version(), bench_cpu());
    fflush(stdout);

    fprintf(stderr, "dynamics: %s (nv %d), %d repeats x %ld updates over %d states, core 0, %s\n", robot, hm->nv,
            repeats, iters, NSTATES, bench_cpu());
    fprintf(stderr, "  %-12s %10s   %-18s %10s\n", "herd stage", "ns", "MuJoCo stage", "ns");
    for (int st = 0; st < NSTAGE; st++)
        fprintf(stderr, "  %-12s %10.1f   %-18s %10.1f\n", stage_name[st], hs[st], mj_stage_name[st], ms[st]);
    fprintf(stderr, "  %-12s %10.3f   %-18s %10.3f   (us per update; MuJoCo/herd = %.2fx)\n", "update", us_herd,
            "update", us_mj, us_mj / us_herd);
    fprintf(stderr, "  batched      %10.3f   (us per world, %d worlds per sim_batch_smooth; it also computes the free "
                    "velocity and the contact candidates)\n", us_batch, SIM_BATCH_LANES);

    free(c.hq); free(c.hu); free(c.mq); free(c.mu); free(t);
    for (int l = 0; l < SIM_BATCH_LANES; l++) sim_data_destroy(&c.bd[l]);
    free(batch_mem);
    mj_peer_destroy(&c.peer);
    sim_data_destroy(&c.hd);
    sim_model_destroy(&hm);
    return 0;
}

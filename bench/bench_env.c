/* herd-bench env — batched environment stepping in-process.
 *
 *   herd-bench env [--env anymal_c-walk] [--worlds 4096] [--threads T] [--steps S] [--repeats R]
 *
 * T threads (pinned, one contiguous slice of worlds each, a barrier per step) step all worlds with
 * fixed pseudo-random actions in [-1, 1].  Every timed run starts from the same reset (fixed seeds) and
 * the same 25 warm-up steps (past the landing), so every configuration does exactly the same work
 * (the envs are deterministic).  Without --threads, runs T = 1 and T = 2 and reports the speedup.
 * Baselines measured in the same run, per thread: single worlds (32 worlds of the same env, stepped one
 * world per call over the same steps: no batching; the batch repeats exactly these 32 worlds, see
 * prepare), and the solver bench's single-world trot scenario (1 ms, feet + base).  One JSON line per configuration; medians over repeats. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env.h"
#include "env_scenario.h"
#include "sim_step.h"
#include "sim_urdf.h"

typedef struct {
    env_t *e;
    int first, n, core, steps, od, ad;
    float *act, *obs, *rew;
    uint8_t *term, *trunc;
    pthread_barrier_t *bar;
    double busy;                /* seconds spent stepping (the rest is waiting at the barrier) */
} worker;

static void *work(void *p)
{
    worker *w = p;
    bench_pin(w->core);
    w->busy = 0;
    for (int s = 0; s < w->steps; s++) {
        const float *a = w->act + (size_t)(s & 7) * (size_t)env_num_worlds(w->e) * w->ad + (size_t)w->first * w->ad;
        uint64_t t0 = bench_now_ns();
        env_step(w->e, w->first, w->n, NULL, a, w->obs + (size_t)w->first * w->od, w->rew + w->first,
                 w->term + w->first, w->trunc + w->first, NULL);
        w->busy += (double)(bench_now_ns() - t0) * 1e-9;
        pthread_barrier_wait(w->bar);
    }
    return NULL;
}

#define WARMUP 25

/* Resets every world with fixed seeds and steps WARMUP times on one thread (untimed). */
static void prepare(env_t *e, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    const env_spec *sp = env_get_spec(e);
    int n = env_num_worlds(e);
    uint64_t *seeds = malloc(sizeof(uint64_t) * (size_t)n);
    /* seeds repeat with period 32: explicitly seeded worlds follow identical trajectories whatever
     * their index, so the batch is 32 distinct worlds, each repeated, exactly the single-world
     * baseline's 32: the same work per world in both */
    for (int i = 0; i < n; i++) seeds[i] = 1000 + (uint64_t)(i % 32);
    env_reset(e, 0, n, NULL, seeds, obs);
    free(seeds);
    for (int s = 0; s < WARMUP; s++)
        env_step(e, 0, n, NULL, act + (size_t)(s & 7) * (size_t)n * sp->act_dim, obs, rew, term, trunc, NULL);
}

/* Seconds to step all worlds `steps` times with `threads` threads. */
static double g_busy[64];

static double run(env_t *e, int threads, int steps, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    const env_spec *sp = env_get_spec(e);
    int n = env_num_worlds(e);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    worker w[64];
    pthread_t th[64];
    uint64_t t0 = bench_now_ns();
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){e, (int)((long)n * t / threads), (int)((long)n * (t + 1) / threads - (long)n * t / threads), t,
                        steps, sp->obs_dim, sp->act_dim, act, obs, rew, term, trunc, &bar, 0};
        if (t) pthread_create(&th[t], NULL, work, &w[t]);
    }
    work(&w[0]);
    for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
    uint64_t t1 = bench_now_ns();
    for (int t = 0; t < threads; t++) g_busy[t] = w[t].busy;
    pthread_barrier_destroy(&bar);
    bench_pin(0);
    return (double)(t1 - t0) * 1e-9;
}

static double trot_single_world(int steps)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    if (!m || env_scenario_configure_model(m, ENV_SCN_TROT, err, sizeof err)) { sim_model_destroy(&m); return NAN; }
    sim_data *d = sim_data_new(m);
    env_scenario s;
    env_scenario_init(&s, m, d, ENV_SCN_TROT, 42, err, sizeof err);
    uint64_t tc = 0, t0 = bench_now_ns();
    for (int i = 0; i < steps; i++) {
        uint64_t a = bench_now_ns();
        env_scenario_control(&s, m, d, 1e-3);
        tc += bench_now_ns() - a;
        sim_step(m, d, 1e-3);
    }
    double sec = (double)(bench_now_ns() - t0 - tc) * 1e-9;
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return steps / sec;
}

int bench_env(int argc, char **argv)
{
    const char *name = bench_arg(argc, argv, "--env", "anymal_c-walk");
    int worlds = atoi(bench_arg(argc, argv, "--worlds", "4096"));
    int tflag = atoi(bench_arg(argc, argv, "--threads", "0"));
    int steps = atoi(bench_arg(argc, argv, "--steps", "50"));
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "5"));
    if (worlds < 1 || tflag < 0 || tflag > 64 || steps < 1 || repeats < 1) {
        fprintf(stderr, "herd-bench env: need --worlds >= 1, 0 <= --threads <= 64, --steps >= 1, --repeats >= 1\n");
        return 2;
    }
    char err[512];
    env_t *e = env_new(name, worlds, NULL, 0, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!e) { fprintf(stderr, "herd-bench env: %s\n", err); return 2; }
    env_t *one = env_new(name, worlds < 32 ? worlds : 32, NULL, 0, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    const env_spec *sp = env_get_spec(e);
    size_t na = (size_t)worlds * sp->act_dim;
    float *act = malloc(sizeof(float) * na * 8), *obs = malloc(sizeof(float) * (size_t)worlds * sp->obs_dim);
    float *rew = malloc(sizeof(float) * (size_t)worlds);
    uint8_t *term = malloc((size_t)worlds), *trunc = malloc((size_t)worlds);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < na * 8; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        act[i] = (float)((r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    }
    /* baselines: single worlds of the same env (no batching), and the solver bench's trot */
    double one_rep[64], trot_rep[64];
    const int nsingle = worlds < 32 ? worlds : 32;
    for (int k = 0; k < repeats && k < 64; k++) {
        prepare(one, act, obs, rew, term, trunc);
        uint64_t t0 = bench_now_ns();
        for (int s = 0; s < steps; s++)
            for (int i = 0; i < nsingle; i++) {
                int32_t id = i;
                env_step(one, 0, 1, &id, act + (size_t)(s & 7) * na + (size_t)i * sp->act_dim, obs, rew, term, trunc, NULL);
            }
        one_rep[k] = (double)nsingle * steps * sp->decimation / ((double)(bench_now_ns() - t0) * 1e-9);
        trot_rep[k] = trot_single_world(20000);
    }
    double single = bench_median(one_rep, repeats < 64 ? repeats : 64);
    double trot = bench_median(trot_rep, repeats < 64 ? repeats : 64);
    int tlist[2] = {tflag ? tflag : 1, 2}, nt = tflag ? 1 : 2;
    double eps_by_t[2] = {0, 0};
    fprintf(stderr, "env bench: %s, %d worlds, %d steps x %d repeats (cpu: %s)\n", name, worlds, steps, repeats, bench_cpu());
    fprintf(stderr, "  baselines per thread: same env, 1 world: %.0f physics steps/s; solver bench trot: %.0f\n", single, trot);
    for (int k = 0; k < nt; k++) {
        int T = tlist[k];
        double rep[64];
        double util = 0;
        for (int q = 0; q < repeats && q < 64; q++) {
            prepare(e, act, obs, rew, term, trunc);
            rep[q] = run(e, T, steps, act, obs, rew, term, trunc);
            for (int t = 0; t < T; t++) util += g_busy[t] / rep[q];
        }
        util /= (double)T * (repeats < 64 ? repeats : 64);
        double sec = bench_median(rep, repeats < 64 ? repeats : 64);
        double eps = (double)worlds * steps / sec, pps = eps * sp->decimation;
        eps_by_t[k] = eps;
        double per_thread = pps / T;
        printf("{\"bench\":\"env\",\"env\":\"%s\",\"worlds\":%d,\"threads\":%d,\"steps\":%d,\"repeats\":%d,"
               "\"env_steps_per_s\":%.0f,\"physics_steps_per_s\":%.0f,\"us_per_env_step\":%.3f,"
               "\"physics_steps_per_s_per_thread\":%.0f,\"single_world_physics_steps_per_s\":%.0f,"
               "\"batch_efficiency\":%.3f,\"solver_bench_trot_steps_per_s\":%.0f,\"fraction_of_solver_bench\":%.3f,\"thread_utilization\":%.3f,\"cpu\":\"%s\"}\n",
               name, worlds, T, steps, repeats, eps, pps, 1e6 * T / eps, per_thread, single, per_thread / single, trot,
               per_thread / trot, util, bench_cpu());
        fflush(stdout);
        fprintf(stderr, "  %d thread(s): %9.0f env steps/s, %9.0f physics steps/s (%.0f per thread, %.2f of 1-world, %.2f of trot), %.2f us/env step/thread, busy %.0f %%\n",
                T, eps, pps, per_thread, per_thread / single, per_thread / trot, 1e6 * T / eps, 100 * util);
    }
    if (nt == 2) {
        printf("{\"bench\":\"env_scaling\",\"env\":\"%s\",\"worlds\":%d,\"speedup_1_to_2_threads\":%.3f}\n", name, worlds,
               eps_by_t[1] / eps_by_t[0]);
        fprintf(stderr, "  speedup 1 -> 2 threads: %.2fx\n", eps_by_t[1] / eps_by_t[0]);
    }
    free(act); free(obs); free(rew); free(term); free(trunc);
    env_destroy(&e);
    env_destroy(&one);
    return 0;
}

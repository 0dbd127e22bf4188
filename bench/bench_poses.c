/* herd-bench poses — what reading poses costs the workers, against what stepping costs them.
 *
 *   herd-bench poses [--env anymal_c-walk] [--worlds 4096] [--watched 16] [--hz 30] [--repeats R]
 *
 * In-process and on one pinned thread (the work a server worker does for a `poses` request, without the
 * transport): the median time of env_poses on `watched` worlds spread over the session (with the contacts and
 * their diagnostics, with contacts, and without), and of one env_step of all `worlds` worlds, from the same reset and warm-up.  Reports the
 * worker time a viewer polling at `hz` takes per second (hz x poses time) as a fraction of one worker, and
 * the poses read in world-steps (how many worlds' steps cost the same).  clients/python/bench_poses.py
 * measures the same over a real server (throughput with and without a polling client). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env.h"

int bench_poses(int argc, char **argv)
{
    const char *name = bench_arg(argc, argv, "--env", "anymal_c-walk");
    const int n = atoi(bench_arg(argc, argv, "--worlds", "4096")), k = atoi(bench_arg(argc, argv, "--watched", "16"));
    const int R = atoi(bench_arg(argc, argv, "--repeats", "7"));
    const double hz = atof(bench_arg(argc, argv, "--hz", "30"));
    if (n < 1 || k < 1 || k > n || R < 1) {
        fprintf(stderr, "herd-bench poses: need 1 <= --watched <= --worlds and --repeats >= 1\n");
        return 2;
    }
    char err[256];
    env_t *e = env_new(name, n, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    if (!e) {
        fprintf(stderr, "herd-bench poses: %s\n", err);
        return 1;
    }
    bench_pin(0);
    const env_spec *sp = env_get_spec(e);
    env_scene_t *scene = malloc(sizeof *scene);
    env_scene(e, scene);
    int nb = scene->nbody, mc = scene->max_contacts;
    size_t od = (size_t)sp->obs_dim, ad = (size_t)sp->act_dim;
    float *obs = malloc(sizeof(float) * (size_t)n * od), *rew = malloc(sizeof(float) * (size_t)n);
    float *act = malloc(sizeof(float) * (size_t)n * ad);
    uint8_t *term = malloc((size_t)n), *trunc = malloc((size_t)n);
    uint64_t *seeds = malloc(sizeof(uint64_t) * (size_t)n);
    for (int i = 0; i < n; i++) seeds[i] = 1000 + (uint64_t)i;
    uint64_t rng = 12345;
    for (size_t i = 0; i < (size_t)n * ad; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        act[i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
    }
    env_reset(e, 0, n, NULL, seeds, obs);
    for (int s = 0; s < 25; s++) env_step(e, 0, n, NULL, act, obs, rew, term, trunc, NULL);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)k);
    for (int i = 0; i < k; i++) ids[i] = (int32_t)((long)i * (n - 1) / (k > 1 ? k - 1 : 1));
    float *pos = malloc(sizeof(float) * (size_t)k * nb * 3), *quat = malloc(sizeof(float) * (size_t)k * nb * 4);
    int32_t *cnt = malloc(sizeof(int32_t) * (size_t)k);
    float *cp = malloc(sizeof(float) * (size_t)k * mc * 3), *cn = malloc(sizeof(float) * (size_t)k * mc * 3);
    float *ci = malloc(sizeof(float) * (size_t)k * mc);
    env_contacts c = {.max = mc, .count = cnt, .pos = cp, .normal = cn, .impulse = ci};
    /* the diagnostics (protocol minor 6): the same rows plus state, friction, body, fallback and limit impulses */
    uint8_t *cs = malloc((size_t)k * mc), *fb = malloc((size_t)k);
    float *cf = malloc(sizeof(float) * (size_t)k * mc * 3), *lim = malloc(sizeof(float) * (size_t)k * nb);
    int32_t *cb = malloc(sizeof(int32_t) * (size_t)k * mc);
    env_contacts cd = {.max = mc, .count = cnt, .pos = cp, .normal = cn, .impulse = ci, .open = 1, .state = cs,
                       .friction = cf, .body = cb, .fallback = fb, .limit = lim};
    double *tp = malloc(sizeof(double) * R), *tq = malloc(sizeof(double) * R), *ts = malloc(sizeof(double) * R);
    double *td = malloc(sizeof(double) * R);
    const int calls = 2000, steps = 3;
    for (int r = 0; r < R; r++) {
        uint64_t t0 = bench_now_ns();
        for (int j = 0; j < calls; j++) env_poses(e, 0, k, ids, pos, quat, &c);
        uint64_t t1 = bench_now_ns();
        for (int j = 0; j < calls; j++) env_poses(e, 0, k, ids, pos, quat, NULL);
        uint64_t t2 = bench_now_ns();
        for (int s = 0; s < steps; s++) env_step(e, 0, n, NULL, act, obs, rew, term, trunc, NULL);
        uint64_t t3 = bench_now_ns();
        for (int j = 0; j < calls; j++) env_poses(e, 0, k, ids, pos, quat, &cd);
        uint64_t t4 = bench_now_ns();
        td[r] = (double)(t4 - t3) * 1e-9 / calls;
        tp[r] = (double)(t1 - t0) * 1e-9 / calls;
        tq[r] = (double)(t2 - t1) * 1e-9 / calls;
        ts[r] = (double)(t3 - t2) * 1e-9 / steps;
    }
    double p = bench_median(tp, R), q = bench_median(tq, R), st = bench_median(ts, R), pd = bench_median(td, R);
    double frac = hz * p, world_steps = p / (st / n);
    printf("{\"bench\":\"poses\",\"env\":\"%s\",\"worlds\":%d,\"watched\":%d,\"hz\":%g,\"bodies\":%d,\"max_contacts\":%d,"
           "\"poses_diagnostics_us\":%.3f,\"poses_contacts_us\":%.3f,\"poses_us\":%.3f,\"step_all_ms\":%.3f,\"worker_fraction_at_hz\":%.3g,"
           "\"poses_in_world_steps\":%.2f,\"repeats\":%d,\"cpu\":\"%s\"}\n",
           name, n, k, hz, nb, mc, 1e6 * pd, 1e6 * p, 1e6 * q, 1e3 * st, frac, world_steps, R, bench_cpu());
    fprintf(stderr, "poses of %d of %d %s worlds: %.2f us with the contact diagnostics, %.2f us with contacts, %.2f us "
                    "without; one step of all worlds %.2f ms (one thread)\n  at %g Hz: %.4f%% of one worker; a read "
                    "costs as much as stepping %.2f worlds once\n", k, n, name, 1e6 * pd, 1e6 * p, 1e6 * q, 1e3 * st, hz,
                    100 * frac, world_steps);
    free(td), free(cs), free(fb), free(cf), free(lim), free(cb);
    free(tp), free(tq), free(ts), free(pos), free(quat), free(cnt), free(cp), free(cn), free(ci), free(ids);
    free(obs), free(rew), free(act), free(term), free(trunc), free(seeds), free(scene);
    env_destroy(&e);
    return 0;
}

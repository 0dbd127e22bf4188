/* bench_env_work.c — herd-bench env's workload (bench_env_work.h). */
#include "bench_env_work.h"

#include <stdlib.h>

/* Fixed pseudo-random actions in [-1, 1] (xorshift64, the same in every herd-bench env run): n floats. */
float *bench_env_actions(size_t n)
{
    float *act = malloc(sizeof(float) * n);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; act && i < n; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        act[i] = (float)((r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    }
    return act;
}

void bench_env_prepare(env_t *e, int warmup, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
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
    for (int s = 0; s < warmup; s++)
        env_step(e, 0, n, NULL, act + (size_t)(s & 7) * (size_t)n * sp->act_dim, obs, rew, term, trunc, NULL);
}


/* env_rng.c — see env_rng.h. */
#include "env_rng.h"

#include <math.h>

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

env_rng env_rng_seeded(uint64_t seed) { return (env_rng){.key = seed, .ctr = 0}; }

env_rng env_rng_for(uint64_t seed, uint64_t world, uint32_t episode)
{
    uint64_t key = mix64(mix64(seed ^ 0x243F6A8885A308D3ull) ^ (world * 0x9E3779B97F4A7C15ull + 0x13198A2E03707344ull)) ^
                   mix64((uint64_t)episode + 0xA4093822299F31D0ull);
    return env_rng_seeded(key);
}

double env_rng_uniform(env_rng *r)
{
    uint64_t x = mix64(r->key + 0x9E3779B97F4A7C15ull * ++r->ctr);
    return (x >> 11) * (1.0 / 9007199254740992.0);
}

double env_rng_range(env_rng *r, double lo, double hi) { return lo + (hi - lo) * env_rng_uniform(r); }

/* Box-Muller from two draws: the normal is radius * cosine */
static void box_muller(env_rng *r, double *radius, double *cosine)
{
    double u1 = env_rng_uniform(r), u2 = env_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    *radius = sqrt(-2 * log(u1));
    *cosine = cos(6.283185307179586 * u2);
}

double env_rng_normal(env_rng *r)
{
    double radius, cosine;
    box_muller(r, &radius, &cosine);
    return radius * cosine;
}

double env_rng_normal_around(env_rng *r, double mean)
{
    double radius, cosine;
    box_muller(r, &radius, &cosine);
    return fma(radius, cosine, mean);
}

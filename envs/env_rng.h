/* env_rng.h — counter-based random streams (splitmix64's finalizer over a key and a counter).
 *
 * Draw k of a stream is a hash of (key, k), so a stream is a plain value: copy it to fork it, key it
 * by (seed, world, episode) to give every world and episode its own numbers whatever the thread count.
 * env_rng_seeded(s) gives the same numbers as a sequential splitmix64 generator started at state s.
 */
#ifndef HERD_ENV_RNG_H
#define HERD_ENV_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t key;       /* mix of the seed (and world index and episode) */
    uint64_t ctr;       /* draws so far */
} env_rng;

/* The stream with key `seed` (sequential splitmix64 from state `seed`). */
env_rng env_rng_seeded(uint64_t seed);
/* The stream of (seed, world, episode): one per world and episode. */
env_rng env_rng_for(uint64_t seed, uint64_t world, uint32_t episode);

double env_rng_uniform(env_rng *r);                 /* [0, 1) */
double env_rng_range(env_rng *r, double lo, double hi);
/* n draws (n >= 0) of 2 u - 1, in [-1, 1), into out: the bits of n successive 2 * env_rng_uniform(r) - 1, and
 * the same stream after; one vectorized loop (the observation noise draws hundreds per step). */
void env_rng_signed(env_rng *r, double *out, int n);
double env_rng_normal(env_rng *r);                  /* standard normal (Box-Muller, two draws) */
/* mean + a standard normal draw (the same two draws) as one fused multiply-add, fma(radius, cos, mean),
 * rounded once on every target: the random scenario's PD targets. */
double env_rng_normal_around(env_rng *r, double mean);

#endif

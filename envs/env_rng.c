/* env_rng.c — see env_rng.h. */
#include "env_rng.h"

#include <math.h>
#include <string.h>

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

/* 2 u - 1 for u = (x >> 11) 2^-53 is exactly (x >> 11) 2^-52 - 1 (a multiple of 2^-52 in [-1, 1)), so any exact
 * conversion of x >> 11 gives env_rng_uniform's bits.  The 53-bit integer is converted in two exact parts, its top
 * 21 bits and its low 32 (each written under the exponent of 2^52, minus 2^52), which, unlike a 64-bit integer
 * conversion, the compiler vectorizes with the 64-bit products of mix64 on every x86-64 level. */
void env_rng_signed(env_rng *r, double *out, int n)
{
    const double two52 = 4503599627370496.0;
    const uint64_t key = r->key, ctr = r->ctr, exp52 = 0x4330000000000000ull;
    for (int k = 0; k < n; k++) {
        const uint64_t v = mix64(key + 0x9E3779B97F4A7C15ull * (ctr + 1 + (uint64_t)k)) >> 11;
        const uint64_t hi = exp52 | (v >> 32), lo = exp52 | (v & 0xFFFFFFFFull);
        double dhi, dlo;
        memcpy(&dhi, &hi, sizeof dhi);
        memcpy(&dlo, &lo, sizeof dlo);
        out[k] = ((dhi - two52) * 4294967296.0 + (dlo - two52)) * (1.0 / two52) - 1;
    }
    if (n > 0) r->ctr += (uint64_t)n;
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

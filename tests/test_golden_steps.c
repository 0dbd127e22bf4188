/* Golden per-step hashes of every registered task: the bytes a trainer receives, frozen.
 *
 * For each task and each autoreset mode, a fresh env is reset and stepped with fixed pseudo-random
 * actions; every output of every step (observations, rewards, terminated, truncated, physics resets,
 * final observations, episode statistics, reward terms) is hashed (FNV-1a, 64 bits) into one value per
 * run.  tests/testdata/golden_steps.txt holds the expected values, one set for every build: the bits
 * are a property of the source (no contraction, multiply-adds fused where the source says so, no code
 * chosen by the CPU: Makefile), so the optimized build, the sanitizer build and a build for another
 * x86-64 level must all give them.  HERD_WRITE_GOLDEN=1 build/tests/test_golden_steps rewrites the file.
 * A refactor that changes one bit of physics, reward, observation, randomization or autoreset
 * behaviour fails here and names the run.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

#define GOLDEN_FILE "tests/testdata/golden_steps.txt"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 0x100000001b3ull; }
    return h;
}

/* deterministic pseudo-random actions in [-amp, amp], independent of the env */
static void actions(float *a, int n, float amp, int step)
{
    for (int i = 0; i < n; i++) {
        unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u + 17u);
        x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        a[i] = amp * (float)((x % 2001) / 1000.0 - 1.0);
    }
}

/* One run: returns the hash of every output byte of `steps` steps of `n` worlds. */
static uint64_t run(const char *name, env_autoreset mode, int n, int steps, float amp, const env_kv *kv, int nkv)
{
    char err[512];
    env_t *e = env_new(name, n, kv, nkv, 20261123, mode, err, sizeof err);
    cr_assert_not_null(e, "%s: %s", name, err);
    const env_spec *s = env_get_spec(e);
    const int od = s->obs_dim, ad = s->act_dim, nt = s->nterms;
    float *obs = calloc((size_t)n * od, 4), *fobs = calloc((size_t)n * od, 4), *act = calloc((size_t)n * ad, 4);
    float *rew = calloc((size_t)n, 4), *terms = calloc((size_t)n * nt, 4), *eterms = calloc((size_t)n * nt, 4);
    float *eret = calloc((size_t)n, 4);
    int32_t *elen = calloc((size_t)n, 4);
    uint8_t *term = calloc((size_t)n, 1), *trunc = calloc((size_t)n, 1), *pres = calloc((size_t)n, 1),
            *done = calloc((size_t)n, 1);
    uint64_t h = 0xcbf29ce484222325ull;
    env_reset(e, 0, n, NULL, NULL, obs);
    h = fnv(h, obs, (size_t)n * od * 4);
    for (int t = 0; t < steps; t++) {
        if (mode == ENV_AUTORESET_DISABLED) {
            /* reset the worlds that ended, as a trainer would with reset_mask */
            int32_t ids[4096];
            int k = 0;
            for (int w = 0; w < n; w++)
                if (term[w] || trunc[w]) ids[k++] = w;
            if (k) {
                float *o = calloc((size_t)k * od, 4);
                env_reset(e, 0, k, ids, NULL, o);
                h = fnv(h, o, (size_t)k * od * 4);
                free(o);
            }
        }
        actions(act, n * ad, amp, t);
        memset(fobs, 0, (size_t)n * od * 4);
        env_info info = {.final_obs = fobs, .physics_reset = pres, .episode_done = done, .episode_return = eret,
                         .episode_length = elen, .episode_terms = eterms, .reward_terms = terms};
        int refused = env_step(e, 0, n, NULL, act, obs, rew, term, trunc, &info);
        h = fnv(h, &refused, sizeof refused);
        h = fnv(h, obs, (size_t)n * od * 4);
        h = fnv(h, rew, (size_t)n * 4);
        h = fnv(h, term, (size_t)n);
        h = fnv(h, trunc, (size_t)n);
        h = fnv(h, pres, (size_t)n);
        h = fnv(h, done, (size_t)n);
        h = fnv(h, terms, (size_t)n * nt * 4);
        if (mode == ENV_AUTORESET_SAME_STEP) h = fnv(h, fobs, (size_t)n * od * 4);
        for (int w = 0; w < n; w++)
            if (done[w]) {
                h = fnv(h, &eret[w], 4);
                h = fnv(h, &elen[w], 4);
                h = fnv(h, eterms + (size_t)w * nt, (size_t)nt * 4);
            }
    }
    free(obs); free(fobs); free(act); free(rew); free(terms); free(eterms); free(eret); free(elen);
    free(term); free(trunc); free(pres); free(done);
    env_destroy(&e);
    return h;
}

typedef struct {
    char key[128];
    uint64_t hash;
} golden;

static int load(golden *g, int max)
{
    FILE *f = fopen(GOLDEN_FILE, "r");
    if (!f) return -1;
    int n = 0;
    char line[256];
    while (n < max && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%127s %" SCNx64, g[n].key, &g[n].hash) == 2) n++;
    }
    fclose(f);
    return n;
}

Test(golden_steps, every_task_every_autoreset_mode, .timeout = 300)
{
    static const char *modes[] = {"next_step", "same_step", "disabled"};
    /* short episodes so that resets (time limits, falls, physics resets) happen inside the runs */
    env_kv short_ep[] = {{"episode_seconds", 0.6}, {"joint_limits", 0}};
    golden want[256], got[256];
    int nwant = load(want, 256), ngot = 0;
    const int write = getenv("HERD_WRITE_GOLDEN") != NULL;
    if (!write) cr_assert(nwant > 0, "no values in %s (write them with HERD_WRITE_GOLDEN=1)", GOLDEN_FILE);
    for (int i = 0; i < env_registry_count(); i++) {
        const env_spec *s = env_registry_spec(i);
        const int fast = s->sim_dt * s->decimation < 0.004;   /* paper-* tasks: 1 ms env steps */
        /* a task whose joint limits are on by default also runs with them off ("/joint_limits0"): those runs
         * hold the hashes of the physics without limits, which the limit rows must leave bit for bit alone */
        int limits = 0;
        for (int k = 0; k < s->nconfig; k++)
            if (!strcmp(s->config[k].key, "joint_limits")) limits = s->config[k].def != 0;
        for (int off = 0; off <= limits; off++) {
            const char *sfx = off ? "/joint_limits0" : "";
            for (int m = 0; m < 3; m++) {
                int steps = fast ? 400 : 120;
                for (int big = 0; big < 2; big++) {
                    float amp = big ? 3.0f : 0.5f;
                    snprintf(got[ngot].key, sizeof got[ngot].key, "%s/%s/amp%.1f%s", s->name, modes[m], amp, sfx);
                    got[ngot].hash = run(s->name, (env_autoreset)m, 6, steps, amp, short_ep, 1 + off);
                    ngot++;
                }
            }
            /* long episodes with the task's defaults: a last-bit change anywhere (model loading, fused
             * multiply-adds moved by a refactor) grows until it shows within a few thousand steps */
            snprintf(got[ngot].key, sizeof got[ngot].key, "%s/long/amp0.3%s", s->name, sfx);
            got[ngot].hash = run(s->name, ENV_AUTORESET_NEXT_STEP, 4, fast ? 4000 : 1000, 0.3f, short_ep + 1, off);
            ngot++;
        }
    }
    if (write) {
        FILE *f = fopen(GOLDEN_FILE, "w");
        cr_assert_not_null(f);
        fprintf(f, "# per-run FNV-1a hashes of every output byte (tests/test_golden_steps.c)\n");
        for (int k = 0; k < ngot; k++) fprintf(f, "%s %016" PRIx64 "\n", got[k].key, got[k].hash);
        fclose(f);
        return;
    }
    cr_assert_eq(nwant, ngot, "golden file has %d runs, the registry gives %d", nwant, ngot);
    for (int k = 0; k < ngot; k++) {
        cr_expect_str_eq(want[k].key, got[k].key);
        cr_expect_eq(want[k].hash, got[k].hash, "%s: %016" PRIx64 " != golden %016" PRIx64, got[k].key, got[k].hash,
                     want[k].hash);
    }
}

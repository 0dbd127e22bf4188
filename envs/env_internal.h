/* env_internal.h — what a task implements (not for env users).
 *
 * A task provides its default spec (fields, timing, config keys, reward terms) and three functions
 * on one world.  env.c owns the registry, configuration, worlds, autoreset and episode statistics. */
#ifndef HERD_ENV_INTERNAL_H
#define HERD_ENV_INTERNAL_H

#include "env.h"
#include "sim_model.h"

/* Counter-based random stream of one world: draw k of (seed, world, episode) is a hash of the four. */
typedef struct {
    uint64_t key;       /* mix of seed, world index and episode */
    uint64_t ctr;
} env_rng;

double env_rng_uniform(env_rng *r);                 /* [0, 1) */
double env_rng_range(env_rng *r, double lo, double hi);
double env_rng_normal(env_rng *r);                  /* standard normal */

/* One world: physics plus the task's state (task_state_size bytes, aligned, zeroed at creation). */
typedef struct {
    sim_data *d;        /* state only (sim_data_new_shared); scratch is bound by env_reset / env_step */
    void *task;
    env_rng rng;
    uint64_t seed;      /* the stream's seed: the env seed, or the world's own after reset(seeds) */
    uint64_t stream;    /* the stream's world key: the world index, or a fixed key when seeded
                         * explicitly, so that an explicitly seeded world draws the same numbers
                         * whatever its index (worlds spread over several servers) */
    uint32_t episode;
    int32_t steps;      /* env steps in this episode */
    int needs_reset;    /* ended (NEXT_STEP / DISABLED) */
    float ep_return;
    float ep_terms[ENV_MAX_TERMS];
} env_world;

struct env;
typedef struct {
    env_spec spec;                                   /* defaults */
    size_t task_state_size;
    /* after configuration: adjust spec (dt, episode) and the model (collision flags, options) */
    int (*configure)(struct env *e, sim_model *m, env_spec *spec, char *err, size_t errlen);
    void (*reset_world)(const struct env *e, env_world *w, float *obs);
    /* the current observation, without stepping (no noise draw) */
    void (*observe)(const struct env *e, env_world *w, float *obs);
    /* one env step: writes obs, reward terms (unscaled sum goes to reward), flags */
    void (*step_world)(const struct env *e, env_world *w, const float *act, float *obs, float *reward,
                       float *terms, uint8_t *terminated, uint8_t *truncated);
} env_task;

struct env {
    const env_task *task;
    env_spec spec;
    double cfg[ENV_MAX_CONFIG];     /* values of spec.config[i] */
    sim_model *model;
    int nworlds;
    env_world *worlds;
    unsigned char *task_mem;
    uint64_t seed;
    env_autoreset autoreset;
    size_t scratch_size;            /* sim_scratch_size(model): bound per call to the worlds stepped */
    _Alignas(64) unsigned char task_env[4096];  /* the task's per-env shared data (read-only after configure) */
};

/* Value of a configuration key (by name; the task's own keys). */
double env_cfg(const struct env *e, const char *key);

/* The ANYmal C model: the copy embedded at build time, or $HERD_MODEL_DIR/anymal_c.urdf when set. */
sim_model *env_load_anymal(char *err, size_t errlen);

/* Tasks. */
extern const env_task env_task_anymal_walk;
extern const env_task env_task_anymal_stand;
extern const env_task env_task_paper_trot, env_task_paper_hang, env_task_paper_drop, env_task_paper_random;

#endif

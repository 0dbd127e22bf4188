/* env_internal.h — what a task implements (not for env users).
 *
 * A task provides its default spec (fields, timing, config keys, reward terms), a configure function
 * (reads its configuration once into typed fields, builds the model) and three functions on one world.
 * env.c owns the registry, configuration, worlds, autoreset, "world ended" and episode statistics. */
#ifndef HERD_ENV_INTERNAL_H
#define HERD_ENV_INTERNAL_H

#include "env.h"
#include "env_rng.h"
#include "sim_batch.h"
#include "sim_model.h"

/* One world: physics plus the task's state (task_state_size bytes, aligned, zeroed at creation). */
typedef struct {
    sim_data *d;        /* state only (sim_data_new_shared); scratch is bound by env_reset / env_step */
    void *task;
    env_rng rng;        /* env_rng_for(seed, stream, episode) at each reset */
    uint64_t seed;      /* the stream's seed: the env seed, or the world's own after reset(seeds) */
    uint64_t stream;    /* the stream's world key: the world index, or a fixed key when seeded
                         * explicitly, so that an explicitly seeded world draws the same numbers
                         * whatever its index (worlds spread over several servers) */
    uint32_t episode;
    int32_t steps;      /* env steps in this episode */
    int needs_reset;    /* ended (NEXT_STEP / DISABLED) */
    float ep_return;
    float ep_terms[ENV_MAX_TERMS];
    uint64_t solver_iterations; /* contact-solver sweeps over the world's life (for env_counters) */
    uint64_t solver_capped;     /* physics steps whose solver hit its iteration cap */
    uint64_t solver_fallbacks;  /* physics steps handed to the solver's ADMM fallback */
    uint64_t solver_ccp_answers; /* physics steps answered by the CCP, not Coulomb (env_counters) */
    uint64_t joint_limits_active; /* joint-limit blocks with a positive impulse, summed over physics steps */
    int last_fallback;  /* 1 if a physics step of the last env step was handed to the solver's fallback */
    void (*observer)(void *ctx, const sim_data *d); /* env_set_physics_observer's (env.h), NULL: none */
    void *observer_ctx;
} env_world;

/* One physics step of world w that also counts the solver's work: the stages after `done` (sim_step_stages), or,
 * when b is not NULL, world w in lane `lane` of the batch b after sim_batch_smooth (sim_batch_step, done NONE).
 * Returns sim_step's value. */
int env_world_physics(const sim_model *m, env_world *w, double dt, const sim_batch *b, int lane, sim_stage done);

/* Worlds an env steps together (env_step groups the worlds of a call in runs of this many for step_worlds). */
#define ENV_BATCH SIM_BATCH_LANES

struct env;
typedef struct {
    env_spec spec;                                   /* defaults */
    size_t task_state_size;
    /* after the overrides are validated: read the configuration into the task's typed fields (in
     * task_env), build e->model, adjust e->spec (timing, bounds), and set e->task_state_size when a world's
     * state depends on the configuration.  0, or -1 with err filled. */
    int (*configure)(struct env *e, char *err, size_t errlen);
    void (*reset_world)(const struct env *e, env_world *w, float *obs);
    /* the current observation, without stepping (no noise draw) */
    void (*observe)(const struct env *e, env_world *w, float *obs);
    /* the critic's observation (spec.critic) of the world's current state: noise-free, no random draw, reads the
     * state only (no scratch); NULL when the task declares none (spec.critic_dim 0) */
    void (*critic_observe)(const struct env *e, env_world *w, float *critic);
    /* One env step: writes obs, the reward terms and their sum, terminated and truncated (0/1).
     * Returns 1 if the physics failed (NaN, inf, runaway): the world has then been reset, obs is the
     * new episode's first, reward and terms are 0.  Else 0. */
    int (*step_world)(const struct env *e, env_world *w, const float *act, float *obs, float *reward, float *terms,
                      uint8_t *terminated, uint8_t *truncated);
    /* Or, for a task whose physics can be batched (sim_batch.h; then step_world may be NULL): step_world for n
     * worlds at once, 1 <= n <= ENV_BATCH: world ws[i] gets act[i], writes obs[i], reward[i], the terms at
     * terms + i nterms, terminated[i] and truncated[i], and failed[i] is step_world's return.  A world's results
     * do not depend on the other worlds of the call.  The worlds' scratch is bound (one scratch, shared: the task
     * uses a world's contacts before it steps the next); batch is initialized for e->model. */
    void (*step_worlds)(const struct env *e, env_world *const *ws, int n, const float *const *act, float *const *obs,
                        float *reward, float *terms, uint8_t *terminated, uint8_t *truncated, int *failed,
                        sim_batch *batch);
    /* Frees what configure allocated besides e->model (may be NULL; called by env_destroy, also after a configure
     * that failed or never ran, on a task_env that is then zeroed or partly set). */
    void (*destroy)(struct env *e);
} env_task;

struct env {
    const env_task *task;
    env_spec spec;
    double cfg[ENV_MAX_CONFIG];     /* values of spec.config[i] */
    sim_model *model;
    int nworlds;
    env_world *worlds;
    unsigned char *task_mem;
    size_t task_state_size;         /* bytes of task state per world: the task's, or what its configure sets */
    size_t task_fixed_bytes;        /* heap bytes configure allocated besides the model (env_get_cost) */
    uint64_t seed;
    env_autoreset autoreset;
    size_t scratch_size;            /* sim_scratch_size(model): bound per call to the worlds stepped */
    size_t batch_size;              /* sim_batch_size(model): one batch per env_step call (tasks with step_worlds) */
    _Alignas(64) unsigned char task_env[4096];  /* the task's per-env shared data (read-only after configure) */
};

/* Value of a configuration key (by name; the task's own keys); NAN if unknown.  For configure only:
 * tasks read their configuration once into typed fields with env_cfg_read. */
double env_cfg(const struct env *e, const char *key);

/* One double field of a task's typed configuration struct and its key. */
typedef struct {
    const char *key;
    size_t offset;      /* offsetof(the struct, the field) */
} env_cfg_field;
#define ENV_CFG_FIELD(type, field) {#field, offsetof(type, field)}

/* Reads the configuration into the struct cfg through its nf fields.  Every key of the env's spec must
 * have a field (so a key cannot be misspelt in one place only): -1 with err filled if one has none.
 * Fields whose key the spec lacks (another task's keys) are left as they are. */
int env_cfg_read(const struct env *e, const env_cfg_field *fields, int nf, void *cfg, char *err, size_t errlen);

/* The "solver" key every task offers: the names of sim's solver table (SIM_SOLVER_ROWS, sim_solver.h) in table
 * order, so that a value is a table index (sim_model opt.solver).  Rows not built yet are listed (the table
 * reserves them) and refused by env_cfg_solver. */
#define ENV_SOLVER_NCHOICES SIM_SOLVER_NROWS
#define ENV_SOLVER_CHOICES {SIM_SOLVER_ROWS(SIM_SOLVER_ROW_NAME)}
_Static_assert(ENV_SOLVER_NCHOICES <= ENV_MAX_CHOICES && SIM_SOLVER_NAME_MAX <= ENV_CHOICE_MAX,
               "env_config_key holds every solver name");
#define ENV_SOLVER_KEY(def)                                                                                 \
    {"solver", def, 0, ENV_SOLVER_NCHOICES - 1, 1, "contact solver by name (sim_solver.h: the model each one solves)", \
     ENV_SOLVER_NCHOICES, ENV_SOLVER_CHOICES}
/* The lower bound of every task's "solver_tol": the solvers' termination errors cannot go much below ~1e-13 in
 * double precision.  On the walk task's problems (`herd-bench solver --tol-floor` shows it: random PD targets, each
 * solver's own error measure) the solvers' converged shares hold down to 1e-11 and fall below it, as rounding
 * takes over, so 1e-11: every allowed tolerance is one the solvers reach. */
#define ENV_SOLVER_TOL_MIN 1e-11
/* A plain numeric key (no named choices). */
#define ENV_NUM_KEY(k, d, l, h, i, doc) {k, d, l, h, i, doc, 0, {""}}

/* For a task's default spec, whose sizes come from its tables, never from a hand count (EnvPool's DefaultConfig
 * habit).  ENV_COUNT(type, entries...): the number of entries.  ENV_EPISODE_STEPS(seconds, control_dt): the env
 * steps of an episode, ceil(seconds / control_dt - 1e-9) (the 1e-9 absorbs the division's rounding) as a constant
 * expression, so that it is what configure computes at run time.  ENV_STR(x): x's expansion as a string literal,
 * for a number in a doc string. */
#define ENV_COUNT(type, ...) ((int)(sizeof((type[]){__VA_ARGS__}) / sizeof(type)))
#define ENV_CEIL_POS_(x) ((int)(x) + ((x) > (int)(x)))
#define ENV_EPISODE_STEPS(seconds, control_dt) ENV_CEIL_POS_((double)(seconds) / (control_dt) - 1e-9)
#define ENV_STR_(x) #x
#define ENV_STR(x) ENV_STR_(x)

/* The sim solver table index of a "solver" value (configure): the value, or -1 with err filled when that
 * row of the table is not built yet. */
int env_cfg_solver(const struct env *e, double value, char *err, size_t errlen);

/* Tasks. */
extern const env_task env_task_anymal_walk;
extern const env_task env_task_anymal_stand, env_task_anymal_rough;
extern const env_task env_task_paper_trot, env_task_paper_hang, env_task_paper_drop, env_task_paper_random;

#endif

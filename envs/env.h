/* env.h — the task registry and the batched environment API.
 *
 * An env_t is one configured task with N worlds (what a server session holds): it owns the model
 * shared by its worlds (one per configuration) and one allocation per world (sim_data + task state).
 * Functions act on a set of worlds and write observations, rewards and flags into caller buffers;
 * they allocate nothing and may run concurrently on disjoint worlds (one thread per slice).
 *
 * Determinism: every random draw of world w comes from a counter-based stream keyed by
 * (seed, w, episode), so results are bitwise identical whatever the threads or the batch split.
 *
 * Autoreset (per env, like Gymnasium's vector envs):
 *   ENV_AUTORESET_NEXT_STEP  a world that ended in step t is reset by step t+1, which ignores its
 *                            action and returns the first observation with reward 0 and no flags.
 *   ENV_AUTORESET_SAME_STEP  a world that ends is reset within the same step: the returned observation
 *                            is the new episode's first; the final one goes to info.final_obs.
 *   ENV_AUTORESET_DISABLED   worlds that ended stay ended until reset explicitly (steps on them are
 *                            errors reported through env_step's return value and info.refused;
 *                            env_first_ended finds them before a step).
 * The env owns "world ended": callers forward info.autoreset / info.refused rather than track it.
 * Units: observations and actions are float32 as the spec describes; time in seconds.
 */
#ifndef HERD_ENV_H
#define HERD_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "env_scene.h"
#include "env_spec.h"

/* Work counters of env_step calls, for monitoring.  env_step ADDS to them (the caller zeroes them; one per
 * thread, summed by the caller). */
typedef struct {
    uint64_t world_steps;       /* worlds stepped (not refused, not autoreset) */
    uint64_t physics_resets;    /* worlds reset because their physics failed */
    uint64_t solver_iterations; /* contact-solver sweeps over all physics steps */
    uint64_t solver_capped;     /* physics steps whose solver stopped at its iteration cap, not converged */
    uint64_t solver_fallbacks;  /* physics steps whose solver handed the problem to its fallbacks (direct, ADMM)
                                 * (coulomb-stall-admm's stall detector; sim_step_stats.fallback) */
    uint64_t solver_ccp_answers; /* physics steps whose contact solve was answered by the cone complementarity
                                  * problem and not Coulomb's law (sim_step_stats.answer == SIM_ANSWER_CCP: the
                                  * fallback's answer where it is not also a Coulomb solution, or solver admm) */
    uint64_t joint_limits_active; /* joint-limit blocks with a positive impulse, summed over physics steps
                                   * (sim_step_stats.nlim_active) */
} env_counters;

/* Per-step extras.  Every pointer may be NULL (not wanted); arrays have one row per stepped world. */
typedef struct {
    float *final_obs;           /* n x obs_dim: same-step mode, the last observation of worlds that ended */
    uint8_t *physics_reset;     /* n: 1 if the world's physics failed (NaN, inf, runaway), or its observation,
                                 * reward or reward terms were not finite (float32 overflow), and it was reset */
    uint8_t *episode_done;      /* n: 1 if an episode ended in this step (the stats below are valid) */
    float *episode_return;      /* n */
    int32_t *episode_length;    /* n (env steps) */
    float *episode_terms;       /* n x nterms: per-term sums over the episode that ended */
    float *reward_terms;        /* n x nterms: this step's per-term breakdown */
    uint8_t *autoreset;         /* n: 1 if this step reset the world instead of stepping it (it had ended, or
                                 * was never reset; its action was ignored).  Never set in DISABLED mode. */
    uint8_t *refused;           /* n: 1 if the world had ended and was not stepped (DISABLED mode only); its
                                 * outputs are its last observation, reward 0 and no flags */
    env_counters *counters;     /* added to, see env_counters */
} env_info;

typedef struct env env_t;

/* Registry. */
int env_registry_count(void);
/* The spec of registered task i with default configuration (NULL if out of range). */
const env_spec *env_registry_spec(int i);
/* Index of a task by name, or -1. */
int env_registry_find(const char *name);

/* Creates a task with nworlds worlds.  Overrides are validated against the spec: an unknown key or
 * a value out of range gives NULL and a message naming the key and the allowed range (for a key with
 * named choices, the names; env_config_choice turns a name into its value).
 * Worlds are not reset: call env_reset.  Free with env_destroy. */
env_t *env_new(const char *name, int nworlds, const env_kv *overrides, int noverrides, uint64_t seed,
               env_autoreset autoreset, char *err, size_t errlen);
/* env_new in steps, so that a server can create a large batch a slice at a time: env_new_begin validates
 * and configures, and allocates the world arrays but no world; env_new_worlds then creates worlds
 * [first, first + n) (0, or -1 out of memory with a message; destroy the env then).  Every world must be
 * created before any other call but env_destroy and env_world_bytes. */
env_t *env_new_begin(const char *name, int nworlds, const env_kv *overrides, int noverrides, uint64_t seed,
                     env_autoreset autoreset, char *err, size_t errlen);
int env_new_worlds(env_t *e, int first, int n, char *err, size_t errlen);
/* Bytes one world takes (its state, task state and bookkeeping), once world 0 exists. */
size_t env_world_bytes(const env_t *e);
/* What an env costs whoever runs it, from its configuration: a server's bounds ask this, never the keys. */
typedef struct {
    size_t world_bytes;         /* one world's memory (env_world_bytes) */
    size_t fixed_bytes;         /* the env's own memory besides its worlds: its struct, its model and what its
                                 * task allocated (the actuator network) */
    double step_work;           /* one world-step's contact-solver iterations at the caps: physics steps per env
                                 * step x (the solver's iteration cap + its ADMM fallback's; sim_solver_iteration_cap) */
    /* what a step-time estimate needs (the server's srv_cost.h): */
    int decimation;             /* physics steps per env step */
    int solver;                 /* the contact solver's row (sim_solver.h) */
    long solver_cap;            /* its own iterations per solve at most */
    int fallback;               /* the row it hands stalled problems to, or -1 */
    long fallback_cap;          /* that row's iterations per solve at most (0 without one) */
    long direct_cap;            /* the direct Coulomb solve's Newton iterations per solve at most
                                 * (sim_solver_direct_cap; 0 for a solver without one) */
    int max_contacts;           /* contacts per world at most (the model's, max_contacts and the solver's limit) */
} env_cost;
/* e's costs; world_bytes is 0 until e's first world exists. */
void env_get_cost(const env_t *e, env_cost *out);

/* A step's time estimated from the configuration (env_cost.c).  The solvers' iteration times on this machine
 * (thread CPU seconds), measured on synthetic problems: an iteration over n contacts takes
 * per_contact n + per_contact2 n^2.  Takes some tens of milliseconds. */
#define ENV_SOLVER_ROWS 16
typedef struct {
    double per_contact[ENV_SOLVER_ROWS], per_contact2[ENV_SOLVER_ROWS];
    double direct_iteration;    /* one Newton iteration of the direct Coulomb solve at its largest problem
                                 * (SIM_SOLVER_DIRECT_MAX_CONTACTS contacts), the costlier of the mode-set search's
                                 * and the semismooth Newton's, s */
} env_solver_timing;
void env_time_solvers(env_solver_timing *out);
/* Seconds one iteration of row `solver` takes over ncontacts contacts (0 for an unknown row). */
double env_solver_iteration_s(const env_solver_timing *t, int solver, int ncontacts);
/* Thread CPU seconds of one physics step of e besides its contact solve, measured (an upper bound: it includes
 * the solves of `steps` env steps of world 0 with zero actions, from a reset; obs and actions of at most
 * ENV_PROBE_DIM entries, else 0).  World 0 must exist; it is reset. */
#define ENV_PROBE_DIM 512
double env_physics_step_s(env_t *e, int steps);
/* Seconds one Newton iteration of the direct Coulomb solve takes over ncontacts contacts (0 above
 * SIM_SOLVER_DIRECT_MAX_CONTACTS, where it does not run): the probe's time at the largest size, scaled by
 * (ncontacts / largest)^2 below it (an iteration builds an m x m Jacobian from G and factors it, m <= 3 ncontacts:
 * between quadratic and cubic, so the quadratic scaling does not underestimate). */
double env_direct_iteration_s(const env_solver_timing *t, int ncontacts);
/* One world-step's time at the caps: decimation x (physics_step_s + the solver's iteration cap x its iteration
 * time at c->max_contacts + the fallback's cap x the fallback's + the direct solve's Newton cap x its iteration
 * time at the largest problem it takes, min(c->max_contacts, SIM_SOLVER_DIRECT_MAX_CONTACTS)). */
double env_world_step_s(const env_cost *c, const env_solver_timing *t, double physics_step_s);
void env_destroy(env_t **e);

/* A named choice of a configuration key (env_config_key.choices): *value = its index, what env_new takes
 * for the key.  Returns 0, or -1 with err filled: unknown env or key, a key without named choices (it
 * takes a number), or an unknown name (the message lists the allowed names). */
int env_config_choice(const char *env, const char *key, const char *name, double *value, char *err, size_t errlen);
const env_spec *env_get_spec(const env_t *e);
int env_num_worlds(const env_t *e);
double env_config(const env_t *e, const char *key);   /* NAN if unknown */

/* Resets n worlds: ids[i] (or first + i when ids is NULL).  A non-NULL seeds array re-keys world
 * ids[i]'s stream with seeds[i] (Gymnasium's reset(seed=...)).  Writes obs (n x obs_dim). */
void env_reset(env_t *e, int first, int n, const int32_t *ids, const uint64_t *seeds, float *obs);

/* Steps n worlds with actions (n x act_dim, clipped to the action bounds; non-finite entries are
 * rejected by the caller, see env_check_actions).  Writes obs (n x obs_dim), rewards, terminated and
 * truncated (n each), and the info arrays that are not NULL.  Returns the number of worlds that could
 * not be stepped (DISABLED autoreset: ended and not reset), whose outputs are their last ones.
 * No output is ever NaN or infinite: a world whose step would produce one is reset in that step
 * (physics_reset, truncated), like a world whose physics failed. */
int env_step(env_t *e, int first, int n, const int32_t *ids, const float *actions, float *obs, float *reward,
             uint8_t *terminated, uint8_t *truncated, env_info *info);

/* The critic's observation (spec.critic, critic_dim floats per world) of n worlds ids[i] (or first + i when ids is
 * NULL) into critic (n x critic_dim), read from their current state: after env_reset or env_step, the state the
 * returned obs describes (the new episode's after an autoreset).  Noise-free; draws no random number and changes
 * nothing, so calling it or not leaves every later step bitwise the same.  Writes nothing when critic_dim is 0.
 * Not concurrently with env_step / env_reset on the same worlds. */
void env_critic_obs(const env_t *e, int first, int n, const int32_t *ids, float *critic);

/* DISABLED autoreset: the index i (0..n-1) of the first of the n worlds ids[i] (or first + i when ids
 * is NULL) that has ended (or was never reset) and so would be refused by env_step; -1 if none.
 * Always -1 in the other autoreset modes. */
int env_first_ended(const env_t *e, int first, int n, const int32_t *ids);

/* Index of the first non-finite value in an n x act_dim action array, or -1. */
long env_check_actions(const env_t *e, int n, const float *actions);

/* ---- the physics behind an env, read-only: for benchmarks and tests that compare it with other engines or step
 * copies of its worlds by hand (sim_model.h; the server has no use for them) ---- */
struct sim_model;
struct sim_data;
/* The model e's worlds share (owned by e, valid until env_destroy). */
const struct sim_model *env_model(const env_t *e);
/* World i's physics state (0 <= i < num_worlds, else NULL): q, u, tau, the warm-start cache and the per-world
 * parameters.  It has no scratch of its own (sim_data_new_shared): read no scratch array through it; to step a
 * copy, sim_data_copy_state it into a world of env_model(e).  Not concurrently with env_step / env_reset. */
const struct sim_data *env_world_state(const env_t *e, int i);
/* Calls fn(ctx[i], d) after every successful physics step of world i (i < env_num_worlds(e)), while that step's
 * contacts (d->con, d->ncon, the block impulses) and stats are still in the scratch it was stepped with: what benches
 * and tests read per physics step and env_step's results do not keep.  A world whose ctx[i] is NULL is not observed;
 * ctx NULL observes every world with a NULL context; fn NULL removes the observer.  Not concurrently with env_step /
 * env_reset; fn runs on the threads that step the worlds. */
void env_set_physics_observer(env_t *e, void (*fn)(void *ctx, const struct sim_data *d), void *const *ctx);

/* ---- terrain curriculum (anymal_c-rough) ---- */

/* Terrain kinds of the rough task's field, in env_terrain.h's order: slope_up, slope_down, rough_slope,
 * stairs_up, stairs_down, obstacles. */
#define ENV_TERRAIN_KINDS 6
/* The terrain levels (rows, 0 = easiest) of e's worlds that have been reset at least once: *mean their mean,
 * by_kind[k] the mean over the worlds on kind k's columns (NAN where none), count_by_kind[k] those worlds (each
 * pointer may be NULL).  Returns the number of worlds counted, or -1 if e's task has no terrain.  Not
 * concurrently with env_step / env_reset. */
int env_terrain_levels(const env_t *e, double *mean, double by_kind[ENV_TERRAIN_KINDS],
                       int count_by_kind[ENV_TERRAIN_KINDS]);

/* The tiles of n worlds ids[i] (or first + i when ids is NULL), as the spec's terrain_kinds number them: level[i]
 * the world's terrain level (row, 0 = easiest), kind[i] its tile kind (an index into spec.terrain_kinds); -1 in
 * both for a world never reset.  After env_reset or env_step, the tile of the episode obs describes (the new one
 * after an autoreset).  Reads only; either pointer may be NULL.  Returns 0, or -1 (nothing written) if e's task
 * has no terrain (spec.nterrain_kinds 0).  Not concurrently with env_step / env_reset on the same worlds. */
int env_terrain_tiles(const env_t *e, int first, int n, const int32_t *ids, int32_t *level, int32_t *kind);

/* ---- looking at worlds (env_scene.c): read-only, no RNG draw, no effect on later steps ---- */

/* The task's visual scene: bodies, their primitives (from the model's geometries, coloured by role) and the
 * terrain.  The same for every world of e; heights point into e's model. */
void env_scene(const env_t *e, env_scene_t *out);
/* On a cell terrain, selects the region of its samples whose cells meet the box [x_min, y_min, x_max, y_max]
 * (world frame, m; clipped to the grid, so at least one sample: the border cells extend to infinity).  Returns
 * 0 (also for a plane or heightfield, which the scene holds whole), or -1 with err filled when the region would
 * hold more than ENV_SCENE_REGION_MAX_SAMPLES samples or the box is not finite with min <= max. */
int env_scene_region(env_scene_t *s, const double box[4], char *err, size_t errlen);

/* A contact's state in the last physics step's answer (env_contacts.state), by the conditions the solvers impose
 * (sim_solver.h, sim_metrics.h): OPEN a touching contact with normal impulse 0; STICK a loaded contact whose
 * friction impulse is inside the cone by at least its sliding speed (mu lambda_n - |lambda_T| >= |v_T|: the
 * sticking condition v_T = 0 is the one it satisfies more closely); SLIP a loaded contact sliding (|v_T| > 0)
 * closer to the cone's boundary than that. */
enum { ENV_CONTACT_OPEN = 0, ENV_CONTACT_STICK = 1, ENV_CONTACT_SLIP = 2 };

/* Contacts of a poses read (env_poses): fixed-size rows of max entries per world, the first count[i] valid.
 * The diagnostics after `impulse` are each optional (NULL: not written). */
typedef struct {
    int max;            /* row length: env_scene's max_contacts (fewer are reported when max is smaller) */
    int32_t *count;     /* n */
    float *pos;         /* n x max x 3: contact point on the geometry, world frame (m) */
    float *normal;      /* n x max x 3: ground normal (world, unit, pointing up out of the ground) */
    float *impulse;     /* n x max: normal impulse of the last physics step (N·s) */
    int open;           /* 1: the rows also hold the touching contacts whose last normal impulse was 0 */
    uint8_t *state;     /* n x max: ENV_CONTACT_* */
    float *friction;    /* n x max x 3: friction (tangential) impulse of the last physics step, world frame (N·s) */
    int32_t *body;      /* n x max: the body whose geometry touches (scene body index) */
    uint8_t *fallback;  /* n: 1 when a physics step of the world's last env step took its contact answer from the
                         * solver's fallback model (sim_step_stats.fallback), else 0 */
    float *limit;       /* n x nbody: each body's joint-limit impulse in the last physics step (N·m·s or N·s),
                         * positive at the lower limit (pushing q up), negative at the upper; 0 for the root */
} env_contacts;

/* The pose of every body of n worlds ids[i] (or first + i when ids is NULL), from their current state:
 * body_pos (n x nbody x 3, world frame, m) and body_quat (n x nbody x 4, w x y z, body-to-world).  With c
 * not NULL also the active contacts: the points where the world's geometries touch the ground now (within
 * the solver's margin) whose normal impulse in the last physics step was positive.  Reads the worlds only
 * (their state is not written, no random number is drawn): calling it or not leaves every later step
 * bitwise the same.  Not concurrently with env_step / env_reset on the same worlds.  The sliding
 * speed that tells STICK from SLIP is the contact point's tangential velocity in the world's current state (the
 * last step's answer), on the contacts as collision finds them now; the friction impulse is the last step's, in
 * the current contact frame (the frames the warm start uses). */
void env_poses(const env_t *e, int first, int n, const int32_t *ids, float *body_pos, float *body_quat,
               env_contacts *c);

#endif

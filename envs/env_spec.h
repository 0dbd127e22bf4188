/* env_spec.h — the data-only description of a task, shared by envs/, protocol/ and clients/c.
 *
 * Plain data: names, observation and action fields with bounds and scales, timing, configuration keys
 * with defaults and ranges, reward term names.  No functions, no other herd header: this is the one
 * thing the wire protocol and the C client take from envs/ (see DESIGN.md, "The layers").
 * Units: SI; observation and action fields are float32 elements of one flat vector.
 */
#ifndef HERD_ENV_SPEC_H
#define HERD_ENV_SPEC_H

#include <stdint.h>

#define ENV_NAME_MAX 48
#define ENV_MAX_FIELDS 16
#define ENV_MAX_CONFIG 64
#define ENV_MAX_TERMS 16
#define ENV_MAX_CHOICES 12
#define ENV_CHOICE_MAX 24
#define ENV_MAX_TERRAIN_KINDS 8

typedef enum { ENV_AUTORESET_NEXT_STEP = 0, ENV_AUTORESET_SAME_STEP, ENV_AUTORESET_DISABLED } env_autoreset;

/* One named group of a flat float32 vector (observation or action). */
typedef struct {
    char name[ENV_NAME_MAX];
    int offset, size;           /* elements [offset, offset + size) of the flat vector */
    float low, high;            /* bounds of every element (may be -INFINITY / INFINITY) */
    float scale;                /* the scale applied to the physical quantity (1 if none) */
    char unit[16];              /* of the physical quantity before scaling ("m/s", "rad", "" ...) */
} env_field;

/* A configuration key: a number in [lo, hi] (integers when is_int).  A key with named choices
 * (nchoices > 0, e.g. "solver") takes an integer i in [lo, hi] = [0, nchoices - 1] that means
 * choices[i]; a client may give the name instead (env_config_choice, a string on the wire). */
typedef struct {
    char key[ENV_NAME_MAX];
    double def, lo, hi;
    int is_int;
    char doc[112];
    int nchoices;                                   /* 0: a plain number */
    char choices[ENV_MAX_CHOICES][ENV_CHOICE_MAX];  /* names of the values 0 .. nchoices - 1 */
} env_config_key;

typedef struct {
    char name[ENV_NAME_MAX];
    char doc[200];
    int obs_dim, act_dim;
    int nobs, nact;
    env_field obs[ENV_MAX_FIELDS], act[ENV_MAX_FIELDS];
    /* The critic's (privileged) observation: an optional second flat float32 vector, for an asymmetric
     * actor-critic (critic_dim 0: the task has none).  Fields as in obs; a task's critic observation starts
     * with its observation's fields, noise-free, and appends privileged ones, so a task extending another
     * appends its own after them. */
    int critic_dim, ncritic;
    env_field critic[ENV_MAX_FIELDS];
    double sim_dt;              /* physics step (s) */
    int decimation;             /* physics steps per env step */
    double control_dt;          /* sim_dt * decimation */
    double episode_seconds;
    int max_episode_steps;      /* truncation (time limit) */
    int nconfig;
    env_config_key config[ENV_MAX_CONFIG];
    int nterms;                 /* reward terms (names below), summed into the reward */
    char terms[ENV_MAX_TERMS][ENV_NAME_MAX];
    /* Tasks with a terrain curriculum: the names of its tile kinds (nterrain_kinds > 0), indexed by the kind number
     * each world reports with its terrain level; 0 for flat tasks. */
    int nterrain_kinds;
    char terrain_kinds[ENV_MAX_TERRAIN_KINDS][ENV_CHOICE_MAX];
} env_spec;

/* A configuration override: key = value. */
typedef struct {
    const char *key;
    double value;
} env_kv;

#endif

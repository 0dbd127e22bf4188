/* env_paper.c — the four experiments of Hwangbo, Lee & Hutter (2018) as tasks, for benchmarking the
 * simulator in batches and over the wire: "paper-trot", "paper-hang", "paper-drop", "paper-random"
 * (see env_scenario.h, which uses the ANYmal module env_anymal_model.h).  Physics exactly as the solver benchmark: dt 1 ms, one physics step per env
 * step by default, the scenario's own scripted controller and resets.  The action (12, rad) is an
 * offset added to the scripted PD targets (zeros reproduce the paper's scenario); the observation is
 * the raw state; the reward is 0: these tasks measure the simulator, not a policy. */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "env_anymal_model.h"
#include "env_internal.h"
#include "env_scenario.h"
#include "sim_step.h"

/* Each env's typed configuration (the keys of the spec below), read once at env_new. */
typedef struct {
    double sim_dt, decimation, episode_seconds, solver, erp, solver_max_iter, solver_tol;
    double joint_limits, joint_damping, joint_friction, joint_armature;
} paper_cfg;

static const env_cfg_field paper_cfg_fields[] = {
    ENV_CFG_FIELD(paper_cfg, sim_dt), ENV_CFG_FIELD(paper_cfg, decimation), ENV_CFG_FIELD(paper_cfg, episode_seconds),
    ENV_CFG_FIELD(paper_cfg, solver), ENV_CFG_FIELD(paper_cfg, erp), ENV_CFG_FIELD(paper_cfg, solver_max_iter),
    ENV_CFG_FIELD(paper_cfg, solver_tol), ENV_CFG_FIELD(paper_cfg, joint_limits),
    ENV_CFG_FIELD(paper_cfg, joint_damping), ENV_CFG_FIELD(paper_cfg, joint_friction),
    ENV_CFG_FIELD(paper_cfg, joint_armature)};

typedef struct {
    int kind;
    double dt;
    int decimation;
} paper_shared;

_Static_assert(sizeof(paper_shared) <= sizeof(((struct env *)0)->task_env), "task_env too small");
static const paper_shared *pshared(const struct env *e) { return (const paper_shared *)(const void *)e->task_env; }

static int paper_configure(struct env *e, char *err, size_t errlen)
{
    env_spec *spec = &e->spec;
    paper_cfg c;
    if (env_cfg_read(e, paper_cfg_fields, (int)(sizeof paper_cfg_fields / sizeof paper_cfg_fields[0]), &c, err, errlen))
        return -1;
    int solver = env_cfg_solver(e, c.solver, err, errlen);
    if (solver < 0) return -1;
    int kind = env_scenario_kind_from_name(spec->name + strlen("paper-"));
    sim_model *m = env_anymal_load(err, errlen);
    if (!m) return -1;
    if (env_scenario_configure_model(m, kind, err, errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    m->opt.solver = solver;
    m->opt.erp = c.erp;
    m->opt.sp.max_iter = (int)c.solver_max_iter;
    m->opt.sp.tol = c.solver_tol;
    env_anymal_joints jm;
    if (env_anymal_joints_init(&jm, m, err, errlen) ||
        env_anymal_joint_options(m, &jm, c.joint_limits, c.joint_damping, c.joint_friction, c.joint_armature, err,
                                 errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    paper_shared *ps = (paper_shared *)(void *)e->task_env;
    ps->kind = kind;
    ps->dt = c.sim_dt;
    ps->decimation = (int)c.decimation;
    spec->sim_dt = ps->dt;
    spec->decimation = ps->decimation;
    spec->control_dt = ps->dt * ps->decimation;
    spec->episode_seconds = c.episode_seconds;
    spec->max_episode_steps = (int)ceil(spec->episode_seconds / spec->control_dt - 1e-9);
    e->model = m;
    return 0;
}

static void paper_observe(const struct env *e, env_world *w, float *o)
{
    const sim_data *d = w->d;
    for (int k = 0; k < e->model->nq; k++) o[k] = (float)d->q[k];
    for (int k = 0; k < e->model->nv; k++) o[e->model->nq + k] = (float)d->u[k];
}

static void paper_reset(const struct env *e, env_world *w, float *obs)
{
    env_scenario *s = w->task;
    char err[128];
    uint64_t seed = (uint64_t)(env_rng_uniform(&w->rng) * 18446744073709551615.0);
    /* cannot fail: configure checked the model with the same joint map */
    int rc = env_scenario_init(s, e->model, w->d, pshared(e)->kind, seed, err, sizeof err);
    assert(rc == 0);
    (void)rc;
    paper_observe(e, w, obs);
}

static int paper_step(const struct env *e, env_world *w, const float *act, float *obs, float *reward, float *terms,
                      uint8_t *terminated, uint8_t *truncated)
{
    const paper_shared *ps = pshared(e);
    env_scenario *s = w->task;
    for (int i = 0; i < ENV_ANYMAL_NJ; i++) s->offset[i] = isfinite(act[i]) ? act[i] : 0;
    int failed = 0;
    for (int k = 0; k < ps->decimation && !failed; k++) {
        env_scenario_control(s, e->model, w->d, ps->dt);
        failed = env_world_physics(e->model, w, ps->dt, NULL, 0, s->done) != 0;
    }
    *reward = 0;
    *terminated = 0;
    *truncated = 0;
    if (failed) {
        paper_reset(e, w, obs);
        return 1;
    }
    paper_observe(e, w, obs);
    return 0;
}

/* The raw state: base position, orientation, joint angles, then every generalized velocity. */
#define PAPER_OBS(X)                                                                                        \
    X("base_pos", 0, 3, "m") X("base_quat_wxyz", 3, 4, "") X("joint_pos", 7, ENV_ANYMAL_NJ, "rad")          \
    X("velocities", 7 + ENV_ANYMAL_NJ, 6 + ENV_ANYMAL_NJ, "m/s, rad/s")
#define OBS(nm, off, sz, un) {nm, off, sz, -INFINITY, INFINITY, 1.0f, un},
#define OBS_SIZE(nm, off, sz, un) + (sz)
#define PAPER_SIM_DT 0.001          /* s: the paper's physics step */
#define PAPER_EPISODE_S 10
#define KEY ENV_NUM_KEY
#define PAPER_KEYS                                                                                          \
    KEY("sim_dt", PAPER_SIM_DT, 0.0001, 0.01, 0, "physics step (s); the paper uses 1 ms"),                 \
    KEY("decimation", 1, 1, 100, 1, "physics steps per env step"),                                          \
    KEY("episode_seconds", PAPER_EPISODE_S, 0.001, 3600, 0, "time limit (truncation)"),                     \
    ENV_SOLVER_KEY(SIM_SOLVER_PAPER_BISECTION),                                                             \
    KEY("erp", 0, 0, 1, 0, "contact position correction per physics step (0 = off)"),                    \
    KEY("solver_max_iter", 150, 1, 10000, 1, "contact solver sweeps (iterations) per physics step at most"), \
    KEY("solver_tol", 1e-6, ENV_SOLVER_TOL_MIN, 1e-2, 0,                                                    \
        "contact solver termination threshold (its own error measure); >= " ENV_STR(ENV_SOLVER_TOL_MIN)      \
        ", above the solvers' rounding floor"),                                                             \
    ENV_ANYMAL_JOINT_KEYS(1)
#define PAPER_TASK(var, nm, what)                                                                           \
    const env_task var = {                                                                                  \
        .spec = {                                                                                           \
            .name = nm,                                                                                     \
            .doc = what " (Hwangbo et al. 2018); actions offset the scripted PD targets; reward 0",        \
            .obs_dim = 0 PAPER_OBS(OBS_SIZE), .act_dim = ENV_ANYMAL_NJ,                                     \
            .nobs = ENV_COUNT(env_field, PAPER_OBS(OBS)), .nact = 1,                                        \
            .obs = {PAPER_OBS(OBS)},                                                                        \
            .act = {{"target_offsets", 0, ENV_ANYMAL_NJ, -1, 1, 1.0f, "rad"}},                              \
            .sim_dt = PAPER_SIM_DT, .decimation = 1, .control_dt = PAPER_SIM_DT,                            \
            .episode_seconds = PAPER_EPISODE_S,                                                             \
            .max_episode_steps = ENV_EPISODE_STEPS(PAPER_EPISODE_S, PAPER_SIM_DT),                          \
            .nconfig = ENV_COUNT(env_config_key, PAPER_KEYS),                                               \
            .config = {PAPER_KEYS},                                                                         \
            .nterms = 0,                                                                                    \
        },                                                                                                  \
        .task_state_size = sizeof(env_scenario),                                                            \
        .configure = paper_configure,                                                                       \
        .reset_world = paper_reset,                                                                         \
        .observe = paper_observe,                                                                           \
        .step_world = paper_step,                                                                           \
    }

PAPER_TASK(env_task_paper_trot, "paper-trot", "scripted diagonal trot toward 1.5 m/s");
PAPER_TASK(env_task_paper_hang, "paper-hang", "unactuated drop from 1 m with only the feet colliding");
PAPER_TASK(env_task_paper_drop, "paper-drop", "PD drop from 1 m with 1 m/s tangential velocity");
PAPER_TASK(env_task_paper_random, "paper-random", "random PD targets (1 rad^2), reset every 5 s");

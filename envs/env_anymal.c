/* env_anymal.c — ANYmal C locomotion tasks.
 *
 * anymal_c-walk: flat-ground velocity tracking modelled on legged_gym's ANYmal C flat task: its
 *   observation (WALK_OBS) with its scales, action = target joint angles 0.5 a + default pose, PD (Kp 80, Kd 2,
 *   80 N·m), 5 ms x 4 (50 Hz policy), 20 s episodes, commands U(-1, 1) resampled every 4 s and zeroed when
 *   |v_xy| <= 0.2, legged_gym's reward terms and scales (times the control dt, total clipped at 0),
 *   termination on base contact, truncation at the time limit, and its domain randomization.  Friction:
 *   legged_gym draws the foot's friction in [0, 1.5], but Isaac Gym averages it with the ground plane's 1.0,
 *   so the foot-ground friction it simulates is in [0.5, 1.25]; here the pair friction is drawn directly,
 *   hence the default range [0.5, 1.25] (below about 0.3 ANYmal's legs splay even at rest).
 * anymal_c-rough: legged_gym's anymal_c_rough on its curriculum terrain (env_terrain.h: one field per env, made
 *   from the env's seed, shared read-only by its worlds as the model's cell terrain).  Walk's observation plus the
 *   187-point height scan (ROUGH_OBS; obs_scales isaaclab drops every scale), heading commands (v_x, v_y, heading
 *   U(-pi, pi) every 10 s; omega = clip(0.5 wrap(heading - yaw), +-cmd_yaw_max)), legged_gym's rough reward scales,
 *   and a world's tile: its column by env_curriculum_column (over the env's worlds, or over each run of
 *   terrain_column_period worlds, so that a world's tile does not depend on how many worlds the env has), its level
 *   moved at each reset by env_curriculum.h's rules (rough_place), within [terrain_level_min, terrain_level_max];
 *   spawn at the tile origin + U(+-1 m) in x and y, 0.6 m above it, yaw 0.  env_terrain_levels reports the levels
 *   (mean, per terrain kind).
 * anymal_c-stand: stand up from a random crouched (or, with fallen_prob, fallen) pose and hold a target
 *   base height; 4 s episodes; a reward that pays for rolling toward upright at any tilt (see stand_rewards).
 *
 * The robot (joint map, default pose, gains, foot detection) is env_anymal_model.h's.  Each env reads
 * its configuration once, at env_new, into the typed anymal_cfg; observation scales and noise come
 * from one table per task (WALK_OBS, STAND_OBS) that also builds the spec's fields.
 * Joint order everywhere (observations, actions): LF, RF, LH, RH x HAA, HFE, KFE.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_actuator.h"
#include "env_anymal_model.h"
#include "env_curriculum.h"
#include "env_internal.h"
#include "sim_dynamics.h"
#include "sim_math.h"
#include "sim_step.h"

enum { NJ = ENV_ANYMAL_NJ, NFEET = 4 };

/* Defaults of the configuration keys that the spec's fields and timing also state. */
#define ANYMAL_SIM_DT 0.005         /* s, physics step */
#define ANYMAL_DECIMATION 4         /* physics steps per env step (50 Hz policy) */
#define ANYMAL_ACTION_SCALE 0.5     /* rad per unit of action */
#define ANYMAL_ACTION_CLIP 100.0    /* actions are clipped to +-this */
#define ANYMAL_OBS_CLIP 100.0       /* observations are clipped to +-this */

/* Contact thresholds on the last substep's contact force (N, impulse / sim_dt), as legged_gym reads its
 * contact sensors: a foot is in contact, the base touches (termination), a thigh or shank touches (the
 * collision penalty counts it). */
#define FOOT_CONTACT_N 1.0
#define BASE_CONTACT_N 1.0
#define LEG_CONTACT_N 0.1

/* Walk (legged_gym's values): a drawn xy command at most CMD_DEADBAND_MPS fast is zeroed; the tracking rewards
 * are exp(-error^2 / TRACKING_SIGMA_SQ); feet_air_time pays air time beyond AIR_TIME_TARGET_S at each touchdown,
 * and only while the xy command is faster than AIR_TIME_CMD_MIN_MPS.  An episode starts with the base
 * WALK_START_HEIGHT_M up. */
#define CMD_DEADBAND_MPS 0.2
#define TRACKING_SIGMA_SQ 0.25      /* (m/s)^2 and (rad/s)^2 */
#define AIR_TIME_TARGET_S 0.5
#define AIR_TIME_CMD_MIN_MPS 0.1
#define WALK_START_HEIGHT_M 0.6

/* Stand: a start on the ground leaves this gap under the lowest foot or leg sphere (m); a fallen start drops
 * the base from STAND_FALLEN_HEIGHT_M.  The height reward's width (m) and the "standing" criterion (the one
 * examples/ppo_stand.py counts as success): |dz| within STAND_OK_DZ_M and the tilt's cosine at least
 * STAND_OK_COS. */
#define GROUND_CLEARANCE_M 0.002
#define STAND_FALLEN_HEIGHT_M 0.45
#define STAND_HEIGHT_SIGMA_M 0.1
#define STAND_OK_DZ_M 0.05
#define STAND_OK_COS 0.9

/* The configuration of one env (every key of both tasks; each task's spec lists its own), read once. */
typedef struct {
    double sim_dt, decimation, kp, kd, torque_limit, action_scale, action_clip, obs_clip, obs_noise, init_noise;
    double push_vel_max, solver, erp, solver_max_iter, solver_tol, max_contacts;
    double friction_min, friction_max, added_mass_min, added_mass_max, push_interval_s, episode_seconds;
    double cmd_vx_max, cmd_vy_max, cmd_yaw_max, cmd_resample_s, only_positive_rewards;   /* walk */
    double target_height, fallen_prob;                                                   /* stand */
    double actuator, net_precision, dc_saturation, dc_effort_limit, dc_velocity_limit, delay_min, delay_max,   /* actuator */
        kp_scale_min, kp_scale_max, kd_scale_min, kd_scale_max, motor_strength_min, motor_strength_max;
    double joint_limits, joint_damping, joint_friction, joint_armature;                  /* joints */
    double curriculum, terrain_level_min, terrain_level_max, obs_scales, terrain_column_period; /* rough */
} anymal_cfg;

#define F(k) ENV_CFG_FIELD(anymal_cfg, k)
static const env_cfg_field cfg_fields[] = {
    F(sim_dt), F(decimation), F(kp), F(kd), F(torque_limit), F(action_scale), F(action_clip), F(obs_clip),
    F(obs_noise), F(init_noise), F(push_vel_max), F(solver), F(erp), F(solver_max_iter), F(solver_tol),
    F(max_contacts), F(friction_min), F(friction_max), F(added_mass_min), F(added_mass_max), F(push_interval_s),
    F(episode_seconds), F(cmd_vx_max), F(cmd_vy_max), F(cmd_yaw_max), F(cmd_resample_s), F(only_positive_rewards),
    F(target_height), F(fallen_prob),
    F(actuator), F(net_precision), F(dc_saturation), F(dc_effort_limit), F(dc_velocity_limit), F(delay_min), F(delay_max),
    F(kp_scale_min), F(kp_scale_max), F(kd_scale_min), F(kd_scale_max), F(motor_strength_min), F(motor_strength_max),
    F(joint_limits), F(joint_damping), F(joint_friction), F(joint_armature),
    F(curriculum), F(terrain_level_min), F(terrain_level_max), F(obs_scales), F(terrain_column_period)};
#undef F

/* What an observation field holds (before its scale). */
typedef enum { Q_LIN_VEL, Q_ANG_VEL, Q_GRAVITY, Q_CMD_LIN, Q_CMD_YAW, Q_HEIGHT_ERR, Q_DOF_POS, Q_DOF_VEL, Q_ACTIONS, Q_HEIGHTS } obs_quantity;

/* One observation field's definition: its quantity, its scale, and its noise, uniform in
 * +-(obs_noise * noise * noise_mult): walk gives legged_gym's noise scales (physical units) times the
 * field's scale, stand gives its noise in observation units (noise_mult 1).  noise 0: no draw. */
typedef struct {
    obs_quantity q;
    double scale, noise, noise_mult;
} obs_def;

/* The observation tables, from which both the spec's fields and the observation code come:
 * name, quantity, offset, size, scale, noise, unit. */
#define JOINT_OBS(X, off, vel_noise)                                                \
    X("dof_pos", Q_DOF_POS, off, 12, 1.0, 0.01, "rad")                              \
    X("dof_vel", Q_DOF_VEL, off + 12, 12, 0.05, vel_noise, "rad/s")                 \
    X("actions", Q_ACTIONS, off + 24, 12, 1.0, 0, "")
#define WALK_OBS(X)                                                                 \
    X("base_lin_vel", Q_LIN_VEL, 0, 3, 2.0, 0.1, "m/s")                             \
    X("base_ang_vel", Q_ANG_VEL, 3, 3, 0.25, 0.2, "rad/s")                          \
    X("projected_gravity", Q_GRAVITY, 6, 3, 1.0, 0.05, "")                          \
    X("command_lin_vel", Q_CMD_LIN, 9, 2, 2.0, 0, "m/s")                            \
    X("command_yaw_rate", Q_CMD_YAW, 11, 1, 0.25, 0, "rad/s")                       \
    JOINT_OBS(X, 12, 1.5)
/* Rough: walk's, then legged_gym's 187-point height scan (env_curriculum.h): clip(z_base - 0.5 - h, -1, 1) x 5,
 * noise 0.1 m x 5. */
#define ROUGH_OBS(X)                                                                \
    WALK_OBS(X)                                                                     \
    X("height_scan", Q_HEIGHTS, 48, ENV_HEIGHTSCAN_POINTS, 5.0, 0.1, "m")
#define STAND_OBS(X)                                                                \
    X("base_height_error", Q_HEIGHT_ERR, 0, 1, 1.0, 0.01, "m")                      \
    X("projected_gravity", Q_GRAVITY, 1, 3, 1.0, 0.05, "")                          \
    X("base_lin_vel", Q_LIN_VEL, 4, 3, 2.0, 0.2, "m/s")                             \
    X("base_ang_vel", Q_ANG_VEL, 7, 3, 0.25, 0.05, "rad/s")                         \
    JOINT_OBS(X, 10, 0.075)
#define OBS_DEF_SCALED(nm, q, off, sz, sc, noise, un) {q, sc, noise, sc},
#define OBS_DEF(nm, q, off, sz, sc, noise, un) {q, sc, noise, 1.0},
#define OBS_SPEC(nm, q, off, sz, sc, noise, un) {nm, off, sz, -ANYMAL_OBS_CLIP, ANYMAL_OBS_CLIP, (float)(sc), un},
static const obs_def walk_obs[] = {WALK_OBS(OBS_DEF_SCALED)};
static const obs_def stand_obs[] = {STAND_OBS(OBS_DEF)};
static const obs_def rough_obs[] = {ROUGH_OBS(OBS_DEF_SCALED)};

/* The critic's observation (spec.critic) of both tasks: the task's observation table without its noise (same
 * fields, scales and clip), then these privileged fields, in physical units (scale 1), offsets from the end of
 * the observation:
 *   friction      the world's foot-ground friction coefficient, drawn per reset in [friction_min, friction_max]
 *   added_mass    the mass added to the base, drawn per reset in [added_mass_min, added_mass_max] (kg)
 *   foot_contact  per foot (LF, RF, LH, RH): 1 when its normal contact force in the last physics step (impulse /
 *                 sim_dt) exceeded FOOT_CONTACT_N (the contact the feet_air_time reward counts), else 0; 0 after
 *                 a reset
 *   push_vel      the base xy velocity (world frame) the last push set, 0 before the episode's first push (m/s)
 * name, quantity, offset, size, low, high (the configured ranges replace these at configure), unit. */
typedef enum { P_FRICTION, P_ADDED_MASS, P_FOOT_CONTACT, P_PUSH_VEL, P_TERRAIN_LEVEL } privileged_quantity;
#define CRITIC_PRIVILEGED(X, base)                                                  \
    X("friction", P_FRICTION, (base) + 0, 1, 0, 5, "")                              \
    X("added_mass", P_ADDED_MASS, (base) + 1, 1, -30, 30, "kg")                     \
    X("foot_contact", P_FOOT_CONTACT, (base) + 2, 4, 0, 1, "")                      \
    X("push_vel", P_PUSH_VEL, (base) + 6, 2, -5, 5, "m/s")
#define PRIV_Q(nm, q, off, sz, lo, hi, un) q,
#define PRIV_SPEC(nm, q, off, sz, lo, hi, un) {nm, off, sz, lo, hi, 1.0f, un},
#define PRIV_SIZE(nm, q, off, sz, lo, hi, un) + (sz)
#define PRIV_DIM (0 CRITIC_PRIVILEGED(PRIV_SIZE, 0))
/* Rough appends the world's terrain level (its row, 0 = easiest). */
#define ROUGH_PRIVILEGED(X, base)                                                   \
    CRITIC_PRIVILEGED(X, base)                                                      \
    X("terrain_level", P_TERRAIN_LEVEL, (base) + 8, 1, 0, ENV_TERRAIN_ROWS - 1, "")
#define ROUGH_PRIV_DIM (0 ROUGH_PRIVILEGED(PRIV_SIZE, 0))
static const privileged_quantity critic_priv[] = {CRITIC_PRIVILEGED(PRIV_Q, 0)};
static const privileged_quantity rough_priv[] = {ROUGH_PRIVILEGED(PRIV_Q, 0)};
#define NPRIV ((int)(sizeof critic_priv / sizeof critic_priv[0]))
#define ROUGH_NPRIV ((int)(sizeof rough_priv / sizeof rough_priv[0]))

/* What every world of an env shares, derived from the configuration and the model at env_new. */
typedef struct {
    anymal_cfg cfg;
    env_anymal_joints j;
    const obs_def *obs;             /* the task's observation table (e->spec.obs gives offsets, sizes) */
    obs_def obs_unscaled[ENV_MAX_FIELDS]; /* rough with obs_scales isaaclab: the table with every scale 1 */
    const privileged_quantity *priv; /* the task's privileged critic fields, after the observation's */
    int npriv;
    unsigned char geom_kind[SIM_MAX_GEOMS];
    signed char geom_foot[SIM_MAX_GEOMS];
    double foot_friction;           /* the model's pair friction, to scale per world */
    double control_dt;
    int decimation;
    env_actuator act;               /* the joint actuators (env_actuator.h) */
    size_t act_offset;              /* of a world's actuator state in its task memory (after anymal_state) */
    /* rough: the env's terrain field (env_terrain.h), the model's cell terrain over it, and the offset of a
     * world's rough_state (after its actuator state); NULL / 0 for the flat tasks */
    env_terrain *terrain;
    float *cell_heights;
    unsigned char *cell_smooth;
    size_t rough_offset;
} anymal_shared;

/* Per-world task state. */
typedef struct {
    double targets[NJ];
    float actions[NJ], last_actions[NJ];
    double last_dof_vel[NJ];
    double cmd[3];
    double t;                       /* time in the episode */
    double next_cmd, next_push;
    double push_vel[2];             /* the last push's base xy velocity (m/s; the critic's push_vel) */
    double air[NFEET];
    int last_contact[NFEET];
    double tau_sq;                  /* sum of tau^2 over the env step, averaged per substep */
    int base_contact, leg_contacts;
    double foot_force[NFEET];
} anymal_state;

/* Rough's per-world curriculum state, which outlives the episode (anymal_reset clears anymal_state only). */
typedef struct {
    int placed;                     /* 0 until the world's first reset */
    int level, col;                 /* its tile: row (level) and column (terrain kind) */
    double origin[3];               /* the tile's origin (field frame, m) */
    double heading;                 /* the commanded heading (rad, world yaw) */
} rough_state;

_Static_assert(sizeof(anymal_shared) <= sizeof(((struct env *)0)->task_env), "task_env too small");
static anymal_shared *shared(const struct env *e) { return (anymal_shared *)(uintptr_t)e->task_env; }
/* World w's actuator state (env_actuator.h), after its anymal_state. */
static void *act_state(const struct env *e, const env_world *w) { return (unsigned char *)w->task + shared(e)->act_offset; }
static rough_state *rough_of(const struct env *e, const env_world *w)
{
    return (rough_state *)(void *)((unsigned char *)w->task + shared(e)->rough_offset);
}
_Static_assert(ENV_BATCH <= ENV_ACTUATOR_BATCH, "an env_actuator_batch holds the worlds of a step_worlds call");

/* ---- configuration ---- */

/* The critic's field bounds: the observation's (clip included), then the configured ranges of the privileged
 * quantities. */
static void critic_bounds(env_spec *spec, const anymal_cfg *c)
{
    for (int i = 0; i < spec->nobs; i++) spec->critic[i].low = spec->obs[i].low, spec->critic[i].high = spec->obs[i].high;
    const privileged_quantity *pq = spec->ncritic - spec->nobs > NPRIV ? rough_priv : critic_priv;
    for (int k = 0; k < spec->ncritic - spec->nobs; k++) {
        env_field *F = &spec->critic[spec->nobs + k];
        double lo = pq[k] == P_FRICTION ? c->friction_min : pq[k] == P_ADDED_MASS ? c->added_mass_min
                    : pq[k] == P_FOOT_CONTACT ? 0 : pq[k] == P_TERRAIN_LEVEL ? c->terrain_level_min : -c->push_vel_max;
        double hi = pq[k] == P_FRICTION ? c->friction_max : pq[k] == P_ADDED_MASS ? c->added_mass_max
                    : pq[k] == P_FOOT_CONTACT ? 1 : pq[k] == P_TERRAIN_LEVEL ? c->terrain_level_max : c->push_vel_max;
        F->low = (float)lo, F->high = (float)hi;
    }
}

/* The rough task's field, from the env's seed (legged_gym's configuration), as the model's cell terrain; its
 * bytes count in the env's fixed bytes.  0, or -1 with err filled. */
static int make_terrain(struct env *e, anymal_shared *s, sim_model *m, char *err, size_t errlen)
{
    env_terrain_config tc = env_terrain_config_default();
    s->terrain = env_terrain_new(&tc, e->seed, err, errlen);
    if (!s->terrain) return -1;
    int nx, ny;
    env_terrain_heights(s->terrain, &nx, &ny);
    size_t n = (size_t)nx * (size_t)ny;
    s->cell_heights = malloc(n * sizeof *s->cell_heights);
    s->cell_smooth = malloc(n);
    if (!s->cell_heights || !s->cell_smooth) {
        snprintf(err, errlen, "%s: out of memory for the terrain", e->spec.name);
        return -1;
    }
    if (env_terrain_to_cells(s->terrain, s->cell_heights, s->cell_smooth, n, &m->terrain, err, errlen)) return -1;
    e->task_fixed_bytes += env_terrain_bytes(s->terrain) + n * (sizeof *s->cell_heights + 1);
    return 0;
}

static int configure(struct env *e, const obs_def *obs, int nobs, int rough, char *err, size_t errlen)
{
    env_spec *spec = &e->spec;
    anymal_shared *s = shared(e);
    memset(s, 0, sizeof *s);
    if (env_cfg_read(e, cfg_fields, (int)(sizeof cfg_fields / sizeof cfg_fields[0]), &s->cfg, err, errlen)) return -1;
    const anymal_cfg *c = &s->cfg;
    if (c->friction_min > c->friction_max || c->added_mass_min > c->added_mass_max) {
        snprintf(err, errlen, "%s: friction_min/added_mass_min must not exceed friction_max/added_mass_max", spec->name);
        return -1;
    }
    int off = 0;
    for (int i = 0; i < spec->nobs; i++) off = spec->obs[i].offset == off ? off + spec->obs[i].size : -1;
    if (nobs != spec->nobs || off != spec->obs_dim) {
        snprintf(err, errlen, "%s: observation table does not tile the observation", spec->name);
        return -1;
    }
    if (c->terrain_level_min > c->terrain_level_max) {
        snprintf(err, errlen, "%s: terrain_level_min must not exceed terrain_level_max", spec->name);
        return -1;
    }
    s->obs = obs;
    if (c->obs_scales > 0) {
        /* Isaac Lab's observation: the same quantities and physical noise, no scale (heights not x5) */
        for (int i = 0; i < nobs; i++) {
            s->obs_unscaled[i] = (obs_def){obs[i].q, 1.0, obs[i].noise, 1.0};
            spec->obs[i].scale = spec->critic[i].scale = 1.0f;
        }
        s->obs = s->obs_unscaled;
    }
    s->priv = rough ? rough_priv : critic_priv;
    s->npriv = rough ? ROUGH_NPRIV : NPRIV;
    sim_model *m = env_anymal_load(err, errlen);
    if (!m) return -1;
    if (env_anymal_joints_init(&s->j, m, err, errlen) || env_anymal_count_feet(m, err, errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    for (int g = 0; g < m->ngeom; g++) {
        int leg;
        s->geom_kind[g] = (unsigned char)env_anymal_geom_kind(m, g, &leg);
        s->geom_foot[g] = (signed char)leg;
        if (s->geom_kind[g] == ENV_GEOM_FOOT) s->foot_friction = m->geom[g].friction;
        /* a full contact list (max_contacts) drops the feet's contacts first, then the legs' (the collision
           penalty), the base's (the termination) last (sim_geom.contact_priority) */
        m->geom[g].contact_priority = s->geom_kind[g] == ENV_GEOM_BASE ? 2 : s->geom_kind[g] == ENV_GEOM_LEG;
    }
    if (!(s->foot_friction > 0)) s->foot_friction = 1.0;
    s->decimation = (int)c->decimation;
    s->control_dt = c->sim_dt * s->decimation;
    s->act = (env_actuator){.model = (int)c->actuator, .precision = (int)c->net_precision, .kp = c->kp, .kd = c->kd, .torque_limit = c->torque_limit,
                            .dc_saturation = c->dc_saturation, .dc_effort_limit = c->dc_effort_limit,
                            .dc_velocity_limit = c->dc_velocity_limit, .delay_min = (int)c->delay_min,
                            .delay_max = (int)c->delay_max, .decimation = s->decimation,
                            .kp_scale = {c->kp_scale_min, c->kp_scale_max}, .kd_scale = {c->kd_scale_min, c->kd_scale_max},
                            .strength = {c->motor_strength_min, c->motor_strength_max}};
    if (env_actuator_setup(&s->act, spec->name, err, errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    s->act_offset = (sizeof(anymal_state) + 63) / 64 * 64;
    e->task_state_size = s->act_offset + env_actuator_world_bytes(&s->act);
    e->task_fixed_bytes = env_actuator_fixed_bytes(&s->act);
    if (rough) {
        s->rough_offset = (e->task_state_size + 63) / 64 * 64;
        e->task_state_size = s->rough_offset + sizeof(rough_state);
        if (make_terrain(e, s, m, err, errlen)) {
            sim_model_destroy(&m);
            return -1;
        }
    }
    int solver = env_cfg_solver(e, c->solver, err, errlen);
    if (solver < 0) {
        sim_model_destroy(&m);
        return -1;
    }
    m->opt.solver = solver;
    m->opt.erp = c->erp;
    m->opt.sp.max_iter = (int)c->solver_max_iter;
    m->opt.sp.tol = c->solver_tol;
    m->opt.max_contacts = (int)c->max_contacts;

    if (env_anymal_joint_options(m, &s->j, c->joint_limits, c->joint_damping, c->joint_friction, c->joint_armature,
                                 err, errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    spec->sim_dt = c->sim_dt;
    spec->decimation = s->decimation;
    spec->control_dt = s->control_dt;
    spec->episode_seconds = c->episode_seconds;
    spec->max_episode_steps = (int)ceil(spec->episode_seconds / s->control_dt - 1e-9);
    for (int i = 0; i < spec->nact; i++) {
        spec->act[i].low = (float)-c->action_clip;
        spec->act[i].high = (float)c->action_clip;
    }
    for (int i = 0; i < spec->nobs; i++) {
        if (spec->obs[i].low < -c->obs_clip) spec->obs[i].low = (float)-c->obs_clip;
        if (spec->obs[i].high > c->obs_clip) spec->obs[i].high = (float)c->obs_clip;
    }
    critic_bounds(spec, c);
    e->model = m;
    return 0;
}

static void anymal_destroy(struct env *e)
{
    anymal_shared *s = shared(e);
    env_actuator_free(&s->act);
    env_terrain_destroy(&s->terrain);
    free(s->cell_heights);
    free(s->cell_smooth);
    s->cell_heights = NULL, s->cell_smooth = NULL;
}

static int walk_configure(struct env *e, char *err, size_t errlen)
{
    return configure(e, walk_obs, (int)(sizeof walk_obs / sizeof walk_obs[0]), 0, err, errlen);
}
static int rough_configure(struct env *e, char *err, size_t errlen)
{
    return configure(e, rough_obs, (int)(sizeof rough_obs / sizeof rough_obs[0]), 1, err, errlen);
}
static int stand_configure(struct env *e, char *err, size_t errlen)
{
    return configure(e, stand_obs, (int)(sizeof stand_obs / sizeof stand_obs[0]), 0, err, errlen);
}

/* ---- shared helpers ---- */

static void base_frame(const sim_data *d, double v_b[3], double w_b[3], double g_b[3])
{
    double R[9];
    quat_to_mat(R, d->q + 3);
    m3_tmulv(v_b, R, d->u);
    v3_copy(w_b, d->u + 3);
    g_b[0] = -R[6]; g_b[1] = -R[7]; g_b[2] = -R[8];
}

/* The decimation physics substeps of an env step, for n worlds at once: each substep computes every live world's
 * actuator torques (env_actuator.h; the network once for the joints of all n worlds), their smooth stages together
 * (sim_batch_smooth: one world per lane) and the rest of each world's step in turn; a world whose physics fails or
 * runs away (env_anymal_runaway, checked before the first substep and after each) leaves the remaining substeps
 * with failed[i] = 1.  A world's contact forces of the last substep are read right after its step, while its
 * contacts are in the scratch the worlds share.  Then the mean squared torque. */
static void physics_steps(const struct env *e, env_world *const *ws, int n, sim_batch *batch, int *failed)
{
    const anymal_shared *s = shared(e);
    const sim_model *m = e->model;
    const int last = (int)s->decimation - 1;
    void *aw[ENV_BATCH] = {0};
    const double *targets[ENV_BATCH] = {0};
    sim_data *dall[ENV_BATCH] = {0};
    double tau_sq[ENV_BATCH] = {0};
    int alive[ENV_BATCH] = {0};
    env_actuator_batch net;
    for (int i = 0; i < n; i++) {
        anymal_state *st = ws[i]->task;
        st->base_contact = st->leg_contacts = 0;
        for (int f = 0; f < NFEET; f++) st->foot_force[f] = 0;
        failed[i] = 0;
        aw[i] = act_state(e, ws[i]), targets[i] = st->targets, dall[i] = ws[i]->d, tau_sq[i] = 0;
    }
    env_actuator_take(&s->act, aw, n, &net);
    for (int k = 0; k <= last; k++) {
        sim_data *d[ENV_BATCH];
        int row[ENV_BATCH], live = 0;
        for (int i = 0; i < n; i++) {
            if (k == 0 && env_anymal_runaway(m, ws[i]->d)) failed[i] = 1; /* a state that ran away before the step */
            alive[i] = !failed[i];
            if (failed[i]) continue;
            d[live] = ws[i]->d, row[live++] = i;
        }
        if (!live) break;
        env_actuator_torques(&s->act, &s->j, n, aw, targets, dall, alive, k, &net, tau_sq);
        /* a world alone steps on its own (a batch would compute three idle lanes; the numbers are the same) */
        if (live > 1) sim_batch_smooth(m, batch, d, live, s->cfg.sim_dt);
        for (int l = 0; l < live; l++) {
            env_world *w = ws[row[l]];
            const int rc = env_world_physics(m, w, s->cfg.sim_dt, live > 1 ? batch : NULL, l, SIM_STAGE_NONE);
            if (rc || env_anymal_runaway(m, w->d)) {
                failed[row[l]] = 1;
                continue;
            }
            if (k < last) continue;
            /* contact forces of the last substep (N) */
            anymal_state *st = w->task;
            for (int c = 0; c < w->d->ncon; c++) {
                double fn = w->d->lambda[3 * c + 2] / s->cfg.sim_dt;
                double ft = hypot(w->d->lambda[3 * c], w->d->lambda[3 * c + 1]) / s->cfg.sim_dt;
                int g = w->d->con[c].geom;
                if (s->geom_kind[g] == ENV_GEOM_FOOT) st->foot_force[s->geom_foot[g]] += fn;
                else if (s->geom_kind[g] == ENV_GEOM_BASE && hypot(fn, ft) > BASE_CONTACT_N) st->base_contact = 1;
                else if (s->geom_kind[g] == ENV_GEOM_LEG && hypot(fn, ft) > LEG_CONTACT_N) st->leg_contacts++;
            }
        }
    }
    env_actuator_put(&s->act, aw, n, &net);
    for (int i = 0; i < n; i++) {
        if (failed[i]) continue;
        anymal_state *st = ws[i]->task;
        st->tau_sq = tau_sq[i] / s->decimation;
    }
}

/* The base's yaw (rad) from its quaternion (w, x, y, z). */
static double base_yaw(const sim_data *d)
{
    const double *q = d->q + 3;
    return atan2(2 * (q[0] * q[3] + q[1] * q[2]), 1 - 2 * (q[2] * q[2] + q[3] * q[3]));
}

static float clipf(double x, double c) { return (float)(x > c ? c : x < -c ? -c : x); }

/* The observation, field by field from the task's table: scale times the quantity, clipped. */
static void observe(const struct env *e, env_world *w, float *o)
{
    const anymal_shared *s = shared(e);
    const anymal_state *st = w->task;
    const sim_data *d = w->d;
    double v[3], om[3], g[3], qe[NJ], qd[NJ], act[NJ], h = d->q[2] - s->cfg.target_height;
    base_frame(d, v, om, g);
    for (int i = 0; i < NJ; i++) {
        qe[i] = d->q[s->j.qadr[i]] - s->j.q_default[i];
        qd[i] = d->u[s->j.dof[i]];
        act[i] = st->actions[i];
    }
    const double *src[] = {[Q_LIN_VEL] = v, [Q_ANG_VEL] = om, [Q_GRAVITY] = g, [Q_CMD_LIN] = st->cmd,
                           [Q_CMD_YAW] = st->cmd + 2, [Q_HEIGHT_ERR] = &h, [Q_DOF_POS] = qe, [Q_DOF_VEL] = qd,
                           [Q_ACTIONS] = act};
    for (int f = 0; f < e->spec.nobs; f++) {
        const env_field *F = &e->spec.obs[f];
        if (s->obs[f].q == Q_HEIGHTS) {
            double hs[ENV_HEIGHTSCAN_POINTS];
            env_heightscan(s->terrain, d->q, base_yaw(d), hs);
            env_heightscan_obs(hs, d->q[2], s->obs[f].scale, o + F->offset);
            continue;
        }
        const double *x = src[s->obs[f].q], sc = s->obs[f].scale;
        for (int i = 0; i < F->size; i++) o[F->offset + i] = clipf(sc * x[i], s->cfg.obs_clip);
    }
}

/* legged_gym's observation noise: uniform in +-(obs_noise * noise * noise_mult), drawn field by field, element by
 * element (env_rng_signed's draws 2 u - 1, NOISE_CHUNK at a time). */
#define NOISE_CHUNK 192
static void add_noise(const struct env *e, env_world *w, float *o)
{
    const anymal_shared *s = shared(e);
    double lvl = s->cfg.obs_noise, u[NOISE_CHUNK];
    if (lvl <= 0) return;
    for (int f = 0; f < e->spec.nobs; f++) {
        const env_field *F = &e->spec.obs[f];
        if (s->obs[f].noise == 0) continue;
        const double amp = lvl * s->obs[f].noise * s->obs[f].noise_mult;
        for (int i0 = 0; i0 < F->size; i0 += NOISE_CHUNK) {
            const int n = F->size - i0 < NOISE_CHUNK ? F->size - i0 : NOISE_CHUNK;
            float *x = o + F->offset + i0;
            env_rng_signed(&w->rng, u, n);
            for (int i = 0; i < n; i++) x[i] += (float)(amp * u[i]);
        }
    }
}

static void randomize_world(const struct env *e, env_world *w)
{
    const anymal_shared *s = shared(e);
    double mu = env_rng_range(&w->rng, s->cfg.friction_min, s->cfg.friction_max);
    w->d->friction_scale = mu / s->foot_friction;
    w->d->root_added_mass = env_rng_range(&w->rng, s->cfg.added_mass_min, s->cfg.added_mass_max);
}

/* A task's initial state, drawn after the randomization. */
typedef void (*start_fn)(const struct env *e, env_world *w, anymal_state *st, sim_data *d);

/* Both tasks' resets: the model's reset state, randomized, task state zeroed; the task's initial
 * state; the actuators' (their draws after the others); joint velocities remembered; the first (noisy)
 * observation. */
static void anymal_reset(const struct env *e, env_world *w, float *obs, start_fn start)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    sim_data_reset(e->model, w->d);
    sim_step_forget_contacts(w->d);
    memset(st, 0, sizeof *st);
    randomize_world(e, w);
    start(e, w, st, w->d);
    env_actuator_reset(&s->act, act_state(e, w), st->targets, &w->rng);
    st->next_push = s->cfg.push_interval_s > 0 ? s->cfg.push_interval_s : INFINITY;
    for (int i = 0; i < NJ; i++) st->last_dof_vel[i] = w->d->u[s->j.dof[i]];
    observe(e, w, obs);
    add_noise(e, w, obs);
}

static void apply_actions(const struct env *e, env_world *w, const float *act)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    memcpy(st->last_actions, st->actions, sizeof st->actions);
    for (int i = 0; i < NJ; i++) {
        st->actions[i] = clipf(act[i], s->cfg.action_clip);
        st->targets[i] = s->cfg.action_scale * st->actions[i] + s->j.q_default[i];
    }
    env_actuator_command(&s->act, act_state(e, w), st->targets);
}

static void maybe_push(const struct env *e, env_world *w, anymal_state *st)
{
    const anymal_cfg *c = &shared(e)->cfg;
    if (st->t < st->next_push) return;
    w->d->u[0] = env_rng_range(&w->rng, -c->push_vel_max, c->push_vel_max);
    w->d->u[1] = env_rng_range(&w->rng, -c->push_vel_max, c->push_vel_max);
    st->push_vel[0] = w->d->u[0], st->push_vel[1] = w->d->u[1];
    st->next_push += c->push_interval_s;
}

/* Scaled terms (times the control dt) into terms; returns their sum. */
static double scale_terms(const double *scales, const double *r, int n, double dt, float *terms)
{
    double total = 0;
    for (int k = 0; k < n; k++) {
        terms[k] = (float)(scales[k] * dt * r[k]);
        total += terms[k];
    }
    return total;
}

static double action_rate(const anymal_state *st)
{
    double rate = 0;
    for (int i = 0; i < NJ; i++)
        rate += (double)(st->actions[i] - st->last_actions[i]) * (st->actions[i] - st->last_actions[i]);
    return rate;
}

/* A task's reward: writes the terms (scaled), may set *terminated, returns the reward. */
typedef double (*reward_fn)(const struct env *e, env_world *w, const double v[3], const double om[3], const double g[3],
                            float *terms, uint8_t *terminated);

/* One env step of n worlds of either task: actions and pushes, the actuated physics substeps (batched), then
 * per world the task's reward and the observation, or, where the physics failed, a reset (reward 0, terms 0, no
 * flags, failed[i] = 1). */
static void anymal_step(const struct env *e, env_world *const *ws, int n, const float *const *act, float *const *obs,
                        float *reward, float *terms, uint8_t *terminated, uint8_t *truncated, int *failed,
                        sim_batch *batch, reward_fn rewards)
{
    for (int i = 0; i < n; i++) {
        apply_actions(e, ws[i], act[i]);
        maybe_push(e, ws[i], ws[i]->task);
    }
    physics_steps(e, ws, n, batch, failed);
    for (int i = 0; i < n; i++) {
        env_world *w = ws[i];
        anymal_state *st = w->task;
        float *ti = terms + (size_t)i * e->spec.nterms;
        st->t += shared(e)->control_dt;
        terminated[i] = truncated[i] = 0;
        if (failed[i]) {
            e->task->reset_world(e, w, obs[i]);
            memset(ti, 0, sizeof(float) * (size_t)e->spec.nterms);
            reward[i] = 0;
            continue;
        }
        double v[3], om[3], g[3];
        base_frame(w->d, v, om, g);
        reward[i] = (float)rewards(e, w, v, om, g, ti, &terminated[i]);
        observe(e, w, obs[i]);
        add_noise(e, w, obs[i]);
    }
}

/* ---- anymal_c-walk ---- */

enum { W_LINVEL, W_ANGVEL, W_LINVEL_Z, W_ANGVEL_XY, W_ORIENT, W_TORQUES, W_DOFACC, W_ACTRATE, W_COLLISION, W_AIRTIME, W_NTERMS };
static const double walk_scales[W_NTERMS] = {1.0, 0.5, -2.0, -0.05, -5.0, -2.5e-5, -2.5e-7, -0.01, -1.0, 2.0};

static void walk_commands(const struct env *e, env_world *w, anymal_state *st)
{
    const anymal_cfg *c = &shared(e)->cfg;
    st->cmd[0] = env_rng_range(&w->rng, -c->cmd_vx_max, c->cmd_vx_max);
    st->cmd[1] = env_rng_range(&w->rng, -c->cmd_vy_max, c->cmd_vy_max);
    st->cmd[2] = env_rng_range(&w->rng, -c->cmd_yaw_max, c->cmd_yaw_max);
    if (hypot(st->cmd[0], st->cmd[1]) <= CMD_DEADBAND_MPS) st->cmd[0] = st->cmd[1] = 0;
}

/* Walk's initial state: the default pose scaled by 1 + U(-0.5, 0.5) init_noise per joint, WALK_START_HEIGHT_M up,
 * base velocities U(-0.5, 0.5) init_noise; a first command. */
static void walk_start(const struct env *e, env_world *w, anymal_state *st, sim_data *d)
{
    const anymal_shared *s = shared(e);
    double ni = s->cfg.init_noise;
    for (int i = 0; i < NJ; i++) {
        d->q[s->j.qadr[i]] = s->j.q_default[i] * (1 + ni * env_rng_range(&w->rng, -0.5, 0.5));
        st->targets[i] = s->j.q_default[i];
    }
    d->q[2] = WALK_START_HEIGHT_M;
    for (int k = 0; k < 6; k++) d->u[k] = ni * env_rng_range(&w->rng, -0.5, 0.5);
    walk_commands(e, w, st);
    st->next_cmd = s->cfg.cmd_resample_s;
}

static void walk_reset(const struct env *e, env_world *w, float *obs) { anymal_reset(e, w, obs, walk_start); }

/* legged_gym's terms with the task's scales (walk's or rough's), and the termination on base contact. */
static double legged_rewards(const struct env *e, env_world *w, const double v[3], const double om[3], const double g[3],
                             float *terms, uint8_t *terminated, const double *scales)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    const sim_data *d = w->d;
    const double dt = s->control_dt;
    double r[W_NTERMS];
    double ev = (st->cmd[0] - v[0]) * (st->cmd[0] - v[0]) + (st->cmd[1] - v[1]) * (st->cmd[1] - v[1]);
    r[W_LINVEL] = exp(-ev / TRACKING_SIGMA_SQ);
    r[W_ANGVEL] = exp(-(st->cmd[2] - om[2]) * (st->cmd[2] - om[2]) / TRACKING_SIGMA_SQ);
    r[W_LINVEL_Z] = v[2] * v[2];
    r[W_ANGVEL_XY] = om[0] * om[0] + om[1] * om[1];
    r[W_ORIENT] = g[0] * g[0] + g[1] * g[1];
    r[W_TORQUES] = st->tau_sq;
    double acc = 0;
    for (int i = 0; i < NJ; i++) {
        double qd = d->u[s->j.dof[i]];
        acc += (qd - st->last_dof_vel[i]) * (qd - st->last_dof_vel[i]) / (dt * dt);
        st->last_dof_vel[i] = qd;
    }
    r[W_DOFACC] = acc;
    r[W_ACTRATE] = action_rate(st);
    r[W_COLLISION] = st->leg_contacts;
    double air = 0;
    for (int f = 0; f < NFEET; f++) {
        int contact = st->foot_force[f] > FOOT_CONTACT_N;
        int filt = contact || st->last_contact[f];
        st->last_contact[f] = contact;
        int first = st->air[f] > 0 && filt;
        st->air[f] += dt;
        if (first) air += st->air[f] - AIR_TIME_TARGET_S;
        if (filt) st->air[f] = 0;
    }
    r[W_AIRTIME] = hypot(st->cmd[0], st->cmd[1]) > AIR_TIME_CMD_MIN_MPS ? air : 0;
    double total = scale_terms(scales, r, W_NTERMS, dt, terms);
    if (s->cfg.only_positive_rewards > 0 && total < 0) total = 0;
    *terminated = (uint8_t)st->base_contact;
    return total;
}

/* Walk's reward; resamples the command when due (after the reward, before the observation). */
static double walk_rewards(const struct env *e, env_world *w, const double v[3], const double om[3], const double g[3],
                           float *terms, uint8_t *terminated)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    double total = legged_rewards(e, w, v, om, g, terms, terminated, walk_scales);
    if (st->t >= st->next_cmd - 1e-9) {
        walk_commands(e, w, st);
        st->next_cmd += s->cfg.cmd_resample_s;
    }
    return total;
}

static void walk_step(const struct env *e, env_world *const *ws, int n, const float *const *act, float *const *obs,
                      float *reward, float *terms, uint8_t *terminated, uint8_t *truncated, int *failed, sim_batch *b)
{
    anymal_step(e, ws, n, act, obs, reward, terms, terminated, truncated, failed, b, walk_rewards);
}

/* ---- anymal_c-rough ---- */

/* legged_gym's anymal_c_rough scales: walk's terms, orientation off, torques -1e-5, feet_air_time 1. */
static const double rough_scales[W_NTERMS] = {1.0, 0.5, -2.0, -0.05, 0.0, -1e-5, -2.5e-7, -0.01, -1.0, 1.0};
/* legged_gym's heading control: omega_cmd = clip(HEADING_GAIN wrap(heading - yaw), -cmd_yaw_max, cmd_yaw_max). */
#define HEADING_GAIN 0.5
#define SPAWN_SPREAD_M 1.0          /* spawn at the tile origin + U(-1, 1) m in x and y */

static void heading_command(const struct env *e, const env_world *w, anymal_state *st)
{
    double err = rough_of(e, w)->heading - base_yaw(w->d);
    err = atan2(sin(err), cos(err));
    double lim = shared(e)->cfg.cmd_yaw_max;
    st->cmd[2] = fmin(fmax(HEADING_GAIN * err, -lim), lim);
}

/* A command: v_x, v_y as walk's (zeroed below the deadband), a heading U(-pi, pi), omega from the heading. */
static void rough_commands(const struct env *e, env_world *w, anymal_state *st)
{
    const anymal_cfg *c = &shared(e)->cfg;
    st->cmd[0] = env_rng_range(&w->rng, -c->cmd_vx_max, c->cmd_vx_max);
    st->cmd[1] = env_rng_range(&w->rng, -c->cmd_vy_max, c->cmd_vy_max);
    rough_of(e, w)->heading = env_rng_range(&w->rng, -M_PI, M_PI);
    if (hypot(st->cmd[0], st->cmd[1]) <= CMD_DEADBAND_MPS) st->cmd[0] = st->cmd[1] = 0;
    heading_command(e, w, st);
}

/* The world's tile at a reset: the first places it in its column (env_curriculum_column) at a first level
 * (env_curriculum_first_level); a later one moves the level by env_curriculum_next_level from where the episode
 * ended (before the state is reset) and the command it had, when the curriculum is on.  The level stays in
 * [terrain_level_min, terrain_level_max]; one uniform draw either way. */
static void rough_place(const struct env *e, env_world *w)
{
    const anymal_shared *s = shared(e);
    const anymal_cfg *c = &s->cfg;
    const env_terrain_config *tc = env_terrain_config_of(s->terrain);
    rough_state *rs = rough_of(e, w);
    const anymal_state *st = w->task;
    double u = env_rng_uniform(&w->rng);
    int lo = (int)c->terrain_level_min, hi = (int)c->terrain_level_max;
    if (!rs->placed) {
        const int blocks = c->terrain_column_period > 0 ? (int)c->terrain_column_period : e->nworlds;
        rs->col = env_curriculum_column((int)(w - e->worlds) % blocks, blocks, tc->cols);
        rs->level = c->curriculum > 0 ? env_curriculum_first_level(u, ENV_CURRICULUM_MAX_INIT_LEVEL, tc->rows)
                                      : lo + (int)(u * (hi - lo + 1));
        rs->placed = 1;
    } else if (c->curriculum > 0) {
        double dist = hypot(w->d->q[0] - rs->origin[0], w->d->q[1] - rs->origin[1]);
        double commanded = hypot(st->cmd[0], st->cmd[1]) * c->episode_seconds;
        rs->level = env_curriculum_next_level(rs->level, tc->rows, tc->tile_size, dist, commanded, u, NULL);
    }
    rs->level = rs->level < lo ? lo : rs->level > hi ? hi : rs->level;
    env_terrain_origin(s->terrain, rs->level, rs->col, rs->origin);
}

/* Rough's initial state: walk's joints and base velocities, the base at the tile origin + U(-1, 1) m in x and y,
 * WALK_START_HEIGHT_M above the origin, yaw 0; a first command. */
static void rough_start(const struct env *e, env_world *w, anymal_state *st, sim_data *d)
{
    const anymal_shared *s = shared(e);
    const rough_state *rs = rough_of(e, w);
    double ni = s->cfg.init_noise;
    for (int i = 0; i < NJ; i++) {
        d->q[s->j.qadr[i]] = s->j.q_default[i] * (1 + ni * env_rng_range(&w->rng, -0.5, 0.5));
        st->targets[i] = s->j.q_default[i];
    }
    d->q[0] = rs->origin[0] + env_rng_range(&w->rng, -SPAWN_SPREAD_M, SPAWN_SPREAD_M);
    d->q[1] = rs->origin[1] + env_rng_range(&w->rng, -SPAWN_SPREAD_M, SPAWN_SPREAD_M);
    d->q[2] = rs->origin[2] + WALK_START_HEIGHT_M;
    for (int k = 0; k < 6; k++) d->u[k] = ni * env_rng_range(&w->rng, -0.5, 0.5);
    rough_commands(e, w, st);
    st->next_cmd = s->cfg.cmd_resample_s;
}

static void rough_reset(const struct env *e, env_world *w, float *obs)
{
    rough_place(e, w);
    anymal_reset(e, w, obs, rough_start);
}

/* Rough's reward: the heading command for this step's yaw first (legged_gym computes it before its rewards),
 * then the terms; the command is resampled when due (after the reward, before the observation). */
static double rough_rewards(const struct env *e, env_world *w, const double v[3], const double om[3], const double g[3],
                            float *terms, uint8_t *terminated)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    heading_command(e, w, st);
    double total = legged_rewards(e, w, v, om, g, terms, terminated, rough_scales);
    if (st->t >= st->next_cmd - 1e-9) {
        rough_commands(e, w, st);
        st->next_cmd += s->cfg.cmd_resample_s;
    }
    return total;
}

static void rough_step(const struct env *e, env_world *const *ws, int n, const float *const *act, float *const *obs,
                       float *reward, float *terms, uint8_t *terminated, uint8_t *truncated, int *failed, sim_batch *b)
{
    anymal_step(e, ws, n, act, obs, reward, terms, terminated, truncated, failed, b, rough_rewards);
}

int env_terrain_tiles(const env_t *e, int first, int n, const int32_t *ids, int32_t *level, int32_t *kind)
{
    const anymal_shared *s = shared(e);
    if (e->task != &env_task_anymal_rough || !s->terrain) return -1;
    for (int i = 0; i < n; i++) {
        const env_world *w = &e->worlds[ids ? ids[i] : first + i];
        const rough_state *rs = rough_of(e, w);
        env_terrain_tile tile;
        const int ok = w->task && rs->placed && !env_terrain_tile_at(s->terrain, rs->level, rs->col, &tile);
        if (level) level[i] = ok ? rs->level : -1;
        if (kind) kind[i] = ok ? tile.kind : -1;
    }
    return 0;
}

_Static_assert(ENV_TERRAIN_KINDS == ENV_TILE_COUNT, "env.h names every tile kind");
int env_terrain_levels(const env_t *e, double *mean, double by_kind[ENV_TERRAIN_KINDS], int count_by_kind[ENV_TERRAIN_KINDS])
{
    const anymal_shared *s = shared(e);
    if (e->task != &env_task_anymal_rough || !s->terrain) return -1;
    double sum = 0, ksum[ENV_TILE_COUNT] = {0};
    int n = 0, kn[ENV_TILE_COUNT] = {0};
    for (int i = 0; i < e->nworlds; i++) {
        const env_world *w = &e->worlds[i];
        if (!w->task) continue;
        const rough_state *rs = rough_of(e, w);
        env_terrain_tile tile;
        if (!rs->placed || env_terrain_tile_at(s->terrain, rs->level, rs->col, &tile)) continue;
        sum += rs->level, n++;
        ksum[tile.kind] += rs->level, kn[tile.kind]++;
    }
    if (mean) *mean = n ? sum / n : NAN;
    for (int k = 0; k < ENV_TILE_COUNT; k++) {
        if (by_kind) by_kind[k] = kn[k] ? ksum[k] / kn[k] : NAN;
        if (count_by_kind) count_by_kind[k] = kn[k];
    }
    return n;
}

/* ---- anymal_c-stand ---- */

/* Stand's reward terms (each times the control dt and its scale).  With c = -projected gravity z (the
 * cosine of the base's tilt), u = max(c, 0) and tilt = acos(c) in [0, pi]:
 *   height    exp(-(dz / sigma)^2) u        dz = base height - target_height, sigma STAND_HEIGHT_SIGMA_M:
 *                                             counts only when upright
 *   upright   1 - tilt / pi                   linear in the tilt angle, so rolling toward upright pays the
 *                                             same everywhere, on the back (tilt pi) as near upright: the
 *                                             signal that teaches fall recovery
 *   standing  1 when |dz| <= STAND_OK_DZ_M and c >= STAND_OK_COS
 *   lin_vel, ang_vel, pose (sum of (q - q_default)^2), torques (mean sum of tau^2), action_rate:
 *             the usual penalties, times u^4, so that a robot that is down (u^4 < 0.07 past 60 degrees of
 *             tilt) is free to swing its legs to roll over, and one that is up is asked to stand still. */
enum { S_HEIGHT, S_UPRIGHT, S_STANDING, S_LINVEL, S_ANGVEL, S_POSE, S_TORQUES, S_ACTRATE, S_NTERMS };
static const double stand_scales[S_NTERMS] = {2.0, 3.0, 2.0, -0.1, -0.05, -0.05, -1e-5, -0.005};

/* Lowers (or raises) the base so that the lowest foot sphere touches the ground. */
static void place_on_ground(const struct env *e, sim_data *d, const anymal_shared *s)
{
    const sim_model *m = e->model;
    d->q[2] = 0;
    sim_kinematics(m, d);
    double low = INFINITY;
    for (int g = 0; g < m->ngeom; g++) {
        if (s->geom_kind[g] == ENV_GEOM_OTHER) continue;
        const sim_geom *G = &m->geom[g];
        double p[3];
        sim_point_world(m, d, G->body, G->pos, p);
        double r = G->type == SIM_GEOM_SPHERE ? G->size[0] : 0;
        if (G->type == SIM_GEOM_SPHERE || s->geom_kind[g] == ENV_GEOM_FOOT) low = fmin(low, p[2] - r);
    }
    d->q[2] = -low + GROUND_CLEARANCE_M;
}

/* Stand's initial state: crouched by U(0, init_noise) (HFE 0.7, KFE 1.4 rad at most) on the ground,
 * or, with fallen_prob, rolled 1.2-3 rad onto a side or the back at 0.45 m; targets = that pose. */
static void stand_start(const struct env *e, env_world *w, anymal_state *st, sim_data *d)
{
    const anymal_shared *s = shared(e);
    double ni = s->cfg.init_noise;
    int fallen = env_rng_uniform(&w->rng) < s->cfg.fallen_prob;
    for (int l = 0; l < NFEET; l++) {
        int front = l < 2;
        double crouch = ni * env_rng_uniform(&w->rng);
        d->q[s->j.qadr[3 * l + 0]] = ni * env_rng_range(&w->rng, -0.2, 0.2);
        d->q[s->j.qadr[3 * l + 1]] = s->j.q_default[3 * l + 1] + (front ? 1 : -1) * 0.7 * crouch;
        d->q[s->j.qadr[3 * l + 2]] = s->j.q_default[3 * l + 2] + (front ? -1 : 1) * 1.4 * crouch;
    }
    for (int i = 0; i < NJ; i++) st->targets[i] = d->q[s->j.qadr[i]];
    if (fallen) {
        double roll = (env_rng_uniform(&w->rng) < 0.5 ? -1 : 1) * env_rng_range(&w->rng, 1.2, 3.0);
        d->q[3] = cos(roll / 2);
        d->q[4] = sin(roll / 2);
        d->q[2] = STAND_FALLEN_HEIGHT_M;
    } else {
        place_on_ground(e, d, s);
    }
}

static void stand_reset(const struct env *e, env_world *w, float *obs) { anymal_reset(e, w, obs, stand_start); }

static double stand_rewards(const struct env *e, env_world *w, const double v[3], const double om[3], const double g[3],
                            float *terms, uint8_t *terminated)
{
    const anymal_shared *s = shared(e);
    const anymal_state *st = w->task;
    const sim_data *d = w->d;
    double c = fmin(fmax(-g[2], -1.0), 1.0);
    double up = c > 0 ? c : 0, gate = up * up * up * up;
    double dz = d->q[2] - s->cfg.target_height;
    double r[S_NTERMS], pose = 0;
    r[S_HEIGHT] = exp(-(dz / STAND_HEIGHT_SIGMA_M) * (dz / STAND_HEIGHT_SIGMA_M)) * up;
    r[S_UPRIGHT] = 1.0 - acos(c) / M_PI;
    r[S_STANDING] = fabs(dz) <= STAND_OK_DZ_M && c >= STAND_OK_COS;
    r[S_LINVEL] = v3_dot(v, v) * gate;
    r[S_ANGVEL] = v3_dot(om, om) * gate;
    for (int i = 0; i < NJ; i++) {
        double e_q = d->q[s->j.qadr[i]] - s->j.q_default[i];
        pose += e_q * e_q;
    }
    r[S_POSE] = pose * gate;
    r[S_TORQUES] = st->tau_sq * gate;
    r[S_ACTRATE] = action_rate(st) * gate;
    return scale_terms(stand_scales, r, S_NTERMS, s->control_dt, terms);
}

static void stand_step(const struct env *e, env_world *const *ws, int n, const float *const *act, float *const *obs,
                       float *reward, float *terms, uint8_t *terminated, uint8_t *truncated, int *failed, sim_batch *b)
{
    anymal_step(e, ws, n, act, obs, reward, terms, terminated, truncated, failed, b, stand_rewards);
}

/* ---- the critic's observation ---- */

/* The tasks' critic observation (CRITIC_PRIVILEGED, ROUGH_PRIVILEGED): the observation without noise, then the privileged fields. */
static void critic_observe(const struct env *e, env_world *w, float *o)
{
    const anymal_shared *s = shared(e);
    const anymal_state *st = w->task;
    observe(e, w, o);
    double mu = w->d->friction_scale * s->foot_friction, mass = w->d->root_added_mass, contact[NFEET];
    double level = s->terrain ? rough_of(e, w)->level : 0;
    for (int f = 0; f < NFEET; f++) contact[f] = st->foot_force[f] > FOOT_CONTACT_N;
    const double *src[] = {[P_FRICTION] = &mu, [P_ADDED_MASS] = &mass, [P_FOOT_CONTACT] = contact,
                           [P_PUSH_VEL] = st->push_vel, [P_TERRAIN_LEVEL] = &level};
    for (int k = 0; k < s->npriv; k++) {
        const env_field *F = &e->spec.critic[e->spec.nobs + k];
        for (int i = 0; i < F->size; i++) o[F->offset + i] = (float)src[s->priv[k]][i];
    }
}

/* ---- specs ---- */

/* Every count, size and step number of a spec below comes from its tables; nothing is counted by hand. */
#define COUNT ENV_COUNT
#define STR ENV_STR
#define OBS_SIZE(nm, q, off, sz, sc, noise, un) + (sz)
#define OBS_DIM(TABLE) (0 TABLE(OBS_SIZE))
#define EPISODE_STEPS(seconds) ENV_EPISODE_STEPS(seconds, ANYMAL_SIM_DT * ANYMAL_DECIMATION)

#define KEY ENV_NUM_KEY
#define COMMON_KEYS(contacts)                                                                                   \
    KEY("sim_dt", ANYMAL_SIM_DT, 0.0005, 0.01, 0, "physics step (s)"),                                       \
    KEY("decimation", ANYMAL_DECIMATION, 1, 50, 1, "physics steps per env step"),                            \
    KEY("kp", ENV_ANYMAL_KP, 0, 1000, 0, "PD stiffness (N m / rad)"),                                         \
    KEY("kd", ENV_ANYMAL_KD, 0, 100, 0, "PD damping (N m s / rad)"),                                          \
    KEY("torque_limit", ENV_ANYMAL_TAU_MAX, 1, 500, 0, "torque clip (N m)"),                                  \
    KEY("action_scale", ANYMAL_ACTION_SCALE, 0.01, 5, 0, "joint target = action_scale * action + default pose (rad)"), \
    KEY("action_clip", ANYMAL_ACTION_CLIP, 0.1, 1000, 0, "actions are clipped to +-action_clip"),            \
    KEY("obs_clip", ANYMAL_OBS_CLIP, 1, 1000, 0, "observations are clipped to +-obs_clip"),                  \
    KEY("obs_noise", 1, 0, 10, 0, "observation noise level (legged_gym noise scales times this)"),           \
    KEY("init_noise", 1, 0, 2, 0, "initial-state noise level"),                                               \
    KEY("push_vel_max", 1, 0, 5, 0, "push: base xy velocity set to U(-v, v) (m/s)"),                         \
    ENV_SOLVER_KEY(SIM_SOLVER_COULOMB_STALL_ADMM),                                                               \
    KEY("erp", 0, 0, 1, 0, "contact position correction per physics step (0 = off)"),                     \
    KEY("solver_max_iter", 50, 1, 10000, 1, "contact solver sweeps per physics step at most"),                \
    KEY("solver_tol", 1e-6, ENV_SOLVER_TOL_MIN, 1e-2, 0,                                                     \
        "contact solver termination: exact violation (N s | m/s); >= " STR(ENV_SOLVER_TOL_MIN) ", above the solvers' rounding floor"), \
    KEY("max_contacts", contacts, 4, 128, 1, "contacts per world at most (the deepest are kept)")
/* The domain randomization and timing keys, with each task's defaults. */
#define RANDOMIZATION_KEYS(fmin, fmax, mmin, mmax, push, episode)                                                 \
    KEY("friction_min", fmin, 0, 5, 0, "friction drawn per world and reset: lower bound"),                      \
    KEY("friction_max", fmax, 0, 5, 0, "friction drawn per world and reset: upper bound"),                      \
    KEY("added_mass_min", mmin, -30, 0, 0, "added base mass drawn per world and reset: lower bound (kg)"),      \
    KEY("added_mass_max", mmax, 0, 30, 0, "added base mass drawn per world and reset: upper bound (kg)"),       \
    KEY("push_interval_s", push, 0, 3600, 0, "seconds between pushes (0 = never)"),                            \
    KEY("episode_seconds", episode, 0.02, 3600, 0, "time limit (truncation)")
/* The joint actuators (env_actuator.h), with each task's model by default. */
#define ACTUATOR_KEYS(model)                                                                                     \
    {"actuator", model, 0, ENV_ACTUATOR_NMODELS - 1, 1,                                                          \
     "joint actuator: pd (kp, kd, torque_limit), lstm (ANYdrive network), dc (network + DC-motor clip)",      \
     ENV_ACTUATOR_NMODELS, ENV_ACTUATOR_CHOICES},                                                                \
    {"net_precision", ENV_ACTUATOR_NET_FLOAT32, 0, ENV_ACTUATOR_NET_NPRECISIONS - 1, 1,                          \
     "lstm, dc: the network's arithmetic: float32 (the TorchScript module as shipped) or float64",             \
     ENV_ACTUATOR_NET_NPRECISIONS, ENV_ACTUATOR_NET_PRECISION_CHOICES},                                          \
    KEY("dc_saturation", 120, 1, 1000, 0, "dc: stall torque of the torque-speed line (N m)"),                  \
    KEY("dc_effort_limit", 80, 1, 1000, 0, "dc: torque limit (N m)"),                                         \
    KEY("dc_velocity_limit", 7.5, 0.1, 100, 0, "dc: no-load speed of the torque-speed line (rad/s)"),         \
    KEY("delay_min", 0, 0, ENV_ACTUATOR_DELAY_MAX, 1, "target delay drawn per world and reset: fewest physics steps"), \
    KEY("delay_max", 0, 0, ENV_ACTUATOR_DELAY_MAX, 1, "target delay drawn per world and reset: most physics steps"), \
    KEY("kp_scale_min", 1, 0, 10, 0, "pd: kp scale drawn per world and reset: lower bound"),                 \
    KEY("kp_scale_max", 1, 0, 10, 0, "pd: kp scale drawn per world and reset: upper bound"),                 \
    KEY("kd_scale_min", 1, 0, 10, 0, "pd: kd scale drawn per world and reset: lower bound"),                 \
    KEY("kd_scale_max", 1, 0, 10, 0, "pd: kd scale drawn per world and reset: upper bound"),                 \
    KEY("motor_strength_min", 1, 0, 10, 0, "torque scale drawn per world and reset: lower bound"),           \
    KEY("motor_strength_max", 1, 0, 10, 0, "torque scale drawn per world and reset: upper bound")
/* Both tasks: the observation from its table, one field of NJ joint-target actions, the default timing
 * (configure applies the keys). */
#define PRIV_ONE(nm, q, off, sz, lo, hi, un) + 1
#define ANYMAL_FIELDS_TIMING(defs, TABLE, episode_s, PRIV)                                                   \
    .obs_dim = OBS_DIM(TABLE), .act_dim = NJ, .nobs = (int)(sizeof defs / sizeof defs[0]), .nact = 1,      \
    .obs = {TABLE(OBS_SPEC)},                                                                                \
    .critic_dim = OBS_DIM(TABLE) + (0 PRIV(PRIV_SIZE, 0)),                                                   \
    .ncritic = (int)(sizeof defs / sizeof defs[0]) + (0 PRIV(PRIV_ONE, 0)),                                  \
    .critic = {TABLE(OBS_SPEC) PRIV(PRIV_SPEC, OBS_DIM(TABLE))},                                             \
    .act = {{"joint_targets", 0, NJ, -ANYMAL_ACTION_CLIP, ANYMAL_ACTION_CLIP, (float)ANYMAL_ACTION_SCALE, "rad"}}, \
    .sim_dt = ANYMAL_SIM_DT, .decimation = ANYMAL_DECIMATION, .control_dt = ANYMAL_SIM_DT * ANYMAL_DECIMATION, \
    .episode_seconds = episode_s, .max_episode_steps = EPISODE_STEPS(episode_s)
#define ANYMAL_FUNCTIONS(task)                                                                               \
    .task_state_size = sizeof(anymal_state), .configure = task##_configure, .reset_world = task##_reset,     \
    .observe = observe, .step_worlds = task##_step, .critic_observe = critic_observe, .destroy = anymal_destroy

/* One ANYmal task: name and doc, observation table, episode (s), the task's own keys (a macro of KEY
 * entries) and its reward term names (a macro, in the order of the task's term enum, whose last entry nterm
 * counts them). */
/* TERRAIN: the spec's terrain kinds (NO_TERRAIN for a flat task) */
#define ANYMAL_TASK(var, task, nm, what, TABLE, PRIV, ep, contacts, KEYS, TERMS, nterm, TERRAIN)             \
    _Static_assert(COUNT(const char *, TERMS) == nterm, nm ": one name per reward term");                    \
    const env_task var = {                                                                                   \
        .spec = {.name = nm, .doc = what, ANYMAL_FIELDS_TIMING(task##_obs, TABLE, ep, PRIV),                \
                 .nconfig = COUNT(env_config_key, COMMON_KEYS(contacts), KEYS),                            \
                 .config = {COMMON_KEYS(contacts), KEYS},        \
                 .nterms = nterm, .terms = {TERMS}, TERRAIN},                                                \
        ANYMAL_FUNCTIONS(task),                                                                              \
    }

#define NO_TERRAIN .nterrain_kinds = 0
_Static_assert(COUNT(const char *, ENV_TILE_NAMES) == ENV_TILE_COUNT, "one name per tile kind");
_Static_assert(ENV_TILE_COUNT <= ENV_MAX_TERRAIN_KINDS, "the spec holds every tile kind");
#define ROUGH_TERRAIN .nterrain_kinds = ENV_TILE_COUNT, .terrain_kinds = {ENV_TILE_NAMES}

#define WALK_EPISODE_S 20
#define WALK_KEYS                                                                                            \
    RANDOMIZATION_KEYS(0.5, 1.25, -5, 5, 15, WALK_EPISODE_S),                                                \
    ENV_ANYMAL_JOINT_KEYS(1),                                                                                \
    KEY("cmd_vx_max", 1, 0, 5, 0, "forward velocity command drawn in U(-v, v) (m/s)"),                      \
    KEY("cmd_vy_max", 1, 0, 5, 0, "lateral velocity command drawn in U(-v, v) (m/s)"),                      \
    KEY("cmd_yaw_max", 1.5, 0, 5, 0, "yaw-rate command drawn in U(-w, w) (rad/s)"),                         \
    KEY("cmd_resample_s", 4, 0.02, 3600, 0, "seconds between command draws"),                               \
    KEY("only_positive_rewards", 1, 0, 1, 1, "clip the total reward at 0 (legged_gym)"),                   \
    ACTUATOR_KEYS(ENV_ACTUATOR_LSTM)
#define WALK_TERMS                                                                                           \
    "tracking_lin_vel", "tracking_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "torques", "dof_acc",   \
        "action_rate", "collision", "feet_air_time"
ANYMAL_TASK(env_task_anymal_walk, walk, "anymal_c-walk",
            "ANYmal C flat-ground velocity tracking (legged_gym's ANYmal C flat task): 48 observations, "
            "12 joint-target actions, 50 Hz policy, " STR(WALK_EPISODE_S) " s episodes, domain randomization",
            WALK_OBS, CRITIC_PRIVILEGED, WALK_EPISODE_S, 16, WALK_KEYS, WALK_TERMS, W_NTERMS, NO_TERRAIN);

#define STAND_EPISODE_S 4
#define STAND_KEYS                                                                                           \
    RANDOMIZATION_KEYS(0.5, 1.25, -2, 2, 0, STAND_EPISODE_S),                                               \
    ENV_ANYMAL_JOINT_KEYS(1),                                                                               \
    KEY("target_height", 0.5, 0.3, 0.65, 0, "base height to reach and hold (m)"),                           \
    KEY("fallen_prob", 0.25, 0, 1, 0, "probability that an episode starts fallen on its side or back"),    \
    ACTUATOR_KEYS(ENV_ACTUATOR_PD)
#define STAND_TERMS "height", "upright", "standing", "lin_vel", "ang_vel", "pose", "torques", "action_rate"
ANYMAL_TASK(env_task_anymal_stand, stand, "anymal_c-stand",
            "ANYmal C stands up from a random crouched or fallen pose and holds a target base height; "
            "46 observations, 12 joint-target actions, 50 Hz policy, " STR(STAND_EPISODE_S) " s episodes",
            STAND_OBS, CRITIC_PRIVILEGED, STAND_EPISODE_S, 16, STAND_KEYS, STAND_TERMS, S_NTERMS, NO_TERRAIN);

#define ROUGH_EPISODE_S 20
/* Contacts per world: a leg on a cell terrain touches several cells (and risers), so the 16 of the flat tasks are
 * filled by the legs' contacts alone when the robot is down, and the base's (the termination) would be dropped. */
#define ROUGH_MAX_CONTACTS 64
#define ROUGH_KEYS                                                                                           \
    RANDOMIZATION_KEYS(0.5, 1.25, -5, 5, 15, ROUGH_EPISODE_S),                                               \
    ENV_ANYMAL_JOINT_KEYS(1),                                                                                \
    KEY("cmd_vx_max", 1, 0, 5, 0, "forward velocity command drawn in U(-v, v) (m/s)"),                      \
    KEY("cmd_vy_max", 1, 0, 5, 0, "lateral velocity command drawn in U(-v, v) (m/s)"),                      \
    KEY("cmd_yaw_max", 1, 0, 5, 0, "heading control: yaw-rate command clip(0.5 (heading - yaw), +-w) (rad/s)"), \
    KEY("cmd_resample_s", 10, 0.02, 3600, 0, "seconds between command draws (v_x, v_y, heading U(-pi, pi))"), \
    KEY("only_positive_rewards", 1, 0, 1, 1, "clip the total reward at 0 (legged_gym)"),                   \
    ACTUATOR_KEYS(ENV_ACTUATOR_LSTM),                                                                        \
    KEY("curriculum", 1, 0, 1, 1, "1: levels move at each reset (legged_gym); 0: a world keeps its first level, U{terrain_level_min..max}"), \
    KEY("terrain_level_min", 0, 0, ENV_TERRAIN_ROWS - 1, 1, "lowest terrain level (row) a world may be on"), \
    KEY("terrain_level_max", ENV_TERRAIN_ROWS - 1, 0, ENV_TERRAIN_ROWS - 1, 1, "highest terrain level (row) a world may be on"), \
    {"obs_scales", 0, 0, 1, 1, "observation scales: legged_gym's (x2 lin vel, x0.25 ang vel, x5 heights, ...) or none (Isaac Lab)", \
     2, {"legged_gym", "isaaclab"}}, \
    KEY("terrain_column_period", 0, 0, 1 << 24, 1, "0: column floor(i / (n / 20)) of the n worlds (legged_gym); P: floor((i mod P) / (P / 20))")
ANYMAL_TASK(env_task_anymal_rough, rough, "anymal_c-rough",
            "ANYmal C rough-terrain velocity tracking (legged_gym's anymal_c_rough): 10 x 20 terrain tiles with a "
            "level curriculum, 235 observations (187 heights), heading commands, " STR(ROUGH_EPISODE_S) " s episodes",
            ROUGH_OBS, ROUGH_PRIVILEGED, ROUGH_EPISODE_S, ROUGH_MAX_CONTACTS, ROUGH_KEYS, WALK_TERMS, W_NTERMS,
            ROUGH_TERRAIN);

/* env_anymal.c — ANYmal C locomotion tasks.
 *
 * anymal_c-walk: flat-ground velocity tracking modelled on legged_gym's ANYmal C flat task: 48-element
 *   observation with its scales, action = target joint angles 0.5 a + default pose, PD (Kp 80, Kd 2,
 *   80 N·m), 5 ms x 4 (50 Hz policy), 20 s episodes, commands U(-1, 1) resampled every 4 s and zeroed when
 *   |v_xy| <= 0.2, legged_gym's reward terms and scales (times the control dt, total clipped at 0),
 *   termination on base contact, truncation at the time limit, and its domain randomization.  Friction:
 *   legged_gym draws the foot's friction in [0, 1.5], but Isaac Gym averages it with the ground plane's 1.0,
 *   so the foot-ground friction it simulates is in [0.5, 1.25]; here the pair friction is drawn directly,
 *   hence the default range [0.5, 1.25] (below about 0.3 ANYmal's legs splay even at rest).
 * anymal_c-stand: stand up from a random crouched (or, with fallen_prob, fallen) pose and hold a target
 *   base height; 4 s episodes.
 *
 * Joint order everywhere (observations, actions): LF, RF, LH, RH x HAA, HFE, KFE.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_internal.h"
#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_math.h"
#include "sim_step.h"
#include "sim_urdf.h"

extern const char herd_model_anymal_c_urdf[];     /* embedded at build time (Makefile) */
extern const unsigned long herd_model_anymal_c_urdf_len;

enum { GK_OTHER = 0, GK_BASE, GK_LEG, GK_FOOT };
enum { NJ = 12 };
static const char *leg_names[4] = {"LF", "RF", "LH", "RH"};
static const char *joint_names[3] = {"HAA", "HFE", "KFE"};

/* What every world of an env shares, derived from the model at configuration. */
typedef struct {
    int qadr[NJ], dof[NJ];
    double q_default[NJ];
    unsigned char geom_kind[SIM_MAX_GEOMS];
    signed char geom_foot[SIM_MAX_GEOMS];
    double foot_friction;           /* the model's pair friction, to scale per world */
    double sim_dt, control_dt;
    int decimation;
    double kp, kd, tau_max, action_scale, action_clip, obs_clip;
} anymal_shared;

/* Per-world task state. */
typedef struct {
    double targets[NJ];
    float actions[NJ], last_actions[NJ];
    double last_dof_vel[NJ];
    double cmd[3];
    double t;                       /* time in the episode */
    double next_cmd, next_push;
    double air[4];
    int last_contact[4];
    double tau_sq;                  /* sum of tau^2 over the env step, averaged per substep */
    int base_contact, leg_contacts;
    double foot_force[4];
} anymal_state;

_Static_assert(sizeof(anymal_shared) <= sizeof(((struct env *)0)->task_env), "task_env too small");
static anymal_shared *shared(const struct env *e) { return (anymal_shared *)(uintptr_t)e->task_env; }

/* ---- model ---- */

sim_model *env_load_anymal(char *err, size_t errlen)
{
    const char *dir = getenv("HERD_MODEL_DIR");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/anymal_c.urdf", dir);
        return sim_urdf_load_file(path, NULL, err, errlen);
    }
    return sim_urdf_load_string(herd_model_anymal_c_urdf, herd_model_anymal_c_urdf_len, "anymal_c.urdf (embedded)",
                                NULL, err, errlen);
}

static int setup_shared(struct env *e, sim_model *m, anymal_shared *s, char *err, size_t errlen)
{
    for (int l = 0; l < 4; l++)
        for (int j = 0; j < 3; j++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%s", leg_names[l], joint_names[j]);
            int b = sim_model_joint(m, name);
            if (b < 0) {
                snprintf(err, errlen, "ANYmal model lacks joint '%s'", name);
                return -1;
            }
            int i = 3 * l + j, front = l < 2;
            s->qadr[i] = m->body[b].qadr;
            s->dof[i] = m->body[b].dof;
            s->q_default[i] = j == 0 ? 0.0 : j == 1 ? (front ? 0.4 : -0.4) : (front ? -0.8 : 0.8);
        }
    int feet = 0;
    for (int g = 0; g < m->ngeom; g++) {
        const char *bn = m->body[m->geom[g].body].name;
        s->geom_foot[g] = -1;
        if (m->geom[g].body == 0) s->geom_kind[g] = GK_BASE;
        else if (m->geom[g].type == SIM_GEOM_SPHERE && strstr(bn, "SHANK")) {
            s->geom_kind[g] = GK_FOOT;
            for (int l = 0; l < 4; l++)
                if (!strncmp(bn, leg_names[l], 2)) s->geom_foot[g] = (signed char)l;
            s->foot_friction = m->geom[g].friction;
            feet++;
        } else if (strstr(bn, "THIGH") || strstr(bn, "SHANK")) s->geom_kind[g] = GK_LEG;
        else s->geom_kind[g] = GK_OTHER;
    }
    if (feet != 4) {
        snprintf(err, errlen, "ANYmal model: expected 4 foot spheres, found %d", feet);
        return -1;
    }
    if (!(s->foot_friction > 0)) s->foot_friction = 1.0;
    s->sim_dt = env_cfg(e, "sim_dt");
    s->decimation = (int)env_cfg(e, "decimation");
    s->control_dt = s->sim_dt * s->decimation;
    s->kp = env_cfg(e, "kp");
    s->kd = env_cfg(e, "kd");
    s->tau_max = env_cfg(e, "torque_limit");
    s->action_scale = env_cfg(e, "action_scale");
    s->action_clip = env_cfg(e, "action_clip");
    s->obs_clip = env_cfg(e, "obs_clip");
    m->opt.solver = (int)env_cfg(e, "solver");
    m->opt.erp = env_cfg(e, "erp");
    m->opt.sp.max_iter = (int)env_cfg(e, "solver_max_iter");
    m->opt.sp.tol = env_cfg(e, "solver_tol");
    m->opt.max_contacts = (int)env_cfg(e, "max_contacts");
    return 0;
}

static int configure_common(struct env *e, env_spec *spec, char *err, size_t errlen)
{
    sim_model *m = env_load_anymal(err, errlen);
    if (!m) return -1;
    anymal_shared *s = shared(e);
    if (setup_shared(e, m, s, err, errlen)) {
        sim_model_destroy(&m);
        return -1;
    }
    if (env_cfg(e, "friction_min") > env_cfg(e, "friction_max") || env_cfg(e, "added_mass_min") > env_cfg(e, "added_mass_max")) {
        snprintf(err, errlen, "%s: friction_min/added_mass_min must not exceed friction_max/added_mass_max", spec->name);
        sim_model_destroy(&m);
        return -1;
    }
    spec->sim_dt = s->sim_dt;
    spec->decimation = s->decimation;
    spec->control_dt = s->control_dt;
    spec->episode_seconds = env_cfg(e, "episode_seconds");
    spec->max_episode_steps = (int)ceil(spec->episode_seconds / s->control_dt - 1e-9);
    for (int i = 0; i < spec->nact; i++) {
        spec->act[i].low = (float)-s->action_clip;
        spec->act[i].high = (float)s->action_clip;
    }
    for (int i = 0; i < spec->nobs; i++) {
        if (spec->obs[i].low < -s->obs_clip) spec->obs[i].low = (float)-s->obs_clip;
        if (spec->obs[i].high > s->obs_clip) spec->obs[i].high = (float)s->obs_clip;
    }
    e->model = m;
    return 0;
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

static void pd_step(const struct env *e, env_world *w, anymal_state *st, int *failed)
{
    const anymal_shared *s = shared(e);
    const sim_model *m = e->model;
    sim_data *d = w->d;
    st->tau_sq = 0;
    st->base_contact = st->leg_contacts = 0;
    for (int f = 0; f < 4; f++) st->foot_force[f] = 0;
    for (int k = 0; k < s->decimation; k++) {
        for (int i = 0; i < NJ; i++) {
            double t = s->kp * (st->targets[i] - d->q[s->qadr[i]]) - s->kd * d->u[s->dof[i]];
            if (t > s->tau_max) t = s->tau_max;
            if (t < -s->tau_max) t = -s->tau_max;
            d->tau[s->dof[i]] = t;
            st->tau_sq += t * t;
        }
        if (sim_step(m, d, s->sim_dt)) {
            *failed = 1;
            return;
        }
    }
    st->tau_sq /= s->decimation;
    /* contact forces of the last substep (N), as legged_gym reads its contact sensors */
    for (int c = 0; c < d->ncon; c++) {
        double fn = d->lambda[3 * c + 2] / s->sim_dt;
        double ft = hypot(d->lambda[3 * c], d->lambda[3 * c + 1]) / s->sim_dt;
        int g = d->con[c].geom;
        if (s->geom_kind[g] == GK_FOOT) st->foot_force[s->geom_foot[g]] += fn;
        else if (s->geom_kind[g] == GK_BASE && hypot(fn, ft) > 1.0) st->base_contact = 1;
        else if (s->geom_kind[g] == GK_LEG && hypot(fn, ft) > 0.1) st->leg_contacts++;
    }
    double mx = 0;
    for (int k = 0; k < m->nv; k++) mx = fmax(mx, fabs(d->u[k]));
    if (!(mx < 1e3) || !(fabs(d->q[2]) < 1e3)) *failed = 1;
}

static float clipf(double x, double c) { return (float)(x > c ? c : x < -c ? -c : x); }

/* ---- anymal_c-walk ---- */

enum { W_LINVEL, W_ANGVEL, W_LINVEL_Z, W_ANGVEL_XY, W_ORIENT, W_TORQUES, W_DOFACC, W_ACTRATE, W_COLLISION, W_AIRTIME, W_NTERMS };
static const double walk_scales[W_NTERMS] = {1.0, 0.5, -2.0, -0.05, -5.0, -2.5e-5, -2.5e-7, -0.01, -1.0, 2.0};

static void walk_commands(const struct env *e, env_world *w, anymal_state *st)
{
    st->cmd[0] = env_rng_range(&w->rng, -env_cfg(e, "cmd_vx_max"), env_cfg(e, "cmd_vx_max"));
    st->cmd[1] = env_rng_range(&w->rng, -env_cfg(e, "cmd_vy_max"), env_cfg(e, "cmd_vy_max"));
    st->cmd[2] = env_rng_range(&w->rng, -env_cfg(e, "cmd_yaw_max"), env_cfg(e, "cmd_yaw_max"));
    if (hypot(st->cmd[0], st->cmd[1]) <= 0.2) st->cmd[0] = st->cmd[1] = 0;
}

static void walk_observe(const struct env *e, env_world *w, float *o)
{
    const anymal_shared *s = shared(e);
    const anymal_state *st = w->task;
    const sim_data *d = w->d;
    double v[3], om[3], g[3];
    base_frame(d, v, om, g);
    double c = s->obs_clip;
    int k = 0;
    for (int i = 0; i < 3; i++) o[k++] = clipf(2.0 * v[i], c);
    for (int i = 0; i < 3; i++) o[k++] = clipf(0.25 * om[i], c);
    for (int i = 0; i < 3; i++) o[k++] = clipf(g[i], c);
    o[k++] = clipf(2.0 * st->cmd[0], c);
    o[k++] = clipf(2.0 * st->cmd[1], c);
    o[k++] = clipf(0.25 * st->cmd[2], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(d->q[s->qadr[i]] - s->q_default[i], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(0.05 * d->u[s->dof[i]], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(st->actions[i], c);
}

/* legged_gym's noise: uniform in +-(level * noise scale * obs scale) */
static void walk_noise(const struct env *e, env_world *w, float *o)
{
    double lvl = env_cfg(e, "obs_noise");
    if (lvl <= 0) return;
    static const double n3[5] = {0.1 * 2.0, 0.2 * 0.25, 0.05, 0.0, 0.0};
    int k = 0;
    for (int grp = 0; grp < 3; grp++)
        for (int i = 0; i < 3; i++) o[k++] += (float)(lvl * n3[grp] * (2 * env_rng_uniform(&w->rng) - 1));
    k += 3;
    for (int i = 0; i < NJ; i++) o[k++] += (float)(lvl * 0.01 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 0; i < NJ; i++) o[k++] += (float)(lvl * 1.5 * 0.05 * (2 * env_rng_uniform(&w->rng) - 1));
}

static void randomize_world(const struct env *e, env_world *w)
{
    const anymal_shared *s = shared(e);
    double mu = env_rng_range(&w->rng, env_cfg(e, "friction_min"), env_cfg(e, "friction_max"));
    w->d->friction_scale = mu / s->foot_friction;
    w->d->root_added_mass = env_rng_range(&w->rng, env_cfg(e, "added_mass_min"), env_cfg(e, "added_mass_max"));
}

static void walk_reset(const struct env *e, env_world *w, float *obs)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    sim_data *d = w->d;
    sim_data_reset(e->model, d);
    sim_step_forget_contacts(d);
    memset(st, 0, sizeof *st);
    randomize_world(e, w);
    double ni = env_cfg(e, "init_noise");
    for (int i = 0; i < NJ; i++) {
        d->q[s->qadr[i]] = s->q_default[i] * (1 + ni * env_rng_range(&w->rng, -0.5, 0.5));
        st->targets[i] = s->q_default[i];
    }
    d->q[2] = 0.6;
    for (int k = 0; k < 6; k++) d->u[k] = ni * env_rng_range(&w->rng, -0.5, 0.5);
    walk_commands(e, w, st);
    st->next_cmd = env_cfg(e, "cmd_resample_s");
    double pi = env_cfg(e, "push_interval_s");
    st->next_push = pi > 0 ? pi : INFINITY;
    for (int i = 0; i < NJ; i++) st->last_dof_vel[i] = d->u[s->dof[i]];
    walk_observe(e, w, obs);
    walk_noise(e, w, obs);
}

static void apply_actions(const struct env *e, anymal_state *st, const float *act)
{
    const anymal_shared *s = shared(e);
    memcpy(st->last_actions, st->actions, sizeof st->actions);
    for (int i = 0; i < NJ; i++) {
        st->actions[i] = clipf(act[i], s->action_clip);
        st->targets[i] = s->action_scale * st->actions[i] + s->q_default[i];
    }
}

static void maybe_push(const struct env *e, env_world *w, anymal_state *st)
{
    if (st->t < st->next_push) return;
    double v = env_cfg(e, "push_vel_max");
    w->d->u[0] = env_rng_range(&w->rng, -v, v);
    w->d->u[1] = env_rng_range(&w->rng, -v, v);
    st->next_push += env_cfg(e, "push_interval_s");
}

/* The part of an env step both tasks share: actions, push, the PD-controlled physics substeps.
 * Returns 1 if the physics failed, in which case the world has been reset and the outputs written
 * (reward 0, terms 0, truncated = 2: env.c reports it as a physics reset). */
static int common_step(const struct env *e, env_world *w, const float *act, float *obs, float *reward, float *terms,
                       int nterms, uint8_t *terminated, uint8_t *truncated)
{
    anymal_state *st = w->task;
    apply_actions(e, st, act);
    maybe_push(e, w, st);
    int failed = 0;
    pd_step(e, w, st, &failed);
    st->t += shared(e)->control_dt;
    if (!failed) return 0;
    e->task->reset_world(e, w, obs);
    memset(terms, 0, sizeof(float) * (size_t)nterms);
    *reward = 0;
    *terminated = 0;
    *truncated = 2;
    return 1;
}

static void walk_step(const struct env *e, env_world *w, const float *act, float *obs, float *reward, float *terms,
                      uint8_t *terminated, uint8_t *truncated)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    sim_data *d = w->d;
    if (common_step(e, w, act, obs, reward, terms, W_NTERMS, terminated, truncated)) return;
    double v[3], om[3], g[3];
    base_frame(d, v, om, g);
    const double dt = s->control_dt;
    double r[W_NTERMS];
    double ev = (st->cmd[0] - v[0]) * (st->cmd[0] - v[0]) + (st->cmd[1] - v[1]) * (st->cmd[1] - v[1]);
    r[W_LINVEL] = exp(-ev / 0.25);
    r[W_ANGVEL] = exp(-(st->cmd[2] - om[2]) * (st->cmd[2] - om[2]) / 0.25);
    r[W_LINVEL_Z] = v[2] * v[2];
    r[W_ANGVEL_XY] = om[0] * om[0] + om[1] * om[1];
    r[W_ORIENT] = g[0] * g[0] + g[1] * g[1];
    r[W_TORQUES] = st->tau_sq;
    double acc = 0, rate = 0;
    for (int i = 0; i < NJ; i++) {
        double qd = d->u[s->dof[i]];
        acc += (qd - st->last_dof_vel[i]) * (qd - st->last_dof_vel[i]) / (dt * dt);
        st->last_dof_vel[i] = qd;
        rate += (double)(st->actions[i] - st->last_actions[i]) * (st->actions[i] - st->last_actions[i]);
    }
    r[W_DOFACC] = acc;
    r[W_ACTRATE] = rate;
    r[W_COLLISION] = st->leg_contacts;
    double air = 0;
    for (int f = 0; f < 4; f++) {
        int contact = st->foot_force[f] > 1.0;
        int filt = contact || st->last_contact[f];
        st->last_contact[f] = contact;
        int first = st->air[f] > 0 && filt;
        st->air[f] += dt;
        if (first) air += st->air[f] - 0.5;
        if (filt) st->air[f] = 0;
    }
    r[W_AIRTIME] = hypot(st->cmd[0], st->cmd[1]) > 0.1 ? air : 0;
    double total = 0;
    for (int k = 0; k < W_NTERMS; k++) {
        terms[k] = (float)(walk_scales[k] * dt * r[k]);
        total += terms[k];
    }
    if (env_cfg(e, "only_positive_rewards") > 0 && total < 0) total = 0;
    *reward = (float)total;
    *terminated = (uint8_t)st->base_contact;
    *truncated = 0;
    if (st->t >= st->next_cmd - 1e-9) {
        walk_commands(e, w, st);
        st->next_cmd += env_cfg(e, "cmd_resample_s");
    }
    walk_observe(e, w, obs);
    walk_noise(e, w, obs);
}

/* ---- anymal_c-stand ---- */

enum { S_HEIGHT, S_UPRIGHT, S_LINVEL, S_ANGVEL, S_POSE, S_TORQUES, S_ACTRATE, S_NTERMS };
static const double stand_scales[S_NTERMS] = {2.0, 1.0, -0.1, -0.05, -0.1, -2.5e-5, -0.01};

static void stand_observe(const struct env *e, env_world *w, float *o)
{
    const anymal_shared *s = shared(e);
    const anymal_state *st = w->task;
    const sim_data *d = w->d;
    double v[3], om[3], g[3];
    base_frame(d, v, om, g);
    double c = s->obs_clip;
    int k = 0;
    o[k++] = clipf(d->q[2] - env_cfg(e, "target_height"), c);
    for (int i = 0; i < 3; i++) o[k++] = clipf(g[i], c);
    for (int i = 0; i < 3; i++) o[k++] = clipf(2.0 * v[i], c);
    for (int i = 0; i < 3; i++) o[k++] = clipf(0.25 * om[i], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(d->q[s->qadr[i]] - s->q_default[i], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(0.05 * d->u[s->dof[i]], c);
    for (int i = 0; i < NJ; i++) o[k++] = clipf(st->actions[i], c);
}

static void stand_noise(const struct env *e, env_world *w, float *o)
{
    double lvl = env_cfg(e, "obs_noise");
    if (lvl <= 0) return;
    o[0] += (float)(lvl * 0.01 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 1; i < 4; i++) o[i] += (float)(lvl * 0.05 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 4; i < 7; i++) o[i] += (float)(lvl * 0.2 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 7; i < 10; i++) o[i] += (float)(lvl * 0.05 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 10; i < 22; i++) o[i] += (float)(lvl * 0.01 * (2 * env_rng_uniform(&w->rng) - 1));
    for (int i = 22; i < 34; i++) o[i] += (float)(lvl * 0.075 * (2 * env_rng_uniform(&w->rng) - 1));
}

/* Lowers (or raises) the base so that the lowest foot sphere touches the ground. */
static void place_on_ground(const struct env *e, sim_data *d, const anymal_shared *s)
{
    const sim_model *m = e->model;
    d->q[2] = 0;
    sim_kinematics(m, d);
    double low = INFINITY;
    for (int g = 0; g < m->ngeom; g++) {
        if (s->geom_kind[g] == GK_OTHER) continue;
        const sim_geom *G = &m->geom[g];
        double p[3];
        sim_point_world(m, d, G->body, G->pos, p);
        double r = G->type == SIM_GEOM_SPHERE ? G->size[0] : 0;
        if (G->type == SIM_GEOM_SPHERE || s->geom_kind[g] == GK_FOOT) low = fmin(low, p[2] - r);
    }
    d->q[2] = -low + 0.002;
}

static void stand_reset(const struct env *e, env_world *w, float *obs)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    sim_data *d = w->d;
    sim_data_reset(e->model, d);
    sim_step_forget_contacts(d);
    memset(st, 0, sizeof *st);
    randomize_world(e, w);
    double ni = env_cfg(e, "init_noise");
    int fallen = env_rng_uniform(&w->rng) < env_cfg(e, "fallen_prob");
    for (int l = 0; l < 4; l++) {
        int front = l < 2;
        double crouch = ni * env_rng_uniform(&w->rng);
        d->q[s->qadr[3 * l + 0]] = ni * env_rng_range(&w->rng, -0.2, 0.2);
        d->q[s->qadr[3 * l + 1]] = s->q_default[3 * l + 1] + (front ? 1 : -1) * 0.7 * crouch;
        d->q[s->qadr[3 * l + 2]] = s->q_default[3 * l + 2] + (front ? -1 : 1) * 1.4 * crouch;
    }
    for (int i = 0; i < NJ; i++) st->targets[i] = d->q[s->qadr[i]];
    if (fallen) {
        double roll = (env_rng_uniform(&w->rng) < 0.5 ? -1 : 1) * env_rng_range(&w->rng, 1.2, 3.0);
        d->q[3] = cos(roll / 2);
        d->q[4] = sin(roll / 2);
        d->q[2] = 0.45;
    } else {
        place_on_ground(e, d, s);
    }
    for (int i = 0; i < NJ; i++) st->last_dof_vel[i] = d->u[s->dof[i]];
    st->next_push = env_cfg(e, "push_interval_s") > 0 ? env_cfg(e, "push_interval_s") : INFINITY;
    stand_observe(e, w, obs);
    stand_noise(e, w, obs);
}

static void stand_step(const struct env *e, env_world *w, const float *act, float *obs, float *reward, float *terms,
                       uint8_t *terminated, uint8_t *truncated)
{
    const anymal_shared *s = shared(e);
    anymal_state *st = w->task;
    sim_data *d = w->d;
    if (common_step(e, w, act, obs, reward, terms, S_NTERMS, terminated, truncated)) return;
    double v[3], om[3], g[3];
    base_frame(d, v, om, g);
    double up = -g[2] > 0 ? -g[2] : 0;
    double dz = d->q[2] - env_cfg(e, "target_height");
    double r[S_NTERMS], pose = 0, rate = 0;
    r[S_HEIGHT] = exp(-(dz / 0.1) * (dz / 0.1)) * up;
    r[S_UPRIGHT] = up;
    r[S_LINVEL] = v3_dot(v, v);
    r[S_ANGVEL] = v3_dot(om, om);
    for (int i = 0; i < NJ; i++) {
        double e_q = d->q[s->qadr[i]] - s->q_default[i];
        pose += e_q * e_q;
        rate += (double)(st->actions[i] - st->last_actions[i]) * (st->actions[i] - st->last_actions[i]);
    }
    r[S_POSE] = pose;
    r[S_TORQUES] = st->tau_sq;
    r[S_ACTRATE] = rate;
    double total = 0;
    for (int k = 0; k < S_NTERMS; k++) {
        terms[k] = (float)(stand_scales[k] * s->control_dt * r[k]);
        total += terms[k];
    }
    *reward = (float)total;
    *terminated = 0;
    *truncated = 0;
    stand_observe(e, w, obs);
    stand_noise(e, w, obs);
}

static int walk_configure(struct env *e, sim_model *unused, env_spec *spec, char *err, size_t errlen)
{
    (void)unused;
    return configure_common(e, spec, err, errlen);
}

/* ---- specs ---- */

#define KEY(k, d, l, h, i, doc) {k, d, l, h, i, doc}
#define COMMON_KEYS                                                                                             \
    KEY("sim_dt", 0.005, 0.0005, 0.01, 0, "physics step (s)"),                                               \
    KEY("decimation", 4, 1, 50, 1, "physics steps per env step"),                                            \
    KEY("kp", 80, 0, 1000, 0, "PD stiffness (N m / rad)"),                                                    \
    KEY("kd", 2, 0, 100, 0, "PD damping (N m s / rad)"),                                                      \
    KEY("torque_limit", 80, 1, 500, 0, "torque clip (N m)"),                                                 \
    KEY("action_scale", 0.5, 0.01, 5, 0, "joint target = action_scale * action + default pose (rad)"),       \
    KEY("action_clip", 100, 0.1, 1000, 0, "actions are clipped to +-action_clip"),                           \
    KEY("obs_clip", 100, 1, 1000, 0, "observations are clipped to +-obs_clip"),                              \
    KEY("obs_noise", 1, 0, 10, 0, "observation noise level (legged_gym noise scales times this)"),           \
    KEY("init_noise", 1, 0, 2, 0, "initial-state noise level"),                                               \
    KEY("push_vel_max", 1, 0, 5, 0, "push: base xy velocity set to U(-v, v) (m/s)"),                         \
    KEY("solver", 0, 0, 1, 1, "contact solver: 0 bisection (Hwangbo et al. 2018), 1 PGS"),                   \
    KEY("erp", 0, 0, 1, 0, "contact position correction per physics step (0 = off)"),                     \
    KEY("solver_max_iter", 50, 1, 10000, 1, "contact solver sweeps per physics step at most"),                \
    KEY("solver_tol", 1e-6, 1e-12, 1e-2, 0, "contact solver termination: exact violation (N s | m/s)"),      \
    KEY("max_contacts", 16, 4, 128, 1, "contacts per world at most (the deepest are kept)")
#define NCOMMON 16

#define OBS(nm, off, sz, sc, un) {nm, off, sz, -100, 100, sc, un}

const env_task env_task_anymal_walk = {
    .spec = {
        .name = "anymal_c-walk",
        .doc = "ANYmal C flat-ground velocity tracking (legged_gym's ANYmal C flat task): 48 observations, "
               "12 joint-target actions, 50 Hz policy, 20 s episodes, domain randomization",
        .obs_dim = 48, .act_dim = 12, .nobs = 8, .nact = 1,
        .obs = {OBS("base_lin_vel", 0, 3, 2.0f, "m/s"), OBS("base_ang_vel", 3, 3, 0.25f, "rad/s"),
                OBS("projected_gravity", 6, 3, 1.0f, ""), OBS("command_lin_vel", 9, 2, 2.0f, "m/s"),
                OBS("command_yaw_rate", 11, 1, 0.25f, "rad/s"), OBS("dof_pos", 12, 12, 1.0f, "rad"),
                OBS("dof_vel", 24, 12, 0.05f, "rad/s"), OBS("actions", 36, 12, 1.0f, "")},
        .act = {{"joint_targets", 0, 12, -100, 100, 0.5f, "rad"}},
        .sim_dt = 0.005, .decimation = 4, .control_dt = 0.02, .episode_seconds = 20, .max_episode_steps = 1000,
        .nconfig = NCOMMON + 11,
        .config = {COMMON_KEYS,
                   KEY("friction_min", 0.5, 0, 5, 0, "friction drawn per world and reset: lower bound"),
                   KEY("friction_max", 1.25, 0, 5, 0, "friction drawn per world and reset: upper bound"),
                   KEY("added_mass_min", -5, -30, 0, 0, "added base mass drawn per world and reset: lower bound (kg)"),
                   KEY("added_mass_max", 5, 0, 30, 0, "added base mass drawn per world and reset: upper bound (kg)"),
                   KEY("push_interval_s", 15, 0, 3600, 0, "seconds between pushes (0 = never)"),
                   KEY("episode_seconds", 20, 0.02, 3600, 0, "time limit (truncation)"),
                   KEY("cmd_vx_max", 1, 0, 5, 0, "forward velocity command drawn in U(-v, v) (m/s)"),
                   KEY("cmd_vy_max", 1, 0, 5, 0, "lateral velocity command drawn in U(-v, v) (m/s)"),
                   KEY("cmd_yaw_max", 1, 0, 5, 0, "yaw-rate command drawn in U(-w, w) (rad/s)"),
                   KEY("cmd_resample_s", 4, 0.02, 3600, 0, "seconds between command draws"),
                   KEY("only_positive_rewards", 1, 0, 1, 1, "clip the total reward at 0 (legged_gym)")},
        .nterms = W_NTERMS,
        .terms = {"tracking_lin_vel", "tracking_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "torques",
                  "dof_acc", "action_rate", "collision", "feet_air_time"},
    },
    .task_state_size = sizeof(anymal_state),
    .configure = walk_configure,
    .reset_world = walk_reset,
    .observe = walk_observe,
    .step_world = walk_step,
};

const env_task env_task_anymal_stand = {
    .spec = {
        .name = "anymal_c-stand",
        .doc = "ANYmal C stands up from a random crouched or fallen pose and holds a target base height; "
               "46 observations, 12 joint-target actions, 50 Hz policy, 4 s episodes",
        .obs_dim = 46, .act_dim = 12, .nobs = 7, .nact = 1,
        .obs = {OBS("base_height_error", 0, 1, 1.0f, "m"), OBS("projected_gravity", 1, 3, 1.0f, ""),
                OBS("base_lin_vel", 4, 3, 2.0f, "m/s"), OBS("base_ang_vel", 7, 3, 0.25f, "rad/s"),
                OBS("dof_pos", 10, 12, 1.0f, "rad"), OBS("dof_vel", 22, 12, 0.05f, "rad/s"),
                OBS("actions", 34, 12, 1.0f, "")},
        .act = {{"joint_targets", 0, 12, -100, 100, 0.5f, "rad"}},
        .sim_dt = 0.005, .decimation = 4, .control_dt = 0.02, .episode_seconds = 4, .max_episode_steps = 200,
        .nconfig = NCOMMON + 8,
        .config = {COMMON_KEYS,
                   KEY("friction_min", 0.5, 0, 5, 0, "friction drawn per world and reset: lower bound"),
                   KEY("friction_max", 1.25, 0, 5, 0, "friction drawn per world and reset: upper bound"),
                   KEY("added_mass_min", -2, -30, 0, 0, "added base mass drawn per world and reset: lower bound (kg)"),
                   KEY("added_mass_max", 2, 0, 30, 0, "added base mass drawn per world and reset: upper bound (kg)"),
                   KEY("push_interval_s", 0, 0, 3600, 0, "seconds between pushes (0 = never)"),
                   KEY("episode_seconds", 4, 0.02, 3600, 0, "time limit (truncation)"),
                   KEY("target_height", 0.5, 0.3, 0.65, 0, "base height to reach and hold (m)"),
                   KEY("fallen_prob", 0.25, 0, 1, 0, "probability that an episode starts fallen on its side or back")},
        .nterms = S_NTERMS,
        .terms = {"height", "upright", "lin_vel", "ang_vel", "pose", "torques", "action_rate"},
    },
    .task_state_size = sizeof(anymal_state),
    .configure = walk_configure,
    .reset_world = stand_reset,
    .observe = stand_observe,
    .step_world = stand_step,
};


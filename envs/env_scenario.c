/* env_scenario.c — see env_scenario.h. */
#include "env_scenario.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_step.h"

static const char *const names[ENV_SCN_COUNT] = {"trot", "hang", "drop", "random", "stand"};

int env_scenario_kind_from_name(const char *name)
{
    for (int k = 0; k < ENV_SCN_COUNT; k++)
        if (name && strcmp(name, names[k]) == 0) return k;
    return -1;
}

const char *env_scenario_name(int kind) { return kind >= 0 && kind < ENV_SCN_COUNT ? names[kind] : "?"; }

int env_scenario_configure_model(sim_model *m, int kind, char *err, size_t errlen)
{
    if (kind < 0 || kind >= ENV_SCN_COUNT) {
        snprintf(err, errlen, "unknown scenario %d", kind);
        return -1;
    }
    if (env_anymal_count_feet(m, err, errlen)) return -1;
    for (int g = 0; g < m->ngeom; g++) {
        env_geom_kind gk = env_anymal_geom_kind(m, g, NULL);
        int base = gk == ENV_GEOM_BASE && m->geom[g].type == SIM_GEOM_BOX;
        /* the paper's collision set: the four feet and the torso box (hang: feet only) */
        m->geom[g].nocollide = !(gk == ENV_GEOM_FOOT || (base && kind != ENV_SCN_HANG));
    }
    return 0;
}

int env_scenario_init(env_scenario *s, const sim_model *m, sim_data *d, int kind, uint64_t seed, char *err,
                      size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    if (env_anymal_joints_init(&s->joints, m, err, errlen)) return -1;
    s->kp = ENV_ANYMAL_KP;
    s->kd = ENV_ANYMAL_KD;
    s->tau_max = ENV_ANYMAL_TAU_MAX;
    s->rng = env_rng_seeded(seed);
    if (kind == ENV_SCN_TROT && env_scenario_trot_init(s, m, err, errlen)) return -1;
    env_scenario_reset(s, m, d);
    s->resets = 0;
    return 0;
}

void env_scenario_reset(env_scenario *s, const sim_model *m, sim_data *d)
{
    const env_anymal_joints *j = &s->joints;
    sim_data_reset(m, d);
    sim_step_forget_contacts(d);
    for (int i = 0; i < ENV_ANYMAL_NJ; i++) d->q[j->qadr[i]] = j->q_default[i];
    memcpy(s->target, j->q_default, sizeof s->target);
    switch (s->kind) {
    case ENV_SCN_TROT: d->q[2] = 0.58; break;
    case ENV_SCN_HANG: d->q[2] = 1.0; break;
    case ENV_SCN_DROP: d->q[2] = 1.0; d->u[0] = 1.0; break;
    case ENV_SCN_RANDOM: d->q[2] = 0.7; break;
    default: d->q[2] = 0.6; break;
    }
    if (s->kind == ENV_SCN_TROT) env_scenario_trot_reset(s, m, d);
    s->t_episode = 0;
    s->t_target = 0;
    s->t_still = 0;
    s->resets++;
}

static void pd(const env_scenario *s, sim_data *d)
{
    double target[ENV_ANYMAL_NJ];
    for (int i = 0; i < ENV_ANYMAL_NJ; i++) target[i] = s->target[i] + s->offset[i];
    env_anymal_pd(&s->joints, d, target, s->kp, s->kd, s->tau_max, NULL);
}

void env_scenario_control(env_scenario *s, const sim_model *m, sim_data *d, double dt)
{
    const env_anymal_joints *j = &s->joints;
    s->t_episode += dt;
    s->done = SIM_STAGE_NONE;
    switch (s->kind) {
    case ENV_SCN_HANG:
        for (int k = 0; k < m->nv; k++) d->tau[k] = 0;
        return;
    case ENV_SCN_DROP: {
        pd(s, d);
        double ke = 0;
        for (int k = 0; k < 6; k++) ke += d->u[k] * d->u[k];
        ke *= 0.5 * m->total_mass; /* the base part is enough to tell stillness */
        s->t_still = ke < 0.5 ? s->t_still + dt : 0;
        if (s->t_still > 0.5 || s->t_episode > 10) env_scenario_reset(s, m, d);
        return;
    }
    case ENV_SCN_RANDOM:
        if (s->t_episode >= 5.0) env_scenario_reset(s, m, d);
        if (s->t_episode >= s->t_target) {
            for (int i = 0; i < ENV_ANYMAL_NJ; i++) {
                double t = env_rng_normal_around(&s->rng, j->q_default[i]);
                if (t < j->lower[i]) t = j->lower[i];
                if (t > j->upper[i]) t = j->upper[i];
                s->target[i] = t;
            }
            s->t_target = s->t_episode + 0.05;
        }
        pd(s, d);
        return;
    case ENV_SCN_TROT: {
        /* base tilt and height guard */
        double zz = 1 - 2 * (d->q[4] * d->q[4] + d->q[5] * d->q[5]); /* world z of the base z axis */
        if (d->q[2] < 0.25 || zz < 0.5) {
            env_scenario_reset(s, m, d);
            return;
        }
        env_scenario_trot_control(s, m, d, dt);
        s->done = SIM_STAGE_KINEMATICS; /* it ran sim_kinematics on d; PD changes only d->tau */
        pd(s, d);
        return;
    }
    default: /* stand */
        pd(s, d);
    }
}

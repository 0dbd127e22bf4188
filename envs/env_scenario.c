/* env_scenario.c — see env_scenario.h. */
#include "env_scenario.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_dynamics.h"
#include "sim_step.h"

static const char *names[SCN_COUNT] = {"trot", "hang", "drop", "random", "stand"};
static const char *legs[4] = {"LF", "RF", "LH", "RH"};
static const char *jnames[3] = {"HAA", "HFE", "KFE"};

int scn_kind_from_name(const char *name)
{
    for (int k = 0; k < SCN_COUNT; k++)
        if (strcmp(name, names[k]) == 0) return k;
    return -1;
}

const char *scn_name(int kind) { return kind >= 0 && kind < SCN_COUNT ? names[kind] : "?"; }

/* splitmix64: small, counter-friendly, deterministic */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double next_uniform(uint64_t *s) { return (next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }
static double next_normal(uint64_t *s)
{
    double u1 = next_uniform(s), u2 = next_uniform(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static int is_foot_geom(const sim_model *m, int g)
{
    return m->geom[g].type == SIM_GEOM_SPHERE && strstr(m->body[m->geom[g].body].name, "SHANK") != NULL;
}

int scn_configure_model(sim_model *m, int kind, char *err, size_t errlen)
{
    if (kind < 0 || kind >= SCN_COUNT) {
        snprintf(err, errlen, "unknown scenario %d", kind);
        return -1;
    }
    int feet = 0;
    for (int g = 0; g < m->ngeom; g++) {
        int foot = is_foot_geom(m, g);
        feet += foot;
        int base = m->geom[g].body == 0 && m->geom[g].type == SIM_GEOM_BOX;
        /* the paper's collision set: the four feet and the torso box (hang: feet only) */
        m->geom[g].nocollide = !(foot || (base && kind != SCN_HANG));
    }
    if (feet != 4) {
        snprintf(err, errlen, "scenario '%s' needs 4 foot spheres on *SHANK bodies, found %d", names[kind], feet);
        return -1;
    }
    return 0;
}

int scn_init(const sim_model *m, sim_data *d, scn_state *s, int kind, uint64_t seed, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    for (int l = 0; l < 4; l++)
        for (int j = 0; j < 3; j++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%s", legs[l], jnames[j]);
            int b = sim_model_joint(m, name);
            if (b < 0) {
                snprintf(err, errlen, "scenario: model has no joint '%s'", name);
                return -1;
            }
            int i = 3 * l + j;
            s->qadr[i] = m->body[b].qadr;
            s->dof[i] = m->body[b].dof;
            s->lower[i] = m->body[b].lower;
            s->upper[i] = m->body[b].upper;
            int front = l < 2;
            s->nominal[i] = j == 0 ? 0.0 : j == 1 ? (front ? 0.4 : -0.4) : (front ? -0.8 : 0.8);
        }
    s->kp = 80;
    s->kd = 2;
    s->tau_max = 80;
    s->rng = seed;
    scn_reset(m, d, s);
    s->resets = 0;
    return 0;
}

void scn_reset(const sim_model *m, sim_data *d, scn_state *s)
{
    sim_data_reset(m, d);
    sim_step_forget_contacts(d);
    for (int i = 0; i < 12; i++) d->q[s->qadr[i]] = s->nominal[i];
    memcpy(s->target, s->nominal, sizeof s->target);
    switch (s->kind) {
    case SCN_TROT: d->q[2] = 0.58; s->amp = 0.25; break;
    case SCN_HANG: d->q[2] = 1.0; break;
    case SCN_DROP: d->q[2] = 1.0; d->u[0] = 1.0; break;
    case SCN_RANDOM: d->q[2] = 0.7; break;
    default: d->q[2] = 0.6; break;
    }
    s->t_episode = 0;
    s->t_target = 0;
    s->t_still = 0;
    s->resets++;
}

static void pd(const sim_model *m, sim_data *d, const scn_state *s)
{
    for (int i = 0; i < 12; i++) {
        double t = s->kp * (s->target[i] + s->offset[i] - d->q[s->qadr[i]]) - s->kd * d->u[s->dof[i]];
        if (t > s->tau_max) t = s->tau_max;
        if (t < -s->tau_max) t = -s->tau_max;
        d->tau[s->dof[i]] = t;
    }
    (void)m;
}

void scn_control(const sim_model *m, sim_data *d, scn_state *s, double dt)
{
    s->t_episode += dt;
    switch (s->kind) {
    case SCN_HANG:
        for (int k = 0; k < m->nv; k++) d->tau[k] = 0;
        return;
    case SCN_STAND:
        pd(m, d, s);
        return;
    case SCN_DROP: {
        pd(m, d, s);
        double ke = 0;
        for (int k = 0; k < 6; k++) ke += d->u[k] * d->u[k];
        ke *= 0.5 * m->total_mass; /* base part is enough to tell stillness */
        s->t_still = ke < 0.5 ? s->t_still + dt : 0;
        if (s->t_still > 0.5 || s->t_episode > 10) scn_reset(m, d, s);
        return;
    }
    case SCN_RANDOM:
        if (s->t_episode >= 5.0) scn_reset(m, d, s);
        if (s->t_episode >= s->t_target) {
            for (int i = 0; i < 12; i++) {
                double t = s->nominal[i] + next_normal(&s->rng);
                if (t < s->lower[i]) t = s->lower[i];
                if (t > s->upper[i]) t = s->upper[i];
                s->target[i] = t;
            }
            s->t_target = s->t_episode + 0.05;
        }
        pd(m, d, s);
        return;
    case SCN_TROT: {
        /* base tilt and height guard */
        double zz = 1 - 2 * (d->q[4] * d->q[4] + d->q[5] * d->q[5]); /* world z of base z axis */
        if (d->q[2] < 0.25 || zz < 0.5) {
            scn_reset(m, d, s);
            return;
        }
        const double period = 0.5, vdes = 1.5, lift = 0.6;
        /* forward speed in the heading frame; stride feedback once per step */
        double vx = d->u[0];
        s->amp += dt * 0.5 * (vdes - vx);
        if (s->amp < 0.05) s->amp = 0.05;
        if (s->amp > 0.45) s->amp = 0.45;
        for (int l = 0; l < 4; l++) {
            int diag = (l == 0 || l == 3) ? 0 : 1;
            int front = l < 2;
            double ph = 2 * M_PI * (s->t_episode / period + 0.5 * diag);
            double sw = sin(ph);
            s->target[3 * l + 0] = s->nominal[3 * l + 0];
            s->target[3 * l + 1] = s->nominal[3 * l + 1] + s->amp * cos(ph);
            s->target[3 * l + 2] = s->nominal[3 * l + 2] + (front ? -1 : 1) * lift * (sw > 0 ? sw : 0);
        }
        pd(m, d, s);
        return;
    }
    default:
        pd(m, d, s);
    }
}

/* env_anymal_model.c — see env_anymal_model.h. */
#include "env_anymal_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_urdf.h"

extern const char herd_model_anymal_c_urdf[];     /* embedded at build time (Makefile) */
extern const unsigned long herd_model_anymal_c_urdf_len;

static const char *const leg_names[4] = {"LF", "RF", "LH", "RH"};
static const char *const joint_names[3] = {"HAA", "HFE", "KFE"};

sim_model *env_anymal_load(char *err, size_t errlen)
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

int env_anymal_joints_init(env_anymal_joints *jm, const sim_model *m, char *err, size_t errlen)
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
            jm->qadr[i] = m->body[b].qadr;
            jm->dof[i] = m->body[b].dof;
            jm->lower[i] = m->body[b].lower;
            jm->upper[i] = m->body[b].upper;
            jm->q_default[i] = j == 0 ? 0.0 : j == 1 ? (front ? 0.4 : -0.4) : (front ? -0.8 : 0.8);
        }
    return 0;
}

int env_anymal_joint_options(sim_model *m, const env_anymal_joints *j, double limits, double damping,
                             double friction, double armature, char *err, size_t errlen)
{
    const struct { const char *key; double v; } opts[] = {
        {"joint_damping", damping}, {"joint_friction", friction}, {"joint_armature", armature}};
    if (!(limits == 0 || limits == 1)) return sim_fail(err, errlen, "joint_limits: %g is not 0 or 1", limits);
    for (int k = 0; k < 3; k++)
        if (!(opts[k].v >= 0) || !isfinite(opts[k].v))
            return sim_fail(err, errlen, "%s: %g is not a finite value >= 0", opts[k].key, opts[k].v);
    m->opt.joint_limits = (int)limits;
    for (int i = 0; i < ENV_ANYMAL_NJ; i++) {
        sim_body *b = &m->body[m->dof_body[j->dof[i]]];
        b->damping = damping;
        b->friction = friction;
        b->armature = armature;
    }
    return 0;
}

env_geom_kind env_anymal_geom_kind(const sim_model *m, int g, int *leg)
{
    const char *bn = m->body[m->geom[g].body].name;
    if (leg) *leg = -1;
    if (m->geom[g].body == 0) return ENV_GEOM_BASE;
    if (m->geom[g].type == SIM_GEOM_SPHERE && strstr(bn, "SHANK")) {
        for (int l = 0; l < 4 && leg; l++)
            if (!strncmp(bn, leg_names[l], 2)) *leg = l;
        return ENV_GEOM_FOOT;
    }
    if (strstr(bn, "THIGH") || strstr(bn, "SHANK")) return ENV_GEOM_LEG;
    return ENV_GEOM_OTHER;
}

int env_anymal_count_feet(const sim_model *m, char *err, size_t errlen)
{
    int feet = 0;
    for (int g = 0; g < m->ngeom; g++) feet += env_anymal_geom_kind(m, g, NULL) == ENV_GEOM_FOOT;
    if (feet != 4) snprintf(err, errlen, "ANYmal model: expected 4 foot spheres on *SHANK bodies, found %d", feet);
    return feet == 4 ? 0 : -1;
}

void env_anymal_pd(const env_anymal_joints *j, sim_data *d, const double target[ENV_ANYMAL_NJ], double kp, double kd,
                   double tau_max, double *tau_sq)
{
#pragma GCC unroll 12
    for (int i = 0; i < ENV_ANYMAL_NJ; i++) {
        double t = fma(kp, target[i] - d->q[j->qadr[i]], -(kd * d->u[j->dof[i]]));
        if (t > tau_max) t = tau_max;
        if (t < -tau_max) t = -tau_max;
        d->tau[j->dof[i]] = t;
        if (tau_sq) *tau_sq = fma(t, t, *tau_sq);
    }
}

int env_anymal_runaway(const sim_model *m, const sim_data *d)
{
    double mx = 0;
    for (int k = 0; k < m->nv; k++) mx = fmax(mx, fabs(d->u[k]));
    return !(mx < ENV_ANYMAL_RUNAWAY_VEL) || !(fabs(d->q[2]) < ENV_ANYMAL_RUNAWAY_HEIGHT_M);
}

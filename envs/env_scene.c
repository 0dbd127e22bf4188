/* env_scene.c — a task's visual scene and its worlds' poses, read without stepping.  See env.h.
 *
 * Poses come from forward kinematics of the world's state (q) on a private copy of its sim_data header whose
 * scratch is bound to the caller's stack: the world's own sim_data is only read, so a poses read leaves no
 * trace in the world (the steps that follow are bitwise the same). */
#include "env.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "env_anymal_model.h"
#include "env_internal.h"
#include "sim_collision.h"
#include "sim_dynamics.h"

/* Colours by role (the ANYmal tasks: an orange base, dark legs, black feet). */
static const float role_rgba[4][4] = {
    [ENV_GEOM_OTHER] = {0.60f, 0.60f, 0.62f, 1.0f},
    [ENV_GEOM_BASE] = {0.90f, 0.42f, 0.10f, 1.0f},
    [ENV_GEOM_LEG] = {0.22f, 0.23f, 0.26f, 1.0f},
    [ENV_GEOM_FOOT] = {0.05f, 0.05f, 0.05f, 1.0f},
};

/* Unit quaternion (w, x, y, z) of the rotation matrix R (row-major; Shepperd's method: the largest of the
 * four candidate pivots, so no division by a small number).  w >= 0. */
static void mat_to_quat(const double *R, double q[4])
{
    double tr = R[0] + R[4] + R[8];
    if (tr >= R[0] && tr >= R[4] && tr >= R[8]) {
        double s = 2 * sqrt(1 + tr);
        q[0] = 0.25 * s;
        q[1] = (R[7] - R[5]) / s;
        q[2] = (R[2] - R[6]) / s;
        q[3] = (R[3] - R[1]) / s;
    } else if (R[0] >= R[4] && R[0] >= R[8]) {
        double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
        q[0] = (R[7] - R[5]) / s;
        q[1] = 0.25 * s;
        q[2] = (R[1] + R[3]) / s;
        q[3] = (R[2] + R[6]) / s;
    } else if (R[4] >= R[8]) {
        double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
        q[0] = (R[2] - R[6]) / s;
        q[1] = (R[1] + R[3]) / s;
        q[2] = 0.25 * s;
        q[3] = (R[5] + R[7]) / s;
    } else {
        double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
        q[0] = (R[3] - R[1]) / s;
        q[1] = (R[2] + R[6]) / s;
        q[2] = (R[5] + R[7]) / s;
        q[3] = 0.25 * s;
    }
    double nq = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double sg = q[0] < 0 ? -1.0 : 1.0;
    for (int k = 0; k < 4; k++) q[k] *= sg / nq;
}

void env_scene(const env_t *e, env_scene_t *out)
{
    const sim_model *m = e->model;
    memset(out, 0, sizeof *out);
    out->nbody = m->nbody;
    for (int b = 0; b < m->nbody; b++) {
        snprintf(out->body[b].name, sizeof out->body[b].name, "%s", m->body[b].name);
        out->body[b].parent = m->body[b].parent;
    }
    out->ngeom = m->ngeom;
    for (int g = 0; g < m->ngeom; g++) {
        const sim_geom *sg = &m->geom[g];
        env_scene_geom *o = &out->geom[g];
        snprintf(o->name, sizeof o->name, "%s", sg->name);
        o->type = sg->type;     /* env_prim_type follows sim_geom_type */
        o->body = sg->body;
        double q[4];
        mat_to_quat(sg->rot, q);
        for (int k = 0; k < 3; k++) o->pos[k] = (float)sg->pos[k];
        for (int k = 0; k < 4; k++) o->quat[k] = (float)q[k];
        int nsize = sg->type == SIM_GEOM_SPHERE ? 1 : sg->type == SIM_GEOM_BOX ? 3 : 2;
        for (int k = 0; k < nsize; k++) o->size[k] = (float)sg->size[k];
        memcpy(o->rgba, role_rgba[env_anymal_geom_kind(m, g, NULL)], sizeof o->rgba);
        o->collides = !sg->nocollide;
    }
    const sim_terrain *t = &m->terrain;
    out->terrain.type = t->type == SIM_TERRAIN_HFIELD ? ENV_TERRAIN_HEIGHTFIELD : ENV_TERRAIN_PLANE;
    out->terrain.height = t->height;
    if (t->type == SIM_TERRAIN_HFIELD) {
        out->terrain.nx = t->nx;
        out->terrain.ny = t->ny;
        out->terrain.x0 = t->x0;
        out->terrain.y0 = t->y0;
        out->terrain.dx = t->dx;
        out->terrain.dy = t->dy;
        out->terrain.heights = t->heights;
    }
    out->max_contacts = e->worlds ? e->worlds[0].d->ncon_max : sim_model_max_contacts(m);
}

/* The normal impulse world d's last physics step gave contact (geom, feature), 0 if it had none. */
static double last_normal_impulse(const sim_data *d, int geom, int feature)
{
    for (int j = 0; j < d->nprev; j++)
        if (d->prev_key[2 * j] == geom && d->prev_key[2 * j + 1] == feature) return d->prev_lambda[3 * j + 2];
    return 0;
}

void env_poses(const env_t *e, int first, int n, const int32_t *ids, float *body_pos, float *body_quat,
               env_contacts *c)
{
    const sim_model *m = e->model;
    const int nb = m->nbody;
    unsigned char raw[e->scratch_size + 64];
    void *scratch = (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    for (int i = 0; i < n; i++) {
        const sim_data *src = e->worlds[ids ? ids[i] : first + i].d;
        sim_data d = *src;      /* the header only: q, u, the contact cache still point into the world */
        sim_data_bind_scratch(m, &d, scratch);
        sim_kinematics(m, &d);
        float *p = body_pos + (size_t)i * nb * 3, *qo = body_quat + (size_t)i * nb * 4;
        for (int b = 0; b < nb; b++) {
            double q[4];
            mat_to_quat(d.xrot + 9 * b, q);
            for (int k = 0; k < 3; k++) p[3 * b + k] = (float)d.xpos[3 * b + k];
            for (int k = 0; k < 4; k++) qo[4 * b + k] = (float)q[k];
        }
        if (!c) continue;
        int cnt = 0;
        if (d.nprev > 0 && c->max > 0) {
            sim_velocity(m, &d);
            int nc = sim_collide(m, &d, m->opt.margin, 0.0, d.con, d.ncon_max);
            for (int k = 0; k < nc && cnt < c->max; k++) {
                double lam = last_normal_impulse(src, d.con[k].geom, d.con[k].feature);
                if (!(lam > 0)) continue;
                size_t r = (size_t)i * c->max + (size_t)cnt;
                for (int a = 0; a < 3; a++) {
                    c->pos[3 * r + a] = (float)d.con[k].pos[a];
                    c->normal[3 * r + a] = (float)d.con[k].frame[6 + a];
                }
                c->impulse[r] = (float)lam;
                cnt++;
            }
        }
        c->count[i] = cnt;
        for (int k = cnt; k < c->max; k++) {    /* every byte of the rows is written (reply buffers) */
            size_t r = (size_t)i * c->max + (size_t)k;
            memset(c->pos + 3 * r, 0, 3 * sizeof(float));
            memset(c->normal + 3 * r, 0, 3 * sizeof(float));
            c->impulse[r] = 0;
        }
    }
}

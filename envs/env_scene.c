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
    out->terrain.type = t->type == SIM_TERRAIN_HFIELD ? ENV_TERRAIN_HEIGHTFIELD
                      : t->type == SIM_TERRAIN_CELLS ? ENV_TERRAIN_CELLS : ENV_TERRAIN_PLANE;
    out->terrain.height = t->height;
    if (t->type == SIM_TERRAIN_CELLS) out->terrain.smooth = t->smooth;
    if (t->type != SIM_TERRAIN_PLANE) {
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

/* The sample whose cell holds coordinate v along an axis of n samples from v0, spacing h, clamped to the grid. */
static int region_index(double v, double v0, double h, int n)
{
    double k = floor((v - v0) / h + 0.5);
    return k < 0 ? 0 : k > n - 1 ? n - 1 : (int)k;
}

int env_scene_region(env_scene_t *s, const double box[4], char *err, size_t errlen)
{
    env_scene_terrain *t = &s->terrain;
    for (int i = 0; i < 4; i++)
        if (!isfinite(box[i])) {
            snprintf(err, errlen, "terrain_region[%d] is not finite", i);
            return -1;
        }
    if (box[0] > box[2] || box[1] > box[3]) {
        snprintf(err, errlen, "terrain_region: a minimum exceeds its maximum");
        return -1;
    }
    if (t->type != ENV_TERRAIN_CELLS) return 0;
    const int x0 = region_index(box[0], t->x0, t->dx, t->nx), x1 = region_index(box[2], t->x0, t->dx, t->nx);
    const int y0 = region_index(box[1], t->y0, t->dy, t->ny), y1 = region_index(box[3], t->y0, t->dy, t->ny);
    const double count = (double)(x1 - x0 + 1) * (double)(y1 - y0 + 1);
    if (count > ENV_SCENE_REGION_MAX_SAMPLES) {
        snprintf(err, errlen, "terrain_region [%g, %g, %g, %g] covers %d x %d = %.0f samples of %g x %g m, at most %d",
                 box[0], box[1], box[2], box[3], x1 - x0 + 1, y1 - y0 + 1, count, t->dx, t->dy,
                 ENV_SCENE_REGION_MAX_SAMPLES);
        return -1;
    }
    t->has_region = 1;
    t->rx = x0, t->ry = y0, t->rnx = x1 - x0 + 1, t->rny = y1 - y0 + 1;
    return 0;
}

/* The index of contact (geom, feature) in world d's warm-start cache (the last physics step's contacts), -1 if it
 * had none. */
static int last_contact(const sim_data *d, int geom, int feature)
{
    for (int j = 0; j < d->nprev; j++)
        if (d->prev_key[2 * j] == geom && d->prev_key[2 * j + 1] == feature) return j;
    return -1;
}

/* ENV_CONTACT_STICK or _SLIP of a loaded contact: friction impulse lt (N·s, magnitude), normal impulse ln, friction
 * coefficient mu, sliding speed vt (m/s); env.h states the rule. */
static int contact_mode(double lt, double ln, double mu, double vt)
{
    double gap = mu * ln - lt;
    if (gap < 0) gap = 0;
    return vt > 0 && vt > gap ? ENV_CONTACT_SLIP : ENV_CONTACT_STICK;
}

/* The diagnostics of contact k of the read (row r): state, friction impulse in the world frame, body. */
static void contact_diag(const sim_data *src, const sim_data *d, const sim_contact *k, int j, env_contacts *c,
                         size_t r)
{
    double lt[3] = {0, 0, 0}, ln = 0;
    if (j >= 0) {
        const double *l = src->prev_lambda + 3 * j;
        ln = l[2];
        for (int a = 0; a < 3; a++) lt[a] = l[0] * k->frame[a] + l[1] * k->frame[3 + a];
    }
    if (c->friction)
        for (int a = 0; a < 3; a++) c->friction[3 * r + a] = (float)lt[a];
    if (c->body) c->body[r] = k->body;
    if (!c->state) return;
    if (!(ln > 0)) {
        c->state[r] = ENV_CONTACT_OPEN;
        return;
    }
    /* the contact point's velocity with its body (cvel about d->ref), its part along the ground */
    const double *cv = d->cvel + 6 * k->body, *n = k->frame + 6;
    double v[3], rr[3];
    for (int a = 0; a < 3; a++) rr[a] = k->pos[a] - d->ref[a];
    v[0] = cv[3] + cv[1] * rr[2] - cv[2] * rr[1];
    v[1] = cv[4] + cv[2] * rr[0] - cv[0] * rr[2];
    v[2] = cv[5] + cv[0] * rr[1] - cv[1] * rr[0];
    const double vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    double vt = 0, lm = 0;
    for (int a = 0; a < 3; a++) vt += (v[a] - vn * n[a]) * (v[a] - vn * n[a]), lm += lt[a] * lt[a];
    c->state[r] = (uint8_t)contact_mode(sqrt(lm), ln, k->mu * src->friction_scale, sqrt(vt));
}

/* Each body's joint-limit impulse of world d's last physics step, signed (env.h), into out[nbody]. */
static void limit_impulses(const sim_model *m, const sim_data *d, float *out)
{
    for (int b = 0; b < m->nbody; b++) {
        const int dof = m->body[b].dof;
        out[b] = b > 0 && dof >= 0 && d->njprev
                     ? (float)(d->prev_jlambda[3 * dof] - d->prev_jlambda[3 * dof + 1]) : 0.0f;
    }
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
        if (c->fallback) c->fallback[i] = (uint8_t)(e->worlds[ids ? ids[i] : first + i].last_fallback != 0);
        if (c->limit) limit_impulses(m, src, c->limit + (size_t)i * nb);
        int cnt = 0;
        if ((d.nprev > 0 || c->open) && c->max > 0) {
            sim_velocity(m, &d);
            int nc = sim_collide(m, &d, m->opt.margin, 0.0, d.con, d.ncon_max);
            for (int k = 0; k < nc && cnt < c->max; k++) {
                int j = last_contact(src, d.con[k].geom, d.con[k].feature);
                double lam = j >= 0 ? src->prev_lambda[3 * j + 2] : 0;
                if (!(lam > 0) && !c->open) continue;
                size_t r = (size_t)i * c->max + (size_t)cnt;
                for (int a = 0; a < 3; a++) {
                    c->pos[3 * r + a] = (float)d.con[k].pos[a];
                    c->normal[3 * r + a] = (float)d.con[k].frame[6 + a];
                }
                c->impulse[r] = lam > 0 ? (float)lam : 0.0f;
                contact_diag(src, &d, &d.con[k], j, c, r);
                cnt++;
            }
        }
        c->count[i] = cnt;
        for (int k = cnt; k < c->max; k++) {    /* every byte of the rows is written (reply buffers) */
            size_t r = (size_t)i * c->max + (size_t)k;
            memset(c->pos + 3 * r, 0, 3 * sizeof(float));
            memset(c->normal + 3 * r, 0, 3 * sizeof(float));
            c->impulse[r] = 0;
            if (c->state) c->state[r] = 0;
            if (c->friction) memset(c->friction + 3 * r, 0, 3 * sizeof(float));
            if (c->body) c->body[r] = 0;
        }
    }
}

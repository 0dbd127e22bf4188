/* envs/env_scene.c: a task's scene from its model, body poses and contacts read without stepping, and that
 * reading them leaves the worlds bitwise untouched. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "env_internal.h"
#include "sim_dynamics.h"
#include "sim_math.h"

static env_t *make(const char *name, int n, uint64_t seed)
{
    char err[256];
    env_t *e = env_new(name, n, NULL, 0, seed, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

/* Steps every world of e k times with actions drawn from a fixed sequence (sin of the step and joint). */
static void run(env_t *e, int k, int t0, float *obs, float *rew)
{
    const env_spec *s = env_get_spec(e);
    int n = env_num_worlds(e);
    float *act = malloc(sizeof(float) * (size_t)n * s->act_dim);
    uint8_t *term = malloc((size_t)n), *trunc = malloc((size_t)n);
    for (int t = t0; t < t0 + k; t++) {
        for (int i = 0; i < n * s->act_dim; i++) act[i] = 0.5f * sinf(0.1f * (float)t + 0.7f * (float)i);
        env_step(e, 0, n, NULL, act, obs, rew, term, trunc, NULL);
    }
    free(act), free(term), free(trunc);
}

Test(scene, anymal_scene_follows_the_model)
{
    env_t *e = make("anymal_c-walk", 2, 1);
    env_scene_t *s = malloc(sizeof *s);
    env_scene(e, s);
    const sim_model *m = e->model;
    cr_assert_eq(s->nbody, m->nbody);
    cr_assert_eq(s->ngeom, m->ngeom);
    cr_assert_eq(s->body[0].parent, -1);
    int spheres = 0;
    for (int g = 0; g < s->ngeom; g++) {
        const env_scene_geom *x = &s->geom[g];
        cr_assert_eq(x->type, m->geom[g].type);
        cr_assert_eq(x->body, m->geom[g].body);
        float nq = 0;
        for (int k = 0; k < 4; k++) nq += x->quat[k] * x->quat[k];
        cr_assert_float_eq(nq, 1.0f, 1e-5f);
        /* the quaternion gives back the model's rotation */
        double q[4] = {x->quat[0], x->quat[1], x->quat[2], x->quat[3]}, R[9];
        quat_to_mat(R, q);
        for (int k = 0; k < 9; k++) cr_assert_float_eq(R[k], m->geom[g].rot[k], 1e-6);
        for (int k = 0; k < 3; k++) cr_assert_float_eq(x->pos[k], m->geom[g].pos[k], 1e-6);
        cr_assert_float_eq(x->size[0], m->geom[g].size[0], 1e-7);
        cr_assert_eq(x->rgba[3], 1.0f);
        if (x->type == ENV_PRIM_SPHERE) {
            spheres++;
            cr_assert(x->rgba[0] < 0.2f, "feet are dark");
        }
        if (x->body == 0) cr_assert(x->rgba[0] > 0.8f && x->rgba[2] < 0.3f, "the base is orange");
    }
    cr_assert_eq(spheres, 4);
    cr_assert_eq(s->terrain.type, ENV_TERRAIN_PLANE);
    cr_assert_eq(s->terrain.height, 0.0);
    cr_assert_eq(s->max_contacts, e->worlds[0].d->ncon_max);
    cr_assert_gt(s->max_contacts, 0);
    cr_assert_str_eq(env_prim_name(ENV_PRIM_CAPSULE), "capsule");
    free(s);
    env_destroy(&e);
}

Test(scene, poses_are_the_forward_kinematics_of_the_state)
{
    env_t *e = make("anymal_c-walk", 3, 7);
    const env_spec *sp = env_get_spec(e);
    float *obs = malloc(sizeof(float) * 3 * sp->obs_dim), rew[3];
    env_reset(e, 0, 3, NULL, NULL, obs);
    run(e, 40, 0, obs, rew);
    const sim_model *m = e->model;
    int nb = m->nbody;
    float *pos = malloc(sizeof(float) * 3 * nb * 3), *quat = malloc(sizeof(float) * 3 * nb * 4);
    int32_t ids[3] = {2, 0, 1};
    env_poses(e, 0, 3, ids, pos, quat, NULL);
    sim_data *d = sim_data_new(m);
    for (int i = 0; i < 3; i++) {
        const sim_data *w = e->worlds[ids[i]].d;
        memcpy(d->q, w->q, sizeof(double) * (size_t)m->nq);
        sim_kinematics(m, d);
        const float *p = pos + (size_t)i * nb * 3, *qq = quat + (size_t)i * nb * 4;
        /* the base: its position and quaternion are the free joint's coordinates (up to the sign) */
        for (int k = 0; k < 3; k++) cr_assert_float_eq(p[k], w->q[k], 1e-6);
        double sg = qq[0] * w->q[3] >= 0 ? 1 : -1;
        for (int k = 0; k < 4; k++) cr_assert_float_eq(qq[k], sg * w->q[3 + k], 1e-6);
        for (int b = 0; b < nb; b++) {
            double q[4] = {qq[4 * b], qq[4 * b + 1], qq[4 * b + 2], qq[4 * b + 3]}, R[9];
            quat_to_mat(R, q);
            for (int k = 0; k < 9; k++) cr_assert_float_eq(R[k], d->xrot[9 * b + k], 2e-6, "world %d body %d", ids[i], b);
            for (int k = 0; k < 3; k++) cr_assert_float_eq(p[3 * b + k], d->xpos[3 * b + k], 1e-6);
        }
    }
    /* the same worlds addressed as a range give the same rows */
    float *pos2 = malloc(sizeof(float) * 3 * nb * 3), *quat2 = malloc(sizeof(float) * 3 * nb * 4);
    env_poses(e, 0, 3, NULL, pos2, quat2, NULL);
    cr_assert_eq(memcmp(pos2, pos + (size_t)nb * 3, sizeof(float) * (size_t)nb * 3), 0, "row of world 0");
    cr_assert_eq(memcmp(quat2 + (size_t)2 * nb * 4, quat, sizeof(float) * (size_t)nb * 4), 0, "row of world 2");
    sim_data_destroy(&d);
    free(obs), free(pos), free(quat), free(pos2), free(quat2);
    env_destroy(&e);
}

Test(scene, reading_poses_changes_nothing)
{
    const char *tasks[2] = {"anymal_c-walk", "paper-drop"};
    for (int t = 0; t < 2; t++) {
        env_t *a = make(tasks[t], 4, 99), *b = make(tasks[t], 4, 99);
        const env_spec *sp = env_get_spec(a);
        int nb = a->model->nbody, mc = a->worlds[0].d->ncon_max;
        size_t od = (size_t)sp->obs_dim;
        float *oa = malloc(sizeof(float) * 4 * od), *ob = malloc(sizeof(float) * 4 * od), ra[4], rb[4];
        float *pos = malloc(sizeof(float) * 4 * nb * 3), *quat = malloc(sizeof(float) * 4 * nb * 4);
        int32_t cnt[4];
        float *cp = malloc(sizeof(float) * 4 * mc * 3), *cn = malloc(sizeof(float) * 4 * mc * 3);
        float *ci = malloc(sizeof(float) * 4 * mc);
        env_contacts c = {mc, cnt, cp, cn, ci};
        env_reset(a, 0, 4, NULL, NULL, oa);
        env_reset(b, 0, 4, NULL, NULL, ob);
        for (int k = 0; k < 60; k++) {
            env_poses(a, 0, 4, NULL, pos, quat, &c);     /* only a is looked at, before every step */
            run(a, 1, k, oa, ra);
            run(b, 1, k, ob, rb);
            cr_assert_eq(memcmp(oa, ob, sizeof(float) * 4 * od), 0, "%s: observations differ at step %d", tasks[t], k);
            cr_assert_eq(memcmp(ra, rb, sizeof ra), 0, "%s: rewards differ at step %d", tasks[t], k);
        }
        for (int i = 0; i < 4; i++) {
            const sim_data *x = a->worlds[i].d, *y = b->worlds[i].d;
            cr_assert_eq(memcmp(x->q, y->q, sizeof(double) * (size_t)a->model->nq), 0);
            cr_assert_eq(memcmp(x->u, y->u, sizeof(double) * (size_t)a->model->nv), 0);
            cr_assert_eq(x->nprev, y->nprev);
            cr_assert_eq(memcmp(x->prev_lambda, y->prev_lambda, sizeof(double) * 3 * (size_t)x->nprev), 0);
        }
        free(oa), free(ob), free(pos), free(quat), free(cp), free(cn), free(ci);
        env_destroy(&a);
        env_destroy(&b);
    }
}

Test(scene, a_robot_at_rest_is_carried_by_its_contacts)
{
    env_t *e = make("anymal_c-stand", 2, 3);
    const env_spec *sp = env_get_spec(e);
    size_t od = (size_t)sp->obs_dim;
    float *obs = malloc(sizeof(float) * 2 * od), rew[2];
    env_reset(e, 0, 2, NULL, NULL, obs);
    float act[2 * 12] = {0};
    uint8_t term[2], trunc[2];
    for (int k = 0; k < 150; k++) env_step(e, 0, 2, NULL, act, obs, rew, term, trunc, NULL);
    int nb = e->model->nbody, mc = e->worlds[0].d->ncon_max;
    float *pos = malloc(sizeof(float) * 2 * nb * 3), *quat = malloc(sizeof(float) * 2 * nb * 4);
    int32_t cnt[2];
    float *cp = malloc(sizeof(float) * 2 * mc * 3), *cn = malloc(sizeof(float) * 2 * mc * 3);
    float *ci = malloc(sizeof(float) * 2 * mc);
    memset(ci, 0xff, sizeof(float) * 2 * mc);          /* every byte of the rows is written */
    env_contacts c = {mc, cnt, cp, cn, ci};
    env_poses(e, 0, 2, NULL, pos, quat, &c);
    for (int i = 0; i < 2; i++) {
        cr_assert_geq(cnt[i], 3, "world %d: %d contacts", i, cnt[i]);
        double total = 0;
        for (int k = 0; k < cnt[i]; k++) {
            const float *p = cp + ((size_t)i * mc + k) * 3, *n = cn + ((size_t)i * mc + k) * 3;
            cr_assert(fabsf(p[2]) < 0.01f, "contact on the ground (z = %g)", p[2]);
            cr_assert(n[0] == 0 && n[1] == 0 && n[2] == 1, "the plane's normal");
            cr_assert_gt(ci[(size_t)i * mc + k], 0);
            total += ci[(size_t)i * mc + k];
        }
        for (int k = cnt[i]; k < mc; k++) cr_assert_eq(ci[(size_t)i * mc + k], 0.0f);
        /* at rest the normal impulses carry the weight: sum = m g dt */
        double weight = e->model->total_mass * 9.81 * sp->sim_dt;
        cr_assert(fabs(total - weight) < 0.15 * weight, "world %d: sum of normal impulses %g, m g dt %g", i, total, weight);
    }
    free(obs), free(pos), free(quat), free(cp), free(cn), free(ci);
    env_destroy(&e);
}

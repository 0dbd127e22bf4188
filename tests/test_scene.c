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
        env_contacts c = {.max = mc, .count = cnt, .pos = cp, .normal = cn, .impulse = ci};
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
    env_contacts c = {.max = mc, .count = cnt, .pos = cp, .normal = cn, .impulse = ci};
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

/* The diagnostics of a poses read of e's worlds 0 .. n-1 (env_contacts with every optional row). */
typedef struct {
    int mc, nb;
    int32_t cnt[4];
    float *pos, *quat, *cp, *cn, *ci, *cf, *lim;
    uint8_t *state, fb[4];
    int32_t *body;
    env_contacts c;
} diag_read;

static void diag_poses(env_t *e, int n, diag_read *r)
{
    r->mc = e->worlds[0].d->ncon_max, r->nb = e->model->nbody;
    size_t mc = (size_t)n * r->mc;
    r->pos = malloc(sizeof(float) * n * r->nb * 3), r->quat = malloc(sizeof(float) * n * r->nb * 4);
    r->cp = malloc(sizeof(float) * mc * 3), r->cn = malloc(sizeof(float) * mc * 3), r->ci = malloc(sizeof(float) * mc);
    r->cf = malloc(sizeof(float) * mc * 3), r->lim = malloc(sizeof(float) * n * r->nb);
    r->state = malloc(mc), r->body = malloc(sizeof(int32_t) * mc);
    memset(r->cf, 0xff, sizeof(float) * mc * 3);     /* every byte of the rows is written */
    memset(r->state, 0xff, mc);
    memset(r->body, 0xff, sizeof(int32_t) * mc);
    memset(r->fb, 0xff, sizeof r->fb);
    r->c = (env_contacts){.max = r->mc, .count = r->cnt, .pos = r->cp, .normal = r->cn, .impulse = r->ci, .open = 1,
                          .state = r->state, .friction = r->cf, .body = r->body, .fallback = r->fb, .limit = r->lim};
    env_poses(e, 0, n, NULL, r->pos, r->quat, &r->c);
}

static void diag_free(diag_read *r)
{
    free(r->pos), free(r->quat), free(r->cp), free(r->cn), free(r->ci), free(r->cf), free(r->lim), free(r->state);
    free(r->body);
}

/* At rest (world 0 standing, world 1 lying on its base), every loaded contact sticks: its friction impulse is
 * tangential and inside the cone, its state STICK; open contacts have impulse 0; no fallback answered; rows past count are 0.
 * Read after 190 of the episode's 200 env steps: the lying robot comes to rest after 130 to 150 of them (its base's
 * contacts make a singular Delassus matrix, so which of the Coulomb solutions the stalled steps take, and with it the
 * settling, depends on the solver's search), and the 200th ends the episode (a reset and a new landing). */
Test(scene, a_robot_standing_still_has_sticking_feet)
{
    env_t *e = make("anymal_c-stand", 2, 3);
    const env_spec *sp = env_get_spec(e);
    float *obs = malloc(sizeof(float) * 2 * (size_t)sp->obs_dim), rew[2], act[2 * 12] = {0};
    uint8_t term[2], trunc[2];
    env_reset(e, 0, 2, NULL, NULL, obs);
    for (int k = 0; k < 190; k++) env_step(e, 0, 2, NULL, act, obs, rew, term, trunc, NULL);
    diag_read r;
    diag_poses(e, 2, &r);
    for (int i = 0; i < 2; i++) {
        int stick = 0;
        cr_assert_eq(r.fb[i], 0, "world %d: no fallback answered", i);
        for (int k = 0; k < r.cnt[i]; k++) {
            size_t q = (size_t)i * r.mc + k;
            const float *f = r.cf + 3 * q, *n = r.cn + 3 * q;
            cr_assert(r.body[q] >= 0 && r.body[q] < r.nb, "a body of the robot touches (%d)", r.body[q]);
            cr_assert(fabsf(f[0] * n[0] + f[1] * n[1] + f[2] * n[2]) < 1e-6f, "the friction impulse is tangential");
            if (r.state[q] == ENV_CONTACT_OPEN) {
                cr_assert_eq(r.ci[q], 0.0f, "an open contact has no normal impulse");
                continue;
            }
            cr_assert_gt(r.ci[q], 0);
            cr_assert_eq(r.state[q], ENV_CONTACT_STICK, "world %d contact %d: state %d", i, k, r.state[q]);
            double mu = 0;
            for (int g = 0; g < e->model->ngeom; g++)
                if (e->model->geom[g].friction > mu) mu = e->model->geom[g].friction;
            mu *= e->worlds[i].d->friction_scale;
            cr_assert(sqrtf(f[0] * f[0] + f[1] * f[1]) <= mu * r.ci[q] * 1.001 + 1e-7, "inside the cone");
            stick++;
        }
        cr_assert_geq(stick, 3, "world %d: %d sticking contacts", i, stick);
        for (int k = r.cnt[i]; k < r.mc; k++) {
            size_t q = (size_t)i * r.mc + k;
            cr_assert(r.state[q] == 0 && r.body[q] == 0 && r.cf[3 * q] == 0 && r.cf[3 * q + 2] == 0);
        }
        cr_assert_eq(r.lim[(size_t)i * r.nb], 0.0f, "the root has no joint limit");
    }
    diag_free(&r);
    free(obs);
    env_destroy(&e);
}

/* Pushed sideways at 3 m/s, the feet slide: after one env step most of its loaded contacts slip, and their
 * friction impulses oppose the push (-x). */
Test(scene, a_robot_pushed_sideways_slips)
{
    env_t *e = make("anymal_c-stand", 1, 3);
    const env_spec *sp = env_get_spec(e);
    float *obs = malloc(sizeof(float) * (size_t)sp->obs_dim), rew[1], act[12] = {0};
    uint8_t term[1], trunc[1];
    env_reset(e, 0, 1, NULL, NULL, obs);
    for (int k = 0; k < 150; k++) env_step(e, 0, 1, NULL, act, obs, rew, term, trunc, NULL);
    e->worlds[0].d->u[0] = 3.0;                 /* the base's x velocity, world frame (m/s) */
    env_step(e, 0, 1, NULL, act, obs, rew, term, trunc, NULL);
    diag_read r;
    diag_poses(e, 1, &r);
    int slip = 0;
    for (int k = 0; k < r.cnt[0]; k++) {
        if (r.state[k] != ENV_CONTACT_SLIP) continue;
        cr_assert_gt(r.ci[k], 0);
        cr_assert_gt(r.body[k], 0, "a foot slides");
        const float *f = r.cf + 3 * k;
        cr_assert_lt(f[0], 0, "friction opposes the push");
        slip++;
    }
    cr_assert_geq(slip, 3, "%d slipping contacts", slip);
    diag_free(&r);
    free(obs);
    env_destroy(&e);
}

/* A hip abduction joint (LF_HAA, moving LF_HIP; limits -0.72 .. 0.49 rad) put past its upper limit and driven into
 * it gets the limit row's impulse, reported negative (pushing q down) on that body and nowhere else; past its lower
 * limit, a positive one. */
Test(scene, a_joint_past_its_limit_reports_the_limit_impulse)
{
    for (int side = 0; side < 2; side++) {
        env_t *e = make("anymal_c-stand", 1, 3);
        const env_spec *sp = env_get_spec(e);
        float *obs = malloc(sizeof(float) * (size_t)sp->obs_dim), rew[1], act[12] = {0};
        uint8_t term[1], trunc[1];
        env_reset(e, 0, 1, NULL, NULL, obs);
        for (int k = 0; k < 50; k++) env_step(e, 0, 1, NULL, act, obs, rew, term, trunc, NULL);
        const sim_model *m = e->model;
        int hip = -1;
        for (int b = 0; b < m->nbody; b++)
            if (!strcmp(m->body[b].name, "LF_HIP")) hip = b;
        cr_assert(hip > 0 && sim_model_joint_limited(m, hip), "LF_HAA has a limit");
        sim_data *d = e->worlds[0].d;
        const sim_body *bb = &m->body[hip];
        d->q[bb->qadr] = side ? bb->lower - 0.05 : bb->upper + 0.05;
        d->u[bb->dof] = side ? -1.0 : 1.0;          /* moving further past it ... */
        act[0] = side ? -20.0f : 20.0f;             /* ... and driven into it (LF_HAA, action 0) */
        env_step(e, 0, 1, NULL, act, obs, rew, term, trunc, NULL);
        diag_read r;
        diag_poses(e, 1, &r);
        for (int b = 0; b < r.nb; b++) {
            if (b == hip) {
                cr_assert(side ? r.lim[b] > 0 : r.lim[b] < 0, "side %d: LF_HAA limit impulse %g", side, r.lim[b]);
            } else {
                cr_assert_eq(r.lim[b], 0.0f, "side %d: body %s has limit impulse %g", side, m->body[b].name, r.lim[b]);
            }
        }
        diag_free(&r);
        free(obs);
        env_destroy(&e);
    }
}

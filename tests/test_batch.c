/* sim_batch: several worlds' smooth stages in vector lanes give, bit for bit, what the one-world code gives
 * (sim_smooth + sim_factor_damped + sim_free_velocity, then sim_step), whatever the lane, the batch size or the
 * other worlds of the batch; on ANYmal C (free base, principal axes; joint limits) and on a hand-built model with a
 * fixed base, a prismatic joint, a general axis, rotated joint frames, damping, armature, joint friction and a limit;
 * at random states, at states the fast sincos hands to libm, and along trajectories with contacts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_batch.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double urand(double lo, double hi)
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return lo + (hi - lo) * ((rng_state >> 11) * (1.0 / 9007199254740992.0));
}

static sim_model *anymal(void)
{
    char err[256];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    cr_assert(m, "%s", err);
    m->opt.solver = SIM_SOLVER_COULOMB_STALL_ADMM;
    m->opt.sp.max_iter = 50;
    return m;
}

/* Fixed base; body 1 slides along a general axis, body 2 turns about a general axis in a rotated frame, body 3
 * turns about z, body 4 (on body 1) about x with damping. */
static sim_model *odd_tree(void)
{
    sim_model *m = sim_model_new();
    m->nbody = 5;
    sim_body *b = m->body;
    strcpy(b[0].name, "base");
    b[0].parent = -1, b[0].joint_type = SIM_JOINT_ROOT_FIXED;
    const double c = cos(0.3), s = sin(0.3);
    const double Rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1}, Rx[9] = {1, 0, 0, 0, c, -s, 0, s, c};
    memcpy(b[0].rot, Rx, sizeof Rx);
    b[0].pos[0] = 0.1, b[0].pos[2] = 0.5;
    const int parent[5] = {-1, 0, 1, 2, 1};
    const int type[5] = {0, SIM_JOINT_PRISMATIC, SIM_JOINT_REVOLUTE, SIM_JOINT_CONTINUOUS, SIM_JOINT_REVOLUTE};
    const double axis[5][3] = {{0}, {0.6, 0, 0.8}, {0.48, 0.6, 0.64}, {0, 0, 1}, {1, 0, 0}};
    for (int i = 1; i < 5; i++) {
        snprintf(b[i].name, sizeof b[i].name, "l%d", i);
        snprintf(b[i].joint_name, sizeof b[i].joint_name, "j%d", i);
        b[i].parent = parent[i];
        b[i].joint_type = type[i];
        memcpy(b[i].rot, i == 2 ? Rz : i == 3 ? Rx : (const double[9]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9 * sizeof(double));
        memcpy(b[i].axis, axis[i], sizeof axis[i]);
        b[i].pos[0] = 0.1 * i, b[i].pos[1] = -0.05 * i, b[i].pos[2] = -0.2;
        b[i].mass = 1.0 + 0.5 * i;
        b[i].com[0] = 0.02 * i, b[i].com[2] = -0.1;
        b[i].inertia[0] = 0.01 * i, b[i].inertia[4] = 0.02, b[i].inertia[8] = 0.015;
        b[i].inertia[1] = b[i].inertia[3] = 0.001;
        b[i].lower = -INFINITY, b[i].upper = INFINITY;
        b[i].damping = i == 4 ? 0.7 : 0;
        b[i].armature = i == 2 ? 0.05 : 0;
        b[i].friction = i == 3 ? 0.4 : 0; /* a joint-friction row and (below) a limit row in the contact problem */
        if (i == 4) b[i].lower = -0.5, b[i].upper = 0.25;
    }
    char err[256];
    cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
    return m;
}

static void random_state(const sim_model *m, sim_data *d)
{
    int k0 = 0;
    if (m->floating) {
        d->q[0] = urand(-1, 1), d->q[1] = urand(-1, 1), d->q[2] = urand(0.3, 0.7);
        double qn = 0;
        for (int k = 3; k < 7; k++) d->q[k] = urand(-1, 1), qn += d->q[k] * d->q[k];
        /* some quaternions drifted off the unit sphere (renormalized by the kinematics), some not */
        const double scale = urand(0, 1) < 0.5 ? 1.0 : 1.0 + urand(-1e-6, 1e-6);
        for (int k = 3; k < 7; k++) d->q[k] *= scale / sqrt(qn);
        k0 = 7;
    }
    for (int k = k0; k < m->nq; k++) d->q[k] = urand(-3, 3);
    for (int k = 0; k < m->nv; k++) d->u[k] = urand(-4, 4), d->tau[k] = urand(-60, 60);
    d->root_added_mass = urand(0, 1) < 0.5 ? 0 : urand(-2, 5);
}

static void copy_state(const sim_model *m, sim_data *dst, const sim_data *src)
{
    memcpy(dst->q, src->q, sizeof(double) * (size_t)m->nq);
    memcpy(dst->u, src->u, sizeof(double) * (size_t)m->nv);
    memcpy(dst->tau, src->tau, sizeof(double) * (size_t)m->nv);
    dst->time = src->time;
    dst->root_added_mass = src->root_added_mass;
    dst->friction_scale = src->friction_scale;
    dst->nprev = src->nprev;
    memcpy(dst->prev_key, src->prev_key, sizeof(int) * 2 * (size_t)src->ncon_max);
    memcpy(dst->prev_lambda, src->prev_lambda, sizeof(double) * 3 * (size_t)src->ncon_max);
    dst->njprev = src->njprev;
    memcpy(dst->prev_jlambda, src->prev_jlambda, sizeof(double) * 3 * (size_t)m->nv);
}

static void same(const char *what, const double *a, const double *b, int n, int world, int step)
{
    for (int k = 0; k < n; k++)
        if (memcmp(&a[k], &b[k], sizeof(double)) != 0)
            cr_assert_fail("%s[%d] of world %d (step %d): %.17g (one world) vs %.17g (batch)", what, k, world, step, a[k], b[k]);
}

/* The arrays sim_batch_step copies out of the batch, as the one-world code leaves them (the body poses and velocities
 * only where the ground is not flat: on flat ground the batch finds the contact candidates itself). */
static void same_smooth(const sim_model *m, const sim_data *a, const sim_data *b, int world, int step)
{
    const int nb = m->nbody, nv = m->nv;
    same("ref", a->ref, b->ref, 3, world, step);
    same("cdof", a->cdof, b->cdof, 6 * nv, world, step);
    same("LD", a->LD, b->LD, m->nM, world, step);
    same("ufree", a->ufree, b->ufree, nv, world, step);
    if (m->terrain.type != SIM_TERRAIN_HFIELD) return;
    same("xpos", a->xpos, b->xpos, 3 * nb, world, step);
    same("xrot", a->xrot, b->xrot, 9 * nb, world, step);
    same("cvel", a->cvel, b->cvel, 6 * nb, world, step);
}

/* The whole step's outcome: state, contacts (identity, point, frame, gap) and impulses. */
static void same_step(const sim_model *m, const sim_data *a, const sim_data *b, int world, int step)
{
    same("q", a->q, b->q, m->nq, world, step);
    same("u", a->u, b->u, m->nv, world, step);
    cr_assert_eq(a->ncon, b->ncon, "ncon of world %d (step %d)", world, step);
    for (int c = 0; c < a->ncon; c++) {
        cr_assert_eq(a->con[c].geom, b->con[c].geom, "contact %d of world %d (step %d)", c, world, step);
        cr_assert_eq(a->con[c].feature, b->con[c].feature, "contact %d of world %d (step %d)", c, world, step);
        same("contact pos", a->con[c].pos, b->con[c].pos, 3, world, step);
        same("contact frame", a->con[c].frame, b->con[c].frame, 9, world, step);
        same("contact gap", &a->con[c].gap, &b->con[c].gap, 1, world, step);
    }
    same("lambda", a->lambda, b->lambda, 3 * a->ncon, world, step);
    cr_assert_eq(a->stats.iterations, b->stats.iterations);
}

static void *batch_mem(const sim_model *m)
{
    void *mem = aligned_alloc(64, sim_batch_size(m));
    cr_assert(mem);
    return mem;
}

/* n worlds at random states: batch (n lanes) vs one world at a time, smooth arrays and the whole step. */
static void random_states(sim_model *m, int rounds, double dt)
{
    void *mem = batch_mem(m);
    sim_batch *bt = sim_batch_init(m, mem);
    sim_data *one[SIM_BATCH_LANES], *lane[SIM_BATCH_LANES];
    for (int l = 0; l < SIM_BATCH_LANES; l++) one[l] = sim_data_new(m), lane[l] = sim_data_new(m);
    for (int r = 0; r < rounds; r++) {
        const int n = 1 + r % SIM_BATCH_LANES;
        for (int l = 0; l < n; l++) {
            random_state(m, one[l]);
            copy_state(m, lane[l], one[l]);
        }
        sim_batch_smooth(m, bt, lane, n, dt);
        for (int l = 0; l < n; l++) {
            sim_smooth(m, one[l]);
            sim_factor_damped(m, one[l], dt); /* the step's factor: M + dt diag(damping) */
            sim_free_velocity(m, one[l], dt);
            sim_data *ref = sim_data_new(m);
            copy_state(m, ref, one[l]);
            const int rc1 = sim_step(m, ref, dt);
            int rcb = 0;
            if (r % 2) /* the stages one call each */
                for (int s = SIM_STAGE_NONE; s < SIM_STAGE_INTEGRATE; s++)
                    rcb = sim_batch_step(m, bt, l, lane[l], dt, (sim_stage)s, (sim_stage)(s + 1));
            else
                rcb = sim_batch_step(m, bt, l, lane[l], dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);
            same_smooth(m, one[l], lane[l], l, r);
            same_step(m, ref, lane[l], l, r);
            cr_assert_eq(rc1, rcb);
            sim_data_destroy(&ref);
        }
    }
    for (int l = 0; l < SIM_BATCH_LANES; l++) sim_data_destroy(&one[l]), sim_data_destroy(&lane[l]);
    free(mem);
}

Test(batch, anymal_random_states_bit_for_bit)
{
    sim_model *m = anymal();
    random_states(m, 400, 0.005);
    sim_model_destroy(&m);
}

Test(batch, fixed_base_prismatic_general_axes_bit_for_bit)
{
    sim_model *m = odd_tree();
    random_states(m, 400, 0.002);
    sim_model_destroy(&m);
}

/* Joint angles beyond the fast sincos's range (libm there), NaN included: the lane takes the same path. */
Test(batch, joint_angles_beyond_the_fast_sincos)
{
    sim_model *m = anymal();
    void *mem = batch_mem(m);
    sim_batch *bt = sim_batch_init(m, mem);
    sim_data *one[SIM_BATCH_LANES], *lane[SIM_BATCH_LANES];
    const double odd[] = {1e5, -1e5, 3.3e7, -12345678.9, 99999.99, NAN};
    for (int l = 0; l < SIM_BATCH_LANES; l++) {
        one[l] = sim_data_new(m), lane[l] = sim_data_new(m);
        random_state(m, one[l]);
        one[l]->q[7 + 3 * l] = odd[l];
        if (l == 1) one[l]->q[8] = odd[4];
        if (l == 3) one[l]->q[15] = odd[5];
        copy_state(m, lane[l], one[l]);
    }
    sim_batch_smooth(m, bt, lane, SIM_BATCH_LANES, 0.005);
    for (int l = 0; l < SIM_BATCH_LANES; l++) {
        sim_smooth(m, one[l]);
        sim_factor_damped(m, one[l], 0.005);
        sim_free_velocity(m, one[l], 0.005);
        sim_batch_step(m, bt, l, lane[l], 0.005, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);
        /* the joint axes and positions, as the motion subspaces carry them (the NaN lane's are NaN) */
        same("cdof", one[l]->cdof, lane[l]->cdof, 6 * m->nv, l, 0);
        if (l < 3) same_smooth(m, one[l], lane[l], l, 0);
        sim_data_destroy(&one[l]), sim_data_destroy(&lane[l]);
    }
    free(mem);
    sim_model_destroy(&m);
}

/* ANYmal dropped and held by a PD controller with changing random targets: four worlds stepped 600 times in
 * batches (their lanes rotating every step, a world sometimes alone in a batch) stay bit-identical to the same
 * worlds stepped by sim_step, through contacts, slips and solver fall-backs. */
Test(batch, anymal_trajectories_with_contacts_bit_for_bit, .timeout = 120)
{
    sim_model *m = anymal();
    enum { NW = SIM_BATCH_LANES, STEPS = 600 };
    const double dt = 0.005;
    void *mem = batch_mem(m);
    sim_batch *bt = sim_batch_init(m, mem);
    sim_data *one[NW], *bat[NW];
    double target[NW][12];
    for (int w = 0; w < NW; w++) {
        one[w] = sim_data_new(m), bat[w] = sim_data_new(m);
        sim_data_reset(m, one[w]);
        one[w]->q[2] = 0.55 + 0.05 * w;
        for (int j = 0; j < 12; j++) one[w]->q[7 + j] = (j % 3 == 1 ? 0.4 : j % 3 == 2 ? -0.8 : 0) * (j < 6 ? 1 : -1);
        one[w]->friction_scale = 0.6 + 0.2 * w;
        one[w]->root_added_mass = w - 1.5;
        copy_state(m, bat[w], one[w]);
    }
    long contacts = 0, fallbacks = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int w = 0; w < NW; w++) {
            if (s % 25 == 0)
                for (int j = 0; j < 12; j++) target[w][j] = urand(-1.2, 1.2);
            for (int j = 0; j < 12; j++) {
                const double tq = 80 * (target[w][j] - one[w]->q[7 + j]) - 2 * one[w]->u[6 + j];
                one[w]->tau[6 + j] = bat[w]->tau[6 + j] = tq > 80 ? 80 : tq < -80 ? -80 : tq;
            }
        }
        /* lanes rotate with the step; every fifth step each world goes alone */
        if (s % 5 == 4) {
            for (int w = 0; w < NW; w++) {
                sim_batch_smooth(m, bt, &bat[w], 1, dt);
                sim_batch_step(m, bt, 0, bat[w], dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);
            }
        } else {
            sim_data *order[NW];
            for (int l = 0; l < NW; l++) order[l] = bat[(l + s) % NW];
            sim_batch_smooth(m, bt, order, NW, dt);
            for (int l = 0; l < NW; l++) sim_batch_step(m, bt, l, order[l], dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE);
        }
        for (int w = 0; w < NW; w++) {
            sim_step(m, one[w], dt);
            same_step(m, one[w], bat[w], w, s);
            contacts += one[w]->ncon;
            fallbacks += one[w]->stats.fallback;
        }
    }
    cr_assert_gt(contacts, 4 * STEPS, "the robots should stand on their feet (%ld contacts)", contacts);
    cr_log_info("batch trajectories: %ld contacts, %ld solver fall-backs", contacts, fallbacks);
    for (int w = 0; w < NW; w++) sim_data_destroy(&one[w]), sim_data_destroy(&bat[w]);
    free(mem);
    sim_model_destroy(&m);
}

/* A free body carrying a sphere, a capsule, a box and a cylinder (the last two in rotated frames), with friction. */
static sim_model *four_shapes(void)
{
    sim_model *m = sim_model_new();
    m->body[0] = (sim_body){.name = "body", .parent = -1, .joint_type = SIM_JOINT_FREE, .mass = 3,
                            .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1}, .inertia = {0.05, 0, 0, 0, 0.04, 0, 0, 0, 0.06}};
    const double c = cos(0.4), s = sin(0.4);
    const sim_geom g[4] = {
        {.name = "sphere", .type = SIM_GEOM_SPHERE, .pos = {0.3, 0, 0}, .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1}, .size = {0.1}},
        {.name = "capsule", .type = SIM_GEOM_CAPSULE, .pos = {-0.3, 0, 0}, .rot = {1, 0, 0, 0, c, -s, 0, s, c},
         .size = {0.05, 0.2}},
        {.name = "box", .type = SIM_GEOM_BOX, .pos = {0, 0.3, 0}, .rot = {c, -s, 0, s, c, 0, 0, 0, 1}, .size = {0.1, 0.2, 0.05}},
        {.name = "cylinder", .type = SIM_GEOM_CYLINDER, .pos = {0, -0.3, -0.1}, .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1},
         .size = {0.08, 0.15}}};
    for (int k = 0; k < 4; k++) m->geom[k] = g[k], m->geom[k].friction = 0.6;
    m->nbody = 1;
    m->ngeom = 4;
    char err[256];
    cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
    m->opt.solver = SIM_SOLVER_COULOMB_STALL_ADMM;
    m->opt.sp.max_iter = 50;
    return m;
}

/* Worlds of model m started at random poses near the ground (cylinder caps flat on it among them: a rest-on-rim-
 * points case, and an exactly vertical axis: the parallel-cap case), falling and tumbling for `steps` steps: batched
 * (lanes rotating) vs sim_step, contacts included. */
static void shapes_fall(sim_model *m, int steps, long *contacts, long *rims)
{
    enum { NW = SIM_BATCH_LANES };
    const double dt = 0.002;
    void *mem = batch_mem(m);
    sim_batch *bt = sim_batch_init(m, mem);
    sim_data *one[NW], *bat[NW];
    for (int w = 0; w < NW; w++) {
        one[w] = sim_data_new(m), bat[w] = sim_data_new(m);
        sim_data_reset(m, one[w]);
        one[w]->q[0] = urand(-0.2, 0.2), one[w]->q[1] = urand(-0.2, 0.2), one[w]->q[2] = 0.252 + 0.05 * w; /* w = 0: the cylinder's cap 2 mm above the ground */
        if (w > 0) { /* w = 0 level (the cylinder's axis exactly vertical, its cap flat on the ground) */
            double qn = 0;
            for (int k = 3; k < 7; k++) one[w]->q[k] = k == 3 ? 1 : urand(-0.6, 0.6), qn += one[w]->q[k] * one[w]->q[k];
            for (int k = 3; k < 7; k++) one[w]->q[k] /= sqrt(qn);
        }
        for (int k = 0; k < 6; k++) one[w]->u[k] = urand(-1, 1);
        copy_state(m, bat[w], one[w]);
    }
    for (int s = 0; s < steps; s++) {
        sim_data *order[NW];
        for (int l = 0; l < NW; l++) order[l] = bat[(l + s) % NW];
        sim_batch_smooth(m, bt, order, NW, dt);
        for (int l = 0; l < NW; l++)
            cr_assert_eq(sim_batch_step(m, bt, l, order[l], dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE), 0);
        for (int w = 0; w < NW; w++) {
            cr_assert_eq(sim_step(m, one[w], dt), 0);
            same_step(m, one[w], bat[w], w, s);
            *contacts += one[w]->ncon;
            for (int c = 0; c < one[w]->ncon; c++) *rims += one[w]->con[c].geom == 3 && one[w]->con[c].feature >= 2;
        }
    }
    for (int w = 0; w < NW; w++) sim_data_destroy(&one[w]), sim_data_destroy(&bat[w]);
    free(mem);
}

/* Every geometry type's candidates on a plane (sphere, capsule ends, box corners, cylinder rims with and without a
 * cap facing the ground) give, batched, the contacts sim_collide gives. */
Test(batch, every_geometry_type_on_a_plane_bit_for_bit)
{
    sim_model *m = four_shapes();
    long contacts = 0, rims = 0;
    shapes_fall(m, 300, &contacts, &rims);
    cr_assert_gt(contacts, 300, "the shapes should touch the ground (%ld contacts)", contacts);
    cr_assert_gt(rims, 0, "the cylinder should rest on its rim points at times");
    sim_model_destroy(&m);
}

/* On a height field the batch leaves the collision to sim_collide (the body poses and velocities copied out): the
 * same contacts again. */
Test(batch, height_field_ground_bit_for_bit)
{
    sim_model *m = four_shapes();
    enum { NX = 16, NY = 16 };
    static float h[NX * NY];
    for (int j = 0; j < NY; j++)
        for (int i = 0; i < NX; i++) h[j * NX + i] = (float)(0.03 * sin(0.9 * i) * cos(0.7 * j));
    m->terrain = (sim_terrain){.type = SIM_TERRAIN_HFIELD, .height = 0, .nx = NX, .ny = NY, .x0 = -1.5, .y0 = -1.5,
                               .dx = 0.2, .dy = 0.2, .heights = h};
    long contacts = 0, rims = 0;
    shapes_fall(m, 300, &contacts, &rims);
    cr_assert_gt(contacts, 300, "the shapes should touch the ground (%ld contacts)", contacts);
    sim_model_destroy(&m);
}

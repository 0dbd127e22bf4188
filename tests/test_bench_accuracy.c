/* The accuracy measure of herd-bench env --vs-mujoco (bench/bench_accuracy.h): a configuration's step against its
 * engine's converged step on the same saved states, and the choice of the headline's MuJoCo configuration. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "sim_model.h"
#include "sim_solver.h"
#if HERD_MUJOCO
#include "mj_peer.h"
#endif
#include "bench/bench_accuracy.h"

#define NW 4
#define NSTEPS 8

/* herd's saved states: NW walk worlds after each of NSTEPS env steps of fixed pseudo-random actions (the task's
 * defaults, so the feet are on the ground); the env is returned for its model. */
static env_t *walk_states(sim_data **st)
{
    char err[256];
    env_t *e = env_new("anymal_c-walk", NW, NULL, 0, 3, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    const env_spec *sp = env_get_spec(e);
    float *act = calloc((size_t)NW * sp->act_dim, sizeof(float)), *obs = calloc((size_t)NW * sp->obs_dim, sizeof(float));
    float rew[NW];
    uint8_t term[NW], trunc[NW];
    uint64_t seeds[NW] = {11, 12, 13, 14};
    env_reset(e, 0, NW, NULL, seeds, obs);
    unsigned x = 12345;
    for (int s = 0; s < NSTEPS; s++) {
        for (int k = 0; k < NW * sp->act_dim; k++) act[k] = (float)((x = x * 1103515245u + 12345u) >> 16 & 0x7fff) / 16383.5f - 1;
        env_step(e, 0, NW, NULL, act, obs, rew, term, trunc, NULL);
        for (int i = 0; i < NW; i++) {
            st[s * NW + i] = sim_data_new_shared(env_model(e));   /* the state only: copied, never stepped */
            sim_data_copy_state(env_model(e), st[s * NW + i], env_world_state(e, i));
        }
    }
    free(act);
    free(obs);
    return e;
}

static void free_states(sim_data **st, int n)
{
    for (int k = 0; k < n; k++) sim_data_destroy(&st[k]);
}

Test(bench_accuracy, relative_error)
{
    const double ref[3] = {3, 0, 4}, a[3] = {3, 0, 5}, z[3] = {0, 0, 0};
    cr_assert_float_eq(bench_rel_err(a, ref, 3), 0.2, 1e-15);
    cr_assert_eq(bench_rel_err(ref, ref, 3), 0.0);
    cr_assert_eq(bench_rel_err(z, z, 3), 0.0);
    cr_assert(isinf(bench_rel_err(a, z, 3)));
}

Test(bench_accuracy, pick_is_the_fastest_within_the_bound)
{
    /* times, median impulse errors, eligibility (standing) */
    const double sec[6] = {1.0, 2.0, 3.0, 0.5, 4.0, 2.5};
    const double err[6] = {0.2, 0.009, 0.001, 0.02, 0.0, 0.01};
    const int ok[6] = {1, 1, 1, 1, 1, 0};
    cr_assert_eq(bench_pick_accurate(6, sec, err, ok, 0.01), 1);       /* 0 and 3 are faster but off; 5 does not stand */
    const int ok2[6] = {1, 0, 1, 1, 1, 1};
    cr_assert_eq(bench_pick_accurate(6, sec, err, ok2, 0.01), 5);      /* the bound is inclusive */
    cr_assert_eq(bench_pick_accurate(6, sec, err, ok2, 0.001), 2);
    cr_assert_eq(bench_pick_accurate(6, sec, err, ok2, -1), -1);
    const double nan_err[2] = {NAN, 0.001}, sec2[2] = {0.1, 1};
    const int ok3[2] = {1, 1};
    cr_assert_eq(bench_pick_accurate(2, sec2, nan_err, ok3, 0.01), 1); /* no measurement is not accurate */
}

Test(bench_accuracy, herd_reference_agrees_with_itself_and_one_sweep_is_off, .timeout = 120)
{
    sim_data *st[NW * NSTEPS];
    env_t *e = walk_states(st);
    const sim_model *m = env_model(e);
    const double dt = env_get_spec(e)->sim_dt;
    sim_model *ref = malloc(sizeof *ref), *ref2 = malloc(sizeof *ref2), *one = malloc(sizeof *one);
    *ref = *ref2 = *one = *m;
    ref->opt.sp.tol = 1e-10, ref->opt.sp.max_iter = 10000;
    ref2->opt.sp.tol = 1e-12, ref2->opt.sp.max_iter = 10000;
    one->opt.solver = SIM_SOLVER_PAPER_BISECTION, one->opt.sp.max_iter = 1;
    bench_accuracy self, capped;
    cr_assert_eq(bench_herd_accuracy(ref2, ref, dt, (const sim_data *const *)st, NW * NSTEPS, &self), 0);
    cr_assert_eq(bench_herd_accuracy(one, ref, dt, (const sim_data *const *)st, NW * NSTEPS, &capped), 0);
    cr_assert_eq(self.states, NW * NSTEPS);
    cr_assert_geq(self.contact_states, NW * NSTEPS / 2, "%d states with contacts", self.contact_states);
    cr_assert_lt(self.impulse_p90, 1e-6, "converged at two tolerances: %g", self.impulse_p90);
    cr_assert_lt(self.velocity_p90, 1e-6, "%g", self.velocity_p90);
    cr_assert_gt(capped.impulse_median, 1e-4, "one sweep of paper-bisection: %g", capped.impulse_median);
    cr_assert_gt(capped.impulse_p90, 100 * self.impulse_p90 + 1e-3);
    cr_assert_gt(capped.velocity_median, self.velocity_median);
    free(ref), free(ref2), free(one);
    free_states(st, NW * NSTEPS);
    env_destroy(&e);
}

#if HERD_MUJOCO
Test(bench_accuracy, mujoco_reference_agrees_with_itself_and_one_iteration_is_off, .timeout = 120)
{
    sim_data *st[NW * NSTEPS];
    env_t *e = walk_states(st);
    const sim_model *hm = env_model(e);
    char err[512];
    mj_peer *p = mj_peer_new_with_floor("envs/models/anymal_c.urdf", hm, MJ_PEER_FLOOR_PLANE, err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    mj_peer_adopt_inertia(p, hm);
    mj_peer_copy_damping(p, hm);
    p->m->opt.timestep = env_get_spec(e)->sim_dt;
    p->m->opt.cone = mjCONE_ELLIPTIC;
    /* MuJoCo's states: from each herd state with its applied force held, MuJoCo's own steps (its soft contacts settle
     * deeper than herd's), the state before each of steps 3 .. 6 saved */
    enum { NS = NW * NSTEPS * 4 };
    const int size = bench_mj_state_size(p->m);
    double *snap = calloc((size_t)NS * size, sizeof(double));
    int n = 0;
    for (int s = 0; s < NW * NSTEPS; s++) {
        mj_resetData(p->m, p->d);
        mj_peer_set_state(p, st[s]->q, st[s]->u);
        mj_peer_set_force(p, st[s]->tau);
        for (int k = 0; k < 7; k++) {
            if (k >= 3) bench_mj_save_state(p->m, p->d, snap + (size_t)n++ * size);
            mj_step(p->m, p->d);
        }
    }
    const bench_mj_cfg ref = {mjSOL_NEWTON, 1000, mjCONE_ELLIPTIC, 1e-10}, ref2 = {mjSOL_NEWTON, 1000, mjCONE_ELLIPTIC, 1e-13},
                       one = {mjSOL_PGS, 1, mjCONE_ELLIPTIC, 1e-8};
    bench_accuracy self, capped;
    cr_assert_eq(bench_mj_accuracy(p->m, snap, n, &ref2, &ref, &self), 0);
    cr_assert_eq(bench_mj_accuracy(p->m, snap, n, &one, &ref, &capped), 0);
    cr_assert_eq(p->m->opt.solver, mjSOL_NEWTON, "the model's options are restored");
    cr_assert_eq(self.states, n);
    cr_assert_geq(self.contact_states, n / 2, "%d of %d states with contacts", self.contact_states, n);
    cr_assert_lt(self.impulse_median, 1e-6, "converged at two tolerances: %g", self.impulse_median);
    cr_assert_lt(self.velocity_median, 1e-6, "%g", self.velocity_median);
    cr_assert_gt(capped.impulse_median, 0.05, "one PGS iteration: %g", capped.impulse_median);
    cr_assert_gt(capped.impulse_median, 1000 * self.impulse_median);
    cr_assert_gt(capped.velocity_median, 100 * self.velocity_median);
    free(snap);
    mj_peer_destroy(&p);
    free_states(st, NW * NSTEPS);
    env_destroy(&e);
}
#else
Test(bench_accuracy, mujoco_reference_agrees_with_itself_and_one_iteration_is_off)
{
    cr_skip_test("built without MuJoCo (MUJOCO=no, or libmujoco-dev absent): not compared");
}
#endif

/* envs/env_scenario (and the ANYmal module and random streams under it): the paper scenarios'
 * reset states, scripted PD targets and torques, collision sets, resets, and determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "env_anymal_model.h"
#include "env_rng.h"
#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_step.h"

typedef struct {
    sim_model *m;
    sim_data *d;
    env_scenario s;
} rig;

static rig mkrig(int kind, uint64_t seed)
{
    rig r;
    char err[256];
    r.m = env_anymal_load(err, sizeof err);
    cr_assert_not_null(r.m, "%s", err);
    cr_assert_eq(env_scenario_configure_model(r.m, kind, err, sizeof err), 0, "%s", err);
    r.d = sim_data_new(r.m);
    cr_assert_not_null(r.d);
    cr_assert_eq(env_scenario_init(&r.s, r.m, r.d, kind, seed, err, sizeof err), 0, "%s", err);
    return r;
}

static void freerig(rig *r)
{
    sim_data_destroy(&r->d);
    sim_model_destroy(&r->m);
}

/* the nominal pose, written out: HAA 0, HFE +0.4 front / -0.4 hind, KFE -0.8 front / +0.8 hind */
static double nominal(int i)
{
    int l = i / 3, j = i % 3, front = l < 2;
    return j == 0 ? 0 : j == 1 ? (front ? 0.4 : -0.4) : (front ? -0.8 : 0.8);
}

/* joint i's addresses, looked up by name in the test (LF RF LH RH x HAA HFE KFE) */
static void joint(const sim_model *m, int i, int *qadr, int *dof)
{
    const char *legs[4] = {"LF", "RF", "LH", "RH"}, *js[3] = {"HAA", "HFE", "KFE"};
    char nm[16];
    snprintf(nm, sizeof nm, "%s_%s", legs[i / 3], js[i % 3]);
    int b = sim_model_joint(m, nm);
    cr_assert_geq(b, 0, "%s", nm);
    *qadr = m->body[b].qadr;
    *dof = m->body[b].dof;
}

/* PD law with legged_gym's ANYmal C gains: Kp 80, Kd 2, |tau| <= 80 */
static double pd_ref(double target, double q, double qd)
{
    double t = 80 * (target - q) - 2 * qd;
    return fmax(-80, fmin(80, t));
}

Test(scenario, names_round_trip)
{
    const char *names[] = {"trot", "hang", "drop", "random", "stand"};
    for (int k = 0; k < ENV_SCN_COUNT; k++) {
        cr_assert_str_eq(env_scenario_name(k), names[k]);
        cr_assert_eq(env_scenario_kind_from_name(names[k]), k);
    }
    cr_assert_eq(env_scenario_kind_from_name("walk"), -1);
    cr_assert_eq(env_scenario_kind_from_name(NULL), -1);
    cr_assert_str_eq(env_scenario_name(ENV_SCN_COUNT), "?");
}

Test(scenario, collision_sets)
{
    char err[256];
    for (int k = 0; k < ENV_SCN_COUNT; k++) {
        sim_model *m = env_anymal_load(err, sizeof err);
        cr_assert_not_null(m, "%s", err);
        cr_assert_eq(env_scenario_configure_model(m, k, err, sizeof err), 0, "%s", err);
        int feet = 0, base = 0, other = 0;
        for (int g = 0; g < m->ngeom; g++) {
            if (m->geom[g].nocollide) continue;
            const char *bn = m->body[m->geom[g].body].name;
            if (m->geom[g].type == SIM_GEOM_SPHERE && strstr(bn, "SHANK")) feet++;
            else if (m->geom[g].body == 0 && m->geom[g].type == SIM_GEOM_BOX) base++;
            else other++;
        }
        cr_assert_eq(feet, 4, "%s", env_scenario_name(k));
        cr_assert_eq(base, k == ENV_SCN_HANG ? 0 : 1, "%s", env_scenario_name(k));
        cr_assert_eq(other, 0, "%s: legs must not collide", env_scenario_name(k));
        sim_model_destroy(&m);
    }
    sim_model *m = env_anymal_load(err, sizeof err);
    cr_assert_neq(env_scenario_configure_model(m, ENV_SCN_COUNT, err, sizeof err), 0);
    cr_assert(strstr(err, "unknown scenario"), "%s", err);
    sim_model_destroy(&m);
}

Test(scenario, reset_state)
{
    const double height[ENV_SCN_COUNT] = {0.58, 1.0, 1.0, 0.7, 0.6};
    for (int k = 0; k < ENV_SCN_COUNT; k++) {
        rig r = mkrig(k, 5);
        for (int step = 0; step < 2; step++) {
            /* first the state after init, then after an explicit reset of a moved world */
            const sim_data *d = r.d;
            cr_assert_float_eq(d->q[2], height[k], 1e-15, "%s height", env_scenario_name(k));
            cr_assert_eq(d->q[0], 0); cr_assert_eq(d->q[1], 0);
            cr_assert_eq(d->q[3], 1); cr_assert_eq(d->q[4], 0); cr_assert_eq(d->q[5], 0); cr_assert_eq(d->q[6], 0);
            for (int v = 0; v < r.m->nv; v++)
                cr_assert_eq(d->u[v], k == ENV_SCN_DROP && v == 0 ? 1.0 : 0.0, "%s u[%d]", env_scenario_name(k), v);
            for (int i = 0; i < 12; i++) {
                int qa, dof;
                joint(r.m, i, &qa, &dof);
                cr_assert_eq(d->q[qa], nominal(i), "%s joint %d", env_scenario_name(k), i);
                cr_assert_eq(r.s.target[i], nominal(i));
                cr_assert_eq(r.s.offset[i], 0);
            }
            cr_assert_eq(r.s.t_episode, 0);
            cr_assert_eq(r.s.resets, step);
            for (int i = 0; i < 50; i++) {
                env_scenario_control(&r.s, r.m, r.d, 1e-3);
                sim_step(r.m, r.d, 1e-3);
            }
            env_scenario_reset(&r.s, r.m, r.d);
        }
        freerig(&r);
    }
}

/* stand and drop hold the nominal pose: tau is the PD law toward it, plus the offsets */
Test(scenario, stand_pd_torques_with_offsets)
{
    rig r = mkrig(ENV_SCN_STAND, 1);
    for (int i = 0; i < 12; i++) r.s.offset[i] = 0.01 * (i - 6);
    for (int step = 0; step < 300; step++) {
        env_scenario_control(&r.s, r.m, r.d, 1e-3);
        for (int i = 0; i < 12; i++) {
            int qa, dof;
            joint(r.m, i, &qa, &dof);
            double want = pd_ref(nominal(i) + 0.01 * (i - 6), r.d->q[qa], r.d->u[dof]);
            cr_assert_float_eq(r.d->tau[dof], want, 1e-9, "step %d joint %d", step, i);
        }
        for (int v = 0; v < 6; v++) cr_assert_eq(r.d->tau[v], 0, "the base is not actuated");
        cr_assert_eq(sim_step(r.m, r.d, 1e-3), 0);
    }
    cr_assert_eq(r.s.resets, 0, "stand never resets");
    freerig(&r);
}

Test(scenario, hang_is_unactuated)
{
    rig r = mkrig(ENV_SCN_HANG, 1);
    for (int step = 0; step < 200; step++) {
        for (int v = 0; v < r.m->nv; v++) r.d->tau[v] = 1.0;
        env_scenario_control(&r.s, r.m, r.d, 1e-3);
        for (int v = 0; v < r.m->nv; v++) cr_assert_eq(r.d->tau[v], 0);
        sim_step(r.m, r.d, 1e-3);
    }
    cr_assert_eq(r.s.resets, 0);
    freerig(&r);
}

/* The world positions of the four foot spheres' centres (LF RF LH RH), from the kinematics of d->q. */
static void feet(const sim_model *m, sim_data *d, double p[4][3])
{
    sim_kinematics(m, d);
    for (int g = 0; g < m->ngeom; g++) {
        int leg;
        if (env_anymal_geom_kind(m, g, &leg) == ENV_GEOM_FOOT) sim_point_world(m, d, m->geom[g].body, m->geom[g].pos, p[leg]);
    }
}

/* trot: four feet down while standing, then diagonal pairs (LF+RH, RF+LH) alternate, half a period
 * (0.15 s) each: at the middle of a pair's swing its feet are off the ground (4 mm at least) and the
 * other pair's are on it (the sphere's centre at its radius, 3 cm).  The torques are the scenario's PD on the targets the controller wrote. */
Test(scenario, trot_diagonal_pairs)
{
    rig r = mkrig(ENV_SCN_TROT, 1);
    const double dt = 1e-3;
    double p[4][3];
    int checked = 0;
    for (int step = 1; step <= 3000; step++) {
        env_scenario_control(&r.s, r.m, r.d, dt);
        for (int i = 0; i < 12; i++) {
            int qa, dof;
            joint(r.m, i, &qa, &dof);
            cr_assert_float_eq(r.d->tau[dof], pd_ref(r.s.target[i], r.d->q[qa], r.d->u[dof]), 1e-9);
        }
        cr_assert_eq(sim_step(r.m, r.d, dt), 0);
        /* gait time since the stand; LF+RH swing in [0.15, 0.3) of each 0.3 s cycle, RF+LH in [0, 0.15) */
        long g = step - 300;
        if (step == 250) {
            feet(r.m, r.d, p);
            for (int l = 0; l < 4; l++) cr_assert_lt(p[l][2], 0.031, "standing: foot %d at %g m", l, p[l][2]);
        }
        if (g > 600 && (g % 300 == 225 || g % 300 == 75)) {
            int up_pair = g % 300 == 225 ? 0 : 1;   /* 0: LF+RH swinging */
            feet(r.m, r.d, p);
            for (int l = 0; l < 4; l++) {
                int pair = (l == 0 || l == 3) ? 0 : 1;
                if (pair == up_pair)
                    cr_assert_gt(p[l][2], 0.034, "step %d: swinging foot %d at %g m", step, l, p[l][2]);
                else
                    cr_assert_lt(p[l][2], 0.031, "step %d: stance foot %d at %g m", step, l, p[l][2]);
            }
            checked++;
        }
    }
    cr_assert_gt(checked, 10);
    cr_assert_eq(r.s.resets, 0, "the trot fell within 3 s");
    /* the guard: a base below 0.25 m resets the world */
    r.d->q[2] = 0.2;
    env_scenario_control(&r.s, r.m, r.d, dt);
    cr_assert_eq(r.s.resets, 1);
    cr_assert_float_eq(r.d->q[2], 0.58, 1e-15);
    freerig(&r);
}

/* The trot trots: 20 s at 1 ms without a reset, heading straight, at a mean
 * forward speed within 10 % of its 1.5 m/s target (the mean includes the 0.3 s stand and the 1 s
 * ramp). */
static void trot_20s(int solver)
{
    rig r = mkrig(ENV_SCN_TROT, 1);
    r.m->opt.solver = solver;
    const double dt = 1e-3;
    const long n = 20000;
    double vsum = 0;
    for (long step = 0; step < n; step++) {
        env_scenario_control(&r.s, r.m, r.d, dt);
        cr_assert_eq(sim_step(r.m, r.d, dt), 0, "solver %d: physics failed at %g s", solver, step * dt);
        vsum += r.d->u[0];
    }
    double vmean = vsum / n;
    cr_assert_eq(r.s.resets, 0, "solver %s: %ld resets in 20 s", sim_solver_at(solver)->name, r.s.resets);
    cr_assert(fabs(vmean - ENV_TROT_SPEED) <= 0.1 * ENV_TROT_SPEED, "solver %d: mean forward speed %g m/s", solver, vmean);
    cr_assert_float_eq(r.d->q[0], vmean * n * dt, 0.05 * r.d->q[0], "solver %d: x %g", solver, r.d->q[0]);
    cr_assert_lt(fabs(r.d->q[1]), 1.0, "solver %d: drifted sideways %g m", solver, r.d->q[1]);
    freerig(&r);
}

/* the default solver of the paper-trot task (its spec's "solver" default), and PGS */
Test(scenario, trot_20s_default_solver, .timeout = 120)
{
    const env_spec *s = env_registry_spec(env_registry_find("paper-trot"));
    cr_assert_not_null(s);
    int solver = -1;
    for (int i = 0; i < s->nconfig; i++)
        if (!strcmp(s->config[i].key, "solver")) solver = (int)s->config[i].def;
    cr_assert_geq(solver, 0);
    trot_20s(solver);
}
/* and the other solvers it trots with ("pgs", the NCP-PGS that runs to its 150-sweep cap on every step of this
 * scenario and does not keep the trot up for 20 s, is left out) */
Test(scenario, trot_20s_other_solvers, .timeout = 240)
{
    const char *names[] = {"coulomb-bisection", "admm", "coulomb-stall-admm", "pgs-hwangbo"};
    int ran = 0;
    for (int i = 0; i < 4; i++)
        if (sim_solver_find(names[i])) {
            trot_20s(sim_solver_index(names[i]));
            ran++;
        }
    cr_assert_geq(ran, 1);
}

/* random: targets ~ N(nominal, 1 rad^2) clipped to the limits, held 50 ms, reset every 5 s */
Test(scenario, random_targets_and_resets, .timeout = 60)
{
    rig r = mkrig(ENV_SCN_RANDOM, 99);
    const double dt = 1e-3;
    double held[12], sum = 0, sumsq = 0;
    long n = 0, draws = 0;
    int qa[12], dof[12];
    for (int i = 0; i < 12; i++) joint(r.m, i, &qa[i], &dof[i]);
    for (int step = 1; step <= 5200; step++) {
        double t_target = r.s.t_target;
        env_scenario_control(&r.s, r.m, r.d, dt);
        int drawn = r.s.t_target != t_target;
        if (step > 1 && !drawn) {
            for (int i = 0; i < 12; i++) cr_assert_eq(r.s.target[i], held[i], "targets changed within 50 ms");
        }
        if (drawn) {
            draws++;
            cr_assert_float_eq(r.s.t_target, r.s.t_episode + 0.05, 1e-12);
            for (int i = 0; i < 12; i++) {
                double x = r.s.target[i] - nominal(i);
                cr_assert(r.s.target[i] >= r.s.joints.lower[i] && r.s.target[i] <= r.s.joints.upper[i]);
                if (r.s.target[i] > r.s.joints.lower[i] && r.s.target[i] < r.s.joints.upper[i]) {
                    sum += x;
                    sumsq += x * x;
                    n++;
                }
            }
        }
        for (int i = 0; i < 12; i++) {
            held[i] = r.s.target[i];
            cr_assert_float_eq(r.d->tau[dof[i]], pd_ref(r.s.target[i], r.d->q[qa[i]], r.d->u[dof[i]]), 1e-9);
        }
        sim_step(r.m, r.d, dt);
        if (step == 4999) cr_assert_eq(r.s.resets, 0);
    }
    cr_assert_eq(r.s.resets, 1, "reset at 5 s");
    cr_assert_geq(draws, 100);
    /* unclipped draws: mean near 0, spread near (but, truncated by the limits, at most) 1 rad */
    double mean = sum / n, sd = sqrt(sumsq / n - mean * mean);
    cr_log_info("random targets: %ld unclipped, mean %.3f, sd %.3f rad", n, mean, sd);
    cr_assert_lt(fabs(mean), 0.15);
    cr_assert(sd > 0.5 && sd < 1.05, "sd %g", sd);
    freerig(&r);
}

Test(scenario, drop_resets_once_still, .timeout = 60)
{
    rig r = mkrig(ENV_SCN_DROP, 1);
    int step = 0;
    for (; step < 8000 && r.s.resets == 0; step++) {
        env_scenario_control(&r.s, r.m, r.d, 1e-3);
        if (r.s.resets) break;
        sim_step(r.m, r.d, 1e-3);
    }
    cr_assert_eq(r.s.resets, 1, "the drop never came to rest");
    cr_assert_gt(step, 1000, "reset before the robot landed and stood still for 0.5 s (step %d)", step);
    cr_assert_float_eq(r.d->q[2], 1.0, 1e-15);
    cr_assert_eq(r.d->u[0], 1.0);
    freerig(&r);
}

static void run_trace(int kind, uint64_t seed, int steps, double *out)
{
    rig r = mkrig(kind, seed);
    for (int s = 0; s < steps; s++) {
        env_scenario_control(&r.s, r.m, r.d, 1e-3);
        sim_step(r.m, r.d, 1e-3);
    }
    memcpy(out, r.d->q, sizeof(double) * (size_t)r.m->nq);
    memcpy(out + r.m->nq, r.d->u, sizeof(double) * (size_t)r.m->nv);
    freerig(&r);
}

Test(scenario, deterministic, .timeout = 60)
{
    double a[64], b[64], c[64];
    for (int k = 0; k < ENV_SCN_COUNT; k++) {
        run_trace(k, 7, 400, a);
        run_trace(k, 7, 400, b);
        cr_assert_eq(memcmp(a, b, sizeof(double) * 37), 0, "%s is not bitwise reproducible", env_scenario_name(k));
    }
    run_trace(ENV_SCN_RANDOM, 8, 400, c);
    cr_assert_neq(memcmp(a, c, sizeof(double) * 37), 0, "random: the seed does not matter");
}

/* env_rng_seeded(s) is splitmix64 from state s: the known first output for state 0 is
 * 0xE220A8397B1DCDAF; a uniform is its top 53 bits over 2^53. */
Test(scenario, rng_is_splitmix64)
{
    env_rng r = env_rng_seeded(0);
    cr_assert_eq(env_rng_uniform(&r), (double)(0xE220A8397B1DCDAFull >> 11) / 9007199254740992.0);
    /* streams are values: a copy continues identically; distinct (seed, world, episode) differ */
    env_rng x = env_rng_for(1, 2, 3), y = x, z = env_rng_for(1, 2, 4), w = env_rng_for(1, 3, 3);
    double ux = env_rng_uniform(&x);
    cr_assert_eq(ux, env_rng_uniform(&y));
    cr_assert_neq(ux, env_rng_uniform(&z));
    cr_assert_neq(ux, env_rng_uniform(&w));
    for (int i = 0; i < 1000; i++) {
        double u = env_rng_range(&x, -2, 3);
        cr_assert(u >= -2 && u < 3);
    }
    /* n draws of 2 u - 1 at once: the bits of n single draws, the stream where n single draws leave it */
    for (int n = 0; n < 300; n += 1 + n / 8) {
        env_rng p = env_rng_for(9, (uint64_t)n, 2), q = p;
        double batch[300];
        env_rng_signed(&p, batch, n);
        for (int i = 0; i < n; i++) {
            const double one = 2 * env_rng_uniform(&q) - 1;
            cr_assert(batch[i] >= -1 && batch[i] < 1);
            cr_assert_eq(memcmp(&batch[i], &one, sizeof one), 0, "draw %d of %d: %.17g vs %.17g", i, n, batch[i], one);
        }
        cr_assert_eq(env_rng_uniform(&p), env_rng_uniform(&q), "the stream after %d draws", n);
    }
    /* mean + normal: the same two draws as env_rng_normal (the streams stay aligned); around 0 it is
     * the plain draw, elsewhere it is mean + draw up to one rounding (fused where the target has FMA) */
    env_rng a = env_rng_seeded(5), b = a;
    for (int i = 0; i < 100; i++) {
        double mean = i ? 0.25 * (i % 7) - 0.8 : 0;
        double got = env_rng_normal_around(&a, mean), plain = env_rng_normal(&b);
        if (mean == 0) cr_assert_eq(got, plain);
        cr_assert_float_eq(got, mean + plain, 1e-15, "draw %d", i);
        cr_assert_eq(a.ctr, b.ctr);
    }
}

/* sim_data_copy_state (sim_model.h): a copy of a trotting world, into a world with its own scratch and into a shared
 * one, steps on bit for bit as the original: the state, the warm-start cache and the per-world parameters all come
 * along, and the copies' arrays stay their own. */
Test(data, copy_state_steps_on_bit_for_bit)
{
    rig r = mkrig(ENV_SCN_TROT, 3);
    r.d->friction_scale = 0.85;
    r.d->root_added_mass = 1.25;
    for (int i = 0; i < 400; i++) {
        env_scenario_control(&r.s, r.m, r.d, 1e-3);
        cr_assert_eq(sim_step(r.m, r.d, 1e-3), 0);
    }
    cr_assert_gt(r.d->nprev, 0, "no contact to warm-start from");
    sim_data *own = sim_data_new(r.m), *shared = sim_data_new_shared(r.m);
    cr_assert(own && shared);
    sim_data_copy_state(r.m, own, r.d);
    sim_data_copy_state(r.m, shared, r.d);
    cr_assert(own->q != r.d->q && own->prev_lambda != r.d->prev_lambda && own->xpos != r.d->xpos);
    cr_assert(shared->xpos == NULL && shared->q != r.d->q, "a shared world's copy has no scratch bound");
    cr_assert_eq(own->nprev, r.d->nprev);
    cr_assert_eq(own->friction_scale, 0.85);
    cr_assert_eq(shared->root_added_mass, 1.25);
    void *scratch = aligned_alloc(64, (sim_scratch_size(r.m) + 63) / 64 * 64);
    cr_assert_not_null(scratch);
    sim_data_bind_scratch(r.m, shared, scratch);
    sim_data *w[3] = {r.d, own, shared};
    for (int i = 0; i < 200; i++)
        for (int k = 0; k < 3; k++) cr_assert_eq(sim_step(r.m, w[k], 1e-3), 0);   /* the torques stay as copied */
    for (int k = 1; k < 3; k++) {
        cr_assert(!memcmp(w[k]->q, r.d->q, sizeof(double) * (size_t)r.m->nq), "copy %d: q differs", k);
        cr_assert(!memcmp(w[k]->u, r.d->u, sizeof(double) * (size_t)r.m->nv), "copy %d: u differs", k);
        cr_assert_eq(w[k]->nprev, r.d->nprev, "copy %d", k);
    }
    free(scratch);
    sim_data_destroy(&own);
    sim_data_destroy(&shared);
    freerig(&r);
}

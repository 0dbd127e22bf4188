/* envs/: registry, configuration, determinism, randomization, layout, rewards, termination,
 * physics-failure isolation and autoreset modes of the ANYmal tasks. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "env_internal.h"
#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_math.h"
#include "sim_solver.h"

typedef struct {
    float *obs, *act, *rew, *fobs, *terms;
    uint8_t *term, *trunc, *preset, *done;
    int n, od, ad, nt;
} bufs;

static bufs mkbufs(const env_t *e)
{
    const env_spec *s = env_get_spec(e);
    bufs b;
    b.n = env_num_worlds(e);
    b.od = s->obs_dim; b.ad = s->act_dim; b.nt = s->nterms;
    b.obs = calloc((size_t)b.n * b.od, 4); b.fobs = calloc((size_t)b.n * b.od, 4);
    b.act = calloc((size_t)b.n * b.ad, 4); b.rew = calloc((size_t)b.n, 4);
    b.terms = calloc((size_t)b.n * b.nt, 4);
    b.term = calloc((size_t)b.n, 1); b.trunc = calloc((size_t)b.n, 1);
    b.preset = calloc((size_t)b.n, 1); b.done = calloc((size_t)b.n, 1);
    return b;
}
static void freebufs(bufs *b)
{
    free(b->obs); free(b->fobs); free(b->act); free(b->rew); free(b->terms);
    free(b->term); free(b->trunc); free(b->preset); free(b->done);
}

static env_t *mk(const char *name, int n, const env_kv *kv, int nkv, env_autoreset mode)
{
    char err[512];
    env_t *e = env_new(name, n, kv, nkv, 1234, mode, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

/* deterministic pseudo-random actions, independent of the env */
static void actions(float *a, int n, int ad, int step)
{
    for (int i = 0; i < n * ad; i++) {
        unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u);
        x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        a[i] = (float)((x % 2001) / 1000.0 - 1.0);
    }
}

/* ---------------------------------------------------------------- determinism */

typedef struct {
    env_t *e;
    int first, n, step;
    bufs *b;
    env_info info;
} slice_job;

static void *run_slice(void *p)
{
    slice_job *j = p;
    bufs *b = j->b;
    env_info info = {0};
    info.reward_terms = b->terms + (size_t)j->first * b->nt;
    info.final_obs = b->fobs + (size_t)j->first * b->od;
    env_step(j->e, j->first, j->n, NULL, b->act + (size_t)j->first * b->ad, b->obs + (size_t)j->first * b->od,
             b->rew + j->first, b->term + j->first, b->trunc + j->first, &info);
    return NULL;
}

/* Runs `steps` steps of a fresh env split into nthreads contiguous slices; returns a hash of every
 * output byte (observations, rewards, flags, reward terms, final observations). */
static void run_split(const char *name, int n, int nthreads, const int *cuts, int steps, unsigned char **out, size_t *len)
{
    env_kv kv[] = {{"episode_seconds", 0.5}};
    env_t *e = mk(name, n, kv, 1, ENV_AUTORESET_SAME_STEP);
    bufs b = mkbufs(e);
    env_reset(e, 0, n, NULL, NULL, b.obs);
    size_t per = (size_t)n * (b.od * 8 + 4 + 2 + b.nt * 4);
    *len = per * (size_t)steps;
    *out = malloc(*len);
    unsigned char *p = *out;
    for (int s = 0; s < steps; s++) {
        actions(b.act, n, b.ad, s);
        pthread_t th[8];
        slice_job jobs[8];
        for (int t = 0; t < nthreads; t++) {
            jobs[t].e = e; jobs[t].first = cuts[t]; jobs[t].n = cuts[t + 1] - cuts[t]; jobs[t].b = &b;
            pthread_create(&th[t], NULL, run_slice, &jobs[t]);
        }
        for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
        memcpy(p, b.obs, (size_t)n * b.od * 4); p += (size_t)n * b.od * 4;
        memcpy(p, b.fobs, (size_t)n * b.od * 4); p += (size_t)n * b.od * 4;
        memcpy(p, b.rew, (size_t)n * 4); p += (size_t)n * 4;
        memcpy(p, b.term, (size_t)n); p += n;
        memcpy(p, b.trunc, (size_t)n); p += n;
        memcpy(p, b.terms, (size_t)n * b.nt * 4); p += (size_t)n * b.nt * 4;
    }
    freebufs(&b);
    env_destroy(&e);
}

Test(env, deterministic_across_threads_and_splits, .timeout = 120)
{
    const char *names[] = {"anymal_c-walk", "anymal_c-stand"};
    for (int k = 0; k < 2; k++) {
        const int n = 24, steps = 60; /* episodes of 25 steps: resets happen inside the run */
        int one[] = {0, n}, two[] = {0, 12, n}, odd[] = {0, 5, 19, n};
        unsigned char *a, *b, *c;
        size_t la, lb, lc;
        run_split(names[k], n, 1, one, steps, &a, &la);
        run_split(names[k], n, 2, two, steps, &b, &lb);
        run_split(names[k], n, 3, odd, steps, &c, &lc);
        cr_assert_eq(la, lb);
        cr_assert_eq(memcmp(a, b, la), 0, "%s: 1 vs 2 threads differ", names[k]);
        cr_assert_eq(memcmp(a, c, la), 0, "%s: different slice splits differ", names[k]);
        free(a); free(b); free(c);
    }
}

/* Stepping a subset by ids gives the same bytes as stepping those worlds in a full batch. */
Test(env, subset_by_ids_matches_full_batch)
{
    env_kv kv[] = {{"obs_noise", 1}};
    env_t *e1 = mk("anymal_c-walk", 8, kv, 1, ENV_AUTORESET_NEXT_STEP), *e2 = mk("anymal_c-walk", 8, kv, 1, ENV_AUTORESET_NEXT_STEP);
    bufs b1 = mkbufs(e1), b2 = mkbufs(e2);
    env_reset(e1, 0, 8, NULL, NULL, b1.obs);
    env_reset(e2, 0, 8, NULL, NULL, b2.obs);
    int32_t ids[] = {6, 1, 3};
    for (int s = 0; s < 20; s++) {
        actions(b1.act, 8, b1.ad, s);
        env_step(e1, 0, 8, NULL, b1.act, b1.obs, b1.rew, b1.term, b1.trunc, NULL);
        float sub[3 * 12];
        for (int i = 0; i < 3; i++) memcpy(sub + 12 * i, b1.act + 12 * ids[i], 12 * 4);
        env_step(e2, 0, 3, ids, sub, b2.obs, b2.rew, b2.term, b2.trunc, NULL);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(memcmp(b2.obs + 48 * i, b1.obs + 48 * ids[i], 48 * 4), 0, "step %d world %d", s, ids[i]);
            cr_assert_eq(memcmp(&b2.rew[i], &b1.rew[ids[i]], 4), 0);
        }
    }
    freebufs(&b1); freebufs(&b2);
    env_destroy(&e1); env_destroy(&e2);
}

/* An explicitly seeded world draws the same stream whatever its index (worlds spread over servers). */
Test(env, explicit_seeds_independent_of_index)
{
    env_t *a = mk("anymal_c-walk", 4, NULL, 0, ENV_AUTORESET_NEXT_STEP), *b = mk("anymal_c-walk", 4, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    bufs ba = mkbufs(a), bb = mkbufs(b);
    uint64_t sa[4] = {100, 101, 102, 103}, sb[4] = {103, 102, 101, 100};
    env_reset(a, 0, 4, NULL, sa, ba.obs);
    env_reset(b, 0, 4, NULL, sb, bb.obs);
    for (int i = 0; i < 4; i++) cr_assert_eq(memcmp(ba.obs + 48 * i, bb.obs + 48 * (3 - i), 48 * 4), 0);
    freebufs(&ba); freebufs(&bb);
    env_destroy(&a); env_destroy(&b);
}

/* ---------------------------------------------------------------- randomization */

Test(env, randomization_varies_within_ranges)
{
    env_kv kv[] = {{"friction_min", 0.3}, {"friction_max", 0.9}, {"added_mass_min", -3}, {"added_mass_max", 4}};
    const int n = 64;
    env_t *e = mk("anymal_c-walk", n, kv, 4, ENV_AUTORESET_NEXT_STEP);
    bufs b = mkbufs(e);
    double foot_mu = 0;
    for (int g = 0; g < e->model->ngeom; g++)
        if (e->model->geom[g].type == SIM_GEOM_SPHERE) foot_mu = e->model->geom[g].friction;
    double mu0[64], m0[64];
    env_reset(e, 0, n, NULL, NULL, b.obs);
    double mulo = 1e9, muhi = -1e9, mlo = 1e9, mhi = -1e9;
    for (int i = 0; i < n; i++) {
        const sim_data *d = e->worlds[i].d;
        mu0[i] = d->friction_scale * foot_mu;
        m0[i] = d->root_added_mass;
        mulo = fmin(mulo, mu0[i]); muhi = fmax(muhi, mu0[i]);
        mlo = fmin(mlo, m0[i]); mhi = fmax(mhi, m0[i]);
        cr_assert(mu0[i] >= 0.3 && mu0[i] <= 0.9, "friction %g out of range", mu0[i]);
        cr_assert(m0[i] >= -3 && m0[i] <= 4, "added mass %g out of range", m0[i]);
    }
    cr_assert_gt(muhi - mulo, 0.4, "friction barely varies across worlds");
    cr_assert_gt(mhi - mlo, 5, "added mass barely varies across worlds");
    env_reset(e, 0, n, NULL, NULL, b.obs);
    int changed = 0;
    for (int i = 0; i < n; i++) changed += e->worlds[i].d->friction_scale * foot_mu != mu0[i] && e->worlds[i].d->root_added_mass != m0[i];
    cr_assert_eq(changed, n, "a reset kept the previous draw");
    /* initial states and commands differ across worlds */
    cr_assert_neq(memcmp(b.obs, b.obs + 48, 48 * 4), 0);
    freebufs(&b);
    env_destroy(&e);
}

/* ---------------------------------------------------------------- layout */

Test(env, observation_layout_matches_spec)
{
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        int covered = 0;
        for (int i = 0; i < s->nobs; i++) {
            cr_assert_eq(s->obs[i].offset, covered, "%s: field %s not contiguous", s->name, s->obs[i].name);
            covered += s->obs[i].size;
        }
        cr_assert_eq(covered, s->obs_dim, "%s", s->name);
        cr_assert_eq(s->act[0].size, s->act_dim);
        cr_assert_float_eq(s->control_dt, s->sim_dt * s->decimation, 1e-12);
    }
    const env_spec *w = env_registry_spec(env_registry_find("anymal_c-walk"));
    cr_assert_eq(w->obs_dim, 48);
    env_kv kv[] = {{"obs_noise", 0}, {"init_noise", 0.5}};
    env_t *e = mk("anymal_c-walk", 3, kv, 2, ENV_AUTORESET_NEXT_STEP);
    bufs b = mkbufs(e);
    env_reset(e, 0, 3, NULL, NULL, b.obs);
    actions(b.act, 3, 12, 1);
    env_step(e, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
    for (int i = 0; i < 3; i++) {
        const sim_data *d = e->worlds[i].d;
        const float *o = b.obs + 48 * i;
        double R[9], vb[3], g[3];
        quat_to_mat(R, d->q + 3);
        m3_tmulv(vb, R, d->u);
        g[0] = -R[6]; g[1] = -R[7]; g[2] = -R[8];
        for (int k = 0; k < 3; k++) {
            cr_assert_float_eq(o[k], 2.0 * vb[k], 1e-5, "base_lin_vel");
            cr_assert_float_eq(o[3 + k], 0.25 * d->u[3 + k], 1e-5, "base_ang_vel");
            cr_assert_float_eq(o[6 + k], g[k], 1e-6, "projected_gravity");
        }
        /* dof_pos / dof_vel in LF RF LH RH x HAA HFE KFE order */
        const char *legs[4] = {"LF", "RF", "LH", "RH"}, *js[3] = {"HAA", "HFE", "KFE"};
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < 3; j++) {
                char nm[16];
                snprintf(nm, sizeof nm, "%s_%s", legs[l], js[j]);
                int body = sim_model_joint(e->model, nm);
                double def = j == 0 ? 0 : j == 1 ? (l < 2 ? 0.4 : -0.4) : (l < 2 ? -0.8 : 0.8);
                cr_assert_float_eq(o[12 + 3 * l + j], d->q[e->model->body[body].qadr] - def, 1e-6, "%s pos", nm);
                cr_assert_float_eq(o[24 + 3 * l + j], 0.05 * d->u[e->model->body[body].dof], 1e-5, "%s vel", nm);
                cr_assert_float_eq(o[36 + 3 * l + j], b.act[12 * i + 3 * l + j], 0, "%s action", nm);
            }
    }
    freebufs(&b);
    env_destroy(&e);
}

/* ---------------------------------------------------------------- rewards */

/* legged_gym's ANYmal C flat-task reward terms, written out from their definitions with the scales of
 * its config, each computed from the world's state before and after the step (never from the env's
 * own constants): every term is scale * control dt * value.  One physics substep per env step, so
 * that the torques are exactly the PD law applied to the state before the step. */
typedef struct {
    double air[4];
    int last_contact[4];
    float prev_act[12];
    double cmd[3];      /* from the observation before the step: command_lin_vel / 2, command_yaw_rate / 0.25 */
} walk_ref;

/* base frame: R (body -> world) from the wxyz quaternion at q[3..6] */
static void ref_rot(const double *q, double R[3][3])
{
    double w = q[3], x = q[4], y = q[5], z = q[6];
    R[0][0] = 1 - 2 * (y * y + z * z); R[0][1] = 2 * (x * y - w * z);     R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z);     R[1][1] = 1 - 2 * (x * x + z * z); R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y);     R[2][1] = 2 * (y * z + w * x);     R[2][2] = 1 - 2 * (x * x + y * y);
}

static int joint_index(const sim_model *m, int l, int j)
{
    const char *legs[4] = {"LF", "RF", "LH", "RH"}, *js[3] = {"HAA", "HFE", "KFE"};
    char nm[16];
    snprintf(nm, sizeof nm, "%s_%s", legs[l], js[j]);
    return sim_model_joint(m, nm);
}

/* The default angle of joint j (HAA, HFE, KFE) of leg l (LF, RF, LH, RH): HAA 0, HFE 0.4 front / -0.4 hind, KFE -0.8
 * front / 0.8 hind (rad); and the PD torque the task applies there (kp 80, kd 2, action scale 0.5, clamped to
 * 80 N m) from the action and the state before the physics substep. */
static double ref_default_angle(int l, int j) { return j == 0 ? 0 : j == 1 ? (l < 2 ? 0.4 : -0.4) : (l < 2 ? -0.8 : 0.8); }

static double ref_pd_torque(const sim_model *m, int l, int j, const float *act, const double *q0, const double *u0)
{
    const double kp = 80, kd = 2, tau_max = 80, action_scale = 0.5;
    const int b = joint_index(m, l, j), qa = m->body[b].qadr, dof = m->body[b].dof;
    double tau = kp * (action_scale * act[3 * l + j] + ref_default_angle(l, j) - q0[qa]) - kd * u0[dof];
    return fmax(-tau_max, fmin(tau_max, tau));
}

static void ref_walk_terms(const env_t *e, const sim_data *d, const double *q0, const double *u0, const float *act,
                           walk_ref *ref, double out[10])
{
    const sim_model *m = e->model;
    const double dt = 0.005, sim_dt = 0.005;
    double R[3][3], v[3] = {0}, w[3], g[3];
    ref_rot(d->q, R);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) v[r] += R[c][r] * d->u[c];     /* v_base = R^T v_world */
        w[r] = d->u[3 + r];                                           /* already in the base frame */
        g[r] = -R[2][r];                                              /* R^T (0, 0, -1) */
    }
    const double *cmd = ref->cmd;
    double lin_err = (cmd[0] - v[0]) * (cmd[0] - v[0]) + (cmd[1] - v[1]) * (cmd[1] - v[1]);
    double torques = 0, dof_acc = 0, rate = 0;
    for (int l = 0; l < 4; l++)
        for (int j = 0; j < 3; j++) {
            int k = 3 * l + j, dof = m->body[joint_index(m, l, j)].dof;
            double tau = ref_pd_torque(m, l, j, act, q0, u0);
            torques += tau * tau;
            dof_acc += ((d->u[dof] - u0[dof]) / dt) * ((d->u[dof] - u0[dof]) / dt);
            rate += ((double)act[k] - ref->prev_act[k]) * ((double)act[k] - ref->prev_act[k]);
        }
    /* contact forces of the step (N): impulses over the physics step, from the world's warm-start
     * cache (the step's contacts, which outlives the step's scratch) */
    double foot_fz[4] = {0};
    int collisions = 0;
    for (int c = 0; c < d->nprev; c++) {
        const sim_geom *G = &m->geom[d->prev_key[2 * c]];
        const char *bn = m->body[G->body].name;
        const double *lam = d->prev_lambda + 3 * c;
        double fn = lam[2] / sim_dt, ft = hypot(lam[0], lam[1]) / sim_dt;
        int foot = G->type == SIM_GEOM_SPHERE && strstr(bn, "SHANK");
        if (foot) {
            for (int l = 0; l < 4; l++)
                if (!strncmp(bn, l == 0 ? "LF" : l == 1 ? "RF" : l == 2 ? "LH" : "RH", 2)) foot_fz[l] += fn;
        } else if ((strstr(bn, "THIGH") || strstr(bn, "SHANK")) && hypot(fn, ft) > 0.1) {
            collisions++;
        }
    }
    /* feet air time (legged_gym: contact filtered over two steps, rewarded at first contact) */
    double air = 0;
    for (int f = 0; f < 4; f++) {
        int contact = foot_fz[f] > 1.0, filt = contact || ref->last_contact[f];
        ref->last_contact[f] = contact;
        int first = ref->air[f] > 0 && filt;
        ref->air[f] += dt;
        if (first) air += ref->air[f] - 0.5;
        if (filt) ref->air[f] = 0;
    }
    if (!(hypot(cmd[0], cmd[1]) > 0.1)) air = 0;
    out[0] = 1.0 * dt * exp(-lin_err / 0.25);                             /* tracking_lin_vel, sigma 0.25 */
    out[1] = 0.5 * dt * exp(-(cmd[2] - w[2]) * (cmd[2] - w[2]) / 0.25);   /* tracking_ang_vel */
    out[2] = -2.0 * dt * v[2] * v[2];                                    /* lin_vel_z */
    out[3] = -0.05 * dt * (w[0] * w[0] + w[1] * w[1]);                   /* ang_vel_xy */
    out[4] = -5.0 * dt * (g[0] * g[0] + g[1] * g[1]);                    /* orientation */
    out[5] = -2.5e-5 * dt * torques;                                     /* torques */
    out[6] = -2.5e-7 * dt * dof_acc;                                     /* dof_acc */
    out[7] = -0.01 * dt * rate;                                          /* action_rate */
    out[8] = -1.0 * dt * collisions;                                     /* collision (leg contacts > 0.1 N) */
    out[9] = 2.0 * dt * air;                                             /* feet_air_time */
    memcpy(ref->prev_act, act, sizeof ref->prev_act);
}
Test(env, walk_rewards_match_hand_computation, .timeout = 60)
{
    /* the PD actuator, whose torques ref_pd_torque computes by hand */
    env_kv kv[] = {{"obs_noise", 0}, {"only_positive_rewards", 0}, {"push_interval_s", 0}, {"decimation", 1}, {"actuator", 0}};
    enum { N = 3, STEPS = 200 };
    env_t *e = mk("anymal_c-walk", N, kv, 5, ENV_AUTORESET_NEXT_STEP);
    cr_assert_float_eq(env_get_spec(e)->control_dt, 0.005, 1e-15);
    bufs b = mkbufs(e);
    uint8_t ar[N], pr[N];
    env_info info = {0};
    info.reward_terms = b.terms;
    info.autoreset = ar;
    info.physics_reset = pr;
    env_reset(e, 0, N, NULL, NULL, b.obs);
    /* world 2 starts low, its thighs and shanks in the ground: leg collisions */
    e->worlds[2].d->q[2] = 0.25;
    const int nq = e->model->nq, nv = e->model->nv;
    double q0[N][64], u0[N][64];
    walk_ref ref[N];
    memset(ref, 0, sizeof ref);
    int nonzero[10] = {0}, compared = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N; i++) {
            memcpy(q0[i], e->worlds[i].d->q, sizeof(double) * (size_t)nq);
            memcpy(u0[i], e->worlds[i].d->u, sizeof(double) * (size_t)nv);
            const float *o = b.obs + 48 * i;
            ref[i].cmd[0] = o[9] / 2.0; ref[i].cmd[1] = o[10] / 2.0; ref[i].cmd[2] = o[11] / 0.25;
        }
        actions(b.act, N, 12, s);
        env_step(e, 0, N, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
        for (int i = 0; i < N; i++) {
            if (ar[i] || pr[i]) {   /* reset instead of stepped: the reference starts over */
                memset(&ref[i], 0, sizeof ref[i]);
                continue;
            }
            double want[10], sum = 0;
            ref_walk_terms(e, e->worlds[i].d, q0[i], u0[i], b.act + 12 * i, &ref[i], want);
            const float *t = b.terms + 10 * i;
            for (int k = 0; k < 10; k++) {
                cr_assert(fabs(t[k] - want[k]) <= 1e-7 + 1e-5 * fabs(want[k]), "step %d world %d term %s: %.9g, by hand %.9g",
                          s, i, env_get_spec(e)->terms[k], t[k], want[k]);
                nonzero[k] += want[k] != 0;
                sum += t[k];
            }
            cr_assert_float_eq(b.rew[i], sum, 1e-6, "reward is the sum of its terms");
            compared++;
        }
    }
    for (int k = 0; k < 10; k++) cr_assert_gt(nonzero[k], 0, "term %s was never exercised", env_get_spec(e)->terms[k]);
    cr_assert_gt(compared, N * STEPS / 2);
    freebufs(&b);
    env_destroy(&e);
}

/* The stand task's reward terms, written out from their documented definitions (env_anymal.c) from the
 * world's state before and after the step: c = cos(tilt) of the base's z axis, from the quaternion as
 * cos(2 asin |(x, y)|); u = max(c, 0); the penalties are gated by u^4; each term is scale * control dt * value.  One physics substep per
 * env step, so the torques are exactly the PD law applied to the state before the step. */
static void ref_stand_terms(const env_t *e, const sim_data *d, const double *q0, const double *u0, const float *act,
                            const float *prev_act, double out[8])
{
    const sim_model *m = e->model;
    const double dt = 0.005, target = 0.5;
    double R[3][3], v[3] = {0}, w[3];
    ref_rot(d->q, R);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) v[r] += R[c][r] * d->u[c];
        w[r] = d->u[3 + r];
    }
    double qn = sqrt(d->q[3] * d->q[3] + d->q[4] * d->q[4] + d->q[5] * d->q[5] + d->q[6] * d->q[6]);
    double tilt = 2 * asin(fmin(1.0, hypot(d->q[4], d->q[5]) / qn));   /* angle between base z and world z */
    double c = cos(tilt), u = c > 0 ? c : 0, dz = d->q[2] - target, g4 = u * u * u * u;
    double torques = 0, pose = 0, rate = 0;
    for (int l = 0; l < 4; l++)
        for (int j = 0; j < 3; j++) {
            int k = 3 * l + j, qa = m->body[joint_index(m, l, j)].qadr;
            double tau = ref_pd_torque(m, l, j, act, q0, u0), def = ref_default_angle(l, j);
            torques += tau * tau;
            pose += (d->q[qa] - def) * (d->q[qa] - def);
            rate += ((double)act[k] - prev_act[k]) * ((double)act[k] - prev_act[k]);
        }
    out[0] = 2.0 * dt * exp(-(dz / 0.1) * (dz / 0.1)) * u;                 /* height, counts when upright */
    out[1] = 3.0 * dt * (1 - tilt / M_PI);                                 /* upright, linear in the tilt */
    out[2] = 2.0 * dt * (fabs(dz) <= 0.05 && c >= 0.9);                   /* standing */
    out[3] = -0.1 * dt * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * g4;   /* lin_vel */
    out[4] = -0.05 * dt * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * g4;  /* ang_vel */
    out[5] = -0.05 * dt * pose * g4;                                        /* pose */
    out[6] = -1e-5 * dt * torques * g4;                                     /* torques */
    out[7] = -0.005 * dt * rate * g4;                                       /* action_rate */
}
Test(env, stand_rewards_match_hand_computation, .timeout = 60)
{
    /* half the worlds start fallen: every tilt from upright to on the back is visited */
    env_kv kv[] = {{"obs_noise", 0}, {"decimation", 1}, {"fallen_prob", 0.5}};
    enum { N = 8, STEPS = 300, NT = 8 };
    env_t *e = mk("anymal_c-stand", N, kv, 3, ENV_AUTORESET_NEXT_STEP);
    cr_assert_eq(env_get_spec(e)->nterms, NT);
    bufs b = mkbufs(e);
    uint8_t ar[N], pr[N];
    env_info info = {0};
    info.reward_terms = b.terms;
    info.autoreset = ar;
    info.physics_reset = pr;
    env_reset(e, 0, N, NULL, NULL, b.obs);
    const int nq = e->model->nq, nv = e->model->nv;
    double q0[N][64], u0[N][64];
    float prev[N][12];
    memset(prev, 0, sizeof prev);
    int nonzero[NT] = {0}, compared = 0, gated = 0, on_back = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N; i++) {
            memcpy(q0[i], e->worlds[i].d->q, sizeof(double) * (size_t)nq);
            memcpy(u0[i], e->worlds[i].d->u, sizeof(double) * (size_t)nv);
        }
        actions(b.act, N, 12, s);
        for (int i = 0; i < N * 12; i++) b.act[i] *= (float)(0.2 + 0.8 * ((s / 50) % 2));   /* calm and lively phases */
        env_step(e, 0, N, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
        for (int i = 0; i < N; i++) {
            if (ar[i] || pr[i]) {
                memset(prev[i], 0, sizeof prev[i]);
                continue;
            }
            double want[NT], sum = 0;
            ref_stand_terms(e, e->worlds[i].d, q0[i], u0[i], b.act + 12 * i, prev[i], want);
            memcpy(prev[i], b.act + 12 * i, sizeof prev[i]);
            const float *t = b.terms + NT * i;
            for (int k = 0; k < NT; k++) {
                cr_assert(fabs(t[k] - want[k]) <= 1e-7 + 1e-5 * fabs(want[k]), "step %d world %d term %s: %.9g, by hand %.9g",
                          s, i, env_get_spec(e)->terms[k], t[k], want[k]);
                nonzero[k] += want[k] != 0;
                sum += t[k];
            }
            cr_assert_float_eq(b.rew[i], sum, 1e-6, "reward is the sum of its terms");
            gated += want[6] == 0;                  /* tilted past 90 degrees: no penalties */
            on_back += want[1] < 3.0 * 0.25 * 0.005;  /* tilted more than 135 degrees: upright still pays */
            cr_assert_gt(want[1], 0, "upright pays something at every tilt short of 180 degrees");
            compared++;
        }
    }
    for (int k = 0; k < NT; k++) cr_assert_gt(nonzero[k], 0, "term %s was never exercised", env_get_spec(e)->terms[k]);
    cr_assert_gt(gated, 0, "no step tilted past 90 degrees");
    cr_assert_gt(on_back, 0, "no step tilted past 135 degrees");
    cr_assert_gt(compared, N * STEPS / 2);
    freebufs(&b);
    env_destroy(&e);
}

/* ---------------------------------------------------------------- standing, termination, truncation */

Test(env, pd_stand_upright_20s_at_5ms, .timeout = 120)
{
    env_kv kv[] = {{"obs_noise", 0}, {"init_noise", 0}, {"push_interval_s", 0}, {"friction_min", 1}, {"friction_max", 1},
                   {"added_mass_min", 0}, {"added_mass_max", 0}, {"actuator", 0}};
    env_t *e = mk("anymal_c-walk", 4, kv, 8, ENV_AUTORESET_NEXT_STEP);
    cr_assert_float_eq(env_get_spec(e)->sim_dt, 0.005, 0);
    bufs b = mkbufs(e);
    env_reset(e, 0, 4, NULL, NULL, b.obs);
    double zmin = 1e9, zmax = 0, upmin = 1, pen = 0;
    for (int s = 0; s < 1000; s++) { /* 20 s */
        memset(b.act, 0, sizeof(float) * 48); /* targets = default pose */
        env_step(e, 0, 4, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(b.term[i], 0, "terminated at step %d", s);
            if (s < 999) cr_assert_eq(b.trunc[i], 0, "truncated early at step %d", s);
            const sim_data *d = e->worlds[i].d;
            if (s > 50) { zmin = fmin(zmin, d->q[2]); zmax = fmax(zmax, d->q[2]); }
            upmin = fmin(upmin, -b.obs[48 * i + 8]);
            pen = fmax(pen, d->stats.penetration);
        }
    }
    cr_assert_eq(b.trunc[0], 1, "20 s episode did not truncate at step 1000");
    cr_log_info("PD stand at 5 ms for 20 s: base height %.4f..%.4f m, min uprightness %.5f, penetration %.3g m", zmin, zmax, upmin, pen);
    cr_assert_gt(zmin, 0.45);
    cr_assert_lt(zmax - zmin, 0.01, "base height drifts");
    cr_assert_gt(upmin, 0.99);
    cr_assert_lt(pen, 2e-3);
    freebufs(&b);
    env_destroy(&e);
}

/* The 5 ms contact step agrees with 1 ms on the settled stance (accuracy at the task's dt). */
Test(env, five_ms_matches_one_ms_stance, .timeout = 60)
{
    double z[2];
    for (int k = 0; k < 2; k++) {
        env_kv kv[] = {{"obs_noise", 0}, {"init_noise", 0}, {"push_interval_s", 0}, {"friction_min", 1}, {"friction_max", 1},
                       {"added_mass_min", 0}, {"added_mass_max", 0}, {"sim_dt", k ? 0.001 : 0.005}, {"decimation", k ? 20 : 4}};
        env_t *e = mk("anymal_c-walk", 1, kv, 9, ENV_AUTORESET_NEXT_STEP);
        bufs b = mkbufs(e);
        env_reset(e, 0, 1, NULL, NULL, b.obs);
        for (int s = 0; s < 150; s++) env_step(e, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
        z[k] = e->worlds[0].d->q[2];
        freebufs(&b);
        env_destroy(&e);
    }
    cr_log_info("settled base height: %.5f m at 5 ms, %.5f m at 1 ms", z[0], z[1]);
    cr_assert_lt(fabs(z[0] - z[1]), 2e-3);
}

Test(env, terminates_on_base_contact_and_truncates_at_limit)
{
    env_kv kv[] = {{"episode_seconds", 0.2}};
    env_t *e = mk("anymal_c-walk", 2, kv, 1, ENV_AUTORESET_NEXT_STEP);
    cr_assert_eq(env_get_spec(e)->max_episode_steps, 10);
    bufs b = mkbufs(e);
    env_info info = {0};
    info.episode_done = b.done;
    float ret[2];
    int32_t len[2];
    info.episode_return = ret;
    info.episode_length = len;
    env_reset(e, 0, 2, NULL, NULL, b.obs);
    /* world 1 upside down just above the ground: its base box lands */
    sim_data *d = e->worlds[1].d;
    d->q[2] = 0.12; d->q[3] = 0; d->q[4] = 1; d->q[5] = 0; d->q[6] = 0;
    int term_step = -1, trunc_step = -1;
    for (int s = 0; s < 10; s++) {
        env_step(e, 0, 2, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
        if (b.term[1] && term_step < 0) { term_step = s; cr_assert_eq(b.done[1], 1); cr_assert_eq(len[1], s + 1); }
        if (b.trunc[0]) { trunc_step = s; cr_assert_eq(b.term[0], 0); cr_assert_eq(len[0], 10); }
    }
    cr_assert_geq(term_step, 0, "base contact did not terminate");
    cr_assert_lt(term_step, 5);
    cr_assert_eq(trunc_step, 9, "time limit truncation at step %d", trunc_step);
    freebufs(&b);
    env_destroy(&e);
}

/* ---------------------------------------------------------------- failure isolation, autoreset */

Test(env, physics_failure_resets_only_that_world)
{
    env_t *a = mk("anymal_c-walk", 4, NULL, 0, ENV_AUTORESET_NEXT_STEP), *c = mk("anymal_c-walk", 4, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    bufs ba = mkbufs(a), bc = mkbufs(c);
    uint8_t preset[4];
    env_info info = {0};
    info.physics_reset = preset;
    env_reset(a, 0, 4, NULL, NULL, ba.obs);
    env_reset(c, 0, 4, NULL, NULL, bc.obs);
    for (int s = 0; s < 5; s++) {
        actions(ba.act, 4, 12, s);
        memcpy(bc.act, ba.act, 4 * 12 * 4);
        if (s == 2) a->worlds[2].d->u[7] = NAN;
        if (s == 3) a->worlds[1].d->u[0] = 1e9;
        env_step(a, 0, 4, NULL, ba.act, ba.obs, ba.rew, ba.term, ba.trunc, &info);
        env_step(c, 0, 4, NULL, bc.act, bc.obs, bc.rew, bc.term, bc.trunc, NULL);
        if (s == 2) { cr_assert_eq(preset[2], 1); cr_assert_eq(ba.trunc[2], 1); }
        if (s == 3) { cr_assert_eq(preset[1], 1); }
        for (int k = 0; k < 4 * 48; k++) cr_assert(isfinite(ba.obs[k]));
        /* untouched worlds are bitwise unaffected */
        cr_assert_eq(memcmp(ba.obs, bc.obs, 48 * 4), 0);
        cr_assert_eq(memcmp(ba.obs + 3 * 48, bc.obs + 3 * 48, 48 * 4), 0);
    }
    freebufs(&ba); freebufs(&bc);
    env_destroy(&a); env_destroy(&c);
}

Test(env, autoreset_modes)
{
    env_kv kv[] = {{"episode_seconds", 0.1}};
    /* same step: the step that ends returns the new episode's observation and the final one in info */
    env_t *s = mk("anymal_c-walk", 1, kv, 1, ENV_AUTORESET_SAME_STEP);
    bufs b = mkbufs(s);
    env_info info = {0};
    info.final_obs = b.fobs;
    info.episode_done = b.done;
    env_reset(s, 0, 1, NULL, NULL, b.obs);
    for (int k = 0; k < 5; k++) env_step(s, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    cr_assert_eq(b.trunc[0], 1);
    cr_assert_eq(b.done[0], 1);
    cr_assert_neq(memcmp(b.obs, b.fobs, 48 * 4), 0, "final observation equals the reset one");
    cr_assert_eq(s->worlds[0].steps, 0, "world not reset in the same step");
    freebufs(&b);
    env_destroy(&s);
    /* next step: the step after the end resets, ignores the action, reward 0 */
    env_t *n = mk("anymal_c-walk", 1, kv, 1, ENV_AUTORESET_NEXT_STEP);
    b = mkbufs(n);
    env_reset(n, 0, 1, NULL, NULL, b.obs);
    for (int k = 0; k < 5; k++) env_step(n, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
    cr_assert_eq(b.trunc[0], 1);
    actions(b.act, 1, 12, 3);
    env_step(n, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
    cr_assert_eq(b.rew[0], 0);
    cr_assert_eq(b.trunc[0] | b.term[0], 0);
    cr_assert_eq(n->worlds[0].steps, 0);
    for (int k = 36; k < 48; k++) cr_assert_eq(b.obs[k], 0, "reset observation carries old actions");
    freebufs(&b);
    env_destroy(&n);
    /* disabled: an ended world is refused until reset */
    env_t *d = mk("anymal_c-walk", 1, kv, 1, ENV_AUTORESET_DISABLED);
    b = mkbufs(d);
    env_reset(d, 0, 1, NULL, NULL, b.obs);
    int refused = 0;
    for (int k = 0; k < 6; k++) refused += env_step(d, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
    cr_assert_eq(refused, 1);
    env_reset(d, 0, 1, NULL, NULL, b.obs);
    cr_assert_eq(env_step(d, 0, 1, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL), 0);
    freebufs(&b);
    env_destroy(&d);
}

/* ---------------------------------------------------------------- configuration errors */

/* The env owns "world ended": the autoreset / refused masks and env_first_ended report it per world. */
Test(env, ended_masks_and_first_ended)
{
    env_kv kv[] = {{"episode_seconds", 0.1}};   /* 5 steps */
    uint8_t ar[3], rf[3];
    env_info info = {0};
    info.autoreset = ar;
    info.refused = rf;
    /* next step: never-reset worlds and worlds that ended in the previous step are reset, masked */
    env_t *n = mk("anymal_c-walk", 3, kv, 1, ENV_AUTORESET_NEXT_STEP);
    bufs b = mkbufs(n);
    cr_assert_eq(env_first_ended(n, 0, 3, NULL), -1, "first_ended is DISABLED-only");
    env_reset(n, 1, 2, NULL, NULL, b.obs);       /* world 0 never reset */
    env_step(n, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    cr_assert_eq(ar[0], 1); cr_assert_eq(ar[1], 0); cr_assert_eq(ar[2], 0);
    cr_assert_eq(rf[0] | rf[1] | rf[2], 0);
    for (int k = 1; k < 5; k++) env_step(n, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    cr_assert_eq(b.trunc[1], 1); cr_assert_eq(b.trunc[0], 0);
    cr_assert_eq(ar[0] | ar[1] | ar[2], 0);
    int32_t ids[2] = {2, 0};
    env_step(n, 0, 2, ids, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    cr_assert_eq(ar[0], 1, "world 2 ended: reset instead of stepped");
    cr_assert_eq(ar[1], 0);
    freebufs(&b);
    env_destroy(&n);
    /* disabled: refused mask, and env_first_ended finds the same worlds beforehand */
    env_t *d = mk("anymal_c-walk", 3, kv, 1, ENV_AUTORESET_DISABLED);
    b = mkbufs(d);
    cr_assert_eq(env_first_ended(d, 0, 3, NULL), 0, "never-reset worlds count as ended");
    env_reset(d, 0, 2, NULL, NULL, b.obs);
    cr_assert_eq(env_first_ended(d, 0, 3, NULL), 2);
    cr_assert_eq(env_first_ended(d, 0, 2, NULL), -1);
    int32_t rev[3] = {2, 1, 0};
    cr_assert_eq(env_first_ended(d, 0, 3, rev), 0);
    cr_assert_eq(env_first_ended(d, 1, 2, rev + 1), -1, "ids take precedence over first");
    cr_assert_eq(env_step(d, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info), 1);
    cr_assert_eq(rf[0], 0); cr_assert_eq(rf[1], 0); cr_assert_eq(rf[2], 1);
    cr_assert_eq(ar[0] | ar[1] | ar[2], 0, "DISABLED never autoresets");
    for (int k = 1; k < 5; k++) env_step(d, 0, 2, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    cr_assert_eq(b.trunc[0], 1);
    cr_assert_eq(env_first_ended(d, 0, 2, NULL), 0);
    env_reset(d, 0, 1, NULL, NULL, b.obs);
    cr_assert_eq(env_first_ended(d, 0, 2, NULL), 1);
    cr_assert_eq(env_first_ended(d, 0, 2, rev + 1), 0);
    cr_assert_eq(env_step(d, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info), 2);
    cr_assert_eq(rf[0], 0); cr_assert_eq(rf[1], 1); cr_assert_eq(rf[2], 1);
    env_reset(d, 0, 3, NULL, NULL, b.obs);
    cr_assert_eq(env_first_ended(d, 0, 3, NULL), -1);
    cr_assert_eq(env_step(d, 0, 3, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info), 0);
    cr_assert_eq(rf[0] | rf[1] | rf[2], 0);
    freebufs(&b);
    env_destroy(&d);
}

/* Tasks read their configuration once into typed fields: every key of the spec must land in a field. */
typedef struct {
    double kp, obs_noise, not_a_key;
} cfg_probe;

Test(env, typed_configuration_read)
{
    env_kv kv[] = {{"kp", 60}};
    env_t *e = mk("anymal_c-walk", 1, kv, 1, ENV_AUTORESET_NEXT_STEP);
    char err[256] = "";
    cfg_probe c = {0, 0, 42};
    const env_cfg_field few[] = {ENV_CFG_FIELD(cfg_probe, kp), ENV_CFG_FIELD(cfg_probe, obs_noise),
                                 ENV_CFG_FIELD(cfg_probe, not_a_key)};
    cr_assert_eq(env_cfg_read(e, few, 3, &c, err, sizeof err), -1, "keys without a field must be an error");
    cr_assert(strstr(err, "has no field"), "%s", err);
    /* a table with one field per key of the spec: values land, other fields are left alone */
    const env_spec *sp = env_get_spec(e);
    env_cfg_field all[ENV_MAX_CONFIG + 1];
    double vals[ENV_MAX_CONFIG + 1];
    for (int i = 0; i < sp->nconfig; i++) all[i] = (env_cfg_field){sp->config[i].key, sizeof(double) * (size_t)i};
    all[sp->nconfig] = (env_cfg_field){"not_a_key", sizeof(double) * (size_t)sp->nconfig};
    vals[sp->nconfig] = 42;
    cr_assert_eq(env_cfg_read(e, all, sp->nconfig + 1, vals, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < sp->nconfig; i++)
        cr_assert_eq(vals[i], strcmp(sp->config[i].key, "kp") ? sp->config[i].def : 60, "%s", sp->config[i].key);
    cr_assert_eq(vals[sp->nconfig], 42);
    env_destroy(&e);
}

Test(env, invalid_configuration_is_reported)
{
    char err[512];
    env_kv unknown[] = {{"frction_max", 1}};
    cr_assert_null(env_new("anymal_c-walk", 4, unknown, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "frction_max") && strstr(err, "unknown"), "%s", err);
    env_kv range[] = {{"kp", -1}};
    cr_assert_null(env_new("anymal_c-walk", 4, range, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "kp") && strstr(err, "[0, 1000]"), "%s", err);
    env_kv notint[] = {{"decimation", 2.5}};
    cr_assert_null(env_new("anymal_c-walk", 4, notint, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "decimation") && strstr(err, "integers"), "%s", err);
    env_kv nan[] = {{"kd", NAN}};
    cr_assert_null(env_new("anymal_c-walk", 4, nan, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "kd"), "%s", err);
    env_kv order[] = {{"friction_min", 1.0}, {"friction_max", 0.5}};
    cr_assert_null(env_new("anymal_c-walk", 4, order, 2, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "friction_min"), "%s", err);
    cr_assert_null(env_new("anymal_c-run", 4, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "anymal_c-run") && strstr(err, "anymal_c-walk"), "%s", err);
    cr_assert_null(env_new("anymal_c-walk", 0, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    cr_assert(strstr(err, "num_worlds"), "%s", err);
    env_kv stand_only[] = {{"target_height", 0.45}};
    cr_assert_null(env_new("anymal_c-walk", 1, stand_only, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err));
    env_t *ok = env_new("anymal_c-stand", 1, stand_only, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(ok, "%s", err);
    cr_assert_float_eq(env_config(ok, "target_height"), 0.45, 0);
    env_destroy(&ok);
    float bad[12] = {0};
    bad[7] = NAN;
    env_t *e = mk("anymal_c-walk", 1, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    cr_assert_eq(env_check_actions(e, 1, bad), 7);
    bad[7] = 0;
    cr_assert_eq(env_check_actions(e, 1, bad), -1);
    env_destroy(&e);
}

/* ---------------------------------------------------------------- stand task */

Test(env, stand_resets_on_the_ground_and_rewards_height)
{
    env_kv kv[] = {{"fallen_prob", 0}, {"obs_noise", 0}};
    env_t *e = mk("anymal_c-stand", 16, kv, 2, ENV_AUTORESET_NEXT_STEP);
    bufs b = mkbufs(e);
    env_reset(e, 0, 16, NULL, NULL, b.obs);
    void *scratch = aligned_alloc(64, (sim_scratch_size(e->model) + 63) / 64 * 64);
    for (int i = 0; i < 16; i++) {
        sim_data *d = e->worlds[i].d;
        sim_data_bind_scratch(e->model, d, scratch);
        sim_kinematics(e->model, d);
        sim_velocity(e->model, d);
        sim_contact c[64];
        int n = sim_collide(e->model, d, 1.0, 0.0, c, 64);
        double low = INFINITY;
        for (int k = 0; k < n; k++) low = fmin(low, c[k].gap);
        cr_assert(low > 0 && low < 0.01, "world %d starts %g m above/below the ground", i, low);
        cr_assert_float_eq(b.obs[46 * i], d->q[2] - 0.5, 1e-6);
    }
    free(scratch);
    freebufs(&b);
    env_destroy(&e);
}

/* env_info.counters: added to by env_step; worlds stepped, solver sweeps and capped solves are counted. */
Test(env, work_counters)
{
    /* paper-bisection: a pure per-contact iteration (the default hands stalled problems to ADMM) */
    env_kv capped[] = {{"solver_max_iter", 1}, {"solver_tol", 1e-11}, {"solver", SIM_SOLVER_PAPER_BISECTION}};
    for (int k = 0; k < 2; k++) {
        env_t *e = mk("anymal_c-walk", 4, capped, k ? 3 : 0, ENV_AUTORESET_SAME_STEP);
        bufs b = mkbufs(e);
        env_reset(e, 0, 4, NULL, NULL, b.obs);
        env_counters c = {0};
        env_info info = {.counters = &c};
        for (int s = 0; s < 25; s++) {
            actions(b.act, 4, b.ad, s);
            env_step(e, 0, 4, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
        }
        cr_assert_eq(c.world_steps, 100);
        cr_assert_eq(c.physics_resets, 0);
        /* 100 env steps x 4 physics steps: contacts in most of them, one sweep at least in each such step */
        cr_assert_gt(c.solver_iterations, 100, "%llu", (unsigned long long)c.solver_iterations);
        if (k) {
            cr_assert_leq(c.solver_iterations, 100 * 4, "at most one sweep per physics step when capped at 1");
            cr_assert_gt(c.solver_capped, 0);
            cr_assert_leq(c.solver_capped, c.solver_iterations);
            cr_assert_eq(c.solver_fallbacks, 0, "paper-bisection has no ADMM fallback");
        } else {
            cr_assert_lt(c.solver_capped, 100 * 4 / 10, "the default cap is rarely hit: %llu",
                         (unsigned long long)c.solver_capped);
        }
        freebufs(&b);
        env_destroy(&e);
    }
}

/* env_set_physics_observer: called once per physics step of each observed world (decimation per env step), with
 * the step's contacts still readable, and not for a world whose context is NULL; removed by fn NULL.  Its counts of
 * sweeps and fallbacks equal the env's own counters over the same steps. */
typedef struct {
    long calls, contacts, sweeps, fallbacks;
} seen;
static void count_step(void *ctx, const struct sim_data *d)
{
    seen *s = ctx;
    s->calls++;
    s->contacts += d->ncon;
    s->sweeps += d->stats.iterations;
    s->fallbacks += d->stats.fallback != 0;
}

Test(env, physics_observer_sees_every_physics_step)
{
    enum { W = 8, S = 20 };
    env_t *e = mk("anymal_c-walk", W, NULL, 0, ENV_AUTORESET_SAME_STEP);
    bufs b = mkbufs(e);
    env_reset(e, 0, W, NULL, NULL, b.obs);
    seen per[W] = {{0}};
    void *ctx[W];
    for (int i = 0; i < W; i++) ctx[i] = i == 3 ? NULL : &per[i];
    env_set_physics_observer(e, count_step, ctx);
    env_counters c = {0};
    env_info info = {.counters = &c};
    for (int s = 0; s < S; s++) {
        actions(b.act, W, b.ad, s);
        env_step(e, 0, W, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    }
    const int dec = env_get_spec(e)->decimation;
    long sweeps = 0, fallbacks = 0;
    for (int i = 0; i < W; i++) {
        if (i == 3) continue;
        cr_assert_eq(per[i].calls, (long)S * dec, "world %d: %ld calls", i, per[i].calls);
        cr_assert_gt(per[i].contacts, (long)S * dec, "world %d stands on its feet: contacts seen", i);
        sweeps += per[i].sweeps, fallbacks += per[i].fallbacks;
    }
    cr_assert_eq(per[3].calls, 0);
    /* world 3 unobserved: the env's counters cover it too, so compare with a run observing all of it */
    cr_assert_leq((unsigned long long)sweeps, c.solver_iterations);
    env_set_physics_observer(e, NULL, NULL);
    const long before = per[0].calls;
    env_step(e, 0, W, NULL, b.act, b.obs, b.rew, b.term, b.trunc, NULL);
    cr_assert_eq(per[0].calls, before, "removed");
    freebufs(&b);
    env_destroy(&e);
}

/* The RL default (coulomb-stall-admm) leaves almost no walk solve unconverged: stalled problems go to ADMM, and
 * contacts released after the sweeps met the tolerance (opening ones: exactly zero) do not leave the others past
 * it.  What remains is ADMM's own iteration cap (admm_max_iter 500), which a walk solve with random actions reaches
 * about once in 10^5 physics steps; this run's 61,440 may meet one, hence the bound below. */
Test(env, default_solver_converges_every_walk_solve, .timeout = 120)
{
    enum { W = 256, S = 60 };
    env_t *e = mk("anymal_c-walk", W, NULL, 0, ENV_AUTORESET_SAME_STEP);
    bufs b = mkbufs(e);
    env_reset(e, 0, W, NULL, NULL, b.obs);
    env_counters c = {0};
    env_info info = {.counters = &c};
    for (int s = 0; s < S; s++) {
        actions(b.act, W, b.ad, s);
        env_step(e, 0, W, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
    }
    cr_log_info("walk, default solver: %llu world-steps, %llu sweeps, %llu unconverged solves, %llu fallbacks (direct, ADMM)",
                (unsigned long long)c.world_steps, (unsigned long long)c.solver_iterations,
                (unsigned long long)c.solver_capped, (unsigned long long)c.solver_fallbacks);
    cr_assert_eq(c.world_steps, (uint64_t)W * S);
    /* the stall detector hands a small share of the walk's solves to ADMM, and they are counted (the metric
     * herd_solver_fallbacks_total): some, far fewer than the physics steps */
    cr_assert_gt(c.solver_fallbacks, 0);
    cr_assert_lt(c.solver_fallbacks, (uint64_t)W * S * 4 / 20, "%llu", (unsigned long long)c.solver_fallbacks);
    cr_assert_leq(c.solver_capped, (uint64_t)W * S * 4 / 10000, "%llu of %d physics steps ended unconverged",
                  (unsigned long long)c.solver_capped, W * S * 4);
    /* a CCP answer (herd_solver_ccp_answers_total) comes only from a fallback */
    cr_log_info("walk, default solver: %llu CCP answers", (unsigned long long)c.solver_ccp_answers);
    cr_assert_leq(c.solver_ccp_answers, c.solver_fallbacks);
    freebufs(&b);
    env_destroy(&e);
}

/* Joint limits engaged are counted (the metric herd_joint_limits_active_total): walk's hip abduction targets driven
 * +-1.5 rad from the default pose push the joints into their URDF ranges, so limit blocks carry impulses; with
 * joint_limits 0 there are none to count. */
Test(env, engaged_joint_limits_are_counted, .timeout = 120)
{
    enum { W = 32, S = 40 };
    for (int limits = 1; limits >= 0; limits--) {
        env_kv kv[] = {{"joint_limits", limits}};
        env_t *e = mk("anymal_c-walk", W, kv, 1, ENV_AUTORESET_SAME_STEP);
        bufs b = mkbufs(e);
        env_reset(e, 0, W, NULL, NULL, b.obs);
        env_counters c = {0};
        env_info info = {.counters = &c};
        for (int s = 0; s < S; s++) {
            actions(b.act, W, b.ad, s);
            for (int i = 0; i < W * b.ad; i++) b.act[i] *= 3;
            env_step(e, 0, W, NULL, b.act, b.obs, b.rew, b.term, b.trunc, &info);
        }
        if (limits) cr_assert_gt(c.joint_limits_active, 0, "no limit engaged in %d physics steps", W * S * 4);
        else cr_assert_eq(c.joint_limits_active, 0);
        freebufs(&b);
        env_destroy(&e);
    }
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The server's step-time estimate (env_world_step_s) is an upper bound of a solve at its caps, the direct Coulomb
 * solve's Newton iterations included.  A 16-contact problem (the most anymal_c-walk's worlds can have) solved with
 * the default solver at tolerance 0 stalls, runs the direct solve (no answer is accepted at tol 0), ADMM to its
 * cap, and the direct solve again: everything the caps allow.  Its iterations stay within the caps env_get_cost
 * reports, and its thread CPU time (the fastest of 5) within 1.5 x the estimate of the solve part.  Without the
 * direct term the estimate is far below what the solve costs (2 x 3 x 100 Newton iterations on a 48 x 48 system
 * against 50 sweeps and 500 ADMM iterations), and this fails. */
Test(env, the_step_estimate_covers_a_solve_at_every_cap, .timeout = 120)
{
    env_t *e = mk("anymal_c-walk", 1, NULL, 0, ENV_AUTORESET_SAME_STEP);
    env_cost cost;
    env_get_cost(e, &cost);
    cr_assert_eq(cost.max_contacts, 16);
    cr_assert_eq(cost.direct_cap, 3 * 30 + 2 * SIM_SOLVER_DIRECT_FORMS * 100,
                 "the default solver's direct solve: the semismooth Newton from 3 starts x 30 iterations, the mode-set "
                 "search's 2 attempts x %d slip formulations x 100 Newton iterations", SIM_SOLVER_DIRECT_FORMS);
    env_solver_timing t;
    env_time_solvers(&t);
    cr_assert_gt(t.direct_iteration, 0);

    enum { N = 16, M = 3 * N, NV = 18 };
    static double S[NV * M], G[M * M], c[M], mu[N], lambda[M];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < NV * M; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        S[i] = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double s = 0;
            for (int k = 0; k < NV; k++) s += S[k * M + i] * S[k * M + j];
            G[i * M + j] = s + (i == j ? 1e-3 : 0);
        }
    for (int i = 0; i < N; i++) c[3 * i] = 0.25 * (i % 3 - 1), c[3 * i + 1] = 0.15 * (i % 4 - 1.5), c[3 * i + 2] = -0.4, mu[i] = 0.7;
    sim_solver_params p;
    sim_solver_default_params(&p);
    p.tol = 0;
    double best = INFINITY;
    sim_solver_stats st;
    for (int rep = 0; rep < 5; rep++) {
        memset(lambda, 0, sizeof lambda);
        double t0 = cpu_now();
        sim_solve(cost.solver, N, G, c, mu, lambda, &p, &st);
        double dt = cpu_now() - t0;
        if (dt < best) best = dt;
    }
    cr_assert(st.fallback, "the tol-0 solve stalled and went to the fallbacks");
    cr_assert_leq(st.direct_iterations, cost.direct_cap);
    cr_assert_gt(st.direct_iterations, cost.direct_cap / 4, "the direct solve ran (%d Newton iterations)",
                 st.direct_iterations);
    cr_assert_leq(st.fallback_iterations, cost.fallback_cap);
    cr_assert_leq(st.iterations - st.fallback_iterations, cost.solver_cap);
    /* the solve part of one physics step's estimate: env_world_step_s of one physics step without the rest */
    env_cost one = cost;
    one.decimation = 1;
    const double est = env_world_step_s(&one, &t, 0);
    one.direct_cap = 0;
    const double est_without = env_world_step_s(&one, &t, 0);
    cr_log_info("a solve at every cap: %.0f us of CPU (%d sweeps, %d ADMM, %d Newton iterations); estimated %.0f us "
                "(%.0f us without the direct solve)", 1e6 * best, st.iterations - st.fallback_iterations,
                st.fallback_iterations, st.direct_iterations, 1e6 * est, 1e6 * est_without);
    cr_assert_gt(est, est_without);
    cr_assert_leq(best, 1.5 * est, "a solve at the caps took %.0f us, estimated %.0f us", 1e6 * best, 1e6 * est);
    env_destroy(&e);
}

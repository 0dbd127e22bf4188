/* The critic's (privileged) observation: the ANYmal tasks' spec fields, env_critic_obs against the policy observation
 * and the worlds' randomized values, and the make option over the protocol (server and C client). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "herd_client.h"
#include "sim_model.h"

#include "helpers/server_start.h"

static env_t *mk(const char *name, int n, const env_kv *kv, int nkv, env_autoreset mode)
{
    char err[512];
    env_t *e = env_new(name, n, kv, nkv, 1234, mode, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

static const env_field *field(const env_spec *s, const char *name)
{
    for (int i = 0; i < s->ncritic; i++)
        if (!strcmp(s->critic[i].name, name)) return &s->critic[i];
    cr_assert_fail("%s: no critic field '%s'", s->name, name);
    return NULL;
}

/* deterministic pseudo-random actions in [-1, 1] */
static void actions(float *a, int n, int step)
{
    for (int i = 0; i < n; i++) {
        unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u);
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        a[i] = (float)((x % 2001) / 1000.0 - 1.0);
    }
}

/* ---- the spec ---- */

Test(critic, spec_lists_the_fields)
{
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        int anymal = !strncmp(s->name, "anymal_c-", 9);
        if (!anymal) {
            cr_assert(s->critic_dim == 0 && s->ncritic == 0, "%s declares no critic observation", s->name);
            continue;
        }
        /* the observation's fields first, the same, then the privileged ones, tiling critic_dim */
        int rough = !strcmp(s->name, "anymal_c-rough"), npriv = 4 + rough;   /* rough appends terrain_level */
        cr_assert_eq(s->ncritic, s->nobs + npriv, "%s", s->name);
        for (int i = 0; i < s->nobs; i++) {
            cr_assert_str_eq(s->critic[i].name, s->obs[i].name);
            cr_assert(s->critic[i].offset == s->obs[i].offset && s->critic[i].size == s->obs[i].size &&
                      s->critic[i].scale == s->obs[i].scale && s->critic[i].low == s->obs[i].low &&
                      s->critic[i].high == s->obs[i].high && !strcmp(s->critic[i].unit, s->obs[i].unit));
        }
        static const char *const names[] = {"friction", "added_mass", "foot_contact", "push_vel", "terrain_level"};
        static const int sizes[] = {1, 1, 4, 2, 1};
        int off = s->obs_dim;
        for (int k = 0; k < npriv; k++) {
            const env_field *F = &s->critic[s->nobs + k];
            cr_assert_str_eq(F->name, names[k]);
            cr_assert(F->offset == off && F->size == sizes[k] && F->scale == 1.0f, "%s %s", s->name, F->name);
            off += F->size;
        }
        cr_assert_eq(off, s->critic_dim, "%s: the fields tile critic_dim", s->name);
    }
    cr_assert_eq(env_registry_spec(env_registry_find("anymal_c-walk"))->critic_dim, 56);
    /* a session's spec: the bounds are its configured ranges */
    env_kv kv[] = {{"friction_min", 0.7}, {"friction_max", 0.9}, {"added_mass_min", -3}, {"added_mass_max", 2},
                   {"push_vel_max", 0.5}, {"obs_clip", 50}};
    env_t *e = mk("anymal_c-walk", 1, kv, 6, ENV_AUTORESET_NEXT_STEP);
    const env_spec *s = env_get_spec(e);
    cr_assert(field(s, "friction")->low == 0.7f && field(s, "friction")->high == 0.9f);
    cr_assert(field(s, "added_mass")->low == -3.0f && field(s, "added_mass")->high == 2.0f);
    cr_assert(field(s, "push_vel")->low == -0.5f && field(s, "push_vel")->high == 0.5f);
    cr_assert(field(s, "foot_contact")->low == 0.0f && field(s, "foot_contact")->high == 1.0f);
    cr_assert(field(s, "dof_vel")->low == -50.0f && field(s, "dof_vel")->high == 50.0f, "the obs clip");
    env_destroy(&e);
}

/* ---- env_critic_obs ---- */

/* With the observation noise off the critic's first obs_dim floats are the observation, bit for bit, after every
 * reset and step (autoresets, pushes and subsets included), for both tasks. */
Test(critic, proprioception_is_the_observation_without_noise, .timeout = 120)
{
    const char *tasks[] = {"anymal_c-walk", "anymal_c-stand"};
    for (int t = 0; t < 2; t++) {
        enum { N = 6, STEPS = 60 };
        env_kv kv[] = {{"obs_noise", 0}, {"episode_seconds", 0.3}, {"push_interval_s", 0.1}};
        env_t *e = mk(tasks[t], N, kv, 3, ENV_AUTORESET_SAME_STEP);
        const env_spec *s = env_get_spec(e);
        const int od = s->obs_dim, cd = s->critic_dim, ad = s->act_dim;
        float obs[N * 64], critic[N * 64], act[N * 12], rew[N];
        uint8_t term[N], trunc[N];
        env_reset(e, 0, N, NULL, NULL, obs);
        env_critic_obs(e, 0, N, NULL, critic);
        for (int i = 0; i < N; i++) cr_assert_eq(memcmp(critic + i * cd, obs + i * od, (size_t)od * 4), 0, "%s reset", tasks[t]);
        int ended = 0;
        for (int k = 0; k < STEPS; k++) {
            actions(act, N * ad, k);
            int32_t ids[3] = {5, 1, 3};
            int sub = k % 3 == 2;       /* every third step a subset, in another order */
            env_step(e, 0, sub ? 3 : N, sub ? ids : NULL, act, obs, rew, term, trunc, NULL);
            env_critic_obs(e, 0, sub ? 3 : N, sub ? ids : NULL, critic);
            for (int i = 0; i < (sub ? 3 : N); i++) {
                cr_assert_eq(memcmp(critic + i * cd, obs + i * od, (size_t)od * 4), 0, "%s step %d row %d", tasks[t], k, i);
                ended += term[i] | trunc[i];
            }
        }
        cr_assert_gt(ended, 0, "%s: episodes ended and were reset within the steps", tasks[t]);
        env_destroy(&e);
    }
}

/* With noise on (the default) the critic's proprioception differs from the observation, except in the noise-free
 * fields (the command), and the noise is the only difference: it is within the noise scales. */
Test(critic, leaves_the_noise_out, .timeout = 60)
{
    enum { N = 4 };
    env_t *e = mk("anymal_c-walk", N, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    const env_spec *s = env_get_spec(e);
    const int od = s->obs_dim, cd = s->critic_dim;
    float obs[N * 48], critic[N * 56], act[N * 12] = {0}, rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
    env_critic_obs(e, 0, N, NULL, critic);
    const env_field *cmd = field(s, "command_lin_vel"), *dq = field(s, "dof_pos");
    int differ = 0;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < od; k++) {
            float d = fabsf(critic[i * cd + k] - obs[i * od + k]);
            if (k >= cmd->offset && k < cmd->offset + 3) cr_assert_eq(d, 0.0f, "the command has no noise");
            if (k >= dq->offset && k < dq->offset + dq->size) cr_assert_leq(d, 0.01f + 1e-6f, "dof_pos noise is U(+-0.01)");
            differ += d > 0;
        }
    }
    cr_assert_gt(differ, N * 20, "the noisy fields differ (%d values)", differ);
    env_destroy(&e);
}

/* friction and added_mass are the world's randomized values: added_mass is the physics' root_added_mass, friction
 * the model's pair friction times the world's friction_scale (one constant, the foot's friction, for every world),
 * and with friction_min = friction_max the configured value. */
Test(critic, friction_and_added_mass_are_the_worlds)
{
    enum { N = 16 };
    env_t *e = mk("anymal_c-walk", N, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    float obs[N * 48], critic[N * 56];
    const env_spec *s = env_get_spec(e);
    const int mu = field(s, "friction")->offset, ma = field(s, "added_mass")->offset, cd = s->critic_dim;
    for (int round = 0; round < 2; round++) {       /* new draws at each reset */
        env_reset(e, 0, N, NULL, NULL, obs);
        env_critic_obs(e, 0, N, NULL, critic);
        double foot = 0, lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < N; i++) {
            const sim_data *d = env_world_state(e, i);
            cr_assert_eq(critic[i * cd + ma], (float)d->root_added_mass, "world %d added mass", i);
            cr_assert(d->root_added_mass >= -5 && d->root_added_mass <= 5);
            double f = critic[i * cd + mu] / d->friction_scale;
            if (i == 0) foot = f;
            cr_assert_float_eq(f, foot, 1e-6 * foot, "world %d: friction / friction_scale = %g, world 0's %g", i, f, foot);
            cr_assert(critic[i * cd + mu] >= 0.5f && critic[i * cd + mu] <= 1.25f);
            lo = fmin(lo, critic[i * cd + mu]), hi = fmax(hi, critic[i * cd + mu]);
        }
        cr_assert_gt(hi - lo, 0.1, "friction varies over the worlds");
    }
    env_destroy(&e);
    env_kv fixed[] = {{"friction_min", 0.8}, {"friction_max", 0.8}, {"added_mass_min", 0}, {"added_mass_max", 0}};
    e = mk("anymal_c-walk", N, fixed, 4, ENV_AUTORESET_NEXT_STEP);
    env_reset(e, 0, N, NULL, NULL, obs);
    env_critic_obs(e, 0, N, NULL, critic);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(critic[i * cd + mu], 0.8f, 1e-6f, "world %d friction %g", i, critic[i * cd + mu]);
        cr_assert_eq(critic[i * cd + ma], 0.0f);
    }
    env_destroy(&e);
}

/* foot_contact: 0 at a reset and while the robot drops onto the ground, 1 for all four feet once it stands;
 * push_vel: 0 until the first push, then the pushed velocity (within push_vel_max), held until the next push. */
Test(critic, foot_contacts_and_pushes, .timeout = 60)
{
    enum { N = 2 };
    env_kv kv[] = {{"init_noise", 0}, {"push_interval_s", 0.2}, {"push_vel_max", 0.3}, {"cmd_vx_max", 0},
                   {"cmd_vy_max", 0}, {"cmd_yaw_max", 0}};
    env_t *e = mk("anymal_c-walk", N, kv, 6, ENV_AUTORESET_NEXT_STEP);
    const env_spec *s = env_get_spec(e);
    const int fc = field(s, "foot_contact")->offset, pv = field(s, "push_vel")->offset;
    float obs[N * 48], critic[N * 56], act[N * 12] = {0}, rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    env_critic_obs(e, 0, N, NULL, critic);
    for (int f = 0; f < 4; f++) cr_assert_eq(critic[fc + f], 0.0f);
    cr_assert(critic[pv] == 0 && critic[pv + 1] == 0);
    float last[2] = {0, 0};
    int changes = 0, first_push = -1;
    for (int k = 1; k <= 60; k++) {
        env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
        env_critic_obs(e, 0, N, NULL, critic);
        cr_assert(!term[0] && !trunc[0]);
        if (k == 1)
            for (int f = 0; f < 4; f++) cr_assert_eq(critic[fc + f], 0.0f, "falling from 0.6 m: no contact yet");
        if (k == 30)
            for (int f = 0; f < 4; f++) cr_assert_eq(critic[fc + f], 1.0f, "standing: foot %d in contact", f);
        for (int f = 0; f < 4; f++) cr_assert(critic[fc + f] == 0 || critic[fc + f] == 1);
        if (critic[pv] != last[0] || critic[pv + 1] != last[1]) {
            changes++;
            if (first_push < 0) first_push = k;
            last[0] = critic[pv], last[1] = critic[pv + 1];
        }
        cr_assert(fabsf(critic[pv]) <= 0.3f && fabsf(critic[pv + 1]) <= 0.3f);
    }
    /* pushes every 0.2 s = 10 steps of 20 ms, the first after 0.2 s */
    cr_assert(first_push >= 10 && first_push <= 12, "first push at step %d", first_push);
    cr_assert(changes >= 4 && changes <= 6, "%d pushes in 1.2 s", changes);
    env_destroy(&e);
}

/* Reading the critic observation changes nothing: two envs of one seed, one read every step, stay bitwise equal;
 * a subset reads the same rows as the whole batch. */
Test(critic, reading_changes_nothing, .timeout = 60)
{
    enum { N = 8 };
    env_kv kv[] = {{"episode_seconds", 0.2}};
    env_t *a = mk("anymal_c-walk", N, kv, 1, ENV_AUTORESET_SAME_STEP), *b = mk("anymal_c-walk", N, kv, 1, ENV_AUTORESET_SAME_STEP);
    float oa[N * 48], ob[N * 48], critic[N * 56], sub[3 * 56], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(a, 0, N, NULL, NULL, oa);
    env_reset(b, 0, N, NULL, NULL, ob);
    env_critic_obs(a, 0, N, NULL, critic);
    for (int k = 0; k < 25; k++) {
        actions(act, N * 12, k);
        env_step(a, 0, N, NULL, act, oa, rew, term, trunc, NULL);
        env_step(b, 0, N, NULL, act, ob, rew, term, trunc, NULL);
        env_critic_obs(a, 0, N, NULL, critic);
        int32_t ids[3] = {7, 0, 4};
        env_critic_obs(a, 0, 3, ids, sub);
        for (int i = 0; i < 3; i++) cr_assert_eq(memcmp(sub + i * 56, critic + ids[i] * 56, 56 * 4), 0);
        cr_assert_eq(memcmp(oa, ob, sizeof oa), 0, "step %d: the env that was read is the same", k);
    }
    env_destroy(&a);
    env_destroy(&b);
}

Test(critic, a_task_without_one_writes_nothing)
{
    env_t *e = mk("paper-trot", 1, NULL, 0, ENV_AUTORESET_NEXT_STEP);
    cr_assert_eq(env_get_spec(e)->critic_dim, 0);
    float obs[256], sentinel[4] = {1, 2, 3, 4};
    env_reset(e, 0, 1, NULL, NULL, obs);
    env_critic_obs(e, 0, 1, NULL, sentinel);
    cr_assert(sentinel[0] == 1 && sentinel[3] == 4);
    env_destroy(&e);
}

/* ---- over the protocol: the server and the C client ---- */

/* A session made with critic_obs: reset and step replies carry info.critic_obs [n, critic_dim], the same bits as
 * the env in-process (2 worker threads against one call), its proprioception the obs when the noise is off. */
Test(critic_server, make_option_gives_critic_obs_in_reset_and_step_replies, .timeout = 120)
{
    srv_thread *t = test_server_start(2);
    const char *ep = srv_thread_endpoint(t);
    herd_error err;
    herd_client *c = herd_client_new(&ep, 1, 20000, &err);
    cr_assert_not_null(c, "%s", err.message);
    enum { N = 24 };
    env_kv kv[] = {{"obs_noise", 0}, {"episode_seconds", 0.3}, {"push_interval_s", 0.1}};
    herd_make_opts o = {.config = kv, .nconfig = 3, .seed = 1234, .autoreset = ENV_AUTORESET_SAME_STEP, .critic_obs = 1};
    herd_session s;
    cr_assert_eq(herd_client_make_opts(c, 0, "anymal_c-walk", N, &o, &s, &err), 0, "%s", err.message);
    cr_assert_eq(s.critic_dim, 56);
    cr_assert(s.spec.critic_dim == 56 && s.spec.ncritic == 12 && !strcmp(s.spec.critic[8].name, "friction"));
    env_t *e = mk("anymal_c-walk", N, kv, 3, ENV_AUTORESET_SAME_STEP);
    float obs[N * 48], critic[N * 56], act[N * 12], rew[N];
    uint8_t term[N], trunc[N];
    env_reset(e, 0, N, NULL, NULL, obs);
    env_critic_obs(e, 0, N, NULL, critic);

    uint64_t id = herd_client_reset_send(c, &s, -1, NULL, NULL, &err);
    herd_reply *r;
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0, "%s", err.message);
    const float *rc = herd_reply_critic_obs(r, &s, N, &err);
    cr_assert_not_null(rc, "%s", err.message);
    cr_assert_eq((uintptr_t)rc % 8, 0, "a view into the reply, aligned");
    cr_assert_eq(memcmp(rc, critic, sizeof critic), 0, "reset: the server's critic_obs is the env's");
    proto_tensor ot;
    cr_assert_eq(herd_reply_tensor(r, "obs", &ot, &err), 0);
    for (int i = 0; i < N; i++) cr_assert_eq(memcmp(rc + i * 56, (const float *)(const void *)ot.data + i * 48, 48 * 4), 0);
    herd_reply_destroy(&r);

    float got[N * 56], gobs[N * 48];
    for (int k = 0; k < 20; k++) {
        actions(act, N * 12, k);
        env_step(e, 0, N, NULL, act, obs, rew, term, trunc, NULL);
        env_critic_obs(e, 0, N, NULL, critic);
        herd_step_out out = {.obs = gobs, .critic_obs = got};
        cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &out, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(got, critic, sizeof got), 0, "step %d: the server's critic_obs is the env's", k);
        for (int i = 0; i < N; i++) cr_assert_eq(memcmp(got + i * 56, gobs + i * 48, 48 * 4), 0, "step %d world %d", k, i);
    }
    /* a subset: rows in the order of the ids */
    int32_t ids[3] = {17, 2, 9};
    float sub_act[3 * 12] = {0};
    id = herd_client_step_send(c, &s, 3, ids, sub_act, 0, &err);
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0, "%s", err.message);
    rc = herd_reply_critic_obs(r, &s, 3, &err);
    cr_assert_not_null(rc, "%s", err.message);
    cr_assert_eq(herd_reply_tensor(r, "obs", &ot, &err), 0);
    for (int i = 0; i < 3; i++) cr_assert_eq(memcmp(rc + i * 56, (const float *)(const void *)ot.data + i * 48, 48 * 4), 0);
    cr_assert_null(herd_reply_critic_obs(r, &s, 4, &err), "the shape is checked");
    herd_reply_destroy(&r);
    env_destroy(&e);
    herd_client_close(c, &s, &err);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

/* Without the option a session's replies have no critic_obs (the reset's info stays empty), and asking for it on
 * an env that has none is BAD_FIELD, the message naming the option and the envs that have one.  hello lists the
 * fields. */
Test(critic_server, off_by_default_and_refused_for_an_env_without_one, .timeout = 60)
{
    srv_thread *t = test_server_start(1);
    const char *ep = srv_thread_endpoint(t);
    herd_error err;
    herd_client *c = herd_client_new(&ep, 1, 20000, &err);
    cr_assert_not_null(c, "%s", err.message);
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &err), 0, "%s", err.message);
    cr_assert_geq(h.protocol_minor, 4);
    int walk = 0;
    for (int i = 0; i < h.nenvs; i++)
        if (!strcmp(h.envs[i].name, "anymal_c-walk")) {
            walk = 1;
            cr_assert(h.envs[i].critic_dim == 56 && h.envs[i].ncritic == 12);
            cr_assert_str_eq(h.envs[i].critic[10].name, "foot_contact");
            cr_assert_eq(h.envs[i].critic[10].size, 4);
        } else if (!strncmp(h.envs[i].name, "paper-", 6)) {
            cr_assert_eq(h.envs[i].critic_dim, 0);
        }
    cr_assert(walk);
    herd_hello_free(&h);

    herd_session s;
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", 3, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &err), 0);
    cr_assert_eq(s.critic_dim, 0);
    cr_assert(s.spec.critic_dim == 0 && s.spec.ncritic == 0, "the session's spec describes its replies: no critic_obs");
    uint64_t id = herd_client_reset_send(c, &s, -1, NULL, NULL, &err);
    herd_reply *r;
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0);
    cr_assert_null(proto_value_get(r->msg.root, "info.critic_obs"));
    cr_assert_not_null(proto_value_get(r->msg.root, "info"));
    cr_assert_null(herd_reply_critic_obs(r, &s, 3, &err));
    herd_reply_destroy(&r);
    float act[3 * 12] = {0};
    id = herd_client_step_send(c, &s, -1, NULL, act, 0, &err);
    cr_assert_eq(herd_client_wait(c, id, -1, &r, &err), 0);
    cr_assert(r->ok);
    cr_assert_null(proto_value_get(r->msg.root, "info.critic_obs"));
    herd_reply_destroy(&r);
    herd_client_close(c, &s, &err);

    herd_make_opts o = {.critic_obs = 1};
    cr_assert_eq(herd_client_make_opts(c, 0, "paper-trot", 1, &o, &s, &err), PROTO_E_BAD_FIELD);
    cr_assert(strstr(err.message, "'critic_obs'") && strstr(err.message, "paper-trot") &&
              strstr(err.message, "anymal_c-walk"), "%s", err.message);
    /* the stand task has one too */
    cr_assert_eq(herd_client_make_opts(c, 0, "anymal_c-stand", 1, &o, &s, &err), 0, "%s", err.message);
    cr_assert_eq(s.critic_dim, s.spec.obs_dim + 8);
    herd_client_close(c, &s, &err);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

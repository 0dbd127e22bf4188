/* Configuration keys with named choices: the contact solver is chosen per session
 * by name.  The spec lists the names of sim's solver table; env_new takes the index, env_config_choice
 * (and the server, for a string on the wire) the name; bad names and indices are refused with the
 * allowed names; the chosen solver and its tolerances reach the model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "env.h"
#include "env_internal.h"
#include "herd_client.h"
#include "sim_solver.h"

#include "helpers/server_start.h"

static const env_config_key *key_of(const env_spec *s, const char *key)
{
    for (int i = 0; i < s->nconfig; i++)
        if (!strcmp(s->config[i].key, key)) return &s->config[i];
    return NULL;
}

/* Every task lists "solver" with the names of sim's table, row by row (so a value is a table index). */
Test(env_config, solver_choices_are_the_sim_solver_table)
{
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        const env_config_key *k = key_of(s, "solver");
        cr_assert_not_null(k, "%s has no solver key", s->name);
        cr_assert_eq(k->nchoices, sim_solver_count(), "%s: %d choices, sim's table has %d rows", s->name, k->nchoices,
                     sim_solver_count());
        cr_assert(k->is_int && k->lo == 0 && k->hi == k->nchoices - 1, "%s: solver range", s->name);
        for (int i = 0; i < k->nchoices; i++) cr_assert_str_eq(k->choices[i], sim_solver_at(i)->name, "%s row %d", s->name, i);
        cr_assert_not_null(sim_solver_at((int)k->def)->solve, "%s: the default solver is built", s->name);
        /* the tolerances are keys too */
        cr_assert_not_null(key_of(s, "solver_tol"), "%s", s->name);
        cr_assert_not_null(key_of(s, "solver_max_iter"), "%s", s->name);
        /* plain keys have no choices */
        cr_assert_eq(key_of(s, "sim_dt")->nchoices, 0);
    }
}

/* Every task's default spec agrees with itself: the fields tile the observation and action vectors, the timing
 * is the one its keys' defaults give (max_episode_steps = ceil(episode_seconds / control_dt)), and a count or
 * an episode length named in the doc is the spec's. */
Test(env_config, default_spec_is_consistent)
{
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        int off = 0;
        for (int i = 0; i < s->nobs; i++) {
            cr_assert_eq(s->obs[i].offset, off, "%s: obs field %s", s->name, s->obs[i].name);
            off += s->obs[i].size;
        }
        cr_assert_eq(off, s->obs_dim, "%s: obs fields cover %d of %d", s->name, off, s->obs_dim);
        off = 0;
        for (int i = 0; i < s->nact; i++) off += s->act[i].size;
        cr_assert_eq(off, s->act_dim, "%s: act fields", s->name);
        const env_config_key *dt = key_of(s, "sim_dt"), *dec = key_of(s, "decimation");
        cr_assert(dt && dec, "%s: timing keys", s->name);
        cr_assert_eq(dt->def, s->sim_dt, "%s: sim_dt", s->name);
        cr_assert_eq(dec->def, s->decimation, "%s: decimation", s->name);
        cr_assert_eq(s->control_dt, s->sim_dt * s->decimation, "%s: control_dt", s->name);
        const env_config_key *ep = key_of(s, "episode_seconds");
        if (ep) cr_assert_eq(ep->def, s->episode_seconds, "%s: episode_seconds", s->name);
        cr_assert_eq(s->max_episode_steps, (int)ceil(s->episode_seconds / s->control_dt - 1e-9), "%s: %d steps",
                     s->name, s->max_episode_steps);
        char want[64];
        if (strstr(s->doc, " observations")) {
            snprintf(want, sizeof want, "%d observations", s->obs_dim);
            cr_assert(strstr(s->doc, want), "%s: doc does not say '%s'", s->name, want);
        }
        if (strstr(s->doc, " joint-target actions")) {
            snprintf(want, sizeof want, "%d joint-target actions", s->act_dim);
            cr_assert(strstr(s->doc, want), "%s: doc does not say '%s'", s->name, want);
        }
        if (strstr(s->doc, " s episodes")) {
            snprintf(want, sizeof want, "%g s episodes", s->episode_seconds);
            cr_assert(strstr(s->doc, want), "%s: doc does not say '%s'", s->name, want);
        }
    }
}

Test(env_config, names_resolve_to_indices)
{
    char err[512];
    double v = -1;
    for (int i = 0; i < sim_solver_count(); i++) {
        cr_assert_eq(env_config_choice("paper-trot", "solver", sim_solver_at(i)->name, &v, err, sizeof err), 0, "%s", err);
        cr_assert_eq(v, i);
    }
    cr_assert_eq(env_config_choice("anymal_c-walk", "solver", "pgs", &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v, SIM_SOLVER_PGS);

    /* an unknown name: the message lists every allowed name */
    cr_assert_eq(env_config_choice("anymal_c-walk", "solver", "lemke", &v, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown solver 'lemke'"), "%s", err);
    for (int i = 0; i < sim_solver_count(); i++) cr_assert(strstr(err, sim_solver_at(i)->name), "%s", err);
    /* a name for a plain key, an unknown key, an unknown env */
    cr_assert_eq(env_config_choice("anymal_c-walk", "kp", "stiff", &v, err, sizeof err), -1);
    cr_assert(strstr(err, "'kp' takes a number"), "%s", err);
    cr_assert_eq(env_config_choice("anymal_c-walk", "solvr", "pgs", &v, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown configuration key 'solvr'"), "%s", err);
    cr_assert_eq(env_config_choice("no-such-env", "solver", "pgs", &v, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown env"), "%s", err);
    cr_assert_eq(env_config_choice("paper-trot", "solver", NULL, &v, err, sizeof err), -1);
}

/* Each row of the table: a built solver is the model's; a reserved one is refused by name. */
Test(env_config, each_solver_reaches_the_model_or_is_refused, .timeout = 60)
{
    const char *tasks[] = {"paper-trot", "anymal_c-walk"};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < sim_solver_count(); i++) {
            char err[512] = "";
            env_kv kv[] = {{"solver", i}};
            env_t *e = env_new(tasks[t], 1, kv, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
            const sim_solver_desc *d = sim_solver_at(i);
            if (!d->solve) {
                cr_assert_null(e, "%s: reserved solver %s accepted", tasks[t], d->name);
                cr_assert(strstr(err, d->name) && strstr(err, "not built"), "%s", err);
                continue;
            }
            cr_assert_not_null(e, "%s %s: %s", tasks[t], d->name, err);
            cr_assert_eq(e->model->opt.solver, i);
            cr_assert_eq(env_config(e, "solver"), i);
            env_destroy(&e);
        }
}

Test(env_config, bad_indices_name_the_choices)
{
    char err[512];
    const double bad[] = {-1, 0.5, (double)sim_solver_count(), NAN, INFINITY};
    for (int k = 0; k < 5; k++) {
        env_kv kv[] = {{"solver", bad[k]}};
        env_t *e = env_new("paper-drop", 1, kv, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
        cr_assert_null(e, "solver = %g accepted", bad[k]);
        cr_assert(strstr(err, "not one of its choices") && strstr(err, "paper-bisection") && strstr(err, "pgs-hwangbo"),
                  "%s", err);
    }
}

/* solver_tol is bounded below by the solvers' rounding floor (ENV_SOLVER_TOL_MIN, env_internal.h): in every task
 * the spec lists [1e-11, 1e-2], a smaller tolerance is refused with a message naming the key and the range, and
 * the bound itself is accepted and reaches the model. */
Test(env_config, solver_tol_bounded_by_the_rounding_floor)
{
    cr_assert_eq(ENV_SOLVER_TOL_MIN, 1e-11);
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        const env_config_key *k = key_of(s, "solver_tol");
        cr_assert_not_null(k, "%s", s->name);
        cr_assert(k->lo == ENV_SOLVER_TOL_MIN && k->hi == 1e-2, "%s: solver_tol in [%g, %g]", s->name, k->lo, k->hi);
        char err[512] = "";
        env_kv below[] = {{"solver_tol", 1e-12}};
        env_t *e = env_new(s->name, 1, below, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
        cr_assert_null(e, "%s accepted solver_tol 1e-12", s->name);
        cr_assert(strstr(err, "'solver_tol' = 1e-12 is out of range") && strstr(err, "[1e-11, 0.01]"), "%s: %s", s->name,
                  err);
        env_kv at[] = {{"solver_tol", 1e-11}};
        e = env_new(s->name, 1, at, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
        cr_assert_not_null(e, "%s: %s", s->name, err);
        cr_assert_eq(e->model->opt.sp.tol, 1e-11, "%s", s->name);
        env_destroy(&e);
    }
}

Test(env_config, paper_tasks_take_the_solver_tolerances)
{
    char err[512];
    env_kv kv[] = {{"solver", SIM_SOLVER_PGS}, {"solver_tol", 1e-9}, {"solver_max_iter", 400}};
    env_t *e = env_new("paper-random", 2, kv, 3, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    cr_assert_eq(e->model->opt.solver, SIM_SOLVER_PGS);
    cr_assert_eq(e->model->opt.sp.tol, 1e-9);
    cr_assert_eq(e->model->opt.sp.max_iter, 400);
    env_destroy(&e);
    /* the defaults are sim's own (the paper's) */
    e = env_new("paper-random", 1, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    sim_solver_params p;
    sim_solver_default_params(&p);
    cr_assert(e->model->opt.sp.tol == p.tol && e->model->opt.sp.max_iter == p.max_iter);
    cr_assert_eq(e->model->opt.solver, SIM_SOLVER_PAPER_BISECTION);
    env_destroy(&e);
}

/* Over the wire: the name as a string (the C client's herd_client_make_choices), the spec's choices in
 * hello and make, the effective value as the index; bad names are BAD_CONFIG naming the choices. */
Test(env_config, server_takes_a_name, .timeout = 60)
{
    srv_thread *t = test_server_start(1);
    const char *eps[1] = {srv_thread_endpoint(t)};
    herd_error e;
    herd_client *c = herd_client_new(eps, 1, 10000, &e);
    cr_assert_not_null(c, "%s", e.message);

    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &e), 0, "%s", e.message);
    cr_assert_eq(h.protocol, 1);
    cr_assert_eq(h.protocol_minor, PROTO_VERSION_MINOR);
    int found = 0;
    for (int i = 0; i < h.nenvs; i++) {
        const env_config_key *k = key_of(&h.envs[i], "solver");
        cr_assert_not_null(k, "%s", h.envs[i].name);
        cr_assert_eq(k->nchoices, sim_solver_count());
        cr_assert_str_eq(k->choices[SIM_SOLVER_PGS], "pgs");
        cr_assert_eq(key_of(&h.envs[i], "kp") ? key_of(&h.envs[i], "kp")->nchoices : 0, 0);
        found++;
    }
    cr_assert_eq(found, env_registry_count());
    herd_hello_free(&h);

    herd_session s;
    env_kv num[] = {{"solver_tol", 1e-7}};
    herd_choice pgs[] = {{"solver", "pgs"}};
    cr_assert_eq(herd_client_make_choices(c, 0, "paper-hang", 2, num, 1, pgs, 1, 5, ENV_AUTORESET_NEXT_STEP, &s, &e), 0,
                 "%s", e.message);
    const env_config_key *k = key_of(&s.spec, "solver");
    cr_assert_not_null(k);
    int ks = (int)(k - s.spec.config), kt = (int)(key_of(&s.spec, "solver_tol") - s.spec.config);
    cr_assert_eq(s.config[ks], SIM_SOLVER_PGS);
    cr_assert_str_eq(k->choices[(int)s.config[ks]], "pgs");
    cr_assert_eq(s.config[kt], 1e-7);
    float obs[2 * 37], act[2 * 12] = {0};
    cr_assert_eq(herd_client_reset(c, &s, -1, NULL, NULL, obs, &e), 0, "%s", e.message);
    herd_step_out out = {.obs = obs};
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &out, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close(c, &s, &e), 0, "%s", e.message);

    herd_choice unknown[] = {{"solver", "lemke"}};
    cr_assert_eq(herd_client_make_choices(c, 0, "paper-hang", 1, NULL, 0, unknown, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e),
                 PROTO_E_BAD_CONFIG);
    cr_assert(strstr(e.message, "unknown solver 'lemke'") && strstr(e.message, "paper-bisection"), "%s", e.message);
    herd_choice plain[] = {{"kp", "stiff"}};
    cr_assert_eq(herd_client_make_choices(c, 0, "anymal_c-walk", 1, NULL, 0, plain, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e),
                 PROTO_E_BAD_CONFIG);
    cr_assert(strstr(e.message, "'kp' takes a number"), "%s", e.message);
    /* a number still works, and out of range names the choices */
    env_kv idx[] = {{"solver", SIM_SOLVER_PGS_HWANGBO}};
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-stand", 1, idx, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close(c, &s, &e), 0, "%s", e.message);
    env_kv far[] = {{"solver", 99}};
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-stand", 1, far, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e), PROTO_E_BAD_CONFIG);
    cr_assert(strstr(e.message, "coulomb-bisection"), "%s", e.message);

    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

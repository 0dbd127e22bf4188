/* env.c — registry, configuration, worlds, autoreset and episode statistics.  See env.h. */
#include "env.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_internal.h"
#include "sim_step.h"

static const env_task *const tasks[] = {&env_task_anymal_walk, &env_task_anymal_stand, &env_task_paper_trot,
                                        &env_task_paper_hang,  &env_task_paper_drop,  &env_task_paper_random,
                                        &env_task_anymal_rough};
#define NTASKS ((int)(sizeof tasks / sizeof tasks[0]))

int env_registry_count(void) { return NTASKS; }
const env_spec *env_registry_spec(int i) { return i >= 0 && i < NTASKS ? &tasks[i]->spec : NULL; }
int env_registry_find(const char *name)
{
    for (int i = 0; i < NTASKS; i++)
        if (name && strcmp(tasks[i]->spec.name, name) == 0) return i;
    return -1;
}

double env_cfg(const struct env *e, const char *key)
{
    for (int i = 0; i < e->spec.nconfig; i++)
        if (strcmp(e->spec.config[i].key, key) == 0) return e->cfg[i];
    return NAN;
}

int env_cfg_read(const struct env *e, const env_cfg_field *fields, int nf, void *cfg, char *err, size_t errlen)
{
    for (int i = 0; i < e->spec.nconfig; i++) {
        int found = 0;
        for (int f = 0; f < nf; f++)
            if (strcmp(fields[f].key, e->spec.config[i].key) == 0) {
                memcpy((unsigned char *)cfg + fields[f].offset, &e->cfg[i], sizeof(double));
                found = 1;
            }
        if (!found) {
            snprintf(err, errlen, "%s: configuration key '%s' has no field in the task", e->spec.name, e->spec.config[i].key);
            return -1;
        }
    }
    return 0;
}

/* "a, b, c": the choices of key c, into buf. */
static const char *choice_list(const env_config_key *c, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < c->nchoices; i++) {
        strncat(buf, i ? ", " : "", n - strlen(buf) - 1);
        strncat(buf, c->choices[i], n - strlen(buf) - 1);
    }
    return buf;
}

static const env_config_key *spec_key(const env_spec *s, const char *key)
{
    for (int i = 0; key && i < s->nconfig; i++)
        if (strcmp(s->config[i].key, key) == 0) return &s->config[i];
    return NULL;
}

int env_config_choice(const char *env, const char *key, const char *name, double *value, char *err, size_t errlen)
{
    const env_spec *s = env_registry_spec(env_registry_find(env));
    if (!s) {
        snprintf(err, errlen, "unknown env '%s'", env ? env : "(null)");
        return -1;
    }
    const env_config_key *c = spec_key(s, key);
    if (!c) {
        snprintf(err, errlen, "%s: unknown configuration key '%s'", s->name, key ? key : "(null)");
        return -1;
    }
    if (c->nchoices == 0) {
        snprintf(err, errlen, "%s: configuration '%s' takes a number, not the name '%s'", s->name, c->key,
                 name ? name : "(null)");
        return -1;
    }
    for (int i = 0; name && i < c->nchoices; i++)
        if (strcmp(c->choices[i], name) == 0) {
            *value = i;
            return 0;
        }
    char list[ENV_MAX_CHOICES * (ENV_CHOICE_MAX + 2)];
    snprintf(err, errlen, "%s: unknown %s '%s' (allowed: %s)", s->name, c->key, name ? name : "(null)",
             choice_list(c, list, sizeof list));
    return -1;
}

int env_cfg_solver(const struct env *e, double value, char *err, size_t errlen)
{
    const sim_solver_desc *d = sim_solver_at((int)value);
    if (!d || !d->solve) {
        snprintf(err, errlen, "%s: contact solver '%s' is not built yet", e->spec.name, d ? d->name : "?");
        return -1;
    }
    return (int)value;
}

double env_config(const env_t *e, const char *key) { return env_cfg(e, key); }
const env_spec *env_get_spec(const env_t *e) { return &e->spec; }
int env_num_worlds(const env_t *e) { return e->nworlds; }
const sim_model *env_model(const env_t *e) { return e->model; }
const sim_data *env_world_state(const env_t *e, int i) { return i >= 0 && i < e->nworlds ? e->worlds[i].d : NULL; }

void env_destroy(env_t **pe)
{
    if (!pe || !*pe) return;
    env_t *e = *pe;
    if (e->worlds)
        for (int i = 0; i < e->nworlds; i++) sim_data_destroy(&e->worlds[i].d);
    free(e->worlds);
    free(e->task_mem);
    if (e->task && e->task->destroy) e->task->destroy(e);
    sim_model_destroy(&e->model);
    free(e);
    *pe = NULL;
}

env_t *env_new_begin(const char *name, int nworlds, const env_kv *ov, int nov, uint64_t seed,
                     env_autoreset autoreset, char *err, size_t errlen)
{
    int t = env_registry_find(name);
    if (t < 0) {
        char list[256] = "";
        for (int i = 0; i < NTASKS; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, tasks[i]->spec.name, sizeof list - strlen(list) - 1);
        }
        snprintf(err, errlen, "unknown env '%s' (available: %s)", name ? name : "(null)", list);
        return NULL;
    }
    if (nworlds < 1) {
        snprintf(err, errlen, "num_worlds must be >= 1 (got %d)", nworlds);
        return NULL;
    }
    if (autoreset < ENV_AUTORESET_NEXT_STEP || autoreset > ENV_AUTORESET_DISABLED) {
        snprintf(err, errlen, "bad autoreset mode %d", (int)autoreset);
        return NULL;
    }
    const env_task *task = tasks[t];
    env_t *e = aligned_alloc(64, (sizeof *e + 63) / 64 * 64);
    if (!e) { snprintf(err, errlen, "out of memory"); return NULL; }
    memset(e, 0, sizeof *e);
    e->task = task;
    e->spec = task->spec;
    e->task_state_size = task->task_state_size;
    e->seed = seed;
    e->autoreset = autoreset;
    for (int i = 0; i < e->spec.nconfig; i++) e->cfg[i] = e->spec.config[i].def;
    for (int k = 0; k < nov; k++) {
        int found = -1;
        for (int i = 0; i < e->spec.nconfig; i++)
            if (ov[k].key && strcmp(ov[k].key, e->spec.config[i].key) == 0) found = i;
        if (found < 0) {
            snprintf(err, errlen, "%s: unknown configuration key '%s'", name, ov[k].key ? ov[k].key : "(null)");
            env_destroy(&e);
            return NULL;
        }
        const env_config_key *c = &e->spec.config[found];
        double v = ov[k].value;
        if (c->nchoices && (!isfinite(v) || v < 0 || v >= c->nchoices || v != floor(v))) {
            char list[ENV_MAX_CHOICES * (ENV_CHOICE_MAX + 2)];
            snprintf(err, errlen, "%s: configuration '%s' = %g is not one of its choices: allowed %s, or their indices 0 to %d",
                     name, c->key, v, choice_list(c, list, sizeof list), c->nchoices - 1);
            env_destroy(&e);
            return NULL;
        }
        if (!isfinite(v) || v < c->lo || v > c->hi || (c->is_int && v != floor(v))) {
            snprintf(err, errlen, "%s: configuration '%s' = %g is out of range: allowed %s in [%g, %g]", name, c->key, v,
                     c->is_int ? "integers" : "values", c->lo, c->hi);
            env_destroy(&e);
            return NULL;
        }
        e->cfg[found] = v;
    }
    e->model = NULL;
    if (task->configure(e, err, errlen)) {
        env_destroy(&e);
        return NULL;
    }
    /* the task's configure built e->model */
    e->scratch_size = sim_scratch_size(e->model);
    e->batch_size = task->step_worlds ? sim_batch_size(e->model) : 0;
    if (e->scratch_size > 1u << 20) {
        snprintf(err, errlen, "%s: per-step scratch of %zu bytes is too large (lower max_contacts)", name, e->scratch_size);
        env_destroy(&e);
        return NULL;
    }
    e->nworlds = nworlds;
    e->worlds = calloc((size_t)nworlds, sizeof *e->worlds);
    size_t ts = (e->task_state_size + 63) / 64 * 64;
    e->task_mem = ts ? calloc((size_t)nworlds, ts) : NULL;
    if (!e->worlds || (ts && !e->task_mem)) {
        snprintf(err, errlen, "out of memory for %d worlds", nworlds);
        env_destroy(&e);
        return NULL;
    }
    return e;
}

int env_new_worlds(env_t *e, int first, int n, char *err, size_t errlen)
{
    size_t ts = (e->task_state_size + 63) / 64 * 64;
    for (int i = first; i < first + n && i < e->nworlds; i++) {
        env_world *w = &e->worlds[i];
        w->d = sim_data_new_shared(e->model);
        if (!w->d) {
            snprintf(err, errlen, "out of memory for %d worlds", e->nworlds);
            return -1;
        }
        w->task = ts ? e->task_mem + (size_t)i * ts : NULL;
        w->seed = e->seed;
        w->stream = (uint64_t)i;
        w->episode = 0;
        w->needs_reset = 1;
    }
    return 0;
}

size_t env_world_bytes(const env_t *e)
{
    size_t ts = (e->task_state_size + 63) / 64 * 64;
    return sizeof(env_world) + ts + (e->worlds[0].d ? e->worlds[0].d->nbytes : 0);
}

void env_get_cost(const env_t *e, env_cost *out)
{
    out->world_bytes = e->worlds && e->worlds[0].d ? env_world_bytes(e) : 0;
    out->fixed_bytes = (sizeof *e + 63) / 64 * 64 + sizeof *e->model + e->task_fixed_bytes;
    int dec = e->spec.decimation > 0 ? e->spec.decimation : 1;
    const sim_solver_params *sp = &e->model->opt.sp;
    int solver = e->model->opt.solver;
    long cap = sim_solver_iteration_cap(solver, sp);
    out->step_work = (double)dec * (double)(cap > 0 ? cap : 1);
    out->decimation = dec;
    out->solver = solver;
    out->fallback = sim_solver_fallback(solver);
    out->fallback_cap = out->fallback >= 0 ? sim_solver_iteration_cap(out->fallback, sp) : 0;
    out->solver_cap = cap - out->fallback_cap > 0 ? cap - out->fallback_cap : 1;
    out->direct_cap = sim_solver_direct_cap(solver, sp);
    /* as sim_data sizes its contact arrays (ncon_max) */
    int nc = sim_model_max_contacts(e->model);
    if (e->model->opt.max_contacts > 0 && nc > e->model->opt.max_contacts) nc = e->model->opt.max_contacts;
    out->max_contacts = nc < SIM_SOLVER_MAX_CONTACTS ? nc : SIM_SOLVER_MAX_CONTACTS;
}

env_t *env_new(const char *name, int nworlds, const env_kv *ov, int nov, uint64_t seed, env_autoreset autoreset,
               char *err, size_t errlen)
{
    env_t *e = env_new_begin(name, nworlds, ov, nov, seed, autoreset, err, errlen);
    if (e && env_new_worlds(e, 0, nworlds, err, errlen)) env_destroy(&e);
    return e;
}

static void reset_one(env_t *e, env_world *w, float *obs)
{
    w->rng = env_rng_for(w->seed, w->stream, w->episode);
    w->steps = 0;
    w->needs_reset = 0;
    w->ep_return = 0;
    w->last_fallback = 0;
    memset(w->ep_terms, 0, sizeof w->ep_terms);
    e->task->reset_world(e, w, obs);
}

/* One scratch per call, on the caller's stack (worker threads have the default 8 MB stacks): the
 * worlds of a slice are computed one after the other in it, so it stays in cache while the batch's
 * states stream through memory. */
#define SCRATCH(e, name)                                                                            \
    unsigned char name##_raw[(e)->scratch_size + 64];                                               \
    void *name = (void *)(((uintptr_t)name##_raw + 63) & ~(uintptr_t)63)
/* The same for the call's batch (sim_batch.h; tasks with step_worlds), initialized for the env's model. */
#define BATCH(e, name)                                                                              \
    unsigned char name##_raw[(e)->batch_size + 64];                                                 \
    sim_batch *name = (e)->batch_size ? sim_batch_init((e)->model, (void *)(((uintptr_t)name##_raw + 63) & ~(uintptr_t)63)) : NULL

void env_reset(env_t *e, int first, int n, const int32_t *ids, const uint64_t *seeds, float *obs)
{
    const int od = e->spec.obs_dim;
    SCRATCH(e, scratch);
    for (int i = 0; i < n; i++) {
        int idx = ids ? ids[i] : first + i;
        env_world *w = &e->worlds[idx];
        sim_data_bind_scratch(e->model, w->d, scratch);
        if (seeds) {
            w->seed = seeds[i];
            w->stream = 0xFFFFFFFFFFFFFFFFull;
            w->episode = 0;
        } else {
            w->episode++;
        }
        reset_one(e, w, obs + (size_t)i * od);
    }
}

void env_critic_obs(const env_t *e, int first, int n, const int32_t *ids, float *critic)
{
    const int cd = e->spec.critic_dim;
    if (cd <= 0 || !e->task->critic_observe) return;
    for (int i = 0; i < n; i++) e->task->critic_observe(e, &e->worlds[ids ? ids[i] : first + i], critic + (size_t)i * cd);
}

int env_first_ended(const env_t *e, int first, int n, const int32_t *ids)
{
    if (e->autoreset != ENV_AUTORESET_DISABLED) return -1;
    for (int i = 0; i < n; i++)
        if (e->worlds[ids ? ids[i] : first + i].needs_reset) return i;
    return -1;
}

long env_check_actions(const env_t *e, int n, const float *a)
{
    long total = (long)n * e->spec.act_dim;
    for (long i = 0; i < total; i++)
        if (!isfinite(a[i])) return i;
    return -1;
}

/* The exponent field of a float: all ones exactly when it is infinite or NaN. */
#define F32_EXPONENT 0x7F800000u
static uint32_t f32_exponent(const float *x)
{
    uint32_t b;
    memcpy(&b, x, sizeof b);
    return b & F32_EXPONENT;
}

/* Nonzero when an observation row, its reward and its reward terms are all finite: the largest exponent field is
 * not all ones (an integer maximum, which the compiler vectorizes). */
static int step_finite(const float *o, int od, float r, const float *terms, int nt)
{
    uint32_t top = f32_exponent(&r);
    for (int k = 0; k < od; k++) {
        const uint32_t x = f32_exponent(o + k);
        top = x > top ? x : top;
    }
    for (int k = 0; k < nt; k++) {
        const uint32_t x = f32_exponent(terms + k);
        top = x > top ? x : top;
    }
    return top != F32_EXPONENT;
}

/* The outputs of one env_step call (rows indexed by the call's position i). */
typedef struct {
    const int32_t *ids;
    int first;
    const float *act;
    float *obs, *reward;
    uint8_t *terminated, *truncated;
    env_info *info;
    void *scratch;
    sim_batch *batch;
} step_call;

static env_world *call_world(env_t *e, const step_call *c, int i) { return &e->worlds[c->ids ? c->ids[i] : c->first + i]; }

/* Steps the worlds at rows rows[0..n-1] (n <= ENV_BATCH) of the call, none of them due for a reset: the task's
 * env step (all n at once when it has step_worlds), then per world the checks, counters, flags, episode statistics
 * and autoreset. */
static void step_rows(env_t *e, const step_call *c, const int *rows, int n)
{
    const int od = e->spec.obs_dim, ad = e->spec.act_dim, nt = e->spec.nterms;
    env_world *ws[ENV_BATCH];
    const float *act[ENV_BATCH];
    float *obs[ENV_BATCH], rew[ENV_BATCH], terms[ENV_BATCH * ENV_MAX_TERMS];
    uint8_t term[ENV_BATCH], trunc[ENV_BATCH];
    int failed[ENV_BATCH];
    uint64_t it0[ENV_BATCH], cap0[ENV_BATCH], fb0[ENV_BATCH], ccp0[ENV_BATCH], jl0[ENV_BATCH];
    for (int j = 0; j < n; j++) {
        ws[j] = call_world(e, c, rows[j]);
        act[j] = c->act + (size_t)rows[j] * ad;
        obs[j] = c->obs + (size_t)rows[j] * od;
        it0[j] = ws[j]->solver_iterations, cap0[j] = ws[j]->solver_capped, fb0[j] = ws[j]->solver_fallbacks;
        ccp0[j] = ws[j]->solver_ccp_answers;
        jl0[j] = ws[j]->joint_limits_active;
    }
    if (e->task->step_worlds) {
        e->task->step_worlds(e, ws, n, act, obs, rew, terms, term, trunc, failed, c->batch);
    } else {
        for (int j = 0; j < n; j++)
            failed[j] = e->task->step_world(e, ws[j], act[j], obs[j], &rew[j], terms + (size_t)j * nt, &term[j], &trunc[j]);
    }
    env_info *info = c->info;
    for (int j = 0; j < n; j++) {
        const int i = rows[j];
        env_world *w = ws[j];
        float *o = obs[j], *tj = terms + (size_t)j * nt;
        float r = rew[j];
        int physics = failed[j];
        w->last_fallback = w->solver_fallbacks != fb0[j];
        if (!physics && !step_finite(o, od, r, tj, nt)) {
            /* finite physics state, but an output overflowed float32 (or a term is NaN): no non-finite
             * value may leave the env, so this is a physics failure like any other, reported now */
            e->task->reset_world(e, w, o);
            r = 0;
            memset(tj, 0, sizeof(float) * (size_t)nt);
            term[j] = trunc[j] = 0;
            physics = 1;
        }
        if (info && info->counters) {
            info->counters->world_steps++;
            info->counters->physics_resets += (uint64_t)physics;
            info->counters->solver_iterations += w->solver_iterations - it0[j];
            info->counters->solver_capped += w->solver_capped - cap0[j];
            info->counters->solver_fallbacks += w->solver_fallbacks - fb0[j];
            info->counters->solver_ccp_answers += w->solver_ccp_answers - ccp0[j];
            info->counters->joint_limits_active += w->joint_limits_active - jl0[j];
        }
        w->steps++;
        if (!term[j] && w->steps >= e->spec.max_episode_steps) trunc[j] = 1;
        if (physics) trunc[j] = 1;     /* the world was reset: its episode ends here, truncated */
        c->reward[i] = r;
        c->terminated[i] = term[j];
        c->truncated[i] = trunc[j];
        w->ep_return += r;
        for (int k = 0; k < nt; k++) w->ep_terms[k] += tj[k];
        if (info && info->reward_terms) memcpy(info->reward_terms + (size_t)i * nt, tj, sizeof(float) * (size_t)nt);
        if (info && info->physics_reset) info->physics_reset[i] = (uint8_t)physics;
        if (term[j] || trunc[j]) {
            if (info) {
                if (info->episode_done) info->episode_done[i] = 1;
                if (info->episode_return) info->episode_return[i] = w->ep_return;
                if (info->episode_length) info->episode_length[i] = w->steps;
                if (info->episode_terms) memcpy(info->episode_terms + (size_t)i * nt, w->ep_terms, sizeof(float) * (size_t)nt);
            }
            if (e->autoreset == ENV_AUTORESET_SAME_STEP) {
                if (info && info->final_obs) memcpy(info->final_obs + (size_t)i * od, o, sizeof(float) * (size_t)od);
                w->episode++;
                reset_one(e, w, o);
            } else {
                w->needs_reset = 1;
            }
        }
    }
}

int env_step(env_t *e, int first, int n, const int32_t *ids, const float *act, float *obs, float *reward,
             uint8_t *terminated, uint8_t *truncated, env_info *info)
{
    const int od = e->spec.obs_dim, nt = e->spec.nterms;
    int refused = 0;
    SCRATCH(e, scratch);
    BATCH(e, batch);
    const step_call call = {ids, first, act, obs, reward, terminated, truncated, info, scratch, batch};
    int rows[ENV_BATCH], pending = 0; /* worlds to step, stepped ENV_BATCH at a time */
    for (int i = 0; i < n; i++) {
        env_world *w = call_world(e, &call, i);
        sim_data_bind_scratch(e->model, w->d, scratch);
        float *o = obs + (size_t)i * od;
        if (info) {
            if (info->physics_reset) info->physics_reset[i] = 0;
            if (info->episode_done) info->episode_done[i] = 0;
            if (info->episode_return) info->episode_return[i] = 0;
            if (info->episode_length) info->episode_length[i] = 0;
            if (info->episode_terms) memset(info->episode_terms + (size_t)i * nt, 0, sizeof(float) * (size_t)nt);
            if (info->reward_terms) memset(info->reward_terms + (size_t)i * nt, 0, sizeof(float) * (size_t)nt);
            if (info->final_obs) memset(info->final_obs + (size_t)i * od, 0, sizeof(float) * (size_t)od);
            if (info->autoreset) info->autoreset[i] = 0;
            if (info->refused) info->refused[i] = 0;
        }
        if (w->needs_reset) {
            if (e->autoreset == ENV_AUTORESET_DISABLED) {
                /* an ended (or never reset) world stays so until reset: refused, last observation */
                refused++;
                if (info && info->refused) info->refused[i] = 1;
                e->task->observe(e, w, o);
                reward[i] = 0;
                terminated[i] = truncated[i] = 0;
                continue;
            }
            /* NEXT_STEP autoreset (or a world never reset): this step resets and ignores the action */
            if (info && info->autoreset) info->autoreset[i] = 1;
            w->episode++;
            reset_one(e, w, o);
            reward[i] = 0;
            terminated[i] = truncated[i] = 0;
            continue;
        }
        rows[pending++] = i;
        if (pending == ENV_BATCH) step_rows(e, &call, rows, pending), pending = 0;
    }
    if (pending) step_rows(e, &call, rows, pending);
    return refused;
}

/* Adds the solver's work in w's last physics step to its counters. */
static int counted(env_world *w, int rc)
{
    w->solver_iterations += (uint64_t)w->d->stats.iterations;
    w->solver_capped += (uint64_t)(w->d->stats.ncon > 0 && !w->d->stats.converged);
    w->solver_fallbacks += (uint64_t)(w->d->stats.fallback != 0);
    w->solver_ccp_answers += (uint64_t)(w->d->stats.answer == SIM_ANSWER_CCP);
    w->joint_limits_active += (uint64_t)w->d->stats.nlim_active;
    if (w->observer && rc == 0) w->observer(w->observer_ctx, w->d);
    return rc;
}

void env_set_physics_observer(env_t *e, void (*fn)(void *ctx, const sim_data *d), void *const *ctx)
{
    for (int i = 0; i < e->nworlds; i++) { /* ctx[i] NULL: world i unobserved; ctx NULL: every world, context NULL */
        e->worlds[i].observer = ctx && !ctx[i] ? NULL : fn;
        e->worlds[i].observer_ctx = fn && ctx ? ctx[i] : NULL;
    }
}

int env_world_physics(const sim_model *m, env_world *w, double dt, const sim_batch *b, int lane, sim_stage done)
{
    return counted(w, b ? sim_batch_step(m, b, lane, w->d, dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE)
                        : sim_step_stages(m, w->d, dt, done, SIM_STAGE_INTEGRATE));
}

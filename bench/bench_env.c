/* herd-bench env — batched environment stepping in-process.
 *
 *   herd-bench env [--env anymal_c-walk] [--worlds 4096] [--threads T] [--steps S] [--repeats R] [--warmup W]
 *   herd-bench env --profile [--env anymal_c-walk] [--solver NAME] [--worlds 256] [--steps S] [--repeats R] [--warmup W]
 *   herd-bench env --sweep 64,256,...,65536 [--threads T] [--steps S] [--repeats R] [--warmup W]
 *   herd-bench env --solvers A,B,... | --actuators pd,lstm,... [--worlds N] [--threads T] [--steps S] [--repeats R]
 *   herd-bench env --pair joint_limits=0,1 [--env ...] [--worlds N] [--threads T] [--steps S] [--repeats R]
 *   herd-bench env --envs anymal_c-walk,anymal_c-rough [--worlds N] [--threads T] [--steps S] [--repeats R]
 *   ... --config key=v,key=v,...   (--profile, --sweep, --solvers, --actuators, --pair: keys set in every
 *                                   configuration)
 *   herd-bench env --vs-mujoco ...   (bench_env_mujoco.c)
 *
 * T threads (pinned, one contiguous slice of worlds each, taken in pieces, a thread done with its slice helping
 * with the others' as the server's workers do: bench_share; a barrier per step) step all worlds with
 * fixed pseudo-random actions in [-1, 1].  Every timed run starts from the same reset (fixed seeds) and
 * the same W (25) warm-up steps (past the landing), so every configuration does exactly the same work
 * (the envs are deterministic).  Without --threads, runs T = 1 and T = 2 and reports the speedup.
 * Baselines measured in the same run, per thread: single worlds (32 worlds of the same env, stepped one
 * world per call over the same steps: no batching; the batch repeats exactly these 32 worlds, see
 * bench_env_prepare), and the solver bench's single-world trot scenario (1 ms, feet + base).  One JSON line per
 * configuration; medians over repeats, with the per-repeat figures ("..._reps") for the spread.
 * --sweep 64,256,...: throughput per thread against world count, every N in the same process, repeats
 * interleaved across N (bench_env_sweep).  --solvers / --actuators / --pair key=v1,v2,...: the same worlds and
 * actions under each contact solver / actuator model / value of one configuration key, repeats interleaved,
 * ratios to the first (--envs: the same under each task, with the same action size; a task's worlds start from its
 * own resets); with lstm among the actuators also the network's share of the lstm env step (the network timed alone on the same number of worlds, batched as env_step
 * batches it) and lstm's extra time over pd, both in thread CPU time.
 * --once: reset and warm up once per thread count, the repeats then continue the trajectories (cheaper for
 * large N; repeat r still does the same work for every N and T, the worlds repeating with period 32).
 * Two clocks: wall time (env_steps_per_s; what a trainer sees, but inflated by other processes on a
 * loaded machine) and the worker threads' CPU time (cpu_env_steps_per_s_per_thread: worlds x steps per
 * CPU-second of the stepping threads, which time slicing does not inflate; cache sharing still counts).
 * The env and sweep lines carry the memory too (env_get_cost): bytes_per_world, and shared_bytes, what the worlds
 * share (the model, the task's tables, a terrain field).
 *
 * --profile: where a physics step's time goes, per stage, on the task's own worlds and model (after the
 * same reset and warm-up).  One thread steps every world as env_step does, SIM_BATCH_LANES consecutive worlds at
 * a time: their actuators (the task's model: PD with its kp, kd and torque limit, or the network with its state per
 * joint, behind the DC clip for dc; target = action_scale a + default pose), one
 * sim_batch_smooth (kinematics, velocities, CRBA, LTDL, RNEA, free velocity and, on flat ground, every geometry's
 * contact candidates; its time shared equally by the batch's worlds), then per world the stages of sim_batch_step
 * one call each (bit-for-bit sim_step), timing each: SMOOTH (load), COLLISION, CONTACTS, SOLVE and INTEGRATE;
 * to split prepare without timing code inside sim/, the contact Jacobians (sim_jacobian_sparse per contact) are
 * timed on their own just after it; "delassus" is prepare minus them (contact-frame Jacobians, L^-T J^T, G = S^T S,
 * targets).  Worlds the task
 * would end (walk: base contact; failed physics) are reset through env_reset, as env_step's autoreset does.
 * Env overhead = the same steps through env_step (observation, reward, noise) minus actuator + physics with those
 * resets, both in thread CPU time.  Reference in the same run: the solver bench's trot step (CPU time).
 * --solver NAME: the task with that contact solver instead of its own.  Of the staged runs' contact solves, the
 * JSON gives the shares whose answer the solver flags Coulomb, CCP or its own model (coulomb_fraction,
 * ccp_fraction, own_fraction: sim_solver_stats.answer), that went to a fallback (fallback_fraction), and whose
 * Coulomb violation (sim_contact_coulomb_error) is below the solver's tol whatever the flag says
 * (coulomb_measured_fraction).
 * What batching the solve over worlds could give (JSON "lockstep"): the staged runs' solves as the jobs of a solve that
 * runs SIM_BATCH_LANES worlds in the lanes of a vector, in lock step (bench_lockstep_add: a group sweeps as often as
 * its slowest world, each sweep over its most blocks), grouped as the env groups worlds (consecutive) and grouped by
 * block count (a scheduler that sorts the worlds first).  The lane efficiencies bound such a solve from below at the
 * staged solve's time / (lanes x efficiency); from below, as the model leaves out the divergence within a block's
 * solve (stick or slip, the slip search's steps) and counts a fallback by its sweeps only.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_env_work.h"
#include "env.h"
#include "env_actuator.h"
#include "env_actuator_net.h"
#include "env_anymal_model.h"
#include "env_scenario.h"
#include "sim_batch.h"
#include "sim_dynamics.h"
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_step.h"
#include "sim_urdf.h"

typedef struct worker {
    env_t *e;
    int core, steps, od, ad;
    float *act, *obs, *rew;
    uint8_t *term, *trunc;
    pthread_barrier_t *bar;
    bench_share *share;         /* the slices, taken in pieces as the server's workers do (bench.h) */
    int step;                   /* the step being taken */
    double busy;                /* seconds spent stepping (the rest is waiting at the barrier) */
    double cpu;                 /* CPU seconds of this thread over the run */
    long helped;                /* worlds stepped from other threads' slices */
} worker;

static void step_piece(int f, int m, void *ctx)
{
    const worker *w = ctx;
    const float *act = w->act + (size_t)(w->step & 7) * (size_t)env_num_worlds(w->e) * w->ad + (size_t)f * w->ad;
    env_step(w->e, f, m, NULL, act, w->obs + (size_t)f * w->od, w->rew + f, w->term + f, w->trunc + f, NULL);
}

static void *work(void *p)
{
    worker *w = p;
    bench_pin(w->core);
    w->busy = 0;
    w->helped = 0;
    uint64_t c0 = bench_thread_cpu_ns();
    for (int s = 0; s < w->steps; s++) {
        uint64_t t0 = bench_now_ns();
        w->step = s;
        w->helped += bench_share_step(w->share, w->core, step_piece, w);
        w->busy += (double)(bench_now_ns() - t0) * 1e-9;
        /* one thread rewinds the cursors for the next step, before anyone can start it */
        if (pthread_barrier_wait(w->bar) == PTHREAD_BARRIER_SERIAL_THREAD) bench_share_rewind(w->share);
        pthread_barrier_wait(w->bar);
    }
    w->cpu = (double)(bench_thread_cpu_ns() - c0) * 1e-9;
    return NULL;
}

/* Seconds to step all worlds `steps` times with `threads` threads; per-thread busy and CPU seconds, and the
 * share of world-steps taken by helping threads. */
static double g_busy[64], g_cpu[64], g_helped;

static double run(env_t *e, int threads, int steps, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    const env_spec *sp = env_get_spec(e);
    int n = env_num_worlds(e);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    worker w[BENCH_MAX_THREADS];
    pthread_t th[BENCH_MAX_THREADS];
    static bench_share share;
    bench_share_init(&share, n, threads);
    uint64_t t0 = bench_now_ns();
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){.e = e, .core = t, .steps = steps, .od = sp->obs_dim, .ad = sp->act_dim, .act = act,
                        .obs = obs, .rew = rew, .term = term, .trunc = trunc, .bar = &bar, .share = &share};
        if (t) pthread_create(&th[t], NULL, work, &w[t]);
    }
    work(&w[0]);
    for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
    uint64_t t1 = bench_now_ns();
    long helped = 0;
    for (int t = 0; t < threads; t++) g_busy[t] = w[t].busy, g_cpu[t] = w[t].cpu, helped += w[t].helped;
    g_helped = (double)helped / ((double)n * steps);
    pthread_barrier_destroy(&bar);
    bench_pin(0);
    return (double)(t1 - t0) * 1e-9;
}

/* The solver bench's trot scenario (1 ms, feet + base, one world): physics steps per second.  Wall clock without
 * the scripted control (cpu == 0), or this thread's CPU time of control + step (cpu == 1; the control is ~1 %). */
static double trot_single_world(int steps, int cpu)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    if (!m || env_scenario_configure_model(m, ENV_SCN_TROT, err, sizeof err)) { sim_model_destroy(&m); return NAN; }
    sim_data *d = sim_data_new(m);
    env_scenario s;
    env_scenario_init(&s, m, d, ENV_SCN_TROT, 42, err, sizeof err);
    uint64_t tc = 0, t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
    for (int i = 0; i < steps; i++) {
        uint64_t a = cpu ? 0 : bench_now_ns();
        env_scenario_control(&s, m, d, 1e-3);
        if (!cpu) tc += bench_now_ns() - a;
        sim_step(m, d, 1e-3);
    }
    double sec = cpu ? (double)(bench_thread_cpu_ns() - c0) * 1e-9 : (double)(bench_now_ns() - t0 - tc) * 1e-9;
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return steps / sec;
}

/* Prints "name":[x0,x1,...] (per-repeat figures). */
static void print_reps(const char *name, const double *x, int n, double scale)
{
    printf(",\"%s\":[", name);
    for (int i = 0; i < n; i++) printf("%s%.1f", i ? "," : "", x[i] * scale);
    printf("]");
}

/* ---- --profile ---- */

enum { ST_PD, ST_DYN, ST_LOAD, ST_COLL, ST_JAC, ST_DELASSUS, ST_SOLVE, ST_FINISH, ST_ENV, ST_N };
static const char *const stage_name[ST_N] = {"actuator", "dynamics", "load", "collision", "jacobians", "delassus", "solve",
                                             "finish", "env_overhead"};
static const char *const stage_what[ST_N] = {
    "the task's actuator (12 joints): the PD law, or the network (the batch's worlds in one call)",
    "sim_batch_smooth (4 worlds a call), per world: kinematics, CRBA, LTDL, RNEA, free velocity, contact candidates",
    "sim_batch_step through SMOOTH: a world's smooth results out of the batch",
    "sim_batch_step's COLLISION: the world's candidates (13 geometries) into its contacts",
    "contact Jacobians (sim_jacobian_sparse)", "rest of prepare: contact-frame Jacobians, L^-T J^T, Delassus, targets",
    "contact solver (the SOLVE stage)", "impulses, warm-start cache, position update",
    "env_step minus actuator and physics (obs, reward, noise)"};

#define PROFILE_DROP_NS 300000u

/* The profile steps copies of the env's worlds (env_world_state is read-only): pw[i] takes world i's state. */
static void profile_take(const env_t *e, sim_data *const *pw, int first, int n)
{
    for (int i = first; i < first + n; i++) sim_data_copy_state(env_model(e), pw[i], env_world_state(e, i));
}

/* The copy of world i with the scratch bound, and its PD targets from action a: action_scale * clip(a) + default
 * pose. */
static sim_data *profile_world(const sim_model *m, sim_data *const *pw, int i, void *scratch, const env_anymal_joints *jm,
                               const float *a, double scale, double clip, double *target)
{
    sim_data *d = pw[i];
    sim_data_bind_scratch(m, d, scratch);
    for (int j = 0; j < ENV_ANYMAL_NJ; j++) {
        double x = a[j];
        target[j] = scale * (x > clip ? clip : x < -clip ? -clip : x) + jm->q_default[j];
    }
    return d;
}

/* After an env step of world i (its copy d): reset it through the env (env_reset, seed 1000 + i % 32, as
 * bench_env_prepare) and take the new state into the copy where the task would have: its physics failed or ran away
 * (env_anymal_runaway, after any substep), or (walk)
 * a base contact carries over 1 N (the walk task's termination, from the last substep's impulses).  So the profile's
 * worlds follow the same kind of episodes as env_step's. */
static int profile_end(env_t *e, sim_data *const *pw, int i, const sim_data *d, int failed, int walk, double dt,
                       float *obs)
{
    const sim_model *m = env_model(e);
    for (int c = 0; walk && !failed && c < d->ncon; c++)
        if (env_anymal_geom_kind(m, d->con[c].geom, NULL) == ENV_GEOM_BASE &&
            sqrt(d->lambda[3 * c] * d->lambda[3 * c] + d->lambda[3 * c + 1] * d->lambda[3 * c + 1] +
                 d->lambda[3 * c + 2] * d->lambda[3 * c + 2]) / dt > 1.0)
            failed = 1;
    if (!failed) return 0;
    int32_t id = i;
    uint64_t seed = 1000 + (uint64_t)(i % 32);
    env_reset(e, 0, 1, &id, &seed, obs);
    profile_take(e, pw, i, 1);
    return 1;
}

/* The profile's actuator torques of the live worlds dw[row[l]] (l < nl) of a batch whose first world is g: the task's
 * PD law, or (net not NULL) the network over their joints, their states st[world][12] side by side (one call when the
 * whole batch is live), behind the DC clip when dc. */
static void profile_actuator(const env_anymal_joints *jm, sim_data *const *dw, const int *row, int nl, int n, int g,
                             double (*target)[ENV_ANYMAL_NJ], double kp, double kd, double tau_max,
                             const env_actuator_net *net, env_actuator_state *st, env_actuator_lanes *lanes, int dc)
{
    enum { NJ = ENV_ANYMAL_NJ };
    if (!net) {
        for (int l = 0; l < nl; l++) env_anymal_pd(jm, dw[row[l]], target[row[l]], kp, kd, tau_max, NULL);
        return;
    }
    double err[SIM_BATCH_LANES * NJ], vel[SIM_BATCH_LANES * NJ], tau[SIM_BATCH_LANES * NJ];
    for (int l = 0; l < nl; l++)
        for (int q = 0; q < NJ; q++) {
            err[l * NJ + q] = target[row[l]][q] - dw[row[l]]->q[jm->qadr[q]];
            vel[l * NJ + q] = dw[row[l]]->u[jm->dof[q]];
        }
    if (lanes) {
        /* float32, as the env runs it: one call over the batch's joints (g is a multiple of SIM_BATCH_LANES, so its
           first joint starts a block); the rows of worlds not live get zero inputs, as env_actuator_torques gives */
        double e2[SIM_BATCH_LANES * NJ] = {0}, v2[SIM_BATCH_LANES * NJ] = {0}, t2[SIM_BATCH_LANES * NJ];
        for (int l = 0; l < nl; l++)
            for (int q = 0; q < NJ; q++) e2[row[l] * NJ + q] = err[l * NJ + q], v2[row[l] * NJ + q] = vel[l * NJ + q];
        env_actuator_net_step_lanes_f32(net, n * NJ, e2, v2, lanes + (size_t)g * NJ / 8, t2, NULL, 0);
        for (int l = 0; l < nl; l++)
            for (int q = 0; q < NJ; q++) tau[l * NJ + q] = t2[row[l] * NJ + q];
    } else if (nl == n) {
        env_actuator_net_step(net, n * NJ, err, vel, st + (size_t)g * NJ, tau, NULL, 0);
    } else {
        for (int l = 0; l < nl; l++)
            env_actuator_net_step(net, NJ, err + l * NJ, vel + l * NJ, st + (size_t)(g + row[l]) * NJ, tau + l * NJ, NULL, 0);
    }
    for (int l = 0; l < nl; l++)
        for (int q = 0; q < NJ; q++) {
            double t = tau[l * NJ + q];
            dw[row[l]]->tau[jm->dof[q]] = dc ? env_actuator_dc_clip(t, vel[l * NJ + q], 120, 80, 7.5) : t;
        }
}


/* --config key=v,...: keys set in every configuration of a sweep or pairing (a value is a number or, for a key
 * with named choices, a name), and the text as given, for the JSON lines. */
#define BASE_KV_MAX 16
static env_kv g_base_kv[BASE_KV_MAX];
static char g_base_key[BASE_KV_MAX][40];
static int g_nbase;
static const char *g_base_text = "";

static int parse_base_config(const char *name, const char *text)
{
    g_base_text = text;
    for (const char *c = text; *c;) {
        const size_t len = strcspn(c, ",");
        char item[80];
        snprintf(item, sizeof item, "%.*s", (int)(len < 79 ? len : 79), c);
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1] || eq - item > 39 || g_nbase == BASE_KV_MAX) {
            fprintf(stderr, "herd-bench env: --config wants key=value,... (at most %d), not '%s'\n", BASE_KV_MAX, item);
            return 2;
        }
        *eq = 0;
        snprintf(g_base_key[g_nbase], sizeof g_base_key[g_nbase], "%.39s", item);
        char cerr[256];
        double v;
        if (bench_config_value(name, item, eq + 1, &v, cerr, sizeof cerr)) {
            fprintf(stderr, "herd-bench env: --config: %s\n", cerr);
            return 2;
        }
        g_base_kv[g_nbase].key = g_base_key[g_nbase];
        g_base_kv[g_nbase++].value = v;
        c += len;
        if (*c) c++;
    }
    return 0;
}

static int base_has_key(const char *key)
{
    for (int i = 0; i < g_nbase; i++)
        if (!strcmp(g_base_kv[i].key, key)) return 1;
    return 0;
}

static int spec_has_key(const char *name, const char *key)
{
    const env_spec *sp = env_registry_spec(env_registry_find(name));
    for (int i = 0; sp && i < sp->nconfig; i++)
        if (!strcmp(sp->config[i].key, key)) return 1;
    return 0;
}

static int gcd_int(int a, int b)
{
    while (b) {
        const int t = a % b;
        a = b, b = t;
    }
    return a;
}

static int bench_env_profile(int argc, char **argv, const char *name, int worlds, int steps, int repeats, int warmup)
{
    char err[512];
    /* --solver NAME: the task with that contact solver (its config key "solver"), else the task's own */
    const char *solver_name = bench_arg(argc, argv, "--solver", NULL);
    env_kv solver_kv = {"solver", 0};
    if (solver_name && env_config_choice(name, "solver", solver_name, &solver_kv.value, err, sizeof err)) {
        fprintf(stderr, "herd-bench env --profile: %s\n", err);
        return 2;
    }
    env_kv kvs[BASE_KV_MAX + 1];
    memcpy(kvs, g_base_kv, sizeof(env_kv) * (size_t)g_nbase);
    if (solver_name) kvs[g_nbase] = solver_kv;
    env_t *e = env_new(name, worlds, kvs, g_nbase + (solver_name ? 1 : 0), 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!e) { fprintf(stderr, "herd-bench env --profile: %s\n", err); return 2; }
    const sim_model *m = env_model(e);
    const int walk = strstr(name, "walk") != NULL;
    env_anymal_joints jm;
    if (env_anymal_joints_init(&jm, m, err, sizeof err)) {
        fprintf(stderr, "herd-bench env --profile: %s (the profile needs an ANYmal task)\n", err);
        env_destroy(&e);
        return 2;
    }
    const env_spec *sp = env_get_spec(e);
    double kp = env_config(e, "kp"), kd = env_config(e, "kd"), tau_max = env_config(e, "torque_limit");
    double scale = env_config(e, "action_scale"), clip = env_config(e, "action_clip"), dt = sp->sim_dt;
    if (!isfinite(kp) || !isfinite(kd) || !isfinite(tau_max) || !isfinite(scale) || !isfinite(clip)) {
        fprintf(stderr, "herd-bench env --profile: %s lacks kp/kd/torque_limit/action_scale/action_clip\n", name);
        env_destroy(&e);
        return 2;
    }
    /* the task's actuator model (its delay and gain draws are not profiled: they are off by default) */
    const double model = env_config(e, "actuator");
    const int use_net = model == ENV_ACTUATOR_LSTM || model == ENV_ACTUATOR_DC, dc = model == ENV_ACTUATOR_DC;
    if (dc && (env_config(e, "dc_saturation") != 120 || env_config(e, "dc_effort_limit") != 80 ||
               env_config(e, "dc_velocity_limit") != 7.5)) {
        fprintf(stderr, "herd-bench env --profile: the profile's dc clip is the default one (120, 80, 7.5)\n");
        env_destroy(&e);
        return 2;
    }
    env_actuator_net *net = use_net ? env_actuator_net_new(NULL, err, sizeof err) : NULL;
    env_actuator_state *ast = use_net ? calloc((size_t)worlds * ENV_ANYMAL_NJ, sizeof *ast) : NULL;
    const int f32 = use_net && (int)env_config(e, "net_precision") == ENV_ACTUATOR_NET_FLOAT32;
    /* float32: every world's joints as the vectors' lanes, a batch of SIM_BATCH_LANES worlds from a block's start */
    _Static_assert(SIM_BATCH_LANES * ENV_ANYMAL_NJ % 8 == 0, "a batch's joints fill whole blocks");
    env_actuator_lanes *alanes = f32 ? aligned_alloc(_Alignof(env_actuator_lanes),
                                                     sizeof *alanes * ENV_ACTUATOR_LANES((size_t)worlds * ENV_ANYMAL_NJ + SIM_BATCH_LANES * ENV_ANYMAL_NJ))
                                     : NULL;
    if (use_net && (!net || !ast || (f32 && !alanes))) {
        fprintf(stderr, "herd-bench env --profile: actuator network: %s\n", net ? "out of memory" : err);
        exit(2);
    }
    size_t na = (size_t)worlds * sp->act_dim;
    float *act = bench_env_actions(na * 8), *obs = malloc(sizeof(float) * (size_t)worlds * sp->obs_dim);
    float *rew = malloc(sizeof(float) * (size_t)worlds);
    uint8_t *term = malloc((size_t)worlds), *trunc = malloc((size_t)worlds);
    unsigned char *scratch_raw = malloc(sim_scratch_size(m) + 64);
    void *scratch = (void *)(((uintptr_t)scratch_raw + 63) & ~(uintptr_t)63);
    double *jp = calloc((size_t)3 * m->nv, sizeof(double));
    int cols[SIM_MAX_DOF];
    void *batch_mem = aligned_alloc(64, sim_batch_size(m));
    sim_batch *batch = sim_batch_init(m, batch_mem);
    sim_data **pw = calloc((size_t)worlds, sizeof *pw);
    for (int i = 0; pw && i < worlds; i++) pw[i] = sim_data_new_shared(m);
    if (!pw || !pw[worlds - 1]) {
        fprintf(stderr, "herd-bench env --profile: out of memory\n");
        exit(2);
    }
    double rep[ST_N][64], tot[64], plain_rep[64], con_rep[64], it_rep[64], cap_rep[64], trot_rep[64], lim_rep[64],
           lima_rep[64];
    long lsteps_all = 0, liters_all = 0, lfall_all = 0, iters_all = 0, steps_all = 0; /* steps with limit rows, all reps */
    /* contact solves of the staged runs, and the models their answers satisfy (sim_solver_stats.answer); apart from
       the solver's own flag, the answers whose Coulomb violation (sim_contact_coulomb_error) is below the solver's
       tol, measured the same way for every solver, and the solves handed to a fallback (stats.fallback) */
    long solves = 0, coulomb = 0, ccp = 0, own = 0, coulomb_measured = 0, fallbacks = 0;
    const double tol = m->opt.sp.tol;
    /* --harvest FILE: the problems of the first repeat whose sweeps stalled (the stall detector fired), appended to
       FILE as "n, G (3n x 3n), c (3n), mu (n), warm start (3n)" in %.17g, one problem after another */
    const char *harvest_path = bench_arg(argc, argv, "--harvest", NULL);
    FILE *harvest = harvest_path ? fopen(harvest_path, "a") : NULL;
    if (harvest_path && !harvest) { fprintf(stderr, "herd-bench env --profile: cannot open %s\n", harvest_path); return 2; }
    long harvested = 0;
    double warm[3 * SIM_SOLVER_MAX_CONTACTS];
    int R = repeats < 64 ? repeats : 64;
    long dropped = 0;
    /* the staged pass's solves as jobs of a lock-step batch over worlds (bench_lockstep_add): per substep of an env
       step, each world's blocks and sweeps (0 for a world without a solve), in the env's groups of SIM_BATCH_LANES
       consecutive worlds and in groups by block count; work and cost summed over every repeat */
    const size_t nsub = (size_t)sp->decimation * (size_t)worlds;
    int *lk_n = calloc(nsub, sizeof(int)), *lk_s = calloc(nsub, sizeof(int)), *lk_order = malloc(sizeof(int) * (size_t)worlds);
    double lk_env[2] = {0, 0}, lk_con[2] = {0, 0};
    if (!lk_n || !lk_s || !lk_order) {
        fprintf(stderr, "herd-bench env --profile: out of memory\n");
        exit(2);
    }
    for (int q = 0; q < R; q++) {
        /* 1. env_step over the steps (the reference, and the env overhead); CPU time of this thread */
        bench_env_prepare(e, warmup, act, obs, rew, term, trunc);
        uint64_t t0 = bench_thread_cpu_ns();
        for (int s = 0; s < steps; s++)
            env_step(e, 0, worlds, NULL, act + (size_t)(s & 7) * na, obs, rew, term, trunc, NULL);
        double env_ns = (double)(bench_thread_cpu_ns() - t0);
        /* 2. the same steps from the same states, actuator + sim_step only (same CPU clock); 3. once more, stage by
         * stage (monotonic clock around each stage; physics steps that took over PROFILE_DROP_NS, i.e. were
         * preempted on a loaded machine, are left out of the stage means) */
        double plain_ns = 0, ns[ST_N] = {0};
        long ncon = 0, iters = 0, capped = 0, nsteps = 0, kept = 0, nlim = 0, nlima = 0, lsteps = 0, liters = 0, lfall = 0;
        for (int staged = 0; staged < 2; staged++) {
            bench_env_prepare(e, warmup, act, obs, rew, term, trunc);
            profile_take(e, pw, 0, worlds);
            if (ast) env_actuator_state_zero(ast, worlds * ENV_ANYMAL_NJ);
            if (alanes) env_actuator_lanes_zero(alanes, 0, (worlds + SIM_BATCH_LANES) * ENV_ANYMAL_NJ);
            t0 = bench_thread_cpu_ns();
            for (int s = 0; s < steps; s++)
                for (int g = 0; g < worlds; g += SIM_BATCH_LANES) {
                    /* as env_step: SIM_BATCH_LANES consecutive worlds at a time, each substep their actuators, one
                       sim_batch_smooth, then world by world the rest of the step */
                    const int n = worlds - g < SIM_BATCH_LANES ? worlds - g : SIM_BATCH_LANES;
                    sim_data *dw[SIM_BATCH_LANES];
                    double target[SIM_BATCH_LANES][ENV_ANYMAL_NJ];
                    int bad[SIM_BATCH_LANES];
                    for (int j = 0; j < n; j++) {
                        dw[j] = profile_world(m, pw, g + j, scratch, &jm, act + (size_t)(s & 7) * na + (size_t)(g + j) * sp->act_dim,
                                              scale, clip, target[j]);
                        bad[j] = 0;
                    }
                    for (int k = 0; k < sp->decimation; k++) {
                        sim_data *live[SIM_BATCH_LANES];
                        int row[SIM_BATCH_LANES], nl = 0;
                        uint64_t c0 = bench_now_ns();
                        for (int j = 0; j < n; j++) {
                            if (bad[j]) continue;
                            live[nl] = dw[j], row[nl++] = j;
                        }
                        if (!nl) break;
                        profile_actuator(&jm, dw, row, nl, n, g, target, kp, kd, tau_max, net, ast, alanes, dc);
                        uint64_t c1 = bench_now_ns();
                        sim_batch_smooth(m, batch, live, nl, dt);
                        uint64_t c2 = bench_now_ns();
                        /* the actuators' and the batch's time, shared equally by its worlds */
                        const double pd_share = (double)(c1 - c0) / nl, dyn_share = (double)(c2 - c1) / nl;
                        for (int l = 0; l < nl; l++) {
                            sim_data *d = live[l];
                            int *b = &bad[row[l]];
                            if (!staged) { /* the staged pass's failure rule, so that both step the same worlds */
                                *b = sim_batch_step(m, batch, l, d, dt, SIM_STAGE_NONE, SIM_STAGE_INTEGRATE) != 0 ||
                                     env_anymal_runaway(m, d);
                            } else {
                                uint64_t c3 = bench_now_ns();
                                sim_batch_step(m, batch, l, d, dt, SIM_STAGE_NONE, SIM_STAGE_SMOOTH);
                                uint64_t c4 = bench_now_ns();
                                sim_batch_step(m, batch, l, d, dt, SIM_STAGE_SMOOTH, SIM_STAGE_COLLISION);
                                const int nc = d->ncon;
                                uint64_t c5 = bench_now_ns();
                                sim_step_stages(m, d, dt, SIM_STAGE_COLLISION, SIM_STAGE_CONTACTS);
                                uint64_t c6 = bench_now_ns();
                                for (int c = 0; c < nc; c++) sim_jacobian_sparse(m, d, d->con[c].body, d->con[c].pos, jp, cols);
                                uint64_t c7 = bench_now_ns();
                                const int nb = d->ncon + d->nlim + d->nfric;
                                if (harvest && q == 0) memcpy(warm, d->lambda, sizeof(double) * 3 * (size_t)nb);
                                sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
                                uint64_t c8 = bench_now_ns();
                                if (harvest && q == 0 && d->stats.fallback) {
                                    const int N = 3 * nb;
                                    fprintf(harvest, "%d\n", nb);
                                    for (int a = 0; a < N * N; a++) fprintf(harvest, "%.17g%c", d->G[a], a % N == N - 1 ? '\n' : ' ');
                                    for (int a = 0; a < N; a++) fprintf(harvest, "%.17g%c", d->cfree[a], a == N - 1 ? '\n' : ' ');
                                    for (int a = 0; a < nb; a++) fprintf(harvest, "%.17g%c", d->mu[a], a == nb - 1 ? '\n' : ' ');
                                    for (int a = 0; a < N; a++) fprintf(harvest, "%.17g%c", warm[a], a == N - 1 ? '\n' : ' ');
                                    harvested++;
                                }
                                /* the answer's Coulomb violation on the problem it solved (its time, skip, is
                                   taken out of the finishing stage's) */
                                const uint64_t r0 = bench_now_ns();
                                const int coulomb_ok = nb > 0 && sim_contact_coulomb_error(nb, d->G, d->cfree, d->mu,
                                                                                           d->lambda) < tol;
                                const double skip = (double)(bench_now_ns() - r0);
                                *b = sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE) != 0 || env_anymal_runaway(m, d);
                                uint64_t c9 = bench_now_ns();
                                lk_n[(size_t)k * worlds + g + row[l]] = nb;
                                lk_s[(size_t)k * worlds + g + row[l]] = nb > 0 ? d->stats.iterations : 0;
                                ncon += nc;
                                nlim += d->stats.nlim, nlima += d->stats.nlim_active;
                                if (d->stats.nlim) lsteps++, liters += d->stats.iterations, lfall += d->stats.fallback != 0;
                                iters += d->stats.iterations;
                                capped += nc > 0 && !d->stats.converged;
                                if (d->stats.ncon + d->stats.nlim + d->stats.nfriction > 0) {
                                    solves++;
                                    coulomb += d->stats.answer == SIM_ANSWER_COULOMB;
                                    ccp += d->stats.answer == SIM_ANSWER_CCP;
                                    own += d->stats.answer == SIM_ANSWER_OWN;
                                    fallbacks += d->stats.fallback != 0;
                                    coulomb_measured += coulomb_ok;
                                }
                                nsteps++;
                                if (pd_share + dyn_share + (double)(c9 - c3) - skip <= PROFILE_DROP_NS) {
                                    kept++;
                                    ns[ST_PD] += pd_share;
                                    ns[ST_DYN] += dyn_share;
                                    ns[ST_LOAD] += (double)(c4 - c3);
                                    ns[ST_COLL] += (double)(c5 - c4);
                                    ns[ST_JAC] += (double)(c7 - c6);
                                    ns[ST_DELASSUS] += (double)(c6 - c5) - (double)(c7 - c6);
                                    ns[ST_SOLVE] += (double)(c8 - c7);
                                    ns[ST_FINISH] += (double)(c9 - c8) - skip;
                                }
                            }
                            /* the world's env step ends here (failed, or its last substep): read its contacts while
                               they are in the scratch, reset it where the task would */
                            if ((*b || k == sp->decimation - 1) && profile_end(e, pw, g + row[l], d, *b, walk, dt, obs) &&
                                ast)
                            {
                                env_actuator_state_zero(ast + (size_t)(g + row[l]) * ENV_ANYMAL_NJ, ENV_ANYMAL_NJ);
                                if (alanes)
                                    env_actuator_lanes_zero(alanes, (g + row[l]) * ENV_ANYMAL_NJ, ENV_ANYMAL_NJ);
                            }
                        }
                    }
                    if (staged && g + n == worlds) /* the env step's solves are all in */
                        for (int k = 0; k < sp->decimation; k++) {
                            int *kn = lk_n + (size_t)k * worlds, *ks = lk_s + (size_t)k * worlds;
                            bench_lockstep_add(kn, ks, NULL, worlds, SIM_BATCH_LANES, lk_env);
                            bench_order_by_key(kn, worlds, lk_order);
                            bench_lockstep_add(kn, ks, lk_order, worlds, SIM_BATCH_LANES, lk_con);
                            memset(kn, 0, sizeof(int) * (size_t)worlds);
                            memset(ks, 0, sizeof(int) * (size_t)worlds);
                        }
                }
            if (!staged) plain_ns = (double)(bench_thread_cpu_ns() - t0);
        }
        dropped += nsteps - kept;
        for (int k = 0; k < ST_ENV; k++) rep[k][q] = kept ? ns[k] / (double)kept : NAN;
        rep[ST_ENV][q] = (env_ns - plain_ns) / (double)nsteps;   /* signed: a difference of two timings */
        tot[q] = env_ns / (double)nsteps;
        plain_rep[q] = plain_ns / (double)nsteps;
        con_rep[q] = (double)ncon / nsteps;
        lim_rep[q] = (double)nlim / nsteps, lima_rep[q] = (double)nlima / nsteps;
        lsteps_all += lsteps, liters_all += liters, lfall_all += lfall, iters_all += iters, steps_all += nsteps;
        it_rep[q] = (double)iters / nsteps;
        cap_rep[q] = (double)capped / nsteps;
        trot_rep[q] = 1e9 / trot_single_world(20000, 1);     /* ns per trot physics step, CPU time */
    }
    double med[ST_N], sum = 0;
    for (int k = 0; k < ST_N; k++) {
        double tmp[64];
        memcpy(tmp, rep[k], sizeof(double) * (size_t)R);
        med[k] = bench_median(tmp, R);
        sum += med[k];
    }
    double tot_med = bench_median(tot, R);
    printf("{\"bench\":\"env_profile\",\"env\":\"%s\",\"worlds\":%d,\"threads\":1,\"steps\":%d,\"repeats\":%d,\"warmup\":%d,"
           "\"solver\":%g,\"actuator\":\"%s\",\"us_per_physics_step\":{", name, worlds, steps, R, warmup,
           env_config(e, "solver"), dc ? "dc" : use_net ? "lstm" : "pd");
    for (int k = 0; k < ST_N; k++) printf("%s\"%s\":%.4f", k ? "," : "", stage_name[k], med[k] * 1e-3);
    printf("},\"us_per_physics_step_reps\":{");
    for (int k = 0; k < ST_N; k++) {
        printf("%s\"%s\":[", k ? "," : "", stage_name[k]);
        for (int q = 0; q < R; q++) printf("%s%.4f", q ? "," : "", rep[k][q] * 1e-3);
        printf("]");
    }
    double plain_med = bench_median(plain_rep, R), trot_med = bench_median(trot_rep, R);
    /* no solve at all: every lane idle, efficiency 1 by convention (nothing to batch) */
    const double eff_env = lk_env[1] > 0 ? lk_env[0] / lk_env[1] : 1.0, eff_con = lk_con[1] > 0 ? lk_con[0] / lk_con[1] : 1.0;
    printf("},\"trot_us_per_physics_step\":%.4f,\"walk_over_trot\":%.3f", trot_med * 1e-3, plain_med / trot_med);
    printf(",\"env_step_us_per_physics_step\":%.4f,\"pd_and_sim_step_us\":%.4f,\"clock\":{\"stages\":\"monotonic\","
           "\"env_step_and_plain\":\"thread_cpu\"},\"dropped_preempted_steps\":%ld,\"mean_contacts\":%.3f,"
           "\"mean_iterations\":%.3f,\"capped_fraction\":%.4f,\"contact_solves\":%ld,\"coulomb_fraction\":%.6f,"
           "\"ccp_fraction\":%.6f,\"own_fraction\":%.6f,\"fallback_fraction\":%.6f,\"coulomb_measured_fraction\":%.6f,"
           "\"tol\":%g,\"solver_name\":\"%s\",\"mean_limit_rows\":%.3f,\"mean_limits_active\":%.3f,"
           "\"lockstep\":{\"lanes\":%d,\"efficiency_env_groups\":%.4f,\"efficiency_by_blocks\":%.4f,"
           "\"solve_us_bound_env_groups\":%.4f,\"solve_us_bound_by_blocks\":%.4f},"
           "\"config\":\"%s\",\"cpu\":\"%s\"}\n", tot_med * 1e-3, plain_med * 1e-3, dropped,
           bench_median(con_rep, R), bench_median(it_rep, R), bench_median(cap_rep, R), solves,
           solves ? (double)coulomb / (double)solves : 1.0, solves ? (double)ccp / (double)solves : 0.0,
           solves ? (double)own / (double)solves : 0.0, solves ? (double)fallbacks / (double)solves : 0.0,
           solves ? (double)coulomb_measured / (double)solves : 1.0, tol,
           sim_solver_at((int)env_config(e, "solver")) ? sim_solver_at((int)env_config(e, "solver"))->name : "?",
           bench_median(lim_rep, R), bench_median(lima_rep, R), SIM_BATCH_LANES, eff_env, eff_con,
           med[ST_SOLVE] * 1e-3 / (SIM_BATCH_LANES * eff_env), med[ST_SOLVE] * 1e-3 / (SIM_BATCH_LANES * eff_con),
           g_base_text, bench_cpu());
    fflush(stdout);
    fprintf(stderr, "env profile: %s%s%s, %d worlds, 1 thread, %d env steps x %d repeats after %d warm-up (cpu: %s)\n",
            name, g_nbase ? " with " : "", g_base_text, worlds, steps, R, warmup, bench_cpu());
    fprintf(stderr, "  %-13s %9s %6s  %s\n", "stage", "us/step", "share", "what");
    for (int k = 0; k < ST_N; k++)
        fprintf(stderr, "  %-13s %9.3f %5.1f%%  %s\n", stage_name[k], med[k] * 1e-3, 100 * med[k] / sum, stage_what[k]);
    fprintf(stderr, "  CPU time per physics step: env_step %.3f us, actuator + sim_step alone %.3f us (stages sum to %.3f us "
                    "without env_overhead; %ld preempted steps left out)\n", tot_med * 1e-3, plain_med * 1e-3,
            (sum - med[ST_ENV]) * 1e-3, dropped);
    if (harvest) {
        fclose(harvest);
        fprintf(stderr, "  harvested %ld stalled problems into %s\n", harvested, harvest_path);
    }
    fprintf(stderr, "  contact solves %ld (%s): answer flagged Coulomb %.4f %%, CCP %.4f %%, the solver's own model %.4f %%; "
            "handed to a fallback %.4f %%; Coulomb violation below tol (measured) %.4f %%\n", solves,
            sim_solver_at((int)env_config(e, "solver")) ? sim_solver_at((int)env_config(e, "solver"))->name : "?",
            solves ? 100.0 * (double)coulomb / (double)solves : 100.0, solves ? 100.0 * (double)ccp / (double)solves : 0.0,
            solves ? 100.0 * (double)own / (double)solves : 0.0, solves ? 100.0 * (double)fallbacks / (double)solves : 0.0,
            solves ? 100.0 * (double)coulomb_measured / (double)solves : 100.0);
    fprintf(stderr, "  per physics step: %.2f contacts, %.2f joint-limit rows (%.2f active), %.2f solver sweeps, %.2f %% capped\n",
            bench_median(con_rep, R), bench_median(lim_rep, R), bench_median(lima_rep, R),
            bench_median(it_rep, R), 100 * bench_median(cap_rep, R));
    if (lsteps_all)
        fprintf(stderr, "  physics steps with a joint-limit row: %.2f %%, %.2f sweeps each (the others %.2f), %.2f %% "
                "handed to a fallback\n", 100.0 * lsteps_all / steps_all, (double)liters_all / lsteps_all,
                steps_all > lsteps_all ? (double)(iters_all - liters_all) / (steps_all - lsteps_all) : 0.0,
                100.0 * lfall_all / lsteps_all);
    fprintf(stderr, "  the solves batched %d worlds to a vector in lock step (a group sweeps as often as its slowest world, "
                    "over its most blocks): lane efficiency %.3f in the env's groups of consecutive worlds, %.3f in "
                    "groups by block count; at %d block steps per vector step the solve would take at least %.3f us "
                    "and %.3f us (the divergence within a block's solve and the fallbacks' own iterations not counted)\n",
            SIM_BATCH_LANES, eff_env, eff_con, SIM_BATCH_LANES, med[ST_SOLVE] * 1e-3 / (SIM_BATCH_LANES * eff_env),
            med[ST_SOLVE] * 1e-3 / (SIM_BATCH_LANES * eff_con));
    fprintf(stderr, "  the solver bench's trot (1 ms, feet + base, same run, CPU time): %.3f us per physics step; "
                    "actuator + sim_step here / trot = %.2f\n", trot_med * 1e-3, plain_med / trot_med);
    free(act); free(obs); free(rew); free(term); free(trunc); free(scratch_raw); free(jp); free(batch_mem); free(ast); free(alanes);
    free(lk_n); free(lk_s); free(lk_order);
    env_actuator_net_destroy(&net);
    for (int i = 0; pw && i < worlds; i++) sim_data_destroy(&pw[i]);
    free(pw);
    env_destroy(&e);
    (void)argc; (void)argv;
    return 0;
}

/* ---- --sweep, --solvers, --actuators ---- */

/* Thread CPU nanoseconds the actuator network takes per world env step: `decimation` env_actuator_net_step calls
 * per env step over the 12 joints of SIM_BATCH_LANES worlds each (as env_step batches them), every world with its
 * own state, inputs pseudo-random (position errors in [-0.5, 0.5] rad, velocities in [-10, 10] rad/s); the median
 * of `repeats` runs of `steps` env steps over `worlds` worlds. */
static double actuator_net_ns_per_world_step(int worlds, int decimation, int steps, int repeats, int f32)
{
    char err[256];
    env_actuator_net *net = env_actuator_net_new(NULL, err, sizeof err);
    const size_t nj = (size_t)worlds * ENV_ANYMAL_NJ;
    env_actuator_state *st = malloc(sizeof *st * nj);
    const size_t nb = ENV_ACTUATOR_LANES(nj);
    env_actuator_lanes *lanes = f32 ? aligned_alloc(_Alignof(env_actuator_lanes), sizeof *lanes * nb) : NULL;
    double *e = malloc(sizeof(double) * nj), *v = malloc(sizeof(double) * nj), *tau = malloc(sizeof(double) * nj);
    if (!net || !st || !e || !v || !tau || (f32 && !lanes)) {
        fprintf(stderr, "herd-bench env: actuator network: %s\n", net ? "out of memory" : err);
        exit(2);
    }
    env_actuator_state_zero(st, (int)nj);
    if (lanes) env_actuator_lanes_zero(lanes, 0, (int)(nb * 8));
    uint64_t x = 12345;
    for (size_t i = 0; i < nj; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        e[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = 20 * (double)(x >> 11) / 9007199254740992.0 - 10;
    }
    const int chunk = SIM_BATCH_LANES * ENV_ANYMAL_NJ;
    double rep[64];
    const int R = repeats < 64 ? repeats : 64;
    for (int r = 0; r < R; r++) {
        uint64_t t0 = bench_thread_cpu_ns();
        for (int s = 0; s < steps * decimation; s++)
            for (size_t j = 0; j < nj; j += chunk) {
                const int m = nj - j < (size_t)chunk ? (int)(nj - j) : chunk;
                if (lanes) env_actuator_net_step_lanes_f32(net, m, e + j, v + j, lanes + j / 8, tau + j, NULL, 0);
                else env_actuator_net_step(net, m, e + j, v + j, st + j, tau + j, NULL, 0);
            }
        rep[r] = (double)(bench_thread_cpu_ns() - t0) / ((double)worlds * steps);
    }
    free(st), free(e), free(v), free(tau), free(lanes);
    env_actuator_net_destroy(&net);
    return bench_median(rep, R);
}

typedef struct {
    env_t *e;
    float *act, *obs, *rew;
    uint8_t *term, *trunc;
    double wall[64], cpu[64];
} sweep_point;

/* Throughput per thread against world count: one env per N, all alive; each is reset and warmed up once, then
 * the repeats visit every N in turn (so a drift of the machine's load is shared), each repeat continuing the
 * trajectories with one untimed step (caches) and `steps` timed ones.  Actions repeat with period 32 in the world index like the seeds, so every world of every N
 * is one of the same 32 and does exactly the same work at the same step whatever N. */
/* key (not NULL): the points are instead the values `solvers` (names, comma-separated) of the configuration key
 * with named choices `key` ("solver": contact solvers, --solvers; "actuator": actuator models, --actuators) on
 * `worlds` worlds each, the same trajectories' actions and seeds: a paired comparison, ratios to the first one. */
static double actuator_net_ns_per_world_step(int worlds, int decimation, int steps, int repeats, int f32);
static int bench_env_sweep(const char *name, const char *list, int threads, int steps, int repeats, int warmup,
                           const char *key, const char *solvers, int worlds)
{
    int ns[32] = {0}, np = 0;
    double sid[32] = {0};
    char sname[32][40];
    const int envs = key && !strcmp(key, "env"); /* the points are tasks, not values of a key */
    for (const char *c = solvers ? solvers : list; *c && np < 32;) {
        if (solvers) {
            size_t len = strcspn(c, ",");
            char cerr[256];
            snprintf(sname[np], sizeof sname[np], "%.*s", (int)(len < 39 ? len : 39), c);
            if (!envs && bench_config_value(name, key, sname[np], &sid[np], cerr, sizeof cerr)) {
                fprintf(stderr, "herd-bench env: %s\n", cerr);
                return 2;
            }
            ns[np++] = worlds;
        } else if ((ns[np++] = atoi(c)) < 1) { fprintf(stderr, "herd-bench env: bad --sweep '%s'\n", list); return 2; }
        if (!(c = strchr(c, ','))) break;
        c++;
    }
    if (np == 0) { fprintf(stderr, "herd-bench env: empty --sweep / --solvers / --actuators\n"); return 2; }
    sweep_point *pt = calloc((size_t)np, sizeof *pt);
    char err[512];
    int rc = 0, R = repeats < 64 ? repeats : 64, ad = 0;
    float *base = NULL;
    /* A world-count sweep on a terrain task: world i's column (terrain kind) is legged_gym's block of i among all n
     * worlds, so the same seed would stand on a different kind at every n.  The sweep makes the blocks those of
     * each run of `period` worlds (the gcd of the counts), so every world of every n is one of the same `period`
     * and does the same work whatever n (unless --config sets the key). */
    int period = 0;
    if (!solvers && spec_has_key(name, "terrain_column_period") && !base_has_key("terrain_column_period")) {
        period = ns[0];
        for (int k = 1; k < np; k++) period = gcd_int(period, ns[k]);
    }
    for (int k = 0; k < np && !rc; k++) {
        env_kv kvs[BASE_KV_MAX + 1];
        memcpy(kvs, g_base_kv, sizeof(env_kv) * (size_t)g_nbase);
        const int keyed = solvers && !envs;
        if (keyed) kvs[g_nbase] = (env_kv){key, sid[k]};
        if (period) kvs[g_nbase] = (env_kv){"terrain_column_period", period};
        pt[k].e = env_new(envs ? sname[k] : name, ns[k], kvs, g_nbase + (keyed || period), 7, ENV_AUTORESET_SAME_STEP,
                          err, sizeof err);
        if (!pt[k].e) { fprintf(stderr, "herd-bench env: %s%s%s\n", envs ? sname[k] : "", envs ? ": " : "", err); rc = 2; break; }
        const env_spec *sp = env_get_spec(pt[k].e);
        if (ad && sp->act_dim != ad) {
            fprintf(stderr, "herd-bench env: --envs needs tasks with the same action size (%s: %d, %s: %d)\n",
                    sname[0], ad, sname[k], sp->act_dim);
            rc = 2;
            break;
        }
        ad = sp->act_dim;
        if (!base) base = bench_env_actions((size_t)8 * 32 * ad);     /* 8 sets x 32 worlds */
        size_t na = (size_t)ns[k] * ad;
        pt[k].act = malloc(sizeof(float) * na * 8);
        for (int s = 0; s < 8; s++)
            for (int i = 0; i < ns[k]; i++)
                memcpy(pt[k].act + (size_t)s * na + (size_t)i * ad, base + ((size_t)s * 32 + (size_t)(i % 32)) * ad,
                       sizeof(float) * (size_t)ad);
        pt[k].obs = malloc(sizeof(float) * (size_t)ns[k] * sp->obs_dim);
        pt[k].rew = malloc(sizeof(float) * (size_t)ns[k]);
        pt[k].term = malloc((size_t)ns[k]);
        pt[k].trunc = malloc((size_t)ns[k]);
        bench_env_prepare(pt[k].e, warmup, pt[k].act, pt[k].obs, pt[k].rew, pt[k].term, pt[k].trunc);
    }
    for (int q = 0; q < R && !rc; q++)
        for (int k = 0; k < np; k++) {
            /* one untimed step first: the previous N evicted this one's worlds from the caches, which a session
             * stepped over and over does not suffer (the same step for every N, so the work stays identical) */
            run(pt[k].e, threads, 1, pt[k].act, pt[k].obs, pt[k].rew, pt[k].term, pt[k].trunc);
            double sec = run(pt[k].e, threads, steps, pt[k].act, pt[k].obs, pt[k].rew, pt[k].term, pt[k].trunc);
            double cpu = 0;
            for (int t = 0; t < threads; t++) cpu += g_cpu[t];
            pt[k].wall[q] = (double)ns[k] * steps / sec / threads;
            pt[k].cpu[q] = (double)ns[k] * steps / cpu;
        }
    if (!rc && solvers) {
        /* the JSON's bench: env_solvers, env_actuators, or env_<key>_pair for another key (--pair) */
        const char *tail = !strcmp(key, "solver") || !strcmp(key, "actuator") || envs ? "s" : "_pair";
        fprintf(stderr, "env %s%s: %s%s%s, %d worlds, %d thread(s), %d steps x %d repeats (interleaved) after %d "
                "warm-up (cpu: %s)\n", key, tail, envs ? solvers : name, g_nbase ? " with " : "", g_base_text, worlds,
                threads, steps, R, warmup, bench_cpu());
        double lstm_rate = 0, pd_rate = 0, rel_lstm = 0;
        for (int k = 0; k < np; k++) {
            double a[64], b[64], r[64];
            memcpy(a, pt[k].cpu, sizeof(double) * (size_t)R);
            memcpy(b, pt[k].wall, sizeof(double) * (size_t)R);
            for (int q = 0; q < R; q++) r[q] = pt[k].cpu[q] / pt[0].cpu[q];
            double med = bench_median(a, R), wmed = bench_median(b, R), rel = bench_median(r, R);
            if (envs) /* the task is the point: "env" once, the first task the baseline */
                printf("{\"bench\":\"env_envs\",\"env\":\"%s\",\"baseline_env\":\"%s\"", sname[k], sname[0]);
            else
                printf("{\"bench\":\"env_%s%s\",\"env\":\"%s\",\"%s\":\"%s\",\"baseline_%s\":\"%s\"", key, tail, name, key,
                       sname[k], key, sname[0]);
            printf(",\"worlds\":%d,\"threads\":%d,\"steps\":%d,\"repeats\":%d,\"warmup\":%d,"
                   "\"cpu_env_steps_per_s_per_thread\":%.0f,\"env_steps_per_s_per_thread\":%.0f,\"ratio_to_baseline\":%.4f,"
                   "\"cost_ratio_to_baseline\":%.4f,\"config\":\"%s\"",
                   worlds, threads, steps, R, warmup, med, wmed, rel, rel > 0 ? 1 / rel : 0.0, g_base_text);
            if (!strcmp(sname[k], "lstm")) lstm_rate = med, rel_lstm = rel;
            if (!strcmp(sname[k], "pd")) pd_rate = med;
            print_reps("cpu_env_steps_per_s_per_thread_reps", pt[k].cpu, R, 1.0);
            printf(",\"cpu\":\"%s\"}\n", bench_cpu());
            fprintf(stderr, "  %-20s %9.0f env steps per CPU-second per thread (same-repeat ratio to %s %.3f; an env step "
                    "costs %.3fx)\n", sname[k], med, sname[0], rel, rel > 0 ? 1 / rel : 0.0);
        }
        if (!strcmp(key, "actuator") && lstm_rate > 0) {
            /* the network's own cost per world env step (decimation calls over the world's 12 joints, batched as
             * env_step batches them), timed apart in the same run, over the lstm env step's CPU time */
            const int dec = env_get_spec(pt[0].e)->decimation;
            const int f32 = (int)env_config(pt[0].e, "net_precision") == ENV_ACTUATOR_NET_FLOAT32;
            const double net_ns = actuator_net_ns_per_world_step(worlds, dec, steps, R, f32), step_ns = 1e9 / lstm_rate;
            printf("{\"bench\":\"env_actuator_share\",\"env\":\"%s\",\"worlds\":%d,\"threads\":%d,\"decimation\":%d,"
                   "\"net_precision\":\"%s\",\"net_us_per_env_step\":%.3f,\"lstm_us_per_env_step\":%.3f,"
                   "\"net_share_of_lstm_step\":%.4f",
                   name, worlds, threads, dec, f32 ? "float32" : "float64", net_ns * 1e-3, step_ns * 1e-3, net_ns / step_ns);
            if (pd_rate > 0)
                printf(",\"pd_us_per_env_step\":%.3f,\"extra_share_over_pd\":%.4f", 1e6 / pd_rate,
                       1 - lstm_rate / pd_rate);
            printf(",\"clock\":\"thread_cpu\",\"cpu\":\"%s\"}\n", bench_cpu());
            fprintf(stderr, "  the network alone: %.2f us per world env step (%d physics steps x 12 joints) = %.1f %% of "
                            "the lstm env step (%.2f us)", net_ns * 1e-3, dec, 100 * net_ns / step_ns, step_ns * 1e-3);
            if (pd_rate > 0) fprintf(stderr, "; lstm over pd: %.1f %% of the lstm step (same-repeat ratio %.3f)",
                                     100 * (1 - lstm_rate / pd_rate), rel_lstm);
            fprintf(stderr, "\n");
        }
        fflush(stdout);
    } else if (!rc) {
        double med[32], lo = INFINITY, hi = 0;
        fprintf(stderr, "env sweep: %s, %d thread(s), %d steps x %d repeats (interleaved) after %d warm-up (cpu: %s)\n",
                name, threads, steps, R, warmup, bench_cpu());
        if (period)
            fprintf(stderr, "  terrain_column_period=%d: world i stands on the column of i mod %d at every count "
                    "(the same work per world)\n", period, period);
        for (int k = 0; k < np; k++) {
            double a[64], b[64];
            memcpy(a, pt[k].cpu, sizeof(double) * (size_t)R);
            memcpy(b, pt[k].wall, sizeof(double) * (size_t)R);
            med[k] = bench_median(a, R);
            double wmed = bench_median(b, R);
            lo = fmin(lo, med[k]), hi = fmax(hi, med[k]);
            printf("{\"bench\":\"env_sweep\",\"env\":\"%s\",\"worlds\":%d,\"threads\":%d,\"steps\":%d,\"repeats\":%d,"
                   "\"warmup\":%d,\"cpu_env_steps_per_s_per_thread\":%.0f,\"env_steps_per_s_per_thread\":%.0f",
                   name, ns[k], threads, steps, R, warmup, med[k], wmed);
            print_reps("cpu_env_steps_per_s_per_thread_reps", pt[k].cpu, R, 1.0);
            print_reps("env_steps_per_s_per_thread_reps", pt[k].wall, R, 1.0);
            env_cost cost;
            env_get_cost(pt[k].e, &cost);
            if (period) printf(",\"terrain_column_period\":%d", period);
            printf(",\"bytes_per_world\":%zu,\"shared_bytes\":%zu,\"cpu\":\"%s\"}\n", cost.world_bytes, cost.fixed_bytes,
                   bench_cpu());
            fprintf(stderr, "  %6d worlds: %9.0f env steps per CPU-second per thread, %9.0f per wall second per thread; "
                    "%.1f kB per world + %.1f MB shared\n", ns[k], med[k], wmed, cost.world_bytes / 1e3, cost.fixed_bytes / 1e6);
        }
        double tmp[32];
        for (int k = 0; k < np; k++) tmp[k] = med[k];
        double mid = bench_median(tmp, np);
        /* the repeats differ in work (successive stretches of the trajectories) but not across N: each N's rate
         * relative to the first N's in the same repeat, median over the repeats, is the cleaner flatness figure */
        double rel[32], rlo = INFINITY, rhi = 0;
        for (int k = 0; k < np; k++) {
            double r[64];
            for (int q = 0; q < R; q++) r[q] = pt[k].cpu[q] / pt[0].cpu[q];
            rel[k] = bench_median(r, R);
            rlo = fmin(rlo, rel[k]), rhi = fmax(rhi, rel[k]);
        }
        printf("{\"bench\":\"env_flatness\",\"env\":\"%s\",\"threads\":%d,\"worlds_min\":%d,\"worlds_max\":%d,"
               "\"spread_of_medians\":%.4f,\"min_over_max\":%.4f,\"relative_to_first\":[", name, threads, ns[0],
               ns[np - 1], (hi - lo) / mid, lo / hi);
        for (int k = 0; k < np; k++) printf("%s%.4f", k ? "," : "", rel[k]);
        printf("],\"relative_min_over_max\":%.4f", rlo / rhi);
        if (period) printf(",\"terrain_column_period\":%d", period);
        printf("}\n");
        fprintf(stderr, "  flatness: medians span %.1f %% of their median (min / max %.3f); same-repeat ratios to %d worlds:",
                100 * (hi - lo) / mid, lo / hi, ns[0]);
        for (int k = 0; k < np; k++) fprintf(stderr, " %.3f", rel[k]);
        fprintf(stderr, "\n");
        fflush(stdout);
    }
    for (int k = 0; k < np; k++) {
        env_destroy(&pt[k].e);
        free(pt[k].act), free(pt[k].obs), free(pt[k].rew), free(pt[k].term), free(pt[k].trunc);
    }
    free(pt);
    free(base);
    return rc;
}

int bench_env(int argc, char **argv)
{
    if (bench_flag(argc, argv, "--vs-mujoco")) {
        if (!bench_env_vs_mujoco) { fprintf(stderr, "herd-bench env: built without MuJoCo\n"); return 2; }
        return bench_env_vs_mujoco(argc, argv);
    }
    int profile = bench_flag(argc, argv, "--profile");
    const char *name = bench_arg(argc, argv, "--env", "anymal_c-walk");
    int worlds = atoi(bench_arg(argc, argv, "--worlds", profile ? "256" : "4096"));
    int tflag = atoi(bench_arg(argc, argv, "--threads", "0"));
    int steps = atoi(bench_arg(argc, argv, "--steps", profile ? "20" : "50"));
    int repeats = atoi(bench_arg(argc, argv, "--repeats", "5"));
    int warmup = atoi(bench_arg(argc, argv, "--warmup", "25"));
    int once = bench_flag(argc, argv, "--once");
    if (worlds < 1 || tflag < 0 || tflag > 64 || steps < 1 || repeats < 1 || warmup < 0) {
        fprintf(stderr, "herd-bench env: need --worlds >= 1, 0 <= --threads <= 64, --steps >= 1, --repeats >= 1, "
                        "--warmup >= 0\n");
        return 2;
    }
    const char *base = bench_arg(argc, argv, "--config", NULL);
    if (base && parse_base_config(name, base)) return 2;
    if (profile) return bench_env_profile(argc, argv, name, worlds, steps, repeats, warmup);
    const char *sweep = bench_arg(argc, argv, "--sweep", NULL);
    if (sweep) return bench_env_sweep(name, sweep, tflag ? tflag : 1, steps, repeats, warmup, NULL, NULL, 0);
    const char *solvers = bench_arg(argc, argv, "--solvers", NULL);
    if (solvers) return bench_env_sweep(name, NULL, tflag ? tflag : 1, steps, repeats, warmup, "solver", solvers, worlds);
    const char *actuators = bench_arg(argc, argv, "--actuators", NULL);
    if (actuators)
        return bench_env_sweep(name, NULL, tflag ? tflag : 1, steps, repeats, warmup, "actuator", actuators, worlds);
    const char *envs = bench_arg(argc, argv, "--envs", NULL); /* tasks with the same action size */
    if (envs) return bench_env_sweep(name, NULL, tflag ? tflag : 1, steps, repeats, warmup, "env", envs, worlds);
    const char *pair = bench_arg(argc, argv, "--pair", NULL); /* key=v1,v2,...: values of any numeric key */
    if (pair) {
        char pkey[40];
        const char *eq = strchr(pair, '=');
        if (!eq || eq == pair || eq - pair > 39 || !eq[1]) {
            fprintf(stderr, "herd-bench env: --pair wants key=v1,v2,...\n");
            return 2;
        }
        snprintf(pkey, sizeof pkey, "%.*s", (int)(eq - pair), pair);
        return bench_env_sweep(name, NULL, tflag ? tflag : 1, steps, repeats, warmup, pkey, eq + 1, worlds);
    }
    char err[512];
    env_t *e = env_new(name, worlds, NULL, 0, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!e) { fprintf(stderr, "herd-bench env: %s\n", err); return 2; }
    env_t *one = env_new(name, worlds < 32 ? worlds : 32, NULL, 0, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    const env_spec *sp = env_get_spec(e);
    size_t na = (size_t)worlds * sp->act_dim;
    float *act = bench_env_actions(na * 8), *obs = malloc(sizeof(float) * (size_t)worlds * sp->obs_dim);
    float *rew = malloc(sizeof(float) * (size_t)worlds);
    uint8_t *term = malloc((size_t)worlds), *trunc = malloc((size_t)worlds);
    /* baselines: single worlds of the same env (no batching), and the solver bench's trot */
    double one_rep[64], trot_rep[64];
    const int nsingle = worlds < 32 ? worlds : 32;
    const int R = repeats < 64 ? repeats : 64;
    for (int k = 0; k < R; k++) {
        bench_env_prepare(one, warmup, act, obs, rew, term, trunc);
        uint64_t t0 = bench_now_ns();
        for (int s = 0; s < steps; s++)
            for (int i = 0; i < nsingle; i++) {
                int32_t id = i;
                env_step(one, 0, 1, &id, act + (size_t)(s & 7) * na + (size_t)i * sp->act_dim, obs, rew, term, trunc, NULL);
            }
        one_rep[k] = (double)nsingle * steps * sp->decimation / ((double)(bench_now_ns() - t0) * 1e-9);
        trot_rep[k] = trot_single_world(20000, 0);
    }
    double single = bench_median(one_rep, R);
    double trot = bench_median(trot_rep, R);
    int tlist[2] = {tflag ? tflag : 1, 2}, nt = tflag ? 1 : 2;
    double eps_by_t[2] = {0, 0}, cpu_by_t[2] = {0, 0};
    fprintf(stderr, "env bench: %s, %d worlds, %d steps x %d repeats after %d warm-up (cpu: %s)\n", name, worlds, steps,
            repeats, warmup, bench_cpu());
    fprintf(stderr, "  baselines per thread: same env, 1 world: %.0f physics steps/s; solver bench trot: %.0f\n", single, trot);
    env_cost mem;
    env_get_cost(e, &mem);
    fprintf(stderr, "  memory: %.1f kB per world + %.1f MB shared by the worlds (model, task tables, terrain)\n",
            mem.world_bytes / 1e3, mem.fixed_bytes / 1e6);
    for (int k = 0; k < nt; k++) {
        int T = tlist[k];
        double rep[64], eps_rep[64], cpu_rep[64];
        double util = 0, helped = 0;
        for (int q = 0; q < R; q++) {
            if (!once || q == 0) bench_env_prepare(e, warmup, act, obs, rew, term, trunc);
            rep[q] = run(e, T, steps, act, obs, rew, term, trunc);
            double cpu = 0;
            for (int t = 0; t < T; t++) util += g_busy[t] / rep[q], cpu += g_cpu[t];
            helped += g_helped / R;
            eps_rep[q] = (double)worlds * steps / rep[q];
            cpu_rep[q] = (double)worlds * steps / cpu;    /* per CPU-second of the stepping threads */
        }
        util /= (double)T * R;
        double sec = bench_median(rep, R);
        double eps = (double)worlds * steps / sec, pps = eps * sp->decimation;
        double tmp[64];
        memcpy(tmp, cpu_rep, sizeof(double) * (size_t)R);
        double cpu_eps = bench_median(tmp, R);
        eps_by_t[k] = eps;
        cpu_by_t[k] = cpu_eps;
        double per_thread = pps / T;
        printf("{\"bench\":\"env\",\"env\":\"%s\",\"worlds\":%d,\"threads\":%d,\"steps\":%d,\"repeats\":%d,\"warmup\":%d,"
               "\"once\":%s,\"env_steps_per_s\":%.0f,\"physics_steps_per_s\":%.0f,\"us_per_env_step\":%.3f,"
               "\"physics_steps_per_s_per_thread\":%.0f,\"env_steps_per_s_per_thread\":%.0f,"
               "\"cpu_env_steps_per_s_per_thread\":%.0f,\"single_world_physics_steps_per_s\":%.0f,"
               "\"batch_efficiency\":%.3f,\"solver_bench_trot_steps_per_s\":%.0f,\"fraction_of_solver_bench\":%.3f,\"thread_utilization\":%.3f,\"helped_share\":%.4f",
               name, worlds, T, steps, R, warmup, once ? "true" : "false", eps, pps, 1e6 * T / eps, per_thread, eps / T, cpu_eps, single,
               per_thread / single, trot, per_thread / trot, util, helped);
        print_reps("env_steps_per_s_reps", eps_rep, R, 1.0);
        print_reps("cpu_env_steps_per_s_per_thread_reps", cpu_rep, R, 1.0);
        env_cost cost;
        env_get_cost(e, &cost);
        printf(",\"bytes_per_world\":%zu,\"shared_bytes\":%zu,\"cpu\":\"%s\"}\n", cost.world_bytes, cost.fixed_bytes,
               bench_cpu());
        fflush(stdout);
        fprintf(stderr, "  %d thread(s): %9.0f env steps/s, %9.0f physics steps/s (%.0f per thread, %.2f of 1-world, %.2f of trot), %.2f us/env step/thread, busy %.0f %% (%.1f %% of worlds stepped by a helping thread); %.0f env steps per CPU-second\n",
                T, eps, pps, per_thread, per_thread / single, per_thread / trot, 1e6 * T / eps, 100 * util, 100 * helped,
                cpu_eps);
    }
    if (nt == 2) {
        printf("{\"bench\":\"env_scaling\",\"env\":\"%s\",\"worlds\":%d,\"speedup_1_to_2_threads\":%.3f,"
               "\"cpu_efficiency_2_threads\":%.3f}\n", name, worlds, eps_by_t[1] / eps_by_t[0], cpu_by_t[1] / cpu_by_t[0]);
        fprintf(stderr, "  speedup 1 -> 2 threads: %.2fx (wall); per-thread CPU efficiency at 2 threads: %.2f\n",
                eps_by_t[1] / eps_by_t[0], cpu_by_t[1] / cpu_by_t[0]);
    }
    free(act); free(obs); free(rew); free(term); free(trunc);
    env_destroy(&e);
    env_destroy(&one);
    return 0;
}

/* srv_server.c — the I/O thread, the session table and the jobs the workers run.  See srv_server.h.
 *
 * A request's life:
 *   recv (ROUTER: envelope frames + one payload frame) -> proto_decode_request -> checks against the
 *   session (world ids, actions shape / finiteness, limits) -> a job: the reply buffer is laid out
 *   once (proto_encode_step_reply), the rows are grouped into runs per owning worker, one unit per
 *   worker is queued on the session's lane of that worker -> the workers call env_step / env_reset
 *   writing straight into the reply buffer -> the worker finishing the last unit puts the job on the
 *   done queue and pokes the eventfd -> the I/O thread sends envelope + reply (zero copy: ZeroMQ
 *   frees the buffer when sent).
 *
 * Threads: everything here runs on the I/O thread except the unit callbacks (unit_run, unit_finish,
 * ctl_run, ctl_finish), which run on workers and touch only their job, their worlds and the done
 * queue.  session->ended[] entries are touched only by the worker that owns the world.
 */
#include "srv_server.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "env.h"
#include "proto.h"
#include "srv_pool.h"

#define MAX_FRAMES 16           /* envelope frames + payload; more is dropped */
#define NBUCKETS 256
#define RATE_SLOTS 16

/* ------------------------------------------------------------------------------------------------ */
/* types */

typedef struct {
    double t[RATE_SLOTS];
    uint64_t v[RATE_SLOTS];
    int n, head;
} rate_t;

typedef struct srv_session srv_session;
typedef struct job job;

typedef struct {
    int row0, row1;
} run_t;

typedef struct {
    srv_unit u;                 /* first: the pool hands this pointer back */
    job *j;
    int worker;
    int r_begin, r_end;         /* this worker's runs in j->runs */
    int ri, off;                /* cursor */
} job_unit;

enum { JOB_RESET, JOB_STEP, JOB_MAKE, JOB_CLOSE };

struct job {
    int kind;
    srv_server *srv;
    srv_session *sess;
    uint64_t id;
    zmq_msg_t frames[MAX_FRAMES - 1];   /* the envelope to echo */
    int nframes;                /* -1: no reply wanted (session expiry) */
    zmq_msg_t payload;          /* the request (actions point into it) */
    int has_payload;
    proto_request req;
    /* reset / step */
    int n;
    const int32_t *ids;         /* req.world_ids, or NULL: rows are worlds 0 .. n-1 */
    uint64_t *seeds;            /* reset: one per row, or NULL */
    const uint8_t *actions;
    int actions_aligned;
    uint8_t *reply;
    size_t reply_len;
    proto_step_layout lay;
    run_t *runs;
    int nruns;
    job_unit *units;
    int nunits;
    atomic_int remaining;
    atomic_int refused;
    /* make / close (control work, one unit) */
    job_unit ctl;
    env_t *env;
    char err[256];
    job *next;                  /* done queue / deferred list */
};

struct srv_session {
    uint64_t id;
    env_t *env;
    const env_spec *spec;
    int nworlds, obs_dim, act_dim, nterms;
    env_autoreset autoreset;
    uint64_t seed;
    int rot;                    /* slice t runs on worker (t + rot) % T: small sessions spread out */
    srv_lane *lanes;            /* one per worker */
    uint8_t *ended;             /* per world, owner worker only: the next step autoresets it */
    uint8_t *ended_io;          /* autoreset disabled: the I/O thread's view, exact when inflight == 0 */
    uint8_t *idbits;            /* scratch for proto_check_world_ids */
    int inflight;               /* jobs queued on workers */
    job *deferred, *deferred_tail;
    int closing, destroying;
    job *close_job;
    double created, last_active;
    uint64_t steps, requests, errors;
    rate_t rate;
    srv_session *hnext;
};

typedef struct {
    pthread_mutex_t mu;
    job *head, *tail;
} done_queue;

struct srv_server {
    srv_config cfg;
    char endpoint[256];
    int nthreads;
    void *ctx, *router;
    int efd;
    srv_pool *pool;
    srv_lane *ctl_lanes;        /* control work (make, close), one lane per worker */
    int next_ctl, next_rot;
    float **scratch;            /* per worker: misaligned actions are copied here, a quantum at a time */
    int max_act_dim;
    done_queue done;
    atomic_int done_pending;    /* the done queue is not empty (read without the lock while spinning) */
    double spin_until;          /* the I/O thread polls instead of sleeping until then (tiny jobs in flight) */
    atomic_int stop;
    int draining;
    proto_limits lim;
    srv_session *buckets[NBUCKETS];
    int nsessions;
    long worlds_used;           /* including makes in flight */
    int jobs_inflight;          /* queued on workers or deferred */
    uint32_t id_epoch, id_counter;
    double t_start, last_tick, last_sample, last_stats;
    uint64_t steps, requests, errors;
    uint64_t last_stats_steps, last_stats_requests, last_stats_errors;
    rate_t rate;
    proto_buf out;              /* small replies */
};

/* ------------------------------------------------------------------------------------------------ */
/* time, logging, rates */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double unix_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void logf_(const srv_server *S, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(const srv_server *S, int level, const char *fmt, ...)
{
    if (level > S->cfg.log_level) return;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%03ld herd-server %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

static void rate_sample(rate_t *r, double t, uint64_t v)
{
    r->t[r->head] = t;
    r->v[r->head] = v;
    r->head = (r->head + 1) % RATE_SLOTS;
    if (r->n < RATE_SLOTS) r->n++;
}

/* Per second over the samples of the last `window` seconds (at least the oldest one kept). */
static double rate_get(const rate_t *r, double t, uint64_t v, double window)
{
    double t0 = t;
    uint64_t v0 = v;
    for (int k = 0; k < r->n; k++) {
        int i = (r->head - 1 - k + 2 * RATE_SLOTS) % RATE_SLOTS;
        if (t - r->t[i] > window && t0 < t) break;
        t0 = r->t[i];
        v0 = r->v[i];
    }
    return t > t0 ? (double)(v - v0) / (t - t0) : 0.0;
}

/* ------------------------------------------------------------------------------------------------ */
/* sending */

static void free_buf(void *data, void *hint)
{
    (void)hint;
    free(data);
}

static void close_frames(zmq_msg_t *f, int n)
{
    for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

/* Sends envelope + payload and closes the envelope frames.  own: buf is malloc'd memory that ZeroMQ
 * frees when sent (zero copy); otherwise the bytes are copied. */
static void send_reply(srv_server *S, zmq_msg_t *frames, int nframes, void *buf, size_t len, int own)
{
    int ok = 1;
    for (int i = 0; i < nframes; i++) {
        if (ok && zmq_msg_send(&frames[i], S->router, ZMQ_SNDMORE) < 0) ok = 0;
        zmq_msg_close(&frames[i]);
    }
    zmq_msg_t m;
    if (own) {
        if (zmq_msg_init_data(&m, buf, len, free_buf, NULL)) {
            free(buf);
            return;
        }
    } else {
        if (zmq_msg_init_size(&m, len)) return;
        memcpy(zmq_msg_data(&m), buf, len);
    }
    if (ok && zmq_msg_send(&m, S->router, 0) < 0) ok = 0;
    zmq_msg_close(&m);
    if (!ok) logf_(S, SRV_LOG_DEBUG, "reply not sent: %s", zmq_strerror(zmq_errno()));
}

static void send_error(srv_server *S, zmq_msg_t *frames, int nframes, uint64_t id, srv_session *sess, proto_code code,
                       const char *msg)
{
    S->errors++;
    if (sess) sess->errors++;
    logf_(S, SRV_LOG_DEBUG, "request %" PRIu64 ": %s: %s", id, proto_code_name(code), msg);
    if (nframes < 0) return;
    proto_buf_reset(&S->out);
    proto_encode_error(&S->out, id, code, msg);
    send_reply(S, frames, nframes, S->out.data, S->out.len, 0);
}

static void send_small(srv_server *S, zmq_msg_t *frames, int nframes)
{
    if (S->out.oom) {
        close_frames(frames, nframes);
        return;
    }
    send_reply(S, frames, nframes, S->out.data, S->out.len, 0);
}

/* ------------------------------------------------------------------------------------------------ */
/* sessions */

static srv_session *session_find(srv_server *S, uint64_t id)
{
    for (srv_session *s = S->buckets[id % NBUCKETS]; s; s = s->hnext)
        if (s->id == id) return s;
    return NULL;
}

static void session_unlink(srv_server *S, srv_session *s)
{
    srv_session **pp = &S->buckets[s->id % NBUCKETS];
    while (*pp && *pp != s) pp = &(*pp)->hnext;
    if (*pp) *pp = s->hnext;
    S->nsessions--;
}

static void session_free(srv_session *s)
{
    if (!s) return;
    env_destroy(&s->env);
    free(s->lanes);
    free(s->ended);
    free(s->ended_io);
    free(s->idbits);
    free(s);
}

/* World w's slice and worker. */
static int world_worker(const srv_session *s, int T, int w)
{
    int t = (int)((((int64_t)w + 1) * T + s->nworlds - 1) / s->nworlds) - 1;
    return (t + s->rot) % T;
}

static int slice_begin(const srv_session *s, int T, int t) { return (int)((int64_t)t * s->nworlds / T); }

/* ------------------------------------------------------------------------------------------------ */
/* jobs */

static job *job_new(srv_server *S, int kind)
{
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->kind = kind;
    j->srv = S;
    proto_request_init(&j->req);
    atomic_init(&j->remaining, 0);
    atomic_init(&j->refused, 0);
    return j;
}

static void job_free(job *j)
{
    if (!j) return;
    if (j->nframes > 0) close_frames(j->frames, j->nframes);
    if (j->has_payload) zmq_msg_close(&j->payload);
    proto_request_clear(&j->req);
    free(j->seeds);
    free(j->reply);
    free(j->runs);
    free(j->units);
    if (j->env) env_destroy(&j->env);
    free(j);
}

static void done_push(srv_server *S, job *j)
{
    pthread_mutex_lock(&S->done.mu);
    int was_empty = !S->done.head;
    j->next = NULL;
    if (S->done.tail) S->done.tail->next = j;
    else S->done.head = j;
    S->done.tail = j;
    atomic_store_explicit(&S->done_pending, 1, memory_order_release);
    pthread_mutex_unlock(&S->done.mu);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t w = write(S->efd, &one, sizeof one);
        (void)w;
    }
}

/* Rows r .. r + k - 1 of a job (all owned by `worker`). */
static void job_rows(job *j, int worker, int r, int k)
{
    srv_session *s = j->sess;
    const int od = s->obs_dim, ad = s->act_dim, nt = s->nterms;
    uint8_t *R = j->reply;
    const proto_step_layout *L = &j->lay;
    const int32_t *ids = j->ids ? j->ids + r : NULL;
    const int first = j->ids ? 0 : r;
    float *obs = (float *)(void *)(R + L->obs) + (size_t)r * od;
    if (j->kind == JOB_RESET) {
        env_reset(s->env, first, k, ids, j->seeds ? j->seeds + r : NULL, obs);
        for (int i = 0; i < k; i++) s->ended[ids ? ids[i] : first + i] = 0;
        return;
    }
    const float *act;
    if (j->actions_aligned) {
        act = (const float *)(const void *)j->actions + (size_t)r * ad;
    } else {
        memcpy(j->srv->scratch[worker], j->actions + (size_t)r * ad * 4, (size_t)k * ad * 4);
        act = j->srv->scratch[worker];
    }
    if (L->autoreset)
        for (int i = 0; i < k; i++) R[L->autoreset + r + i] = s->ended[ids ? ids[i] : first + i];
    uint8_t *term = R + L->terminated + r, *trunc = R + L->truncated + r;
    env_info info = {
        .final_obs = L->final_obs ? (float *)(void *)(R + L->final_obs) + (size_t)r * od : NULL,
        .physics_reset = R + L->physics_reset + r,
        .episode_done = R + L->episode_done + r,
        .episode_return = (float *)(void *)(R + L->episode_return) + r,
        .episode_length = (int32_t *)(void *)(R + L->episode_length) + r,
        .episode_terms = (float *)(void *)(R + L->episode_terms) + (size_t)r * nt,
        .reward_terms = L->reward_terms ? (float *)(void *)(R + L->reward_terms) + (size_t)r * nt : NULL,
    };
    int refused = env_step(s->env, first, k, ids, act, obs, (float *)(void *)(R + L->reward) + r, term, trunc, &info);
    if (refused) atomic_fetch_add(&j->refused, refused);
    for (int i = 0; i < k; i++) {
        int w = ids ? ids[i] : first + i;
        uint8_t e = (uint8_t)(term[i] | trunc[i]);
        if (s->autoreset == ENV_AUTORESET_NEXT_STEP) s->ended[w] = e;
        else if (s->autoreset == ENV_AUTORESET_DISABLED) s->ended[w] |= e;
        if (L->final_mask) R[L->final_mask + r + i] = e;
    }
}

static int unit_run(srv_unit *u, int worker, int budget)
{
    job_unit *ju = (job_unit *)u;
    job *j = ju->j;
    while (budget > 0 && ju->ri < ju->r_end) {
        const run_t *run = &j->runs[ju->ri];
        int r = run->row0 + ju->off;
        int k = run->row1 - r < budget ? run->row1 - r : budget;
        job_rows(j, worker, r, k);
        budget -= k;
        ju->off += k;
        if (r + k == run->row1) {
            ju->ri++;
            ju->off = 0;
        }
    }
    return ju->ri >= ju->r_end;
}

static void unit_finish(srv_unit *u, int worker)
{
    (void)worker;
    job *j = ((job_unit *)u)->j;
    if (atomic_fetch_sub(&j->remaining, 1) == 1) done_push(j->srv, j);
}

static int ctl_run(srv_unit *u, int worker, int budget)
{
    (void)worker;
    (void)budget;
    job *j = ((job_unit *)u)->j;
    if (j->kind == JOB_MAKE) {
        proto_request *r = &j->req;
        env_kv kv[PROTO_MAX_CONFIG];
        for (int i = 0; i < r->nconfig; i++) {
            kv[i] = (env_kv){r->config[i].key, r->config[i].value};
            /* a named choice ("solver": "admm"): its value, or BAD_CONFIG naming the allowed names */
            if (r->config_name[i][0] &&
                env_config_choice(r->env, r->config[i].key, r->config_name[i], &kv[i].value, j->err, sizeof j->err))
                return 1;
        }
        j->env = env_new(r->env, (int)r->num_worlds, kv, r->nconfig, r->seed, r->autoreset, j->err, sizeof j->err);
    } else {
        env_destroy(&j->sess->env);
    }
    return 1;
}

static void ctl_finish(srv_unit *u, int worker)
{
    (void)worker;
    job *j = ((job_unit *)u)->j;
    done_push(j->srv, j);
}

static void push_ctl(srv_server *S, job *j)
{
    j->ctl.u.run = ctl_run;
    j->ctl.u.finish = ctl_finish;
    j->ctl.j = j;
    int w = S->next_ctl++ % S->nthreads;
    S->jobs_inflight++;
    srv_pool_push(S->pool, w, &S->ctl_lanes[w], &j->ctl.u);
}

/* Groups a reset/step job's rows into runs per worker and queues one unit per worker.  0 or -1 (oom). */
static int dispatch(srv_server *S, job *j)
{
    srv_session *s = j->sess;
    const int T = S->nthreads;
    const int maxr = j->ids ? j->n : T;
    run_t *tmp = malloc((size_t)maxr * sizeof *tmp);
    int *tmpw = malloc((size_t)maxr * sizeof *tmpw);
    int *count = calloc((size_t)T, sizeof *count);
    j->units = calloc((size_t)T, sizeof *j->units);
    j->runs = malloc((size_t)maxr * sizeof *j->runs);
    int nr = 0;
    if (!tmp || !tmpw || !count || !j->units || !j->runs) goto oom;
    if (!j->ids) {
        for (int t = 0; t < T; t++) {
            int b = slice_begin(s, T, t), e = slice_begin(s, T, t + 1);
            if (e > b) tmp[nr] = (run_t){b, e}, tmpw[nr++] = (t + s->rot) % T;
        }
    } else {
        for (int i = 0; i < j->n; i++) {
            int w = world_worker(s, T, j->ids[i]);
            if (nr && tmpw[nr - 1] == w) {
                tmp[nr - 1].row1 = i + 1;
            } else {
                tmp[nr] = (run_t){i, i + 1};
                tmpw[nr++] = w;
            }
        }
    }
    for (int i = 0; i < nr; i++) count[tmpw[i]]++;
    /* runs grouped by worker, in row order within a worker */
    int pos = 0;
    for (int w = 0; w < T; w++) {
        if (!count[w]) continue;
        job_unit *ju = &j->units[j->nunits++];
        ju->u.run = unit_run;
        ju->u.finish = unit_finish;
        ju->j = j;
        ju->worker = w;
        ju->r_begin = ju->ri = pos;
        for (int i = 0; i < nr; i++)
            if (tmpw[i] == w) j->runs[pos++] = tmp[i];
        ju->r_end = pos;
    }
    j->nruns = nr;
    /* a tiny job (a few worlds per worker) completes within tens of microseconds: the I/O thread will
     * poll for it rather than sleep and pay a thread wake-up on top */
    int most = 0;
    for (int k = 0; k < j->nunits; k++) {
        int rows = 0;
        for (int i = j->units[k].r_begin; i < j->units[k].r_end; i++) rows += j->runs[i].row1 - j->runs[i].row0;
        if (rows > most) most = rows;
    }
    if (most <= 4 && S->cfg.spin_us > 0) S->spin_until = now_s() + 1e-6 * S->cfg.spin_us;
    free(tmp), free(tmpw), free(count);
    atomic_store(&j->remaining, j->nunits);
    s->inflight++;
    S->jobs_inflight++;
    const int nu = j->nunits;    /* j may complete (and be queued as done) as soon as its units are pushed */
    for (int k = 0; k < nu; k++) srv_pool_push(S->pool, j->units[k].worker, &s->lanes[j->units[k].worker], &j->units[k].u);
    return 0;
oom:
    free(tmp), free(tmpw), free(count);
    return -1;
}

/* Autoreset disabled: a step may only go when the session has nothing in flight (so ended_io is exact). */
static void start_or_fail(srv_server *S, job *j)
{
    srv_session *s = j->sess;
    if (j->kind == JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED) {
        int bad = -1, nbad = 0;
        for (int i = 0; i < j->n; i++) {
            int w = j->ids ? j->ids[i] : i;
            if (s->ended_io[w]) {
                if (bad < 0) bad = w;
                nbad++;
            }
        }
        if (bad >= 0) {
            char m[256];
            snprintf(m, sizeof m, "world %d%s has ended (or was never reset) and autoreset is disabled: reset it "
                     "before stepping it (%d of the %d worlds in this request)", bad, nbad > 1 ? " and others" : "",
                     nbad, j->n);
            send_error(S, j->frames, j->nframes, j->id, s, PROTO_E_EPISODE_ENDED, m);
            j->nframes = 0;
            job_free(j);
            return;
        }
    }
    if (dispatch(S, j)) {
        send_error(S, j->frames, j->nframes, j->id, s, PROTO_E_INTERNAL, "out of memory");
        j->nframes = 0;
        job_free(j);
    }
}

static void finish_close_if_idle(srv_server *S, srv_session *s);

static void pump_deferred(srv_server *S, srv_session *s)
{
    while (s->deferred) {
        job *j = s->deferred;
        if (j->kind == JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED && s->inflight > 0) break;
        s->deferred = j->next;
        if (!s->deferred) s->deferred_tail = NULL;
        S->jobs_inflight--;
        start_or_fail(S, j);
    }
}

static void submit(srv_server *S, job *j)
{
    srv_session *s = j->sess;
    if (s->deferred || (j->kind == JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED && s->inflight > 0)) {
        j->next = NULL;
        if (s->deferred_tail) s->deferred_tail->next = j;
        else s->deferred = j;
        s->deferred_tail = j;
        S->jobs_inflight++;
        return;
    }
    start_or_fail(S, j);
}

static void finish_close_if_idle(srv_server *S, srv_session *s)
{
    if (!s->closing || s->destroying || s->inflight || s->deferred) return;
    s->destroying = 1;
    job *j = s->close_job;
    if (!j) {
        j = job_new(S, JOB_CLOSE);
        if (!j) return;          /* retried at the next tick */
        j->nframes = -1;
    }
    s->close_job = NULL;
    j->sess = s;
    push_ctl(S, j);
}

static void begin_close(srv_server *S, srv_session *s, job *close_job)
{
    s->closing = 1;
    s->close_job = close_job;
    finish_close_if_idle(S, s);
}

/* ------------------------------------------------------------------------------------------------ */
/* completed jobs */

static void complete_make(srv_server *S, job *j)
{
    proto_request *r = &j->req;
    if (!j->env) {
        S->worlds_used -= r->num_worlds;
        proto_code code = strstr(j->err, "out of memory") ? PROTO_E_LIMIT : PROTO_E_BAD_CONFIG;
        send_error(S, j->frames, j->nframes, j->id, NULL, code, j->err);
        j->nframes = 0;
        return;
    }
    const int T = S->nthreads;
    srv_session *s = calloc(1, sizeof *s);
    int n = (int)r->num_worlds;
    if (s) {
        s->lanes = calloc((size_t)T, sizeof *s->lanes);
        s->ended = malloc((size_t)n);
        s->ended_io = malloc((size_t)n);
        s->idbits = calloc((size_t)n / 8 + 1, 1);
    }
    if (!s || !s->lanes || !s->ended || !s->ended_io || !s->idbits) {
        session_free(s);
        S->worlds_used -= r->num_worlds;
        send_error(S, j->frames, j->nframes, j->id, NULL, PROTO_E_INTERNAL, "out of memory");
        j->nframes = 0;
        return;
    }
    memset(s->ended, 1, (size_t)n);
    memset(s->ended_io, 1, (size_t)n);
    s->env = j->env;
    j->env = NULL;
    s->spec = env_get_spec(s->env);
    s->nworlds = n;
    s->obs_dim = s->spec->obs_dim;
    s->act_dim = s->spec->act_dim;
    s->nterms = s->spec->nterms;
    s->autoreset = r->autoreset;
    s->seed = r->seed;
    s->rot = S->next_rot++ % T;
    s->created = s->last_active = now_s();
    do {
        s->id = (uint64_t)S->id_epoch << 32 | ++S->id_counter;
    } while (!s->id || session_find(S, s->id));
    s->hnext = S->buckets[s->id % NBUCKETS];
    S->buckets[s->id % NBUCKETS] = s;
    S->nsessions++;
    double cfg[ENV_MAX_CONFIG];
    for (int i = 0; i < s->spec->nconfig; i++) cfg[i] = env_config(s->env, s->spec->config[i].key);
    proto_buf_reset(&S->out);
    proto_encode_make_reply(&S->out, j->id, s->id, n, s->autoreset, s->seed, s->spec, cfg);
    send_small(S, j->frames, j->nframes);
    j->nframes = 0;
    logf_(S, SRV_LOG_INFO, "session %" PRIu64 ": %s, %d worlds, autoreset %s, seed %" PRIu64 " (%d sessions, %ld worlds)",
          s->id, s->spec->name, n, proto_autoreset_name(s->autoreset), s->seed, S->nsessions, S->worlds_used);
}

static void complete_close(srv_server *S, job *j)
{
    srv_session *s = j->sess;
    S->worlds_used -= s->nworlds;
    session_unlink(S, s);
    if (j->nframes >= 0) {
        proto_buf_reset(&S->out);
        proto_encode_close_reply(&S->out, j->id, s->id, s->steps);
        send_small(S, j->frames, j->nframes);
        j->nframes = 0;
        logf_(S, SRV_LOG_INFO, "session %" PRIu64 " closed after %" PRIu64 " steps (%d sessions, %ld worlds)", s->id,
              s->steps, S->nsessions, S->worlds_used);
    } else {
        logf_(S, SRV_LOG_INFO, "session %" PRIu64 " expired after %.0f s idle (%d sessions, %ld worlds)", s->id,
              now_s() - s->last_active, S->nsessions, S->worlds_used);
    }
    session_free(s);
}

static void complete_rows(srv_server *S, job *j)
{
    srv_session *s = j->sess;
    s->inflight--;
    if (s->autoreset == ENV_AUTORESET_DISABLED) {
        for (int i = 0; i < j->n; i++) {
            int w = j->ids ? j->ids[i] : i;
            if (j->kind == JOB_RESET) s->ended_io[w] = 0;
            else s->ended_io[w] |= (uint8_t)(j->reply[j->lay.terminated + i] | j->reply[j->lay.truncated + i]);
        }
    }
    int refused = atomic_load(&j->refused);
    if (refused) {
        char m[160];
        snprintf(m, sizeof m, "%d worlds had ended and were not stepped (autoreset disabled)", refused);
        send_error(S, j->frames, j->nframes, j->id, s, PROTO_E_EPISODE_ENDED, m);
        j->nframes = 0;
    } else {
        if (j->kind == JOB_STEP) {
            s->steps += (uint64_t)j->n;
            S->steps += (uint64_t)j->n;
        }
        uint8_t *buf = j->reply;
        j->reply = NULL;
        send_reply(S, j->frames, j->nframes, buf, j->reply_len, 1);
        j->nframes = 0;
    }
    pump_deferred(S, s);
    finish_close_if_idle(S, s);
}

static void process_done(srv_server *S)
{
    pthread_mutex_lock(&S->done.mu);
    job *j = S->done.head;
    S->done.head = S->done.tail = NULL;
    atomic_store_explicit(&S->done_pending, 0, memory_order_relaxed);
    pthread_mutex_unlock(&S->done.mu);
    while (j) {
        job *next = j->next;
        S->jobs_inflight--;
        switch (j->kind) {
        case JOB_MAKE: complete_make(S, j); break;
        case JOB_CLOSE: complete_close(S, j); break;
        default: complete_rows(S, j); break;
        }
        job_free(j);
        j = next;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* requests */

static void handle_hello(srv_server *S, uint64_t id, zmq_msg_t *frames, int nf)
{
    const env_spec *specs[64];
    int n = env_registry_count();
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) specs[i] = env_registry_spec(i);
    proto_hello_info info = {.server = "herd " HERD_VERSION, .threads = S->nthreads,
                             .max_message_bytes = S->cfg.max_message_bytes,
                             .max_worlds_per_session = S->cfg.max_worlds_per_session, .max_worlds = S->cfg.max_worlds};
    proto_buf_reset(&S->out);
    proto_encode_hello_reply(&S->out, id, &info, specs, n);
    send_small(S, frames, nf);
}

static void handle_stats(srv_server *S, proto_request *r, srv_session *s, zmq_msg_t *frames, int nf)
{
    double t = now_s();
    proto_server_stats st = {.uptime_s = t - S->t_start, .sessions = S->nsessions, .worlds = S->worlds_used,
                             .steps = S->steps, .requests = S->requests, .errors = S->errors,
                             .steps_per_s = rate_get(&S->rate, t, S->steps, 10.0), .threads = S->nthreads};
    proto_session_stats ss;
    if (s) {
        ss = (proto_session_stats){.session = s->id, .env = s->spec->name, .num_worlds = s->nworlds, .steps = s->steps,
                                   .steps_per_s = rate_get(&s->rate, t, s->steps, 10.0), .age_s = t - s->created,
                                   .idle_s = t - s->last_active, .requests = s->requests, .errors = s->errors};
    }
    proto_buf_reset(&S->out);
    proto_encode_stats_reply(&S->out, r->id, &st, s ? &ss : NULL);
    send_small(S, frames, nf);
}

/* Takes the envelope frames and the payload (moved into a job when one is created). */
static void handle_request(srv_server *S, zmq_msg_t *frames, int nf, zmq_msg_t *payload)
{
    S->requests++;
    const uint8_t *data = zmq_msg_data(payload);
    size_t len = zmq_msg_size(payload);
    proto_request req;
    proto_request_init(&req);
    proto_error e;
    char m[PROTO_MSG_MAX + 64];
    int rc = proto_decode_request(data, len, &S->lim, &req, &e);
    if (rc) {
        send_error(S, frames, nf, req.has_id ? req.id : 0, NULL, (proto_code)rc, e.message);
        goto done;
    }
    if (S->draining) {
        send_error(S, frames, nf, req.id, NULL, PROTO_E_SHUTTING_DOWN, "the server is shutting down");
        goto done;
    }
    srv_session *s = NULL;
    if (req.has_session) {
        s = session_find(S, req.session);
        if (!s || s->closing) {
            snprintf(m, sizeof m, "unknown session %" PRIu64 "%s", req.session,
                     s ? " (closing)" : " (closed, expired, or never made on this server)");
            send_error(S, frames, nf, req.id, NULL, PROTO_E_UNKNOWN_SESSION, m);
            goto done;
        }
        s->requests++;
        s->last_active = now_s();
    }
    switch (req.op) {
    case PROTO_OP_HELLO: handle_hello(S, req.id, frames, nf); goto done;
    case PROTO_OP_PING:
        proto_buf_reset(&S->out);
        proto_encode_ping_reply(&S->out, req.id, unix_time());
        send_small(S, frames, nf);
        goto done;
    case PROTO_OP_STATS: handle_stats(S, &req, s, frames, nf); goto done;
    default: break;
    }
    job *j = job_new(S, req.op == PROTO_OP_MAKE ? JOB_MAKE : req.op == PROTO_OP_CLOSE ? JOB_CLOSE
                        : req.op == PROTO_OP_RESET ? JOB_RESET : JOB_STEP);
    if (!j) {
        send_error(S, frames, nf, req.id, s, PROTO_E_INTERNAL, "out of memory");
        goto done;
    }
    j->id = req.id;
    j->sess = s;
    for (int i = 0; i < nf; i++) {
        zmq_msg_init(&j->frames[i]);
        zmq_msg_move(&j->frames[i], &frames[i]);
    }
    j->nframes = nf;
    nf = 0;
    j->req = req;                    /* the job owns the decoded arrays now */
    proto_request_init(&req);
    proto_request *r = &j->req;

    if (j->kind == JOB_MAKE) {
        if (env_registry_find(r->env) < 0) {
            char list[256] = "";
            for (int i = 0; i < env_registry_count(); i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", env_registry_spec(i)->name);
            snprintf(m, sizeof m, "unknown env '%s' (available: %s)", r->env, list);
            send_error(S, j->frames, j->nframes, j->id, NULL, PROTO_E_UNKNOWN_ENV, m);
            goto fail;
        }
        if (r->num_worlds > S->cfg.max_worlds_per_session) {
            snprintf(m, sizeof m, "num_worlds %" PRId64 " exceeds the limit of %d worlds per session", r->num_worlds,
                     S->cfg.max_worlds_per_session);
            send_error(S, j->frames, j->nframes, j->id, NULL, PROTO_E_LIMIT, m);
            goto fail;
        }
        if (S->worlds_used + r->num_worlds > S->cfg.max_worlds) {
            snprintf(m, sizeof m, "num_worlds %" PRId64 " would exceed the server's limit of %ld worlds (%ld in use)",
                     r->num_worlds, S->cfg.max_worlds, S->worlds_used);
            send_error(S, j->frames, j->nframes, j->id, NULL, PROTO_E_LIMIT, m);
            goto fail;
        }
        S->worlds_used += r->num_worlds;
        push_ctl(S, j);
        goto done;
    }
    if (j->kind == JOB_CLOSE) {
        begin_close(S, s, j);
        goto done;
    }

    /* reset / step */
    j->n = r->nids >= 0 ? r->nids : s->nworlds;
    j->ids = r->world_ids;
    if (j->ids && (rc = proto_check_world_ids(j->ids, j->n, s->nworlds, s->idbits, &e))) {
        send_error(S, j->frames, j->nframes, j->id, s, (proto_code)rc, e.message);
        goto fail;
    }
    proto_buf b;
    proto_buf_init(&b);
    if (j->kind == JOB_RESET) {
        if (r->nseeds >= 0 && r->nseeds != j->n) {
            snprintf(m, sizeof m, "'seeds' has %d entries for %d worlds", r->nseeds, j->n);
            send_error(S, j->frames, j->nframes, j->id, s, PROTO_E_BAD_SHAPE, m);
            goto fail;
        }
        if (r->nseeds >= 0) {
            j->seeds = r->seeds;
            r->seeds = NULL;
        } else if (r->has_seed) {
            j->seeds = malloc((size_t)j->n * sizeof *j->seeds);
            if (!j->seeds) goto oom;
            for (int i = 0; i < j->n; i++) j->seeds[i] = r->seed + (uint64_t)(j->ids ? j->ids[i] : i);
        }
        proto_encode_reset_reply(&b, j->id, j->n, s->obs_dim, &j->lay);
    } else {
        if ((rc = proto_check_actions(&r->actions, j->n, s->act_dim, j->ids, &e))) {
            send_error(S, j->frames, j->nframes, j->id, s, (proto_code)rc, e.message);
            goto fail;
        }
        j->actions = r->actions.data;
        j->actions_aligned = ((uintptr_t)j->actions & 3) == 0;
        unsigned flags = (s->autoreset == ENV_AUTORESET_NEXT_STEP ? PROTO_STEP_AUTORESET : 0) |
                         (s->autoreset == ENV_AUTORESET_SAME_STEP ? PROTO_STEP_FINAL_OBS : 0) |
                         (r->reward_terms ? PROTO_STEP_REWARD_TERMS : 0);
        proto_encode_step_reply(&b, j->id, j->n, s->obs_dim, s->nterms, flags, &j->lay);
        /* the actions point into the request message: keep it */
        zmq_msg_init(&j->payload);
        zmq_msg_move(&j->payload, payload);
        j->has_payload = 1;
    }
    if (b.oom) {
        proto_buf_free(&b);
        goto oom;
    }
    j->reply = proto_buf_steal(&b, &j->reply_len);
    submit(S, j);
    goto done;
oom:
    send_error(S, j->frames, j->nframes, j->id, s, PROTO_E_INTERNAL, "out of memory");
fail:
    j->nframes = 0;
    job_free(j);
done:
    close_frames(frames, nf);
    proto_request_clear(&req);
}

/* Receives one message (non-blocking).  1 = handled, 0 = nothing there, -1 = error. */
static int recv_one(srv_server *S)
{
    zmq_msg_t f[MAX_FRAMES];
    int n = 0, more = 1, dropped = 0;
    while (more) {
        zmq_msg_t tmp;
        zmq_msg_init(&tmp);
        if (zmq_msg_recv(&tmp, S->router, n == 0 && !dropped ? ZMQ_DONTWAIT : 0) < 0) {
            int err = zmq_errno();
            zmq_msg_close(&tmp);
            close_frames(f, n);
            if (err == EAGAIN) return 0;
            if (err == EINTR) return 0;
            logf_(S, SRV_LOG_ERROR, "receive failed: %s", zmq_strerror(err));
            return -1;
        }
        more = zmq_msg_more(&tmp);
        if (n < MAX_FRAMES) {
            f[n++] = tmp;
        } else {
            zmq_msg_close(&tmp);
            dropped = 1;
        }
    }
    if (dropped || n < 2) {
        /* more than MAX_FRAMES frames: not a request of this protocol, and no safe envelope to echo */
        logf_(S, SRV_LOG_DEBUG, "dropped a message of %s%d frames", dropped ? "more than " : "", n);
        S->errors++;
        close_frames(f, n);
        return 1;
    }
    handle_request(S, f, n - 1, &f[n - 1]);
    zmq_msg_close(&f[n - 1]);
    return 1;
}

/* ------------------------------------------------------------------------------------------------ */
/* the loop */

static void tick(srv_server *S, double t)
{
    if (t - S->last_tick < 0.1) return;
    int sample = t - S->last_sample >= 1.0;
    S->last_tick = t;
    if (sample) {
        S->last_sample = t;
        rate_sample(&S->rate, t, S->steps);
    }
    for (int b = 0; b < NBUCKETS; b++) {
        srv_session *next;
        for (srv_session *s = S->buckets[b]; s; s = next) {
            next = s->hnext;
            if (sample) rate_sample(&s->rate, t, s->steps);
            if (s->closing) {
                finish_close_if_idle(S, s);
                continue;
            }
            if (S->cfg.session_timeout_s > 0 && !s->inflight && !s->deferred &&
                t - s->last_active > S->cfg.session_timeout_s)
                begin_close(S, s, NULL);
        }
    }
    if (S->cfg.stats_interval_s > 0 && t - S->last_stats >= S->cfg.stats_interval_s) {
        double dt = t - S->last_stats;
        logf_(S, SRV_LOG_INFO, "stats: %.0f steps/s, %.1f requests/s, %" PRIu64 " errors, %d sessions, %ld worlds, "
              "%d jobs in flight", (double)(S->steps - S->last_stats_steps) / dt,
              (double)(S->requests - S->last_stats_requests) / dt, S->errors - S->last_stats_errors, S->nsessions,
              S->worlds_used, S->jobs_inflight);
        S->last_stats = t;
        S->last_stats_steps = S->steps;
        S->last_stats_requests = S->requests;
        S->last_stats_errors = S->errors;
    }
}

int srv_server_run(srv_server *S)
{
    S->t_start = S->last_tick = S->last_sample = S->last_stats = now_s();
    rate_sample(&S->rate, S->t_start, 0);
    zmq_pollitem_t items[2] = {{S->router, 0, ZMQ_POLLIN, 0}, {NULL, S->efd, ZMQ_POLLIN, 0}};
    for (;;) {
        int timeout = 200;
        if (S->jobs_inflight > 0 && S->spin_until > 0) {
            /* tiny jobs in flight: poll briefly for their completion or a new request */
            while (now_s() < S->spin_until) {
                if (atomic_load_explicit(&S->done_pending, memory_order_acquire)) break;
                uint32_t ev = 0;
                size_t evs = sizeof ev;
                if (zmq_getsockopt(S->router, ZMQ_EVENTS, &ev, &evs) == 0 && (ev & ZMQ_POLLIN)) break;
                sched_yield();
            }
            S->spin_until = 0;
            timeout = 0;
        }
        int rc = zmq_poll(items, 2, timeout);
        if (rc < 0 && zmq_errno() != EINTR) {
            logf_(S, SRV_LOG_ERROR, "poll failed: %s", zmq_strerror(zmq_errno()));
            break;
        }
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) {
            uint64_t v;
            ssize_t r = read(S->efd, &v, sizeof v);
            (void)r;
        }
        process_done(S);
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
            /* a bounded batch, so that completions are not starved by a flood of requests */
            for (int k = 0; k < 64; k++) {
                if (recv_one(S) <= 0) break;
                if (k % 8 == 7) process_done(S);
            }
        }
        tick(S, now_s());
        if (atomic_load(&S->stop) && !S->draining) {
            S->draining = 1;
            logf_(S, SRV_LOG_INFO, "shutting down: finishing %d requests in flight", S->jobs_inflight);
        }
        if (S->draining && S->jobs_inflight == 0) break;
    }
    logf_(S, SRV_LOG_INFO, "stopped after %.1f s: %" PRIu64 " steps, %" PRIu64 " requests, %" PRIu64 " errors",
          now_s() - S->t_start, S->steps, S->requests, S->errors);
    return 0;
}

void srv_server_stop(srv_server *S)
{
    atomic_store(&S->stop, 1);
    uint64_t one = 1;
    ssize_t w = write(S->efd, &one, sizeof one);
    (void)w;
}

/* ------------------------------------------------------------------------------------------------ */
/* creation */

static int available_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

srv_server *srv_server_new(const srv_config *c, char *err, size_t errlen)
{
    if (srv_config_check(c, err, errlen)) return NULL;
    srv_server *S = calloc(1, sizeof *S);
    if (!S) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    S->cfg = *c;
    S->efd = -1;
    S->nthreads = c->threads > 0 ? c->threads : available_cores();
    pthread_mutex_init(&S->done.mu, NULL);
    atomic_init(&S->stop, 0);
    atomic_init(&S->done_pending, 0);
    proto_buf_init(&S->out);
    proto_limits_default(&S->lim);
    S->lim.max_message_bytes = c->max_message_bytes;
    S->lim.max_worlds = c->max_worlds_per_session;
    S->lim.max_objects = 4 * (size_t)c->max_worlds_per_session + 4096;
    if (getrandom(&S->id_epoch, sizeof S->id_epoch, GRND_NONBLOCK) != sizeof S->id_epoch)
        S->id_epoch = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16;
    for (int i = 0; i < env_registry_count(); i++)
        if (env_registry_spec(i)->act_dim > S->max_act_dim) S->max_act_dim = env_registry_spec(i)->act_dim;

    S->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    S->ctx = zmq_ctx_new();
    if (S->efd < 0 || !S->ctx) {
        snprintf(err, errlen, "cannot create the event fd or the ZeroMQ context: %s", strerror(errno));
        goto fail;
    }
    S->router = zmq_socket(S->ctx, ZMQ_ROUTER);
    int64_t hard = c->max_message_bytes > INT64_MAX / 4 ? INT64_MAX : (int64_t)c->max_message_bytes * 4;
    int zero = 0;
    if (!S->router || zmq_setsockopt(S->router, ZMQ_MAXMSGSIZE, &hard, sizeof hard) ||
        zmq_setsockopt(S->router, ZMQ_LINGER, &zero, sizeof zero)) {
        snprintf(err, errlen, "cannot create the ROUTER socket: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (zmq_bind(S->router, c->bind)) {
        snprintf(err, errlen, "cannot bind %s: %s", c->bind, zmq_strerror(zmq_errno()));
        goto fail;
    }
    size_t el = sizeof S->endpoint;
    if (zmq_getsockopt(S->router, ZMQ_LAST_ENDPOINT, S->endpoint, &el)) snprintf(S->endpoint, sizeof S->endpoint, "%s", c->bind);

    S->ctl_lanes = calloc((size_t)S->nthreads, sizeof *S->ctl_lanes);
    S->scratch = calloc((size_t)S->nthreads, sizeof *S->scratch);
    if (!S->ctl_lanes || !S->scratch) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    size_t sz = ((size_t)c->quantum * (size_t)(S->max_act_dim > 0 ? S->max_act_dim : 1) * 4 + 63) / 64 * 64;
    for (int i = 0; i < S->nthreads; i++)
        if (!(S->scratch[i] = aligned_alloc(64, sz))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    S->pool = srv_pool_new(S->nthreads, c->quantum, c->spin_us);
    if (!S->pool) {
        snprintf(err, errlen, "cannot start %d worker threads", S->nthreads);
        goto fail;
    }
    return S;
fail:
    srv_server_destroy(&S);
    return NULL;
}

const char *srv_server_endpoint(const srv_server *S) { return S->endpoint; }
int srv_server_threads(const srv_server *S) { return S->nthreads; }

void srv_server_banner(const srv_server *S)
{
    if (S->cfg.log_level < SRV_LOG_INFO) return;
    char envs[1024] = "";
    for (int i = 0; i < env_registry_count(); i++) {
        const env_spec *sp = env_registry_spec(i);
        snprintf(envs + strlen(envs), sizeof envs - strlen(envs), "%s%s (obs %d, act %d)", i ? ", " : "", sp->name,
                 sp->obs_dim, sp->act_dim);
    }
    char timeout[64];
    if (S->cfg.session_timeout_s > 0) snprintf(timeout, sizeof timeout, "after %g s idle", S->cfg.session_timeout_s);
    else snprintf(timeout, sizeof timeout, "never");
    fprintf(stderr,
            "herd-server %s (protocol %d)\n"
            "  endpoint   %s\n"
            "  threads    %d workers + 1 I/O thread\n"
            "  limits     %zu bytes per request, %d worlds per session, %ld worlds in all\n"
            "  sessions   closed %s\n"
            "  envs       %s\n",
            HERD_VERSION, PROTO_VERSION, S->endpoint, S->nthreads, S->cfg.max_message_bytes,
            S->cfg.max_worlds_per_session, S->cfg.max_worlds, timeout, envs);
}

void srv_server_destroy(srv_server **pS)
{
    if (!pS || !*pS) return;
    srv_server *S = *pS;
    /* the workers finish what is queued; completed jobs are then dropped */
    srv_pool_destroy(&S->pool);
    pthread_mutex_lock(&S->done.mu);
    job *j = S->done.head;
    S->done.head = S->done.tail = NULL;
    pthread_mutex_unlock(&S->done.mu);
    while (j) {
        job *next = j->next;
        if (j->kind == JOB_CLOSE && j->sess) {
            session_unlink(S, j->sess);
            session_free(j->sess);
        }
        job_free(j);
        j = next;
    }
    for (int b = 0; b < NBUCKETS; b++) {
        srv_session *next;
        for (srv_session *s = S->buckets[b]; s; s = next) {
            next = s->hnext;
            while (s->deferred) {
                job *d = s->deferred;
                s->deferred = d->next;
                job_free(d);
            }
            job_free(s->close_job);
            session_free(s);
        }
        S->buckets[b] = NULL;
    }
    if (S->router) {
        int linger = 2000;
        zmq_setsockopt(S->router, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(S->router);
    }
    if (S->ctx) zmq_ctx_term(S->ctx);
    if (S->efd >= 0) close(S->efd);
    if (S->scratch)
        for (int i = 0; i < S->nthreads; i++) free(S->scratch[i]);
    free(S->scratch);
    free(S->ctl_lanes);
    proto_buf_free(&S->out);
    pthread_mutex_destroy(&S->done.mu);
    free(S);
    *pS = NULL;
}

/* srv_server.c — the I/O loop and the request handlers.  See srv_server.h.
 *
 * A request's life:
 *   recv (ROUTER: envelope frames + one payload frame) -> proto_decode_request -> the handler of its op
 *   (handlers[]): hello, ping and stats are answered at once; make, reset, step and close are checked
 *   against the limits and the session (world ids, actions shape / finiteness) and become a pending
 *   request holding a job (srv_job.h): the reply buffer is laid out once, the workers write into it,
 *   and when its last unit is done the job comes back through srv_jobs_take_done -> complete_* sends
 *   envelope + reply (zero copy: ZeroMQ frees the buffer when sent).
 *
 * Order: a session's jobs run in request order on each worker (lanes).  With autoreset disabled a step
 * must know which worlds have ended before it starts, so it waits (the session's deferred list) until
 * the session has nothing in flight; then env_first_ended (through srv_job_first_ended) is exact.
 *
 * Bounds (issue 13; srv_config.h): requests are refused with LIMIT before they cost anything when they
 * would cross a bound: per client (sessions, worlds, requests in flight), the memory ceiling (worlds +
 * reply buffers in flight + replies queued in ZeroMQ, counted back by ZeroMQ's free callback), and a
 * step's work (worlds x decimation x solver_max_iter).  A client whose unread replies exceed its byte
 * budget has further replies dropped.  Every pending request is on S->plist, so that work can be cancelled
 * (srv_job_cancel): by close (the session's queued work; UNKNOWN_SESSION), by a disconnect (the ROUTER's
 * monitor reports the connection's fd, matched against ZMQ_SRCFD of each request; no reply), and by the
 * drain deadline (SHUTTING_DOWN).
 *
 * Threads: everything here runs on the I/O thread, except free_buf (ZeroMQ's I/O thread: atomics only).
 */
#include "srv_server.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "proto.h"
#include "srv_cpus.h"
#include "srv_auth.h"
#include "srv_client.h"
#include "srv_job.h"
#include "srv_log.h"
#include "srv_metrics.h"
#include "srv_portowner.h"
#include "srv_rate.h"
#include "srv_session.h"

/* The loop's constants. */
enum {
    MAX_FRAMES = 17,            /* the identity frame ROUTER adds + 16 frames sent by the client (envelope +
                                 * payload, PROTOCOL.md section 1); a message with more is dropped */
    MAX_ECHO_BYTES = 4096,      /* a TOO_LARGE message's envelope is echoed only up to this size */
    UTF8_ECHO_MAX = 64,         /* bytes of a client's string (env name) echoed in an error message */
    POLL_TIMEOUT_MS = 200,      /* the loop wakes at least this often (ticks, session expiry) */
    RECV_BATCH = 64,            /* requests read per wake-up, so that completions are not starved by a flood */
    DONE_EVERY = 8,             /* ... looking at completed jobs after every this many of them */
    TINY_JOB_ROWS = 4,          /* a job with at most this many rows per worker is done in tens of us: spin */
    FLUSH_LINGER_MS = 2000,     /* srv_server_destroy: how long queued replies may still go out */
    MAX_SPECS = 64,             /* tasks listed in a hello reply */
};
#define TICK_INTERVAL_S 0.1     /* session expiry and close checks */
#define RATE_SAMPLE_S 1.0       /* steps/s samples */
#define RATE_WINDOW_S 10.0      /* steps/s in stats replies: over this window */
#define DROP_LOG_S 1.0          /* at most one "replies dropped" line per client this often (warn level) */
#define DRAIN_GRACE_S 5.0       /* after the drain deadline: how long cancelled work may take to come back */
#define REF_STEP_WORK 200.0     /* decimation x solver_max_iter of anymal_c-walk's default configuration */
#define DEFAULT_WORLD_BYTES 2300    /* a world's memory before one of its task was made (anymal_c-walk: ~2.2 KB) */

/* A request waiting for its job.  Ownership: the envelope frames, the request message (step actions
 * point into it), the decoded request, and the job. */
typedef struct pending {
    srv_job job;                /* first: srv_jobs_take_done and the deferred lists hand back &job */
    uint64_t id;
    zmq_msg_t frames[MAX_FRAMES - 1];   /* the envelope to echo */
    int nframes;                /* 0 once replied; -1: no reply wanted (session expiry) */
    zmq_msg_t payload;
    int has_payload;
    proto_request req;
    int op;                     /* for the metrics: the request's op and when it arrived */
    double t0;
    srv_client *client;         /* who sent it (its inflight counts this request); NULL: expiry */
    /* issue 13: cancellation and accounting */
    int srcfd;                  /* the connection it came on (ZMQ_SRCFD; -1 unknown): cancelled if it goes */
    int cancel_code;            /* 0, or how to answer once cancelled: a proto_code, or -1 for no reply */
    int is_deferred;            /* on its session's deferred list (not yet on a worker) */
    size_t mem;                 /* its reply buffer's bytes (in mem_replies) */
    size_t make_mem;            /* make: its worlds' estimated bytes (in mem_worlds until it completes) */
    struct pending *lprev, *lnext;      /* the server's list of pending requests */
} pending;

/* A request being handled (the frames are moved into a pending request when one is made). */
typedef struct {
    zmq_msg_t *frames;
    int nframes;
    zmq_msg_t *payload;
    proto_request *req;
    srv_session *sess;          /* the request's session, when it names an open one */
    srv_client *client;         /* who sent it */
} incoming;

struct srv_server {
    srv_config cfg;
    char endpoint[256];
    int nthreads;
    void *ctx, *router;
    srv_auth *auth;             /* CURVE keys and the ZAP handler (off: plain mode) */
    srv_jobs *jobs;
    int next_rot;
    double spin_until;          /* the I/O thread polls instead of sleeping until then (tiny jobs in flight) */
    atomic_int stop;
    int draining;
    proto_limits lim;
    srv_session_table sessions;
    srv_clients *clients;
    long worlds_used;           /* including makes in flight */
    int jobs_inflight;          /* queued on workers or deferred */
    double t_start, last_tick, last_sample, last_stats;
    uint64_t steps, requests, errors;
    uint64_t last_stats_steps, last_stats_requests, last_stats_errors;
    uint64_t work_requests, last_stats_work;    /* make, reset, step and close requests (idle detection) */
    int metrics_port;
    srv_cpus cpus;              /* where the worker count came from (when not set explicitly) */
    srv_rate rate;
    proto_buf out;              /* small replies */
    srv_metrics *metrics;
    const char *metric_ops[PROTO_OP_COUNT + 1];     /* op labels, + "invalid" for undecodable requests */
    const char *metric_codes[PROTO_E_COUNT];
    int reply_op, reply_code;   /* the reply being sent: its request's op, and error code (0 = ok) ... */
    double reply_t0;            /* ... and its arrival time ... */
    srv_client *reply_client;   /* ... and its client (the queued-bytes budget), or NULL */
    /* issue 13: resource bounds */
    pending *plist;             /* every pending request (cancellation scans it) */
    size_t mem_ceiling;         /* srv_config_memory_ceiling */
    size_t mem_worlds;          /* worlds of open sessions and of makes in flight (estimates until made) */
    size_t mem_replies;         /* reply buffers of jobs in flight */
    atomic_size_t mem_queued;   /* replies handed to ZeroMQ and not yet freed by it */
    size_t world_bytes[MAX_SPECS];      /* per task: bytes per world measured at its last make */
    void *monitor;              /* PAIR socket receiving the ROUTER's disconnect events, or NULL */
    double t_drain;             /* when the drain began */
    int drain_cut;              /* the drain deadline has passed: work in flight was cancelled */
    uint64_t dropped_messages, dropped_replies, cancelled;
    double last_drop_log;
};

/* A reply handed to ZeroMQ without a copy: freed (and uncounted) by ZeroMQ's I/O thread once sent or
 * dropped.  The client entry stays valid meanwhile: srv_client_idle counts its queued bytes. */
typedef struct {
    srv_server *S;
    srv_client *client;
    size_t len;
} queued_reply;

#define OP_INVALID PROTO_OP_COUNT
_Static_assert(PROTO_OP_COUNT + 1 <= SRV_METRICS_OPS, "srv_metrics.h: SRV_METRICS_OPS must cover every op + invalid");
_Static_assert(PROTO_E_COUNT <= SRV_METRICS_CODES, "srv_metrics.h: SRV_METRICS_CODES must cover every error code");

#define LOG(S, level, ...) srv_log((S)->cfg.log_level, level, __VA_ARGS__)

/* ------------------------------------------------------------------------------------------------ */
/* sending */

static void free_buf(void *data, void *hint)
{
    queued_reply *q = hint;
    if (q) {
        atomic_fetch_sub(&q->S->mem_queued, q->len);
        if (q->client) atomic_fetch_sub(&q->client->queued_bytes, q->len);
        free(q);
    }
    free(data);
}

/* Writes src into dst (cap bytes, NUL-terminated) as valid UTF-8: bytes that do not form a well-formed
 * sequence become '?', and the text is cut at a character boundary.  Error messages echo client strings
 * (env names, config keys, field names), and replies must stay valid MessagePack str. */
static void utf8_sanitize(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)src;
    while (*p && o + 1 < cap) {
        int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 && *p >= 0xC2 ? 2 : (*p & 0xF0) == 0xE0 ? 3
              : (*p & 0xF8) == 0xF0 && *p <= 0xF4 ? 4 : 0;
        int ok = n > 0;
        for (int k = 1; ok && k < n; k++) ok = (p[k] & 0xC0) == 0x80;
        if (ok && n == 3) ok = !(p[0] == 0xE0 && p[1] < 0xA0) && !(p[0] == 0xED && p[1] >= 0xA0);
        if (ok && n == 4) ok = !(p[0] == 0xF0 && p[1] < 0x90) && !(p[0] == 0xF4 && p[1] >= 0x90);
        if (!ok) {
            dst[o++] = '?';
            p++;
            continue;
        }
        if (o + (size_t)n + 1 > cap) break;
        memcpy(dst + o, p, (size_t)n);
        o += (size_t)n;
        p += n;
    }
    dst[o] = 0;
}

static void close_frames(zmq_msg_t *f, int n)
{
    for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

/* Sends envelope + payload and closes the envelope frames.  own: buf is malloc'd memory that ZeroMQ
 * frees when sent (zero copy); otherwise the bytes are copied. */
static void send_reply(srv_server *S, zmq_msg_t *frames, int nframes, void *buf, size_t len, int own)
{
    /* the payload message first: once an envelope frame is sent (SNDMORE), the payload must follow, or
     * the ROUTER would append the next reply to this unfinished message */
    zmq_msg_t m;
    if (own) {
        srv_client *c = S->reply_client;
        if (c && atomic_load(&c->queued_bytes) + len > S->cfg.client_max_queued_bytes) {
            /* a client that does not read its replies: drop them rather than hold its memory */
            free(buf);
            close_frames(frames, nframes);
            S->dropped_replies++;
            srv_metrics_dropped(S->metrics, SRV_DROP_REPLY);
            double t = srv_now_s();
            char who[96];
            srv_client_name(c, who, sizeof who);
            int lv = t - S->last_drop_log >= DROP_LOG_S ? SRV_LOG_WARN : SRV_LOG_DEBUG;
            if (lv == SRV_LOG_WARN) S->last_drop_log = t;
            LOG(S, lv, "client %s: reply of %zu bytes dropped: %zu bytes of its replies are still unread (limit %zu, "
                "--client-max-queued-bytes); %" PRIu64 " replies dropped so far", who, len,
                (size_t)atomic_load(&c->queued_bytes), S->cfg.client_max_queued_bytes, S->dropped_replies);
            return;
        }
        queued_reply *q = malloc(sizeof *q);
        if (q) {
            *q = (queued_reply){S, c, len};
            atomic_fetch_add(&S->mem_queued, len);
            if (c) atomic_fetch_add(&c->queued_bytes, len);
        }
        if (zmq_msg_init_data(&m, buf, len, free_buf, q)) {
            free_buf(buf, q);
            close_frames(frames, nframes);
            return;
        }
    } else {
        if (zmq_msg_init_size(&m, len)) {
            close_frames(frames, nframes);
            return;
        }
        memcpy(zmq_msg_data(&m), buf, len);
    }
    int ok = 1;
    for (int i = 0; i < nframes; i++) {
        if (ok && zmq_msg_send(&frames[i], S->router, ZMQ_SNDMORE) < 0) ok = 0;
        zmq_msg_close(&frames[i]);
    }
    if (ok && zmq_msg_send(&m, S->router, 0) < 0) ok = 0;
    zmq_msg_close(&m);
    if (S->metrics) srv_metrics_reply(S->metrics, S->reply_op, S->reply_code, srv_now_s() - S->reply_t0, len);
    if (!ok) LOG(S, SRV_LOG_DEBUG, "reply not sent: %s", zmq_strerror(zmq_errno()));
}

/* An error reply (none when nframes < 0); counts the error. */
static void send_error(srv_server *S, zmq_msg_t *frames, int nframes, uint64_t id, srv_session *sess, proto_code code,
                       const char *msg)
{
    S->errors++;
    if (sess) sess->errors++;
    LOG(S, SRV_LOG_DEBUG, "request %" PRIu64 ": %s: %s", id, proto_code_name(code), msg);
    if (nframes < 0) return;
    char clean[PROTO_MSG_MAX];
    utf8_sanitize(clean, sizeof clean, msg);
    proto_buf_reset(&S->out);
    proto_encode_error(&S->out, id, code, clean);
    S->reply_code = code;
    send_reply(S, frames, nframes, S->out.data, S->out.len, 0);
    S->reply_code = 0;
}

/* Sends the small reply encoded in S->out. */
static void send_small(srv_server *S, zmq_msg_t *frames, int nframes)
{
    if (S->out.oom) {
        close_frames(frames, nframes);
        return;
    }
    send_reply(S, frames, nframes, S->out.data, S->out.len, 0);
}

/* ------------------------------------------------------------------------------------------------ */
/* pending requests */

static pending *pending_new(srv_server *S, srv_job_kind kind, incoming *in)
{
    pending *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->srcfd = zmq_msg_get(in->payload, ZMQ_SRCFD);
    p->lnext = S->plist;
    if (S->plist) S->plist->lprev = p;
    S->plist = p;
    srv_job_init(&p->job, kind);
    p->job.sess = in->sess;
    p->id = in->req->id;
    for (int i = 0; i < in->nframes; i++) {
        zmq_msg_init(&p->frames[i]);
        zmq_msg_move(&p->frames[i], &in->frames[i]);
    }
    p->nframes = in->nframes;
    in->nframes = 0;
    p->req = *in->req;                   /* p owns the decoded arrays now */
    proto_request_init(in->req);
    p->client = in->client;
    if (p->client) p->client->inflight++;
    return p;
}

static void pending_free(srv_server *S, pending *p)
{
    if (!p) return;
    if (p->lprev || S->plist == p) {
        if (p->lprev) p->lprev->lnext = p->lnext;
        else S->plist = p->lnext;
        if (p->lnext) p->lnext->lprev = p->lprev;
    }
    S->mem_replies -= p->mem;
    /* not released here: the request being handled may still hold the entry (in.client); idle entries are
     * released at the end of handle_request and by the tick */
    if (p->client) p->client->inflight--;
    if (p->nframes > 0) close_frames(p->frames, p->nframes);
    if (p->has_payload) zmq_msg_close(&p->payload);
    proto_request_clear(&p->req);
    srv_job_clear(&p->job);
    free(p);
}

/* The reply about to be sent answers p (for the metrics). */
static void replying_to(srv_server *S, const pending *p)
{
    S->reply_op = p->op;
    S->reply_t0 = p->t0;
    S->reply_client = p->client;
}

/* Replies with an error and frees p. */
static void pending_fail(srv_server *S, pending *p, proto_code code, const char *msg)
{
    replying_to(S, p);
    if (p->client) p->client->errors++;
    send_error(S, p->frames, p->nframes, p->id, p->job.sess, code, msg);
    p->nframes = 0;
    pending_free(S, p);
}

static pending *as_pending(srv_job *j) { return (pending *)(void *)j; }

/* ------------------------------------------------------------------------------------------------ */
/* starting jobs */

static void finish_close_if_idle(srv_server *S, srv_session *s);

/* Autoreset disabled: a step may only start when the session has nothing in flight, so that the env's
 * view of which worlds have ended is exact (the env owns that state). */
static int must_wait(const srv_session *s, const srv_job *j)
{
    return j->kind == SRV_JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED && s->inflight > 0;
}

static void start_or_fail(srv_server *S, pending *p)
{
    srv_job *j = &p->job;
    srv_session *s = j->sess;
    p->is_deferred = 0;
    if (j->kind == SRV_JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED) {
        int nbad;
        int bad = srv_job_first_ended(j, &nbad);
        if (bad >= 0) {
            char m[256];
            snprintf(m, sizeof m, "world %d%s has ended (or was never reset) and autoreset is disabled: reset it "
                     "before stepping it (%d of the %d worlds in this request)", j->ids ? j->ids[bad] : bad,
                     nbad > 1 ? " and others" : "", nbad, j->n);
            pending_fail(S, p, PROTO_E_EPISODE_ENDED, m);
            return;
        }
    }
    int most_rows;
    if (srv_jobs_submit(S->jobs, j, &most_rows)) {
        pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    s->inflight++;
    S->jobs_inflight++;
    /* a tiny job completes within tens of microseconds: the I/O thread polls for it rather than sleep
     * and pay a thread wake-up on top */
    if (most_rows <= TINY_JOB_ROWS && S->cfg.spin_us > 0) S->spin_until = srv_now_s() + 1e-6 * S->cfg.spin_us;
}

static void pump_deferred(srv_server *S, srv_session *s)
{
    while (s->deferred && !must_wait(s, s->deferred)) {
        srv_job *j = s->deferred;
        s->deferred = j->next;
        if (!s->deferred) s->deferred_tail = NULL;
        S->jobs_inflight--;
        start_or_fail(S, as_pending(j));
    }
}

static void submit(srv_server *S, pending *p)
{
    srv_session *s = p->job.sess;
    if (s->deferred || must_wait(s, &p->job)) {
        p->is_deferred = 1;
        p->job.next = NULL;
        if (s->deferred_tail) s->deferred_tail->next = &p->job;
        else s->deferred = &p->job;
        s->deferred_tail = &p->job;
        S->jobs_inflight++;
        return;
    }
    start_or_fail(S, p);
}

static void submit_control(srv_server *S, pending *p)
{
    S->jobs_inflight++;
    srv_jobs_submit_control(S->jobs, &p->job);
}

static void finish_close_if_idle(srv_server *S, srv_session *s)
{
    if (!s->closing || s->destroying || s->inflight || s->deferred) return;
    s->destroying = 1;
    pending *p = (pending *)(void *)s->close_job;
    if (!p) {                    /* expiry: no request, no reply */
        p = calloc(1, sizeof *p);
        if (!p) {
            s->destroying = 0;   /* retried at the next tick */
            return;
        }
        srv_job_init(&p->job, SRV_JOB_CLOSE);
        proto_request_init(&p->req);
        p->nframes = -1;
    }
    s->close_job = NULL;
    p->job.sess = s;
    submit_control(S, p);
}

/* ------------------------------------------------------------------------------------------------ */
/* cancellation: a closed session, a vanished connection, the drain deadline */

enum { CANCEL_SILENT = -1 };    /* cancel_code: no reply (the client is gone) */

static void cancelled_message(const srv_server *S, const pending *p, char *m, size_t mlen)
{
    if (p->cancel_code == PROTO_E_SHUTTING_DOWN)
        snprintf(m, mlen, "the server is shutting down and its drain deadline (%g s, --drain-timeout) passed "
                 "before this request completed", S->cfg.drain_timeout_s);
    else
        snprintf(m, mlen, "session %" PRIu64 " was closed before this request completed (it was cancelled)",
                 p->req.session);
}

/* Answers a cancelled request (or drops its reply when its client is gone). */
static void answer_cancelled(srv_server *S, pending *p)
{
    replying_to(S, p);
    if (p->cancel_code == CANCEL_SILENT) {
        srv_metrics_dropped(S->metrics, SRV_DROP_CANCELLED);
        close_frames(p->frames, p->nframes);
        p->nframes = 0;
        return;
    }
    char m[160];
    cancelled_message(S, p, m, sizeof m);
    if (p->client) p->client->errors++;
    send_error(S, p->frames, p->nframes, p->id, p->job.sess, (proto_code)p->cancel_code, m);
    p->nframes = 0;
}

/* Cancels p with code (a proto_code, or CANCEL_SILENT).  A request still on its session's deferred list
 * is answered at once; work on the workers is cut short and answered when it comes back.  Close jobs are
 * never cancelled (they free the worlds). */
static void cancel_pending(srv_server *S, pending *p, int code)
{
    if (p->job.kind == SRV_JOB_CLOSE || p->cancel_code) return;
    p->cancel_code = code;
    S->cancelled++;
    if (!p->is_deferred) {
        srv_job_cancel(&p->job);
        return;
    }
    srv_session *s = p->job.sess;
    srv_job *prev = NULL;
    for (srv_job *j = s->deferred; j; prev = j, j = j->next) {
        if (j != &p->job) continue;
        if (prev) prev->next = j->next;
        else s->deferred = j->next;
        if (s->deferred_tail == j) s->deferred_tail = prev;
        break;
    }
    p->is_deferred = 0;
    S->jobs_inflight--;
    answer_cancelled(S, p);
    pending_free(S, p);
    finish_close_if_idle(S, s);
}

/* Cancels every pending request that matches: of session s (if not NULL), from connection fd (if >= 0). */
static void cancel_where(srv_server *S, const srv_session *s, int fd, int code)
{
    for (pending *p = S->plist, *next; p; p = next) {
        next = p->lnext;
        if ((s && p->job.sess != s) || (fd >= 0 && p->srcfd != fd)) continue;
        cancel_pending(S, p, code);
    }
}

static void begin_close(srv_server *S, srv_session *s, pending *close_request)
{
    s->closing = 1;
    s->close_job = close_request ? &close_request->job : NULL;
    /* what the session still has queued is not run: its worlds are about to be freed */
    if (close_request) cancel_where(S, s, -1, PROTO_E_UNKNOWN_SESSION);
    finish_close_if_idle(S, s);
}

/* ------------------------------------------------------------------------------------------------ */
/* completed jobs */

/* A make failed after its worlds were counted: uncounts them. */
static void uncount_make(srv_server *S, pending *p)
{
    S->worlds_used -= p->req.num_worlds;
    if (p->client) {
        p->client->worlds -= p->req.num_worlds;
        p->client->sessions--;
    }
}

/* The work bound's cost of one world-step of a session: decimation x solver_max_iter (configuration
 * values; a task without the key counts 1 for it). */
static double step_work(const env_spec *sp, const double *config)
{
    double dec = sp->decimation > 0 ? sp->decimation : 1, iters = 1;
    for (int i = 0; i < sp->nconfig; i++) {
        if (!strcmp(sp->config[i].key, "decimation")) dec = config[i];
        else if (!strcmp(sp->config[i].key, "solver_max_iter")) iters = config[i];
    }
    return dec * iters;
}

static void complete_make(srv_server *S, pending *p)
{
    srv_job *j = &p->job;
    const proto_request *r = &p->req;
    S->mem_worlds -= p->make_mem;
    if (!j->env) {
        uncount_make(S, p);
        if (j->make_err == SRV_MAKE_CANCELLED) {
            answer_cancelled(S, p);
            return;
        }
        if (p->client) p->client->errors++;
        send_error(S, p->frames, p->nframes, p->id, NULL,
                   j->make_err == SRV_MAKE_NO_MEMORY ? PROTO_E_LIMIT : PROTO_E_BAD_CONFIG, j->err);
        p->nframes = 0;
        return;
    }
    int task = srv_jobs_task(r->env);
    if (task >= 0 && task < MAX_SPECS && j->world_bytes) S->world_bytes[task] = j->world_bytes;
    int n = (int)r->num_worlds;
    srv_session *s = srv_session_new(n, S->nthreads, S->next_rot++ % S->nthreads);
    if (!s || srv_session_table_add(&S->sessions, s)) {
        uncount_make(S, p);
        if (p->client) p->client->errors++;
        send_error(S, p->frames, p->nframes, p->id, NULL, PROTO_E_INTERNAL,
                   s ? "no randomness for the session id and token" : "out of memory");
        p->nframes = 0;
        srv_session_destroy(&s);
        return;                  /* the job's env is destroyed with the job */
    }
    if (p->client) srv_session_set_owner(s, p->client->id, p->client->idlen);
    s->env = j->env;
    j->env = NULL;
    s->spec = j->spec;
    s->obs_dim = s->spec->obs_dim;
    s->act_dim = s->spec->act_dim;
    s->nterms = s->spec->nterms;
    s->autoreset = r->autoreset;
    s->seed = r->seed;
    s->created = s->last_active = srv_now_s();
    s->client = p->client;      /* the make's counts move to the session */
    s->step_work = step_work(s->spec, j->config);
    s->mem_bytes = (size_t)n * j->world_bytes;
    S->mem_worlds += s->mem_bytes;
    proto_buf_reset(&S->out);
    proto_encode_make_reply(&S->out, p->id, s->id, s->token, s->view_token, n, s->autoreset, s->seed, s->spec, j->config);
    send_small(S, p->frames, p->nframes);
    p->nframes = 0;
    LOG(S, SRV_LOG_INFO, "session %" PRIu64 ": %s, %d worlds, autoreset %s, seed %" PRIu64 " (%d sessions, %ld worlds)",
        s->id, s->spec->name, n, proto_autoreset_name(s->autoreset), s->seed, S->sessions.count, S->worlds_used);
}

static void complete_close(srv_server *S, pending *p)
{
    srv_session *s = p->job.sess;
    S->worlds_used -= s->nworlds;
    S->mem_worlds -= s->mem_bytes;
    if (s->client) {
        s->client->worlds -= s->nworlds;
        s->client->sessions--;
        srv_client_release(S->clients, &s->client);
    }
    srv_session_table_remove(&S->sessions, s);
    if (p->nframes >= 0) {
        proto_buf_reset(&S->out);
        proto_encode_close_reply(&S->out, p->id, s->id, s->steps);
        send_small(S, p->frames, p->nframes);
        p->nframes = 0;
        LOG(S, SRV_LOG_INFO, "session %" PRIu64 " closed after %" PRIu64 " steps (%d sessions, %ld worlds)", s->id,
            s->steps, S->sessions.count, S->worlds_used);
    } else {
        LOG(S, SRV_LOG_INFO, "session %" PRIu64 " expired after %.0f s idle (%d sessions, %ld worlds)", s->id,
            srv_now_s() - s->last_active, S->sessions.count, S->worlds_used);
    }
    srv_session_destroy(&s);
}

static void complete_rows(srv_server *S, pending *p)
{
    srv_job *j = &p->job;
    srv_session *s = j->sess;
    s->inflight--;
    s->last_active = srv_now_s();       /* the idle clock runs from the reply, not from the request's arrival */
    if (p->cancel_code && srv_job_cut(j)) {
        answer_cancelled(S, p);
    } else if (j->refused) {
        char m[160];
        snprintf(m, sizeof m, "%d worlds had ended and were not stepped (autoreset disabled)", j->refused);
        send_error(S, p->frames, p->nframes, p->id, s, PROTO_E_EPISODE_ENDED, m);
    } else {
        if (j->kind == SRV_JOB_STEP) {
            s->steps += (uint64_t)j->n;
            S->steps += (uint64_t)j->n;
        }
        uint8_t *buf = j->reply;
        j->reply = NULL;
        send_reply(S, p->frames, p->nframes, buf, j->reply_len, 1);
    }
    p->nframes = 0;
    pump_deferred(S, s);
    finish_close_if_idle(S, s);
}

static void process_done(srv_server *S)
{
    srv_job *j = srv_jobs_take_done(S->jobs);
    while (j) {
        srv_job *next = j->next;
        pending *p = as_pending(j);
        S->jobs_inflight--;
        replying_to(S, p);
        switch (j->kind) {
        case SRV_JOB_MAKE: complete_make(S, p); break;
        case SRV_JOB_CLOSE: complete_close(S, p); break;
        case SRV_JOB_RESET:
        case SRV_JOB_STEP:
        case SRV_JOB_POSES: complete_rows(S, p); break;
        }
        pending_free(S, p);
        j = next;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* request handlers: one per op */

static long client_max_worlds(const srv_server *S)
{
    return S->cfg.client_max_worlds > 0 ? S->cfg.client_max_worlds : S->cfg.max_worlds;
}

/* Bytes the memory ceiling counts now: worlds (made and being made), reply buffers in flight, replies
 * queued in ZeroMQ. */
static size_t mem_used(srv_server *S)
{
    return S->mem_worlds + S->mem_replies + atomic_load(&S->mem_queued);
}

static void handle_hello(srv_server *S, incoming *in)
{
    const env_spec *specs[MAX_SPECS];
    int n = srv_jobs_specs(specs, MAX_SPECS);
    static const char *const names[] = {"max_request_work", "max_memory_bytes", "client_max_worlds",
                                        "client_max_sessions", "client_max_inflight", "client_max_queued_bytes",
                                        "drain_timeout_ms"};
    const int64_t values[] = {S->cfg.max_request_work, (int64_t)S->mem_ceiling, client_max_worlds(S),
                              S->cfg.client_max_sessions, S->cfg.client_max_inflight,
                              (int64_t)S->cfg.client_max_queued_bytes, (int64_t)(S->cfg.drain_timeout_s * 1000)};
    proto_hello_info info = {.server = "herd " HERD_VERSION, .threads = S->nthreads,
                             .max_message_bytes = S->cfg.max_message_bytes,
                             .max_worlds_per_session = S->cfg.max_worlds_per_session, .max_worlds = S->cfg.max_worlds,
                             .auth = srv_auth_enabled(S->auth) ? "curve" : "none",
                             .nextra = (int)(sizeof names / sizeof names[0]), .extra_names = names, .extra_values = values};
    proto_buf_reset(&S->out);
    proto_encode_hello_reply(&S->out, in->req->id, &info, specs, n);
    send_small(S, in->frames, in->nframes);
}

static void handle_ping(srv_server *S, incoming *in)
{
    proto_buf_reset(&S->out);
    proto_encode_ping_reply(&S->out, in->req->id, srv_unix_s());
    send_small(S, in->frames, in->nframes);
}

static void handle_stats(srv_server *S, incoming *in)
{
    double t = srv_now_s();
    srv_session *s = in->sess;
    proto_server_stats st = {.uptime_s = t - S->t_start, .sessions = S->sessions.count, .worlds = S->worlds_used,
                             .steps = S->steps, .requests = S->requests, .errors = S->errors,
                             .steps_per_s = srv_rate_get(&S->rate, t, S->steps, RATE_WINDOW_S), .threads = S->nthreads};
    proto_session_stats ss;
    if (s) {
        ss = (proto_session_stats){.session = s->id, .env = s->spec->name, .num_worlds = s->nworlds, .steps = s->steps,
                                   .steps_per_s = srv_rate_get(&s->rate, t, s->steps, RATE_WINDOW_S),
                                   .age_s = t - s->created, .idle_s = t - s->last_active, .requests = s->requests,
                                   .errors = s->errors};
    }
    proto_buf_reset(&S->out);
    proto_encode_stats_reply(&S->out, in->req->id, &st, s ? &ss : NULL);
    send_small(S, in->frames, in->nframes);
}

/* A pending request for `kind`, or NULL after an error reply. */
static pending *take_pending(srv_server *S, incoming *in, srv_job_kind kind)
{
    srv_client *c = in->client;
    /* c->inflight counts this request too while it is handled (handle_request): the others are inflight - 1 */
    if (c && kind != SRV_JOB_CLOSE && c->inflight - 1 >= S->cfg.client_max_inflight) {
        char m[200];
        snprintf(m, sizeof m, "this client has %d requests in flight, the limit (client_max_inflight): wait for "
                 "replies before sending more", c->inflight - 1);
        send_error(S, in->frames, in->nframes, in->req->id, in->sess, PROTO_E_LIMIT, m);
        c->errors++;
        return NULL;
    }
    pending *p = pending_new(S, kind, in);
    if (!p) {
        send_error(S, in->frames, in->nframes, in->req->id, in->sess, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
    p->op = S->reply_op;
    p->t0 = S->reply_t0;
    S->work_requests++;
    return p;
}

static void handle_make(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_MAKE);
    if (!p) return;
    const proto_request *r = &p->req;
    char m[PROTO_MSG_MAX + 64];
    int code = srv_jobs_check_env(r->env, m, sizeof m);
    if (!code && r->num_worlds > S->cfg.max_worlds_per_session) {
        snprintf(m, sizeof m, "num_worlds %" PRId64 " exceeds the limit of %d worlds per session", r->num_worlds,
                 S->cfg.max_worlds_per_session);
        code = PROTO_E_LIMIT;
    }
    if (!code && S->worlds_used + r->num_worlds > S->cfg.max_worlds) {
        snprintf(m, sizeof m, "num_worlds %" PRId64 " would exceed the server's limit of %ld worlds (%ld in use)",
                 r->num_worlds, S->cfg.max_worlds, S->worlds_used);
        code = PROTO_E_LIMIT;
    }
    srv_client *c = p->client;
    if (!code && c && c->sessions + 1 > S->cfg.client_max_sessions) {
        snprintf(m, sizeof m, "this client has %d sessions open, the limit (client_max_sessions): close one first",
                 c->sessions);
        code = PROTO_E_LIMIT;
    }
    if (!code && c && c->worlds + r->num_worlds > client_max_worlds(S)) {
        snprintf(m, sizeof m, "num_worlds %" PRId64 " would exceed this client's limit of %ld worlds (%ld in use; "
                 "client_max_worlds)", r->num_worlds, client_max_worlds(S), c->worlds);
        code = PROTO_E_LIMIT;
    }
    int task = code ? -1 : srv_jobs_task(r->env);
    size_t per = task >= 0 && task < MAX_SPECS && S->world_bytes[task] ? S->world_bytes[task] : DEFAULT_WORLD_BYTES;
    size_t need = (size_t)r->num_worlds * per;
    if (!code && mem_used(S) + need > S->mem_ceiling) {
        snprintf(m, sizeof m, "num_worlds %" PRId64 " needs about %zu MiB; with %zu MiB in use that would exceed the "
                 "server's memory ceiling of %zu MiB (max_memory_bytes)", r->num_worlds, need >> 20,
                 mem_used(S) >> 20, S->mem_ceiling >> 20);
        code = PROTO_E_LIMIT;
    }
    if (code) {
        pending_fail(S, p, (proto_code)code, m);
        return;
    }
    S->worlds_used += r->num_worlds;
    if (p->client) {
        p->client->worlds += r->num_worlds;
        p->client->sessions++;
    }
    p->make_mem = need;
    S->mem_worlds += need;
    p->job.make = &p->req;
    submit_control(S, p);
}

static void handle_close(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_CLOSE);
    if (p) begin_close(S, in->sess, p);
}

/* The rows of a reset / step request: its world ids (checked) or all worlds.  0, or -1 after failing p. */
static int take_rows(srv_server *S, pending *p)
{
    srv_job *j = &p->job;
    srv_session *s = j->sess;
    proto_error e;
    j->n = p->req.nids >= 0 ? p->req.nids : s->nworlds;
    j->ids = p->req.world_ids;
    int rc = j->ids ? proto_check_world_ids(j->ids, j->n, s->nworlds, s->idbits, &e) : 0;
    if (rc) pending_fail(S, p, (proto_code)rc, e.message);
    return rc ? -1 : 0;
}

/* Takes the laid-out reply from b and submits p's job (fails p when b ran out of memory).  A "latest" poses
 * read starts at once, not behind the session's deferred steps. */
static void submit_rows(srv_server *S, pending *p, proto_buf *b)
{
    if (b->oom) {
        proto_buf_free(b);
        pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    if (mem_used(S) + b->len > S->mem_ceiling) {
        char m[200];
        snprintf(m, sizeof m, "a reply of %zu bytes would exceed the server's memory ceiling of %zu MiB (%zu MiB in "
                 "use): address fewer worlds per request", b->len, S->mem_ceiling >> 20, mem_used(S) >> 20);
        proto_buf_free(b);
        pending_fail(S, p, PROTO_E_LIMIT, m);
        return;
    }
    p->job.reply = proto_buf_steal(b, &p->job.reply_len);
    p->mem = p->job.reply_len;
    S->mem_replies += p->mem;
    if (p->job.latest) start_or_fail(S, p);
    else submit(S, p);
}

static void handle_reset(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_RESET);
    if (!p || take_rows(S, p)) return;
    srv_job *j = &p->job;
    proto_request *r = &p->req;
    if (r->nseeds >= 0 && r->nseeds != j->n) {
        char m[96];
        snprintf(m, sizeof m, "'seeds' has %d entries for %d worlds", r->nseeds, j->n);
        pending_fail(S, p, PROTO_E_BAD_SHAPE, m);
        return;
    }
    if (r->nseeds >= 0) {
        j->seeds = r->seeds;
        r->seeds = NULL;
    } else if (r->has_seed) {
        j->seeds = malloc((size_t)j->n * sizeof *j->seeds);
        if (!j->seeds) {
            pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        for (int i = 0; i < j->n; i++) j->seeds[i] = r->seed + (uint64_t)(j->ids ? j->ids[i] : i);
    }
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_reset_reply(&b, p->id, j->n, j->sess->obs_dim, &j->lay);
    submit_rows(S, p, &b);
}

static void handle_step(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_STEP);
    if (!p || take_rows(S, p)) return;
    srv_job *j = &p->job;
    srv_session *s = j->sess;
    proto_request *r = &p->req;
    proto_error e;
    int rc = proto_check_actions(&r->actions, j->n, s->act_dim, j->ids, &e);
    if (rc) {
        pending_fail(S, p, (proto_code)rc, e.message);
        return;
    }
    double work = (double)j->n * s->step_work;
    if (work > (double)S->cfg.max_request_work) {
        char m[240];
        long most = (long)((double)S->cfg.max_request_work / s->step_work);
        snprintf(m, sizeof m, "a step of %d worlds costs %.0f (worlds x decimation x solver_max_iter), over the limit of "
                 "%ld (max_request_work): step at most %ld worlds of this session per request", j->n, work,
                 S->cfg.max_request_work, most);
        pending_fail(S, p, PROTO_E_LIMIT, m);
        return;
    }
    /* worlds per env call: the quantum for ordinary sessions (decimation 4 x 50 sweeps = 200), fewer as a
     * world-step costs more (a world's cost varies with its contacts: growing chunks would overshoot) */
    double per = (double)S->cfg.quantum * REF_STEP_WORK / s->step_work;
    j->max_chunk = per >= S->cfg.quantum ? S->cfg.quantum : per >= 1 ? (int)per : 1;
    j->actions = r->actions.data;
    /* the actions point into the request message: keep it */
    zmq_msg_init(&p->payload);
    zmq_msg_move(&p->payload, in->payload);
    p->has_payload = 1;
    unsigned flags = (s->autoreset == ENV_AUTORESET_NEXT_STEP ? PROTO_STEP_AUTORESET : 0) |
                     (s->autoreset == ENV_AUTORESET_SAME_STEP ? PROTO_STEP_FINAL_OBS : 0) |
                     (r->reward_terms ? PROTO_STEP_REWARD_TERMS : 0);
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_step_reply(&b, p->id, j->n, s->obs_dim, s->nterms, flags, &j->lay);
    submit_rows(S, p, &b);
}

/* model: the session's scene, from its immutable model, answered at once. */
static void handle_model(srv_server *S, incoming *in)
{
    srv_session *s = in->sess;
    if (!s) {
        send_error(S, in->frames, in->nframes, in->req->id, NULL, PROTO_E_UNKNOWN_SESSION, "no session");
        return;
    }
    env_scene_t *scene = malloc(sizeof *scene);
    if (!scene) {
        send_error(S, in->frames, in->nframes, in->req->id, s, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    srv_jobs_scene(s, scene);
    proto_buf_reset(&S->out);
    proto_encode_model_reply(&S->out, in->req->id, s->id, s->spec->name, scene);
    free(scene);
    send_small(S, in->frames, in->nframes);
}

/* poses: a rows job on the worlds' lanes (in order with the session's steps), or with "latest" on their
 * second lanes, started at once even when steps of the session wait (see srv_job.h). */
static void handle_poses(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_POSES);
    if (!p || take_rows(S, p)) return;
    srv_job *j = &p->job;
    env_scene_t *scene = malloc(sizeof *scene);
    if (!scene) {
        pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    srv_jobs_scene(j->sess, scene);
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_poses_reply(&b, p->id, j->n, scene->nbody, p->req.contacts ? scene->max_contacts : 0, &j->lay);
    free(scene);
    j->latest = p->req.latest;
    submit_rows(S, p, &b);
}

typedef void (*op_handler)(srv_server *S, incoming *in);

static op_handler handler_of(proto_op op)
{
    switch (op) {
    case PROTO_OP_HELLO: return handle_hello;
    case PROTO_OP_PING: return handle_ping;
    case PROTO_OP_STATS: return handle_stats;
    case PROTO_OP_MAKE: return handle_make;
    case PROTO_OP_RESET: return handle_reset;
    case PROTO_OP_STEP: return handle_step;
    case PROTO_OP_CLOSE: return handle_close;
    case PROTO_OP_MODEL: return handle_model;
    case PROTO_OP_POSES: return handle_poses;
    case PROTO_OP_COUNT: break;
    }
    return NULL;
}

/* The registry entry of a request's sender: its CURVE key (the "User-Id" property the ZAP handler
 * set) or the routing id ROUTER put first in the envelope.  NULL when out of memory. */
static srv_client *client_of(srv_server *S, zmq_msg_t *frames, zmq_msg_t *payload)
{
    uint8_t id[SRV_CLIENT_ID_MAX];
    const char *key = zmq_msg_gets(payload, "User-Id");
    size_t n = srv_client_identity(id, key, zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]));
    double t = srv_now_s();
    srv_client *c = srv_client_get(S->clients, id, n, t);
    if (c) c->last_seen = t;
    return c;
}

/* The session a request names if its sender may act on it (srv_session_owned_by), or, for the ops that
 * only read (model, poses, stats), if it carries the session's view token; else NULL: to anyone else a
 * session they may not use looks exactly like one that does not exist. */
static srv_session *find_owned(srv_server *S, const proto_request *req, const srv_client *c)
{
    srv_session *s = srv_session_table_find(&S->sessions, req->session);
    if (!s) return NULL;
    const uint8_t *token = req->has_token ? req->token : NULL;
    if (srv_session_owned_by(s, c ? c->id : NULL, c ? c->idlen : 0, token)) return s;
    int reads = req->op == PROTO_OP_MODEL || req->op == PROTO_OP_POSES || req->op == PROTO_OP_STATS;
    return reads && srv_session_viewable_by(s, token) ? s : NULL;
}

/* Decodes one request and hands it to its op's handler.  Takes the envelope frames (moved into a
 * pending request when one is made); the caller closes the payload. */
static void handle_request(srv_server *S, zmq_msg_t *frames, int nf, zmq_msg_t *payload)
{
    S->requests++;
    proto_request req;
    proto_request_init(&req);
    incoming in = {frames, nf, payload, &req, NULL, client_of(S, frames, payload)};
    proto_error e;
    char m[PROTO_MSG_MAX + 64];
    /* the envelope counts toward the message limit (frame 0 is the identity ROUTER added) */
    size_t envelope = 0;
    for (int i = 1; i < nf; i++) envelope += zmq_msg_size(&frames[i]);
    int rc;
    if (envelope > 0 && envelope + zmq_msg_size(payload) > S->cfg.max_message_bytes) {
        rc = PROTO_E_TOO_LARGE;
        req.has_id = proto_peek_id(zmq_msg_data(payload), zmq_msg_size(payload), &req.id);
        snprintf(e.message, sizeof e.message, "message of %zu bytes (%zu of them envelope frames) exceeds the limit "
                 "of %zu bytes", envelope + zmq_msg_size(payload), envelope, S->cfg.max_message_bytes);
        if (envelope > MAX_ECHO_BYTES) nf = 1;   /* not echoed: the reply goes to the sender, without it */
    } else {
        rc = proto_decode_request(zmq_msg_data(payload), zmq_msg_size(payload), &S->lim, &req, &e);
        /* the id of a request that failed before its id was decoded (a duplicated key) can still be read */
        if (rc && !req.has_id) req.has_id = proto_peek_id(zmq_msg_data(payload), zmq_msg_size(payload), &req.id);
    }
    op_handler h = rc ? NULL : handler_of(req.op);
    S->reply_op = h ? (int)req.op : OP_INVALID;
    S->reply_t0 = srv_now_s();
    if (S->metrics) {
        size_t bytes = zmq_msg_size(payload);
        for (int i = 0; i < nf; i++) bytes += zmq_msg_size(&frames[i]);
        srv_metrics_request(S->metrics, S->reply_op, bytes);
    }
    int failed = 1;
    if (in.client) {
        in.client->requests++;
        in.client->inflight++;   /* this request, while handled: keeps the entry alive (a pending request
                                  * made from it counts once more and may be freed meanwhile) */
    }
    if (rc || !h) {
        /* counted against the session it names, when that and its owner could be read: a client that does
         * not own the session (section 9) cannot add to its counts */
        srv_session *named = req.has_session ? find_owned(S, &req, in.client) : NULL;
        send_error(S, frames, nf, req.has_id ? req.id : 0, named, rc ? (proto_code)rc : PROTO_E_INTERNAL,
                   rc ? e.message : "unhandled op");
    } else if (S->draining) {
        send_error(S, frames, nf, req.id, NULL, PROTO_E_SHUTTING_DOWN, "the server is shutting down");
    } else if (req.has_session && (!(in.sess = find_owned(S, &req, in.client)) || in.sess->closing)) {
        snprintf(m, sizeof m, "unknown session %" PRIu64 "%s", req.session,
                 in.sess ? " (closing)" : " (closed, expired, never made on this server, or made by another client)");
        send_error(S, frames, nf, req.id, NULL, PROTO_E_UNKNOWN_SESSION, m);
    } else {
        failed = 0;
        if (in.sess) {
            in.sess->requests++;
            in.sess->last_active = srv_now_s();
        }
        h(S, &in);
    }
    if (in.client) {
        in.client->errors += (uint64_t)failed;
        in.client->inflight--;
        srv_client_release(S->clients, &in.client);
    }
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
            LOG(S, SRV_LOG_ERROR, "receive failed: %s", zmq_strerror(err));
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
        /* more than MAX_FRAMES frames: not a request of this protocol, and no safe envelope to echo.  Not an
         * error reply (none is sent): counted as dropped */
        LOG(S, SRV_LOG_DEBUG, "dropped a message of %s%d frames", dropped ? "more than " : "", n);
        S->dropped_messages++;
        srv_metrics_dropped(S->metrics, SRV_DROP_MESSAGE);
        close_frames(f, n);
        return 1;
    }
    handle_request(S, f, n - 1, &f[n - 1]);
    close_frames(f, n);     /* whatever handle_request did not move (closing a moved-from frame is a no-op) */
    return 1;
}

/* ------------------------------------------------------------------------------------------------ */
/* the loop: while (serving) { before_sleep; process_events; } */

typedef struct {
    srv_server *S;
    double t;
    int sample;                 /* take a rate sample */
} tick_arg;

static void tick_session(srv_session *s, void *arg)
{
    const tick_arg *a = arg;
    srv_server *S = a->S;
    double t = a->t;
    if (a->sample) srv_rate_sample(&s->rate, t, s->steps);
    if (s->closing) {
        finish_close_if_idle(S, s);
        return;
    }
    if (S->cfg.session_timeout_s > 0 && !s->inflight && !s->deferred && t - s->last_active > S->cfg.session_timeout_s)
        begin_close(S, s, NULL);
}

/* Entries kept only by replies ZeroMQ has since sent. */
static void release_idle_client(srv_client *c, void *arg)
{
    srv_server *S = arg;
    srv_client_release(S->clients, &c);
}

/* The periodic work: rate samples, session expiry, pending closes, the stats line. */
static void tick(srv_server *S, double t)
{
    if (t - S->last_tick < TICK_INTERVAL_S) return;
    tick_arg a = {S, t, t - S->last_sample >= RATE_SAMPLE_S};
    S->last_tick = t;
    if (a.sample) {
        S->last_sample = t;
        srv_rate_sample(&S->rate, t, S->steps);
    }
    srv_session_table_each(&S->sessions, tick_session, &a);
    srv_clients_each(S->clients, release_idle_client, S);
    if (S->metrics) {
        srv_metrics_gauges(S->metrics, S->sessions.count, S->worlds_used, S->cfg.max_worlds, S->jobs_inflight);
        srv_metrics_memory(S->metrics, mem_used(S), S->mem_ceiling);
        srv_metrics_tick(S->metrics, t);
    }
    if (S->cfg.stats_interval_s > 0 && t - S->last_stats >= S->cfg.stats_interval_s &&
        S->steps == S->last_stats_steps && S->work_requests == S->last_stats_work) {
        S->last_stats = t;      /* idle (no make, reset, step or close since the last line): no line */
    } else if (S->cfg.stats_interval_s > 0 && t - S->last_stats >= S->cfg.stats_interval_s) {
        double dt = t - S->last_stats;
        LOG(S, SRV_LOG_INFO, "stats: %.0f steps/s, %.1f requests/s, %" PRIu64 " errors, %d sessions, %ld worlds, "
            "%d jobs in flight", (double)(S->steps - S->last_stats_steps) / dt,
            (double)(S->requests - S->last_stats_requests) / dt, S->errors - S->last_stats_errors, S->sessions.count,
            S->worlds_used, S->jobs_inflight);
        S->last_stats = t;
        S->last_stats_steps = S->steps;
        S->last_stats_requests = S->requests;
        S->last_stats_errors = S->errors;
        S->last_stats_work = S->work_requests;
    }
}

/* Notes a stop request (from then on new requests get SHUTTING_DOWN); false once drained. */
static int serving(srv_server *S)
{
    if (atomic_load(&S->stop) && !S->draining) {
        S->draining = 1;
        S->t_drain = srv_now_s();
        LOG(S, SRV_LOG_INFO, "shutting down: finishing %d requests in flight (at most %g s, --drain-timeout)",
            S->jobs_inflight, S->cfg.drain_timeout_s);
    }
    if (!S->draining) return 1;
    double waited = srv_now_s() - S->t_drain;
    if (!S->drain_cut && S->jobs_inflight > 0 && waited >= S->cfg.drain_timeout_s) {
        /* the deadline: what is still queued or running is cut short and answered SHUTTING_DOWN */
        S->drain_cut = 1;
        LOG(S, SRV_LOG_WARN, "drain deadline (%g s) passed: cancelling %d requests in flight (SHUTTING_DOWN)",
            S->cfg.drain_timeout_s, S->jobs_inflight);
        cancel_where(S, NULL, -1, PROTO_E_SHUTTING_DOWN);
    }
    if (S->drain_cut && S->jobs_inflight > 0 && waited >= S->cfg.drain_timeout_s + DRAIN_GRACE_S) {
        LOG(S, SRV_LOG_ERROR, "%d requests still in flight %g s after the drain deadline: exiting without them",
            S->jobs_inflight, DRAIN_GRACE_S);
        return 0;
    }
    return S->jobs_inflight > 0;
}

/* The ROUTER's monitor: a connection that closed takes its queued work with it (no reply could reach it). */
static void process_monitor(srv_server *S)
{
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, S->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        uint16_t event = 0;
        uint32_t fd = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&fd, (const char *)zmq_msg_data(&ev) + 2, 4);
        }
        int more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        while (more) {
            zmq_msg_init(&addr);
            if (zmq_msg_recv(&addr, S->monitor, 0) < 0) more = 0;
            else more = zmq_msg_more(&addr);
            zmq_msg_close(&addr);
        }
        if (event == ZMQ_EVENT_DISCONNECTED) {
            uint64_t before = S->cancelled;
            cancel_where(S, NULL, (int)fd, CANCEL_SILENT);
            if (S->cancelled != before)
                LOG(S, SRV_LOG_INFO, "a client disconnected: %" PRIu64 " of its requests cancelled", S->cancelled - before);
        }
    }
}

/* Before waiting: the periodic work, then, while a tiny job is in flight, a short busy poll for its
 * completion or a new request (a thread wake-up costs tens of us on a VM).  Returns the poll timeout. */
static int before_sleep(srv_server *S)
{
    tick(S, srv_now_s());
    if (!(S->jobs_inflight > 0 && S->spin_until > 0)) return POLL_TIMEOUT_MS;
    while (srv_now_s() < S->spin_until) {
        if (srv_jobs_pending(S->jobs)) break;
        uint32_t ev = 0;
        size_t evs = sizeof ev;
        if (zmq_getsockopt(S->router, ZMQ_EVENTS, &ev, &evs) == 0 && (ev & ZMQ_POLLIN)) break;
        sched_yield();
    }
    S->spin_until = 0;
    return 0;
}

/* Waits up to timeout_ms for a request or a completed job, then handles completed jobs and a bounded
 * batch of requests.  -1 if polling failed. */
static int process_events(srv_server *S, int timeout_ms)
{
    zmq_pollitem_t items[3] = {{S->router, 0, ZMQ_POLLIN, 0}, {NULL, srv_jobs_fd(S->jobs), ZMQ_POLLIN, 0},
                               {S->monitor, 0, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, S->monitor ? 3 : 2, timeout_ms);
    if (rc < 0 && zmq_errno() != EINTR) {
        LOG(S, SRV_LOG_ERROR, "poll failed: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) srv_jobs_ack(S->jobs);
    process_done(S);
    if (rc > 0 && S->monitor && (items[2].revents & ZMQ_POLLIN)) process_monitor(S);
    if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
        for (int k = 0; k < RECV_BATCH; k++) {
            if (recv_one(S) <= 0) break;
            if (k % DONE_EVERY == DONE_EVERY - 1) process_done(S);
        }
    }
    return 0;
}

int srv_server_run(srv_server *S)
{
    S->t_start = S->last_tick = S->last_sample = S->last_stats = srv_now_s();
    srv_rate_sample(&S->rate, S->t_start, 0);
    while (serving(S)) {
        int timeout_ms = before_sleep(S);
        if (process_events(S, timeout_ms)) break;
    }
    LOG(S, SRV_LOG_INFO, "stopped after %.1f s: %" PRIu64 " steps, %" PRIu64 " requests, %" PRIu64 " errors",
        srv_now_s() - S->t_start, S->steps, S->requests, S->errors);
    return 0;
}

void srv_server_stop(srv_server *S)
{
    atomic_store(&S->stop, 1);
    srv_jobs_wake(S->jobs);
}

/* ------------------------------------------------------------------------------------------------ */
/* creation */

srv_server *srv_server_new(const srv_config *c, char *err, size_t errlen)
{
    if (srv_config_check(c, err, errlen)) return NULL;
    srv_server *S = calloc(1, sizeof *S);
    if (!S) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    S->cfg = *c;
    if (c->threads > 0) {
        S->nthreads = c->threads;
        snprintf(S->cpus.source, sizeof S->cpus.source, "--threads / HERD_THREADS");
    } else {
        S->cpus = srv_cpus_detect(NULL);
        S->nthreads = S->cpus.cpus;
    }
    atomic_init(&S->stop, 0);
    proto_buf_init(&S->out);
    proto_limits_default(&S->lim);
    S->lim.max_message_bytes = c->max_message_bytes;
    S->lim.max_worlds = c->max_worlds_per_session;
    S->lim.max_objects = 4 * (size_t)c->max_worlds_per_session + 4096;
    srv_session_table_init(&S->sessions);
    S->clients = srv_clients_new();
    if (!S->clients) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }

    S->ctx = zmq_ctx_new();
    if (!S->ctx) {
        snprintf(err, errlen, "cannot create the ZeroMQ context: %s", strerror(errno));
        goto fail;
    }
    S->auth = srv_auth_new(S->ctx, c, err, errlen);
    if (!S->auth) goto fail;
    S->router = zmq_socket(S->ctx, ZMQ_ROUTER);
    int64_t hard = c->max_message_bytes > INT64_MAX / 4 ? INT64_MAX : (int64_t)c->max_message_bytes * 4;
    int zero = 0;
    if (!S->router || zmq_setsockopt(S->router, ZMQ_MAXMSGSIZE, &hard, sizeof hard) ||
        zmq_setsockopt(S->router, ZMQ_LINGER, &zero, sizeof zero)) {
        snprintf(err, errlen, "cannot create the ROUTER socket: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (srv_auth_apply(S->auth, S->router, err, errlen)) goto fail;
    if (zmq_bind(S->router, c->bind)) {
        int e = zmq_errno();
        char who[160];
        int port = srv_endpoint_port(c->bind);
        if (e == EADDRINUSE && port > 0 && srv_port_owner(port, who, sizeof who) >= 0)
            snprintf(err, errlen, "cannot bind %s: address already in use, held by %s; stop it, or choose another "
                     "endpoint with --bind / HERD_BIND", c->bind, who);
        else
            snprintf(err, errlen, "cannot bind %s: %s%s", c->bind, zmq_strerror(e),
                     e == EADDRINUSE ? " (choose another endpoint with --bind / HERD_BIND)" : "");
        goto fail;
    }
    if (!srv_auth_enabled(S->auth) && !srv_config_bind_is_local(c->bind))
        LOG(S, SRV_LOG_WARN, "plain mode (--insecure) on %s: anyone who can reach it can use this server; "
            "give keys (--curve-secret-key-file, --authorized-keys) on shared networks", c->bind);
    S->mem_ceiling = srv_config_memory_ceiling(c);
    atomic_init(&S->mem_queued, 0);
    /* disconnects, to cancel the work of clients that are gone (best effort: without it, their work runs) */
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://herd-monitor-%p", (void *)S);
    if (zmq_socket_monitor(S->router, mon, ZMQ_EVENT_DISCONNECTED) == 0) {
        S->monitor = zmq_socket(S->ctx, ZMQ_PAIR);
        if (S->monitor && zmq_connect(S->monitor, mon)) {
            zmq_close(S->monitor);
            S->monitor = NULL;
        }
    }
    size_t el = sizeof S->endpoint;
    if (zmq_getsockopt(S->router, ZMQ_LAST_ENDPOINT, S->endpoint, &el)) snprintf(S->endpoint, sizeof S->endpoint, "%s", c->bind);
    S->jobs = srv_jobs_new(S->nthreads, c->quantum, c->spin_us, err, errlen);
    if (!S->jobs) goto fail;
    if (c->metrics[0]) {
        for (int i = 0; i < PROTO_OP_COUNT; i++) S->metric_ops[i] = proto_op_name((proto_op)i);
        S->metric_ops[OP_INVALID] = "invalid";
        for (int i = 0; i < PROTO_E_COUNT; i++) S->metric_codes[i] = proto_code_name((proto_code)i);
        S->metrics = srv_metrics_new(S->metric_ops, PROTO_OP_COUNT + 1, S->metric_codes, PROTO_E_COUNT, S->nthreads,
                                     HERD_VERSION, PROTO_VERSION);
        char merr[256];
        if (!S->metrics) {
            snprintf(err, errlen, "cannot create the metrics (out of memory)");
            goto fail;
        }
        if (srv_metrics_listen(S->metrics, c->metrics, &S->metrics_port, merr, sizeof merr)) {
            snprintf(err, errlen, "%s", merr);
            goto fail;
        }
        srv_jobs_set_metrics(S->jobs, S->metrics);
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
    const env_spec *specs[MAX_SPECS];
    int n = srv_jobs_specs(specs, MAX_SPECS);
    char envs[1024] = "";
    for (int i = 0; i < n; i++)
        snprintf(envs + strlen(envs), sizeof envs - strlen(envs), "%s%s (obs %d, act %d)", i ? ", " : "",
                 specs[i]->name, specs[i]->obs_dim, specs[i]->act_dim);
    char metrics[200] = "off (--metrics HOST:PORT)";
    if (S->metrics) {
        char host[128];
        snprintf(host, sizeof host, "%s", S->cfg.metrics);
        char *colon = strrchr(host, ':');
        if (colon) *colon = 0;
        snprintf(metrics, sizeof metrics, "http://%s:%d/metrics (Prometheus)", host, S->metrics_port);
    }
    char auth[128];
    if (srv_auth_enabled(S->auth))
        snprintf(auth, sizeof auth, "CURVE, server key %s, %d client keys", srv_auth_public_key(S->auth),
                 srv_auth_nkeys(S->auth));
    else
        snprintf(auth, sizeof auth, "none (plain mode): sessions are owned by their tokens");
    char timeout[64];
    if (S->cfg.session_timeout_s > 0) snprintf(timeout, sizeof timeout, "after %g s idle", S->cfg.session_timeout_s);
    else snprintf(timeout, sizeof timeout, "never");
    fprintf(stderr,
            "herd-server %s (protocol %d)\n"
            "  endpoint   %s\n"
            "  threads    %d workers + 1 I/O thread (%s)\n"
            "  limits     %zu bytes per request, %d worlds per session, %ld worlds in all\n"
            "  bounds     work %ld per request, memory %zu MiB; per client %ld worlds, %d sessions, %d in flight,\n"
            "             %zu MiB of unread replies; drain %g s\n"
            "  auth       %s\n"
            "  sessions   closed %s\n"
            "  metrics    %s\n"
            "  envs       %s\n",
            HERD_VERSION, PROTO_VERSION, S->endpoint, S->nthreads, S->cpus.source, S->cfg.max_message_bytes,
            S->cfg.max_worlds_per_session, S->cfg.max_worlds, S->cfg.max_request_work, S->mem_ceiling >> 20,
            client_max_worlds(S), S->cfg.client_max_sessions, S->cfg.client_max_inflight,
            S->cfg.client_max_queued_bytes >> 20, S->cfg.drain_timeout_s, auth, timeout, metrics, envs);
}

/* Shutdown: frees a session left open, with its deferred requests (the workers have stopped). */
static void drop_session(srv_session *s, void *arg)
{
    srv_server *S = arg;
    while (s->deferred) {
        srv_job *d = s->deferred;
        s->deferred = d->next;
        pending_free(S, as_pending(d));
    }
    pending_free(S, as_pending(s->close_job));
    srv_jobs_drop_env(s);
    srv_session_table_remove(&S->sessions, s);
    srv_session_destroy(&s);
}

void srv_server_destroy(srv_server **pS)
{
    if (!pS || !*pS) return;
    srv_server *S = *pS;
    if (S->jobs) {
        /* the workers finish what is queued; completed jobs are then dropped */
        srv_jobs_stop(S->jobs);
        for (srv_job *j = srv_jobs_take_done(S->jobs), *next; j; j = next) {
            next = j->next;
            if (j->kind == SRV_JOB_CLOSE && j->sess) {
                srv_session_table_remove(&S->sessions, j->sess);
                srv_session_destroy(&j->sess);
            }
            pending_free(S, as_pending(j));
        }
        srv_session_table_each(&S->sessions, drop_session, S);
        srv_jobs_destroy(&S->jobs);
    }
    srv_metrics_destroy(&S->metrics);     /* after the workers, which count into it */
    if (S->monitor) {
        zmq_socket_monitor(S->router, NULL, 0);
        zmq_close(S->monitor);
    }
    if (S->router) {
        int linger = FLUSH_LINGER_MS;
        zmq_setsockopt(S->router, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(S->router);
    }
    srv_auth_destroy(&S->auth);         /* its socket must be closed before the context ends */
    if (S->ctx) zmq_ctx_term(S->ctx);
    srv_clients_destroy(&S->clients);
    proto_buf_free(&S->out);
    free(S);
    *pS = NULL;
}

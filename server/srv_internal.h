/* srv_internal.h — the state the server's request path shares (private to server/): the server, a request
 * being handled and a pending request, and the loop's constants.  Types only; the functions are in
 *   srv_reply.h    sending replies (each send names whom it answers: srv_reply_to);
 *   srv_pending.h  pending requests: starting their jobs (or deferring them), cancellation, completion;
 *   srv_ops.h      the request handlers, one per op, and the dispatch of a decoded request to them;
 *   srv_server.c   the I/O loop (receive, ticks, the disconnect monitor: while (serving) { before_sleep;
 *                  process_events; }), creation and destruction.
 * Each of those includes only the ones above it, so the includes form no cycle.  Job dispatch to the workers
 * is srv_job.c (the only server code that calls envs); sessions are srv_session.c; the ledger of sessions,
 * worlds and their memory is srv_quota.c.
 *
 * A request's life:
 *   recv (ROUTER: envelope frames + one payload frame) -> proto_decode_request -> the handler of its op
 *   (srv_ops.c): hello, ping and stats are answered at once; make, reset, step and close are checked
 *   against the limits and the session (world ids, actions shape / finiteness) and become a pending
 *   request holding a job (srv_job.h): the reply buffer is laid out once, the workers write into it,
 *   and when its last unit is done the job comes back through srv_jobs_take_done -> complete_* sends
 *   envelope + reply (zero copy: ZeroMQ frees the buffer when sent).
 *
 * Order: a session's jobs run in request order on each worker (lanes).  With autoreset disabled a step
 * must know which worlds have ended before it starts, so it waits (the session's deferred list) until
 * the session has nothing in flight; then env_first_ended (through srv_job_first_ended) is exact.
 *
 * Bounds (srv_config.h; PROTOCOL.md section 9): requests are refused with LIMIT, naming the bound by its
 * hello key, before they cost anything when they would cross one: per client (a CURVE key, or in plain mode
 * a peer address: sessions, worlds, requests in flight), the server's sessions and worlds, the memory
 * ceiling (every session's fixed bytes and its worlds (srv_quota.h), reply buffers in flight, replies queued
 * in ZeroMQ, counted back by ZeroMQ's free callback), and a step's estimated time (env_world_step_s: the solver's caps x
 * iteration times measured at start; also summed over a client's steps in flight).  A client
 * whose unread replies exceed its byte budget has further replies dropped.  Every pending request is on
 * S->plist, so that work can be cancelled (srv_job_cancel): by close (the session's queued work;
 * UNKNOWN_SESSION), by a disconnect (the ROUTER's monitor reports the connection's fd, matched against
 * ZMQ_SRCFD of each request, and read before a request becomes pending, since fds are reused:
 * srv_read_disconnects; no reply), and by the drain deadline (SHUTTING_DOWN).
 */
#ifndef SRV_INTERNAL_H
#define SRV_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "proto.h"
#include "srv_auth.h"
#include "srv_client.h"
#include "srv_cpus.h"
#include "srv_job.h"
#include "srv_log.h"
#include "srv_metrics.h"
#include "srv_quota.h"
#include "srv_rate.h"
#include "srv_server.h"
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

#define SRV_OP_INVALID PROTO_OP_COUNT  /* metrics: the op of a request that could not be decoded */

/* Whom a reply goes to (srv_reply.h). */
typedef struct {
    zmq_msg_t *frames;          /* the envelope to echo (not owned: the request's or its pending request's) */
    int nframes;                /* > 0 until replied; 0 once replied; < 0: no reply wanted (session expiry) */
    int op;                     /* the request's op, or SRV_OP_INVALID (metrics) */
    double t0;                  /* its arrival, srv_now_s() (metrics) */
    srv_client *client;         /* the sender, whose unread replies are bounded; NULL: none known */
} srv_reply_to;

/* A request waiting for its job.  Ownership: the envelope frames, the request message (step actions
 * point into it), the decoded request, and the job. */
typedef struct pending {
    srv_job job;                /* first: srv_jobs_take_done and the deferred lists hand back &job */
    uint64_t id;
    zmq_msg_t frames[MAX_FRAMES - 1];   /* the envelope to echo */
    srv_reply_to to;            /* whom the reply goes to: frames above, op, arrival, client */
    zmq_msg_t payload;
    int has_payload;
    proto_request req;
    srv_client *client;         /* who sent it (its inflight counts this request); NULL: expiry */
    /* cancellation and accounting */
    int srcfd;                  /* the connection it came on (ZMQ_SRCFD; -1 unknown): cancelled if it goes */
    int cancel_code;            /* 0, or how to answer once cancelled: a proto_code, or -1 for no reply */
    int is_deferred;            /* on its session's deferred list (not yet on a worker) */
    size_t mem;                 /* its reply buffer's bytes (in mem_replies) */
    double est_s;               /* step: its estimated CPU seconds (in client->inflight_s) */
    srv_quota_hold hold;        /* make: the session it reserved (moved to the session once made) */
    struct pending *lprev, *lnext;      /* the server's list of pending requests */
} pending;

/* A request being handled (the frames are moved into a pending request when one is made). */
typedef struct {
    srv_reply_to to;            /* the envelope (moved into a pending request when one is made) and its sender */
    zmq_msg_t *payload;
    proto_request *req;
    srv_session *sess;          /* the request's session, when it names an open one */
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
    srv_clients *conns;         /* per connection (routing id): bytes of replies queued for it */
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
    /* resource bounds */
    pending *plist;             /* every pending request (cancellation scans it) */
    size_t mem_ceiling;         /* srv_config_memory_ceiling */
    srv_quota quota;            /* sessions, worlds and their bytes (makes in flight included) */
    size_t mem_replies;         /* reply buffers of jobs in flight */
    atomic_size_t mem_queued;   /* replies handed to ZeroMQ and not yet freed by it */
    env_cost task_cost[MAX_SPECS];      /* per task: its costs at its last make (at start: its defaults') */
    double task_physics_s[MAX_SPECS];   /* per task: a physics step's CPU seconds besides the solve (measured) */
    env_solver_timing solver_timing;    /* the solvers' iteration times on this machine (measured at start) */
    double ref_step_work;       /* the least step work of the tasks' defaults: a quantum of such world-steps is
                                 * a turn's length (srv_job.h max_chunk) */
    void *monitor;              /* PAIR socket receiving the ROUTER's disconnect events, or NULL */
    double t_drain;             /* when the drain began */
    int drain_cut;              /* the drain deadline has passed: work in flight was cancelled */
    uint64_t dropped_messages, dropped_replies, cancelled;
    double last_drop_log;
};

/* A reply handed to ZeroMQ without a copy: freed (and uncounted) by ZeroMQ's I/O thread once sent or
 * dropped.  The connection's entry stays valid meanwhile: srv_client_idle counts its queued bytes. */
typedef struct {
    srv_server *S;
    srv_client *conn;
    size_t len;
} queued_reply;

_Static_assert(PROTO_OP_COUNT + 1 <= SRV_METRICS_OPS, "srv_metrics.h: SRV_METRICS_OPS must cover every op + invalid");
_Static_assert(PROTO_E_COUNT <= SRV_METRICS_CODES, "srv_metrics.h: SRV_METRICS_CODES must cover every error code");

#define LOG(S, level, ...) srv_log((S)->cfg.log_level, level, __VA_ARGS__)

enum { CANCEL_SILENT = -1 };    /* cancel_code: no reply (the client is gone) */

/* The pending request a job belongs to (the job is its first member). */
static inline pending *as_pending(srv_job *j) { return (pending *)(void *)j; }

#endif

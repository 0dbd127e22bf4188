/* srv_server.c — the I/O loop and creation.  See srv_server.h, and srv_internal.h for how the request path is
 * split between srv_server.c, srv_ops.c, srv_pending.c and srv_reply.c.
 *
 * Threads: everything here runs on the I/O thread.
 */
#include "srv_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv_bind.h"

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
            srv_close_frames(f, n);
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
        srv_close_frames(f, n);
        return 1;
    }
    srv_handle_request(S, f, n - 1, &f[n - 1]);
    srv_close_frames(f, n);     /* whatever handle_request did not move (closing a moved-from frame is a no-op) */
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
        srv_finish_close_if_idle(S, s);
        return;
    }
    if (S->cfg.session_timeout_s > 0 && !s->inflight && !s->deferred && t - s->last_active > S->cfg.session_timeout_s)
        srv_begin_close(S, s, NULL);
}

/* Entries kept only by replies ZeroMQ has since sent. */
static void release_idle_client(srv_client *c, void *arg)
{
    srv_server *S = arg;
    srv_client_release(S->clients, &c);
}

static void release_idle_conn(srv_client *c, void *arg)
{
    srv_server *S = arg;
    srv_client_release(S->conns, &c);
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
    srv_clients_each(S->conns, release_idle_conn, S);
    if (S->metrics) {
        srv_metrics_gauges(S->metrics, S->sessions.count, S->quota.worlds, S->cfg.max_worlds, S->jobs_inflight);
        srv_metrics_memory(S->metrics, srv_mem_used(S), S->mem_ceiling);
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
            S->quota.worlds, S->jobs_inflight);
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
        srv_cancel_where(S, NULL, -1, PROTO_E_SHUTTING_DOWN);
    }
    if (S->drain_cut && S->jobs_inflight > 0 && waited >= S->cfg.drain_timeout_s + DRAIN_GRACE_S) {
        LOG(S, SRV_LOG_ERROR, "%d requests still in flight %g s after the drain deadline: exiting without them",
            S->jobs_inflight, DRAIN_GRACE_S);
        return 0;
    }
    return S->jobs_inflight > 0;
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
    srv_process_done(S);
    if (rc > 0 && S->monitor && (items[2].revents & ZMQ_POLLIN)) srv_read_disconnects(S);
    if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
        for (int k = 0; k < RECV_BATCH; k++) {
            if (recv_one(S) <= 0) break;
            if (k % DONE_EVERY == DONE_EVERY - 1) srv_process_done(S);
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
    S->conns = srv_clients_new();
    if (!S->clients || !S->conns) {
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
    srv_bound bound;
    if (srv_bind(S->router, c->bind, !srv_auth_enabled(S->auth) && !c->insecure, &bound, err, errlen)) goto fail;
    snprintf(S->endpoint, sizeof S->endpoint, "%s", bound.endpoint);
    if (bound.skipped[0]) LOG(S, SRV_LOG_WARN, "%s: bound %s; not bound: %s", c->bind, bound.endpoint, bound.skipped);
    if (!srv_auth_enabled(S->auth) && !srv_config_bind_is_local(c->bind))
        LOG(S, SRV_LOG_WARN, "plain mode (--insecure) on %s: anyone who can reach it can use this server; "
            "give keys (--curve-secret-key-file, --authorized-keys) on shared networks", c->bind);
    S->mem_ceiling = srv_config_memory_ceiling(c);
    atomic_init(&S->mem_queued, 0);
    /* every task's costs with its defaults, until a make of it measures its own */
    S->ref_step_work = 0;
    srv_jobs_time_solvers(&S->solver_timing);
    for (int i = 0; i < MAX_SPECS && i < srv_jobs_ntasks(); i++) {
        if (srv_jobs_default_cost(i, &S->task_cost[i], &S->task_physics_s[i])) {
            snprintf(err, errlen, "cannot make task %d with its default configuration", i);
            goto fail;
        }
        if (!(S->ref_step_work > 0) || S->task_cost[i].step_work < S->ref_step_work)
            S->ref_step_work = S->task_cost[i].step_work;
    }
    if (!(S->ref_step_work > 0)) S->ref_step_work = 1;
    srv_quota_limits ql = {c->max_worlds, srv_config_max_sessions(c, S->mem_ceiling),
                           c->client_max_worlds > 0 ? c->client_max_worlds : c->max_worlds, c->client_max_sessions,
                           S->mem_ceiling};
    srv_quota_init(&S->quota, &ql);
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
    S->jobs = srv_jobs_new(S->nthreads, c->quantum, c->spin_us, err, errlen);
    if (!S->jobs) goto fail;
    if (c->metrics[0]) {
        for (int i = 0; i < PROTO_OP_COUNT; i++) S->metric_ops[i] = proto_op_name((proto_op)i);
        S->metric_ops[SRV_OP_INVALID] = "invalid";
        for (int i = 0; i < PROTO_E_COUNT; i++) S->metric_codes[i] = proto_code_name((proto_code)i);
        S->metrics = srv_metrics_new(S->metric_ops, PROTO_OP_COUNT + 1, S->metric_codes, PROTO_E_COUNT, S->nthreads,
                                     HERD_VERSION, PROTO_VERSION);
        char merr[256];
        if (!S->metrics) {
            snprintf(err, errlen, "cannot create the metrics (out of memory)");
            goto fail;
        }
        /* the terrain series' kinds: every registered task's, each name once */
        const env_spec *specs[MAX_SPECS];
        const char *kinds[SRV_METRICS_KINDS];
        int nkinds = 0;
        for (int i = 0, ns = srv_jobs_specs(specs, MAX_SPECS); i < ns; i++)
            for (int k = 0; k < specs[i]->nterrain_kinds && nkinds < SRV_METRICS_KINDS; k++) {
                int seen = 0;
                for (int q = 0; q < nkinds; q++) seen |= !strcmp(kinds[q], specs[i]->terrain_kinds[k]);
                if (!seen) kinds[nkinds++] = specs[i]->terrain_kinds[k];
            }
        srv_metrics_terrain_kinds(S->metrics, kinds, nkinds);
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
int srv_server_metrics_port(const srv_server *S) { return S->metrics ? S->metrics_port : 0; }
unsigned long srv_server_helped_worlds(const srv_server *S) { return srv_jobs_helped(S->jobs); }

void srv_server_waits(srv_server *S, unsigned long *max_waited, long *max_excess, unsigned long *units)
{
    srv_jobs_waits(S->jobs, max_waited, max_excess, units);
}

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
            "  bounds     %g s per step (estimated at the caps), memory %zu MiB, %d sessions; per client %ld worlds, %d sessions,\n"
            "             %d in flight, %zu MiB of unread replies; drain %g s\n"
            "  auth       %s\n"
            "  sessions   closed %s\n"
            "  metrics    %s\n"
            "  envs       %s\n",
            HERD_VERSION, PROTO_VERSION, S->endpoint, S->nthreads, S->cpus.source, S->cfg.max_message_bytes,
            S->cfg.max_worlds_per_session, S->cfg.max_worlds, S->cfg.max_step_seconds, S->mem_ceiling >> 20,
            S->quota.lim.max_sessions, S->quota.lim.client_max_worlds, S->cfg.client_max_sessions, S->cfg.client_max_inflight,
            S->cfg.client_max_queued_bytes >> 20, S->cfg.drain_timeout_s, auth, timeout, metrics, envs);
}

/* Shutdown: frees a session left open, with its deferred requests (the workers have stopped). */
static void drop_session(srv_session *s, void *arg)
{
    srv_server *S = arg;
    while (s->deferred) {
        srv_job *d = s->deferred;
        s->deferred = d->next;
        srv_pending_free(S, as_pending(d));
    }
    srv_pending_free(S, as_pending(s->close_job));
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
            srv_pending_free(S, as_pending(j));
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
    srv_clients_destroy(&S->conns);
    proto_buf_free(&S->out);
    free(S);
    *pS = NULL;
}

/* srv_pending.c — pending requests: from a handler to a worker (started, or deferred behind the session's
 * work), cancelled (a closed session, a vanished connection, the drain deadline) or completed (the reply sent).
 * See srv_pending.h and srv_internal.h.  I/O thread only. */
#include "srv_pending.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* pending requests */

pending *srv_pending_new(srv_server *S, srv_job_kind kind, incoming *in)
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
    for (int i = 0; i < in->to.nframes; i++) {
        zmq_msg_init(&p->frames[i]);
        zmq_msg_move(&p->frames[i], &in->to.frames[i]);
    }
    p->to = in->to;
    p->to.frames = p->frames;
    in->to.nframes = 0;
    p->req = *in->req;                   /* p owns the decoded arrays now */
    proto_request_init(in->req);
    p->client = in->to.client;
    if (p->client) p->client->inflight++;
    return p;
}

void srv_pending_free(srv_server *S, pending *p)
{
    if (!p) return;
    if (p->lprev || S->plist == p) {
        if (p->lprev) p->lprev->lnext = p->lnext;
        else S->plist = p->lnext;
        if (p->lnext) p->lnext->lprev = p->lprev;
    }
    S->mem_replies -= p->mem;
    srv_quota_release(&S->quota, &p->hold);     /* a make that did not become a session */
    /* not released here: the request being handled may still hold the entry (in.client); idle entries are
     * released at the end of handle_request and by the tick */
    if (p->client) {
        p->client->inflight--;
        p->client->inflight_s -= p->est_s;
        if (p->client->inflight_s < 1e-9) p->client->inflight_s = 0;   /* rounding, once nothing is left */
    }
    if (p->to.nframes > 0) srv_close_frames(p->frames, p->to.nframes);
    if (p->has_payload) zmq_msg_close(&p->payload);
    proto_request_clear(&p->req);
    srv_job_clear(&p->job);
    free(p);
}

size_t srv_mem_used(srv_server *S)
{
    return S->quota.mem + S->mem_replies + atomic_load(&S->mem_queued);
}

void srv_pending_fail(srv_server *S, pending *p, proto_code code, const char *msg)
{
    if (p->client) p->client->errors++;
    srv_send_error(S, &p->to, p->id, p->job.sess, code, msg);
    srv_pending_free(S, p);
}


/* ------------------------------------------------------------------------------------------------ */
/* starting jobs */


/* Autoreset disabled: a step may only start when the session has nothing in flight, so that the env's
 * view of which worlds have ended is exact (the env owns that state). */
static int must_wait(const srv_session *s, const srv_job *j)
{
    return j->kind == SRV_JOB_STEP && s->autoreset == ENV_AUTORESET_DISABLED && s->inflight > 0;
}

void srv_start_or_fail(srv_server *S, pending *p)
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
            srv_pending_fail(S, p, PROTO_E_EPISODE_ENDED, m);
            return;
        }
    }
    int most_rows;
    if (srv_jobs_submit(S->jobs, j, &most_rows)) {
        srv_pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
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
        srv_start_or_fail(S, as_pending(j));
    }
}

void srv_submit(srv_server *S, pending *p)
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
    srv_start_or_fail(S, p);
}

void srv_submit_control(srv_server *S, pending *p)
{
    S->jobs_inflight++;
    srv_jobs_submit_control(S->jobs, &p->job);
}

void srv_finish_close_if_idle(srv_server *S, srv_session *s)
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
        p->to.nframes = -1;
    }
    s->close_job = NULL;
    p->job.sess = s;
    srv_submit_control(S, p);
}

/* ------------------------------------------------------------------------------------------------ */
/* cancellation: a closed session, a vanished connection, the drain deadline */


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
    if (p->cancel_code == CANCEL_SILENT) {
        srv_metrics_dropped(S->metrics, SRV_DROP_CANCELLED);
        if (p->to.nframes > 0) srv_close_frames(p->frames, p->to.nframes);
        p->to.nframes = 0;
        return;
    }
    char m[160];
    cancelled_message(S, p, m, sizeof m);
    if (p->client) p->client->errors++;
    srv_send_error(S, &p->to, p->id, p->job.sess, (proto_code)p->cancel_code, m);
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
    srv_pending_free(S, p);
    srv_finish_close_if_idle(S, s);
}

void srv_cancel_where(srv_server *S, const srv_session *s, int fd, int code)
{
    for (pending *p = S->plist, *next; p; p = next) {
        next = p->lnext;
        if ((s && p->job.sess != s) || (fd >= 0 && p->srcfd != fd)) continue;
        cancel_pending(S, p, code);
    }
}

void srv_read_disconnects(srv_server *S)
{
    if (!S->monitor) return;
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
            srv_cancel_where(S, NULL, (int)fd, CANCEL_SILENT);
            if (S->cancelled != before)
                LOG(S, SRV_LOG_INFO, "a client disconnected: %" PRIu64 " of its requests cancelled", S->cancelled - before);
        }
    }
}

void srv_begin_close(srv_server *S, srv_session *s, pending *close_request)
{
    s->closing = 1;
    s->close_job = close_request ? &close_request->job : NULL;
    /* what the session still has queued is not run: its worlds are about to be freed */
    if (close_request) srv_cancel_where(S, s, -1, PROTO_E_UNKNOWN_SESSION);
    srv_finish_close_if_idle(S, s);
}

/* ------------------------------------------------------------------------------------------------ */
/* completed jobs */

static void complete_make(srv_server *S, pending *p)
{
    srv_job *j = &p->job;
    const proto_request *r = &p->req;
    /* on every return without a session, srv_pending_free releases p's reservation */
    if (!j->env) {
        if (j->make_err == SRV_MAKE_CANCELLED) {
            answer_cancelled(S, p);
            return;
        }
        if (p->client) p->client->errors++;
        srv_send_error(S, &p->to, p->id, NULL,
                       j->make_err == SRV_MAKE_NO_MEMORY || j->make_err == SRV_MAKE_TOO_COSTLY ? PROTO_E_LIMIT
                                                                                              : PROTO_E_BAD_CONFIG,
                       j->err);
        return;
    }
    int task = srv_jobs_task(r->env);
    if (task >= 0 && task < MAX_SPECS) S->task_cost[task] = j->cost;
    /* the make job refused a world-step over max_step_seconds before creating worlds */
    double world_step_s = srv_jobs_world_step_s(&j->cost, &S->solver_timing,
                                                 task >= 0 && task < MAX_SPECS ? S->task_physics_s[task] : 0);
    int n = (int)r->num_worlds;
    srv_session *s = srv_session_new(n, S->nthreads, S->next_rot++ % S->nthreads);
    if (!s || srv_session_table_add(&S->sessions, s)) {
        if (p->client) p->client->errors++;
        srv_send_error(S, &p->to, p->id, NULL, PROTO_E_INTERNAL,
                       s ? "no randomness for the session id and token" : "out of memory");
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
    s->critic_dim = r->critic_obs ? s->spec->critic_dim : 0;
    s->terrain = s->spec->nterrain_kinds > 0;
    for (int k = 0; k < s->spec->nterrain_kinds && k < ENV_MAX_TERRAIN_KINDS; k++)
        s->metric_kind[k] = srv_metrics_terrain_kind(S->metrics, s->spec->terrain_kinds[k]);
    s->autoreset = r->autoreset;
    s->seed = r->seed;
    s->created = s->last_active = srv_now_s();
    s->step_work = j->cost.step_work;
    s->world_step_s = world_step_s;
    s->hold = p->hold;          /* the make's reservation moves to the session, with the bytes it really takes */
    p->hold.held = 0;
    srv_quota_commit(&S->quota, &s->hold, srv_session_cost_bytes(n, S->nthreads, &j->cost));
    proto_buf_reset(&S->out);
    proto_encode_make_reply(&S->out, p->id, s->id, s->token, s->view_token, n, s->autoreset, s->seed, s->spec, j->config,
                            s->critic_dim > 0);
    srv_send_small(S, &p->to);
    LOG(S, SRV_LOG_INFO, "session %" PRIu64 ": %s, %d worlds, autoreset %s, seed %" PRIu64 " (%d sessions, %ld worlds)",
        s->id, s->spec->name, n, proto_autoreset_name(s->autoreset), s->seed, S->sessions.count, S->quota.worlds);
}

static void complete_close(srv_server *S, pending *p)
{
    srv_session *s = p->job.sess;
    srv_client *maker = s->hold.client;
    /* its worlds leave the terrain series (no worker touches the session any more) */
    for (int k = 0; k < ENV_MAX_TERRAIN_KINDS; k++)
        if (s->metric_kind[k] >= 0)
            srv_metrics_terrain(S->metrics, s->metric_kind[k], -atomic_load(&s->level_sum[k]),
                                -atomic_load(&s->level_worlds[k]));
    srv_quota_release(&S->quota, &s->hold);
    srv_client_release(S->clients, &maker);
    srv_session_table_remove(&S->sessions, s);
    if (p->to.nframes >= 0) {
        proto_buf_reset(&S->out);
        proto_encode_close_reply(&S->out, p->id, s->id, s->steps);
        srv_send_small(S, &p->to);
        LOG(S, SRV_LOG_INFO, "session %" PRIu64 " closed after %" PRIu64 " steps (%d sessions, %ld worlds)", s->id,
            s->steps, S->sessions.count, S->quota.worlds);
    } else {
        LOG(S, SRV_LOG_INFO, "session %" PRIu64 " expired after %.0f s idle (%d sessions, %ld worlds)", s->id,
            srv_now_s() - s->last_active, S->sessions.count, S->quota.worlds);
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
        srv_send_error(S, &p->to, p->id, s, PROTO_E_EPISODE_ENDED, m);
    } else {
        if (j->kind == SRV_JOB_STEP) {
            s->steps += (uint64_t)j->n;
            S->steps += (uint64_t)j->n;
        }
        uint8_t *buf = j->reply;
        j->reply = NULL;
        srv_send_reply(S, &p->to, buf, j->reply_len, 1);
    }
    pump_deferred(S, s);
    srv_finish_close_if_idle(S, s);
}

void srv_process_done(srv_server *S)
{
    srv_job *j = srv_jobs_take_done(S->jobs);
    while (j) {
        srv_job *next = j->next;
        pending *p = as_pending(j);
        S->jobs_inflight--;
        switch (j->kind) {
        case SRV_JOB_MAKE: complete_make(S, p); break;
        case SRV_JOB_CLOSE: complete_close(S, p); break;
        case SRV_JOB_RESET:
        case SRV_JOB_STEP:
        case SRV_JOB_POSES: complete_rows(S, p); break;
        }
        srv_pending_free(S, p);
        j = next;
    }
}

/* srv_ops.c — the request handlers, one per op, and the dispatch of a decoded request to them: hello, ping and
 * stats are answered at once; make, reset, step, close, model and poses are checked against the limits and the
 * session and become pending requests (srv_pending.c).  See srv_ops.h and srv_internal.h.  I/O thread only. */
#include "srv_ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* request handlers: one per op */

static void handle_hello(srv_server *S, incoming *in)
{
    const env_spec *specs[MAX_SPECS];
    int n = srv_jobs_specs(specs, MAX_SPECS);
    static const char *const names[] = {"max_memory_bytes", "max_sessions", "client_max_worlds",
                                        "client_max_sessions", "client_max_inflight", "client_max_queued_bytes",
                                        "drain_timeout_ms"};
    static const char *const fnames[] = {"max_step_seconds", "client_max_inflight_seconds"};
    const double fvalues[] = {S->cfg.max_step_seconds, srv_config_client_inflight_s(&S->cfg)};
    const int64_t values[] = {(int64_t)S->mem_ceiling, S->quota.lim.max_sessions,
                              S->quota.lim.client_max_worlds, S->cfg.client_max_sessions, S->cfg.client_max_inflight,
                              (int64_t)S->cfg.client_max_queued_bytes, (int64_t)(S->cfg.drain_timeout_s * 1000)};
    proto_hello_info info = {.server = "herd " HERD_VERSION, .threads = S->nthreads,
                             .max_message_bytes = S->cfg.max_message_bytes,
                             .max_worlds_per_session = S->cfg.max_worlds_per_session, .max_worlds = S->cfg.max_worlds,
                             .auth = srv_auth_enabled(S->auth) ? "curve" : "none",
                             .nextra = (int)(sizeof names / sizeof names[0]), .extra_names = names, .extra_values = values,
                             .nfextra = 2, .fextra_names = fnames, .fextra_values = fvalues};
    proto_buf_reset(&S->out);
    proto_encode_hello_reply(&S->out, in->req->id, &info, specs, n);
    srv_send_small(S, &in->to);
}

static void handle_ping(srv_server *S, incoming *in)
{
    proto_buf_reset(&S->out);
    proto_encode_ping_reply(&S->out, in->req->id, srv_unix_s());
    srv_send_small(S, &in->to);
}

static void handle_stats(srv_server *S, incoming *in)
{
    double t = srv_now_s();
    srv_session *s = in->sess;
    proto_server_stats st = {.uptime_s = t - S->t_start, .sessions = S->sessions.count, .worlds = S->quota.worlds,
                             .steps = S->steps, .requests = S->requests, .errors = S->errors,
                             .steps_per_s = srv_rate_get(&S->rate, t, S->steps, RATE_WINDOW_S), .threads = S->nthreads};
    proto_session_stats ss;
    if (s) {
        ss = (proto_session_stats){.session = s->id, .env = s->spec->name, .num_worlds = s->nworlds, .steps = s->steps,
                                   .steps_per_s = srv_rate_get(&s->rate, t, s->steps, RATE_WINDOW_S),
                                   .age_s = t - s->created, .idle_s = t - s->last_active, .requests = s->requests,
                                   .errors = s->errors};
        if (s->terrain) {
            /* the workers' sums, read without stopping them: each kind's pair may straddle a reset */
            int64_t all_sum = 0, all_n = 0;
            ss.nterrain_kinds = s->spec->nterrain_kinds < ENV_MAX_TERRAIN_KINDS ? s->spec->nterrain_kinds
                                                                                 : ENV_MAX_TERRAIN_KINDS;
            ss.terrain_kinds = s->spec->terrain_kinds;
            for (int k = 0; k < ss.nterrain_kinds; k++) {
                const int64_t sum = atomic_load_explicit(&s->level_sum[k], memory_order_relaxed);
                const int64_t n = atomic_load_explicit(&s->level_worlds[k], memory_order_relaxed);
                ss.kind_level[k] = n > 0 ? (double)sum / (double)n : NAN;
                ss.kind_worlds[k] = n;
                all_sum += sum, all_n += n;
            }
            ss.terrain_level = all_n > 0 ? (double)all_sum / (double)all_n : NAN;
            ss.terrain_worlds = all_n;
        }
    }
    proto_buf_reset(&S->out);
    proto_encode_stats_reply(&S->out, in->req->id, &st, s ? &ss : NULL);
    srv_send_small(S, &in->to);
}

/* A pending request for `kind`, or NULL after an error reply. */
static pending *take_pending(srv_server *S, incoming *in, srv_job_kind kind)
{
    srv_client *c = in->to.client;
    /* c->inflight counts this request too while it is handled (handle_request): the others are inflight - 1 */
    if (c && kind != SRV_JOB_CLOSE && c->inflight - 1 >= S->cfg.client_max_inflight) {
        char m[200];
        snprintf(m, sizeof m, "this client has %d requests in flight, its limit (client_max_inflight): wait for "
                 "replies before sending more", c->inflight - 1);
        srv_send_error(S, &in->to, in->req->id, in->sess, PROTO_E_LIMIT, m);
        c->errors++;
        return NULL;
    }
    pending *p = srv_pending_new(S, kind, in);
    if (!p) {
        srv_send_error(S, &in->to, in->req->id, in->sess, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
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
    if (!code && r->critic_obs) {
        /* the option names the env's second observation: refused, naming it, for an env that has none */
        const env_spec *specs[MAX_SPECS];
        const int nspecs = srv_jobs_specs(specs, MAX_SPECS), t = srv_jobs_task(r->env);
        if (t >= 0 && t < nspecs && specs[t]->critic_dim <= 0) {
            char with[200] = "";
            for (int i = 0; i < nspecs; i++)
                if (specs[i]->critic_dim > 0)
                    snprintf(with + strlen(with), sizeof with - strlen(with), "%s%s", with[0] ? ", " : "", specs[i]->name);
            snprintf(m, sizeof m, "'critic_obs': env '%s' has no critic observation (its spec lists no critic_obs "
                     "fields); envs with one: %s", r->env, with[0] ? with : "none");
            code = PROTO_E_BAD_FIELD;
        }
    }
    if (!code && r->num_worlds > S->cfg.max_worlds_per_session) {
        snprintf(m, sizeof m, "num_worlds %" PRId64 " exceeds the limit of %d worlds per session "
                 "(max_worlds_per_session)", r->num_worlds, S->cfg.max_worlds_per_session);
        code = PROTO_E_LIMIT;
    }
    /* the bytes of the task's last make, or of its default configuration: the make commits what it measures */
    int task = code ? -1 : srv_jobs_task(r->env);
    if (!code && (task < 0 || task >= MAX_SPECS)) {
        snprintf(m, sizeof m, "task %d has no cost on record", task);
        code = PROTO_E_INTERNAL;
    }
    if (!code) {
        size_t need = srv_session_cost_bytes((int)r->num_worlds, S->nthreads, &S->task_cost[task]);
        size_t other = S->mem_replies + atomic_load(&S->mem_queued);
        if (srv_quota_reserve(&S->quota, p->client, (long)r->num_worlds, need, other, &p->hold, m, sizeof m))
            code = PROTO_E_LIMIT;
    }
    if (code) {
        srv_pending_fail(S, p, (proto_code)code, m);
        return;
    }
    p->job.make = &p->req;
    p->job.max_world_step_s = S->cfg.max_step_seconds;
    p->job.timing = &S->solver_timing;
    p->job.physics_step_s = S->task_physics_s[task];
    srv_submit_control(S, p);
}

static void handle_close(srv_server *S, incoming *in)
{
    pending *p = take_pending(S, in, SRV_JOB_CLOSE);
    if (p) srv_begin_close(S, in->sess, p);
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
    if (rc) srv_pending_fail(S, p, (proto_code)rc, e.message);
    return rc ? -1 : 0;
}

/* Takes the laid-out reply from b and submits p's job (fails p when b ran out of memory).  A "latest" poses
 * read starts at once, not behind the session's deferred steps. */
static void submit_rows(srv_server *S, pending *p, proto_buf *b)
{
    if (b->oom) {
        proto_buf_free(b);
        srv_pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    if (srv_mem_used(S) + b->len > S->mem_ceiling) {
        char m[200];
        snprintf(m, sizeof m, "a reply of %zu bytes would exceed the server's memory ceiling of %zu MiB "
                 "(max_memory_bytes; %zu MiB in use): address fewer worlds per request", b->len, S->mem_ceiling >> 20, srv_mem_used(S) >> 20);
        proto_buf_free(b);
        srv_pending_fail(S, p, PROTO_E_LIMIT, m);
        return;
    }
    p->job.reply = proto_buf_steal(b, &p->job.reply_len);
    p->mem = p->job.reply_len;
    S->mem_replies += p->mem;
    if (p->job.latest) srv_start_or_fail(S, p);
    else srv_submit(S, p);
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
        srv_pending_fail(S, p, PROTO_E_BAD_SHAPE, m);
        return;
    }
    if (r->nseeds >= 0) {
        j->seeds = r->seeds;
        r->seeds = NULL;
    } else if (r->has_seed) {
        j->seeds = malloc((size_t)j->n * sizeof *j->seeds);
        if (!j->seeds) {
            srv_pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
            return;
        }
        for (int i = 0; i < j->n; i++) j->seeds[i] = r->seed + (uint64_t)(j->ids ? j->ids[i] : i);
    }
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_reset_reply(&b, p->id, j->n, j->sess->obs_dim, j->sess->critic_dim,
                             j->sess->terrain ? PROTO_STEP_TERRAIN : 0, &j->lay);
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
        srv_pending_fail(S, p, (proto_code)rc, e.message);
        return;
    }
    double est = (double)j->n * s->world_step_s;
    if (est > S->cfg.max_step_seconds) {
        char m[300];
        long most = (long)(S->cfg.max_step_seconds / s->world_step_s);
        snprintf(m, sizeof m, "a step of %d worlds is estimated at %.4g s of CPU (worlds x %.4g s per world-step at "
                 "the solver's caps, the fallback's included), over the limit of %g s (max_step_seconds): step at "
                 "most %ld worlds of this session per request", j->n, est, s->world_step_s, S->cfg.max_step_seconds,
                 most);
        srv_pending_fail(S, p, PROTO_E_LIMIT, m);
        return;
    }
    srv_client *c = p->client;
    double budget = srv_config_client_inflight_s(&S->cfg);
    if (c && c->inflight_s + est > budget) {
        char m[300];
        snprintf(m, sizeof m, "this client's steps in flight are estimated at %.4g s of CPU and this one at %.4g s, "
                 "over the limit of %g s (client_max_inflight_seconds): wait for replies before sending more",
                 c->inflight_s, est, budget);
        srv_pending_fail(S, p, PROTO_E_LIMIT, m);
        return;
    }
    p->est_s = est;
    if (c) c->inflight_s += est;
    /* worlds per env call: the quantum for sessions as cheap as the cheapest task's defaults, fewer as a
     * world-step costs more (a world's cost varies with its contacts: growing chunks would overshoot) */
    double per = (double)S->cfg.quantum * S->ref_step_work / s->step_work;
    j->max_chunk = per >= S->cfg.quantum ? S->cfg.quantum : per >= 1 ? (int)per : 1;
    j->actions = r->actions.data;
    /* the actions point into the request message: keep it */
    zmq_msg_init(&p->payload);
    zmq_msg_move(&p->payload, in->payload);
    p->has_payload = 1;
    unsigned flags = (s->autoreset == ENV_AUTORESET_NEXT_STEP ? PROTO_STEP_AUTORESET : 0) |
                     (s->autoreset == ENV_AUTORESET_SAME_STEP ? PROTO_STEP_FINAL_OBS : 0) |
                     (r->reward_terms ? PROTO_STEP_REWARD_TERMS : 0) | (s->terrain ? PROTO_STEP_TERRAIN : 0);
    proto_buf b;
    proto_buf_init(&b);
    proto_encode_step_reply(&b, p->id, j->n, s->obs_dim, s->nterms, s->critic_dim, flags, &j->lay);
    submit_rows(S, p, &b);
}

/* model: the session's scene, from its immutable model, answered at once; with terrain_region, the samples of
 * a cell terrain within it (BAD_FIELD for a region too large). */
static void handle_model(srv_server *S, incoming *in)
{
    srv_session *s = in->sess;
    if (!s) {
        srv_send_error(S, &in->to, in->req->id, NULL, PROTO_E_UNKNOWN_SESSION, "no session");
        return;
    }
    env_scene_t *scene = malloc(sizeof *scene);
    if (!scene) {
        srv_send_error(S, &in->to, in->req->id, s, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    srv_jobs_scene(s, scene);
    char msg[PROTO_MSG_MAX];
    if (in->req->has_terrain_region && env_scene_region(scene, in->req->terrain_region, msg, sizeof msg)) {
        free(scene);
        srv_send_error(S, &in->to, in->req->id, s, PROTO_E_BAD_FIELD, msg);
        return;
    }
    proto_buf_reset(&S->out);
    proto_encode_model_reply(&S->out, in->req->id, s->id, s->spec->name, scene);
    free(scene);
    srv_send_small(S, &in->to);
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
        srv_pending_fail(S, p, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    srv_jobs_scene(j->sess, scene);
    proto_buf b;
    proto_buf_init(&b);
    const int contacts = p->req.contacts || p->req.diagnostics;     /* diagnostics come with the contacts */
    proto_encode_poses_reply(&b, p->id, j->n, scene->nbody, contacts ? scene->max_contacts : 0, p->req.diagnostics,
                             &j->lay);
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

/* The ops whose requests become pending requests (take_pending); the others are answered at once. */
static int becomes_pending(proto_op op)
{
    return op == PROTO_OP_MAKE || op == PROTO_OP_RESET || op == PROTO_OP_STEP || op == PROTO_OP_CLOSE ||
           op == PROTO_OP_POSES;
}

/* The registry entry of a request's sender: its CURVE key (the "User-Id" property the ZAP handler
 * set), or in plain mode the address it connected from (srv_client_peer_address), so that more connections do
 * not multiply its quotas.  NULL when out of memory. */
static srv_client *client_of(srv_server *S, zmq_msg_t *payload)
{
    uint8_t id[SRV_CLIENT_ID_MAX];
    const char *key = zmq_msg_gets(payload, "User-Id");
    char addr[SRV_CLIENT_ID_MAX];
    size_t alen = srv_client_peer_address(addr, sizeof addr, zmq_msg_gets(payload, "Peer-Address"));
    size_t n = srv_client_identity(id, key, addr, alen);
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
void srv_handle_request(srv_server *S, zmq_msg_t *frames, int nf, zmq_msg_t *payload)
{
    S->requests++;
    proto_request req;
    proto_request_init(&req);
    incoming in = {{frames, nf, SRV_OP_INVALID, srv_now_s(), NULL}, payload, &req, NULL};
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
    /* a request that becomes pending is matched by its fd against later disconnects: the earlier holders'
     * disconnects are read first (srv_read_disconnects), before anything of this request is looked up */
    if (h && becomes_pending(req.op)) srv_read_disconnects(S);
    in.to.client = client_of(S, payload);
    in.to.op = h ? (int)req.op : SRV_OP_INVALID;
    in.to.nframes = nf;
    if (S->metrics) {
        size_t bytes = zmq_msg_size(payload);
        for (int i = 0; i < nf; i++) bytes += zmq_msg_size(&frames[i]);
        srv_metrics_request(S->metrics, in.to.op, bytes);
    }
    srv_client *c = in.to.client;
    int failed = 1;
    if (c) {
        c->requests++;
        c->inflight++;   /* this request, while handled: keeps the entry alive (a pending request
                                  * made from it counts once more and may be freed meanwhile) */
    }
    if (rc || !h) {
        /* counted against the session it names, when that and its owner could be read: a client that does
         * not own the session (section 9) cannot add to its counts */
        srv_session *named = req.has_session ? find_owned(S, &req, c) : NULL;
        srv_send_error(S, &in.to, req.has_id ? req.id : 0, named, rc ? (proto_code)rc : PROTO_E_INTERNAL,
                   rc ? e.message : "unhandled op");
    } else if (S->draining || atomic_load(&S->stop)) {
        /* the stop flag too: a request handled after srv_server_stop returned, in the loop's turn that has not yet
           noted the stop (serving), is already refused */
        srv_send_error(S, &in.to, req.id, NULL, PROTO_E_SHUTTING_DOWN, "the server is shutting down");
    } else if (req.has_session && (!(in.sess = find_owned(S, &req, c)) || in.sess->closing)) {
        snprintf(m, sizeof m, "unknown session %" PRIu64 "%s", req.session,
                 in.sess ? " (closing)" : " (closed, expired, never made on this server, or made by another client)");
        srv_send_error(S, &in.to, req.id, NULL, PROTO_E_UNKNOWN_SESSION, m);
    } else {
        failed = 0;
        if (in.sess) {
            in.sess->requests++;
            in.sess->last_active = srv_now_s();
        }
        h(S, &in);
    }
    if (c) {
        c->errors += (uint64_t)failed;
        c->inflight--;
        srv_client_release(S->clients, &c);
    }
    proto_request_clear(&req);
}

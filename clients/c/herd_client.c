/* herd_client.c — C client of herd-server: the client object, sending and receiving (request ids, the
 * queue of replies that arrived early), the synchronous calls and the reply readers.  Endpoint expansion
 * is in herd_client_endpoints.c, spreading a batch over several servers in herd_client_spread.c.  See
 * herd_client.h. */
#include "herd_client_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int from_proto(herd_error *e, const proto_error *pe)
{
    return hc_fail(e, pe->code, "%s", pe->message);
}

/* ------------------------------------------------------------------------------------------------ */
/* the client */

herd_client *herd_client_new(const char *const *endpoints, int nendpoints, int timeout_ms, herd_error *err)
{
    return herd_client_new_curve(endpoints, nendpoints, timeout_ms, NULL, err);
}

/* The client's CURVE keys in binary: 0, or -1 with err. */
static int curve_keys(const herd_curve *cv, uint8_t server[32], uint8_t pub[32], uint8_t sec[32], herd_error *err)
{
    char zp[41], zs[41];
    if (!zmq_has("curve")) return hc_fail(err, PROTO_E_TRANSPORT, "this libzmq has no CURVE support"), -1;
    if (strlen(cv->server_key) != 40 || !zmq_z85_decode(server, cv->server_key))
        return hc_fail(err, PROTO_E_TRANSPORT, "the server key is not a 40-character Z85 CURVE key"), -1;
    if (cv->secret_key) {
        if (strlen(cv->secret_key) != 40 || !zmq_z85_decode(sec, cv->secret_key) || zmq_curve_public(zp, cv->secret_key))
            return hc_fail(err, PROTO_E_TRANSPORT, "the client's secret key is not a 40-character Z85 CURVE key"), -1;
    } else if (zmq_curve_keypair(zp, zs) || !zmq_z85_decode(sec, zs)) {
        return hc_fail(err, PROTO_E_TRANSPORT, "cannot generate a CURVE key pair"), -1;
    }
    zmq_z85_decode(pub, zp);
    explicit_bzero(zs, sizeof zs);
    return 0;
}

herd_client *herd_client_new_curve(const char *const *endpoints, int nendpoints, int timeout_ms, const herd_curve *curve,
                                   herd_error *err)
{
    herd_curve env = {getenv("HERD_CURVE_SERVER_KEY"), getenv("HERD_CURVE_CLIENT_SECRET_KEY")};
    if (!curve || !curve->server_key) curve = env.server_key && *env.server_key ? &env : NULL;
    uint8_t kserver[32], kpub[32], ksec[32];
    if (curve && curve_keys(curve, kserver, kpub, ksec, err)) return NULL;
    char **eps;
    int n;
    if (herd_expand_endpoints(endpoints, nendpoints, &eps, &n, err)) return NULL;
    herd_client *c = calloc(1, sizeof *c);
    if (!c) {
        herd_endpoints_free(eps, n);
        return hc_fail(err, PROTO_E_INTERNAL, "out of memory"), NULL;
    }
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    c->next_id = 1;
    c->ctx = zmq_ctx_new();
    c->socks = calloc((size_t)n, sizeof *c->socks);
    c->eps = eps;
    c->n = n;
    c->items = calloc((size_t)n, sizeof *c->items);
    if (!c->ctx || !c->socks || !c->items) {
        hc_fail(err, PROTO_E_TRANSPORT, "cannot create a ZeroMQ context");
        herd_client_destroy(&c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        c->socks[i] = zmq_socket(c->ctx, ZMQ_DEALER);
        int zero = 0, one = 1;
        if (!c->socks[i] || zmq_setsockopt(c->socks[i], ZMQ_LINGER, &zero, sizeof zero) ||
            (!strncmp(eps[i], "tcp://[", 7) && zmq_setsockopt(c->socks[i], ZMQ_IPV6, &one, sizeof one)) ||
            (curve && (zmq_setsockopt(c->socks[i], ZMQ_CURVE_SERVERKEY, kserver, 32) ||
                       zmq_setsockopt(c->socks[i], ZMQ_CURVE_PUBLICKEY, kpub, 32) ||
                       zmq_setsockopt(c->socks[i], ZMQ_CURVE_SECRETKEY, ksec, 32))) ||
            zmq_connect(c->socks[i], eps[i])) {
            hc_fail(err, PROTO_E_TRANSPORT, "cannot connect to %s: %s", eps[i], zmq_strerror(zmq_errno()));
            herd_client_destroy(&c);
            return NULL;
        }
    }
    explicit_bzero(ksec, sizeof ksec);
    return c;
}

/* The token this client holds for (server, session), or NULL. */
static const uint8_t *token_of(const herd_client *c, int server, uint64_t session)
{
    for (int i = 0; i < c->ntokens; i++)
        if (c->tokens[i].server == server && c->tokens[i].session == session) return c->tokens[i].token;
    return NULL;
}

static void remember_token(herd_client *c, const herd_session *s)
{
    if (!s->has_token || token_of(c, s->server, s->id)) return;
    if (c->ntokens == c->captokens) {
        int cap = c->captokens ? 2 * c->captokens : 8;
        hc_token *t = realloc(c->tokens, (size_t)cap * sizeof *t);
        if (!t) return;          /* the session still carries its own token */
        c->tokens = t;
        c->captokens = cap;
    }
    hc_token *t = &c->tokens[c->ntokens++];
    t->server = s->server;
    t->session = s->id;
    memcpy(t->token, s->token, sizeof t->token);
}

static void forget_token(herd_client *c, int server, uint64_t session)
{
    for (int i = 0; i < c->ntokens; i++)
        if (c->tokens[i].server == server && c->tokens[i].session == session) {
            c->tokens[i] = c->tokens[--c->ntokens];
            return;
        }
}

void herd_client_destroy(herd_client **pc)
{
    if (!pc || !*pc) return;
    herd_client *c = *pc;
    while (c->qhead) {
        herd_reply *r = c->qhead;
        c->qhead = r->next;
        herd_reply_destroy(&r);
    }
    for (int i = 0; i < c->n; i++) {
        if (c->socks && c->socks[i]) zmq_close(c->socks[i]);
        if (c->eps) free(c->eps[i]);
    }
    free(c->socks);
    free(c->eps);
    free(c->items);
    free(c->pend);
    free(c->tokens);
    if (c->ctx) zmq_ctx_term(c->ctx);
    free(c);
    *pc = NULL;
}

void herd_client_set_timeout(herd_client *c, int timeout_ms) { c->timeout_ms = timeout_ms > 0 ? timeout_ms : c->timeout_ms; }
int herd_client_nservers(const herd_client *c) { return c->n; }
const char *herd_client_endpoint(const herd_client *c, int server)
{
    return server >= 0 && server < c->n ? c->eps[server] : "?";
}

uint64_t herd_client_next_id(herd_client *c) { return c->next_id++; }

static pending_t *pend_find(herd_client *c, uint64_t id)
{
    for (int i = 0; i < c->npend; i++)
        if (c->pend[i].id == id) return &c->pend[i];
    return NULL;
}

static void pend_remove(herd_client *c, pending_t *p)
{
    *p = c->pend[--c->npend];
}

static int pend_add(herd_client *c, uint64_t id, int server, proto_op op)
{
    if (c->npend == c->cappend) {
        int cap = c->cappend ? 2 * c->cappend : 16;
        pending_t *p = realloc(c->pend, (size_t)cap * sizeof *p);
        if (!p) return -1;
        c->pend = p;
        c->cappend = cap;
    }
    c->pend[c->npend++] = (pending_t){id, server, op, 0};
    return 0;
}

static void free_cb(void *data, void *hint)
{
    (void)hint;
    free(data);
}

static int send_bytes(herd_client *c, int server, uint8_t *buf, size_t len, herd_error *err)
{
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, buf, len, free_cb, NULL)) {
        free(buf);
        return hc_fail(err, PROTO_E_TRANSPORT, "cannot build a message: %s", zmq_strerror(zmq_errno()));
    }
    if (zmq_msg_send(&m, c->socks[server], ZMQ_DONTWAIT) < 0) {
        int e = zmq_errno();
        zmq_msg_close(&m);
        return hc_fail(err, PROTO_E_TRANSPORT, "cannot send to %s: %s", c->eps[server],
                       e == EAGAIN ? "send queue full (is the server reachable?)" : zmq_strerror(e));
    }
    return 0;
}

int herd_client_send_request(herd_client *c, int server, const proto_request *r, herd_error *err)
{
    if (server < 0 || server >= c->n) return hc_fail(err, PROTO_E_TRANSPORT, "no server %d", server);
    proto_buf b;
    proto_buf_init(&b);
    if (proto_encode_request(&b, r)) {
        proto_buf_free(&b);
        return hc_fail(err, PROTO_E_INTERNAL, "out of memory encoding a request");
    }
    size_t len;
    uint8_t *p = proto_buf_steal(&b, &len);
    int rc = send_bytes(c, server, p, len, err);
    if (rc) return rc;
    if (pend_add(c, r->id, server, r->op)) return hc_fail(err, PROTO_E_INTERNAL, "out of memory");
    return 0;
}

int herd_client_send_raw(herd_client *c, int server, const void *bytes, size_t len, herd_error *err)
{
    if (server < 0 || server >= c->n) return hc_fail(err, PROTO_E_TRANSPORT, "no server %d", server);
    uint8_t *p = malloc(len ? len : 1);
    if (!p) return hc_fail(err, PROTO_E_INTERNAL, "out of memory");
    memcpy(p, bytes, len);
    return send_bytes(c, server, p, len, err);
}

/* ------------------------------------------------------------------------------------------------ */
/* receiving */

void herd_reply_destroy(herd_reply **pr)
{
    if (!pr || !*pr) return;
    herd_reply *r = *pr;
    proto_reply_clear(&r->msg);
    if (r->zmsg) {
        zmq_msg_close(r->zmsg);
        free(r->zmsg);
    }
    free(r->copy);
    free(r);
    *pr = NULL;
}

/* Decodes the len bytes at data (8-aligned, kept alive by r) into r; the request's op is not known yet. */
static int decode_reply(herd_reply *r, const uint8_t *data, size_t len, proto_error *pe)
{
    if (proto_decode_reply(data, len, &r->msg, pe)) return -1;
    r->id = r->msg.id;
    r->ok = r->msg.ok;
    r->op = PROTO_OP_COUNT;
    if (!r->ok) {
        r->error.code = r->msg.error.code;
        snprintf(r->error.message, sizeof r->error.message, "%s", r->msg.error.message);
    }
    return 0;
}

herd_reply *herd_reply_decode(const void *bytes, size_t len, herd_error *err)
{
    herd_reply *r = calloc(1, sizeof *r);
    if (r) r->copy = aligned_alloc(64, (len + 63) / 64 * 64 + 64);
    if (!r || !r->copy) {
        herd_reply_destroy(&r);
        hc_fail(err, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
    if (len) memcpy(r->copy, bytes, len);
    proto_error pe;
    if (decode_reply(r, r->copy, len, &pe)) {
        herd_reply_destroy(&r);
        hc_fail(err, PROTO_E_BAD_REPLY, "bad reply: %s", pe.message);
        return NULL;
    }
    return r;
}

/* Receives and decodes one message from socket i (ready to read).  NULL for a message to drop. */
static herd_reply *read_one(herd_client *c, int i, herd_error *err, int *rc)
{
    *rc = 0;
    zmq_msg_t *m = malloc(sizeof *m);
    if (!m) {
        *rc = hc_fail(err, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
    zmq_msg_init(m);
    /* the payload is the last frame (a server may echo envelope frames before it) */
    for (;;) {
        if (zmq_msg_recv(m, c->socks[i], ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            zmq_msg_close(m);
            free(m);
            if (e != EAGAIN && e != EINTR)
                *rc = hc_fail(err, PROTO_E_TRANSPORT, "cannot receive from %s: %s", c->eps[i], zmq_strerror(e));
            return NULL;
        }
        if (!zmq_msg_more(m)) break;
    }
    herd_reply *r = calloc(1, sizeof *r);
    if (!r) {
        zmq_msg_close(m);
        free(m);
        *rc = hc_fail(err, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
    r->zmsg = m;
    r->server = i;
    const uint8_t *data = zmq_msg_data(m);
    size_t len = zmq_msg_size(m);
    if ((uintptr_t)data % PROTO_ALIGN) {
        r->copy = aligned_alloc(64, (len + 63) / 64 * 64 + 64);
        if (!r->copy) {
            herd_reply_destroy(&r);
            *rc = hc_fail(err, PROTO_E_INTERNAL, "out of memory");
            return NULL;
        }
        memcpy(r->copy, data, len);
        data = r->copy;
        zmq_msg_close(m);
        free(m);
        r->zmsg = NULL;
    }
    proto_error pe;
    if (decode_reply(r, data, len, &pe)) {
        herd_reply_destroy(&r);
        *rc = hc_fail(err, PROTO_E_BAD_REPLY, "bad reply from %s: %s", c->eps[i], pe.message);
        return NULL;
    }
    pending_t *p = pend_find(c, r->id);
    if (p) {
        r->op = p->op;
        int abandoned = p->abandoned;
        pend_remove(c, p);
        if (abandoned) herd_reply_destroy(&r);
    }
    return r;
}

/* Waits up to timeout_ms for one reply on any socket; NULL + *rc = 0 on timeout. */
static herd_reply *recv_any(herd_client *c, double deadline_ms, herd_error *err, int *rc)
{
    zmq_pollitem_t *items = c->items;
    int n = c->n;
    *rc = 0;
    for (;;) {
        for (int i = 0; i < n; i++) items[i] = (zmq_pollitem_t){c->socks[i], 0, ZMQ_POLLIN, 0};
        double left = deadline_ms - hc_now_ms();
        if (left < 0) left = 0;
        int k = zmq_poll(items, n, (long)left);
        if (k < 0) {
            if (zmq_errno() == EINTR) {
                if (hc_now_ms() >= deadline_ms) return NULL;
                continue;
            }
            *rc = hc_fail(err, PROTO_E_TRANSPORT, "poll failed: %s", zmq_strerror(zmq_errno()));
            return NULL;
        }
        if (k == 0) return NULL;
        for (int i = 0; i < n; i++) {
            if (!(items[i].revents & ZMQ_POLLIN)) continue;
            herd_reply *r = read_one(c, i, err, rc);
            if (*rc) return NULL;
            if (r) return r;
        }
    }
}

static double deadline(herd_client *c, int timeout_ms) { return hc_now_ms() + (timeout_ms < 0 ? c->timeout_ms : timeout_ms); }

int herd_client_recv(herd_client *c, int timeout_ms, herd_reply **out, herd_error *err)
{
    *out = NULL;
    if (c->qhead) {
        *out = c->qhead;
        c->qhead = c->qhead->next;
        if (!c->qhead) c->qtail = NULL;
        (*out)->next = NULL;
        return 0;
    }
    int rc;
    herd_reply *r = recv_any(c, deadline(c, timeout_ms), err, &rc);
    if (rc) return rc;
    if (!r) {
        char who[512] = "";
        for (int i = 0; i < c->n && strlen(who) < 400; i++)
            snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s", i ? ", " : "", c->eps[i]);
        return hc_fail(err, PROTO_E_TIMEOUT, "no reply from %s within %d ms", who, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
    }
    *out = r;
    return 0;
}

int herd_client_wait(herd_client *c, uint64_t id, int timeout_ms, herd_reply **out, herd_error *err)
{
    *out = NULL;
    for (herd_reply **pp = &c->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            herd_reply *r = *pp;
            *pp = r->next;
            if (c->qtail == r) c->qtail = prev;
            r->next = NULL;
            *out = r;
            return 0;
        }
    }
    pending_t *p = pend_find(c, id);
    int server = p ? p->server : 0;
    proto_op op = p ? p->op : PROTO_OP_COUNT;
    double dl = deadline(c, timeout_ms);
    for (;;) {
        int rc;
        herd_reply *r = recv_any(c, dl, err, &rc);
        if (rc) return rc;
        if (!r) {
            if ((p = pend_find(c, id))) p->abandoned = 1;
            return hc_fail(err, PROTO_E_TIMEOUT, "no reply from %s to request %" PRIu64 " (%s) within %d ms", c->eps[server],
                           id, proto_op_name(op), timeout_ms < 0 ? c->timeout_ms : timeout_ms);
        }
        if (r->id == id) {
            *out = r;
            return 0;
        }
        if (c->qtail) c->qtail->next = r;
        else c->qhead = r;
        c->qtail = r;
    }
}

/* Sends r (id assigned here) and waits for its reply; server errors become return codes. */
static int call(herd_client *c, int server, proto_request *r, herd_reply **out, herd_error *err)
{
    r->id = herd_client_next_id(c);
    int rc = herd_client_send_request(c, server, r, err);
    if (rc) return rc;
    rc = herd_client_wait(c, r->id, -1, out, err);
    if (rc) return rc;
    if (!(*out)->ok) {
        rc = hc_fail(err, (*out)->error.code, "%s", (*out)->error.message);
        herd_reply_destroy(out);
        return rc;
    }
    return 0;
}

/* Sends a request of op (with session when not 0) and waits for its reply, as call. */
static int call_op(herd_client *c, int server, proto_op op, uint64_t session, herd_reply **out, herd_error *err)
{
    proto_request r;
    proto_request_init(&r);
    r.op = op;
    r.session = session;
    r.has_session = session != 0;
    const uint8_t *tok = session ? token_of(c, server, session) : NULL;
    if (tok) {
        memcpy(r.token, tok, sizeof r.token);
        r.has_token = 1;
    }
    return call(c, server, &r, out, err);
}

/* ------------------------------------------------------------------------------------------------ */
/* calls */

int herd_client_ping(herd_client *c, int server, double *t, herd_error *err)
{
    herd_reply *rep;
    int rc = call_op(c, server, PROTO_OP_PING, 0, &rep, err);
    if (rc) return rc;
    proto_error pe;
    double v = 0;
    if (proto_get_f64(rep->msg.root, "time", &v, &pe)) rc = from_proto(err, &pe);
    if (t) *t = v;
    herd_reply_destroy(&rep);
    return rc;
}

void herd_hello_free(herd_hello *h)
{
    free(h->envs);
    memset(h, 0, sizeof *h);
}

int herd_client_hello(herd_client *c, int server, herd_hello *h, herd_error *err)
{
    memset(h, 0, sizeof *h);
    herd_reply *rep;
    int rc = call_op(c, server, PROTO_OP_HELLO, 0, &rep, err);
    if (rc) return rc;
    const proto_value *root = rep->msg.root;
    proto_error pe;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    if (proto_get_int(root, "protocol", &i64, &pe) || proto_get_str(root, "server", h->server, sizeof h->server, &pe)) goto bad;
    h->protocol = (int)i64;
    if (proto_value_get(root, "protocol_minor")) {       /* minor >= 1 */
        if (proto_get_int(root, "protocol_minor", &i64, &pe) || proto_get_str(root, "auth", h->auth, sizeof h->auth, &pe))
            goto bad;
        h->protocol_minor = (int)i64;
    }
    if (proto_get_int(root, "threads", &i64, &pe)) goto bad;
    h->threads = (int)i64;
    if (proto_get_uint(root, "limits.max_message_bytes", &u64, &pe) ||
        proto_get_int(root, "limits.max_worlds_per_session", &h->max_worlds_per_session, &pe) ||
        proto_get_int(root, "limits.max_worlds", &h->max_worlds, &pe))
        goto bad;
    h->max_message_bytes = u64;
    const proto_value *envs = proto_value_get(root, "envs");
    if (proto_value_len(envs) < 0) {
        proto_fail(&pe, PROTO_E_BAD_REPLY, "hello reply lacks 'envs'");
        goto bad;
    }
    h->nenvs = proto_value_len(envs);
    h->envs = calloc((size_t)(h->nenvs ? h->nenvs : 1), sizeof *h->envs);
    if (!h->envs) {
        proto_fail(&pe, PROTO_E_INTERNAL, "out of memory");
        goto bad;
    }
    for (int i = 0; i < h->nenvs; i++)
        if (proto_decode_spec(proto_value_at(envs, i), &h->envs[i], &pe)) goto bad;
    herd_reply_destroy(&rep);
    return 0;
bad:
    herd_reply_destroy(&rep);
    herd_hello_free(h);
    return hc_fail(err, PROTO_E_BAD_REPLY, "bad hello reply: %s", pe.message);
}

int hc_make_request(proto_request *r, const char *env, int num_worlds, const env_kv *config, int nconfig,
                    const herd_choice *choices, int nchoices, uint64_t seed, env_autoreset autoreset, herd_error *err)
{
    proto_request_init(r);
    r->op = PROTO_OP_MAKE;
    if (!env || strlen(env) >= sizeof r->env) return hc_fail(err, PROTO_E_UNKNOWN_ENV, "bad env name");
    snprintf(r->env, sizeof r->env, "%s", env);
    r->num_worlds = num_worlds;
    if (nconfig < 0 || nchoices < 0 || nconfig + nchoices > PROTO_MAX_CONFIG)
        return hc_fail(err, PROTO_E_BAD_CONFIG, "more than %d config overrides", PROTO_MAX_CONFIG);
    for (int i = 0; i < nconfig + nchoices; i++) {
        const char *key = i < nconfig ? config[i].key : choices[i - nconfig].key;
        if (!key || strlen(key) >= PROTO_NAME_MAX) return hc_fail(err, PROTO_E_BAD_CONFIG, "bad config key");
        proto_kv *kv = &r->config[i];
        snprintf(kv->key, sizeof kv->key, "%s", key);
        if (i < nconfig) {
            kv->value = config[i].value;
            continue;
        }
        const char *name = choices[i - nconfig].name;
        if (!name || !*name || strlen(name) >= sizeof r->config_name[i])
            return hc_fail(err, PROTO_E_BAD_CONFIG, "bad name for config key '%s'", key);
        snprintf(r->config_name[i], sizeof r->config_name[i], "%s", name);
    }
    r->nconfig = nconfig + nchoices;
    r->has_seed = 1;
    r->seed = seed;
    r->has_autoreset = 1;
    r->autoreset = autoreset;
    return 0;
}

int herd_reply_make(const herd_reply *rep, int server, herd_session *s, herd_error *err)
{
    memset(s, 0, sizeof *s);
    const proto_value *root = rep->msg.root;
    proto_error pe;
    int64_t nw = 0;
    char ar[32];
    if (proto_get_uint(root, "session", &s->id, &pe) || proto_get_int(root, "num_worlds", &nw, &pe) ||
        proto_get_uint(root, "seed", &s->seed, &pe) || proto_get_str(root, "autoreset", ar, sizeof ar, &pe) ||
        proto_decode_spec(proto_value_get(root, "spec"), &s->spec, &pe))
        goto bad;
    if (nw < 1 || nw > INT_MAX) {
        proto_fail(&pe, PROTO_E_BAD_REPLY, "'num_worlds' = %lld is out of range [1, %d]", (long long)nw, INT_MAX);
        goto bad;
    }
    int a = proto_autoreset_from_name(ar, strlen(ar));
    if (a < 0) {
        proto_fail(&pe, PROTO_E_BAD_REPLY, "unknown autoreset '%s'", ar);
        goto bad;
    }
    s->autoreset = (env_autoreset)a;
    s->server = server;
    s->num_worlds = (int)nw;
    s->obs_dim = s->spec.obs_dim;
    s->act_dim = s->spec.act_dim;
    s->nterms = s->spec.nterms;
    const proto_value *cfg = proto_value_get(root, "config");
    for (int i = 0; i < s->spec.nconfig; i++)
        if (proto_get_f64(cfg, s->spec.config[i].key, &s->config[i], &pe)) goto bad;
    if (proto_value_get(root, "token")) {       /* protocol minor 1 */
        if (proto_get_bin(root, "token", s->token, sizeof s->token, &pe)) goto bad;
        s->has_token = 1;
    }
    if (proto_value_get(root, "view_token")) {  /* protocol minor 2 */
        if (proto_get_bin(root, "view_token", s->view_token, sizeof s->view_token, &pe)) goto bad;
        s->has_view_token = 1;
    }
    if (proto_value_get(root, "critic_obs")) {  /* protocol minor 4 */
        int on = 0;
        if (proto_get_bool(root, "critic_obs", &on, &pe)) goto bad;
        if (on && s->spec.critic_dim <= 0) {
            proto_fail(&pe, PROTO_E_BAD_REPLY, "'critic_obs' is true but the spec has no critic_obs fields");
            goto bad;
        }
        s->critic_dim = on ? s->spec.critic_dim : 0;
    }
    return 0;
bad:
    return hc_fail(err, PROTO_E_BAD_REPLY, "bad make reply: %s", pe.message);
}

int hc_make_parse(herd_client *c, const herd_reply *rep, int server, herd_session *s, herd_error *err)
{
    int rc = herd_reply_make(rep, server, s, err);
    if (!rc && s->has_token) remember_token(c, s);  /* only once the whole reply is read: a refused one keeps none */
    return rc;
}

int herd_client_make(herd_client *c, int server, const char *env, int num_worlds, const env_kv *config, int nconfig,
                     uint64_t seed, env_autoreset autoreset, herd_session *s, herd_error *err)
{
    return herd_client_make_choices(c, server, env, num_worlds, config, nconfig, NULL, 0, seed, autoreset, s, err);
}

int herd_client_make_choices(herd_client *c, int server, const char *env, int num_worlds, const env_kv *config,
                             int nconfig, const herd_choice *choices, int nchoices, uint64_t seed,
                             env_autoreset autoreset, herd_session *s, herd_error *err)
{
    const herd_make_opts o = {config, nconfig, choices, nchoices, seed, autoreset, 0};
    return herd_client_make_opts(c, server, env, num_worlds, &o, s, err);
}

int herd_client_make_opts(herd_client *c, int server, const char *env, int num_worlds, const herd_make_opts *opts,
                          herd_session *s, herd_error *err)
{
    const herd_make_opts none = {0};
    const herd_make_opts *o = opts ? opts : &none;
    memset(s, 0, sizeof *s);
    if (server < 0) server = c->rr++ % c->n;
    proto_request r;
    int rc = hc_make_request(&r, env, num_worlds, o->config, o->nconfig, o->choices, o->nchoices, o->seed, o->autoreset,
                             err);
    if (rc) return rc;
    r.critic_obs = o->critic_obs;
    herd_reply *rep;
    rc = call(c, server, &r, &rep, err);
    if (rc) return rc;
    rc = hc_make_parse(c, rep, server, s, err);
    herd_reply_destroy(&rep);
    return rc;
}

/* Starts a request of op to session s, with the next id. */
static void session_request(herd_client *c, proto_request *r, proto_op op, const herd_session *s)
{
    proto_request_init(r);
    r->op = op;
    r->id = herd_client_next_id(c);
    r->session = s->id;
    r->has_session = 1;
    if (s->has_token) {
        memcpy(r->token, s->token, sizeof r->token);
        r->has_token = 1;
    }
}

uint64_t hc_send_rows(herd_client *c, const herd_session *s, proto_op op, int n, const int32_t *ids,
                      const uint64_t *seeds, const float *actions, int reward_terms, herd_error *err)
{
    proto_request r;
    session_request(c, &r, op, s);
    if (!ids) n = s->num_worlds;
    if (ids) {
        r.nids = n;
        r.world_ids = (int32_t *)ids;
    }
    if (seeds) {
        r.nseeds = n;
        r.seeds = (uint64_t *)seeds;
    }
    if (op == PROTO_OP_STEP) {
        r.has_actions = 1;
        r.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {(uint64_t)n, (uint64_t)s->act_dim}, (const uint8_t *)actions,
                                   (size_t)n * (size_t)s->act_dim * 4};
        r.reward_terms = reward_terms;
    }
    int rc = herd_client_send_request(c, s->server, &r, err);
    return rc ? 0 : r.id;
}

uint64_t herd_client_reset_send(herd_client *c, const herd_session *s, int n, const int32_t *ids, const uint64_t *seeds,
                                herd_error *err)
{
    return hc_send_rows(c, s, PROTO_OP_RESET, n, ids, seeds, NULL, 0, err);
}

uint64_t herd_client_step_send(herd_client *c, const herd_session *s, int n, const int32_t *ids, const float *actions,
                               int reward_terms, herd_error *err)
{
    return hc_send_rows(c, s, PROTO_OP_STEP, n, ids, NULL, actions, reward_terms, err);
}

int herd_reply_tensor(const herd_reply *r, const char *path, proto_tensor *t, herd_error *err)
{
    proto_error pe;
    if (proto_value_tensor(proto_value_get(r->msg.root, path), path, t, &pe)) return hc_fail(err, pe.code, "%s", pe.message);
    return 0;
}

/* Copies reply tensor `path` (dtype dt, shape [n] when cols < 0, else [n, cols]: cols may be 0) into dst
 * when dst != NULL. */
static int copy_out(const herd_reply *r, const char *path, proto_dtype dt, int n, int cols, void *dst, int required,
                    herd_error *err)
{
    if (!dst || (!required && !proto_value_get(r->msg.root, path))) return 0;
    proto_tensor t;
    proto_error pe;
    int64_t shp[2] = {n, cols};
    if (proto_get_tensor(r->msg.root, path, dt, cols >= 0 ? 2 : 1, shp, &t, &pe)) return hc_fail(err, pe.code, "%s", pe.message);
    if (t.nbytes) memcpy(dst, t.data, t.nbytes);
    return 0;
}

static int reply_check(const herd_reply *r, herd_error *err)
{
    if (!r->ok) return hc_fail(err, r->error.code, "%s", r->error.message);
    return 0;
}

const float *herd_reply_critic_obs(const herd_reply *r, const herd_session *s, int n, herd_error *err)
{
    if (reply_check(r, err)) return NULL;
    if (s->critic_dim <= 0) {
        hc_fail(err, PROTO_E_BAD_REPLY, "session %llu was not made with critic_obs", (unsigned long long)s->id);
        return NULL;
    }
    proto_tensor t;
    proto_error pe;
    int64_t shp[2] = {n, s->critic_dim};
    if (proto_get_tensor(r->msg.root, "info.critic_obs", PROTO_DT_FLOAT32, 2, shp, &t, &pe)) {
        hc_fail(err, pe.code, "%s", pe.message);
        return NULL;
    }
    return (const float *)(const void *)t.data;
}

int herd_reply_terrain(const herd_reply *r, const herd_session *s, int n, const int32_t **level, const int32_t **kind,
                       herd_error *err)
{
    int rc = reply_check(r, err);
    if (rc) return rc;
    if (s->spec.nterrain_kinds <= 0)
        return hc_fail(err, PROTO_E_BAD_REPLY, "session %llu: env '%s' has no terrain curriculum (no terrain_kinds)",
                       (unsigned long long)s->id, s->spec.name);
    proto_tensor tl, tk;
    proto_error pe;
    int64_t shp[1] = {n};
    if (proto_get_tensor(r->msg.root, "info.terrain_level", PROTO_DT_INT32, 1, shp, &tl, &pe) ||
        proto_get_tensor(r->msg.root, "info.terrain_kind", PROTO_DT_INT32, 1, shp, &tk, &pe))
        return hc_fail(err, pe.code, "%s", pe.message);
    if (level) *level = (const int32_t *)(const void *)tl.data;
    if (kind) *kind = (const int32_t *)(const void *)tk.data;
    return 0;
}

int herd_reply_reset(const herd_reply *r, const herd_session *s, int n, float *obs, herd_error *err)
{
    int rc = reply_check(r, err);
    if (rc) return rc;
    return copy_out(r, "obs", PROTO_DT_FLOAT32, n, s->obs_dim, obs, 1, err);
}

int herd_reply_step(const herd_reply *r, const herd_session *s, int n, herd_step_out *o, herd_error *err)
{
    int rc = reply_check(r, err);
    if (rc) return rc;
    const int od = s->obs_dim, nt = s->nterms;
    if ((rc = copy_out(r, "obs", PROTO_DT_FLOAT32, n, od, o->obs, 1, err)) ||
        (rc = copy_out(r, "reward", PROTO_DT_FLOAT32, n, -1, o->reward, 1, err)) ||
        (rc = copy_out(r, "terminated", PROTO_DT_BOOL, n, -1, o->terminated, 1, err)) ||
        (rc = copy_out(r, "truncated", PROTO_DT_BOOL, n, -1, o->truncated, 1, err)) ||
        (rc = copy_out(r, "info.physics_reset", PROTO_DT_BOOL, n, -1, o->physics_reset, 1, err)) ||
        (rc = copy_out(r, "info.episode_done", PROTO_DT_BOOL, n, -1, o->episode_done, 1, err)) ||
        (rc = copy_out(r, "info.episode_return", PROTO_DT_FLOAT32, n, -1, o->episode_return, 1, err)) ||
        (rc = copy_out(r, "info.episode_length", PROTO_DT_INT32, n, -1, o->episode_length, 1, err)) ||
        (rc = copy_out(r, "info.episode_terms", PROTO_DT_FLOAT32, n, nt, o->episode_terms, 1, err)) ||
        (rc = copy_out(r, "info.autoreset", PROTO_DT_BOOL, n, -1, o->autoreset, s->autoreset == ENV_AUTORESET_NEXT_STEP, err)) ||
        (rc = copy_out(r, "info.final_obs", PROTO_DT_FLOAT32, n, od, o->final_obs, s->autoreset == ENV_AUTORESET_SAME_STEP, err)) ||
        (rc = copy_out(r, "info._final_obs", PROTO_DT_BOOL, n, -1, o->final_mask, s->autoreset == ENV_AUTORESET_SAME_STEP, err)) ||
        (rc = copy_out(r, "info.reward_terms", PROTO_DT_FLOAT32, n, nt, o->reward_terms, 0, err)) ||
        (rc = copy_out(r, "info.critic_obs", PROTO_DT_FLOAT32, n, s->critic_dim, o->critic_obs, s->critic_dim > 0, err)) ||
        (rc = copy_out(r, "info.terrain_level", PROTO_DT_INT32, n, -1, o->terrain_level, s->spec.nterrain_kinds > 0, err)) ||
        (rc = copy_out(r, "info.terrain_kind", PROTO_DT_INT32, n, -1, o->terrain_kind, s->spec.nterrain_kinds > 0, err)))
        return rc;
    return 0;
}

int herd_client_reset(herd_client *c, const herd_session *s, int n, const int32_t *ids, const uint64_t *seeds, float *obs,
                      herd_error *err)
{
    if (!ids) n = s->num_worlds;
    uint64_t id = herd_client_reset_send(c, s, n, ids, seeds, err);
    if (!id) return err ? (int)err->code : PROTO_E_TRANSPORT;
    herd_reply *r;
    int rc = herd_client_wait(c, id, -1, &r, err);
    if (rc) return rc;
    rc = herd_reply_reset(r, s, n, obs, err);
    herd_reply_destroy(&r);
    return rc;
}

int herd_client_step(herd_client *c, const herd_session *s, int n, const int32_t *ids, const float *actions,
                     int reward_terms, herd_step_out *out, herd_error *err)
{
    if (!ids) n = s->num_worlds;
    uint64_t id = herd_client_step_send(c, s, n, ids, actions, reward_terms, err);
    if (!id) return err ? (int)err->code : PROTO_E_TRANSPORT;
    herd_reply *r;
    int rc = herd_client_wait(c, id, -1, &r, err);
    if (rc) return rc;
    herd_step_out none = {0};
    rc = herd_reply_step(r, s, n, out ? out : &none, err);
    herd_reply_destroy(&r);
    return rc;
}

uint64_t hc_close_send(herd_client *c, const herd_session *s, herd_error *err)
{
    proto_request r;
    session_request(c, &r, PROTO_OP_CLOSE, s);
    if (herd_client_send_request(c, s->server, &r, err)) return 0;
    forget_token(c, s->server, s->id);
    return r.id;
}

int herd_client_close(herd_client *c, const herd_session *s, herd_error *err)
{
    uint64_t id = hc_close_send(c, s, err);
    if (!id) return err ? (int)err->code : PROTO_E_TRANSPORT;
    herd_reply *rep;
    int rc = herd_client_wait(c, id, -1, &rep, err);
    if (rc) return rc;
    rc = reply_check(rep, err);
    herd_reply_destroy(&rep);
    return rc;
}

/* ------------------------------------------------------------------------------------------------ */
/* several servers: one batch spread over them */


int herd_client_stats(herd_client *c, int server, uint64_t session, herd_stats *st, herd_error *err)
{
    memset(st, 0, sizeof *st);
    herd_reply *rep;
    int rc = call_op(c, server, PROTO_OP_STATS, session, &rep, err);
    if (rc) return rc;
    rc = herd_reply_stats(rep, st, err);
    herd_reply_destroy(&rep);
    return rc;
}

int herd_reply_stats(const herd_reply *rep, herd_stats *st, herd_error *err)
{
    memset(st, 0, sizeof *st);
    int rc = reply_check(rep, err);
    if (rc) return rc;
    const proto_value *m = rep->msg.root;
    proto_error pe;
    int64_t th = 0;
    if (proto_get_f64(m, "uptime_s", &st->uptime_s, &pe) || proto_get_int(m, "sessions", &st->sessions, &pe) ||
        proto_get_int(m, "worlds", &st->worlds, &pe) || proto_get_uint(m, "steps", &st->steps, &pe) ||
        proto_get_f64(m, "steps_per_s", &st->steps_per_s, &pe) || proto_get_uint(m, "requests", &st->requests, &pe) ||
        proto_get_uint(m, "errors", &st->errors, &pe) || proto_get_int(m, "threads", &th, &pe))
        goto bad;
    st->threads = (int)th;
    const proto_value *ss = proto_value_get(m, "session");
    if (ss) {
        st->has_session = 1;
        if (proto_get_uint(ss, "session", &st->session, &pe) || proto_get_str(ss, "env", st->env, sizeof st->env, &pe) ||
            proto_get_int(ss, "num_worlds", &st->num_worlds, &pe) || proto_get_uint(ss, "steps", &st->session_steps, &pe) ||
            proto_get_f64(ss, "steps_per_s", &st->session_steps_per_s, &pe) || proto_get_f64(ss, "age_s", &st->age_s, &pe) ||
            proto_get_f64(ss, "idle_s", &st->idle_s, &pe) || proto_get_uint(ss, "requests", &st->session_requests, &pe) ||
            proto_get_uint(ss, "errors", &st->session_errors, &pe))
            goto bad;
        const proto_value *tr = proto_value_get(ss, "terrain");     /* protocol minor 5, terrain tasks */
        if (tr) {
            const proto_value *kinds = proto_value_get(tr, "kinds");
            const int nk = proto_value_len(kinds);
            if (proto_get_f64(tr, "level", &st->terrain_level, &pe) || proto_get_int(tr, "worlds", &st->terrain_worlds, &pe))
                goto bad;
            if (nk < 0 || nk > ENV_MAX_TERRAIN_KINDS) {
                proto_fail(&pe, PROTO_E_BAD_REPLY, "'session.terrain.kinds' is not an array of at most %d kinds",
                           ENV_MAX_TERRAIN_KINDS);
                goto bad;
            }
            for (int k = 0; k < nk; k++) {
                const proto_value *e = proto_value_at(kinds, k);
                if (proto_get_str(e, "kind", st->terrain_kinds[k], sizeof st->terrain_kinds[k], &pe) ||
                    proto_get_f64(e, "level", &st->kind_level[k], &pe) || proto_get_int(e, "worlds", &st->kind_worlds[k], &pe))
                    goto bad;
            }
            st->nterrain_kinds = nk;
        }
    }
    return 0;
bad:
    return hc_fail(err, PROTO_E_BAD_REPLY, "bad stats reply: %s", pe.message);
}

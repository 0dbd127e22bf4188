/* herd_client.c — C client of herd-server.  See herd_client.h. */
#include "herd_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <zmq.h>

typedef struct {
    uint64_t id;
    int server;
    proto_op op;
    int abandoned;              /* timed out: drop the reply when it comes */
} pending_t;

struct herd_client {
    void *ctx;
    int n;
    void **socks;
    char **eps;
    zmq_pollitem_t *items;      /* n: one per socket (allocated once) */
    int timeout_ms;
    uint64_t next_id;
    int rr;
    herd_reply *qhead, *qtail;  /* received, not yet handed out */
    pending_t *pend;
    int npend, cappend;
};

static int fail(herd_error *e, proto_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(herd_error *e, proto_code code, const char *fmt, ...)
{
    if (e) {
        e->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return (int)code;
}

static int from_proto(herd_error *e, const proto_error *pe)
{
    return fail(e, pe->code, "%s", pe->message);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------------------------------------------ */

/* ---- endpoint expansion (DNS names resolving to several addresses) ---- */

static int ep_push(char ***v, int *n, int *cap, const char *ep)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        char **p = realloc(*v, (size_t)nc * sizeof *p);
        if (!p) return -1;
        *v = p;
        *cap = nc;
    }
    if (!((*v)[*n] = strdup(ep))) return -1;
    (*n)++;
    return 0;
}

typedef struct {
    unsigned char a[16];        /* network order: memcmp sorts numerically */
} addr_t;

static int addr_cmp(const void *x, const void *y) { return memcmp(x, y, sizeof(addr_t)); }

/* The unique addresses of host:port of one family (AF_INET / AF_INET6), sorted; *out malloc'd
 * (NULL when none). */
static int resolve(const char *host, const char *port, int family, addr_t **out)
{
    *out = NULL;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) || !res) return 0;
    int cap = 0, n = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) cap++;
    addr_t *v = calloc((size_t)cap, sizeof *v);
    for (struct addrinfo *ai = res; ai && v; ai = ai->ai_next) {
        addr_t x;
        memset(&x, 0, sizeof x);
        if (ai->ai_family != family) continue;
        if (family == AF_INET) memcpy(x.a, &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr, 4);
        else memcpy(x.a, &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr, 16);
        int dup = 0;
        for (int j = 0; j < n && !dup; j++) dup = !memcmp(&v[j], &x, sizeof x);
        if (!dup) v[n++] = x;
    }
    freeaddrinfo(res);
    if (n) qsort(v, (size_t)n, sizeof *v, addr_cmp);
    *out = v;
    return n;
}

static int expand_one(const char *ep, char ***v, int *n, int *cap)
{
    if (strncmp(ep, "tcp://", 6)) return ep_push(v, n, cap, ep);
    const char *hp = ep + 6, *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= 256 || strpbrk(hp, "*;[]")) return ep_push(v, n, cap, ep);
    const char *port = colon + 1;
    size_t pl = strlen(port);
    if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl) return ep_push(v, n, cap, ep);
    char host[256];
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    unsigned char tmp[16];
    if (strchr(host, ':') || inet_pton(AF_INET, host, tmp) == 1) return ep_push(v, n, cap, ep);   /* IP literal */
    addr_t *a;
    int fam = AF_INET, na = resolve(host, port, AF_INET, &a);
    if (na == 1) {              /* one IPv4 address: keep the name (ZeroMQ re-resolves it on reconnect) */
        free(a);
        return ep_push(v, n, cap, ep);
    }
    if (na == 0) {
        free(a);
        fam = AF_INET6;
        na = resolve(host, port, AF_INET6, &a);
    }
    int rc = 0;
    if (na == 0) rc = ep_push(v, n, cap, ep);   /* does not resolve: ZeroMQ reports it (a TIMEOUT naming it) */
    for (int i = 0; i < na && !rc; i++) {
        char ip[INET6_ADDRSTRLEN], out[INET6_ADDRSTRLEN + 32];
        if (!inet_ntop(fam, a[i].a, ip, sizeof ip)) {
            rc = -1;
            break;
        }
        snprintf(out, sizeof out, fam == AF_INET ? "tcp://%s:%s" : "tcp://[%s]:%s", ip, port);
        rc = ep_push(v, n, cap, out);
    }
    free(a);
    return rc;
}

void herd_endpoints_free(char **eps, int n)
{
    if (!eps) return;
    for (int i = 0; i < n; i++) free(eps[i]);
    free(eps);
}

int herd_expand_endpoints(const char *const *endpoints, int nendpoints, char ***out, int *nout, herd_error *err)
{
    *out = NULL;
    *nout = 0;
    if (nendpoints < 1 || !endpoints) return fail(err, PROTO_E_TRANSPORT, "no server endpoint given");
    char **v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < nendpoints; i++) {
        if (!endpoints[i] || expand_one(endpoints[i], &v, &n, &cap)) {
            herd_endpoints_free(v, n);
            return endpoints[i] ? fail(err, PROTO_E_INTERNAL, "out of memory")
                                : fail(err, PROTO_E_TRANSPORT, "endpoint %d is NULL", i);
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

herd_client *herd_client_new(const char *const *endpoints, int nendpoints, int timeout_ms, herd_error *err)
{
    char **eps;
    int n;
    if (herd_expand_endpoints(endpoints, nendpoints, &eps, &n, err)) return NULL;
    herd_client *c = calloc(1, sizeof *c);
    if (!c) {
        herd_endpoints_free(eps, n);
        return fail(err, PROTO_E_INTERNAL, "out of memory"), NULL;
    }
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    c->next_id = 1;
    c->ctx = zmq_ctx_new();
    c->socks = calloc((size_t)n, sizeof *c->socks);
    c->eps = eps;
    c->n = n;
    c->items = calloc((size_t)n, sizeof *c->items);
    if (!c->ctx || !c->socks || !c->items) {
        fail(err, PROTO_E_TRANSPORT, "cannot create a ZeroMQ context");
        herd_client_destroy(&c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        c->socks[i] = zmq_socket(c->ctx, ZMQ_DEALER);
        int zero = 0, one = 1;
        if (!c->socks[i] || zmq_setsockopt(c->socks[i], ZMQ_LINGER, &zero, sizeof zero) ||
            (!strncmp(eps[i], "tcp://[", 7) && zmq_setsockopt(c->socks[i], ZMQ_IPV6, &one, sizeof one)) ||
            zmq_connect(c->socks[i], eps[i])) {
            fail(err, PROTO_E_TRANSPORT, "cannot connect to %s: %s", eps[i], zmq_strerror(zmq_errno()));
            herd_client_destroy(&c);
            return NULL;
        }
    }
    return c;
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
        return fail(err, PROTO_E_TRANSPORT, "cannot build a message: %s", zmq_strerror(zmq_errno()));
    }
    if (zmq_msg_send(&m, c->socks[server], ZMQ_DONTWAIT) < 0) {
        int e = zmq_errno();
        zmq_msg_close(&m);
        return fail(err, PROTO_E_TRANSPORT, "cannot send to %s: %s", c->eps[server],
                    e == EAGAIN ? "send queue full (is the server reachable?)" : zmq_strerror(e));
    }
    return 0;
}

int herd_client_send_request(herd_client *c, int server, const proto_request *r, herd_error *err)
{
    if (server < 0 || server >= c->n) return fail(err, PROTO_E_TRANSPORT, "no server %d", server);
    proto_buf b;
    proto_buf_init(&b);
    if (proto_encode_request(&b, r)) {
        proto_buf_free(&b);
        return fail(err, PROTO_E_INTERNAL, "out of memory encoding a request");
    }
    size_t len;
    uint8_t *p = proto_buf_steal(&b, &len);
    int rc = send_bytes(c, server, p, len, err);
    if (rc) return rc;
    if (pend_add(c, r->id, server, r->op)) return fail(err, PROTO_E_INTERNAL, "out of memory");
    return 0;
}

int herd_client_send_raw(herd_client *c, int server, const void *bytes, size_t len, herd_error *err)
{
    if (server < 0 || server >= c->n) return fail(err, PROTO_E_TRANSPORT, "no server %d", server);
    uint8_t *p = malloc(len ? len : 1);
    if (!p) return fail(err, PROTO_E_INTERNAL, "out of memory");
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

/* Receives and decodes one message from socket i (ready to read).  NULL for a message to drop. */
static herd_reply *read_one(herd_client *c, int i, herd_error *err, int *rc)
{
    *rc = 0;
    zmq_msg_t *m = malloc(sizeof *m);
    if (!m) {
        *rc = fail(err, PROTO_E_INTERNAL, "out of memory");
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
                *rc = fail(err, PROTO_E_TRANSPORT, "cannot receive from %s: %s", c->eps[i], zmq_strerror(e));
            return NULL;
        }
        if (!zmq_msg_more(m)) break;
    }
    herd_reply *r = calloc(1, sizeof *r);
    if (!r) {
        zmq_msg_close(m);
        free(m);
        *rc = fail(err, PROTO_E_INTERNAL, "out of memory");
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
            *rc = fail(err, PROTO_E_INTERNAL, "out of memory");
            return NULL;
        }
        memcpy(r->copy, data, len);
        data = r->copy;
        zmq_msg_close(m);
        free(m);
        r->zmsg = NULL;
    }
    proto_error pe;
    if (proto_decode_reply(data, len, &r->msg, &pe)) {
        herd_reply_destroy(&r);
        *rc = fail(err, PROTO_E_BAD_REPLY, "bad reply from %s: %s", c->eps[i], pe.message);
        return NULL;
    }
    r->id = r->msg.id;
    r->ok = r->msg.ok;
    r->op = PROTO_OP_COUNT;
    if (!r->ok) {
        r->error.code = r->msg.error.code;
        snprintf(r->error.message, sizeof r->error.message, "%s", r->msg.error.message);
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
        double left = deadline_ms - now_ms();
        if (left < 0) left = 0;
        int k = zmq_poll(items, n, (long)left);
        if (k < 0) {
            if (zmq_errno() == EINTR) {
                if (now_ms() >= deadline_ms) return NULL;
                continue;
            }
            *rc = fail(err, PROTO_E_TRANSPORT, "poll failed: %s", zmq_strerror(zmq_errno()));
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

static double deadline(herd_client *c, int timeout_ms) { return now_ms() + (timeout_ms < 0 ? c->timeout_ms : timeout_ms); }

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
        return fail(err, PROTO_E_TIMEOUT, "no reply from %s within %d ms", who, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
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
            return fail(err, PROTO_E_TIMEOUT, "no reply from %s to request %" PRIu64 " (%s) within %d ms", c->eps[server],
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
        rc = fail(err, (*out)->error.code, "%s", (*out)->error.message);
        herd_reply_destroy(out);
        return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* calls */

int herd_client_ping(herd_client *c, int server, double *t, herd_error *err)
{
    proto_request r;
    proto_request_init(&r);
    r.op = PROTO_OP_PING;
    herd_reply *rep;
    int rc = call(c, server, &r, &rep, err);
    if (rc) return rc;
    proto_error pe;
    double v = 0;
    if (proto_get_f64(&rep->msg.root, "time", &v, &pe)) rc = from_proto(err, &pe);
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
    proto_request r;
    proto_request_init(&r);
    r.op = PROTO_OP_HELLO;
    herd_reply *rep;
    int rc = call(c, server, &r, &rep, err);
    if (rc) return rc;
    const msgpack_object *root = &rep->msg.root;
    proto_error pe;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    if (proto_get_int(root, "protocol", &i64, &pe) || proto_get_str(root, "server", h->server, sizeof h->server, &pe)) goto bad;
    h->protocol = (int)i64;
    if (proto_get_int(root, "threads", &i64, &pe)) goto bad;
    h->threads = (int)i64;
    const msgpack_object *lim = proto_map_get(root, "limits");
    if (proto_get_uint(lim, "max_message_bytes", &u64, &pe) ||
        proto_get_int(lim, "max_worlds_per_session", &h->max_worlds_per_session, &pe) ||
        proto_get_int(lim, "max_worlds", &h->max_worlds, &pe))
        goto bad;
    h->max_message_bytes = u64;
    const msgpack_object *envs = proto_map_get(root, "envs");
    if (!envs || envs->type != MSGPACK_OBJECT_ARRAY) {
        proto_fail(&pe, PROTO_E_BAD_REPLY, "hello reply lacks 'envs'");
        goto bad;
    }
    h->nenvs = (int)envs->via.array.size;
    h->envs = calloc((size_t)(h->nenvs ? h->nenvs : 1), sizeof *h->envs);
    if (!h->envs) {
        proto_fail(&pe, PROTO_E_INTERNAL, "out of memory");
        goto bad;
    }
    for (int i = 0; i < h->nenvs; i++)
        if (proto_decode_spec(&envs->via.array.ptr[i], &h->envs[i], &pe)) goto bad;
    herd_reply_destroy(&rep);
    return 0;
bad:
    herd_reply_destroy(&rep);
    herd_hello_free(h);
    return fail(err, PROTO_E_BAD_REPLY, "bad hello reply: %s", pe.message);
}

/* Builds a make request (id not set). */
static int make_request(proto_request *r, const char *env, int num_worlds, const env_kv *config, int nconfig,
                        uint64_t seed, env_autoreset autoreset, herd_error *err)
{
    proto_request_init(r);
    r->op = PROTO_OP_MAKE;
    if (!env || strlen(env) >= sizeof r->env) return fail(err, PROTO_E_UNKNOWN_ENV, "bad env name");
    snprintf(r->env, sizeof r->env, "%s", env);
    r->num_worlds = num_worlds;
    if (nconfig > PROTO_MAX_CONFIG) return fail(err, PROTO_E_BAD_CONFIG, "more than %d config overrides", PROTO_MAX_CONFIG);
    for (int i = 0; i < nconfig; i++) {
        if (!config[i].key || strlen(config[i].key) >= PROTO_NAME_MAX)
            return fail(err, PROTO_E_BAD_CONFIG, "bad config key");
        snprintf(r->config[i].key, sizeof r->config[i].key, "%s", config[i].key);
        r->config[i].value = config[i].value;
    }
    r->nconfig = nconfig;
    r->has_seed = 1;
    r->seed = seed;
    r->has_autoreset = 1;
    r->autoreset = autoreset;
    return 0;
}

/* Decodes a successful make reply of server into s. */
static int make_parse(const herd_reply *rep, int server, herd_session *s, herd_error *err)
{
    memset(s, 0, sizeof *s);
    const msgpack_object *root = &rep->msg.root;
    proto_error pe;
    int64_t nw = 0;
    char ar[32];
    if (proto_get_uint(root, "session", &s->id, &pe) || proto_get_int(root, "num_worlds", &nw, &pe) ||
        proto_get_uint(root, "seed", &s->seed, &pe) || proto_get_str(root, "autoreset", ar, sizeof ar, &pe) ||
        proto_decode_spec(proto_map_get(root, "spec"), &s->spec, &pe))
        goto bad;
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
    const msgpack_object *cfg = proto_map_get(root, "config");
    for (int i = 0; i < s->spec.nconfig; i++)
        if (proto_get_f64(cfg, s->spec.config[i].key, &s->config[i], &pe)) goto bad;
    return 0;
bad:
    return fail(err, PROTO_E_BAD_REPLY, "bad make reply: %s", pe.message);
}

int herd_client_make(herd_client *c, int server, const char *env, int num_worlds, const env_kv *config, int nconfig,
                     uint64_t seed, env_autoreset autoreset, herd_session *s, herd_error *err)
{
    memset(s, 0, sizeof *s);
    if (server < 0) server = c->rr++ % c->n;
    proto_request r;
    int rc = make_request(&r, env, num_worlds, config, nconfig, seed, autoreset, err);
    if (rc) return rc;
    herd_reply *rep;
    rc = call(c, server, &r, &rep, err);
    if (rc) return rc;
    rc = make_parse(rep, server, s, err);
    herd_reply_destroy(&rep);
    return rc;
}

static uint64_t send_rows(herd_client *c, const herd_session *s, proto_op op, int n, const int32_t *ids,
                          const uint64_t *seeds, const float *actions, int reward_terms, herd_error *err)
{
    proto_request r;
    proto_request_init(&r);
    r.op = op;
    r.id = herd_client_next_id(c);
    r.session = s->id;
    r.has_session = 1;
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
    return send_rows(c, s, PROTO_OP_RESET, n, ids, seeds, NULL, 0, err);
}

uint64_t herd_client_step_send(herd_client *c, const herd_session *s, int n, const int32_t *ids, const float *actions,
                               int reward_terms, herd_error *err)
{
    return send_rows(c, s, PROTO_OP_STEP, n, ids, NULL, actions, reward_terms, err);
}

int herd_reply_tensor(const herd_reply *r, const char *path, proto_tensor *t, herd_error *err)
{
    const msgpack_object *m = &r->msg.root;
    const char *key = path;
    if (!strncmp(path, "info.", 5)) {
        m = proto_map_get(m, "info");
        key = path + 5;
    }
    const msgpack_object *o = proto_map_get(m, key);
    if (!o) return fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", path);
    proto_error pe;
    if (proto_tensor_from_object(o, path, t, &pe)) return fail(err, PROTO_E_BAD_REPLY, "%s", pe.message);
    return 0;
}

/* Copies reply tensor `path` (dtype dt, shape [n] or [n, cols]) into dst when dst != NULL. */
static int copy_out(const herd_reply *r, const char *path, proto_dtype dt, int n, int cols, void *dst, int required,
                    herd_error *err)
{
    if (!dst) return 0;
    const msgpack_object *m = &r->msg.root;
    const char *key = path;
    if (!strncmp(path, "info.", 5)) {
        m = proto_map_get(m, "info");
        key = path + 5;
    }
    if (!proto_map_get(m, key)) {
        if (!required) return 0;
        return fail(err, PROTO_E_BAD_REPLY, "reply lacks '%s'", path);
    }
    proto_tensor t;
    proto_error pe;
    int64_t shp[2] = {n, cols};
    if (proto_get_tensor(m, key, dt, cols > 0 ? 2 : 1, shp, &t, &pe)) return fail(err, PROTO_E_BAD_REPLY, "%s", pe.message);
    memcpy(dst, t.data, t.nbytes);
    return 0;
}

static int reply_check(const herd_reply *r, herd_error *err)
{
    if (!r->ok) return fail(err, r->error.code, "%s", r->error.message);
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
        (rc = copy_out(r, "reward", PROTO_DT_FLOAT32, n, 0, o->reward, 1, err)) ||
        (rc = copy_out(r, "terminated", PROTO_DT_BOOL, n, 0, o->terminated, 1, err)) ||
        (rc = copy_out(r, "truncated", PROTO_DT_BOOL, n, 0, o->truncated, 1, err)) ||
        (rc = copy_out(r, "info.physics_reset", PROTO_DT_BOOL, n, 0, o->physics_reset, 1, err)) ||
        (rc = copy_out(r, "info.episode_done", PROTO_DT_BOOL, n, 0, o->episode_done, 1, err)) ||
        (rc = copy_out(r, "info.episode_return", PROTO_DT_FLOAT32, n, 0, o->episode_return, 1, err)) ||
        (rc = copy_out(r, "info.episode_length", PROTO_DT_INT32, n, 0, o->episode_length, 1, err)) ||
        (rc = copy_out(r, "info.episode_terms", PROTO_DT_FLOAT32, n, nt, o->episode_terms, 1, err)) ||
        (rc = copy_out(r, "info.autoreset", PROTO_DT_BOOL, n, 0, o->autoreset, s->autoreset == ENV_AUTORESET_NEXT_STEP, err)) ||
        (rc = copy_out(r, "info.final_obs", PROTO_DT_FLOAT32, n, od, o->final_obs, s->autoreset == ENV_AUTORESET_SAME_STEP, err)) ||
        (rc = copy_out(r, "info._final_obs", PROTO_DT_BOOL, n, 0, o->final_mask, s->autoreset == ENV_AUTORESET_SAME_STEP, err)) ||
        (rc = copy_out(r, "info.reward_terms", PROTO_DT_FLOAT32, n, nt, o->reward_terms, 0, err)))
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

static uint64_t close_send(herd_client *c, const herd_session *s, herd_error *err)
{
    proto_request r;
    proto_request_init(&r);
    r.op = PROTO_OP_CLOSE;
    r.id = herd_client_next_id(c);
    r.session = s->id;
    r.has_session = 1;
    return herd_client_send_request(c, s->server, &r, err) ? 0 : r.id;
}

int herd_client_close(herd_client *c, const herd_session *s, herd_error *err)
{
    uint64_t id = close_send(c, s, err);
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

/* Waits for request id of session s until deadline dl (ms, now_ms clock).  A timeout names s's endpoint
 * and the client's timeout; a server's error reply is returned as an error naming the endpoint. */
static int spread_wait(herd_client *c, uint64_t id, const herd_session *s, proto_op op, double dl, herd_reply **out,
                       herd_error *err)
{
    double left = dl - now_ms();
    int rc = herd_client_wait(c, id, left > 0 ? (int)ceil(left) : 0, out, err);
    if (rc == PROTO_E_TIMEOUT)
        return fail(err, PROTO_E_TIMEOUT, "no reply from %s to request %" PRIu64 " (%s) within %d ms",
                    c->eps[s->server], id, proto_op_name(op), c->timeout_ms);
    if (rc) return rc;
    if (!(*out)->ok) {
        rc = fail(err, (*out)->error.code, "%s (server %s)", (*out)->error.message, c->eps[s->server]);
        herd_reply_destroy(out);
    }
    return rc;
}

/* Keeps the first error: *rc / *first take (code, e) when *rc is still 0. */
static void keep_first(int *rc, herd_error *first, int code, const herd_error *e)
{
    if (code && !*rc) {
        *rc = code;
        *first = *e;
    }
}

/* Closes parts[k] where open[k] (every close in flight at once, then every reply); the first error. */
static int close_parts(herd_client *c, const herd_session *parts, const int *open, int np, uint64_t *rid,
                       herd_error *err)
{
    int rc = 0;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    for (int k = 0; k < np; k++) {
        rid[k] = open && !open[k] ? 0 : close_send(c, &parts[k], &e);
        if (!rid[k] && (!open || open[k])) keep_first(&rc, &first, e.code ? (int)e.code : PROTO_E_TRANSPORT, &e);
    }
    double dl = now_ms() + c->timeout_ms;
    for (int k = 0; k < np; k++) {
        if (!rid[k]) continue;
        herd_reply *r = NULL;
        int rk = spread_wait(c, rid[k], &parts[k], PROTO_OP_CLOSE, dl, &r, &e);
        herd_reply_destroy(&r);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc && err) *err = first;
    return rc;
}

static void spread_free(herd_spread *sp)
{
    free(sp->part);
    free(sp->offset);
    free(sp->rid);
    memset(sp, 0, sizeof *sp);
}

int herd_client_make_spread(herd_client *c, const char *env, int num_worlds, const env_kv *config, int nconfig,
                            uint64_t seed, env_autoreset autoreset, herd_spread *out, herd_error *err)
{
    memset(out, 0, sizeof *out);
    if (num_worlds < 1) return fail(err, PROTO_E_BAD_FIELD, "num_worlds must be a positive integer, not %d", num_worlds);
    proto_request r;
    int rc = make_request(&r, env, num_worlds, config, nconfig, seed, autoreset, err);
    if (rc) return rc;
    const int S = c->n, np = num_worlds < S ? num_worlds : S;
    herd_spread sp;
    memset(&sp, 0, sizeof sp);
    sp.part = calloc((size_t)np, sizeof *sp.part);
    sp.offset = calloc((size_t)np, sizeof *sp.offset);
    sp.rid = calloc((size_t)np, sizeof *sp.rid);
    int *made = calloc((size_t)np, sizeof *made);
    if (!sp.part || !sp.offset || !sp.rid || !made) {
        spread_free(&sp);
        free(made);
        return fail(err, PROTO_E_INTERNAL, "out of memory");
    }
    sp.nparts = np;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    /* contiguous blocks, the first num_worlds % S servers one world more (as the Python client) */
    for (int k = 0, off = 0; k < np && !rc; k++) {
        r.num_worlds = num_worlds / S + (k < num_worlds % S);
        sp.offset[k] = off;
        off += (int)r.num_worlds;
        r.id = herd_client_next_id(c);
        int rk = herd_client_send_request(c, k, &r, &e);
        sp.rid[k] = rk ? 0 : r.id;
        keep_first(&rc, &first, rk, &e);
    }
    double dl = now_ms() + c->timeout_ms;
    for (int k = 0; k < np; k++) {
        if (!sp.rid[k]) continue;
        herd_session who = {.server = k};
        herd_reply *rep = NULL;
        int rk = spread_wait(c, sp.rid[k], &who, PROTO_OP_MAKE, dl, &rep, &e);
        if (!rk) {
            rk = make_parse(rep, k, &sp.part[k], &e);
            made[k] = !rk;
            if (!rk && (sp.part[k].obs_dim != sp.part[0].obs_dim || sp.part[k].act_dim != sp.part[0].act_dim ||
                        sp.part[k].nterms != sp.part[0].nterms))
                rk = fail(&e, PROTO_E_BAD_REPLY, "servers disagree on the spec of %s (%s and %s)", env, c->eps[0],
                          c->eps[k]);
        }
        herd_reply_destroy(&rep);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc) {
        close_parts(c, sp.part, made, np, sp.rid, &e);      /* best effort */
        spread_free(&sp);
        free(made);
        if (err) *err = first;
        return rc;
    }
    free(made);
    sp.num_worlds = num_worlds;
    sp.obs_dim = sp.part[0].obs_dim;
    sp.act_dim = sp.part[0].act_dim;
    sp.nterms = sp.part[0].nterms;
    sp.autoreset = sp.part[0].autoreset;
    sp.seed = seed;
    *out = sp;
    return 0;
}

/* The rows of o from global world off on (cols per row: obs_dim / nterms). */
static herd_step_out step_rows(const herd_step_out *o, size_t off, size_t od, size_t nt)
{
    herd_step_out s;
    memset(&s, 0, sizeof s);
    if (!o) return s;
#define ROWS(f, cols) s.f = o->f ? o->f + off * (cols) : NULL
    ROWS(obs, od);
    ROWS(reward, 1);
    ROWS(terminated, 1);
    ROWS(truncated, 1);
    ROWS(physics_reset, 1);
    ROWS(episode_done, 1);
    ROWS(episode_return, 1);
    ROWS(episode_length, 1);
    ROWS(episode_terms, nt);
    ROWS(autoreset, 1);
    ROWS(final_obs, od);
    ROWS(final_mask, 1);
    ROWS(reward_terms, nt);
#undef ROWS
    return s;
}

/* Sends every part its rows (reset with seeds, or step with actions), then collects every reply into
 * obs (reset) / out (step). */
static int spread_rows(herd_client *c, const herd_spread *sp, proto_op op, const uint64_t *seeds, const float *actions,
                       int reward_terms, float *obs, herd_step_out *out, herd_error *err)
{
    if (!sp || sp->nparts < 1) return fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    int rc = 0;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    const size_t od = (size_t)sp->obs_dim, ad = (size_t)sp->act_dim, nt = (size_t)sp->nterms;
    for (int k = 0; k < sp->nparts; k++) {
        const herd_session *s = &sp->part[k];
        size_t off = (size_t)sp->offset[k];
        sp->rid[k] = rc ? 0
                        : send_rows(c, s, op, s->num_worlds, NULL, seeds ? seeds + off : NULL,
                                    actions ? actions + off * ad : NULL, reward_terms, &e);
        if (!rc && !sp->rid[k]) keep_first(&rc, &first, e.code ? (int)e.code : PROTO_E_TRANSPORT, &e);
    }
    double dl = now_ms() + c->timeout_ms;
    for (int k = 0; k < sp->nparts; k++) {
        if (!sp->rid[k]) continue;
        const herd_session *s = &sp->part[k];
        size_t off = (size_t)sp->offset[k];
        herd_reply *r = NULL;
        int rk = spread_wait(c, sp->rid[k], s, op, dl, &r, &e);
        if (!rk && op == PROTO_OP_RESET) {
            rk = herd_reply_reset(r, s, s->num_worlds, obs ? obs + off * od : NULL, &e);
        } else if (!rk) {
            herd_step_out o = step_rows(out, off, od, nt);
            rk = herd_reply_step(r, s, s->num_worlds, &o, &e);
        }
        herd_reply_destroy(&r);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc && err) *err = first;
    return rc;
}

int herd_client_reset_spread(herd_client *c, const herd_spread *sp, uint64_t seed, float *obs, herd_error *err)
{
    if (!sp || sp->num_worlds < 1) return fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    uint64_t *seeds = malloc((size_t)sp->num_worlds * sizeof *seeds);
    if (!seeds) return fail(err, PROTO_E_INTERNAL, "out of memory");
    for (int g = 0; g < sp->num_worlds; g++) seeds[g] = seed + (uint64_t)g;
    int rc = spread_rows(c, sp, PROTO_OP_RESET, seeds, NULL, 0, obs, NULL, err);
    free(seeds);
    return rc;
}

int herd_client_step_spread(herd_client *c, const herd_spread *sp, const float *actions, int reward_terms,
                            herd_step_out *out, herd_error *err)
{
    if (!sp || sp->num_worlds < 1) return fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    if (!actions) return fail(err, PROTO_E_MISSING_FIELD, "no actions");
    if (sp->nparts > 1) {       /* check before splitting, so that no server steps alone */
        size_t total = (size_t)sp->num_worlds * (size_t)sp->act_dim;
        for (size_t i = 0; i < total; i++)
            if (!isfinite(actions[i])) {
                int row = (int)(i / (size_t)sp->act_dim), col = (int)(i % (size_t)sp->act_dim);
                return fail(err, PROTO_E_NON_FINITE, "actions[%d][%d] = %g (world %d) is not finite", row, col,
                            (double)actions[i], row);
            }
    }
    return spread_rows(c, sp, PROTO_OP_STEP, NULL, actions, reward_terms, NULL, out, err);
}

int herd_client_close_spread(herd_client *c, herd_spread *sp, herd_error *err)
{
    if (!sp || sp->nparts < 1) {
        if (sp) spread_free(sp);
        return 0;
    }
    int rc = close_parts(c, sp->part, NULL, sp->nparts, sp->rid, err);
    spread_free(sp);
    return rc;
}

int herd_client_stats(herd_client *c, int server, uint64_t session, herd_stats *st, herd_error *err)
{
    memset(st, 0, sizeof *st);
    proto_request r;
    proto_request_init(&r);
    r.op = PROTO_OP_STATS;
    if (session) {
        r.session = session;
        r.has_session = 1;
    }
    herd_reply *rep;
    int rc = call(c, server, &r, &rep, err);
    if (rc) return rc;
    const msgpack_object *m = &rep->msg.root;
    proto_error pe;
    int64_t th = 0;
    if (proto_get_f64(m, "uptime_s", &st->uptime_s, &pe) || proto_get_int(m, "sessions", &st->sessions, &pe) ||
        proto_get_int(m, "worlds", &st->worlds, &pe) || proto_get_uint(m, "steps", &st->steps, &pe) ||
        proto_get_f64(m, "steps_per_s", &st->steps_per_s, &pe) || proto_get_uint(m, "requests", &st->requests, &pe) ||
        proto_get_uint(m, "errors", &st->errors, &pe) || proto_get_int(m, "threads", &th, &pe))
        goto bad;
    st->threads = (int)th;
    const msgpack_object *ss = proto_map_get(m, "session");
    if (ss) {
        st->has_session = 1;
        if (proto_get_uint(ss, "session", &st->session, &pe) || proto_get_str(ss, "env", st->env, sizeof st->env, &pe) ||
            proto_get_int(ss, "num_worlds", &st->num_worlds, &pe) || proto_get_uint(ss, "steps", &st->session_steps, &pe) ||
            proto_get_f64(ss, "steps_per_s", &st->session_steps_per_s, &pe) || proto_get_f64(ss, "age_s", &st->age_s, &pe) ||
            proto_get_f64(ss, "idle_s", &st->idle_s, &pe) || proto_get_uint(ss, "requests", &st->session_requests, &pe) ||
            proto_get_uint(ss, "errors", &st->session_errors, &pe))
            goto bad;
    }
    herd_reply_destroy(&rep);
    return 0;
bad:
    herd_reply_destroy(&rep);
    return fail(err, PROTO_E_BAD_REPLY, "bad stats reply: %s", pe.message);
}

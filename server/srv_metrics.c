/* srv_metrics.c — lock-free counters and the Prometheus text endpoint (libmicrohttpd); see srv_metrics.h. */
#include "srv_metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RENDER_START 16384      /* first exposition buffer; grown when a render needs more */
#define RATE_WINDOW_S 1.0       /* rate gauges cover at least this long */

/* Request latencies span a 1-world ping (tens of µs) to a 65,536-world step (seconds). */
static const double buckets[SRV_METRICS_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

typedef struct {
    atomic_uint_fast64_t count[SRV_METRICS_BUCKETS + 1]; /* per bucket (not cumulative); last = above all */
    atomic_uint_fast64_t sum_ns;
} hist;

struct srv_metrics {
    const char *const *op_names;
    const char *const *code_names;
    int nops, ncodes, nworkers;
    char version[32];
    int protocol;
    atomic_uint_fast64_t requests[SRV_METRICS_OPS];
    atomic_uint_fast64_t errors[SRV_METRICS_OPS][SRV_METRICS_CODES];
    hist latency[SRV_METRICS_OPS];
    atomic_uint_fast64_t bytes_in, bytes_out, env_steps, physics_resets, solver_iterations, solver_capped,
        solver_fallbacks, solver_ccp_answers, joint_limits_active;
    atomic_uint_fast64_t *busy_ns;      /* nworkers */
    atomic_uint_fast64_t *helped;       /* nworkers: world-steps run for another worker */
    atomic_long sessions, worlds, worlds_limit, queue_depth;
    atomic_uint_fast64_t dropped[SRV_DROP_COUNT];
    atomic_size_t memory, memory_limit;
    const char *kind_names[SRV_METRICS_KINDS];
    int nkinds;
    atomic_int_fast64_t level_sum[SRV_METRICS_KINDS], level_worlds[SRV_METRICS_KINDS];
    /* rate window: written by the I/O loop (tick), read by the HTTP thread */
    double win_start;
    uint64_t win_steps, win_busy_ns;
    _Atomic double steps_per_s, utilization;
    struct MHD_Daemon *httpd;
};

const double *srv_metrics_buckets(void) { return buckets; }

srv_metrics *srv_metrics_new(const char *const *op_names, int nops, const char *const *code_names, int ncodes,
                             int nworkers, const char *version, int protocol)
{
    if (nops > SRV_METRICS_OPS || ncodes > SRV_METRICS_CODES || nworkers < 0) return NULL;
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->busy_ns = calloc((size_t)(nworkers > 0 ? nworkers : 1), sizeof *m->busy_ns);
    m->helped = calloc((size_t)(nworkers > 0 ? nworkers : 1), sizeof *m->helped);
    if (!m->busy_ns || !m->helped) {
        free(m->busy_ns);
        free(m->helped);
        free(m);
        return NULL;
    }
    m->op_names = op_names;
    m->code_names = code_names;
    m->nops = nops;
    m->ncodes = ncodes;
    m->nworkers = nworkers;
    snprintf(m->version, sizeof m->version, "%s", version ? version : "");
    m->protocol = protocol;
    m->win_start = -1;
    return m;
}

void srv_metrics_destroy(srv_metrics **pm)
{
    if (!pm || !*pm) return;
    srv_metrics *m = *pm;
    if (m->httpd) MHD_stop_daemon(m->httpd);
    free(m->busy_ns);
    free(m->helped);
    free(m);
    *pm = NULL;
}

/* ---- updates ---- */

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)

void srv_metrics_request(srv_metrics *m, int op, size_t bytes_in)
{
    if (!m) return;
    ADD(m->bytes_in, bytes_in);
    if (op >= 0 && op < m->nops) ADD(m->requests[op], 1);
}

void srv_metrics_reply(srv_metrics *m, int op, int code, double seconds, size_t bytes_out)
{
    if (!m) return;
    ADD(m->bytes_out, bytes_out);
    if (op < 0 || op >= m->nops) return;
    if (code > 0 && code < m->ncodes) ADD(m->errors[op][code], 1);
    if (seconds < 0) return;
    int b = 0;
    while (b < SRV_METRICS_BUCKETS && seconds > buckets[b]) b++;
    ADD(m->latency[op].count[b], 1);
    ADD(m->latency[op].sum_ns, (uint_fast64_t)(seconds * 1e9 + 0.5));
}

void srv_metrics_sent(srv_metrics *m, size_t bytes_out)
{
    if (m) ADD(m->bytes_out, bytes_out);
}

void srv_metrics_env_steps(srv_metrics *m, uint64_t world_steps, uint64_t physics_resets, uint64_t solver_iterations,
                           uint64_t solver_capped, uint64_t solver_fallbacks, uint64_t solver_ccp_answers,
                           uint64_t joint_limits_active)
{
    if (!m) return;
    ADD(m->env_steps, world_steps);
    ADD(m->physics_resets, physics_resets);
    ADD(m->solver_iterations, solver_iterations);
    ADD(m->solver_capped, solver_capped);
    ADD(m->solver_fallbacks, solver_fallbacks);
    ADD(m->solver_ccp_answers, solver_ccp_answers);
    ADD(m->joint_limits_active, joint_limits_active);
}

void srv_metrics_worker_busy(srv_metrics *m, int worker, double seconds)
{
    if (m && worker >= 0 && worker < m->nworkers && seconds > 0)
        ADD(m->busy_ns[worker], (uint_fast64_t)(seconds * 1e9 + 0.5));
}

void srv_metrics_worker_helped(srv_metrics *m, int worker, uint64_t worlds)
{
    if (m && worker >= 0 && worker < m->nworkers) ADD(m->helped[worker], worlds);
}

void srv_metrics_dropped(srv_metrics *m, srv_drop_kind what)
{
    if (m && what < SRV_DROP_COUNT) ADD(m->dropped[what], 1);
}

void srv_metrics_memory(srv_metrics *m, size_t used, size_t limit)
{
    if (!m) return;
    atomic_store_explicit(&m->memory, used, memory_order_relaxed);
    atomic_store_explicit(&m->memory_limit, limit, memory_order_relaxed);
}

void srv_metrics_gauges(srv_metrics *m, int sessions, long worlds, long worlds_limit, long queue_depth)
{
    if (!m) return;
    atomic_store_explicit(&m->sessions, sessions, memory_order_relaxed);
    atomic_store_explicit(&m->worlds, worlds, memory_order_relaxed);
    atomic_store_explicit(&m->worlds_limit, worlds_limit, memory_order_relaxed);
    atomic_store_explicit(&m->queue_depth, queue_depth, memory_order_relaxed);
}

int srv_metrics_terrain_kinds(srv_metrics *m, const char *const *names, int n)
{
    if (!m) return 0;
    m->nkinds = 0;
    for (int i = 0; i < n && m->nkinds < SRV_METRICS_KINDS; i++) m->kind_names[m->nkinds++] = names[i];
    return m->nkinds;
}

int srv_metrics_terrain_kind(const srv_metrics *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->nkinds; i++)
        if (!strcmp(m->kind_names[i], name)) return i;
    return -1;
}

void srv_metrics_terrain(srv_metrics *m, int kind, int64_t dsum, int64_t dworlds)
{
    if (!m || kind < 0 || kind >= m->nkinds) return;
    atomic_fetch_add_explicit(&m->level_sum[kind], dsum, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->level_worlds[kind], dworlds, memory_order_relaxed);
}

static uint64_t busy_total(const srv_metrics *m)
{
    uint64_t s = 0;
    for (int w = 0; w < m->nworkers; w++) s += GET(m->busy_ns[w]);
    return s;
}

void srv_metrics_tick(srv_metrics *m, double now_s)
{
    if (!m) return;
    uint64_t steps = GET(m->env_steps), busy = busy_total(m);
    if (m->win_start < 0) {
        m->win_start = now_s;
        m->win_steps = steps;
        m->win_busy_ns = busy;
        return;
    }
    double dt = now_s - m->win_start;
    if (dt < RATE_WINDOW_S) return;
    atomic_store_explicit(&m->steps_per_s, (double)(steps - m->win_steps) / dt, memory_order_relaxed);
    double u = m->nworkers > 0 ? (double)(busy - m->win_busy_ns) * 1e-9 / (dt * m->nworkers) : 0;
    atomic_store_explicit(&m->utilization, u > 1 ? 1 : u, memory_order_relaxed);
    m->win_start = now_s;
    m->win_steps = steps;
    m->win_busy_ns = busy;
}

/* ---- exposition ---- */

typedef struct {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

static void head(out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(out *o, const char *name, const char *help, uint64_t v)
{
    head(o, name, "counter", help);
    put(o, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge(out *o, const char *name, const char *help, double v)
{
    head(o, name, "gauge", help);
    put(o, "%s %.17g\n", name, v);
}

size_t srv_metrics_render(const srv_metrics *m, char *buf, size_t cap)
{
    out o = {buf, cap, 0};
    if (cap) buf[0] = 0;
    head(&o, "herd_build_info", "gauge", "herd-server version and wire protocol version (value 1).");
    put(&o, "herd_build_info{version=\"%s\",protocol=\"%d\"} 1\n", m->version, m->protocol);

    head(&o, "herd_requests_total", "counter", "Requests decoded, by operation.");
    for (int op = 0; op < m->nops; op++)
        put(&o, "herd_requests_total{op=\"%s\"} %llu\n", m->op_names[op], (unsigned long long)GET(m->requests[op]));

    head(&o, "herd_request_errors_total", "counter", "Error replies, by operation and wire error code.");
    for (int op = 0; op < m->nops; op++)
        for (int c = 1; c < m->ncodes; c++) {
            uint64_t v = GET(m->errors[op][c]);
            if (v) put(&o, "herd_request_errors_total{op=\"%s\",code=\"%s\"} %llu\n", m->op_names[op], m->code_names[c],
                       (unsigned long long)v);
        }

    head(&o, "herd_request_duration_seconds", "histogram", "Time from a request's receipt to its reply, by operation.");
    for (int op = 0; op < m->nops; op++) {
        uint64_t cum = 0;
        for (int b = 0; b < SRV_METRICS_BUCKETS; b++) {
            cum += GET(m->latency[op].count[b]);
            put(&o, "herd_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n", m->op_names[op], buckets[b],
                (unsigned long long)cum);
        }
        cum += GET(m->latency[op].count[SRV_METRICS_BUCKETS]);
        put(&o, "herd_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", m->op_names[op],
            (unsigned long long)cum);
        put(&o, "herd_request_duration_seconds_sum{op=\"%s\"} %.9f\n", m->op_names[op],
            (double)GET(m->latency[op].sum_ns) * 1e-9);
        put(&o, "herd_request_duration_seconds_count{op=\"%s\"} %llu\n", m->op_names[op], (unsigned long long)cum);
    }

    counter(&o, "herd_received_bytes_total", "Bytes of request messages received (all frames).", GET(m->bytes_in));
    counter(&o, "herd_sent_bytes_total", "Bytes of reply messages sent (all frames).", GET(m->bytes_out));
    counter(&o, "herd_env_steps_total", "World-steps simulated (one world advanced by one env step).",
            GET(m->env_steps));
    gauge(&o, "herd_env_steps_per_second", "World-steps per second over the last rate window.",
          atomic_load_explicit(&m->steps_per_s, memory_order_relaxed));
    counter(&o, "herd_physics_resets_total", "Worlds reset because their physics failed (NaN, inf, runaway).",
            GET(m->physics_resets));
    counter(&o, "herd_solver_iterations_total", "Contact-solver sweeps, summed over physics steps.",
            GET(m->solver_iterations));
    counter(&o, "herd_solver_capped_total", "Physics steps whose contact solver stopped at its iteration cap.",
            GET(m->solver_capped));
    counter(&o, "herd_solver_fallbacks_total",
            "Physics steps whose contact solver's stall detector handed the problem to its fallbacks (a direct Coulomb "
            "solve, then ADMM).",
            GET(m->solver_fallbacks));
    counter(&o, "herd_solver_ccp_answers_total",
            "Physics steps whose contact solve was answered by the cone complementarity problem (ADMM), not Coulomb's "
            "law within the solver's tolerance.",
            GET(m->solver_ccp_answers));
    counter(&o, "herd_joint_limits_active_total",
            "Joint-limit constraints that carried an impulse, summed over physics steps.", GET(m->joint_limits_active));

    head(&o, "herd_worker_busy_seconds_total", "counter", "Time each worker thread spent running jobs.");
    for (int w = 0; w < m->nworkers; w++)
        put(&o, "herd_worker_busy_seconds_total{worker=\"%d\"} %.9f\n", w, (double)GET(m->busy_ns[w]) * 1e-9);
    head(&o, "herd_worker_helped_worlds_total", "counter",
         "Worlds each worker ran from another worker's share of a request while it had none of its own.");
    for (int w = 0; w < m->nworkers; w++)
        put(&o, "herd_worker_helped_worlds_total{worker=\"%d\"} %llu\n", w, (unsigned long long)GET(m->helped[w]));
    gauge(&o, "herd_worker_utilization_ratio", "Busy share of all worker threads over the last rate window (0-1).",
          atomic_load_explicit(&m->utilization, memory_order_relaxed));
    gauge(&o, "herd_queue_depth", "Requests handed to the worker threads and not answered yet (queued, running or deferred).",
          (double)GET(m->queue_depth));
    static const char *const drop_names[SRV_DROP_COUNT] = {"message", "reply", "cancelled"};
    head(&o, "herd_dropped_total", "counter",
         "Messages dropped without a reply: malformed messages, replies over a client's queued-bytes budget, "
         "cancelled work.");
    for (int k = 0; k < SRV_DROP_COUNT; k++)
        put(&o, "herd_dropped_total{what=\"%s\"} %llu\n", drop_names[k], (unsigned long long)GET(m->dropped[k]));
    gauge(&o, "herd_memory_bytes", "Memory of the worlds and of the replies in flight (estimate).",
          (double)GET(m->memory));
    gauge(&o, "herd_memory_limit_bytes", "The memory ceiling (--max-memory).", (double)GET(m->memory_limit));
    gauge(&o, "herd_sessions", "Open sessions.", (double)GET(m->sessions));
    gauge(&o, "herd_worlds", "Worlds allocated to open sessions.", (double)GET(m->worlds));
    gauge(&o, "herd_worlds_limit", "The most worlds this server holds at once.", (double)GET(m->worlds_limit));
    if (m->nkinds > 0) {
        int64_t sum[SRV_METRICS_KINDS], n[SRV_METRICS_KINDS], all_sum = 0, all_n = 0;
        for (int k = 0; k < m->nkinds; k++) {
            sum[k] = atomic_load_explicit(&m->level_sum[k], memory_order_relaxed);
            n[k] = atomic_load_explicit(&m->level_worlds[k], memory_order_relaxed);
            all_sum += sum[k], all_n += n[k];
        }
        head(&o, "herd_terrain_level", "gauge",
             "Mean terrain level (row, 0 = easiest) of the worlds of open terrain-curriculum sessions, by tile kind "
             "(NaN while the kind has none).");
        for (int k = 0; k < m->nkinds; k++) {
            if (n[k] > 0) put(&o, "herd_terrain_level{kind=\"%s\"} %.17g\n", m->kind_names[k], (double)sum[k] / (double)n[k]);
            else put(&o, "herd_terrain_level{kind=\"%s\"} NaN\n", m->kind_names[k]);
        }
        head(&o, "herd_terrain_level_mean", "gauge",
             "Mean terrain level of the worlds of open terrain-curriculum sessions, every kind (NaN while none).");
        if (all_n > 0) put(&o, "herd_terrain_level_mean %.17g\n", (double)all_sum / (double)all_n);
        else put(&o, "herd_terrain_level_mean NaN\n");
        head(&o, "herd_terrain_worlds", "gauge",
             "Worlds of open terrain-curriculum sessions that have a terrain level, by tile kind.");
        for (int k = 0; k < m->nkinds; k++)
            put(&o, "herd_terrain_worlds{kind=\"%s\"} %lld\n", m->kind_names[k], (long long)n[k]);
    }
    return o.len;
}

/* ---- HTTP endpoint ---- */

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    srv_metrics *m = cls;
    struct MHD_Response *r;
    unsigned status;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        static const char msg[] = "only GET /metrics\n";
        r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics")) {
        static const char msg[] = "not found: the metrics are at /metrics\n";
        r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        size_t cap = RENDER_START, need;
        char *buf = NULL;
        for (;;) {
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return MHD_NO;
            }
            buf = nb;
            need = srv_metrics_render(m, buf, cap);
            if (need < cap) break;
            cap = need + 1;
        }
        r = MHD_create_response_from_buffer(need, buf, MHD_RESPMEM_MUST_FREE);
        if (r) MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        status = MHD_HTTP_OK;
    }
    if (!r) return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Splits "HOST:PORT" or "[V6]:PORT" into a socket address. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen)
{
    char host[128];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        snprintf(err, errlen, "metrics address '%.100s' is not HOST:PORT", addr);
        return -1;
    }
    size_t hl = (size_t)(colon - addr);
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
        addr++;
        hl -= 2;
    }
    if (hl >= sizeof host) {
        snprintf(err, errlen, "metrics host too long");
        return -1;
    }
    memcpy(host, addr, hl);
    host[hl] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        snprintf(err, errlen, "metrics port '%.20s' is not in [0, 65535]", colon + 1);
        return -1;
    }
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
    } else {
        snprintf(err, errlen, "metrics host '%.100s' is not an IP address (or localhost)", host);
        return -1;
    }
    return 0;
}

int srv_metrics_listen(srv_metrics *m, const char *addr, int *port_out, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_addr(addr, &ss, &len, err, errlen)) return -1;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;   /* failures are reported through err */
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    m->httpd = MHD_start_daemon(flags, 0, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                MHD_OPTION_END);
    if (!m->httpd) {
        snprintf(err, errlen, "metrics endpoint %.100s: cannot listen (address in use or not local?)", addr);
        return -1;
    }
    if (port_out) {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_BIND_PORT);
        *port_out = di ? di->port : -1;
    }
    return 0;
}

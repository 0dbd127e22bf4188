/* herd-bench server — served throughput and latency of herd-server against in-process stepping.
 *
 *   herd-bench server [--env anymal_c-walk] [--worlds 4096] [--threads T] [--batch B] [--transport tcp|ipc]
 *                     [--steps S] [--repeats R] [--rtt-iters K] [--spin-us U] [--quantum Q]
 *
 * In the same run:
 *  1. in-process: env_new(worlds), T threads with one contiguous slice each, taken in pieces with idle
 *     threads helping as the server's workers do, and a barrier per step (bench_share, as herd-bench env
 *     does), S steps per repeat, pinned to cores and unpinned in turn: the baseline
 *     (inproc_steps_per_s) is the better median of the two;
 *  2. served: a herd server on a thread of this process (T workers, bound to tcp://127.0.0.1:* or an
 *     ipc:// path), one C client: make(worlds), the worlds split into batches of B consecutive worlds,
 *     every batch keeps one step request in flight (a reply is followed at once by that batch's next
 *     step: EnvPool-style pipelining); each batch does S steps per repeat; the client copies obs,
 *     reward and flags out of every reply.  Request latency p50 / p99 over all requests.
 *     Every timed run, in-process or served, starts from the same reset (seeds 1000 + i % 32) and the
 *     same 25 untimed warm-up steps, and uses the same 8 sets of pseudo-random actions in [-1, 1] in
 *     turn: all do exactly the same physics (the envs are deterministic);
 *     And a one-slice run (threads > 1): after the same reset and warm-up, only worlds [0, worlds / T) (the first
 *     worker's slice) are stepped, one request in flight: its rate against the full session's in the same
 *     repeat (one_slice_fraction) is ~1 / T if that worker steps its slice alone, ~1 when idle workers help;
 *  3. round trips, median over K sync requests (one in flight): a 1-world session's step, the same
 *     env_step in-process, and raw ZeroMQ (DEALER -> ROUTER echo thread replying with a message of
 *     the reply's size) for the 1-world and the B-world request / reply sizes.
 * Prints one JSON line (stdout) and a table (stderr); medians over repeats.
 * Step latency against batch size: --worlds B (one batch, one request in flight) for several B.
 *
 *   herd-bench server --memory [--env anymal_c-walk] [--memory-worlds 1,1024,4096,16384,65536] [--threads T]
 *                              [--server-bin PATH]
 *
 * Memory per world, all included: for each N, a fresh herd-server process (the binary next to herd-bench, or
 * --server-bin) on an ipc:// endpoint; its VmRSS (/proc/PID/status) idle, then after make(N worlds) + reset +
 * one step of every world (states, scratch, reply buffers and the I/O path all touched).  Reported per N:
 * (RSS - idle RSS) / N; and the slope between the two largest N (the cost of one more world).
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "env.h"
#include "herd_client.h"
#include "proto.h"
#include "srv_thread.h"

#define WARMUP 25
#define NSETS 8

typedef struct {
    const char *env;
    int worlds, threads, batch, steps, repeats, rtt_iters;
    const char *transport;
} opts;

static float *make_actions(int n, int ad)
{
    float *a = malloc(sizeof(float) * (size_t)NSETS * (size_t)n * (size_t)ad);
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < (size_t)NSETS * (size_t)n * (size_t)ad; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        a[i] = (float)((double)(x >> 11) * 0x1.0p-53 * 2 - 1);
    }
    return a;
}

static uint64_t *bench_seeds(int n)
{
    uint64_t *s = malloc(sizeof *s * (size_t)n);
    for (int i = 0; i < n; i++) s[i] = 1000 + (uint64_t)(i % 32);
    return s;
}

/* ---- 1. in-process ---- */

typedef struct {
    env_t *e;
    int core, steps, od, ad, nt, step0, step;   /* core < 0: not pinned */
    const float *act;
    float *obs, *rew, *ret, *terms;
    uint8_t *term, *trunc, *pr, *done;
    int32_t *len;
    pthread_barrier_t *bar;
    bench_share *share;
    int me;
} ip_worker;

static void ip_piece(int f, int k, void *ctx)
{
    const ip_worker *w = ctx;
    const int N = env_num_worlds(w->e);
    const float *a = w->act + (size_t)((w->step0 + w->step) % NSETS) * (size_t)N * w->ad + (size_t)f * w->ad;
    /* the same info the server asks for */
    env_info info = {.physics_reset = w->pr + f, .episode_done = w->done + f, .episode_return = w->ret + f,
                     .episode_length = w->len + f, .episode_terms = w->terms + (size_t)f * w->nt};
    env_step(w->e, f, k, NULL, a, w->obs + (size_t)f * w->od, w->rew + f, w->term + f, w->trunc + f, &info);
}

static void *ip_work(void *p)
{
    ip_worker *w = p;
    if (w->core >= 0) bench_pin(w->core);
    for (int s = 0; s < w->steps; s++) {
        w->step = s;
        bench_share_step(w->share, w->me, ip_piece, w);
        if (pthread_barrier_wait(w->bar) == PTHREAD_BARRIER_SERIAL_THREAD) bench_share_rewind(w->share);
        pthread_barrier_wait(w->bar);
    }
    return NULL;
}

typedef struct {
    env_t *e;
    int N, od, ad, nt;
    float *obs, *rew, *ret, *terms;
    uint8_t *term, *trunc, *pr, *done;
    int32_t *len;
    uint64_t *seeds;
} ip_ctx;

static void ip_free(ip_ctx *c)
{
    free(c->obs), free(c->rew), free(c->ret), free(c->terms), free(c->term), free(c->trunc), free(c->pr), free(c->done);
    free(c->len), free(c->seeds);
    env_destroy(&c->e);
}

static int ip_init(ip_ctx *c, const opts *o)
{
    char err[256];
    memset(c, 0, sizeof *c);
    c->e = env_new(o->env, o->worlds, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    if (!c->e) {
        fprintf(stderr, "herd-bench server: %s\n", err);
        return -1;
    }
    const env_spec *sp = env_get_spec(c->e);
    int N = c->N = o->worlds;
    c->od = sp->obs_dim, c->ad = sp->act_dim, c->nt = sp->nterms;
    c->obs = malloc(sizeof(float) * (size_t)N * c->od), c->rew = malloc(sizeof(float) * (size_t)N);
    c->ret = malloc(sizeof(float) * (size_t)N), c->terms = malloc(sizeof(float) * (size_t)N * (c->nt ? c->nt : 1));
    c->term = malloc((size_t)N), c->trunc = malloc((size_t)N), c->pr = malloc((size_t)N), c->done = malloc((size_t)N);
    c->len = malloc(sizeof(int32_t) * (size_t)N);
    c->seeds = bench_seeds(N);
    return 0;
}

/* One timed in-process run: reset with the bench seeds, WARMUP untimed steps, then o->steps timed
 * steps, on o->threads threads (pinned or not).  Returns steps/s. */
static double ip_run(ip_ctx *c, const opts *o, const float *act, int pin)
{
    const int N = c->N, T = o->threads;
    double rate = 0;
    env_reset(c->e, 0, N, NULL, c->seeds, c->obs);
    for (int phase = 0; phase < 2; phase++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)T);
        ip_worker *w = calloc((size_t)T, sizeof *w);
        pthread_t *th = calloc((size_t)T, sizeof *th);
        static bench_share share;
        bench_share_init(&share, N, T);
        for (int t = 0; t < T; t++)
            w[t] = (ip_worker){.e = c->e, .core = pin ? t : -1, .steps = phase ? o->steps : WARMUP, .od = c->od,
                               .ad = c->ad, .nt = c->nt, .step0 = phase ? WARMUP : 0, .act = act, .obs = c->obs,
                               .rew = c->rew, .ret = c->ret, .terms = c->terms, .term = c->term, .trunc = c->trunc,
                               .pr = c->pr, .done = c->done, .len = c->len, .bar = &bar, .share = &share, .me = t};
        uint64_t t0 = bench_now_ns();
        for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, ip_work, &w[t]);
        for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
        double dt = (double)(bench_now_ns() - t0) * 1e-9;
        if (phase) rate = (double)N * o->steps / dt;
        pthread_barrier_destroy(&bar);
        free(w);
        free(th);
    }
    return rate;
}

/* The simulation inside a 1-world round trip: median of single env_step calls on one world. */
static double ip_sim1(ip_ctx *c, const opts *o, const float *act)
{
    double *t1 = malloc(sizeof(double) * (size_t)o->rtt_iters);
    for (int k = 0; k < o->rtt_iters; k++) {
        uint64_t t0 = bench_now_ns();
        env_step(c->e, 0, 1, NULL, act + (size_t)(k % NSETS) * c->N * c->ad, c->obs, c->rew, c->term, c->trunc, NULL);
        t1[k] = (double)(bench_now_ns() - t0) * 1e-3;
    }
    double m = bench_median(t1, o->rtt_iters);
    free(t1);
    return m;
}

/* ---- 2. served ---- */

typedef struct {
    int first, n, done;
    uint64_t id;
    uint64_t t_send;
} batch_t;

typedef struct {
    herd_client *c;
    herd_session s;
    int nb;
    batch_t *bt;
    int32_t *ids;
    float *obs, *rew;
    uint8_t *term, *trunc;
    uint64_t *seeds;
    double *lat;
    size_t nlat, kl;
} sv_ctx;

static void sv_free(sv_ctx *v)
{
    herd_error e;
    if (v->c && v->s.id) herd_client_close(v->c, &v->s, &e);
    herd_client_destroy(&v->c);
    free(v->bt), free(v->ids), free(v->obs), free(v->rew), free(v->term), free(v->trunc), free(v->seeds), free(v->lat);
}

static int sv_init(sv_ctx *v, const opts *o, const char *ep)
{
    herd_error e;
    memset(v, 0, sizeof *v);
    v->c = herd_client_new(&ep, 1, 120000, &e);
    if (!v->c || herd_client_make(v->c, 0, o->env, o->worlds, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, &v->s, &e)) {
        fprintf(stderr, "herd-bench server: %s\n", e.message);
        return -1;
    }
    const int N = o->worlds, B = o->batch;
    v->nb = (N + B - 1) / B;
    v->bt = calloc((size_t)v->nb, sizeof *v->bt);
    v->ids = malloc(sizeof(int32_t) * (size_t)N);
    for (int i = 0; i < N; i++) v->ids[i] = i;
    v->obs = malloc(sizeof(float) * (size_t)N * v->s.obs_dim), v->rew = malloc(sizeof(float) * (size_t)N);
    v->term = malloc((size_t)N), v->trunc = malloc((size_t)N);
    v->seeds = bench_seeds(N);
    v->nlat = (size_t)v->nb * o->steps * o->repeats;
    v->lat = malloc(sizeof(double) * v->nlat);
    return 0;
}

/* One timed served run, as ip_run: reset (seeds), WARMUP untimed steps, then every batch does o->steps
 * steps with one request in flight each.  Returns steps/s (0 on error); request latencies are appended.
 * sub > 0: after the same reset and warm-up, only worlds [0, sub) are stepped, as one request in flight (the
 * one-slice run: sub = worlds / threads is exactly the first worker's slice); no latencies. */
static double sv_run(sv_ctx *v, const opts *o, const float *act, int sub)
{
    herd_error e;
    herd_client *c = v->c;
    herd_session *s = &v->s;
    const int N = o->worlds, od = s->obs_dim, ad = s->act_dim, B = sub > 0 ? sub : o->batch, nb = sub > 0 ? 1 : v->nb;
    const int subset = sub > 0 || nb > 1; /* name the worlds (ids) */
    batch_t *bt = v->bt;
    if (herd_client_reset(c, s, -1, NULL, v->seeds, NULL, &e)) goto fail;
    for (int k = 0; k < WARMUP; k++)
        if (herd_client_step(c, s, -1, NULL, act + (size_t)(k % NSETS) * N * ad, 0, NULL, &e)) goto fail;
    uint64_t t0 = bench_now_ns();
    for (int b = 0; b < nb; b++) {
        bt[b] = (batch_t){b * B, (b + 1) * B <= N ? B : N - b * B, 0, 0, 0};
        const float *a = act + (size_t)(WARMUP % NSETS) * N * ad + (size_t)bt[b].first * ad;
        bt[b].t_send = bench_now_ns();
        bt[b].id = herd_client_step_send(c, s, bt[b].n, subset ? v->ids + bt[b].first : NULL, a, 0, &e);
        if (!bt[b].id) goto fail;
    }
    int active = nb;
    while (active) {
        herd_reply *rep;
        if (herd_client_recv(c, -1, &rep, &e)) goto fail;
        uint64_t now = bench_now_ns();
        int b = 0;
        while (b < nb && bt[b].id != rep->id) b++;
        if (b == nb) {
            herd_reply_destroy(&rep);
            continue;
        }
        if (sub <= 0 && v->kl < v->nlat) v->lat[v->kl++] = (double)(now - bt[b].t_send) * 1e-6;
        /* what a trainer does with a reply: copy observations, rewards and flags out */
        herd_step_out out = {.obs = v->obs + (size_t)bt[b].first * od, .reward = v->rew + bt[b].first,
                             .terminated = v->term + bt[b].first, .truncated = v->trunc + bt[b].first};
        int rc = herd_reply_step(rep, s, bt[b].n, &out, &e);
        herd_reply_destroy(&rep);
        if (rc) goto fail;
        if (++bt[b].done == o->steps) {
            active--;
            continue;
        }
        const float *a = act + (size_t)((WARMUP + bt[b].done) % NSETS) * N * ad + (size_t)bt[b].first * ad;
        bt[b].t_send = bench_now_ns();
        bt[b].id = herd_client_step_send(c, s, bt[b].n, subset ? v->ids + bt[b].first : NULL, a, 0, &e);
        if (!bt[b].id) goto fail;
    }
    return (double)(sub > 0 ? sub : N) * o->steps / ((double)(bench_now_ns() - t0) * 1e-9);
fail:
    fprintf(stderr, "herd-bench server: %s\n", e.message);
    return 0;
}

/* ---- 3. round trips ---- */

static double served_rtt_1world(const opts *o, const char *ep, const float *act, int iters)
{
    herd_error e;
    herd_client *c = herd_client_new(&ep, 1, 10000, &e);
    herd_session s;
    if (!c || herd_client_make(c, 0, o->env, 1, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, &s, &e)) {
        herd_client_destroy(&c);
        return NAN;
    }
    uint64_t seed = 1000;
    float obs[256];
    herd_client_reset(c, &s, -1, NULL, &seed, NULL, &e);
    double *t = malloc(sizeof(double) * (size_t)iters);
    herd_step_out out = {.obs = obs};
    for (int k = 0; k < iters + 50; k++) {
        uint64_t t0 = bench_now_ns();
        if (herd_client_step(c, &s, -1, NULL, act + (size_t)(k % NSETS) * o->worlds * s.act_dim, 0, &out, &e)) break;
        if (k >= 50) t[k - 50] = (double)(bench_now_ns() - t0) * 1e-3;
    }
    double m = bench_median(t, iters);
    free(t);
    herd_client_close(c, &s, &e);
    herd_client_destroy(&c);
    return m;
}

typedef struct {
    void *ctx;
    char ep[256];
    size_t reply_size;
    volatile int ready;
} echo_t;

static void *echo_main(void *p)
{
    echo_t *ec = p;
    void *r = zmq_socket(ec->ctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(r, ZMQ_LINGER, &linger, sizeof linger);
    zmq_bind(r, ec->ep);
    size_t el = sizeof ec->ep;
    zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ec->ep, &el);
    char *reply = calloc(1, ec->reply_size ? ec->reply_size : 1);
    __atomic_store_n(&ec->ready, 1, __ATOMIC_RELEASE);
    for (;;) {
        zmq_msg_t id, m;
        zmq_msg_init(&id);
        zmq_msg_init(&m);
        if (zmq_msg_recv(&id, r, 0) < 0) break;
        if (zmq_msg_recv(&m, r, 0) < 0) break;
        int stop = zmq_msg_size(&m) == 1;
        /* the reply is built like the server's: a fresh message of the reply's size */
        zmq_msg_t out;
        zmq_msg_init_size(&out, ec->reply_size);
        memcpy(zmq_msg_data(&out), reply, ec->reply_size);
        zmq_msg_send(&id, r, ZMQ_SNDMORE);
        zmq_msg_send(&out, r, 0);
        zmq_msg_close(&id);
        zmq_msg_close(&m);
        zmq_msg_close(&out);
        if (stop) break;
    }
    free(reply);
    zmq_close(r);
    return NULL;
}

/* Median round trip (us) of a req_size request answered by a reply_size reply. */
static double raw_rtt(const char *transport, size_t req_size, size_t reply_size, int iters)
{
    echo_t ec = {.ctx = zmq_ctx_new(), .reply_size = reply_size};
    if (!strcmp(transport, "ipc")) snprintf(ec.ep, sizeof ec.ep, "ipc:///tmp/herd-bench-echo-%d.sock", (int)getpid());
    else snprintf(ec.ep, sizeof ec.ep, "tcp://127.0.0.1:*");
    pthread_t th;
    pthread_create(&th, NULL, echo_main, &ec);
    while (!__atomic_load_n(&ec.ready, __ATOMIC_ACQUIRE)) usleep(100);
    void *d = zmq_socket(ec.ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(d, ec.ep);
    if (req_size < 2) req_size = 2;
    char *req = calloc(1, req_size);
    double *t = malloc(sizeof(double) * (size_t)iters);
    zmq_msg_t m;
    for (int k = 0; k < iters + 50; k++) {
        uint64_t t0 = bench_now_ns();
        zmq_send(d, req, req_size, 0);
        zmq_msg_init(&m);
        zmq_msg_recv(&m, d, 0);
        zmq_msg_close(&m);
        if (k >= 50) t[k - 50] = (double)(bench_now_ns() - t0) * 1e-3;
    }
    /* stop the echo thread (its reply to this is not awaited: it closes its socket at once) */
    zmq_send(d, "x", 1, 0);
    pthread_join(th, NULL);
    zmq_close(d);
    zmq_ctx_term(ec.ctx);
    if (!strcmp(transport, "ipc")) unlink(ec.ep + 6);
    double med = bench_median(t, iters);
    free(t);
    free(req);
    return med;
}

/* Sizes of a step request and of its reply for n worlds. */
static void message_sizes(const env_spec *sp, int n, int all, size_t *req, size_t *rep)
{
    proto_buf b;
    proto_buf_init(&b);
    proto_request r;
    proto_request_init(&r);
    r.op = PROTO_OP_STEP;
    r.id = 123456;
    r.session = 0x1234567812345678ull;
    r.has_session = 1;
    int32_t *ids = calloc((size_t)n, sizeof *ids);
    if (!all) {
        r.world_ids = ids;
        r.nids = n;
    }
    float *a = calloc((size_t)n * sp->act_dim, sizeof *a);
    r.has_actions = 1;
    r.actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {(uint64_t)n, (uint64_t)sp->act_dim}, (const uint8_t *)a,
                               (size_t)n * sp->act_dim * 4};
    proto_encode_request(&b, &r);
    *req = b.len;
    proto_buf_reset(&b);
    proto_step_layout lay;
    proto_encode_step_reply(&b, 123456, n, sp->obs_dim, sp->nterms, 0, PROTO_STEP_AUTORESET, &lay);
    *rep = b.len;
    proto_buf_free(&b);
    free(ids);
    free(a);
}

static int available_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- memory per world ---- */

/* VmRSS (kB) of process pid, -1 if unreadable. */
static long vm_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    fclose(f);
    return kb;
}

/* herd-server next to this executable. */
static void default_server_bin(char out[PATH_MAX])
{
    char self[PATH_MAX - 16];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) { snprintf(out, PATH_MAX, "build/herd-server"); return; }
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(out, PATH_MAX, "%s/herd-server", self);
}

/* One fresh server with a session of n worlds: idle RSS and RSS after make + reset + one step (kB). */
static int memory_point(const char *bin, const char *env, int n, int threads, long *idle_kb, long *rss_kb)
{
    char ep[128], thr[16], maxw[16];
    snprintf(ep, sizeof ep, "ipc:///tmp/herd-bench-mem-%d.sock", (int)getpid());
    snprintf(thr, sizeof thr, "%d", threads);
    snprintf(maxw, sizeof maxw, "%d", n > 65536 ? n : 65536);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);   /* a bench killed on a timeout takes its server with it */
        execl(bin, bin, "--bind", ep, "--threads", thr, "--log-level", "error", "--stats-interval", "0",
              "--max-worlds-per-session", maxw, (char *)NULL);
        _exit(127);
    }
    int rc = -1;
    herd_error e;
    const char *eps = ep;
    herd_client *c = herd_client_new(&eps, 1, 120000, &e);
    herd_session s;
    memset(&s, 0, sizeof s);
    float *act = NULL, *obs = NULL, *rew = NULL;
    uint8_t *term = NULL, *trunc = NULL;
    int up = 0;
    for (int k = 0; k < 200 && c && !up; k++) {   /* up to ~10 s for the server to bind */
        herd_client_set_timeout(c, 50);
        double t;
        up = herd_client_ping(c, 0, &t, &e) == 0;
    }
    if (!up) { fprintf(stderr, "herd-bench server --memory: %s did not answer on %s\n", bin, ep); goto out; }
    herd_client_set_timeout(c, 600000);
    usleep(200000);
    *idle_kb = vm_rss_kb(pid);
    if (herd_client_make(c, 0, env, n, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, &s, &e)) {
        fprintf(stderr, "herd-bench server --memory: %s\n", e.message);
        goto out;
    }
    act = make_actions(n, s.act_dim);
    obs = malloc(sizeof(float) * (size_t)n * s.obs_dim), rew = malloc(sizeof(float) * (size_t)n);
    term = malloc((size_t)n), trunc = malloc((size_t)n);
    uint64_t *seeds = bench_seeds(n);
    herd_step_out out = {.obs = obs, .reward = rew, .terminated = term, .truncated = trunc};
    int bad = herd_client_reset(c, &s, -1, NULL, seeds, obs, &e) || herd_client_step(c, &s, -1, NULL, act, 0, &out, &e);
    free(seeds);
    if (bad) { fprintf(stderr, "herd-bench server --memory: %s\n", e.message); goto out; }
    *rss_kb = vm_rss_kb(pid);
    rc = *idle_kb > 0 && *rss_kb > 0 ? 0 : -1;
out:
    if (c && s.id) herd_client_close(c, &s, &e);
    herd_client_destroy(&c);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    unlink(ep + 6);
    free(act), free(obs), free(rew), free(term), free(trunc);
    return rc;
}

static int bench_server_memory(int argc, char **argv)
{
    const char *env = bench_arg(argc, argv, "--env", "anymal_c-walk");
    const char *list = bench_arg(argc, argv, "--memory-worlds", "1,1024,4096,16384,65536");
    int threads = atoi(bench_arg(argc, argv, "--threads", "0"));
    if (threads <= 0) threads = available_cores();
    char bin[PATH_MAX];
    default_server_bin(bin);
    const char *given = bench_arg(argc, argv, "--server-bin", NULL);
    if (given) snprintf(bin, sizeof bin, "%s", given);
    int ns[32], np = 0;
    for (const char *c = list; *c && np < 32;) {
        int n = atoi(c);
        if (n < 1) { fprintf(stderr, "herd-bench server --memory: bad --memory-worlds '%s'\n", list); return 2; }
        ns[np++] = n;
        c = strchr(c, ',');
        if (!c) break;
        c++;
    }
    long idle[32], rss[32];
    for (int k = 0; k < np; k++)
        if (memory_point(bin, env, ns[k], threads, &idle[k], &rss[k])) return 1;
    printf("{\"bench\":\"server_memory\",\"env\":\"%s\",\"threads\":%d,\"clock\":\"VmRSS\",\"points\":[", env, threads);
    for (int k = 0; k < np; k++)
        printf("%s{\"worlds\":%d,\"idle_rss_kb\":%ld,\"rss_kb\":%ld,\"bytes_per_world\":%.1f}", k ? "," : "", ns[k], idle[k],
               rss[k], 1024.0 * (double)(rss[k] - idle[k]) / ns[k]);
    double slope = NAN;
    int a = -1, b = -1;                         /* the two largest N */
    for (int k = 0; k < np; k++)
        if (b < 0 || ns[k] > ns[b]) a = b, b = k;
        else if (a < 0 || ns[k] > ns[a]) a = k;
    if (a >= 0 && ns[a] != ns[b]) slope = 1024.0 * (double)(rss[b] - rss[a]) / (ns[b] - ns[a]);
    printf("],\"bytes_per_world\":%.1f,\"bytes_per_world_slope\":%.1f,\"cpu\":\"%s\"}\n",
           1024.0 * (double)(rss[b] - idle[b]) / ns[b], slope, bench_cpu());
    fflush(stdout);
    fprintf(stderr, "server memory: %s, %d threads, herd-server VmRSS idle and with one session after reset + 1 step\n", env,
            threads);
    for (int k = 0; k < np; k++)
        fprintf(stderr, "  %6d worlds: idle %7ld kB, session %8ld kB, %8.0f B per world\n", ns[k], idle[k], rss[k],
                1024.0 * (double)(rss[k] - idle[k]) / ns[k]);
    if (a >= 0) fprintf(stderr, "  one more world (slope %d -> %d): %.0f B\n", ns[a], ns[b], slope);
    return 0;
}

int bench_server(int argc, char **argv)
{
    if (bench_flag(argc, argv, "--memory")) return bench_server_memory(argc, argv);
    opts o;
    o.env = bench_arg(argc, argv, "--env", "anymal_c-walk");
    o.worlds = atoi(bench_arg(argc, argv, "--worlds", "4096"));
    o.threads = atoi(bench_arg(argc, argv, "--threads", "0"));
    o.batch = atoi(bench_arg(argc, argv, "--batch", "0"));
    o.transport = bench_arg(argc, argv, "--transport", "tcp");
    o.steps = atoi(bench_arg(argc, argv, "--steps", "0"));
    o.repeats = atoi(bench_arg(argc, argv, "--repeats", "3"));
    o.rtt_iters = atoi(bench_arg(argc, argv, "--rtt-iters", "1000"));
    if (o.threads <= 0) o.threads = available_cores();
    if (o.batch <= 0 || o.batch > o.worlds) o.batch = o.worlds;
    if (o.steps <= 0) o.steps = o.worlds >= 2048 ? 20 : o.worlds >= 256 ? 100 : 400;
    int idx = env_registry_find(o.env);
    if (o.worlds < 1 || o.repeats < 1 || o.rtt_iters < 10 || idx < 0 || o.threads > BENCH_MAX_THREADS ||
        (strcmp(o.transport, "tcp") && strcmp(o.transport, "ipc"))) {
        fprintf(stderr, "herd-bench server: need a registered --env, --worlds >= 1, --threads <= %d, --repeats >= 1, "
                        "--rtt-iters >= 10, --transport tcp|ipc\n", BENCH_MAX_THREADS);
        return 2;
    }
    const env_spec *sp = env_registry_spec(idx);
    float *act = make_actions(o.worlds, sp->act_dim);

    ip_ctx ipc;
    if (ip_init(&ipc, &o)) return 1;

    srv_config cfg;
    srv_config_defaults(&cfg);
    if (!strcmp(o.transport, "ipc")) snprintf(cfg.bind, sizeof cfg.bind, "ipc:///tmp/herd-bench-%d.sock", (int)getpid());
    else snprintf(cfg.bind, sizeof cfg.bind, "tcp://127.0.0.1:*");
    cfg.threads = o.threads;
    cfg.spin_us = atoi(bench_arg(argc, argv, "--spin-us", "250"));
    cfg.quantum = atoi(bench_arg(argc, argv, "--quantum", "16"));
    cfg.log_level = SRV_LOG_WARN;
    cfg.stats_interval_s = 0;
    if (cfg.max_worlds_per_session < o.worlds + 1) cfg.max_worlds_per_session = o.worlds + 1;
    if (cfg.max_worlds < o.worlds + 1) cfg.max_worlds = o.worlds + 1;
    char err[256];
    srv_thread *t = srv_thread_start(&cfg, err, sizeof err);
    if (!t) {
        fprintf(stderr, "herd-bench server: %s\n", err);
        ip_free(&ipc);
        return 1;
    }
    char ep[256];
    snprintf(ep, sizeof ep, "%s", srv_thread_endpoint(t));
    sv_ctx svc;
    int rc = sv_init(&svc, &o, ep);
    /* in-process pinned, in-process unpinned and served runs alternate (in rotating order), so that a
     * drift of the machine's load does not favour one of them; medians over the repeats */
    double *r_pin = calloc((size_t)o.repeats, sizeof(double)), *r_free = calloc((size_t)o.repeats, sizeof(double));
    double *r_sv = calloc((size_t)o.repeats, sizeof(double)), *r_one = calloc((size_t)o.repeats, sizeof(double));
    const int one = o.threads > 1 && o.worlds >= o.threads; /* the one-slice run (see sv_run) */
    for (int r = 0; r < o.repeats && !rc; r++) {
        for (int k = 0; k < 4 && !rc; k++) {
            int which = (r + k) % 4;
            if (which == 0) r_pin[r] = ip_run(&ipc, &o, act, 1);
            else if (which == 1) r_free[r] = ip_run(&ipc, &o, act, 0);
            else if (which == 2) rc = (r_sv[r] = sv_run(&svc, &o, act, 0)) <= 0 ? -1 : 0;
            else if (one) rc = (r_one[r] = sv_run(&svc, &o, act, o.worlds / o.threads)) <= 0 ? -1 : 0;
        }
    }
    /* one-slice rate / full-session rate, per repeat (both served, same repeat) */
    double *r_onefrac = calloc((size_t)o.repeats, sizeof(double));
    for (int r = 0; r < o.repeats; r++) r_onefrac[r] = r_sv[r] > 0 ? r_one[r] / r_sv[r] : 0;
    double one_rate = one ? bench_median(r_one, o.repeats) : NAN, one_frac = one ? bench_median(r_onefrac, o.repeats) : NAN;
    double ip_pin = bench_median(r_pin, o.repeats), ip_free_ = bench_median(r_free, o.repeats);
    double ip = ip_pin > ip_free_ ? ip_pin : ip_free_;
    double rate = bench_median(r_sv, o.repeats);
    double p50 = rc ? NAN : bench_percentile(svc.lat, (int)svc.kl, 50), p99 = rc ? NAN : bench_percentile(svc.lat, (int)svc.kl, 99);
    sv_free(&svc);
    double sim1 = ip_sim1(&ipc, &o, act);
    ip_free(&ipc);
    double rtt1 = rc ? NAN : served_rtt_1world(&o, ep, act, o.rtt_iters);
    srv_thread_stop(&t);
    if (!strcmp(o.transport, "ipc")) unlink(cfg.bind + 6);
    if (rc) {
        free(r_pin), free(r_free), free(r_sv), free(r_one), free(r_onefrac);
        return 1;
    }

    size_t req1, rep1, reqb, repb;
    message_sizes(sp, 1, 1, &req1, &rep1);
    message_sizes(sp, o.batch, o.batch == o.worlds, &reqb, &repb);
    double raw1 = raw_rtt(o.transport, req1, rep1, o.rtt_iters);
    int biters = o.rtt_iters / 10 > 20 ? o.rtt_iters / 10 : 20;
    double rawb = raw_rtt(o.transport, reqb, repb, biters);

    printf("{\"bench\":\"server\",\"env\":\"%s\",\"worlds\":%d,\"threads\":%d,\"batch\":%d,\"transport\":\"%s\","
           "\"steps\":%d,\"repeats\":%d,\"spin_us\":%d,\"quantum\":%d,\"steps_per_s\":%.1f,\"inproc_steps_per_s\":%.1f,\"served_fraction\":%.4f,"
           "\"inproc_pinned_steps_per_s\":%.1f,\"inproc_unpinned_steps_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"rtt_1world_us\":%.1f,\"sim_1world_us\":%.1f,"
           "\"raw_zmq_rtt_us\":{\"1world\":%.1f,\"batch\":%.1f},\"raw_zmq_rtt_us_1world\":%.1f,"
           "\"raw_zmq_rtt_us_batch\":%.1f,\"rtt_1world_ratio\":%.3f,\"rtt_1world_ratio_excl_sim\":%.3f,"
           "\"msg_bytes\":{\"req_1world\":%zu,\"reply_1world\":%zu,\"req_batch\":%zu,\"reply_batch\":%zu}",
           o.env, o.worlds, o.threads, o.batch, o.transport, o.steps, o.repeats, cfg.spin_us, cfg.quantum, rate, ip, rate / ip, ip_pin, ip_free_, p50, p99, rtt1, sim1,
           raw1, rawb, raw1, rawb, rtt1 / raw1, (rtt1 - sim1) / raw1, req1, rep1, reqb, repb);
    const double *reps[3] = {r_sv, r_pin, r_free};
    const char *rn[3] = {"steps_per_s_reps", "inproc_pinned_steps_per_s_reps", "inproc_unpinned_steps_per_s_reps"};
    for (int k = 0; k < 3; k++) {
        printf(",\"%s\":[", rn[k]);
        for (int r = 0; r < o.repeats; r++) printf("%s%.1f", r ? "," : "", reps[k][r]);
        printf("]");
    }
    if (one) {
        /* the one-slice run: worlds [0, worlds / threads), the first worker's slice, stepped alone; ~1 / threads
         * of the full rate if that worker stepped them alone, ~1 when the others help (srv_pool.h) */
        printf(",\"one_slice_worlds\":%d,\"one_slice_steps_per_s\":%.1f,\"one_slice_fraction\":%.4f,"
               "\"one_slice_fraction_reps\":[", o.worlds / o.threads, one_rate, one_frac);
        for (int r = 0; r < o.repeats; r++) printf("%s%.4f", r ? "," : "", r_onefrac[r]);
        printf("]");
    }
    printf(",\"cpu\":\"%s\"}\n", bench_cpu());
    fflush(stdout);
    fprintf(stderr, "server bench: %s, %d worlds, %d threads, batch %d, %s (cpu: %s)\n", o.env, o.worlds, o.threads,
            o.batch, o.transport, bench_cpu());
    fprintf(stderr, "  served      %10.0f steps/s  (%.1f %% of in-process %.0f)  latency p50 %.2f ms, p99 %.2f ms\n", rate,
            100 * rate / ip, ip, p50, p99);
    fprintf(stderr, "  1 world     round trip %.1f us = %.2f x raw ZeroMQ %.1f us (%zu / %zu B); env_step alone %.1f us; "
                    "without it %.2f x\n", rtt1, rtt1 / raw1, raw1, req1, rep1, sim1, (rtt1 - sim1) / raw1);
    fprintf(stderr, "  batch %-5d raw ZeroMQ round trip %.1f us (%zu / %zu B)\n", o.batch, rawb, reqb, repb);
    if (one)
        fprintf(stderr, "  one slice   %10.0f steps/s stepping worlds 0-%d alone (one worker's slice): %.2f of the full "
                        "session's rate\n", one_rate, o.worlds / o.threads - 1, one_frac);
    free(r_pin), free(r_free), free(r_sv), free(r_one), free(r_onefrac);
    free(act);
    return 0;
}

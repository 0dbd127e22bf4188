/* herd-ping — health probe for herd-server: sends one protocol `ping` (protocol/PROTOCOL.md §6.7) over a
 * ZeroMQ DEALER and exits 0 when the server answers {"ok": true, "pong": true} in time.
 *
 *     herd-ping [ENDPOINT] [--timeout MS] [--wait SECONDS] [--quiet]
 *
 * ENDPOINT defaults to $HERD_PING_ENDPOINT, else to the endpoint the server binds by $HERD_BIND with a
 * wildcard host turned into loopback (tcp://0.0.0.0:5555 and tcp:// * :5555 -> tcp://127.0.0.1:5555,
 * tcp://[::]:5555 -> tcp://[::1]:5555), else tcp://127.0.0.1:5555.  So in the container image, where
 * HERD_BIND configures the server, the probe follows it without arguments (Docker HEALTHCHECK, Kubernetes
 * exec probes).
 *
 *   --timeout MS    longest wait for the reply to one ping (default 2000)
 *   --wait S        retry (every 100 ms) until a ping succeeds or S seconds have passed (startup scripts)
 *   --quiet         print nothing on success
 *
 * CURVE (a server started with keys, PROTOCOL.md section 1): the probe reads the server's own secret key
 * from the server's variables, HERD_CURVE_SECRET_KEY_FILE (a key file written by herd-server --keygen)
 * or HERD_CURVE_SECRET_KEY, and connects with the server's key pair, which the server always admits; so
 * in the container it needs no setting of its own.  Elsewhere HERD_CURVE_SERVER_KEY and
 * HERD_CURVE_CLIENT_SECRET_KEY (Z85 keys) make it an ordinary authorized client.
 *
 * Exit status: 0 healthy; 1 no reply in time, an error reply or a reply that is not a pong; 2 usage.
 * The probe is deliberately independent of libherd: only libzmq and msgpack-c, one request, no state.
 * Build: cc -O2 -std=c11 deploy/herd_ping.c -o build/herd-ping -lzmq -lmsgpackc */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The endpoint a local client reaches a server bound to `bind` at: wildcard hosts become loopback. */
static void endpoint_from_bind(const char *bind, char *out, size_t outlen)
{
    static const struct {
        const char *from, *to;
    } wild[] = {{"tcp://0.0.0.0:", "tcp://127.0.0.1:"}, {"tcp://*:", "tcp://127.0.0.1:"},
                {"tcp://[::]:", "tcp://[::1]:"}, {"tcp://[*]:", "tcp://[::1]:"}};
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
        size_t n = strlen(wild[i].from);
        if (!strncmp(bind, wild[i].from, n)) {
            snprintf(out, outlen, "%s%s", wild[i].to, bind + n);
            return;
        }
    }
    snprintf(out, outlen, "%s", bind);
}

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
    if (m->type != MSGPACK_OBJECT_MAP) return NULL;
    size_t klen = strlen(key);
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == klen && !memcmp(k->via.str.ptr, key, klen))
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

/* CURVE keys of the probe (Z85, 40 characters each), all empty for plain mode. */
static char g_server_pub[41], g_pub[41], g_sec[41];

/* The secret key of a key file: its `secret-key = "..."` line, else a bare 40-character line. */
static int secret_from_file(const char *path, char out[41])
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, "\r\n");
        p[n] = 0;
        const char *q1 = !strncmp(p, "secret-key", 10) ? strchr(p, '"') : NULL;
        if (q1 && strlen(q1) >= 42 && q1[41] == '"') {
            memcpy(out, q1 + 1, 40);
            found = 1;
        } else if (n == 40 && !strchr(p, ' ')) {
            memcpy(out, p, 40);
            found = 1;
        }
    }
    fclose(f);
    out[40] = 0;
    return found ? 0 : -1;
}

/* Fills the g_* keys from the environment (see the header).  0, or -1 with a message in why. */
static int load_keys(char *why, size_t whylen)
{
    const char *file = getenv("HERD_CURVE_SECRET_KEY_FILE"), *key = getenv("HERD_CURVE_SECRET_KEY");
    const char *server = getenv("HERD_CURVE_SERVER_KEY"), *client = getenv("HERD_CURVE_CLIENT_SECRET_KEY");
    if (file && *file) {
        if (secret_from_file(file, g_sec)) return snprintf(why, whylen, "no secret key in %s", file), -1;
    } else if (key && *key) {
        snprintf(g_sec, sizeof g_sec, "%s", key);
    } else if (server && *server && client && *client) {
        snprintf(g_server_pub, sizeof g_server_pub, "%s", server);
        snprintf(g_sec, sizeof g_sec, "%s", client);
    } else {
        return 0;                /* plain */
    }
    if (strlen(g_sec) != 40 || zmq_curve_public(g_pub, g_sec)) return snprintf(why, whylen, "bad CURVE secret key"), -1;
    if (!g_server_pub[0]) memcpy(g_server_pub, g_pub, sizeof g_pub);     /* the server's own pair */
    return 0;
}

static int is_true(const msgpack_object *o) { return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean; }

/* One ping on a fresh socket.  0 = pong; 1 = failure, with a message in why. */
static int ping_once(void *ctx, const char *ep, int timeout_ms, uint64_t id, double *server_time, char *why,
                     size_t whylen)
{
    int rc = 1;
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    if (!s) {
        snprintf(why, whylen, "zmq_socket: %s", zmq_strerror(zmq_errno()));
        return 1;
    }
    int zero = 0, one = 1;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one);
    if (g_sec[0] && (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, g_server_pub, 40) ||
                     zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, g_pub, 40) || zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, g_sec, 40))) {
        snprintf(why, whylen, "cannot set the CURVE keys: %s", zmq_strerror(zmq_errno()));
        zmq_close(s);
        return 1;
    }
    if (zmq_connect(s, ep)) {
        snprintf(why, whylen, "cannot connect to %s: %s", ep, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return 1;
    }

    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "v", 1);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_str_with_body(&pk, "id", 2);
    msgpack_pack_uint64(&pk, id);
    msgpack_pack_str_with_body(&pk, "op", 2);
    msgpack_pack_str_with_body(&pk, "ping", 4);
    int sent = zmq_send(s, sb.data, sb.size, ZMQ_DONTWAIT);
    msgpack_sbuffer_destroy(&sb);
    /* DONTWAIT: with no connection yet ZeroMQ queues the message (DEALER), EAGAIN only if the queue is full */
    if (sent < 0) {
        snprintf(why, whylen, "cannot send to %s: %s", ep, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return 1;
    }

    double deadline = now_s() + timeout_ms * 1e-3;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            snprintf(why, whylen, "no reply from %s within %d ms", ep, timeout_ms);
            break;
        }
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(&it, 1, (long)(left * 1e3) + 1);
        if (n < 0) {
            if (zmq_errno() == EINTR) continue;
            snprintf(why, whylen, "zmq_poll: %s", zmq_strerror(zmq_errno()));
            break;
        }
        if (n == 0) continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        int more = zmq_msg_more(&m);
        if (more) { /* envelope frames: a DEALER normally gets none; keep the last frame */
            zmq_msg_close(&m);
            continue;
        }
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t off = 0;
        int ur = msgpack_unpack_next(&u, zmq_msg_data(&m), zmq_msg_size(&m), &off);
        const msgpack_object *root = &u.data;
        const msgpack_object *rid = ur == MSGPACK_UNPACK_SUCCESS ? map_get(root, "id") : NULL;
        if (ur != MSGPACK_UNPACK_SUCCESS || root->type != MSGPACK_OBJECT_MAP) {
            snprintf(why, whylen, "%s sent a reply that is not a MessagePack map", ep);
        } else if (!rid || rid->type != MSGPACK_OBJECT_POSITIVE_INTEGER || rid->via.u64 != id) {
            /* not ours (cannot happen on a fresh socket, but be strict about it): keep waiting */
            msgpack_unpacked_destroy(&u);
            zmq_msg_close(&m);
            continue;
        } else if (!is_true(map_get(root, "ok"))) {
            const msgpack_object *e = map_get(root, "error");
            const msgpack_object *code = e ? map_get(e, "code") : NULL, *msg = e ? map_get(e, "message") : NULL;
            snprintf(why, whylen, "%s answered ping with an error: %.*s: %.*s", ep,
                     code && code->type == MSGPACK_OBJECT_STR ? (int)code->via.str.size : 1,
                     code && code->type == MSGPACK_OBJECT_STR ? code->via.str.ptr : "?",
                     msg && msg->type == MSGPACK_OBJECT_STR ? (int)msg->via.str.size : 0,
                     msg && msg->type == MSGPACK_OBJECT_STR ? msg->via.str.ptr : "");
        } else if (!is_true(map_get(root, "pong"))) {
            snprintf(why, whylen, "%s answered ping without \"pong\": true", ep);
        } else {
            const msgpack_object *t = map_get(root, "time");
            *server_time = t && (t->type == MSGPACK_OBJECT_FLOAT64 || t->type == MSGPACK_OBJECT_FLOAT32) ? t->via.f64
                                                                                                          : 0;
            rc = 0;
        }
        msgpack_unpacked_destroy(&u);
        zmq_msg_close(&m);
        break;
    }
    zmq_close(s);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: herd-ping [ENDPOINT] [--timeout MS] [--wait SECONDS] [--quiet]\n"
               "Sends a protocol ping to herd-server; exit 0 when it answers.  ENDPOINT defaults to\n"
               "$HERD_PING_ENDPOINT, else $HERD_BIND with a 0.0.0.0 / * host made loopback, else tcp://127.0.0.1:5555.\n");
}

int main(int argc, char **argv)
{
    const char *ep_arg = NULL;
    int timeout_ms = 2000, quiet = 0;
    double wait_s = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--timeout") && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 3600000) goto bad;
            timeout_ms = (int)v;
        } else if (!strcmp(a, "--wait") && i + 1 < argc) {
            wait_s = strtod(argv[++i], &end);
            if (*end || !(wait_s >= 0 && wait_s <= 86400)) goto bad;
        } else if (a[0] != '-' && !ep_arg) {
            ep_arg = a;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "herd-ping: bad argument '%s'\n", a);
        usage(stderr);
        return 2;
    }

    char ep[512];
    const char *env_ep = getenv("HERD_PING_ENDPOINT"), *env_bind = getenv("HERD_BIND");
    if (ep_arg) snprintf(ep, sizeof ep, "%s", ep_arg);
    else if (env_ep && *env_ep) snprintf(ep, sizeof ep, "%s", env_ep);
    else if (env_bind && *env_bind) endpoint_from_bind(env_bind, ep, sizeof ep);
    else snprintf(ep, sizeof ep, "tcp://127.0.0.1:5555");

    char why[1024] = "";
    if (load_keys(why, sizeof why)) {
        fprintf(stderr, "herd-ping: %s\n", why);
        return 2;
    }
    void *ctx = zmq_ctx_new();
    if (!ctx) {
        fprintf(stderr, "herd-ping: zmq_ctx_new: %s\n", zmq_strerror(zmq_errno()));
        return 1;
    }
    /* ids: any value >= 1; vary it so that a stray reply of an earlier probe is never taken for ours */
    uint64_t id = ((uint64_t)getpid() << 20 ^ (uint64_t)time(NULL)) | 1;
    double t_end = now_s() + wait_s, server_time = 0;
    int rc;
    for (;;) {
        double t0 = now_s();
        rc = ping_once(ctx, ep, timeout_ms, id++, &server_time, why, sizeof why);
        if (rc == 0) {
            if (!quiet) printf("herd-ping: %s ok, %.2f ms (server time %.3f)\n", ep, (now_s() - t0) * 1e3, server_time);
            break;
        }
        if (now_s() + 0.1 >= t_end) break;
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    if (rc) fprintf(stderr, "herd-ping: %s\n", why);
    zmq_ctx_term(ctx);
    return rc ? 1 : 0;
}

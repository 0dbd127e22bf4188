/* srv_auth.c — CURVE keys and the ZAP handler.  See srv_auth.h.
 *
 * The ZAP protocol (ZeroMQ RFC 27): for every handshake libzmq sends the handler, on
 * inproc://zeromq.zap.01, a request [version "1.0", request id, domain, address, routing id, mechanism,
 * credentials...] and waits for [version, request id, status code, status text, user id, metadata].
 * For CURVE the one credential is the client's 32-byte public key. */
#include "srv_auth.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "srv_log.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN "herd"
#define KEY_FILE_MAX (1 << 20)          /* larger key files are refused */
#define MAX_KEYS 65536

struct srv_auth {
    int enabled;
    int log_level;
    uint8_t secret[32], pub[32];
    char pub_z85[SRV_Z85_KEY];
    uint8_t (*keys)[32];                /* authorized client keys */
    int nkeys, capkeys;
    int nclients;                       /* of them from the authorized keys (the rest: the server's own) */
    void *zap;                          /* REP socket, the handler thread's */
    int stopfd;
    pthread_t thread;
    int running;
    atomic_ullong refused;
    double last_log;
};

/* ------------------------------------------------------------------------------------------------ */
/* key files */

static char *read_small_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open key file %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(KEY_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, KEY_FILE_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > KEY_FILE_MAX) {
        snprintf(err, errlen, "cannot read key file %s (%s)", path, !buf ? "out of memory" : bad ? "read error" : "too large");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

/* Decodes a 40-character Z85 key at s (not necessarily terminated) into out. */
static int z85_key(const char *s, size_t n, uint8_t out[32])
{
    char tmp[SRV_Z85_KEY];
    if (n != SRV_Z85_KEY - 1) return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return zmq_z85_decode(out, tmp) ? 0 : -1;
}

typedef enum { BARE_IS_PUBLIC, BARE_IS_SECRET } bare_kind;

/* Calls fn(arg, pub_or_NULL, secret_or_NULL) for every key in text: `public-key = "..."`,
 * `secret-key = "..."` lines and bare 40-character Z85 lines (public or secret per bare).  Other lines
 * whose first non-blank character is '#' are comments (a Z85 key may itself start with '#').  Returns the number of keys, or -1 at a bad one. */
static int scan_keys(char *text, bare_kind bare, int (*fn)(void *arg, const uint8_t *pub, const uint8_t *sec),
                     void *arg, const char *path, char *err, size_t errlen)
{
    int count = 0, line = 0;
    for (char *p = text, *next; p && *p; p = next) {
        next = strchr(p, '\n');
        if (next) *next++ = 0;
        line++;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) p[--n] = 0;
        if (!n) continue;
        uint8_t k[32];
        int is_pub = 0, is_sec = 0;
        if (!z85_key(p, n, k)) {         /* a bare key (Z85 has '#', ' ' does not occur in it) */
            is_pub = bare == BARE_IS_PUBLIC;
            is_sec = !is_pub;
        } else if (*p == '#') {
            continue;
        } else if ((is_pub = !strncmp(p, "public-key", 10)) || (is_sec = !strncmp(p, "secret-key", 10))) {
            const char *q1 = strchr(p, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
            if (!q2 || z85_key(q1 + 1, (size_t)(q2 - q1 - 1), k)) goto bad;
        } else {
            continue;            /* "curve", "metadata", its entries */
        }
        if (fn(arg, is_pub ? k : NULL, is_sec ? k : NULL)) {
            snprintf(err, errlen, "%s: too many keys", path);
            return -1;
        }
        count++;
        continue;
    bad:
        snprintf(err, errlen, "%s line %d: not a 40-character Z85 CURVE key", path, line);
        return -1;
    }
    return count;
}

typedef struct {
    uint8_t pub[32], sec[32];
    int has_pub, has_sec;
} one_pair;

static int take_pair(void *arg, const uint8_t *pub, const uint8_t *sec)
{
    one_pair *o = arg;
    if (pub) memcpy(o->pub, pub, 32), o->has_pub = 1;
    if (sec) memcpy(o->sec, sec, 32), o->has_sec = 1;
    return 0;
}

int srv_auth_read_key_file(const char *path, uint8_t pub[32], uint8_t secret[32], int *has_secret, char *err,
                           size_t errlen)
{
    char *text = read_small_file(path, err, errlen);
    if (!text) return -1;
    one_pair o = {0};
    int n = scan_keys(text, secret ? BARE_IS_SECRET : BARE_IS_PUBLIC, take_pair, &o, path, err, errlen);
    free(text);
    if (n < 0) return -1;
    if (o.has_sec && !o.has_pub) {
        char zs[SRV_Z85_KEY], zp[SRV_Z85_KEY];
        zmq_z85_encode(zs, o.sec, 32);
        if (zmq_curve_public(zp, zs) || z85_key(zp, strlen(zp), o.pub)) {
            snprintf(err, errlen, "%s: cannot derive the public key (libzmq without CURVE?)", path);
            return -1;
        }
        o.has_pub = 1;
    }
    if (!o.has_pub) {
        snprintf(err, errlen, "%s holds no CURVE key", path);
        return -1;
    }
    memcpy(pub, o.pub, 32);
    if (secret && o.has_sec) memcpy(secret, o.sec, 32);
    if (has_secret) *has_secret = o.has_sec && secret;
    return 0;
}

static int add_key(void *arg, const uint8_t *pub, const uint8_t *sec)
{
    srv_auth *a = arg;
    if (!pub) return 0;                  /* a secret key alone in an authorized-keys file: not a client's */
    for (int i = 0; i < a->nkeys; i++)
        if (!memcmp(a->keys[i], pub, 32)) return 0;
    if (a->nkeys == a->capkeys) {
        if (a->capkeys >= MAX_KEYS) return -1;
        int cap = a->capkeys ? 2 * a->capkeys : 16;
        void *k = realloc(a->keys, (size_t)cap * sizeof *a->keys);
        if (!k) return -1;
        a->keys = k;
        a->capkeys = cap;
    }
    memcpy(a->keys[a->nkeys++], pub, 32);
    return 0;
}

static int load_authorized_file(srv_auth *a, const char *path, char *err, size_t errlen)
{
    char *text = read_small_file(path, err, errlen);
    if (!text) return -1;
    int n = scan_keys(text, BARE_IS_PUBLIC, add_key, a, path, err, errlen);
    free(text);
    return n < 0 ? -1 : 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

static int load_authorized(srv_auth *a, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st)) {
        snprintf(err, errlen, "authorized keys %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return load_authorized_file(a, path, err, errlen);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "authorized keys %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !(ends_with(e->d_name, ".pub") || ends_with(e->d_name, ".key"))) continue;
        char file[SRV_PATH_MAX + 256];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (stat(file, &st) || !S_ISREG(st.st_mode)) continue;
        rc = load_authorized_file(a, file, err, errlen);
    }
    closedir(d);
    return rc;
}

/* ------------------------------------------------------------------------------------------------ */
/* the ZAP handler */

static int authorized(const srv_auth *a, const uint8_t *key)
{
    for (int i = 0; i < a->nkeys; i++)
        if (!memcmp(a->keys[i], key, 32)) return 1;
    return 0;
}

/* Answers one ZAP request (all its frames are read). */
static void zap_one(srv_auth *a)
{
    enum { NF = 7 };
    zmq_msg_t f[NF];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, a->zap, 0) < 0) {
            zmq_msg_close(&m);
            for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
            return;
        }
        more = zmq_msg_more(&m);
        if (n < NF) f[n++] = m;
        else zmq_msg_close(&m);
    }
    int ok = 0;
    char user[SRV_Z85_KEY] = "", addr[64] = "?";
    if (n >= 7 && zmq_msg_size(&f[0]) == 3 && !memcmp(zmq_msg_data(&f[0]), "1.0", 3) &&
        zmq_msg_size(&f[5]) == 5 && !memcmp(zmq_msg_data(&f[5]), "CURVE", 5) && zmq_msg_size(&f[6]) == 32) {
        ok = authorized(a, zmq_msg_data(&f[6]));
        zmq_z85_encode(user, zmq_msg_data(&f[6]), 32);
    }
    if (n >= 4) snprintf(addr, sizeof addr, "%.*s", (int)(zmq_msg_size(&f[3]) < 60 ? zmq_msg_size(&f[3]) : 60),
                         (const char *)zmq_msg_data(&f[3]));
    if (!ok) {
        atomic_fetch_add(&a->refused, 1);
        double t = srv_now_s();
        if (t - a->last_log >= 1.0) {      /* at most one line a second */
            a->last_log = t;
            srv_log(a->log_level, SRV_LOG_WARN, "refused a connection from %s: %s (%llu refused so far)", addr,
                    user[0] ? "client key not authorized" : "not a CURVE handshake",
                    (unsigned long long)atomic_load(&a->refused));
        }
        user[0] = 0;
    } else {
        srv_log(a->log_level, SRV_LOG_DEBUG, "admitted client key %s from %s", user, addr);
    }
    const char *status = ok ? "200" : "400", *text = ok ? "OK" : "client key not authorized";
    const void *rid = n >= 2 ? zmq_msg_data(&f[1]) : "";
    size_t ridlen = n >= 2 ? zmq_msg_size(&f[1]) : 0;
    zmq_send(a->zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(a->zap, rid, ridlen, ZMQ_SNDMORE);
    zmq_send(a->zap, status, 3, ZMQ_SNDMORE);
    zmq_send(a->zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(a->zap, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(a->zap, "", 0, 0);
    for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

static void *zap_main(void *arg)
{
    srv_auth *a = arg;
    for (;;) {
        zmq_pollitem_t items[2] = {{a->zap, 0, ZMQ_POLLIN, 0}, {NULL, a->stopfd, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, -1) < 0) {
            if (zmq_errno() == EINTR) continue;
            break;
        }
        if (items[1].revents & ZMQ_POLLIN) break;
        if (items[0].revents & ZMQ_POLLIN) zap_one(a);
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------------ */
/* the object */

static int load_server_keys(srv_auth *a, const srv_config *c, char *err, size_t errlen)
{
    int has_secret = 0;
    if (c->curve_secret_key[0]) {
        if (z85_key(c->curve_secret_key, strlen(c->curve_secret_key), a->secret)) {
            snprintf(err, errlen, "the secret key (HERD_CURVE_SECRET_KEY) is not a 40-character Z85 key");
            return -1;
        }
        char zp[SRV_Z85_KEY];
        if (zmq_curve_public(zp, c->curve_secret_key) || z85_key(zp, strlen(zp), a->pub)) {
            snprintf(err, errlen, "cannot derive the server's public key");
            return -1;
        }
    } else if (srv_auth_read_key_file(c->curve_secret_key_file, a->pub, a->secret, &has_secret, err, errlen)) {
        return -1;
    } else if (!has_secret) {
        snprintf(err, errlen, "%s holds no secret key (it looks like a public key file)", c->curve_secret_key_file);
        return -1;
    }
    if (c->curve_public_key_file[0]) {
        uint8_t check[32];
        if (srv_auth_read_key_file(c->curve_public_key_file, check, NULL, NULL, err, errlen)) return -1;
        if (memcmp(check, a->pub, 32)) {
            snprintf(err, errlen, "%s does not match the server's secret key", c->curve_public_key_file);
            return -1;
        }
    }
    zmq_z85_encode(a->pub_z85, a->pub, 32);
    return 0;
}

srv_auth *srv_auth_new(void *ctx, const srv_config *c, char *err, size_t errlen)
{
    srv_auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->stopfd = -1;
    a->log_level = c->log_level;
    atomic_init(&a->refused, 0);
    if (!srv_config_curve(c)) return a;
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "this libzmq has no CURVE support (build it with libsodium), so keys cannot be used");
        goto fail;
    }
    if (load_server_keys(a, c, err, errlen) || load_authorized(a, c->authorized_keys, err, errlen)) goto fail;
    if (!a->nkeys) {
        snprintf(err, errlen, "%s holds no client public key: no client could connect", c->authorized_keys);
        goto fail;
    }
    a->nclients = a->nkeys;
    /* the server's own key: whoever holds the server's secret key (the health probe in its container,
     * deploy/herd_ping.c) may connect as a client; it could impersonate the server anyway */
    if (add_key(a, a->pub, NULL)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    a->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    a->zap = zmq_socket(ctx, ZMQ_REP);
    int zero = 0;
    if (a->stopfd < 0 || !a->zap || zmq_setsockopt(a->zap, ZMQ_LINGER, &zero, sizeof zero) ||
        zmq_bind(a->zap, ZAP_ENDPOINT)) {
        snprintf(err, errlen, "cannot start the ZAP handler: %s", a->stopfd < 0 ? strerror(errno) : zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (pthread_create(&a->thread, NULL, zap_main, a)) {
        snprintf(err, errlen, "cannot start the ZAP handler thread");
        goto fail;
    }
    a->running = 1;
    a->enabled = 1;
    return a;
fail:
    srv_auth_destroy(&a);
    return NULL;
}

void srv_auth_destroy(srv_auth **pa)
{
    if (!pa || !*pa) return;
    srv_auth *a = *pa;
    if (a->running) {
        uint64_t one = 1;
        if (write(a->stopfd, &one, sizeof one) != sizeof one) { /* the poll then never wakes: cannot happen */ }
        pthread_join(a->thread, NULL);
    }
    if (a->zap) zmq_close(a->zap);
    if (a->stopfd >= 0) close(a->stopfd);
    explicit_bzero(a->secret, sizeof a->secret);
    free(a->keys);
    free(a);
    *pa = NULL;
}

int srv_auth_enabled(const srv_auth *a) { return a && a->enabled; }
int srv_auth_nkeys(const srv_auth *a) { return a ? a->nclients : 0; }
const char *srv_auth_public_key(const srv_auth *a) { return a && a->enabled ? a->pub_z85 : ""; }
uint64_t srv_auth_refused(const srv_auth *a) { return a ? atomic_load(&((srv_auth *)a)->refused) : 0; }

int srv_auth_apply(const srv_auth *a, void *socket, char *err, size_t errlen)
{
    if (!srv_auth_enabled(a)) return 0;
    int one = 1;
    if (zmq_setsockopt(socket, ZMQ_CURVE_SERVER, &one, sizeof one) ||
        zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, a->secret, 32) ||
        zmq_setsockopt(socket, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN))) {
        snprintf(err, errlen, "cannot make the socket a CURVE server: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* key generation */

static int write_file(const char *path, const char *text, mode_t mode, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    ok &= close(fd) == 0;
    if (!ok) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

int srv_auth_write_pair(const char *dir, const char *name, char *z85_public, char *err, size_t errlen)
{
    char pub[SRV_Z85_KEY], sec[SRV_Z85_KEY];
    if (zmq_curve_keypair(pub, sec)) {
        snprintf(err, errlen, "cannot generate a key pair: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    char path[SRV_PATH_MAX + 64], text[512];
    snprintf(path, sizeof path, "%s/%s.key", dir, name);
    snprintf(text, sizeof text,
             "#   herd CURVE key pair '%s' (secret: keep it private; czmq certificate format)\n"
             "curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n", name, pub, sec);
    int rc = write_file(path, text, 0600, err, errlen);
    explicit_bzero(text, sizeof text);
    explicit_bzero(sec, sizeof sec);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/%s.pub", dir, name);
    snprintf(text, sizeof text, "#   herd CURVE public key '%s'\ncurve\n    public-key = \"%s\"\n", name, pub);
    if (write_file(path, text, 0644, err, errlen)) return -1;
    if (z85_public) memcpy(z85_public, pub, SRV_Z85_KEY);
    return 0;
}

int srv_auth_keygen(const char *dir, char *err, size_t errlen)
{
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "this libzmq has no CURVE support");
        return -1;
    }
    if (mkdir(dir, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    char client_pub[SRV_Z85_KEY], text[128], path[SRV_PATH_MAX + 64];
    if (srv_auth_write_pair(dir, "server", NULL, err, errlen) ||
        srv_auth_write_pair(dir, "client", client_pub, err, errlen))
        return -1;
    snprintf(path, sizeof path, "%s/authorized_keys", dir);
    snprintf(text, sizeof text, "# public keys of the clients herd-server admits, one per line\n%s\n", client_pub);
    return write_file(path, text, 0644, err, errlen);
}

/* srv_config.c — herd-server settings: defaults, environment variables, command line.  See srv_config.h. */
#include "srv_config.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "proto.h"

static int parse_long(const char *s, long lo, long hi, long *out);
static int parse_double(const char *s, double lo, double hi, double *out);

void srv_config_defaults(srv_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->bind, sizeof c->bind, "tcp://127.0.0.1:5555");
    c->threads = 0;
    c->max_message_bytes = 16u << 20;
    c->max_worlds_per_session = 65536;
    c->max_worlds = 262144;
    c->session_timeout_s = 600;
    c->log_level = SRV_LOG_INFO;
    c->stats_interval_s = 10;
    c->quantum = 16;
    c->spin_us = 250;
    /* resource bounds */
    c->max_step_seconds = SRV_MAX_STEP_SECONDS;
    c->client_max_inflight_seconds = 0;
    c->max_memory_bytes = 0;
    c->max_sessions = 0;
    c->client_max_worlds = 0;
    c->client_max_sessions = 256;
    c->client_max_inflight = 256;
    c->client_max_queued_bytes = (size_t)1 << 30;
    c->drain_timeout_s = 25;
}

/* A number from a one-line file (cgroup limits); 0 when absent, "max" or unreadable. */
static size_t read_limit_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    if (fscanf(f, "%llu", &v) != 1) v = 0;
    fclose(f);
    return (size_t)v;
}

size_t srv_config_memory_ceiling(const srv_config *c)
{
    if (c->max_memory_bytes) return c->max_memory_bytes;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    size_t mem = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : (size_t)8 << 30;
    size_t cg = read_limit_file("/sys/fs/cgroup/memory.max");
    if (!cg) cg = read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    if (cg && cg < mem) mem = cg;
    return mem / 4 * 3;
}

double srv_config_client_inflight_s(const srv_config *c)
{
    return c->client_max_inflight_seconds > 0 ? c->client_max_inflight_seconds : 2 * c->max_step_seconds;
}

int srv_config_max_sessions(const srv_config *c, size_t ceiling)
{
    if (c->max_sessions > 0) return c->max_sessions;
    size_t n = ceiling / SRV_SESSION_BYTES_AUTO;
    return n < 1 ? 1 : n > SRV_MAX_SESSIONS_AUTO ? SRV_MAX_SESSIONS_AUTO : (int)n;
}

/* The resource bounds' settings: each one's field, its type and its range. */
enum bound_type { B_DOUBLE, B_LONG, B_INT, B_SIZE };
static const struct bound_setting {
    const char *name;
    size_t field;               /* offsetof(srv_config, ...) */
    enum bound_type type;
    double lo, hi;
} bound_settings[] = {
    {"max-step-seconds", offsetof(srv_config, max_step_seconds), B_DOUBLE, 1e-6, 1e9},
    {"client-max-inflight-seconds", offsetof(srv_config, client_max_inflight_seconds), B_DOUBLE, 0, 1e12},
    {"max-memory", offsetof(srv_config, max_memory_bytes), B_SIZE, 0, 0x1p50},
    {"max-sessions", offsetof(srv_config, max_sessions), B_INT, 0, 0x1p24},
    {"client-max-worlds", offsetof(srv_config, client_max_worlds), B_LONG, 0, 0x1p40},
    {"client-max-sessions", offsetof(srv_config, client_max_sessions), B_INT, 1, 0x1p20},
    {"client-max-inflight", offsetof(srv_config, client_max_inflight), B_INT, 1, 0x1p20},
    {"client-max-queued-bytes", offsetof(srv_config, client_max_queued_bytes), B_SIZE, 1024, 0x1p50},
    {"drain-timeout", offsetof(srv_config, drain_timeout_s), B_DOUBLE, 0, 1e6},
};

/* Applies one resource-bound setting; 1 if name is not one of them, -1 for a bad value. */
static int apply_bounds(srv_config *c, const char *name, const char *val)
{
    for (size_t i = 0; i < sizeof bound_settings / sizeof bound_settings[0]; i++) {
        const struct bound_setting *b = &bound_settings[i];
        if (strcmp(name, b->name)) continue;
        void *f = (char *)c + b->field;
        if (b->type == B_DOUBLE) {
            double d;
            if (parse_double(val, b->lo, b->hi, &d)) return -1;
            *(double *)f = d;
            return 0;
        }
        long l;
        if (parse_long(val, (long)b->lo, (long)b->hi, &l)) return -1;
        if (b->type == B_LONG) *(long *)f = l;
        else if (b->type == B_INT) *(int *)f = (int)l;
        else *(size_t *)f = (size_t)l;
        return 0;
    }
    return 1;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* accept 16M, 64K, 1G for sizes */
    double mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G') mul = 1024.0 * 1024 * 1024, end++;
    if (end == s || *end || errno || !isfinite(v)) return -1;
    v *= mul;
    if (v != floor(v) || v < (double)lo || v > (double)hi) return -1;
    *out = (long)v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i])) return i;
    if (!strcasecmp(s, "warning")) return SRV_LOG_WARN;
    return -1;
}

/* Copies a path into a SRV_PATH_MAX field: -1 when empty or too long. */
static int copy_path(char *dst, const char *val)
{
    if (!*val || strlen(val) >= SRV_PATH_MAX) return -1;
    memcpy(dst, val, strlen(val) + 1);
    return 0;
}

/* Applies one setting by its long option name (without dashes).  where: "--x" or "HERD_X" for messages. */
static int apply(srv_config *c, const char *name, const char *val, const char *where, char *err, size_t errlen)
{
    long l;
    double d;
    if (!strcmp(name, "bind")) {
        if (!*val || strlen(val) >= sizeof c->bind) goto bad;
        snprintf(c->bind, sizeof c->bind, "%s", val);
    } else if (!strcmp(name, "threads")) {
        if (parse_long(val, 0, 1024, &l)) goto bad;
        c->threads = (int)l;
    } else if (!strcmp(name, "max-message-bytes")) {
        if (parse_long(val, 1024, 1L << 40, &l)) goto bad;
        c->max_message_bytes = (size_t)l;
    } else if (!strcmp(name, "max-worlds-per-session")) {
        if (parse_long(val, 1, INT32_MAX, &l)) goto bad;
        c->max_worlds_per_session = (int)l;
    } else if (!strcmp(name, "max-worlds")) {
        if (parse_long(val, 1, 1L << 40, &l)) goto bad;
        c->max_worlds = l;
    } else if (!strcmp(name, "session-timeout")) {
        if (parse_double(val, 0, 1e9, &d)) goto bad;
        c->session_timeout_s = d;
    } else if (!strcmp(name, "log-level")) {
        int lv = parse_level(val);
        if (lv < 0) goto bad;
        c->log_level = lv;
    } else if (!strcmp(name, "stats-interval")) {
        if (parse_double(val, 0, 1e9, &d)) goto bad;
        c->stats_interval_s = d;
    } else if (!strcmp(name, "quantum")) {
        if (parse_long(val, 1, 1 << 20, &l)) goto bad;
        c->quantum = (int)l;
    } else if (!strcmp(name, "metrics")) {
        if (strlen(val) >= sizeof c->metrics || (*val && !strchr(val, ':'))) goto bad;
        snprintf(c->metrics, sizeof c->metrics, "%s", val);
    } else if (!strcmp(name, "spin-us")) {
        if (parse_long(val, 0, 1000000, &l)) goto bad;
        c->spin_us = (int)l;
    } else if (!strcmp(name, "curve-secret-key-file")) {
        if (copy_path(c->curve_secret_key_file, val)) goto bad;
    } else if (!strcmp(name, "curve-public-key-file")) {
        if (copy_path(c->curve_public_key_file, val)) goto bad;
    } else if (!strcmp(name, "curve-secret-key")) {
        if (strlen(val) != SRV_Z85_KEY - 1) goto bad;
        snprintf(c->curve_secret_key, sizeof c->curve_secret_key, "%s", val);
    } else if (!strcmp(name, "authorized-keys")) {
        if (copy_path(c->authorized_keys, val)) goto bad;
    } else if (!strcmp(name, "insecure")) {
        if (!strcmp(val, "1") || !strcasecmp(val, "true") || !strcasecmp(val, "yes")) c->insecure = 1;
        else if (!*val || !strcmp(val, "0") || !strcasecmp(val, "false") || !strcasecmp(val, "no")) c->insecure = 0;
        else goto bad;
    } else if (!strcmp(name, "keygen")) {
        if (copy_path(c->keygen_dir, val)) goto bad;
    } else {
        int rc = apply_bounds(c, name, val);
        if (rc < 0) goto bad;
        if (rc > 0) {
            snprintf(err, errlen, "unknown option %s (see --help)", where);
            return -1;
        }
    }
    return 0;
bad:
    snprintf(err, errlen, "bad value '%s' for %s (see --help)", val, where);
    return -1;
}

static const char *const settings[] = {"bind", "threads", "max-message-bytes", "max-worlds-per-session", "max-worlds",
                                       "session-timeout", "log-level", "stats-interval", "quantum", "spin-us",
                                       "metrics",
                                       "curve-secret-key-file", "curve-public-key-file", "curve-secret-key",
                                       "authorized-keys", "insecure",
                                       /* resource bounds */
                                       "max-step-seconds", "client-max-inflight-seconds", "max-memory", "max-sessions", "client-max-worlds", "client-max-sessions",
                                       "client-max-inflight", "client-max-queued-bytes", "drain-timeout"};
/* Command-line only: --keygen DIR (a one-off action, not a setting of a running server). */
static const char *const arg_only[] = {"keygen"};
/* Flags: no value on the command line (--insecure means 1). */
static const char *const flags[] = {"insecure"};

int srv_config_from_env(srv_config *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        char var[64] = "HERD_";
        size_t k = 5;
        for (const char *p = settings[i]; *p && k + 1 < sizeof var; p++) var[k++] = *p == '-' ? '_' : (char)(*p - 32 * (*p >= 'a' && *p <= 'z'));
        var[k] = 0;
        const char *v = getenv(var);
        if (v && apply(c, settings[i], v, var, err, errlen)) return -1;
    }
    return 0;
}

void srv_config_usage(FILE *f)
{
    srv_config d;
    srv_config_defaults(&d);
    fprintf(f,
            "usage: herd-server [options]\n"
            "Serves batched reset/step of simulated worlds over ZeroMQ + MessagePack (protocol/PROTOCOL.md).\n"
            "\n"
            "  --bind ENDPOINT              ZeroMQ endpoint to bind (default %s; tcp://HOST:* picks a port,\n"
            "                               ipc:///path/to/socket for local clients).  HOST: an IPv4 address,\n"
            "                               [IPv6] ([::1]), * (every IPv4 interface), an interface name (lo,\n"
            "                               eth0) or a host name (localhost), whose addresses are all bound\n"
            "  --threads N                  worker threads (default 0 = the CPUs this process may use: the\n"
            "                               container's cgroup CPU quota, else the affinity mask; logged)\n"
            "  --max-message-bytes N        largest request accepted, e.g. 16M (default %zu); larger ones get\n"
            "                               TOO_LARGE, and the connection is dropped beyond 4x this\n"
            "  --max-worlds-per-session N   (default %d)\n"
            "  --max-worlds N               over all sessions (default %ld; an ANYmal world takes ~2.5 KB)\n"
            "  --session-timeout SECONDS    close sessions idle this long, 0 = never (default %g)\n"
            "  --log-level LEVEL            error | warn | info | debug (default info)\n"
            "  --stats-interval SECONDS     period of the info-level stats line, 0 = off (default %g); skipped\n"
            "                               while the server is idle\n"
            "  --quantum N                  worlds a worker steps before turning to another session (default %d)\n"
            "  --spin-us N                  busy-poll (yielding the CPU) up to N us before sleeping: idle workers\n"
            "                               for new work, the I/O thread for the completion of a tiny step\n"
            "                               (<= 4 worlds per worker).  Waking a sleeping thread costs tens of us\n"
            "                               on a VM: this keeps small-request latency near the raw ZeroMQ round\n"
            "                               trip, for at most N us of CPU per idle period (default %d; 0 = off)\n"
            "  --metrics HOST:PORT          serve Prometheus metrics at http://HOST:PORT/metrics (default off;\n"
            "                               e.g. 127.0.0.1:9464).  HOST: an IP address or localhost; any address,\n"
            "                               0.0.0.0 included, without --insecure: the page holds aggregate\n"
            "                               counters only (no session ids, tokens, keys or client addresses)\n"
            "                               and changes nothing; limit who reaches it with the network\n"
            "\n"
            "Authentication (ZeroMQ CURVE; protocol/PROTOCOL.md section 1):\n"
            "  --curve-secret-key-file FILE the server's key pair (a file written by --keygen) or a file holding\n"
            "                               the bare Z85 secret key; turns CURVE on\n"
            "  --curve-public-key-file FILE optional: the server's public key, checked against the secret key\n"
            "  --curve-secret-key Z85       the secret key itself (prefer the file or HERD_CURVE_SECRET_KEY)\n"
            "  --authorized-keys DIR|FILE   public keys of the clients admitted: a directory of key files\n"
            "                               (every *.pub / *.key file) or one file (one key per line, or\n"
            "                               key files concatenated); required with CURVE\n"
            "  --insecure                   allow plain mode (no keys) on a non-loopback address; without it,\n"
            "                               binding such an address without keys is refused\n"
            "  --keygen DIR                 write server.key / server.pub, client.key / client.pub and\n"
            "                               authorized_keys (the client's public key) to DIR, then exit\n"
            "\n"
            "Resource bounds (per request, per client: a CURVE key, or in plain mode an address; in all; hello reports\n"
            "them):\n"
            "  --max-step-seconds S         a step's estimated CPU time at the solver's caps, at most (default %g):\n"
            "                               worlds x physics steps x (the physics besides the solve + the\n"
            "                               solver's and its fallback's iteration caps x their iteration times\n"
            "                               at the most contacts a world can have), times measured at start; a\n"
            "                               costlier step gets LIMIT before it runs, and so does a make whose\n"
            "                               one world-step alone costs more\n"
            "  --client-max-inflight-seconds S  the estimates of one client's steps in flight, summed, at most\n"
            "                               (default 0 = 2 x --max-step-seconds)\n"
            "  --max-memory BYTES           ceiling on the worlds' memory and the replies in flight; a make that\n"
            "                               would cross it gets LIMIT before allocating (default 0 = 3/4 of the\n"
            "                               cgroup memory limit or of the RAM); every session counts its own\n"
            "                               memory besides its worlds'\n"
            "  --max-sessions N             open sessions in all (default 0 = the memory ceiling / 160 KiB, at\n"
            "                               most 65536)\n"
            "  --client-max-worlds N        worlds of one client's sessions (default 0 = --max-worlds)\n"
            "  --client-max-sessions N      open sessions of one client (default %d)\n"
            "  --client-max-inflight N      requests of one client accepted and not yet answered (default %d)\n"
            "  --client-max-queued-bytes N  replies queued for one connection, not yet sent (default %zu); beyond,\n"
            "                               its replies are dropped (logged) until it reads\n"
            "  --drain-timeout SECONDS      SIGTERM: after this, requests in flight get SHUTTING_DOWN and the\n"
            "                               server exits (default %g)\n"
            "  --version                    print the version and exit\n"
            "  --help                       this text\n"
            "\n"
            "Each option can also be given as an environment variable: HERD_BIND, HERD_THREADS,\n"
            "HERD_MAX_MESSAGE_BYTES, HERD_MAX_WORLDS_PER_SESSION, HERD_MAX_WORLDS, HERD_SESSION_TIMEOUT,\n"
            "HERD_LOG_LEVEL, HERD_STATS_INTERVAL, HERD_QUANTUM, HERD_SPIN_US, HERD_METRICS, HERD_CURVE_SECRET_KEY_FILE,\n"
            "HERD_CURVE_PUBLIC_KEY_FILE, HERD_CURVE_SECRET_KEY, HERD_AUTHORIZED_KEYS, HERD_INSECURE=1,\n"
            "HERD_MAX_STEP_SECONDS, HERD_CLIENT_MAX_INFLIGHT_SECONDS, HERD_MAX_MEMORY, HERD_MAX_SESSIONS, HERD_CLIENT_MAX_WORLDS, HERD_CLIENT_MAX_SESSIONS,\n"
            "HERD_CLIENT_MAX_INFLIGHT, HERD_CLIENT_MAX_QUEUED_BYTES, HERD_DRAIN_TIMEOUT.  The command line wins.\n"
            "SIGINT / SIGTERM: finish the requests in flight (at most --drain-timeout), send their replies, exit 0.\n"
            "Without keys anyone who can reach the endpoint can use the server: plain mode is the default only\n"
            "on 127.0.0.0/8 / [::1] / localhost (which must resolve to loopback) / lo and ipc://; elsewhere give\n"
            "keys or --insecure.  --insecure concerns --bind only, not --metrics.\n",
            d.bind, d.max_message_bytes, d.max_worlds_per_session, d.max_worlds, d.session_timeout_s,
            d.stats_interval_s, d.quantum, d.spin_us, d.max_step_seconds, d.client_max_sessions, d.client_max_inflight,
            d.client_max_queued_bytes, d.drain_timeout_s);
}

int srv_config_from_args(srv_config *c, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            srv_config_usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("herd-server %s (protocol %d)\n", HERD_VERSION, PROTO_VERSION);
            return 1;
        }
        if (strncmp(a, "--", 2)) {
            snprintf(err, errlen, "unexpected argument '%s' (see --help)", a);
            return -1;
        }
        char name[64];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a - 2), a + 2);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a + 2);
            int known = 0, flag = 0;
            for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) known |= !strcmp(name, settings[k]);
            for (size_t k = 0; k < sizeof arg_only / sizeof arg_only[0]; k++) known |= !strcmp(name, arg_only[k]);
            for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) flag |= !strcmp(name, flags[k]);
            if (!known) {
                snprintf(err, errlen, "unknown option %s (see --help)", a);
                return -1;
            }
            if (flag) {
                val = "1";
            } else if (i + 1 >= argc) {
                snprintf(err, errlen, "%s needs a value (see --help)", a);
                return -1;
            } else {
                val = argv[++i];
            }
        }
        char where[80];
        snprintf(where, sizeof where, "--%s", name);
        if (apply(c, name, val, where, err, errlen)) return -1;
    }
    return 0;
}

int srv_config_check(const srv_config *c, char *err, size_t errlen)
{
    if (!c->bind[0]) return snprintf(err, errlen, "empty bind address"), -1;
    if (c->threads < 0 || c->threads > 1024) return snprintf(err, errlen, "threads must be in [0, 1024]"), -1;
    if (c->max_message_bytes < 1024) return snprintf(err, errlen, "max-message-bytes must be >= 1024"), -1;
    if (c->max_worlds_per_session < 1) return snprintf(err, errlen, "max-worlds-per-session must be >= 1"), -1;
    if (c->max_worlds < 1) return snprintf(err, errlen, "max-worlds must be >= 1"), -1;
    if (c->session_timeout_s < 0) return snprintf(err, errlen, "session-timeout must be >= 0"), -1;
    if (c->quantum < 1) return snprintf(err, errlen, "quantum must be >= 1"), -1;
    if (c->spin_us < 0) return snprintf(err, errlen, "spin-us must be >= 0"), -1;
    if (c->curve_secret_key_file[0] && c->curve_secret_key[0])
        return snprintf(err, errlen, "give the secret key either as a file or as a value, not both"), -1;
    if (c->curve_public_key_file[0] && !srv_config_curve(c))
        return snprintf(err, errlen, "a public key file without the secret key (--curve-secret-key-file)"), -1;
    if (srv_config_curve(c) && !c->authorized_keys[0])
        return snprintf(err, errlen, "CURVE needs the clients' public keys (--authorized-keys DIR|FILE)"), -1;
    if (!srv_config_curve(c) && c->authorized_keys[0])
        return snprintf(err, errlen, "--authorized-keys needs the server's key (--curve-secret-key-file)"), -1;
    if (!srv_config_curve(c) && !c->insecure && !srv_config_bind_is_local(c->bind))
        return snprintf(err, errlen, "%s is not a loopback or ipc address: give the server's keys "
                        "(--curve-secret-key-file, --authorized-keys) or allow plain mode with --insecure", c->bind), -1;
    if (!(c->max_step_seconds > 0)) return snprintf(err, errlen, "max-step-seconds must be > 0"), -1;
    if (!(c->client_max_inflight_seconds >= 0))
        return snprintf(err, errlen, "client-max-inflight-seconds must be >= 0"), -1;
    if (c->client_max_worlds < 0) return snprintf(err, errlen, "client-max-worlds must be >= 0"), -1;
    if (c->client_max_sessions < 1 || c->client_max_inflight < 1)
        return snprintf(err, errlen, "client-max-sessions and client-max-inflight must be >= 1"), -1;
    if (c->client_max_queued_bytes < 1024) return snprintf(err, errlen, "client-max-queued-bytes must be >= 1024"), -1;
    if (c->drain_timeout_s < 0) return snprintf(err, errlen, "drain-timeout must be >= 0"), -1;
    return 0;
}

int srv_config_curve(const srv_config *c) { return c->curve_secret_key_file[0] || c->curve_secret_key[0]; }

int srv_config_bind_is_local(const char *ep)
{
    if (!strncmp(ep, "ipc://", 6) || !strncmp(ep, "inproc://", 9)) return 1;
    if (strncmp(ep, "tcp://", 6)) return 0;       /* pgm, udp, ...: not local */
    const char *h = ep + 6;
    if (strchr(h, ';')) return 0;                 /* source;destination forms: keep it simple */
    const char *colon = strrchr(h, ':');
    if (!colon) return 0;
    size_t n = (size_t)(colon - h);
    if (n >= 9 && !strncmp(h, "127.", 4)) {       /* 127.0.0.0/8, digits and dots only */
        for (size_t i = 4; i < n; i++)
            if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.')) return 0;
        return 1;
    }
    return (n == 9 && !strncmp(h, "localhost", 9)) || (n == 5 && !strncmp(h, "[::1]", 5)) ||
           (n == 2 && !strncmp(h, "lo", 2));
}

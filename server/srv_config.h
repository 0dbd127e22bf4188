/* srv_config.h — herd-server settings: defaults < environment variables (HERD_*) < command line.
 *
 * The lowest layer of server/: plain data and parsing, no sockets, no threads.  srv_server.h takes a
 * filled srv_config; nothing here knows the server.
 *
 * Usage:
 *     srv_config c; srv_config_defaults(&c);
 *     if (srv_config_from_env(&c, err, sizeof err) || srv_config_from_args(&c, argc, argv, err, sizeof err) < 0) ...
 * Ownership: srv_config is a value (no pointers); copy it freely.
 */
#ifndef HERD_SRV_CONFIG_H
#define HERD_SRV_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#define HERD_VERSION "0.1.0"

enum { SRV_LOG_ERROR = 0, SRV_LOG_WARN, SRV_LOG_INFO, SRV_LOG_DEBUG };

#define SRV_PATH_MAX 512
#define SRV_Z85_KEY 41               /* a CURVE key in Z85 text: 40 characters and the terminating 0 */

typedef struct {
    char bind[256];              /* ZeroMQ endpoint; tcp://127.0.0.1:* picks a free port */
    int threads;                 /* workers; 0 = the CPUs this process may use: the cgroup CPU quota (containers),
                                  * else the affinity mask (srv_cpus.h) */
    size_t max_message_bytes;    /* largest request accepted (TOO_LARGE beyond; connection dropped beyond 4x) */
    int max_worlds_per_session;
    long max_worlds;             /* over all sessions */
    double session_timeout_s;    /* idle sessions are closed after this; 0 = never */
    int log_level;               /* SRV_LOG_* */
    double stats_interval_s;     /* info-level stats line period; 0 = off */
    int quantum;                 /* worlds a worker runs before turning to the next session */
    char metrics[128];           /* "HOST:PORT" of the Prometheus endpoint (/metrics); "" = off */
    int spin_us;                 /* busy-poll (yielding) this long before sleeping: idle workers for new work,
                                  * the I/O thread for a tiny step's completion (<= 4 worlds per worker);
                                  * saves thread wake-ups (tens of us on a VM); 0 = never */
    /* authentication (srv_auth.h): CURVE when a secret key is given; files hold a key pair written by
     * --keygen (or a bare Z85 key); the public key is derived from the secret one when not given */
    char curve_secret_key_file[SRV_PATH_MAX];   /* the server's secret key (or key pair) */
    char curve_public_key_file[SRV_PATH_MAX];   /* optional: checked against the secret key */
    char curve_secret_key[SRV_Z85_KEY];         /* the secret key itself (HERD_CURVE_SECRET_KEY) */
    char authorized_keys[SRV_PATH_MAX];         /* a directory of public keys (*.pub, *.key) or a file of them */
    int insecure;                /* allow plain (unauthenticated) mode on a non-loopback address */
    char keygen_dir[SRV_PATH_MAX];              /* --keygen DIR: write key pairs there and exit */
    /* ---- resource bounds: quotas, memory, CPU, drain ---- */
    double max_step_seconds;     /* a step request's estimated CPU time at the solver's caps (worlds x a
                                  * world-step's, env_world_step_s), at most (LIMIT beyond); a make whose one
                                  * world-step alone would exceed it gets LIMIT */
    double client_max_inflight_seconds;  /* the estimates of one client's steps in flight, summed, at most;
                                          * 0 = 2 x max_step_seconds (srv_config_client_inflight_s) */
    size_t max_memory_bytes;     /* ceiling on sessions' memory + replies in flight; 0 = 3/4 of the cgroup memory
                                  * limit or of the machine's RAM (srv_config_memory_ceiling) */
    int max_sessions;            /* open sessions in all; 0 = derived from the memory ceiling
                                  * (srv_config_max_sessions) */
    long client_max_worlds;      /* per client (0 = max_worlds: one trainer may use the whole server) */
    int client_max_sessions;     /* per client */
    int client_max_inflight;     /* requests of one client accepted and not yet answered */
    size_t client_max_queued_bytes;  /* replies handed to ZeroMQ for one client and not yet sent; beyond, its
                                      * replies are dropped (logged) until it reads */
    double drain_timeout_s;      /* SIGTERM: after this, requests in flight get SHUTTING_DOWN and the server exits */
} srv_config;

/* The memory ceiling the server enforces: c->max_memory_bytes, or when 0, 3/4 of the cgroup's memory.max
 * (v2) / memory.limit_in_bytes (v1) or of the physical memory, whichever is smaller. */
size_t srv_config_memory_ceiling(const srv_config *c);

/* Sessions of the default max_sessions: a session with its env takes at least about this much (its model
 * alone is ~74 KB, anymal_c-walk's actuator network ~17 KB more), so that many fit under the ceiling whatever
 * their worlds; and at most this many. */
#define SRV_SESSION_BYTES_AUTO ((size_t)160 << 10)
#define SRV_MAX_SESSIONS_AUTO 65536
/* The default --max-step-seconds.  The estimate is at the caps, far above a typical step: with anymal_c-walk's
 * defaults a world-step at the caps (the ADMM fallback's 500 iterations and the direct solve's 2 x 3 x 100 Newton
 * iterations included) is estimated at about 30 ms, so 65,536 default worlds fit with a margin for slower or busy
 * machines, while decimation 50 with 10,000 sweeps of paper-bisection over up to 76 contacts is estimated at
 * seconds per world-step, so that a step of a few hundred such worlds does not. */
#define SRV_MAX_STEP_SECONDS 6000.0
/* client_max_inflight_seconds in effect */
double srv_config_client_inflight_s(const srv_config *c);
/* The session cap the server enforces: c->max_sessions, or when 0, ceiling / SRV_SESSION_BYTES_AUTO within
 * [1, SRV_MAX_SESSIONS_AUTO]. */
int srv_config_max_sessions(const srv_config *c, size_t ceiling);

/* tcp://127.0.0.1:5555, all cores, 16 MiB, 65536 / 262144 worlds, 600 s, info, 10 s, 16 worlds, 250 us;
 * bounds: 6000 s per step (estimated at the caps), memory auto, per client max_worlds worlds / 256 sessions /
 * 256 requests and 6000 s of steps in flight / 1 GiB queued replies, 25 s drain. */
void srv_config_defaults(srv_config *c);
/* Applies HERD_BIND, HERD_THREADS, HERD_MAX_MESSAGE_BYTES, HERD_MAX_WORLDS_PER_SESSION, HERD_MAX_WORLDS,
 * HERD_SESSION_TIMEOUT, HERD_LOG_LEVEL, HERD_STATS_INTERVAL, HERD_QUANTUM, HERD_SPIN_US, HERD_METRICS,
 * HERD_CURVE_SECRET_KEY_FILE, HERD_CURVE_PUBLIC_KEY_FILE, HERD_CURVE_SECRET_KEY, HERD_AUTHORIZED_KEYS,
 * HERD_INSECURE (1 / 0), and the bounds: HERD_MAX_STEP_SECONDS, HERD_CLIENT_MAX_INFLIGHT_SECONDS, HERD_MAX_MEMORY, HERD_MAX_SESSIONS, HERD_CLIENT_MAX_WORLDS,
 * HERD_CLIENT_MAX_SESSIONS, HERD_CLIENT_MAX_INFLIGHT, HERD_CLIENT_MAX_QUEUED_BYTES, HERD_DRAIN_TIMEOUT.
 * 0, or -1 with a message. */
int srv_config_from_env(srv_config *c, char *err, size_t errlen);
/* Applies the command line (--bind ... --help).  0 = run, 1 = --help / --version printed, -1 = error. */
int srv_config_from_args(srv_config *c, int argc, char **argv, char *err, size_t errlen);
void srv_config_usage(FILE *f);
/* Checks ranges and the security settings (keys need authorized keys and the other way round; a
 * non-loopback tcp:// address without keys needs insecure); 0 or -1 with a message. */
int srv_config_check(const srv_config *c, char *err, size_t errlen);
/* Nonzero when the config asks for CURVE (a secret key file or key). */
int srv_config_curve(const srv_config *c);
/* Nonzero when endpoint is reachable only from this host: ipc://, inproc://, or tcp:// on 127.x.x.x,
 * localhost, ::1 or the interface lo. */
int srv_config_bind_is_local(const char *endpoint);

#endif

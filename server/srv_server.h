/* srv_server.h — herd-server: serves the protocol of protocol/PROTOCOL.md over a ZeroMQ ROUTER socket.
 *
 * One I/O thread (the caller of srv_server_run) owns the socket, decodes and validates requests,
 * keeps the session table and sends replies; it never simulates.  N worker threads (srv_pool) run
 * the worlds: each session's worlds are split into N contiguous slices, slice t always stepped by the
 * same worker, which writes observations, rewards and flags straight into the reply buffer.  A reset
 * or step request becomes one work unit per worker that owns some of its worlds; the reply leaves as
 * soon as the last of them is done.  Workers take turns over sessions (srv_pool.h), so sessions share
 * the pool fairly.  make and close run on a worker too (creating 65536 worlds takes ~0.1 s).
 *
 * Usage (in a program or a test):
 *     srv_config c; srv_config_defaults(&c); ... srv_server *s = srv_server_new(&c, err, sizeof err);
 *     srv_server_run(s);            // until srv_server_stop(s) from a signal handler or another thread
 *     srv_server_destroy(&s);
 */
#ifndef HERD_SRV_SERVER_H
#define HERD_SRV_SERVER_H

#include <stddef.h>
#include <stdio.h>

#define HERD_VERSION "0.1.0"

enum { SRV_LOG_ERROR = 0, SRV_LOG_WARN, SRV_LOG_INFO, SRV_LOG_DEBUG };

typedef struct {
    char bind[256];              /* ZeroMQ endpoint; tcp://127.0.0.1:* picks a free port */
    int threads;                 /* workers; 0 = the cores this process may run on */
    size_t max_message_bytes;    /* largest request accepted (TOO_LARGE beyond; connection dropped beyond 4x) */
    int max_worlds_per_session;
    long max_worlds;             /* over all sessions */
    double session_timeout_s;    /* idle sessions are closed after this; 0 = never */
    int log_level;               /* SRV_LOG_* */
    double stats_interval_s;     /* info-level stats line period; 0 = off */
    int quantum;                 /* worlds a worker runs before turning to the next session */
    int spin_us;                 /* busy-poll (yielding) this long before sleeping: idle workers for new work,
                                  * the I/O thread for a tiny step's completion (<= 4 worlds per worker);
                                  * saves thread wake-ups (tens of us on a VM); 0 = never */
} srv_config;

/* tcp://127.0.0.1:5555, all cores, 16 MiB, 65536 / 262144 worlds, 600 s, info, 10 s, 16 worlds, 250 us. */
void srv_config_defaults(srv_config *c);
/* Applies HERD_BIND, HERD_THREADS, HERD_MAX_MESSAGE_BYTES, HERD_MAX_WORLDS_PER_SESSION, HERD_MAX_WORLDS,
 * HERD_SESSION_TIMEOUT, HERD_LOG_LEVEL, HERD_STATS_INTERVAL, HERD_QUANTUM, HERD_SPIN_US.  0, or -1 with a message. */
int srv_config_from_env(srv_config *c, char *err, size_t errlen);
/* Applies the command line (--bind ... --help).  0 = run, 1 = --help / --version printed, -1 = error. */
int srv_config_from_args(srv_config *c, int argc, char **argv, char *err, size_t errlen);
void srv_config_usage(FILE *f);
/* Checks ranges; 0 or -1 with a message. */
int srv_config_check(const srv_config *c, char *err, size_t errlen);

typedef struct srv_server srv_server;

/* Binds the socket and starts the workers; NULL with a message on failure. */
srv_server *srv_server_new(const srv_config *c, char *err, size_t errlen);
/* The bound endpoint (with the port chosen for tcp://...:*). */
const char *srv_server_endpoint(const srv_server *s);
int srv_server_threads(const srv_server *s);
/* Prints the startup banner (version, endpoint, threads, limits, envs) at info level. */
void srv_server_banner(const srv_server *s);
/* Serves until srv_server_stop; then answers new requests with SHUTTING_DOWN while the requests in
 * flight finish, sends their replies and returns 0. */
int srv_server_run(srv_server *s);
/* Asks srv_server_run to drain and return.  Async-signal-safe; any thread. */
void srv_server_stop(srv_server *s);
/* Frees everything (flushing queued replies for up to 2 s). */
void srv_server_destroy(srv_server **s);

/* A server running on a thread of this process (tests, benchmarks, embedding). */
typedef struct srv_thread srv_thread;
/* srv_server_new + srv_server_run on a new thread.  NULL with a message on failure. */
srv_thread *srv_thread_start(const srv_config *c, char *err, size_t errlen);
srv_server *srv_thread_server(srv_thread *t);
const char *srv_thread_endpoint(const srv_thread *t);
/* srv_server_stop, join (the requests in flight are answered first), destroy.  Returns run's result. */
int srv_thread_stop(srv_thread **t);

#endif

/* srv_server.h — herd-server: serves the protocol of protocol/PROTOCOL.md over a ZeroMQ ROUTER socket.
 *
 * One I/O thread (the caller of srv_server_run) owns the socket, decodes and validates requests, keeps
 * the session table (srv_session.h) and sends replies; it never simulates.  N worker threads run the
 * worlds (srv_job.h over srv_pool.h): each session's worlds are split into N contiguous slices, slice t
 * always stepped by the same worker, which writes observations, rewards and flags straight into the
 * reply buffer.  A reset or step request becomes one work unit per worker that owns some of its worlds;
 * the reply leaves as soon as the last of them is done.  Workers take turns over sessions
 * (srv_pool.h), so sessions share the pool fairly, and a worker with nothing of its own helps with the unit
 * another is running (srv_pool.h, helping), so a request's slices finish together however unequal their cost.  make and close run on a worker too (creating
 * 65536 worlds takes ~0.1 s).
 *
 * Layers: srv_server (I/O loop, request handlers) -> srv_session (table) and srv_job (the only caller
 * of envs/) -> srv_pool (threads); srv_config, srv_log, srv_rate below them all.
 *
 * Usage (in a program or a test; srv_thread.h runs one on a thread):
 *     srv_config c; srv_config_defaults(&c); ... srv_server *s = srv_server_new(&c, err, sizeof err);
 *     srv_server_run(s);            // until srv_server_stop(s) from a signal handler or another thread
 *     srv_server_destroy(&s);
 * Ownership: the server copies the config; it owns its socket, sessions, jobs and threads.
 */
#ifndef HERD_SRV_SERVER_H
#define HERD_SRV_SERVER_H

#include <stddef.h>

#include "srv_config.h"

typedef struct srv_server srv_server;

/* Binds the socket and starts the workers; NULL with a message on failure. */
srv_server *srv_server_new(const srv_config *c, char *err, size_t errlen);
/* The bound endpoint (with the port chosen for tcp://...:*; a host name's first address). */
const char *srv_server_endpoint(const srv_server *s);
/* The port of the Prometheus endpoint (the one chosen for HOST:0), 0 without --metrics. */
int srv_server_metrics_port(const srv_server *s);
int srv_server_threads(const srv_server *s);
/* Worlds the workers ran from each other's shares while idle (srv_pool.h, helping), all workers, so far. */
unsigned long srv_server_helped_worlds(const srv_server *s);
/* The scheduler's waits so far, over every worker (srv_pool_waits): the most turns of other lanes a request's
 * unit waited for once at the head of its lane, the most by which that exceeded the other lanes then queued on
 * its worker (<= 0: round-robin held), and how many units were counted. */
void srv_server_waits(srv_server *s, unsigned long *max_waited, long *max_excess, unsigned long *units);
/* Prints the startup banner (version, endpoint, threads, limits, envs) at info level. */
void srv_server_banner(const srv_server *s);
/* Serves until srv_server_stop; then answers new requests with SHUTTING_DOWN while the requests in
 * flight finish, sends their replies and returns 0. */
int srv_server_run(srv_server *s);
/* Asks srv_server_run to drain and return.  Async-signal-safe; any thread. */
void srv_server_stop(srv_server *s);
/* Frees everything (flushing queued replies for up to 2 s). */
void srv_server_destroy(srv_server **s);

#endif

/* srv_metrics.h — the server's operational metrics and their Prometheus endpoint.
 *
 * One srv_metrics per server.  The I/O thread and the workers update it with relaxed atomic adds (no locks,
 * no allocation); an optional HTTP endpoint (libmicrohttpd, its own thread) serves GET /metrics in the
 * Prometheus text exposition format 0.0.4.  Names and units follow Prometheus conventions: base units
 * (seconds, bytes), counters end in _total, histograms expose _bucket{le}, _sum and _count.
 *
 *   herd_requests_total{op}                       requests decoded, by op (hello, make, reset, step, ...)
 *   herd_request_errors_total{op,code}            error replies, by op and wire code (BAD_FIELD, LIMIT, ...)
 *   herd_request_duration_seconds{op}             histogram: receipt to reply sent, make/reset/step/close
 *   herd_received_bytes_total, herd_sent_bytes_total   message bytes (all frames)
 *   herd_env_steps_total                          world-steps simulated (one world, one env step)
 *   herd_env_steps_per_second                     the same over the last rate window (gauge)
 *   herd_physics_resets_total                     worlds reset because their physics failed
 *   herd_solver_iterations_total                  contact-solver sweeps, summed over physics steps
 *   herd_solver_capped_total                      physics steps whose solver stopped at its iteration cap
 *   herd_solver_fallbacks_total                   physics steps handed to the solver's fallbacks (direct, ADMM)
 *                                                 (coulomb-stall-admm, the walk/stand default)
 *   herd_solver_ccp_answers_total                 physics steps whose contact solve was answered by the cone
 *                                                 complementarity problem, not Coulomb's law (sim_step_stats.answer)
 *   herd_joint_limits_active_total                joint-limit constraints with an impulse, summed over physics steps
 *   herd_worker_busy_seconds_total{worker}        time each worker spent running jobs
 *   herd_worker_helped_worlds_total{worker}       worlds a worker ran from another worker's share of a
 *                                                 request while idle (srv_pool.h, helping)
 *   herd_worker_utilization_ratio                 busy share of all workers over the last rate window
 *   herd_queue_depth                              requests handed to the workers and not answered yet
 *                                                 (queued, running, or deferred behind their session's
 *                                                 earlier request)
 *   herd_sessions, herd_worlds                    in use; herd_worlds_limit the configured maximum
 *   herd_dropped_total{what}                      messages dropped without a reply (message: malformed
 *                                                 envelope; reply: a client over its queued-bytes budget;
 *                                                 cancelled: work of a vanished client or a closed session)
 *   herd_memory_bytes, herd_memory_limit_bytes    worlds' memory + replies in flight; the ceiling
 *   herd_terrain_level{kind}                      mean terrain level (row, 0 = easiest) of the worlds of every open
 *                                                 session of a task with a terrain curriculum, by tile kind (gauge;
 *                                                 NaN while no world of the kind has one)
 *   herd_terrain_level_mean                       the same over every kind (gauge)
 *   herd_terrain_worlds{kind}                     those worlds, by kind (gauge)
 *   (the terrain series only when kinds are named: srv_metrics_terrain_kinds)
 *   herd_build_info{version,protocol}             1
 * Ownership: srv_metrics_new allocates; srv_metrics_destroy stops the endpoint (if started) and frees.
 */
#ifndef HERD_SRV_METRICS_H
#define HERD_SRV_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define SRV_METRICS_OPS 16     /* >= the protocol's op count + 1 ("invalid") */
#define SRV_METRICS_CODES 32   /* >= the protocol's error code count */
#define SRV_METRICS_BUCKETS 16 /* finite histogram buckets */
#define SRV_METRICS_KINDS 16   /* terrain tile kinds at most */

typedef struct srv_metrics srv_metrics;

/* op_names[i] / code_names[c] label op i and error code c (the strings must outlive the object);
 * nworkers sizes the per-worker counters. */
srv_metrics *srv_metrics_new(const char *const *op_names, int nops, const char *const *code_names, int ncodes,
                             int nworkers, const char *version, int protocol);
void srv_metrics_destroy(srv_metrics **m);

/* Starts the HTTP endpoint on "HOST:PORT" (HOST an IPv4 or IPv6 literal, or "localhost"; PORT 0 picks a free
 * one).  Returns 0, or -1 with a message in err.  *port_out (if not NULL) receives the bound port. */
int srv_metrics_listen(srv_metrics *m, const char *addr, int *port_out, char *err, size_t errlen);

/* ---- updates (any thread) ---- */
void srv_metrics_request(srv_metrics *m, int op, size_t bytes_in);
void srv_metrics_reply(srv_metrics *m, int op, int code, double seconds, size_t bytes_out); /* code 0 = ok */
void srv_metrics_sent(srv_metrics *m, size_t bytes_out);      /* bytes sent outside srv_metrics_reply */
void srv_metrics_env_steps(srv_metrics *m, uint64_t world_steps, uint64_t physics_resets, uint64_t solver_iterations,
                           uint64_t solver_capped, uint64_t solver_fallbacks, uint64_t solver_ccp_answers,
                           uint64_t joint_limits_active);
void srv_metrics_worker_busy(srv_metrics *m, int worker, double seconds);
void srv_metrics_worker_helped(srv_metrics *m, int worker, uint64_t worlds);
void srv_metrics_gauges(srv_metrics *m, int sessions, long worlds, long worlds_limit, long queue_depth);
typedef enum { SRV_DROP_MESSAGE = 0, SRV_DROP_REPLY, SRV_DROP_CANCELLED, SRV_DROP_COUNT } srv_drop_kind;
void srv_metrics_dropped(srv_metrics *m, srv_drop_kind what);
void srv_metrics_memory(srv_metrics *m, size_t used, size_t limit);
/* Called by the I/O loop at least once a second: closes a rate window when one second has passed. */
void srv_metrics_tick(srv_metrics *m, double now_s);

/* Names the terrain tile kinds the terrain series are labelled with (the strings must outlive m; at most
 * SRV_METRICS_KINDS, more are ignored).  Before any srv_metrics_terrain; returns how many were taken. */
int srv_metrics_terrain_kinds(srv_metrics *m, const char *const *names, int n);
/* Kind `name`'s index among those, or -1. */
int srv_metrics_terrain_kind(const srv_metrics *m, const char *name);
/* Adds dsum to kind k's sum of levels and dworlds to its worlds (negative: a session closed).  Any thread. */
void srv_metrics_terrain(srv_metrics *m, int kind, int64_t dsum, int64_t dworlds);

/* Writes the exposition into buf (NUL-terminated); returns the length it needs (like snprintf). */
size_t srv_metrics_render(const srv_metrics *m, char *buf, size_t cap);

/* The histogram's upper bounds (seconds), ascending; SRV_METRICS_BUCKETS of them (+Inf is implicit). */
const double *srv_metrics_buckets(void);

#endif

/* srv_session.h — a session (one client's env with its worlds) and the table of open sessions.
 *
 * A session is made by a make request and lives until close or expiry.  Its worlds are split into
 * T contiguous slices (T = worker threads); slice t always runs on worker (t + rot) % T, so a worker
 * touches only its own worlds and the operations on one world run in request order (srv_pool.h lanes).
 *
 * Threads: sessions and the table belong to the I/O thread.  Workers read the fixed fields (env,
 * sizes, rot) of the sessions of the jobs they run and touch the env only for their slice.
 * Ownership: a session owns its lanes and scratch; `env` is created by a make job and destroyed by a
 * close job (srv_job.h), and must be gone (NULL) by srv_session_destroy.  The deferred jobs and the
 * close job are the server's (srv_pending.c): it empties them before destroying the session.  The table
 * does not own its sessions: it links them (hnext).
 *
 * Owners: a session belongs to whoever made it.  Made by a CURVE-authenticated client, it belongs to that
 * key (owner); made in plain mode, to whoever holds its token, 128 random bits the make reply carries
 * and every later request must repeat.  srv_session_owned_by decides; a request that fails it must get
 * the same UNKNOWN_SESSION reply as a request naming no session (srv_ops.c).  Ids are random too (so
 * knowing one's own id tells nothing of the others'), but they are names, not secrets.
 */
#ifndef HERD_SRV_SESSION_H
#define HERD_SRV_SESSION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "proto.h"
#include "srv_client.h"
#include "srv_pool.h"
#include "srv_quota.h"
#include "srv_rate.h"

typedef struct srv_job srv_job;
typedef struct srv_session srv_session;

struct srv_session {
    uint64_t id;                /* unique on this server, random, never 0 */
    uint8_t token[PROTO_TOKEN_BYTES];   /* random, set by srv_session_table_add */
    uint8_t view_token[PROTO_TOKEN_BYTES];  /* random too: lets its holder read the session (model, poses,
                                             * stats), never act on it (srv_session_viewable_by) */
    uint8_t owner[SRV_CLIENT_ID_MAX];   /* the maker's identity (srv_client.h) when it is a CURVE key */
    size_t owner_len;                   /* 0: owned by the token alone */
    env_t *env;                 /* see Ownership above */
    const env_spec *spec;       /* the env's (lives as long as env) */
    int nworlds, obs_dim, act_dim, nterms;
    int critic_dim;             /* the spec's critic_dim when the maker asked for critic_obs (reset and step replies
                                 * carry info.critic_obs), else 0 */
    int terrain;                /* 1 for a task with a terrain curriculum (spec nterrain_kinds > 0): reset and step
                                 * replies carry info.terrain_level and info.terrain_kind */
    /* Its worlds' terrain levels, for stats and the metrics: tile_level[w] is world w's last reported level + 1 (0:
     * none yet), written by the worker that runs w's rows; level_sum[k] and level_worlds[k] sum the levels and count
     * the worlds of kind k that have one, moved by the workers (relaxed atomics) when a world's level moves, read by
     * the I/O thread; metric_kind[k] is kind k's index in the metrics (-1: none). */
    uint16_t *tile_level;
    atomic_int_fast64_t level_sum[ENV_MAX_TERRAIN_KINDS], level_worlds[ENV_MAX_TERRAIN_KINDS];
    int metric_kind[ENV_MAX_TERRAIN_KINDS];
    env_autoreset autoreset;
    uint64_t seed;
    int rot;                    /* slice t runs on worker (t + rot) % T: small sessions spread out */
    srv_lane *lanes;            /* 2 per worker: lanes[w], the session's ordered work on worker w, and
                                 * lanes[T + w], its "latest" poses reads there (srv_job.h), which take turns
                                 * with the ordered lane instead of waiting behind it */
    uint8_t *idbits;            /* nworlds bits of scratch for proto_check_world_ids */
    int inflight;               /* jobs of this session queued on workers */
    srv_job *deferred, *deferred_tail;  /* jobs waiting for this session's jobs in flight (srv_pending.c) */
    int closing, destroying;    /* close requested / its job queued */
    srv_job *close_job;         /* the close request's job, until the session is idle (NULL: expiry) */
    double created, last_active;        /* srv_now_s(); last_active: the last request's arrival or reply */
    double step_work;           /* one world-step's solver iterations at the caps (env_cost): a turn's unit */
    double world_step_s;        /* one world-step's estimated CPU seconds at the caps: max_step_seconds' unit */
    uint64_t steps, requests, errors;
    srv_rate rate;              /* of steps */
    srv_quota_hold hold;        /* what it holds against the bounds, and who made it (hold.client: its worlds
                                 * and sessions count this one, srv_quota.h) */
    srv_session *hnext;         /* the table's */
};

/* A session of nworlds worlds for a pool of nthreads workers, rotation rot; fields other than the lanes,
 * scratch, sizes and rot are zero.  NULL when out of memory. */
srv_session *srv_session_new(int nworlds, int nthreads, int rot);
/* The memory a session of nworlds worlds of an env costing c takes with nthreads workers: its own
 * allocations, the env's fixed bytes and its worlds. */
size_t srv_session_cost_bytes(int nworlds, int nthreads, const env_cost *c);
/* Frees s (whose env must be NULL) and sets *s to NULL.  NULL-safe. */
void srv_session_destroy(srv_session **s);
/* The worker that steps world w (0 <= w < nworlds) with T workers. */
int srv_session_world_worker(const srv_session *s, int T, int w);
/* The first world of slice t (0 <= t <= T; slice t is [begin(t), begin(t + 1))). */
int srv_session_slice_begin(const srv_session *s, int T, int t);

#define SRV_SESSION_BUCKETS 256

/* The open sessions by id: a value embedded in the server, set up by srv_session_table_init. */
typedef struct {
    srv_session *buckets[SRV_SESSION_BUCKETS];
    int count;
} srv_session_table;

/* Empties the table. */
void srv_session_table_init(srv_session_table *t);
/* Gives s a fresh random id, a random token and a random view token (getrandom) and links it in.  0, or -1 when the system
 * gave no randomness (s is not linked). */
int srv_session_table_add(srv_session_table *t, srv_session *s);
/* NULL if no open session has this id. */
srv_session *srv_session_table_find(const srv_session_table *t, uint64_t id);
/* Unlinks s (which must be in t); does not free it. */
void srv_session_table_remove(srv_session_table *t, srv_session *s);
/* Nonzero when a request from client identity id (idlen bytes, srv_client_identity) carrying token
 * (PROTO_TOKEN_BYTES, or NULL when the request has none) may act on s: the maker's key when s has an
 * owner (a token sent along must then match too), else the token.  Compares in constant time. */
int srv_session_owned_by(const srv_session *s, const uint8_t *id, size_t idlen, const uint8_t *token);
/* Nonzero when token (PROTO_TOKEN_BYTES, or NULL) is s's view token: the read-only right a viewer needs.
 * It admits only the ops that change nothing (model, poses, stats; srv_ops.c decides), whoever sends
 * it, plain or CURVE-authenticated.  Compares in constant time. */
int srv_session_viewable_by(const srv_session *s, const uint8_t *token);
/* Makes the client identity id the owner of s when it is a CURVE key (kind SRV_CLIENT_KEY). */
void srv_session_set_owner(srv_session *s, const uint8_t *id, size_t idlen);

/* Calls fn(s, arg) for every session; fn may remove (and free) s. */
void srv_session_table_each(srv_session_table *t, void (*fn)(srv_session *s, void *arg), void *arg);

#endif

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
 * close job are the server's (srv_server.c): it empties them before destroying the session.  The table
 * does not own its sessions: it links them (hnext).
 */
#ifndef HERD_SRV_SESSION_H
#define HERD_SRV_SESSION_H

#include <stdint.h>

#include "env.h"
#include "srv_pool.h"
#include "srv_rate.h"

typedef struct srv_job srv_job;
typedef struct srv_session srv_session;

struct srv_session {
    uint64_t id;                /* unique on this server, never 0 */
    env_t *env;                 /* see Ownership above */
    const env_spec *spec;       /* the env's (lives as long as env) */
    int nworlds, obs_dim, act_dim, nterms;
    env_autoreset autoreset;
    uint64_t seed;
    int rot;                    /* slice t runs on worker (t + rot) % T: small sessions spread out */
    srv_lane *lanes;            /* one per worker */
    uint8_t *idbits;            /* nworlds bits of scratch for proto_check_world_ids */
    int inflight;               /* jobs of this session queued on workers */
    srv_job *deferred, *deferred_tail;  /* jobs waiting for this session's jobs in flight (srv_server.c) */
    int closing, destroying;    /* close requested / its job queued */
    srv_job *close_job;         /* the close request's job, until the session is idle (NULL: expiry) */
    double created, last_active;        /* srv_now_s() */
    uint64_t steps, requests, errors;
    srv_rate rate;              /* of steps */
    srv_session *hnext;         /* the table's */
};

/* A session of nworlds worlds for a pool of nthreads workers, rotation rot; fields other than the lanes,
 * scratch, sizes and rot are zero.  NULL when out of memory. */
srv_session *srv_session_new(int nworlds, int nthreads, int rot);
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
    uint32_t id_epoch, id_counter;      /* ids are epoch << 32 | counter: not reused across restarts */
} srv_session_table;

/* Empties the table and draws a random id epoch. */
void srv_session_table_init(srv_session_table *t);
/* Gives s a fresh id and links it in. */
void srv_session_table_add(srv_session_table *t, srv_session *s);
/* NULL if no open session has this id. */
srv_session *srv_session_table_find(const srv_session_table *t, uint64_t id);
/* Unlinks s (which must be in t); does not free it. */
void srv_session_table_remove(srv_session_table *t, srv_session *s);
/* Calls fn(s, arg) for every session; fn may remove (and free) s. */
void srv_session_table_each(srv_session_table *t, void (*fn)(srv_session *s, void *arg), void *arg);

#endif

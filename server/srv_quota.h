/* srv_quota.h — the ledger of what sessions hold against the server's bounds: their worlds, their number and
 * their memory, in all and per client (srv_client.h: a CURVE key, or in plain mode a peer address).
 *
 * A make reserves (checked against every bound; nothing is counted when one would be crossed), its completion
 * commits the bytes the env measured in place of the estimate, and a failed or cancelled make, or a closed
 * or expired session, releases.  A hold records what it holds and is released at most once, so each path
 * that ends a make or a session releases it whatever the other paths did.
 *
 * Threads: the I/O thread only.  No sockets, no envs: tested alone (tests/test_srv_quota.c).
 * Ownership: a hold points at its client entry (the entry's `sessions` count keeps it alive until release).
 */
#ifndef HERD_SRV_QUOTA_H
#define HERD_SRV_QUOTA_H

#include <stddef.h>

#include "srv_client.h"

typedef struct {
    long max_worlds;            /* worlds over all sessions (hello: max_worlds) */
    int max_sessions;           /* sessions over all clients (hello: max_sessions) */
    long client_max_worlds;     /* per client (hello: client_max_worlds) */
    int client_max_sessions;    /* per client (hello: client_max_sessions) */
    size_t mem_ceiling;         /* bytes (hello: max_memory_bytes), shared with what the caller counts apart */
} srv_quota_limits;

typedef struct {
    srv_quota_limits lim;
    long worlds;                /* held: in open sessions and makes in flight */
    int sessions;
    size_t mem;                 /* sessions' bytes: estimates until committed */
} srv_quota;

/* What one session (or the make that creates it) holds. */
typedef struct {
    srv_client *client;         /* NULL: no client entry (out of memory) */
    long worlds;
    size_t mem;
    int held;                   /* reserved and not yet released */
} srv_quota_hold;

void srv_quota_init(srv_quota *q, const srv_quota_limits *lim);
/* Reserves a session of `worlds` worlds and about `bytes` bytes for client c (may be NULL); `other` is the
 * memory counted outside the ledger (replies in flight and queued), which shares the ceiling.  0 and *h
 * holding it; or -1 with nothing counted and a message in msg naming the bound by its hello key. */
int srv_quota_reserve(srv_quota *q, srv_client *c, long worlds, size_t bytes, size_t other, srv_quota_hold *h,
                      char *msg, size_t msglen);
/* The session exists and takes `bytes`: the hold's estimate is replaced by them. */
void srv_quota_commit(srv_quota *q, srv_quota_hold *h, size_t bytes);
/* Gives back what h holds; a hold not held (never reserved, or released already) is left alone. */
void srv_quota_release(srv_quota *q, srv_quota_hold *h);

#endif

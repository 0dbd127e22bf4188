/* srv_quota.c — the ledger of sessions, worlds and their memory.  See srv_quota.h. */
#include "srv_quota.h"

#include <stdio.h>
#include <string.h>

void srv_quota_init(srv_quota *q, const srv_quota_limits *lim)
{
    memset(q, 0, sizeof *q);
    q->lim = *lim;
}

int srv_quota_reserve(srv_quota *q, srv_client *c, long worlds, size_t bytes, size_t other, srv_quota_hold *h,
                      char *msg, size_t msglen)
{
    memset(h, 0, sizeof *h);
    const srv_quota_limits *L = &q->lim;
    if (q->worlds + worlds > L->max_worlds) {
        snprintf(msg, msglen, "num_worlds %ld would exceed the server's limit of %ld worlds (max_worlds; %ld in use)",
                 worlds, L->max_worlds, q->worlds);
        return -1;
    }
    if (q->sessions + 1 > L->max_sessions) {
        snprintf(msg, msglen, "the server has %d sessions open, its limit (max_sessions): close one first",
                 q->sessions);
        return -1;
    }
    if (c && c->sessions + 1 > L->client_max_sessions) {
        snprintf(msg, msglen, "this client has %d sessions open, its limit (client_max_sessions): close one first",
                 c->sessions);
        return -1;
    }
    if (c && c->worlds + worlds > L->client_max_worlds) {
        snprintf(msg, msglen, "num_worlds %ld would exceed this client's limit of %ld worlds (client_max_worlds; "
                 "%ld in use)", worlds, L->client_max_worlds, c->worlds);
        return -1;
    }
    size_t used = q->mem + other;
    if (used > L->mem_ceiling || bytes > L->mem_ceiling - used) {
        snprintf(msg, msglen, "a session of %ld worlds needs about %zu KiB; with %zu MiB in use that would exceed the "
                 "server's memory ceiling of %zu MiB (max_memory_bytes)", worlds, bytes >> 10, used >> 20,
                 L->mem_ceiling >> 20);
        return -1;
    }
    q->worlds += worlds;
    q->sessions++;
    q->mem += bytes;
    if (c) {
        c->worlds += worlds;
        c->sessions++;
    }
    *h = (srv_quota_hold){c, worlds, bytes, 1};
    return 0;
}

void srv_quota_commit(srv_quota *q, srv_quota_hold *h, size_t bytes)
{
    if (!h->held) return;
    q->mem = q->mem - h->mem + bytes;
    h->mem = bytes;
}

void srv_quota_release(srv_quota *q, srv_quota_hold *h)
{
    if (!h->held) return;
    q->worlds -= h->worlds;
    q->sessions--;
    q->mem -= h->mem;
    if (h->client) {
        h->client->worlds -= h->worlds;
        h->client->sessions--;
    }
    h->held = 0;
    h->worlds = 0;
    h->mem = 0;
}

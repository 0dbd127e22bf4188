/* srv_client.c — the registry of connected clients.  See srv_client.h.
 *
 * A chained hash table with a fixed bucket array: a server has at most a few thousand clients, and
 * lookups happen once per request. */
#include "srv_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_buckets.h"

#define BUCKETS 1024

struct srv_clients {
    srv_client *buckets[BUCKETS];
    int count;
};

static size_t bucket_of(const void *id, size_t len)
{
    const uint8_t *p = id;
    uint64_t h = 1469598103934665603ull;        /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
    return (size_t)(h % BUCKETS);
}

srv_clients *srv_clients_new(void) { return calloc(1, sizeof(srv_clients)); }

void srv_clients_destroy(srv_clients **pcs)
{
    if (!pcs || !*pcs) return;
    srv_clients *cs = *pcs;
    for (int b = 0; b < BUCKETS; b++) {
        srv_client *next;
        for (srv_client *c = cs->buckets[b]; c; c = next) {
            next = c->hnext;
            free(c);
        }
    }
    free(cs);
    *pcs = NULL;
}

srv_client *srv_client_find(const srv_clients *cs, const void *id, size_t len)
{
    if (!len || len > SRV_CLIENT_ID_MAX) return NULL;
    for (srv_client *c = cs->buckets[bucket_of(id, len)]; c; c = c->hnext)
        if (c->idlen == len && !memcmp(c->id, id, len)) return c;
    return NULL;
}

srv_client *srv_client_get(srv_clients *cs, const void *id, size_t len, double now)
{
    if (!len || len > SRV_CLIENT_ID_MAX) return NULL;
    srv_client *c = srv_client_find(cs, id, len);
    if (c) return c;
    c = calloc(1, sizeof *c);
    if (!c) return NULL;
    memcpy(c->id, id, len);
    c->idlen = len;
    c->first_seen = c->last_seen = now;
    srv_client **b = &cs->buckets[bucket_of(id, len)];
    c->hnext = *b;
    *b = c;
    cs->count++;
    return c;
}

int srv_client_idle(const srv_client *c)
{
    return !c->worlds && !c->sessions && !c->inflight && !c->queued_bytes;
}

void srv_client_release(srv_clients *cs, srv_client **pc)
{
    if (!pc || !*pc || !srv_client_idle(*pc)) return;
    srv_client *c = *pc;
    srv_client **pp = &cs->buckets[bucket_of(c->id, c->idlen)];
    while (*pp && *pp != c) pp = &(*pp)->hnext;
    if (*pp) {
        *pp = c->hnext;
        cs->count--;
    }
    free(c);
    *pc = NULL;
}

int srv_clients_count(const srv_clients *cs) { return cs->count; }

void srv_clients_each(srv_clients *cs, void (*fn)(srv_client *c, void *arg), void *arg)
{
    SRV_BUCKETS_EACH(srv_client, cs->buckets, BUCKETS, fn, arg);
}

size_t srv_client_identity(uint8_t *out, const char *key, const void *addr, size_t addrlen)
{
    if (key && *key) {
        size_t n = strnlen(key, SRV_CLIENT_ID_MAX - 1);
        out[0] = SRV_CLIENT_KEY;
        memcpy(out + 1, key, n);
        return n + 1;
    }
    if (!addr || !addrlen) return 0;
    if (addrlen > SRV_CLIENT_ID_MAX - 2) addrlen = SRV_CLIENT_ID_MAX - 2;
    out[0] = SRV_CLIENT_ADDRESS;
    memcpy(out + 1, addr, addrlen);
    return addrlen + 1;
}

size_t srv_client_peer_address(char *out, size_t cap, const char *peer)
{
    if (!out || cap == 0) return 0;
    static const char ipc[] = "localhost:";
    const char *uid = NULL;
    size_t uidlen = 0;
    if (peer && strncmp(peer, ipc, sizeof ipc - 1) == 0) {
        uid = peer + sizeof ipc - 1;                    /* UID:GID:PID, three decimal numbers */
        uidlen = strspn(uid, "0123456789");
        const char *rest = uid + uidlen;
        int ok = uidlen > 0 && rest[0] == ':';
        for (int k = 0; ok && k < 2; k++) {             /* :GID then :PID */
            size_t n = strspn(rest + 1, "0123456789");
            ok = n > 0 && (rest[1 + n] == (k == 0 ? ':' : '\0'));
            rest += 1 + n;
        }
        if (!ok) uid = NULL;
    }
    int n;
    if (uid) n = snprintf(out, cap, "local:uid=%.*s", (int)uidlen, uid);
    else if (peer && *peer && strncmp(peer, ipc, sizeof ipc - 1) != 0) n = snprintf(out, cap, "%s", peer);
    else n = snprintf(out, cap, "local");
    if (n < 0) n = 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t srv_client_connection_identity(uint8_t *out, const void *rid, size_t ridlen)
{
    if (!rid || !ridlen) return 0;
    if (ridlen > SRV_CLIENT_ID_MAX - 2) ridlen = SRV_CLIENT_ID_MAX - 2;
    out[0] = SRV_CLIENT_CONNECTION;
    memcpy(out + 1, rid, ridlen);
    return ridlen + 1;
}

void srv_client_name(const srv_client *c, char *out, size_t outlen)
{
    if (!outlen) return;
    out[0] = 0;
    if (!c->idlen) return;
    if (c->id[0] == SRV_CLIENT_KEY || c->id[0] == SRV_CLIENT_ADDRESS) {
        size_t o;
        o = (size_t)snprintf(out, outlen, c->id[0] == SRV_CLIENT_KEY ? "key " : "address ");
        for (size_t i = 1; i < c->idlen && o + 1 < outlen; i++)
            out[o++] = (c->id[i] >= 0x20 && c->id[i] < 0x7f) ? (char)c->id[i] : '?';
        out[o < outlen ? o : outlen - 1] = 0;
        return;
    }
    if (c->id[0] == SRV_CLIENT_CONNECTION) {        /* the routing id, in hex */
        size_t o = (size_t)snprintf(out, outlen, "connection ");
        for (size_t i = 1; i < c->idlen && o + 3 <= outlen; i++) o += (size_t)snprintf(out + o, outlen - o, "%02x", c->id[i]);
        return;
    }
}

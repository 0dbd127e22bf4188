/* srv_client.h — the connected clients, by identity: what each one holds and costs (for quotas).
 *
 * A client's identity is the bytes that name it for as long as it may hold sessions: with CURVE, its
 * authenticated public key (z85 text, 40 bytes, as the ZAP handler reports it in the "User-Id"
 * property, srv_auth.h); in plain mode, the address its connection came from (ZeroMQ's "Peer-Address", as
 * srv_client_peer_address reads it: the IP for tcp://, the local user for ipc://, "local" for inproc://), so that
 * opening more connections, or starting more processes, does not multiply what one peer may hold; its sessions
 * stay reachable through their tokens (srv_session.h).
 * srv_client_identity builds it from those two; it is prefixed with its kind so the two never collide.
 * The bytes of replies queued and not yet sent are counted per connection instead (srv_client_connection_identity,
 * in the server's registry of connections): a client that does not read its replies holds up only its own
 * connection, never another connection from the same address or key.
 *
 * The counters are kept by the server and read by whoever enforces quotas: worlds and sessions the client made
 * and has not closed, including makes in flight (the ledger, srv_quota.c), requests in flight (srv_pending.c),
 * and bytes of replies queued for it but not yet sent (srv_reply.c).
 *
 * Threads: the I/O thread only.
 * Ownership: srv_clients owns its entries.  An entry stays valid until srv_client_release frees it,
 * which happens only once it holds nothing (srv_client_idle); sessions point at their maker's entry
 * and keep it alive through `sessions`.
 */
#ifndef HERD_SRV_CLIENT_H
#define HERD_SRV_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_CLIENT_ID_MAX 257    /* kind byte + an address (<= 255 bytes) or a z85 key (40) */

typedef enum { SRV_CLIENT_ADDRESS = 'a', SRV_CLIENT_KEY = 'k', SRV_CLIENT_CONNECTION = 'c' } srv_client_kind;

typedef struct srv_client srv_client;
typedef struct srv_clients srv_clients;

struct srv_client {
    uint8_t id[SRV_CLIENT_ID_MAX];      /* kind byte, then the address or the key */
    size_t idlen;
    /* what the client holds now */
    long worlds;                /* in its sessions, including makes in flight */
    int sessions;               /* open, including makes in flight */
    int inflight;               /* requests accepted and not yet answered */
    double inflight_s;          /* the estimated CPU seconds of its steps among them (client_max_inflight_seconds) */
    _Atomic size_t queued_bytes;        /* replies handed to ZeroMQ and not yet sent (ZeroMQ's I/O thread
                                         * subtracts when it frees a sent or dropped reply) */
    /* totals, for logs and stats */
    uint64_t requests, errors;
    double first_seen, last_seen;       /* srv_now_s() */
    srv_client *hnext;          /* the registry's */
};

/* An empty registry; NULL when out of memory. */
srv_clients *srv_clients_new(void);
/* Frees the registry and every entry (held or not) and sets *cs to NULL.  NULL-safe. */
void srv_clients_destroy(srv_clients **cs);
/* The entry of identity id (len bytes, as made by srv_client_identity), created (zeroed, first_seen
 * and last_seen = now) if absent.  NULL when out of memory or len is 0 or over SRV_CLIENT_ID_MAX. */
srv_client *srv_client_get(srv_clients *cs, const void *id, size_t len, double now);
/* The entry of identity id, or NULL. */
srv_client *srv_client_find(const srv_clients *cs, const void *id, size_t len);
/* Nonzero when c holds nothing: no world, session, request in flight or queued byte. */
int srv_client_idle(const srv_client *c);
/* Frees *c if it is idle (and sets *c to NULL); otherwise leaves it.  NULL-safe. */
void srv_client_release(srv_clients *cs, srv_client **c);
/* How many entries there are. */
int srv_clients_count(const srv_clients *cs);
/* Calls fn(c, arg) for every entry; fn may release c. */
void srv_clients_each(srv_clients *cs, void (*fn)(srv_client *c, void *arg), void *arg);

/* Writes the identity of a peer into out (SRV_CLIENT_ID_MAX bytes) and returns its length: the
 * authenticated key when key is non-NULL and non-empty (NUL-terminated text), else its address
 * (addr, addrlen bytes; truncated to 255).  0 when there is neither. */
size_t srv_client_identity(uint8_t *out, const char *key, const void *addr, size_t addrlen);
/* The address a plain-mode peer is known by, from ZeroMQ's "Peer-Address" property of its message (peer, may be
 * NULL): a tcp:// peer's IP as given; an ipc:// peer, which libzmq reports as "localhost:UID:GID:PID" (the
 * socket's peer credentials), as "local:uid=UID", so that every process of one local user is one client (the
 * process id would let each new process start with fresh quotas); anything else (inproc://, ipc:// without
 * credentials, an empty property) as "local".  Writes at most cap bytes, NUL-terminated; returns the length. */
size_t srv_client_peer_address(char *out, size_t cap, const char *peer);
/* Writes the identity of one connection into out (SRV_CLIENT_ID_MAX bytes) and returns its length: the
 * routing id the ROUTER socket gave it (rid, ridlen bytes; truncated to 255), 0 when there is none.  Entries of
 * this kind live in a registry of their own and count only the bytes of replies queued for that connection. */
size_t srv_client_connection_identity(uint8_t *out, const void *rid, size_t ridlen);
/* Writes a printable form of an identity (for logs: the key or the address), NUL-terminated. */
void srv_client_name(const srv_client *c, char *out, size_t outlen);

#endif

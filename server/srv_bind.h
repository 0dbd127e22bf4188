/* srv_bind.h — binding the server's socket to its ZeroMQ endpoint, host names included.
 *
 * ZeroMQ's bind takes a tcp:// host that is an IP address, `*` or a network interface name; it does not
 * resolve host names (tcp://localhost:5555 fails with "No such device"), and it binds an IPv6 address
 * only on a socket with ZMQ_IPV6 set.  srv_bind resolves a host name with getaddrinfo and binds every
 * address it has, IPv4 first, on one port (a `*` port is the one the first bind picked), and sets
 * ZMQ_IPV6 before binding an IPv6 address.  Other endpoints (ipc://, inproc://, addresses, `*`, interface
 * names) are bound as they are.  Uses ZeroMQ and the resolver; no threads.
 */
#ifndef HERD_SRV_BIND_H
#define HERD_SRV_BIND_H

#include <stddef.h>

typedef struct {
    char endpoint[256];     /* the first endpoint bound, as ZeroMQ reports it (tcp://127.0.0.1:PORT) */
    int bound;              /* endpoints bound (a host name may have several addresses) */
    char skipped[256];      /* further addresses of a host name that could not be bound, and why ("" = none) */
} srv_bound;

/* Binds `socket` (a ZeroMQ socket) to `ep`.  With loopback_only, a host name must resolve to loopback
 * addresses only (plain mode, PROTOCOL.md section 1, relies on it).  The first address must bind; later
 * addresses of a name that fail are listed in out->skipped.  0, or -1 with a message (an unresolvable
 * name, an address in use and who holds it, ...). */
int srv_bind(void *socket, const char *ep, int loopback_only, srv_bound *out, char *err, size_t errlen);

#endif

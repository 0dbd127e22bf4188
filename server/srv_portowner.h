/* srv_portowner.h — who holds a TCP port: for the "address already in use" message at start-up.
 *
 * Reads /proc/net/tcp and /proc/net/tcp6 for a socket listening on the port, then /proc/PID/fd for the process
 * that owns that socket.  Linux only; best effort (another user's processes may not be readable).
 */
#ifndef HERD_SRV_PORTOWNER_H
#define HERD_SRV_PORTOWNER_H

#include <stddef.h>

/* Writes "pid 1234 (herd-server)" (or "an unknown process" when the socket's owner cannot be read) into out
 * and returns the pid (0 if unknown); returns -1 when nothing on this machine listens on the port. */
int srv_port_owner(int port, char *out, size_t cap);

/* The port of a "tcp://HOST:PORT" endpoint, or -1 for other transports or a port that is not a number. */
int srv_endpoint_port(const char *endpoint);

#endif

/* srv_auth.h — who may connect: ZeroMQ CURVE keys and a ZAP handler that admits only authorized clients.
 *
 * With CURVE on (srv_config_curve), the server's ROUTER socket is a CURVE server with the configured
 * key pair, and a ZAP handler (RFC 27, on inproc://zeromq.zap.01 of the server's context, one thread)
 * answers every handshake: 200 with the client's public key in Z85 as its User-Id when the key is one
 * of the authorized keys (or the server's own public key: a probe holding the server's secret key,
 * deploy/herd_ping.c), 400 otherwise (the connection is then dropped by ZeroMQ; the client sees
 * nothing but timeouts).  Every message of an admitted client carries that User-Id (zmq_msg_gets), so
 * the server knows who sent it (srv_client.h) and whose sessions it may touch (srv_session.h).
 *
 * Key files (srv_auth_keygen writes them; czmq's certificate format, so czmq tools can read them):
 *     curve
 *         public-key = "<40 Z85 characters>"
 *         secret-key = "<40 Z85 characters>"        (secret files only)
 * A file holding just a 40-character Z85 key (and # comments) is accepted too.  The authorized keys are
 * a directory (every regular *.pub / *.key file in it: their public keys) or one file (every public
 * key in it, one per line or as key files concatenated).
 *
 * Threads: srv_auth_new / srv_auth_apply / srv_auth_destroy on the thread that owns the server; the
 * handler thread touches only its own socket and the immutable key list.
 * Ownership: srv_auth owns the key list and the handler thread; the ZeroMQ context is the caller's and
 * must outlive it (srv_auth_destroy before zmq_ctx_term).
 */
#ifndef HERD_SRV_AUTH_H
#define HERD_SRV_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "srv_config.h"

typedef struct srv_auth srv_auth;

/* Loads the keys of c and, when CURVE is on, starts the ZAP handler on ctx.  With CURVE off returns an
 * object that does nothing (srv_auth_enabled 0).  NULL with a message on failure (libzmq without CURVE,
 * an unreadable or malformed key file, no authorized key, a public key that does not match). */
srv_auth *srv_auth_new(void *ctx, const srv_config *c, char *err, size_t errlen);
/* Stops the handler and frees everything; *a = NULL.  NULL-safe. */
void srv_auth_destroy(srv_auth **a);
/* Nonzero when CURVE is on.  NULL-safe. */
int srv_auth_enabled(const srv_auth *a);
/* How many client keys the authorized keys held (not counting the server's own). */
int srv_auth_nkeys(const srv_auth *a);
/* The server's public key, Z85 (40 characters), "" when CURVE is off. */
const char *srv_auth_public_key(const srv_auth *a);
/* Makes socket a CURVE server with the server's keys (before bind).  No-op when off.  0 or -1. */
int srv_auth_apply(const srv_auth *a, void *socket, char *err, size_t errlen);
/* Handshakes refused so far (any thread may read it; approximate). */
uint64_t srv_auth_refused(const srv_auth *a);

/* Reads a key file: the public key (32 bytes) and, when the file has one and secret is not NULL, the
 * secret key.  *has_secret tells which.  0 or -1 with a message. */
int srv_auth_read_key_file(const char *path, uint8_t pub[32], uint8_t secret[32], int *has_secret, char *err,
                           size_t errlen);
/* Writes a fresh key pair as dir/name.key (secret, mode 0600) and dir/name.pub; refuses to overwrite.
 * z85_public: the public key (41 bytes), or NULL.  0 or -1 with a message. */
int srv_auth_write_pair(const char *dir, const char *name, char *z85_public, char *err, size_t errlen);
/* --keygen DIR: server and client key pairs and DIR/authorized_keys (the client's public key). */
int srv_auth_keygen(const char *dir, char *err, size_t errlen);

#endif

/* srv_reply.h — sending replies.  Each send names whom it answers (srv_reply_to: the envelope to echo, the
 * request's op and arrival for the metrics, and the client whose queued-bytes budget the reply counts
 * against; srv_reply_to in srv_internal.h), as Redis's addReply(client, ...): no "current reply" is kept in the server.
 *
 * Threads: the I/O thread, except the free callback ZeroMQ runs on its own I/O thread (atomics only).
 * Ownership: a send takes the envelope frames (closed in every case; to->nframes becomes 0).
 */
#ifndef HERD_SRV_REPLY_H
#define HERD_SRV_REPLY_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "proto.h"
#include "srv_internal.h"

void srv_close_frames(zmq_msg_t *f, int n);
/* Sends the envelope of `to` and buf (len bytes).  own: buf is malloc'd memory that ZeroMQ frees once sent
 * (zero copy; counted in the memory ceiling and the client's queued bytes until then, and dropped when the
 * client's unread replies would exceed its budget); otherwise the bytes are copied. */
void srv_send_reply(srv_server *S, srv_reply_to *to, void *buf, size_t len, int own);
/* An error reply (none when to->nframes < 0); counts the error against the server and sess (may be NULL). */
void srv_send_error(srv_server *S, srv_reply_to *to, uint64_t id, srv_session *sess, proto_code code,
                    const char *msg);
/* Sends the small reply encoded in S->out. */
void srv_send_small(srv_server *S, srv_reply_to *to);

#endif

/* srv_ops.h — the request handlers, one per op, and the dispatch of a decoded request to them.  See
 * srv_internal.h.  I/O thread only. */
#ifndef HERD_SRV_OPS_H
#define HERD_SRV_OPS_H

#include "srv_pending.h"

/* One received request handled (frames: its envelope, nf of them; payload: the request); what it does not
 * move into a pending request stays the caller's. */
void srv_handle_request(srv_server *S, zmq_msg_t *frames, int nf, zmq_msg_t *payload);

#endif

/* srv_pending.h — a pending request's life: from a handler to a worker (started, or deferred behind the
 * session's work), cancelled (a closed session, a vanished connection, the drain deadline) or completed
 * (the reply sent).  See srv_internal.h.  I/O thread only. */
#ifndef HERD_SRV_PENDING_H
#define HERD_SRV_PENDING_H

#include "srv_reply.h"

/* A pending request made from the request being handled: takes its envelope and decoded request. */
pending *srv_pending_new(srv_server *S, srv_job_kind kind, incoming *in);
void srv_pending_free(srv_server *S, pending *p);
/* Replies with an error and frees p (a make's reservation is released). */
void srv_pending_fail(srv_server *S, pending *p, proto_code code, const char *msg);
void srv_start_or_fail(srv_server *S, pending *p);
void srv_submit(srv_server *S, pending *p);
void srv_submit_control(srv_server *S, pending *p);
void srv_finish_close_if_idle(srv_server *S, srv_session *s);
/* Cancels every pending request that matches: of session s (if not NULL), from connection fd (if >= 0);
 * code: how to answer (a proto_code, or CANCEL_SILENT). */
void srv_cancel_where(srv_server *S, const srv_session *s, int fd, int code);
/* Reads the ROUTER's monitor: a connection that closed takes its pending work with it (no reply could reach
 * it; cancelled silently).  Called by the loop when the monitor is readable, and before a request becomes
 * pending: a connection is named by its fd (ZMQ_SRCFD), and the kernel gives a closed connection's fd to the
 * next one accepted.  libzmq puts a connection's DISCONNECTED event on the monitor before it closes the fd,
 * so the events of every earlier holder of a request's fd are readable by the time the request is received:
 * read then, before the request is registered, none of them can cancel it. */
void srv_read_disconnects(srv_server *S);
void srv_begin_close(srv_server *S, srv_session *s, pending *close_request);
void srv_process_done(srv_server *S);
/* Bytes the memory ceiling counts now: sessions (made and being made), reply buffers in flight, replies
 * queued in ZeroMQ. */
size_t srv_mem_used(srv_server *S);

#endif

/* srv_thread.h — a herd server on a thread of the calling process (tests, benchmarks, embedding).
 *
 * Ownership: srv_thread_start's result owns its server; srv_thread_stop(&t) stops, joins and frees both.
 */
#ifndef HERD_SRV_THREAD_H
#define HERD_SRV_THREAD_H

#include <stddef.h>

#include "srv_server.h"

typedef struct srv_thread srv_thread;

/* srv_server_new + srv_server_run on a new thread.  NULL with a message on failure. */
srv_thread *srv_thread_start(const srv_config *c, char *err, size_t errlen);
/* The running server (borrowed). */
srv_server *srv_thread_server(srv_thread *t);
const char *srv_thread_endpoint(const srv_thread *t);
/* srv_server_stop, join (the requests in flight are answered first), destroy.  Returns run's result. */
int srv_thread_stop(srv_thread **t);

#endif

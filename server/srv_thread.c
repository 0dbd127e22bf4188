/* srv_thread.c — a herd server on a thread of the calling process.  See srv_thread.h. */
#include "srv_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct srv_thread {
    srv_server *s;
    pthread_t th;
    int rc;
};

static void *thread_main(void *arg)
{
    srv_thread *t = arg;
    t->rc = srv_server_run(t->s);
    return NULL;
}

srv_thread *srv_thread_start(const srv_config *c, char *err, size_t errlen)
{
    srv_thread *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->s = srv_server_new(c, err, errlen);
    if (!t->s) {
        free(t);
        return NULL;
    }
    if (pthread_create(&t->th, NULL, thread_main, t)) {
        snprintf(err, errlen, "cannot start the server thread");
        srv_server_destroy(&t->s);
        free(t);
        return NULL;
    }
    return t;
}

srv_server *srv_thread_server(srv_thread *t) { return t->s; }
const char *srv_thread_endpoint(const srv_thread *t) { return srv_server_endpoint(t->s); }

int srv_thread_stop(srv_thread **pt)
{
    if (!pt || !*pt) return 0;
    srv_thread *t = *pt;
    srv_server_stop(t->s);
    pthread_join(t->th, NULL);
    int rc = t->rc;
    srv_server_destroy(&t->s);
    free(t);
    *pt = NULL;
    return rc;
}

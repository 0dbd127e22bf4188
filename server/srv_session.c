/* srv_session.c — sessions and the session table.  See srv_session.h. */
#include "srv_session.h"

#include <assert.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

srv_session *srv_session_new(int nworlds, int nthreads, int rot)
{
    srv_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->nworlds = nworlds;
    s->rot = rot;
    s->lanes = calloc((size_t)nthreads, sizeof *s->lanes);
    s->idbits = calloc((size_t)nworlds / 8 + 1, 1);
    if (!s->lanes || !s->idbits) srv_session_destroy(&s);
    return s;
}

void srv_session_destroy(srv_session **ps)
{
    if (!ps || !*ps) return;
    srv_session *s = *ps;
    assert(!s->env && "a session's env is destroyed by its close job (srv_job.h)");
    free(s->lanes);
    free(s->idbits);
    free(s);
    *ps = NULL;
}

int srv_session_world_worker(const srv_session *s, int T, int w)
{
    int t = (int)((((int64_t)w + 1) * T + s->nworlds - 1) / s->nworlds) - 1;
    return (t + s->rot) % T;
}

int srv_session_slice_begin(const srv_session *s, int T, int t) { return (int)((int64_t)t * s->nworlds / T); }

void srv_session_table_init(srv_session_table *t)
{
    *t = (srv_session_table){0};
    if (getrandom(&t->id_epoch, sizeof t->id_epoch, GRND_NONBLOCK) != sizeof t->id_epoch)
        t->id_epoch = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16;
}

void srv_session_table_add(srv_session_table *t, srv_session *s)
{
    do {
        s->id = (uint64_t)t->id_epoch << 32 | ++t->id_counter;
    } while (!s->id || srv_session_table_find(t, s->id));
    srv_session **b = &t->buckets[s->id % SRV_SESSION_BUCKETS];
    s->hnext = *b;
    *b = s;
    t->count++;
}

srv_session *srv_session_table_find(const srv_session_table *t, uint64_t id)
{
    for (srv_session *s = t->buckets[id % SRV_SESSION_BUCKETS]; s; s = s->hnext)
        if (s->id == id) return s;
    return NULL;
}

void srv_session_table_remove(srv_session_table *t, srv_session *s)
{
    srv_session **pp = &t->buckets[s->id % SRV_SESSION_BUCKETS];
    while (*pp && *pp != s) pp = &(*pp)->hnext;
    assert(*pp && "the session is in the table");
    *pp = s->hnext;
    s->hnext = NULL;
    t->count--;
}

void srv_session_table_each(srv_session_table *t, void (*fn)(srv_session *s, void *arg), void *arg)
{
    for (int b = 0; b < SRV_SESSION_BUCKETS; b++) {
        srv_session *next;
        for (srv_session *s = t->buckets[b]; s; s = next) {
            next = s->hnext;
            fn(s, arg);
        }
    }
}

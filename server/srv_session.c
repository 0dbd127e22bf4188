/* srv_session.c — sessions and the session table.  See srv_session.h. */
#include "srv_session.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "srv_buckets.h"

srv_session *srv_session_new(int nworlds, int nthreads, int rot)
{
    srv_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->nworlds = nworlds;
    s->rot = rot;
    s->lanes = calloc(2 * (size_t)nthreads, sizeof *s->lanes);
    s->idbits = calloc((size_t)nworlds / 8 + 1, 1);
    /* zeroed pages: a flat task's session never touches them */
    s->tile_level = calloc((size_t)nworlds, sizeof *s->tile_level);
    for (int k = 0; k < ENV_MAX_TERRAIN_KINDS; k++) s->metric_kind[k] = -1;
    if (!s->lanes || !s->idbits || !s->tile_level) srv_session_destroy(&s);
    return s;
}

/* Each allocation costs the allocator's header and rounding besides its bytes. */
#define ALLOC_OVERHEAD 32

size_t srv_session_cost_bytes(int nworlds, int nthreads, const env_cost *c)
{
    size_t own = sizeof(srv_session) + 2 * (size_t)nthreads * sizeof(srv_lane) + (size_t)nworlds / 8 + 1 +
                 (size_t)nworlds * sizeof(uint16_t);
    return own + 4 * ALLOC_OVERHEAD + c->fixed_bytes + (size_t)nworlds * c->world_bytes;
}

void srv_session_destroy(srv_session **ps)
{
    if (!ps || !*ps) return;
    srv_session *s = *ps;
    assert(!s->env && "a session's env is destroyed by its close job (srv_job.h)");
    free(s->lanes);
    free(s->idbits);
    free(s->tile_level);
    free(s);
    *ps = NULL;
}

int srv_session_world_worker(const srv_session *s, int T, int w)
{
    int t = (int)((((int64_t)w + 1) * T + s->nworlds - 1) / s->nworlds) - 1;
    return (t + s->rot) % T;
}

int srv_session_slice_begin(const srv_session *s, int T, int t) { return (int)((int64_t)t * s->nworlds / T); }

void srv_session_table_init(srv_session_table *t) { *t = (srv_session_table){0}; }

/* Fills p with n random bytes from the kernel's CSPRNG (blocking only until it is seeded, at boot). */
static int random_bytes(void *p, size_t n)
{
    uint8_t *q = p;
    while (n) {
        ssize_t r = getrandom(q, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        q += r;
        n -= (size_t)r;
    }
    return 0;
}

int srv_session_table_add(srv_session_table *t, srv_session *s)
{
    if (random_bytes(s->token, sizeof s->token)) return -1;
    if (random_bytes(s->view_token, sizeof s->view_token)) return -1;
    do {
        if (random_bytes(&s->id, sizeof s->id)) return -1;
    } while (!s->id || srv_session_table_find(t, s->id));
    srv_session **b = &t->buckets[s->id % SRV_SESSION_BUCKETS];
    s->hnext = *b;
    *b = s;
    t->count++;
    return 0;
}

/* Equality of n bytes in time independent of where they differ. */
static int same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    volatile uint8_t d = 0;
    for (size_t i = 0; i < n; i++) d |= a[i] ^ b[i];
    return d == 0;
}

int srv_session_owned_by(const srv_session *s, const uint8_t *id, size_t idlen, const uint8_t *token)
{
    int token_ok = token && same_bytes(token, s->token, sizeof s->token);
    if (!s->owner_len) return token_ok;
    if (token && !token_ok) return 0;
    return idlen == s->owner_len && same_bytes(id, s->owner, idlen);
}

int srv_session_viewable_by(const srv_session *s, const uint8_t *token)
{
    return token && same_bytes(token, s->view_token, sizeof s->view_token);
}

void srv_session_set_owner(srv_session *s, const uint8_t *id, size_t idlen)
{
    s->owner_len = 0;
    if (!id || !idlen || idlen > sizeof s->owner || id[0] != SRV_CLIENT_KEY) return;
    memcpy(s->owner, id, idlen);
    s->owner_len = idlen;
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
    SRV_BUCKETS_EACH(srv_session, t->buckets, SRV_SESSION_BUCKETS, fn, arg);
}

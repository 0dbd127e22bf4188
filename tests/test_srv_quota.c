/* test_srv_quota.c — the ledger of sessions, worlds and their memory (srv_quota.h): every bound refuses with
 * its hello key and counts nothing, and every path that ends a make or a session (made then closed, a make
 * that failed, one cancelled, a disconnect's, a release repeated) gives back exactly what was reserved. */
#include <criterion/criterion.h>
#include <string.h>

#include "srv_quota.h"

static srv_quota_limits limits(void)
{
    return (srv_quota_limits){.max_worlds = 100, .max_sessions = 4, .client_max_worlds = 60,
                              .client_max_sessions = 3, .mem_ceiling = 10000};
}

static void assert_empty(const srv_quota *q, const srv_client *c)
{
    cr_assert_eq(q->worlds, 0, "worlds left held: %ld", q->worlds);
    cr_assert_eq(q->sessions, 0, "sessions left held: %d", q->sessions);
    cr_assert_eq(q->mem, 0, "bytes left held: %zu", q->mem);
    if (c) {
        cr_assert_eq(c->worlds, 0, "the client's worlds left held: %ld", c->worlds);
        cr_assert_eq(c->sessions, 0, "the client's sessions left held: %d", c->sessions);
    }
}

/* Each bound, alone, refuses with its hello key in the message, and the refused reservation counts nothing. */
Test(quota, each_bound_refuses_by_its_name_and_counts_nothing)
{
    struct {
        long worlds;
        size_t bytes, other;
        int client_sessions;
        long client_worlds;
        int server_sessions;
        const char *key;
    } cases[] = {
        {101, 10, 0, 0, 0, 0, "(max_worlds;"},
        {1, 10, 0, 0, 0, 4, "(max_sessions)"},
        {1, 10, 0, 3, 0, 0, "(client_max_sessions)"},
        {61, 10, 0, 0, 0, 0, "(client_max_worlds;"},
        {1, 10001, 0, 0, 0, 0, "(max_memory_bytes)"},
        {1, 5000, 5001, 0, 0, 0, "(max_memory_bytes)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        srv_quota_limits L = limits();
        srv_quota q;
        srv_quota_init(&q, &L);
        q.sessions = cases[k].server_sessions;
        srv_client c;
        memset(&c, 0, sizeof c);
        c.sessions = cases[k].client_sessions;
        c.worlds = cases[k].client_worlds;
        srv_quota_hold h;
        char m[256] = "";
        cr_assert_eq(srv_quota_reserve(&q, &c, cases[k].worlds, cases[k].bytes, cases[k].other, &h, m, sizeof m), -1,
                     "case %zu is refused", k);
        cr_assert(strstr(m, cases[k].key), "case %zu: the message names %s: %s", k, cases[k].key, m);
        cr_assert_eq(q.worlds, 0);
        cr_assert_eq(q.sessions, cases[k].server_sessions);
        cr_assert_eq(q.mem, 0);
        cr_assert_eq(c.sessions, cases[k].client_sessions);
        cr_assert_eq(c.worlds, cases[k].client_worlds);
        cr_assert(!h.held);
        srv_quota_release(&q, &h);      /* releasing a refused hold is harmless */
        cr_assert_eq(q.sessions, cases[k].server_sessions);
    }
}

/* Up to each bound exactly: reservations succeed, the next one is refused. */
Test(quota, bounds_are_inclusive)
{
    srv_quota_limits L = limits();
    srv_quota q;
    srv_quota_init(&q, &L);
    srv_client c;
    memset(&c, 0, sizeof c);
    srv_quota_hold h[4];
    char m[256];
    cr_assert_eq(srv_quota_reserve(&q, &c, 60, 100, 0, &h[0], m, sizeof m), 0, "%s", m);
    cr_assert_eq(srv_quota_reserve(&q, NULL, 40, 9900, 0, &h[1], m, sizeof m), 0, "%s", m);
    cr_assert_eq(srv_quota_reserve(&q, NULL, 1, 0, 0, &h[2], m, sizeof m), -1, "the 101st world");
    srv_quota_release(&q, &h[1]);
    srv_quota_release(&q, &h[0]);
    assert_empty(&q, &c);
}

/* The paths of a session's life, each from a fresh reservation; the ledger is empty after every one. */
Test(quota, every_path_gives_back_what_it_reserved)
{
    srv_quota_limits L = limits();
    srv_quota q;
    srv_quota_init(&q, &L);
    srv_client c;
    memset(&c, 0, sizeof c);
    char m[256];
    srv_quota_hold make, sess;
    /* made (the estimate replaced by the measured bytes, more or fewer), then closed */
    for (size_t measured = 50; measured <= 500; measured += 450) {
        cr_assert_eq(srv_quota_reserve(&q, &c, 10, 200, 0, &make, m, sizeof m), 0, "%s", m);
        sess = make;
        make.held = 0;          /* moved into the session, as complete_make does */
        srv_quota_commit(&q, &sess, measured);
        cr_assert_eq(q.mem, measured);
        srv_quota_release(&q, &make);   /* the pending request's free: nothing, the session holds it */
        cr_assert_eq(q.sessions, 1);
        srv_quota_release(&q, &sess);   /* close */
        assert_empty(&q, &c);
    }
    /* a make that failed (bad configuration, out of memory) or was cancelled (close, disconnect, drain): the
     * pending request's free releases it */
    cr_assert_eq(srv_quota_reserve(&q, &c, 10, 200, 0, &make, m, sizeof m), 0, "%s", m);
    srv_quota_release(&q, &make);
    assert_empty(&q, &c);
    /* released twice (a path that releases and the free after it): counted back once */
    cr_assert_eq(srv_quota_reserve(&q, &c, 10, 200, 0, &make, m, sizeof m), 0, "%s", m);
    cr_assert_eq(srv_quota_reserve(&q, &c, 5, 100, 0, &sess, m, sizeof m), 0, "%s", m);
    srv_quota_release(&q, &make);
    srv_quota_release(&q, &make);
    cr_assert_eq(q.worlds, 5, "the other hold is untouched");
    cr_assert_eq(c.worlds, 5);
    srv_quota_commit(&q, &make, 999);   /* committing a released hold changes nothing */
    cr_assert_eq(q.mem, 100);
    srv_quota_release(&q, &sess);
    assert_empty(&q, &c);
}

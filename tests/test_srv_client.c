/* test_srv_client.c — the client registry (srv_client.h): identities, lookup, counters, release. */
#include <criterion/criterion.h>
#include <string.h>

#include "srv_client.h"

Test(clients, identity_kinds_do_not_collide)
{
    uint8_t a[SRV_CLIENT_ID_MAX], b[SRV_CLIENT_ID_MAX];
    const char *key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    size_t na = srv_client_identity(a, key, "\0\x80\0\0\x29", 5);
    size_t nb = srv_client_identity(b, NULL, key, strlen(key));
    cr_assert_eq(na, 41);
    cr_assert_eq(nb, 41);
    cr_assert_eq(a[0], SRV_CLIENT_KEY, "the key wins over the routing id");
    cr_assert_eq(b[0], SRV_CLIENT_ADDRESS);
    cr_assert(memcmp(a, b, na), "a key and a routing id with the same bytes differ");
    cr_assert_eq(srv_client_identity(a, "", NULL, 0), 0);
    cr_assert_eq(srv_client_identity(a, "", "\1", 1), 2, "an empty key is no key");
}

Test(clients, get_find_release)
{
    srv_clients *cs = srv_clients_new();
    cr_assert_not_null(cs);
    uint8_t id[SRV_CLIENT_ID_MAX];
    srv_client *c[300];
    for (int i = 0; i < 300; i++) {
        uint32_t rid = 0x80000000u + (uint32_t)i * 7919u;
        size_t n = srv_client_identity(id, NULL, &rid, sizeof rid);
        c[i] = srv_client_get(cs, id, n, 1.0 + i);
        cr_assert_not_null(c[i]);
        cr_assert_eq(srv_client_get(cs, id, n, 99.0), c[i], "the same identity is the same entry");
        cr_assert_eq(c[i]->first_seen, 1.0 + i);
        cr_assert_eq(srv_client_find(cs, id, n), c[i]);
    }
    cr_assert_eq(srv_clients_count(cs), 300);
    cr_assert_null(srv_client_get(cs, id, 0, 0), "an empty identity");
    cr_assert_null(srv_client_get(cs, id, SRV_CLIENT_ID_MAX + 1, 0), "an identity too long");

    /* a client holding anything is kept */
    c[5]->sessions = 1;
    c[5]->worlds = 64;
    c[6]->inflight = 2;
    c[7]->queued_bytes = 10;
    for (int i = 5; i < 8; i++) {
        srv_client *k = c[i];
        srv_client_release(cs, &k);
        cr_assert_eq(k, c[i], "client %d holds something: kept", i);
    }
    srv_client *k = c[8];
    srv_client_release(cs, &k);
    cr_assert_null(k);
    cr_assert_eq(srv_clients_count(cs), 299);
    uint32_t rid = 0x80000000u + 8u * 7919u;
    size_t n = srv_client_identity(id, NULL, &rid, sizeof rid);
    cr_assert_null(srv_client_find(cs, id, n), "released");
    c[6]->inflight = 0;
    k = c[6];
    srv_client_release(cs, &k);
    cr_assert_null(k);
    cr_assert_eq(srv_clients_count(cs), 298);

    char name[64];
    srv_client_name(c[5], name, sizeof name);
    cr_assert_eq(strncmp(name, "address ", 8), 0, "%s", name);
    cr_assert_eq(strlen(name), 8 + 4, "%s", name);
    n = srv_client_identity(id, NULL, "192.0.2.7", 9);
    srv_client *a = srv_client_get(cs, id, n, 1.0);
    srv_client_name(a, name, sizeof name);
    cr_assert_str_eq(name, "address 192.0.2.7");
    srv_clients_destroy(&cs);
    cr_assert_null(cs);
}

/* Peer-Address as a plain-mode client is known by: an ipc:// peer by its user, not its process. */
Test(clients, peer_address_names_an_ipc_peer_by_its_user)
{
    char a[SRV_CLIENT_ID_MAX];
    cr_assert_eq(srv_client_peer_address(a, sizeof a, "127.0.0.1"), 9);
    cr_assert_str_eq(a, "127.0.0.1");
    cr_assert_str_eq((srv_client_peer_address(a, sizeof a, "::1"), a), "::1");
    srv_client_peer_address(a, sizeof a, "localhost:1000:100:4242");
    cr_assert_str_eq(a, "local:uid=1000");
    char b[SRV_CLIENT_ID_MAX];
    srv_client_peer_address(b, sizeof b, "localhost:1000:100:4243");
    cr_assert_str_eq(a, b, "two processes of one user are one client");
    srv_client_peer_address(b, sizeof b, "localhost:0:0:4242");
    cr_assert_str_neq(a, b, "two users are two clients");
    const char *local[] = {NULL, "", "localhost:", "localhost:12", "localhost:1:2", "localhost:1:2:x", "localhost:a:2:3",
                           "localhost:1:2:3:4"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++) {
        srv_client_peer_address(a, sizeof a, local[i]);
        cr_assert_str_eq(a, "local", "%s", local[i] ? local[i] : "(null)");
    }
    cr_assert_eq(srv_client_peer_address(a, 6, "localhost:123456:1:1"), 5, "truncated to the buffer");
    cr_assert_str_eq(a, "local");
}

/* test_server_config.c — herd-server settings: defaults, HERD_* environment variables, the command line
 * (which wins), bad values, a bind failure, the host names --bind takes (PROTOCOL.md section 1) and the
 * --metrics address.  The worker pool has its own tests (test_pool.c). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq.h>

#include "herd_client.h"
#include "srv_bind.h"
#include "srv_config.h"
#include "srv_server.h"

#include "helpers/server_start.h"

Test(config, defaults)
{
    srv_config c;
    srv_config_defaults(&c);
    cr_assert_str_eq(c.bind, "tcp://127.0.0.1:5555");
    cr_assert_eq(c.threads, 0);
    cr_assert_eq(c.max_message_bytes, 16u << 20);
    cr_assert_eq(c.log_level, SRV_LOG_INFO);
    char err[256];
    cr_assert_eq(srv_config_check(&c, err, sizeof err), 0);
}

Test(config, environment_then_command_line)
{
    setenv("HERD_BIND", "ipc:///tmp/x.sock", 1);
    setenv("HERD_THREADS", "3", 1);
    setenv("HERD_MAX_MESSAGE_BYTES", "2M", 1);
    setenv("HERD_SESSION_TIMEOUT", "1.5", 1);
    setenv("HERD_LOG_LEVEL", "debug", 1);
    srv_config c;
    srv_config_defaults(&c);
    char err[256];
    cr_assert_eq(srv_config_from_env(&c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c.bind, "ipc:///tmp/x.sock");
    cr_assert_eq(c.threads, 3);
    cr_assert_eq(c.max_message_bytes, 2u << 20);
    cr_assert_eq(c.session_timeout_s, 1.5);
    cr_assert_eq(c.log_level, SRV_LOG_DEBUG);
    char *argv[] = {"herd-server", "--threads", "5", "--bind=tcp://0.0.0.0:7000", "--max-worlds", "100",
                    "--max-worlds-per-session", "50", "--log-level", "warn", "--stats-interval", "0", "--quantum", "8",
                    NULL};
    cr_assert_eq(srv_config_from_args(&c, 14, argv, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.threads, 5);
    cr_assert_str_eq(c.bind, "tcp://0.0.0.0:7000");
    cr_assert_eq(c.max_worlds, 100);
    cr_assert_eq(c.max_worlds_per_session, 50);
    cr_assert_eq(c.log_level, SRV_LOG_WARN);
    cr_assert_eq(c.stats_interval_s, 0);
    cr_assert_eq(c.quantum, 8);
    cr_assert_eq(c.max_message_bytes, 2u << 20, "kept from the environment");
}

Test(config, bad_values_are_reported)
{
    srv_config c;
    char err[256];
    srv_config_defaults(&c);
    char *a1[] = {"herd-server", "--threads", "many", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a1, err, sizeof err), -1);
    cr_assert(strstr(err, "many") && strstr(err, "--threads"), "%s", err);
    char *a2[] = {"herd-server", "--frobnicate", "1", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a2, err, sizeof err), -1);
    cr_assert(strstr(err, "--frobnicate"), "%s", err);
    char *a3[] = {"herd-server", "--bind", NULL};
    cr_assert_eq(srv_config_from_args(&c, 2, a3, err, sizeof err), -1);
    cr_assert(strstr(err, "needs a value"), "%s", err);
    char *a4[] = {"herd-server", "--log-level", "loud", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a4, err, sizeof err), -1);
    char *a5[] = {"herd-server", "--max-message-bytes", "12", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a5, err, sizeof err), -1);
    char *a6[] = {"herd-server", "stray", NULL};
    cr_assert_eq(srv_config_from_args(&c, 2, a6, err, sizeof err), -1);
    setenv("HERD_MAX_WORLDS", "-4", 1);
    cr_assert_eq(srv_config_from_env(&c, err, sizeof err), -1);
    cr_assert(strstr(err, "HERD_MAX_WORLDS"), "%s", err);
    unsetenv("HERD_MAX_WORLDS");
}

Test(config, bind_failure_is_a_clear_error)
{
    srv_config c;
    srv_config_defaults(&c);
    snprintf(c.bind, sizeof c.bind, "tcp://256.1.1.1:1");
    c.insecure = 1;         /* not a loopback address */
    c.threads = 1;
    char err[256];
    srv_server *s = srv_server_new(&c, err, sizeof err);
    cr_assert_null(s);
    cr_assert(strstr(err, "cannot bind tcp://256.1.1.1:1"), "%s", err);
}

/* Pings the server at endpoint ep with a fresh client: 0 when it answers. */
static int ping_at(const char *ep)
{
    herd_error e;
    const char *eps[1] = {ep};
    herd_client *c = herd_client_new(eps, 1, 10000, &e);
    cr_assert_not_null(c, "%s: %s", ep, e.message);
    int rc = herd_client_ping(c, 0, NULL, &e);
    cr_assert_eq(rc, 0, "ping %s: %s", ep, e.message);
    herd_client_destroy(&c);
    return rc;
}

/* --help and section 1 name localhost a plain-mode address: ZeroMQ does not resolve names in a bind
 * ("No such device"), so the server resolves it; a client connecting to localhost reaches it. */
Test(config, localhost_binds_and_serves, .timeout = 60)
{
    srv_config c;
    test_server_config(&c, 1);
    snprintf(c.bind, sizeof c.bind, "tcp://localhost:*");
    char err[512];
    cr_assert_eq(srv_config_check(&c, err, sizeof err), 0, "plain mode without --insecure: %s", err);
    srv_thread *t = srv_thread_start(&c, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    const char *bound = srv_thread_endpoint(t);
    int port = 0;
    cr_assert(sscanf(bound, "tcp://127.0.0.1:%d", &port) == 1 || sscanf(bound, "tcp://[::1]:%d", &port) == 1,
              "a loopback address: %s", bound);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://localhost:%d", port);
    ping_at(ep);
    ping_at(bound);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* [::1] is a plain-mode address too: ZeroMQ binds IPv6 only on a socket with ZMQ_IPV6 set. */
Test(config, ipv6_loopback_binds, .timeout = 60)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int have = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    if (!have) cr_skip_test("this machine has no IPv6 loopback");
    srv_config c;
    test_server_config(&c, 1);
    snprintf(c.bind, sizeof c.bind, "tcp://[::1]:*");
    char err[512];
    srv_thread *t = srv_thread_start(&c, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    cr_assert(!strncmp(srv_thread_endpoint(t), "tcp://[::1]:", 12), "%s", srv_thread_endpoint(t));
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(config, an_unresolvable_bind_host_is_a_clear_error)
{
    srv_config c;
    test_server_config(&c, 1);
    snprintf(c.bind, sizeof c.bind, "tcp://no-such-host.invalid:5555");     /* RFC 6761: never resolves */
    c.insecure = 1;         /* not a loopback address */
    char err[512];
    srv_server *s = srv_server_new(&c, err, sizeof err);
    cr_assert_null(s);
    cr_assert(strstr(err, "cannot resolve the host name 'no-such-host.invalid'") && strstr(err, "tcp://127.0.0.1:PORT"),
              "%s", err);
}

/* A name is resolved to its addresses (127.1 is 127.0.0.1 to the resolver, not to ZeroMQ); in plain mode
 * without --insecure they must all be loopback, whatever the name. */
Test(config, a_resolved_name_must_be_loopback_in_plain_mode)
{
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    srv_bound b;
    char err[512];
    cr_assert_eq(srv_bind(s, "tcp://127.1:*", 1, &b, err, sizeof err), 0, "%s", err);
    cr_assert(!strncmp(b.endpoint, "tcp://127.0.0.1:", 16) && b.bound == 1, "%s", b.endpoint);
    cr_assert_eq(srv_bind(s, "tcp://10.1:*", 1, &b, err, sizeof err), -1);
    cr_assert(strstr(err, "'10.1' resolves to 10.0.0.1, which is not a loopback address"), "%s", err);
    cr_assert_eq(srv_bind(s, "tcp:", 1, &b, err, sizeof err), -1);          /* malformed: ZeroMQ's message */
    cr_assert(strstr(err, "cannot bind tcp:"), "%s", err);
    zmq_close(s);
    zmq_ctx_term(ctx);
}

/* --metrics on every interface needs no --insecure (deploy/k8s/statefulset.yaml scrapes 0.0.0.0:9464 of a
 * CURVE server): the page is aggregate counters, and never shows a session's id or either of its tokens. */
Test(config, metrics_on_all_interfaces_needs_no_insecure_and_shows_no_session, .timeout = 60)
{
    srv_config c;
    test_server_config(&c, 1);
    snprintf(c.metrics, sizeof c.metrics, "0.0.0.0:0");
    char err[512];
    cr_assert_eq(c.insecure, 0);
    cr_assert_eq(srv_config_check(&c, err, sizeof err), 0, "%s", err);
    srv_thread *t = srv_thread_start(&c, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    int port = srv_server_metrics_port(srv_thread_server(t));
    cr_assert_gt(port, 0);

    herd_error e;
    const char *eps[1] = {srv_thread_endpoint(t)};
    herd_client *cl = herd_client_new(eps, 1, 10000, &e);
    cr_assert_not_null(cl, "%s", e.message);
    herd_session s;
    cr_assert_eq(herd_client_make(cl, 0, "anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s",
                 e.message);
    cr_assert(s.has_token && s.has_view_token);
    char *page = test_http_get(port, "/metrics");
    cr_assert(page, "GET /metrics failed");
    cr_assert(strstr(page, "\nherd_sessions ") && strstr(page, "herd_requests_total{op=\"make\"} 1\n"), "%.400s", page);
    char id[32];
    snprintf(id, sizeof id, "%" PRIu64, s.id);
    cr_assert_null(strstr(page, id), "the page shows session id %s", id);
    const uint8_t *toks[2] = {s.token, s.view_token};
    for (int k = 0; k < 2; k++) {
        char hex[2 * PROTO_TOKEN_BYTES + 1], HEX[2 * PROTO_TOKEN_BYTES + 1];
        for (int i = 0; i < PROTO_TOKEN_BYTES; i++) {
            snprintf(hex + 2 * i, 3, "%02x", toks[k][i]);
            snprintf(HEX + 2 * i, 3, "%02X", toks[k][i]);
        }
        cr_assert(!strstr(page, hex) && !strstr(page, HEX) && !memmem(page, strlen(page), toks[k], PROTO_TOKEN_BYTES),
                  "the page shows a token");
    }
    free(page);
    cr_assert_eq(herd_client_close(cl, &s, &e), 0, "%s", e.message);
    herd_client_destroy(&cl);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

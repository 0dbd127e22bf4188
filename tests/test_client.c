/* test_client.c — the C client library: timeouts against a dead server (a clear error naming the
 * address, never a hang), several servers, pipelining and reply matching, unknown-id replies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "herd_client.h"
#include "srv_server.h"

#include "helpers/server_start.h"


Test(client, dead_server_gives_a_timeout_naming_the_address, .timeout = 10)
{
    const char *ep[1] = {"tcp://127.0.0.1:9"};     /* discard port: nothing listens */
    herd_error e;
    herd_client *c = herd_client_new(ep, 1, 300, &e);
    cr_assert(c, "%s", e.message);
    double t0 = test_mono_ms();
    int rc = herd_client_ping(c, 0, NULL, &e);
    double dt = test_mono_ms() - t0;
    cr_assert_eq(rc, PROTO_E_TIMEOUT);
    cr_assert_eq(e.code, PROTO_E_TIMEOUT);
    cr_assert(strstr(e.message, "tcp://127.0.0.1:9") && strstr(e.message, "300 ms"), "%s", e.message);
    cr_assert(dt >= 250 && dt < 2000, "waited %.0f ms", dt);
    herd_session s;
    rc = herd_client_make(c, 0, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e);
    cr_assert_eq(rc, PROTO_E_TIMEOUT, "%s", e.message);
    cr_assert(strstr(e.message, "(make)"), "%s", e.message);
    t0 = test_mono_ms();
    herd_client_destroy(&c);
    cr_assert_lt(test_mono_ms() - t0, 1000, "destroy does not hang on unsent messages");
}

Test(client, bad_endpoint_is_reported)
{
    const char *ep[1] = {"nonsense://x"};
    herd_error e;
    herd_client *c = herd_client_new(ep, 1, 300, &e);
    cr_assert_null(c);
    cr_assert_eq(e.code, PROTO_E_TRANSPORT);
    cr_assert(strstr(e.message, "nonsense://x"), "%s", e.message);
}

Test(client, a_server_that_comes_back_is_used_again, .timeout = 20)
{
    srv_thread *t = test_server_start(1);
    char ep[256];
    snprintf(ep, sizeof ep, "%s", srv_thread_endpoint(t));
    const char *eps[1] = {ep};
    herd_error e;
    herd_client *c = herd_client_new(eps, 1, 2000, &e);
    cr_assert_eq(herd_client_ping(c, 0, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(srv_thread_stop(&t), 0);
    herd_client_set_timeout(c, 200);
    cr_assert_eq(herd_client_ping(c, 0, NULL, &e), PROTO_E_TIMEOUT);
    /* restart on the same port: ZeroMQ reconnects by itself */
    srv_config cfg;
    srv_config_defaults(&cfg);
    snprintf(cfg.bind, sizeof cfg.bind, "%s", ep);
    cfg.threads = 1;
    cfg.log_level = SRV_LOG_ERROR;
    char err[256];
    t = srv_thread_start(&cfg, err, sizeof err);
    cr_assert(t, "%s", err);
    herd_client_set_timeout(c, 5000);
    cr_assert_eq(herd_client_ping(c, 0, NULL, &e), 0, "%s", e.message);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(client, several_servers, .timeout = 30)
{
    srv_thread *a = test_server_start(1), *b = test_server_start(2);
    const char *eps[2] = {srv_thread_endpoint(a), srv_thread_endpoint(b)};
    herd_error e;
    herd_client *c = herd_client_new(eps, 2, 5000, &e);
    cr_assert_eq(herd_client_nservers(c), 2);
    cr_assert_str_eq(herd_client_endpoint(c, 1), eps[1]);
    herd_session s[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(herd_client_make(c, -1, "anymal_c-walk", 3, NULL, 0, 9, ENV_AUTORESET_NEXT_STEP, &s[i], &e), 0, "%s",
                     e.message);
    cr_assert(s[0].server == 0 && s[1].server == 1 && s[2].server == 0 && s[3].server == 1, "round-robin placement");
    float obs[4][3 * 48], act[3 * 12] = {0};
    for (int i = 0; i < 4; i++) cr_assert_eq(herd_client_reset(c, &s[i], -1, NULL, NULL, obs[i], &e), 0, "%s", e.message);
    /* same seed and config: identical worlds on either server */
    cr_assert(!memcmp(obs[0], obs[1], sizeof obs[0]));
    /* one request in flight per session, replies from both servers */
    uint64_t id[4];
    for (int i = 0; i < 4; i++) id[i] = herd_client_step_send(c, &s[i], -1, NULL, act, 0, &e);
    float out[4][3 * 48];
    for (int i = 3; i >= 0; i--) {
        herd_reply *r;
        cr_assert_eq(herd_client_wait(c, id[i], -1, &r, &e), 0, "%s", e.message);
        cr_assert_eq(r->server, s[i].server);
        cr_assert_eq(r->op, PROTO_OP_STEP);
        herd_step_out o = {.obs = out[i]};
        cr_assert_eq(herd_reply_step(r, &s[i], 3, &o, &e), 0, "%s", e.message);
        herd_reply_destroy(&r);
    }
    cr_assert(!memcmp(out[0], out[3], sizeof out[0]));
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, 1, 0, &st, &e), 0);
    cr_assert_eq(st.sessions, 2);
    cr_assert_eq(st.threads, 2);
    /* a session id is only known to its own server */
    herd_session wrong = s[0];
    wrong.server = 1;
    cr_assert_eq(herd_client_close(c, &wrong, &e), PROTO_E_UNKNOWN_SESSION);
    for (int i = 0; i < 4; i++) cr_assert_eq(herd_client_close(c, &s[i], &e), 0);
    herd_client_destroy(&c);
    srv_thread_stop(&a);
    srv_thread_stop(&b);
}

Test(client, replies_are_matched_by_id_in_any_order, .timeout = 30)
{
    srv_thread *t = test_server_start(2);
    const char *ep = srv_thread_endpoint(t);
    herd_error e;
    herd_client *c = herd_client_new(&ep, 1, 5000, &e);
    herd_session s;
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-stand", 8, NULL, 0, 3, ENV_AUTORESET_SAME_STEP, &s, &e), 0);
    uint64_t r0 = herd_client_reset_send(c, &s, -1, NULL, NULL, &e);
    float act[8 * 12] = {0};
    int32_t ids[2][4] = {{0, 2, 4, 6}, {7, 5, 3, 1}};
    uint64_t a = herd_client_step_send(c, &s, 4, ids[0], act, 1, &e);
    uint64_t b = herd_client_step_send(c, &s, 4, ids[1], act, 0, &e);
    cr_assert(r0 && a && b && r0 < a && a < b);
    herd_reply *rb, *ra, *rr;
    cr_assert_eq(herd_client_wait(c, b, -1, &rb, &e), 0);
    cr_assert_eq(herd_client_wait(c, a, -1, &ra, &e), 0);
    cr_assert_eq(herd_client_recv(c, -1, &rr, &e), 0, "the reset reply was kept");
    cr_assert_eq(rr->id, r0);
    cr_assert_eq(rr->op, PROTO_OP_RESET);
    proto_tensor t1;
    cr_assert_eq(herd_reply_tensor(ra, "info.reward_terms", &t1, &e), 0, "%s", e.message);
    cr_assert(t1.ndim == 2 && t1.shape[0] == 4 && t1.shape[1] == (uint64_t)s.nterms);
    cr_assert_eq((uintptr_t)t1.data % 8, 0, "views are aligned");
    cr_assert_neq(herd_reply_tensor(rb, "info.reward_terms", &t1, &e), 0, "not asked for");
    cr_assert_eq(herd_reply_tensor(rb, "info.final_obs", &t1, &e), 0);
    cr_assert_eq(herd_reply_tensor(rb, "info._final_obs", &t1, &e), 0);
    herd_reply_destroy(&ra), herd_reply_destroy(&rb), herd_reply_destroy(&rr);
    /* nothing left */
    cr_assert_eq(herd_client_recv(c, 100, &rr, &e), PROTO_E_TIMEOUT);
    /* a message the server cannot read: the error reply has id 0 */
    cr_assert_eq(herd_client_send_raw(c, 0, "\x92\x01\x02", 3, &e), 0);
    cr_assert_eq(herd_client_recv(c, -1, &rr, &e), 0);
    cr_assert(!rr->ok && rr->id == 0 && rr->error.code == PROTO_E_BAD_MESSAGE);
    cr_assert(strstr(rr->error.message, "map"), "%s", rr->error.message);
    herd_reply_destroy(&rr);
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

Test(client, server_errors_keep_their_code_and_message)
{
    srv_thread *t = test_server_start(1);
    const char *ep = srv_thread_endpoint(t);
    herd_error e;
    herd_client *c = herd_client_new(&ep, 1, 5000, &e);
    herd_session s;
    env_kv kv[1] = {{"decimation", 2.5}};
    int rc = herd_client_make(c, 0, "anymal_c-walk", 2, kv, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e);
    cr_assert_eq(rc, PROTO_E_BAD_CONFIG);
    cr_assert_eq(e.code, PROTO_E_BAD_CONFIG);
    cr_assert(strstr(e.message, "decimation") && strstr(e.message, "integers"), "%s", e.message);
    cr_assert_str_eq(proto_code_name(e.code), "BAD_CONFIG");
    herd_client_destroy(&c);
    srv_thread_stop(&t);
}

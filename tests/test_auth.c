/* test_auth.c — who may use what: owned sessions (a second client's hijack attempt must fail), random
 * session ids, CURVE authentication (an authorized key works, any other key and plain clients are
 * refused), the key files, and the bind policy (plain mode only on loopback / ipc unless --insecure). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "herd_client.h"
#include "proto.h"
#include "srv_auth.h"
#include "srv_config.h"
#include "helpers/server_start.h"
#include "srv_thread.h"

static herd_client *client_to(srv_thread *t, const herd_curve *cv, int timeout_ms)
{
    herd_error e;
    const char *ep = srv_thread_endpoint(t);
    herd_client *c = herd_client_new_curve(&ep, 1, timeout_ms, cv, &e);
    cr_assert(c, "client: %s", e.message);
    return c;
}

/* Sends q (session named by id and, when token is not NULL, that token) and returns the reply's code;
 * msg: its message. */
static int request_code(herd_client *c, proto_request *q, uint64_t session, const uint8_t *token, char *msg,
                        size_t msglen)
{
    q->id = herd_client_next_id(c);
    q->session = session;
    q->has_session = 1;
    q->has_token = token != NULL;
    if (token) memcpy(q->token, token, PROTO_TOKEN_BYTES);
    herd_error e;
    cr_assert_eq(herd_client_send_request(c, 0, q, &e), 0, "%s", e.message);
    herd_reply *r;
    int rc = herd_client_wait(c, q->id, -1, &r, &e);
    cr_assert_eq(rc, 0, "no reply: %s", e.message);
    int code = r->ok ? PROTO_OK : (int)r->error.code;
    if (msg) snprintf(msg, msglen, "%s", r->ok ? "" : r->error.message);
    herd_reply_destroy(&r);
    return code;
}

/* The message of an UNKNOWN_SESSION reply with the session id replaced by '#' (its shape). */
static void shape_of(const char *msg, uint64_t session, char *out, size_t outlen)
{
    char id[32];
    snprintf(id, sizeof id, "%" PRIu64, session);
    const char *p = strstr(msg, id);
    cr_assert(p, "the message names the session: %s", msg);
    snprintf(out, outlen, "%.*s#%s", (int)(p - msg), msg, p + strlen(id));
}

typedef enum { OP_RESET, OP_STEP, OP_CLOSE, OP_STATS, NOPS } attack;

static void fill_attack(proto_request *q, attack a, float *act, int n, int act_dim)
{
    proto_request_init(q);
    switch (a) {
    case OP_RESET:
        q->op = PROTO_OP_RESET;
        q->has_seed = 1;         /* a "re-seed" */
        q->seed = 666;
        break;
    case OP_STEP:
        q->op = PROTO_OP_STEP;
        q->has_actions = 1;
        q->actions = (proto_tensor){PROTO_DT_FLOAT32, 2, {(uint64_t)n, (uint64_t)act_dim}, (const uint8_t *)act,
                                    (size_t)n * act_dim * 4};
        break;
    case OP_CLOSE: q->op = PROTO_OP_CLOSE; break;
    case OP_STATS: q->op = PROTO_OP_STATS; break;
    case NOPS: break;
    }
}

/* The hijack attempt: a second client finds the first one's session (its id, id - 1, id + 1) and
 * steps, re-seeds, closes it.  Every attempt must get the reply a missing session gets, and the first
 * client's session must be untouched. */
Test(auth, hijack_of_another_clients_session_fails)
{
    srv_config cfg;
    test_server_config(&cfg, 2);
    srv_thread *t = test_server_start_with(&cfg);
    herd_client *a = client_to(t, NULL, 10000), *b = client_to(t, NULL, 10000);
    herd_error e;
    herd_session s, s2;
    cr_assert_eq(herd_client_make(a, 0, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s", e.message);
    cr_assert(s.has_token, "the make reply carries a token");
    herd_hello h;
    cr_assert_eq(herd_client_hello(a, 0, &h, &e), 0, "%s", e.message);
    cr_assert(h.protocol_minor >= 1 && !strcmp(h.auth, "none"), "hello: minor %d, auth '%s'", h.protocol_minor, h.auth);
    herd_hello_free(&h);
    cr_assert_eq(herd_client_make(a, 0, "anymal_c-walk", 4, NULL, 0, 2, ENV_AUTORESET_NEXT_STEP, &s2, &e), 0, "%s", e.message);
    cr_assert(s2.id != s.id + 1 && s2.id != s.id - 1 && s2.id != s.id, "session ids are not sequential: %" PRIu64
              " then %" PRIu64, s.id, s2.id);
    cr_assert(memcmp(s.token, s2.token, PROTO_TOKEN_BYTES), "tokens differ");
    float obs0[4 * 48], obs1[4 * 48];
    cr_assert_eq(herd_client_reset(a, &s, -1, NULL, NULL, obs0, &e), 0, "%s", e.message);

    float act[4 * 12] = {0};
    char msg[PROTO_MSG_MAX + 160], missing[PROTO_MSG_MAX + 160], got[PROTO_MSG_MAX + 160];
    proto_request q;
    /* the reply shape for a session that does not exist */
    fill_attack(&q, OP_STEP, act, 4, 12);
    uint64_t nothing = s.id ^ 0x5555555555555555ull;
    cr_assert_eq(request_code(b, &q, nothing, NULL, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION);
    shape_of(msg, nothing, missing, sizeof missing);

    uint8_t wrong[PROTO_TOKEN_BYTES];
    memcpy(wrong, s.token, sizeof wrong);
    wrong[7] ^= 1;
    const uint64_t targets[3] = {s.id, s.id - 1, s.id + 1};
    for (int k = 0; k < 3; k++)
        for (int op = 0; op < NOPS; op++)
            for (int w = 0; w < 2; w++) {   /* no token, a wrong token */
                fill_attack(&q, (attack)op, act, 4, 12);
                int code = request_code(b, &q, targets[k], w ? wrong : NULL, msg, sizeof msg);
                cr_assert_eq(code, PROTO_E_UNKNOWN_SESSION, "op %d on id %+d (%s token): %s", op, k == 2 ? 1 : -k,
                             w ? "wrong" : "no", proto_code_name(code));
                shape_of(msg, targets[k], got, sizeof got);
                cr_assert_str_eq(got, missing, "indistinguishable from a missing session");
            }
    /* the owner's client, on a new connection, but without the token: also refused */
    herd_client *a2 = client_to(t, NULL, 10000);
    fill_attack(&q, OP_CLOSE, act, 4, 12);
    cr_assert_eq(request_code(a2, &q, s.id, NULL, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION);

    /* untouched: the same reset again gives the same observations as a fresh session, and steps work */
    herd_stats st;
    cr_assert_eq(herd_client_stats(a, 0, s.id, &st, &e), 0, "stats with the remembered token: %s", e.message);
    cr_assert(st.has_session && st.session == s.id && st.session_steps == 0, "no attack stepped it");
    herd_step_out out = {0};
    cr_assert_eq(herd_client_step(a, &s, -1, NULL, act, 0, &out, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_close(a, &s2, &e), 0, "%s", e.message);
    herd_session s3;
    cr_assert_eq(herd_client_make(a, 0, "anymal_c-walk", 4, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s3, &e), 0, "%s", e.message);
    cr_assert_eq(herd_client_reset(a, &s3, -1, NULL, NULL, obs1, &e), 0);
    cr_assert(!memcmp(obs0, obs1, sizeof obs0), "seed 1 gives the same first observations (not re-seeded)");

    /* the token is the capability: whoever holds it may use the session (a reconnecting trainer) */
    fill_attack(&q, OP_STATS, act, 4, 12);
    cr_assert_eq(request_code(a2, &q, s.id, s.token, msg, sizeof msg), PROTO_OK, "%s", msg);
    fill_attack(&q, OP_CLOSE, act, 4, 12);
    cr_assert_eq(request_code(a2, &q, s.id, s.token, msg, sizeof msg), PROTO_OK, "%s", msg);
    cr_assert_eq(herd_client_close(a, &s3, &e), 0, "%s", e.message);
    herd_client_destroy(&a);
    herd_client_destroy(&a2);
    herd_client_destroy(&b);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

/* ---- CURVE ---- */

static char g_dir[256];

static void make_keys(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/herd-test-auth-XXXXXX");
    cr_assert(mkdtemp(g_dir));
    char err[512], sub[300];
    snprintf(sub, sizeof sub, "%s/keys", g_dir);
    cr_assert_eq(srv_auth_keygen(sub, err, sizeof err), 0, "%s", err);
    cr_assert_neq(srv_auth_keygen(sub, err, sizeof err), 0, "keygen never overwrites keys");
    /* a second authorized client, and an unauthorized one elsewhere */
    snprintf(sub, sizeof sub, "%s/clients", g_dir);
    mkdir(sub, 0700);
    char path[400];
    snprintf(path, sizeof path, "%s/keys/client.pub", g_dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s %s/clients/", path, g_dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(srv_auth_write_pair(sub, "second", NULL, err, sizeof err), 0, "%s", err);
    snprintf(sub, sizeof sub, "%s/other", g_dir);
    mkdir(sub, 0700);
    cr_assert_eq(srv_auth_write_pair(sub, "intruder", NULL, err, sizeof err), 0, "%s", err);
    struct stat st;
    snprintf(path, sizeof path, "%s/keys/server.key", g_dir);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 077, 0, "secret key files are private (mode %o)", st.st_mode & 0777);
}

static void remove_keys(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) { /* best effort */ }
}

/* The Z85 secret key (and public, when pub is not NULL) of a key file under g_dir. */
static void z85_of(const char *rel, char sec[41], char pub[41])
{
    char path[400], err[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    uint8_t p[32], s[32];
    int has = 0;
    cr_assert_eq(srv_auth_read_key_file(path, p, s, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has || !sec, "%s has a secret key", rel);
    if (sec) zmq_z85_encode(sec, s, 32);
    if (pub) zmq_z85_encode(pub, p, 32);
}

static srv_thread *start_curve(const char *authorized_rel)
{
    srv_config cfg;
    test_server_config(&cfg, 2);
    snprintf(cfg.curve_secret_key_file, sizeof cfg.curve_secret_key_file, "%s/keys/server.key", g_dir);
    snprintf(cfg.curve_public_key_file, sizeof cfg.curve_public_key_file, "%s/keys/server.pub", g_dir);
    snprintf(cfg.authorized_keys, sizeof cfg.authorized_keys, "%s/%s", g_dir, authorized_rel);
    return test_server_start_with(&cfg);
}

Test(auth, curve_admits_authorized_keys_only, .init = make_keys, .fini = remove_keys)
{
    cr_assert(zmq_has("curve"), "Debian's libzmq has CURVE");
    char server_pub[41], csec[41], ssec[41], isec[41];
    z85_of("keys/server.pub", NULL, server_pub);
    z85_of("keys/client.key", csec, NULL);
    z85_of("clients/second.key", ssec, NULL);
    z85_of("other/intruder.key", isec, NULL);
    srv_thread *t = start_curve("clients");      /* a directory: client.pub and second.pub */

    herd_curve good = {server_pub, csec};
    herd_client *c = client_to(t, &good, 10000);
    herd_error e;
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &e), 0, "an authorized key works: %s", e.message);
    cr_assert(h.protocol_minor >= 1 && !strcmp(h.auth, "curve"), "hello: minor %d, auth '%s'", h.protocol_minor, h.auth);
    herd_hello_free(&h);
    herd_session s;
    cr_assert_eq(herd_client_make(c, 0, "anymal_c-walk", 2, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, &s, &e), 0, "%s", e.message);
    float act[2 * 12] = {0};
    herd_step_out out = {0};
    cr_assert_eq(herd_client_step(c, &s, -1, NULL, act, 0, &out, &e), 0, "%s", e.message);

    /* refused: an unknown key, a plain client, a client that expects another server key */
    herd_curve bad = {server_pub, isec};
    herd_client *x = client_to(t, &bad, 600);
    cr_assert_eq(herd_client_ping(x, 0, NULL, &e), PROTO_E_TIMEOUT, "an unauthorized key gets no reply (%s)",
                 proto_code_name(e.code));
    herd_client_destroy(&x);
    unsetenv("HERD_CURVE_SERVER_KEY");
    x = client_to(t, NULL, 600);
    cr_assert_eq(herd_client_ping(x, 0, NULL, &e), PROTO_E_TIMEOUT, "a plain client gets no reply");
    herd_client_destroy(&x);
    char other_pub[41];
    z85_of("other/intruder.key", NULL, other_pub);
    herd_curve wrong_server = {other_pub, csec};
    x = client_to(t, &wrong_server, 600);
    cr_assert_eq(herd_client_ping(x, 0, NULL, &e), PROTO_E_TIMEOUT, "the handshake fails with the wrong server key");
    herd_client_destroy(&x);

    /* with CURVE a session belongs to the key: another authorized key cannot use it, even with the token;
     * the same key on a new connection can, even without it */
    herd_curve second = {server_pub, ssec};
    herd_client *c2 = client_to(t, &second, 10000);
    proto_request q;
    proto_request_init(&q);
    q.op = PROTO_OP_STATS;
    char msg[PROTO_MSG_MAX + 160];
    cr_assert_eq(request_code(c2, &q, s.id, s.token, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION, "%s", msg);
    proto_request_init(&q);
    q.op = PROTO_OP_CLOSE;
    cr_assert_eq(request_code(c2, &q, s.id, NULL, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION, "%s", msg);
    herd_client *c3 = client_to(t, &good, 10000);
    proto_request_init(&q);
    q.op = PROTO_OP_STATS;
    cr_assert_eq(request_code(c3, &q, s.id, NULL, msg, sizeof msg), PROTO_OK, "the owner's key: %s", msg);
    uint8_t wrong[PROTO_TOKEN_BYTES] = {0};
    cr_assert_eq(request_code(c3, &q, s.id, wrong, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION, "a wrong token sent "
                 "along is refused even from the owner's key");
    /* the view token (minor 2): another authorized key may read the session (stats, model, poses), never
     * act on it; the full token does not give it that right (above) */
    cr_assert(s.has_view_token && memcmp(s.view_token, s.token, PROTO_TOKEN_BYTES), "a view token of its own");
    const proto_op reads[3] = {PROTO_OP_STATS, PROTO_OP_MODEL, PROTO_OP_POSES};
    for (int k = 0; k < 3; k++) {
        proto_request_init(&q);
        q.op = reads[k];
        cr_assert_eq(request_code(c2, &q, s.id, s.view_token, msg, sizeof msg), PROTO_OK, "%s with the view token: %s",
                     proto_op_name(reads[k]), msg);
    }
    for (int op = 0; op < NOPS; op++) {
        if (op == OP_STATS) continue;
        fill_attack(&q, (attack)op, act, 2, 12);
        cr_assert_eq(request_code(c2, &q, s.id, s.view_token, msg, sizeof msg), PROTO_E_UNKNOWN_SESSION,
                     "op %d with the view token: %s", op, msg);
    }
    herd_stats st;
    cr_assert_eq(herd_client_stats(c, 0, s.id, &st, &e), 0, "%s", e.message);
    cr_assert(st.has_session && st.session_steps == 2, "only the owner's step of its 2 worlds ran: %" PRIu64, st.session_steps);
    cr_assert_eq(herd_client_close(c, &s, &e), 0, "%s", e.message);
    herd_client_destroy(&c);
    herd_client_destroy(&c2);
    herd_client_destroy(&c3);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(auth, authorized_keys_file_and_environment, .init = make_keys, .fini = remove_keys)
{
    char server_pub[41], csec[41];
    z85_of("keys/server.pub", NULL, server_pub);
    z85_of("keys/client.key", csec, NULL);
    srv_thread *t = start_curve("keys/authorized_keys");      /* the file --keygen wrote */
    setenv("HERD_CURVE_SERVER_KEY", server_pub, 1);
    setenv("HERD_CURVE_CLIENT_SECRET_KEY", csec, 1);
    herd_client *c = client_to(t, NULL, 10000);              /* keys from the environment */
    unsetenv("HERD_CURVE_SERVER_KEY");
    unsetenv("HERD_CURVE_CLIENT_SECRET_KEY");
    herd_error e;
    herd_hello h;
    cr_assert_eq(herd_client_hello(c, 0, &h, &e), 0, "%s", e.message);
    herd_hello_free(&h);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(auth, bad_keys_are_clear_errors, .init = make_keys, .fini = remove_keys)
{
    srv_config cfg;
    char err[512];
    test_server_config(&cfg, 2);
    snprintf(cfg.curve_secret_key_file, sizeof cfg.curve_secret_key_file, "%s/keys/server.pub", g_dir);
    snprintf(cfg.authorized_keys, sizeof cfg.authorized_keys, "%s/keys/authorized_keys", g_dir);
    cr_assert_null(srv_server_new(&cfg, err, sizeof err));
    cr_assert(strstr(err, "holds no secret key"), "%s", err);
    snprintf(cfg.curve_secret_key_file, sizeof cfg.curve_secret_key_file, "%s/keys/server.key", g_dir);
    snprintf(cfg.curve_public_key_file, sizeof cfg.curve_public_key_file, "%s/keys/client.pub", g_dir);
    cr_assert_null(srv_server_new(&cfg, err, sizeof err));
    cr_assert(strstr(err, "does not match"), "%s", err);
    cfg.curve_public_key_file[0] = 0;
    snprintf(cfg.authorized_keys, sizeof cfg.authorized_keys, "%s/other", g_dir);   /* intruder.key: has a public key */
    char path[400];
    snprintf(path, sizeof path, "%s/empty", g_dir);
    mkdir(path, 0700);
    snprintf(cfg.authorized_keys, sizeof cfg.authorized_keys, "%s", path);
    cr_assert_null(srv_server_new(&cfg, err, sizeof err));
    cr_assert(strstr(err, "no client public key"), "%s", err);
    snprintf(path, sizeof path, "%s/garbage.pub", g_dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "curve\n    public-key = \"not a key\"\n");
    fclose(f);
    snprintf(cfg.authorized_keys, sizeof cfg.authorized_keys, "%s", path);
    cr_assert_null(srv_server_new(&cfg, err, sizeof err));
    cr_assert(strstr(err, "line 2: not a 40-character Z85"), "%s", err);
}

/* A client whose only request fails in the handler (an unknown env) has its entry freed once, not twice. */
Test(auth, a_new_clients_failed_request_frees_its_entry_once)
{
    srv_thread *t = test_server_start(1);
    herd_error e;
    for (int i = 0; i < 3; i++) {
        herd_client *c = client_to(t, NULL, 5000);
        herd_session s;
        cr_assert_eq(herd_client_make(c, 0, "no-such-env", 2, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, &s, &e),
                     PROTO_E_UNKNOWN_ENV);
        const env_kv bad = {"kp", -1};
        cr_assert_eq(herd_client_make(c, 0, "anymal_c-stand", 2, &bad, 1, 0, ENV_AUTORESET_NEXT_STEP, &s, &e),
                     PROTO_E_BAD_CONFIG);
        herd_client_destroy(&c);
    }
    herd_client *c = client_to(t, NULL, 5000);
    cr_assert_eq(herd_client_ping(c, 0, NULL, &e), 0, "the server still serves: %s", e.message);
    herd_client_destroy(&c);
    cr_assert_eq(srv_thread_stop(&t), 0);
}

Test(auth, plain_mode_only_on_loopback_unless_insecure)
{
    cr_assert(srv_config_bind_is_local("tcp://127.0.0.1:5555"));
    cr_assert(srv_config_bind_is_local("tcp://127.0.0.7:*"));
    cr_assert(srv_config_bind_is_local("tcp://localhost:1"));
    cr_assert(srv_config_bind_is_local("tcp://[::1]:5555"));
    cr_assert(srv_config_bind_is_local("ipc:///tmp/herd.sock"));
    cr_assert(srv_config_bind_is_local("inproc://x"));
    cr_assert(!srv_config_bind_is_local("tcp://0.0.0.0:5555"));
    cr_assert(!srv_config_bind_is_local("tcp://*:5555"));
    cr_assert(!srv_config_bind_is_local("tcp://eth0:5555"));
    cr_assert(!srv_config_bind_is_local("tcp://127.0.0.1.example.com:5555"));
    cr_assert(!srv_config_bind_is_local("tcp://10.0.0.5:5555"));
    srv_config c;
    char err[512];
    srv_config_defaults(&c);
    snprintf(c.bind, sizeof c.bind, "tcp://0.0.0.0:5555");
    cr_assert_eq(srv_config_check(&c, err, sizeof err), -1);
    cr_assert(strstr(err, "--insecure"), "%s", err);
    setenv("HERD_INSECURE", "1", 1);
    cr_assert_eq(srv_config_from_env(&c, err, sizeof err), 0, "%s", err);
    unsetenv("HERD_INSECURE");
    cr_assert_eq(srv_config_check(&c, err, sizeof err), 0, "%s", err);
    char *argv[] = {"herd-server", "--insecure=0", NULL};
    cr_assert_eq(srv_config_from_args(&c, 2, argv, err, sizeof err), 0, "%s", err);
    cr_assert_eq(srv_config_check(&c, err, sizeof err), -1);
    char *argv2[] = {"herd-server", "--curve-secret-key-file", "/k", "--insecure", NULL};
    cr_assert_eq(srv_config_from_args(&c, 4, argv2, err, sizeof err), 0, "%s", err);
    cr_assert(c.insecure);
    cr_assert_eq(srv_config_check(&c, err, sizeof err), -1, "keys without authorized keys");
    cr_assert(strstr(err, "--authorized-keys"), "%s", err);
    srv_config_defaults(&c);
    snprintf(c.authorized_keys, sizeof c.authorized_keys, "/dir");
    cr_assert_eq(srv_config_check(&c, err, sizeof err), -1, "authorized keys without the server's key");
}

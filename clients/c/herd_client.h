/* herd_client.h — C client of herd-server (protocol/PROTOCOL.md), for C and C++ programs, the tests
 * and the benchmarks.
 *
 *     herd_error err;
 *     const char *ep[] = {"tcp://127.0.0.1:5555"};
 *     herd_client *c = herd_client_new(ep, 1, 5000, &err);           // 5 s timeout per reply
 *     herd_session s;
 *     herd_client_make(c, -1, "anymal_c-walk", 4096, NULL, 0, 42, ENV_AUTORESET_NEXT_STEP, &s, &err);
 *     herd_client_reset(c, &s, -1, NULL, NULL, obs, &err);            // obs: 4096 x s.obs_dim floats
 *     herd_step_out out = {.obs = obs, .reward = rew, .terminated = term, .truncated = trunc};
 *     herd_client_step(c, &s, -1, NULL, actions, 0, &out, &err);       // actions: 4096 x s.act_dim
 *     herd_client_close(c, &s, &err);
 *     herd_client_destroy(&c);
 *
 * Every call returns 0 on success, or an error code (proto_code) with err filled: the server's
 * {code, message}, or a client-side TIMEOUT (the message names the server address), TRANSPORT or
 * BAD_REPLY.  No call blocks longer than the timeout.
 *
 * Pipelining: the *_send functions return a request id at once; herd_client_wait(id) or
 * herd_client_recv (whichever reply comes first) return the replies, in any order.  Replies that
 * arrive while waiting for another id are kept until asked for.
 *
 * Several servers: herd_client_new takes several endpoints, one DEALER socket each (any number); a
 * session lives on the server that made it (herd_session.server).  make with server = -1 picks servers
 * in turn.  A "tcp://NAME:PORT" whose NAME resolves to several addresses (a Kubernetes headless Service,
 * round-robin DNS) becomes one endpoint per address (see herd_expand_endpoints), so
 * herd_client_nservers may exceed nendpoints.  herd_client_make_spread spreads the worlds of one task
 * over every server (one session each) and herd_client_reset_spread / step_spread / close_spread drive
 * them as one batch in global world order.
 *
 * Authentication: with herd_client_new_curve (or the HERD_CURVE_SERVER_KEY / HERD_CURVE_CLIENT_SECRET_KEY
 * environment variables with herd_client_new) every socket is a CURVE client of the server key, with
 * the client's own key pair (the server admits authorized keys only; a refused key shows as TIMEOUT).
 * Sessions: the token of each session (PROTOCOL.md section 9) is kept in its herd_session and by the
 * client, and sent with every request naming the session; nothing to do by hand.
 *
 * Threads: a herd_client is used by one thread at a time (ZeroMQ sockets are not thread-safe); use one
 * client per thread.  Ownership: herd_client_destroy frees the client; herd_reply_destroy a reply.
 */
#ifndef HERD_CLIENT_H
#define HERD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "env_spec.h"
#include "proto.h"

typedef struct herd_client herd_client;

typedef struct {
    proto_code code;            /* PROTO_OK when there is no error; proto_code_name(code) = the wire name */
    char message[PROTO_MSG_MAX + 128];
} herd_error;

typedef struct {
    int server;                 /* index of the endpoint the session lives on */
    uint64_t id;
    int num_worlds, obs_dim, act_dim, nterms;
    env_autoreset autoreset;
    uint64_t seed;
    env_spec spec;              /* as the server sent it (configured: sim_dt, decimation, ...) */
    double config[ENV_MAX_CONFIG];  /* effective configuration values, in spec.config order */
    uint8_t token[PROTO_TOKEN_BYTES];   /* the session's token (sent with every request naming it) */
    int has_token;              /* 0 with a server older than protocol minor 1 */
    uint8_t view_token[PROTO_TOKEN_BYTES];  /* its read-only right (model, poses, stats), to give a viewer */
    int has_view_token;         /* 0 with a server older than protocol minor 2 */
    int critic_dim;             /* made with critic_obs (minor 4): floats per world of its replies' info.critic_obs
                                 * (spec.critic_dim); 0 otherwise */
} herd_session;

/* CURVE settings of a client: Z85 text keys (40 characters). */
typedef struct {
    const char *server_key;     /* the server's public key: CURVE on when not NULL */
    const char *secret_key;     /* the client's secret key (its public key is derived from it); NULL: a
                                 * fresh key pair (useful only with a server that admits any key) */
} herd_curve;

/* Output buffers of a step, one row per stepped world; any pointer may be NULL (not wanted). */
typedef struct {
    float *obs;                 /* n x obs_dim */
    float *reward;              /* n */
    uint8_t *terminated, *truncated;        /* n, 0 / 1 */
    uint8_t *physics_reset, *episode_done;  /* n */
    float *episode_return;      /* n */
    int32_t *episode_length;    /* n */
    float *episode_terms;       /* n x nterms */
    uint8_t *autoreset;         /* n: next_step sessions: the world was reset by this step (action ignored) */
    float *final_obs;           /* n x obs_dim: same_step sessions */
    uint8_t *final_mask;        /* n: same_step sessions: final_obs row is valid */
    float *reward_terms;        /* n x nterms: when asked for */
    float *critic_obs;          /* n x critic_dim: sessions made with critic_obs (herd_make_opts) */
    int32_t *terrain_level;     /* n: tasks with a terrain curriculum (spec.nterrain_kinds > 0; minor 5): each world's
                                 * level (row) in the episode obs describes */
    int32_t *terrain_kind;      /* n: the same tasks: each world's tile kind, an index into spec.terrain_kinds */
} herd_step_out;

typedef struct {
    int protocol;
    int protocol_minor;         /* 0 when the server does not say (PROTOCOL.md section 13) */
    char auth[16];              /* "curve", "none", or "" (minor 0) */
    char server[64];
    int threads;
    uint64_t max_message_bytes;
    int64_t max_worlds_per_session, max_worlds;
    int nenvs;
    env_spec *envs;             /* nenvs specs (malloc'd: herd_hello_free) */
} herd_hello;

typedef struct {
    double uptime_s, steps_per_s;
    int64_t sessions, worlds;
    uint64_t steps, requests, errors;
    int threads;
    int has_session;
    uint64_t session;
    char env[ENV_NAME_MAX];
    int64_t num_worlds;
    uint64_t session_steps, session_requests, session_errors;
    double session_steps_per_s, age_s, idle_s;
    /* the session's terrain levels (minor 5; a task with a terrain curriculum, else nterrain_kinds 0): the mean
     * level of its worlds that have one and their count, and per kind (terrain_kinds[k]; levels NAN where none) */
    int nterrain_kinds;
    char terrain_kinds[ENV_MAX_TERRAIN_KINDS][ENV_CHOICE_MAX];
    double terrain_level;
    int64_t terrain_worlds;
    double kind_level[ENV_MAX_TERRAIN_KINDS];
    int64_t kind_worlds[ENV_MAX_TERRAIN_KINDS];
} herd_stats;

/* A decoded reply (views into the received message). */
typedef struct herd_reply {
    uint64_t id;
    int server;
    proto_op op;                /* of the request it answers */
    int ok;
    herd_error error;           /* when !ok */
    proto_reply msg;            /* msg.root: the reply map (read it with proto_get_* / proto_value_*) */
    struct herd_reply *next;    /* (the client's queue) */
    void *zmsg;                 /* the ZeroMQ message the views point into */
    uint8_t *copy;              /* an 8-aligned copy when the received bytes were not aligned */
} herd_reply;

/* Connects one DEALER per endpoint (ZeroMQ connects lazily: a dead server shows as a TIMEOUT later).
 * The endpoints are first expanded by herd_expand_endpoints (DNS names resolving to several addresses).
 * timeout_ms: the longest wait for any reply (> 0).  NULL with err on failure. */
herd_client *herd_client_new(const char *const *endpoints, int nendpoints, int timeout_ms, herd_error *err);
/* As herd_client_new, with CURVE.  curve NULL (or its server_key NULL): the environment variables
 * HERD_CURVE_SERVER_KEY and HERD_CURVE_CLIENT_SECRET_KEY when set, else plain (herd_client_new does the
 * same).  A malformed key: NULL with TRANSPORT and a message. */
herd_client *herd_client_new_curve(const char *const *endpoints, int nendpoints, int timeout_ms, const herd_curve *curve,
                                   herd_error *err);
/* Expands endpoints like the Python client (herd.client.expand_addresses): an endpoint "tcp://NAME:PORT"
 * whose NAME is a host name (not an IP literal, "*", or a ZeroMQ "src;dst" form) is resolved with
 * getaddrinfo (SOCK_STREAM; IPv4 addresses, or IPv6 ones when NAME has no IPv4 address).  Duplicate
 * addresses are dropped and the rest sorted; when NAME has several, the endpoint becomes one
 * "tcp://IP:PORT" each ("tcp://[IPv6]:PORT" for IPv6; the client enables ZMQ_IPV6 on those sockets).
 * A name with one IPv4 address, or that does not resolve, is kept as given (ZeroMQ resolves it itself on
 * each reconnect, and a name that does not resolve shows as a TIMEOUT naming it).  IPv4 is preferred so
 * that "tcp://localhost:PORT" reaches a server bound to 127.0.0.1 even where localhost is also ::1.
 * Literal IPs and ipc:// / inproc:// endpoints are kept as they are.  Resolution may block (the system
 * resolver's own timeout).  *out: *nout malloc'd strings (free with herd_endpoints_free).  0 or error. */
int herd_expand_endpoints(const char *const *endpoints, int nendpoints, char ***out, int *nout, herd_error *err);
void herd_endpoints_free(char **endpoints, int n);
void herd_client_destroy(herd_client **c);
void herd_client_set_timeout(herd_client *c, int timeout_ms);
int herd_client_nservers(const herd_client *c);
const char *herd_client_endpoint(const herd_client *c, int server);

/* ---- synchronous calls ---- */
int herd_client_ping(herd_client *c, int server, double *server_unix_time, herd_error *err);
int herd_client_hello(herd_client *c, int server, herd_hello *out, herd_error *err);
void herd_hello_free(herd_hello *h);
/* server: index, or -1 = round-robin.  config: overrides (NULL / 0 for none). */
int herd_client_make(herd_client *c, int server, const char *env, int num_worlds, const env_kv *config, int nconfig,
                     uint64_t seed, env_autoreset autoreset, herd_session *out, herd_error *err);
/* A make config entry given by name, for a key with named choices (env_spec.h), e.g. {"solver", "admm"}. */
typedef struct {
    const char *key;
    const char *name;
} herd_choice;
/* herd_client_make with named choices as well (sent as strings: the server resolves them; an unknown
 * name is BAD_CONFIG naming the allowed ones).  choices: NULL / 0 for none. */
int herd_client_make_choices(herd_client *c, int server, const char *env, int num_worlds, const env_kv *config,
                             int nconfig, const herd_choice *choices, int nchoices, uint64_t seed,
                             env_autoreset autoreset, herd_session *out, herd_error *err);
/* Every option of a make (PROTOCOL.md section 6.2): zero-initialize, set what you need. */
typedef struct {
    const env_kv *config;       /* overrides by number */
    int nconfig;
    const herd_choice *choices; /* overrides by name */
    int nchoices;
    uint64_t seed;
    env_autoreset autoreset;
    int critic_obs;             /* reset and step replies carry info.critic_obs (minor 4; herd_reply_critic_obs,
                                 * herd_step_out.critic_obs); refused (BAD_FIELD) for an env without one */
} herd_make_opts;
/* herd_client_make with every option (opts NULL: the defaults). */
int herd_client_make_opts(herd_client *c, int server, const char *env, int num_worlds, const herd_make_opts *opts,
                          herd_session *out, herd_error *err);
/* n = -1 and ids = NULL: every world.  seeds: one per world reset, or NULL.  obs: n x obs_dim, or NULL. */
int herd_client_reset(herd_client *c, const herd_session *s, int n, const int32_t *ids, const uint64_t *seeds,
                      float *obs, herd_error *err);
/* actions: n x act_dim float32 (n = -1 / ids = NULL: every world). */
int herd_client_step(herd_client *c, const herd_session *s, int n, const int32_t *ids, const float *actions,
                     int reward_terms, herd_step_out *out, herd_error *err);
int herd_client_close(herd_client *c, const herd_session *s, herd_error *err);
/* session: 0 for the server-wide figures only (the token of a session this client made is sent along). */
int herd_client_stats(herd_client *c, int server, uint64_t session, herd_stats *out, herd_error *err);
/* A stats reply read into *out (what herd_client_stats does with the reply it receives). */
int herd_reply_stats(const herd_reply *r, herd_stats *out, herd_error *err);

/* ---- several servers: one batch of worlds spread over them ---- */
/* Global worlds [offset[k], offset[k] + part[k].num_worlds) live on session part[k] (server
 * part[k].server); parts are in server order, contiguous, as even as possible (the first
 * num_worlds % nservers servers get one world more; servers with no world get no session), exactly as
 * the Python client (herd.make_vec) spreads them. */
typedef struct {
    int nparts;
    herd_session *part;         /* nparts sessions (malloc'd) */
    int *offset;                /* nparts first global worlds */
    uint64_t *rid;              /* (request ids in flight) */
    int num_worlds, obs_dim, act_dim, nterms;
    env_autoreset autoreset;
    uint64_t seed;              /* the make seed: default seed of herd_client_reset_spread */
} herd_spread;

/* Makes one session per server (every make in flight at once) with its slice of num_worlds worlds.
 * On any error (e.g. a TIMEOUT naming a dead server's endpoint) the sessions made are closed (best
 * effort) and *out is left empty. */
int herd_client_make_spread(herd_client *c, const char *env, int num_worlds, const env_kv *config, int nconfig,
                            uint64_t seed, env_autoreset autoreset, herd_spread *out, herd_error *err);
/* Resets every world, global world g with the explicit seed seed + g (PROTOCOL.md section 8), so the
 * results do not depend on how the worlds are spread.  obs: num_worlds x obs_dim in global order, or NULL. */
int herd_client_reset_spread(herd_client *c, const herd_spread *sp, uint64_t seed, float *obs, herd_error *err);
/* Steps every world: actions num_worlds x act_dim in global order.  Sends every server its slice,
 * then collects every reply into out (rows in global order; any pointer NULL = not wanted).  With
 * several servers the actions are checked finite first (so no server steps alone: NON_FINITE).  All
 * replies are collected even after an error; the first error is returned.  The whole call waits at most
 * the client's timeout. */
int herd_client_step_spread(herd_client *c, const herd_spread *sp, const float *actions, int reward_terms,
                            herd_step_out *out, herd_error *err);
/* Closes every session (best effort: all are tried) and frees *sp; the first error is returned. */
int herd_client_close_spread(herd_client *c, herd_spread *sp, herd_error *err);

/* ---- pipelining ---- */
/* Each returns the request id (> 0), or 0 with err. */
uint64_t herd_client_reset_send(herd_client *c, const herd_session *s, int n, const int32_t *ids,
                                const uint64_t *seeds, herd_error *err);
uint64_t herd_client_step_send(herd_client *c, const herd_session *s, int n, const int32_t *ids, const float *actions,
                               int reward_terms, herd_error *err);
/* Sends any encoded request (its "id" must be the one returned by herd_client_next_id). */
uint64_t herd_client_next_id(herd_client *c);
int herd_client_send_request(herd_client *c, int server, const proto_request *r, herd_error *err);
/* Sends raw bytes as a request payload (for tests: malformed input).  Replies with an id the client
 * did not assign are still returned by herd_client_recv. */
int herd_client_send_raw(herd_client *c, int server, const void *bytes, size_t len, herd_error *err);

/* The next reply, whichever request it answers.  timeout_ms < 0: the client's timeout.  0 or error. */
int herd_client_recv(herd_client *c, int timeout_ms, herd_reply **out, herd_error *err);
/* The reply to request id (replies to other requests are kept for later). */
int herd_client_wait(herd_client *c, uint64_t id, int timeout_ms, herd_reply **out, herd_error *err);
void herd_reply_destroy(herd_reply **r);

/* Copies a reset / step reply into caller buffers (n rows; checks shapes against the session).
 * Returns the server's error when the reply is an error. */
int herd_reply_reset(const herd_reply *r, const herd_session *s, int n, float *obs, herd_error *err);
int herd_reply_step(const herd_reply *r, const herd_session *s, int n, herd_step_out *out, herd_error *err);
/* A view of a tensor of the reply: path "obs", "reward", ..., or "info.final_obs".  Its data is
 * 8-byte aligned and valid until herd_reply_destroy. */
int herd_reply_tensor(const herd_reply *r, const char *path, proto_tensor *t, herd_error *err);
/* The critic observation of a reset or step reply of session s (made with critic_obs): a pointer into the
 * reply, n x s->critic_dim floats, 8-byte aligned, valid until herd_reply_destroy.  NULL with err filled when the
 * reply is an error, or has none of that shape (BAD_REPLY). */
const float *herd_reply_critic_obs(const herd_reply *r, const herd_session *s, int n, herd_error *err);
/* The terrain tiles of a reset or step reply of session s, whose task has a terrain curriculum (s->spec.nterrain_kinds
 * > 0; minor 5): *level and *kind point into the reply (n int32 each, 8-byte aligned, valid until
 * herd_reply_destroy): each world's terrain level and its tile kind (an index into s->spec.terrain_kinds).
 * Returns 0, or an error code with err filled when the reply is an error, the task has no terrain or the reply
 * lacks the tensors of that shape (BAD_REPLY). */
int herd_reply_terrain(const herd_reply *r, const herd_session *s, int n, const int32_t **level, const int32_t **kind,
                       herd_error *err);

/* Replies from bytes, read exactly as the client reads what it receives (recorded replies, fuzzing):
 * herd_reply_decode copies len bytes and decodes them as one reply (op unknown: PROTO_OP_COUNT, server 0);
 * NULL with err filled (BAD_REPLY, or INTERNAL out of memory) when they are not one.  Free with
 * herd_reply_destroy.  herd_reply_make reads a successful make reply from the given server into s as
 * herd_client_make does (only the client's own table of session tokens is not involved); 0, or BAD_REPLY. */
herd_reply *herd_reply_decode(const void *bytes, size_t len, herd_error *err);
int herd_reply_make(const herd_reply *rep, int server, herd_session *s, herd_error *err);

#endif

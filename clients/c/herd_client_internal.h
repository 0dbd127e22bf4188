/* herd_client_internal.h — what the C client's sources share (not part of the public API).
 *
 *   herd_client.c            the client object, sending, receiving (request ids, the reply queue),
 *                            the synchronous calls and the reply readers
 *   herd_client_endpoints.c  endpoint expansion (DNS names resolving to several addresses)
 *   herd_client_spread.c     one batch of worlds spread over several servers
 *   herd_client_util.c       the helpers all of them use (herd_client_util.h)
 */
#ifndef HERD_CLIENT_INTERNAL_H
#define HERD_CLIENT_INTERNAL_H

#include <zmq.h>

#include "herd_client.h"
#include "herd_client_util.h"

typedef struct {
    uint64_t id;
    int server;
    proto_op op;
    int abandoned;              /* timed out: drop the reply when it comes */
} pending_t;

typedef struct {
    int server;
    uint64_t session;
    uint8_t token[PROTO_TOKEN_BYTES];
} hc_token;

struct herd_client {
    void *ctx;
    int n;
    void **socks;
    char **eps;
    zmq_pollitem_t *items;      /* n: one per socket (allocated once) */
    int timeout_ms;
    uint64_t next_id;
    int rr;
    herd_reply *qhead, *qtail;  /* received, not yet handed out */
    pending_t *pend;
    int npend, cappend;
    hc_token *tokens;           /* of the sessions this client made and has not closed */
    int ntokens, captokens;
};

/* Builds a make request (id not set). */
int hc_make_request(proto_request *r, const char *env, int num_worlds, const env_kv *config, int nconfig,
                    const herd_choice *choices, int nchoices, uint64_t seed, env_autoreset autoreset, herd_error *err);
/* herd_reply_make, and remembers the session's token in c. */
int hc_make_parse(herd_client *c, const herd_reply *rep, int server, herd_session *s, herd_error *err);
/* Sends a reset (seeds may be NULL) or step (actions) of n rows of session s (ids NULL: every world).
 * Returns the request id, or 0 with err. */
uint64_t hc_send_rows(herd_client *c, const herd_session *s, proto_op op, int n, const int32_t *ids,
                      const uint64_t *seeds, const float *actions, int reward_terms, herd_error *err);
/* Sends a close of session s: the request id, or 0 with err. */
uint64_t hc_close_send(herd_client *c, const herd_session *s, herd_error *err);

#endif

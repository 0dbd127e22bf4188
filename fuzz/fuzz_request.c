/* fuzz_request.c — the server's request decoder (proto_decode_request) on arbitrary bytes.
 *
 * Besides "no crash, no sanitizer report", it checks what the server relies on:
 *   - the error code is a wire code and the message is 0-terminated within PROTO_MSG_MAX;
 *   - a request accepted under tight limits is accepted, identically, under the defaults (limits only
 *     ever reject);
 *   - an accepted request re-encodes (proto_encode_request) to bytes that decode to the same request;
 *   - an accepted request's id is the one proto_peek_id finds, when it finds one;
 *   - the session checks (proto_check_world_ids, proto_check_actions) run on what was decoded.
 */
#include "fuzz_targets.h"

#include <string.h>

#include "proto.h"

static void check_error(int rc, const proto_error *e)
{
    fuzz_check(rc > PROTO_OK && rc < PROTO_E_TIMEOUT, "decoder returned %d, not a server error code", rc);
    fuzz_check(e->code == (proto_code)rc, "error code %d but return value %d", (int)e->code, rc);
    fuzz_check(memchr(e->message, 0, sizeof e->message) != NULL, "error message not terminated");
    fuzz_check(e->message[0] != 0, "empty error message for %s", proto_code_name(e->code));
}

/* a and b decoded from possibly different bytes: the same request. */
static void check_same(const proto_request *a, const proto_request *b, const char *what)
{
    fuzz_check(a->id == b->id && a->has_id == b->has_id, "%s: id", what);
    fuzz_check(a->op == b->op, "%s: op", what);
    fuzz_check(a->has_session == b->has_session && a->session == b->session, "%s: session", what);
    fuzz_check(a->has_token == b->has_token && (!a->has_token || !memcmp(a->token, b->token, sizeof a->token)),
               "%s: token", what);
    fuzz_check(!strcmp(a->env, b->env) && a->num_worlds == b->num_worlds, "%s: env / num_worlds", what);
    fuzz_check(a->nconfig == b->nconfig, "%s: nconfig %d vs %d", what, a->nconfig, b->nconfig);
    for (int i = 0; i < a->nconfig; i++)
        fuzz_check(!strcmp(a->config[i].key, b->config[i].key) &&
                       !memcmp(&a->config[i].value, &b->config[i].value, sizeof(double)),
                   "%s: config[%d]", what, i);
    for (int i = 0; i < a->nconfig; i++)
        fuzz_check(!strcmp(a->config_name[i], b->config_name[i]), "%s: config_name[%d]", what, i);
    fuzz_check(a->has_autoreset == b->has_autoreset && a->autoreset == b->autoreset, "%s: autoreset", what);
    fuzz_check(a->nids == b->nids, "%s: nids %d vs %d", what, a->nids, b->nids);
    if (a->nids > 0) fuzz_check(!memcmp(a->world_ids, b->world_ids, (size_t)a->nids * 4), "%s: world_ids", what);
    fuzz_check(a->nseeds == b->nseeds, "%s: nseeds %d vs %d", what, a->nseeds, b->nseeds);
    if (a->nseeds > 0) fuzz_check(!memcmp(a->seeds, b->seeds, (size_t)a->nseeds * 8), "%s: seeds", what);
    /* reset: "seed" is written only without "seeds" (the decoder refuses both) */
    fuzz_check(a->has_seed == b->has_seed && a->seed == b->seed, "%s: seed", what);
    fuzz_check(a->has_actions == b->has_actions, "%s: has_actions", what);
    if (a->has_actions) {
        fuzz_check(a->actions.dtype == b->actions.dtype && a->actions.ndim == b->actions.ndim &&
                       !memcmp(a->actions.shape, b->actions.shape, sizeof a->actions.shape) &&
                       a->actions.nbytes == b->actions.nbytes,
                   "%s: actions header", what);
        fuzz_check(!a->actions.nbytes || !memcmp(a->actions.data, b->actions.data, a->actions.nbytes), "%s: actions data",
                   what);
    }
    fuzz_check(a->reward_terms == b->reward_terms, "%s: reward_terms", what);
    fuzz_check(a->contacts == b->contacts && a->latest == b->latest && a->diagnostics == b->diagnostics, "%s: poses flags",
               what);
    fuzz_check(a->has_terrain_region == b->has_terrain_region &&
                   (!a->has_terrain_region || !memcmp(a->terrain_region, b->terrain_region, sizeof a->terrain_region)),
               "%s: terrain_region", what);
}

/* The checks the server makes against a session of num_worlds worlds, act_dim actions. */
static void session_checks(const proto_request *r, int num_worlds, int act_dim)
{
    proto_error e;
    if (r->nids > 0) {
        uint8_t *scratch = calloc((size_t)(num_worlds + 7) / 8, 1);
        if (!scratch) return;
        int rc = proto_check_world_ids(r->world_ids, r->nids, num_worlds, scratch, &e);
        if (rc) check_error(rc, &e);
        for (int i = 0; i < (num_worlds + 7) / 8; i++) fuzz_check(scratch[i] == 0, "world id scratch left dirty");
        free(scratch);
    }
    if (r->has_actions) {
        int n = r->nids >= 0 ? r->nids : num_worlds;
        int rc = proto_check_actions(&r->actions, n, act_dim, r->nids >= 0 ? r->world_ids : NULL, &e);
        if (rc) check_error(rc, &e);
        if (!rc) fuzz_check(r->actions.nbytes == (size_t)n * (size_t)act_dim * 4, "actions accepted with a wrong size");
    }
}

int herd_fuzz_request(const uint8_t *data, size_t size)
{
    proto_limits def, tight;
    proto_limits_default(&def);
    tight = (proto_limits){.max_message_bytes = 2048, .max_depth = 4, .max_objects = 96, .max_worlds = 16};

    proto_request r, t;
    proto_error e, te;
    proto_request_init(&r);
    proto_request_init(&t);
    int rc = proto_decode_request(data, size, &def, &r, &e);
    int trc = proto_decode_request(data, size, &tight, &t, &te);
    if (rc) check_error(rc, &e);
    if (trc) check_error(trc, &te);
    if (!trc) {
        fuzz_check(rc == PROTO_OK, "accepted under tight limits, refused under the defaults: %s", e.message);
        check_same(&r, &t, "tight vs default limits");
    }
    uint64_t pid = 0;
    int peeked = proto_peek_id(data, size, &pid);
    if (!rc) {
        fuzz_check(r.has_id, "accepted without an id");
        fuzz_check(!peeked || pid == r.id, "proto_peek_id found %llu, the decoder %llu", (unsigned long long)pid,
                   (unsigned long long)r.id);
        /* sessions of 1, 8 and 1000 worlds with 1 and 12 actions */
        session_checks(&r, 1, 12);
        session_checks(&r, 8, 1);
        session_checks(&r, 1000, 12);

        proto_buf b;
        proto_buf_init(&b);
        if (proto_encode_request(&b, &r) == 0) {
            proto_request back;
            proto_request_init(&back);
            int brc = proto_decode_request(b.data, b.len, &def, &back, &e);
            fuzz_check(brc == PROTO_OK, "the re-encoded request is refused: %s", e.message);
            check_same(&r, &back, "re-encoded");
            proto_request_clear(&back);
        }
        proto_buf_free(&b);
    } else if (r.has_id) {
        fuzz_check(!peeked || pid == r.id, "error reply id %llu but proto_peek_id found %llu", (unsigned long long)r.id,
                   (unsigned long long)pid);
    }
    proto_request_clear(&r);
    proto_request_clear(&t);
    return 0;
}

#ifndef HERD_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return herd_fuzz_request(data, size); }
#endif

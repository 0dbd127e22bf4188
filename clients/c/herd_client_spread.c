/* herd_client_spread.c — one batch of worlds spread over several servers (one session each), driven as
 * one batch in global world order.  See herd_client_make_spread in herd_client.h. */
#include "herd_client_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Waits for request id of session s until deadline dl (ms, now_ms clock).  A timeout names s's endpoint
 * and the client's timeout; a server's error reply is returned as an error naming the endpoint. */
static int spread_wait(herd_client *c, uint64_t id, const herd_session *s, proto_op op, double dl, herd_reply **out,
                       herd_error *err)
{
    double left = dl - hc_now_ms();
    int rc = herd_client_wait(c, id, left > 0 ? (int)ceil(left) : 0, out, err);
    if (rc == PROTO_E_TIMEOUT)
        return hc_fail(err, PROTO_E_TIMEOUT, "no reply from %s to request %" PRIu64 " (%s) within %d ms",
                       c->eps[s->server], id, proto_op_name(op), c->timeout_ms);
    if (rc) return rc;
    if (!(*out)->ok) {
        rc = hc_fail(err, (*out)->error.code, "%s (server %s)", (*out)->error.message, c->eps[s->server]);
        herd_reply_destroy(out);
    }
    return rc;
}

/* Keeps the first error: *rc / *first take (code, e) when *rc is still 0. */
static void keep_first(int *rc, herd_error *first, int code, const herd_error *e)
{
    if (code && !*rc) {
        *rc = code;
        *first = *e;
    }
}

/* Closes parts[k] where open[k] (every close in flight at once, then every reply); the first error. */
static int close_parts(herd_client *c, const herd_session *parts, const int *open, int np, uint64_t *rid,
                       herd_error *err)
{
    int rc = 0;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    for (int k = 0; k < np; k++) {
        rid[k] = open && !open[k] ? 0 : hc_close_send(c, &parts[k], &e);
        if (!rid[k] && (!open || open[k])) keep_first(&rc, &first, e.code ? (int)e.code : PROTO_E_TRANSPORT, &e);
    }
    double dl = hc_now_ms() + c->timeout_ms;
    for (int k = 0; k < np; k++) {
        if (!rid[k]) continue;
        herd_reply *r = NULL;
        int rk = spread_wait(c, rid[k], &parts[k], PROTO_OP_CLOSE, dl, &r, &e);
        herd_reply_destroy(&r);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc && err) *err = first;
    return rc;
}

static void spread_free(herd_spread *sp)
{
    free(sp->part);
    free(sp->offset);
    free(sp->rid);
    memset(sp, 0, sizeof *sp);
}

int herd_client_make_spread(herd_client *c, const char *env, int num_worlds, const env_kv *config, int nconfig,
                            uint64_t seed, env_autoreset autoreset, herd_spread *out, herd_error *err)
{
    memset(out, 0, sizeof *out);
    if (num_worlds < 1) return hc_fail(err, PROTO_E_BAD_FIELD, "num_worlds must be a positive integer, not %d", num_worlds);
    proto_request r;
    int rc = hc_make_request(&r, env, num_worlds, config, nconfig, NULL, 0, seed, autoreset, err);
    if (rc) return rc;
    const int S = c->n, np = num_worlds < S ? num_worlds : S;
    herd_spread sp;
    memset(&sp, 0, sizeof sp);
    sp.part = calloc((size_t)np, sizeof *sp.part);
    sp.offset = calloc((size_t)np, sizeof *sp.offset);
    sp.rid = calloc((size_t)np, sizeof *sp.rid);
    int *made = calloc((size_t)np, sizeof *made);
    if (!sp.part || !sp.offset || !sp.rid || !made) {
        spread_free(&sp);
        free(made);
        return hc_fail(err, PROTO_E_INTERNAL, "out of memory");
    }
    sp.nparts = np;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    /* contiguous blocks, the first num_worlds % S servers one world more (as the Python client) */
    for (int k = 0, off = 0; k < np && !rc; k++) {
        r.num_worlds = num_worlds / S + (k < num_worlds % S);
        sp.offset[k] = off;
        off += (int)r.num_worlds;
        r.id = herd_client_next_id(c);
        int rk = herd_client_send_request(c, k, &r, &e);
        sp.rid[k] = rk ? 0 : r.id;
        keep_first(&rc, &first, rk, &e);
    }
    double dl = hc_now_ms() + c->timeout_ms;
    for (int k = 0; k < np; k++) {
        if (!sp.rid[k]) continue;
        herd_session who = {.server = k};
        herd_reply *rep = NULL;
        int rk = spread_wait(c, sp.rid[k], &who, PROTO_OP_MAKE, dl, &rep, &e);
        if (!rk) {
            rk = hc_make_parse(rep, k, &sp.part[k], &e);
            made[k] = !rk;
            if (!rk && (sp.part[k].obs_dim != sp.part[0].obs_dim || sp.part[k].act_dim != sp.part[0].act_dim ||
                        sp.part[k].nterms != sp.part[0].nterms))
                rk = hc_fail(&e, PROTO_E_BAD_REPLY, "servers disagree on the spec of %s (%s and %s)", env, c->eps[0],
                             c->eps[k]);
        }
        herd_reply_destroy(&rep);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc) {
        close_parts(c, sp.part, made, np, sp.rid, &e);      /* best effort */
        spread_free(&sp);
        free(made);
        if (err) *err = first;
        return rc;
    }
    free(made);
    sp.num_worlds = num_worlds;
    sp.obs_dim = sp.part[0].obs_dim;
    sp.act_dim = sp.part[0].act_dim;
    sp.nterms = sp.part[0].nterms;
    sp.autoreset = sp.part[0].autoreset;
    sp.seed = seed;
    *out = sp;
    return 0;
}

/* The rows of o from global world off on (cols per row: obs_dim / nterms). */
static herd_step_out step_rows(const herd_step_out *o, size_t off, size_t od, size_t nt)
{
    herd_step_out s;
    memset(&s, 0, sizeof s);
    if (!o) return s;
#define ROWS(f, cols) s.f = o->f ? o->f + off * (cols) : NULL
    ROWS(obs, od);
    ROWS(reward, 1);
    ROWS(terminated, 1);
    ROWS(truncated, 1);
    ROWS(physics_reset, 1);
    ROWS(episode_done, 1);
    ROWS(episode_return, 1);
    ROWS(episode_length, 1);
    ROWS(episode_terms, nt);
    ROWS(autoreset, 1);
    ROWS(final_obs, od);
    ROWS(final_mask, 1);
    ROWS(reward_terms, nt);
#undef ROWS
    return s;
}

/* Sends every part its rows (reset with seeds, or step with actions), then collects every reply into
 * obs (reset) / out (step). */
static int spread_rows(herd_client *c, const herd_spread *sp, proto_op op, const uint64_t *seeds, const float *actions,
                       int reward_terms, float *obs, herd_step_out *out, herd_error *err)
{
    if (!sp || sp->nparts < 1) return hc_fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    int rc = 0;
    herd_error first, e;
    memset(&first, 0, sizeof first);
    const size_t od = (size_t)sp->obs_dim, ad = (size_t)sp->act_dim, nt = (size_t)sp->nterms;
    for (int k = 0; k < sp->nparts; k++) {
        const herd_session *s = &sp->part[k];
        size_t off = (size_t)sp->offset[k];
        sp->rid[k] = rc ? 0
                        : hc_send_rows(c, s, op, s->num_worlds, NULL, seeds ? seeds + off : NULL,
                                       actions ? actions + off * ad : NULL, reward_terms, &e);
        if (!rc && !sp->rid[k]) keep_first(&rc, &first, e.code ? (int)e.code : PROTO_E_TRANSPORT, &e);
    }
    double dl = hc_now_ms() + c->timeout_ms;
    for (int k = 0; k < sp->nparts; k++) {
        if (!sp->rid[k]) continue;
        const herd_session *s = &sp->part[k];
        size_t off = (size_t)sp->offset[k];
        herd_reply *r = NULL;
        int rk = spread_wait(c, sp->rid[k], s, op, dl, &r, &e);
        if (!rk && op == PROTO_OP_RESET) {
            rk = herd_reply_reset(r, s, s->num_worlds, obs ? obs + off * od : NULL, &e);
        } else if (!rk) {
            herd_step_out o = step_rows(out, off, od, nt);
            rk = herd_reply_step(r, s, s->num_worlds, &o, &e);
        }
        herd_reply_destroy(&r);
        keep_first(&rc, &first, rk, &e);
    }
    if (rc && err) *err = first;
    return rc;
}

int herd_client_reset_spread(herd_client *c, const herd_spread *sp, uint64_t seed, float *obs, herd_error *err)
{
    if (!sp || sp->num_worlds < 1) return hc_fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    uint64_t *seeds = malloc((size_t)sp->num_worlds * sizeof *seeds);
    if (!seeds) return hc_fail(err, PROTO_E_INTERNAL, "out of memory");
    for (int g = 0; g < sp->num_worlds; g++) seeds[g] = seed + (uint64_t)g;
    int rc = spread_rows(c, sp, PROTO_OP_RESET, seeds, NULL, 0, obs, NULL, err);
    free(seeds);
    return rc;
}

int herd_client_step_spread(herd_client *c, const herd_spread *sp, const float *actions, int reward_terms,
                            herd_step_out *out, herd_error *err)
{
    if (!sp || sp->num_worlds < 1) return hc_fail(err, PROTO_E_UNKNOWN_SESSION, "not a spread session (closed?)");
    if (!actions) return hc_fail(err, PROTO_E_MISSING_FIELD, "no actions");
    if (sp->nparts > 1) {       /* check before splitting, so that no server steps alone */
        size_t total = (size_t)sp->num_worlds * (size_t)sp->act_dim;
        for (size_t i = 0; i < total; i++)
            if (!isfinite(actions[i])) {
                int row = (int)(i / (size_t)sp->act_dim), col = (int)(i % (size_t)sp->act_dim);
                return hc_fail(err, PROTO_E_NON_FINITE, "actions[%d][%d] = %g (world %d) is not finite", row, col,
                               (double)actions[i], row);
            }
    }
    return spread_rows(c, sp, PROTO_OP_STEP, NULL, actions, reward_terms, NULL, out, err);
}

int herd_client_close_spread(herd_client *c, herd_spread *sp, herd_error *err)
{
    if (!sp || sp->nparts < 1) {
        if (sp) spread_free(sp);
        return 0;
    }
    int rc = close_parts(c, sp->part, NULL, sp->nparts, sp->rid, err);
    spread_free(sp);
    return rc;
}

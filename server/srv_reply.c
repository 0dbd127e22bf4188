/* srv_reply.c — sending replies.  See srv_reply.h. */
#include "srv_reply.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "srv_log.h"
#include "srv_metrics.h"

static void free_buf(void *data, void *hint)
{
    queued_reply *q = hint;
    if (q) {
        atomic_fetch_sub(&q->S->mem_queued, q->len);
        if (q->conn) atomic_fetch_sub(&q->conn->queued_bytes, q->len);
        free(q);
    }
    free(data);
}

/* Writes src into dst (cap bytes, NUL-terminated) as valid UTF-8: bytes that do not form a well-formed
 * sequence become '?', and the text is cut at a character boundary.  Error messages echo client strings
 * (env names, config keys, field names), and replies must stay valid MessagePack str. */
static void utf8_sanitize(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)src;
    while (*p && o + 1 < cap) {
        int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 && *p >= 0xC2 ? 2 : (*p & 0xF0) == 0xE0 ? 3
              : (*p & 0xF8) == 0xF0 && *p <= 0xF4 ? 4 : 0;
        int ok = n > 0;
        for (int k = 1; ok && k < n; k++) ok = (p[k] & 0xC0) == 0x80;
        if (ok && n == 3) ok = !(p[0] == 0xE0 && p[1] < 0xA0) && !(p[0] == 0xED && p[1] >= 0xA0);
        if (ok && n == 4) ok = !(p[0] == 0xF0 && p[1] < 0x90) && !(p[0] == 0xF4 && p[1] >= 0x90);
        if (!ok) {
            dst[o++] = '?';
            p++;
            continue;
        }
        if (o + (size_t)n + 1 > cap) break;
        memcpy(dst + o, p, (size_t)n);
        o += (size_t)n;
        p += n;
    }
    dst[o] = 0;
}

void srv_close_frames(zmq_msg_t *f, int n)
{
    for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

static void send_coded(srv_server *S, srv_reply_to *to, int code, void *buf, size_t len, int own)
{
    zmq_msg_t *frames = to->frames;
    int nframes = to->nframes;
    if (nframes <= 0) {         /* replied already, or no reply wanted */
        if (own) free(buf);
        return;
    }
    to->nframes = 0;
    /* the payload message first: once an envelope frame is sent (SNDMORE), the payload must follow, or
     * the ROUTER would append the next reply to this unfinished message */
    zmq_msg_t m;
    if (own) {
        /* the budget of unread replies is the connection's (frame 0: the routing id the ROUTER gave it) */
        uint8_t cid[SRV_CLIENT_ID_MAX];
        size_t cn = srv_client_connection_identity(cid, zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]));
        srv_client *c = cn ? srv_client_get(S->conns, cid, cn, srv_now_s()) : NULL;
        if (c && atomic_load(&c->queued_bytes) + len > S->cfg.client_max_queued_bytes) {
            /* a client that does not read its replies: drop them rather than hold its memory */
            free(buf);
            srv_close_frames(frames, nframes);
            S->dropped_replies++;
            srv_metrics_dropped(S->metrics, SRV_DROP_REPLY);
            double t = srv_now_s();
            char who[96], conn[96];
            who[0] = 0;
            if (to->client) srv_client_name(to->client, who, sizeof who);
            srv_client_name(c, conn, sizeof conn);
            int lv = t - S->last_drop_log >= DROP_LOG_S ? SRV_LOG_WARN : SRV_LOG_DEBUG;
            if (lv == SRV_LOG_WARN) S->last_drop_log = t;
            LOG(S, lv, "client %s, %s: reply of %zu bytes dropped: %zu bytes of its replies are still unread (limit %zu, "
                "--client-max-queued-bytes); %" PRIu64 " replies dropped so far", who, conn, len,
                (size_t)atomic_load(&c->queued_bytes), S->cfg.client_max_queued_bytes, S->dropped_replies);
            return;
        }
        queued_reply *q = malloc(sizeof *q);
        if (q) {
            *q = (queued_reply){S, c, len};
            atomic_fetch_add(&S->mem_queued, len);
            if (c) atomic_fetch_add(&c->queued_bytes, len);
        }
        if (zmq_msg_init_data(&m, buf, len, free_buf, q)) {
            free_buf(buf, q);
            srv_close_frames(frames, nframes);
            return;
        }
    } else {
        if (zmq_msg_init_size(&m, len)) {
            srv_close_frames(frames, nframes);
            return;
        }
        memcpy(zmq_msg_data(&m), buf, len);
    }
    int ok = 1;
    for (int i = 0; i < nframes; i++) {
        if (ok && zmq_msg_send(&frames[i], S->router, ZMQ_SNDMORE) < 0) ok = 0;
        zmq_msg_close(&frames[i]);
    }
    if (ok && zmq_msg_send(&m, S->router, 0) < 0) ok = 0;
    zmq_msg_close(&m);
    if (S->metrics) srv_metrics_reply(S->metrics, to->op, code, srv_now_s() - to->t0, len);
    if (!ok) LOG(S, SRV_LOG_DEBUG, "reply not sent: %s", zmq_strerror(zmq_errno()));
}

void srv_send_reply(srv_server *S, srv_reply_to *to, void *buf, size_t len, int own)
{
    send_coded(S, to, 0, buf, len, own);
}

void srv_send_error(srv_server *S, srv_reply_to *to, uint64_t id, srv_session *sess, proto_code code, const char *msg)
{
    S->errors++;
    if (sess) sess->errors++;
    LOG(S, SRV_LOG_DEBUG, "request %" PRIu64 ": %s: %s", id, proto_code_name(code), msg);
    if (to->nframes < 0) return;
    char clean[PROTO_MSG_MAX];
    utf8_sanitize(clean, sizeof clean, msg);
    proto_buf_reset(&S->out);
    proto_encode_error(&S->out, id, code, clean);
    send_coded(S, to, code, S->out.data, S->out.len, 0);
}

void srv_send_small(srv_server *S, srv_reply_to *to)
{
    if (S->out.oom) {
        if (to->nframes > 0) srv_close_frames(to->frames, to->nframes);
        to->nframes = 0;
        return;
    }
    srv_send_reply(S, to, S->out.data, S->out.len, 0);
}

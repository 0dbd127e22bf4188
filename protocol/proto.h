/* proto.h — the herd wire protocol: MessagePack encode/decode and validation (see PROTOCOL.md).
 *
 * Pure functions: no ZeroMQ, no threads, no global state, so everything here can be unit-tested and
 * fuzzed on byte buffers.  The server and the C client share it.
 *
 *   requests   proto_decode_request (server side: bytes -> validated proto_request, or {code, message})
 *              proto_encode_request (client side: proto_request -> bytes)
 *   replies    proto_encode_*_reply (server side); the large reset/step replies are laid out once with
 *              reserved, 8-byte aligned tensor regions that the workers fill in place (zero copy)
 *              proto_decode_reply + proto_get_* (client side: bytes -> an opaque tree of proto_value
 *              handles, read with typed getters by key path such as "info.final_obs")
 *   checks     proto_check_world_ids, proto_check_finite (request content against a session)
 *
 * Ownership: a proto_request owns its world_ids / seeds arrays (proto_request_clear frees them); its
 * actions tensor points into the request buffer, which must outlive it.  A proto_reply owns its
 * decoded tree (proto_reply_clear frees it); its strings and tensors point into the reply buffer, which
 * must outlive it.  The MessagePack library is an implementation detail: no type of it appears here.
 *
 * Sources: proto_core.c (names, errors, scanner), proto_request.c (request decoding, checks),
 * proto_reply.c (reply decoding, lookups), proto_write.c (buffer, writer, all encoders).
 */
#ifndef HERD_PROTO_H
#define HERD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "env_scene.h"
#include "env_spec.h"

#define PROTO_VERSION 1
/* Backwards-compatible additions within version 1 (PROTOCOL.md section 13); the hello reply carries it.
 * 1: config keys with named choices (spec "choices"; make accepts the name as a string value); session
 *    tokens (make returns one, later requests carry it); "auth" in hello; the model and poses ops.
 * 2: the session's view token in the make reply (a read-only right: model, poses, stats).
 * 3: one rule for error codes: the wrong MessagePack type is BAD_FIELD (a tensor's dtype and shape too),
 *    a name that exists nowhere (a NUL byte in it included) gets its field's own code. */
/* 4: privileged critic observations: the spec's critic_obs fields, make's critic_obs option, info.critic_obs
 *    in reset and step replies. */
/* 5: terrain curricula: the spec's terrain_kinds, info.terrain_level and info.terrain_kind in the reset and step
 *    replies of such tasks, the session's terrain levels in stats. */
/* 6: contact diagnostics in poses: the request's diagnostics flag, each contact's state, friction impulse and
 *    body, the open contacts, and the worlds' fallback flags and joint-limit impulses. */
/* 7: the model op's terrain_region and the "cells" terrain of its scene (a region of a cell terrain's samples). */
#define PROTO_VERSION_MINOR 7
#define PROTO_TOKEN_BYTES 16            /* a session token: 128 random bits (PROTOCOL.md section 9) */
#define PROTO_NAME_MAX ENV_NAME_MAX     /* env names and config keys, with the terminating 0 */
#define PROTO_MAX_CONFIG 64             /* config overrides per make request */
#define PROTO_MAX_DIMS 4
#define PROTO_MSG_MAX 320               /* error messages, with the terminating 0 */
#define PROTO_ALIGN 8                   /* tensor data written by proto_w_tensor starts at a multiple of this */

/* ---- error codes (the wire names are the upper-case names without PROTO_E_) ---- */
typedef enum {
    PROTO_OK = 0,
    PROTO_E_BAD_MESSAGE,        /* not msgpack, truncated, trailing bytes, not a map, too deep */
    PROTO_E_TOO_LARGE,          /* over the message size (or object count) limit */
    PROTO_E_BAD_VERSION,        /* "v" is not PROTO_VERSION */
    PROTO_E_UNKNOWN_OP,
    PROTO_E_MISSING_FIELD,
    PROTO_E_BAD_FIELD,          /* wrong msgpack type, out of range, unknown key */
    PROTO_E_UNKNOWN_ENV,
    PROTO_E_BAD_CONFIG,         /* unknown configuration key or value out of range */
    PROTO_E_UNKNOWN_SESSION,
    PROTO_E_BAD_SHAPE,
    PROTO_E_BAD_DTYPE,
    PROTO_E_NON_FINITE,         /* NaN or infinite action */
    PROTO_E_BAD_WORLD_IDS,      /* out of range, duplicated, empty */
    PROTO_E_LIMIT,              /* worlds per session / per server */
    PROTO_E_EPISODE_ENDED,      /* autoreset "disabled": stepping a world that ended */
    PROTO_E_SHUTTING_DOWN,
    PROTO_E_INTERNAL,
    /* client-side only (never sent by a server) */
    PROTO_E_TIMEOUT,            /* no reply in time */
    PROTO_E_TRANSPORT,          /* ZeroMQ failure (connect, send, receive) */
    PROTO_E_BAD_REPLY,          /* a reply that does not follow PROTOCOL.md */
    PROTO_E_COUNT
} proto_code;

const char *proto_code_name(proto_code c);          /* "BAD_FIELD", ... ("?" if out of range) */
proto_code proto_code_from_name(const char *s, size_t n);   /* PROTO_E_COUNT if unknown */

typedef struct {
    proto_code code;
    char message[PROTO_MSG_MAX];
} proto_error;

/* Sets e (if not NULL) and returns code. */
int proto_fail(proto_error *e, proto_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- ops, dtypes, autoreset names ---- */
typedef enum { PROTO_OP_HELLO = 0, PROTO_OP_MAKE, PROTO_OP_RESET, PROTO_OP_STEP, PROTO_OP_CLOSE, PROTO_OP_STATS,
               PROTO_OP_PING, PROTO_OP_MODEL, PROTO_OP_POSES, PROTO_OP_COUNT } proto_op;
const char *proto_op_name(proto_op op);

typedef enum { PROTO_DT_BOOL = 0, PROTO_DT_UINT8, PROTO_DT_INT32, PROTO_DT_INT64, PROTO_DT_UINT64,
               PROTO_DT_FLOAT32, PROTO_DT_FLOAT64, PROTO_DT_COUNT } proto_dtype;
const char *proto_dtype_name(proto_dtype d);
size_t proto_dtype_size(proto_dtype d);
int proto_dtype_from_name(const char *s, size_t n);   /* -1 if unknown */

const char *proto_autoreset_name(env_autoreset a);  /* "next_step", "same_step", "disabled" */
int proto_autoreset_from_name(const char *s, size_t n);   /* -1 if unknown */

/* A tensor view: raw little-endian C-order bytes (possibly unaligned: read with memcpy or check). */
typedef struct {
    proto_dtype dtype;
    int ndim;
    uint64_t shape[PROTO_MAX_DIMS];
    const uint8_t *data;
    size_t nbytes;              /* = prod(shape) * proto_dtype_size(dtype) */
} proto_tensor;

/* ---- limits applied by the decoder ---- */
typedef struct {
    size_t max_message_bytes;   /* larger payloads: TOO_LARGE */
    int max_depth;              /* container nesting: BAD_MESSAGE beyond */
    size_t max_objects;         /* msgpack objects in one message: TOO_LARGE beyond */
    int max_worlds;             /* longest world_ids / seeds list or action batch accepted */
} proto_limits;

void proto_limits_default(proto_limits *l);   /* 64 MiB, depth 16, 4 Mi objects, 1 Mi worlds */

/* ---- requests ---- */
typedef struct {
    char key[PROTO_NAME_MAX];
    double value;
} proto_kv;

typedef struct {
    uint64_t id;
    int has_id;                 /* the id could be read (error replies echo it; 0 otherwise) */
    proto_op op;
    /* reset, step, close: required; stats: optional */
    uint64_t session;
    int has_session;
    /* with "session": the token the make reply gave (minor 1) */
    uint8_t token[PROTO_TOKEN_BYTES];
    int has_token;
    /* make */
    char env[PROTO_NAME_MAX];
    int64_t num_worlds;
    int nconfig;
    proto_kv config[PROTO_MAX_CONFIG];
    /* config[i] given by name (a key with named choices, env_spec.h; minor version 1): config_name[i] is the
     * name and config[i].value is 0; "" for a number */
    char config_name[PROTO_MAX_CONFIG][PROTO_NAME_MAX];
    int has_autoreset;
    env_autoreset autoreset;    /* default NEXT_STEP */
    /* make: "seed" (default 0); reset: "seed" (world ids[i] gets seed + i) */
    int has_seed;
    uint64_t seed;
    /* reset, step: nids = -1 means all worlds of the session, in order */
    int nids;
    int32_t *world_ids;         /* owned; NULL when absent */
    /* reset: per-world seeds, one per addressed world; nseeds = -1 when absent */
    int nseeds;
    uint64_t *seeds;            /* owned */
    /* step */
    proto_tensor actions;       /* float32 [n, act_dim]; points into the request buffer */
    int has_actions;
    int reward_terms;           /* step: also return this step's per-term rewards */
    int contacts;               /* poses: also return the active contacts (minor 1) */
    int latest;                 /* poses: read now, without waiting for steps in flight (minor 1) */
    int diagnostics;            /* poses: the contacts with their states, friction impulses, bodies, and the worlds'
                                 * fallback flags and joint-limit impulses (minor 6; implies contacts) */
    int critic_obs;             /* make: reset and step replies carry info.critic_obs (minor 4) */
    int has_terrain_region;     /* model: the cells of a cell terrain within this box are returned (minor 7) */
    double terrain_region[4];   /* x_min, y_min, x_max, y_max (m, world frame; finite, min <= max) */
} proto_request;

void proto_request_init(proto_request *r);          /* zeroes; nids = nseeds = -1 */
void proto_request_clear(proto_request *r);         /* frees owned arrays, then init */

/* Decodes and validates one request payload (see PROTOCOL.md, "Validation order").  On failure returns
 * the error code (and fills err); r->id / r->has_id (and r->session / r->has_session, r->token / r->has_token)
 * are still set when they could be read.  On
 * success returns PROTO_OK: fields are type- and range-checked, but not against a session (see the
 * proto_check_* functions).  r must be initialized; it is cleared first. */
int proto_decode_request(const void *buf, size_t len, const proto_limits *lim, proto_request *r, proto_error *err);

/* The request id when the payload is a map whose "id" is an unsigned integer, even if the rest is
 * invalid or the message too large (cheap: skips bin payloads).  Returns 1 if found. */
int proto_peek_id(const void *buf, size_t len, uint64_t *id);

/* World ids against a session of num_worlds worlds: each in [0, num_worlds), no duplicates, at least
 * one.  scratch: (num_worlds + 7) / 8 zeroed bytes, zeroed again on return.  Returns PROTO_OK or
 * PROTO_E_BAD_WORLD_IDS naming the first offending entry. */
int proto_check_world_ids(const int32_t *ids, int n, int num_worlds, uint8_t *scratch, proto_error *err);

/* Actions: float32 tensor of shape [n, act_dim] (BAD_DTYPE / BAD_SHAPE), then every value finite
 * (NON_FINITE naming the first bad row and column, with the world id when ids is not NULL). */
int proto_check_actions(const proto_tensor *t, int n, int act_dim, const int32_t *ids, proto_error *err);

/* ---- a growable, 64-byte aligned output buffer and a MessagePack writer ---- */
typedef struct {
    uint8_t *data;              /* aligned_alloc(64, ...): free() it after proto_buf_steal */
    size_t len, cap;
    int oom;                    /* an allocation failed: the content is incomplete */
} proto_buf;

void proto_buf_init(proto_buf *b);
void proto_buf_free(proto_buf *b);
void proto_buf_reset(proto_buf *b);                 /* len = 0, keeps the memory */
int proto_buf_reserve(proto_buf *b, size_t extra);  /* 0 on success */
uint8_t *proto_buf_steal(proto_buf *b, size_t *len);   /* hands the memory to the caller (free()) */

/* Minimal encodings (the MessagePack "smallest format" rule) unless stated. */
void proto_w_nil(proto_buf *b);
void proto_w_bool(proto_buf *b, int v);
void proto_w_uint(proto_buf *b, uint64_t v);
void proto_w_int(proto_buf *b, int64_t v);          /* non-negative values as unsigned */
void proto_w_f64(proto_buf *b, double v);           /* always float 64 */
void proto_w_str(proto_buf *b, const char *s);
void proto_w_strn(proto_buf *b, const char *s, size_t n);
void proto_w_bin(proto_buf *b, const void *p, size_t n);
void proto_w_array(proto_buf *b, uint32_t n);
void proto_w_map(proto_buf *b, uint32_t n);
/* A tensor map {"dtype", "shape", "data"}: its keys use str8/str16/str32 forms chosen so that the data
 * (a bin 32) starts at a multiple of PROTO_ALIGN bytes from the buffer start (PROTOCOL.md, "Alignment").
 * Copies data when not NULL, else reserves the bytes (zero-filled).  Returns the data offset. */
size_t proto_w_tensor(proto_buf *b, proto_dtype dt, int ndim, const uint64_t *shape, const void *data);

/* Encodes a request (the fields its op uses; optional ones only when present).  Returns 0, or -1 when
 * out of memory.  Key order: "v", "id", "op", then as in PROTOCOL.md. */
int proto_encode_request(proto_buf *b, const proto_request *r);

/* ---- replies (server side) ---- */

/* {"v", "id", "ok": true, + nmore keys the caller writes next}. */
void proto_w_reply_head(proto_buf *b, uint64_t id, uint32_t nmore);
/* {"v", "id", "ok": false, "error": {"code", "message"}}. */
int proto_encode_error(proto_buf *b, uint64_t id, proto_code code, const char *message);

/* An env spec as a map (PROTOCOL.md, "Spec"). */
void proto_w_spec(proto_buf *b, const env_spec *s);

typedef struct {
    const char *server;         /* e.g. "herd 0.1.0" */
    int threads;
    uint64_t max_message_bytes;
    int64_t max_worlds_per_session, max_worlds;
    const char *auth;           /* "curve" or "none" (minor 1) */
    /* more limits (the server's resource bounds), written after those three in the "limits" map */
    int nextra;
    const char *const *extra_names;
    const int64_t *extra_values;
    /* limits that are numbers with a fraction (float64), written after the integers */
    int nfextra;
    const char *const *fextra_names;
    const double *fextra_values;
} proto_hello_info;
int proto_encode_hello_reply(proto_buf *b, uint64_t id, const proto_hello_info *info, const env_spec *const *specs,
                             int nspecs);

/* config: the effective value of every key of the spec, in spec order; token and view_token:
 * PROTO_TOKEN_BYTES bytes each (the session's token, minor 1, and its read-only view token, minor 2);
 * critic_obs: the session was made with the option (minor 4): then the spec lists its critic_obs fields and the reply
 * ends with "critic_obs": true; without it neither is written (the spec describes what the session's replies hold). */
int proto_encode_make_reply(proto_buf *b, uint64_t id, uint64_t session, const uint8_t *token,
                            const uint8_t *view_token, int64_t num_worlds,
                            env_autoreset ar, uint64_t seed, const env_spec *spec, const double *config, int critic_obs);
int proto_encode_close_reply(proto_buf *b, uint64_t id, uint64_t session, uint64_t steps);
int proto_encode_ping_reply(proto_buf *b, uint64_t id, double unix_time);

typedef struct {
    double uptime_s;
    int64_t sessions, worlds;
    uint64_t steps, requests, errors;
    double steps_per_s;
    int threads;
} proto_server_stats;
typedef struct {
    uint64_t session;
    const char *env;
    int64_t num_worlds;
    uint64_t steps, requests, errors;
    double steps_per_s, age_s, idle_s;
    /* a task with a terrain curriculum (minor 5): its tile kinds' names (nterrain_kinds > 0; 0 = a flat task, no
     * "terrain" entry), the mean level of the worlds reset at least once and their count, and the same per kind
     * (levels NAN where no world) */
    int nterrain_kinds;
    const char (*terrain_kinds)[ENV_CHOICE_MAX];
    double terrain_level;
    int64_t terrain_worlds;
    double kind_level[ENV_MAX_TERRAIN_KINDS];
    int64_t kind_worlds[ENV_MAX_TERRAIN_KINDS];
} proto_session_stats;
int proto_encode_stats_reply(proto_buf *b, uint64_t id, const proto_server_stats *s, const proto_session_stats *ss);

/* Offsets (from the buffer start) of the tensor regions of a reset / step / poses reply; 0 = absent. */
typedef struct {
    size_t obs, reward, terminated, truncated;
    size_t physics_reset, episode_done, episode_return, episode_length, episode_terms;
    size_t final_obs, final_mask, reward_terms, autoreset;
    size_t critic_obs;          /* info.critic_obs, float32 [n, critic_dim] (minor 4) */
    size_t terrain_level, terrain_kind; /* info.terrain_level and info.terrain_kind, int32 [n] (minor 5) */
    /* poses (minor 1): float32 [n, nbody, 3] and [n, nbody, 4]; the contacts' int32 [n], float32 [n, max, 3]
     * twice and [n, max] */
    size_t body_pos, body_quat, contact_count, contact_pos, contact_normal, contact_impulse;
    int nbody, max_contacts;    /* poses: bodies per world; the contacts' row length (0: no contacts) */
    /* poses with diagnostics (minor 6): the contacts' uint8 [n, max], float32 [n, max, 3], int32 [n, max]; the
     * diagnostics' uint8 [n] and float32 [n, nbody] */
    size_t contact_state, contact_friction, contact_body, diag_fallback, diag_limit;
} proto_step_layout;

enum {
    PROTO_STEP_FINAL_OBS = 1,       /* same-step autoreset: info.final_obs and info._final_obs */
    PROTO_STEP_REWARD_TERMS = 2,    /* info.reward_terms */
    PROTO_STEP_AUTORESET = 4,       /* next-step autoreset: info.autoreset */
    PROTO_STEP_TERRAIN = 8,         /* a terrain task (reset and step): info.terrain_level, info.terrain_kind */
};

/* Lays out {"obs": float32 [n, obs_dim], "info": {}}, and with critic_dim > 0 info's "critic_obs", float32
 * [n, critic_dim] (minor 4; critic_dim 0: the bytes of a reply without it), with PROTO_STEP_TERRAIN in flags (the
 * only flag it reads) info's "terrain_level" and "terrain_kind", int32 [n] (minor 5).  The tensor regions of reset
 * and step replies are reserved but not written: the caller must write every byte of each (the workers do). */
int proto_encode_reset_reply(proto_buf *b, uint64_t id, int n, int obs_dim, int critic_dim, unsigned flags,
                             proto_step_layout *lay);
/* Lays out a step reply (PROTOCOL.md, "step"); flags: PROTO_STEP_*; critic_dim as for reset. */
int proto_encode_step_reply(proto_buf *b, uint64_t id, int n, int obs_dim, int nterms, int critic_dim, unsigned flags,
                            proto_step_layout *lay);

/* A scene as a map (PROTOCOL.md, "Scene"; minor 1). */
void proto_w_scene(proto_buf *b, const env_scene_t *s);
/* {"session", "env", "scene"} (minor 1). */
int proto_encode_model_reply(proto_buf *b, uint64_t id, uint64_t session, const char *env, const env_scene_t *s);
/* Lays out a poses reply (PROTOCOL.md, "poses"; minor 1): body_pos, body_quat, and with max_contacts > 0 the
 * "contacts" map; diagnostics (minor 6; with max_contacts > 0) adds the contacts' state, friction and body and the
 * "diagnostics" map (0: the bytes of a minor-1 reply).  Regions reserved, not written, as for reset / step. */
int proto_encode_poses_reply(proto_buf *b, uint64_t id, int n, int nbody, int max_contacts, int diagnostics,
                             proto_step_layout *lay);

/* ---- replies (client side) ---- */

/* One value of a decoded reply (a map, an array, a scalar): an opaque handle, valid until
 * proto_reply_clear of the reply it belongs to. */
typedef struct proto_value proto_value;

typedef struct {
    uint64_t id;
    int ok;
    proto_error error;          /* when !ok: the server's code and message */
    const proto_value *root;    /* the whole reply map (NULL when decoding failed) */
    struct proto_reply_mem *mem;    /* (private: the decoded tree) */
} proto_reply;

/* Decodes a reply: a map with "v" == 1, "id", "ok" and, when !ok, "error": {code, message}.  Unknown
 * error codes map to PROTO_E_INTERNAL with the wire name kept in the message.  Returns PROTO_OK or
 * PROTO_E_BAD_REPLY / PROTO_E_BAD_MESSAGE (not the server's error: see r->ok).  Always free with
 * proto_reply_clear, also after a failure. */
int proto_decode_reply(const void *buf, size_t len, proto_reply *r, proto_error *err);
void proto_reply_clear(proto_reply *r);

/* Lookups.  A path is a key ("obs") or keys joined by dots ("info.final_obs", "limits.max_worlds"); a key
 * that itself contains dots is found too (the rest of the path is tried as one key first).  NULL when
 * absent, when map is NULL or not a map. */
const proto_value *proto_value_get(const proto_value *map, const char *path);
int proto_value_len(const proto_value *v);          /* entries of an array; -1 when v is not an array */
const proto_value *proto_value_at(const proto_value *array, int i);   /* NULL when out of range */

/* Typed getters of map[path]: PROTO_E_BAD_REPLY ("reply lacks 'path'", or the type found) when absent
 * or of the wrong type. */
int proto_get_uint(const proto_value *map, const char *path, uint64_t *v, proto_error *err);
int proto_get_int(const proto_value *map, const char *path, int64_t *v, proto_error *err);
int proto_get_f64(const proto_value *map, const char *path, double *v, proto_error *err);   /* int or float */
int proto_get_bool(const proto_value *map, const char *path, int *v, proto_error *err);
int proto_get_str(const proto_value *map, const char *path, char *out, size_t cap, proto_error *err);  /* truncates */
/* A bin of exactly len bytes, copied to out (a session token). */
int proto_get_bin(const proto_value *map, const char *path, void *out, size_t len, proto_error *err);
/* A tensor value (map with dtype, shape, data), any dtype and shape; the data length is checked against
 * the shape.  `what` names it in messages.  PROTO_E_BAD_REPLY when v is NULL or not a valid tensor. */
int proto_value_tensor(const proto_value *v, const char *what, proto_tensor *t, proto_error *err);
/* map[path] as a tensor of the given dtype and shape (-1 in shape = any). */
int proto_get_tensor(const proto_value *map, const char *path, proto_dtype dt, int ndim, const int64_t *shape,
                     proto_tensor *t, proto_error *err);
/* A spec map back into an env_spec (strings truncated to the struct's sizes). */
int proto_decode_spec(const proto_value *v, env_spec *s, proto_error *err);

#endif

/* proto_internal.h — what the protocol's own sources share (not part of the public API).
 *
 * msgpack-c is an implementation detail of protocol/: only the sources in protocol/ include this header.  A
 * proto_value (proto.h: opaque) is a msgpack_object of a decoded reply; pv_obj / pv_val convert
 * pointers between the two (the value is never accessed as a proto_value).
 *
 *   proto_core.c     names, errors, limits, the structural pre-scan + msgpack-c unpack, value
 *                    descriptions, typed checks and the tensor map parser (shared by both codecs)
 *   proto_request.c  request decoding and validation (one decoder per op), checks against a session
 *   proto_reply.c    client side: reply decoding, lookups by key path, spec decoding
 *   proto_write.c    the output buffer, the MessagePack writer, request and reply encoders
 */
#ifndef HERD_PROTO_INTERNAL_H
#define HERD_PROTO_INTERNAL_H

#include <msgpack.h>

#include "proto.h"

static inline const msgpack_object *pv_obj(const proto_value *v) { return (const msgpack_object *)(const void *)v; }
static inline const proto_value *pv_val(const msgpack_object *o) { return (const proto_value *)(const void *)o; }

/* s[0..n) == name (s need not be 0-terminated). */
int proto_name_eq(const char *s, size_t n, const char *name);
/* Copies a (not 0-terminated) string for messages, escaping non-printable bytes, cut at 40 bytes. */
void proto_quote(const char *s, size_t n, char *out, size_t cap);
/* Describes a value for messages: "int 5", "str 'abc'", "float 1.5", "array of 3", "map of 2", ... */
void proto_describe(const msgpack_object *o, char *out, size_t cap);
/* Fails with "'<field>' must be <want>, got <description of o>". */
int proto_bad_type(proto_error *err, proto_code code, const char *field, const char *want, const msgpack_object *o);

int proto_is_int(const msgpack_object *o);          /* positive or negative integer */
int proto_is_num(const msgpack_object *o);          /* integer or float */
double proto_num_value(const msgpack_object *o);    /* of a proto_is_num value */

/* Scans (bounded by lim: depth, object count) and unpacks one message that must fill buf exactly
 * (need_map: and be a map, else BAD_MESSAGE describing what it is).  On success *root is valid until
 * msgpack_zone_destroy(z). */
int proto_unpack_exact(const void *buf, size_t len, const proto_limits *lim, int need_map, msgpack_zone *z,
                       msgpack_object *root, proto_error *err);

/* Tensor map {"dtype", "shape", "data"} -> view into the message.  A part missing is MISSING_FIELD; a
 * part of the wrong MessagePack type (dtype not a str, shape not an array of integers, data not a bin)
 * or an unknown key BAD_FIELD; a dtype name that is not a dtype BAD_DTYPE; sizes that are negative, more
 * than 4 of them, or that do not match the data BAD_SHAPE (PROTOCOL.md section 5); `what` names the field
 * in messages. */
int proto_tensor_from_object(const msgpack_object *o, const char *what, proto_tensor *t, proto_error *err);

#endif

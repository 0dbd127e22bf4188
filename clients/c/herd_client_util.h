/* herd_client_util.h — the small helpers every source of the C client uses (private to clients/c). */
#ifndef HERD_CLIENT_UTIL_H
#define HERD_CLIENT_UTIL_H

#include "herd_client.h"

/* Sets e (if not NULL) to code and the formatted message; returns code. */
int hc_fail(herd_error *e, proto_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A monotonic clock in milliseconds (the deadlines of waits). */
double hc_now_ms(void);

#endif

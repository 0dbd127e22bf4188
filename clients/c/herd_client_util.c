/* herd_client_util.c — the C client's shared helpers (herd_client_util.h). */
#include "herd_client_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int hc_fail(herd_error *e, proto_code code, const char *fmt, ...)
{
    if (e) {
        e->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return (int)code;
}

double hc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* srv_log.c — log lines and clocks.  See srv_log.h. */
#include "srv_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "srv_config.h"

double srv_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double srv_unix_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void srv_log(int max_level, int level, const char *fmt, ...)
{
    if (level > max_level) return;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%03ld herd-server %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                     names[level < SRV_LOG_ERROR ? SRV_LOG_ERROR : level > SRV_LOG_DEBUG ? SRV_LOG_DEBUG : level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

/* server_start.c — see server_start.h. */
#include "server_start.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <time.h>

double test_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void test_server_config(srv_config *c, int threads)
{
    srv_config_defaults(c);
    snprintf(c->bind, sizeof c->bind, "tcp://127.0.0.1:*");
    c->threads = threads;
    c->log_level = SRV_LOG_ERROR;
    c->stats_interval_s = 0;
}

srv_thread *test_server_start_with(const srv_config *c)
{
    char err[512];
    srv_thread *t = srv_thread_start(c, err, sizeof err);
    cr_assert(t, "server: %s", err);
    return t;
}

srv_thread *test_server_start(int threads)
{
    srv_config c;
    test_server_config(&c, threads);
    return test_server_start_with(&c);
}

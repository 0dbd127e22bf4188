/* server_start.h — test helpers: an in-process herd-server on a free loopback port, and a clock. */
#ifndef HERD_TEST_SERVER_START_H
#define HERD_TEST_SERVER_START_H

#include "srv_thread.h"

/* Monotonic time in milliseconds. */
double test_mono_ms(void);
/* Starts a quiet server on tcp://127.0.0.1:* with `threads` workers; fails the current test on error. */
srv_thread *test_server_start(int threads);
/* The config test_server_start uses (quiet, tcp://127.0.0.1:*, `threads` workers), to adjust. */
void test_server_config(srv_config *c, int threads);
/* Starts a server with config c; fails the current test on error. */
srv_thread *test_server_start_with(const srv_config *c);

#endif

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
/* A minimal HTTP/1.0 GET of 127.0.0.1:port/path: the whole response (status line, headers, body), malloc'd and
 * NUL-terminated (at most 128 KiB); NULL when the connection or the request fails. */
char *test_http_get(int port, const char *path);
/* The build directory of the running test binary (build/tests/x -> build), for the binaries beside it. */
void test_build_dir(char *out, size_t cap);

#endif

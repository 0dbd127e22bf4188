/* server_start.c — see server_start.h. */
#include "server_start.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <libgen.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

void test_build_dir(char *out, size_t cap)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = 0;
    char *d = dirname(exe);      /* build/tests */
    snprintf(out, cap, "%s", dirname(d));
}

char *test_http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return NULL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) || n < 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)1 << 17, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while (buf && len < cap - 1 && (r = read(fd, buf + len, cap - 1 - len)) > 0) len += (size_t)r;
    if (buf) buf[len] = 0;
    close(fd);
    return buf;
}

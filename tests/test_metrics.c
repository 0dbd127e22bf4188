/* server/srv_metrics: counters, histogram buckets, rate windows, and the Prometheus endpoint over real HTTP. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv_metrics.h"
#include "helpers/server_start.h"

static const char *const ops[] = {"hello", "make", "reset", "step"};
static const char *const codes[] = {"OK", "BAD_MESSAGE", "TOO_LARGE", "BAD_FIELD"};

static char *render(const srv_metrics *m)
{
    size_t need = srv_metrics_render(m, NULL, 0);
    char *b = malloc(need + 1);
    cr_assert_eq(srv_metrics_render(m, b, need + 1), need);
    return b;
}

static void has(const char *text, const char *line)
{
    cr_assert(strstr(text, line), "missing line: %s", line);
}

Test(metrics, counters_and_errors_by_op_and_code)
{
    srv_metrics *m = srv_metrics_new(ops, 4, codes, 4, 2, "1.2.3", 1);
    srv_metrics_request(m, 3, 100);
    srv_metrics_request(m, 3, 50);
    srv_metrics_request(m, 1, 10);
    srv_metrics_reply(m, 3, 0, 0.002, 400);
    srv_metrics_reply(m, 3, 3, 0.0001, 60);   /* a BAD_FIELD error reply */
    srv_metrics_env_steps(m, 4096, 2, 5000, 7, 3, 2, 11);
    srv_metrics_gauges(m, 3, 12288, 262144, 5);
    char *t = render(m);
    has(t, "herd_build_info{version=\"1.2.3\",protocol=\"1\"} 1\n");
    has(t, "herd_requests_total{op=\"step\"} 2\n");
    has(t, "herd_requests_total{op=\"make\"} 1\n");
    has(t, "herd_requests_total{op=\"hello\"} 0\n");
    has(t, "herd_request_errors_total{op=\"step\",code=\"BAD_FIELD\"} 1\n");
    cr_assert_null(strstr(t, "code=\"OK\""), "success is not an error");
    has(t, "herd_received_bytes_total 160\n");
    has(t, "herd_sent_bytes_total 460\n");
    has(t, "herd_env_steps_total 4096\n");
    has(t, "herd_physics_resets_total 2\n");
    has(t, "herd_solver_iterations_total 5000\n");
    has(t, "herd_solver_capped_total 7\n");
    has(t, "herd_solver_fallbacks_total 3\n");
    has(t, "herd_solver_ccp_answers_total 2\n");
    has(t, "herd_joint_limits_active_total 11\n");
    has(t, "herd_sessions 3\n");
    has(t, "herd_worlds 12288\n");
    has(t, "herd_worlds_limit 262144\n");
    has(t, "herd_queue_depth 5\n");
    has(t, "# TYPE herd_request_duration_seconds histogram\n");
    free(t);
    srv_metrics_destroy(&m);
    cr_assert_null(m);
}

Test(metrics, histogram_is_cumulative_with_sum_and_count)
{
    srv_metrics *m = srv_metrics_new(ops, 4, codes, 4, 1, "v", 1);
    const double *b = srv_metrics_buckets();
    for (int i = 1; i < SRV_METRICS_BUCKETS; i++) cr_assert(b[i] > b[i - 1]);
    srv_metrics_reply(m, 2, 0, 0.0003, 0);   /* le 0.0005 */
    srv_metrics_reply(m, 2, 0, 0.0005, 0);   /* exactly on a bound: counts in it */
    srv_metrics_reply(m, 2, 0, 0.2, 0);      /* le 0.25 */
    srv_metrics_reply(m, 2, 0, 99, 0);       /* above every bound: +Inf only */
    char *t = render(m);
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"0.00025\"} 0\n");
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"0.0005\"} 2\n");
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"0.1\"} 2\n");
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"0.25\"} 3\n");
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"10\"} 3\n");
    has(t, "herd_request_duration_seconds_bucket{op=\"reset\",le=\"+Inf\"} 4\n");
    has(t, "herd_request_duration_seconds_count{op=\"reset\"} 4\n");
    has(t, "herd_request_duration_seconds_sum{op=\"reset\"} 99.200800000\n");
    free(t);
    srv_metrics_destroy(&m);
}

Test(metrics, rate_window_gives_steps_per_second_and_utilization)
{
    srv_metrics *m = srv_metrics_new(ops, 4, codes, 4, 2, "v", 1);
    srv_metrics_tick(m, 100.0);                 /* opens the window */
    srv_metrics_env_steps(m, 30000, 0, 0, 0, 0, 0, 0);
    srv_metrics_worker_busy(m, 0, 1.0);
    srv_metrics_worker_busy(m, 1, 0.5);
    srv_metrics_worker_helped(m, 1, 48);
    srv_metrics_worker_helped(m, 1, 16);
    srv_metrics_worker_helped(m, 7, 16);        /* no such worker: ignored */
    srv_metrics_tick(m, 100.5);                 /* too short: no update */
    char *t = render(m);
    has(t, "herd_env_steps_per_second 0\n");
    free(t);
    srv_metrics_tick(m, 102.0);                 /* 2 s: 15,000 steps/s; busy 1.5 s of 4 worker-seconds */
    t = render(m);
    has(t, "herd_env_steps_per_second 15000\n");
    has(t, "herd_worker_utilization_ratio 0.375\n");
    has(t, "herd_worker_busy_seconds_total{worker=\"0\"} 1.000000000\n");
    has(t, "herd_worker_busy_seconds_total{worker=\"1\"} 0.500000000\n");
    has(t, "herd_worker_helped_worlds_total{worker=\"0\"} 0\n");
    has(t, "herd_worker_helped_worlds_total{worker=\"1\"} 64\n");
    free(t);
    srv_metrics_destroy(&m);
}

Test(metrics, http_endpoint_serves_metrics_and_404)
{
    srv_metrics *m = srv_metrics_new(ops, 4, codes, 4, 1, "9.9", 1);
    char err[256];
    int port = -1;
    cr_assert_eq(srv_metrics_listen(m, "127.0.0.1:0", &port, err, sizeof err), 0, "%s", err);
    cr_assert(port > 0);
    srv_metrics_request(m, 0, 12);
    char *r = test_http_get(port, "/metrics");
    cr_assert(r, "GET /metrics failed");
    cr_assert(strncmp(r, "HTTP/1.0 200", 12) == 0 || strncmp(r, "HTTP/1.1 200", 12) == 0, "%.60s", r);
    cr_assert(strstr(r, "Content-Type: text/plain; version=0.0.4"), "%.300s", r);
    has(r, "herd_requests_total{op=\"hello\"} 1\n");
    free(r);
    r = test_http_get(port, "/other");
    cr_assert(r, "GET /other failed");
    cr_assert(strstr(r, " 404 "), "%.60s", r);
    free(r);
    /* the port is taken now: a second endpoint on it fails with a message, not a crash */
    srv_metrics *m2 = srv_metrics_new(ops, 4, codes, 4, 1, "9.9", 1);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    cr_assert_eq(srv_metrics_listen(m2, addr, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot listen"), "%s", err);
    srv_metrics_destroy(&m2);
    srv_metrics_destroy(&m);
}

Test(metrics, bad_addresses_are_errors)
{
    srv_metrics *m = srv_metrics_new(ops, 4, codes, 4, 1, "v", 1);
    char err[256];
    cr_assert_eq(srv_metrics_listen(m, "9464", NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "HOST:PORT"), "%s", err);
    cr_assert_eq(srv_metrics_listen(m, "127.0.0.1:70000", NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "port"), "%s", err);
    cr_assert_eq(srv_metrics_listen(m, "example.org:9464", NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "not an IP address"), "%s", err);
    srv_metrics_destroy(&m);
}

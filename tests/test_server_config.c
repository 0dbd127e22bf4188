/* test_server_config.c — herd-server settings: defaults, HERD_* environment variables, the command line
 * (which wins), bad values, a bind failure.  The worker pool has its own tests (test_pool.c). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv_config.h"
#include "srv_server.h"

Test(config, defaults)
{
    srv_config c;
    srv_config_defaults(&c);
    cr_assert_str_eq(c.bind, "tcp://127.0.0.1:5555");
    cr_assert_eq(c.threads, 0);
    cr_assert_eq(c.max_message_bytes, 16u << 20);
    cr_assert_eq(c.log_level, SRV_LOG_INFO);
    char err[256];
    cr_assert_eq(srv_config_check(&c, err, sizeof err), 0);
}

Test(config, environment_then_command_line)
{
    setenv("HERD_BIND", "ipc:///tmp/x.sock", 1);
    setenv("HERD_THREADS", "3", 1);
    setenv("HERD_MAX_MESSAGE_BYTES", "2M", 1);
    setenv("HERD_SESSION_TIMEOUT", "1.5", 1);
    setenv("HERD_LOG_LEVEL", "debug", 1);
    srv_config c;
    srv_config_defaults(&c);
    char err[256];
    cr_assert_eq(srv_config_from_env(&c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c.bind, "ipc:///tmp/x.sock");
    cr_assert_eq(c.threads, 3);
    cr_assert_eq(c.max_message_bytes, 2u << 20);
    cr_assert_eq(c.session_timeout_s, 1.5);
    cr_assert_eq(c.log_level, SRV_LOG_DEBUG);
    char *argv[] = {"herd-server", "--threads", "5", "--bind=tcp://0.0.0.0:7000", "--max-worlds", "100",
                    "--max-worlds-per-session", "50", "--log-level", "warn", "--stats-interval", "0", "--quantum", "8",
                    NULL};
    cr_assert_eq(srv_config_from_args(&c, 14, argv, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.threads, 5);
    cr_assert_str_eq(c.bind, "tcp://0.0.0.0:7000");
    cr_assert_eq(c.max_worlds, 100);
    cr_assert_eq(c.max_worlds_per_session, 50);
    cr_assert_eq(c.log_level, SRV_LOG_WARN);
    cr_assert_eq(c.stats_interval_s, 0);
    cr_assert_eq(c.quantum, 8);
    cr_assert_eq(c.max_message_bytes, 2u << 20, "kept from the environment");
}

Test(config, bad_values_are_reported)
{
    srv_config c;
    char err[256];
    srv_config_defaults(&c);
    char *a1[] = {"herd-server", "--threads", "many", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a1, err, sizeof err), -1);
    cr_assert(strstr(err, "many") && strstr(err, "--threads"), "%s", err);
    char *a2[] = {"herd-server", "--frobnicate", "1", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a2, err, sizeof err), -1);
    cr_assert(strstr(err, "--frobnicate"), "%s", err);
    char *a3[] = {"herd-server", "--bind", NULL};
    cr_assert_eq(srv_config_from_args(&c, 2, a3, err, sizeof err), -1);
    cr_assert(strstr(err, "needs a value"), "%s", err);
    char *a4[] = {"herd-server", "--log-level", "loud", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a4, err, sizeof err), -1);
    char *a5[] = {"herd-server", "--max-message-bytes", "12", NULL};
    cr_assert_eq(srv_config_from_args(&c, 3, a5, err, sizeof err), -1);
    char *a6[] = {"herd-server", "stray", NULL};
    cr_assert_eq(srv_config_from_args(&c, 2, a6, err, sizeof err), -1);
    setenv("HERD_MAX_WORLDS", "-4", 1);
    cr_assert_eq(srv_config_from_env(&c, err, sizeof err), -1);
    cr_assert(strstr(err, "HERD_MAX_WORLDS"), "%s", err);
    unsetenv("HERD_MAX_WORLDS");
}

Test(config, bind_failure_is_a_clear_error)
{
    srv_config c;
    srv_config_defaults(&c);
    snprintf(c.bind, sizeof c.bind, "tcp://256.1.1.1:1");
    c.insecure = 1;         /* not a loopback address */
    c.threads = 1;
    char err[256];
    srv_server *s = srv_server_new(&c, err, sizeof err);
    cr_assert_null(s);
    cr_assert(strstr(err, "cannot bind tcp://256.1.1.1:1"), "%s", err);
}

/* herd-server — serves batched reset/step of simulated worlds over ZeroMQ + MessagePack.
 * Settings: defaults < environment (HERD_*) < command line; see --help and protocol/PROTOCOL.md. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "srv_auth.h"
#include "srv_server.h"

static srv_server *g_server;     /* for the signal handler only */

static void on_signal(int sig)
{
    (void)sig;
    if (g_server) srv_server_stop(g_server);
}

int main(int argc, char **argv)
{
    srv_config cfg;
    char err[512];
    srv_config_defaults(&cfg);
    if (srv_config_from_env(&cfg, err, sizeof err)) {
        fprintf(stderr, "herd-server: %s\n", err);
        return 2;
    }
    int rc = srv_config_from_args(&cfg, argc, argv, err, sizeof err);
    if (rc > 0) return 0;
    if (rc < 0) {
        fprintf(stderr, "herd-server: %s\n", err);
        return 2;
    }
    if (!cfg.keygen_dir[0] && srv_config_check(&cfg, err, sizeof err)) {
        fprintf(stderr, "herd-server: %s\n", err);
        return 2;
    }
    if (cfg.keygen_dir[0]) {
        if (srv_auth_keygen(cfg.keygen_dir, err, sizeof err)) {
            fprintf(stderr, "herd-server: %s\n", err);
            return 1;
        }
        printf("wrote %s/server.key, server.pub, client.key, client.pub and authorized_keys\n", cfg.keygen_dir);
        return 0;
    }
    srv_server *s = srv_server_new(&cfg, err, sizeof err);
    if (!s) {
        fprintf(stderr, "herd-server: %s\n", err);
        return 1;
    }
    g_server = s;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv_server_banner(s);
    rc = srv_server_run(s);
    g_server = NULL;
    srv_server_destroy(&s);
    return rc;
}

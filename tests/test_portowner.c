/* server/srv_portowner: names the process that holds a TCP port (for "address already in use"). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv_portowner.h"

Test(portowner, finds_this_process_listening)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    int port = ntohs(a.sin_port);
    char who[128];
    cr_assert_eq(srv_port_owner(port, who, sizeof who), getpid(), "%s", who);
    char want[64];
    snprintf(want, sizeof want, "pid %d (", getpid());
    cr_assert(strstr(who, want), "%s", who);
    close(fd);
    cr_assert_eq(srv_port_owner(port, who, sizeof who), -1, "nobody listens after close");
}

Test(portowner, endpoint_port)
{
    cr_assert_eq(srv_endpoint_port("tcp://127.0.0.1:5555"), 5555);
    cr_assert_eq(srv_endpoint_port("tcp://[::1]:6000"), 6000);
    cr_assert_eq(srv_endpoint_port("tcp://*:0"), -1);
    cr_assert_eq(srv_endpoint_port("ipc:///tmp/herd.sock"), -1);
    cr_assert_eq(srv_endpoint_port("tcp://host:55x"), -1);
}

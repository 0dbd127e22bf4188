/* srv_bind.c — binding the server's socket to its endpoint, host names resolved; see srv_bind.h. */
#include "srv_bind.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "srv_portowner.h"

#define MAX_ADDRS 16

/* zmq_bind with the message of a failure: who holds a port in use, when it can be read.  `name` is the
 * endpoint as the user wrote it when it differs from ep (a host name), else NULL. */
static int bind_one(void *s, const char *ep, const char *name, char *err, size_t errlen)
{
    if (!zmq_bind(s, ep)) return 0;
    int e = zmq_errno();
    char who[160], shown[700];
    if (name) snprintf(shown, sizeof shown, "%s (%s)", name, ep);
    else snprintf(shown, sizeof shown, "%s", ep);
    int port = srv_endpoint_port(ep);
    if (e == EADDRINUSE && port > 0 && srv_port_owner(port, who, sizeof who) >= 0)
        snprintf(err, errlen, "cannot bind %s: address already in use, held by %s; stop it, or choose another "
                 "endpoint with --bind / HERD_BIND", shown, who);
    else
        snprintf(err, errlen, "cannot bind %s: %s%s", shown, zmq_strerror(e),
                 e == EADDRINUSE ? " (choose another endpoint with --bind / HERD_BIND)" : "");
    return -1;
}

static void last_endpoint(void *s, const char *ep, srv_bound *out)
{
    size_t n = sizeof out->endpoint;
    if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, out->endpoint, &n)) snprintf(out->endpoint, sizeof out->endpoint, "%.255s", ep);
}

static int set_ipv6(void *s, const char *ep, char *err, size_t errlen)
{
    int one = 1;
    if (!zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one)) return 0;
    snprintf(err, errlen, "cannot bind %s: cannot enable IPv6 on the socket: %s", ep, zmq_strerror(zmq_errno()));
    return -1;
}

static int is_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
}

int srv_bind(void *s, const char *ep, int loopback_only, srv_bound *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int tcp = !strncmp(ep, "tcp://", 6);
    const char *h = tcp ? ep + 6 : ep, *colon = strrchr(h, ':');
    char host[256];
    size_t hl = colon ? (size_t)(colon - h) : 0;
    /* anything but tcp://HOST:PORT with a plain host goes to ZeroMQ as it is */
    if (!tcp || strchr(h, ';') || hl == 0 || hl >= sizeof host) {
        if (bind_one(s, ep, NULL, err, errlen)) return -1;
        last_endpoint(s, ep, out);
        out->bound = 1;
        return 0;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    const char *port = colon + 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6) == 1 && set_ipv6(s, ep, err, errlen)) return -1;
        host[hl - 1] = ']';
    }
    if (!strcmp(host, "*") || host[0] == '[' || inet_pton(AF_INET, host, &a4) == 1 || if_nametoindex(host)) {
        if (bind_one(s, ep, NULL, err, errlen)) return -1;
        last_endpoint(s, ep, out);
        out->bound = 1;
        return 0;
    }

    /* a host name: its addresses, IPv4 first, without repeats */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc) {
        snprintf(err, errlen, "cannot bind %s: cannot resolve the host name '%s' (%s); give an address "
                 "(tcp://127.0.0.1:PORT, tcp://[::1]:PORT, tcp://*:PORT) or an interface name (tcp://lo:PORT)",
                 ep, host, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }
    char addrs[MAX_ADDRS][INET6_ADDRSTRLEN + 2];
    int n = 0;
    static const int families[2] = {AF_INET, AF_INET6};
    for (int f = 0; f < 2; f++) {
        int family = families[f];
        for (const struct addrinfo *ai = res; ai && n < MAX_ADDRS; ai = ai->ai_next) {
            if (ai->ai_family != family) continue;
            char text[INET6_ADDRSTRLEN], a[INET6_ADDRSTRLEN + 2];
            const void *bin = family == AF_INET ? (const void *)&((const struct sockaddr_in *)ai->ai_addr)->sin_addr
                                                : (const void *)&((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
            if (!inet_ntop(family, bin, text, sizeof text)) continue;
            if (loopback_only && !is_loopback(ai->ai_addr)) {
                freeaddrinfo(res);
                snprintf(err, errlen, "cannot bind %s: '%s' resolves to %s, which is not a loopback address; plain "
                         "mode (no keys) is allowed on loopback only: give keys or --insecure", ep, host, text);
                return -1;
            }
            snprintf(a, sizeof a, family == AF_INET ? "%s" : "[%s]", text);
            int seen = 0;
            for (int k = 0; k < n; k++) seen |= !strcmp(addrs[k], a);
            if (!seen) snprintf(addrs[n++], sizeof addrs[0], "%s", a);
        }
    }
    freeaddrinfo(res);
    if (n == 0) {
        snprintf(err, errlen, "cannot bind %s: '%s' has no IPv4 or IPv6 address", ep, host);
        return -1;
    }
    char port_now[16];
    snprintf(port_now, sizeof port_now, "%s", port);
    int ipv6 = 0;
    for (int k = 0; k < n; k++) {
        char one[96], why[600];
        snprintf(one, sizeof one, "tcp://%.47s:%.15s", addrs[k], port_now);
        if (addrs[k][0] == '[' && !ipv6) {
            if (set_ipv6(s, one, why, sizeof why)) {
                if (k == 0) return snprintf(err, errlen, "%s", why), -1;
                snprintf(out->skipped + strlen(out->skipped), sizeof out->skipped - strlen(out->skipped), "%s%s",
                         out->skipped[0] ? "; " : "", why);
                break;
            }
            ipv6 = 1;
        }
        if (k == 0) {
            if (bind_one(s, one, ep, err, errlen)) return -1;
            last_endpoint(s, one, out);
            int p = srv_endpoint_port(out->endpoint);       /* a `*` port: the one picked, for the others */
            if (p > 0) snprintf(port_now, sizeof port_now, "%d", p);
        } else if (bind_one(s, one, ep, why, sizeof why)) {
            snprintf(out->skipped + strlen(out->skipped), sizeof out->skipped - strlen(out->skipped), "%s%s",
                     out->skipped[0] ? "; " : "", why);
            continue;
        }
        out->bound++;
    }
    return 0;
}

/* herd_client_endpoints.c — endpoint expansion: a "tcp://NAME:PORT" whose NAME resolves to several
 * addresses becomes one endpoint per address.  See herd_expand_endpoints in herd_client.h. */
#include "herd_client_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int ep_push(char ***v, int *n, int *cap, const char *ep)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        char **p = realloc(*v, (size_t)nc * sizeof *p);
        if (!p) return -1;
        *v = p;
        *cap = nc;
    }
    if (!((*v)[*n] = strdup(ep))) return -1;
    (*n)++;
    return 0;
}

typedef struct {
    unsigned char a[16];        /* network order: memcmp sorts numerically */
} addr_t;

static int addr_cmp(const void *x, const void *y) { return memcmp(x, y, sizeof(addr_t)); }

/* The unique addresses of host:port of one family (AF_INET / AF_INET6), sorted; *out malloc'd
 * (NULL when none). */
static int resolve(const char *host, const char *port, int family, addr_t **out)
{
    *out = NULL;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) || !res) return 0;
    int cap = 0, n = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) cap++;
    addr_t *v = calloc((size_t)cap, sizeof *v);
    for (struct addrinfo *ai = res; ai && v; ai = ai->ai_next) {
        addr_t x;
        memset(&x, 0, sizeof x);
        if (ai->ai_family != family) continue;
        if (family == AF_INET) memcpy(x.a, &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr, 4);
        else memcpy(x.a, &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr, 16);
        int dup = 0;
        for (int j = 0; j < n && !dup; j++) dup = !memcmp(&v[j], &x, sizeof x);
        if (!dup) v[n++] = x;
    }
    freeaddrinfo(res);
    if (n) qsort(v, (size_t)n, sizeof *v, addr_cmp);
    *out = v;
    return n;
}

static int expand_one(const char *ep, char ***v, int *n, int *cap)
{
    if (strncmp(ep, "tcp://", 6)) return ep_push(v, n, cap, ep);
    const char *hp = ep + 6, *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= 256 || strpbrk(hp, "*;[]")) return ep_push(v, n, cap, ep);
    const char *port = colon + 1;
    size_t pl = strlen(port);
    if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl) return ep_push(v, n, cap, ep);
    char host[256];
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    unsigned char tmp[16];
    if (strchr(host, ':') || inet_pton(AF_INET, host, tmp) == 1) return ep_push(v, n, cap, ep);   /* IP literal */
    addr_t *a;
    int fam = AF_INET, na = resolve(host, port, AF_INET, &a);
    if (na == 1) {              /* one IPv4 address: keep the name (ZeroMQ re-resolves it on reconnect) */
        free(a);
        return ep_push(v, n, cap, ep);
    }
    if (na == 0) {
        free(a);
        fam = AF_INET6;
        na = resolve(host, port, AF_INET6, &a);
    }
    int rc = 0;
    if (na == 0) rc = ep_push(v, n, cap, ep);   /* does not resolve: ZeroMQ reports it (a TIMEOUT naming it) */
    for (int i = 0; i < na && !rc; i++) {
        char ip[INET6_ADDRSTRLEN], out[INET6_ADDRSTRLEN + 32];
        if (!inet_ntop(fam, a[i].a, ip, sizeof ip)) {
            rc = -1;
            break;
        }
        snprintf(out, sizeof out, fam == AF_INET ? "tcp://%s:%s" : "tcp://[%s]:%s", ip, port);
        rc = ep_push(v, n, cap, out);
    }
    free(a);
    return rc;
}

void herd_endpoints_free(char **eps, int n)
{
    if (!eps) return;
    for (int i = 0; i < n; i++) free(eps[i]);
    free(eps);
}

int herd_expand_endpoints(const char *const *endpoints, int nendpoints, char ***out, int *nout, herd_error *err)
{
    *out = NULL;
    *nout = 0;
    if (nendpoints < 1 || !endpoints) return hc_fail(err, PROTO_E_TRANSPORT, "no server endpoint given");
    char **v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < nendpoints; i++) {
        if (!endpoints[i] || expand_one(endpoints[i], &v, &n, &cap)) {
            herd_endpoints_free(v, n);
            return endpoints[i] ? hc_fail(err, PROTO_E_INTERNAL, "out of memory")
                                : hc_fail(err, PROTO_E_TRANSPORT, "endpoint %d is NULL", i);
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

/* srv_rate.c — sliding-window rates.  See srv_rate.h. */
#include "srv_rate.h"

void srv_rate_sample(srv_rate *r, double t, uint64_t v)
{
    r->t[r->head] = t;
    r->v[r->head] = v;
    r->head = (r->head + 1) % SRV_RATE_SLOTS;
    if (r->n < SRV_RATE_SLOTS) r->n++;
}

double srv_rate_get(const srv_rate *r, double t, uint64_t v, double window)
{
    double t0 = t;
    uint64_t v0 = v;
    for (int k = 0; k < r->n; k++) {
        int i = (r->head - 1 - k + 2 * SRV_RATE_SLOTS) % SRV_RATE_SLOTS;
        if (t - r->t[i] > window && t0 < t) break;
        t0 = r->t[i];
        v0 = r->v[i];
    }
    return t > t0 ? (double)(v - v0) / (t - t0) : 0.0;
}

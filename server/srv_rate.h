/* srv_rate.h — a rate over a sliding window (steps per second in the stats), from periodic samples.
 *
 * A value type: embed it (zero-initialized) in its owner; no allocation.  One thread at a time.
 */
#ifndef HERD_SRV_RATE_H
#define HERD_SRV_RATE_H

#include <stdint.h>

#define SRV_RATE_SLOTS 16        /* samples kept (one per second: a 10 s window fits) */

typedef struct {
    double t[SRV_RATE_SLOTS];    /* sample times, seconds (srv_now_s) */
    uint64_t v[SRV_RATE_SLOTS];  /* the counter at those times */
    int n, head;
} srv_rate;

/* Records counter value v at time t (seconds); the oldest sample is dropped when all slots are used. */
void srv_rate_sample(srv_rate *r, double t, uint64_t v);
/* Per second from the samples of the last `window` seconds (at least the oldest one kept) to (t, v). */
double srv_rate_get(const srv_rate *r, double t, uint64_t v, double window);

#endif

/* srv_buckets.h — the walk the server's chained hash tables (sessions: srv_session.c, clients: srv_client.c)
 * share.  Data-free: one macro. */
#ifndef SRV_BUCKETS_H
#define SRV_BUCKETS_H

/* Calls fn(entry, arg) on every entry of the nb bucket lists buckets[0 .. nb-1] of entries of type T chained
 * through their member hnext.  fn may unlink or free the entry it is given: the next one is read first. */
#define SRV_BUCKETS_EACH(T, buckets, nb, fn, arg)                                                                  \
    do {                                                                                                           \
        for (int b_ = 0; b_ < (nb); b_++) {                                                                        \
            T *next_;                                                                                              \
            for (T *e_ = (buckets)[b_]; e_; e_ = next_) {                                                          \
                next_ = e_->hnext;                                                                                 \
                (fn)(e_, (arg));                                                                                   \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)

#endif

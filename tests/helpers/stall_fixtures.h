/* stall_fixtures.h — the contact problems harvested where the default solver's sweeps stall, as the tests read them
 * (tests/testdata/walk_stalls.txt, rough_stalls.txt; how they were harvested: test_coulomb_direct.c). */
#ifndef HERD_TESTS_STALL_FIXTURES_H
#define HERD_TESTS_STALL_FIXTURES_H

#define STALL_MAXN 5 /* blocks per fixture at most */
typedef struct {
    int n;
    double G[9 * STALL_MAXN * STALL_MAXN], c[3 * STALL_MAXN], mu[STALL_MAXN], warm[3 * STALL_MAXN];
} stall_problem;

/* Reads up to cap problems ("n, G, c, mu, warm start" each) from path into ps; returns how many.  A missing file or
 * a malformed problem fails the calling test. */
int stall_fixtures_load(const char *path, stall_problem *ps, int cap);

#endif

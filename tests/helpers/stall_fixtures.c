/* stall_fixtures.c — see stall_fixtures.h. */
#include "stall_fixtures.h"

#include <criterion/criterion.h>
#include <stdio.h>

int stall_fixtures_load(const char *path, stall_problem *ps, int cap)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int k = 0, n;
    while (k < cap && fscanf(f, "%d", &n) == 1) {
        cr_assert(n >= 1 && n <= STALL_MAXN, "%s, fixture %d: n = %d", path, k, n);
        stall_problem *p = &ps[k];
        const int N = 3 * n;
        p->n = n;
        for (int a = 0; a < N * N; a++) cr_assert_eq(fscanf(f, "%lf", &p->G[a]), 1);
        for (int a = 0; a < N; a++) cr_assert_eq(fscanf(f, "%lf", &p->c[a]), 1);
        for (int a = 0; a < n; a++) cr_assert_eq(fscanf(f, "%lf", &p->mu[a]), 1);
        for (int a = 0; a < N; a++) cr_assert_eq(fscanf(f, "%lf", &p->warm[a]), 1);
        k++;
    }
    fclose(f);
    return k;
}

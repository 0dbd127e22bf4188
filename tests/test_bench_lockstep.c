/* bench_lockstep_add and bench_order_by_key (bench/bench_util.c): the lane efficiency herd-bench env --profile
 * reports for a contact solve batched over worlds in lock step, checked on job sets whose efficiency is known by
 * hand. */
#include <criterion/criterion.h>

#include "bench/bench.h"

static double efficiency(const int *n, const int *s, const int *order, int count, int lanes)
{
    double acc[2] = {0, 0};
    bench_lockstep_add(n, s, order, count, lanes, acc);
    return acc[1] > 0 ? acc[0] / acc[1] : -1;
}

Test(lockstep, equal_jobs_fill_every_lane)
{
    const int n[8] = {3, 3, 3, 3, 3, 3, 3, 3}, s[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    cr_assert_float_eq(efficiency(n, s, NULL, 8, 4), 1.0, 1e-15);
}

Test(lockstep, one_busy_lane_of_four_is_a_quarter)
{
    const int n[4] = {5, 0, 0, 0}, s[4] = {7, 0, 0, 0};
    cr_assert_float_eq(efficiency(n, s, NULL, 4, 4), 0.25, 1e-15);
}

Test(lockstep, a_group_runs_its_most_items_for_its_most_sweeps)
{
    /* items 1..4, 3 sweeps each: 30 item steps of work for 4 lanes x 4 items x 3 sweeps */
    const int n[4] = {1, 2, 3, 4}, s[4] = {3, 3, 3, 3};
    cr_assert_float_eq(efficiency(n, s, NULL, 4, 4), 30.0 / 48.0, 1e-15);
    /* the largest item count and the longest sweep count of different jobs still make the group's loops */
    const int n2[2] = {4, 1}, s2[2] = {1, 4};
    cr_assert_float_eq(efficiency(n2, s2, NULL, 2, 2), 8.0 / 32.0, 1e-15);
}

Test(lockstep, a_short_last_group_costs_a_whole_one_and_idle_groups_nothing)
{
    const int n[5] = {1, 1, 1, 1, 1}, s[5] = {1, 1, 1, 1, 1};
    cr_assert_float_eq(efficiency(n, s, NULL, 5, 4), 5.0 / 8.0, 1e-15);
    const int n2[8] = {0, 0, 0, 0, 2, 2, 2, 2}, s2[8] = {3, 1, 0, 2, 5, 5, 5, 5};
    cr_assert_float_eq(efficiency(n2, s2, NULL, 8, 4), 1.0, 1e-15);
}

Test(lockstep, accumulates_over_calls)
{
    const int a[4] = {2, 2, 2, 2}, b[4] = {4, 0, 0, 0}, one[4] = {1, 1, 1, 1};
    double acc[2] = {0, 0};
    bench_lockstep_add(a, one, NULL, 4, 4, acc); /* 8 of 8 */
    bench_lockstep_add(b, one, NULL, 4, 4, acc); /* 4 of 16 */
    cr_assert_float_eq(acc[0], 12.0, 1e-15);
    cr_assert_float_eq(acc[1], 24.0, 1e-15);
}

Test(lockstep, order_by_key_is_stable_and_takes_negative_keys)
{
    const int key[5] = {3, 1, 3, 0, 1};
    int order[5];
    bench_order_by_key(key, 5, order);
    const int want[5] = {3, 1, 4, 0, 2};
    for (int i = 0; i < 5; i++) cr_assert_eq(order[i], want[i], "order[%d] = %d, want %d", i, order[i], want[i]);
    const int neg[3] = {-1, 2, -5};
    int o2[3];
    bench_order_by_key(neg, 3, o2);
    cr_assert(o2[0] == 2 && o2[1] == 0 && o2[2] == 1, "%d %d %d", o2[0], o2[1], o2[2]);
}

Test(lockstep, grouping_by_item_count_removes_the_spread_within_groups)
{
    /* in index order every pair holds a 1 and a 4; grouped by count the pairs are equal */
    const int n[4] = {1, 4, 1, 4}, s[4] = {1, 1, 1, 1};
    int order[4];
    cr_assert_float_eq(efficiency(n, s, NULL, 4, 2), 10.0 / 16.0, 1e-15);
    bench_order_by_key(n, 4, order);
    cr_assert_float_eq(efficiency(n, s, order, 4, 2), 1.0, 1e-15);
}

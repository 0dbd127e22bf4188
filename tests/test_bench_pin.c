/* bench_pin (bench/bench_util.c): core k is the k-th CPU of the affinity mask the process inherited, so a benchmark
 * started under `taskset -c 1` runs on CPU 1 instead of being moved to CPU 0.  Each case runs in a child process
 * that first narrows its own mask as taskset does (sched_setaffinity before the program's first pin), then pins. */
#include <criterion/criterion.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

/* In a child: sets the process mask to cpus[0..n), calls bench_pin(core), then spins a little so that the scheduler
 * has moved the thread, and exits 0 if it runs on `expect` and its mask is exactly {expect}; else a code per check. */
static int pinned_child(const int *cpus, int n, int core, int expect)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int i = 0; i < n; i++) CPU_SET(cpus[i], &set);
        if (sched_setaffinity(0, sizeof set, &set)) _exit(10);
        if (bench_pin(core) != expect) _exit(11);
        volatile double x = 0;
        for (int i = 0; i < 1000000; i++) x += i;
        sched_yield();
        if (sched_getcpu() != expect) _exit(12);
        cpu_set_t now;
        if (sched_getaffinity(0, sizeof now, &now)) _exit(13);
        if (CPU_COUNT(&now) != 1 || !CPU_ISSET(expect, &now)) _exit(14);
        _exit(0);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void need_two_cpus(void)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    if (!CPU_ISSET(0, &set) || !CPU_ISSET(1, &set)) cr_skip_test("needs CPUs 0 and 1 in this process's mask");
}

/* `taskset -c 1`: core 0 of the benchmark is CPU 1 (the old pin moved it to CPU 0: code 11). */
Test(bench_pin, taskset_c_1_runs_on_cpu_1)
{
    need_two_cpus();
    const int one[] = {1};
    cr_assert_eq(pinned_child(one, 1, 0, 1), 0);
}

/* Core k is the k-th CPU of the mask, wrapping around its size. */
Test(bench_pin, core_k_is_the_kth_cpu_of_the_mask)
{
    need_two_cpus();
    const int both[] = {0, 1};
    cr_assert_eq(pinned_child(both, 2, 0, 0), 0);
    cr_assert_eq(pinned_child(both, 2, 1, 1), 0);
    cr_assert_eq(pinned_child(both, 2, 2, 0), 0);
    const int one[] = {1};
    cr_assert_eq(pinned_child(one, 1, 3, 1), 0);
}

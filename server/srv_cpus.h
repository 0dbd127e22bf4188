/* srv_cpus.h — how many CPUs this process may really use: the container's CPU quota, else its affinity.
 *
 * A container limited with `docker run --cpus 4` or a Kubernetes `limits.cpu: 4` still sees every core of the
 * node in its affinity mask; only the cgroup's CFS quota says 4.  The worker-thread default follows this order:
 *   1. cgroup v2: <root>/cpu.max ("QUOTA PERIOD" or "max PERIOD") of the process's cgroup
 *   2. cgroup v1: cpu.cfs_quota_us and cpu.cfs_period_us (quota -1 = none) of the process's cgroup in the cpu
 *      hierarchy (<root>/cpu/<path>) and of each parent up to <root>/cpu
 *   3. the affinity mask (sched_getaffinity), else sysconf(_SC_NPROCESSORS_ONLN)
 * A quota is rounded up to whole CPUs (2.5 CPUs -> 3 threads) and never exceeds the affinity count.
 * Pure file reading: no state, safe from any thread.
 */
#ifndef HERD_SRV_CPUS_H
#define HERD_SRV_CPUS_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    int cpus;              /* the usable CPU count (>= 1) */
    int affinity;          /* CPUs in the affinity mask (or online) */
    double quota;          /* the cgroup quota in CPUs, 0 if none */
    char source[768];      /* where the figure came from, for the start-up log line */
} srv_cpus;

/* Detects the usable CPUs.  cgroup_root is the cgroup file-system mount ("/sys/fs/cgroup" in production,
 * a test directory in tests; NULL means "/sys/fs/cgroup").  The process's own cgroup path is read from
 * /proc/self/cgroup when root is the real mount, else the files are read directly under root. */
srv_cpus srv_cpus_detect(const char *cgroup_root);

/* The same with the cgroup paths given: cgroup v2 files are read at root + rel + "/cpu.max" and at each parent
 * up to root; v1 files (when no cpu.max exists) at root + "/cpu" + rel_v1 and each parent up to root + "/cpu".
 * The smallest quota wins; rel and rel_v1 are "" or start with '/'. */
srv_cpus srv_cpus_detect_in(const char *root, const char *rel, const char *rel_v1);

/* Reads /proc/self/cgroup's format from f: v2's path ("0::/kubepods/...") into v2 and the path of the v1
 * hierarchy whose controllers include cpu ("4:cpu,cpuacct:/slurm/job_2") into v1; "" (the root) when absent. */
void srv_cpus_parse_proc_cgroup(FILE *f, char *v2, char *v1, size_t cap);

/* Parses a cgroup v2 cpu.max line ("200000 100000", "max 100000"): the quota in CPUs, 0 for "max",
 * -1 if the text is malformed. */
double srv_cpus_parse_cpu_max(const char *text);

#endif

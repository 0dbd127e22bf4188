/* server/srv_cpus: the worker-thread default follows the cgroup CPU quota (v2 cpu.max, v1 cfs files),
 * else the affinity mask.  The cgroup trees here are simulated in a temporary directory. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srv_cpus.h"

static char root[64];

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/herd-cgroup-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
}
static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
    char path[256], dir[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(dir, 0700); *p = '/'; }
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int affinity(void)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    return CPU_COUNT(&set);
}

Test(cpus, parse_cpu_max)
{
    cr_assert_float_eq(srv_cpus_parse_cpu_max("200000 100000\n"), 2.0, 1e-12);
    cr_assert_float_eq(srv_cpus_parse_cpu_max("150000 100000"), 1.5, 1e-12);
    cr_assert_float_eq(srv_cpus_parse_cpu_max("max 100000"), 0.0, 1e-12);
    cr_assert_float_eq(srv_cpus_parse_cpu_max("garbage"), -1.0, 1e-12);
    cr_assert_float_eq(srv_cpus_parse_cpu_max("12x 100000"), -1.0, 1e-12);
    cr_assert_float_eq(srv_cpus_parse_cpu_max("100 0"), -1.0, 1e-12);
}

Test(cpus, v2_quota_rounds_up_and_is_capped_by_affinity, .init = setup, .fini = teardown)
{
    put("cpu.max", "50000 100000\n");   /* half a CPU -> one thread */
    srv_cpus c = srv_cpus_detect_in(root, "", "");
    cr_assert_eq(c.cpus, 1);
    cr_assert_float_eq(c.quota, 0.5, 1e-12);
    cr_assert(strstr(c.source, "cgroup quota 0.50 CPUs"), "%s", c.source);
    put("cpu.max", "6400000 100000\n"); /* 64 CPUs: more than this machine lets us run on */
    c = srv_cpus_detect_in(root, "", "");
    cr_assert_eq(c.cpus, affinity());
}

Test(cpus, v2_smallest_quota_on_the_path_wins, .init = setup, .fini = teardown)
{
    put("cpu.max", "max 100000\n");
    put("kubepods/cpu.max", "100000 100000\n");           /* 1 CPU on the parent */
    put("kubepods/pod1/cpu.max", "max 100000\n");          /* none on the pod itself */
    srv_cpus c = srv_cpus_detect_in(root, "/kubepods/pod1", "");
    cr_assert_eq(c.cpus, 1);
    cr_assert(strstr(c.source, "kubepods/cpu.max"), "%s", c.source);
}

Test(cpus, v2_no_quota_uses_affinity, .init = setup, .fini = teardown)
{
    put("cpu.max", "max 100000\n");
    srv_cpus c = srv_cpus_detect_in(root, "", "");
    cr_assert_eq(c.cpus, affinity());
    cr_assert_float_eq(c.quota, 0.0, 1e-12);
    cr_assert(strstr(c.source, "no cgroup quota"), "%s", c.source);
}

Test(cpus, v1_cfs_quota, .init = setup, .fini = teardown)
{
    put("cpu/cpu.cfs_quota_us", "250000\n");
    put("cpu/cpu.cfs_period_us", "100000\n");
    srv_cpus c = srv_cpus_detect_in(root, "", "");
    cr_assert_float_eq(c.quota, 2.5, 1e-12);
    cr_assert_eq(c.cpus, affinity() < 3 ? affinity() : 3);
    put("cpu/cpu.cfs_quota_us", "-1\n");
    c = srv_cpus_detect_in(root, "", "");
    cr_assert_eq(c.cpus, affinity());
}

/* cgroup v1 outside a container (Slurm's or systemd's hierarchy): the quota sits on the process's own cgroup
 * (/proc/self/cgroup's cpu line), or on a parent of it; inside a container the process's path is absent under
 * the mount and the mount's own files count. */
Test(cpus, v1_quota_on_the_process_cgroup_or_a_parent, .init = setup, .fini = teardown)
{
    put("cpu/cpu.cfs_quota_us", "-1\n");
    put("cpu/cpu.cfs_period_us", "100000\n");
    put("cpu/slurm/cpu.cfs_quota_us", "-1\n");
    put("cpu/slurm/cpu.cfs_period_us", "100000\n");
    put("cpu/slurm/job_7/cpu.cfs_quota_us", "50000\n");      /* half a CPU on the job */
    put("cpu/slurm/job_7/cpu.cfs_period_us", "100000\n");
    srv_cpus c = srv_cpus_detect_in(root, "", "/slurm/job_7");
    cr_assert_float_eq(c.quota, 0.5, 1e-12);
    cr_assert_eq(c.cpus, 1);
    cr_assert(strstr(c.source, "slurm/job_7/cpu.cfs_quota_us"), "%s", c.source);
    /* a step below the job inherits it */
    put("cpu/slurm/job_7/step_0/cpu.cfs_quota_us", "-1\n");
    put("cpu/slurm/job_7/step_0/cpu.cfs_period_us", "100000\n");
    c = srv_cpus_detect_in(root, "", "/slurm/job_7/step_0");
    cr_assert_float_eq(c.quota, 0.5, 1e-12);
    /* the container case: the path of /proc/self/cgroup does not exist under the mount */
    put("cpu/cpu.cfs_quota_us", "150000\n");
    c = srv_cpus_detect_in(root, "", "/docker/0123abcd");
    cr_assert_float_eq(c.quota, 1.5, 1e-12);
    cr_assert_eq(c.cpus, affinity() < 2 ? affinity() : 2);
}

Test(cpus, proc_self_cgroup_paths)
{
    static const char hybrid[] = "12:cpuset:/\n4:cpu,cpuacct:/slurm/uid_1/job_7/step_0\n3:memory:/slurm/x\n"
                                 "1:name=systemd:/user.slice\n0::/user.slice/session-2.scope\n";
    char v2[256], v1[256];
    FILE *f = fmemopen((void *)hybrid, sizeof hybrid - 1, "r");
    srv_cpus_parse_proc_cgroup(f, v2, v1, sizeof v2);
    fclose(f);
    cr_assert_str_eq(v2, "/user.slice/session-2.scope");
    cr_assert_str_eq(v1, "/slurm/uid_1/job_7/step_0");
    static const char unified[] = "0::/\n";
    f = fmemopen((void *)unified, sizeof unified - 1, "r");
    srv_cpus_parse_proc_cgroup(f, v2, v1, sizeof v2);
    fclose(f);
    cr_assert_str_eq(v2, "");
    cr_assert_str_eq(v1, "");
    static const char v1only[] = "3:cpuacct,cpu:/docker/ab12\n2:cpuacct_x:/no\n";
    f = fmemopen((void *)v1only, sizeof v1only - 1, "r");
    srv_cpus_parse_proc_cgroup(f, v2, v1, sizeof v2);
    fclose(f);
    cr_assert_str_eq(v1, "/docker/ab12");
}

Test(cpus, nothing_mounted_uses_affinity, .init = setup, .fini = teardown)
{
    srv_cpus c = srv_cpus_detect_in(root, "", "");
    cr_assert_eq(c.cpus, affinity());
    cr_assert(strstr(c.source, "no cgroup cpu files"), "%s", c.source);
    srv_cpus real = srv_cpus_detect(NULL);   /* this machine's real cgroup: at least one CPU, never more than affinity */
    cr_assert(real.cpus >= 1 && real.cpus <= affinity());
}

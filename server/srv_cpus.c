/* srv_cpus.c — CPU quota (cgroup v2 / v1) and affinity detection; see srv_cpus.h. */
#include "srv_cpus.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGROUP_MOUNT "/sys/fs/cgroup"

/* Reads a small text file into buf (NUL-terminated, trailing newline removed); 0 on success. */
static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    return n > 0 ? 0 : -1;
}

double srv_cpus_parse_cpu_max(const char *text)
{
    char q[32];
    long period;
    if (sscanf(text, "%31s %ld", q, &period) != 2 || period <= 0) return -1;
    if (!strcmp(q, "max")) return 0;
    char *end;
    long quota = strtol(q, &end, 10);
    if (*end || quota <= 0) return -1;
    return (double)quota / (double)period;
}

/* Copies a cgroup path ("/" means the root: "") into out. */
static void set_path(char *out, size_t cap, const char *p)
{
    if (!strcmp(p, "/")) p = "";
    size_t n = strlen(p) < cap - 1 ? strlen(p) : cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

void srv_cpus_parse_proc_cgroup(FILE *f, char *v2, char *v1, size_t cap)
{
    v2[0] = v1[0] = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = 0;
        if (!strcmp(line, "0") && c1[1] == 0) {
            set_path(v2, cap, c2 + 1);
            continue;
        }
        for (char *tok = strtok(c1 + 1, ","); tok; tok = strtok(NULL, ","))
            if (!strcmp(tok, "cpu")) set_path(v1, cap, c2 + 1);
    }
}

static int affinity_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The quota (CPUs, 0 = none) of cgroup v2 file root/rel/cpu.max, walking up to root (a limit set on a
 * parent applies to its children; the smallest one wins).  Sets *found when any cpu.max was read. */
static double v2_quota(const char *root, const char *rel, int *found, char *where, size_t wcap)
{
    char dir[256], path[300], text[64];
    snprintf(dir, sizeof dir, "%s", rel);
    double best = 0;
    for (;;) {
        snprintf(path, sizeof path, "%s%s/cpu.max", root, dir);
        if (read_text(path, text, sizeof text) == 0) {
            *found = 1;
            double q = srv_cpus_parse_cpu_max(text);
            if (q > 0 && (best == 0 || q < best)) {
                best = q;
                snprintf(where, wcap, "%s", path);
            }
        }
        char *slash = strrchr(dir, '/');
        if (!slash || dir[0] == 0) break;
        *slash = 0;
    }
    return best;
}

srv_cpus srv_cpus_detect(const char *cgroup_root)
{
    const char *root = cgroup_root ? cgroup_root : CGROUP_MOUNT;
    char rel[256] = "", rel1[256] = "";
    FILE *f = strcmp(root, CGROUP_MOUNT) ? NULL : fopen("/proc/self/cgroup", "r");
    if (f) {
        srv_cpus_parse_proc_cgroup(f, rel, rel1, sizeof rel);
        fclose(f);
    }
    return srv_cpus_detect_in(root, rel, rel1);
}

/* The quota (CPUs, 0 = none) of the cgroup v1 cpu hierarchy: root/cpu/rel/cpu.cfs_quota_us and
 * cpu.cfs_period_us, walking up to root/cpu (a container's own cgroup is often mounted as that root, so the
 * process's path is absent under it); the smallest wins.  Sets *found when a pair of files was read. */
static double v1_quota(const char *root, const char *rel, int *found, char *where, size_t wcap)
{
    char dir[256], qp[600], pp[600], qt[64], pt[64];
    snprintf(dir, sizeof dir, "%s", rel);
    double best = 0;
    for (;;) {
        snprintf(qp, sizeof qp, "%s/cpu%s/cpu.cfs_quota_us", root, dir);
        snprintf(pp, sizeof pp, "%s/cpu%s/cpu.cfs_period_us", root, dir);
        if (read_text(qp, qt, sizeof qt) == 0 && read_text(pp, pt, sizeof pt) == 0) {
            *found = 1;
            long quota = strtol(qt, NULL, 10), period = strtol(pt, NULL, 10);
            if (quota > 0 && period > 0) {
                double q = (double)quota / (double)period;
                if (best == 0 || q < best) {
                    best = q;
                    snprintf(where, wcap, "%s", qp);
                }
            }
        }
        char *slash = strrchr(dir, '/');
        if (!slash || dir[0] == 0) break;
        *slash = 0;
    }
    return best;
}

srv_cpus srv_cpus_detect_in(const char *root, const char *rel, const char *rel_v1)
{
    srv_cpus r = {.cpus = 1, .affinity = affinity_count(), .quota = 0};
    char where[640] = "";

    int found = 0;
    double q = v2_quota(root, rel ? rel : "", &found, where, sizeof where);
    if (!found) q = v1_quota(root, rel_v1 ? rel_v1 : "", &found, where, sizeof where);
    if (q > 0) {
        r.quota = q;
        int n = (int)ceil(q - 1e-9);
        r.cpus = n < r.affinity ? n : r.affinity;
        if (r.cpus < 1) r.cpus = 1;
        snprintf(r.source, sizeof r.source, "cgroup quota %.2f CPUs (%s)", q, where);
    } else {
        r.cpus = r.affinity;
        snprintf(r.source, sizeof r.source, "%s, affinity mask of %d CPUs",
                 found ? "no cgroup quota" : "no cgroup cpu files", r.affinity);
    }
    return r;
}

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

/* The process's cgroup v2 path ("0::/kubepods/...") from /proc/self/cgroup, or "" (root). */
static void own_cgroup_v2(char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = 0;
            const char *p = strcmp(line + 3, "/") ? line + 3 : "";
            size_t n = strlen(p) < cap - 1 ? strlen(p) : cap - 1;
            memcpy(out, p, n);
            out[n] = 0;
            break;
        }
    }
    fclose(f);
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
    char rel[256] = "";
    if (!strcmp(root, CGROUP_MOUNT)) own_cgroup_v2(rel, sizeof rel);
    return srv_cpus_detect_in(root, rel);
}

srv_cpus srv_cpus_detect_in(const char *root, const char *rel)
{
    srv_cpus r = {.cpus = 1, .affinity = affinity_count(), .quota = 0};
    char where[640] = "", text[64];

    int found = 0;
    double q = v2_quota(root, rel ? rel : "", &found, where, sizeof where);
    if (!found) {
        /* cgroup v1: the cpu controller's own hierarchy */
        char qp[600], pp[600], qt[64];
        snprintf(qp, sizeof qp, "%s/cpu/cpu.cfs_quota_us", root);
        snprintf(pp, sizeof pp, "%s/cpu/cpu.cfs_period_us", root);
        if (read_text(qp, qt, sizeof qt) == 0 && read_text(pp, text, sizeof text) == 0) {
            long quota = strtol(qt, NULL, 10), period = strtol(text, NULL, 10);
            found = 1;
            if (quota > 0 && period > 0) {
                q = (double)quota / (double)period;
                snprintf(where, sizeof where, "%s", qp);
            }
        }
    }
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

/* herd-bench — benchmarks printing one JSON object per line (stdout) and a human table (stderr).
 *   herd-bench dynamics | solver | contact1 | contact-models | env | server | all   [options]
 * Subcommands live in their own files; one that is not linked in is reported as such. */
#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Weak references: a subcommand whose file is absent resolves to NULL. */
#pragma weak bench_dynamics
#pragma weak bench_solver
#pragma weak bench_contact1
#pragma weak bench_contact_models
#pragma weak bench_env
#pragma weak bench_server

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(double *x, int n, double p)
{
    if (n <= 0) return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double r = p / 100.0 * (n - 1);
    int i = (int)r;
    if (i >= n - 1) return x[n - 1];
    double f = r - i;
    return x[i] * (1 - f) + x[i + 1] * f;
}

double bench_median(double *x, int n) { return bench_percentile(x, n, 50.0); }

const char *bench_arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

int bench_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

void bench_pin(int core)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

const char *bench_cpu(void)
{
    static char name[128];
    if (name[0]) return name;
    snprintf(name, sizeof name, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return name;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n\"\\")] = 0;
                snprintf(name, sizeof name, "%s", c);
            }
            break;
        }
    }
    fclose(f);
    return name;
}

static const struct { const char *name; const char *what; } cmds[] = {
    {"dynamics", "FK + CRBA + RNEA + LTDL on ANYmal C vs MuJoCo's same stages"},
    {"solver", "contact solvers on the paper's four scenarios (--scenario, --solver, --compare, --vs-mujoco)"},
    {"contact1", "single-contact bisection solve"},
    {"contact-models", "every solver on the comparative paper's experiments, Fig. 6 and Table II (--quick, --only)"},
    {"env", "batched environment stepping (--env, --worlds, --threads)"},
    {"server", "served vs in-process throughput over ZeroMQ"},
};

static bench_fn lookup(const char *name)
{
    if (!strcmp(name, "dynamics")) return bench_dynamics;
    if (!strcmp(name, "solver")) return bench_solver;
    if (!strcmp(name, "contact1")) return bench_contact1;
    if (!strcmp(name, "contact-models")) return bench_contact_models;
    if (!strcmp(name, "env")) return bench_env;
    if (!strcmp(name, "server")) return bench_server;
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: herd-bench <subcommand> [options]\n       herd-bench all\nsubcommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-14s %s%s\n", cmds[i].name, cmds[i].what, lookup(cmds[i].name) ? "" : " (not built)");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "all")) {
        int rc = 0;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            bench_fn fn = lookup(cmds[i].name);
            if (!fn) continue;
            char *sub[] = {(char *)cmds[i].name, NULL};
            rc |= fn(1, sub);
        }
        return rc;
    }
    bench_fn fn = lookup(argv[1]);
    if (!fn) {
        fprintf(stderr, "herd-bench: unknown or unbuilt subcommand '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    return fn(argc - 1, argv + 1);
}

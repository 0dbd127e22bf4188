/* bench_util.c — the helpers every herd-bench subcommand shares (bench.h): clocks, medians, arguments, pinning,
 * the CPU's name, and the world slices stepped as the server's workers step them. */
#include "bench.h"
#include "env.h"
#include "srv_pool.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_share_init(bench_share *s, int n, int threads)
{
    s->n = n;
    s->threads = threads < 1 ? 1 : threads > BENCH_MAX_THREADS ? BENCH_MAX_THREADS : threads;
    bench_share_rewind(s);
}

void bench_share_rewind(bench_share *s)
{
    for (int t = 0; t < s->threads; t++) __atomic_store_n(&s->cur[t].next, 0, __ATOMIC_RELAXED);
}

static int share_first(const bench_share *s, int t) { return (int)((long)s->n * t / s->threads); }

/* One piece of slice t: *first and the count (0: the slice is all taken). */
static int share_take(bench_share *s, int t, int *first)
{
    const int len = share_first(s, t + 1) - share_first(s, t);
    const int left = len - __atomic_load_n(&s->cur[t].next, __ATOMIC_RELAXED);
    if (left <= 0) return 0;
    const int k = srv_pool_piece(left, BENCH_QUANTUM, s->threads);
    const int a = __atomic_fetch_add(&s->cur[t].next, k, __ATOMIC_RELAXED);
    if (a >= len) return 0;
    *first = share_first(s, t) + a;
    return a + k < len ? k : len - a;
}

long bench_share_step(bench_share *s, int me, void (*step)(int first, int count, void *ctx), void *ctx)
{
    long helped = 0;
    int f, k;
    for (int d = 0; d < s->threads; d++) {
        const int t = (me + d) % s->threads;
        while ((k = share_take(s, t, &f)) > 0) {
            step(f, k, ctx);
            if (d) helped += k;
        }
    }
    return helped;
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bench_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

void bench_lockstep_add(const int *n, const int *s, const int *order, int count, int lanes, double acc[2])
{
    for (int g = 0; g < count; g += lanes) {
        int mn = 0, ms = 0;
        for (int l = g; l < g + lanes && l < count; l++) {
            const int i = order ? order[l] : l;
            acc[0] += (double)n[i] * s[i];
            mn = n[i] > mn ? n[i] : mn;
            ms = s[i] > ms ? s[i] : ms;
        }
        acc[1] += (double)lanes * mn * ms;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void bench_order_by_key(const int *key, int count, int *order)
{
    /* (key, index) packed in one 64-bit word (key offset to unsigned): one qsort orders by key, then by index */
    uint64_t *kv = malloc(sizeof *kv * (size_t)(count > 0 ? count : 1));
    if (!kv) {
        fprintf(stderr, "herd-bench: out of memory\n");
        exit(2);
    }
    for (int i = 0; i < count; i++) kv[i] = (uint64_t)((uint32_t)key[i] ^ 0x80000000u) << 32 | (uint32_t)i;
    qsort(kv, (size_t)count, sizeof *kv, cmp_u64);
    for (int i = 0; i < count; i++) order[i] = (int)(uint32_t)kv[i];
    free(kv);
}

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

static cpu_set_t pin_mask;
static int pin_mask_ok;
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

/* The mask the process started with: only bench_pin narrows a thread's mask, and a thread created after a pin
 * inherits the narrowed one, so it is read once, at the first pin. */
static void pin_read_mask(void)
{
    CPU_ZERO(&pin_mask);
    pin_mask_ok = pthread_getaffinity_np(pthread_self(), sizeof pin_mask, &pin_mask) == 0 && CPU_COUNT(&pin_mask) > 0;
}

int bench_pin(int core)
{
    pthread_once(&pin_once, pin_read_mask);
    if (!pin_mask_ok || core < 0) return -1;
    int k = core % CPU_COUNT(&pin_mask), cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &pin_mask) && k-- == 0) {
            cpu = c;
            break;
        }
    if (cpu < 0) return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? cpu : -1;
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

int bench_config_value(const char *env, const char *key, const char *text, double *v, char *err, size_t errlen)
{
    char *end;
    *v = strtod(text, &end);
    if (end != text && !*end) return 0;
    return env_config_choice(env, key, text, v, err, errlen) ? 2 : 0;
}

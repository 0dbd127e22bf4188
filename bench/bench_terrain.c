/* herd-bench terrain — what making legged_gym's curriculum terrain costs (envs/env_terrain.h).
 *
 *   herd-bench terrain [--rows 10] [--cols 20] [--seed 1] [--repeats 9]
 *
 * On one pinned thread: the median wall and thread-CPU time of env_terrain_new for the whole field
 * (legged_gym's 10 x 20 tiles of 8 m and 25 m border by default), its memory (int16 heights and tile table),
 * and, as the baseline measured in the same run, the time of env_terrain_to_hfield (one pass over the
 * field writing the floats sim/ reads), with the ratio of the two. */
#include <stdlib.h>

#include "bench.h"
#include "env_terrain.h"

int bench_terrain(int argc, char **argv)
{
    env_terrain_config c = env_terrain_config_default();
    c.rows = atoi(bench_arg(argc, argv, "--rows", "10"));
    c.cols = atoi(bench_arg(argc, argv, "--cols", "20"));
    const uint64_t seed = strtoull(bench_arg(argc, argv, "--seed", "1"), NULL, 10);
    const int R = atoi(bench_arg(argc, argv, "--repeats", "9"));
    if (R < 1) {
        fprintf(stderr, "herd-bench terrain: need --repeats >= 1\n");
        return 2;
    }
    bench_pin(0);
    char err[256];
    double *wall = malloc(sizeof(double) * R), *cpu = malloc(sizeof(double) * R), *conv = malloc(sizeof(double) * R);
    size_t bytes = 0, samples = 0;
    for (int r = 0; r < R; r++) {
        const uint64_t w0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
        env_terrain *t = env_terrain_new(&c, seed, err, sizeof err);
        const uint64_t w1 = bench_now_ns(), c1 = bench_thread_cpu_ns();
        if (!t) {
            fprintf(stderr, "herd-bench terrain: %s\n", err);
            free(wall), free(cpu), free(conv);
            return 1;
        }
        int nx, ny;
        env_terrain_heights(t, &nx, &ny);
        samples = (size_t)nx * ny;
        bytes = env_terrain_bytes(t);
        float *f = malloc(sizeof(float) * samples);
        sim_terrain st;
        const uint64_t v0 = bench_thread_cpu_ns();
        const int rc = f ? env_terrain_to_hfield(t, f, samples, &st, err, sizeof err) : -1;
        const uint64_t v1 = bench_thread_cpu_ns();
        if (rc) fprintf(stderr, "herd-bench terrain: the heightfield: %s\n", f ? err : "out of memory");
        free(f);
        env_terrain_destroy(&t);
        if (rc) {
            free(wall), free(cpu), free(conv);
            return 1;
        }
        wall[r] = (double)(w1 - w0) * 1e-6;
        cpu[r] = (double)(c1 - c0) * 1e-6;
        conv[r] = (double)(v1 - v0) * 1e-6;
    }
    const double w = bench_median(wall, R), u = bench_median(cpu, R), v = bench_median(conv, R);
    printf("{\"bench\":\"terrain\",\"rows\":%d,\"cols\":%d,\"tiles\":%d,\"samples\":%zu,\"bytes\":%zu,"
           "\"hfield_bytes\":%zu,\"new_ms\":%.3f,\"new_cpu_ms\":%.3f,\"to_hfield_cpu_ms\":%.3f,"
           "\"new_over_to_hfield\":%.2f,\"repeats\":%d,\"cpu\":\"%s\"}\n",
           c.rows, c.cols, c.rows * c.cols, samples, bytes, samples * sizeof(float), w, u, v, u / v, R, bench_cpu());
    fprintf(stderr, "terrain %d x %d tiles (%zu samples): made in %.2f ms (%.2f ms CPU, one thread), %.2f MB; "
                    "to herd's float heightfield %.2f ms CPU (%.2f MB), ratio %.2f\n",
            c.rows, c.cols, samples, w, u, bytes / 1e6, v, samples * sizeof(float) / 1e6, u / v);
    free(wall), free(cpu), free(conv);
    return 0;
}

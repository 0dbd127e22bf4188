/* bench.h — shared helpers of the herd-bench subcommands: timing, medians, JSON lines. */
#ifndef HERD_BENCH_H
#define HERD_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);
/* CPU time consumed by the calling thread, in nanoseconds (robust to a loaded machine's time slicing). */
uint64_t bench_thread_cpu_ns(void);
/* Median of n doubles (the array is reordered). */
double bench_median(double *x, int n);
/* Percentile p in [0, 100] of n doubles (the array is sorted). */
double bench_percentile(double *x, int n, double p);
/* Value of "--name V" in argv, or def. */
const char *bench_arg(int argc, char **argv, const char *name, const char *def);
int bench_flag(int argc, char **argv, const char *name);
/* Pins the calling thread to a core (best effort). */
void bench_pin(int core);
/* Name of this machine's CPU (from /proc/cpuinfo), for the JSON lines. */
const char *bench_cpu(void);

/* herd-bench env's workload, shared with its --vs-mujoco variant: n fixed pseudo-random actions in [-1, 1]
 * (malloc'ed), and the reset (seeds 1000 + i % 32) plus `warmup` untimed steps of every world (env.h). */
struct env;
float *bench_env_actions(size_t n);
void bench_env_prepare(struct env *e, int warmup, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc);

/* Subcommands.  Each prints JSON lines to stdout and a short table to stderr; returns an exit code. */
typedef int (*bench_fn)(int argc, char **argv);
int bench_dynamics(int argc, char **argv);
int bench_solver(int argc, char **argv);
int bench_contact1(int argc, char **argv);
int bench_contact_models(int argc, char **argv);
int bench_env(int argc, char **argv);
int bench_server(int argc, char **argv);
int bench_poses(int argc, char **argv);
int bench_admm(int argc, char **argv);

#endif

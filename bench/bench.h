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
/* Pins the calling thread to core k of the affinity mask the process inherited (taskset, cgroup cpusets): the k-th
 * CPU of that mask (modulo its size), so that `taskset -c 1 herd-bench ...` runs on CPU 1.  The mask is read at the
 * first call, before any pinning narrows it.  Best effort; returns the CPU chosen, or -1 if none was set. */
int bench_pin(int core);
/* Name of this machine's CPU (from /proc/cpuinfo), for the JSON lines. */
const char *bench_cpu(void);
/* A task's configuration value given as text: a number, or for a key with named choices a name (env.h:
 * env_config_choice).  0, or 2 with a message in err. */
int bench_config_value(const char *env, const char *key, const char *text, double *v, char *err, size_t errlen);

/* Lock-step lanes: count jobs run `lanes` at a time, one job per lane of a vector, in consecutive groups of
 * order[0..count) (NULL: index order).  Job i is s[i] sweeps over n[i] items (a contact solve: its sweeps over its
 * blocks).  A group takes as many vector steps as its longest sweep count times its largest item count (every lane
 * steps through the group's longest loops), and a vector step does `lanes` item steps' worth of work, so the group
 * costs lanes * max n * max s item steps for the sum of n[i] s[i] its jobs need (a short last group costs as a full
 * one; a group of jobs without work costs nothing).  Adds the jobs' work to acc[0] and the groups' cost to acc[1]:
 * their ratio is the lane efficiency. */
void bench_lockstep_add(const int *n, const int *s, const int *order, int count, int lanes, double acc[2]);
/* order[0..count): the indices 0..count-1 sorted by key[] ascending, ties in index order. */
void bench_order_by_key(const int *key, int count, int *order);

/* Stepping one env on T threads as herd-server's workers do (srv_pool.h, helping): thread t owns the contiguous
 * slice t of the n worlds and takes it in pieces of at most BENCH_QUANTUM worlds (the server's default
 * quantum) through the slice's cursor; a thread done with its own slice helps with the others' through theirs.
 * Pieces are sized as the server's (srv_pool_piece), so the threads finish a step together within about one
 * world.  Usage per step: bench_share_step (every thread; returns the worlds it
 * took from other slices), then the caller's barrier, bench_share_rewind by one thread, barrier again. */
#define BENCH_QUANTUM 16
#define BENCH_MAX_THREADS 64
typedef struct {
    int n, threads;
    struct {
        _Alignas(64) int next;  /* worlds of the slice taken this step (atomic) */
    } cur[BENCH_MAX_THREADS];
} bench_share;
void bench_share_init(bench_share *s, int n, int threads);
void bench_share_rewind(bench_share *s);
/* Thread `me` steps worlds until every slice is taken: step(first, count, ctx) per piece.  Returns the worlds
 * it took from other threads' slices. */
long bench_share_step(bench_share *s, int me, void (*step)(int first, int count, void *ctx), void *ctx);

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
int bench_terrain(int argc, char **argv);
int bench_stairs(int argc, char **argv);
int bench_actuator(int argc, char **argv);
/* The comparisons with MuJoCo (bench_*_mujoco.c, peers/mj_peer.h), linked only where MuJoCo is: weak, NULL in a
 * herd-bench built without it (HERD_MUJOCO 0), whose subcommands then say so. */
int bench_env_vs_mujoco(int argc, char **argv);
int bench_solver_vs_mujoco(int argc, char **argv);
#pragma weak bench_env_vs_mujoco
#pragma weak bench_solver_vs_mujoco

#endif

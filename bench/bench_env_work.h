/* bench_env_work.h — herd-bench env's workload, shared by its in-process runs (bench_env.c) and its MuJoCo
 * comparison (bench_env_mujoco.c), so that both step the same worlds with the same actions. */
#ifndef HERD_BENCH_ENV_WORK_H
#define HERD_BENCH_ENV_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"

/* n fixed pseudo-random actions in [-1, 1] (malloc'ed; NULL out of memory). */
float *bench_env_actions(size_t n);
/* Resets every world of e (seeds 1000 + i % 32) and steps it `warmup` times on one thread with the actions act
 * (8 sets of num_worlds x act_dim, used in turn); obs, rew, term and trunc receive the outputs (num_worlds rows). */
void bench_env_prepare(env_t *e, int warmup, float *act, float *obs, float *rew, uint8_t *term, uint8_t *trunc);

#endif

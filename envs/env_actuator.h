/* env_actuator.h — the ANYmal tasks' joint actuators: what turns a world's joint targets into the joint torques its
 * physics steps with, every physics step inside the decimation loop.
 *
 * Models (the tasks' `actuator` key, ENV_ACTUATOR_CHOICES in that order):
 *   pd    the ideal PD law  tau = s (kp' (q* - q) - kd' qdot), clipped to +-torque_limit  (legged_gym's PD path);
 *   lstm  legged_gym's ANYdrive network (env_actuator_net.h) from the position error q* - q and the velocity qdot,
 *         tau = s net(q* - q, qdot), not clipped (legged_gym uses the network's output as it is);
 *   dc    the same network behind Isaac Lab's four-quadrant DC-motor torque-speed clip (its ActuatorNetLSTM is a
 *         DCMotor): tau = env_actuator_dc_clip(s net(q* - q, qdot), qdot, saturation, effort_limit, velocity_limit).
 * kp' = kp x a kp scale, kd' = kd x a kd scale and s (the motor strength) are drawn per world at its reset, each
 * uniform in its configured range; the scales act on the PD law only (the network has no gains), the strength on
 * every model, before its clip.
 *
 * Delay: per world an integer d in [delay_min, delay_max] physics steps is drawn at reset, and the target the
 * actuator sees at physics step p is the one commanded for physics step p - d ("delay the targets, not the
 * torques"); before the episode's first command the targets of the reset pose.  Targets change once per env
 * step, so the world keeps the last ceil(delay_max / decimation) + 1 env steps' targets in a ring.
 *
 * Randomness: a range whose ends are equal draws nothing (its value is the end), so that the default
 * configuration draws what it drew before these keys existed; the draws come from the world's own counter-based
 * stream (env_rng), after every other draw of the reset.
 *
 * State per world (env_actuator_world_bytes: its bookkeeping, the LSTM's (h, c) per joint for lstm and dc (floats or
 * doubles, as net_precision says), the
 * target ring when delay_max > 0), in the world's task memory, set up by env_actuator_reset.  An env_actuator is
 * read-only once set up and shared by every world and thread of an env; env_actuator_free frees its network.
 * Units: rad, rad/s, N·m; joint order of env_anymal_model.h.
 */
#ifndef HERD_ENV_ACTUATOR_H
#define HERD_ENV_ACTUATOR_H

#include <stddef.h>

#include "env_actuator_net.h"
#include "env_anymal_model.h"
#include "env_rng.h"
#include "sim_model.h"

typedef enum { ENV_ACTUATOR_PD = 0, ENV_ACTUATOR_LSTM, ENV_ACTUATOR_DC, ENV_ACTUATOR_NMODELS } env_actuator_model;
#define ENV_ACTUATOR_CHOICES {"pd", "lstm", "dc"}
/* The network's arithmetic (the tasks' `net_precision` key): float32, the precision of the TorchScript module as
 * shipped and as legged_gym runs it (env_actuator_net_step_lanes_f32, within ENV_ACTUATOR_NET_F32_TOL of the
 * float32 module), or float64 (env_actuator_net_step, within 1e-9 N·m of the module run in double precision). */
typedef enum { ENV_ACTUATOR_NET_FLOAT32 = 0, ENV_ACTUATOR_NET_FLOAT64, ENV_ACTUATOR_NET_NPRECISIONS } env_actuator_precision;
#define ENV_ACTUATOR_NET_PRECISION_CHOICES {"float32", "float64"}
/* The largest delay (physics steps) a configuration may ask. */
#define ENV_ACTUATOR_DELAY_MAX 50

/* An env's actuator: its configuration (filled by the task) and what env_actuator_setup derives from it. */
typedef struct {
    /* configuration */
    int model;                          /* env_actuator_model */
    int precision;                      /* lstm, dc: env_actuator_precision */
    double kp, kd, torque_limit;        /* pd: gains (N·m/rad, N·m·s/rad) and clip (N·m) */
    double dc_saturation, dc_effort_limit, dc_velocity_limit;   /* dc: N·m, N·m, rad/s */
    int delay_min, delay_max;           /* physics steps */
    int decimation;                     /* physics steps per env step */
    double kp_scale[2], kd_scale[2], strength[2];               /* [min, max] of each per-world draw */
    /* derived */
    env_actuator_net *net;              /* lstm, dc: the network (owned) */
    int ring;                           /* env steps of targets kept per world (0: no delay) */
    size_t bytes;                       /* per world */
} env_actuator;

/* Checks the configuration (named by its keys in err: delay_min > delay_max, a range's min above its max, an
 * unknown model), loads the network for lstm and dc, and sizes the per-world state.  `task` labels the messages.
 * 0, or -1 with err filled (a is then still safe to free). */
int env_actuator_setup(env_actuator *a, const char *task, char *err, size_t errlen);
/* Frees a's network (safe on a zeroed or failed set-up). */
void env_actuator_free(env_actuator *a);
/* Heap bytes a's set-up allocated (the network's block; 0 for pd). */
size_t env_actuator_fixed_bytes(const env_actuator *a);
/* Bytes one world's actuator state takes (a multiple of 64: its 64-byte bookkeeping, and the network state and the
 * target ring when used). */
size_t env_actuator_world_bytes(const env_actuator *a);

/* A world's reset: draws its delay, gain scales and strength from rng (ranges with distinct ends only), zeroes its
 * network state and fills its target ring with the reset pose's targets. */
void env_actuator_reset(const env_actuator *a, void *w, const double *targets, env_rng *rng);
/* The targets of the world's next env step (call once per env step, before its physics steps). */
void env_actuator_command(const env_actuator *a, void *w, const double *targets);

/* Network state of up to ENV_ACTUATOR_BATCH worlds side by side, so that one network call covers them all: for
 * float64 one env_actuator_state per joint, for float32 the joints of all worlds in a row as the vectors' lanes
 * (world i's joint q is joint 12 i + q of the blocks). */
#define ENV_ACTUATOR_BATCH 4
typedef struct {
    env_actuator_state s[ENV_ACTUATOR_BATCH][ENV_ANYMAL_NJ];
    env_actuator_lanes lanes[ENV_ACTUATOR_LANES(ENV_ACTUATOR_BATCH * ENV_ANYMAL_NJ)];
} env_actuator_batch;
/* Copies the network state of worlds w[0..n-1] into b (before an env step's physics steps), and back
 * (env_actuator_put, after them).  No-ops for pd. */
void env_actuator_take(const env_actuator *a, void *const *w, int n, env_actuator_batch *b);
void env_actuator_put(const env_actuator *a, void *const *w, int n, const env_actuator_batch *b);

/* Physics step k (0 <= k < decimation) of the current env step of worlds w[0..n-1] (n <= ENV_ACTUATOR_BATCH):
 * writes d[i]->tau of each joint of every world with live[i] set, and adds each torque's square to tau_sq[i].
 * targets[i] are world i's current (undelayed) targets.  The network, for lstm and dc, runs once over the joints
 * of all n worlds (a world not live gets zero inputs; its state is not used again before its reset). */
void env_actuator_torques(const env_actuator *a, const env_anymal_joints *j, int n, void *const *w,
                          const double *const *targets, sim_data *const *d, const int *live, int k,
                          env_actuator_batch *b, double *tau_sq);

/* Isaac Lab's DC-motor clip of a torque at joint velocity qdot: tau within [lo, hi] with
 *   hi = clip(saturation (1 - qdot / velocity_limit), 0, effort_limit),
 *   lo = clip(saturation (-1 - qdot / velocity_limit), -effort_limit, 0)
 * (N·m; qdot, velocity_limit in rad/s). */
double env_actuator_dc_clip(double tau, double qdot, double saturation, double effort_limit, double velocity_limit);

#endif

/* env_actuator_net.h — the ANYdrive series-elastic actuator as a learned model: legged_gym's LSTM actuator network
 * (anydrive_v3_lstm), which maps a joint's position error and velocity to the torque the real drive delivers.
 *
 * The network, per joint and physics step (the same weights for all joints):
 *     x = [q_target - q, qdot] * in_scale                      in_scale = [2.0, 0.25] (rad, rad/s in)
 *     two stacked LSTM cells, hidden size 8, PyTorch's equations and gate order (i, f, g, o):
 *         i = sig(W_ii x + b_ii + W_hi h + b_hi)   f = sig(...)   g = tanh(...)   o = sig(...)
 *         c' = f c + i g          h' = o tanh(c')             (layer 1's x is layer 0's new h)
 *     tau = out_scale * (w . h1' + b)                          out_scale = 20.0; N·m, not clipped here
 * computed in double precision from the archive's float32 weights (widened exactly), or in single precision by
 * env_actuator_net_step_f32 and env_actuator_net_step_lanes_f32 (eight joints per vector instead of four).
 *
 * Why in envs/ and not sim/: an actuator model turns a task's action (joint targets) into the joint torques the
 * physics is given (sim_data's tau), as the PD law does; DESIGN.md's step runs "PD/actuator" per world before the
 * sim steps.  Its weights are a task's choice and its (h, c) state is a controller's memory, zeroed when the task
 * resets a world: sim/ stays rigid-body physics with torques as input.
 *
 * Ownership: an env_actuator_net is immutable once made (env_actuator_net_new / _parse / _from_params) and may be
 * shared read-only by every world and thread of a session; env_actuator_net_destroy frees it.  The state is plain
 * data owned by the caller: one env_actuator_state per joint (ENV_ACTUATOR_NET_STATE doubles), kept in the world's
 * data, zeroed (env_actuator_state_zero) when that world resets.  Stepping allocates nothing.
 *
 * Numbers: the sigmoids and tanh use this module's own exp (env_actuator_net_exp), written in portable C rather
 * than libm's, whose implementation glibc picks by CPU at load time; its multiply-adds, like sim/'s, are fused where
 * written and rounded once on every target (nothing is compiled with contraction), so the torques are a property of
 * the source.  Four joints are the four lanes of a vector (the weights broadcast), a step's remainder of 1-3 joints
 * in lanes of their own: every operation is lane by lane, so a joint gives the same bits alone or in any batch, and
 * an x86-64-v2 build the same as a v3 one.  Per hidden unit a cell takes five exps and two divisions (the gates'
 * reciprocals combined into c' and h' as fractions); exp arguments are clamped to +-200 (a sigmoid moves by less
 * than 1e-87).  NaN inputs give NaN torques (and NaN state, until the world is reset).
 *
 * Data: envs/models/anydrive_v3_lstm.txt (format in envs/models/tools/convert_actuator_net.py, which converts the
 * TorchScript archive), embedded in the library at build time; BSD-3-Clause, envs/models/anydrive_v3_lstm.LICENSE.
 */
#ifndef HERD_ENV_ACTUATOR_NET_H
#define HERD_ENV_ACTUATOR_NET_H

#include <stddef.h>

#define ENV_ACTUATOR_NET_INPUTS 2                                  /* position error (rad), velocity (rad/s) */
#define ENV_ACTUATOR_NET_HIDDEN 8                                  /* LSTM hidden size */
#define ENV_ACTUATOR_NET_LAYERS 2                                  /* stacked LSTM layers */
#define ENV_ACTUATOR_NET_GATES (4 * ENV_ACTUATOR_NET_HIDDEN)        /* gate rows per layer: i, f, g, o blocks */
/* Parameters in the data file's order: in_scale (2), out_scale (1), per layer weight_ih (32 x in), weight_hh
 * (32 x 8), bias_ih (32), bias_hh (32), then linear.weight (8) and linear.bias (1); matrices row-major. */
#define ENV_ACTUATOR_NET_NPARAMS                                                                                   \
    (ENV_ACTUATOR_NET_INPUTS + 1 +                                                                               \
     ENV_ACTUATOR_NET_GATES * (ENV_ACTUATOR_NET_INPUTS + ENV_ACTUATOR_NET_HIDDEN + 2) +                           \
     (ENV_ACTUATOR_NET_LAYERS - 1) * ENV_ACTUATOR_NET_GATES * (2 * ENV_ACTUATOR_NET_HIDDEN + 2) +                 \
     ENV_ACTUATOR_NET_HIDDEN + 1)
/* State doubles per joint: h and c of every layer. */
#define ENV_ACTUATOR_NET_STATE (2 * ENV_ACTUATOR_NET_LAYERS * ENV_ACTUATOR_NET_HIDDEN)

/* One joint's recurrent state (the LSTM's h and c per layer); all zeros is the state after a reset. */
typedef struct {
    double h[ENV_ACTUATOR_NET_LAYERS][ENV_ACTUATOR_NET_HIDDEN];
    double c[ENV_ACTUATOR_NET_LAYERS][ENV_ACTUATOR_NET_HIDDEN];
} env_actuator_state;

typedef struct env_actuator_net env_actuator_net;

/* The network of the data file at path, or the embedded ANYdrive v3 network when path is NULL.  NULL with err
 * filled if the file cannot be read or is not a valid network (env_actuator_net_parse). */
env_actuator_net *env_actuator_net_new(const char *path, char *err, size_t errlen);
/* The network of a data file's text (len bytes; need not end in NUL); name labels the error messages.  NULL with
 * err filled (with the line) on a bad header, a tensor missing, misnamed, misshaped or out of order, a value that
 * is not a finite number, or trailing tokens. */
env_actuator_net *env_actuator_net_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);
/* The network of n = ENV_ACTUATOR_NET_NPARAMS parameters in the file's order; NULL with err filled if n differs
 * or a parameter is not finite. */
env_actuator_net *env_actuator_net_from_params(const double *p, size_t n, char *err, size_t errlen);
/* Frees *net (NULL is fine) and sets it to NULL. */
void env_actuator_net_destroy(env_actuator_net **net);
/* Copies the network's ENV_ACTUATOR_NET_NPARAMS parameters, in the file's order, to p. */
void env_actuator_net_params(const env_actuator_net *net, double *p);

/* Zeroes the state of n joints (a world's reset). */
void env_actuator_state_zero(env_actuator_state *s, int n);

/* One physics step of n joints: tau[j] (N·m) from pos_err[j] = q_target - q (rad) and vel[j] = qdot (rad/s),
 * advancing state[j].  Joints are independent (any n: one world's 12, or a batch of worlds' joints in a row);
 * tau may not alias the inputs or the state.  Returns 0, or -1 with err filled (n < 0, or a NULL pointer with
 * n > 0), leaving the state untouched. */
int env_actuator_net_step(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                          env_actuator_state *state, double *tau, char *err, size_t errlen);

/* env_actuator_net_step in single precision: the same network and algorithm with float weights, arithmetic and
 * state (the state's doubles hold floats), eight joints per vector; the same bits for a
 * joint alone or in any batch, on every instruction set.  Its torques follow TorchScript's float32 module, not the
 * double one: within ENV_ACTUATOR_NET_F32_TOL N·m of it on tests/test_actuator_net.c's recorded sequences.  A
 * world's joints are stepped by one of the two, not both (their states differ). */
int env_actuator_net_step_f32(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                              env_actuator_state *state, double *tau, char *err, size_t errlen);
#define ENV_ACTUATOR_NET_F32_TOL 1e-4

/* The float step's state for eight joints as the vectors' lanes: v[i][j] is joint j's i-th state value (h then c,
 * each [layer][unit], as env_actuator_state).  Joint k of an array of blocks is lane k % 8 of block k / 8; all
 * zeros is the state after a reset. */
typedef struct {
    _Alignas(32) float v[ENV_ACTUATOR_NET_STATE][8];
} env_actuator_lanes;
/* Blocks for n joints */
#define ENV_ACTUATOR_LANES(n) (((n) + 7) / 8)
/* Zeroes joints first .. first + count - 1 of an array of blocks (a world's reset); nothing for count <= 0. */
void env_actuator_lanes_zero(env_actuator_lanes *s, int first, int count);
/* env_actuator_net_step_f32 on joints 0 .. n-1 of the blocks state (ENV_ACTUATOR_LANES(n) of them): the same bits
 * (torques and state), without moving the state between the caller's layout and the vectors': the fastest entry
 * point, the more so with more joints per call (a batch of worlds' joints in a row fills the lanes; a world of 12
 * joints alone leaves 4 of its 16 idle).  The spare lanes of a last block are
 * left as they are.  Returns 0, or -1 with err filled as env_actuator_net_step. */
int env_actuator_net_step_lanes_f32(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                                    env_actuator_lanes *state, double *tau, char *err, size_t errlen);

/* The exp the network's activations use: within 2 ulp of exp(x) for |x| <= 708; arguments beyond are clamped
 * to +-708 (exp(-708) ~ 3e-308, exp(708) ~ 3e307: the sigmoids' limits to far below the torques' precision). */
double env_actuator_net_exp(double x);

#endif
